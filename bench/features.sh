#!/usr/bin/env bash
# Feature-table throughput (issue 3), against the independent pandas
# implementation (bench/features_check.py --time) in the same run:
#   1. the lake of every trace in ../shared/traces;
#   2. a generated (synthetic) lake with about SCALE times as many GPU items.
# W=16, S=4. Reports windows/s, items (kernel rows)/s and peak memory of
# `tracecast features` (best of 3 runs, whole process), the pandas figures
# (its computation, and writing its table as Parquet, timed apart), and the
# ratios. The pandas script computes fewer columns (bench/README.md).
# With --profile, also samples the run on the generated lake with Linux
# `perf` and prints where its CPU time goes, by kind of work.
# Usage: bench/features.sh [SCALE] [--profile]     (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-10}
PROFILE=${2:-}
[ -d ../shared/traces ] || { echo "missing ../shared/traces"; exit 1; }
[ -x /usr/bin/time ] || { apt-get update -q && apt-get install -y -q time; }
make -s build pydeps
BIN=$PWD/target/release/tracecast
PY=$PWD/bench/.venv/bin/python
WORK=$(mktemp -d /tmp/tracecast-fbench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

measure() { # LAKE LABEL
  local lake=$1 label=$2 best="" line peak
  echo "== $label"
  for _ in 1 2 3; do
    rm -rf "$WORK/out"
    line=$( { /usr/bin/time -f "TIME %e %M" "$BIN" -q features --lake "$lake" --out "$WORK/out" --window 16 --stride 4; } 2>&1 )
    secs=$(echo "$line" | awk '/^TIME/ {print $2}')
    peak=$(echo "$line" | awk '/^TIME/ {print $3}')
    if [ -z "$best" ] || awk "BEGIN {exit !($secs < $best)}"; then best=$secs; best_peak=$peak; best_line=$line; fi
  done
  items=$(echo "$best_line" | sed -n 's/.* windows from \([0-9]*\) kernels.*/\1/p')
  windows=$(echo "$best_line" | sed -n 's/.* steps, \([0-9]*\) windows.*/\1/p')
  echo "$best_line" | grep '^features'
  echo "output: windows/ $(du -sk "$WORK/out/windows" | cut -f1) KiB"
  awk -v s="$best" -v i="$items" -v w="$windows" -v m="$best_peak" 'BEGIN {
    printf "tracecast features: %d windows from %d items in %.2f s (whole process): %.0f windows/s, %.0f items/s, peak RSS %.0f MiB\n", w, i, s, w/s, i/s, m/1024 }'
  pandas=$("$PY" bench/features_check.py "$lake" "$WORK/out" --time)
  echo "$pandas"
  psecs=$(echo "$pandas" | sed -n 's/^pandas windows: .* in \([0-9.]*\) s.*/\1/p')
  pwrite=$(echo "$pandas" | sed -n 's/^pandas write: .* in \([0-9.]*\) s.*/\1/p')
  awk -v s="$best" -v p="$psecs" -v w="$pwrite" 'BEGIN {
    printf "ratio: tracecast is %.1fx the pandas computation (its time without start-up or writing)\n", p/s
    printf "ratio: tracecast is %.1fx the pandas computation plus writing its table as Parquet (no start-up)\n", (p+w)/s }'
}

echo "== building the lakes"
"$BIN" -q ingest ../shared/traces --lake "$WORK/shared-lake" || true
measure "$WORK/shared-lake" "shared traces ($(find ../shared/traces -type f | wc -l) files)"

SHARED_ITEMS=$(awk -F'"items": ' '/"items"/ {s += $2} END {print s+0}' "$WORK/out/features.json")
# A synthetic job of 600 layers x 3 steps has about 7,200 GPU items.
JOBS=$(( (SHARED_ITEMS * SCALE + 7199) / 7200 ))
"$BIN" -q synth --out "$WORK/synth" --jobs "$JOBS" --layers 600 --steps 3 >/dev/null
"$BIN" -q ingest "$WORK/synth" --lake "$WORK/synth-lake"
measure "$WORK/synth-lake" "generated lake, ${SCALE}x the shared lake's items ($JOBS synthetic traces)"

echo "== the generated lake again, with DataFusion's memory capped at 512 MiB (groups of 131,072 items)"
rm -rf "$WORK/out"
/usr/bin/time -f "peak RSS %M KiB, %e s" "$BIN" -q features --lake "$WORK/synth-lake" --out "$WORK/out" \
  --window 16 --stride 4 --memory-limit 512

if [ "$PROFILE" = --profile ]; then
  command -v perf >/dev/null || { apt-get update -q && apt-get install -y -q linux-perf; }
  echo "== where the CPU time goes on the generated lake (perf, 999 Hz)"
  rm -rf "$WORK/out"
  perf record -q -F 999 -o "$WORK/perf.data" "$BIN" -q features --lake "$WORK/synth-lake" --out "$WORK/out" \
    --window 16 --stride 4 >/dev/null 2>&1
  perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio 2>/dev/null | awk '
    /^ +[0-9.]+%/ {
      share = $1 + 0; total += share
      if ($0 ~ /ZSTD_|HUF_|HIST_|FSE_/) k = "zstd compression of the output"
      else if ($0 ~ /parquet::/) k = "Parquet encoding and decoding"
      else if ($0 ~ /joins::|JoinHash|hash_utils|hashbrown/) k = "hash joins and hashing"
      else if ($0 ~ /sort|arrow_ord|compare|row::/) k = "sorting"
      else if ($0 ~ /positions::|GroupsAccumulator|Accumulator|unnest/) k = "aggregates (window layout, per-step)"
      else if ($0 ~ /tracecast_features::(estimate|udf)/) k = "operator FLOP and byte estimates"
      else if ($0 ~ /clear_page|page_fault|mi_page|_mi_/) k = "memory allocation and page zeroing"
      else if ($0 ~ /memmove|memcpy|memset|take|filter|concat|MutableArrayData/) k = "copying arrays"
      else if ($0 ~ /is_contained_in|memchr|memcmp|strpos|lower/) k = "string search and compare"
      else if ($0 ~ /datafusion_(expr|optimizer|sql)|fmt::|SchemaDisplay|DFSchema/) k = "planning"
      else k = "other"
      by[k] += share
    }
    END { for (k in by) printf "%6.1f%%  %s\n", 100 * by[k] / total, k }' | sort -rn
fi
