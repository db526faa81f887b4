#!/bin/sh
# `make bench-avx2`'s shim does what it says: graft-cli under it runs its
# AVX2 kernels, not its AVX-512 ones, and gives the same output as
# GRAFT_SIMD=avx2. Skipped (77) where there is no AVX-512 to hide or the
# CPU/hypervisor cannot fault CPUID.
# Usage: check-cpuid-avx2-only.sh GRAFT_CLI SHIM SAMPLE_MODEL
set -u
cli=$1 shim=$2 sample=$3
grep -q -w avx512f /proc/cpuinfo || { echo "no AVX-512 on this CPU: nothing to hide"; exit 77; }
grep -q -w cpuid_fault /proc/cpuinfo || { echo "no CPUID faulting here: the shim cannot work"; exit 77; }
[ -z "${GRAFT_SIMD:-}" ] || { echo "GRAFT_SIMD is set: the levels would not be the CPU's"; exit 77; }
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
run () {
  "$@" run "$sample" --random --dim batch=2 --repeat 2 -o "$out/$label" 2>&1
}
label=plain; plain=$(run "$cli") || { echo "$plain"; exit 1; }
label=shown; shown=$(CPUID_AVX2_ONLY_REPORT=1 LD_PRELOAD=$shim run "$cli") || { echo "$shown"; exit 1; }
# a container's seccomp filter may refuse CPUID faulting the CPU offers
if echo "$shown" | grep 'no CPUID faulting here'; then exit 77; fi
label=capped; capped=$(GRAFT_SIMD=avx2 run "$cli") || { echo "$capped"; exit 1; }
echo "$plain" | grep median | sed 's/^/without the shim: /'
echo "$shown" | grep median | sed 's/^/with the shim:    /'
echo "$plain" | grep -q 'avx512 kernels' || { echo "FAIL: not the AVX-512 kernels without the shim"; exit 1; }
echo "$shown" | grep -q ', avx2 kernels)' || { echo "FAIL: the shim did not hide AVX-512"; exit 1; }
for f in "$out/capped"/*; do
  cmp "$f" "$out/shown/$(basename "$f")" || { echo "FAIL: $(basename "$f") differs from GRAFT_SIMD=avx2's"; exit 1; }
done
echo "ok: AVX-512 hidden, outputs identical to GRAFT_SIMD=avx2's"
