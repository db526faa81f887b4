#!/bin/sh
# Runs one libFuzzer harness for SECONDS over its committed seed corpus
# (read-only, tests/fuzz/corpus/NAME) and a working corpus in WORKDIR that
# keeps what it finds between runs; a crash is saved in WORKDIR/crashes.
# usage: run-fuzzer.sh HARNESS SEEDS WORKDIR SECONDS
set -eu
harness=$1 seeds=$2 workdir=$3 seconds=$4
mkdir -p "$workdir/corpus" "$workdir/crashes"
# Leaks are checked at exit; full stacks (slower allocation) so that
# tests/lsan.supp can tell GLib's own blocks from Graft's, and a report
# names the Graft function instead of stopping at g_malloc.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1}:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# meson's test environment names the suppressions; `make fuzz` has none
export LSAN_OPTIONS=${LSAN_OPTIONS:-print_suppressions=0:suppressions=$(cd "$(dirname "$0")/.." && pwd)/lsan.supp}
# A finding exits 1: libFuzzer's own default, 77, is what meson reads as
# a skipped test.
exec "$harness" -max_total_time="$seconds" -timeout=10 -error_exitcode=1 -timeout_exitcode=1 -rss_limit_mb=3072 -max_len=1048576 \
  -print_final_stats=1 -artifact_prefix="$workdir/crashes/" "$workdir/corpus" "$seeds"
