#include "edit/edit.h"
#include "edit/edit-private.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "edit/address.h"
#include "analysis/baked-shape.h"

#include <string.h>

G_DEFINE_QUARK (graft-edit-error-quark, graft_edit_error)

struct _GraftEdit {
  GObject parent_instance;

  GraftEditKind kind;
  char *description;
  char *target;            /* input or node name */
  int axis;
  char *symbol;
  gint64 range_min, range_max; /* MAKE_DIM_DYNAMIC's NAME:MIN[:MAX]; range_min 0 when none was given */
  GArray *dims;            /* gint64, SET_INPUT_SHAPE */
  GStrv inputs, outputs;   /* EXTRACT */
  const GraftEditOperation *operation; /* every kind */
  GVariant *params;        /* as given, a{sv} */
  GVariant *recorded;      /* params with addresses, from the last apply */

  GraftGraph *snapshot;    /* the graph before apply, while applied */
  GVariant *opsets_snapshot; /* the model's opset imports before apply, while applied */
  GraftFunction *function; /* the function whose body was edited, while applied */
  GraftGraph *function_snapshot;
  GPtrArray *notes;
  GArray *changed_dims;    /* GraftDimCheckDim: input dims the last apply changed */
};

G_DEFINE_FINAL_TYPE (GraftEdit, graft_edit, G_TYPE_OBJECT)

static void
graft_edit_finalize (GObject *object)
{
  GraftEdit *self = GRAFT_EDIT (object);

  g_free (self->description);
  g_free (self->target);
  g_free (self->symbol);
  g_clear_pointer (&self->dims, g_array_unref);
  g_strfreev (self->inputs);
  g_strfreev (self->outputs);
  g_clear_pointer (&self->snapshot, graft_graph_free);
  g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
  g_clear_pointer (&self->function_snapshot, graft_graph_free);
  g_clear_pointer (&self->params, g_variant_unref);
  g_clear_pointer (&self->recorded, g_variant_unref);
  g_ptr_array_unref (self->notes);
  g_array_unref (self->changed_dims);
  G_OBJECT_CLASS (graft_edit_parent_class)->finalize (object);
}

static void
graft_edit_class_init (GraftEditClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = graft_edit_finalize;
}

static void
graft_edit_init (GraftEdit *self)
{
  self->notes = g_ptr_array_new_with_free_func (g_free);
  self->changed_dims = g_array_new (FALSE, FALSE, sizeof (GraftDimCheckDim));
}

static const char *const structure_ids[] = {
  [GRAFT_EDIT_MAKE_DIM_DYNAMIC] = "make-dim-dynamic",
  [GRAFT_EDIT_SET_INPUT_SHAPE] = "set-input-shape",
  [GRAFT_EDIT_DELETE_NODE] = "delete-node",
  [GRAFT_EDIT_BYPASS_NODE] = "bypass-node",
  [GRAFT_EDIT_EXTRACT] = "extract",
};

static GraftEdit *
edit_new (GraftEditKind kind, const char *target, char *description /* transfer full */)
{
  GraftEdit *self = g_object_new (GRAFT_TYPE_EDIT, NULL);

  self->kind = kind;
  self->target = g_strdup (target);
  self->description = description;
  if (kind != GRAFT_EDIT_OPERATION)
    self->operation = graft_edit_operation_lookup (structure_ids[kind]);
  return self;
}

static GraftEdit *
take_params (GraftEdit *self, GVariant *params)
{
  self->params = g_variant_ref_sink (params);
  return self;
}

