/* The "simplify" operation: constant folding and the passes of
 * simplify-passes.c, round after round until a round changes nothing,
 * then the proof. The original (a copy taken first) and the result run in
 * Graft's runtime on the same seeded random inputs, at two sizes of the
 * symbolic dims when there are any; an output differing beyond
 * |a − b| ≤ atol + rtol·max|a| (max over that output of the original)
 * fails the edit. The passes are then replayed one by one on another copy
 * of the original, checked after each, so that the error names the pass
 * that changed the outputs and the first value it changed. */
#include "edit/edit-private.h"
#include "edit/simplify-preview.h"
#include "ir/graph-copy.h"
#include "runtime/runtime.h"
#include "runtime/inputs.h"

#include <math.h>
#include <string.h>

#define SIMPLIFY_MAX_ROUNDS 10

/* In the order a round runs them: folding makes the constants the
 * others look for; dead code last. */
static const char *const simplify_passes[] = {
  "fold-constants", "eliminate-no-ops", "eliminate-common-subexpressions", "fuse-layer-norm", "fuse-rms-norm",
  "fuse-gelu", "fuse-attention", "fold-into-conv", "fold-pad",
  "matmul-add-to-gemm", "fuse-sibling-matmuls", "merge-initializers", "eliminate-dead-code", NULL,
};
#define N_SIMPLIFY_PASSES (G_N_ELEMENTS (simplify_passes) - 1)

/* Sizes tried for the symbolic dims, in order, until two runs of the
 * original succeed (a model may refuse some: a sequence longer than its
 * positions, an odd size where it halves). */
static const gint64 symbolic_sizes[] = { 2, 3, 1, 4, 5, 7, 8 };

typedef struct {
  GPtrArray *inputs;     /* GHashTable* (input name → GraftRtTensor*) per size */
  GPtrArray *labels;     /* char* per size: "batch=2" */
  GPtrArray *expected;   /* GPtrArray* of the original's outputs per size */
  GPtrArray *names;      /* char*: the output names */
  double rtol, atol;
} Reference;

static void
reference_clear (Reference *reference)
{
  g_clear_pointer (&reference->inputs, g_ptr_array_unref);
  g_clear_pointer (&reference->labels, g_ptr_array_unref);
  g_clear_pointer (&reference->expected, g_ptr_array_unref);
  g_clear_pointer (&reference->names, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Reference, reference_clear)

static GraftRuntime *
runtime_for (GraftModel *model, GError **error)
{
  GraftRuntime *runtime = graft_runtime_new (model, error);

  if (runtime != NULL)
    {
      graft_runtime_set_n_threads (runtime, CLAMP (g_get_num_processors (), 1, 4));
      /* A few runs each: a multi-gigabyte model's weights are held once. */
      graft_runtime_set_keep_derived_weights (runtime, FALSE);
    }
  return runtime;
}

/* The symbolic dims of the runtime's inputs that given (input name →
 * tensor) does not fix, each once; those it fixes go into dims. */
static GPtrArray *
free_symbols (GraftRuntime *runtime, GHashTable *given, GHashTable *dims)
{
  GPtrArray *inputs = graft_runtime_get_inputs (runtime);
  GPtrArray *symbols = g_ptr_array_new ();

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      GraftRtTensor *tensor = g_hash_table_lookup (given, input->name);

      for (int d = 0; d < input->shape.rank; d++)
        {
          const char *symbol = input->shape.dims[d].symbol;
          if (input->shape.dims[d].kind != GRAFT_DIM_SYMBOLIC)
            continue;
          if (tensor != NULL && d < tensor->rank)
            g_hash_table_insert (dims, (gpointer) symbol, g_memdup2 (&tensor->dims[d], sizeof (gint64)));
          else if (!g_ptr_array_find (symbols, symbol, NULL))
            g_ptr_array_add (symbols, (gpointer) symbol);
        }
    }
  for (guint k = 0; k < symbols->len;)
    if (g_hash_table_contains (dims, g_ptr_array_index (symbols, k)))
      g_ptr_array_remove_index (symbols, k);
    else
      k++;
  return symbols;
}

