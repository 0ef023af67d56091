#!/usr/bin/env python3
"""How much of a profiled step is the profiler's own host time: the
calibration of `tracecast predict --profiler-overhead-us`'s default.

A trace priced as recorded keeps its host time, and a host-bound step
recorded under the PyTorch profiler carries the profiler's cost of every
CPU operator it records. This prices each corpus trace's step as

    max(kernel time of the step, step priced as recorded - ops x K)

for a per-operator overhead K (microseconds, every recorded CPU operator
of the step, nested ones included) and prints the error against the step
measured without the profiler, per model family, for K from 0 to 8 us;
then K fitted on one family and scored on the other.

    bench/whatif_corpus.py --only 'as recorded' --profiler-overhead-us 0 --out OUT
    bench/profiler_overhead.py --whatif OUT/whatif.csv [--bin target/release/tracecast]
                               [--corpus bench/corpus/h100-80gb-hbm3]
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from whatif_corpus import read_corpus  # noqa: E402


def sql(binary: Path, lake: Path, query: str) -> list[dict[str, str]]:
    out = subprocess.run([str(binary), "-q", "sql", "--lake", str(lake), query, "--format", "csv"],
                         check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def per_trace(binary: Path, corpus: Path) -> dict[tuple[str, int, str], dict[str, float]]:
    """(model, batch, precision) -> the traced steps' CPU operators and kernel
    time; each trace's configuration from its collector manifest."""
    configs = {c.trace.name: c for c in read_corpus(corpus)}
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        subprocess.run([str(binary), "-q", "ingest", str(corpus), "--lake", str(lake)], check=True,
                       capture_output=True)
        ops = sql(binary, lake, "SELECT t.source, count(*) AS ops, count(DISTINCT o.step_id) AS steps "
                                "FROM ops o JOIN traces t ON t.trace_id = o.trace_id "
                                "WHERE o.step_id IS NOT NULL AND o.category = 'cpu_op' GROUP BY 1")
        busy = sql(binary, lake, "SELECT t.source, sum(k.dur_ns) AS busy_ns "
                                 "FROM kernels k JOIN traces t ON t.trace_id = k.trace_id "
                                 "WHERE k.step_id IS NOT NULL GROUP BY 1")
    busy_by_source = {r["source"]: float(r["busy_ns"]) for r in busy}
    table = {}
    for r in ops:
        config = configs.get(Path(r["source"]).name)
        if config is None or r["source"] not in busy_by_source:
            continue
        steps = max(int(r["steps"]), 1)
        table[(config.model, config.batch, config.precision)] = {
            "ops": int(r["ops"]) / steps,
            "busy_ms": busy_by_source[r["source"]] / steps / 1e6,
        }
    return table


def rows_of(whatif_csv: Path, traces: dict) -> list[dict]:
    rows = []
    with open(whatif_csv) as f:
        for r in csv.DictReader(f):
            if r["kind"] != "as recorded":
                continue
            key = (r["model"], int(r["from_batch"]), r["precision"])
            if key in traces:
                rows.append({"family": r["family"], "measured": float(r["measured_ms"]),
                             "priced": float(r["predicted_ms"]), **traces[key]})
    return rows


def mape(rows: list[dict], k_us: float) -> tuple[float, int]:
    errors = [abs(max(r["busy_ms"], r["priced"] - r["ops"] * k_us / 1e3) / r["measured"] - 1) * 100 for r in rows]
    return sum(errors) / len(errors), sum(e < 10 for e in errors)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--whatif", type=Path, required=True, help="bench/whatif_corpus.py's whatif.csv")
    p.add_argument("--bin", type=Path, default=REPO / "target/release/tracecast")
    p.add_argument("--corpus", type=Path, default=REPO / "bench/corpus/h100-80gb-hbm3")
    args = p.parse_args()
    rows = rows_of(args.whatif, per_trace(args.bin, args.corpus))
    if not rows:
        print(f"profiler_overhead.py: no 'as recorded' rows of {args.whatif} match a trace of {args.corpus}",
              file=sys.stderr)
        return 1
    families = sorted({r["family"] for r in rows})
    grid = [k / 2 for k in range(17)]
    print(f"{len(rows)} traces priced as recorded; MAPE % (within 10%) against the step without the profiler\n")
    print("| K (us per CPU operator) | all | " + " | ".join(families) + " |")
    print("|---|---|" + "---|" * len(families))
    for k in grid:
        cells = [mape(rows, k)] + [mape([r for r in rows if r["family"] == f], k) for f in families]
        print(f"| {k:.1f} | " + " | ".join(f"{m:.1f} ({n})" for m, n in cells) + " |")
    print()
    for fit in families:
        own = [r for r in rows if r["family"] == fit]
        best = min(grid, key=lambda k: mape(own, k)[0])
        for other in families:
            if other != fit:
                held = [r for r in rows if r["family"] == other]
                print(f"K fitted on {fit}: {best:.1f} us; {other} at it: {mape(held, best)[0]:.1f}% "
                      f"(at K = 0: {mape(held, 0)[0]:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
