/* Float32 row routines of the transformer ops (exp, erf, tanh, GELU,
 * softmax, layer and RMS normalisation), each with an AVX-512, an AVX2+FMA
 * and a portable variant chosen at run time by the kernel table of the
 * SIMD level (kernel-table.h). All three run the same algorithm (the portable one
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
/* 1 / (1 + e^-x) */
void graft_vm_sigmoid (const float *x, float *y, gint64 n);
/* x·clamp (x/6 + 1/2, 0, 1), NaN kept: onnx::HardSwish (y == x works in place) */
void graft_vm_hard_swish (const float *x, float *y, gint64 n);
/* clamp (x·alpha + beta, 0, 1), NaN kept: onnx::HardSigmoid (y == x works in place) */
void graft_vm_hard_sigmoid (const float *x, float *y, gint64 n, float alpha, float beta);

/* Softmax (log_form: LogSoftmax) of each of `rows` contiguous rows of n
 * values into y (y == x works in place). A row whose maximum is not
 * finite (all -inf, or a NaN or +inf in it) takes a double-precision
 * path so it gives what the reference kernel does. */
void graft_vm_softmax_rows (const float *x, float *y, gint64 rows, gint64 n, gboolean log_form);

/* The numerators of each row's softmax, e^(x - max), into y and 1/their
 * sum into inv_sums[rows]: the caller scales what it computes from them
 * (attention its product with V, fewer values than a row of scores). A
 * row the double-precision path takes comes out whole, its inv_sums 1. */
void graft_vm_softmax_rows_unscaled (const float *x, float *y, gint64 rows, gint64 n, float *inv_sums);

/* Softmax (log_form: LogSoftmax) along the middle axis of x [outer, n,
 * inner] into y, which must not overlap x: vectorised across the inner
 * values, which lie side by side (YOLO's DFL: a softmax over 16 bins of
 * 4 × 8400 boxes). Columns whose maximum is not finite take the double-
 * precision path, as in graft_vm_softmax_rows. */
void graft_vm_softmax_inner (const float *x, float *y, gint64 outer, gint64 n, gint64 inner, gboolean log_form);

/* The mean of each of `rows` contiguous rows of n values into y[rows]
 * (GlobalAveragePool): sums as graft_vm_moments'. */
void graft_vm_means (const float *x, float *y, gint64 rows, gint64 n);

/* y = (x - mean) / sqrt(var + eps) · scale + bias over one row of n values
 * (scale and bias n values each, bias may be NULL; RMS normalisation when
 * rms, which subtracts no mean and takes no bias). Writes the row's mean
 * and 1/sqrt(var + eps) (of the mean square for rms). Sums run in vector
 * lanes of float then in double across lanes. */
void graft_vm_normalize_row (const float *x, float *y, gint64 n, const float *scale, const float *bias, float eps,
                             gboolean rms, float *mean, float *inv_std);

/* The mean of n values and 1/sqrt(var + eps), var their mean squared
 * deviation from that mean (two passes, so an offset mean loses no
 * digits): the statistics of InstanceNormalization and GroupNormalization,
 * whose groups are whole feature maps. Sums run in vector lanes of float
 * over blocks of 64 values per lane, then in double. */
void graft_vm_moments (const float *x, gint64 n, float eps, float *mean, float *inv_std);

/* y = (x - center)·a + b over n values (y == x works in place); with
 * silu, then y·sigmoid(y) (the SiLU that follows a diffusion model's
 * GroupNorm). Normalising with center = the mean keeps the digits that
 * x·a + (b - mean·a) would cancel away when the mean is large against
 * the spread. */
void graft_vm_affine (const float *x, float *y, gint64 n, float center, float a, float b, gboolean silu);

G_END_DECLS
