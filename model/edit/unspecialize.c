/* Freeing a dim that torch.export specialized (a program exported without
 * dynamic_shapes: its batch baked to 2 in every view, expand, zeros,
 * arange and slice), then proving the result before anyone saves it.
 *
 * The sizes each value had are read from runs of Graft's runtime (an
 * observer records every value's shape): at the traced size on the
 * program as exported, and at two other sizes on the program as repaired
 * so far. A dim that scales with the freed one is a batch dim; a size
 * argument is repaired where its node's output must follow it:
 *   view / reshape / _unsafe_view  the output dim that holds the input's
 *                                  batch becomes -1 (an old -1 is spelled
 *                                  out as the size it had, which the runs
 *                                  showed does not scale);
 *   expand / repeat                -1 where the input carries the batch
 *                                  (expand), sym_size(input, axis) where
 *                                  a size-1 dim grows to the traced size;
 *   zeros / ones / empty / full / new_* / arange
 *                                  an entry equal to the traced size
 *                                  becomes sym_size(input, axis);
 *   slice                          an end at the traced size of a batch
 *                                  dim becomes "to the end".
 * A slice or select that keeps part of the batch, a reshape that splits
 * it, and any node that fails at another size pin the dim: the edit is
 * refused naming that node. What was repaired is proven: the program runs
 * at the traced size and at two others, and every output equals the
 * original program run sample by sample (in groups of the traced size)
 * within 1e-4·max|reference|.
 *
 * When the named input cannot be freed alone, the other inputs with a dim
 * of the traced size are freed with it (they carry the same batch). A dim
 * that was free already is renamed (torch calls it s77) and proven the
 * same way, without repairs. */
#include "edit/edit-private.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "runtime/inputs.h"
#include "runtime/runtime.h"

#include <math.h>
#include <string.h>

#define N_PROBES 2

typedef struct {
  int rank;
  gint64 dims[GRAFT_RT_MAX_RANK];
} Dims;

typedef struct {
  GraftValue *value;
  int axis;
} FreedInput;

typedef struct {
  GraftModel *model;
  GraftGraph *graph;
  GraftValue *input;                    /* the input named, freed[0] */
  int axis;
  GArray *freed;                        /* FreedInput: the input named, then inputs that carry the same batch */
  const char *symbol;
  gint64 traced;
  gint64 probes[N_PROBES];
  GHashTable *traced_dims;              /* value name → Dims* */
  GHashTable *probe_dims[N_PROBES];     /* of the program as repaired so far */
  char *probe_error[N_PROBES];          /* why a probe run stopped, or NULL */
  gboolean stale;                       /* a repair since the probes ran */
  gboolean renaming;                    /* the dim was free already: renamed, not repaired */
  GHashTable *other_inputs;             /* char* name → GraftRtTensor*: the inputs that keep their size */
  GraftValue *size;                     /* sym_size(input, axis), made on first use */
  GRand *rng;
  GPtrArray *notes;
} Unspecialize;

static void
record_dims (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  Dims *dims;

  if (tensor == NULL || value == NULL)
    return;
  dims = g_new0 (Dims, 1);
  dims->rank = tensor->rank;
  memcpy (dims->dims, tensor->dims, sizeof (gint64) * MAX (tensor->rank, 0));
  g_hash_table_replace (user_data, g_strdup (value->name), dims);
}

/* A size for a dim other than the freed one: its own, or for another
 * symbol the smallest of its range above 1 (torch specializes 0 and 1). */
static gint64
size_of_dim (Unspecialize *u, GraftDim dim)
{
  gint64 min = 2, max = -1;

  if (dim.kind == GRAFT_DIM_FIXED)
    return dim.value;
  graft_model_get_dim_range (u->model, dim.symbol, &min, &max);
  return max >= 0 && MAX (min, 2) > max ? max : MAX (min, 2);
}

static GHashTable *
new_tensor_table (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
}

/* Random tensors for the freed inputs (name → GraftRtTensor*), their
 * freed dim at size. */
static GHashTable *
random_inputs (Unspecialize *u, gint64 size, GError **error)
{
  g_autoptr(GHashTable) tensors = new_tensor_table ();

  for (guint i = 0; i < u->freed->len; i++)
    {
      FreedInput *f = &g_array_index (u->freed, FreedInput, i);
      gint64 dims[GRAFT_RT_MAX_RANK];
      GraftRtTensor *tensor;

      for (int d = 0; d < f->value->shape.rank; d++)
        dims[d] = d == f->axis ? size : size_of_dim (u, f->value->shape.dims[d]);
      tensor = graft_runtime_random_tensor (f->value->dtype, f->value->shape.rank, dims, u->rng, error);
      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (tensors, f->value->name, tensor);
    }
  return g_steal_pointer (&tensors);
}

/* Runs model on the freed inputs' tensors and the kept inputs; records
 * every value's dims in shapes when given. */
static GPtrArray *
run_model (Unspecialize *u, GraftModel *model, GHashTable *freed, GHashTable *shapes, GError **error)
{
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  GraftRuntime *runtime = graft_runtime_new (model, error);
  GPtrArray *outputs;
  GHashTableIter iter;
  gpointer name, tensor;

  if (runtime == NULL)
    return NULL;
  g_hash_table_iter_init (&iter, u->other_inputs);
  while (g_hash_table_iter_next (&iter, &name, &tensor))
    g_hash_table_insert (inputs, name, tensor);
  g_hash_table_iter_init (&iter, freed);
  while (g_hash_table_iter_next (&iter, &name, &tensor))
    g_hash_table_insert (inputs, name, tensor);
  if (shapes != NULL)
    {
      /* the inputs are no node's outputs: the observer does not see them */
      g_hash_table_iter_init (&iter, inputs);
      while (g_hash_table_iter_next (&iter, &name, &tensor))
        record_dims (NULL, graft_graph_lookup_value (graft_model_get_graph (model), name), tensor, shapes);
      graft_runtime_set_observer (runtime, record_dims, shapes);
    }
  outputs = graft_runtime_run (runtime, inputs, NULL, NULL, NULL, error);
  graft_runtime_free (runtime);
  return outputs;
}

