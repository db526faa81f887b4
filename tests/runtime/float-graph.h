/* Building small float32 graphs for the runtime's kernel tests: a graph
 * input and a constant initializer, shared by the GEMM and convolution
 * tests. */
#pragma once

#include <math.h>
#include <string.h>
#include "ir/graph.h"
#include "runtime/rt-tensor.h"
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

/* A spread of test values in [-1, 1), by index and salt. */
static inline float
float_graph_value_at (gint64 i, gint64 salt)
{
  return (float) (((i + salt) * 2654435761u) % 1000) / 500.0f - 1.0f;
}

/* The float32 value of that name (made when missing). */
static inline GraftValue *
float_graph_value (GraftGraph *g, const char *name)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  v->dtype = GRAFT_DTYPE_FLOAT32;
  return v;
}

/* A node of op (ONNX domain) reading a, b, c (b, c NULL: fewer inputs)
 * into out, all float32 values. */
static inline GraftNode *
float_graph_add_node (GraftGraph *g, const char *op, const char *a, const char *b, const char *c, const char *out)
{
  GraftNode *node = graft_graph_add_node (g, NULL, op, out);
  const char *inputs[] = { a, b, c };
  for (guint i = 0; i < G_N_ELEMENTS (inputs) && inputs[i]; i++)
    graft_node_add_input (node, float_graph_value (g, inputs[i]));
  graft_node_add_output (node, float_graph_value (g, out));
  return node;
}

/* A 2-D Conv of input x into out: weights w [m, cg, kh, kw] and bias b
 * [m] as the initializers "w" and "b"; pads top, left, bottom, right. */
static inline GraftNode *
float_graph_add_conv (GraftGraph *g, const char *x, const char *out, gint64 m, gint64 cg, gint64 kh, gint64 kw,
                      const float *w, const float *b, gint64 stride, gint64 dilation, const gint64 *pads, gint64 group)
{
  gint64 dw[] = { m, cg, kh, kw }, db[] = { m }, strides[] = { stride, stride }, dil[] = { dilation, dilation };
  float_graph_add_initializer (g, "w", 4, dw, w);
  float_graph_add_initializer (g, "b", 1, db, b);
  GraftNode *conv = float_graph_add_node (g, "Conv", x, "w", "b", out);
  graft_node_add_attribute (conv, graft_attribute_new_ints ("strides", strides, 2));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("dilations", dil, 2));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", pads, 4));
  graft_node_add_attribute (conv, graft_attribute_new_int ("group", group));
  return conv;
}

/* What a convolution test's Conv writes: "sum" when the graph input "r"
 * is added to it, else "z" when an activation follows, else "y". */
static inline const char *
float_graph_conv_output (gboolean residual, const char *activation)
{
  return residual ? "sum" : activation ? "z" : "y";
}

/* The nodes after that Conv: the Add of "r" (residual) and the
 * activation (NULL, "Relu" or "Clip" to [0, 6]), which make the graph's
 * output "y"; the runtime fuses both into the convolution. */
static inline void
float_graph_add_conv_epilogue (GraftGraph *g, gboolean residual, const char *activation)
{
  if (residual)
    float_graph_add_node (g, "Add", "sum", "r", NULL, activation ? "z" : "y");
  if (activation)
    {
      GraftNode *act = graft_graph_add_node (g, NULL, activation, activation);
      graft_node_add_input (act, graft_graph_resolve_value (g, "z"));
      if (strcmp (activation, "Clip") == 0)
        {
          gint64 none[] = { 0 };
          float lo = 0, hi = 6;
          float_graph_add_initializer (g, "lo", 0, none, &lo);
          float_graph_add_initializer (g, "hi", 0, none, &hi);
          graft_node_add_input (act, graft_graph_resolve_value (g, "lo"));
          graft_node_add_input (act, graft_graph_resolve_value (g, "hi"));
        }
      graft_node_add_output (act, graft_graph_ensure_value (g, "y"));
    }
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
}

/* v through that activation */
static inline double
float_graph_activate (double v, const char *activation)
{
  if (activation)
    v = MAX (v, 0);
  if (activation && strcmp (activation, "Clip") == 0)
    v = MIN (v, 6);
  return v;
}

/* Each output of fast within rtol·(1 + |r|) of reference's r. */
static inline void
float_graph_assert_outputs_close (const char *what, GPtrArray *fast, GPtrArray *reference, double rtol)
{
  g_assert_cmpuint (fast->len, ==, reference->len);
  for (guint o = 0; o < fast->len; o++)
    {
      const GraftRtTensor *got = fast->pdata[o], *want = reference->pdata[o];
      g_assert_cmpint (got->numel, ==, want->numel);
      for (gint64 i = 0; i < got->numel; i++)
        {
          float g = ((const float *) got->data)[i], r = ((const float *) want->data)[i];
          if (!(fabs (g - r) <= rtol * (1 + fabs (r))))
            g_error ("%s: output %u [%" G_GINT64_FORMAT "] = %.9g, the reference %.9g", what, o, i, g, r);
        }
    }
}

/* x as a product's operand: rounded to bfloat16 (nearest even, as the
 * bf16 tiles round it) when the product is in bf16. */
static inline double
float_graph_operand (float x, gboolean bf16)
{
  if (!bf16)
    return x;
  guint32 u;
  memcpy (&u, &x, sizeof u);
  u = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
  float r;
  memcpy (&r, &u, sizeof r);
  return r;
}
