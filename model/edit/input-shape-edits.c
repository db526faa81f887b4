/* Input shapes: make a dim dynamic (repairing the constants that froze its
 * traced size, dynamic-dim.c) and fix an input's shape, as operation-table
 * rows. Both change input dims, which graft_edit_verify() then proves at
 * other sizes. */
#include "edit/edit-private.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "analysis/baked-shape.h"

#include <string.h>

/* make-dim-dynamic's parameters read, and what one repair works with. */
typedef struct {
  const char *input;
  int axis;
  char *symbol;              /* without the range */
  gint64 range_min, range_max; /* "NAME:MIN[:MAX]"; range_min 0 when none was given, range_max -1 without MAX */
  GArray *changed_dims;      /* GraftDimCheckDim */
  GPtrArray *notes;          /* char*, the current attempt's */
} DynamicDim;

/* "batch:1:64" → "batch", 1, 64. An unreadable range leaves the ':' in
 * the symbol, which the edit then refuses as no usable name. */
static char *
split_symbol (const char *text, gint64 *min, gint64 *max)
{
  g_auto(GStrv) parts = g_strsplit (text, ":", 3);
  guint64 low = 0, high = 0;

  *min = 0;
  *max = -1;
  if (parts[0] == NULL || parts[1] == NULL)
    return g_strdup (text);
  if (!g_ascii_string_to_unsigned (parts[1], 10, 1, G_MAXINT32, &low, NULL)
      || (parts[2] != NULL && !g_ascii_string_to_unsigned (parts[2], 10, low, G_MAXINT32, &high, NULL)))
    return g_strdup (text);
  *min = (gint64) low;
  *max = parts[2] != NULL ? (gint64) high : -1;
  return g_strdup (parts[0]);
}

/* A dim the user names as a batch gets the batch-invariance check. */
static gboolean
names_a_batch (const char *symbol)
{
  g_autofree char *lower = g_ascii_strdown (symbol, -1);

  return strstr (lower, "batch") != NULL;
}

/* The ambiguous split (an index in graph->nodes listed in ambiguous) that
 * a failed check blamed, or -1. */
static int
blamed_split (GraftGraph *graph, GArray *ambiguous, GraftDimCheck *check)
{
  GraftNode *failed = check->failed_node ? graft_graph_find_node (graph, check->failed_node) : NULL;
  g_autoptr(GPtrArray) queue = g_ptr_array_new ();
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);

  /* The failed node itself, else the nearest such choice upstream of it
   * (two slices x[:, 1:] - x[:, :15] fail at the Sub that meets them). */
  if (failed != NULL)
    g_ptr_array_add (queue, failed);
  for (guint q = 0; q < queue->len && q < 256; q++)
    {
      GraftNode *node = g_ptr_array_index (queue, q);

      for (guint i = 0; i < ambiguous->len; i++)
        if (g_array_index (ambiguous, guint, i) == node->index)
          return node->index;
      for (guint i = 0; i < node->inputs->len; i++)
        {
          GraftValue *in = g_ptr_array_index (node->inputs, i);
          if (in != NULL && in->producer != NULL && in->producer->graph == graph
              && g_hash_table_add (seen, in->producer))
            g_ptr_array_add (queue, in->producer);
        }
    }
  return -1;
}

static char *
split_signature (GraftGraph *graph, guint index)
{
  GraftNode *node = g_ptr_array_index (graph->nodes, index);
  GString *signature = g_string_new (node->op);

  /* Every constant input: a Slice's starts alone say little. */
  for (guint i = 1; i < node->inputs->len; i++)
    {
      GraftTensor *constant = graft_value_get_constant (g_ptr_array_index (node->inputs, i));
      g_autofree char *values = constant ? graft_tensor_format_ints (constant) : g_strdup ("?");
      g_string_append_printf (signature, " %s", values);
    }
  return g_string_free (signature, FALSE);
}

/* Reads the split at index the other way, and so every node with the same
 * op and constant (the same layer repeated, before or after it). */
