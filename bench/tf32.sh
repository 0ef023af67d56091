#!/usr/bin/env bash
# The two TF32 speed-ups the op model prices float32 matrix work with
# (opmodel/src/tensor_cores.rs, `speedup`), measured (issue 16):
# - convolutions (cuDNN): ResNet-50 on one H100 SXM5, strict float32 against
#   TF32 (bench/measured/h100-sxm5/kineto; bench/tf32/convolutions.sql);
# - matrix products (cuBLAS, CUTLASS): the TF32 products of more than
#   10 GFLOP in a public A100 trace (HolisticTraceAnalysis's sampled dper3
#   rank: cutlass_80 kernels, GPU model not recorded) against the same size
#   of product in strict float32 on NeuSight's two A100s (the mean of their
#   rates; bench/tf32/matrix_products.sql, bench/tf32/neusight_a100.sql).
# Each speed-up is written as the TF32/FP32 peak ratio to a power: the
# exponent printed last.
# Usage: bench/tf32.sh
set -euo pipefail
cd "$(dirname "$0")/.."
A100_TRACE=../shared/traces/facebookresearch__HolisticTraceAnalysis/tests__data__trace_filter__sampled_rank-0.json.gz
[ -f "$A100_TRACE" ] && [ -d ../shared/public/neusight ] || { echo "missing $A100_TRACE or ../shared/public"; exit 1; }
make -s build
BIN=$PWD/target/release/tracecast
WORK=$(mktemp -d /tmp/tracecast-tf32.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
K=bench/measured/h100-sxm5/kineto
"$BIN" -q ingest "$K/resnet50-b32-fp32.pt.trace.json.gz" "$K/resnet50-b32-tf32.pt.trace.json.gz" --lake "$WORK/h100" >/dev/null
"$BIN" -q ingest "$A100_TRACE" --lake "$WORK/a100" >/dev/null
echo "== convolutions, H100 SXM5 (peaks: FP32 66.9, TF32 494.7 TFLOP/s)"
"$BIN" sql --lake "$WORK/h100" -f bench/tf32/convolutions.sql --format csv | tee "$WORK/conv.csv"
echo "== matrix products on TF32, A100 (peaks: FP32 19.5, TF32 156 TFLOP/s)"
"$BIN" sql --lake "$WORK/a100" -f bench/tf32/matrix_products.sql --format csv | tee "$WORK/tf32.csv"
echo "== matrix products in float32, NeuSight's A100s"
"$BIN" sql --public ../shared/public -f bench/tf32/neusight_a100.sql --format csv | tee "$WORK/fp32.csv"
python3 - "$WORK" <<'PY'
import csv, math, sys
work = sys.argv[1]
rows = lambda name: list(csv.DictReader(open(f"{work}/{name}")))
conv = {r["tf32"]: float(r["conv_ms_per_step"]) for r in rows("conv.csv")}
conv_speedup = conv["0"] / conv["1"]
tf32_rate = float(rows("tf32.csv")[0]["tflops"])
fp32_rate = sum(float(r["tflops"]) for r in rows("fp32.csv")) / len(rows("fp32.csv"))
gemm_speedup = tf32_rate / fp32_rate
print(f"convolutions: {conv['0']:.2f} -> {conv['1']:.2f} ms, {conv_speedup:.2f}x for a peak ratio of "
      f"{494.7 / 66.9:.2f}: exponent {math.log(conv_speedup) / math.log(494.7 / 66.9):.3f}")
print(f"matrix products: {fp32_rate:.2f} -> {tf32_rate:.2f} TFLOP/s, {gemm_speedup:.2f}x for a peak ratio of "
      f"{156 / 19.5:.2f}: exponent {math.log(gemm_speedup) / math.log(156 / 19.5):.3f}")
PY
