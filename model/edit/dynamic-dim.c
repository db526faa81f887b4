/* Making an input dimension dynamic (or fixing an input's shape) and
 * repairing the shape constants a trace froze. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "analysis/baked-shape.h"
#include "analysis/shape-inference.h"
#include "ir/sym-dim.h"

#include <string.h>

static gint64 *
constant_values (GraftTensor *tensor, guint *n)
{
  gint64 count = graft_tensor_get_numel (tensor);
  gint64 *values = g_new (gint64, MAX (count, 1));

  for (gint64 i = 0; i < count; i++)
    values[i] = graft_tensor_get_int (tensor, i);
  *n = count;
  return values;
}

static char *
format_ints (const gint64 *values, guint n)
{
  GString *out = g_string_new ("[");

  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? ", " : "", values[i]);
  g_string_append_c (out, ']');
  return g_string_free (out, FALSE);
}

/* Shape inference as the repairs go: with a session, node by node in
 * graph order (a repair at node N only needs N and what comes before it
 * up to date), told of every change; without one (the graph is not in
 * topological order, or has subgraphs), rerun over the whole graph each
 * time. Either way a check at N sees what a whole run would show. */
typedef struct {
  GraftModel *model;
  GraftGraph *graph;
  GraftShapeInferenceSession *session;
  GHashTable *node_names;   /* char* (owned) of the graph's nodes: new ones get unique names */
  GraftInference *inference;/* owned: the last whole run, without a session */
} Repair;

/* node's inputs and outputs as inference sees the graph now; valid until
 * the next call. */
static GraftInference *
infer_through (Repair *repair, GraftNode *node)
{
  if (repair->session != NULL)
    {
      graft_shape_inference_session_infer_through (repair->session, node);
      return graft_shape_inference_session_get_inference (repair->session);
    }
  g_clear_pointer (&repair->inference, graft_inference_unref);
  repair->inference = graft_shape_inference_run (repair->model, NULL);
  return repair->inference;
}

/* node's inputs changed, or node was just put where it is. */
static void
node_changed (Repair *repair, GraftNode *node)
{
  if (repair->session != NULL)
    graft_shape_inference_session_rewind (repair->session, node);
}

static void
set_input (Repair *repair, GraftNode *node, guint i, GraftValue *value)
{
  graft_node_set_input (node, i, value);
  node_changed (repair, node);
}

static void
remove_node (Repair *repair, GraftNode *node)
{
  guint index = node->index;

  graft_graph_remove_node (repair->graph, node);
  if (repair->session != NULL)
    graft_shape_inference_session_node_removed (repair->session, index);
}

/* Removes a constant nobody uses any more (its Constant node, or the
 * initializer). */
static void
drop_if_unused (Repair *repair, GraftValue *value)
{
  GraftGraph *graph = repair->graph;

  if (value->consumers->len > 0 || value->is_graph_output || value->graph != graph)
    return;
  if (value->producer != NULL)
    {
      GraftNode *producer = value->producer;
      if (producer->outputs->len == 1)
        {
          remove_node (repair, producer);
          graft_graph_remove_value (graph, value);
        }
    }
  else if (value->initializer != NULL && !value->is_graph_input)
    graft_graph_remove_value (graph, value);
}

static GraftNode *
add_node_before (Repair *repair, GraftNode *before, const char *op_type, const char *suffix)
{
  GraftGraph *graph = repair->graph;
  char *name = g_strdup_printf ("%s/graft_%s", before->name[0] ? before->name : before->op_type, suffix);
  GraftNode *node;

  /* ONNX wants node names unique: a node repaired twice (two ranges read
   * by one LessOrEqual) gets _2, _3... */
  for (guint k = 2; g_hash_table_contains (repair->node_names, name); k++)
    {
      g_free (name);
      name = g_strdup_printf ("%s/graft_%s_%u", before->name[0] ? before->name : before->op_type, suffix, k);
    }
  g_hash_table_add (repair->node_names, name);
  node = graft_graph_add_node (graph, "", op_type, name);

  graft_graph_move_node_before (graph, node, before);
  node_changed (repair, node);
  return node;
}

static GraftValue *
add_output_value (GraftGraph *graph, GraftNode *node, const char *hint)
{
  GraftValue *value = graft_graph_new_anonymous_value (graph, hint);

  graft_node_add_output (node, value);
  return value;
}

/* Gather(Shape(input), axis) × multiplier + offset, computed right before
 * node: a 1-element vector, or a scalar (what Range wants) when scalar is
 * TRUE. */
static GraftValue *
build_input_dim (Repair *repair, GraftNode *node, GraftValue *input, int axis, gint64 multiplier, gint64 offset,
                 gboolean scalar)
{
  /* Each new node goes right before node, so creation order is graph order. */
  GraftGraph *graph = repair->graph;
  GraftNode *shape = add_node_before (repair, node, "Shape", "shape");
  GraftNode *gather = add_node_before (repair, node, "Gather", "gather");
  gint64 index = axis;
  GraftValue *dim;

  graft_node_add_input (shape, input);
  graft_node_add_input (gather, add_output_value (graph, shape, "graft_shape"));
  graft_node_add_input (gather, graft_graph_add_int64_constant (graph, "graft_axis", &index, 1, scalar));
  graft_node_add_attribute (gather, graft_attribute_new_int ("axis", 0));
  dim = add_output_value (graph, gather, "graft_dim");
  if (multiplier != 1)
    {
      /* The element is the dim times a constant (batch × heads). */
      GraftNode *mul = add_node_before (repair, node, "Mul", "mul");
      graft_node_add_input (mul, dim);
      graft_node_add_input (mul, graft_graph_add_int64_constant (graph, "graft_factor", &multiplier, 1, scalar));
      dim = add_output_value (graph, mul, "graft_dim_scaled");
    }
  if (offset != 0)
    {
      /* The rest of the dim after fixed parts (a split's [4, n - 4]). */
      GraftNode *add = add_node_before (repair, node, "Add", "add");
      graft_node_add_input (add, dim);
      graft_node_add_input (add, graft_graph_add_int64_constant (graph, "graft_offset", &offset, 1, scalar));
      dim = add_output_value (graph, add, "graft_dim_rest");
    }
  dim->dtype = GRAFT_DTYPE_INT64;
  return dim;
}

/* shape_input of node := Concat(C[:e], Gather(Shape(input), [axis]) × k, C[e+1:]):
 * the element follows the input's real dim at run time. */