static void
flip_splits (GraftGraph *graph, GHashTable *innermost, guint index)
{
  g_autofree char *signature = split_signature (graph, index);
  gboolean to_innermost = !g_hash_table_contains (innermost, GUINT_TO_POINTER (index + 1));

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autofree char *other = NULL;

      if (node->op != ((GraftNode *) g_ptr_array_index (graph->nodes, index))->op)
        continue;
      other = split_signature (graph, i);
      if (strcmp (signature, other) != 0)
        continue;
      if (to_innermost)
        g_hash_table_add (innermost, GUINT_TO_POINTER (i + 1));
      else
        g_hash_table_remove (innermost, GUINT_TO_POINTER (i + 1));
    }
}

/* Whether a Reshape takes its target from a Concat: the only case where
 * the second reading (readings.concat_targets) can differ. */
static gboolean
reshape_takes_concat (GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftValue *target = node->inputs->len > 1 ? g_ptr_array_index (node->inputs, 1) : NULL;
      if (node->op == g_intern_static_string ("onnx::Reshape") && target != NULL && target->producer != NULL
          && target->producer->op == g_intern_static_string ("onnx::Concat"))
        return TRUE;
    }
  return FALSE;
}

/* One round of repairs from before with the readings' options, retrying
 * ambiguous splits as make_dim_dynamic says. */
static gboolean
repair_with_readings (DynamicDim *self, GraftModel *model, GraftGraph *before, GPtrArray *inlined,
                      GraftSplitReadings *readings, GError **error)
{
  GHashTable *innermost = readings->innermost;
  GArray *ambiguous = readings->ambiguous;

  for (guint attempt = 0;; attempt++)
    {
      g_autoptr(GraftDimCheck) check = NULL;
      int blamed;

      g_array_set_size (ambiguous, 0);
      g_ptr_array_set_size (self->notes, 0);
      for (guint i = 0; i < inlined->len; i++)
        g_ptr_array_add (self->notes, g_strdup (g_ptr_array_index (inlined, i)));
      if (!graft_edit_do_make_dim_dynamic (model, self->input, self->axis, self->symbol, readings, self->notes,
                                           error))
        return FALSE;
      if (ambiguous->len == 0)
        return TRUE;
      check = graft_dim_check_run (model, (GraftDimCheckDim *) self->changed_dims->data, self->changed_dims->len, NULL);
      if (check == NULL || check->passed || attempt > 2 * ambiguous->len
          || (blamed = blamed_split (before, ambiguous, check)) < 0)
        return TRUE;
      flip_splits (before, innermost, blamed);
      graft_model_set_graph (model, graft_graph_copy (before, NULL));
    }
}

/* Merged dims the repair could split two ways (8 = batch × heads as
 * [2, 4], where 4 is 2 × 2 too; 32 = seq × batch as [16, 2]), and Slice
 * bounds that may be literals or the size minus a constant, are not
 * guessed: the repair reads them outermost (bounds as literals) and runs
 * the result at other sizes; when the check blames a node whose reading
 * was such a choice (the failed node or the nearest one upstream of it),
 * that node (and the nodes of the same pattern, as repeated layers have)
 * is read the other way, and the repair is done again. When the result
 * still fails, the repairs are done once more with Reshape targets built
 * by Concat read too (readings.concat_targets), and kept if they pass.
 * What stays wrong is left for the caller's verification to report. */
