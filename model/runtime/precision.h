/* The arithmetic of a run's matrix products against constant weights:
 * float32, the default and the reference; or bfloat16 operands with
 * float32 sums (AVX512_BF16 CPUs), weights converted once. Everything
 * else (activations' own products, convolutions, norms, softmax) stays
 * float32 in either. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_PRECISION_F32,
  GRAFT_PRECISION_BF16,
} GraftPrecision;

/* "f32"/"fp32"/"float32", "bf16"/"bfloat16". */
gboolean graft_precision_from_string (const char *text, GraftPrecision *precision);
/* Whether this CPU, at the current SIMD level, computes in precision; else
 * FALSE with an error saying what it lacks. */
gboolean graft_precision_available (GraftPrecision precision, GError **error);

G_END_DECLS