/* The feeds of one run: the given tensors, and seeded random data for the
 * other inputs at dims; NULL with error. */
static GHashTable *
make_feeds (GraftRuntime *runtime, GHashTable *given, GHashTable *dims, guint32 seed, GError **error)
{
  GPtrArray *inputs = graft_runtime_get_inputs (runtime);
  g_autoptr(GHashTable) feeds = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                       (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GRand) rng = g_rand_new_with_seed (seed);

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      GraftRtTensor *tensor = g_hash_table_lookup (given, input->name);

      if (tensor != NULL)
        tensor = graft_rt_tensor_ref (tensor);
      else if ((tensor = graft_runtime_random_input (input, dims, rng, error)) == NULL)
        return NULL;
      g_hash_table_insert (feeds, g_strdup (input->name), tensor);
    }
  return g_steal_pointer (&feeds);
}

/* Runs the original on the inputs to check: the files of params' "inputs"
 * ("[NAME=]FILE", as graft-cli run reads them) for the inputs they give,
 * seeded random data for the others, with the symbolic dims the files do
 * not fix at each size of params' "sizes" (each must run), or by default
 * at the first two sizes that run. FALSE when none runs. */
static gboolean
reference_init (Reference *reference, GraftModel *original, GVariant *params, GError **error)
{
  g_autoptr(GError) local_error = NULL;
  g_autoptr(GraftRuntime) runtime = runtime_for (original, &local_error);
  g_autoptr(GPtrArray) symbols = NULL;
  g_autoptr(GHashTable) given = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                       (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GHashTable) fixed_dims = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  g_autofree const char **files = graft_edit_param_strv (params, "inputs");
  g_autoptr(GVariant) sizes_value = g_variant_lookup_value (params, "sizes", G_VARIANT_TYPE ("ax"));
  guint32 seed = (guint32) graft_edit_param_int (params, "seed", 0);
  const gint64 *sizes = symbolic_sizes;
  gsize n_sizes = G_N_ELEMENTS (symbolic_sizes);
  guint wanted;
  gboolean strict = sizes_value != NULL;
  g_autofree char *failure = NULL;

  if (runtime == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "cannot check the result: Graft's runtime cannot run the model (%s); --no-verify skips the check",
                   local_error->message);
      return FALSE;
    }
  if (files != NULL && !graft_runtime_bind_input_files ((char **) files, graft_runtime_get_inputs (runtime), given,
                                                        &local_error))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the inputs for the check: %s",
                   local_error->message);
      return FALSE;
    }
  if (sizes_value != NULL)
    sizes = g_variant_get_fixed_array (sizes_value, &n_sizes, sizeof (gint64));
  reference->inputs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_hash_table_unref);
  reference->labels = g_ptr_array_new_with_free_func (g_free);
  reference->expected = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  reference->names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < graft_runtime_get_outputs (runtime)->len; i++)
    g_ptr_array_add (reference->names,
                     g_strdup (((GraftValue *) g_ptr_array_index (graft_runtime_get_outputs (runtime), i))->name));
  symbols = free_symbols (runtime, given, fixed_dims);
  wanted = symbols->len == 0 ? 1 : strict ? n_sizes : 2;
  for (guint s = 0; s < (symbols->len == 0 ? 1 : n_sizes) && reference->inputs->len < wanted; s++)
    {
      g_autoptr(GHashTable) dims = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
      g_autoptr(GHashTable) feeds = NULL;
      g_autoptr(GString) label = g_string_new (g_hash_table_size (given) ? "the given inputs" : NULL);
      g_autoptr(GPtrArray) outputs = NULL;
      GHashTableIter iter;
      gpointer symbol, size;

      g_hash_table_iter_init (&iter, fixed_dims);
      while (g_hash_table_iter_next (&iter, &symbol, &size))
        g_hash_table_insert (dims, symbol, g_memdup2 (size, sizeof (gint64)));
      for (guint k = 0; k < symbols->len; k++)
        {
          g_hash_table_insert (dims, g_ptr_array_index (symbols, k), g_memdup2 (&sizes[s], sizeof (gint64)));
          g_string_append_printf (label, "%s%s=%" G_GINT64_FORMAT, label->len ? ", " : "",
                                  (char *) g_ptr_array_index (symbols, k), sizes[s]);
        }
      if ((feeds = make_feeds (runtime, given, dims, seed + s, &local_error)) == NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                       "cannot check the result: %s; --no-verify skips the check", local_error->message);
          return FALSE;
        }
      if ((outputs = graft_runtime_run (runtime, feeds, NULL, NULL, NULL, &local_error)) == NULL)
        {
          if (failure == NULL || strict)
            {
              g_free (failure);
              failure = g_strdup_printf ("%s%s%s", label->str, label->len ? ": " : "", local_error->message);
            }
          g_clear_error (&local_error);
          if (symbols->len == 0 || strict)
            break;
          continue;
        }
      g_ptr_array_add (reference->inputs, g_steal_pointer (&feeds));
      g_ptr_array_add (reference->labels,
                       g_strdup (label->len ? label->str
                                 : strict ? "the declared shapes (the inputs have no symbolic dim: the sizes given do not apply)"
                                          : "the declared shapes"));
      g_ptr_array_add (reference->expected, g_steal_pointer (&outputs));
    }
  if (reference->inputs->len < (strict ? wanted : 1))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED,
                   "cannot check the result: the original model fails on %s inputs (%s); --no-verify skips the "
                   "check", g_hash_table_size (given) ? "the given" : "random",
                   failure ? failure : "no size of its symbolic dims works");
      return FALSE;
    }
  return TRUE;
}