static gboolean
repair (DynamicDim *self, GraftModel *model, GError **error)
{
  g_autoptr(GraftGraph) before = NULL;
  g_autoptr(GHashTable) innermost = g_hash_table_new (NULL, NULL);
  g_autoptr(GArray) ambiguous = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GPtrArray) inlined = g_ptr_array_new_with_free_func (g_free);
  GraftSplitReadings readings = { innermost, ambiguous, FALSE };
  g_autoptr(GraftDimCheck) check = NULL;

  /* Before the copy the attempts start from: the readings name nodes of
   * the graph with the function bodies in it. */
  if (self->range_min > 0)
    graft_model_set_dim_range (model, self->symbol, self->range_min, self->range_max);
  if (graft_edit_inline_shape_functions (model, inlined, error) == G_MAXUINT)
    return FALSE;
  before = graft_graph_copy (graft_model_get_graph (model), NULL);
  if (!repair_with_readings (self, model, before, inlined, &readings, error))
    return FALSE;
  /* the second reading only where it can differ: a Reshape taking a Concat */
  if (reshape_takes_concat (before))
    check = graft_dim_check_run (model, (GraftDimCheckDim *) self->changed_dims->data, self->changed_dims->len, NULL);
  if (check != NULL && !check->passed)
    {
      /* the first result stays aside (graph, notes, readings) in case the
       * second fails too: the verification then reports the first */
      g_autoptr(GraftGraph) first = graft_graph_copy (graft_model_get_graph (model), NULL);
      g_autoptr(GPtrArray) first_notes = g_steal_pointer (&self->notes);
      g_autoptr(GHashTable) second_innermost = g_hash_table_new (NULL, NULL);
      g_autoptr(GraftDimCheck) second = NULL;

      self->notes = g_ptr_array_new_with_free_func (g_free);
      readings.innermost = second_innermost;
      readings.concat_targets = TRUE;
      graft_model_set_graph (model, graft_graph_copy (before, NULL));
      if (repair_with_readings (self, model, before, inlined, &readings, error))
        second = graft_dim_check_run (model, (GraftDimCheckDim *) self->changed_dims->data, self->changed_dims->len,
                                      NULL);
      else
        g_clear_error (error);
      if (second == NULL || !second->passed)
        {
          graft_model_set_graph (model, g_steal_pointer (&first));
          g_ptr_array_unref (self->notes);
          self->notes = g_steal_pointer (&first_notes);
          readings.innermost = innermost;
        }
      else
        {
          g_hash_table_unref (innermost);
          innermost = g_steal_pointer (&second_innermost);
        }
    }
  if (g_hash_table_size (innermost) > 0)
    {
      GHashTableIter iter;
      gpointer key;
      guint slices = 0;

      g_hash_table_iter_init (&iter, innermost);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        slices += ((GraftNode *) g_ptr_array_index (before->nodes, GPOINTER_TO_UINT (key) - 1))->op
                  == g_intern_static_string ("onnx::Slice");
      if (g_hash_table_size (innermost) > slices)
        g_ptr_array_add (self->notes, g_strdup_printf ("%u merged dims were split with %s:%d innermost: the outermost "
                                                       "reading failed at other sizes",
                                                       g_hash_table_size (innermost) - slices, self->input,
                                                       self->axis));
      if (slices > 0)
        g_ptr_array_add (self->notes, g_strdup_printf ("%u slice bounds were read from the end of %s:%d: as fixed "
                                                       "sizes they failed at other sizes", slices, self->input,
                                                       self->axis));
    }
  return TRUE;
}

/* The input's dims an edit changes: for make-dim-dynamic its dim (a batch
 * when its name says so), for set-input-shape each dim whose size changes. */
static void
changed_dims (GraftGraph *graph, GVariant *params, GArray *dims)
{
  const char *name = graft_edit_param_string (params, "input");
  const char *symbol_text = graft_edit_param_string (params, "symbol");
  g_autoptr(GVariant) new_dims = g_variant_lookup_value (params, "dims", G_VARIANT_TYPE ("ax"));
  const gint64 *sizes = NULL;
  gsize n_sizes = 0;
  int dynamic_axis = symbol_text != NULL ? (int) graft_edit_param_int (params, "axis", -1) : -1;
  GraftValue *input = NULL;

  if (new_dims != NULL)
    sizes = g_variant_get_fixed_array (new_dims, &n_sizes, sizeof (gint64));
  for (guint i = 0; name != NULL && i < graph->inputs->len && input == NULL; i++)
    if (strcmp (((GraftValue *) g_ptr_array_index (graph->inputs, i))->name, name) == 0)
      input = g_ptr_array_index (graph->inputs, i);
  if (input == NULL || input->shape.rank < 0)
    return;
  for (int axis = 0; axis < input->shape.rank; axis++)
    {
      GraftDim *d = &input->shape.dims[axis];
      GraftDimCheckDim dim = { name, axis, d->kind == GRAFT_DIM_FIXED ? d->value : 0, FALSE };

      if (symbol_text != NULL && axis == dynamic_axis)
        {
          gint64 min, max;
          g_autofree char *symbol = split_symbol (symbol_text, &min, &max);
          dim.batch = names_a_batch (symbol);
        }
      else if (sizes == NULL || axis >= (int) n_sizes || (d->kind == GRAFT_DIM_FIXED && d->value == sizes[axis]))
        continue;
      g_array_append_val (dims, dim);
    }
}