static GraftValue *
build_dynamic_shape (Repair *repair, GraftNode *node, const gint64 *values, guint n, guint e, GraftValue *input,
                     int axis, gint64 multiplier, gint64 offset)
{
  GraftGraph *graph = repair->graph;
  GraftValue *dim = build_input_dim (repair, node, input, axis, multiplier, offset, FALSE);
  GraftNode *concat = add_node_before (repair, node, "Concat", "concat");
  GraftValue *out;

  if (e > 0)
    graft_node_add_input (concat, graft_graph_add_int64_constant (graph, "graft_shape_head", values, e, FALSE));
  graft_node_add_input (concat, dim);
  if (e + 1 < n)
    graft_node_add_input (concat, graft_graph_add_int64_constant (graph, "graft_shape_tail", values + e + 1,
                                                                  n - e - 1, FALSE));
  graft_node_add_attribute (concat, graft_attribute_new_int ("axis", 0));
  out = add_output_value (graph, concat, "graft_dynamic_shape");
  out->dtype = GRAFT_DTYPE_INT64;
  return out;
}

static void
replace_constant (Repair *repair, GraftNode *node, guint shape_input, GraftValue *replacement)
{
  GraftValue *old = g_ptr_array_index (node->inputs, shape_input);

  set_input (repair, node, shape_input, replacement);
  drop_if_unused (repair, old);
}

/* TRUE if, with the input's dim now symbolic, output dim e of node is
 * exactly that symbol (times multiplier) and the other dims are what the
 * constant said. */
static gboolean
reshape_is_exact (Repair *repair, GraftNode *node, const gint64 *values, guint n, guint e, const char *symbol,
                  gint64 multiplier)
{
  GraftValue *out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
  GraftDim expected = graft_dim_multiply (graft_dim_symbolic (symbol), graft_dim_fixed (multiplier));
  const GraftShape *shape = graft_inference_get_shape (infer_through (repair, node), out);

  if (shape == NULL || shape->rank != (int) n)
    return FALSE;
  for (guint i = 0; i < n; i++)
    {
      GraftDim *d = &shape->dims[i];
      if (i == e)
        {
          if (!graft_dim_equal (d, &expected))
            return FALSE;
        }
      else if (values[i] > 0 && (d->kind != GRAFT_DIM_FIXED || d->value != values[i]))
        return FALSE;
    }
  return TRUE;
}

/* Reshape's target with -1 at e; a -1 elsewhere becomes the dim it stood
 * for at trace time (static_out), if that is fixed. NULL if impossible. */
static gint64 *
reshape_candidate (const gint64 *values, guint n, guint e, const GraftShape *static_out)
{
  g_autofree gint64 *candidate = g_memdup2 (values, sizeof (gint64) * MAX (n, 1));

  for (guint i = 0; i < n; i++)
    if (i != e && values[i] == -1)
      {
        if (static_out == NULL || static_out->rank != (int) n || static_out->dims[i].kind != GRAFT_DIM_FIXED)
          return NULL;
        candidate[i] = static_out->dims[i].value;
      }
  candidate[e] = -1;
  return g_steal_pointer (&candidate);
}

/* After a rewrite: the Reshape's output has as many elements as its input,
 * symbolically. */
static gboolean
reshape_keeps_size (Repair *repair, GraftNode *node)
{
  GraftValue *in = g_ptr_array_index (node->inputs, 0);
  GraftValue *out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
  GraftInference *inference = infer_through (repair, node);
  const GraftShape *in_shape = graft_inference_get_shape (inference, in);
  const GraftShape *out_shape = graft_inference_get_shape (inference, out);
  GraftDim a, b;

  if (in_shape == NULL || out_shape == NULL)
    return FALSE;
  a = graft_shape_get_dim_product (in_shape, 0, in_shape->rank);
  b = graft_shape_get_dim_product (out_shape, 0, out_shape->rank);
  return a.kind != GRAFT_DIM_UNKNOWN && graft_dim_equal (&a, &b);
}

/* For Expand/Tile: the element that lines up (from the right) with the
 * data dim that now carries the symbol. */
static GraftBakedShape *
aligned_entry (Repair *repair, GPtrArray *entries, guint n, const char *symbol)
{
  GraftBakedShape *first = g_ptr_array_index (entries, 0);
  GraftValue *data = first->node->inputs->len > 0 ? g_ptr_array_index (first->node->inputs, 0) : NULL;
  const GraftShape *shape;

  if (first->node->op == g_intern_static_string ("onnx::ConstantOfShape") || data == NULL)
    return first;
  shape = graft_inference_get_shape (infer_through (repair, first->node), data);
  if (shape == NULL)
    shape = &data->shape;
  for (guint i = 0; i < entries->len; i++)
    {
      GraftBakedShape *entry = g_ptr_array_index (entries, i);
      int aligned = (int) entry->element - ((int) n - shape->rank);

      if (shape->rank >= 0 && aligned >= 0 && aligned < shape->rank
          && graft_dim_mentions (&shape->dims[aligned], symbol))
        return entry;
    }
  return first;
}

/* The constant entry reads (0 .. traced - 1 along one dim) becomes
 * Reshape(Range(0, Shape(x)[axis], 1), its shape with -1 on that dim):
 * positions and mask ranges count to the real size. */
static gboolean
count_to_input_dim (Repair *repair, GraftNode *node, GraftBakedShape *entry, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = repair->graph;
  GraftTensor *tensor = graft_value_get_constant (entry->constant);
  GraftNode *range;
  GraftValue *counted, *shaped;
  gint64 zero = 0, one = 1;
  g_autofree gint64 *target = NULL;

  if (tensor == NULL || tensor->dtype != GRAFT_DTYPE_INT64)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "%s '%s': the range it reads is not an int64 constant; rewrite it by hand", node->op_type,
                   node->name);
      return FALSE;
    }
  target = g_new (gint64, MAX (tensor->rank, 1));
  range = add_node_before (repair, node, "Range", "range");
  graft_node_add_input (range, graft_graph_add_int64_constant (graph, "graft_start", &zero, 1, TRUE));
  graft_node_add_input (range, build_input_dim (repair, range, entry->input, entry->axis, 1, 0, TRUE));
  graft_node_add_input (range, graft_graph_add_int64_constant (graph, "graft_delta", &one, 1, TRUE));
  counted = add_output_value (graph, range, "graft_positions");
  for (int k = 0; k < tensor->rank; k++)
    target[k] = (guint) k == entry->element ? -1 : tensor->dims[k];
  shaped = counted;
  if (tensor->rank != 1)
    {
      GraftNode *reshape = add_node_before (repair, node, "Reshape", "reshape");
      graft_node_add_input (reshape, counted);
      graft_node_add_input (reshape, graft_graph_add_int64_constant (graph, "graft_positions_shape", target,
                                                                     tensor->rank, FALSE));
      shaped = add_output_value (graph, reshape, "graft_positions_shaped");
    }
  shaped->dtype = GRAFT_DTYPE_INT64;
  replace_constant (repair, node, entry->shape_input, shaped);
  g_ptr_array_add (notes, g_strdup_printf ("%s '%s': the range 0..%" G_GINT64_FORMAT " it reads now counts to "
                                           "Shape(%s)[%d]", node->op_type, node->name, entry->traced - 1,
                                           entry->input->name, entry->axis));
  return TRUE;
}