static char *
element_text (const GraftRtTensor *tensor, gint64 index)
{
  if (graft_dtype_is_float (tensor->dtype))
    return g_strdup_printf ("%.9g", graft_rt_tensor_get_f64 (tensor, index));
  return g_strdup_printf ("%" G_GINT64_FORMAT, graft_rt_tensor_get_i64 (tensor, index));
}

/* How got differs from expected beyond the tolerance, or NULL when it does not. */
static char *
describe_difference (const GraftRtTensor *expected, const GraftRtTensor *got, double rtol, double atol)
{
  double scale = 0.0;

  if (expected->kind != got->kind)
    return g_strdup ("is of another kind (tensor, sequence, none)");
  if (expected->kind != GRAFT_RT_TENSOR || expected->dtype == GRAFT_DTYPE_STRING)
    return NULL;
  if (expected->dtype != got->dtype)
    return g_strdup_printf ("is %s instead of %s", graft_dtype_to_string (got->dtype),
                            graft_dtype_to_string (expected->dtype));
  if (!graft_rt_tensor_same_shape (expected, got))
    {
      g_autofree char *a = graft_rt_tensor_describe (expected), *b = graft_rt_tensor_describe (got);
      return g_strdup_printf ("is %s instead of %s", b, a);
    }
  if (!graft_dtype_is_float (expected->dtype))
    {
      for (gint64 i = 0; i < expected->numel; i++)
        if (graft_rt_tensor_get_i64 (expected, i) != graft_rt_tensor_get_i64 (got, i))
          {
            g_autofree char *a = element_text (expected, i), *b = element_text (got, i);
            return g_strdup_printf ("element %" G_GINT64_FORMAT " is %s instead of %s", i, b, a);
          }
      return NULL;
    }
  for (gint64 i = 0; i < expected->numel; i++)
    {
      double a = graft_rt_tensor_get_f64 (expected, i);
      if (isfinite (a))
        scale = MAX (scale, fabs (a));
    }
  for (gint64 i = 0; i < expected->numel; i++)
    {
      double a = graft_rt_tensor_get_f64 (expected, i), b = graft_rt_tensor_get_f64 (got, i);
      gboolean same = isnan (a) ? isnan (b) : isinf (a) ? a == b : fabs (a - b) <= atol + rtol * scale;

      if (!same)
        {
          g_autofree char *a_text = element_text (expected, i), *b_text = element_text (got, i);
          return g_strdup_printf ("element %" G_GINT64_FORMAT " is %s instead of %s (|Δ| %.3g > %g + %g × %.3g)", i,
                                  b_text, a_text, fabs (a - b), atol, rtol, scale);
        }
    }
  return NULL;
}

