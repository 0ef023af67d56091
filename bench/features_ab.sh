#!/usr/bin/env bash
# Is one build of `tracecast features` faster than another? Runs the two
# binaries in turn (A B A B ...) on the same lake, so that the machine's
# drift hits both alike, and prints the median of the per-pair ratios of
# wall time, CPU time and peak memory (GNU time), with their range.
#
# Usage: bench/features_ab.sh BIN_A BIN_B LAKE [PAIRS] [-- FEATURES_ARGS...]
#   PAIRS: runs of each (default 8); FEATURES_ARGS go to both, e.g.
#   -- --memory-limit 512
#   With START=DIR in the environment each run starts from a copy of the
#   feature directory DIR (an incremental run: only the traces DIR lacks).
# A binary of another commit, for instance (a build of its own: DataFusion
# compiles again, about 20 minutes on 2 cores):
#   git worktree add /tmp/tc-before <commit> && (cd /tmp/tc-before && make build)
#   bench/features_ab.sh target/release/tracecast /tmp/tc-before/target/release/tracecast LAKE
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,15p' "$0"; exit 2; }
A=$1 B=$2 LAKE=$3
shift 3
PAIRS=8
if [ $# -gt 0 ] && [ "$1" != -- ]; then PAIRS=$1; shift; fi
[ "${1:-}" = -- ] && shift
[ -x /usr/bin/time ] || { apt-get update -q && apt-get install -y -q time; }
WORK=$(mktemp -d /tmp/tracecast-fab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

run() { # BIN A|B [ARGS]: appends "wall cpu peak_mib" to $WORK/pairs
  local bin=$1 bin_label=$2
  shift 2
  rm -rf "$WORK/out"
  if [ -n "${START:-}" ]; then cp -r "$START" "$WORK/out"; fi
  if ! /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$bin" -q features --lake "$LAKE" --out "$WORK/out" "$@" \
    >"$WORK/log" 2>&1; then
    echo "failed: $bin features --lake $LAKE $*" >&2
    cat "$WORK/log" >&2
    exit 1
  fi
  awk '{printf "%s %.2f %.0f ", $1, $2 + $3, $4 / 1024}' "$WORK/time" >>"$WORK/pairs"
  echo "$(du -sk "$WORK/out/windows" | cut -f1) KiB" >"$WORK/size-$bin_label"
}

echo "A: $A"
echo "B: $B"
echo "lake: $LAKE, $PAIRS pairs, extra arguments: ${*:-none}${START:+, starting from $START}"
run "$A" A "$@" # warms the page cache; not counted
: >"$WORK/pairs"
for _ in $(seq "$PAIRS"); do
  run "$A" A "$@"
  run "$B" B "$@"
  echo >>"$WORK/pairs"
done
echo "pairs (wall s, CPU s, peak MiB of A, then of B):"
sed 's/^/  /' "$WORK/pairs"
awk '
  { for (i = 1; i <= 3; i++) { a[i, NR] = $i; b[i, NR] = $(i + 3); r[i, NR] = $i / $(i + 3) } }
  function median(m, k,   v, i, j, t) {
    for (i = 1; i <= NR; i++) v[i] = m[k, i]
    for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    lo = v[1]; hi = v[NR]
    return NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  }
  END {
    split("wall s,CPU s,peak MiB", name, ",")
    for (i = 1; i <= 3; i++) {
      ma = median(a, i); mb = median(b, i); mr = median(r, i)
      printf "%-9s A %10.2f  B %10.2f  A/B %.3f (pairs %.3f..%.3f)\n", name[i], ma, mb, mr, lo, hi
    }
  }' "$WORK/pairs"
echo "windows/ written: A $(cat "$WORK/size-A"), B $(cat "$WORK/size-B")"