/* TRUE if every entry lines up (from the right) with a dim of node's
 * data that already carries symbol. */
static gboolean
entries_follow_data (Repair *repair, GraftNode *node, GPtrArray *entries, guint n, const char *symbol)
{
  GraftValue *data = g_ptr_array_index (node->inputs, 0);
  const GraftShape *shape;

  shape = graft_inference_get_shape (infer_through (repair, node), data);
  if (shape == NULL)
    shape = &data->shape;
  if (shape->rank < 0)
    return FALSE;
  for (guint i = 0; i < entries->len; i++)
    {
      GraftBakedShape *entry = g_ptr_array_index (entries, i);
      int aligned = (int) entry->element - ((int) n - shape->rank);

      if (aligned < 0 || aligned >= shape->rank || !graft_dim_mentions (&shape->dims[aligned], symbol))
        return FALSE;
    }
  return TRUE;
}

static gboolean
computed_vector_length (Repair *repair, GraftNode *node, GraftBakedShape *baked, guint *n)
{
  GraftValue *value = baked->constant;
  const GraftShape *shape;

  if (value == NULL || value->producer == NULL || strstr (value->producer->name, "/graft_") == NULL)
    return FALSE;
  shape = graft_inference_get_shape (infer_through (repair, node), value);
  if (shape == NULL || shape->rank != 1 || shape->dims[0].kind != GRAFT_DIM_FIXED)
    return FALSE;
  *n = shape->dims[0].value;
  return TRUE;
}

/* A shape vector an earlier make-dynamic built (some elements computed
 * from Shape(x)): each element holding the traced size of this dim
 * becomes Shape(input)[axis] × k, or 1 where an Expand's data already
 * carries the dim; the other elements are sliced from the old vector as
 * they are. */
static gboolean
repair_computed_vector (Repair *repair, GraftNode *node, GPtrArray *entries, guint n, const char *symbol,
                        GPtrArray *notes, GError **error)
{
  GraftGraph *graph = repair->graph;
  GraftBakedShape *baked = g_ptr_array_index (entries, 0);
  GraftValue *old = g_ptr_array_index (node->inputs, baked->shape_input);
  gboolean expand = node->op == g_intern_static_string ("onnx::Expand");
  gboolean keep_data = expand && entries_follow_data (repair, node, entries, n, symbol);
  g_autofree GraftValue **pieces = g_new0 (GraftValue *, MAX (n, 1));
  guint kept = 0, followed = 0;
  GraftNode *concat;
  GraftValue *out;

  if (node->op == g_intern_static_string ("onnx::Reshape") && entries->len > 1)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "Reshape '%s': several elements of its shape equal the traced %" G_GINT64_FORMAT "; rewrite its "
                   "shape by hand", node->name, baked->traced);
      return FALSE;
    }
  if (!expand && node->op == g_intern_static_string ("onnx::Tile"))
    baked = aligned_entry (repair, entries, n, symbol);
  for (guint i = 0; i < entries->len; i++)
    {
      GraftBakedShape *entry = g_ptr_array_index (entries, i);
      g_autoptr(GPtrArray) one_entry = g_ptr_array_new ();
      gint64 one = 1;

      g_ptr_array_add (one_entry, entry);
      /* An Expand keeps a dim its data already carries (1), and is told
       * the size of one it broadcasts ([b, 1, s, s] from a [b, 1, 1, s]
       * mask: the last 16 kept, the other from Shape(x)). */
      if (keep_data || (expand && entries_follow_data (repair, node, one_entry, n, symbol)))
        {
          pieces[entry->element] = graft_graph_add_int64_constant (graph, "graft_keep", &one, 1, FALSE);
          kept++;
        }
      else if (expand || entry == baked)
        {
          pieces[entry->element] = build_input_dim (repair, node, entry->input, entry->axis, entry->multiplier, 0,
                                                    FALSE);
          followed++;
        }
    }
  concat = add_node_before (repair, node, "Concat", "concat");
  for (guint i = 0; i < n;)
    {
      guint end = i;
      gint64 start = i, stop, zero = 0;
      GraftNode *slice;

      if (pieces[i] != NULL)
        {
          graft_node_add_input (concat, pieces[i++]);
          continue;
        }
      while (end < n && pieces[end] == NULL)
        end++;
      stop = end;
      slice = add_node_before (repair, concat, "Slice", "unchanged");
      graft_node_add_input (slice, old);
      graft_node_add_input (slice, graft_graph_add_int64_constant (graph, "graft_from", &start, 1, FALSE));
      graft_node_add_input (slice, graft_graph_add_int64_constant (graph, "graft_to", &stop, 1, FALSE));
      graft_node_add_input (slice, graft_graph_add_int64_constant (graph, "graft_axis", &zero, 1, FALSE));
      graft_node_add_input (concat, add_output_value (graph, slice, "graft_unchanged"));
      i = end;
    }
  graft_node_add_attribute (concat, graft_attribute_new_int ("axis", 0));
  out = add_output_value (graph, concat, "graft_dynamic_shape");
  out->dtype = GRAFT_DTYPE_INT64;
  set_input (repair, node, baked->shape_input, out);
  if (node->op == g_intern_static_string ("onnx::Reshape") && !reshape_keeps_size (repair, node))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "Reshape '%s': with a dynamic %s:%d its shape does not keep the element count; rewrite it by "
                   "hand", node->name, baked->input->name, baked->axis);
      return FALSE;
    }
  if (expand)
    g_ptr_array_add (notes, g_strdup_printf ("%s '%s': of the %u elements of its shape holding the traced size, %u → 1 "
                                             "(its data already follows %s:%d), %u now come from Shape(%s)[%d]",
                                             node->op_type, node->name, entries->len, kept, baked->input->name,
                                             baked->axis, followed, baked->input->name, baked->axis));
  else
    g_ptr_array_add (notes, g_strdup_printf ("%s '%s': element %u of its computed shape now comes from Shape(%s)[%d]"
                                             " × %" G_GINT64_FORMAT, node->op_type, node->name, baked->element,
                                             baked->input->name, baked->axis, baked->multiplier));
  return TRUE;
}

/* Expand broadcasts: where its data already carries the dim, a target
 * element of 1 keeps it. When that covers every element holding the
 * traced size (a causal mask already seq × seq), the target becomes a
 * plain constant; TRUE then. */
static gboolean
expand_keeps_data_dims (Repair *repair, GraftNode *node, GPtrArray *entries, gint64 *values, guint n,
                        const char *symbol, const char *before, GPtrArray *notes)
{
  GraftBakedShape *first = g_ptr_array_index (entries, 0);
  g_autofree char *after = NULL;

  if (!entries_follow_data (repair, node, entries, n, symbol))
    return FALSE;
  for (guint i = 0; i < entries->len; i++)
    values[((GraftBakedShape *) g_ptr_array_index (entries, i))->element] = 1;
  replace_constant (repair, node, first->shape_input,
                    graft_graph_add_int64_constant (repair->graph, "graft_expand_shape", values, n, FALSE));
  after = format_ints (values, n);
  g_ptr_array_add (notes, g_strdup_printf ("Expand '%s': shape %s → %s (its data already follows %s:%d)", node->name,
                                           before, after, first->input->name, first->axis));
  return TRUE;
}

