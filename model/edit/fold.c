/* Constant folding, cleanup and topological sorting.
 *
 * Folding runs the nodes whose inputs are all constant in Graft's own
 * runtime (one run of a small graph made of just those nodes) and puts
 * their results in as initializers, in the main graph and inside
 * If/Loop/Scan bodies; Shape and Size of values whose shapes
 * are fully static become constants too, so shape subgraphs fold away once
 * the input shapes are fixed. Cleanup removes what computes nothing the
 * graph gives out, Identity and inference-time Dropout nodes, unused
 * initializers, and merges initializers with the same type and bytes. */
#include "edit/edit-private.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "runtime/runtime.h"
#include "runtime/op.h"

#include <string.h>

/* Results above this stay computed: folding must not bloat the file
 * (the "max_bytes" parameter, --fold-max-bytes, overrides it). */
#define FOLD_MAX_BYTES (64 * 1024 * 1024)

static const char *const nondeterministic_ops[] = {
  "onnx::RandomNormal", "onnx::RandomUniform", "onnx::RandomNormalLike", "onnx::RandomUniformLike",
  "onnx::Multinomial", "onnx::Bernoulli", NULL,
};

static gboolean
is_constant (GraftValue *value, GHashTable *folded)
{
  return (value->initializer != NULL && !value->is_graph_input) || g_hash_table_contains (folded, value);
}

static gboolean
has_subgraphs (GraftNode *node)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (attribute->type == GRAFT_ATTR_GRAPH || attribute->type == GRAFT_ATTR_GRAPHS)
        return TRUE;
    }
  return FALSE;
}

static gboolean
can_fold (GraftModel *model, GraftNode *node, GHashTable *folded)
{
  if (g_strv_contains (nondeterministic_ops, node->op) || has_subgraphs (node)
      || graft_model_lookup_function (model, node->domain, node->op_type) != NULL
      || !graft_runtime_supports_op (node->op, graft_model_get_opset (model, node->domain)))
    return FALSE;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (node->inputs, i);
      if (in != NULL && !is_constant (in, folded))
        return FALSE;
    }
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      if (out != NULL && out->kind != GRAFT_VALUE_TENSOR)
        return FALSE;
    }
  return TRUE;
}

/* Makes value an initializer holding tensor; its producer keeps a placeholder. */
static void
materialize (GraftGraph *graph, GraftValue *value, GraftTensor *tensor)
{
  GraftNode *producer = value->producer;

  if (producer != NULL)
    {
      GraftValue *placeholder = graft_graph_new_anonymous_value (graph, value->name);
      producer->outputs->pdata[value->producer_index] = placeholder;
      placeholder->producer = producer;
      placeholder->producer_index = value->producer_index;
      value->producer = NULL;
    }
  graft_graph_add_initializer (graph, value, tensor);
  value->dtype = tensor->dtype;
  graft_shape_clear (&value->shape);
  graft_shape_init_fixed (&value->shape, tensor->rank, tensor->dims);
}

static GraftTensor *
int64_tensor (const char *name, const gint64 *values, guint n, gboolean scalar)
{
  gint64 dims[1] = { n };
  GraftTensor *tensor = graft_tensor_new (name, GRAFT_DTYPE_INT64, scalar ? 0 : 1, dims);
  g_autoptr(GBytes) data = NULL;
  guint64 *bytes = g_new (guint64, MAX (n, 1));

  for (guint i = 0; i < n; i++)
    bytes[i] = GUINT64_TO_LE ((guint64) values[i]);
  data = g_bytes_new_take (bytes, 8 * n);
  graft_tensor_set_data (tensor, data, NULL);
  return tensor;
}

/* The dims Shape node gives out (its start and end applied) as they are
 * inferred, *n of them; NULL when the input's rank is unknown. Borrowed
 * from the inference. */
static const GraftDim *
shape_node_dims (GraftInference *inference, GraftNode *node, guint *n)
{
  GraftValue *in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftDType dtype;
  const GraftShape *shape;
  gint64 rank, start, end;

  if (in == NULL || !graft_edit_value_type (inference, in, &dtype, &shape) || shape == NULL || shape->rank < 0)
    return NULL;
  rank = shape->rank;
  start = graft_node_attr_int (node, "start", 0);
  end = graft_node_attr_int (node, "end", rank);
  start = CLAMP (start < 0 ? start + rank : start, 0, rank);
  end = CLAMP (end < 0 ? end + rank : end, 0, rank);
  *n = end > start ? end - start : 0;
  return shape->dims + start;
}

static gint64 *
int64_input (GraftNode *node, guint i, guint *n)
{
  return graft_edit_int64_values (i < node->inputs->len ? g_ptr_array_index (node->inputs, i) : NULL, n);
}

