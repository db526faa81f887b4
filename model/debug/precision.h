/* Which nodes to keep in float32 so that a float16 model stays within a
 * tolerance of the float32 one, as Polygraphy's `debug precision` asks:
 * on given inputs, the float16 conversion (edit/float16.c) with a set of
 * nodes kept by name is run in Graft's runtime and its outputs compared
 * with the float32 model's (|f32 − f16| ≤ atol + rtol·|f32|, NaN and Inf
 * failing). Bisection over the topological order finds the shortest
 * prefix of nodes to keep, then chunks of it and single nodes are let go
 * while the outputs stay within the tolerance (halving the chunk each
 * pass), leaving a set from which no single node can go. */
#pragma once

#include "runtime/runtime.h"

G_BEGIN_DECLS

typedef struct {
  double rtol;
  double atol;
  gboolean keep_io_types;    /* inputs and outputs stay float32 */
} GraftPrecisionOptions;

/* The names of the nodes to keep (char*, owned; empty when the whole
 * model may run in float16), with *n_runs (may be NULL) the conversions
 * tried. inputs: model's inputs by name (float32 tensors, borrowed).
 * Fails when even the model with every node kept is not within the
 * tolerance (the float16 weights or interface alone lose too much), or
 * when the conversion or the runtime fails. */
GPtrArray *graft_precision_find_float32_nodes (GraftModel *model, GHashTable *inputs,
                                               const GraftPrecisionOptions *options, guint *n_runs,
                                               GCancellable *cancellable, GError **error);

G_END_DECLS
