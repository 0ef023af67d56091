# tracecast: `make demo` runs the whole pipeline on bundled fixtures;
# `make test` runs every test (the real-trace tests read ../shared/traces).

CARGO     ?= cargo
TRACECAST := target/release/tracecast
DEMO      := demo-out
SUDO      ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build test demo deps bench clean-demo

all: build

# The build needs Rust (cargo) and a C compiler (zstd, blake3 and the
# gzip backend compile C). Anything missing is installed from Debian.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs"; exit 1; }
	@if ! command -v cc >/dev/null; then \
	  echo "installing a C compiler (Debian: build-essential)"; \
	  $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q build-essential; \
	fi

build: deps
	@echo "== building tracecast (release; the first build compiles DataFusion and takes a while)"
	$(CARGO) build --release --locked -p tracecast

test: deps
	@echo "== running the test suite (release profile, shared with the build)"
	$(CARGO) test --release --locked --workspace --no-fail-fast

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
	@echo "== done. The lake is in $(DEMO)/lake (one folder of Parquet files per table, see schemas/TABLES.md)."

clean-demo:
	@rm -rf $(DEMO)

bench: build
	bench/ingest.sh