/* The program as repaired so far, run at the probe sizes. */
/* What table recorded of value (by name: the traced run is of a copy);
 * a weight is its own shape. */
static const Dims *
lookup_dims (GHashTable *table, GraftValue *value)
{
  const Dims *dims = g_hash_table_lookup (table, value->name);

  if (dims == NULL && value->producer == NULL && graft_shape_is_fully_fixed (&value->shape)
      && value->shape.rank <= GRAFT_RT_MAX_RANK)
    {
      Dims *own = g_new0 (Dims, 1);
      own->rank = value->shape.rank;
      for (int d = 0; d < own->rank; d++)
        own->dims[d] = value->shape.dims[d].value;
      g_hash_table_insert (table, g_strdup (value->name), own);
      dims = own;
    }
  return dims;
}

static gboolean
refresh_probes (Unspecialize *u, GError **error)
{
  if (!u->stale)
    return TRUE;
  for (guint p = 0; p < N_PROBES; p++)
    {
      g_autoptr(GError) run_error = NULL;
      g_autoptr(GHashTable) x = random_inputs (u, u->probes[p], error);
      g_autoptr(GPtrArray) outputs = NULL;

      if (x == NULL)
        return FALSE;
      g_hash_table_remove_all (u->probe_dims[p]);
      g_clear_pointer (&u->probe_error[p], g_free);
      outputs = run_model (u, u->model, x, u->probe_dims[p], &run_error);
      if (outputs == NULL)
        u->probe_error[p] = g_strdup (run_error->message);
    }
  u->stale = FALSE;
  return TRUE;
}

static gboolean
pinned (Unspecialize *u, GError **error, const char *format, ...) G_GNUC_PRINTF (3, 4);

static gboolean
pinned (Unspecialize *u, GError **error, const char *format, ...)
{
  va_list args;
  g_autofree char *why = NULL;

  va_start (args, format);
  why = g_strdup_vprintf (format, args);
  va_end (args);
  if (u->renaming)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED, "%s:%d cannot be renamed %s: %s", u->input->name,
                 u->axis, u->symbol, why);
  else
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                 "%s:%d stays specialized to %" G_GINT64_FORMAT ": %s", u->input->name, u->axis, u->traced, why);
  return FALSE;
}

/* The dims of value at the traced size and at each probe; FALSE (with
 * the error that stopped a probe run before it) when a probe never
 * reached it. */
static gboolean
dims_of (Unspecialize *u, GraftNode *node, GraftValue *value, const Dims **traced, const Dims **probed, GError **error)
{
  *traced = lookup_dims (u->traced_dims, value);
  if (*traced == NULL)
    return pinned (u, error, "node '%s' (%s): the traced run did not compute '%s'", node->name, node->op,
                   value->name);
  for (guint p = 0; p < N_PROBES; p++)
    {
      probed[p] = lookup_dims (u->probe_dims[p], value);
      if (probed[p] == NULL)
        return pinned (u, error, "at %s=%" G_GINT64_FORMAT ", %s", u->symbol, u->probes[p],
                       u->probe_error[p] ? u->probe_error[p] : "the run stopped before it");
    }
  return TRUE;
}

/* The dim of value that follows the freed one (-2 when several do, -1 when
 * none); scaled: its traced size is a multiple of the traced batch and it
 * grows in proportion. */
static int
batch_axis (Unspecialize *u, const Dims *traced, const Dims **probed, gboolean *scaled)
{
  int found = -1;

  *scaled = TRUE;
  for (int d = 0; d < traced->rank; d++)
    {
      gboolean same = TRUE, proportional = traced->dims[d] % u->traced == 0;
      for (guint p = 0; p < N_PROBES; p++)
        {
          if (probed[p]->rank != traced->rank)
            return -2;
          same = same && probed[p]->dims[d] == traced->dims[d];
          proportional = proportional && probed[p]->dims[d] == traced->dims[d] / u->traced * u->probes[p];
        }
      if (same)
        continue;
      if (found != -1)
        return -2;
      found = d;
      *scaled = proportional;
    }
  return found;
}

static gint64
product (const Dims *dims, int start, int end)
{
  gint64 result = 1;

  for (int d = start; d < end; d++)
    result *= dims->dims[d];
  return result;
}

static char *
format_list (GraftAttribute *attribute)
{
  return graft_attribute_format_value (attribute, 16);
}

/* sym_size(input, axis), made once, first in the graph, as torch.export
 * writes it (its node and value JSON are what saving reuses). */
static GraftValue *
size_value (Unspecialize *u)
{
  g_autofree char *node_json = NULL, *value_json = NULL;
  GraftNode *node;
  GraftValue *value;

  if (u->size != NULL)
    return u->size;
  value = graft_graph_new_anonymous_value (u->graph, "sym_size_int_graft");
  value->kind = GRAFT_VALUE_TENSOR;
  value->dtype = GRAFT_DTYPE_INT64;
  graft_shape_init (&value->shape, 0);
  node = graft_graph_add_node (u->graph, "aten", "sym_size", value->name);
  graft_node_add_input (node, u->input);
  graft_node_add_attribute (node, graft_attribute_new_int ("arg1", u->axis));
  graft_node_add_output (node, value);
  if (u->graph->nodes->len > 1)
    graft_graph_move_node_before (u->graph, node, g_ptr_array_index (u->graph->nodes, 0));
  node_json = g_strdup_printf ("{\"target\": \"torch.ops.aten.sym_size.int\", \"inputs\": ["
                               "{\"name\": \"self\", \"arg\": {\"as_tensor\": {\"name\": \"%s\"}}, \"kind\": 1}, "
                               "{\"name\": \"dim\", \"arg\": {\"as_int\": %d}, \"kind\": 1}], "
                               "\"outputs\": [{\"as_sym_int\": {\"as_name\": \"%s\"}}], \"metadata\": {}, "
                               "\"is_hop_single_tensor_return\": null, \"name\": \"%s\"}",
                               u->input->name, u->axis, value->name, value->name);
  node->exported_json = g_bytes_new (node_json, strlen (node_json));
  value_json = g_strdup_printf ("{\"table\": \"sym_int_values\", \"meta\": {\"as_expr\": {\"expr_str\": \"%s\", "
                                "\"hint\": {\"as_int\": %" G_GINT64_FORMAT "}}}}", u->symbol, u->traced);
  value->exported_json = g_bytes_new (value_json, strlen (value_json));
  u->size = value;
  return value;
}

