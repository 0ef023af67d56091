#!/usr/bin/env python3
"""The lead for `predict`'s replay of a step (`predict/src/replay.rs`).

`predict` priced a what-if's step as its GPU span with the recorded idle
gaps kept (plus the host's own pace as a floor on the recorded GPU). A gap
the host caused should close when the kernels grow, and one the GPU waited
through at a synchronisation should stay. This script replays each source
trace's step from the lake itself, as `predict` cannot (it reads the feature
table): the host issues every kernel and copy at its recorded launch time
(less the profiler's 3.5 us per CPU operator and every runtime call's time
beyond 5 us, which waited on the GPU: `predict`'s own figures), the GPU
runs them in launch order as soon as issued and free, each kernel's
duration scaled by the what-if's priced kernel time over the recorded one
(one factor per step: `predict`'s `busy_ms` over the trace's kernel time),
a synchronisation (a `*Synchronize` call, a copy to the host) holds the
host until the GPU drains, and a full launch queue (1,024 pending
launches) holds it until a slot frees. The step is replayed four times
back to back and the last period is its time, so a GPU that lags its host
by a step (most float32 steps here) is in steady state. Run on the output
of a `predict` that replays (2026-11-28 and later), it compares this fuller
replay with `predict`'s own.

Usage (a lake of the corpus, and `bench/whatif_corpus.py`'s output):

    tracecast ingest bench/corpus/h100-80gb-hbm3 --lake /tmp/corpus
    bench/.venv/bin/python bench/whatif_corpus.py --out OUT
    bench/.venv/bin/python bench/replay_whatif.py --lake /tmp/corpus --whatif OUT/whatif.csv

It prints MAPE and mean signed error per what-if kind and family for
`predict` and for the replay, from every trace and from the traces whose
own step `predict` prices within 5% as recorded. The one factor per step
is the lead's simplification: `predict` prices each kernel apart.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import numpy as np
    import pandas as pd
    import pyarrow.dataset as ds
except ImportError as e:  # pragma: no cover - a setup problem, said plainly
    sys.exit(f"{e}: run with bench/.venv/bin/python (make pydeps)")

# `predict`'s figures: the profiler's host cost per CPU operator, and the
# part of a runtime call that is its own work (the rest waited on the GPU).
PROFILER_NS_PER_OP = 3_500.0
CALL_WORK_NS = 5_000.0
# Pending launches a stream's queue holds before the host blocks.
LAUNCH_QUEUE = 1024
# Back-to-back replays of the step; the last period is its time.
REPEATS = 4
# Launch-to-start latency when the GPU is idle: kernels that waited longer
# waited on other work and say nothing about it.
LATENCY_SAMPLE_MAX_NS = 200_000.0
DEFAULT_LATENCY_NS = 5_000.0


def table(lake: Path, name: str, columns: list[str]) -> pd.DataFrame:
    path = lake / name
    if not path.is_dir():
        sys.exit(f"{path}: no such lake table (ingest the corpus first, see --help)")
    return ds.dataset(path, format="parquet").to_table(columns=columns).to_pandas()


class Step:
    """One recorded step: its GPU work in launch order, the host's
    synchronisations, and the map from recorded to host-work time."""

    def __init__(self, lake_tables: dict[str, pd.DataFrame], trace_id: str):
        steps = lake_tables["steps"]
        step = steps[steps.trace_id == trace_id].sort_values("step_id").iloc[0]
        self.start, self.end = float(step.start_ns), float(step.end_ns)
        launches = lake_tables["launches"]
        launches = launches[launches.trace_id == trace_id].set_index("launch_id")

        def in_step(frame: pd.DataFrame) -> pd.DataFrame:
            frame = frame[(frame.trace_id == trace_id) & (frame.step_id == step.step_id)]
            return frame[frame.launch_id.notna()]

        kernels = in_step(lake_tables["kernels"]).assign(copy=False)
        copies = in_step(lake_tables["memcpy"]).assign(copy=True)
        columns = ["start_ns", "dur_ns", "launch_id", "copy"]
        work = pd.concat([kernels[columns], copies[columns]]).sort_values("start_ns")
        self.work = work.assign(launch_ns=launches.loc[work.launch_id.astype(int), "start_ns"].values)
        self.kernel_ns = union_ns(kernels.start_ns.values, kernels.dur_ns.values)

        calls = launches[(launches.start_ns >= self.start) & (launches.start_ns <= self.end)]
        to_host = set(copies[copies.direction == "DtoH"].launch_id.astype(int))
        self.syncs = calls[calls.name.str.contains("Synchronize") | calls.index.isin(to_host)]
        ops = lake_tables["ops"]
        self.op_starts = np.sort(
            ops[(ops.trace_id == trace_id) & (ops.start_ns >= self.start) & (ops.start_ns <= self.end)].start_ns.values
        )
        waits = calls.assign(end=calls.start_ns + calls.dur_ns, wait=(calls.dur_ns - CALL_WORK_NS).clip(lower=0))
        waits = waits.sort_values("end")
        self.wait_ends, self.waited = waits.end.values, np.cumsum(waits.wait.values)
        self.latency = launch_latency(self.work)

    def host(self, t: float) -> float:
        """Recorded time `t` as the host's own work: the profiler's cost and
        the runtime calls' waits before it taken out."""
        i = np.searchsorted(self.wait_ends, t, side="right")
        waited = self.waited[i - 1] if i > 0 else 0.0
        return t - PROFILER_NS_PER_OP * np.searchsorted(self.op_starts, t) - waited

    def replay_ms(self, scale: float) -> float:
        """The step's time with every kernel `scale` times as long."""
        origin = self.host(self.start)
        period = self.host(self.end) - origin
        events = [(r.launch_ns, 0, r.dur_ns * (1.0 if r.copy else scale)) for r in self.work.itertuples()]
        events += [(r.start_ns, 1, float(r.start_ns + r.dur_ns)) for r in self.syncs.itertuples()]
        events.sort(key=lambda e: (e[0], e[1]))
        gpu_free, starts, shift, ends = -np.inf, [], 0.0, []
        for repeat in range(REPEATS):
            base = repeat * period + shift
            for recorded, is_sync, value in events:
                at = self.host(recorded) - origin + base
                if not is_sync:
                    if len(starts) >= LAUNCH_QUEUE and starts[-LAUNCH_QUEUE] > at:
                        held = starts[-LAUNCH_QUEUE] - at
                        shift, base, at = shift + held, base + held, at + held
                    start = max(at + self.latency, gpu_free)
                    starts.append(start)
                    gpu_free = start + value
                else:
                    recorded_resume = self.host(value) - origin + base
                    resume = max(at + min(value - recorded, 20_000.0), gpu_free)
                    shift, base = shift + resume - recorded_resume, base + resume - recorded_resume
            ends.append(max(period + base, gpu_free))
        return (ends[-1] - ends[-2]) / 1e6


