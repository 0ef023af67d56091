#!/usr/bin/env python3
"""One computation of the deadline metrics for ElasticFlow's simulator and tracecast alike.

    ef_metrics.py TRACE_CSV elasticflow RUN_DIR   # ElasticFlow's job.csv (+ run.sh's summary.json)
    ef_metrics.py TRACE_CSV tracecast PLAN_DIR    # tracecast plan's jobs.csv (+ metrics.json)
    ef_metrics.py TRACE_CSV SYSTEM DIR --common OTHER_SYSTEM OTHER_DIR
                                                  # also the avg JCT of both on the jobs both ran

Prints one JSON object. Every figure comes from the per-job end times in the
two systems' own logs, the way ElasticFlow's log defines them:
- a job's end is ElasticFlow's logged `end_time` (job.csv, `log.py:361`), or
  tracecast's `release_s` (when the job handed its GPUs back, jobs.csv); both
  include the slot rounding of decisions in rounds, except for ElasticFlow's
  Tiresias, which logs the computed end: there tracecast's `finish_s`
  (`LOGS_FINISH`);
- deadline met: end <= the trace's `deadline`; a job that never ran (rejected
  at admission, or not finished when a run was stopped) missed it;
- avg JCT: mean of end - submission over the jobs that ran to completion
  (ElasticFlow's job.csv rows), in hours;
- makespan: last end - first submission in the trace, in hours.
`own_deadline_met_pct` is each system's own count, for reference: ElasticFlow's
`ddl_satis_ratio` (it tests its planner's unrounded `real_end_time`), and
tracecast's `deadline_hit_rate` (work done by the deadline).
"""
import csv
import json
import os
import sys


# Policies whose ElasticFlow counterpart logs a job's computed end, not the
# round that frees its GPUs: its Tiresias (`dlas_sim_jobs` logs `end_time =
# int(event_time + remaining_time)`, scheduler.py:2971, though the end event
# comes at least one slot after the round). tracecast's are compared on
# their `finish_s`.
LOGS_FINISH = {"dlas-gpu"}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def outcome(system, run_dir):
    """Per job that ran to completion: its end; plus the system's own count, the
    share of GPU-time on unmeasured counts, and whether the run finished."""
    ends = {}
    own = None
    unmeasured = None
    if system == "elasticflow":
        job_csv = os.path.join(run_dir, "job.csv")
        for r in read_csv(job_csv) if os.path.exists(job_csv) else []:
            ends[r["job_id"]] = float(r["end_time"])
        summary = os.path.join(run_dir, "summary.json")
        if os.path.exists(summary):
            s = json.load(open(summary))
            ratio = s.get("ddl_satis_ratio")
            own = None if ratio is None else 100.0 * ratio
            finished = s.get("status") == "ok"
        else:
            finished = False
    else:
        m = json.load(open(os.path.join(run_dir, "metrics.json")))
        end = "finish_s" if m.get("policy") in LOGS_FINISH else "release_s"
        for r in read_csv(os.path.join(run_dir, "jobs.csv")):
            if r["status"] == "done":
                ends[r["job_id"]] = float(r[end])
        own = None if m.get("deadline_hit_rate") is None else 100.0 * m["deadline_hit_rate"]
        unmeasured = m.get("unmeasured_gpu_share")
        finished = True
    return ends, own, unmeasured, finished


def main():
    args = sys.argv[1:]
    common = None
    if len(args) == 6 and args[3] == "--common":
        common = (args[4], args[5])
        args = args[:3]
    if len(args) != 3 or args[1] not in ("elasticflow", "tracecast") or (
        common and common[0] not in ("elasticflow", "tracecast")
    ):
        sys.exit(__doc__)
    trace_path, system, run_dir = args
    trace = read_csv(trace_path)
    deadline = {r["job_id"]: float(r["deadline"]) for r in trace}
    submit = {r["job_id"]: float(r["submission_time"]) for r in trace}
    ends, own, unmeasured, finished = outcome(system, run_dir)
    unknown = set(ends) - set(deadline)
    if unknown:
        sys.exit(f"{run_dir}: {len(unknown)} job(s) not in {trace_path}, e.g. {sorted(unknown)[0]}")
    met = sum(1 for j, e in ends.items() if e <= deadline[j])
    jcts = [ends[j] - submit[j] for j in ends]
    first = min(submit.values())
    out = {
        "system": system,
        "finished": finished,
        "jobs": len(trace),
        "completed": len(ends),
        "deadline_met": met,
        "deadline_met_pct": 100.0 * met / len(trace),
        "avg_jct_h": sum(jcts) / len(jcts) / 3600.0 if jcts else None,
        "makespan_h": (max(ends.values()) - first) / 3600.0 if ends and finished else None,
        "own_deadline_met_pct": own,
        "unmeasured_gpu_share": unmeasured,
    }
    if common:
        other = outcome(*common)[0]
        both = set(ends) & set(other)
        mean = lambda e: sum(e[j] - submit[j] for j in both) / len(both) / 3600.0 if both else None
        out["common_jobs"] = len(both)
        out["common_avg_jct_h"] = mean(ends)
        out["other_common_avg_jct_h"] = mean(other)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
