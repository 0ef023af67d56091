#!/usr/bin/env bash
# Planner benchmarks (issue 6), from the repository root:
#   bench/plan/run.sh [OUTDIR]        (default OUTDIR: target/bench-plan, git-ignored)
# Needs target/release/tracecast (or $TRACECAST), ../shared/cluster, python3
# and GNU time (/usr/bin/time). Writes OUTDIR/results.md and prints it.
#
# 1. The ten ElasticFlow ITP traces with the measured A100 throughputs, each
#    on the smallest ElasticFlow cluster shape of 8-GPU nodes that holds the
#    trace's largest job and has at least 1.25x the trace's average GPU demand
#    (sum of GPUs x duration at the requested count / submission span), i.e.
#    an offered load of at most 80%: `tracecast plan --objective jct` timed
#    with /usr/bin/time -v, then `tracecast simulate --policy all` (the planner's
#    three objectives and every baseline).
# 2. Planning with predictions: `plan --error normal:0.05 --error-seeds 5` on
#    every trace, and an error sweep on cluster02.
# 3. A generated 100,000-job, 10,000-GPU problem (bench/plan/gen_problem.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${TRACECAST:-target/release/tracecast}
S=../shared/cluster
OUT=${1:-target/bench-plan}
[ -x "$T" ] || { echo "no $T: run 'cargo build --release -p tracecast' first" >&2; exit 1; }
[ -d "$S" ] || { echo "SKIP: $S missing" >&2; exit 1; }
mkdir -p "$OUT"

pick_spec() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    { s = $h["submission_time"]; g = $h["num_gpu"]; gs += g * $h["duration"];
      if (NR == 2 || s < lo) lo = s; if (s > hi) hi = s; if (g > mg) mg = g }
    END { need = gs / (hi - lo) * 1.25; if (mg > need) need = mg;
          split("1 4 8 16 32 48 64 128 160 256", n, " ");
          for (k = 1; k <= 10; k++) if (n[k] * 8 >= need) { printf "n%dg8\n", n[k]; exit } }' "$1"
}

for i in 01 02 03 04 05 06 07 08 09 10; do
  c=cluster$i; jobs=$S/elasticflow-itp/$c.csv; spec=$(pick_spec "$jobs")
  d=$OUT/$c; mkdir -p "$d"; echo "$spec" > "$d/spec"
  inputs=(--jobs "$jobs" --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100")
  echo "== $c on $spec"
  /usr/bin/time -v "$T" plan "${inputs[@]}" --objective jct --out "$d/plan" > "$d/plan.out" 2> "$d/plan.time"
  "$T" simulate "${inputs[@]}" --policy all --out "$d/sim" > "$d/sim.out"
  "$T" plan "${inputs[@]}" --objective jct --out "$d/err" --error normal:0.05 --error-seeds 5 > "$d/err.out"
done

echo "== error sweep on cluster02"
spec=$(cat "$OUT/cluster02/spec")
for e in normal:0.02 normal:0.05 normal:0.10 normal:0.20 lognormal:0.20; do
  d=$OUT/sweep/${e/:/-}; mkdir -p "$d"
  "$T" plan --jobs $S/elasticflow-itp/cluster02.csv --cluster $S/cluster_specs/$spec.csv --throughput $S/throughputs/A100 \
    --out "$d" --error "$e" --error-seeds 5 > "$d/out"
done

echo "== generated 100,000 jobs on 10,000 GPUs"
bench/plan/gen_problem.sh "$OUT/gen" 100000 10000 42
/usr/bin/time -v "$T" plan --jobs "$OUT/gen/jobs.csv" --cluster "$OUT/gen/cluster.toml" --throughput $S/throughputs/A100 \
  --objective jct --out "$OUT/gen/plan" > "$OUT/gen/plan.out" 2> "$OUT/gen/plan.time"

python3 - "$OUT" > "$OUT/results.md" <<'PY'
import json, os, re, sys
out = sys.argv[1]
def timev(p):
    t = open(p).read()
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    parts = [float(x) for x in wall.split(":")]
    secs = parts[-1] + 60 * parts[-2] + (3600 * parts[-3] if len(parts) > 2 else 0)
    return secs, rss / 1024
def planned(p):
    return float(re.search(r"planned in ([0-9.]+)s", open(p).read()).group(1))
print("## Ten ITP clusters, A100 throughputs\n")
print("avg JCT and makespan in hours; deadline hit = share of jobs meeting their ElasticFlow deadline.\n")
pols = ["plan-jct", "plan-deadline", "plan-makespan", "fifo", "sjf-oracle", "tiresias", "edf", "fixed"]
print("| trace | jobs | cluster | " + " | ".join(pols) + " |")
print("|---|---:|---|" + "---:|" * len(pols))
timing = []
for i in range(1, 11):
    c = f"cluster{i:02d}"; d = os.path.join(out, c)
    spec = open(os.path.join(d, "spec")).read().strip()
    ms = {p: json.load(open(os.path.join(d, "sim", f"metrics-{p}.json"))) for p in pols}
    n = ms["fifo"]["jobs"]
    cells = []
    for p in pols:
        m = ms[p]
        hit = m["deadline_hit_rate"]
        cells.append(f"{m['avg_jct_s']/3600:.2f} / {hit*100:.0f}% / {m['makespan_s']/3600:.0f}")
    gpus = int(spec[1:].split("g")[0]) * 8
    print(f"| {c} | {n} | {spec} ({gpus} GPUs) | " + " | ".join(cells) + " |")
    w, rss = timev(os.path.join(d, "plan.time"))
    e = json.load(open(os.path.join(d, "err", "prediction_error.json")))
    timing.append((c, n, spec, planned(os.path.join(d, "plan.out")), w, rss, e))
print("\nCells: avg JCT (h) / deadline hit rate / makespan (h).\n")
print("## Planning time and prediction error (plan-jct)\n")
print("| trace | jobs | cluster | planning (s) | `tracecast plan` wall (s) | peak RSS (MiB) | avg JCT true (h) | loss at normal:0.05, mean of 5 seeds | worst seed |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
for c, n, spec, p, w, rss, e in timing:
    print(f"| {c} | {n} | {spec} | {p:.3f} | {w:.2f} | {rss:.0f} | {e['true_avg_jct_s']/3600:.3f} | {e['mean_loss']*100:+.2f}% | {e['max_loss']*100:+.2f}% |")
print("\n## Error sweep on cluster02 (plan-jct, 5 seeds)\n")
print("| error | mean loss | worst seed |\n|---|---:|---:|")
for e in ["normal-0.02", "normal-0.05", "normal-0.10", "normal-0.20", "lognormal-0.20"]:
    j = json.load(open(os.path.join(out, "sweep", e, "prediction_error.json")))
    print(f"| {j['error']} | {j['mean_loss']*100:+.2f}% | {j['max_loss']*100:+.2f}% |")
g = os.path.join(out, "gen")
w, rss = timev(os.path.join(g, "plan.time"))
m = json.load(open(os.path.join(g, "plan", "metrics.json")))
print("\n## Generated problem: 100,000 jobs, 10,000 GPUs (plan-jct)\n")
print(f"planning {planned(os.path.join(g, 'plan.out')):.1f} s; `tracecast plan` wall {w:.1f} s (reading, planning, verifying, writing schedule.json/csv and SVGs); peak RSS {rss:.0f} MiB; "
      f"avg JCT {m['avg_jct_s']/3600:.2f} h, GPU utilization {m['gpu_utilization']*100:.1f}%, {m['segments']} segments.")
PY
cat "$OUT/results.md"
