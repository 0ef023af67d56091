#!/usr/bin/env bash
# The README's two commands as a new user meets them (issue 18), from the
# repository root:
#   bench/fresh.sh [WORKDIR]        (default: a new directory under /tmp)
#   bench/fresh.sh --ci [WORKDIR]   CI's command instead: `.ci/run` alone
# Clones this repository's HEAD into WORKDIR/tracecast (a local clone: no
# build outputs, no .tools, no bench/.venv), then times `make demo` and,
# after it, `make test` there, each as a whole command (GNU time: wall
# seconds, peak RSS); with --ci, `.ci/run` from the clean clone (the test
# build with its lints, then the tests). ../shared is reached from the
# clone through a link WORKDIR/shared, so the real-trace tests run as in CI.
# What a truly fresh machine adds and this does not measure: downloading
# the crates (~/.cargo/registry is reused) and installing Debian packages
# that are already here (clang, libclang-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CI=no
if [ "${1:-}" = --ci ]; then CI=yes; shift; fi
WORK=${1:-$(mktemp -d /tmp/tracecast-fresh.XXXXXX)}
mkdir -p "$WORK"
[ -e "$WORK/tracecast" ] && { echo "$WORK/tracecast exists: give an empty WORKDIR" >&2; exit 2; }
git clone -q "$ROOT" "$WORK/tracecast"
[ -d "$ROOT/../shared" ] && ln -sfn "$(cd "$ROOT/../shared" && pwd)" "$WORK/shared"
cd "$WORK/tracecast"
echo "fresh clone of $(git rev-parse --short HEAD) in $WORK/tracecast ($(nproc) cores)"
if [ $CI = yes ]; then targets=ci; else targets="demo test"; fi
for target in $targets; do
  if [ "$target" = ci ]; then cmd=(.ci/run); label=".ci/run"; else cmd=(make "$target"); label="make $target"; fi
  /usr/bin/time -f "%e %M" -o "$WORK/$target.time" "${cmd[@]}" > "$WORK/$target.log" 2>&1 \
    || { echo "$label failed: see $WORK/$target.log" >&2; exit 1; }
  read -r wall rss < "$WORK/$target.time"
  printf '%-9s  %6.0f s (%4.1f min)  peak RSS %5.0f MiB\n' "$label" "$wall" "$(echo "$wall / 60" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
done | tee "$WORK/results.txt"
