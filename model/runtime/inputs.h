/* Helpers shared by graft-cli run and the GUI's Run pane: random inputs
 * of a declared type, and output statistics. */
#pragma once

#include <glib.h>
#include "ir/graph.h"
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

/* Random data of input's declared dtype and shape: floats uniform in
 * [-1, 1), integers in [0, 10), random bools and short strings. Symbolic
 * dims are looked up in dims (char* symbol → gint64*, may be NULL); a
 * missing symbol or an unknown dim is an error naming the input and the
 * dim (and saying how to give it). */
GraftRtTensor *graft_runtime_random_input (GraftValue *input, GHashTable *dims, GRand *rng, GError **error);

/* The data part of graft_runtime_random_input(), for callers that work
 * out the shape themselves (the Run pane words its own errors). */
GraftRtTensor *graft_runtime_random_tensor (GraftDType dtype, int rank, const gint64 *dims, GRand *rng, GError **error);

/* Binds .npy/.pb files to inputs (GraftValue*) into bound (input name,
 * borrowed → GraftRtTensor*, owned): "NAME=FILE" names the input, a bare
 * FILE goes to the input its stored name says, else to the next input not
 * bound yet. An unknown name, an input given twice or a file too many is
 * an error naming it. */
gboolean graft_runtime_bind_input_files (char **files, GPtrArray *inputs, GHashTable *bound, GError **error);

/* The shapes of a run's inputs (name → GraftRtTensor*, borrowed) as fixed
 * shapes (name → GraftShape*, both owned), non-tensors left out: what a
 * TorchScript model is lowered with to compute on those inputs. */
GHashTable *graft_runtime_input_shapes (GHashTable *inputs);

typedef struct {
  double min, max, mean;
  gint64 count;        /* values summarised (NaN excluded) */
  gint64 nan_count;
} GraftRtStats;

/* FALSE for strings, sequences and empty tensors. */
gboolean graft_rt_tensor_compute_stats (const GraftRtTensor *tensor, GraftRtStats *stats);

G_END_DECLS
