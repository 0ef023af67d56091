#!/usr/bin/env bash
# Accuracy of the window model on the real traces (issue 4), per split:
# random (5 folds over traces), by-model, by-batch, by-gpu, each against the
# three baselines on the same held-out steps. Labels:
# fixtures/labels/shared-traces.csv. Prints each report's summary table; the
# full reports stay in OUT (default: a temporary directory, removed).
# Usage: bench/accuracy.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d ../shared/traces ] || { echo "missing ../shared/traces"; exit 1; }
make -s build
BIN=$PWD/target/release/tracecast
if [ -n "${1:-}" ]; then OUT=$1; mkdir -p "$OUT"; else OUT=$(mktemp -d /tmp/tracecast-acc.XXXXXX); trap 'rm -rf "$OUT"' EXIT; fi
DIRS=(../shared/traces/*/)
"$BIN" -q ingest "${DIRS[@]}" --lake "$OUT/lake" >/dev/null
"$BIN" -q features --lake "$OUT/lake" --out "$OUT/features" 2>/dev/null
for split in random by-model by-batch by-gpu; do
  echo "== $split"
  "$BIN" -q train --features "$OUT/features" --labels fixtures/labels/shared-traces.csv --split "$split" \
    --out "$OUT/model-$split" | sed -n '1,5p'
  sed -n '/^| predictor/,/^$/p' "$OUT/model-$split/report.md"
done
