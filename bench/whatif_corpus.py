#!/usr/bin/env python3
"""What-ifs on the measured corpus: price each corpus trace at the other
batch sizes of the same model and precision, and in bfloat16, with
`tracecast predict`, and compare with the step time measured there
without the profiler (the collector manifest's `step_time.median`).

Every configuration of bench/corpus/<gpu>/ is both a source (its trace)
and a truth (its manifest), so the table needs no numbers from elsewhere.

    bench/whatif_corpus.py [--bin target/release/tracecast] [--corpus bench/corpus/h100-80gb-hbm3]
                           [--idle recorded|none] [--profiler-overhead-us US] [--jobs 2]
                           [--only KIND ...] --out OUT

OUT gets whatif.csv (one row per what-if: the priced iteration time, and
the source trace's file and its priced steps' GPU span, kernel time and
profiler time taken out, means in ms) and summary.md (MAPE and mean
signed error per kind of what-if and model family, then per model); the
summary is printed too.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# The collector's manifest reader, from this checkout when it is not installed.
REPO = Path(__file__).resolve().parents[1]
if str(REPO / "python" / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "python" / "src"))

from tracecast_collector.manifest import MANIFEST_SUFFIX, ManifestError, read_manifest  # noqa: E402
# A source trace that prices its own step within this (%) has host time the price gets right.
FAITHFUL_PCT = 5.0


@dataclass(frozen=True)
class Config:
    model: str
    family: str
    precision: str
    batch: int
    trace: Path
    measured_ms: float


KINDS = ("as recorded", "batch x2", "batch x0.5", "fp32 -> bf16")


@dataclass(frozen=True)
class WhatIf:
    kind: str  # "as recorded", "batch x2", "batch x0.5", "fp32 -> bf16"
    source: Config
    target: Config
    args: tuple[str, ...]


def read_corpus(corpus: Path) -> list[Config]:
    configs = []
    for manifest_path in sorted(corpus.glob(f"*{MANIFEST_SUFFIX}")):
        try:
            m = read_manifest(manifest_path)
        except ManifestError as e:
            sys.exit(str(e))
        run = m["run"]
        recorded = m["trace_file"]
        # The corpus stores traces recompressed; the manifest names the file as collected.
        stem = recorded.removesuffix(".gz")
        candidates = [corpus / recorded, corpus / f"{stem}.zst", corpus / stem]
        trace = next((c for c in candidates if c.exists()), None)
        if trace is None:
            sys.exit(f"{manifest_path}: no trace file beside it (looked for {', '.join(c.name for c in candidates)})")
        configs.append(Config(model=run["model_name"], family=run["extra"].get("family", "unknown"), precision=run["precision"],
                              batch=int(run["batch_size"]), trace=trace,
                              measured_ms=float(m["step_time"]["median"])))
    if not configs:
        sys.exit(f"{corpus}: no collector manifests (*{MANIFEST_SUFFIX})")
    return configs


def plan(configs: list[Config]) -> list[WhatIf]:
    """As recorded; each batch size from its neighbours (x2 and x0.5 where the
    corpus holds them); and each float32 trace priced in bfloat16."""
    by_key = {(c.model, c.precision, c.batch): c for c in configs}
    out = []
    for c in configs:
        out.append(WhatIf("as recorded", c, c, ()))
        for factor, kind in ((2, "batch x2"), (0.5, "batch x0.5")):
            target_batch = c.batch * factor
            target = by_key.get((c.model, c.precision, int(target_batch))) if target_batch == int(target_batch) else None
            if target is not None:
                out.append(WhatIf(kind, c, target, ("--batch-size", str(target.batch))))
        if c.precision == "fp32":
            target = by_key.get((c.model, "bf16", c.batch))
            if target is not None:
                out.append(WhatIf("fp32 -> bf16", c, target, ("--precision", "bf16")))
    return out


@dataclass(frozen=True)
class Priced:
    """A what-if's iteration time, and its steps' parts (means over the
    trace's steps, ms: `steps.csv`)."""
    iteration_ms: float
    gpu_span_ms: float
    busy_ms: float
    profiler_overhead_ms: float


def predict(binary: str, options: list[str], what: WhatIf) -> Priced:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "predict", "-q", "--trace", str(what.source.trace), *options,
               "--trace-batch-size", str(what.source.batch), *what.args, "--out", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
        with open(Path(tmp) / "traces.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        if len(rows) != 1:
            sys.exit(f"{' '.join(cmd)}: expected one row in traces.csv, got {len(rows)}")
        with open(Path(tmp) / "steps.csv", newline="") as f:
            steps = list(csv.DictReader(f))
        mean_ms = lambda column: statistics.fmean(float(s[column]) for s in steps) / 1e6  # noqa: E731
        return Priced(float(rows[0]["iteration_ms"]), mean_ms("predicted_gpu_span_ns"),
                      mean_ms("predicted_busy_ns"), mean_ms("profiler_overhead_ns"))


def error_pct(predicted: float, measured: float) -> float:
    return 100.0 * (predicted - measured) / measured


def summary_table(rows: list[dict], group_keys: list[str]) -> list[str]:
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in group_keys), []).append(float(r["error_pct"]))
    header = [*group_keys, "what-ifs", "MAPE %", "mean signed error %", "within 10%"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in sorted(groups):
        errs = groups[key]
        within = sum(abs(e) <= 10 for e in errs)
        lines.append("| " + " | ".join([*map(str, key), str(len(errs)),
                                         f"{statistics.fmean(abs(e) for e in errs):.1f}",
                                         f"{statistics.fmean(errs):+.1f}", f"{within}/{len(errs)}"]) + " |")
    return lines


def kernel_table(rows: list[dict], by: list[str]) -> list[str]:
    """Per group of what-ifs (the columns `by`): the what-if's kernel time
    (busy_ms) over the target configuration's own recorded kernel time (its
    as-recorded row's busy_ms), median and quartiles: the kernels' scaling
    apart from the host's."""
    recorded = {(r["model"], r["from_batch"], r["precision"]): float(r["busy_ms"])
                for r in rows if r["kind"] == "as recorded"}
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        target = recorded.get((r["model"], r["to_batch"], r["to_precision"]))
        if r["kind"] != "as recorded" and target:
            groups.setdefault(tuple(r[k] for k in by), []).append(float(r["busy_ms"]) / target)
    lines = ["| " + " | ".join(by) + " | what-ifs | median | 25% | 75% |", "|---" * (len(by) + 4) + "|"]
    for key, ratios in sorted(groups.items()):
        q1, q2, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
        lines.append("| " + " | ".join(key) + f" | {len(ratios)} | {q2:.2f} | {q1:.2f} | {q3:.2f} |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=str(REPO / "target" / "release" / "tracecast"))
    p.add_argument("--corpus", default=str(REPO / "bench" / "corpus" / "h100-80gb-hbm3"))
    p.add_argument("--idle", choices=("recorded", "none"), default="recorded",
                   help="tracecast predict --idle (default: recorded, predict's own default)")
    p.add_argument("--profiler-overhead-us", type=float,
                   help="tracecast predict --profiler-overhead-us (default: predict's own; "
                        "0 prices each step with the profiler's cost kept, as bench/profiler_overhead.py needs)")
    p.add_argument("--jobs", type=int, default=2, help="predictions run at once")
    p.add_argument("--only", action="append", choices=KINDS, metavar="KIND",
                   help=f"run only this kind of what-if (repeatable; one of: {', '.join(map(repr, KINDS))}); "
                        "sources are still judged faithful by their own 'as recorded' row")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)

    configs = read_corpus(Path(args.corpus))
    whatifs = plan(configs)
    if args.only:
        whatifs = [w for w in whatifs if w.kind in args.only or w.kind == "as recorded"]
    print(f"{len(configs)} configurations, {len(whatifs)} what-ifs", file=sys.stderr)
    options = ["--idle", args.idle]
    if args.profiler_overhead_us is not None:
        options += ["--profiler-overhead-us", str(args.profiler_overhead_us)]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        predicted = list(pool.map(lambda w: predict(args.bin, options, w), whatifs))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for w, priced in zip(whatifs, predicted):
        ms = priced.iteration_ms
        rows.append({"kind": w.kind, "family": w.source.family, "model": w.source.model,
                     "precision": w.source.precision, "from_batch": w.source.batch,
                     "to_precision": w.target.precision, "to_batch": w.target.batch,
                     "measured_ms": f"{w.target.measured_ms:.3f}", "predicted_ms": f"{ms:.3f}",
                     "error_pct": f"{error_pct(ms, w.target.measured_ms):.2f}",
                     "source": w.source.trace.name, "gpu_span_ms": f"{priced.gpu_span_ms:.3f}",
                     "busy_ms": f"{priced.busy_ms:.3f}",
                     "profiler_overhead_ms": f"{priced.profiler_overhead_ms:.3f}"})
    with open(out / "whatif.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    # A source whose own step, priced as recorded, is off its measurement has
    # host time the price gets wrong (the profiler's, beyond what predict
    # takes out, or a host-bound step's spread): its what-ifs inherit that.
    faithful = {(r["model"], r["precision"], r["from_batch"]) for r in rows
                if r["kind"] == "as recorded" and abs(float(r["error_pct"])) <= FAITHFUL_PCT}
    from_faithful = [r for r in rows if (r["model"], r["precision"], r["from_batch"]) in faithful]
    # Both ends priced right: the target's own trace prices its step too, so
    # what is left is the what-if's own error, not the host time's.
    both_faithful = [r for r in from_faithful if (r["model"], r["to_precision"], r["to_batch"]) in faithful]
    text = [f"Corpus `{args.corpus}`, `tracecast predict {' '.join(options)}`; truth: each target "
            "configuration's median step without the profiler (collector manifest).", "",
            "All what-ifs:", "", *summary_table(rows, ["kind", "family"]), "",
            f"From the {len(faithful)} sources whose trace, priced as recorded, is within {FAITHFUL_PCT}% of "
            "their own measured step (the others' host time is off: the profiler's beyond what is taken out, "
            "or a host-bound step's spread):", "",
            *summary_table(from_faithful, ["kind", "family"]), "",
            "Of those, the what-ifs whose target's own trace is within it too (both ends priced right as recorded):", "",
            *summary_table([r for r in both_faithful if r["kind"] != "as recorded"], ["kind", "family"]), "",
            "Kernels alone: each what-if's priced kernel time over its target configuration's own recorded "
            "kernel time (above 1: priced slow), whatever the host did:", "", *kernel_table(rows, ["kind", "family"]), "",
            "Per model, all what-ifs:", "", *summary_table(rows, ["kind", "model"]), "",
            "Kernels alone, per model:", "", *kernel_table(rows, ["kind", "model"]), ""]
    (out / "summary.md").write_text("\n".join(text))
    print("\n".join(text))
    print(f"wrote {out / 'whatif.csv'} and {out / 'summary.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