/* Slice bounds: the traced size itself is the end of the axis
 * (INT64_MAX); a bound inside it, read as the size minus a constant, is
 * counted from the end (15 → -1). */
static gboolean
repair_slice (Repair *repair, GraftNode *node, GPtrArray *entries, GPtrArray *notes)
{
  for (guint input = 1; input <= 2; input++)
    {
      GraftValue *old = g_ptr_array_index (node->inputs, input);
      GraftTensor *tensor = graft_value_get_constant (old);
      g_autofree gint64 *values = NULL;
      gboolean changed = FALSE;
      guint n;

      if (tensor == NULL)
        continue;
      values = constant_values (tensor, &n);
      for (guint i = 0; i < entries->len; i++)
        {
          GraftBakedShape *entry = g_ptr_array_index (entries, i);
          gint64 v = values[entry->element];

          if (entry->shape_input != input)
            continue;
          changed = TRUE;
          values[entry->element] = v == entry->traced ? G_MAXINT64 : v - entry->traced;
          if (v == entry->traced)
            g_ptr_array_add (notes, g_strdup_printf ("Slice '%s': end %" G_GINT64_FORMAT " → INT64_MAX (to the end)",
                                                     node->name, v));
          else
            g_ptr_array_add (notes, g_strdup_printf ("Slice '%s': %s %" G_GINT64_FORMAT " → %" G_GINT64_FORMAT
                                                     " (counted from the end of Shape(%s)[%d])", node->name,
                                                     input == 1 ? "start" : "end", v, v - entry->traced,
                                                     entry->input->name, entry->axis));
        }
      if (changed)
        replace_constant (repair, node, input,
                          graft_graph_add_int64_constant (repair->graph, input == 1 ? "graft_slice_starts"
                                                          : "graft_slice_ends", values, n, tensor->rank == 0));
    }
  return TRUE;
}

/* [c, c, …, d - (n - 1) c] with d = Shape(input)[axis], c = ceil(d / n):
 * the sizes of torch.chunk(n), computed before node. */
static GraftValue *
build_chunk_sizes (Repair *repair, GraftNode *node, GraftValue *input, int axis, guint n)
{
  GraftGraph *graph = repair->graph;
  gint64 parts = n, others = n - 1;
  GraftNode *div = add_node_before (repair, node, "Div", "chunk");
  GraftNode *mul, *sub, *concat;
  GraftValue *chunk, *last, *out;

  graft_node_add_input (div, build_input_dim (repair, div, input, axis, 1, n - 1, FALSE));
  graft_node_add_input (div, graft_graph_add_int64_constant (graph, "graft_parts", &parts, 1, FALSE));
  chunk = add_output_value (graph, div, "graft_chunk");
  mul = add_node_before (repair, node, "Mul", "chunks");
  graft_node_add_input (mul, chunk);
  graft_node_add_input (mul, graft_graph_add_int64_constant (graph, "graft_others", &others, 1, FALSE));
  sub = add_node_before (repair, node, "Sub", "last");
  graft_node_add_input (sub, build_input_dim (repair, sub, input, axis, 1, 0, FALSE));
  graft_node_add_input (sub, add_output_value (graph, mul, "graft_chunks"));
  last = add_output_value (graph, sub, "graft_last");
  concat = add_node_before (repair, node, "Concat", "sizes");
  for (guint i = 0; i < others; i++)
    graft_node_add_input (concat, chunk);
  graft_node_add_input (concat, last);
  graft_node_add_attribute (concat, graft_attribute_new_int ("axis", 0));
  out = add_output_value (graph, concat, "graft_split_sizes");
  chunk->dtype = last->dtype = out->dtype = GRAFT_DTYPE_INT64;
  return out;
}

/* Split sizes that add up to the traced size: equal parts become torch's
 * chunk (num_outputs from opset 18, computed sizes before), otherwise the largest part
 * takes what the others leave: Shape(x)[axis] - (their sum). */
static gboolean
repair_split (Repair *repair, GraftNode *node, GraftBakedShape *baked, GPtrArray *notes, GError **error)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, "split");
  GraftTensor *tensor = graft_value_get_constant (baked->constant);
  g_autofree gint64 *values = NULL;
  g_autofree char *before = NULL;
  gboolean equal = TRUE;
  guint n;

  if (tensor != NULL)
    values = constant_values (tensor, &n);
  else if (attribute != NULL && attribute->type == GRAFT_ATTR_INTS)
    {
      n = attribute->ints->len;
      values = g_memdup2 (attribute->ints->data, sizeof (gint64) * MAX (n, 1));
    }
  else
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "Split '%s': its sizes are no longer a constant; repair it by hand", node->name);
      return FALSE;
    }
  before = format_ints (values, n);
  for (guint i = 1; i < n; i++)
    equal = equal && values[i] == values[0];
  if (equal && n == node->outputs->len && graft_model_get_opset (repair->model, node->domain) >= 18)
    {
      /* num_outputs splits as torch.chunk does: ceil-sized parts, the last smaller. */
      if (tensor != NULL)
        {
          replace_constant (repair, node, 1, NULL);
          g_ptr_array_set_size (node->inputs, 1);
        }
      else
        g_ptr_array_remove (node->attributes, attribute);
      graft_node_add_attribute (node, graft_attribute_new_int ("num_outputs", n));
      node_changed (repair, node);
      g_ptr_array_add (notes, g_strdup_printf ("Split '%s': sizes %s → %u equal parts of Shape(%s)[%d]", node->name,
                                               before, n, baked->input->name, baked->axis));
      return TRUE;
    }
  if (equal && n == node->outputs->len && tensor != NULL)
    {
      /* Before opset 18 an even split must divide exactly: spell out
       * torch.chunk's sizes, c = ceil(d / n) for all but the last. */
      replace_constant (repair, node, 1, build_chunk_sizes (repair, node, baked->input, baked->axis, n));
      node_changed (repair, node);
      g_ptr_array_add (notes, g_strdup_printf ("Split '%s': sizes %s → %u equal parts of Shape(%s)[%d]", node->name,
                                               before, n, baked->input->name, baked->axis));
      return TRUE;
    }
  if (tensor == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "Split '%s': its sizes %s add up to the traced %" G_GINT64_FORMAT " but are an attribute before "
                   "opset 13, which cannot follow a dynamic dim; export at opset 13 or later", node->name, before,
                   baked->traced);
      return FALSE;
    }
  replace_constant (repair, node, 1, build_dynamic_shape (repair, node, values, n, baked->element, baked->input,
                                                          baked->axis, 1, values[baked->element] - baked->traced));
  g_ptr_array_add (notes, g_strdup_printf ("Split '%s': part %u of %s now takes the rest of Shape(%s)[%d]",
                                           node->name, baked->element, before, baked->input->name, baked->axis));
  return TRUE;
}

