/* Compiling a region of a file for a CPU feature the build does not
 * assume, with GCC and with clang alike. The functions between
 * GRAFT_TARGET_AVX512_BEGIN and GRAFT_TARGET_AVX512_END are built for
 * AVX-512F and run only where the kernel table (kernel-table.h) of the
 * SIMD level (runtime/simd.h) chooses them.
 * GCC takes `#pragma GCC target`; clang ignores it and takes an attribute
 * applied to every function of the region instead. */
#pragma once

#include <glib.h>

#include "runtime/kernels/kernel-table.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define GRAFT_HAVE_X86_SIMD 1
#include <immintrin.h>

#if defined(__clang__)
#define GRAFT_TARGET_AVX512_BEGIN \
  _Pragma ("clang attribute push (__attribute__ ((target (\"avx512f\"))), apply_to = function)")
#define GRAFT_TARGET_AVX512_END _Pragma ("clang attribute pop")
#else
#define GRAFT_TARGET_AVX512_BEGIN _Pragma ("GCC push_options") _Pragma ("GCC target (\"avx512f\")")
#define GRAFT_TARGET_AVX512_END _Pragma ("GCC pop_options")
#endif

/* The same for AVX-512F with AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16) and
 * AVX512BW (every CPU with AVX512_BF16 has it), which the table chooses
 * only where the CPU has AVX512_BF16. */
#if defined(__clang__)
#define GRAFT_TARGET_AVX512_BF16_BEGIN \
  _Pragma ("clang attribute push (__attribute__ ((target (\"avx512f,avx512bw,avx512bf16\"))), apply_to = function)")
#define GRAFT_TARGET_AVX512_BF16_END _Pragma ("clang attribute pop")
#else
#define GRAFT_TARGET_AVX512_BF16_BEGIN _Pragma ("GCC push_options") _Pragma ("GCC target (\"avx512f,avx512bw,avx512bf16\")")
#define GRAFT_TARGET_AVX512_BF16_END _Pragma ("GCC pop_options")
#endif

#define GRAFT_TARGET_AVX2_FMA __attribute__ ((target ("avx2,fma")))

/* The kernels' innermost loops are built at -O3 whatever the build type
 * (unrolled, fully vectorised); clang has no per-function optimize
 * attribute, and its -O2 already does both. */
#if defined(__clang__)
#define GRAFT_HOT_LOOP
#else
#define GRAFT_HOT_LOOP __attribute__ ((optimize ("O3")))
#endif

#endif

#ifndef GRAFT_HOT_LOOP
/* Elsewhere the build's own optimisation level. */
#define GRAFT_HOT_LOOP
#endif
