/* Float32 row routines of the transformer ops (exp, erf, tanh, GELU,
 * softmax, layer and RMS normalisation), each with an AVX-512, an AVX2+FMA
 * and a portable variant chosen at run time by graft_simd_get_level ()
 * (runtime/simd.h). All three run the same algorithm (the portable one
 * one lane at a time), so the variants agree to rounding and the portable
 * one is the reference the tests hold the others to. Accuracy against the
 * C library: exp, erf and tanh within a few float ulps (erf and tanh
 * absolute 2e-7 near 0). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

void graft_vm_exp (const float *x, float *y, gint64 n);
void graft_vm_erf (const float *x, float *y, gint64 n);
void graft_vm_tanh (const float *x, float *y, gint64 n);
/* 0.5·x·(1 + erf(x/√2)), or with tanh_form 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))). */
void graft_vm_gelu (const float *x, float *y, gint64 n, gboolean tanh_form);

/* Softmax (log_form: LogSoftmax) of each of `rows` contiguous rows of n
 * values into y (y == x works in place). A row whose maximum is not
 * finite (all -inf, or a NaN or +inf in it) takes a double-precision
 * path so it gives what the reference kernel does. */
void graft_vm_softmax_rows (const float *x, float *y, gint64 rows, gint64 n, gboolean log_form);

/* y = (x - mean) / sqrt(var + eps) · scale + bias over one row of n values
 * (scale and bias n values each, bias may be NULL; RMS normalisation when
 * rms, which subtracts no mean and takes no bias). Writes the row's mean
 * and 1/sqrt(var + eps) (of the mean square for rms). Sums run in vector
 * lanes of float then in double across lanes. */
void graft_vm_normalize_row (const float *x, float *y, gint64 n, const float *scale, const float *bias, float eps,
                             gboolean rms, float *mean, float *inv_std);

G_END_DECLS
