#!/usr/bin/env bash
# Do two builds plan the same? From the repository root:
#   bench/plan/same.sh OLD_BIN NEW_BIN [OUTDIR]      (default OUTDIR: target/bench-same)
# Runs both builds on the same problems and compares their outputs: every
# schedule.csv, jobs.csv and SVG byte for byte, every JSON output without its
# timings and format versions (numbers equal to 12 digits). Problems: the busy 82k-job load (gen_busy.sh) on 1024 to 128 A100s
# (`plan --objective jct`); ElasticFlow's ten ITP traces on n4g8 under each
# objective and under `--rules elasticflow`, and `simulate --policy all` on
# n16g8; the generated 100k-job, 10k-GPU problem (gen_problem.sh); the
# bundled A100 + T4 fixture (fixtures/plan) under each objective and
# `simulate --policy all`. A speed
# change should leave all of them the same; prints each difference and
# exits 1 if there is any. About 2 minutes per build on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=${1:?usage: same.sh OLD_BIN NEW_BIN [OUTDIR]}
NEW=${2:?usage: same.sh OLD_BIN NEW_BIN [OUTDIR]}
OUT=${3:-target/bench-same}
S=../shared/cluster
[ -d "$S" ] || { echo "SKIP: $S missing" >&2; exit 1; }
mkdir -p "$OUT"
[ -f "$OUT/busy.csv" ] || bench/plan/gen_busy.sh "$OUT/busy.csv" > /dev/null
[ -f "$OUT/gen/jobs.csv" ] || bench/plan/gen_problem.sh "$OUT/gen" 100000 10000 42 > /dev/null

run_all() {  # BIN DIR
  local T=$1 D=$2 tp=(--throughput "$S/throughputs/A100")
  rm -rf "$D"; mkdir -p "$D"
  for spec in n128g8 n64g8 n32g8 n16g8; do
    "$T" plan -q --jobs "$OUT/busy.csv" --cluster "$S/cluster_specs/$spec.csv" "${tp[@]}" \
      --objective jct --out "$D/busy-$spec" > /dev/null
  done
  for i in 01 02 03 04 05 06 07 08 09 10; do
    local jobs=$S/elasticflow-itp/cluster$i.csv
    for obj in jct deadline makespan; do
      "$T" plan -q --jobs "$jobs" --cluster "$S/cluster_specs/n4g8.csv" "${tp[@]}" \
        --objective "$obj" --out "$D/c$i-$obj" > /dev/null
    done
    "$T" plan -q --jobs "$jobs" --cluster "$S/cluster_specs/n4g8.csv" "${tp[@]}" \
      --rules elasticflow --objective deadline --out "$D/c$i-elasticflow" > /dev/null
    "$T" simulate -q --jobs "$jobs" --cluster "$S/cluster_specs/n16g8.csv" "${tp[@]}" \
      --policy all --out "$D/c$i-simulate" > /dev/null
  done
  "$T" plan -q --jobs "$OUT/gen/jobs.csv" --cluster "$OUT/gen/cluster.toml" "${tp[@]}" \
    --objective jct --out "$D/gen" > /dev/null
  # Two GPU types (A100 + T4): the paths that choose a type.
  local fx=(--jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml --throughput fixtures/plan/throughput.csv)
  for obj in jct deadline makespan; do
    "$T" plan -q "${fx[@]}" --objective "$obj" --out "$D/hetero-$obj" > /dev/null
  done
  "$T" simulate -q "${fx[@]}" --policy all --out "$D/hetero-simulate" > /dev/null
}

echo "== $OLD" >&2
run_all "$OLD" "$OUT/old"
echo "== $NEW" >&2
run_all "$NEW" "$OUT/new"

python3 - "$OUT/old" "$OUT/new" <<'PY'
import filecmp, json, os, sys
old, new = sys.argv[1:]
# Timings, and the file format's version (a bump that adds a field changes no plan).
TIMINGS = ("planning_s", "version")
def same(a, b):
    # Sums over jobs in another order differ in the last bits.
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (a.keys() | b.keys()) - set(TIMINGS)
        return all(k in a and k in b and same(a[k], b[k]) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
diffs = 0
for d in sorted(os.listdir(old)):
    for f in sorted(os.listdir(os.path.join(old, d))):
        a, b = os.path.join(old, d, f), os.path.join(new, d, f)
        if not os.path.exists(b):
            print(f"missing in the new build's outputs: {d}/{f}"); diffs += 1
        elif f.endswith(".json"):
            if not same(json.load(open(a)), json.load(open(b))):
                print(f"differs: {d}/{f}"); diffs += 1
        elif f.endswith((".csv", ".svg")) and not filecmp.cmp(a, b, shallow=False):
            print(f"differs: {d}/{f}"); diffs += 1
print(f"{diffs} difference(s)")
sys.exit(1 if diffs else 0)
PY
