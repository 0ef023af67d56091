#!/usr/bin/env bash
# Which feature columns earn their place in the window model (issue 18):
# the final model trained on the real traces (labels
# fixtures/labels/shared-traces.csv) and on a generated lake SCALE times
# their size, each model's gain (importance.csv) summed by column kind:
# a per-position column pNN_<kind> over its W positions, the others alone.
# Usage: bench/importance.sh [SCALE]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-10}
[ -d ../shared/traces ] || { echo "missing ../shared/traces"; exit 1; }
make -s build
BIN=$PWD/target/release/tracecast
WORK=$(mktemp -d /tmp/tracecast-importance.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
DIRS=(../shared/traces/*/)
"$BIN" -q ingest "${DIRS[@]}" --lake "$WORK/shared-lake" >/dev/null
"$BIN" -q features --lake "$WORK/shared-lake" --out "$WORK/shared-features" 2>/dev/null
"$BIN" -q train --features "$WORK/shared-features" --labels fixtures/labels/shared-traces.csv \
  --folds 2 --out "$WORK/shared-model" >/dev/null
SHARED_ITEMS=$(awk -F'"items": ' '/"items"/ {s += $2} END {print s+0}' "$WORK/shared-features/features.json")
JOBS=$(( (SHARED_ITEMS * SCALE + 7199) / 7200 ))
"$BIN" -q synth --out "$WORK/synth" --jobs "$JOBS" --layers 600 --steps 3 >/dev/null
"$BIN" -q ingest "$WORK/synth" --lake "$WORK/synth-lake" >/dev/null
"$BIN" -q features --lake "$WORK/synth-lake" --out "$WORK/synth-features" 2>/dev/null
"$BIN" -q train --features "$WORK/synth-features" --folds 2 --out "$WORK/synth-model" >/dev/null
python3 - "$WORK/shared-model/importance.csv" "$WORK/synth-model/importance.csv" <<'PY'
import csv, re, sys
def by_kind(path):
    kinds = {}
    for row in csv.DictReader(open(path)):
        kind = re.sub(r"^p\d\d_", "p*_", row["input"])
        kinds[kind] = kinds.get(kind, 0.0) + float(row["share"])
    return kinds
shared, synth = by_kind(sys.argv[1]), by_kind(sys.argv[2])
inputs = {k: sum(1 for r in csv.DictReader(open(sys.argv[1])) if re.sub(r"^p\d\d_", "p*_", r["input"]) == k) for k in shared}
print("| column kind | inputs | share of gain, real traces | share of gain, generated lake |")
print("|---|---:|---:|---:|")
for kind in sorted(shared, key=lambda k: -shared[k]):
    print(f"| `{kind}` | {inputs[kind]} | {100 * shared[kind]:.2f}% | {100 * synth.get(kind, 0.0):.2f}% |")
idle = [k for k in shared if shared[k] < 0.001 and synth.get(k, 0.0) < 0.001]
print(f"\nunder 0.1% of the gain in both: {len(idle)} kinds, {sum(inputs[k] for k in idle)} inputs: " + ", ".join(f"`{k}`" for k in sorted(idle)))
PY
