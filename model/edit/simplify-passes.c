/* The simplifier's passes, each a row of the operation table usable on
 * its own: dead code, common subexpressions, no-op ops, BatchNorm / Mul /
 * Add / Sub / Div by a per-channel constant folded into the Conv or Gemm
 * before it, Pad folded into Conv and pooling, MatMul + Add as Gemm,
 * MatMuls of one input by constants as one MatMul and a Split, and
 * identical initializers stored once. The "simplify" row runs them with
 * constant folding to a fixed point and proves the result by running it
 * (simplify-run.c). */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "runtime/op.h"

#include <math.h>
#include <string.h>

/* ---------- helpers ---------- */

/* value's only reader is reader (once), and it is no graph output. */
static gboolean
feeds_only (GraftValue *value, GraftNode *reader)
{
  return value != NULL && !value->is_graph_output && value->consumers->len == 1
         && g_ptr_array_index (value->consumers, 0) == reader;
}

static GraftValue *
input_at (GraftNode *node, guint i)
{
  return i < node->inputs->len ? g_ptr_array_index (node->inputs, i) : NULL;
}

static gboolean
is_onnx_op (GraftNode *node, const char *op_type)
{
  return node != NULL && strcmp (node->domain, "onnx") == 0 && strcmp (node->op_type, op_type) == 0;
}

/* A float32 constant's elements as doubles, or NULL. */
static double *
float_values (GraftTensor *tensor)
{
  gint64 n;
  double *values;

  if (tensor == NULL || tensor->dtype != GRAFT_DTYPE_FLOAT32 || graft_tensor_get_data (tensor, NULL) == NULL)
    return NULL;
  n = graft_tensor_get_numel (tensor);
  values = g_new (double, MAX (n, 1));
  for (gint64 i = 0; i < n; i++)
    values[i] = graft_tensor_get_element_as_double (tensor, i);
  return values;
}

/* A new float32 initializer of graph holding values. */
static GraftValue *
add_float_initializer (GraftGraph *graph, const char *hint, int rank, const gint64 *dims, const double *values)
{
  GraftValue *value = graft_graph_new_anonymous_value (graph, hint);
  GraftTensor *tensor = graft_tensor_new (value->name, GRAFT_DTYPE_FLOAT32, rank, dims);
  gint64 n = graft_tensor_get_numel (tensor);
  float *data = g_new (float, MAX (n, 1));
  g_autoptr(GBytes) bytes = NULL;

  for (gint64 i = 0; i < n; i++)
    data[i] = (float) values[i];
  bytes = g_bytes_new_take (data, sizeof (float) * n);
  graft_tensor_set_data (tensor, bytes, NULL);
  graft_graph_add_initializer (graph, value, tensor);
  value->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_clear (&value->shape);
  graft_shape_init_fixed (&value->shape, rank, dims);
  return value;
}

/* A rewrite of one node (the node it is given may be removed); TRUE when
 * it changed the graph. */
typedef gboolean (*NodeRewrite) (GraftEditScope *scope, GraftInference *inference, GraftNode *node);

/* Tries rewrite on every node of the scope's graph (again on the node that
 * takes the place of one removed), prunes, and notes "N what (a → b
 * nodes)". inference is only made for rewrites that read types. */
static guint
rewrite_each_node (GraftEditScope *scope, NodeRewrite rewrite, gboolean infer, const char *what, GPtrArray *notes)
{
  g_autoptr(GraftInference) inference = infer ? graft_edit_infer (scope->model) : NULL;
  GraftGraph *graph = scope->graph;
  guint before = graph->nodes->len, changed = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      guint n_nodes = graph->nodes->len;

      if (!rewrite (scope, inference, node))
        continue;
      changed++;
      if (graph->nodes->len < n_nodes)
        i--;
    }
  graft_graph_prune (graph);
  g_ptr_array_add (notes, g_strdup_printf ("%u %s (%u → %u nodes)", changed, what, before, graph->nodes->len));
  return changed;
}

/* ---------- dead code, initializers ---------- */

static gboolean
eliminate_dead_code (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  guint before = scope->graph->nodes->len, initializers = scope->graph->initializers->len;
  guint removed = graft_edit_remove_dead (scope->graph, notes);

  g_ptr_array_add (notes, g_strdup_printf ("%u dead nodes removed (%u → %u); %u → %u initializers", removed, before,
                                           scope->graph->nodes->len, initializers, scope->graph->initializers->len));
  return TRUE;
}

static gboolean
merge_initializers (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  guint before = scope->graph->initializers->len;
  guint merged = graft_edit_merge_duplicate_initializers (scope->graph);

  graft_graph_prune (scope->graph);
  g_ptr_array_add (notes, g_strdup_printf ("%u initializers stored once more (%u → %u)", merged, before,
                                           scope->graph->initializers->len));
  return TRUE;
}

/* ---------- common subexpressions ---------- */

static const char *const not_repeatable_ops[] = {
  "onnx::RandomNormal", "onnx::RandomUniform", "onnx::RandomNormalLike", "onnx::RandomUniformLike",
  "onnx::Multinomial", "onnx::Bernoulli", NULL,
};

