#!/usr/bin/env bash
# The op model on published predictors' data (issue 16).
#
#   bench/public.sh --train DIR --eval DIR --out OUT
#       Train only on DIR (laid out like ../shared/public: neusight/ and/or
#       ets/), predict everything in --eval from its shapes, graphs and spec
#       sheets (its latencies are never read for predicting), write
#       OUT/neusight_e2e.csv, OUT/neusight_perop.csv, OUT/ets.csv and
#       OUT/report.md, and print error tables wherever --eval still holds
#       measured latencies. Wall time of the whole run is printed at the end.
#
#   bench/public.sh --sweep [OUT]
#       Leave-one-GPU-out on ../shared/public plus our own measurements in
#       bench/measured (an H100 SXM5, an H200): for every GPU, fit without
#       its measurements and predict it from its spec sheet. Writes OUT/sweep.md
#       (default bench/public-sweep) and the tables into bench/README.md
#       between the "public sweep" markers, and every held-out label beside
#       NeuSight's own prediction into bench/public-per-configuration.md,
#       where each held-out GPU's time goes by kind of operator into
#       bench/public-by-kind.md, and every held-out label's prediction
#       against its measurement into bench/public-e2e.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
BIN=$PWD/target/release/tracecast
started=$(date +%s.%N)
if [ "${1:-}" = --sweep ]; then
  OUT=${2:-bench/public-sweep}
  [ -d ../shared/public/neusight ] || { echo "missing ../shared/public"; exit 1; }
  # Our own Hopper measurements train every fold, as in the shipped op
  # model, and each of their GPUs is held out in turn as well.
  "$BIN" ops sweep --public ../shared/public --extra bench/measured/h100-sxm5 --extra bench/measured/h200 --out "$OUT"
  python3 - "$OUT/sweep.md" bench/README.md <<'PY'
import sys, re
table = open(sys.argv[1]).read().strip()
readme = open(sys.argv[2]).read()
begin, end = "<!-- public sweep: begin -->", "<!-- public sweep: end -->"
block = f"{begin}\n{table}\n{end}"
if begin in readme:
    readme = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, readme, flags=re.S)
else:
    readme += "\n" + block + "\n"
open(sys.argv[2], "w").write(readme)
print(f"tables written into {sys.argv[2]}")
PY
  # Every label of a held-out GPU, beside NeuSight's own prediction of it.
  cp "$OUT/per_configuration.md" bench/public-per-configuration.md
  echo "per-configuration table written into bench/public-per-configuration.md"
  # Where each held-out GPU's time goes, by kind of operator and pass.
  cp "$OUT/by_kind.md" bench/public-by-kind.md
  echo "by-kind table written into bench/public-by-kind.md"
  # Every held-out label's prediction against its measurement, by GPU.
  cp "$OUT/neusight_e2e.svg" bench/public-e2e.svg
  echo "held-out labels charted in bench/public-e2e.svg"
else
  [ $# -ge 6 ] || { sed -n 2,19p "$0"; exit 2; }
  "$BIN" ops bench "$@"
fi
ended=$(date +%s.%N)
awk -v a="$started" -v b="$ended" 'BEGIN { printf "whole run (build check included): %.1f s\n", b - a }'
