#!/usr/bin/env python3
"""The corpus README's tables, from the collector manifests of one GPU's
folder: per model, its batch sizes, precisions, trace count and measured
step-time range; per family, the run-to-run spread of the un-profiled steps
((p90 - p10) / median of each configuration), the floor under any
predictor's error on these labels.

    bench/corpus_table.py [bench/corpus/h100-80gb-hbm3]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else REPO / "bench" / "corpus" / "h100-80gb-hbm3"
    manifests = [json.loads(p.read_text()) for p in sorted(folder.glob("*.manifest.json"))]
    if not manifests:
        print(f"{folder}: no collector manifests", file=sys.stderr)
        return 1
    gpus = sorted({m["hardware"]["gpu_name"] for m in manifests})
    software = sorted({f"torch {m['software']['torch']}, CUDA {m['software']['cuda']}" for m in manifests})
    print(f"{len(manifests)} configurations on {', '.join(gpus)} ({'; '.join(software)}).\n")

    by_model: dict[str, list[dict]] = {}
    for m in manifests:
        by_model.setdefault(m["run"]["model_name"], []).append(m)
    print("| model | family | batch sizes | precisions | traces | median step (ms) |")
    print("|---|---|---|---|---|---|")
    for model in sorted(by_model, key=lambda n: (by_model[n][0]["run"]["extra"]["family"], n)):
        ms = by_model[model]
        batches = sorted({m["run"]["batch_size"] for m in ms})
        precisions = sorted({m["run"]["precision"] for m in ms})
        steps = [m["step_time"]["median"] for m in ms]
        print(f"| {model} | {ms[0]['run']['extra']['family']} | {', '.join(map(str, batches))} | "
              f"{', '.join(precisions)} | {len(ms)} | {min(steps):.1f} - {max(steps):.1f} |")

    print("\nRun-to-run spread of the un-profiled steps, (p90 - p10) / median per configuration, %:\n")
    print("| family | precision | configurations | median | worst |")
    print("|---|---|---|---|---|")
    groups: dict[tuple[str, str], list[float]] = {}
    for m in manifests:
        st = m["step_time"]
        key = (m["run"]["extra"]["family"], m["run"]["precision"])
        groups.setdefault(key, []).append(100.0 * (st["p90"] - st["p10"]) / st["median"])
    for (family, precision), spreads in sorted(groups.items()):
        print(f"| {family} | {precision} | {len(spreads)} | {statistics.median(spreads):.1f} | {max(spreads):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
