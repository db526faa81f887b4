#include "analysis/baked-shape.h"
#include "analysis/shape-inference.h"
#include "analysis/sym-dim.h"
#include "runtime/op.h"

#include <string.h>

GraftTensor *
graft_value_get_constant (GraftValue *value)
{
  GraftAttribute *attribute;

  if (value == NULL)
    return NULL;
  if (value->initializer != NULL)
    return value->initializer;
  if (value->producer != NULL && value->producer->op == g_intern_static_string ("onnx::Constant")
      && (attribute = graft_node_get_attribute (value->producer, "value")) != NULL)
    return attribute->t;
  return NULL;
}

gint64
graft_tensor_get_int (GraftTensor *tensor, gint64 index)
{
  GBytes *bytes = graft_tensor_get_data (tensor, NULL);
  gsize size = graft_dtype_get_size (tensor->dtype);
  const guint8 *p;
  guint64 v = 0;

  if (bytes == NULL || size == 0 || size > 8 || (gsize) (index + 1) * size > g_bytes_get_size (bytes))
    return 0;
  p = (const guint8 *) g_bytes_get_data (bytes, NULL) + index * size;
  for (gsize b = 0; b < size; b++)
    v |= (guint64) p[b] << (8 * b);
  /* Sign-extend the signed types. */
  if (size < 8 && (tensor->dtype == GRAFT_DTYPE_INT8 || tensor->dtype == GRAFT_DTYPE_INT16
                   || tensor->dtype == GRAFT_DTYPE_INT32) && (v >> (8 * size - 1)) & 1)
    v |= ~(guint64) 0 << (8 * size);
  return (gint64) v;
}

char *
graft_tensor_format_ints (GraftTensor *tensor)
{
  GString *out = g_string_new ("[");
  gint64 n = graft_tensor_get_numel (tensor);

  for (gint64 i = 0; i < n && i < 16; i++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? ", " : "", graft_tensor_get_int (tensor, i));
  g_string_append (out, n > 16 ? ", …]" : "]");
  return g_string_free (out, FALSE);
}

gboolean
graft_dim_mentions (const GraftDim *dim, const char *symbol)
{
  g_auto(GStrv) parts = NULL;

  if (dim->kind != GRAFT_DIM_SYMBOLIC || dim->symbol == NULL)
    return FALSE;
  parts = g_strsplit (dim->symbol, "*", -1);
  return g_strv_contains ((const char *const *) parts, symbol);
}

static const GraftShape *
probed_shape (GraftValue *value)
{
  if (value == NULL)
    return NULL;
  return value->has_inferred ? &value->inferred_shape : &value->shape;
}

static gboolean
carries_probe (GraftValue *value)
{
  const GraftShape *shape = probed_shape (value);

  for (int i = 0; shape && i < shape->rank; i++)
    if (graft_dim_mentions (&shape->dims[i], GRAFT_PROBE_SYMBOL))
      return TRUE;
  return FALSE;
}

static gboolean
probe_at (GraftValue *value, gint64 axis)
{
  const GraftShape *shape = probed_shape (value);

  if (shape == NULL || shape->rank < 0)
    return FALSE;
  if (axis < 0)
    axis += shape->rank;
  return axis >= 0 && axis < shape->rank && graft_dim_mentions (&shape->dims[axis], GRAFT_PROBE_SYMBOL);
}

static gboolean
consumers_carry_probe (GraftValue *value)
{
  for (guint i = 0; value && i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      for (guint j = 0; j < consumer->inputs->len; j++)
        {
          GraftValue *other = g_ptr_array_index (consumer->inputs, j);
          if (other != value && carries_probe (other))
            return TRUE;
        }
    }
  return FALSE;
}

/* TRUE if value, within a few nodes downstream, meets a value carrying
 * the probe at the same node (arange(seq) → Cast → Unsqueeze → + x). */
