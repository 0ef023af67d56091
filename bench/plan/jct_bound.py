"""The least average JCT any schedule could give the jobs a run completed.

    jct_bound.py TRACE_CSV THROUGHPUT_DIR GPUS SYSTEM RUN_DIR [SYSTEM RUN_DIR ...]

SYSTEM is `elasticflow` or `tracecast`, RUN_DIR what `ef_metrics.py` reads
for it (the ends come from its `outcome`, so both systems' jobs are read the
same way). For every job a run completed, its bound is its iterations over
its fastest throughput in THROUGHPUT_DIR (ElasticFlow's A100 tables: one CSV
per model, a row per global batch size, a column per GPU count) at any count
up to its batch size, 64 and GPUS: the job alone on the cluster from its
submission, with no overhead and no round. Prints one JSON object per run:
jobs completed, their average JCT, the average of their bounds, and the
ratio of the two; and, of the completed jobs whose bound takes at least
TIGHT of the time from submission to deadline ("tight") and of the others,
how many ended past their deadline.

Average JCT covers the jobs a system ran, so two systems that admit
different jobs are compared on different sets: where the bound of the jobs
one admitted is above the other's average JCT, no schedule of those jobs
could have matched it.
"""
import csv
import glob
import json
import os
import sys

from ef_metrics import outcome, read_csv

# ElasticFlow allocates at most this many GPUs to a job (its tables stop there).
MAX_GPUS = 64
# A job whose bound takes this share of its slack needs most of the cluster
# for most of the time it has.
TIGHT = 0.6


def throughputs(folder):
    """(model, global batch) -> {GPU count: iterations/s}, measured figures only."""
    table = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        model = os.path.splitext(os.path.basename(path))[0]
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                batch = int(row.pop("global_batch_size"))
                table[(model, batch)] = {int(n): float(v) for n, v in row.items() if v and float(v) > 0}
    return table


def main():
    args = sys.argv[1:]
    if len(args) < 5 or len(args) % 2 == 0:
        sys.exit(__doc__)
    trace_path, folder, gpus = args[0], args[1], int(args[2])
    table = throughputs(folder)
    jobs = {r["job_id"]: r for r in read_csv(trace_path)}
    for system, run_dir in zip(args[3::2], args[4::2]):
        ends = outcome(system, run_dir)[0]
        jct = bound = 0.0
        tight = tight_late = other_late = 0
        for job_id, end in ends.items():
            job = jobs[job_id]
            key = (job["model_name"], int(job["batch_size"]))
            if key not in table:
                sys.exit(f"{folder}: no throughput for {key[0]} at batch {key[1]} (job {job_id})")
            cap = min(key[1], MAX_GPUS, gpus)
            fastest = max((r for n, r in table[key].items() if n <= cap), default=0.0)
            if fastest <= 0.0:
                sys.exit(f"{folder}: no throughput for {key[0]} at batch {key[1]} on {cap} GPUs or fewer")
            submit, deadline = float(job["submission_time"]), float(job["deadline"])
            alone = int(job["num_iteration"]) / fastest
            jct += end - submit
            bound += alone
            late = end > deadline
            if alone >= TIGHT * (deadline - submit):
                tight += 1
                tight_late += late
            else:
                other_late += late
        n = max(len(ends), 1)
        print(json.dumps({
            "system": system,
            "run": run_dir,
            "completed": len(ends),
            "avg_jct_h": round(jct / n / 3600.0, 3),
            "bound_avg_jct_h": round(bound / n / 3600.0, 3),
            "jct_over_bound": round(jct / bound, 3) if bound else None,
            "tight": tight,
            "tight_late": tight_late,
            "other": len(ends) - tight,
            "other_late": other_late,
        }))


if __name__ == "__main__":
    main()
