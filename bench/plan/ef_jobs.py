#!/usr/bin/env python3
"""How many jobs end at the same time in ElasticFlow's run and tracecast's.

    ef_jobs.py ELASTICFLOW_RUN_DIR TRACECAST_PLAN_DIR [TOLERANCE_S]   (default 1 s)

Each job's end is read as bench/plan/ef_metrics.py reads it (ElasticFlow's
logged `end_time`; tracecast's `release_s`, or `finish_s` for the policies
whose ElasticFlow counterpart logs the computed end). Prints one JSON object:
jobs both completed, and how many of them end within the tolerance.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ef_metrics import outcome  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    tol = float(sys.argv[3]) if len(sys.argv) == 4 else 1.0
    try:
        ef = outcome("elasticflow", sys.argv[1])[0]
        tc = outcome("tracecast", sys.argv[2])[0]
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"ef_jobs.py: cannot read the runs: {e}")
    both = set(ef) & set(tc)
    same = sum(1 for j in both if abs(ef[j] - tc[j]) <= tol)
    print(json.dumps({"completed_in_both": len(both), "same_end": same, "tolerance_s": tol}))


if __name__ == "__main__":
    main()