/* The positions of a length-n vector that node (Slice or Gather along
 * axis 0, with constant arguments) picks, *n_picked of them; *scalar for a
 * Gather of one index given as a scalar. NULL when they are not known. */
static gint64 *
picked_positions (GraftNode *node, gint64 n, guint *n_picked, gboolean *scalar)
{
  g_autofree gint64 *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  guint n_starts, n_ends, n_axes = 1, n_steps = 1;
  GArray *picked;
  gint64 start, end, step;

  *scalar = FALSE;
  if (strcmp (node->op, "onnx::Gather") == 0)
    {
      GraftValue *indices_value = node->inputs->len == 2 ? g_ptr_array_index (node->inputs, 1) : NULL;
      gint64 *indices;

      if (graft_node_attr_int (node, "axis", 0) != 0 || (indices = int64_input (node, 1, n_picked)) == NULL)
        return NULL;
      *scalar = indices_value->initializer->rank == 0;
      for (guint k = 0; k < *n_picked; k++)
        if ((indices[k] = indices[k] < 0 ? indices[k] + n : indices[k]) < 0 || indices[k] >= n)
          {
            g_free (indices);
            return NULL;
          }
      return indices;
    }
  if (strcmp (node->op, "onnx::Slice") != 0 || node->inputs->len < 3 || (starts = int64_input (node, 1, &n_starts)) == NULL
      || (ends = int64_input (node, 2, &n_ends)) == NULL || n_starts != 1 || n_ends != 1
      || (node->inputs->len > 3 && g_ptr_array_index (node->inputs, 3) != NULL
          && ((axes = int64_input (node, 3, &n_axes)) == NULL || n_axes != 1 || (axes[0] != 0 && axes[0] != -1)))
      || (node->inputs->len > 4 && g_ptr_array_index (node->inputs, 4) != NULL
          && ((steps = int64_input (node, 4, &n_steps)) == NULL || n_steps != 1 || steps[0] == 0)))
    return NULL;
  /* ONNX Slice: negative bounds count from the end, then clamp to
   * [0, n] going forwards and [-1, n - 1] going backwards. */
  step = steps ? steps[0] : 1;
  start = starts[0] < 0 ? starts[0] + n : starts[0];
  end = ends[0] < 0 ? ends[0] + n : ends[0];
  start = step > 0 ? CLAMP (start, 0, n) : CLAMP (start, -1, n - 1);
  end = step > 0 ? CLAMP (end, 0, n) : CLAMP (end, -1, n - 1);
  picked = g_array_new (FALSE, FALSE, sizeof (gint64));
  for (gint64 k = start; step > 0 ? k < end : k > end; k += step)
    g_array_append_val (picked, k);
  *n_picked = picked->len;
  return (gint64 *) g_array_free (picked, FALSE);
}

/* The entries of a 1-D int64 value computed from constants and the
 * shapes of values: each a fixed number or a dim of some value (symbolic
 * or unknown, never negative). NULL when it is computed otherwise. */
static GArray *
shape_vector (GraftInference *inference, GraftValue *value, guint depth)
{
  GraftNode *producer = value ? value->producer : NULL;
  g_autofree gint64 *values = NULL, *picked = NULL;
  GArray *vector = NULL;
  guint n;

  if (value == NULL || depth > 16)
    return NULL;
  if ((values = graft_edit_int64_values (value, &n)) != NULL)
    {
      vector = g_array_new (FALSE, FALSE, sizeof (GraftDim));
      for (guint k = 0; k < n; k++)
        g_array_append_val (vector, ((GraftDim) { .kind = GRAFT_DIM_FIXED, .value = values[k] }));
      return vector;
    }
  if (producer == NULL || producer->graph != value->graph || producer->inputs->len == 0)
    return NULL;
  if (strcmp (producer->op, "onnx::Shape") == 0)
    {
      const GraftDim *dims = shape_node_dims (inference, producer, &n);
      if (dims == NULL)
        return NULL;
      vector = g_array_new (FALSE, FALSE, sizeof (GraftDim));
      g_array_append_vals (vector, dims, n);
      return vector;
    }
  if (strcmp (producer->op, "onnx::Concat") == 0)
    {
      vector = g_array_new (FALSE, FALSE, sizeof (GraftDim));
      for (guint i = 0; i < producer->inputs->len; i++)
        {
          g_autoptr(GArray) part = shape_vector (inference, g_ptr_array_index (producer->inputs, i), depth + 1);
          if (part == NULL)
            {
              g_array_unref (vector);
              return NULL;
            }
          g_array_append_vals (vector, part->data, part->len);
        }
      return vector;
    }
  if (strcmp (producer->op, "onnx::Unsqueeze") == 0 || strcmp (producer->op, "onnx::Squeeze") == 0
      || (strcmp (producer->op, "onnx::Cast") == 0 && graft_node_attr_int (producer, "to", 0) == GRAFT_DTYPE_INT64))
    return shape_vector (inference, g_ptr_array_index (producer->inputs, 0), depth + 1);
  if (strcmp (producer->op, "onnx::Slice") == 0 || strcmp (producer->op, "onnx::Gather") == 0)
    {
      g_autoptr(GArray) whole = shape_vector (inference, g_ptr_array_index (producer->inputs, 0), depth + 1);
      guint n_picked;
      gboolean scalar;

      if (whole == NULL || (picked = picked_positions (producer, whole->len, &n_picked, &scalar)) == NULL)
        return NULL;
      vector = g_array_new (FALSE, FALSE, sizeof (GraftDim));
      for (guint k = 0; k < n_picked; k++)
        g_array_append_val (vector, g_array_index (whole, GraftDim, picked[k]));
      return vector;
    }
  return NULL;
}

