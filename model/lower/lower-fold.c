/* Folds made after lowering, over the finished ONNX graph: what
 * torch.onnx.export's constant folding does, so the files are no larger. */
#include "lower/lower-private.h"

#include <math.h>
#include <string.h>
#include "ir/graph-surgery.h"

/* The float32 data of a constant value (an initializer), or NULL. */
static const float *
constant_floats (GraftValue *value, gint64 n)
{
  if (value == NULL || value->initializer == NULL || value->initializer->dtype != GRAFT_DTYPE_FLOAT32 ||
      graft_tensor_get_numel (value->initializer) != n)
    return NULL;
  GBytes *data = graft_tensor_get_data (value->initializer, NULL);
  return data ? g_bytes_get_data (data, NULL) : NULL;
}

static void
replace_input (GraftNode *node, guint i, GraftValue *value)
{
  if (i < node->inputs->len)
    graft_node_set_input (node, i, value);
  else
    graft_node_add_input (node, value);
}

/* An eval-mode BatchNormalization right after a Conv whose only reader it
 * is folds into the Conv's weight and bias, as torch.onnx.export's
 * constant folding does: W' = W·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β. */
static gboolean
fold_into_conv (GraftLowerContext *ctx, GraftGraph *graph, GraftNode *bn)
{
  if (bn->inputs->len != 5 || bn->outputs->len < 1)
    return FALSE;
  GraftValue *x = g_ptr_array_index (bn->inputs, 0), *y = g_ptr_array_index (bn->outputs, 0);
  GraftNode *conv = x->producer;
  if (conv == NULL || strcmp (conv->op, "onnx::Conv") != 0 || x->consumers->len != 1 || x->is_graph_output ||
      conv->inputs->len < 2 || (bn->outputs->len > 1 && g_ptr_array_index (bn->outputs, 1) != NULL))
    return FALSE;
  GraftValue *w = g_ptr_array_index (conv->inputs, 1);
  GraftValue *b = conv->inputs->len > 2 ? g_ptr_array_index (conv->inputs, 2) : NULL;
  if (w == NULL || w->initializer == NULL || w->initializer->rank < 1)
    return FALSE;
  gint64 channels = w->initializer->dims[0], numel = graft_tensor_get_numel (w->initializer);
  const float *wd = constant_floats (w, numel), *bd = b ? constant_floats (b, channels) : NULL;
  const float *g = constant_floats (g_ptr_array_index (bn->inputs, 1), channels);
  const float *beta = constant_floats (g_ptr_array_index (bn->inputs, 2), channels);
  const float *mu = constant_floats (g_ptr_array_index (bn->inputs, 3), channels);
  const float *v = constant_floats (g_ptr_array_index (bn->inputs, 4), channels);
  double eps = graft_node_attr_float (bn, "epsilon", 1e-5);
  if (wd == NULL || (b != NULL && bd == NULL) || g == NULL || beta == NULL || mu == NULL || v == NULL || channels == 0)
    return FALSE;
  gint64 per_channel = numel / channels;
  float *new_w = g_new (float, numel), *new_b = g_new (float, channels);
  for (gint64 c = 0; c < channels; c++)
    {
      double factor = g[c] / sqrt ((double) v[c] + eps);
      for (gint64 i = 0; i < per_channel; i++)
        new_w[c * per_channel + i] = (float) (wd[c * per_channel + i] * factor);
      new_b[c] = (float) (((bd ? bd[c] : 0) - mu[c]) * factor + beta[c]);
    }
  GraftTensor *wt = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, w->initializer->rank, w->initializer->dims);
  GraftTensor *bt = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, 1, &channels);
  g_autoptr(GBytes) wbytes = g_bytes_new_take (new_w, numel * sizeof (float));
  g_autoptr(GBytes) bbytes = g_bytes_new_take (new_b, channels * sizeof (float));
  graft_tensor_set_data (wt, wbytes, NULL);
  graft_tensor_set_data (bt, bbytes, NULL);
  /* constants named after the conv's scope */
  g_autofree char *scope = g_strdup (conv->name);
  char *slash = strrchr (scope, '/');
  if (slash)
    *slash = '\0';
  ctx->scope = scope;
  replace_input (conv, 1, _graft_lower_add_constant (ctx, wt));
  replace_input (conv, 2, _graft_lower_add_constant (ctx, bt));
  ctx->scope = "";
  gboolean output = y->is_graph_output;
  g_autofree char *name = g_strdup (y->name);
  GraftDType dtype = y->dtype;
  GraftShape shape;
  graft_shape_copy (&shape, &y->shape);
  graft_graph_replace_uses (graph, y, x);
  graft_graph_remove_node (graph, bn);
  if (output)
    {
      /* The graph output keeps its name and declared type. */
      graft_graph_remove_value (graph, y);
      g_hash_table_remove (graph->value_by_name, x->name);
      g_free (x->name);
      x->name = g_steal_pointer (&name);
      g_hash_table_insert (graph->value_by_name, x->name, x);
      x->dtype = dtype;
      graft_shape_clear (&x->shape);
      x->shape = shape;
    }
  else
    graft_shape_clear (&shape);
  return TRUE;
}

void
_graft_lower_fold_batch_norms (GraftLowerContext *ctx, GraftGraph *graph)
{
  for (guint i = graph->nodes->len; i-- > 0;)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (strcmp (node->op, "onnx::BatchNormalization") == 0)
        fold_into_conv (ctx, graph, node);
    }
}
