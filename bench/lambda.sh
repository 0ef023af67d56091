#!/usr/bin/env bash
# Cross-GPU sanity check (issue 16): BERT-large training throughput priced
# by `tracecast ops price` on the GPUs Lambda measured it on, at Lambda's
# batch sizes, against Lambda's figures (bench/lambda.py says what each side
# runs). No peer program: Lambda's are published measurements.
# Usage: bench/lambda.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LAMBDA=../shared/public/lambda-deeplearning-benchmark
CONFIG=../shared/public/neusight/DLmodel_configs/bert_large.json
[ -d "$LAMBDA" ] && [ -f "$CONFIG" ] || { echo "missing $LAMBDA or $CONFIG"; exit 1; }
make -s build
for precision in fp32 fp16; do
  python3 bench/lambda.py "$PWD/target/release/tracecast" "$LAMBDA" "$CONFIG" "$precision"
  echo
done
