#!/usr/bin/env bash
# tracecast's deadline planner against ElasticFlow's own simulator, under
# ElasticFlow's rules, on ElasticFlow's traces and cluster shapes (issue 17).
# From the repository root:
#
#   bench/plan/elasticflow.sh [--all | --pairs "TRACE:SPEC ..."] [OUTDIR]
#                                  (default OUTDIR: target/bench-elasticflow)
#
# Each (trace, cluster) pair runs, in the same invocation:
#   - ElasticFlow's simulator, unmodified, through ../shared/peers/elasticflow/run.sh,
#     with `ef-accessctrl` (ElasticFlow) and `edf` (its EDF baseline); a run
#     still going after EF_LIMIT seconds (default 600) is stopped and reported so;
#   - `tracecast plan --objective deadline --rules elasticflow` on the same trace,
#     cluster spec and A100 throughput table (../shared/cluster), and tracecast's
#     versions of ElasticFlow's baselines under the same rules (edf-elastic,
#     dlas-gpu, themis, gandiva; ElasticFlow's own gandiva runs by default
#     too, and EF_SCHEDULES="ef-accessctrl edf gandiva dlas-gpu themis" adds
#     its dlas-gpu and themis).
# tracecast also plans once on predicted throughputs (--belief-throughput, run
# on the measured ones): ResNet-50's A100 table predicted by `tracecast predict`
# from the ResNet-50 trace recorded on an H100 (bench/measured/h100-sxm5, the
# only model of ElasticFlow's seven we have a trace of; the other six keep their
# measured figures); the row `plan-deadline-predicted` shows what prediction
# error costs in deadlines met.
# Both systems' metrics come from their per-job logs through one script,
# bench/plan/ef_metrics.py. Wall times are whole processes (start-up, reading,
# planning, verifying, writing). Writes OUTDIR/results.md, a row per run of
# every pair run into OUTDIR so far (later runs of a pair replace earlier
# ones), and prints it.
#
# EF_REUSE=1 keeps ElasticFlow's runs already in OUTDIR (re-running tracecast only;
# the wall-time ratios then compare runs made at different times).
# Pairs: 195job on n16g8 and n4g8, cluster10 on n32g8 (ElasticFlow's shape
# for it, run_fig8b.sh) and n4g8. --all adds cluster01-09 on ElasticFlow's
# shapes (01-03, 05, 06 on n64g8; 04, 07-09 on n128g8) and on n4g8; most of
# ElasticFlow's runs on those take longer than EF_LIMIT.
# Needs target/release/tracecast (or $TRACECAST), python3, GNU time, and
# ElasticFlow's run.sh's Python 3.8-3.11 (it builds its own venv once).
set -euo pipefail
cd "$(dirname "$0")/../.."
ALL=0
PAIRS=(195job:n16g8 195job:n4g8 cluster10:n32g8 cluster10:n4g8)
case "${1:-}" in
  --all) ALL=1; shift ;;
  --pairs) read -r -a PAIRS <<< "$2"; shift 2 ;;
esac
OUT=${1:-target/bench-elasticflow}
T=${TRACECAST:-target/release/tracecast}
S=../shared/cluster
EF=../shared/peers/elasticflow/run.sh
LIMIT=${EF_LIMIT:-600}
[ -x "$T" ] || { echo "no $T: run 'cargo build --release -p tracecast' first" >&2; exit 1; }
[ -x "$EF" ] || { echo "SKIP: $EF missing" >&2; exit 1; }
mkdir -p "$OUT"

if [ "$ALL" = 1 ]; then
  for i in 01 02 03 05 06; do PAIRS+=(cluster$i:n64g8 cluster$i:n4g8); done
  for i in 04 07 08 09; do PAIRS+=(cluster$i:n128g8 cluster$i:n4g8); done
fi