/* Repairs one node; entries are its GraftBakedShapes (several elements of
 * its constant may hold the traced value; the probe says which is the dim). */
static gboolean repair_node_in_its_graph (Repair *repair, GPtrArray *entries, const GraftShape *static_out,
                                          const char *symbol, GPtrArray *notes, GError **error);

/* A node in an If/Loop body gets its new nodes and constants there; they
 * read x from the enclosing scope. */
static gboolean
repair_node (Repair *repair, GPtrArray *entries, const GraftShape *static_out, const char *symbol,
             GPtrArray *notes, GError **error)
{
  GraftGraph *main_graph = repair->graph;
  gboolean ok;

  repair->graph = ((GraftBakedShape *) g_ptr_array_index (entries, 0))->node->graph;
  ok = repair_node_in_its_graph (repair, entries, static_out, symbol, notes, error);
  repair->graph = main_graph;
  return ok;
}

static gboolean
repair_node_in_its_graph (Repair *repair, GPtrArray *entries, const GraftShape *static_out, const char *symbol,
                          GPtrArray *notes, GError **error)
{
  GraftGraph *graph = repair->graph;
  GraftBakedShape *baked = g_ptr_array_index (entries, 0);
  GraftNode *node = baked->node;
  GraftTensor *tensor = graft_value_get_constant (baked->constant);
  g_autofree char *node_name = g_strdup (node->name[0] ? node->name : node->op);
  g_autofree char *before = NULL;
  g_autofree gint64 *values = NULL;
  guint n;
  GraftValue *replacement;
  const char *op = node->op;

  if (op == g_intern_static_string ("onnx::Split"))
    return repair_split (repair, node, baked, notes, error);
  /* A vector built by an earlier make-dynamic: its length is what matters. */
  if (tensor == NULL && !baked->arange && computed_vector_length (repair, node, baked, &n))
    return repair_computed_vector (repair, node, entries, n, symbol, notes, error);
  if (tensor == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "%s '%s': its shape constant is no longer a constant; repair it by hand", op, node_name);
      return FALSE;
    }
  values = constant_values (tensor, &n);
  before = format_ints (values, n);

  if (op == g_intern_static_string ("onnx::Slice"))
    return repair_slice (repair, node, entries, notes);

  if (baked->arange)
    {
      for (guint i = 0; i < entries->len; i++)
        if (!count_to_input_dim (repair, node, g_ptr_array_index (entries, i), notes, error))
          return FALSE;
      return TRUE;
    }
  if (op == g_intern_static_string ("onnx::Mul") && tensor->rank == 0 && tensor->dtype == GRAFT_DTYPE_INT64)
    {
      /* the batch as a factor of a merged size (baked-shape's find_in_batch_product) */
      replace_constant (repair, node, baked->shape_input,
                        build_input_dim (repair, node, baked->input, baked->axis, 1, 0, TRUE));
      g_ptr_array_add (notes, g_strdup_printf ("Mul '%s': factor %" G_GINT64_FORMAT " now comes from Shape(%s)[%d]",
                                               node_name, baked->traced, baked->input->name, baked->axis));
      return TRUE;
    }
  if (op == g_intern_static_string ("onnx::Range"))
    {
      if (tensor->rank != 0 || tensor->dtype != GRAFT_DTYPE_INT64)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                       "Range '%s': its limit %s is not an int64 scalar; rewrite it by hand", node_name, before);
          return FALSE;
        }
      replace_constant (repair, node, baked->shape_input,
                        build_input_dim (repair, node, baked->input, baked->axis, baked->multiplier, 0, TRUE));
      g_ptr_array_add (notes, g_strdup_printf ("Range '%s': limit %" G_GINT64_FORMAT " now comes from Shape(%s)[%d]",
                                               node_name, baked->traced, baked->input->name, baked->axis));
      return TRUE;
    }

  for (guint i = 0; op == g_intern_static_string ("onnx::Reshape") && i < entries->len; i++)
    {
      GraftBakedShape *entry = g_ptr_array_index (entries, i);
      GraftValue *old = g_ptr_array_index (node->inputs, entry->shape_input);
      g_autofree gint64 *candidate = reshape_candidate (values, n, entry->element, static_out);

      if (candidate == NULL)
        continue;
      replacement = graft_graph_add_int64_constant (graph, "graft_shape", candidate, n, FALSE);
      set_input (repair, node, entry->shape_input, replacement);
      if (reshape_is_exact (repair, node, candidate, n, entry->element, symbol, entry->multiplier))
        {
          g_autofree char *after = format_ints (candidate, n);
          drop_if_unused (repair, old);
          g_ptr_array_add (notes, g_strdup_printf ("Reshape '%s': shape %s → %s", node_name, before, after));
          return TRUE;
        }
      /* -1 there would not be exactly the input's dim. */
      set_input (repair, node, entry->shape_input, old);
      graft_graph_remove_value (graph, replacement);
    }

  if (op == g_intern_static_string ("onnx::Reshape") || op == g_intern_static_string ("onnx::Expand")
      || op == g_intern_static_string ("onnx::Tile") || op == g_intern_static_string ("onnx::ConstantOfShape")
      || op == g_intern_static_string ("onnx::Resize") || op == g_intern_static_string ("onnx::Concat"))
    {
      if (tensor->rank != 1)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                       "%s '%s': its shape constant %s is not a vector; it cannot be rewritten safely", op,
                       node_name, before);
          return FALSE;
        }
      if (op == g_intern_static_string ("onnx::Expand") && expand_keeps_data_dims (repair, node, entries, values, n,
                                                                                     symbol, before, notes))
        return TRUE;
      if (op == g_intern_static_string ("onnx::Expand") && entries->len > 1)
        return repair_computed_vector (repair, node, entries, n, symbol, notes, error);
      /* A Resize's sizes (or the Concat piece of them) line up with its data already. */
      if (op == g_intern_static_string ("onnx::Expand") || op == g_intern_static_string ("onnx::Tile")
          || op == g_intern_static_string ("onnx::ConstantOfShape"))
        baked = aligned_entry (repair, entries, n, symbol);
      if (op == g_intern_static_string ("onnx::Reshape") && entries->len > 1)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                       "Reshape '%s': several elements of %s equal the traced %" G_GINT64_FORMAT " and -1 cannot "
                       "stand for the dynamic dim exactly; rewrite its shape by hand", node_name, before,
                       baked->traced);
          return FALSE;
        }
      /* The element takes the input's real dim at run time. */
      replacement = build_dynamic_shape (repair, node, values, n, baked->element, baked->input, baked->axis,
                                         baked->multiplier, 0);
      replace_constant (repair, node, baked->shape_input, replacement);
      if (op == g_intern_static_string ("onnx::Reshape") && !reshape_keeps_size (repair, node))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                       "Reshape '%s': with a dynamic %s:%d neither -1 nor the input's dim in %s keeps the element "
                       "count; rewrite its shape by hand", node_name, baked->input->name, baked->axis, before);
          return FALSE;
        }
      if (baked->multiplier != 1)
        g_ptr_array_add (notes, g_strdup_printf ("%s '%s': element %u of %s now comes from Shape(%s)[%d] × %"
                                                 G_GINT64_FORMAT, node->op_type, node_name, baked->element, before,
                                                 baked->input->name, baked->axis, baked->multiplier));
      else
        g_ptr_array_add (notes, g_strdup_printf ("%s '%s': element %u of %s now comes from Shape(%s)[%d]",
                                                 node->op_type, node_name, baked->element, before, baked->input->name,
                                                 baked->axis));
      return TRUE;
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
               "%s '%s' holds the traced value %" G_GINT64_FORMAT " in %s and Graft does not know how to rewrite "
               "this op safely; change it by hand", op, node_name, baked->traced, before);
  return FALSE;
}