/* Reshape to a target computed from shapes that is all fixed sizes but
 * one dim of a value: that dim is what -1 makes of the input's size, so
 * the target becomes a constant with -1 there, and the shape arithmetic
 * goes. */
static guint
fold_reshape_targets (GraftInference *inference, GraftGraph *graph)
{
  guint folded = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftValue *target = node->inputs->len == 2 ? g_ptr_array_index (node->inputs, 1) : NULL;
      g_autoptr(GArray) vector = NULL;
      g_autofree gint64 *values = NULL;
      guint n_open = 0;

      if (strcmp (node->op, "onnx::Reshape") != 0 || target == NULL || graft_edit_constant_of (target) != NULL
          || (vector = shape_vector (inference, target, 0)) == NULL)
        continue;
      values = g_new (gint64, MAX (vector->len, 1));
      for (guint k = 0; k < vector->len; k++)
        {
          GraftDim *dim = &g_array_index (vector, GraftDim, k);
          if (dim->kind == GRAFT_DIM_FIXED && dim->value < 1)
            n_open = 2;   /* a -1 or a 0 of its own */
          n_open += dim->kind != GRAFT_DIM_FIXED;
          values[k] = dim->kind == GRAFT_DIM_FIXED ? dim->value : -1;
        }
      if (n_open > 1)
        continue;
      graft_node_set_input (node, 1, graft_graph_add_int64_constant (graph, target->name, values, vector->len, FALSE));
      folded++;
    }
  return folded;
}

/* Softmax (LogSoftmax) over dims of size 1 is 1 (0) everywhere: with a
 * static shape, a constant (attention over a single token). */
static guint
fold_softmax_of_one (GraftModel *model, GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = g_ptr_array_index (node->inputs, 0), *out = g_ptr_array_index (node->outputs, 0);
  gint64 opset = graft_model_get_opset (model, "onnx");
  GraftDType dtype;
  const GraftShape *shape;
  gint64 axis, numel;
  GraftTensor *tensor;
  float *data;
  g_autoptr(GBytes) bytes = NULL;
  g_autofree gint64 *dims = NULL;

  if (!graft_edit_value_type (inference, in, &dtype, &shape) || dtype != GRAFT_DTYPE_FLOAT32 || shape == NULL
      || !graft_shape_is_fully_fixed (shape) || shape->rank < 1)
    return 0;
  axis = graft_node_attr_int (node, "axis", opset >= 13 ? -1 : 1);
  axis = axis < 0 ? axis + shape->rank : axis;
  if (axis < 0 || axis >= shape->rank)
    return 0;
  /* before opset 13 the op works on all the dims from axis on */
  for (gint64 d = axis; d < (opset >= 13 ? axis + 1 : shape->rank); d++)
    if (shape->dims[d].value != 1)
      return 0;
  dims = g_new (gint64, shape->rank);
  for (int d = 0; d < shape->rank; d++)
    dims[d] = shape->dims[d].value;
  tensor = graft_tensor_new (out->name, GRAFT_DTYPE_FLOAT32, shape->rank, dims);
  numel = graft_tensor_get_numel (tensor);
  data = g_new (float, MAX (numel, 1));
  for (gint64 k = 0; k < numel; k++)
    data[k] = strcmp (node->op, "onnx::Softmax") == 0 ? 1.0f : 0.0f;
  bytes = g_bytes_new_take (data, sizeof (float) * numel);
  graft_tensor_set_data (tensor, bytes, NULL);
  materialize (graph, out, tensor);
  return 1;
}

