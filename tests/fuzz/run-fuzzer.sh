#!/bin/sh
# Runs one libFuzzer harness for SECONDS over its committed seed corpus
# (read-only, tests/fuzz/corpus/NAME) and a working corpus in WORKDIR that
# keeps what it finds between runs; a crash is saved in WORKDIR/crashes.
# usage: run-fuzzer.sh HARNESS SEEDS WORKDIR SECONDS
set -eu
harness=$1 seeds=$2 workdir=$3 seconds=$4
mkdir -p "$workdir/corpus" "$workdir/crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
exec "$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -max_len=1048576 \
  -print_final_stats=1 -artifact_prefix="$workdir/crashes/" "$workdir/corpus" "$seeds"