static void
remove_attribute (GraftNode *node, GraftAttribute *attribute)
{
  g_ptr_array_remove (node->attributes, attribute);
}

/* The int list attribute name of node, with entry index following the
 * freed dim: the list becomes a prim::ListConstruct (as the reader makes
 * of a list that names a symbol) whose item index is sym_size. */
static void
list_with_size (Unspecialize *u, GraftNode *node, const char *name, guint index)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, name);
  g_autofree char *list_name = g_strdup_printf ("%s_%s", node->name, name);
  GraftNode *list = graft_graph_add_node (u->graph, "prim", "ListConstruct", list_name);
  GraftValue *out = graft_graph_new_anonymous_value (u->graph, list_name);

  for (guint i = 0; i < attribute->ints->len; i++)
    if (i == index)
      graft_node_add_input (list, size_value (u));
    else
      {
        g_autofree char *item = g_strdup_printf ("arg%u", i);
        graft_node_add_attribute (list, graft_attribute_new_int (item, g_array_index (attribute->ints, gint64, i)));
      }
  out->kind = GRAFT_VALUE_SEQUENCE;
  graft_node_add_output (list, out);
  graft_graph_move_node_before (u->graph, list, node);
  remove_attribute (node, attribute);
  graft_node_add_input (node, out);
}

/* A size that no input of node carries (a class token expanded to the
 * batch, zeros(batch, …), arange(batch)): its entry equal to the traced
 * size becomes sym_size. */
static gboolean
repair_source (Unspecialize *u, GraftNode *node, const char *name, const Dims *broadcast_from, int offset)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, name);
  g_autofree char *before = NULL;

  if (attribute == NULL)
    return TRUE;
  if (attribute->type == GRAFT_ATTR_INT)
    {
      if (attribute->i != u->traced)
        return TRUE;
      remove_attribute (node, attribute);
      graft_node_add_input (node, size_value (u));
      g_ptr_array_add (u->notes, g_strdup_printf ("%s '%s': %s %" G_GINT64_FORMAT " → sym_size(%s, %d)", node->op,
                                                  node->name, name, u->traced, u->input->name, u->axis));
      u->stale = TRUE;
      return TRUE;
    }
  if (attribute->type != GRAFT_ATTR_INTS)
    return TRUE;
  for (guint i = 0; i < attribute->ints->len; i++)
    {
      int from = (int) i - offset;
      if (g_array_index (attribute->ints, gint64, i) != u->traced
          || (broadcast_from != NULL && from >= 0 && broadcast_from->dims[from] != 1))
        continue;
      before = format_list (attribute);
      list_with_size (u, node, name, i);
      g_ptr_array_add (u->notes, g_strdup_printf ("%s '%s': size %s, entry %u → sym_size(%s, %d)", node->op,
                                                  node->name, before, i, u->input->name, u->axis));
      u->stale = TRUE;
      return TRUE;
    }
  return TRUE;
}

static gboolean
repair_reshape (Unspecialize *u, GraftNode *node, GError **error)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, "arg1");
  const Dims *in, *out, *in_probed[N_PROBES];
  gboolean scaled;
  int j, target = -1;
  g_autofree char *before = NULL, *after = NULL;

  if (node->inputs->len < 1 || node->outputs->len < 1
      || !dims_of (u, node, g_ptr_array_index (node->inputs, 0), &in, in_probed, error))
    return node->inputs->len >= 1 && node->outputs->len >= 1 ? FALSE : TRUE;
  out = lookup_dims (u->traced_dims, g_ptr_array_index (node->outputs, 0));
  j = batch_axis (u, in, in_probed, &scaled);
  /* A reshape keeps its input's size: one of a batch-free input has no
   * batch to follow (a 2 there is a genuine 2, an (x, y) pair). */
  if (j == -1)
    return TRUE;
  if (j < 0 || !scaled)
    return pinned (u, error, "node '%s' (%s) reshapes an input whose dims do not follow %s in proportion",
                   node->name, node->op, u->symbol);
  if (out == NULL)
    return pinned (u, error, "node '%s' (%s): the traced run did not compute its output", node->name, node->op);
  /* The output dim whose span of the row-major order holds the batch
   * whole. A merged input dim (batch × heads, sequence × batch) does not
   * say which factor the batch is: outermost (as torch merges bsz *
   * num_heads) or innermost; when the two readings differ, the one whose
   * runs at the probe sizes get further is kept, outermost on a tie. */
  int targets[2] = { -1, -1 };
  for (int inner = 0; inner < 2; inner++)
    {
      gint64 start = product (in, 0, j) * (inner ? in->dims[j] / u->traced : 1), end = start * u->traced;
      for (int i = 0; i < out->rank && targets[inner] < 0; i++)
        {
          gint64 out_start = product (out, 0, i), out_end = out_start * out->dims[i];
          if (out_start != 0 && start % out_start == 0 && end != 0 && out_end % end == 0)
            targets[inner] = i;
        }
    }
  target = targets[0] >= 0 ? targets[0] : targets[1];
  if (targets[0] >= 0 && targets[1] >= 0 && targets[0] != targets[1] && attribute != NULL
      && attribute->type == GRAFT_ATTR_INTS && (int) attribute->ints->len == out->rank)
    {
      g_autoptr(GArray) kept = g_array_copy (attribute->ints);
      guint reached[2];
      for (int reading = 0; reading < 2; reading++)
        {
          for (int i = 0; i < out->rank; i++)
            g_array_index (attribute->ints, gint64, i) = i == targets[reading] ? -1 : out->dims[i];
          u->stale = TRUE;
          if (!refresh_probes (u, error))
            return FALSE;
          reached[reading] = g_hash_table_size (u->probe_dims[0]) + g_hash_table_size (u->probe_dims[1])
                             + (u->probe_error[0] == NULL && u->probe_error[1] == NULL ? G_MAXUINT / 2 : 0);
        }
      for (int i = 0; i < out->rank; i++)
        g_array_index (attribute->ints, gint64, i) = g_array_index (kept, gint64, i);
      u->stale = TRUE;
      target = reached[1] > reached[0] ? targets[1] : targets[0];
    }
  if (target < 0)
    return pinned (u, error, "node '%s' (%s) splits dim %d (%" G_GINT64_FORMAT ", the batch) of its input "
                   "across several output dims", node->name, node->op, j, in->dims[j]);
  if (attribute == NULL || attribute->type != GRAFT_ATTR_INTS || (int) attribute->ints->len != out->rank)
    return pinned (u, error, "node '%s' (%s): its size is not a list of constants Graft can rewrite", node->name,
                   node->op);
  if (g_array_index (attribute->ints, gint64, target) == -1)
    return TRUE;
  before = format_list (attribute);
  for (int i = 0; i < out->rank; i++)
    g_array_index (attribute->ints, gint64, i) = i == target ? -1 : out->dims[i];
  after = format_list (attribute);
  g_ptr_array_add (u->notes, g_strdup_printf ("%s '%s': size %s → %s (dim %d follows %s)", node->op, node->name,
                                              before, after, target, u->symbol));
  u->stale = TRUE;
  return TRUE;
}