def union_ns(starts: np.ndarray, durations: np.ndarray) -> float:
    """Time covered by intervals that may overlap (kernels on several streams)."""
    total, open_start, open_end = 0.0, None, None
    for a, b in sorted(zip(starts, starts + durations)):
        if open_end is None or a > open_end:
            if open_end is not None:
                total += open_end - open_start
            open_start, open_end = a, b
        else:
            open_end = max(open_end, b)
    return total + (open_end - open_start if open_end is not None else 0.0)


def launch_latency(work: pd.DataFrame) -> float:
    samples, busy_until = [], -np.inf
    for r in work.itertuples():
        lag = r.start_ns - r.launch_ns
        if r.start_ns > busy_until and lag < LATENCY_SAMPLE_MAX_NS:
            samples.append(lag)
        busy_until = max(busy_until, r.start_ns + r.dur_ns)
    return float(np.median(samples)) if samples else DEFAULT_LATENCY_NS


def summary(rows: pd.DataFrame) -> pd.Series:
    return pd.Series(
        {
            "what-ifs": len(rows),
            "predict MAPE": rows.predict_error.abs().mean(),
            "predict signed": rows.predict_error.mean(),
            "replay MAPE": rows.replay_error.abs().mean(),
            "replay signed": rows.replay_error.mean(),
        }
    )


def print_markdown(frame: pd.DataFrame) -> None:
    """One row per (kind, family), counts whole, errors to one decimal."""
    print("| what-if | family | " + " | ".join(frame.columns) + " |")
    print("|---|---|" + "---:|" * len(frame.columns))
    for (kind, family), row in frame.iterrows():
        cells = [f"{int(v)}" if c == "what-ifs" else f"{v:+.1f}" if "signed" in c else f"{v:.1f}" for c, v in row.items()]
        print(f"| {kind} | {family} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lake", type=Path, required=True, help="a lake of the corpus's traces")
    parser.add_argument("--whatif", type=Path, required=True, help="whatif.csv from bench/whatif_corpus.py")
    args = parser.parse_args()
    lake = {
        "traces": table(args.lake, "traces", ["trace_id", "source"]),
        "steps": table(args.lake, "steps", ["trace_id", "step_id", "start_ns", "end_ns"]),
        "kernels": table(args.lake, "kernels", ["trace_id", "start_ns", "dur_ns", "launch_id", "step_id"]),
        "memcpy": table(args.lake, "memcpy", ["trace_id", "start_ns", "dur_ns", "launch_id", "direction", "step_id"]),
        "launches": table(args.lake, "launches", ["trace_id", "launch_id", "name", "start_ns", "dur_ns"]),
        "ops": table(args.lake, "ops", ["trace_id", "start_ns"]),
    }
    trace_of = dict(zip(lake["traces"].source.str.replace(r".*/", "", regex=True), lake["traces"].trace_id))
    whatifs = pd.read_csv(args.whatif)
    missing = sorted(set(whatifs.source) - set(trace_of))
    if missing:
        sys.exit(f"{args.lake}: no trace for {len(missing)} source(s) of {args.whatif}, e.g. {missing[0]}")
    steps = {source: Step(lake, trace_of[source]) for source in sorted(set(whatifs.source))}
    replayed = [
        steps[w.source].replay_ms(w.busy_ms / (steps[w.source].kernel_ns / 1e6)) for w in whatifs.itertuples()
    ]
    whatifs = whatifs.assign(
        replay_ms=replayed,
        predict_error=100 * (whatifs.predicted_ms / whatifs.measured_ms - 1),
        replay_error=100 * (np.array(replayed) / whatifs.measured_ms - 1),
    )
    as_recorded = whatifs[whatifs.kind == "as recorded"].set_index("source")
    faithful = set(as_recorded.index[as_recorded.predict_error.abs() < 5.0])
    pd.set_option("display.width", 200)
    for title, rows in [
        ("every trace", whatifs),
        ("sources that `predict` prices within 5% as recorded", whatifs[whatifs.source.isin(faithful)]),
    ]:
        print(f"\nFrom {title} (MAPE %, mean signed error %):\n")
        print_markdown(rows.groupby(["kind", "family"]).apply(summary, include_groups=False))


if __name__ == "__main__":
    main()