static int
compare_attribute_names (gconstpointer a, gconstpointer b)
{
  return strcmp ((*(GraftAttribute *const *) a)->name, (*(GraftAttribute *const *) b)->name);
}

static void
append_bytes_digest (GString *key, const void *data, gsize size)
{
  g_autofree char *digest = g_compute_checksum_for_data (G_CHECKSUM_SHA256, data, size);

  g_string_append_printf (key, "%" G_GSIZE_FORMAT ":%s", size, digest);
}

static void
append_tensor (GString *key, GraftTensor *tensor)
{
  GBytes *data = tensor->dtype != GRAFT_DTYPE_STRING ? graft_tensor_get_data (tensor, NULL) : NULL;

  g_string_append_printf (key, "t%d/%d", tensor->dtype, tensor->rank);
  for (int i = 0; i < tensor->rank; i++)
    g_string_append_printf (key, ",%" G_GINT64_FORMAT, tensor->dims[i]);
  if (data != NULL)
    append_bytes_digest (key, g_bytes_get_data (data, NULL), g_bytes_get_size (data));
  else
    g_string_append_printf (key, "@%p", (void *) tensor);   /* strings: only the same tensor is the same */
}

/* What makes two nodes compute the same: op, inputs (as values: equal
 * constants are one value once initializers are merged) and attributes;
 * NULL for nodes that must not be merged (random ops, subgraphs). */
static char *
node_key (GraftNode *node)
{
  g_autoptr(GString) key = g_string_new (node->op);
  g_autoptr(GPtrArray) sorted = g_ptr_array_new ();

  if (g_strv_contains (not_repeatable_ops, node->op) || node->outputs->len == 0)
    return NULL;
  for (guint i = 0; i < node->inputs->len; i++)
    g_string_append_printf (key, "|%p", g_ptr_array_index (node->inputs, i));
  for (guint i = 0; i < node->outputs->len; i++)
    g_string_append_c (key, g_ptr_array_index (node->outputs, i) != NULL ? 'o' : '-');
  for (guint i = 0; i < node->attributes->len; i++)
    g_ptr_array_add (sorted, g_ptr_array_index (node->attributes, i));
  g_ptr_array_sort (sorted, compare_attribute_names);
  for (guint i = 0; i < sorted->len; i++)
    {
      GraftAttribute *a = g_ptr_array_index (sorted, i);

      g_string_append_printf (key, "|%s:%d=", a->name, a->type);
      if (a->ref_attr_name != NULL)
        return NULL;
      switch (a->type)
        {
        case GRAFT_ATTR_FLOAT:
          g_string_append_printf (key, "%a", a->f);
          break;
        case GRAFT_ATTR_INT:
        case GRAFT_ATTR_BOOL:
          g_string_append_printf (key, "%" G_GINT64_FORMAT, a->i);
          break;
        case GRAFT_ATTR_STRING:
        case GRAFT_ATTR_TYPE:
          append_bytes_digest (key, g_bytes_get_data (a->s, NULL), g_bytes_get_size (a->s));
          break;
        case GRAFT_ATTR_INTS:
          append_bytes_digest (key, a->ints->data, sizeof (gint64) * a->ints->len);
          break;
        case GRAFT_ATTR_FLOATS:
          append_bytes_digest (key, a->floats->data, sizeof (double) * a->floats->len);
          break;
        case GRAFT_ATTR_STRINGS:
          for (guint k = 0; k < a->strings->len; k++)
            {
              GBytes *s = g_ptr_array_index (a->strings, k);
              append_bytes_digest (key, g_bytes_get_data (s, NULL), g_bytes_get_size (s));
            }
          break;
        case GRAFT_ATTR_TENSOR:
          append_tensor (key, a->t);
          break;
        case GRAFT_ATTR_NONE:
          break;
        default:
          return NULL;   /* graphs, tensor lists, sparse tensors */
        }
    }
  return g_string_free (g_steal_pointer (&key), FALSE);
}

/* Replaces node by same (same op, inputs and attributes): FALSE when an
 * output of node is a graph output, whose name must stay. */
static gboolean
merge_into (GraftGraph *graph, GraftNode *node, GraftNode *same)
{
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      if (out != NULL && out->is_graph_output)
        return FALSE;
    }
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      if (out != NULL)
        graft_graph_replace_uses (graph, out, g_ptr_array_index (same->outputs, i));
    }
  return TRUE;
}

static guint
eliminate_common_subexpressions_in (GraftGraph *graph)
{
  g_autoptr(GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) doomed = g_hash_table_new (NULL, NULL);
  guint merged = 0;

  if (!graft_edit_toposort (graph, NULL))
    return 0;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      char *key = node_key (node);
      GraftNode *same;

      if (key == NULL)
        continue;
      if ((same = g_hash_table_lookup (seen, key)) == NULL)
        {
          g_hash_table_insert (seen, key, node);
          continue;
        }
      g_free (key);
      if (merge_into (graph, node, same))
        {
          g_hash_table_add (doomed, node);
          merged++;
        }
    }
  if (merged > 0)
    graft_graph_remove_nodes (graph, doomed);
  return merged;
}