GraftEdit *
graft_edit_new_make_dim_dynamic (const char *input, int axis, const char *symbol)
{
  /* symbol may carry the dim's range: NAME:MIN[:MAX] */
  g_auto(GStrv) parts = g_strsplit (symbol, ":", 3);
  GraftEdit *self = edit_new (GRAFT_EDIT_MAKE_DIM_DYNAMIC, input,
                              g_strdup_printf ("Make %s:%d dynamic (%s)", input, axis, symbol));
  self->axis = axis;
  self->symbol = g_strdup (parts[0]);
  self->range_max = -1;
  if (parts[0] != NULL && parts[1] != NULL)
    {
      guint64 min = 0, max = 0;
      /* An unreadable range leaves the ':' in the symbol, which the edit
       * then refuses as no usable name. */
      if (!g_ascii_string_to_unsigned (parts[1], 10, 1, G_MAXINT32, &min, NULL)
          || (parts[2] != NULL && !g_ascii_string_to_unsigned (parts[2], 10, min, G_MAXINT32, &max, NULL)))
        {
          g_free (self->symbol);
          self->symbol = g_strdup (symbol);
        }
      else
        {
          self->range_min = (gint64) min;
          self->range_max = parts[2] != NULL ? (gint64) max : -1;
        }
    }
  return take_params (self, graft_edit_params_new ("input", g_variant_new_string (input),
                                                   "axis", g_variant_new_int64 (axis),
                                                   "symbol", g_variant_new_string (symbol), NULL));
}

GraftEdit *
graft_edit_new_set_input_shape (const char *input, int rank, const gint64 *dims)
{
  GString *text = g_string_new (NULL);
  GraftEdit *self;

  for (int i = 0; i < rank; i++)
    g_string_append_printf (text, "%s%" G_GINT64_FORMAT, i ? "×" : "", dims[i]);
  self = edit_new (GRAFT_EDIT_SET_INPUT_SHAPE, input, g_strdup_printf ("Set %s to %s", input, text->str));
  g_string_free (text, TRUE);
  self->dims = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_array_append_vals (self->dims, dims, rank);
  return take_params (self, graft_edit_params_new ("input", g_variant_new_string (input),
                                                   "dims", g_variant_new_fixed_array (G_VARIANT_TYPE_INT64, dims,
                                                                                      rank, sizeof (gint64)),
                                                   NULL));
}

GraftEdit *
graft_edit_new_delete_node (const char *node)
{
  return take_params (edit_new (GRAFT_EDIT_DELETE_NODE, node, g_strdup_printf ("Delete %s", node)),
                      graft_edit_params_new ("node", g_variant_new_string (node), NULL));
}

GraftEdit *
graft_edit_new_bypass_node (const char *node)
{
  return take_params (edit_new (GRAFT_EDIT_BYPASS_NODE, node, g_strdup_printf ("Bypass %s", node)),
                      graft_edit_params_new ("node", g_variant_new_string (node), NULL));
}

GraftEdit *
graft_edit_new_extract (const char *const *inputs, const char *const *outputs)
{
  g_autofree char *in = g_strjoinv (", ", (char **) inputs);
  g_autofree char *out = g_strjoinv (", ", (char **) outputs);
  GraftEdit *self = edit_new (GRAFT_EDIT_EXTRACT, NULL, g_strdup_printf ("Extract %s → %s", in, out));

  self->inputs = g_strdupv ((char **) inputs);
  self->outputs = g_strdupv ((char **) outputs);
  return take_params (self, graft_edit_params_new ("inputs", g_variant_new_strv (inputs, -1),
                                                   "outputs", g_variant_new_strv (outputs, -1), NULL));
}

static gboolean
require (GVariant *params, const char *id, const char *key, const char *type, GError **error)
{
  g_autoptr(GVariant) value = g_variant_lookup_value (params, key, G_VARIANT_TYPE (type));

  if (value != NULL)
    return TRUE;
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "%s needs the parameter '%s' (%s)", id, key,
               strcmp (type, "s") == 0 ? "a string" : strcmp (type, "x") == 0 ? "an integer" : "a list");
  return FALSE;
}