/* Shape and Size of a static value, the static dims a Slice or Gather
 * picks out of the Shape of a value whose other dims may be symbolic,
 * and Softmax over dims of size 1. */
static guint
fold_shapes (GraftModel *model, GraftInference *inference, GraftGraph *graph)
{
  guint folded = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftValue *in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
      GraftValue *out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
      GraftNode *shape_node = in ? in->producer : NULL;
      GraftDType dtype;
      const GraftShape *shape;
      const GraftDim *dims;
      guint n = 0, n_picked = 0;
      gboolean scalar;
      g_autofree gint64 *values = NULL, *picked = NULL;

      if (in == NULL || out == NULL)
        continue;
      if (strcmp (node->op, "onnx::Size") == 0)
        {
          if (!graft_edit_value_type (inference, in, &dtype, &shape) || shape == NULL
              || !graft_shape_is_fully_fixed (shape))
            continue;
          gint64 numel = graft_shape_get_numel (shape);
          materialize (graph, out, int64_tensor (out->name, &numel, 1, TRUE));
          folded++;
          continue;
        }
      if (strcmp (node->op, "onnx::Softmax") == 0 || strcmp (node->op, "onnx::LogSoftmax") == 0)
        {
          folded += fold_softmax_of_one (model, inference, graph, node);
          continue;
        }
      if (strcmp (node->op, "onnx::Shape") == 0)
        {
          if ((dims = shape_node_dims (inference, node, &n)) == NULL)
            continue;
          picked = g_new (gint64, MAX (n, 1));
          for (guint k = 0; k < n; k++)
            picked[k] = k;
          n_picked = n;
          scalar = FALSE;
        }
      else if (shape_node == NULL || shape_node->graph != graph || strcmp (shape_node->op, "onnx::Shape") != 0
               || (dims = shape_node_dims (inference, shape_node, &n)) == NULL
               || (picked = picked_positions (node, n, &n_picked, &scalar)) == NULL)
        continue;
      values = g_new (gint64, MAX (n_picked, 1));
      gboolean all_fixed = TRUE;
      for (guint k = 0; k < n_picked && all_fixed; k++)
        {
          all_fixed = dims[picked[k]].kind == GRAFT_DIM_FIXED;
          values[k] = dims[picked[k]].value;
        }
      if (!all_fixed)
        continue;
      materialize (graph, out, int64_tensor (out->name, values, n_picked, scalar));
      folded++;
    }
  return folded;
}

/* Identity of an initializer is that initializer: the tensor is shared
 * (tensors are never changed in place), no copy is made. */
static guint
fold_identities (GraftGraph *graph)
{
  guint folded = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftValue *in = node->inputs->len == 1 ? g_ptr_array_index (node->inputs, 0) : NULL;
      GraftValue *out = node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;

      if (strcmp (node->op, "onnx::Identity") != 0 || in == NULL || out == NULL || in->initializer == NULL
          || in->is_graph_input)
        continue;
      materialize (graph, out, graft_tensor_ref (in->initializer));
      folded++;
    }
  return folded;
}

/* A model of just the foldable nodes, giving out the boundary values. */
static GraftModel *
fold_model_new (GraftModel *model, GPtrArray *nodes, GPtrArray *boundary)
{
  GraftModel *fold = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GPtrArray *domains = graft_model_get_opset_domains (model);
  GraftGraph *graph = graft_graph_new ("fold");

  graft_model_set_ir_version (fold, graft_model_get_ir_version (model));
  for (guint i = 0; i < domains->len; i++)
    graft_model_set_opset (fold, g_ptr_array_index (domains, i),
                           graft_model_get_opset (model, g_ptr_array_index (domains, i)));
  for (guint i = 0; i < nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (nodes, i);
      GraftNode *copy = graft_graph_add_node (graph, node->domain, node->op_type, node->name);

      for (guint j = 0; j < node->attributes->len; j++)
        graft_node_add_attribute (copy, graft_attribute_copy (g_ptr_array_index (node->attributes, j), NULL));
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *in = g_ptr_array_index (node->inputs, j);
          GraftValue *mapped = in ? graft_graph_lookup_value (graph, in->name) : NULL;
          if (in != NULL && mapped == NULL)
            {
              mapped = graft_graph_ensure_value (graph, in->name);
              graft_graph_add_initializer (graph, mapped, graft_tensor_ref (in->initializer));
            }
          graft_node_add_input (copy, mapped);
        }
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *out = g_ptr_array_index (node->outputs, j);
          GraftValue *mapped = out ? graft_graph_ensure_value (graph, out->name) : NULL;
          if (mapped)
            mapped->producer = copy, mapped->producer_index = j;
          g_ptr_array_add (copy->outputs, mapped);
        }
    }
  for (guint i = 0; i < boundary->len; i++)
    graft_graph_add_output (graph, graft_graph_lookup_value (graph, ((GraftValue *) g_ptr_array_index (boundary, i))->name));
  graft_model_set_graph (fold, graph);
  return fold;
}

