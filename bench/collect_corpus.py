#!/usr/bin/env python3
"""Collect tracecast's real-GPU trace corpus: a model zoo built without
downloading weights, profiled with tracecast_collector at several batch
sizes in fp32 and bf16 autocast.

Needs a CUDA GPU, torch, torchvision and transformers. Nothing is downloaded:
vision models are torchvision architectures with weights=None, language
models are built from transformers configs with random weights, inputs are
synthetic.

Layout (see bench/corpus/README.md):
    <out>/<gpu>/<model>__bs<N>__<precision>.pt.trace.json.gz
    <out>/<gpu>/<model>__bs<N>__<precision>.manifest.json
    <out>/<gpu>/skipped.jsonl            one line per configuration not collected
    <out>/shards/<gpu>-NNN.tar.gz        the above packed for transfer

Examples:
    python bench/collect_corpus.py --list
    python bench/collect_corpus.py --out bench/corpus --models resnet50,gpt2_small --precisions bf16
    python bench/collect_corpus.py --out bench/corpus --quick --pack --shard-max-files 8 --shard-max-mib 60
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

# Use the collector from this checkout when it is not installed.
_REPO = Path(__file__).resolve().parents[1]
if str(_REPO / "python" / "src") not in sys.path:
    sys.path.insert(0, str(_REPO / "python" / "src"))

from tracecast_collector.manifest import MANIFEST_SUFFIX, TRACE_SUFFIX, file_stem, slug  # noqa: E402

PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class ModelSpec:
    """One zoo entry. `builder` names how to construct it (see build_model)."""

    name: str
    family: str  # "vision" or "lm"
    builder: str
    batch_sizes: tuple[int, ...]
    # Vision: image side. LM: sequence length.
    input_size: int


# Batch sizes span small to large for an 80 GB GPU; configurations that do
# not fit are skipped at run time (OOM) and noted in skipped.jsonl.
VISION_BS = (16, 32, 64, 128, 256)
HEAVY_VISION_BS = (8, 16, 32, 64, 128)
ZOO: tuple[ModelSpec, ...] = (
    ModelSpec("resnet18", "vision", "torchvision:resnet18", VISION_BS, 224),
    ModelSpec("resnet50", "vision", "torchvision:resnet50", VISION_BS, 224),
    ModelSpec("resnet101", "vision", "torchvision:resnet101", VISION_BS, 224),
    ModelSpec("vgg16", "vision", "torchvision:vgg16", HEAVY_VISION_BS, 224),
    ModelSpec("densenet121", "vision", "torchvision:densenet121", VISION_BS, 224),
    ModelSpec("mobilenet_v2", "vision", "torchvision:mobilenet_v2", VISION_BS, 224),
    ModelSpec("mobilenet_v3_large", "vision", "torchvision:mobilenet_v3_large", VISION_BS, 224),
    ModelSpec("efficientnet_b0", "vision", "torchvision:efficientnet_b0", VISION_BS, 224),
    ModelSpec("efficientnet_b1", "vision", "torchvision:efficientnet_b1", VISION_BS, 240),
    ModelSpec("efficientnet_b2", "vision", "torchvision:efficientnet_b2", HEAVY_VISION_BS, 260),
    ModelSpec("efficientnet_b3", "vision", "torchvision:efficientnet_b3", HEAVY_VISION_BS, 300),
    ModelSpec("regnet_y_1_6gf", "vision", "torchvision:regnet_y_1_6gf", VISION_BS, 224),
    ModelSpec("convnext_tiny", "vision", "torchvision:convnext_tiny", VISION_BS, 224),
    ModelSpec("vit_b_16", "vision", "torchvision:vit_b_16", HEAVY_VISION_BS, 224),
    ModelSpec("swin_t", "vision", "torchvision:swin_t", HEAVY_VISION_BS, 224),
    ModelSpec("bert_base", "lm", "hf:bert_base", (4, 8, 16, 32, 64), 512),
    ModelSpec("gpt2_small", "lm", "hf:gpt2_small", (4, 8, 16, 32), 1024),
    ModelSpec("gpt2_medium", "lm", "hf:gpt2_medium", (2, 4, 8, 16), 1024),
    ModelSpec("t5_small", "lm", "hf:t5_small", (8, 16, 32, 64), 512),
    ModelSpec("llama_small", "lm", "hf:llama_small", (2, 4, 8, 16), 1024),
)


@dataclass(frozen=True)
class Config:
    model: ModelSpec
    batch_size: int
    precision: str

    @property
    def stem(self) -> str:
        return file_stem(self.model.name, self.batch_size, self.precision)


def _split(csv: Optional[str]) -> Optional[list[str]]:
    return None if not csv else [s.strip() for s in csv.split(",") if s.strip()]


def enumerate_configs(
    zoo: Iterable[ModelSpec] = ZOO,
    *,
    models: Optional[list[str]] = None,
    precisions: Optional[list[str]] = None,
    max_batch: Optional[int] = None,
    quick: bool = False,
    breadth: bool = False,
) -> list[Config]:
    """Every (model, batch size, precision) to collect, smallest batch first so
    an OOM at one size means the larger ones of that model can be skipped.

    `breadth` orders them in rounds across the whole zoo instead (see
    BREADTH_ROUNDS), so that a run cut short by its time budget still holds
    every model at two batch sizes in both precisions."""
    zoo = list(zoo)
    known = {m.name for m in zoo}
    if models:
        unknown = sorted(set(models) - known)
        if unknown:
            raise ValueError(f"unknown models {unknown}; known: {sorted(known)}")
    precisions = precisions or list(PRECISIONS)
    bad = sorted(set(precisions) - set(PRECISIONS))
    if bad:
        raise ValueError(f"unknown precisions {bad}; known: {list(PRECISIONS)}")
    out = []
    for m in zoo:
        if models and m.name not in models:
            continue
        sizes = sorted(b for b in m.batch_sizes if max_batch is None or b <= max_batch)
        if quick:
            # Smallest and largest keep the batch-size range in a short run.
            sizes = sorted({sizes[0], sizes[-1]}) if sizes else []
        for p in precisions:
            for b in sizes:
                out.append(Config(m, b, p))
    if breadth:
        position = {m.name: i for i, m in enumerate(zoo)}
        out.sort(key=lambda c: (_breadth_round(c), position[c.model.name]))
    return out


# (precision, index into a model's sorted batch sizes): each round covers
# every model before the next starts. The second and third sizes come first:
# a doubling of the batch on every model, cheaper than the largest sizes.
BREADTH_ROUNDS = (("fp32", 1), ("fp32", 2), ("bf16", 1), ("bf16", 2), ("fp32", 0), ("bf16", 0),
                  ("fp32", 3), ("bf16", 3), ("fp32", 4), ("bf16", 4))


def _breadth_round(cfg: Config) -> int:
    sizes = sorted(cfg.model.batch_sizes)
    key = (cfg.precision, sizes.index(cfg.batch_size))
    return BREADTH_ROUNDS.index(key) if key in BREADTH_ROUNDS else len(BREADTH_ROUNDS)


def gpu_dir_name(gpu_name: str) -> str:
    """`NVIDIA H100 80GB HBM3` -> `h100-80gb-hbm3`: the corpus folder per GPU."""
    name = re.sub(r"^nvidia\s+", "", gpu_name.strip(), flags=re.IGNORECASE)
    return slug(name)


def plan_shards(files: list[tuple[Path, int]], max_files: int, max_bytes: int) -> list[list[Path]]:
    """Group (path, size) into shards of at most `max_files` files and
    `max_bytes` bytes, keeping each trace with its manifest (same stem).
    Sizes are of the already-compressed traces; tar.gz adds little."""
    groups: dict[str, list[tuple[Path, int]]] = {}
    for path, size in sorted(files):
        stem = path.name.removesuffix(TRACE_SUFFIX).removesuffix(MANIFEST_SUFFIX)
        groups.setdefault(stem, []).append((path, size))
    shards: list[list[Path]] = []
    cur: list[Path] = []
    cur_bytes = 0
    for stem in sorted(groups):
        members = groups[stem]
        n, size = len(members), sum(s for _, s in members)
        if n > max_files or size > max_bytes:
            raise ValueError(f"{stem}: {n} files / {size} bytes do not fit in one shard")
        if cur and (len(cur) + n > max_files or cur_bytes + size > max_bytes):
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.extend(p for p, _ in members)
        cur_bytes += size
    if cur:
        shards.append(cur)
    return shards


def pack_shards(gpu_dir: Path, shard_dir: Path, max_files: int, max_bytes: int) -> list[Path]:
    """Pack a GPU folder's traces and manifests into tar.gz shards (paths in
    the archive are `<gpu>/<file>`). skipped.jsonl goes into the first shard."""
    files = [(p, p.stat().st_size) for p in gpu_dir.iterdir()
             if p.name.endswith(TRACE_SUFFIX) or p.name.endswith(MANIFEST_SUFFIX)]
    shards = plan_shards(files, max_files, max_bytes)
    shard_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for i, members in enumerate(shards):
        target = shard_dir / f"{gpu_dir.name}-{i:03d}.tar.gz"
        with tarfile.open(target, "w:gz") as tar:
            for p in members:
                tar.add(p, arcname=f"{gpu_dir.name}/{p.name}")
            skipped = gpu_dir / "skipped.jsonl"
            if i == 0 and skipped.exists():
                tar.add(skipped, arcname=f"{gpu_dir.name}/skipped.jsonl")
        written.append(target)
    return written


# ---- everything below needs torch ------------------------------------------------------


def build_model(spec: ModelSpec):
    """Construct the model with random weights; nothing is downloaded."""
    kind, name = spec.builder.split(":", 1)
    if kind == "torchvision":
        import torchvision

        return torchvision.models.get_model(name, weights=None)
    import transformers as tf

    if name == "bert_base":
        return tf.BertForMaskedLM(tf.BertConfig())  # defaults are BERT-base
    if name == "gpt2_small":
        return tf.GPT2LMHeadModel(tf.GPT2Config())  # defaults are GPT-2 small (124M)
    if name == "gpt2_medium":
        return tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=1024, n_layer=24, n_head=16))
    if name == "t5_small":
        return tf.T5ForConditionalGeneration(
            # Without pretrained weights the config has no special tokens, and
            # shifting the labels into decoder inputs needs them.
            tf.T5Config(d_model=512, d_ff=2048, num_layers=6, num_decoder_layers=6, num_heads=8, d_kv=64,
                        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))
    if name == "llama_small":
        return tf.LlamaForCausalLM(tf.LlamaConfig(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
            num_key_value_heads=16, vocab_size=32000, max_position_embeddings=2048))
    raise ValueError(f"no builder for {spec.builder}")


def make_step(torch, model, spec: ModelSpec, batch_size: int, precision: str) -> tuple[Callable[[], None], str]:
    """One training step (forward, loss, backward, optimizer) on synthetic data."""
    device = torch.device("cuda")
    model = model.to(device).train()
    if spec.family == "vision":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        opt_name = "SGD(momentum=0.9)"
        x = torch.randn(batch_size, 3, spec.input_size, spec.input_size, device=device)
        y = torch.randint(0, 1000, (batch_size,), device=device)
        loss_fn = torch.nn.CrossEntropyLoss()

        def loss():
            return loss_fn(model(x), y)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        opt_name = "AdamW"
        vocab = model.config.vocab_size
        ids = torch.randint(0, vocab, (batch_size, spec.input_size), device=device)
        if spec.name.startswith("t5"):
            dec = torch.randint(0, vocab, (batch_size, spec.input_size // 4), device=device)

            def loss():
                return model(input_ids=ids, labels=dec).loss
        else:
            def loss():
                return model(input_ids=ids, labels=ids).loss

    def step():
        opt.zero_grad(set_to_none=True)
        if precision == "bf16":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = loss()
        else:
            out = loss()
        out.backward()
        opt.step()

    return step, opt_name


def run(args) -> int:
    from tracecast_collector import Schedule, import_torch, profile_training

    torch = import_torch()
    if not torch.cuda.is_available():
        print("no CUDA GPU visible to torch: collect_corpus needs one", file=sys.stderr)
        return 4
    # fp32 means true FP32 here: no TF32 tensor-core shortcuts.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = gpu_dir_name(torch.cuda.get_device_name(0))
    out_dir = Path(args.out) / gpu
    out_dir.mkdir(parents=True, exist_ok=True)
    skipped_log = out_dir / "skipped.jsonl"
    configs = enumerate_configs(models=_split(args.models), precisions=_split(args.precisions),
                                max_batch=args.max_batch, quick=args.quick, breadth=args.breadth)
    schedule = Schedule(wait=1, warmup=1, active=args.profiled_steps)
    oom_at: dict[tuple[str, str], int] = {}
    done = 0
    started = time.time()
    for n, cfg in enumerate(configs):
        stop = _stop_reason(args, started, out_dir)
        if stop:
            print(f"stopping before {len(configs) - n} configurations: {stop}")
            break
        key = (cfg.model.name, cfg.precision)
        if key in oom_at and cfg.batch_size > oom_at[key]:
            _note_skip(skipped_log, cfg, f"larger than batch {oom_at[key]}, which ran out of memory")
            continue
        if (out_dir / f"{cfg.stem}{MANIFEST_SUFFIX}").exists() and not args.force:
            print(f"= {cfg.stem} (already collected)")
            continue
        model = step = None
        try:
            model = build_model(cfg.model)
            step, opt_name = make_step(torch, model, cfg.model, cfg.batch_size, cfg.precision)
            t0 = time.time()
            res = profile_training(step, out_dir, model_name=cfg.model.name, batch_size=cfg.batch_size,
                                   precision=cfg.precision, optimizer=opt_name, timed_steps=args.timed_steps,
                                   warmup_steps=args.warmup_steps, schedule=schedule,
                                   extra={"family": cfg.model.family, "input_size": cfg.model.input_size,
                                          "autocast": cfg.precision == "bf16"},
                                   torch_module=torch)
            st = res.manifest["step_time"]
            print(f"+ {cfg.stem}: median {st['median']:.2f} ms (p10 {st['p10']:.2f}, p90 {st['p90']:.2f}) "
                  f"in {time.time() - t0:.0f}s")
            done += 1
        except torch.cuda.OutOfMemoryError:
            oom_at[key] = cfg.batch_size
            _note_skip(skipped_log, cfg, "CUDA out of memory")
            print(f"- {cfg.stem}: out of memory, skipped")
        except Exception as e:  # one configuration that cannot run must not end the run
            # The exception's type and first line only: a message never carries the environment.
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            _note_skip(skipped_log, cfg, reason)
            print(f"- {cfg.stem}: failed ({reason}), skipped")
        finally:
            # The step closure holds the model and its inputs: drop both before freeing the cache.
            model = step = None
            torch.cuda.empty_cache()
    print(f"collected {done} of {len(configs)} configurations into {out_dir}")
    if args.pack:
        shard_dir = Path(args.shard_dir) if args.shard_dir else Path(args.out) / "shards"
        shards = pack_shards(out_dir, shard_dir, args.shard_max_files, args.shard_max_mib << 20)
        for s in shards:
            print(f"shard {s} ({s.stat().st_size >> 20} MiB)")
    return 0


def collected_bytes(gpu_dir: Path) -> int:
    """Bytes of the traces and manifests collected so far (what the shards will carry)."""
    return sum(p.stat().st_size for p in gpu_dir.iterdir()
               if p.name.endswith(TRACE_SUFFIX) or p.name.endswith(MANIFEST_SUFFIX))


def _stop_reason(args, started: float, gpu_dir: Path) -> Optional[str]:
    """Why no further configuration starts: the time budget or the size cap."""
    if args.budget_s is not None and time.time() - started > args.budget_s:
        return f"the time budget of {args.budget_s} s is spent"
    if args.max_total_mib is not None and collected_bytes(gpu_dir) > args.max_total_mib << 20:
        return f"the collected files passed {args.max_total_mib} MiB"
    return None


def _note_skip(path: Path, cfg: Config, reason: str) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"stem": cfg.stem, "model": cfg.model.name, "batch_size": cfg.batch_size,
                            "precision": cfg.precision, "reason": reason}) + "\n")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(_REPO / "bench" / "corpus"), help="corpus root (default: bench/corpus)")
    p.add_argument("--models", help="comma-separated subset of the zoo (see --list)")
    p.add_argument("--precisions", help="comma-separated subset of fp32,bf16")
    p.add_argument("--max-batch", type=int, help="skip batch sizes above this")
    p.add_argument("--quick", action="store_true", help="only the smallest and largest batch size per model")
    p.add_argument("--breadth", action="store_true",
                   help="collect in rounds across the zoo (every model at two batch sizes in fp32, then bf16, ...) "
                        "so that a run stopped by --budget-s or --max-total-mib still covers every model")
    p.add_argument("--budget-s", type=int, help="start no configuration after this many seconds (then pack)")
    p.add_argument("--max-total-mib", type=int, help="start no configuration once the collected files pass this size")
    p.add_argument("--timed-steps", type=int, default=30, help="un-profiled steps timed with CUDA events")
    p.add_argument("--warmup-steps", type=int, default=5, help="steps run before timing")
    p.add_argument("--profiled-steps", type=int, default=1, help="active profiler steps per trace (1-2 keeps traces small)")
    p.add_argument("--force", action="store_true", help="re-collect configurations that already have a manifest")
    p.add_argument("--pack", action="store_true", help="pack the GPU folder into tar.gz shards afterwards")
    p.add_argument("--shard-max-files", type=int, default=8)
    p.add_argument("--shard-max-mib", type=int, default=60)
    p.add_argument("--shard-dir", help="where --pack writes the shards (default: <out>/shards)")
    p.add_argument("--list", action="store_true", help="print the configurations and exit (no torch needed)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        configs = enumerate_configs(models=_split(args.models), precisions=_split(args.precisions),
                                    max_batch=args.max_batch, quick=args.quick, breadth=args.breadth)
        for c in configs:
            print(c.stem)
        print(f"{len(configs)} configurations", file=sys.stderr)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
