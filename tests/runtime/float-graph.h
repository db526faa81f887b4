/* Building small float32 graphs for the runtime's kernel tests: a graph
 * input and a constant initializer, shared by the GEMM and convolution
 * tests. */
#pragma once

#include "ir/graph.h"
#include "ir/tensor.h"

static inline GraftValue *
float_graph_add_input (GraftGraph *g, const char *name, int rank, const gint64 *dims)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  v->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&v->shape, rank, dims);
  graft_graph_add_input (g, v);
  return v;
}

/* values holds the product of dims floats (one for rank 0) */
static inline void
float_graph_add_initializer (GraftGraph *g, const char *name, int rank, const gint64 *dims, const float *values)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  GraftTensor *t = graft_tensor_new (name, GRAFT_DTYPE_FLOAT32, rank, dims);
  gint64 n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  g_autoptr(GBytes) bytes = g_bytes_new (values, n * sizeof (float));
  v->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&v->shape, rank, dims);
  g_assert_true (graft_tensor_set_data (t, bytes, NULL));
  graft_graph_add_initializer (g, v, t);
}