static gboolean
eliminate_common_subexpressions (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  guint before = scope->graph->nodes->len, merged;

  /* Equal constants must be one value for the nodes reading them to match. */
  graft_edit_merge_duplicate_initializers (scope->graph);
  merged = eliminate_common_subexpressions_in (scope->graph);
  graft_graph_prune (scope->graph);
  g_ptr_array_add (notes, g_strdup_printf ("%u nodes computed what another did (%u → %u nodes)", merged, before,
                                           scope->graph->nodes->len));
  return TRUE;
}

/* ---------- no-op ops ---------- */

static gboolean
eliminate_no_ops (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  guint before = scope->graph->nodes->len, passed, simplified;
  g_autoptr(GraftInference) inference = NULL;

  passed = graft_edit_bypass_pass_through (scope->graph);
  inference = graft_edit_infer (scope->model);
  simplified = graft_edit_simplify (inference, scope->graph);
  graft_graph_prune (scope->graph);
  g_ptr_array_add (notes, g_strdup_printf ("%u Identity/Dropout, %u no-op ops, neutral arithmetic, Transpose pairs "
                                           "and reshape chains (%u → %u nodes)", passed, simplified, before,
                                           scope->graph->nodes->len));
  return TRUE;
}

/* ---------- per-channel affine maps folded into Conv / Gemm ---------- */

/* y · scale[c] + shift[c] along the producer's output channels. */
typedef struct {
  gint64 channels;
  double *scale;
  double *shift;
} ChannelAffine;

