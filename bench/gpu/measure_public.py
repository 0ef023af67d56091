#!/usr/bin/env python3
"""Measure, on the GPU this runs on, what ../shared/public holds for older GPUs.

Writes a directory laid out like ../shared/public/neusight (per_op/test,
label/<GPU>/, device_configs/) so that `bench/public.sh --train
../shared/public --eval DIR` scores the op model on a GPU it never saw, and
a few Kineto traces of ResNet-50 training steps for `tracecast predict`'s
what-ifs. Needs PyTorch with CUDA, transformers and torchvision.

The protocol follows NeuSight's CATALOG description (float32, no TF32, CUDA
events, 25 runs, mean of the 5 fastest), with one deviation that keeps the
run inside a device lease: an isolated op whose first timing exceeds 1 ms
runs 10 times (mean of the 2 fastest), above 10 ms 5 times (the fastest).
Long ops vary little run to run, so this moves the figure by well under 1%.

    python3 bench/gpu/measure_public.py --neusight DIR --out OUT \
        [--perop-budget-s 300] [--e2e-budget-s 200] [--perop-split train] \
        [--precision bf16 --perop-ops bmm,linear] [--resume EARLIER_OUT ...]

--resume names the output of an earlier run on the same GPU (more than once
for several): its labels and per-op rows are kept, written again into OUT,
and not measured again, so that a later lease fills in what an earlier
budget left out and OUT holds the union.

With --precision bf16 or fp16 the same runs are made in mixed precision, as
users train: end-to-end labels and Kineto steps under torch.autocast (matrix
products and convolutions in 16 bits, weights and the optimizer in float32),
and per-op rows on 16-bit tensors. Kineto traces are then named after the
precision (resnet50-b32-bf16), and BERT-large steps are traced in float32 and
in that precision (`--kineto-runs` adds GPT-2 Large), so that a float32
trace can be priced in 16 bits against a measured 16-bit step.

DIR holds per_op/test/*.csv.gz (per_op/train/<op>/*.csv.gz for
--perop-split train), DLmodel_configs/*.json and label_index.csv
(copied from ../shared/public/neusight, since that folder does not travel).
"""
import argparse
import contextlib
import csv
import gc
import gzip
import json
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch

SHAPE_COLUMNS = ("B", "M", "N", "K", "H", "large")
CONV_COLUMNS = ("Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding")
PEROP_FILES = ("bmm", "linear", "elem", "ln", "softmax")


def strict_fp32():
    """NeuSight's labels are plain float32: no TF32 anywhere."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def time_call(fn, runs=25, keep=5):
    """CUDA-event time of fn() in ms: mean of the `keep` fastest of `runs`."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    times = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return sum(times[:keep]) / keep