static gboolean
has_outside_use (GraftValue *value, GHashTable *foldable)
{
  if (value->is_graph_output)
    return TRUE;
  for (guint i = 0; i < value->consumers->len; i++)
    if (!g_hash_table_contains (foldable, g_ptr_array_index (value->consumers, i)))
      return TRUE;
  return FALSE;
}

/* Runs what is constant; returns the number of nodes folded, -1 on error. */
static gint
fold_constants_once (GraftModel *model, GraftGraph *graph, gsize max_bytes, GPtrArray *notes, GError **error)
{
  g_autoptr(GHashTable) folded_values = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) foldable = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) nodes = g_ptr_array_new ();
  g_autoptr(GPtrArray) boundary = g_ptr_array_new ();
  g_autoptr(GraftModel) fold = NULL;
  g_autoptr(GraftRuntime) runtime = NULL;
  g_autoptr(GPtrArray) results = NULL;
  g_autoptr(GHashTable) no_inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) local_error = NULL;
  guint materialized = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (!can_fold (model, node, folded_values))
        continue;
      g_hash_table_add (foldable, node);
      g_ptr_array_add (nodes, node);
      for (guint j = 0; j < node->outputs->len; j++)
        if (g_ptr_array_index (node->outputs, j) != NULL)
          g_hash_table_add (folded_values, g_ptr_array_index (node->outputs, j));
    }
  for (guint i = 0; i < nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (nodes, i);
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *out = g_ptr_array_index (node->outputs, j);
          if (out != NULL && has_outside_use (out, foldable))
            g_ptr_array_add (boundary, out);
        }
    }
  if (boundary->len == 0)
    return 0;
  fold = fold_model_new (model, nodes, boundary);
  if ((runtime = graft_runtime_new (fold, &local_error)) == NULL
      || (results = graft_runtime_run (runtime, no_inputs, NULL, NULL, NULL, &local_error)) == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED, "running the %u constant nodes failed: %s",
                   nodes->len, local_error->message);
      return -1;
    }
  for (guint i = 0; i < boundary->len; i++)
    {
      GraftValue *value = g_ptr_array_index (boundary, i);
      GraftRtTensor *result = g_ptr_array_index (results, i);

      if (result == NULL || result->kind != GRAFT_RT_TENSOR || result->nbytes > max_bytes)
        {
          if (result != NULL && result->nbytes > max_bytes)
            g_ptr_array_add (notes, g_strdup_printf ("'%s' is left computed: %" G_GSIZE_FORMAT " bytes of data, "
                                                     "more than %" G_GSIZE_FORMAT, value->name, result->nbytes,
                                                     max_bytes));
          continue;
        }
      materialize (graph, value, graft_rt_tensor_to_tensor (result, value->name));
      materialized++;
    }
  return materialized ? graft_graph_prune (graph) : 0;
}

/* The nodes computing value from constants alone, in order, into nodes
 * (folded: their outputs); FALSE if an input or an unfoldable op is on
 * the way. */
static gboolean
gather_constant_producers (GraftModel *model, GraftValue *value, GHashTable *folded, GPtrArray *nodes)
{
  if (value == NULL || is_constant (value, folded))
    return TRUE;
  GraftNode *producer = value->producer;
  if (producer == NULL || value->is_graph_input || nodes->len >= 4096)
    return FALSE;
  for (guint i = 0; i < producer->inputs->len; i++)
    if (!gather_constant_producers (model, g_ptr_array_index (producer->inputs, i), folded, nodes))
      return FALSE;
  if (!can_fold (model, producer, folded))
    return FALSE;
  for (guint j = 0; j < producer->outputs->len; j++)
    if (g_ptr_array_index (producer->outputs, j) != NULL)
      g_hash_table_add (folded, g_ptr_array_index (producer->outputs, j));
  g_ptr_array_add (nodes, producer);
  return TRUE;
}

