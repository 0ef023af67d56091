#!/usr/bin/env bash
# Planning time under load (issue 18), from the repository root:
#   bench/plan/busy.sh [OUTDIR] [LIMIT_S]      (default target/bench-busy, 300 s)
# Generates the busy Philly-like rigid workload (bench/plan/gen_busy.sh: 82,247
# jobs, 600 GPUs of average demand) and times `tracecast plan --objective jct`
# on 1024, 512, 256 and 128 A100s (ElasticFlow cluster specs n128g8 .. n16g8),
# each stopped after LIMIT_S seconds. Writes OUTDIR/results.md and prints it.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-target/bench-busy}
LIMIT=${2:-300}
T=${TRACECAST:-target/release/tracecast}
S=../shared/cluster
[ -x "$T" ] || { echo "no $T: run 'cargo build --release -p tracecast' first" >&2; exit 1; }
mkdir -p "$OUT"
bench/plan/gen_busy.sh "$OUT/jobs.csv"
{
  echo "| GPUs | planning (s) | \`tracecast plan\` wall (s) | avg queueing (h) | avg JCT (h) | median JCT (h) | p99 JCT (h) |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
  for spec in n128g8 n64g8 n32g8 n16g8; do
    gpus=$(( ${spec:1:${#spec}-3} * 8 ))
    rc=0
    wall=$(python3 bench/plan/walltime.py "$OUT/$spec.out" timeout "$LIMIT" "$T" plan --jobs "$OUT/jobs.csv" \
      --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" --objective jct \
      --out "$OUT/$spec") || rc=$?
    if [ "$rc" = 124 ]; then
      echo "| $gpus | not finished in $LIMIT s | - | - | - | - | - |"
    else
      python3 - "$OUT/$spec" "$gpus" "$wall" <<'PY'
import json, sys
d, gpus, wall = sys.argv[1:]
m = json.load(open(f"{d}/metrics.json"))
h = lambda k: m[k] / 3600
print(f"| {gpus} | {m['planning_s']:.2f} | {float(wall):.2f} | {h('avg_queueing_delay_s'):.1f} | {h('avg_jct_s'):.1f} "
      f"| {h('median_jct_s'):.2f} | {h('p99_jct_s'):.0f} |")
PY
    fi
  done
} | tee "$OUT/results.md"
