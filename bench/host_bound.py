#!/usr/bin/env python3
"""Would a step priced as max(host time, GPU time) beat `predict`'s own
step?

`predict` prices a what-if's step as its GPU span, whose idle gaps stay as
recorded, plus the CPU time at its edges, less the profiler's own host
time, never below its kernels' time; on the recorded GPU, never below the
host's own time either (`host_ns` in its steps.csv: H below, with
predict's 5 us). This prices each what-if of `bench/whatif_corpus.py`
instead as

    max(H, predict):    `predict`'s step, floored at H (with --wait-from-us 5, `predict` itself;
                        with more, H is larger and the floor higher: the threshold's trade)
    host-or-GPU:        max(H, kernels on the target)
    host-or-GPU+edges:  max(H, kernels on the target + the recorded CPU time at the step's edges)
    gaps-absorbed:      `predict`'s step less the recorded idle gaps that the kernels' growth
                        fills (a GPU that needs longer than its host no longer waits for it)

where H is the source step's CPU time less the time its runtime calls
waited (each call's time beyond --wait-from-us, 5 as in `predict`: a
full launch queue, a synchronisation) less K us per recorded CPU operator,
and prints MAPE and
mean signed error per kind of what-if and model family, next to
`predict`'s own.

    bench/whatif_corpus.py --out OUT
    bench/host_bound.py --whatif OUT/whatif.csv [--bin target/release/tracecast]
                        [--corpus bench/corpus/h100-80gb-hbm3] [--profiler-overhead-us 3.5]
                        [--wait-from-us 5]

K must be the one `whatif_corpus.py` priced with (predict's default
unless it was given --profiler-overhead-us).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from profiler_overhead import sql  # noqa: E402

def host_times(binary: Path, corpus: Path, overhead_us: float, wait_from_ns: float) -> dict[str, float]:
    """Source trace file name -> H, ms: its steps' mean CPU time less the
    runtime calls' waits and the profiler's time."""
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        subprocess.run([str(binary), "-q", "ingest", str(corpus), "--lake", str(lake)], check=True,
                       capture_output=True)
        rows = sql(binary, lake, f"""
            WITH waits AS (
              SELECT trace_id, step_id,
                     sum(CASE WHEN dur_ns > {wait_from_ns} THEN dur_ns - {wait_from_ns} ELSE 0 END) AS wait_ns
              FROM launches WHERE step_id IS NOT NULL GROUP BY 1, 2),
            ops AS (
              SELECT trace_id, step_id, count(*) AS cpu_ops
              FROM ops WHERE step_id IS NOT NULL AND category = 'cpu_op' GROUP BY 1, 2)
            SELECT t.source, avg(s.dur_ns - coalesce(w.wait_ns, 0) - coalesce(o.cpu_ops, 0) * {overhead_us * 1e3}) AS host_ns
            FROM steps s JOIN traces t ON t.trace_id = s.trace_id
            LEFT JOIN waits w ON w.trace_id = s.trace_id AND w.step_id = s.step_id
            LEFT JOIN ops o ON o.trace_id = s.trace_id AND o.step_id = s.step_id
            GROUP BY 1""")
    return {Path(r["source"]).name: max(float(r["host_ns"]), 0.0) / 1e6 for r in rows}


def gaps_absorbed(row: dict[str, str], recorded_busy_ms: float) -> float:
    """`predict`'s step with the idle gaps it kept as recorded filled by
    the kernels' growth over their recorded time, never below the kernels."""
    predicted, busy = float(row["predicted_ms"]), float(row["busy_ms"])
    gaps = float(row["gpu_span_ms"]) - busy
    absorbed = min(gaps, max(busy - recorded_busy_ms, 0.0))
    return max(predicted - absorbed, busy) if absorbed > 0 else predicted


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--whatif", type=Path, required=True, help="bench/whatif_corpus.py's whatif.csv")
    p.add_argument("--bin", type=Path, default=REPO / "target" / "release" / "tracecast")
    p.add_argument("--corpus", type=Path, default=REPO / "bench" / "corpus" / "h100-80gb-hbm3")
    p.add_argument("--profiler-overhead-us", type=float, default=3.5)
    # A runtime call longer than this waited on the GPU (launches take a few
    # us): `runtime_wait_ns` in features/sql/05_steps.sql counts from 5.
    p.add_argument("--wait-from-us", type=float, default=5.0)
    args = p.parse_args(argv)

    with open(args.whatif, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "busy_ms" not in rows[0]:
        sys.exit(f"{args.whatif}: no busy_ms column: rerun bench/whatif_corpus.py")
    host = host_times(args.bin, args.corpus, args.profiler_overhead_us, args.wait_from_us * 1e3)
    # The CPU time at a source step's edges: its as-recorded price with the
    # profiler's time put back, less its GPU span.
    edges = {r["source"]: max(float(r["predicted_ms"]) + float(r["profiler_overhead_ms"]) - float(r["gpu_span_ms"]), 0.0)
             for r in rows if r["kind"] == "as recorded"}
    recorded_busy = {r["source"]: float(r["busy_ms"]) for r in rows if r["kind"] == "as recorded"}
    errors: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in rows:
        if r["source"] not in host:
            sys.exit(f"{r['source']}: not in {args.corpus}")
        measured, busy = float(r["measured_ms"]), float(r["busy_ms"])
        priced = {
            "predict": float(r["predicted_ms"]),
            "max(H, predict)": max(host[r["source"]], float(r["predicted_ms"])),
            "host-or-GPU": max(host[r["source"]], busy),
            "host-or-GPU+edges": max(host[r["source"]], busy + edges[r["source"]]),
            "gaps-absorbed": gaps_absorbed(r, recorded_busy[r["source"]]),
        }
        group = errors.setdefault((r["kind"], r["family"]), {name: [] for name in priced})
        for name, ms in priced.items():
            group[name].append(100.0 * (ms - measured) / measured)
    names = list(next(iter(errors.values())))
    print(f"MAPE % (mean signed error %) against the un-profiled steps; K = {args.profiler_overhead_us} us, "
          f"waits beyond {args.wait_from_us} us\n")
    print("| what-if | family | what-ifs | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for (kind, family), group in sorted(errors.items()):
        cells = [f"{statistics.fmean(abs(e) for e in group[n]):.1f} ({statistics.fmean(group[n]):+.1f})" for n in names]
        print(f"| {kind} | {family} | {len(group[names[0]])} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
