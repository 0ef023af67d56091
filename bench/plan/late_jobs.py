#!/usr/bin/env python3
"""Jobs a tracecast plan ran past their deadline, and what they cost the average JCT.

    late_jobs.py TRACECAST_PLAN_DIR [...]

Reads each directory's jobs.csv (schema: schemas/FORMATS.md). A job is late
when its GPUs are handed back (`release_s`) after its deadline; under
`--rules elasticflow` every job that ran was admitted, so these are the
admitted jobs that missed. Prints one JSON object per directory: jobs that
ran, late jobs, average JCT (h) of all that ran and of the late ones, and the
late jobs' share of the JCT sum.
"""
import csv
import json
import os
import sys


def late(plan_dir):
    path = os.path.join(plan_dir, "jobs.csv")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["release_s"]]
    jct = {r["job_id"]: (float(r["release_s"]) - float(r["submit_s"])) / 3600 for r in rows}
    missed = [r["job_id"] for r in rows if r["deadline_s"] and float(r["release_s"]) > float(r["deadline_s"])]
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


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        try:
            print(json.dumps(late(d)))
        except (OSError, KeyError, ValueError) as e:
            sys.exit(f"late_jobs.py: cannot read {os.path.join(d, 'jobs.csv')}: {e}")


if __name__ == "__main__":
    main()
