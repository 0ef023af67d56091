#!/usr/bin/env bash
# ETS's own files beyond the eight in ../shared/public (issue 16): other
# torchvision models, float16 and float64, from the upstream benchmark
# (iscas-system/ETS at ceab3e8, benchmark/datasets/), priced by the op model
# trained on ../shared/public alone, next to each file's measured label and,
# where ETS's result tables have the row (T4, float32, batch 64, 256x256),
# ETS's own prediction. bench/ets_upstream.py lists the files and makes the
# table. Files missing from DIR are fetched from GitHub at that commit when
# there is a network; they are never committed.
# Usage: bench/ets_upstream.sh DIR [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:?usage: bench/ets_upstream.sh DIR [OUT]}
OUT=${2:-$(mktemp -d /tmp/tracecast-ets-upstream.XXXXXX)}
[ -d ../shared/public/ets ] || { echo "missing ../shared/public"; exit 1; }
make -s build
python3 bench/ets_upstream.py fetch "$DIR"
rm -rf "$OUT"
./target/release/tracecast -q ops bench --train ../shared/public --eval "$DIR" --out "$OUT" >/dev/null
python3 bench/ets_upstream.py table "$DIR" "$OUT/ets.csv" ../shared/public/ets/repo_results/model_compare/T4CPUALL_batch_size/64_256_1_compare.csv
