#!/usr/bin/env bash
# Physical what-ifs (issue 16): the shared ResNet-50 trace (V100, batch 32)
# priced on other GPUs and batch sizes through the window model (trained on
# the shared traces) and the built-in op model. Prints one line per
# configuration: one-GPU iteration time and its ratio to the recorded setup,
# under PyTorch's TF32 defaults (convolutions on TF32 tensor cores where a GPU
# has them), then a few GPUs again in strict float32 (--tf32 off).
# Usage: bench/whatif.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d ../shared/traces ] || { echo "missing ../shared/traces"; exit 1; }
make -s build
BIN=$PWD/target/release/tracecast
WORK=$(mktemp -d /tmp/tracecast-whatif.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
T=../shared/traces
"$BIN" -q ingest "$T/AMD-AGI__TraceLens" "$T/facebookresearch__HolisticTraceAnalysis" "$T/facebookresearch__param" \
  "$T/pytorch__kineto" --lake "$WORK/lake" >/dev/null
"$BIN" -q features --lake "$WORK/lake" --out "$WORK/features" >/dev/null 2>&1
LABELS=fixtures/labels/shared-traces.csv
"$BIN" -q train --features "$WORK/features" --labels "$LABELS" --out "$WORK/model" >/dev/null 2>&1
RESNET=$T/pytorch__kineto/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz
base=""
price() { # gpu batch tf32
  local out="$WORK/pred"; rm -rf "$out"
  "$BIN" -q predict --model "$WORK/model" --trace "$RESNET" --labels "$LABELS" --gpu "$1" --batch-size "$2" \
    --tf32 "$3" --out "$out" >/dev/null 2>"$WORK/notes"
  ms=$(awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "iteration_ms") c = i } NR==2 { print $c }' "$out/traces.csv")
  [ -n "$base" ] || base=$ms
  awk -v g="$1" -v b="$2" -v m="$ms" -v base="$base" -v t="$3" \
    'BEGIN { printf "%-10s batch %4d, TF32 %-7s: %9.2f ms (%.2fx the V100 batch-32 time)\n", g, b, t, m, m / base }'
}
for cfg in "V100 32" "P40 32" "T4 32" "L4 32" "A30 32" "A10 32" "RTX A6000 32" "L40 32" "L40S 32" "RTX 4090 32" "A100 80GB 32" "H100 32" "H200 32" "B200 32" \
  "V100 64" "V100 128" "H100 64" "H100 128"; do
  price "${cfg% *}" "${cfg##* }" pytorch
done
for gpu in P40 L4 A30 A10 "RTX A6000" L40S "A100 80GB" H100; do
  price "$gpu" 32 off
done
sed -n 's/^note: //p' "$WORK/notes" | grep "the what-if moved" | head -1