/* The kinds with their own constructors, from parameters. */
static GraftEdit *
new_structure_edit (const char *id, GVariant *params, GError **error)
{
  const char *input = graft_edit_param_string (params, "input");

  if (strcmp (id, "make-dim-dynamic") == 0)
    return require (params, id, "input", "s", error) && require (params, id, "axis", "x", error)
                   && require (params, id, "symbol", "s", error)
               ? graft_edit_new_make_dim_dynamic (input, graft_edit_param_int (params, "axis", 0),
                                                  graft_edit_param_string (params, "symbol"))
               : NULL;
  if (strcmp (id, "set-input-shape") == 0)
    {
      g_autoptr(GVariant) dims = NULL;
      gsize n;
      const gint64 *values;

      if (!require (params, id, "input", "s", error) || !require (params, id, "dims", "ax", error))
        return NULL;
      dims = g_variant_lookup_value (params, "dims", G_VARIANT_TYPE ("ax"));
      values = g_variant_get_fixed_array (dims, &n, sizeof (gint64));
      return graft_edit_new_set_input_shape (input, n, values);
    }
  if (strcmp (id, "delete-node") == 0 || strcmp (id, "bypass-node") == 0)
    {
      if (!require (params, id, "node", "s", error))
        return NULL;
      return id[0] == 'd' ? graft_edit_new_delete_node (graft_edit_param_string (params, "node"))
                          : graft_edit_new_bypass_node (graft_edit_param_string (params, "node"));
    }
  {
    g_autofree const char **inputs = graft_edit_param_strv (params, "inputs");
    g_autofree const char **outputs = graft_edit_param_strv (params, "outputs");
    if (inputs == NULL || outputs == NULL)
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "extract needs 'inputs' and 'outputs' lists");
        return NULL;
      }
    return graft_edit_new_extract (inputs, outputs);
  }
}

GraftEdit *
graft_edit_new_operation (const char *id, GVariant *params, GError **error)
{
  const GraftEditOperation *operation = graft_edit_operation_lookup (id);
  g_autoptr(GVariant) owned = g_variant_ref_sink (params ? params : g_variant_new_array (G_VARIANT_TYPE ("{sv}"), NULL, 0));
  GraftEdit *self;

  if (operation == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "no edit operation is called '%s'", id);
      return NULL;
    }
  if (!g_variant_is_of_type (owned, G_VARIANT_TYPE_VARDICT))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the parameters of '%s' are not a dictionary", id);
      return NULL;
    }
  if (operation->apply == NULL)
    return new_structure_edit (id, owned, error);
  self = edit_new (GRAFT_EDIT_OPERATION, NULL, operation->describe (owned));
  self->operation = operation;
  self->params = g_variant_ref (owned);
  return self;
}

const char *
graft_edit_get_operation_id (GraftEdit *self)
{
  return self->operation->id;
}

GVariant *
graft_edit_get_params (GraftEdit *self)
{
  return self->params;
}

GVariant *
graft_edit_get_recorded_params (GraftEdit *self)
{
  return self->recorded;
}

char *
graft_edit_suggest_dim_symbol (const GraftValue *input, int axis)
{
  static const char *const image_4d[] = { "batch", "channels", "height", "width" };
  static const char *const image_5d[] = { "batch", "channels", "depth", "height", "width" };
  int rank = input != NULL ? input->shape.rank : -1;

  if (axis == 0)
    return g_strdup ("batch");
  if (rank == 4 && axis < 4)
    return g_strdup (image_4d[axis]);
  if (rank == 5 && axis < 5)
    return g_strdup (image_5d[axis]);
  if (axis == 1)
    return g_strdup ("sequence");
  return g_strdup_printf ("dim%d", axis);
}

GraftEditKind
graft_edit_get_kind (GraftEdit *self)
{
  return self->kind;
}

const char *
graft_edit_get_description (GraftEdit *self)
{
  return self->description;
}

gboolean
graft_edit_is_applied (GraftEdit *self)
{
  return self->snapshot != NULL;
}

GPtrArray *
graft_edit_get_notes (GraftEdit *self)
{
  return self->notes;
}

/* A dim the user names as a batch gets the batch-invariance check. */
static gboolean
names_a_batch (const char *symbol)
{
  g_autofree char *lower = g_ascii_strdown (symbol, -1);

  return strstr (lower, "batch") != NULL;
}