static void
channel_affine_clear (ChannelAffine *affine)
{
  g_clear_pointer (&affine->scale, g_free);
  g_clear_pointer (&affine->shift, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (ChannelAffine, channel_affine_clear)

/* The elements of c along the channel axis (output rank rank, channel
 * axis axis) when every other dim of c is 1: c broadcasts per channel and
 * leaves the output's shape alone. */
static double *
per_channel (GraftTensor *c, int rank, int axis, gint64 channels)
{
  g_autofree double *values = float_values (c);
  double *result;
  gint64 along = 1;

  if (values == NULL || c->rank > rank)
    return NULL;
  for (int j = 0; j < c->rank; j++)
    {
      int out_axis = rank - c->rank + j;
      if (out_axis == axis && (c->dims[j] == channels || c->dims[j] == 1))
        along = c->dims[j];
      else if (c->dims[j] != 1)
        return NULL;
    }
  result = g_new (double, channels);
  for (gint64 m = 0; m < channels; m++)
    result[m] = values[along == 1 ? 0 : m];
  return result;
}

/* What node (BatchNormalization, or Mul/Add/Sub/Div by a constant) does
 * to its input from as a per-channel affine map. */
static gboolean
read_channel_affine (GraftNode *node, int rank, int axis, gint64 channels, GraftValue *from, ChannelAffine *affine)
{
  affine->channels = channels;
  if (is_onnx_op (node, "BatchNormalization"))
    {
      g_autofree double *gamma = NULL, *beta = NULL, *mean = NULL, *var = NULL;
      double epsilon = graft_node_attr_float (node, "epsilon", 1e-5);
      GraftTensor *tensors[4];

      if (input_at (node, 0) != from || node->inputs->len != 5 || graft_node_attr_int (node, "training_mode", 0) != 0)
        return FALSE;
      for (guint k = 1; k < node->outputs->len; k++)
        if (g_ptr_array_index (node->outputs, k) != NULL)
          {
            GraftValue *extra = g_ptr_array_index (node->outputs, k);
            if (extra->consumers->len > 0 || extra->is_graph_output)
              return FALSE;
          }
      for (guint k = 0; k < 4; k++)
        if ((tensors[k] = graft_edit_constant_of (input_at (node, k + 1))) == NULL || graft_tensor_get_numel (tensors[k]) != channels)
          return FALSE;
      if ((gamma = float_values (tensors[0])) == NULL || (beta = float_values (tensors[1])) == NULL
          || (mean = float_values (tensors[2])) == NULL || (var = float_values (tensors[3])) == NULL || axis != 1)
        return FALSE;
      affine->scale = g_new (double, channels);
      affine->shift = g_new (double, channels);
      for (gint64 m = 0; m < channels; m++)
        {
          affine->scale[m] = gamma[m] / sqrt (var[m] + epsilon);
          affine->shift[m] = beta[m] - mean[m] * affine->scale[m];
        }
      return TRUE;
    }
  if (node->inputs->len != 2 || node->outputs->len != 1)
    return FALSE;
  gboolean mul = is_onnx_op (node, "Mul"), div = is_onnx_op (node, "Div");
  gboolean add = is_onnx_op (node, "Add"), sub = is_onnx_op (node, "Sub");
  /* Mul and Add take the constant either side; Sub and Div only second. */
  int slot = input_at (node, 0) == from ? 0 : input_at (node, 1) == from && (mul || add) ? 1 : -1;
  double *c;

  if (!(mul || div || add || sub) || slot < 0
      || (c = per_channel (graft_edit_constant_of (input_at (node, 1 - slot)), rank, axis, channels)) == NULL)
    return FALSE;
  affine->scale = g_new (double, channels);
  affine->shift = g_new0 (double, channels);
  for (gint64 m = 0; m < channels; m++)
    {
      affine->scale[m] = mul ? c[m] : div ? 1.0 / c[m] : 1.0;
      affine->shift[m] = add ? c[m] : sub ? -c[m] : 0.0;
    }
  g_free (c);
  return TRUE;
}

/* node (Conv, Gemm) takes new weights w (of weight's shape) and a new
 * bias of channels values in place of its inputs 1 and 2. */
static void
replace_weights (GraftGraph *graph, GraftNode *node, GraftTensor *weight, const double *w, gint64 channels,
                 const double *bias)
{
  GraftValue *bias_value = input_at (node, 2);
  GraftValue *new_weight = add_float_initializer (graph, input_at (node, 1)->name, weight->rank, weight->dims, w);
  GraftValue *new_bias = add_float_initializer (graph, bias_value ? bias_value->name : "bias", 1, &channels, bias);

  graft_node_set_input (node, 1, new_weight);
  if (node->inputs->len < 3)
    graft_node_add_input (node, new_bias);
  else
    graft_node_set_input (node, 2, new_bias);
}

/* Conv(x, W, b) followed by the affine map: W·scale, b·scale + shift. */
static gboolean
fold_affine_into_conv (GraftGraph *graph, GraftNode *conv, GraftNode *node)
{
  GraftTensor *weight = graft_edit_constant_of (input_at (conv, 1));
  GraftValue *bias_value = input_at (conv, 2);
  GraftTensor *bias = graft_edit_constant_of (bias_value);
  g_autofree double *w = NULL, *b = NULL;
  g_auto(ChannelAffine) affine = { 0 };
  gint64 per_output;

  /* the affine map first: reading the weights is the costly part */
  if (weight == NULL || weight->rank < 3 || (bias_value != NULL && bias == NULL) || conv->inputs->len > 3
      || (bias != NULL && graft_tensor_get_numel (bias) != weight->dims[0])
      || !read_channel_affine (node, weight->rank, 1, weight->dims[0], g_ptr_array_index (conv->outputs, 0), &affine)
      || (w = float_values (weight)) == NULL || (bias != NULL && (b = float_values (bias)) == NULL))
    return FALSE;
  per_output = graft_tensor_get_numel (weight) / MAX (weight->dims[0], 1);
  for (gint64 m = 0; m < weight->dims[0]; m++)
    {
      for (gint64 k = 0; k < per_output; k++)
        w[m * per_output + k] *= affine.scale[m];
      affine.shift[m] += (b ? b[m] : 0.0) * affine.scale[m];
    }
  replace_weights (graph, conv, weight, w, weight->dims[0], affine.shift);
  return TRUE;
}

/* Gemm(A, B, C) = alpha·A·B' + beta·C followed by the affine map on its
 * columns: B'·alpha·scale, (beta·C)·scale + shift, alpha = beta = 1. */
static gboolean
fold_affine_into_gemm (GraftGraph *graph, GraftNode *gemm, GraftNode *node)
{
  GraftTensor *weight = graft_edit_constant_of (input_at (gemm, 1));
  GraftValue *c_value = input_at (gemm, 2);
  GraftTensor *c = graft_edit_constant_of (c_value);
  gboolean trans_b = graft_node_attr_int (gemm, "transB", 0) != 0;
  double alpha = graft_node_attr_float (gemm, "alpha", 1.0), beta = graft_node_attr_float (gemm, "beta", 1.0);
  g_autofree double *w = NULL, *bias = NULL;
  g_auto(ChannelAffine) affine = { 0 };
  gint64 columns, rows;

  if (weight == NULL || weight->rank != 2 || (c_value != NULL && c == NULL))
    return FALSE;
  columns = trans_b ? weight->dims[0] : weight->dims[1];
  rows = trans_b ? weight->dims[1] : weight->dims[0];
  if (!read_channel_affine (node, 2, 1, columns, g_ptr_array_index (gemm->outputs, 0), &affine)
      || (c != NULL && (bias = per_channel (c, 2, 1, columns)) == NULL)   /* a C of shape [N, M] differs per row */
      || (w = float_values (weight)) == NULL)
    return FALSE;
  for (gint64 r = 0; r < rows; r++)
    for (gint64 m = 0; m < columns; m++)
      w[trans_b ? m * rows + r : r * columns + m] *= alpha * affine.scale[m];
  for (gint64 m = 0; m < columns; m++)
    affine.shift[m] += (bias ? beta * bias[m] : 0.0) * affine.scale[m];
  replace_weights (graph, gemm, weight, w, columns, affine.shift);
  for (guint i = gemm->attributes->len; i > 0; i--)
    {
      GraftAttribute *attribute = g_ptr_array_index (gemm->attributes, i - 1);
      if (strcmp (attribute->name, "alpha") == 0 || strcmp (attribute->name, "beta") == 0)
        g_ptr_array_remove_index (gemm->attributes, i - 1);
    }
  return TRUE;
}

/* node (BatchNormalization, Mul, Add, Sub, Div) folded into the Conv or
 * Gemm whose output only it reads. */
static gboolean
fold_into_producer (GraftEditScope *scope, GraftInference *inference, GraftNode *node)
{
  GraftGraph *graph = scope->graph;

  for (guint slot = 0; slot < MIN (node->inputs->len, 2); slot++)
    {
      GraftValue *in = input_at (node, slot);
      GraftNode *producer = in ? in->producer : NULL;
      gboolean done = FALSE;

      if (producer == NULL || producer->graph != graph || producer->outputs->len != 1 || !feeds_only (in, node))
        continue;
      if (is_onnx_op (producer, "Conv"))
        done = fold_affine_into_conv (graph, producer, node);
      else if (is_onnx_op (producer, "Gemm"))
        done = fold_affine_into_gemm (graph, producer, node);
      if (!done)
        continue;
      if (!graft_graph_bypass (graph, node, slot))
        g_warn_if_reached ();   /* in is no graph output nor initializer: bypass cannot refuse */
      return TRUE;
    }
  return FALSE;
}

static gboolean
fold_into_conv (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  rewrite_each_node (scope, fold_into_producer, FALSE, "BatchNormalization / Mul / Add / Sub / Div by per-channel "
                     "constants folded into Conv and Gemm weights", notes);
  return TRUE;
}

/* ---------- Pad into Conv and pooling ---------- */

/* The constant pads of a constant-mode Pad as 2·rank values (begins, then
 * ends) and its fill value; FALSE when any is not constant. */
static gboolean
read_pad (GraftModel *model, GraftNode *pad, int rank, gint64 *pads, double *fill)
{
  const char *mode = graft_node_attr_string (pad, "mode", "constant");
  gint64 opset = graft_model_get_opset (model, "onnx");
  guint n = 0;
  g_autofree gint64 *values = NULL;
  g_autofree gint64 *axes = NULL;
  guint n_axes = 0;

  if (strcmp (mode, "constant") != 0)
    return FALSE;
  *fill = 0.0;
  if (opset < 11)
    {
      const gint64 *attr = graft_node_attr_ints (pad, "pads", &n);
      if (attr == NULL)
        return FALSE;
      values = g_memdup2 (attr, sizeof (gint64) * n);
      *fill = graft_node_attr_float (pad, "value", 0.0);
    }
  else
    {
      GraftTensor *tensor = graft_edit_constant_of (input_at (pad, 1));
      GraftValue *fill_value = input_at (pad, 2);
      GraftTensor *fill_tensor = graft_edit_constant_of (fill_value);
      GraftValue *axes_value = input_at (pad, 3);
      GraftTensor *axes_tensor = graft_edit_constant_of (axes_value);

      if (tensor == NULL || tensor->dtype != GRAFT_DTYPE_INT64 || (fill_value != NULL && fill_tensor == NULL)
          || (fill_tensor != NULL && graft_tensor_get_numel (fill_tensor) != 1)
          || (axes_value != NULL && axes_tensor == NULL))
        return FALSE;
      if ((values = graft_edit_int64_values (input_at (pad, 1), &n)) == NULL)
        return FALSE;
      if (fill_tensor != NULL)
        *fill = graft_tensor_get_element_as_double (fill_tensor, 0);
      if (axes_tensor != NULL && (axes = graft_edit_int64_values (axes_value, &n_axes)) == NULL)
        return FALSE;
    }
  memset (pads, 0, sizeof (gint64) * 2 * rank);
  if (axes == NULL)
    {
      if (n != 2 * (guint) rank)
        return FALSE;
      memcpy (pads, values, sizeof (gint64) * n);
      return TRUE;
    }
  if (n != 2 * n_axes)
    return FALSE;
  for (guint k = 0; k < n_axes; k++)
    {
      gint64 axis = axes[k] < 0 ? axes[k] + rank : axes[k];
      if (axis < 0 || axis >= rank)
        return FALSE;
      pads[axis] = values[k];
      pads[rank + axis] = values[n_axes + k];
    }
  return TRUE;
}

static void
set_ints_attribute (GraftNode *node, const char *name, const gint64 *values, guint n)
{
  for (guint i = 0; i < node->attributes->len; i++)
    if (strcmp (((GraftAttribute *) g_ptr_array_index (node->attributes, i))->name, name) == 0)
      {
        g_ptr_array_remove_index (node->attributes, i);
        break;
      }
  graft_node_add_attribute (node, graft_attribute_new_ints (name, values, n));
}

/* Pad(x) → node (Conv, AveragePool, MaxPool) becomes node(x) with the
 * spatial pads added to its own, where the result is the same: zeros for
 * Conv; zeros counted in the average (count_include_pad) for
 * AveragePool; -inf, which never wins, for MaxPool. */
static gboolean
fold_pad_into (GraftEditScope *scope, GraftInference *inference, GraftNode *node)
{
  GraftModel *model = scope->model;
  GraftGraph *graph = scope->graph;
  GraftValue *in = input_at (node, 0);
  GraftNode *pad = in ? in->producer : NULL;
  GraftValue *source;
  GraftDType dtype;
  const GraftShape *shape;
  gboolean conv = is_onnx_op (node, "Conv"), average = is_onnx_op (node, "AveragePool");
  gboolean max = is_onnx_op (node, "MaxPool");
  int rank, spatial;
  g_autofree gint64 *pads = NULL, *merged = NULL;
  double fill;
  const gint64 *own;
  guint n_own = 0;

  if (!(conv || average || max) || !is_onnx_op (pad, "Pad") || pad->graph != graph || !feeds_only (in, node)
      || (source = input_at (pad, 0)) == NULL || !graft_edit_value_type (inference, source, &dtype, &shape)
      || shape == NULL || shape->rank < 3
      || strcmp (graft_node_attr_string (node, "auto_pad", "NOTSET"), "NOTSET") != 0)
    return FALSE;
  rank = shape->rank;
  spatial = rank - 2;
  pads = g_new (gint64, 2 * rank);
  if (!read_pad (model, pad, rank, pads, &fill))
    return FALSE;
  for (int axis = 0; axis < rank; axis++)
    if (pads[axis] < 0 || pads[rank + axis] < 0 || (axis < 2 && (pads[axis] != 0 || pads[rank + axis] != 0)))
      return FALSE;
  if ((conv || average) && fill != 0.0)
    return FALSE;
  if (max && !(isinf (fill) && fill < 0))
    return FALSE;
  if ((average || max) && graft_node_attr_int (node, "ceil_mode", 0) != 0)
    return FALSE;
  if (max && node->outputs->len > 1 && g_ptr_array_index (node->outputs, 1) != NULL)
    {
      GraftValue *indices = g_ptr_array_index (node->outputs, 1);
      if (indices->consumers->len > 0 || indices->is_graph_output)
        return FALSE;
    }
  own = graft_node_attr_ints (node, "pads", &n_own);
  if (own != NULL && n_own != 2 * (guint) spatial)
    return FALSE;
  if (average && graft_node_attr_int (node, "count_include_pad", 0) == 0)
    for (guint k = 0; k < n_own; k++)
      if (own[k] != 0)
        return FALSE;   /* its own pads are left out of the average, the Pad's zeros are not */
  merged = g_new (gint64, 2 * spatial);
  for (int k = 0; k < spatial; k++)
    {
      merged[k] = (own ? own[k] : 0) + pads[2 + k];
      merged[spatial + k] = (own ? own[spatial + k] : 0) + pads[rank + 2 + k];
    }
  set_ints_attribute (node, "pads", merged, 2 * spatial);
  if (average)
    {
      for (guint i = 0; i < node->attributes->len; i++)
        if (strcmp (((GraftAttribute *) g_ptr_array_index (node->attributes, i))->name, "count_include_pad") == 0)
          {
            g_ptr_array_remove_index (node->attributes, i);
            break;
          }
      graft_node_add_attribute (node, graft_attribute_new_int ("count_include_pad", 1));
    }
  graft_node_set_input (node, 0, source);
  return TRUE;
}

static gboolean
fold_pad (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  rewrite_each_node (scope, fold_pad_into, TRUE, "Pad folded into Conv / AveragePool / MaxPool", notes);
  return TRUE;
}

/* ---------- MatMul + Add → Gemm ---------- */

static gboolean
is_rank_2 (GraftInference *inference, GraftValue *value, GraftDType *dtype, const GraftShape **shape)
{
  return value != NULL && graft_edit_value_type (inference, value, dtype, shape) && *shape != NULL
         && (*shape)->rank == 2;
}

/* Add(MatMul(A, B), C) with A and B of rank 2 and C a constant that
 * broadcasts to the product ([M], [1, M], [N, M], a scalar): Gemm(A, B, C). */
static gboolean
matmul_add_to_gemm_at (GraftEditScope *scope, GraftInference *inference, GraftNode *add)
{
  GraftGraph *graph = scope->graph;

  for (guint slot = 0; slot < 2 && add->inputs->len == 2 && is_onnx_op (add, "Add"); slot++)
    {
      GraftValue *product = input_at (add, slot), *c_value = input_at (add, 1 - slot);
      GraftNode *matmul = product ? product->producer : NULL;
      GraftTensor *c = graft_edit_constant_of (c_value);
      GraftDType a_dtype, b_dtype, out_dtype;
      const GraftShape *a_shape, *b_shape, *out_shape;
      gboolean fits = TRUE;

      if (!is_onnx_op (matmul, "MatMul") || matmul->graph != graph || !feeds_only (product, add) || c == NULL
          || !is_rank_2 (inference, input_at (matmul, 0), &a_dtype, &a_shape)
          || !is_rank_2 (inference, input_at (matmul, 1), &b_dtype, &b_shape)
          || !is_rank_2 (inference, product, &out_dtype, &out_shape) || c->rank > 2
          || (a_dtype != GRAFT_DTYPE_FLOAT32 && a_dtype != GRAFT_DTYPE_FLOAT64 && a_dtype != GRAFT_DTYPE_FLOAT16)
          || c->dtype != a_dtype)
        continue;
      for (int j = 0; j < c->rank; j++)
        {
          const GraftDim *d = &out_shape->dims[2 - c->rank + j];
          fits &= c->dims[j] == 1 || (d->kind == GRAFT_DIM_FIXED && d->value == c->dims[j]);
        }
      if (!fits)
        continue;
      matmul->op_type = g_intern_string ("Gemm");
      matmul->op = g_intern_string ("onnx::Gemm");
      graft_node_add_input (matmul, c_value);
      if (!graft_graph_bypass (graph, add, slot))
        g_warn_if_reached ();
      return TRUE;
    }
  return FALSE;
}

static gboolean
matmul_add_to_gemm (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  rewrite_each_node (scope, matmul_add_to_gemm_at, TRUE, "MatMul + Add of rank 2 became Gemm", notes);
  return TRUE;
}

/* ---------- MatMuls of one input by constants → one MatMul and a Split ---------- */

/* The MatMuls reading x as their first input with a constant rank-2
 * weight of dtype and k rows: the candidates for one product. */
static GPtrArray *
sibling_matmuls (GraftGraph *graph, GraftValue *x, GraftDType dtype, gint64 k)
{
  GPtrArray *siblings = g_ptr_array_new ();

  for (guint i = 0; i < x->consumers->len; i++)
    {
      GraftNode *node = g_ptr_array_index (x->consumers, i);
      GraftTensor *weight = graft_edit_constant_of (input_at (node, 1));

      if (!is_onnx_op (node, "MatMul") || node->graph != graph || input_at (node, 0) != x || node->outputs->len != 1
          || weight == NULL || weight->rank != 2 || weight->dtype != dtype || weight->dims[0] != k
          || graft_tensor_get_data (weight, NULL) == NULL || g_ptr_array_find (siblings, node, NULL))
        continue;
      g_ptr_array_add (siblings, node);
    }
  return siblings;
}

/* The weights of siblings side by side: [k, Σ n_i]. */
static GraftValue *
concatenate_weights (GraftGraph *graph, GPtrArray *siblings, gint64 *columns)
{
  GraftTensor *first = graft_edit_constant_of (input_at (g_ptr_array_index (siblings, 0), 1));
  gsize element = graft_dtype_get_size (first->dtype);
  gint64 k = first->dims[0], total = 0, dims[2];
  GraftValue *value = graft_graph_new_anonymous_value (graph, "fused_weight");
  GraftTensor *tensor;
  guint8 *data;
  gint64 offset = 0;
  g_autoptr(GBytes) bytes = NULL;

  for (guint i = 0; i < siblings->len; i++)
    total += (columns[i] = graft_edit_constant_of (input_at (g_ptr_array_index (siblings, i), 1))->dims[1]);
  dims[0] = k;
  dims[1] = total;
  data = g_malloc (MAX (element * k * total, 1));
  for (guint i = 0; i < siblings->len; i++)
    {
      GBytes *part = graft_tensor_get_data (graft_edit_constant_of (input_at (g_ptr_array_index (siblings, i), 1)), NULL);
      const guint8 *from = g_bytes_get_data (part, NULL);
      for (gint64 row = 0; row < k; row++)
        memcpy (data + element * (row * total + offset), from + element * row * columns[i], element * columns[i]);
      offset += columns[i];
    }
  tensor = graft_tensor_new (value->name, first->dtype, 2, dims);
  bytes = g_bytes_new_take (data, element * k * total);
  graft_tensor_set_data (tensor, bytes, NULL);
  graft_graph_add_initializer (graph, value, tensor);
  value->dtype = first->dtype;
  graft_shape_clear (&value->shape);
  graft_shape_init_fixed (&value->shape, 2, dims);
  return value;
}

/* Three or more MatMuls of the same x by constant weights (attention's
 * query, key and value) become x times the weights side by side, split
 * into the same outputs: two nodes where there were n. */
static gboolean
fuse_sibling_matmuls_at (GraftEditScope *scope, GraftInference *inference, GraftNode *node)
{
  GraftGraph *graph = scope->graph;
  GraftValue *x = input_at (node, 0);
  GraftTensor *weight = graft_edit_constant_of (input_at (node, 1));
  g_autoptr(GPtrArray) siblings = NULL;
  g_autoptr(GHashTable) doomed = g_hash_table_new (NULL, NULL);
  g_autofree gint64 *columns = NULL;
  g_autofree char *matmul_name = NULL, *split_name = NULL;
  GraftNode *matmul, *split;
  GraftValue *product, *sizes;

  if (!is_onnx_op (node, "MatMul") || x == NULL || weight == NULL || weight->rank != 2)
    return FALSE;
  siblings = sibling_matmuls (graph, x, weight->dtype, weight->dims[0]);
  if (siblings->len < 3 || g_ptr_array_index (siblings, 0) != node)
    return FALSE;
  columns = g_new (gint64, siblings->len);
  matmul_name = graft_edit_unique_node_name (graph, node->name && *node->name ? node->name : "MatMul");
  matmul = graft_graph_add_node (graph, "", "MatMul", matmul_name);
  graft_node_add_input (matmul, x);
  graft_node_add_input (matmul, concatenate_weights (graph, siblings, columns));
  product = graft_graph_new_anonymous_value (graph, "fused_product");
  graft_node_add_output (matmul, product);
  split_name = graft_edit_unique_node_name (graph, "Split");
  split = graft_graph_add_node (graph, "", "Split", split_name);
  graft_node_add_input (split, product);
  sizes = graft_graph_add_int64_constant (graph, "split", columns, siblings->len, FALSE);
  if (graft_model_get_opset (scope->model, "onnx") >= 13)
    graft_node_add_input (split, sizes);
  else
    graft_node_add_attribute (split, graft_attribute_new_ints ("split", columns, siblings->len));
  graft_node_add_attribute (split, graft_attribute_new_int ("axis", -1));
  for (guint i = 0; i < siblings->len; i++)
    {
      GraftNode *sibling = g_ptr_array_index (siblings, i);
      GraftValue *out = g_ptr_array_index (sibling->outputs, 0);
      GraftValue *placeholder = graft_graph_new_anonymous_value (graph, out->name);

      /* the output value moves to the Split, keeping its name and readers */
      sibling->outputs->pdata[0] = placeholder;
      placeholder->producer = sibling;
      placeholder->producer_index = 0;
      graft_node_add_output (split, out);
      g_hash_table_add (doomed, sibling);
    }
  graft_graph_remove_nodes (graph, doomed);
  return graft_edit_toposort (graph, NULL);
}

static gboolean
fuse_sibling_matmuls (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  rewrite_each_node (scope, fuse_sibling_matmuls_at, FALSE,
                     "groups of three or more MatMuls of one input by constants became one MatMul and a Split", notes);
  return TRUE;
}

static char *describe_dead_code (GVariant *params) { return g_strdup ("Remove dead code"); }
static char *describe_merge_initializers (GVariant *params) { return g_strdup ("Store identical initializers once"); }
static char *describe_cse (GVariant *params) { return g_strdup ("Merge common subexpressions"); }
static char *describe_no_ops (GVariant *params) { return g_strdup ("Remove no-op nodes"); }
static char *describe_fold_into_conv (GVariant *params) { return g_strdup ("Fold BatchNorm / Mul / Add into Conv and Gemm"); }
static char *describe_fold_pad (GVariant *params) { return g_strdup ("Fold Pad into Conv and pooling"); }
static char *describe_gemm (GVariant *params) { return g_strdup ("MatMul + Add → Gemm"); }
static char *describe_sibling_matmuls (GVariant *params) { return g_strdup ("Fuse MatMuls of one input"); }

const GraftEditOperation graft_edit_ops_simplify[] = {
  { .id = "simplify", .node_params = "", .value_params = "", .apply = graft_edit_simplify_run,
    .describe = graft_edit_simplify_describe,
    .option = "--simplify",
    .help = "fold constants and run every pass below to a fixed point, then run the original and the result on the "
            "same inputs in Graft's runtime: --input [NAME=]FILE (.npy/.pb, as graft-cli run reads them; "
            "repeatable) for those given, random data (seeded by --seed N) for the others, symbolic dims the files "
            "leave free at each of --sizes N,N,... (default: the first two sizes that run). Outputs beyond --rtol R "
            "and --atol A (default 1e-5; |a-b| <= A + R*max|a|) fail the edit, naming the pass that changed them; "
            "--no-verify skips the check" },
  { .id = "eliminate-dead-code", .node_params = "", .value_params = "", .apply = eliminate_dead_code,
    .describe = describe_dead_code,
    .option = "--dead-code",
    .help = "remove what computes nothing the graph gives out, and unused initializers" },
  { .id = "merge-initializers", .node_params = "", .value_params = "", .apply = merge_initializers,
    .describe = describe_merge_initializers,
    .option = "--merge-initializers",
    .help = "store initializers with the same type and bytes once" },
  { .id = "eliminate-common-subexpressions", .node_params = "", .value_params = "", .apply = eliminate_common_subexpressions,
    .describe = describe_cse,
    .option = "--cse",
    .help = "merge nodes with the same op, inputs and attributes (equal constants count as the same)" },
  { .id = "eliminate-no-ops", .node_params = "", .value_params = "", .apply = eliminate_no_ops,
    .describe = describe_no_ops,
    .option = "--no-ops",
    .help = "remove Identity, Dropout, Reshape/Expand to the same shape, Transpose pairs that cancel, Cast to the "
            "same type, Slice of everything, Concat of one, x+0, x*1" },
  { .id = "fold-into-conv", .node_params = "", .value_params = "", .apply = fold_into_conv,
    .describe = describe_fold_into_conv,
    .option = "--fold-into-conv",
    .help = "fold BatchNormalization and Mul/Add/Sub/Div by per-channel constants into the Conv or Gemm before them" },
  { .id = "fold-pad", .node_params = "", .value_params = "", .apply = fold_pad, .describe = describe_fold_pad,
    .option = "--fold-pad",
    .help = "fold Pad into the Conv, AveragePool or MaxPool after it where the result is the same" },
  { .id = "matmul-add-to-gemm", .node_params = "", .value_params = "", .apply = matmul_add_to_gemm,
    .describe = describe_gemm,
    .option = "--matmul-add-to-gemm",
    .help = "MatMul of rank-2 values followed by Add of a constant becomes Gemm" },
  { .id = "fuse-sibling-matmuls", .node_params = "", .value_params = "", .apply = fuse_sibling_matmuls,
    .describe = describe_sibling_matmuls,
    .option = "--fuse-matmuls",
    .help = "three or more MatMuls of one input by constant weights become one MatMul and a Split" },
  { NULL },
};