GraftTensor *
graft_edit_evaluate_constant (GraftModel *model, GraftValue *value, gsize max_bytes)
{
  g_autoptr(GHashTable) folded = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) nodes = g_ptr_array_new ();
  if (value == NULL || value->producer == NULL || !gather_constant_producers (model, value, folded, nodes))
    return NULL;
  g_autoptr(GPtrArray) boundary = g_ptr_array_new ();
  g_ptr_array_add (boundary, value);
  g_autoptr(GraftModel) fold = fold_model_new (model, nodes, boundary);
  g_autoptr(GraftRuntime) runtime = graft_runtime_new (fold, NULL);
  g_autoptr(GHashTable) no_inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) results = runtime ? graft_runtime_run (runtime, no_inputs, NULL, NULL, NULL, NULL) : NULL;
  GraftRtTensor *result = results && results->len == 1 ? g_ptr_array_index (results, 0) : NULL;
  if (result == NULL || result->kind != GRAFT_RT_TENSOR || result->nbytes > max_bytes)
    return NULL;
  return graft_rt_tensor_to_tensor (result, value->name);
}

/* Inside If/Loop/Scan bodies, what is computed from constants alone (the
 * body's Constant nodes and initializers, the enclosing graphs'
 * initializers) is the same at every run of the body: it is folded there
 * too, into the body's initializers. Only that: Shape of a body value is
 * left alone, as a Loop's carried values may change shape between
 * iterations. */
static gboolean
fold_in_bodies (GraftModel *model, GraftGraph *graph, gsize max_bytes, GPtrArray *notes, GError **error)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (g_ptr_array_index (graph->nodes, i));

      for (guint j = 0; bodies != NULL && j < bodies->len; j++)
        {
          GraftGraph *body = g_ptr_array_index (bodies, j);
          guint before = body->nodes->len;
          gint n_nodes = 1;

          for (guint pass = 0; pass < 16 && n_nodes > 0; pass++)
            if ((n_nodes = fold_constants_once (model, body, max_bytes, notes, error)) < 0)
              return FALSE;
          if (body->nodes->len != before)
            {
              g_autofree char *where = graft_edit_describe_graph (body);
              g_ptr_array_add (notes, g_strdup_printf ("%s: %u → %u nodes", where, before, body->nodes->len));
            }
          if (!fold_in_bodies (model, body, max_bytes, notes, error))
            return FALSE;
        }
    }
  return TRUE;
}

static gboolean
fold_constants (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  guint before = graph->nodes->len, shapes = 0;
  gint64 max_bytes = graft_edit_param_int (params, "max_bytes", FOLD_MAX_BYTES);

  if (scope->graph != graft_model_get_graph (scope->model))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "constants are folded from the main graph, which folds inside If/Loop/Scan bodies too");
      return FALSE;
    }
  for (guint pass = 0; pass < 16; pass++)
    {
      guint n_shapes;
      gint n_nodes;

      if (fold_identities (graph) > 0)
        graft_graph_prune (graph);
      g_autoptr(GraftInference) inference = graft_edit_infer (scope->model);

      n_shapes = fold_shapes (scope->model, inference, graph) + fold_reshape_targets (inference, graph);
      if (n_shapes > 0)
        graft_graph_prune (graph);
      shapes += n_shapes;
      if ((n_nodes = fold_constants_once (scope->model, graph, MAX (max_bytes, 0), notes, error)) < 0)
        return FALSE;
      if (n_shapes == 0 && n_nodes == 0)
        break;
    }
  g_ptr_array_add (notes, g_strdup_printf ("%u → %u nodes (%u Shape/Size of static shapes)", before,
                                           graph->nodes->len, shapes));
  if (!fold_in_bodies (scope->model, graph, MAX (max_bytes, 0), notes, error))
    return FALSE;
  /* An initializer only a body's folded nodes read is unused now. */
  graft_graph_prune (graph);
  return TRUE;
}

/* Identity, and Dropout at inference (no mask used, not in training mode):
 * their consumers read the input instead. */
static gboolean
is_pass_through (GraftNode *node)
{
  GraftValue *mask = node->outputs->len > 1 ? g_ptr_array_index (node->outputs, 1) : NULL;
  GraftValue *training = node->inputs->len > 2 ? g_ptr_array_index (node->inputs, 2) : NULL;

  if (node->inputs->len < 1 || node->outputs->len < 1 || g_ptr_array_index (node->inputs, 0) == NULL
      || g_ptr_array_index (node->outputs, 0) == NULL)
    return FALSE;
  if (strcmp (node->op, "onnx::Identity") == 0)
    return TRUE;
  return strcmp (node->op, "onnx::Dropout") == 0 && (mask == NULL || (mask->consumers->len == 0 && !mask->is_graph_output))
         && training == NULL;
}

static guint
hash_tensor (GraftTensor *tensor, GBytes *data)
{
  /* The head of the data is enough to tell most weights apart; equal
   * hashes are compared in full. */
  gsize size;
  const guint8 *bytes = g_bytes_get_data (data, &size);
  guint hash = (guint) size ^ (guint) tensor->dtype ^ ((guint) tensor->rank << 8);

  for (gsize i = 0; i < MIN (size, 256); i++)
    hash = hash * 33 + bytes[i];

  for (int i = 0; i < tensor->rank; i++)
    hash = hash * 31 + (guint) tensor->dims[i];
  return hash;
}

