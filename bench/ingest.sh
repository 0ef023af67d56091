#!/usr/bin/env bash
# Ingest throughput, measured against its peer and its floor in the same run:
#   peer:  HolisticTraceAnalysis 0.5.0 parsing the same trace as a whole process
#   floor: zcat of the same file
# Usage: bench/ingest.sh [--scale GB]   (--scale also ingests GB of generated traces)
#        TRACECAST=/path/to/older/tracecast bench/ingest.sh   (times another build, unbuilt)
# Needs: hyperfine (Debian), python3 -m venv; installs both if missing.
# Peak memory: tracecast's median and maximum over 7 runs, against the JSON's size.
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=../shared/traces/facebookresearch__HolisticTraceAnalysis/tests__data__df_index_resolver__df_index_resolver.json.gz
SCALE_GB=0
[ "${1:-}" = "--scale" ] && SCALE_GB=${2:?--scale needs a size in GB}
[ -f "$TRACE" ] || { echo "missing $TRACE (../shared/traces)"; exit 1; }
command -v hyperfine >/dev/null || { apt-get update -q && apt-get install -y -q hyperfine; }
[ -x /usr/bin/time ] || apt-get install -y -q time
if [ -n "${TRACECAST:-}" ]; then
  BIN=$(realpath "$TRACECAST")
else
  make -s build
  BIN=$PWD/target/release/tracecast
fi
WORK=$(mktemp -d /tmp/tracecast-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The peer, in its own virtual environment (bench/.venv, not committed).
# The venv may exist without HTA: other scripts (features.sh) share it.
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import hta' 2>/dev/null || bench/.venv/bin/pip install -q holistictraceanalysis==0.5.0
mkdir -p "$WORK/hta"
cp "$TRACE" "$WORK/hta/rank-1.json.gz"
# Not named hta.py: a script beside the package name would shadow it.
cat > "$WORK/run_hta.py" <<PY
import logging, sys
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_dir=sys.argv[1])
PY

JSON_BYTES=$(zcat "$TRACE" | wc -c)
MB=$(awk -v b="$JSON_BYTES" 'BEGIN {printf "%.1f", b/1e6}')
echo "== single file: $TRACE ($MB MB of JSON)"
hyperfine --warmup 1 --runs 10 --export-markdown "$WORK/single.md" \
  -n "zcat (floor)" "zcat $TRACE > /dev/null" \
  -n "tracecast ingest" --prepare "rm -rf $WORK/lake" "$BIN -q ingest $TRACE --lake $WORK/lake" \
  -n "HTA 0.5.0 TraceAnalysis" "bench/.venv/bin/python $WORK/run_hta.py $WORK/hta"
cat "$WORK/single.md"

echo "== peak memory (max resident set, /usr/bin/time -v; tracecast 7 runs, it moves by a few MiB)"
for _ in 1 2 3 4 5 6 7; do
  rm -rf "$WORK/lake"
  /usr/bin/time -v "$BIN" -q ingest "$TRACE" --lake "$WORK/lake" 2>&1 >/dev/null | awk '/Maximum resident/ {print $NF}'
done | sort -n | awk -v json="$JSON_BYTES" '{v[NR] = $1} END {
  printf "tracecast: median %d KiB (%.2fx the JSON), max %d KiB (%.2fx)\n", v[4], v[4] * 1024 / json, v[NR], v[NR] * 1024 / json }'
/usr/bin/time -v bench/.venv/bin/python "$WORK/run_hta.py" "$WORK/hta" 2>&1 >/dev/null | grep -E "Maximum resident|Elapsed"

echo "== whole directory: every trace in ../shared/traces"
DIRS=$(find ../shared/traces -mindepth 1 -maxdepth 1 -type d | tr '\n' ' ')
hyperfine --warmup 1 --runs 5 --prepare "rm -rf $WORK/lake" "$BIN -q ingest $DIRS --lake $WORK/lake"
rm -rf "$WORK/lake"
"$BIN" ingest $DIRS --lake "$WORK/lake"
echo "lake size: $(du -sb "$WORK/lake" | cut -f1) bytes"

if [ "$SCALE_GB" != 0 ]; then
  echo "== scale: about $SCALE_GB GB of generated (synthetic) traces"
  # One job of 8 layers x 3 steps is ~90 KB of JSON; 600 layers makes ~6.5 MB per file.
  JOBS=$(( SCALE_GB * 1000 / 6 ))
  "$BIN" synth --out "$WORK/scale" --jobs "$JOBS" --layers 600 --steps 3 >/dev/null
  du -sh "$WORK/scale"
  rm -rf "$WORK/lake"
  /usr/bin/time -v "$BIN" ingest "$WORK/scale" --lake "$WORK/lake" 2>&1 | grep -E "^ingested|Maximum resident|Elapsed"
  du -sh "$WORK/lake"
fi
