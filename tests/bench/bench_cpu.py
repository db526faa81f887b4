"""What the benchmarks print about the CPU: the ratios depend on its vector
features, and on which of them the processes may use (`make bench-avx2`
hides AVX-512, AVX-VNNI and AMX with tests/bench/cpuid-avx2-only.so).
Imported by the bench-* scripts (their directory is on sys.path)."""
import os
import re
import subprocess

WANTED = ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_int8", "amx_bf16"]
# numpy's names for what its own CPUID reads found, in this process
NUMPY_NAMES = {"avx2": "AVX2", "fma": "FMA3", "avx512f": "AVX512F", "avx512bw": "AVX512BW",
               "avx512_vnni": "AVX512VNNI"}


def cpu_flags():
    """The CPU's features as the kernel lists them (what the hardware has)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    return [w for w in WANTED if w in flags]


def seen_flags():
    """The features this process's CPUID instruction reports (numpy reads
    them at import), or None when numpy cannot say."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return None
    return [w for w, name in NUMPY_NAMES.items() if features.get(name)]


def hidden():
    return "cpuid-avx2-only" in os.environ.get("LD_PRELOAD", "")


def describe():
    has = " ".join(cpu_flags()) or "none of " + " ".join(WANTED)
    if not hidden():
        return has
    seen = seen_flags()
    return "%s; the processes are shown an AVX2-only CPU (tests/bench/cpuid-avx2-only.so): they see %s" % (
        has, " ".join(seen) if seen is not None else "(unknown)")


def graft_kernels(cli, source):
    """The kernel level graft-cli runs with here ("avx512", "avx2" or
    "portable", with ", AMX-INT8" when allowed)."""
    sample = os.path.join(source, "data", "samples", "tiny-cnn.onnx")
    out = subprocess.run([cli, "run", sample, "--random", "--dim", "batch=1", "--repeat", "2"],
                         capture_output=True, text=True).stdout
    match = re.search(r"median time per run: .*, (\w+) kernels(, AMX-INT8)?\)", out)
    return (match.group(1) + (match.group(2) or "")) if match else "unknown"