/* The first output of model that differs from the reference's, in one
 * sentence, or NULL when every output is within the tolerance. */
static char *
find_divergence (GraftModel *model, Reference *reference)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) runtime = runtime_for (model, &error);

  if (runtime == NULL)
    return g_strdup_printf ("the result cannot run in Graft's runtime: %s", error->message);
  if (graft_runtime_get_outputs (runtime)->len != reference->names->len)
    return g_strdup_printf ("the result has %u outputs instead of %u", graft_runtime_get_outputs (runtime)->len,
                            reference->names->len);
  for (guint s = 0; s < reference->inputs->len; s++)
    {
      g_autoptr(GPtrArray) outputs = graft_runtime_run (runtime, g_ptr_array_index (reference->inputs, s), NULL, NULL,
                                                        NULL, &error);
      GPtrArray *expected = g_ptr_array_index (reference->expected, s);
      const char *label = g_ptr_array_index (reference->labels, s);

      if (outputs == NULL)
        return g_strdup_printf ("at %s the result fails: %s", label, error->message);
      for (guint i = 0; i < outputs->len; i++)
        {
          g_autofree char *difference = describe_difference (g_ptr_array_index (expected, i),
                                                             g_ptr_array_index (outputs, i), reference->rtol,
                                                             reference->atol);
          if (difference != NULL)
            return g_strdup_printf ("at %s, output '%s' %s", label, (char *) g_ptr_array_index (reference->names, i),
                                    difference);
        }
    }
  return NULL;
}

static const GraftEditOperation *
pass_operation (guint pass)
{
  const GraftEditOperation *operation = graft_edit_operation_lookup (simplify_passes[pass]);

  g_assert (operation != NULL);
  return operation;
}

static GVariant *
pass_params (guint pass, GVariant *params)
{
  gint64 max_bytes = graft_edit_param_int (params, "fold_max_bytes", -1);

  if (strcmp (simplify_passes[pass], "fold-constants") == 0 && max_bytes >= 0)
    return g_variant_ref_sink (graft_edit_params_new ("max_bytes", g_variant_new_int64 (max_bytes), NULL));
  return g_variant_ref_sink (graft_edit_params_new (NULL, NULL));
}

static void
add_subgraphs (GraftNode *node, gpointer subgraphs)
{
  g_autoptr(GPtrArray) own = graft_node_get_subgraphs (node);

  g_ptr_array_extend (subgraphs, own, NULL, NULL);
}

/* The pass on the scope's graph, then on every If/Loop/Scan body in it
 * (constant folding goes into them by itself). */