static gboolean
same_tensor (GraftTensor *a, GBytes *a_data, GraftTensor *b, GBytes *b_data)
{
  if (a == b)
    return TRUE;
  /* a scalar's dims may be NULL, which memcmp must not get even for 0 bytes */
  return a->dtype == b->dtype && a->rank == b->rank
         && (a->rank == 0 || memcmp (a->dims, b->dims, sizeof (gint64) * a->rank) == 0)
         && g_bytes_equal (a_data, b_data);
}

/* Initializers with the same dtype, shape and bytes become one. */
static guint
merge_duplicate_initializers (GraftGraph *graph)
{
  g_autoptr(GHashTable) by_hash = g_hash_table_new (NULL, NULL);   /* hash → GSList of GraftValue* */
  GHashTableIter iter;
  gpointer list_data;
  guint merged = 0;

  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->initializers, i);
      GBytes *data = value->initializer->dtype != GRAFT_DTYPE_STRING ? graft_tensor_get_data (value->initializer, NULL)
                                                                     : NULL;
      gpointer key;
      GSList *list;
      GraftValue *same = NULL;

      /* A parameter or buffer of a torch.export program (it has a spec)
       * is an entry of the module's state dict, not a constant of the
       * graph: stored once, it would lose its name, and a buffer would
       * turn into a parameter. */
      if (data == NULL || value->is_graph_input || value->is_graph_output || value->exported_json != NULL)
        continue;
      key = GUINT_TO_POINTER (hash_tensor (value->initializer, data));
      list = g_hash_table_lookup (by_hash, key);
      for (GSList *l = list; l != NULL && same == NULL; l = l->next)
        {
          GraftValue *other = l->data;
          if (same_tensor (other->initializer, graft_tensor_get_data (other->initializer, NULL), value->initializer, data))
            same = other;
        }
      if (same != NULL)
        {
          graft_graph_replace_uses (graph, value, same);
          merged++;
          continue;
        }
      list = g_slist_prepend (list, value);
      g_hash_table_insert (by_hash, key, list);
    }
  g_hash_table_iter_init (&iter, by_hash);
  while (g_hash_table_iter_next (&iter, NULL, &list_data))
    g_slist_free (list_data);
  return merged;
}

guint
graft_edit_bypass_pass_through (GraftGraph *graph)
{
  guint passed = 0;

  for (guint i = graph->nodes->len; i > 0; i--)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i - 1);
      if (is_pass_through (node) && graft_graph_bypass (graph, node, 0))
        passed++;
    }
  return passed;
}

guint
graft_edit_merge_duplicate_initializers (GraftGraph *graph)
{
  return merge_duplicate_initializers (graph);
}

guint
graft_edit_remove_dead (GraftGraph *graph, GPtrArray *notes)
{
  guint pruned = graft_graph_prune (graph);

  /* Initializers ONNX lists as inputs too, when nothing reads them. */
  for (guint i = graph->inputs->len; i > 0; i--)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i - 1);
      if (input->initializer != NULL && input->consumers->len == 0 && !input->is_graph_output)
        {
          input->is_graph_input = FALSE;
          graft_graph_remove_value (graph, input);
        }
      else if (notes != NULL && input->initializer == NULL && input->consumers->len == 0 && !input->is_graph_output)
        g_ptr_array_add (notes, g_strdup_printf ("input '%s' is unused; it stays, as it is part of the interface "
                                                 "(remove-input removes it)", input->name));
    }
  return pruned;
}

static gboolean
cleanup (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  guint before = graph->nodes->len, initializers = graph->initializers->len, passed, merged, pruned, simplified;
  g_autoptr(GraftInference) inference = NULL;

  passed = graft_edit_bypass_pass_through (graph);
  inference = graft_edit_infer (scope->model);
  simplified = graft_edit_simplify (inference, graph);
  merged = merge_duplicate_initializers (graph);
  pruned = graft_edit_remove_dead (graph, notes);
  g_ptr_array_add (notes, g_strdup_printf ("%u → %u nodes: %u Identity/Dropout, %u simplified (neutral arithmetic, "
                                           "no-op ops, reshape chains), %u dead; %u → %u initializers (%u duplicates "
                                           "merged)", before, graph->nodes->len, passed, simplified, pruned,
                                           initializers, graph->initializers->len, merged));
  return TRUE;
}

