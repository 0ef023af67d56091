#!/usr/bin/env python3
"""Jobs a tracecast plan ran past their deadline, and what they cost the average JCT.

    late_jobs.py TRACECAST_PLAN_DIR [...]
    late_jobs.py TRACECAST_PLAN_DIR --elasticflow EF_RUN_DIR TRACE_CSV

Reads each directory's jobs.csv (schema: schemas/FORMATS.md). A job is late
when its GPUs are handed back (`release_s`) after its deadline; under
`--rules elasticflow` every job that ran was admitted, so these are the
admitted jobs that missed. Prints one JSON object per directory: jobs that
ran, late jobs, average JCT (h) of all that ran and of the late ones, and the
late jobs' share of the JCT sum. With `--elasticflow`, also what ElasticFlow's
run of the same pair did with those jobs: how many it ran (the others it
refused at arrival or had not finished) and how many of those it finished by
their deadline, its ends read as `ef_metrics.py` reads them.
"""
import csv
import json
import os
import sys


def ran_and_missed(plan_dir):
    """The rows of the jobs a plan ran, and the ids of those it ran past their deadline."""
    with open(os.path.join(plan_dir, "jobs.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["release_s"]]
    missed = [r["job_id"] for r in rows if r["deadline_s"] and float(r["release_s"]) > float(r["deadline_s"])]
    return rows, missed


def late(plan_dir, read=None):
    """The summary of one plan; `read` is its `ran_and_missed`, where already read."""
    rows, missed = read or ran_and_missed(plan_dir)
    jct = {r["job_id"]: (float(r["release_s"]) - float(r["submit_s"])) / 3600 for r in rows}
    total = sum(jct.values())
    late_total = sum(jct[j] for j in missed)
    return {
        "plan": plan_dir,
        "ran": len(rows),
        "late": len(missed),
        "avg_jct_h": round(total / len(rows), 2) if rows else None,
        "late_avg_jct_h": round(late_total / len(missed), 2) if missed else None,
        "late_share_of_jct": round(late_total / total, 3) if total else None,
    }


def against_elasticflow(plan_dir, ef_dir, trace_csv):
    """`late(plan_dir)`, plus ElasticFlow's fate for the same late jobs."""
    from ef_metrics import outcome, read_csv

    read = ran_and_missed(plan_dir)
    out = late(plan_dir, read)
    missed = read[1]
    deadline = {r["job_id"]: float(r["deadline"]) for r in read_csv(trace_csv)}
    ends = outcome("elasticflow", ef_dir)[0]
    ran = [j for j in missed if j in ends]
    out["elasticflow_ran"] = len(ran)
    out["elasticflow_met"] = sum(1 for j in ran if ends[j] <= deadline[j])
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if "--elasticflow" in sys.argv:
        args = sys.argv[1:]
        if len(args) != 4 or args[1] != "--elasticflow":
            sys.exit(__doc__)
        print(json.dumps(against_elasticflow(args[0], args[2], args[3])))
        return
    for d in sys.argv[1:]:
        try:
            print(json.dumps(late(d)))
        except (OSError, KeyError, ValueError) as e:
            sys.exit(f"late_jobs.py: cannot read {os.path.join(d, 'jobs.csv')}: {e}")


if __name__ == "__main__":
    main()