static gboolean
meets_probe_downstream (GraftValue *value, int depth)
{
  if (value == NULL || depth <= 0)
    return FALSE;
  if (consumers_carry_probe (value))
    return TRUE;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      for (guint j = 0; j < consumer->outputs->len; j++)
        if (meets_probe_downstream (g_ptr_array_index (consumer->outputs, j), depth - 1))
          return TRUE;
    }
  return FALSE;
}

static void
add_matches (GPtrArray *found, GraftNode *node, guint shape_input, gint64 traced, GraftValue *input, int axis,
             gboolean (*relevant) (GraftNode *node, guint element, gpointer data), gpointer data)
{
  GraftValue *constant = shape_input < node->inputs->len ? g_ptr_array_index (node->inputs, shape_input) : NULL;
  GraftTensor *tensor = graft_value_get_constant (constant);
  gint64 n;

  if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || (n = graft_tensor_get_numel (tensor)) > 64)
    return;
  for (gint64 e = 0; e < n; e++)
    if (graft_tensor_get_int (tensor, e) == traced
        && (relevant == NULL || relevant (node, e, data)))
      {
        GraftBakedShape *baked = g_new0 (GraftBakedShape, 1);

        baked->node = node;
        baked->shape_input = shape_input;
        baked->constant = constant;
        baked->element = e;
        baked->traced = traced;
        baked->multiplier = 1;
        baked->input = input;
        baked->axis = axis;
        g_ptr_array_add (found, baked);
      }
}

/* Slice: the element is an end (or start) on an axis that carries the probe. */
static gboolean
slice_relevant (GraftNode *node, guint element, gpointer data)
{
  GraftValue *axes_value = node->inputs->len > 3 ? g_ptr_array_index (node->inputs, 3) : NULL;
  GraftTensor *axes = graft_value_get_constant (axes_value);
  gint64 axis = element;

  if (axes_value != NULL)
    {
      if (axes == NULL || element >= graft_tensor_get_numel (axes))
        return FALSE;
      axis = graft_tensor_get_int (axes, element);
    }
  return probe_at (g_ptr_array_index (node->inputs, 0), axis);
}

/* Trace-time data and output shapes of a Reshape. */
typedef struct {
  GraftShape in, out;
} StaticIO;

static void
static_io_free (gpointer data)
{
  StaticIO *io = data;

  graft_shape_clear (&io->in);
  graft_shape_clear (&io->out);
  g_free (io);
}

static gint64
fixed_product (const GraftShape *shape, int end)
{
  gint64 product = 1;

  for (int i = 0; i < end; i++)
    if (!graft_dim_mul_checked (product, shape->dims[i].value, &product))
      return -1;   /* no real tensor: matches no extent */
  return product;
}

/* The output element of a split/merge reshape whose extent contains input
 * dim d, or -1. */
static int
containing_element (const StaticIO *io, int d)
{
  gint64 start = fixed_product (&io->in, d), end = fixed_product (&io->in, d + 1);

  for (int e = 0; e < io->out.rank; e++)
    if (fixed_product (&io->out, e) <= start && end <= fixed_product (&io->out, e + 1)
        && (end == start || fixed_product (&io->out, e + 1) > start))
      return e;
  return -1;
}

/* When Reshape splits input dim d (seq × batch → seq, batch), the output
 * element of that split whose constant is a multiple of the traced value;
 * -1 when none is. When several are (batch × heads = 2 × 4 → [2, 4], where
 * 4 is 2 × 2 too) the outermost or innermost one, and *ambiguous is set:
 * that is a preference, not a proof; the edit verifies the result at other
 * sizes and reads the node the other way if it fails there. */
static int
split_element (const StaticIO *io, int d, GraftTensor *tensor, gint64 traced, gboolean innermost,
               gboolean *ambiguous)
{
  gint64 start = fixed_product (&io->in, d), end = fixed_product (&io->in, d + 1);
  int found = -1;

  for (int e = 0; e < io->out.rank; e++)
    {
      gint64 value = graft_tensor_get_int (tensor, e);

      if (fixed_product (&io->out, e) < start || fixed_product (&io->out, e + 1) > end
          || io->out.dims[e].value == 1 || value <= 0 || value % traced != 0)
        continue;
      if (found >= 0)
        *ambiguous = TRUE;
      if (found < 0 || innermost)
        found = e;
    }
  return found;
}

