# tracecast: `make demo` runs the whole pipeline on bundled fixtures;
# `make test` runs every test (the real-trace tests read ../shared/traces).

CARGO     ?= cargo
TRACECAST := target/release/tracecast
DEMO      := demo-out
SUDO      ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build test fuzz lint lint-tools demo deps pydeps bench public-sweep default-model op-model clean-demo

PY_VENV := bench/.venv

all: build

# LightGBM (lightgbm3) is built from C++ source: it needs clang and libclang
# (bindgen) and CMake 3.28 or newer. Debian 12 ships CMake 3.25, so when the
# system cmake is missing or older, CMake 3.31 from PyPI is installed into
# .tools/cmake-venv and handed to the build through $$CMAKE.
CMAKE_VENV := $(CURDIR)/.tools/cmake-venv
SYSTEM_CMAKE_OK := $(shell cmake --version 2>/dev/null | awk 'NR==1 { split($$3, v, "."); print (v[1] > 3 || (v[1] == 3 && v[2] >= 28)) ? "yes" : "no" }')
ifeq ($(SYSTEM_CMAKE_OK),yes)
export CMAKE := cmake
else
export CMAKE := $(CMAKE_VENV)/bin/cmake
endif

# The build needs Rust (cargo), a C/C++ compiler (zstd, blake3, the gzip
# backend and LightGBM compile C/C++), clang + libclang and CMake >= 3.28.
# Anything missing is installed: Debian packages, or CMake from PyPI.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs"; exit 1; }
	@if ! command -v c++ >/dev/null || ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1; then \
	  echo "installing a C/C++ compiler, clang and libclang (Debian: build-essential clang libclang-dev; LightGBM's bindings need them)"; \
	  $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q build-essential clang libclang-dev; \
	fi
	@if [ "$(SYSTEM_CMAKE_OK)" != yes ] && ! $(CMAKE) --version >/dev/null 2>&1; then \
	  echo "installing CMake 3.31 from PyPI into $(CMAKE_VENV) (LightGBM needs CMake >= 3.28; system cmake: $$(cmake --version 2>/dev/null | head -1 | grep . || echo none))"; \
	  if ! python3 -m venv $(CMAKE_VENV) 2>/dev/null; then \
	    echo "installing Python's venv module (Debian: python3-venv)"; \
	    $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q python3 python3-venv && python3 -m venv $(CMAKE_VENV); \
	  fi; \
	  $(CMAKE_VENV)/bin/pip install -q "cmake>=3.28,<4"; \
	fi

# Python for the tests: the features cross-check (bench/features_check.py,
# pandas + pyarrow), and the tests of the collector and of
# bench/gpu/measure_public.py's --resume (pytest; no torch or GPU needed).
# Installed into bench/.venv when missing.
pydeps:
	@if ! $(PY_VENV)/bin/python -c "import pandas, pyarrow, pytest" 2>/dev/null; then \
	  echo "installing pandas, pyarrow and pytest into $(PY_VENV) (for the Python-side tests)"; \
	  if ! python3 -m venv $(PY_VENV) 2>/dev/null; then \
	    echo "installing Python's venv module (Debian: python3-venv)"; \
	    $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q python3 python3-venv && python3 -m venv $(PY_VENV); \
	  fi; \
	  $(PY_VENV)/bin/pip install -q pandas pyarrow pytest; \
	fi

build: deps
	@echo "== building tracecast (release; the first build compiles DataFusion and takes a while)"
	$(CARGO) build --release --locked -p tracecast

# `make test LINT=1` (what CI runs) also lints while the tests compile:
# rustfmt's check first, then clippy runs inside the test build on the
# workspace's own crates, warnings as errors. `make lint` runs clippy in
# check mode instead, which checks every dependency again (minutes from a
# clean tree), so CI does not use it.
ifeq ($(LINT),1)
TEST_LINT_ENV := RUSTC_WORKSPACE_WRAPPER=$(CURDIR)/.ci/clippy-deny-warnings
TEST_PREREQS := lint-tools
TEST_WHAT := , clippy linting the workspace's crates as they compile, warnings as errors
endif

test: deps pydeps $(TEST_PREREQS)
	@if [ "$(LINT)" = 1 ]; then echo "== rustfmt --check"; $(CARGO) fmt --all -- --check; fi
	@echo "== running the test suite (release profile, shared with the build$(TEST_WHAT))"
	$(TEST_LINT_ENV) $(CARGO) test --release --locked --workspace --no-fail-fast
	@echo "== the collector's Python tests (no GPU needed)"
	$(PY_VENV)/bin/python -m pytest -q python/tests bench/test_collect_corpus.py bench/gpu/test_measure_public.py