static gboolean
apply_pass (GraftEditScope *scope, guint pass, GVariant *params, GError **error)
{
  g_autoptr(GVariant) own_params = pass_params (pass, params);
  g_autoptr(GPtrArray) pass_notes = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) local_error = NULL;
  g_autoptr(GPtrArray) subgraphs = g_ptr_array_new ();

  if (!pass_operation (pass)->apply (scope, own_params, pass_notes, &local_error))
    {
      g_set_error (error, local_error->domain, local_error->code, "pass '%s': %s", simplify_passes[pass],
                   local_error->message);
      return FALSE;
    }
  if (strcmp (simplify_passes[pass], "fold-constants") == 0)
    return TRUE;
  /* collected after the pass on the graph: it may have removed a body */
  graft_graph_foreach_node_recursive (scope->graph, add_subgraphs, subgraphs);
  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftEditScope body = { scope->model, g_ptr_array_index (subgraphs, i), NULL };

      if (!pass_operation (pass)->apply (&body, own_params, pass_notes, &local_error))
        {
          g_autofree char *where = graft_edit_describe_graph (body.graph);
          g_set_error (error, local_error->domain, local_error->code, "pass '%s' in %s: %s", simplify_passes[pass],
                       where, local_error->message);
          return FALSE;
        }
    }
  return TRUE;
}

/* Replays the passes of sequence on a copy of original, checking after
 * each: the pass that first changed the outputs and how, or NULL. */
static char *
find_guilty_pass (GraftModel *original, GArray *sequence, GVariant *params, Reference *reference)
{
  g_autoptr(GraftModel) copy = graft_model_copy (original);
  GraftEditScope scope = { copy, graft_model_get_graph (copy), NULL };

  for (guint k = 0; k < sequence->len; k++)
    {
      guint pass = g_array_index (sequence, guint, k);
      g_autofree char *divergence = NULL;

      if (!apply_pass (&scope, pass, params, NULL))
        return NULL;
      if ((divergence = find_divergence (copy, reference)) != NULL)
        return g_strdup_printf ("pass '%s' (step %u) changed the outputs: %s", simplify_passes[pass], k + 1,
                                divergence);
    }
  return NULL;
}

gboolean
graft_edit_simplify_run (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  gboolean verify = graft_edit_param_bool (params, "verify", TRUE);
  g_auto(Reference) reference = { 0 };
  g_autoptr(GraftModel) original = NULL;
  g_autoptr(GArray) sequence = g_array_new (FALSE, FALSE, sizeof (guint));
  gint removed[N_SIMPLIFY_PASSES] = { 0 };
  double seconds[N_SIMPLIFY_PASSES] = { 0 };
  guint before = graph->nodes->len, initializers = graph->initializers->len, rounds = 0;
  gboolean changed = TRUE;
  g_autoptr(GString) summary = g_string_new (NULL);
  g_autofree const char **chosen = graft_edit_param_strv (params, "passes");
  g_autofree const char **given_files = graft_edit_param_strv (params, "inputs");

  for (guint k = 0; chosen != NULL && chosen[k] != NULL; k++)
    if (!g_strv_contains (simplify_passes, chosen[k]))
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "simplify has no pass '%s'", chosen[k]);
        return FALSE;
      }
  if (scope->function != NULL || graph != graft_model_get_graph (scope->model))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "simplify works on the main graph (which folds inside If/Loop/Scan bodies too)");
      return FALSE;
    }
  reference.rtol = graft_edit_param_double (params, "rtol", 1e-5);
  reference.atol = graft_edit_param_double (params, "atol", 1e-5);
  if (verify)
    {
      original = graft_model_copy (scope->model);
      if (!reference_init (&reference, original, params, error))
        return FALSE;
    }
  while (changed && rounds < SIMPLIFY_MAX_ROUNDS)
    {
      changed = FALSE;
      rounds++;
      for (guint pass = 0; pass < N_SIMPLIFY_PASSES; pass++)
        {
          guint nodes = graft_graph_count_nodes_recursive (graph), n_initializers = graph->initializers->len;
          gint64 start = g_get_monotonic_time ();

          if (chosen != NULL && !g_strv_contains (chosen, simplify_passes[pass]))
            continue;

          if (!apply_pass (scope, pass, params, error))
            return FALSE;
          seconds[pass] += (g_get_monotonic_time () - start) / 1e6;
          g_array_append_val (sequence, pass);
          removed[pass] += (gint) nodes - (gint) graft_graph_count_nodes_recursive (graph);
          changed |= graft_graph_count_nodes_recursive (graph) != nodes || graph->initializers->len != n_initializers;
        }
    }
  g_ptr_array_add (notes, g_strdup_printf ("%u → %u nodes, %u → %u initializers in %u round%s", before,
                                           graph->nodes->len, initializers, graph->initializers->len, rounds,
                                           rounds == 1 ? "" : "s"));
  for (guint pass = 0; pass < N_SIMPLIFY_PASSES; pass++)
    g_string_append_printf (summary, "%s%s %+d (%.2f s)", pass ? ", " : "", simplify_passes[pass], -removed[pass],
                            seconds[pass]);
  g_ptr_array_add (notes, g_strdup_printf ("nodes by pass: %s", summary->str));
  {
    g_autofree char *unavailable = graft_edit_fusions_unavailable (scope->model);
    if (unavailable != NULL)
      g_ptr_array_add (notes, g_steal_pointer (&unavailable));
  }
  if (!verify)
    {
      g_ptr_array_add (notes, g_strdup ("not checked (--no-verify)"));
      return TRUE;
    }
  g_autofree char *divergence = find_divergence (scope->model, &reference);
  if (divergence != NULL)
    {
      g_autofree char *guilty = find_guilty_pass (original, sequence, params, &reference);
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED, "%s",
                   guilty ? guilty : divergence);
      return FALSE;
    }
  g_string_truncate (summary, 0);
  for (guint s = 0; s < reference.labels->len; s++)
    g_string_append_printf (summary, "%s%s", s ? " and at " : "", (char *) g_ptr_array_index (reference.labels, s));
  g_ptr_array_add (notes, g_strdup_printf ("checked: the outputs equal the original's within rtol %g, atol %g at %s "
                                           "(%sGraft's runtime)", reference.rtol, reference.atol, summary->str,
                                           given_files != NULL ? "" : "random inputs, "));
  return TRUE;
}

