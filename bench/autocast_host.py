#!/usr/bin/env python3
"""What autocast costs the host: for each configuration of the measured
corpus recorded in both float32 and bfloat16, the CPU operators the
bfloat16 trace's step has beyond the float32 one (`aten::to` and the calls
under it, their backward), and, where both steps were host-bound, what each
added operator cost against the float32 step's average operator.

A step is host-bound here when its measured time (the collector
manifest's median, without the profiler) is above 1.3 times its kernels'
time as `tracecast predict` prices the trace as recorded (`busy_ms` of
`bench/whatif_corpus.py`'s as-recorded rows).

    bench/whatif_corpus.py --out OUT
    bench/autocast_host.py --whatif OUT/whatif.csv [--corpus bench/corpus/h100-80gb-hbm3]

Reads the traces with the `zstd` command; prints one row per
configuration, then the median over the host-bound pairs.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOST_BOUND = 1.3


def cpu_ops(trace: Path) -> tuple[int, int]:
    """CPU operators in the trace (the corpus profiles one step), and its `aten::_to_copy` calls."""
    text = subprocess.run(["zstd", "-dc", str(trace)], check=True, capture_output=True).stdout
    events = json.loads(text)["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    return len(ops), sum(1 for e in ops if e.get("name") == "aten::_to_copy")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--whatif", required=True, help="whatif.csv of bench/whatif_corpus.py")
    p.add_argument("--corpus", default=str(REPO / "bench" / "corpus" / "h100-80gb-hbm3"))
    args = p.parse_args()
    corpus = Path(args.corpus)
    recorded = {}
    for r in csv.DictReader(open(args.whatif)):
        if r["kind"] == "as recorded":
            recorded[(r["model"], r["from_batch"], r["precision"])] = (float(r["measured_ms"]), float(r["busy_ms"]))
    print("| configuration | float32 ops | bfloat16 ops | casts | float32 step | bfloat16 step | host-bound | added op / average op |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    ratios = []
    for (model, batch, precision), (step32, busy32) in sorted(recorded.items()):
        if precision != "fp32" or (model, batch, "bf16") not in recorded:
            continue
        step16, busy16 = recorded[(model, batch, "bf16")]
        name = f"{model}__bs{batch}"
        ops32, _ = cpu_ops(corpus / f"{name}__fp32.pt.trace.json.zst")
        ops16, casts = cpu_ops(corpus / f"{name}__bf16.pt.trace.json.zst")
        host_bound = step32 > HOST_BOUND * busy32 and step16 > HOST_BOUND * busy16
        ratio = ""
        if host_bound and ops16 > ops32:
            # Each added operator's cost over the float32 step's own per operator.
            r = ((step16 - step32) / (ops16 - ops32)) / (step32 / ops32)
            ratios.append(r)
            ratio = f"{r:.2f}"
        print(f"| {name} | {ops32} | {ops16} | {casts} | {step32:.1f} | {step16:.1f} | {'yes' if host_bound else 'no'} | {ratio} |")
    if ratios:
        print(f"\nhost-bound pairs: {len(ratios)}; added operator / average float32 operator: "
              f"median {statistics.median(ratios):.2f}, range {min(ratios):.2f} to {max(ratios):.2f}")


if __name__ == "__main__":
    main()