static gboolean
repair_expand (Unspecialize *u, GraftNode *node, GError **error)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, "arg1");
  const Dims *in, *in_probed[N_PROBES];
  gboolean scaled;
  int j, offset;

  if (node->inputs->len < 1 || !dims_of (u, node, g_ptr_array_index (node->inputs, 0), &in, in_probed, error))
    return node->inputs->len < 1;
  if (attribute == NULL || attribute->type != GRAFT_ATTR_INTS)
    return TRUE;
  offset = (int) attribute->ints->len - in->rank;
  j = batch_axis (u, in, in_probed, &scaled);
  if (j == -1)
    return repair_source (u, node, "arg1", in, offset);
  if (j < 0 || !scaled)
    return pinned (u, error, "node '%s' (%s) expands an input whose dims do not follow %s in proportion",
                   node->name, node->op, u->symbol);
  /* repeat(x, [1, …]) of a batch input already follows it */
  if (strcmp (node->op_type, "repeat") == 0)
    return TRUE;
  if (g_array_index (attribute->ints, gint64, j + offset) != -1)
    {
      g_autofree char *before = format_list (attribute), *after = NULL;
      g_array_index (attribute->ints, gint64, j + offset) = -1;
      after = format_list (attribute);
      g_ptr_array_add (u->notes, g_strdup_printf ("%s '%s': size %s → %s", node->op, node->name, before, after));
      u->stale = TRUE;
    }
  return TRUE;
}

