#!/usr/bin/env bash
# How much of a change to the op model is more than chance (issue 16).
# LightGBM samples each tree's inputs, so one leave-one-GPU-out sweep moves
# a held-out row by several points from one seed to the next. This runs the
# sweep of bench/public.sh --sweep once per seed and prints, per GPU and
# mode, the end-to-end MAPE of every seed with their mean and range; then
# the mean over NeuSight's plain rows, the Hopper rows, the per-op MAPE of
# each op kind over all GPUs, and the ETS files' mean error.
#
#   bench/sweep_seeds.sh [--bin BINARY] [--seeds "1 2 3 4 5"] [--args "..."] OUT
#
# Compare two builds by running it once with each (--bin) on the same seeds,
# or two settings of one build (--args: more `ops sweep` options, e.g.
# "--num-leaves 31").
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=""
SEEDS="1 2 3 4 5"
ARGS=""
while [ $# -gt 1 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --args) ARGS=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { sed -n 2,16p "$0"; exit 2; }
OUT=$1
[ -d ../shared/public/neusight ] || { echo "missing ../shared/public" >&2; exit 1; }
if [ -z "$BIN" ]; then make -s build; BIN=$PWD/target/release/tracecast; fi
mkdir -p "$OUT"
for seed in $SEEDS; do
  echo "== seed $seed"
  "$BIN" -q ops sweep --public ../shared/public --extra bench/measured/h100-sxm5 \
    --extra bench/measured/h200 --seed "$seed" $ARGS --out "$OUT/seed-$seed" > /dev/null
done
python3 - "$OUT" $SEEDS <<'PY'
import re, sys
out, seeds = sys.argv[1], sys.argv[2:]

def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]

def value(cell):
    m = re.match(r"([0-9.]+)", cell)
    return float(m.group(1)) if m else None

def section(text, title):
    block = text.split(title, 1)[1].split("\n### ", 1)[0]
    rows = [cells(l) for l in block.splitlines() if l.startswith("|")]
    return rows[0], rows[2:]

e2e, perop, ets = {}, {}, {}
for seed in seeds:
    text = open(f"{out}/seed-{seed}/sweep.md").read()
    # Leave one GPU out only: the leave-one-model-out tables come after it.
    logo = text.split("Leave one model out", 1)[0]
    head, rows = section(logo, "### End-to-end error (MAPE %, labels)")
    gpu, mode, ours = head.index("GPU"), head.index("mode"), head.index("tracecast")
    for r in rows:
        e2e.setdefault((r[gpu], r[mode]), {})[seed] = value(r[ours])
    head, rows = section(logo, "### Per-operator error (MAPE %, rows)")
    for r in rows:
        perop.setdefault(r[0], {})[seed] = value(r[head.index("all")])
    m = re.search(r"ETS files: mean error ([0-9.]+)", text)
    ets[seed] = float(m.group(1)) if m else None

def line(name, by_seed):
    vals = [by_seed.get(s) for s in seeds]
    got = [v for v in vals if v is not None]
    shown = " | ".join("-" if v is None else f"{v:.1f}" for v in vals)
    summary = f"{sum(got) / len(got):.1f} | {min(got):.1f}-{max(got):.1f}" if got else "- | -"
    print(f"| {name} | {shown} | {summary} |")

print(f"| row | {' | '.join('seed ' + s for s in seeds)} | mean | range |")
print("|---|" + "---:|" * (len(seeds) + 2))
hopper = ("NVIDIA_H100", "NVIDIA_H200")
plain = {}
for (gpu, mode), by_seed in sorted(e2e.items()):
    line(f"{gpu} {mode}", by_seed)
for name, keep in [("NeuSight GPUs, plain rows: mean", lambda g, m: not g.startswith(hopper) and "option" not in m),
                   ("Hopper rows: mean", lambda g, m: g.startswith(hopper))]:
    sel = [(k, v) for k, v in e2e.items() if keep(*k)]
    line(name, {s: sum(v[s] for _, v in sel) / len(sel) for s in seeds if all(s in v for _, v in sel)})
for op, by_seed in sorted(perop.items()):
    line(f"per-op {op}, all GPUs", by_seed)
line("ETS files: mean", {s: v for s, v in ets.items() if v is not None})
PY
