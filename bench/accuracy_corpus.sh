#!/usr/bin/env bash
# Accuracy of the window model on the measured corpus (bench/corpus: 164
# training configurations of 20 models on an H100, one profiled step each),
# per split: random (5 folds over traces), by-model (20 folds), by-batch,
# each against the baselines on the same held-out steps. Labels come from
# the collector manifests (`tracecast labels`). The truth is each traced
# step's wall time under the profiler; bench/whatif_corpus.py compares with
# the un-profiled step instead. Prints each report's summary table; the full
# reports stay in OUT (default: a temporary directory, removed).
# Usage: bench/accuracy_corpus.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
BIN=$PWD/target/release/tracecast
if [ -n "${1:-}" ]; then OUT=$1; mkdir -p "$OUT"; else OUT=$(mktemp -d /tmp/tracecast-acc-corpus.XXXXXX); trap 'rm -rf "$OUT"' EXIT; fi
"$BIN" -q ingest bench/corpus --lake "$OUT/lake" >/dev/null
"$BIN" -q labels --lake "$OUT/lake" --out "$OUT/labels.csv"
"$BIN" -q features --lake "$OUT/lake" --out "$OUT/features" 2>/dev/null
for split in random by-model by-batch; do
  echo "== $split"
  "$BIN" -q train --features "$OUT/features" --labels "$OUT/labels.csv" --split "$split" \
    --out "$OUT/model-$split" | sed -n '1,5p'
  sed -n '/^| predictor/,/^$/p' "$OUT/model-$split/report.md"
done