# The ingest fuzz test (ingest/tests/fuzz.rs) at many more cases than the
# suite's bounded run: real traces truncated, corrupted and shuffled.
FUZZ_CASES ?= 20000
fuzz: deps
	@echo "== fuzzing ingest with $(FUZZ_CASES) broken traces per property"
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release --locked -p tracecast-ingest --test fuzz

demo: build clean-demo
	@echo
	@echo "== 1. ingest: the bundled fixtures (fixtures/traces: synthetic Kineto traces of three eras, a 2-rank tarball, a hand-written Kineto + Execution Trace pair)"
	$(TRACECAST) ingest fixtures/traces --lake $(DEMO)/lake
	@echo
	@echo "== 2. ingest again: nothing is added"
	$(TRACECAST) ingest fixtures/traces --lake $(DEMO)/lake
	@echo
	@echo "== 3. inspect one trace, without a lake"
	$(TRACECAST) inspect fixtures/traces/synthetic-2024-single.pt.trace.json.gz --top 3
	@echo
	@echo "== 4. SQL over the lake: kernel time per trace"
	$(TRACECAST) sql --lake $(DEMO)/lake \
	  "SELECT t.era, t.gpu_name, count(*) AS kernels, round(sum(k.dur_ns) / 1e6, 3) AS kernel_ms \
	   FROM kernels k JOIN traces t USING (trace_id) GROUP BY 1, 2 ORDER BY 1, 2"
	@echo
	@echo "== 5. features: each step's kernel sequence cut into windows of 16 kernels sliding by 4 (SQL in features/sql/, run by DataFusion)"
	$(TRACECAST) features --lake $(DEMO)/lake --out $(DEMO)/features --window 16 --stride 4
	@echo
	@echo "== 6. the feature table: its shape, and a few windows (target = wall time of the 4 central kernels)"
	$(TRACECAST) sql --table windows=$(DEMO)/features/windows \
	  "SELECT count(*) AS windows, count(DISTINCT trace_id) AS traces, \
	     (SELECT count(*) FROM information_schema.columns WHERE table_name = 'windows') AS columns FROM windows"
	$(TRACECAST) sql --table windows=$(DEMO)/features/windows \
	  "SELECT trace_id, step_id, window_index, target_ns, window_items, count_gemm, p06_family, p06_flops, p06_grid \
	   FROM windows ORDER BY trace_id, step_id, window_index LIMIT 5"
	@echo
	@echo "== 7. train: LightGBM on the fixture features, evaluated by 3-fold cross-validation over traces against three baselines"
	@echo "   (6 synthetic traces: this checks the pipeline; accuracy figures come from real traces, see bench/README.md)"
	$(TRACECAST) train --features $(DEMO)/features --folds 3 --out $(DEMO)/model
	@echo
	@echo "== 8. the report's summary ($(DEMO)/model/report.md)"
	@sed -n '/^## Step time/,/^Predictors/p' $(DEMO)/model/report.md | grep -v '^Predictors'
	@echo
	@echo "== 9. predict: one fixture trace (recorded at batch 16 on an A100) priced on an H100 at batch 32, on 1 to 16 GPUs (100 MB of gradients)"
	@echo "   (each window starts from its recorded time; each kernel moves from A100 to H100 and batch 16 to 32 by the built-in op model:"
	@echo "    roofline physics with a utilisation learned from NeuSight's public measurements and our own H100's)"
	$(TRACECAST) predict --model $(DEMO)/model --trace fixtures/traces/synthetic-2024-single.pt.trace.json.gz \
	  --trace-batch-size 16 --trace-model synthetic-mlp --gpu H100 --batch-size 32 --gpus 1,2,4,8,16 \
	  --gradient-bytes 1e8 --gpu-type H100 --out $(DEMO)/predict
	@echo
	@echo "== 9b. the same what-if with every window priced by the window model instead of its recorded time (--base model: ETS's approach),"
	@echo "   here the built-in one that ships with tracecast (trained on real public traces): compare its iteration time with 9's"
	$(TRACECAST) predict --base model --trace fixtures/traces/synthetic-2024-single.pt.trace.json.gz \
	  --trace-batch-size 16 --gpu H100 --batch-size 32 --out $(DEMO)/predict-builtin
	@echo
	@echo "== 9c. a transformer priced from its Hugging Face config alone (no trace): GPT-2 Medium's size, training at 8 x 1024 tokens per GPU,"
	@echo "   on a T4, an A100 and an H100, on 1 and 16 GPUs (forward, backward, Adam step, the gradients' all-reduce; graph in opmodel/src/architectures)"
	$(TRACECAST) ops price --config fixtures/models/gpt2-medium.json --gpu T4 --gpu a100-sxm4-40gb --gpu H100 \
	  --batch-size 8 --seqlen 1024 --gpus 1,16
	@echo
	@echo "== 10. plan with the predicted throughput table: 6 jobs of that model on two 8-GPU H100 nodes"
	$(TRACECAST) plan --jobs fixtures/plan/predicted-jobs.csv --cluster fixtures/plan/h100-node.toml \
	  --throughput $(DEMO)/predict/throughput.csv --objective jct --out $(DEMO)/plan-predicted
	@echo
	@echo "== 11. plan: the bundled job list (fixtures/plan/jobs.csv, 120 jobs: elastic, rigid, deadline, duration-only) on a heterogeneous A100 + T4 cluster, with a hand-made throughput table"
	$(TRACECAST) plan --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
	  --throughput fixtures/plan/throughput.csv --objective jct --out $(DEMO)/plan --compare
	@echo
	@echo "== 12. verify the schedule, then replay it in the simulator"
	$(TRACECAST) verify --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
	  --throughput fixtures/plan/throughput.csv --schedule $(DEMO)/plan/schedule.json
	$(TRACECAST) simulate --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
	  --throughput fixtures/plan/throughput.csv --schedule $(DEMO)/plan/schedule.json
	@echo
	@echo "== done. The lake is in $(DEMO)/lake (one folder of Parquet files per table, see schemas/TABLES.md);"
	@echo "   the feature tables are in $(DEMO)/features (windows/, steps/, features.json);"
	@echo "   the model is in $(DEMO)/model (model.txt, model.json, report.md, metrics.json, scatter.svg, importance.svg, importance.csv);"
	@echo "   the predictions are in $(DEMO)/predict (steps/traces .parquet + .csv, throughput.csv, elasticflow/);"
	@echo "   the schedules, their metrics and pictures are in $(DEMO)/plan-predicted and $(DEMO)/plan"
	@echo "   (schedule.json, schedule.csv, jobs.csv, metrics.json, comparison.md, gantt.svg, utilization.svg)."

