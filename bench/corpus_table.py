#!/usr/bin/env python3
"""The corpus README's tables, from the collector manifests of one GPU's
folder: per model, its batch sizes, precisions, trace count and measured
step-time range; per family, the run-to-run spread of the un-profiled steps
((p90 - p10) / median of each configuration), the floor under any
predictor's error on these labels.

    bench/corpus_table.py [bench/corpus/h100-80gb-hbm3]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

# The collector's manifest reader, from this checkout when it is not installed.
REPO = Path(__file__).resolve().parents[1]
if str(REPO / "python" / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "python" / "src"))

from tracecast_collector.manifest import MANIFEST_SUFFIX, ManifestError, read_manifest  # noqa: E402


def family(manifest: dict) -> str:
    """The zoo's family (`vision`, `lm`), which collect_corpus.py records in `run.extra`."""
    return manifest["run"]["extra"].get("family", "unknown")


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else REPO / "bench" / "corpus" / "h100-80gb-hbm3"
    try:
        manifests = [read_manifest(p) for p in sorted(folder.glob(f"*{MANIFEST_SUFFIX}"))]
    except ManifestError as e:
        print(e, file=sys.stderr)
        return 1
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
    for model in sorted(by_model, key=lambda n: (family(by_model[n][0]), n)):
        ms = by_model[model]
        batches = sorted({m["run"]["batch_size"] for m in ms})
        precisions = sorted({m["run"]["precision"] for m in ms})
        steps = [m["step_time"]["median"] for m in ms]
        print(f"| {model} | {family(ms[0])} | {', '.join(map(str, batches))} | "
              f"{', '.join(precisions)} | {len(ms)} | {min(steps):.1f} - {max(steps):.1f} |")

    print("\nRun-to-run spread of the un-profiled steps, (p90 - p10) / median per configuration, %:\n")
    print("| family | precision | configurations | median | worst |")
    print("|---|---|---|---|---|")
    groups: dict[tuple[str, str], list[float]] = {}
    for m in manifests:
        st = m["step_time"]
        key = (family(m), m["run"]["precision"])
        groups.setdefault(key, []).append(100.0 * (st["p90"] - st["p10"]) / st["median"])
    for (family_name, precision), spreads in sorted(groups.items()):
        print(f"| {family_name} | {precision} | {len(spreads)} | {statistics.median(spreads):.1f} | {max(spreads):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