static void
collect_downstream (GraftValue *value, GHashTable *seen)
{
  if (!g_hash_table_add (seen, value))
    return;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      for (guint j = 0; j < consumer->outputs->len; j++)
        if (g_ptr_array_index (consumer->outputs, j) != NULL)
          collect_downstream (g_ptr_array_index (consumer->outputs, j), seen);
    }
}

/* Declared shapes downstream of input follow the new inference; a dim the
 * inference cannot tell is declared unknown rather than left at the old
 * traced value. */
static void
update_declared_shapes (GraftModel *model, GraftValue *input, gint64 traced)
{
  g_autoptr(GHashTable) downstream = g_hash_table_new (NULL, NULL);
  g_autoptr(GraftInference) inference = graft_shape_inference_run (model, NULL);
  GHashTableIter iter;
  gpointer key;

  collect_downstream (input, downstream);
  g_hash_table_iter_init (&iter, downstream);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    {
      GraftValue *value = key;
      const GraftShape *shape = graft_inference_get_shape (inference, value);
      gboolean inferred = shape != NULL && shape->rank == value->shape.rank;

      if (value == input || value->shape.rank < 0)
        continue;
      for (int i = 0; i < value->shape.rank; i++)
        {
          GraftDim *d = &value->shape.dims[i];
          if (inferred && shape->dims[i].kind != GRAFT_DIM_UNKNOWN)
            *d = shape->dims[i];
          else if ((d->kind == GRAFT_DIM_FIXED && d->value == traced)
                   || (d->kind == GRAFT_DIM_SYMBOLIC && g_str_has_prefix (d->symbol, "graft_dim_")))
            *d = graft_dim_unknown ();
        }
    }
}

static gpointer
copy_shape (const GraftShape *shape)
{
  GraftShape *copy = g_new0 (GraftShape, 1);

  graft_shape_copy (copy, shape);
  return copy;
}

static void
free_shape (gpointer data)
{
  graft_shape_clear (data);
  g_free (data);
}

static GraftValue *
checked_input_axis (GraftModel *model, const char *name, int axis, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GraftValue *input = graft_edit_find_input (graph, name, error);

  if (input == NULL)
    return NULL;
  if (input->shape.rank < 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "input '%s' has no declared shape; set one first (--shape %s=...)", name, name);
      return NULL;
    }
  if (axis < 0 || axis >= input->shape.rank)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "input '%s' has rank %d, so axis %d does not exist", name, input->shape.rank, axis);
      return NULL;
    }
  return input;
}

/* TRUE if value is computed from constants only (no graph input, no
 * Shape of anything): folding it cannot bake a size. */
static gboolean
from_constants_only (GraftValue *value, GHashTable *seen)
{
  GraftNode *producer = value->producer;

  if (value->is_graph_input && value->initializer == NULL)
    return FALSE;
  if (producer == NULL || graft_value_get_constant (value) != NULL || !g_hash_table_add (seen, value))
    return TRUE;
  if (producer->op == g_intern_static_string ("onnx::Shape") || producer->op == g_intern_static_string ("onnx::Size"))
    return FALSE;
  for (guint i = 0; i < producer->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (producer->inputs, i);
      if (in != NULL && !from_constants_only (in, seen))
        return FALSE;
    }
  return TRUE;
}

static void
collect_producers (GraftValue *value, GraftGraph *graph, GHashTable *nodes)
{
  GraftNode *producer = value->producer;

  if (producer == NULL || producer->graph != graph || !g_hash_table_add (nodes, producer))
    return;
  for (guint i = 0; i < producer->inputs->len; i++)
    if (g_ptr_array_index (producer->inputs, i) != NULL)
      collect_producers (g_ptr_array_index (producer->inputs, i), graph, nodes);
}

static gboolean
outputs_unused (GraftNode *node)
{
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      if (out != NULL && (out->consumers->len > 0 || out->is_graph_output))
        return FALSE;
    }
  return TRUE;
}

/* Removes the nodes in computation (the producers of a value nobody uses
 * any more) that nothing uses, until none is left: shared inputs go only
 * when their last user went. */
static void
drop_unused_computation (GraftGraph *graph, GHashTable *computation)
{
  gboolean removed = TRUE;

  while (removed)
    {
      GHashTableIter iter;
      gpointer key;

      removed = FALSE;
      g_hash_table_iter_init (&iter, computation);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        {
          GraftNode *node = key;
          g_autoptr(GPtrArray) outputs = NULL;

          if (!outputs_unused (node))
            continue;
          g_hash_table_iter_remove (&iter);
          outputs = g_ptr_array_copy (node->outputs, NULL, NULL);
          graft_graph_remove_node (graph, node);
          for (guint i = 0; i < outputs->len; i++)
            if (g_ptr_array_index (outputs, i) != NULL)
              graft_graph_remove_value (graph, g_ptr_array_index (outputs, i));
          removed = TRUE;
          break;   /* the table changed under the iterator's feet */
        }
    }
}

/* Size inputs computed from constants (torch writes expand's target as
 * Where(Equal(C, -1), ones, C)) become initializers, so that the search
 * sees the traced size they hold and the repair can rewrite it. */