/* Which input dims this edit is about to change, with their sizes now. */
static void
record_changed_dims (GraftEdit *self, GraftGraph *graph)
{
  GraftValue *input = NULL;

  g_array_set_size (self->changed_dims, 0);
  if (self->kind != GRAFT_EDIT_MAKE_DIM_DYNAMIC && self->kind != GRAFT_EDIT_SET_INPUT_SHAPE)
    return;
  for (guint i = 0; i < graph->inputs->len && input == NULL; i++)
    if (strcmp (((GraftValue *) g_ptr_array_index (graph->inputs, i))->name, self->target) == 0)
      input = g_ptr_array_index (graph->inputs, i);
  if (input == NULL || input->shape.rank < 0)
    return;
  for (int axis = 0; axis < input->shape.rank; axis++)
    {
      GraftDim *d = &input->shape.dims[axis];
      GraftDimCheckDim dim = { self->target, axis, d->kind == GRAFT_DIM_FIXED ? d->value : 0, FALSE };

      if (self->kind == GRAFT_EDIT_MAKE_DIM_DYNAMIC && axis == self->axis)
        dim.batch = names_a_batch (self->symbol);
      else if (self->kind != GRAFT_EDIT_SET_INPUT_SHAPE || axis >= (int) self->dims->len
               || (d->kind == GRAFT_DIM_FIXED && d->value == g_array_index (self->dims, gint64, axis)))
        continue;
      g_array_append_val (self->changed_dims, dim);
    }
}

GArray *
graft_edit_get_changed_dims (GraftEdit *self)
{
  return self->changed_dims;
}

GraftDimCheck *
graft_edit_verify (GraftEdit *self, GraftModel *model, GError **error)
{
  if (self->snapshot == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' is not applied", self->description);
      return NULL;
    }
  return graft_dim_check_run (model, (GraftDimCheckDim *) self->changed_dims->data, self->changed_dims->len, error);
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

/* Merged dims the repair could split two ways (8 = batch × heads as
 * [2, 4], where 4 is 2 × 2 too; 32 = seq × batch as [16, 2]), and Slice
 * bounds that may be literals or the size minus a constant, are not
 * guessed: the repair reads them outermost (bounds as literals) and runs
 * the result at other sizes; when the check blames a node whose reading
 * was such a choice (the failed node or the nearest one upstream of it),
 * that node (and the nodes of the same pattern, as repeated layers have)
 * is read the other way, and the repair is done again. What stays wrong is
 * left for the caller's verification to report. */
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
repair_with_readings (GraftEdit *self, GraftModel *model, GraftGraph *before, GPtrArray *inlined,
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
      if (!graft_edit_do_make_dim_dynamic (model, self->target, self->axis, self->symbol, readings, self->notes,
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
make_dim_dynamic (GraftEdit *self, GraftModel *model, GError **error)
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
                                                       g_hash_table_size (innermost) - slices, self->target,
                                                       self->axis));
      if (slices > 0)
        g_ptr_array_add (self->notes, g_strdup_printf ("%u slice bounds were read from the end of %s:%d: as fixed "
                                                       "sizes they failed at other sizes", slices, self->target,
                                                       self->axis));
    }
  return TRUE;
}

static gboolean
run (GraftEdit *self, GraftModel *model, GError **error)
{
  switch (self->kind)
    {
    case GRAFT_EDIT_MAKE_DIM_DYNAMIC:
      return make_dim_dynamic (self, model, error);
    case GRAFT_EDIT_SET_INPUT_SHAPE:
      return graft_edit_do_set_input_shape (model, self->target, self->dims->len, (gint64 *) self->dims->data,
                                            self->notes, error);
    case GRAFT_EDIT_DELETE_NODE:
      return graft_edit_do_delete_node (model, self->target, self->notes, error);
    case GRAFT_EDIT_BYPASS_NODE:
      return graft_edit_do_bypass_node (model, self->target, self->notes, error);
    case GRAFT_EDIT_EXTRACT:
      return graft_edit_do_extract (model, (const char *const *) self->inputs, (const char *const *) self->outputs,
                                    self->notes, error);
    case GRAFT_EDIT_OPERATION:
      {
        GraftEditScope scope;
        return graft_edit_scope_resolve (model, self->params, &scope, NULL, error)
               && self->operation->apply (&scope, self->params, self->notes, error);
      }
    default:
      g_assert_not_reached ();
    }
}