def time_op(fn):
    """NeuSight's 25/5 for short ops, fewer runs for long ones (see the module doc)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    first = start.elapsed_time(end)
    if first > 10.0:
        return time_call(fn, runs=5, keep=1)
    if first > 1.0:
        return time_call(fn, runs=10, keep=2)
    return time_call(fn, runs=25, keep=5)


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def op_callable(name, shape, dtype=torch.float32):
    """The isolated op NeuSight's per-op rows time, on fresh random inputs
    (float32 as NeuSight's; 16-bit tensors with --precision)."""
    dev = "cuda"
    if name == "bmm":
        a = torch.randn(shape["B"], shape["M"], shape["N"], device=dev, dtype=dtype)
        b = torch.randn(shape["B"], shape["N"], shape["K"], device=dev, dtype=dtype)
        return lambda: torch.bmm(a, b)
    if name == "linear":
        x = torch.randn(shape["B"], shape["M"], shape["N"], device=dev, dtype=dtype)
        layer = torch.nn.Linear(shape["N"], shape["K"], device=dev, dtype=dtype)
        return lambda: layer(x)
    if name == "conv":
        size = shape["Input_Size"]
        x = torch.randn(shape["B"], shape["Input_Channel"], size, size, device=dev, dtype=dtype)
        layer = torch.nn.Conv2d(shape["Input_Channel"], shape["Output_Channel"], shape["Kernel_Szie"],
                                stride=shape["Stride"], padding=shape["Padding"], device=dev, dtype=dtype)
        return lambda: layer(x)
    x = torch.randn(shape["B"], shape["H"], device=dev, dtype=dtype)
    if name == "ln":
        layer = torch.nn.LayerNorm(shape["H"], device=dev, dtype=dtype)
        return lambda: layer(x)
    if name == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    y = torch.rand(shape["B"], shape["H"], device=dev, dtype=dtype) + 0.5
    binary = {"add": torch.add, "mul": torch.mul, "div": torch.div, "pow": torch.pow}
    if name in binary:
        f = binary[name]
        return lambda: f(x, y)
    unary = {
        "addu": lambda: x + 1.5,
        "mulu": lambda: 1.5 * x,
        "divu": lambda: x / 1.5,
        "powu": lambda: torch.pow(x, 3.0),
        "relu": lambda: torch.relu(x),
        "gelu": lambda: torch.nn.functional.gelu(x),
        "tanh": lambda: torch.tanh(x),
    }
    return unary[name]


def perop_sources(neusight, out, key, split, ops):
    """(source CSVs, output CSV) per table: NeuSight's test files, or one
    file per op kind of its train split (the union of every GPU's shapes);
    only the tables named in `ops` when it is not empty."""
    if split == "test":
        return [([neusight / "per_op/test" / f"{stem}.csv.gz"], out / "per_op/test" / f"{stem}.csv.gz")
                for stem in PEROP_FILES if not ops or stem in ops]
    return [(sorted(d.glob("*.csv.gz")), out / "per_op/train" / d.name / f"{key}.csv.gz")
            for d in sorted((neusight / "per_op/train").iterdir()) if d.is_dir() and (not ops or d.name in ops)]


def shape_key(row):
    return (row["OPName"],) + tuple(row.get(c, "") for c in SHAPE_COLUMNS + CONV_COLUMNS)


def earlier_rows(resume, target, out):
    """Rows an earlier run wrote to the file `target` names under `out`, by shape."""
    kept = {}
    for earlier in resume:
        path = earlier / "neusight" / target.relative_to(out)
        if path.exists():
            with gzip.open(path, "rt") as f:
                kept.update((shape_key(r), r) for r in csv.DictReader(f))
    return kept


def measure_perop(neusight, out, device_name, key, split, per_table, budget_s, skip, ops, dtype, resume):
    deadline = time.time() + budget_s
    meta = {"Torch Version": "p" + torch.__version__.split("+")[0],
            "CUDNN Version": str(torch.backends.cudnn.version()),
            "CUDA Version": "cu" + (torch.version.cuda or "").replace(".", "")}
    tables, jobs = [], []
    for sources, target in perop_sources(neusight, out, key, split, ops):
        seen, rows, header = set(), [], None
        for source in sources:
            with gzip.open(source, "rt") as f:
                reader = csv.DictReader(f)
                header = header or reader.fieldnames
                for row in reader:
                    key_ = shape_key(row)
                    if key_ not in seen:
                        seen.add(key_)
                        rows.append(row)
        if per_table and len(rows) > per_table:
            rows = random.Random(7).sample(rows, per_table)
        measured = earlier_rows(resume, target, out)
        kept = {i: measured[k] for i, k in enumerate(map(shape_key, rows)) if k in measured}
        if kept:
            log(f"{target.name}: {len(kept)} shapes kept from an earlier run")
        jobs += [(len(tables), i) for i in range(len(rows)) if i not in kept]
        tables.append((target, header, rows, {}, kept))
    # A random order, so that a budget cut leaves a random subset of every file.
    random.Random(16).shuffle(jobs)
    # A later lease goes on where an earlier one's budget stopped.
    jobs = jobs[skip:]
    done = 0
    for t, i in jobs:
        if time.time() > deadline:
            break
        _, _, rows, latency, _ = tables[t]
        row = rows[i]
        shape = {c: int(row[c]) for c in ("B", "M", "N", "K", "H") + CONV_COLUMNS if row.get(c)}
        try:
            fn = op_callable(row["OPName"], shape, dtype)
            latency[i] = time_op(fn)
        except torch.OutOfMemoryError:
            log(f"out of memory: {row['OPName']} {shape}")
        fn = None
        done += 1
        if done % 500 == 0:
            log(f"per-op: {done}/{len(jobs)}")
            torch.cuda.empty_cache()
    log(f"per-op ({split}): {done}/{len(jobs)} shapes measured within {budget_s} s")
    for target, header, rows, latency, kept in tables:
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(target, "wt", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            for i, row in enumerate(rows):
                if i in kept:
                    w.writerow(kept[i])
                if i not in latency:
                    continue
                shape_cols = SHAPE_COLUMNS + CONV_COLUMNS + ("OPName",)
                new = {k: (v if k in shape_cols else "") for k, v in row.items()}
                new.update(meta)
                new["Device"] = device_name
                new["Latency"] = repr(latency[i])
                w.writerow(new)
        log(f"{target}: {len(latency)} new and {len(kept)} kept of {len(rows)} shapes")


def build_model(config_path, train):
    from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForPreTraining,
                              AutoModelForSequenceClassification)
    cfg_json = json.loads(Path(config_path).read_text())
    arch = cfg_json["architectures"][0].lower()
    layers = cfg_json["n_layer"] if "gpt" in arch else cfg_json["num_hidden_layers"]
    fields = {k: v for k, v in cfg_json.items() if k != "model_type"}
    config = AutoConfig.for_model(cfg_json["model_type"], **fields)
    if "bert" in arch:
        cls = AutoModelForPreTraining if train else AutoModelForSequenceClassification
    else:
        cls = AutoModelForCausalLM
    with torch.device("cuda"):
        model = cls.from_config(config, attn_implementation="eager")
    return (model.train() if train else model.eval()), layers


def autocast(precision):
    """Mixed precision as users train in it; float32 runs as NeuSight's labels."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast("cuda", dtype=DTYPES[precision])


def measure_e2e_one(config_path, train, seqlen, batch, precision):
    """One label as NeuSight's CATALOG defines it: forward (and backward of a
    cross-entropy loss computed outside the timed region), 25 runs each,
    mean of the 5 fastest, cache emptied before each run, gradients left to
    accumulate (no optimizer). The forward runs under `autocast(precision)`."""
    model, layers = build_model(config_path, train)
    ids = torch.ones(batch, seqlen, dtype=torch.int64, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fw, bw = [], []
    for _ in range(25):
        gc.collect()
        torch.cuda.empty_cache()
        with torch.set_grad_enabled(train), autocast(precision):
            start.record()
            out = model(ids)
            end.record()
            torch.cuda.synchronize()
            fw.append(start.elapsed_time(end))
        if train:
            logits = out["prediction_logits"] if "prediction_logits" in out else out["logits"]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), ids.reshape(-1))
            out = logits = None
            start.record()
            loss.backward()
            end.record()
            torch.cuda.synchronize()
            bw.append(start.elapsed_time(end))
            loss = None
        out = None
    fw_ms = sum(sorted(fw)[:5]) / 5
    bw_ms = sum(sorted(bw)[:5]) / 5 if train else 0.0
    del model
    return {"num_layer": layers, "e2e_latency": fw_ms + bw_ms, "fw_latency": fw_ms, "bwall_latency": bw_ms}


def measure_e2e(neusight, out, key, budget_s, precision, resume):
    deadline = time.time() + budget_s
    with open(neusight / "label_index.csv") as f:
        configs = sorted({(r["model"], r["mode"], int(r["seqlen"]), int(r["batch"]))
                          for r in csv.DictReader(f) if not r["option"]})
    # Switch Transformer labels come from NeuSight's own patched MoE forward,
    # which this script does not reproduce: skipped rather than mislabelled.
    configs = [c for c in configs if not c[0].startswith("switch")]
    # Cheapest first, so a budget cut drops the largest.
    configs.sort(key=lambda c: c[2] * c[3] * (3 if c[1] == "train" else 1) * (2 if "27" in c[0] else 1))
    label_dir = out / "label" / key
    label_dir.mkdir(parents=True, exist_ok=True)
    for model, mode, seqlen, batch in configs:
        name = f"{model}-{mode}-{seqlen}-{batch}.json"
        earlier = [d / "neusight" / "label" / key / name for d in resume]
        earlier = [p for p in earlier if p.exists()]
        if earlier:
            (label_dir / name).write_text(earlier[0].read_text())
            log(f"e2e: {name} kept from {earlier[0]}")
            continue
        if time.time() > deadline:
            log(f"e2e: budget spent before {model}-{mode}-{seqlen}-{batch}")
            continue
        t0 = time.time()
        try:
            label = measure_e2e_one(neusight / "DLmodel_configs" / f"{model}.json", mode == "train", seqlen, batch,
                                    precision)
        except torch.OutOfMemoryError:
            log(f"e2e: out of memory: {model}-{mode}-{seqlen}-{batch}")
            continue
        finally:
            gc.collect()
            torch.cuda.empty_cache()
        (label_dir / name).write_text(json.dumps(label, indent=4))
        log(f"e2e: {model}-{mode}-{seqlen}-{batch}: {label['e2e_latency']:.2f} ms (took {time.time() - t0:.0f} s)")


def spec_sheet(out, device_name, key):
    """NeuSight's device_configs format. Counts from the device; rates from
    the datasheet of the part named (H100 SXM5: 66.9 TFLOP/s FP32, 3.35 TB/s,
    50 MB L2), with Freq = the maximum SM clock the driver reports (MHz)."""
    p = torch.cuda.get_device_properties(0)
    try:
        clock = int(subprocess.check_output(
            ["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"], text=True).split()[0])
    except Exception:
        clock = 0
    sheet = {"Device": device_name, "Dev_Mem": round(p.total_memory / 1e9), "Mem_Bw": None,
             "Num_Sm": p.multi_processor_count, "Core_Per_SM": 128, "Freq": clock,
             "SingleFLOPs": round(2 * p.multi_processor_count * 128 * clock / 1000),
             "L2Cache": round(p.L2_cache_size / 2**20)}
    if "H100" in device_name and "HBM3" in device_name:
        sheet["Mem_Bw"] = 3352
    elif "H200" in device_name:
        sheet["Mem_Bw"] = 4800
    path = out / "device_configs" / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sheet, indent=4))
    log(f"spec sheet: {sheet}")


def resnet_step(batch, precision):
    """A ResNet-50 training step: SGD with momentum, synthetic NCHW inputs."""
    import torchvision
    model = torchvision.models.resnet50().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast(precision):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def transformer_step(config_path, batch, seqlen, precision):
    """A training step of one of NeuSight's transformers, AdamW, inputs of
    ones: BERT with its pre-training heads (masked-LM head over every
    token), the others as causal language models."""
    model, _ = build_model(config_path, train=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.ones(batch, seqlen, dtype=torch.int64, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast(precision):
            out = model(ids)
            logits = out["prediction_logits"] if "prediction_logits" in out else out["logits"]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), ids.reshape(-1))
        loss.backward()
        opt.step()
    return step


# Transformer steps a 16-bit lease may trace, each in float32 and in the
# lease's precision: (NeuSight configuration, batch, tokens).
TRANSFORMER_RUNS = {"bert_large": ("bert_large", 8, 512), "gpt2_large": ("gpt2_large", 4, 1024)}


def kineto_runs(neusight, precision, names):
    """(trace name, batch, tf32, precision, step factory) of one lease's
    Kineto runs: float32 ResNet-50 with TF32 off and on; in 16 bits,
    ResNet-50 and the transformers in `names` (each in float32 too)."""
    if precision == "fp32":
        return [(f"resnet50-b{b}-{'tf32' if tf32 else 'fp32'}", b, tf32, "fp32",
                 lambda b=b: resnet_step(b, "fp32")) for tf32 in (False, True) for b in (32, 64)]
    runs = []
    if "resnet50" in names:
        runs += [(f"resnet50-b{b}-{precision}", b, False, precision, lambda b=b: resnet_step(b, precision))
                 for b in (32, 64)]
    for name in names:
        if name not in TRANSFORMER_RUNS:
            continue
        config, batch, tokens = TRANSFORMER_RUNS[name]
        path = neusight / "DLmodel_configs" / f"{config}.json"
        runs += [(f"{name}-b{batch}-s{tokens}-{p}", batch, False, p,
                  lambda p=p, path=path, batch=batch, tokens=tokens: transformer_step(path, batch, tokens, p))
                 for p in ("fp32", precision)]
    return runs


def kineto_traces(neusight, out, budget_s, precision, names):
    """Training steps traced with the PyTorch profiler (CPU and CUDA
    activities, shapes; 3 active steps after warm-up); step times from CUDA
    events over 20 steps outside the profiler."""
    from torch.profiler import ProfilerActivity, profile, schedule
    deadline = time.time() + budget_s
    steps = {}
    out.mkdir(parents=True, exist_ok=True)
    for name, batch, tf32, prec, make_step in kineto_runs(neusight, precision, names):
        if time.time() > deadline:
            log(f"kineto: budget spent before {name}")
            continue
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            step = make_step()
            for _ in range(10):
                step()
            step_ms = time_call(step, runs=20, keep=20)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         schedule=schedule(wait=1, warmup=1, active=3), record_shapes=True) as prof:
                for _ in range(5):
                    step()
                    prof.step()
        except torch.OutOfMemoryError:
            # The other runs, and steps.csv, still count.
            log(f"kineto: out of memory: {name}")
            step = None
            gc.collect()
            torch.cuda.empty_cache()
            continue
        trace = out / f"{name}.pt.trace.json"
        prof.export_chrome_trace(str(trace))
        subprocess.run(["gzip", "-f", str(trace)], check=True)
        steps[name] = (batch, tf32, prec, step_ms)
        log(f"kineto: {name}: {step_ms:.2f} ms/step")
        step = None
        gc.collect()
        torch.cuda.empty_cache()
    # CSV, not JSON: a directory walk by `tracecast ingest` skips it.
    with open(out / "steps.csv", "w") as f:
        f.write("trace,batch,tf32,step_ms,precision\n")
        for name, (batch, tf32, prec, step_ms) in steps.items():
            f.write(f"{name}.pt.trace.json.gz,{batch},{str(tf32).lower()},{step_ms:.3f},{prec}\n")
    strict_fp32()


def resume_problem(dirs):
    """Why an earlier output named by --resume cannot be one, or None: a
    mistyped path would otherwise keep nothing and spend the lease measuring
    everything again."""
    for d in dirs:
        if not (d / "neusight").is_dir():
            return f"--resume {d}: no neusight/ folder in it (not the --out of an earlier run)"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--neusight", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--perop-budget-s", type=float, default=300)
    ap.add_argument("--e2e-budget-s", type=float, default=200)
    ap.add_argument("--kineto-budget-s", type=float, default=60)
    ap.add_argument("--only", choices=["perop", "e2e", "kineto"], action="append")
    ap.add_argument("--precision", choices=sorted(DTYPES), default="fp32",
                    help="fp32 (NeuSight's protocol), or bf16/fp16: autocast runs and 16-bit per-op tensors")
    ap.add_argument("--kineto-runs", default="resnet50,bert_large",
                    help="with --precision bf16/fp16: the Kineto runs, of resnet50, bert_large, gpt2_large")
    ap.add_argument("--perop-ops", default="",
                    help="comma-separated per-op tables to measure (bmm,linear,...); empty: all")
    ap.add_argument("--perop-split", choices=["test", "train"], default="test",
                    help="NeuSight's test shapes, or its train shapes (per op kind, all GPUs' union)")
    ap.add_argument("--perop-per-table", type=int, default=0,
                    help="at most this many shapes per output file, drawn at random (0: all)")
    ap.add_argument("--resume", type=Path, action="append", default=[],
                    help="an earlier run's --out on this GPU: keep its labels and rows, measure the rest")
    ap.add_argument("--perop-skip", type=int, default=0,
                    help="skip this many shapes of the random order (those an earlier run measured)")
    args = ap.parse_args()
    problem = resume_problem(args.resume)
    if problem:
        sys.exit(f"measure_public.py: {problem}")
    if not torch.cuda.is_available():
        sys.exit("measure_public.py: no CUDA device visible")
    strict_fp32()
    device_name = torch.cuda.get_device_name(0)
    key = device_name.replace(" ", "_")
    only = set(args.only or ["perop", "e2e", "kineto"])
    ns_out = args.out / "neusight"
    log(f"{device_name}: torch {torch.__version__}, CUDA {torch.version.cuda}")
    spec_sheet(ns_out, device_name, key)
    ops = {o for o in args.perop_ops.split(",") if o}
    names = {n for n in args.kineto_runs.split(",") if n}
    sections = [("kineto", lambda: kineto_traces(args.neusight, args.out / "kineto", args.kineto_budget_s,
                                                 args.precision, names)),
                ("e2e", lambda: measure_e2e(args.neusight, ns_out, key, args.e2e_budget_s, args.precision,
                                                    args.resume)),
                ("perop", lambda: measure_perop(args.neusight, ns_out, device_name, key, args.perop_split,
                                             args.perop_per_table, args.perop_budget_s, args.perop_skip, ops,
                                             DTYPES[args.precision], args.resume))]
    failed = False
    for name, run in sections:
        if name not in only:
            continue
        try:
            run()
        except Exception:
            # One section failing must not lose the others' measurements.
            traceback.print_exc()
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