static void
fold_size_inputs (GraftModel *model, GPtrArray *notes)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GraftInference) inference = graft_shape_inference_run (model, NULL);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      guint at = node->op == g_intern_static_string ("onnx::ConstantOfShape") ? 0 : 1;
      GraftValue *size = at < node->inputs->len ? g_ptr_array_index (node->inputs, at) : NULL;
      g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);
      GArray *data;
      g_autofree gint64 *values = NULL;

      if ((node->op != g_intern_static_string ("onnx::Expand") && node->op != g_intern_static_string ("onnx::Reshape")
           && node->op != g_intern_static_string ("onnx::Tile") && at != 0)
          || size == NULL || size->producer == NULL || graft_value_get_constant (size) != NULL
          || !from_constants_only (size, seen) || (data = graft_inference_get_data (inference, size)) == NULL)
        continue;
      values = g_new (gint64, MAX (data->len, 1));
      for (guint k = 0; k < data->len; k++)
        {
          GraftDim *d = &g_array_index (data, GraftDim, k);
          if (d->kind != GRAFT_DIM_FIXED)
            break;
          values[k] = d->value;
          if (k + 1 == data->len)
            {
              g_autofree char *text = format_ints (values, data->len);
              g_autoptr(GHashTable) computation = g_hash_table_new (NULL, NULL);

              collect_producers (size, graph, computation);
              graft_node_set_input (node, at, graft_graph_add_int64_constant (graph, "graft_folded", values, data->len,
                                                                             FALSE));
              drop_unused_computation (graph, computation);
              g_ptr_array_add (notes, g_strdup_printf ("%s '%s': its size input, computed from constants, folded "
                                                       "to %s", node->op_type, node->name, text));
            }
        }
    }
}

/* Constants computed at the traced size are looked at up to this size. */
#define UNREPLICATE_MAX_BYTES (16 * 1024 * 1024)

static gboolean
broadcasts (const GraftNode *node)
{
  static const char *const ops[] = {
    "onnx::Add", "onnx::Sub", "onnx::Mul", "onnx::Div", "onnx::Pow", "onnx::Where", "onnx::Max", "onnx::Min",
    "onnx::Equal", "onnx::Less", "onnx::Greater", "onnx::LessOrEqual", "onnx::GreaterOrEqual", "onnx::And", "onnx::Or",
  };
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    if (node->op == g_intern_static_string (ops[i]))
      return TRUE;
  return FALSE;
}

/* tensor with dim axis cut to its first entry, if every entry along axis
 * holds the same values; NULL otherwise. */
static GraftTensor *
first_of_identical_slices (GraftTensor *tensor, int axis, const char *name)
{
  gsize element = graft_dtype_get_size (tensor->dtype);
  GBytes *bytes = tensor->dtype != GRAFT_DTYPE_STRING && element > 0 ? graft_tensor_get_data (tensor, NULL) : NULL;
  if (bytes == NULL || tensor->strides != NULL)
    return NULL;
  gint64 outer = 1, inner = element, n = tensor->dims[axis];
  for (int d = 0; d < axis; d++)
    outer *= tensor->dims[d];
  for (int d = axis + 1; d < tensor->rank; d++)
    inner *= tensor->dims[d];
  gsize size = 0;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  if ((gsize) (outer * n * inner) != size)
    return NULL;
  for (gint64 o = 0; o < outer; o++)
    for (gint64 k = 1; k < n; k++)
      if (memcmp (data + (o * n + k) * inner, data + o * n * inner, inner) != 0)
        return NULL;
  g_autofree gint64 *dims = g_memdup2 (tensor->dims, sizeof (gint64) * tensor->rank);
  dims[axis] = 1;
  GraftTensor *slice = graft_tensor_new (name, tensor->dtype, tensor->rank, dims);
  guint8 *sliced = g_malloc (MAX (outer * inner, 1));
  for (gint64 o = 0; o < outer; o++)
    memcpy (sliced + o * inner, data + o * n * inner, inner);
  g_autoptr(GBytes) slice_bytes = g_bytes_new_take (sliced, outer * inner);
  if (!graft_tensor_set_data (slice, slice_bytes, NULL))
    g_clear_pointer (&slice, graft_tensor_unref);
  return slice;
}

/* A constant the exporter computed at the traced batch (positions from an
 * all-ones mask, a learned query repeated for every sample) and that meets
 * the now dynamic dim in a broadcasting op: when its entries along that
 * axis are all the same, one of them broadcasts to any size. Constants
 * whose entries differ stay, and the proof names them. */
static guint
unreplicate_constants (Repair *repair, const char *symbol, gint64 traced, GPtrArray *notes)
{
  guint cut = 0;
  if (traced <= 1)
    return 0;
  g_autoptr(GraftInference) inference = graft_shape_inference_run (repair->model, NULL);
  for (guint n = 0; n < repair->graph->nodes->len; n++)
    {
      GraftNode *node = g_ptr_array_index (repair->graph->nodes, n);
      if (!broadcasts (node))
        continue;
      for (guint i = 0; i < node->inputs->len; i++)
        {
          GraftValue *value = g_ptr_array_index (node->inputs, i);
          GraftTensor *constant = graft_value_get_constant (value);
          g_autoptr(GraftTensor) computed = NULL;
          const GraftShape *shape = graft_inference_get_shape (inference, value);
          /* computed from constants (DETR's positions from an all-ones
           * mask): run once to look at it */
          if (constant == NULL && value != NULL && shape != NULL && graft_shape_is_fully_fixed (shape) &&
              shape->rank >= 1)
            constant = computed = graft_edit_evaluate_constant (repair->model, value, UNREPLICATE_MAX_BYTES);
          if (constant == NULL || constant->rank < 1)
            continue;
          int axis = -1;
          for (guint j = 0; j < node->inputs->len && axis < 0; j++)
            {
              const GraftShape *other = j == i ? NULL : graft_inference_get_shape (inference, g_ptr_array_index (node->inputs, j));
              for (int a = 0; other != NULL && a < constant->rank && axis < 0; a++)
                {
                  int b = a - constant->rank + other->rank;
                  if (b >= 0 && constant->dims[a] == traced && graft_dim_mentions (&other->dims[b], symbol))
                    axis = a;
                }
            }
          if (axis < 0)
            continue;
          g_autofree char *name = g_strdup_printf ("%s_one", value->name);
          GraftTensor *slice = first_of_identical_slices (constant, axis, name);
          if (slice == NULL)
            continue;
          GraftValue *replacement = graft_graph_new_anonymous_value (repair->graph, name);
          g_free (slice->name);
          slice->name = g_strdup (replacement->name);
          graft_graph_add_initializer (repair->graph, replacement, slice);
          set_input (repair, node, i, replacement);
          cut++;
          g_ptr_array_add (notes, g_strdup_printf ("%s '%s': the constant '%s' repeats one entry %" G_GINT64_FORMAT
                                                   " times along axis %d (the traced %s); one entry broadcasts",
                                                   node->op_type, node->name, value->name, traced, axis, symbol));
          if (computed != NULL)
            {
              g_autoptr(GHashTable) computation = g_hash_table_new (NULL, NULL);
              collect_producers (value, repair->graph, computation);
              drop_unused_computation (repair->graph, computation);
            }
          else
            drop_if_unused (repair, value);
        }
    }
  return cut;
}

/* One search for the sizes that froze the traced value of input's dim
 * (fixed at traced while it runs) and their repair; leaves the dim
 * symbolic. */