/* slice(x, dim, start, end, step) and select(x, dim, index) on a batch dim. */
static gboolean
repair_slice (Unspecialize *u, GraftNode *node, GError **error)
{
  const Dims *in, *in_probed[N_PROBES];
  GraftAttribute *dim_attribute = graft_node_get_attribute (node, "arg1");
  gboolean scaled, select = strcmp (node->op_type, "select") == 0;
  int j, dim;

  if (node->inputs->len < 1 || !dims_of (u, node, g_ptr_array_index (node->inputs, 0), &in, in_probed, error))
    return node->inputs->len < 1;
  j = batch_axis (u, in, in_probed, &scaled);
  if (j < 0 || dim_attribute == NULL || dim_attribute->type != GRAFT_ATTR_INT)
    return TRUE;
  dim = (int) (dim_attribute->i < 0 ? dim_attribute->i + in->rank : dim_attribute->i);
  if (dim != j)
    return TRUE;
  if (select)
    return pinned (u, error, "node '%s' (%s) picks one sample along the batch", node->name, node->op);
  GraftAttribute *start = graft_node_get_attribute (node, "arg2");
  GraftAttribute *end = graft_node_get_attribute (node, "arg3");
  if (end == NULL || end->type != GRAFT_ATTR_INT || (start != NULL && start->type == GRAFT_ATTR_INT && start->i != 0))
    return pinned (u, error, "node '%s' (%s) keeps part of the batch", node->name, node->op);
  if (end->i == G_MAXINT64)
    return TRUE;
  if (end->i < in->dims[j])
    return pinned (u, error, "node '%s' (%s) keeps the first %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                   " along the batch", node->name, node->op, end->i, in->dims[j]);
  g_ptr_array_add (u->notes, g_strdup_printf ("%s '%s': end %" G_GINT64_FORMAT " → the end of the batch", node->op,
                                              node->name, end->i));
  end->i = G_MAXINT64;
  u->stale = TRUE;
  return TRUE;
}

typedef gboolean (*RepairFunc) (Unspecialize *u, GraftNode *node, GError **error);

static gboolean
repair_size_list (Unspecialize *u, GraftNode *node, GError **error)
{
  /* zeros(size, …), full(size, value, …), new_zeros(self, size, …) */
  return repair_source (u, node, g_str_has_prefix (node->op_type, "new_") ? "arg1" : "arg0", NULL, 0);
}

static gboolean
repair_arange (Unspecialize *u, GraftNode *node, GError **error)
{
  /* arange(end) or arange(start, end[, step]) */
  return repair_source (u, node, graft_node_get_attribute (node, "arg1") != NULL
                                 && graft_node_get_attribute (node, "arg1")->type == GRAFT_ATTR_INT ? "arg1" : "arg0",
                        NULL, 0);
}

static const struct {
  const char *op;
  RepairFunc repair;
} repairs[] = {
  { "aten::view", repair_reshape }, { "aten::reshape", repair_reshape }, { "aten::_unsafe_view", repair_reshape },
  { "aten::expand", repair_expand }, { "aten::repeat", repair_expand },
  { "aten::zeros", repair_size_list }, { "aten::ones", repair_size_list }, { "aten::empty", repair_size_list },
  { "aten::full", repair_size_list }, { "aten::new_zeros", repair_size_list }, { "aten::new_ones", repair_size_list },
  { "aten::new_empty", repair_size_list }, { "aten::new_full", repair_size_list },
  { "aten::arange", repair_arange },
  { "aten::slice", repair_slice }, { "aten::select", repair_slice },
};

static RepairFunc
repair_for (GraftNode *node)
{
  for (guint i = 0; i < G_N_ELEMENTS (repairs); i++)
    if (strcmp (node->op, repairs[i].op) == 0)
      return repairs[i].repair;
  return NULL;
}

static gboolean
is_freed (Unspecialize *u, GraftValue *value)
{
  for (guint i = 0; i < u->freed->len; i++)
    if (g_array_index (u->freed, FreedInput, i).value == value)
      return TRUE;
  return FALSE;
}

/* Declared shapes follow the runs: a dim that grew with the freed one is
 * symbol (or symbol*k), one that stayed is fixed. */
static gboolean
declare_shapes (Unspecialize *u, GError **error)
{
  for (guint i = 0; i < u->graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (u->graph->values, i);
      const Dims *traced = g_hash_table_lookup (u->traced_dims, value->name);
      const Dims *probed[N_PROBES];

      if (traced == NULL || is_freed (u, value) || value->kind != GRAFT_VALUE_TENSOR || value->shape.rank != traced->rank)
        continue;
      for (guint p = 0; p < N_PROBES; p++)
        probed[p] = g_hash_table_lookup (u->probe_dims[p], value->name);
      if (probed[0] == NULL || probed[1] == NULL)
        continue;
      for (int d = 0; d < traced->rank; d++)
        {
          GraftDim *dim = &value->shape.dims[d];
          gint64 t = traced->dims[d];
          if (dim->kind == GRAFT_DIM_SYMBOLIC)
            continue;
          if (probed[0]->dims[d] == t && probed[1]->dims[d] == t)
            *dim = graft_dim_fixed (t);
          else if (t % u->traced == 0 && probed[0]->dims[d] == t / u->traced * u->probes[0]
                   && probed[1]->dims[d] == t / u->traced * u->probes[1])
            {
              g_autofree char *symbol = t == u->traced ? g_strdup (u->symbol)
                                        : g_strdup_printf ("%s*%" G_GINT64_FORMAT, u->symbol, t / u->traced);
              *dim = graft_dim_symbolic (symbol);
            }
          else
            return pinned (u, error, "'%s' (made by '%s') has dim %d of %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                           " and %" G_GINT64_FORMAT " at %s = %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " and %"
                           G_GINT64_FORMAT ": not in proportion", value->name,
                           value->producer ? value->producer->name : "nothing", d, t, probed[0]->dims[d],
                           probed[1]->dims[d], u->symbol, u->traced, u->probes[0], u->probes[1]);
        }
    }
  return TRUE;
}

/* rows of tensor along axis (an index may repeat). */
static GraftRtTensor *
take_rows (const GraftRtTensor *tensor, int axis, const gint64 *rows, guint n, GError **error)
{
  gint64 dims[GRAFT_RT_MAX_RANK];
  gint64 outer = 1, inner = graft_rt_dtype_size (tensor->dtype);
  GraftRtTensor *result;

  memcpy (dims, tensor->dims, sizeof (gint64) * tensor->rank);
  dims[axis] = n;
  for (int d = 0; d < axis; d++)
    outer *= tensor->dims[d];
  for (int d = axis + 1; d < tensor->rank; d++)
    inner *= tensor->dims[d];
  result = graft_rt_tensor_new (tensor->dtype, tensor->rank, dims, error);
  if (result == NULL)
    return NULL;
  for (gint64 o = 0; o < outer; o++)
    for (guint r = 0; r < n; r++)
      memcpy ((char *) result->data + (o * n + r) * inner,
              (const char *) tensor->data + (o * tensor->dims[axis] + rows[r]) * inner, inner);
  return result;
}

/* The original program's outputs for the size samples of x, run in groups
 * of the traced size (the last group filled up with the first samples):
 * output k's rows along its batch axis, or NULL where it has none. */
static GPtrArray *
reference_outputs (Unspecialize *u, GraftModel *original, GHashTable *x, gint64 size, const int *output_axes,
                   GError **error)
{
  guint n_outputs = u->graph->outputs->len;
  g_autoptr(GPtrArray) pieces = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  GPtrArray *result = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);

  for (gint64 first = 0; first < size; first += u->traced)
    {
      g_autofree gint64 *rows = g_new (gint64, u->traced);
      g_autoptr(GHashTable) group = new_tensor_table ();
      GPtrArray *outputs = NULL;
      gboolean taken = TRUE;

      for (gint64 r = 0; r < u->traced; r++)
        rows[r] = (first + r) % size;
      for (guint i = 0; taken && i < u->freed->len; i++)
        {
          FreedInput *f = &g_array_index (u->freed, FreedInput, i);
          GraftRtTensor *rows_of = take_rows (g_hash_table_lookup (x, f->value->name), f->axis, rows, u->traced, error);
          taken = rows_of != NULL;
          if (taken)
            g_hash_table_insert (group, f->value->name, rows_of);
        }
      if (!taken || (outputs = run_model (u, original, group, NULL, error)) == NULL)
        {
          g_ptr_array_unref (result);
          return NULL;
        }
      g_ptr_array_add (pieces, outputs);
    }
  for (guint k = 0; k < n_outputs; k++)
    {
      GraftRtTensor *first = g_ptr_array_index ((GPtrArray *) g_ptr_array_index (pieces, 0), k);
      int axis = output_axes[k];
      gint64 per_row = 1;
      GraftRtTensor *joined;
      gint64 dims[GRAFT_RT_MAX_RANK];

      if (axis < 0)
        {
          g_ptr_array_add (result, NULL);
          continue;
        }
      memcpy (dims, first->dims, sizeof (gint64) * first->rank);
      dims[axis] = size;
      joined = graft_rt_tensor_new (first->dtype, first->rank, dims, error);
      if (joined == NULL)
        {
          g_ptr_array_unref (result);
          return NULL;
        }
      for (int d = axis + 1; d < first->rank; d++)
        per_row *= first->dims[d];
      gint64 outer = 1;
      for (int d = 0; d < axis; d++)
        outer *= first->dims[d];
      for (gint64 row = 0; row < size; row++)
        {
          GraftRtTensor *piece = g_ptr_array_index ((GPtrArray *) g_ptr_array_index (pieces, row / u->traced), k);
          gint64 in_row = row % u->traced;
          for (gint64 o = 0; o < outer; o++)
            for (gint64 e = 0; e < per_row; e++)
              graft_rt_tensor_set_f64 (joined, (o * size + row) * per_row + e,
                                       graft_rt_tensor_get_f64 (piece, (o * u->traced + in_row) * per_row + e));
        }
      g_ptr_array_add (result, joined);
    }
  return result;
}