char *
graft_edit_simplify_describe (GVariant *params)
{
  return g_strdup (graft_edit_param_bool (params, "verify", TRUE) ? "Simplify (checked by running)" : "Simplify");
}

const char *const *
graft_simplify_pass_ids (void)
{
  return simplify_passes;
}

static void
simplify_pass_free (GraftSimplifyPass *pass)
{
  g_free (pass->title);
  g_free (pass->reason);
  g_free (pass);
}

GPtrArray *
graft_simplify_preview (GraftModel *model)
{
  GPtrArray *passes = g_ptr_array_new_with_free_func ((GDestroyNotify) simplify_pass_free);

  for (guint k = 0; k < N_SIMPLIFY_PASSES; k++)
    {
      GraftSimplifyPass *pass = g_new0 (GraftSimplifyPass, 1);
      g_autoptr(GraftModel) copy = graft_model_copy (model);
      GraftEditScope scope = { copy, graft_model_get_graph (copy), NULL };
      g_autoptr(GVariant) params = g_variant_ref_sink (graft_edit_params_new (NULL, NULL));
      g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func (g_free);
      g_autoptr(GError) error = NULL;
      guint nodes = scope.graph->nodes->len, initializers = scope.graph->initializers->len;

      pass->id = simplify_passes[k];
      pass->title = pass_operation (k)->describe (params);
      if (!pass_operation (k)->apply (&scope, params, notes, &error))
        pass->reason = g_strdup (error->message);
      else
        {
          pass->removed = (int) nodes - (int) scope.graph->nodes->len;
          pass->initializers_removed = (int) initializers - (int) scope.graph->initializers->len;
          for (guint i = 0; i < notes->len; i++)
            if (g_str_has_prefix (g_ptr_array_index (notes, i), "nothing fused: "))
              pass->reason = g_strdup ((char *) g_ptr_array_index (notes, i) + strlen ("nothing fused: "));
        }
      g_ptr_array_add (passes, pass);
    }
  return passes;
}