static void
add_baked (GPtrArray *found, GraftNode *node, guint shape_input, guint element, gint64 traced, gint64 multiplier,
           GraftValue *input, int axis)
{
  GraftBakedShape *baked = g_new0 (GraftBakedShape, 1);

  baked->node = node;
  baked->shape_input = shape_input;
  baked->constant = g_ptr_array_index (node->inputs, shape_input);
  baked->element = element;
  baked->traced = traced;
  baked->multiplier = multiplier;
  baked->input = input;
  baked->axis = axis;
  g_ptr_array_add (found, baked);
}

static void
find_in_reshape (GPtrArray *found, GraftNode *node, const StaticIO *io, gint64 traced, GraftValue *input, int axis,
                 GraftSplitReadings *readings)
{
  GraftValue *data = g_ptr_array_index (node->inputs, 0);
  GraftTensor *tensor = node->inputs->len > 1 ? graft_value_get_constant (g_ptr_array_index (node->inputs, 1)) : NULL;
  const GraftShape *probed = probed_shape (data);

  if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || probed == NULL || probed->rank != io->in.rank
      || graft_tensor_get_numel (tensor) != io->out.rank)
    return;
  for (int d = 0; d < probed->rank; d++)
    {
      int e;
      gint64 value;

      if (!graft_dim_mentions (&probed->dims[d], GRAFT_PROBE_SYMBOL))
        continue;
      gboolean innermost = readings != NULL && readings->innermost != NULL
                           && g_hash_table_contains (readings->innermost, GUINT_TO_POINTER (node->index + 1));
      gboolean ambiguous = FALSE;

      if ((e = containing_element (io, d)) < 0
          && (e = split_element (io, d, tensor, traced, innermost, &ambiguous)) < 0)
        continue;
      if (ambiguous && readings != NULL && readings->ambiguous != NULL)
        g_array_append_val (readings->ambiguous, node->index);
      value = graft_tensor_get_int (tensor, e);
      /* -1 is computed and 0 copies: neither is baked. */
      if (value <= 0 || value != io->out.dims[e].value || value % traced != 0)
        continue;
      add_baked (found, node, 1, e, traced, value / traced, input, axis);
      return;
    }
}

/* The axis along which tensor is arange(traced) (every other dim 1), or -1:
 * position ids folded into a constant at export. */
static int
arange_axis (GraftTensor *tensor, gint64 traced)
{
  int axis = -1;

  if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || graft_tensor_get_numel (tensor) != traced)
    return -1;
  for (int k = 0; k < tensor->rank; k++)
    if (tensor->dims[k] == traced && axis < 0)
      axis = k;
    else if (tensor->dims[k] != 1)
      return -1;
  for (gint64 i = 0; axis >= 0 && i < traced; i++)
    if (graft_tensor_get_int (tensor, i) != i)
      return -1;
  return axis;
}

/* Constants counting 0 .. traced - 1 that a node reads while none of its
 * inputs carries the dim but its result meets it downstream: positions
 * looked up in a table (Gather(table, arange)), the two ranges a causal
 * mask compares (LessOrEqual). */
static void
find_aranges (GPtrArray *found, GraftNode *node, gint64 traced, GraftValue *input, int axis)
{
  if (node->outputs->len == 0 || g_ptr_array_index (node->outputs, 0) == NULL)
    return;
  for (guint i = 0; i < node->inputs->len; i++)
    if (carries_probe (g_ptr_array_index (node->inputs, i)))
      return;
  if (node->op == g_intern_static_string ("onnx::Gather") && graft_node_attr_int (node, "axis", 0) != 0)
    return;
  if (!meets_probe_downstream (g_ptr_array_index (node->outputs, 0), 4))
    return;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      int e = arange_axis (graft_value_get_constant (g_ptr_array_index (node->inputs, i)), traced);

      /* Gather's data is a table, not positions. */
      if (e >= 0 && !(node->op == g_intern_static_string ("onnx::Gather") && i == 0))
        {
          add_baked (found, node, i, e, traced, 1, input, axis);
          ((GraftBakedShape *) g_ptr_array_index (found, found->len - 1))->arange = TRUE;
        }
    }
}

