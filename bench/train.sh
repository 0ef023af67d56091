#!/usr/bin/env bash
# Training and prediction speed (issue 4).
#   Training: `tracecast train`'s final fit (LightGBM dataset construction and
#   boosting, `final_fit_seconds` in metrics.json) against Python's lightgbm
#   (PyPI) on the same input matrix with the same parameters
#   (bench/train_lightgbm.py on `--export-inputs`), in the same run, 3 times
#   each; on the shared-trace feature table and on a generated one SCALE
#   times larger (synthetic timings: a speed test, not an accuracy test).
#   Prediction: traces/s of `tracecast predict` from a feature table and from
#   a lake (which includes building the features), whole process.
# Usage: bench/train.sh [SCALE]     (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-10}
[ -d ../shared/traces ] || { echo "missing ../shared/traces"; exit 1; }
make -s build pydeps
BIN=$PWD/target/release/tracecast
PY=$PWD/bench/.venv/bin/python
"$PY" -c "import lightgbm" 2>/dev/null || { echo "installing lightgbm (PyPI) into bench/.venv"; "$PY" -m pip install -q lightgbm; }
WORK=$(mktemp -d /tmp/tracecast-tbench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
nproc_=$(nproc)
echo "machine: $nproc_ cores; LightGBM uses one thread per core on both sides"

compare() { # FEATURES LABEL [LABELS]
  local features=$1 label=$2 labels=${3:-}
  echo "== $label"
  for i in 1 2 3; do
    rm -rf "$WORK/model"
    "$BIN" -q train --features "$features" ${labels:+--labels "$labels"} --folds 2 \
      --export-inputs "$WORK/inputs.parquet" --out "$WORK/model" >/dev/null
    "$PY" -c "import json; print('tracecast fit: %.3f s' % json.load(open('$WORK/model/metrics.json'))['final_fit_seconds'])"
  done | tee "$WORK/rust.txt"
  "$PY" bench/train_lightgbm.py "$WORK/inputs.parquet" "$WORK/model" 3 | tee "$WORK/python.txt"
  awk '/^tracecast fit/ {print $3}' "$WORK/rust.txt" | sort -n | sed -n 2p > "$WORK/r"
  awk '/^python lightgbm fit/ {print $4}' "$WORK/python.txt" | sort -n | sed -n 2p > "$WORK/p"
  awk -v r="$(cat "$WORK/r")" -v p="$(cat "$WORK/p")" 'BEGIN {
    printf "median fit: tracecast %.3f s, python lightgbm %.3f s: tracecast takes %.2fx the python time\n", r, p, r/p }'
}

predict_speed() { # MODEL FEATURES LAKE LABEL
  echo "== prediction, $4"
  /usr/bin/time -f "  whole process %e s, peak RSS %M KiB" "$BIN" -q predict --model "$1" --features "$2" --out "$WORK/pred" 2>&1 | grep -E "^predicted|whole process"
  /usr/bin/time -f "  whole process %e s, peak RSS %M KiB" "$BIN" -q predict --model "$1" --lake "$3" --out "$WORK/pred" 2>&1 | grep -E "^predicted|whole process"
}

echo "== building the shared lake and its features"
DIRS=(../shared/traces/*/)
"$BIN" -q ingest "${DIRS[@]}" --lake "$WORK/shared-lake" >/dev/null
"$BIN" -q features --lake "$WORK/shared-lake" --out "$WORK/shared-features" >/dev/null
compare "$WORK/shared-features" "shared traces" fixtures/labels/shared-traces.csv
"$BIN" -q train --features "$WORK/shared-features" --folds 2 --out "$WORK/shared-model" >/dev/null
predict_speed "$WORK/shared-model" "$WORK/shared-features" "$WORK/shared-lake" "shared traces (13 traces with windows)"

SHARED_ITEMS=$(awk -F'"items": ' '/"items"/ {s += $2} END {print s+0}' "$WORK/shared-features/features.json")
JOBS=$(( (SHARED_ITEMS * SCALE + 7199) / 7200 ))
echo "== building a generated lake, ${SCALE}x the shared items ($JOBS synthetic traces)"
"$BIN" -q synth --out "$WORK/synth" --jobs "$JOBS" --layers 600 --steps 3 >/dev/null
"$BIN" -q ingest "$WORK/synth" --lake "$WORK/synth-lake" >/dev/null
"$BIN" -q features --lake "$WORK/synth-lake" --out "$WORK/synth-features" >/dev/null
compare "$WORK/synth-features" "generated lake (${SCALE}x)"
predict_speed "$WORK/model" "$WORK/synth-features" "$WORK/synth-lake" "generated lake ($JOBS traces)"
