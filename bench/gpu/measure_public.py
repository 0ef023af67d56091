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
        [--perop-budget-s 300] [--e2e-budget-s 200] [--perop-split train]

DIR holds per_op/test/*.csv.gz (per_op/train/<op>/*.csv.gz for
--perop-split train), DLmodel_configs/*.json and label_index.csv
(copied from ../shared/public/neusight, since that folder does not travel).
"""
import argparse
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


def op_callable(name, shape):
    """The isolated op NeuSight's per-op rows time, on fresh random float32 inputs."""
    dev = "cuda"
    if name == "bmm":
        a = torch.randn(shape["B"], shape["M"], shape["N"], device=dev)
        b = torch.randn(shape["B"], shape["N"], shape["K"], device=dev)
        return lambda: torch.bmm(a, b)
    if name == "linear":
        x = torch.randn(shape["B"], shape["M"], shape["N"], device=dev)
        layer = torch.nn.Linear(shape["N"], shape["K"], device=dev)
        return lambda: layer(x)
    if name == "conv":
        size = shape["Input_Size"]
        x = torch.randn(shape["B"], shape["Input_Channel"], size, size, device=dev)
        layer = torch.nn.Conv2d(shape["Input_Channel"], shape["Output_Channel"], shape["Kernel_Szie"],
                                stride=shape["Stride"], padding=shape["Padding"], device=dev)
        return lambda: layer(x)
    x = torch.randn(shape["B"], shape["H"], device=dev)
    if name == "ln":
        layer = torch.nn.LayerNorm(shape["H"], device=dev)
        return lambda: layer(x)
    if name == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    y = torch.rand(shape["B"], shape["H"], device=dev) + 0.5
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


def perop_sources(neusight, out, key, split):
    """(source CSVs, output CSV) per table: NeuSight's test files, or one
    file per op kind of its train split (the union of every GPU's shapes)."""
    if split == "test":
        return [([neusight / "per_op/test" / f"{stem}.csv.gz"], out / "per_op/test" / f"{stem}.csv.gz")
                for stem in PEROP_FILES]
    return [(sorted(d.glob("*.csv.gz")), out / "per_op/train" / d.name / f"{key}.csv.gz")
            for d in sorted((neusight / "per_op/train").iterdir()) if d.is_dir()]


def measure_perop(neusight, out, device_name, key, split, per_table, budget_s, skip):
    deadline = time.time() + budget_s
    meta = {"Torch Version": "p" + torch.__version__.split("+")[0],
            "CUDNN Version": str(torch.backends.cudnn.version()),
            "CUDA Version": "cu" + (torch.version.cuda or "").replace(".", "")}
    tables, jobs = [], []
    for sources, target in perop_sources(neusight, out, key, split):
        seen, rows, header = set(), [], None
        for source in sources:
            with gzip.open(source, "rt") as f:
                reader = csv.DictReader(f)
                header = header or reader.fieldnames
                for row in reader:
                    key_ = (row["OPName"],) + tuple(row.get(c, "") for c in SHAPE_COLUMNS + CONV_COLUMNS)
                    if key_ not in seen:
                        seen.add(key_)
                        rows.append(row)
        if per_table and len(rows) > per_table:
            rows = random.Random(7).sample(rows, per_table)
        jobs += [(len(tables), i) for i in range(len(rows))]
        tables.append((target, header, rows, {}))
    # A random order, so that a budget cut leaves a random subset of every file.
    random.Random(16).shuffle(jobs)
    # A later lease goes on where an earlier one's budget stopped.
    jobs = jobs[skip:]
    done = 0
    for t, i in jobs:
        if time.time() > deadline:
            break
        _, _, rows, latency = tables[t]
        row = rows[i]
        shape = {c: int(row[c]) for c in ("B", "M", "N", "K", "H") + CONV_COLUMNS if row.get(c)}
        try:
            fn = op_callable(row["OPName"], shape)
            latency[i] = time_op(fn)
        except torch.OutOfMemoryError:
            log(f"out of memory: {row['OPName']} {shape}")
        fn = None
        done += 1
        if done % 500 == 0:
            log(f"per-op: {done}/{len(jobs)}")
            torch.cuda.empty_cache()
    log(f"per-op ({split}): {done}/{len(jobs)} shapes measured within {budget_s} s")
    for target, header, rows, latency in tables:
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(target, "wt", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            for i, row in enumerate(rows):
                if i not in latency:
                    continue
                shape_cols = SHAPE_COLUMNS + CONV_COLUMNS + ("OPName",)
                new = {k: (v if k in shape_cols else "") for k, v in row.items()}
                new.update(meta)
                new["Device"] = device_name
                new["Latency"] = repr(latency[i])
                w.writerow(new)
        log(f"{target}: {len(latency)} of {len(rows)} shapes")


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


def measure_e2e_one(config_path, train, seqlen, batch):
    """One label as NeuSight's CATALOG defines it: forward (and backward of a
    cross-entropy loss computed outside the timed region), 25 runs each,
    mean of the 5 fastest, cache emptied before each run, gradients left to
    accumulate (no optimizer)."""
    model, layers = build_model(config_path, train)
    ids = torch.ones(batch, seqlen, dtype=torch.int64, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fw, bw = [], []
    for _ in range(25):
        gc.collect()
        torch.cuda.empty_cache()
        with torch.set_grad_enabled(train):
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


def measure_e2e(neusight, out, key, budget_s):
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
        if time.time() > deadline:
            log(f"e2e: budget spent before {model}-{mode}-{seqlen}-{batch}")
            continue
        t0 = time.time()
        try:
            label = measure_e2e_one(neusight / "DLmodel_configs" / f"{model}.json", mode == "train", seqlen, batch)
        except torch.OutOfMemoryError:
            log(f"e2e: out of memory: {model}-{mode}-{seqlen}-{batch}")
            continue
        finally:
            gc.collect()
            torch.cuda.empty_cache()
        (label_dir / f"{model}-{mode}-{seqlen}-{batch}.json").write_text(json.dumps(label, indent=4))
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


def kineto_resnet(out, budget_s):
    """ResNet-50 training steps (SGD, synthetic data, NCHW float32), traced
    with the PyTorch profiler, at batch 32 and 64, TF32 off and on; step times
    from CUDA events over 20 steps outside the profiler."""
    import torchvision
    from torch.profiler import ProfilerActivity, profile, schedule
    deadline = time.time() + budget_s
    steps = {}
    out.mkdir(parents=True, exist_ok=True)
    for tf32 in (False, True):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for batch in (32, 64):
            if time.time() > deadline:
                break
            model = torchvision.models.resnet50().cuda().train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(batch, 3, 224, 224, device="cuda")
            y = torch.randint(0, 1000, (batch,), device="cuda")

            def step():
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()

            for _ in range(10):
                step()
            step_ms = time_call(step, runs=20, keep=20)
            name = f"resnet50-b{batch}-{'tf32' if tf32 else 'fp32'}"
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         schedule=schedule(wait=1, warmup=1, active=3), record_shapes=True) as prof:
                for _ in range(5):
                    step()
                    prof.step()
            trace = out / f"{name}.pt.trace.json"
            prof.export_chrome_trace(str(trace))
            subprocess.run(["gzip", "-f", str(trace)], check=True)
            steps[name] = {"batch": batch, "tf32": tf32, "step_ms": step_ms}
            log(f"kineto: {name}: {step_ms:.2f} ms/step")
            del model, opt, x, y
            gc.collect()
            torch.cuda.empty_cache()
    # CSV, not JSON: a directory walk by `tracecast ingest` skips it.
    with open(out / "steps.csv", "w") as f:
        f.write("trace,batch,tf32,step_ms\n")
        for name, s in steps.items():
            f.write(f"{name}.pt.trace.json.gz,{s['batch']},{str(s['tf32']).lower()},{s['step_ms']:.3f}\n")
    strict_fp32()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--neusight", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--perop-budget-s", type=float, default=300)
    ap.add_argument("--e2e-budget-s", type=float, default=200)
    ap.add_argument("--kineto-budget-s", type=float, default=60)
    ap.add_argument("--only", choices=["perop", "e2e", "kineto"], action="append")
    ap.add_argument("--perop-split", choices=["test", "train"], default="test",
                    help="NeuSight's test shapes, or its train shapes (per op kind, all GPUs' union)")
    ap.add_argument("--perop-per-table", type=int, default=0,
                    help="at most this many shapes per output file, drawn at random (0: all)")
    ap.add_argument("--perop-skip", type=int, default=0,
                    help="skip this many shapes of the random order (those an earlier run measured)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("measure_public.py: no CUDA device visible")
    strict_fp32()
    device_name = torch.cuda.get_device_name(0)
    key = device_name.replace(" ", "_")
    only = set(args.only or ["perop", "e2e", "kineto"])
    ns_out = args.out / "neusight"
    log(f"{device_name}: torch {torch.__version__}, CUDA {torch.version.cuda}")
    spec_sheet(ns_out, device_name, key)
    sections = [("kineto", lambda: kineto_resnet(args.out / "kineto", args.kineto_budget_s)),
                ("e2e", lambda: measure_e2e(args.neusight, ns_out, key, args.e2e_budget_s)),
                ("perop", lambda: measure_perop(args.neusight, ns_out, device_name, key, args.perop_split,
                                             args.perop_per_table, args.perop_budget_s, args.perop_skip))]
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