/* Runs the freed program at the traced size and the probes against the
 * original run sample by sample. */
static gboolean
prove (Unspecialize *u, GraftModel *original, GError **error)
{
  guint n_outputs = u->graph->outputs->len;
  g_autofree int *axes = g_new0 (int, MAX (n_outputs, 1));
  gint64 sizes[] = { u->traced, u->probes[0], u->probes[1] };
  double worst = 0;

  for (guint k = 0; k < n_outputs; k++)
    {
      GraftValue *output = g_ptr_array_index (u->graph->outputs, k);
      const Dims *traced = g_hash_table_lookup (u->traced_dims, output->name);
      const Dims *probed[N_PROBES] = { g_hash_table_lookup (u->probe_dims[0], output->name),
                                       g_hash_table_lookup (u->probe_dims[1], output->name) };
      gboolean scaled;

      if (traced == NULL || probed[0] == NULL || probed[1] == NULL)
        return pinned (u, error, "output '%s' (made by '%s') was not computed at every size", output->name,
                       output->producer ? output->producer->name : "nothing");
      axes[k] = batch_axis (u, traced, probed, &scaled);
      if (axes[k] < 0 || !scaled || traced->dims[axes[k]] != u->traced)
        return pinned (u, error, "output '%s' (made by '%s') has no dim that is the batch, so its samples "
                       "cannot be checked one by one", output->name,
                       output->producer ? output->producer->name : "nothing");
    }
  for (guint s = 0; s < G_N_ELEMENTS (sizes); s++)
    {
      g_autoptr(GHashTable) x = random_inputs (u, sizes[s], error);
      g_autoptr(GPtrArray) want = NULL, got = NULL;

      if (x == NULL || (want = reference_outputs (u, original, x, sizes[s], axes, error)) == NULL)
        return FALSE;
      g_autoptr(GError) run_error = NULL;
      got = run_model (u, u->model, x, NULL, &run_error);
      if (got == NULL)
        return pinned (u, error, "at %s=%" G_GINT64_FORMAT ", %s", u->symbol, sizes[s], run_error->message);
      for (guint k = 0; k < n_outputs; k++)
        {
          GraftRtTensor *a = g_ptr_array_index (got, k), *b = g_ptr_array_index (want, k);
          GraftValue *output = g_ptr_array_index (u->graph->outputs, k);
          double max_ref = 0, max_error = 0;

          if (!graft_rt_tensor_same_shape (a, b))
            return pinned (u, error, "at %s=%" G_GINT64_FORMAT ", output '%s' (made by '%s') has another shape "
                           "than the original's samples", u->symbol, sizes[s], output->name, output->producer->name);
          for (gint64 e = 0; e < b->numel; e++)
            {
              double w = graft_rt_tensor_get_f64 (b, e), g = graft_rt_tensor_get_f64 (a, e);
              max_ref = MAX (max_ref, fabs (w));
              max_error = isnan (w) && isnan (g) ? max_error : MAX (max_error, fabs (w - g));
            }
          if (!(max_error <= 1e-4 * max_ref))
            return pinned (u, error, "at %s=%" G_GINT64_FORMAT ", output '%s' (made by '%s') differs from the "
                           "original run sample by sample by %g (max |reference| %g): the samples are not "
                           "independent, or a repaired size is wrong", u->symbol, sizes[s], output->name,
                           output->producer->name, max_error, max_ref);
          worst = MAX (worst, max_ref > 0 ? max_error / max_ref : 0);
        }
    }
  g_ptr_array_add (u->notes, g_strdup_printf ("proven: at %s = %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " and %"
                                              G_GINT64_FORMAT " every output equals the original program run sample "
                                              "by sample (largest error %.2g of max |reference|)", u->symbol,
                                              sizes[0], sizes[1], sizes[2], worst));
  return TRUE;
}