clean-demo:
	@rm -rf $(DEMO)

# The built-in window model (train/model/default, compiled into the binary:
# `predict` uses it without --model), trained on the real traces in
# ../shared/traces (MIT/BSD-licensed public projects) with their hand-made
# labels. Paths are relative so the model card names no machine's folders.
# The built-in op model: NeuSight's measurements (../shared/public) and our
# own H100 SXM5 ones (bench/measured/h100-sxm5). The H200 in bench/measured
# stays out of it: it is the unseen-GPU check (bench/README.md).
op-model: build
	@[ -d ../shared/public/neusight ] || { echo "op-model needs ../shared/public"; exit 1; }
	@echo "== training the built-in op model into opmodel/model/opmodel.json"
	$(TRACECAST) -q ops train --public ../shared/public --extra bench/measured/h100-sxm5 --out opmodel/model/opmodel.json
	@echo "wrote opmodel/model/opmodel.json (rebuild tracecast to ship it: make build)"

MODEL_WORK := target/default-model
default-model: build
	@[ -d ../shared/traces ] || { echo "default-model needs ../shared/traces"; exit 1; }
	@echo "== training the built-in window model on ../shared/traces into train/model/default"
	rm -rf $(MODEL_WORK) && mkdir -p $(MODEL_WORK)
	cp fixtures/labels/shared-traces.csv $(MODEL_WORK)/labels.csv
	$(TRACECAST) -q ingest ../shared/traces/AMD-AGI__TraceLens ../shared/traces/facebookresearch__HolisticTraceAnalysis \
	  ../shared/traces/facebookresearch__param ../shared/traces/pytorch__kineto --lake $(MODEL_WORK)/lake
	cd $(MODEL_WORK) && $(CURDIR)/$(TRACECAST) -q features --lake lake --out features \
	  && $(CURDIR)/$(TRACECAST) train --features features --labels labels.csv --out model
	mkdir -p train/model/default
	cp $(MODEL_WORK)/model/model.txt $(MODEL_WORK)/model/model.json train/model/default/
	@echo "wrote train/model/default (rebuild tracecast to compile it in)"

# Leave-one-GPU-out of the op model on ../shared/public; rewrites the tables in bench/README.md.
public-sweep: build
	bench/public.sh --sweep

bench: build
	bench/ingest.sh
	bench/features.sh
	bench/train.sh
	bench/plan/run.sh

lint-tools:
	@$(CARGO) clippy --version >/dev/null 2>&1 || { echo "== installing clippy (rustup component add clippy)"; rustup component add clippy; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || { echo "== installing rustfmt (rustup component add rustfmt)"; rustup component add rustfmt; }

# rustfmt's check, then clippy over every crate and target, warnings as
# errors (the lints are in Cargo.toml's [workspace.lints]). Clippy runs in
# check mode: fast while developing, but from a clean tree it checks every
# dependency again; CI lints inside its test build instead (LINT=1 above).
lint: deps lint-tools
	@echo "== rustfmt --check"
	$(CARGO) fmt --all -- --check
	@echo "== clippy, warnings as errors"
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings
