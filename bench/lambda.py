"""BERT-large training throughput on eight GPUs: tracecast's `ops price`
against Lambda's measured figures (a cross-GPU sanity check, issue 16).

Lambda ran NVIDIA's DeepLearningExamples BERT-large SQuAD fine-tuning in
"fp32" mode, which runs matrix products on TF32 tensor cores from Ampere on,
and in "fp16" mode (automatic mixed precision), at a per-GPU batch size of
its own choosing per GPU and mode (the `-bs-` files); its throughput is
sequences per second. tracecast prices NeuSight's bert_large configuration
(the same encoder; its pre-training heads add about a tenth of the work of
the SQuAD head) at the same batch and 384 tokens, forward, backward and an
Adam step: for fp32 with `--tf32 on` and in strict float32, for fp16 with
`--precision fp16`. Run by bench/lambda.sh.

Usage: python3 bench/lambda.py TRACECAST_BIN LAMBDA_DIR BERT_LARGE_CONFIG [fp32|fp16]
"""

import csv
import io
import statistics
import subprocess
import sys
from pathlib import Path

# (subfolder of LAMBDA_DIR with the row's files, Lambda's name_gpu, tracecast --gpu);
# the first row, the V100, is what the ratio columns divide by.
ROWS = [
    ("", "LambdaCloud V100 16GB", "V100"),
    ("", "LambdaCloud A10", "A10"),
    ("", "RTX 3090", "RTX 3090"),
    ("", "RTX A6000", "RTX A6000"),
    ("", "RTX 4090", "RTX 4090"),
    ("", "A100 80GB SXM4", "A100 80GB"),
    ("", "H100 80GB SXM5", "H100"),
    ("csv_v1_v2", "LambdaCloud 1x B200 192GB SXM5", "B200"),
]
TASK = "bert_large_squad"
SEQLEN = 384


def lambda_figure(root: Path, sub: str, kind: str, name: str, precision: str) -> float:
    path = root / sub / f"pytorch-train-{kind}-{precision}.csv"
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["name_gpu"] == name:
                return float(row[TASK])
    raise SystemExit(f"{path}: no row named {name!r}")


def priced(binary: str, config: str, gpu: str, batch: int, tf32: str, precision: str = "fp32") -> dict:
    out = subprocess.run(
        [binary, "-q", "ops", "price", "--config", config, "--gpu", gpu, "--batch-size", str(batch),
         "--seqlen", str(SEQLEN), "--mode", "train", "--optimizer", "adam", "--tf32", tf32,
         "--precision", precision, "--format", "csv"],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    if len(rows) != 1:
        raise SystemExit(f"ops price for {gpu}: expected one row, got {len(rows)}")
    return rows[0]


def main() -> None:
    binary, root, config = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    precision = sys.argv[4] if len(sys.argv) > 4 else "fp32"
    lines = []
    for sub, name, gpu in ROWS:
        batch = int(lambda_figure(root, sub, "bs", name, precision))
        measured = lambda_figure(root, sub, "throughput", name, precision)
        if precision == "fp16":
            # The second figure: float32 at the same batch, for the speed-up.
            on = priced(binary, config, gpu, batch, "off", "fp16")
            off = priced(binary, config, gpu, batch, "on")
        else:
            on = priced(binary, config, gpu, batch, "on")
            off = priced(binary, config, gpu, batch, "off")
        lines.append((name, on["gpu"], batch, measured, float(on["samples_per_s"]), float(off["samples_per_s"])))
    v100 = lines[0]
    print(f"BERT-large training, {SEQLEN} tokens, Lambda's {precision} runs at Lambda's batch per GPU; sequences/s\n")
    tracecast, other = (("mixed precision", "TF32 on, same batch") if precision == "fp16"
                        else ("TF32 on", "strict float32"))
    print(f"| Lambda's GPU | tracecast profile | batch | Lambda | tracecast, {tracecast} | tracecast / Lambda "
          f"| tracecast, {other} | Lambda / V100 | tracecast / V100 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    errors = []
    for name, profile, batch, measured, on, off in lines:
        errors.append(on / measured - 1.0)
        print(f"| {name} | {profile} | {batch} | {measured:.0f} | {on:.1f} | {on / measured:.2f} | {off:.1f} "
              f"| {measured / v100[3]:.2f} | {on / v100[4]:.2f} |")
    print(f"\nmedian |error| {100 * statistics.median(abs(e) for e in errors):.1f}%, "
          f"from {100 * min(errors):+.1f}% to {100 * max(errors):+.1f}%")
    order_measured = [l[0] for l in sorted(lines, key=lambda l: l[3])]
    order_priced = [l[0] for l in sorted(lines, key=lambda l: l[4])]
    same = order_measured == order_priced
    print(f"order of the GPUs by throughput: {'the same' if same else 'differs'}")
    if not same:
        print(f"  Lambda:    {' < '.join(order_measured)}\n  tracecast: {' < '.join(order_priced)}")


if __name__ == "__main__":
    main()
