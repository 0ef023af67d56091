#!/usr/bin/env bash
# What-ifs against measurements (issue 16): ResNet-50 training steps traced
# on an H100 and an H200 (bench/measured/{h100-sxm5,h200}/kineto, recorded by
# bench/gpu/measure_public.py) priced at the other batch size and on the
# other Hopper GPU, and the shared V100 ResNet-50 trace priced on both, each
# next to the step time measured there (CUDA events, 20 unprofiled steps).
# Both bases are shown: the recorded window times (`--base recorded`, the
# default) and the built-in window model's (`--base model`).
# Usage: bench/whatif_measured.sh
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
BIN=$PWD/target/release/tracecast
H100=bench/measured/h100-sxm5/kineto
H200=bench/measured/h200/kineto
WORK=$(mktemp -d /tmp/tracecast-whatif-measured.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
measured() { # kineto-dir trace-file
  awk -F, -v t="$2" '$1 == t { print $4 }' "$1/steps.csv"
}
iteration() { awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "iteration_ms") c = i } NR==2 { print $c }' "$1/traces.csv"; }
printf '%-44s %-6s %10s %10s %8s\n' "trace -> priced" base predicted measured error
row() { # label trace recorded-batch measured-ms extra-args...
  local label=$1 trace=$2 batch=$3 truth=$4; shift 4
  for base in recorded model; do
    rm -rf "$WORK/p"
    "$BIN" -q predict --trace "$trace" --trace-batch-size "$batch" --base "$base" ${1+"$@"} --out "$WORK/p" >/dev/null 2>&1
    awk -v l="$label" -v b="$base" -v p="$(iteration "$WORK/p")" -v m="$truth" \
      'BEGIN { printf "%-44s %-6s %8.2f ms %8.2f ms %+7.1f%%\n", l, b, p, m, 100 * (p - m) / m }'
  done
}
# The `fp32` runs had PyTorch's TF32 switches off, the `tf32` runs both on:
# each what-if says so (--tf32), since it decides the convolutions' peak.
switches() { [ "$1" = fp32 ] && echo off || echo on; }
for gpu in H100 H200; do
  M=${!gpu}
  for prec in fp32 tf32; do
    for b in 32 64; do
      row "$gpu b$b $prec as recorded" "$M/resnet50-b$b-$prec.pt.trace.json.gz" $b "$(measured "$M" resnet50-b$b-$prec.pt.trace.json.gz)"
    done
  done
  for prec in fp32 tf32; do
    row "$gpu b32 $prec -> b64" "$M/resnet50-b32-$prec.pt.trace.json.gz" 32 "$(measured "$M" resnet50-b64-$prec.pt.trace.json.gz)" --batch-size 64 --tf32 "$(switches $prec)"
    row "$gpu b64 $prec -> b32" "$M/resnet50-b64-$prec.pt.trace.json.gz" 64 "$(measured "$M" resnet50-b32-$prec.pt.trace.json.gz)" --batch-size 32 --tf32 "$(switches $prec)"
  done
done
# Across the two Hopper GPUs (same compute, 1.4x the bandwidth on the
# H200), fp32 only: the TF32 batch-32 runs are host-bound (bench/README.md).
for b in 32 64; do
  row "H100 b$b fp32 -> H200" "$H100/resnet50-b$b-fp32.pt.trace.json.gz" $b "$(measured "$H200" resnet50-b$b-fp32.pt.trace.json.gz)" --gpu H200 --tf32 off
  row "H200 b$b fp32 -> H100" "$H200/resnet50-b$b-fp32.pt.trace.json.gz" $b "$(measured "$H100" resnet50-b$b-fp32.pt.trace.json.gz)" --gpu H100 --tf32 off
done
gpu_work() { # label trace tf32-switches [gpu]: mean predicted GPU span of the steps after the first, and its kernels' part
  rm -rf "$WORK/g"
  "$BIN" -q predict --trace "$2" --trace-batch-size 32 --tf32 "$3" ${4:+--gpu "$4"} --out "$WORK/g" >/dev/null 2>&1
  awk -F, -v l="$1" 'NR==1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $h["step_id"] > 0 { s += $h["predicted_gpu_span_ns"]; b += $h["predicted_busy_ns"]; n++ }
    END { printf "GPU work per step (steps after the first), %s: %.2f ms, of which kernels %.2f ms\n", l, s / n / 1e6, b / n / 1e6 }' "$WORK/g/steps.csv"
}
V100=../shared/traces/pytorch__kineto/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz
if [ -f "$V100" ]; then
  # The 2021 trace loads its data on the training process (num_workers=0):
  # that host time is in its steps and stays in the what-if, and not in the
  # Hopper measurements (synthetic data on the GPU), so compare GPU work too.
  # The V100 has no TF32: PyTorch's defaults there are strict float32,
  # and on Hopper they put the convolutions on TF32 (the `tf32` runs).
  for gpu in H100 H200; do
    M=${!gpu}
    row "V100 b32 (2021) -> $gpu b32 fp32" "$V100" 32 "$(measured "$M" resnet50-b32-fp32.pt.trace.json.gz)" --gpu $gpu --tf32 off
    row "V100 b32 (2021) -> $gpu b32 TF32 defaults" "$V100" 32 "$(measured "$M" resnet50-b32-tf32.pt.trace.json.gz)" --gpu $gpu --tf32 pytorch
  done
  gpu_work "V100 trace as recorded" "$V100" off
  for gpu in H100 H200; do
    M=${!gpu}
    gpu_work "V100 trace -> $gpu fp32" "$V100" off $gpu
    gpu_work "V100 trace -> $gpu TF32 defaults" "$V100" pytorch $gpu
    gpu_work "$gpu b32 fp32 trace as recorded" "$M/resnet50-b32-fp32.pt.trace.json.gz" off
    gpu_work "$gpu b32 tf32 trace as recorded" "$M/resnet50-b32-tf32.pt.trace.json.gz" on
  done
else
  echo "(../shared/traces missing: the V100 -> Hopper rows are skipped)"
fi
# The strict and the TF32 H100 profiles priced on an A100 in strict float32:
# the TF32 one's recorded convolutions are slowed back by the same model.
for prec in fp32 tf32; do
  rm -rf "$WORK/a"
  "$BIN" -q predict --trace "$H100/resnet50-b32-$prec.pt.trace.json.gz" --trace-batch-size 32 --gpu "A100 80GB" \
    --tf32 off --out "$WORK/a" >/dev/null 2>&1
  printf 'H100 b32 %s trace -> A100 80GB, strict float32: %.2f ms\n' $prec "$(iteration "$WORK/a")"
done