/* Two sizes other than the traced one inside the symbol's range. */
static gboolean
choose_probes (Unspecialize *u, GError **error)
{
  gint64 min = 1, max = -1;
  guint n = 0;
  const gint64 wanted[] = { u->traced + 1, u->traced + 3, 1, u->traced + 2, u->traced - 1 };

  graft_model_get_dim_range (u->model, u->symbol, &min, &max);
  for (guint i = 0; i < G_N_ELEMENTS (wanted) && n < N_PROBES; i++)
    if (wanted[i] >= MAX (min, 1) && (max < 0 || wanted[i] <= max) && wanted[i] != u->traced
        && (n == 0 || u->probes[0] != wanted[i]))
      u->probes[n++] = wanted[i];
  if (n < N_PROBES)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "the range of %s leaves no two sizes besides %" G_GINT64_FORMAT " to prove the edit at",
                   u->symbol, u->traced);
      return FALSE;
    }
  return TRUE;
}

/* One attempt on the model's graph as it is: the repairs, then the proof. */
static gboolean
free_and_prove (Unspecialize *u, GraftModel *original, GError **error)
{
  g_autoptr(GPtrArray) candidates = g_ptr_array_new ();
  gboolean ok = TRUE;

  for (guint i = 0; i < u->freed->len; i++)
    {
      FreedInput *f = &g_array_index (u->freed, FreedInput, i);
      f->value->shape.dims[f->axis] = graft_dim_symbolic (u->symbol);
    }
  for (guint i = 0; i < u->graph->nodes->len && !u->renaming; i++)
    if (repair_for (g_ptr_array_index (u->graph->nodes, i)) != NULL)
      g_ptr_array_add (candidates, g_ptr_array_index (u->graph->nodes, i));
  for (guint i = 0; ok && i < candidates->len; i++)
    {
      GraftNode *node = g_ptr_array_index (candidates, i);
      ok = refresh_probes (u, error) && repair_for (node) (u, node, error);
    }
  for (guint p = 0; ok && p < N_PROBES; p++)
    if ((ok = refresh_probes (u, error)) && u->probe_error[p] != NULL)
      ok = pinned (u, error, "at %s=%" G_GINT64_FORMAT ", %s", u->symbol, u->probes[p], u->probe_error[p]);
  return ok && declare_shapes (u, error) && prove (u, original, error);
}

static void
forget_probes (Unspecialize *u)
{
  for (guint p = 0; p < N_PROBES; p++)
    {
      g_hash_table_remove_all (u->probe_dims[p]);
      g_clear_pointer (&u->probe_error[p], g_free);
    }
  u->stale = TRUE;
  u->size = NULL;
}

/* The other inputs with a dim of the traced size (at the named axis if
 * they have it there): what a program combines with the named input
 * usually carries the same batch (a UNet's timestep, RAFT's second
 * image), and then neither can be freed alone. */
static void
add_companions (Unspecialize *u)
{
  for (guint i = 0; i < u->graph->inputs->len; i++)
    {
      GraftValue *other = g_ptr_array_index (u->graph->inputs, i);
      FreedInput f = { other, -1 };

      if (other == u->input || other->initializer != NULL || !graft_shape_is_fully_fixed (&other->shape))
        continue;
      if (u->axis < other->shape.rank && other->shape.dims[u->axis].value == u->traced)
        f.axis = u->axis;
      for (int d = 0; d < other->shape.rank && f.axis < 0; d++)
        if (other->shape.dims[d].value == u->traced)
          f.axis = d;
      if (f.axis >= 0)
        {
          g_array_append_val (u->freed, f);
          g_hash_table_remove (u->other_inputs, other->name);
        }
    }
}

/* text with the identifier old replaced by new wherever it stands whole. */
static char *
replace_symbol (const char *text, const char *old, const char *new)
{
  GString *out = g_string_new (NULL);
  gsize n = strlen (old);

  for (const char *p = text; *p;)
    {
      gboolean starts = strncmp (p, old, n) == 0 && (p == text || !(g_ascii_isalnum (p[-1]) || p[-1] == '_'))
                        && !(g_ascii_isalnum (p[n]) || p[n] == '_');
      if (starts)
        {
          g_string_append (out, new);
          p += n;
        }
      else
        g_string_append_c (out, *p++);
    }
  return g_string_free (out, FALSE);
}

/* The symbol old is new everywhere the program says it: the values'
 * dims, what saving reuses of torch's description of them (sym_size
 * values' expressions), the ranges. */
static void
rename_symbol (Unspecialize *u, const char *old)
{
  gint64 min, max;

  for (guint i = 0; i < u->graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (u->graph->values, i);
      for (int d = 0; d < value->shape.rank; d++)
        if (value->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC)
          {
            g_autofree char *renamed = replace_symbol (value->shape.dims[d].symbol, old, u->symbol);
            value->shape.dims[d] = graft_dim_symbolic (renamed);
          }
      if (value->exported_json != NULL)
        {
          g_autofree char *text = g_strndup (g_bytes_get_data (value->exported_json, NULL),
                                             g_bytes_get_size (value->exported_json));
          char *renamed = replace_symbol (text, old, u->symbol);
          g_bytes_unref (value->exported_json);
          value->exported_json = g_bytes_new_take (renamed, strlen (renamed));
        }
    }
  if (!graft_model_get_dim_range (u->model, u->symbol, &min, &max) && graft_model_get_dim_range (u->model, old, &min, &max))
    graft_model_set_dim_range (u->model, u->symbol, min, max);
  graft_model_remove_dim_range (u->model, old);
}