/* Puts back the function body the last apply edited. */
static void
restore_function (GraftEdit *self)
{
  if (self->function_snapshot == NULL)
    return;
  graft_graph_free (self->function->body);
  self->function->body = g_steal_pointer (&self->function_snapshot);
  self->function = NULL;
}

/* Replaces the nodes (or values) that params names under keys, one (s)
 * or a list (as), by their addresses in graph. */
static gboolean
record_addresses (GVariantDict *dict, GVariant *params, GStrv keys, GraftGraph *graph, gboolean nodes,
                  GError **error)
{
  for (guint i = 0; keys[i] != NULL; i++)
    {
      g_autofree const char **names = *keys[i] ? graft_edit_param_strv (params, keys[i]) : NULL;
      g_autoptr(GVariant) single = *keys[i] ? g_variant_lookup_value (params, keys[i], G_VARIANT_TYPE_STRING) : NULL;
      GVariantBuilder addresses;

      if (names == NULL)
        continue;
      g_variant_builder_init (&addresses, G_VARIANT_TYPE ("av"));
      for (guint j = 0; names[j] != NULL; j++)
        {
          GraftNode *node;
          GraftValue *value;

          /* An omitted optional input stays omitted. */
          if (!nodes && *names[j] == '\0')
            {
              g_variant_builder_add (&addresses, "v", g_variant_new_string (""));
              continue;
            }
          node = nodes ? graft_edit_find_node (graph, names[j], error) : NULL;
          value = nodes ? NULL : graft_edit_find_value (graph, names[j], error);

          if (node == NULL && value == NULL)
            {
              g_variant_builder_clear (&addresses);
              return FALSE;
            }
          g_variant_builder_add (&addresses, "v", node ? graft_node_address_new (node) : graft_value_address_new (value));
        }
      if (single != NULL)
        {
          g_autoptr(GVariant) list = g_variant_ref_sink (g_variant_builder_end (&addresses));
          g_autoptr(GVariant) first = g_variant_get_child_value (list, 0);
          g_autoptr(GVariant) address = g_variant_get_variant (first);
          g_variant_dict_insert_value (dict, keys[i], address);
        }
      else
        g_variant_dict_insert_value (dict, keys[i], g_variant_builder_end (&addresses));
    }
  return TRUE;
}

/* Replaces each node and value the parameters name by its address in
 * scope's graph as it is now. */
static GVariant *
record_params (GraftEdit *self, GraftModel *model, GError **error)
{
  GraftEditScope scope;
  g_autoptr(GVariant) path = NULL;
  g_auto(GStrv) node_keys = g_strsplit (self->operation->node_params, " ", -1);
  g_auto(GStrv) value_keys = g_strsplit (self->operation->value_params, " ", -1);
  GVariantDict dict;

  if (!graft_edit_scope_resolve (model, self->params, &scope, &path, error))
    return NULL;
  g_variant_dict_init (&dict, self->params);
  if (path != NULL)
    {
      g_variant_dict_remove (&dict, "graph");
      g_variant_dict_insert_value (&dict, "graph_path", path);
    }
  if (!record_addresses (&dict, self->params, node_keys, scope.graph, TRUE, error)
      || !record_addresses (&dict, self->params, value_keys, scope.graph, FALSE, error))
    {
      g_variant_dict_clear (&dict);
      return NULL;
    }
  return g_variant_ref_sink (g_variant_dict_end (&dict));
}

gboolean
graft_edit_apply (GraftEdit *self, GraftModel *model, GError **error)
{
  return graft_edit_apply_with_snapshot (self, model, NULL, error);
}

