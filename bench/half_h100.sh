#!/usr/bin/env bash
# Mixed precision against measurements on one H100 (issue 16):
# bench/measured/h100-bf16, recorded by bench/gpu/measure_public.py
# --precision bf16. Three checks, each a tracecast verb against a
# measurement it never reads:
#   1. isolated operators on bfloat16 tensors (NeuSight's batched-product
#      and linear test shapes, 400 convolutions), `ops bench --precision
#      bf16`, and the convolutions' measured float32/bfloat16 ratio next to
#      the priced one (the float32 twins in fp32-twin/);
#   2. NeuSight's end-to-end configurations under torch.autocast (Hugging
#      Face eager code, forward and backward, no optimizer), `ops price
#      --precision bf16 --optimizer none`, next to the float32 labels of
#      bench/measured/h100-sxm5 priced in float32;
#   3. `predict --precision bf16` of float32 Kineto traces against the
#      bfloat16 step measured without the profiler;
#   4. `ops price` of the same training steps (AdamW), float32 and
#      bfloat16, against those measured steps.
# The H100's float32 measurements (bench/measured/h100-sxm5) are trained
# on, as the shipped model is; its bfloat16 ones are not.
# Usage: bench/half_h100.sh [PROFILER_OVERHEAD_US]
#   PROFILER_OVERHEAD_US: section 3's `predict --profiler-overhead-us`, the
#   profiler's host cost per CPU operator on the host that recorded the
#   traces (default: predict's own default).
set -euo pipefail
cd "$(dirname "$0")/.."
PUBLIC=../shared/public
[ -d "$PUBLIC/neusight" ] || { echo "missing $PUBLIC/neusight"; exit 1; }
make -s build
BIN=$PWD/target/release/tracecast
HALF=bench/measured/h100-bf16
FP32=bench/measured/h100-sxm5
OVERHEAD=()
[ -n "${1:-}" ] && OVERHEAD=(--profiler-overhead-us "$1")
WORK=$(mktemp -d /tmp/tracecast-half-h100.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

echo "## 1. Isolated operators in bfloat16 (MAPE %, rows)"
"$BIN" -q ops bench --train "$PUBLIC" --extra "$FP32" --eval "$HALF" --precision bf16 --out "$WORK/half" 2>/dev/null |
  sed -n '/^| op/,/^$/p'
"$BIN" -q ops bench --train "$PUBLIC" --extra "$FP32" --eval "$HALF/fp32-twin" --out "$WORK/fp32" >/dev/null 2>&1
python3 - "$HALF" "$WORK" <<'EOF'
import csv, gzip, statistics, sys
half, work = sys.argv[1:]
measured = lambda p: [float(r["Latency"]) for r in csv.DictReader(gzip.open(p, "rt"))]
priced = lambda p: [float(r["predicted_ms"]) for r in csv.DictReader(open(p)) if r["op"] == "conv"]
m16, m32 = measured(f"{half}/neusight/per_op/test/conv.csv.gz"), measured(f"{half}/fp32-twin/neusight/per_op/test/conv.csv.gz")
p16, p32 = priced(f"{work}/half/neusight_perop.csv"), priced(f"{work}/fp32/neusight_perop.csv")
ratio = lambda a, b: statistics.median(x / y for x, y in zip(a, b))
key = lambda r: (r["B"], r["M"], r["N"], r["K"])
rows = lambda p: {key(r): float(r["Latency"]) for r in csv.DictReader(gzip.open(p, "rt")) if r["Latency"]}
f32, b16 = rows("bench/measured/h100-sxm5/neusight/per_op/test/linear.csv.gz"), rows(f"{half}/neusight/per_op/test/linear.csv.gz")
large = [f32[k] / b16[k] for k in b16 if k in f32 and f32[k] > 1.0]
print(f"linear layers above 1 ms in float32 ({len(large)}): float32 / bfloat16 time, median {statistics.median(large):.2f} (peak ratio 989.4 / 66.9 = 14.8)")
# cuBLAS's fast 16-bit kernels need every dimension a multiple of 8 elements.
aligned = lambda k: all(int(d) % 8 == 0 for d in k[1:])
for name, keep in (("aligned", aligned), ("with a dimension off 8 elements", lambda k: not aligned(k))):
    part = [f32[k] / b16[k] for k in b16 if k in f32 and f32[k] > 1.0 and keep(k)]
    print(f"  {name} ({len(part)}): median {statistics.median(part):.2f}")
# Batched products above 0.1 ms bound by memory in bfloat16: the share of
# the H100's bandwidth (3352 GB/s) they move, aligned or not.
for name, keep in (("aligned", lambda d: all(x % 8 == 0 for x in d)), ("with a dimension off 8 elements", lambda d: any(x % 8 for x in d))):
    shares = []
    for r in csv.DictReader(gzip.open(f"{half}/neusight/per_op/test/bmm.csv.gz", "rt")):
        b, m, n, k = (int(r[x]) for x in "BMNK")
        seconds, moved = float(r["Latency"]) / 1e3, 2 * b * (m * n + n * k + m * k)
        if seconds > 1e-4 and moved / 3352e9 > 2 * b * m * n * k / 989.4e12 and keep((m, n, k)):
            shares.append(moved / 3352e9 / seconds)
    print(f"memory-bound batched products above 0.1 ms, {name} ({len(shares)}): median share of peak bandwidth {statistics.median(shares):.2f}")
for op in ("bmm", "linear", "conv"):
    m = measured(f"{half}/neusight/per_op/test/{op}.csv.gz")
    p = [float(r["predicted_ms"]) for r in csv.DictReader(open(f"{work}/half/neusight_perop.csv")) if r["op"] == op]
    print(f"{op}: median signed error {100 * statistics.median((a - b) / b for a, b in zip(p, m)):+.1f}% ({len(m)} rows)")
big = [i for i, t in enumerate(m32) if t > 0.5]
pick = lambda xs: [xs[i] for i in big]
print(f"convolutions, float32 / bfloat16 time, median of {len(m16)}: measured {ratio(m32, m16):.2f}, priced {ratio(p32, p16):.2f}; "
      f"the {len(big)} above 0.5 ms in float32: measured {ratio(pick(m32), pick(m16)):.2f}, priced {ratio(pick(p32), pick(p16)):.2f}")
EOF

echo
echo "## 2. NeuSight's configurations under autocast, forward + backward (ms)"
echo
echo "| configuration | bf16 measured | bf16 priced | error | forward / backward, bf16: measured | priced | fp32 measured | fp32 priced | error |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
LABELS=$HALF/neusight/label/NVIDIA_H100_80GB_HBM3
priced() { # model mode seqlen batch precision
  "$BIN" -q ops price --config "$PUBLIC/neusight/DLmodel_configs/$1.json" --gpu H100 --mode "$2" \
    --seqlen "$3" --batch-size "$4" --optimizer none --precision "$5" --out "$WORK/price" >/dev/null 2>&1
  awk -F, 'NR==1 { for (i = 1; i <= NF; i++) h[$i] = i }
    NR==2 { print $h["iteration_ms"] "," $h["forward_ms"] "," $h["backward_ms"] }' "$WORK/price/priced.csv"
}
for label in "$LABELS"/*.json; do
  name=$(basename "$label" .json)
  IFS=- read -r model mode seqlen batch <<<"$name"
  fp32_label=$FP32/neusight/label/NVIDIA_H100_80GB_HBM3/$name.json
  p16=$(priced "$model" "$mode" "$seqlen" "$batch" bf16)
  p32=$(priced "$model" "$mode" "$seqlen" "$batch" fp32)
  python3 - "$name" "$label" "$fp32_label" "$p16" "$p32" <<'EOF'
import json, os, sys
name, half, fp32, p16, p32 = sys.argv[1:]
label = json.load(open(half))
m16 = label["e2e_latency"]
m32 = json.load(open(fp32))["e2e_latency"] if os.path.exists(fp32) else None
(p16, f16, b16), p32 = map(float, p16.split(",")), float(p32.split(",")[0])
cell = lambda p, m: f"{m:.1f} | {p:.1f} | {100 * (p - m) / m:+.1f}%" if m else f"- | {p:.1f} | -"
split = f"{label['fw_latency']:.1f} / {label['bwall_latency']:.1f} | {f16:.1f} / {b16:.1f}"
print(f"| {name} | {cell(p16, m16)} | {split} | {cell(p32, m32)} |")
EOF
done

echo
echo "## 3. predict --precision bf16 from float32 Kineto traces (ms per step)"
echo
echo "| float32 trace | bf16 measured | bf16 priced | error |"
echo "|---|---:|---:|---:|"
measured() { awk -F, -v t="$2" 'NR==1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 == t { print $h["step_ms"] }' "$1/steps.csv"; }
whatif() { # trace batch measured-ms
  rm -rf "$WORK/p"
  "$BIN" -q predict --trace "$1" --trace-batch-size "$2" --precision bf16 ${OVERHEAD[@]+"${OVERHEAD[@]}"} --out "$WORK/p" >/dev/null 2>&1
  awk -F, -v l="$(basename "$1")" -v m="$3" 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "iteration_ms") c = i }
    NR==2 { printf "| %s | %.2f | %.2f | %+.1f%% |\n", l, m, $c, 100 * ($c - m) / m }' "$WORK/p/traces.csv"
}
for b in 32 64; do
  whatif "$FP32/kineto/resnet50-b$b-fp32.pt.trace.json.gz" "$b" "$(measured "$HALF/kineto" "resnet50-b$b-bf16.pt.trace.json.gz")"
done
for run in bert_large-b8-s512 gpt2_large-b4-s1024; do
  batch=${run#*-b}; batch=${batch%%-*}
  whatif "$HALF/kineto/$run-fp32.pt.trace.json.gz" "$batch" "$(measured "$HALF/kineto" "$run-bf16.pt.trace.json.gz")"
done

echo
echo "## 4. ops price, a whole training step with AdamW, against the unprofiled step (ms)"
echo
echo "| run | measured | priced | error |"
echo "|---|---:|---:|---:|"
for run in "bert_large 8 512" "gpt2_large 4 1024"; do
  read -r model batch tokens <<<"$run"
  for precision in fp32 bf16; do
    rm -rf "$WORK/price"
    "$BIN" -q ops price --config "$PUBLIC/neusight/DLmodel_configs/$model.json" --gpu H100 --mode train \
      --seqlen "$tokens" --batch-size "$batch" --optimizer adam --precision "$precision" --out "$WORK/price" >/dev/null 2>&1
    trace="$model-b$batch-s$tokens-$precision.pt.trace.json.gz"
    awk -F, -v l="$model-b$batch-s$tokens-$precision" -v m="$(measured "$HALF/kineto" "$trace")" \
      'NR==1 { for (i = 1; i <= NF; i++) if ($i == "iteration_ms") c = i }
       NR==2 { printf "| %s | %.1f | %.1f | %+.1f%% |\n", l, m, $c, 100 * ($c - m) / m }' "$WORK/price/priced.csv"
  done
done