gboolean
graft_edit_unspecialize (GraftModel *model, GraftValue *input, int axis, const char *symbol, GPtrArray *notes,
                         GError **error)
{
  Unspecialize u = { model, graft_model_get_graph (model), input, axis };
  g_autoptr(GraftModel) original = NULL;
  g_autoptr(GRand) rng = g_rand_new_with_seed (34);
  g_autoptr(GHashTable) traced_dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) probe0 = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) probe1 = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) other_inputs = new_tensor_table ();
  g_autoptr(GArray) freed = g_array_new (FALSE, FALSE, sizeof (FreedInput));
  g_autoptr(GPtrArray) outputs = NULL;
  g_autoptr(GHashTable) x = NULL;
  g_autoptr(GError) alone = NULL;
  g_autofree char *input_name = g_strdup (input->name);
  g_autofree char *old_symbol = NULL;
  FreedInput named = { input, axis };
  guint n_notes = notes->len;
  gboolean ok;

  u.symbol = symbol;
  u.renaming = input->shape.dims[axis].kind == GRAFT_DIM_SYMBOLIC;
  if (u.renaming)
    {
      gint64 min, max;
      /* A free dim keeps its range unless one is given (torch's min of 2
       * included): the probes stay inside it. */
      old_symbol = g_strdup (input->shape.dims[axis].symbol);
      if (strchr (old_symbol, '*') != NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "%s:%d is %s, a product of sizes; only a dim of its own can be renamed", input->name, axis,
                       old_symbol);
          return FALSE;
        }
      if (!graft_model_get_dim_range (model, symbol, &min, &max) && graft_model_get_dim_range (model, old_symbol, &min, &max))
        graft_model_set_dim_range (model, symbol, min, max);
    }
  u.traced = u.renaming ? size_of_dim (&u, input->shape.dims[axis]) : input->shape.dims[axis].value;
  u.freed = freed;
  u.traced_dims = traced_dims;
  u.probe_dims[0] = probe0;
  u.probe_dims[1] = probe1;
  u.other_inputs = other_inputs;
  u.rng = rng;
  u.notes = notes;
  u.stale = TRUE;
  g_array_append_val (freed, named);
  if (!choose_probes (&u, error))
    return FALSE;
  for (guint i = 0; i < u.graph->inputs->len; i++)
    {
      GraftValue *other = g_ptr_array_index (u.graph->inputs, i);
      GraftRtTensor *tensor;
      if (other == input || other->initializer != NULL)
        continue;
      if (u.renaming)
        {
          FreedInput sharing = { other, -1 };
          for (int d = 0; d < other->shape.rank && sharing.axis < 0; d++)
            if (other->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC && strcmp (other->shape.dims[d].symbol, old_symbol) == 0)
              sharing.axis = d;
          if (sharing.axis >= 0)
            {
              g_array_append_val (freed, sharing);
              continue;
            }
        }
      gint64 dims[GRAFT_RT_MAX_RANK];
      if (other->shape.rank < 0 || other->shape.rank > GRAFT_RT_MAX_RANK)
        tensor = graft_runtime_random_input (other, NULL, rng, error);
      else
        {
          for (int d = 0; d < other->shape.rank; d++)
            dims[d] = size_of_dim (&u, other->shape.dims[d]);
          tensor = graft_runtime_random_tensor (other->dtype, other->shape.rank, dims, rng, error);
        }
      if (tensor == NULL)
        return FALSE;
      g_hash_table_insert (other_inputs, other->name, tensor);
    }
  /* The proof runs the program: one with ops Graft cannot run is refused
   * naming the first such node. */
  g_autoptr(GPtrArray) unsupported = NULL;
  if (!graft_runtime_check_supported (model, &unsupported, error))
    return FALSE;
  if (unsupported->len > 0)
    {
      GraftNode *first = g_ptr_array_index (unsupported, 0);
      g_autofree char *all = graft_runtime_describe_unsupported (model, unsupported);
      return pinned (&u, error, "node '%s' (%s) cannot run in Graft's runtime, so the edit cannot be proven (%s)",
                     first->name, first->op, all);
    }
  /* What every value was at the traced size, on the program as exported. */
  original = graft_model_copy (model);
  if ((x = random_inputs (&u, u.traced, error)) == NULL)
    return FALSE;
  if ((outputs = run_model (&u, original, x, traced_dims, error)) == NULL)
    {
      g_prefix_error (error, "the program does not run as exported in Graft's runtime: ");
      return FALSE;
    }
  if (u.renaming)
    {
      rename_symbol (&u, old_symbol);
      ok = free_and_prove (&u, original, error);
      forget_probes (&u);
      if (ok)
        g_ptr_array_add (notes, g_strdup_printf ("%s:%d was free already as %s: renamed %s in every size, range "
                                                 "and sym_size of the program", input_name, axis, old_symbol, symbol));
      return ok;
    }
  ok = free_and_prove (&u, original, &alone);
  forget_probes (&u);
  if (ok)
    return TRUE;
  /* Again from the program as exported, with the inputs that look like
   * they carry the same batch freed too. */
  graft_model_set_graph (model, graft_graph_copy (graft_model_get_graph (original), NULL));
  u.graph = graft_model_get_graph (model);
  u.input = g_array_index (freed, FreedInput, 0).value = graft_graph_lookup_value (u.graph, input_name);
  add_companions (&u);
  if (freed->len == 1)
    {
      g_propagate_error (error, g_steal_pointer (&alone));
      return FALSE;
    }
  g_ptr_array_set_size (notes, n_notes);
  g_autoptr(GError) together = NULL;
  g_autoptr(GString) companions = g_string_new (NULL);
  for (guint i = 1; i < freed->len; i++)
    g_string_append_printf (companions, "%s%s:%d", i > 1 ? ", " : "", g_array_index (freed, FreedInput, i).value->name,
                            g_array_index (freed, FreedInput, i).axis);
  ok = free_and_prove (&u, original, &together);
  forget_probes (&u);
  if (ok)
    {
      g_ptr_array_add (notes, g_strdup_printf ("%s freed with %s:%d: it carries the same batch (alone: %s)",
                                               companions->str, input_name, axis, alone->message));
      return TRUE;
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED, "%s; with %s freed too: %s", alone->message,
               companions->str, together->message);
  return FALSE;
}