gboolean
graft_edit_apply_with_snapshot (GraftEdit *self, GraftModel *model, GraftGraph *given, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GraftGraph) prepared = given;
  GraftGraph *snapshot;
  GraftEditScope scope;
  g_autoptr(GVariant) recorded = NULL;
  g_autoptr(GError) record_error = NULL;
  gboolean done;

  if (self->snapshot != NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' is already applied", self->description);
      return FALSE;
    }
  if (graph == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the model has no graph to edit");
      return FALSE;
    }
  if (!graft_edit_scope_resolve (model, self->params, &scope, NULL, error))
    return FALSE;
  /* Addresses are taken before the change; when a target is missing the
   * operation's own error says it best, so that one is reported. */
  recorded = record_params (self, model, &record_error);
  snapshot = prepared != NULL ? g_steal_pointer (&prepared) : graft_graph_copy (graph, NULL);
  g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
  self->opsets_snapshot = graft_model_save_opsets (model);
  self->function = scope.function;
  if (scope.function != NULL)
    self->function_snapshot = graft_graph_copy (scope.function->body, NULL);
  g_ptr_array_set_size (self->notes, 0);
  record_changed_dims (self, graph);
  done = run (self, model, error);
  if (done && recorded == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&record_error));
      done = FALSE;
    }
  if (!done)
    {
      graft_model_set_graph (model, snapshot);
      graft_model_restore_opsets (model, self->opsets_snapshot);
      g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
      restore_function (self);
      g_ptr_array_set_size (self->notes, 0);
      return FALSE;
    }
  self->snapshot = snapshot;
  g_clear_pointer (&self->recorded, g_variant_unref);
  self->recorded = g_steal_pointer (&recorded);
  return TRUE;
}

gboolean
graft_edit_undo (GraftEdit *self, GraftModel *model, GError **error)
{
  if (self->snapshot == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' is not applied", self->description);
      return FALSE;
    }
  graft_model_set_graph (model, g_steal_pointer (&self->snapshot));
  graft_model_restore_opsets (model, self->opsets_snapshot);
  g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
  restore_function (self);
  return TRUE;
}

GraftModel *
graft_edit_apply_to_copy (GraftEdit *self, GraftModel *model, GError **error)
{
  g_autoptr(GraftModel) copy = graft_model_copy (model);

  if (!graft_edit_apply (self, copy, error))
    return NULL;
  /* The snapshot of a function body belongs to the copy's function. */
  if (self->function != NULL)
    {
      graft_edit_undo (self, copy, NULL);
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' edits a function body: it cannot be applied on a copy of the model", self->description);
      return NULL;
    }
  return g_steal_pointer (&copy);
}

GraftValue *
graft_edit_find_input (GraftGraph *graph, const char *name, GError **error)
{
  g_autoptr(GString) names = g_string_new (NULL);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      if (input->initializer != NULL)
        continue;
      if (strcmp (input->name, name) == 0)
        return input;
      g_string_append_printf (names, "%s'%s'", names->len ? ", " : "", input->name);
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the graph has no input '%s' (inputs: %s)", name,
               names->len ? names->str : "none");
  return NULL;
}

GraftValue *
graft_edit_find_value (GraftGraph *graph, const char *name, GError **error)
{
  GraftValue *value = name ? graft_graph_lookup_value (graph, name) : NULL;

  if (name == NULL)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the edit names no value");
  else if (value == NULL)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the %s has no value named '%s'",
                 graph->parent_node ? "subgraph" : "graph", name);
  return value;
}

GraftNode *
graft_edit_find_node (GraftGraph *graph, const char *name, GError **error)
{
  GraftNode *node = name ? graft_graph_find_node (graph, name) : NULL;
  guint matches = 0;

  if (name == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the edit names no node");
      return NULL;
    }
  if (node != NULL)
    return node;
  for (guint i = 0; i < graph->nodes->len; i++)
    matches += strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->name, name) == 0;
  if (matches > 1)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND,
                 "%u nodes are named '%s'; the name does not say which one", matches, name);
  else
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the %s has no node named '%s'",
                 graph->parent_node ? "subgraph" : "graph", name);
  return NULL;
}