static void
find_in_node (GPtrArray *found, GraftNode *node, GHashTable *static_io, gint64 traced, GraftValue *input, int axis,
              GraftSplitReadings *readings)
{
  GraftValue *data = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  const char *op = node->op;
  StaticIO *io;

  if (op == g_intern_static_string ("onnx::Reshape") && (io = g_hash_table_lookup (static_io, node)) != NULL)
    find_in_reshape (found, node, io, traced, input, axis, readings);
  else if (op == g_intern_static_string ("onnx::Reshape"))
    {
      if (carries_probe (data))
        add_matches (found, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Expand") || op == g_intern_static_string ("onnx::Tile"))
    {
      /* Its data, or what its result meets (a causal mask expanded, or a
       * learned row tiled, to the batch, then applied to the activations). */
      if (carries_probe (data) || (node->outputs->len > 0 && meets_probe_downstream (g_ptr_array_index (node->outputs, 0), 2)))
        add_matches (found, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::ConstantOfShape"))
    {
      if (node->outputs->len > 0 && consumers_carry_probe (g_ptr_array_index (node->outputs, 0)))
        add_matches (found, node, 0, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Range") && node->inputs->len >= 2)
    {
      /* arange(traced size): its limit, when what it counts meets the dim. */
      if (node->outputs->len > 0 && meets_probe_downstream (g_ptr_array_index (node->outputs, 0), 4))
        add_matches (found, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Slice") && node->inputs->len >= 3)
    add_matches (found, node, 2, traced, input, axis, slice_relevant, NULL);
  else
    find_aranges (found, node, traced, input, axis);
}

typedef struct {
  GraftValue *input;
  int axis;
  GraftDim dim;
} SavedDim;

/* A size no real model traces with, so that it is never taken for one. */
#define STAND_IN_SIZE 7919

static GArray *
fix_symbolic_inputs (GraftGraph *graph)
{
  GArray *saved = g_array_new (FALSE, FALSE, sizeof (SavedDim));

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      for (int d = 0; d < input->shape.rank; d++)
        if (input->shape.dims[d].kind != GRAFT_DIM_FIXED)
          {
            SavedDim s = { input, d, input->shape.dims[d] };
            g_array_append_val (saved, s);
            input->shape.dims[d] = graft_dim_fixed (STAND_IN_SIZE);
          }
    }
  return saved;
}

static void
restore_symbolic_inputs (GraftGraph *graph, GArray *saved)
{
  for (guint i = 0; i < saved->len; i++)
    {
      SavedDim *s = &g_array_index (saved, SavedDim, i);
      s->input->shape.dims[s->axis] = s->dim;
    }
}

typedef struct {
  GPtrArray *found;
  GHashTable *found_nodes;  /* GraftNode* set: nodes already in found */
  GHashTable *static_io;
  gint64 traced;
  GraftValue *input;
  int axis;
  GraftSplitReadings *readings;
} Probe;

/* Looks for a baked constant at node; a Reshape/Expand/Tile/ConstantOfShape
 * found is from then on treated as repaired (its output dim carries the
 * probe), so that what comes after it can be seen. */
static void
probe_node (GraftNode *node, GHashTable *overrides, gpointer user_data)
{
  Probe *probe = user_data;
  guint first = probe->found->len;
  GArray *elements;
  GraftBakedShape *baked;
  GraftShapeOverride o;

  if (g_hash_table_contains (probe->found_nodes, node))
    return;
  find_in_node (probe->found, node, probe->static_io, probe->traced, probe->input, probe->axis, probe->readings);
  if (probe->found->len == first)
    return;
  g_hash_table_add (probe->found_nodes, node);
  if (node->op == g_intern_static_string ("onnx::Slice"))
    return;
  elements = g_array_new (FALSE, FALSE, sizeof (GraftShapeOverride));
  /* The first match is the likeliest to be the dim itself. */
  baked = g_ptr_array_index (probe->found, first);
  o = (GraftShapeOverride) { baked->element, graft_dim_multiply (graft_dim_symbolic (GRAFT_PROBE_SYMBOL),
                                                                  graft_dim_fixed (baked->multiplier)) };
  g_array_append_val (elements, o);
  g_hash_table_insert (overrides, node, elements);
}

static int
compare_by_position (gconstpointer a, gconstpointer b)
{
  const GraftBakedShape *x = *(GraftBakedShape **) a, *y = *(GraftBakedShape **) b;

  if (x->node->index != y->node->index)
    return x->node->index < y->node->index ? -1 : 1;
  return (int) x->element - (int) y->element;
}

GPtrArray *
graft_find_baked_shapes (GraftModel *model, GraftValue *input, int axis)
{
  return graft_find_baked_shapes_read (model, input, axis, NULL);
}

GPtrArray *
graft_find_baked_shapes_read (GraftModel *model, GraftValue *input, int axis, GraftSplitReadings *readings)
{
  GPtrArray *found = g_ptr_array_new_with_free_func (g_free);
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) overrides = NULL;
  g_autoptr(GHashTable) static_io = NULL;
  g_autoptr(GArray) symbolic = NULL;
  g_autoptr(GHashTable) found_nodes = NULL;
  Probe probe;
  GraftDim saved;
  gint64 traced;
  guint before;

  if (graph == NULL || input->shape.rank <= axis || axis < 0 || input->shape.dims[axis].kind != GRAFT_DIM_FIXED)
    return found;
  saved = input->shape.dims[axis];
  traced = saved.value;
  if (traced <= 0)
    return found;

  /* Trace-time shapes around every Reshape, to map dims through it. Dims
   * already made dynamic get a stand-in size: only extents matter here. */
  static_io = g_hash_table_new_full (NULL, NULL, NULL, static_io_free);
  symbolic = fix_symbolic_inputs (graph);
  graft_shape_inference_run (model, NULL);
  restore_symbolic_inputs (graph, symbolic);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftValue *in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
      GraftValue *out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
      StaticIO *io;

      if (node->op != g_intern_static_string ("onnx::Reshape") || in == NULL || out == NULL || !out->has_inferred
          || !graft_shape_is_fully_fixed (probed_shape (in)) || !graft_shape_is_fully_fixed (&out->inferred_shape))
        continue;
      io = g_new0 (StaticIO, 1);
      graft_shape_copy (&io->in, probed_shape (in));
      graft_shape_copy (&io->out, &out->inferred_shape);
      g_hash_table_insert (static_io, node, io);
    }

  input->shape.dims[axis] = graft_dim_symbolic (GRAFT_PROBE_SYMBOL);
  overrides = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_array_unref);

  /* A baked Reshape hides the probe from everything after it: each one
   * found is treated as repaired, and the search goes on until nothing new
   * turns up. Probing during inference sees a chain of them (one per
   * transformer layer) in one run; the scan after it catches what depends
   * on values inferred later (ConstantOfShape looks at its consumers). */
  found_nodes = g_hash_table_new (NULL, NULL);
  probe = (Probe) { found, found_nodes, static_io, traced, input, axis, readings };
  do
    {
      before = found->len;
      graft_shape_inference_run_with_hook (model, overrides, probe_node, &probe);
      for (guint i = 0; i < graph->nodes->len; i++)
        probe_node (g_ptr_array_index (graph->nodes, i), overrides, &probe);
    }
  while (found->len > before && found->len < 100000);

  g_ptr_array_sort (found, compare_by_position);
  input->shape.dims[axis] = saved;
  return found;
}