static void
collect_outer_read (GraftNode *inner, gpointer data)
{
  gpointer *pair = data;
  GraftGraph *graph = pair[0];
  GPtrArray *reads = pair[1];

  for (guint i = 0; i < inner->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (inner->inputs, i);
      if (in != NULL && in->graph == graph)
        g_ptr_array_add (reads, in);
    }
}

/* The values node reads from its graph: its inputs and its subgraphs'
 * outer-scope reads. */
static GPtrArray *
node_reads (GraftNode *node)
{
  GPtrArray *reads = g_ptr_array_new ();
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  for (guint i = 0; i < node->inputs->len; i++)
    if (g_ptr_array_index (node->inputs, i) != NULL)
      g_ptr_array_add (reads, g_ptr_array_index (node->inputs, i));
  for (guint i = 0; i < subgraphs->len; i++)
    {
      gpointer pair[2] = { node->graph, reads };
      graft_graph_foreach_node_recursive (g_ptr_array_index (subgraphs, i), collect_outer_read, pair);
    }
  return reads;
}

gboolean
graft_edit_toposort (GraftGraph *graph, GError **error)
{
  guint n = graph->nodes->len;
  g_autofree guint8 *state = g_new0 (guint8, n);   /* 0 new, 1 on the stack, 2 placed */
  g_autoptr(GPtrArray) order = g_ptr_array_sized_new (n);
  g_autoptr(GPtrArray) stack = g_ptr_array_new ();
  g_autoptr(GArray) cursor = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GPtrArray) reads_of = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  gboolean moved = FALSE;

  for (guint i = 0; i < n; i++)
    g_ptr_array_add (reads_of, node_reads (g_ptr_array_index (graph->nodes, i)));
  for (guint start = 0; start < n; start++)
    {
      if (state[start] != 0)
        continue;
      g_ptr_array_add (stack, g_ptr_array_index (graph->nodes, start));
      g_array_append_val (cursor, (guint) { 0 });
      state[start] = 1;
      while (stack->len > 0)
        {
          GraftNode *node = g_ptr_array_index (stack, stack->len - 1);
          guint *next = &g_array_index (cursor, guint, cursor->len - 1);
          GPtrArray *reads = g_ptr_array_index (reads_of, node->index);
          GraftNode *dependency = NULL;

          while (*next < reads->len && dependency == NULL)
            {
              GraftValue *in = g_ptr_array_index (reads, (*next)++);
              GraftNode *producer = in->producer;
              if (producer != NULL && producer->graph == graph && state[producer->index] != 2)
                dependency = producer;
            }
          if (dependency == NULL)
            {
              state[node->index] = 2;
              g_ptr_array_add (order, node);
              g_ptr_array_set_size (stack, stack->len - 1);
              g_array_set_size (cursor, cursor->len - 1);
              continue;
            }
          if (state[dependency->index] == 1)
            {
              g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                           "the graph has a cycle through '%s' (%s)", dependency->name, dependency->op);
              return FALSE;
            }
          state[dependency->index] = 1;
          g_ptr_array_add (stack, dependency);
          g_array_append_val (cursor, (guint) { 0 });
        }
    }
  for (guint i = 0; i < n; i++)
    moved |= g_ptr_array_index (order, i) != g_ptr_array_index (graph->nodes, i);
  if (!moved)
    return TRUE;
  /* graph->nodes owns the nodes: swap the pointers without freeing them. */
  for (guint i = 0; i < n; i++)
    {
      GraftNode *node = g_ptr_array_index (order, i);
      graph->nodes->pdata[i] = node;
      node->index = i;
    }
  return TRUE;
}

static gboolean
toposort (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return graft_edit_toposort (scope->graph, error);
}

static char *
describe_fold (GVariant *params)
{
  return g_strdup ("Fold constants");
}

static char *
describe_cleanup (GVariant *params)
{
  return g_strdup ("Clean up");
}

static char *
describe_toposort (GVariant *params)
{
  return g_strdup ("Sort nodes topologically");
}

const GraftEditOperation graft_edit_ops_fold[] = {
  { .id = "fold-constants", .node_params = "", .value_params = "", .apply = fold_constants, .describe = describe_fold,
    .option = "--fold",
    .help = "fold constants (and Shape of static shapes) in Graft's runtime (results over --fold-max-bytes N stay "
            "computed; default 64 MiB)" },
  { .id = "cleanup", .node_params = "", .value_params = "", .apply = cleanup, .describe = describe_cleanup,
    .option = "--cleanup",
    .help = "remove dead nodes, Identity/Dropout, unused and duplicate initializers" },
  { .id = "toposort", .node_params = "", .value_params = "", .apply = toposort, .describe = describe_toposort,
    .option = "--toposort",
    .help = "sort nodes topologically" },
  { NULL },
};
