#!/usr/bin/env bash
# Mixed precision against Lambda's measurements (issue 16): ResNet-50
# training throughput in fp16 over fp32 on the V100, A100 and H100, at
# Lambda's batch sizes, next to tracecast's what-if from our strict-float32
# H100 ResNet-50 trace (bench/measured/h100-sxm5/kineto, batch 64) moved to
# each GPU and batch: `--precision fp16` against PyTorch's TF32 defaults
# (Lambda's "fp32" runs convolutions on TF32 from Ampere on). GPU time only
# (--idle none): Lambda's runs feed synthetic data. The V100 row prices
# 16-bit convolutions with the exponent for GPUs without TF32, the A100 and
# H100 rows with TF32's speed-up doubled (opmodel/src/tensor_cores.rs);
# Lambda's software is not the corpus's, so these are a check, not a fit.
# BERT-large's fp16 runs are in bench/lambda.sh.
# Usage: bench/half.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LAMBDA=../shared/public/lambda-deeplearning-benchmark
[ -d "$LAMBDA" ] || { echo "missing $LAMBDA"; exit 1; }
make -s build
BIN=$PWD/target/release/tracecast
TRACE=bench/measured/h100-sxm5/kineto/resnet50-b64-fp32.pt.trace.json.gz
WORK=$(mktemp -d /tmp/tracecast-half.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
lambda() { # file name_gpu -> resnet50 column
  python3 -c 'import csv,sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["name_gpu"] == sys.argv[2]: print(r["resnet50"])' "$LAMBDA/$1" "$2"
}
iteration() { # gpu batch args... -> ms
  rm -rf "$WORK/p"
  "$BIN" -q predict --trace "$TRACE" --trace-batch-size 64 --idle none --gpu "$1" --batch-size "$2" "${@:3}" --out "$WORK/p" >/dev/null 2>&1
  awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "iteration_ms") c = i } NR==2 { print $c }' "$WORK/p/traces.csv"
}
printf '| %s | %s | %s | %s | %s | %s |\n' "Lambda's GPU" "batch fp32 / fp16" "Lambda fp16 / fp32" "tracecast fp16 / fp32" "tracecast fp32 img/s" "tracecast fp16 img/s"
printf '|---|---:|---:|---:|---:|---:|\n'
for row in "LambdaCloud V100 16GB:V100" "A100 80GB SXM4:A100 80GB" "H100 80GB SXM5:H100"; do
  name=${row%%:*}; gpu=${row#*:}
  b32=$(lambda pytorch-train-bs-fp32.csv "$name"); b16=$(lambda pytorch-train-bs-fp16.csv "$name")
  t32=$(lambda pytorch-train-throughput-fp32.csv "$name"); t16=$(lambda pytorch-train-throughput-fp16.csv "$name")
  b32=${b32%.*}; b16=${b16%.*}
  ms32=$(iteration "$gpu" "$b32" --tf32 pytorch); ms16=$(iteration "$gpu" "$b16" --precision fp16)
  python3 -c "import sys
b32, b16, t32, t16, ms32, ms16 = map(float, sys.argv[2:])
p32, p16 = b32 / ms32 * 1e3, b16 / ms16 * 1e3
print(f'| {sys.argv[1]} | {b32:.0f} / {b16:.0f} | {t16 / t32:.2f} | {p16 / p32:.2f} | {p32:.0f} | {p16:.0f} |')" "$name" "$b32" "$b16" "$t32" "$t16" "$ms32" "$ms16"
done
