#!/usr/bin/env bash
# Generate a busy, Philly-like rigid workload in the raw ITP format (not committed):
#   gen_busy.sh OUTFILE [JOBS] [DEMAND_GPUS] [SEED]
# writes OUTFILE (`job_id,submission_time,duration,num_gpu`), JOBS jobs (default
# 82,247, the size of the Philly trace) whose average GPU demand over the
# submission span is DEMAND_GPUS (default 600): on 1024 GPUs little queues,
# on 512 and fewer the queue grows without bound during bursts.
# The shapes are Philly-like (Jeon et al., ATC'19: mostly one-GPU jobs,
# heavy-tailed run times), with this generator's own numbers, not fitted to
# the trace: GPUs 1: 75%, 2: 6%, 4: 8%, 8: 8%, 16: 2%, 32: 1%; run times
# log-normal around a 20-minute median (sigma 2, capped at 30 days);
# Poisson arrivals with a daily cycle (the rate swings between 0 and twice
# the mean).
set -euo pipefail
out=${1:?usage: gen_busy.sh OUTFILE [JOBS] [DEMAND_GPUS] [SEED]}
jobs=${2:-82247}
demand=${3:-600}
seed=${4:-7}
awk -v n="$jobs" -v demand="$demand" -v seed="$seed" 'BEGIN {
    srand(seed);
    split("1 2 4 8 16 32", cnt, " "); split("0.75 0.81 0.89 0.97 0.99 1.0", cum, " ");
    for (i = 0; i < n; i++) {
        u = rand(); for (k = 1; u > cum[k]; k++); g[i] = cnt[k];
        # Box-Muller normal for the log-normal run time.
        z = sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand());
        d[i] = int(1200 * exp(2 * z)); if (d[i] < 60) d[i] = 60; if (d[i] > 2592000) d[i] = 2592000;
        gs += g[i] * d[i];
    }
    span = gs / demand; rate = n / span;
    print "job_id,submission_time,duration,num_gpu";
    t = 0;
    for (i = 0; i < n; i++) {
        # Thinning against the daily cycle: rate x (1 + sin) / 2 of a 2x peak.
        do { t += -log(1 - rand()) / (2 * rate); } while (rand() > (1 + sin(6.283185307 * t / 86400)) / 2);
        printf "busy%06d,%d,%d,%d\n", i, t, d[i], g[i];
    }
}' > "$out"