static gboolean
search_and_repair (Repair *repair, GraftValue *input, int axis, GraftDim traced_dim, const char *symbol,
                   GraftSplitReadings *readings, GPtrArray *notes, GError **error)
{
  g_autoptr(GHashTable) static_out = g_hash_table_new_full (NULL, NULL, NULL, free_shape);
  g_autoptr(GraftShapeInferenceSession) session = NULL;
  gboolean ok = TRUE;

  input->shape.dims[axis] = traced_dim;
  g_autoptr(GPtrArray) baked = graft_find_baked_shapes_read (repair->model, input, axis, readings, symbol);
  /* What each node produced at trace time, to spell out a -1. */
  g_autoptr(GraftInference) traced = graft_shape_inference_run (repair->model, NULL);
  for (guint i = 0; i < baked->len; i++)
    {
      GraftNode *node = ((GraftBakedShape *) g_ptr_array_index (baked, i))->node;
      GraftValue *out = node->outputs->len ? g_ptr_array_index (node->outputs, 0) : NULL;
      const GraftShape *shape = graft_inference_get_shape (traced, out);
      if (shape != NULL && !g_hash_table_contains (static_out, node))
        g_hash_table_insert (static_out, node, copy_shape (shape));
    }
  input->shape.dims[axis] = graft_dim_symbolic (symbol);
  if (baked->len > 0)
    repair->session = session = graft_shape_inference_session_new (repair->model);
  /* One repair per node, with all its matching elements, in graph order. */
  for (guint i = 0; ok && i < baked->len;)
    {
      GraftBakedShape *b = g_ptr_array_index (baked, i);
      g_autoptr(GPtrArray) entries = g_ptr_array_new ();

      for (; i < baked->len && ((GraftBakedShape *) g_ptr_array_index (baked, i))->node == b->node; i++)
        g_ptr_array_add (entries, g_ptr_array_index (baked, i));
      ok = repair_node (repair, entries, g_hash_table_lookup (static_out, b->node), symbol, notes, error);
    }
  repair->session = NULL;
  g_clear_pointer (&repair->inference, graft_inference_unref);
  return ok;
}

/* Rounds of search and repair, each after the constants replicated at the
 * traced size that the dim now reaches are cut to one entry (the dim
 * reaches some only through sizes the round before repaired). */
#define MAKE_DYNAMIC_MAX_ROUNDS 4

static gboolean
make_dynamic (GraftModel *model, GraftValue *input, int axis, const char *symbol, GraftSplitReadings *readings,
              GPtrArray *notes, GError **error)
{
  GraftDim old = input->shape.dims[axis];
  g_autoptr(GHashTable) node_names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  Repair repair = { model, graft_model_get_graph (model), NULL, node_names, NULL };

  for (guint i = 0; i < repair.graph->nodes->len; i++)
    g_hash_table_add (node_names, g_strdup (((GraftNode *) g_ptr_array_index (repair.graph->nodes, i))->name));

  if (old.kind == GRAFT_DIM_FIXED)
    {
      if (graft_edit_inline_shape_functions (model, notes, error) == G_MAXUINT)
        return FALSE;
      for (guint i = 0; i < repair.graph->nodes->len; i++)
        g_hash_table_add (node_names, g_strdup (((GraftNode *) g_ptr_array_index (repair.graph->nodes, i))->name));
      fold_size_inputs (model, notes);
      /* The search's own repairs first (a fill or tile of the traced
       * size follows the dim); then constants that still hold the batch's
       * entries, and the search again past them. */
      for (guint round = 0; round < MAKE_DYNAMIC_MAX_ROUNDS; round++)
        {
          if (!search_and_repair (&repair, input, axis, old, symbol, readings, notes, error))
            return FALSE;
          if (unreplicate_constants (&repair, symbol, old.value, notes) == 0)
            break;
        }
    }
  input->shape.dims[axis] = graft_dim_symbolic (symbol);
  g_clear_pointer (&repair.inference, graft_inference_unref);
  update_declared_shapes (model, input, old.kind == GRAFT_DIM_FIXED ? old.value : G_MININT64);
  return TRUE;
}

static gboolean
valid_symbol (const char *symbol, GError **error)
{
  if (symbol == NULL || symbol[0] == '\0' || g_ascii_isdigit (symbol[0]) || strchr (symbol, '*') != NULL
      || strchr (symbol, ':') != NULL
      || strcmp (symbol, GRAFT_PROBE_SYMBOL) == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' is not a usable dimension name (use a word such as batch or sequence)", symbol ? symbol : "");
      return FALSE;
    }
  return TRUE;
}

gboolean
graft_edit_do_make_dim_dynamic (GraftModel *model, const char *name, int axis, const char *symbol,
                                GraftSplitReadings *readings, GPtrArray *notes, GError **error)
{
  GraftValue *input;

  if (!valid_symbol (symbol, error) || (input = checked_input_axis (model, name, axis, error)) == NULL)
    return FALSE;
  /* torch.export's IR has no Shape/Gather to rebuild sizes from: its
   * programs get their own repair, proven before it returns. */
  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM
      && input->shape.dims[axis].kind != GRAFT_DIM_UNKNOWN)
    return graft_edit_unspecialize (model, input, axis, symbol, notes, error);
  return make_dynamic (model, input, axis, symbol, readings, notes, error);
}

gboolean
graft_edit_do_set_input_shape (GraftModel *model, const char *name, int rank, const gint64 *dims, GPtrArray *notes,
                               GError **error)
{
  GraftValue *input = graft_edit_find_input (graft_model_get_graph (model), name, error);

  if (input == NULL)
    return FALSE;
  for (int i = 0; i < rank; i++)
    if (dims[i] <= 0)
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                     "dim %d of the new shape of '%s' is %" G_GINT64_FORMAT "; dims must be positive", i, name, dims[i]);
        return FALSE;
      }
  if (input->shape.rank < 0)
    graft_shape_init (&input->shape, rank);
  if (input->shape.rank != rank)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "input '%s' has rank %d; the new shape has rank %d", name, input->shape.rank, rank);
      return FALSE;
    }
  /* Changing a traced dim: free it (repairing the constants that froze it)
   * and then fix it to the new value. */
  for (int i = 0; i < rank; i++)
    {
      GraftDim *d = &input->shape.dims[i];
      g_autofree char *symbol = g_strdup_printf ("graft_dim_%d", i);

      /* The sizes are fixed again at once: a split read the usual way
       * (outermost) is checked by the caller's verification. */
      if (d->kind == GRAFT_DIM_FIXED && d->value != dims[i]
          && !make_dynamic (model, input, i, symbol, NULL, notes, error))
        return FALSE;
    }
  for (int i = 0; i < rank; i++)
    input->shape.dims[i] = graft_dim_fixed (dims[i]);
  update_declared_shapes (model, input, G_MININT64);
  return TRUE;
}