static gboolean
make_dim_dynamic (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  DynamicDim self = {
    graft_edit_param_string (params, "input"), (int) graft_edit_param_int (params, "axis", 0), NULL, 0, -1,
    g_array_new (FALSE, FALSE, sizeof (GraftDimCheckDim)), g_ptr_array_new_with_free_func (g_free),
  };
  gboolean done;

  self.symbol = split_symbol (graft_edit_param_string (params, "symbol"), &self.range_min, &self.range_max);
  changed_dims (graft_model_get_graph (scope->model), params, self.changed_dims);
  done = repair (&self, scope->model, error);
  for (guint i = 0; done && i < self.notes->len; i++)
    g_ptr_array_add (notes, g_strdup (g_ptr_array_index (self.notes, i)));
  g_free (self.symbol);
  g_array_unref (self.changed_dims);
  g_ptr_array_unref (self.notes);
  return done;
}

static gboolean
set_input_shape (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  g_autoptr(GVariant) dims = g_variant_lookup_value (params, "dims", G_VARIANT_TYPE ("ax"));
  gsize n;
  const gint64 *values = g_variant_get_fixed_array (dims, &n, sizeof (gint64));

  return graft_edit_do_set_input_shape (scope->model, graft_edit_param_string (params, "input"), (int) n, values,
                                        notes, error);
}

static char *
describe_make_dim_dynamic (GVariant *params)
{
  return g_strdup_printf ("Make %s:%d dynamic (%s)", graft_edit_param_string (params, "input"),
                          (int) graft_edit_param_int (params, "axis", 0), graft_edit_param_string (params, "symbol"));
}

static char *
describe_set_input_shape (GVariant *params)
{
  g_autoptr(GVariant) dims = g_variant_lookup_value (params, "dims", G_VARIANT_TYPE ("ax"));
  gsize n;
  const gint64 *values = g_variant_get_fixed_array (dims, &n, sizeof (gint64));
  g_autoptr(GString) text = g_string_new (NULL);

  for (gsize i = 0; i < n; i++)
    g_string_append_printf (text, "%s%" G_GINT64_FORMAT, i ? "×" : "", values[i]);
  return g_strdup_printf ("Set %s to %s", graft_edit_param_string (params, "input"), text->str);
}

const GraftEditOperation graft_edit_ops_input_shape[] = {
  { .id = "make-dim-dynamic", .node_params = "", .value_params = "input", .apply = make_dim_dynamic,
    .describe = describe_make_dim_dynamic, .required = "input:s axis:x symbol:s",
    .flags = GRAFT_EDIT_MAIN_GRAPH | GRAFT_EDIT_SLOW, .changed_dims = changed_dims,
    .option = "--dynamic", .argument = "INPUT:AXIS=NAME[:MIN[:MAX]]", .parse = graft_edit_parse_dynamic,
    .help = "make a dim dynamic (in MIN..MAX), repairing baked shape constants (on a .pt2 whose dim torch.export "
            "specialized: proven at two other sizes against the original run sample by sample, or refused)",
    .target = GRAFT_EDIT_TARGET_INPUT },
  { .id = "set-input-shape", .node_params = "", .value_params = "input", .apply = set_input_shape,
    .describe = describe_set_input_shape, .required = "input:s dims:ax",
    .flags = GRAFT_EDIT_MAIN_GRAPH | GRAFT_EDIT_SLOW, .changed_dims = changed_dims,
    .option = "--shape", .argument = "INPUT=1x3x224x224", .parse = graft_edit_parse_shape,
    .help = "fix an input's shape", .target = GRAFT_EDIT_TARGET_INPUT },
  { NULL },
};
