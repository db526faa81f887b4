/* Nodes to keep in float32 (precision.h). */
#include <string.h>
#include "debug/precision.h"
#include "compare/numeric-diff.h"
#include "edit/edit.h"
#include "edit/edit-operation.h"
#include "ir/graph-order.h"

typedef struct {
  GraftModel *model;
  GHashTable *inputs;
  const GraftPrecisionOptions *options;
  GPtrArray *reference;      /* the float32 model's outputs */
  GPtrArray *candidates;     /* GraftNode*: what the search may keep, topological order */
  guint n_runs;
  GCancellable *cancellable;
  GError *error;             /* a conversion or run that could not be made */
} Search;

static GVariant *
float16_params (Search *search, GPtrArray *kept)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new ();
  GVariantDict dict;

  for (guint i = 0; i < kept->len; i++)
    g_ptr_array_add (names, ((GraftNode *) kept->pdata[i])->name);
  g_variant_dict_init (&dict, NULL);
  g_variant_dict_insert (&dict, "keep_io_types", "b", search->options->keep_io_types);
  g_variant_dict_insert_value (&dict, "keep_nodes",
                               g_variant_new_strv ((const char *const *) names->pdata, names->len));
  return g_variant_dict_end (&dict);
}

/* The inputs as the converted model declares them (float16 unless kept). */
static GHashTable *
feed_for (GraftRuntime *rt, GHashTable *inputs, GError **error)
{
  g_autoptr(GHashTable) feed = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  GPtrArray *declared = graft_runtime_get_inputs (rt);

  for (guint i = 0; i < declared->len; i++)
    {
      GraftValue *input = declared->pdata[i];
      GraftRtTensor *given = g_hash_table_lookup (inputs, input->name);
      /* an Optional left out is None, as in graft_runtime_run */
      if (given == NULL && input->kind == GRAFT_VALUE_OPTIONAL)
        continue;
      if (given == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "input '%s' was not given", input->name);
          return NULL;
        }
      GraftRtTensor *tensor = given->dtype == GRAFT_DTYPE_FLOAT32 && input->dtype == GRAFT_DTYPE_FLOAT16
                                ? graft_rt_tensor_cast (given, GRAFT_DTYPE_FLOAT16, error)
                                : graft_rt_tensor_ref (given);
      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (feed, input->name, tensor);
    }
  return g_steal_pointer (&feed);
}

static GPtrArray *
run_model (GraftModel *model, GHashTable *inputs, GCancellable *cancellable, GError **error)
{
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, error);
  g_autoptr(GHashTable) feed = rt ? feed_for (rt, inputs, error) : NULL;

  return feed ? graft_runtime_run (rt, feed, cancellable, NULL, NULL, error) : NULL;
}

static gboolean
outputs_within (Search *search, GPtrArray *outputs)
{
  for (guint i = 0; i < outputs->len && i < search->reference->len; i++)
    {
      GraftValueError e = { 0 };
      graft_value_error_compare (search->reference->pdata[i], outputs->pdata[i], search->options->rtol,
                                 search->options->atol, &e);
      g_free (e.shape_a);
      g_free (e.shape_b);
      if (e.compared && !e.close)
        return FALSE;
    }
  return TRUE;
}

/* TRUE when the model converted with kept in float32 stays within the
 * tolerance. After an error, FALSE for every set. */
static gboolean
passes (Search *search, GPtrArray *kept)
{
  if (search->error != NULL)
    return FALSE;
  search->n_runs++;
  g_autoptr(GraftEdit) edit = graft_edit_new_operation ("float16", float16_params (search, kept), &search->error);
  g_autoptr(GraftModel) converted = edit ? graft_edit_apply_to_copy (edit, search->model, &search->error) : NULL;
  g_autoptr(GPtrArray) outputs = converted ? run_model (converted, search->inputs, search->cancellable, &search->error)
                                           : NULL;
  return outputs != NULL && outputs_within (search, outputs);
}

static GPtrArray *
prefix (Search *search, guint n)
{
  GPtrArray *nodes = g_ptr_array_new ();

  for (guint i = 0; i < n; i++)
    g_ptr_array_add (nodes, search->candidates->pdata[i]);
  return nodes;
}

/* kept without its nodes [start, start + n). */
static GPtrArray *
without_chunk (GPtrArray *kept, guint start, guint n)
{
  GPtrArray *rest = g_ptr_array_new ();

  for (guint i = 0; i < kept->len; i++)
    if (i < start || i >= start + n)
      g_ptr_array_add (rest, kept->pdata[i]);
  return rest;
}

/* Nodes whose float16 form the search may choose: ONNX compute nodes
 * without subgraphs that do not compute constants (and have names: the
 * conversion keeps nodes by name). */
static GPtrArray *
list_candidates (GraftModel *model)
{
  g_autoptr(GPtrArray) order = graft_graph_topological_order (graft_model_get_graph (model));
  g_autoptr(GHashTable) constant = graft_graph_find_constant_nodes (order);
  GPtrArray *candidates = g_ptr_array_new ();

  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = order->pdata[i];
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);
      if (strcmp (node->domain, "onnx") == 0 && subgraphs->len == 0 && !g_hash_table_contains (constant, node)
          && node->name != NULL && *node->name != '\0')
        g_ptr_array_add (candidates, node);
    }
  return candidates;
}

GPtrArray *
graft_precision_find_float32_nodes (GraftModel *model, GHashTable *inputs, const GraftPrecisionOptions *options,
                                    guint *n_runs, GCancellable *cancellable, GError **error)
{
  Search search = { model, inputs, options, NULL, list_candidates (model), 0, cancellable, NULL };
  g_autoptr(GPtrArray) none = g_ptr_array_new ();
  g_autoptr(GPtrArray) kept = NULL;
  GPtrArray *names = NULL;

  search.reference = run_model (model, inputs, cancellable, &search.error);
  if (search.reference != NULL && !passes (&search, none))
    {
      if (!passes (&search, search.candidates) && search.error == NULL)
        g_set_error (&search.error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                     "even with every node in float32 the outputs are not within rtol %g, atol %g: the float16 "
                     "weights%s lose too much", options->rtol, options->atol,
                     options->keep_io_types ? "" : " or interface");
      /* the shortest prefix to keep */
      guint low = 0, high = search.candidates->len;
      while (low + 1 < high && search.error == NULL)
        {
          guint mid = low + (high - low) / 2;
          g_autoptr(GPtrArray) try = prefix (&search, mid);
          if (passes (&search, try))
            high = mid;
          else
            low = mid;
        }
      kept = prefix (&search, high);
      /* let chunks of it go, then single nodes */
      for (guint chunk = MAX (kept->len / 2, 1); search.error == NULL; chunk /= 2)
        {
          for (guint start = kept->len; start-- > 0 && search.error == NULL;)
            {
              if (start % chunk != 0 || kept->len <= 1)
                continue;
              g_autoptr(GPtrArray) rest = without_chunk (kept, start, chunk);
              if (passes (&search, rest))
                g_ptr_array_remove_range (kept, start, MIN (chunk, kept->len - start));
            }
          if (chunk == 1)
            break;
        }
    }
  if (search.error == NULL)
    {
      names = g_ptr_array_new_with_free_func (g_free);
      for (guint i = 0; kept && i < kept->len; i++)
        g_ptr_array_add (names, g_strdup (((GraftNode *) kept->pdata[i])->name));
    }
  else
    g_propagate_error (error, search.error);
  if (n_runs)
    *n_runs = search.n_runs;
  g_clear_pointer (&search.reference, g_ptr_array_unref);
  g_ptr_array_unref (search.candidates);
  return names;
}