# ResNet-50 on the A100 as tracecast predicts it (global batch = per-GPU batch x GPUs).
PRED=$OUT/predicted-resnet50
# --gradient-bytes: ResNet-50 has 25,557,032 fp32 parameters. --tf32 off, as
# the trace was recorded (what the default, auto, reads off its kernels too).
"$T" -q predict --trace bench/measured/h100-sxm5/kineto/resnet50-b64-fp32.pt.trace.json.gz \
  --trace-batch-size 64 --trace-model resnet50 --gpu "NVIDIA A100 SXM4 40GB" --gpu-type A100 --tf32 off \
  --batch-size 64 --gpus 1,2,4,8,16,32,64 --gradient-bytes 102228128 --out "$PRED" > "$PRED.out"
touch "$OUT/rows.txt"
row() {  # trace spec system schedule dir wall: replaces the pair's earlier row for that schedule
  grep -v "^$1 $2 $3 $4 " "$OUT/rows.txt" > "$OUT/rows.tmp.$$" || true
  echo "$*" >> "$OUT/rows.tmp.$$"
  mv "$OUT/rows.tmp.$$" "$OUT/rows.txt"
}
for pair in "${PAIRS[@]}"; do
  trace=${pair%%:*}; spec=${pair##*:}
  jobs=$S/elasticflow-itp/$trace.csv
  d=$OUT/${trace}_$spec
  mkdir -p "$d"
  echo "== $trace on $spec" >&2
  wall=$(python3 bench/plan/walltime.py "$d/tracecast.out" "$T" plan --jobs "$jobs" \
    --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" \
    --objective deadline --rules elasticflow --out "$d/tracecast")
  row "$trace" "$spec" tracecast plan-deadline "$d/tracecast" "$wall"
  wall=$(python3 bench/plan/walltime.py "$d/tracecast-predicted.out" "$T" plan --jobs "$jobs" \
    --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" \
    --belief-throughput "$PRED/throughput.csv" \
    --objective deadline --rules elasticflow --out "$d/tracecast-predicted")
  row "$trace" "$spec" tracecast plan-deadline-predicted "$d/tracecast-predicted" "$wall"
  # ElasticFlow's EDF as tracecast implements it, under the same rules.
  wall=$(python3 bench/plan/walltime.py "$d/tracecast-edf.out" "$T" simulate --jobs "$jobs" \
    --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" \
    --rules elasticflow --policy edf-elastic --out "$d/tracecast-edf")
  row "$trace" "$spec" tracecast edf-elastic "$d/tracecast-edf" "$wall"
  wall=$(python3 bench/plan/walltime.py "$d/tracecast-dlas.out" "$T" simulate --jobs "$jobs" \
    --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" \
    --rules elasticflow --policy dlas-gpu --out "$d/tracecast-dlas")
  row "$trace" "$spec" tracecast dlas-gpu "$d/tracecast-dlas" "$wall"
  wall=$(python3 bench/plan/walltime.py "$d/tracecast-themis.out" "$T" simulate --jobs "$jobs" \
    --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" \
    --rules elasticflow --policy themis --out "$d/tracecast-themis")
  row "$trace" "$spec" tracecast themis "$d/tracecast-themis" "$wall"
  wall=$(python3 bench/plan/walltime.py "$d/tracecast-gandiva.out" "$T" simulate --jobs "$jobs" \
    --cluster "$S/cluster_specs/$spec.csv" --throughput "$S/throughputs/A100" \
    --rules elasticflow --policy gandiva --out "$d/tracecast-gandiva")
  row "$trace" "$spec" tracecast gandiva "$d/tracecast-gandiva" "$wall"
  for sched in ${EF_SCHEDULES:-ef-accessctrl edf gandiva}; do
    if [ "${EF_REUSE:-0}" = 1 ] && [ -f "$d/$sched/summary.json" ]; then
      row "$trace" "$spec" elasticflow "$sched" "$d/$sched" -
      continue
    fi
    EF_TIMEOUT=$LIMIT "$EF" "$jobs" "$spec" "$sched" "$d/$sched" > "$d/$sched.line" 2> "$d/$sched.err" || true
    tail -n 1 "$d/$sched.line" >&2
    row "$trace" "$spec" elasticflow "$sched" "$d/$sched" -
  done
done

python3 - "$OUT" "$LIMIT" > "$OUT/results.md" <<'PY'
import json, os, subprocess, sys
out, limit = sys.argv[1], sys.argv[2]
order = {"tracecast": 0, "plan-deadline-predicted": 1, "edf-elastic": 2, "dlas-gpu": 3, "themis": 4, "gandiva": 5,
         "ef-accessctrl": 6}
order_ef = {"ef-accessctrl": 6, "edf": 7, "dlas-gpu": 8, "themis": 9, "gandiva": 10}
rows = [l.split() for l in open(os.path.join(out, "rows.txt")) if l.strip()]
rows.sort(key=lambda r: (r[0], -int(r[1][1:r[1].index("g")]),
                         (order_ef if r[2] == "elasticflow" else order).get(r[3], order.get(r[2], 9))))
S = "../shared/cluster"
def metrics(trace, system, d, common=()):
    r = subprocess.run([sys.executable, "bench/plan/ef_metrics.py", f"{S}/elasticflow-itp/{trace}.csv", system, d,
                        *common], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)
def f(v, fmt):
    return "-" if v is None else fmt.format(v)
print(f"Deadlines met: a job's logged end (ElasticFlow's `end_time`, tracecast's GPU release) by its deadline;")
print(f"rejected jobs count as missed. Avg JCT over the jobs that ran. Own count: each system's own figure.")
print(f"ElasticFlow runs stopped after {limit} s are marked *stopped*, their figures so far.\n")
print("The wall-time ratio sets each ElasticFlow run against the same policy's tracecast run (ef-accessctrl")
print("against plan-deadline, edf against edf-elastic).\n")
print("On the jobs both ran: the average JCT of tracecast's plan-deadline and of ElasticFlow's ef-accessctrl")
print("over the jobs that completed in both (admitting more jobs slows the ones both admit).\n")
print("| trace | cluster | system | schedule | deadlines met | own count | avg JCT (h) | on the jobs both ran: tracecast / ElasticFlow (h) | makespan (h) | wall (s) | unmeasured GPU-time | ElasticFlow wall / tracecast wall |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
tc_wall = {}
SAME = {"ef-accessctrl": "plan-deadline", "edf": "edf-elastic"}
for trace, spec, system, sched, d, wall in rows:
    ef_dir = os.path.join(os.path.dirname(d), "ef-accessctrl")
    both = sched == "plan-deadline" and os.path.exists(os.path.join(ef_dir, "job.csv"))
    m = metrics(trace, system, d, ("--common", "elasticflow", ef_dir) if both else ())
    common = "-"
    if both and m["common_jobs"]:
        common = f"{m['common_avg_jct_h']:.2f} / {m['other_common_avg_jct_h']:.2f} ({m['common_jobs']} jobs)"
    note, ratio = "", "-"
    if system == "tracecast":
        wall = float(wall)
        tc_wall[(trace, spec, sched)] = wall
    else:
        s = json.load(open(os.path.join(d, "summary.json"))) if os.path.exists(os.path.join(d, "summary.json")) else {}
        wall = s.get("wall_s")
        if not m["finished"]:
            note = f" *stopped* ({s.get('status', 'failed')}, {m['completed']} of {m['jobs']} done)"
        # Against the same policy in tracecast; ElasticFlow itself against plan-deadline.
        tw = tc_wall.get((trace, spec, SAME.get(sched, sched)))
        if wall is not None and tw:
            ratio = f"{wall / tw:,.0f}x" + ("+" if not m["finished"] else "")
    print(f"| {trace} | {spec} | {system} | {sched}{note} | {m['deadline_met_pct']:.1f}% | "
          f"{f(m['own_deadline_met_pct'], '{:.1f}%')} | {f(m['avg_jct_h'], '{:.2f}')} | {common} | {f(m['makespan_h'], '{:.1f}')} | "
          f"{f(wall, '{:.3f}')} | {f(m['unmeasured_gpu_share'], '{:.1%}')} | {ratio} |")
PY
cat "$OUT/results.md"
