/* The runtime object: its settings and public API. Planning is in
 * runtime-plan.c (and runtime-fusion.c), execution in runtime-run.c. */
#include "runtime/runtime-private.h"

#include <unistd.h>
#include "ir/graph-check.h"

GraftRuntime *
graft_runtime_new (GraftModel *model, GError **error)
{
  g_autoptr(GPtrArray) unsupported = NULL;

  /* Kernels trust SSA, order and attribute ranges: an invalid graph would
   * run to a wrong answer (or read out of bounds), so it does not run. */
  if (graft_model_get_graph (model) && !graft_graph_validate_structure (graft_model_get_graph (model), error))
    return NULL;
  if (!graft_runtime_check_supported (model, &unsupported, error))
    return NULL;
  if (unsupported->len > 0)
    {
      g_autofree char *list = graft_runtime_describe_unsupported (model, unsupported);
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                   "the runtime does not support %s", list);
      return NULL;
    }

  GraftRuntime *rt = g_new0 (GraftRuntime, 1);
  long pages = sysconf (_SC_PHYS_PAGES), page_size = sysconf (_SC_PAGESIZE);
  rt->max_seconds = GRAFT_RUNTIME_DEFAULT_SECONDS;
  rt->max_bytes = pages > 0 && page_size > 0 ? (guint64) pages * (guint64) page_size / 4 * 3 : 0;
  rt->model = g_object_ref (model);
  rt->plans = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) _graft_plan_free);
  rt->inlined = g_hash_table_new (g_direct_hash, g_direct_equal);
  rt->pool = graft_rt_pool_new ();
  rt->timings = g_array_new (FALSE, TRUE, sizeof (GraftNodeTiming));
  g_mutex_init (&rt->run_lock);
  rt->function_bodies = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) graft_graph_free);
  rt->function_opsets = g_hash_table_new (g_direct_hash, g_direct_equal);
  rt->function_depths = g_hash_table_new (g_direct_hash, g_direct_equal);

  if (!_graft_runtime_plan (rt, error))
    {
      graft_runtime_free (rt);
      return NULL;
    }

  GraftGraph *graph = graft_model_get_graph (model);
  rt->inputs = g_ptr_array_new ();
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *v = graph->inputs->pdata[i];
      if (v->initializer == NULL)
        g_ptr_array_add (rt->inputs, v);
    }
  rt->outputs = g_ptr_array_copy (graph->outputs, NULL, NULL);
  return rt;
}

static void
restore_weights (GraftRuntime *self)
{
  for (guint s = 0; s < self->main->n_slots; s++)
    if (self->given_back[s] == 1 && self->main->values[s]->initializer)
      graft_tensor_restore (self->main->values[s]->initializer, NULL);
}

void
graft_runtime_free (GraftRuntime *self)
{
  if (self == NULL)
    return;
  g_hash_table_destroy (self->plans);
  g_hash_table_destroy (self->inlined);
  g_hash_table_destroy (self->function_bodies);
  g_hash_table_destroy (self->function_opsets);
  g_hash_table_destroy (self->function_depths);
  graft_worker_pool_free (self->workers);
  graft_rt_pool_unref (self->pool);
  g_array_unref (self->timings);
  g_clear_pointer (&self->inputs, g_ptr_array_unref);
  g_clear_pointer (&self->outputs, g_ptr_array_unref);
  g_mutex_clear (&self->run_lock);
  /* weights given back stay readable through graft_tensor_get_data(), but
   * other readers of a model that outlives the runtime take data as it is */
  if (self->given_back_bytes && g_atomic_int_get (&G_OBJECT (self->model)->ref_count) > 1)
    restore_weights (self);
  g_free (self->given_back);
  g_object_unref (self->model);
  g_free (self);
}

GraftModel *
graft_runtime_get_model (GraftRuntime *self)
{
  return self->model;
}

void
graft_runtime_set_n_threads (GraftRuntime *self, guint n_threads)
{
  n_threads = CLAMP (n_threads, 1, 256);
  if (n_threads == graft_worker_pool_get_n_threads (self->workers))
    return;
  graft_worker_pool_free (self->workers);
  self->workers = n_threads > 1 ? graft_worker_pool_new (n_threads) : NULL;
  graft_worker_pool_set_count_cpu (self->workers, self->profiling);
}

gboolean
graft_runtime_set_precision (GraftRuntime *self, GraftPrecision precision, GError **error)
{
  if (!graft_precision_available (precision, error))
    return FALSE;
  self->precision = precision;
  return TRUE;
}

GraftPrecision
graft_runtime_get_precision (GraftRuntime *self)
{
  return self->precision;
}

static void
step_drop_derived (Step *step)
{
  if (step->derived_kind)
    step->derived_kind->free (step->derived);
  step->derived_kind = NULL;
  step->derived = NULL;
  step->derived_key = NULL;
  if (step->qdq)
    step_drop_derived (step->qdq);
  if (step->pattern)
    step_drop_derived (step->pattern);
}

void
graft_runtime_set_keep_derived_weights (GraftRuntime *self, gboolean keep)
{
  GHashTableIter iter;
  gpointer plan;

  g_mutex_lock (&self->run_lock);
  self->drop_derived = !keep;
  /* what is kept goes now, not at the next run that misses it */
  g_hash_table_iter_init (&iter, self->plans);
  while (!keep && g_hash_table_iter_next (&iter, NULL, &plan))
    for (guint i = 0; i < ((Plan *) plan)->n_steps; i++)
      step_drop_derived (&((Plan *) plan)->steps[i]);
  g_mutex_unlock (&self->run_lock);
}

static guint64
steps_folded_bytes (Step *steps, guint n_steps)
{
  guint64 bytes = 0;
  for (guint i = 0; i < n_steps; i++)
    if (steps[i].folded_weight && steps[i].folded_resident)
      bytes += steps[i].folded_weight->nbytes;
  return bytes;
}

guint64
graft_runtime_get_given_back_bytes (GraftRuntime *self)
{
  guint64 bytes = 0;

  g_mutex_lock (&self->run_lock);
  /* graft_tensor_get_data() may have read one in since */
  for (guint s = 0; self->given_back && s < self->main->n_slots; s++)
    {
      GraftTensor *tensor = self->main->values[s]->initializer;
      if (self->given_back[s] == 1 && tensor && tensor->given_back)
        bytes += graft_tensor_get_nbytes (tensor);
    }
  g_mutex_unlock (&self->run_lock);
  return bytes;
}

guint64
graft_runtime_get_folded_weight_bytes (GraftRuntime *self)
{
  GHashTableIter iter;
  gpointer plan;
  guint64 bytes = 0;

  g_mutex_lock (&self->run_lock);
  g_hash_table_iter_init (&iter, self->plans);
  while (g_hash_table_iter_next (&iter, NULL, &plan))
    bytes += steps_folded_bytes (((Plan *) plan)->steps, ((Plan *) plan)->n_steps);
  g_mutex_unlock (&self->run_lock);
  return bytes;
}

void
graft_runtime_set_limits (GraftRuntime *self, double seconds, guint64 bytes)
{
  self->max_seconds = MAX (seconds, 0);
  self->max_bytes = bytes;
}

void
graft_runtime_get_limits (GraftRuntime *self, double *seconds, guint64 *bytes)
{
  if (seconds)
    *seconds = self->max_seconds;
  if (bytes)
    *bytes = self->max_bytes;
}

guint
graft_runtime_get_n_threads (GraftRuntime *self)
{
  return graft_worker_pool_get_n_threads (self->workers);
}

GPtrArray *
graft_runtime_get_inputs (GraftRuntime *self)
{
  return self->inputs;
}

GPtrArray *
graft_runtime_get_outputs (GraftRuntime *self)
{
  return self->outputs;
}

void
graft_runtime_set_observer (GraftRuntime *self, GraftRuntimeObserveFunc func, gpointer user_data)
{
  self->observe = func;
  self->observe_data = user_data;
}

void
graft_runtime_set_observe_subgraphs (GraftRuntime *self, gboolean enabled)
{
  self->observe_subgraphs = enabled;
}

void
graft_runtime_set_observe_untaken_branches (GraftRuntime *self, gboolean enabled)
{
  self->observe_untaken_branches = enabled;
}

void
graft_runtime_set_profiling (GraftRuntime *self, gboolean enabled)
{
  self->profiling = enabled;
  graft_worker_pool_set_count_cpu (self->workers, enabled);
}

GArray *
graft_runtime_get_timings (GraftRuntime *self)
{
  return self->timings;
}

gboolean
graft_node_timing_is_fused (const GraftNodeTiming *t)
{
  return t->calls > 0 && t->fused_calls == t->calls && t->fused_op != NULL;
}

void
graft_runtime_reset_timings (GraftRuntime *self)
{
  for (guint i = 0; i < self->timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (self->timings, GraftNodeTiming, i);
      t->seconds = t->cpu_seconds = 0;
      t->calls = t->fused_calls = t->forwarded_calls = 0;
    }
}

/* A symbolic dim with a range (torch.export's range_constraints) refuses
 * sizes outside it, as the exported program does in PyTorch. */
static gboolean
check_dim_ranges (GraftRuntime *self, GraftValue *input, GraftRtTensor *tensor, GError **error)
{
  GraftModel *model = graft_runtime_get_model (self);
  GraftGraph *graph = graft_model_get_graph (model);
  guint position = 0;

  g_ptr_array_find (graph->inputs, input, &position);
  for (int i = 0; i < tensor->rank; i++)
    {
      const GraftDim *dim = &input->shape.dims[i];
      gint64 min, max;

      if (dim->kind != GRAFT_DIM_SYMBOLIC || !graft_model_get_dim_range (model, dim->symbol, &min, &max))
        continue;
      if (tensor->dims[i] >= min && (max < 0 || tensor->dims[i] <= max))
        continue;
      g_autofree char *range = max < 0 ? g_strdup_printf ("[%" G_GINT64_FORMAT ", ∞)", min)
                               : g_strdup_printf ("[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", min, max);
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "input '%s' dim %d (%s) is %" G_GINT64_FORMAT ", outside its range %s; the exported program "
                   "refuses it in PyTorch too (expected *args[%u].shape[%d] to be %s %" G_GINT64_FORMAT ")",
                   input->name, i, dim->symbol, tensor->dims[i], range, position, i,
                   tensor->dims[i] < min ? ">=" : "<=", tensor->dims[i] < min ? min : max);
      return FALSE;
    }
  return TRUE;
}

typedef enum { EXPECTS_SEQUENCE, EXPECTS_TENSOR, EXPECTS_DTYPE, EXPECTS_SHAPE } InputExpects;

/* Why input does not take tensor, for the error (formatted only then:
 * two strings an input a run were 1 % of a tiny model's run). */
static gboolean
input_refused (GraftValue *input, GraftRtTensor *tensor, InputExpects expects, GError **error)
{
  g_autofree char *expected = graft_shape_to_string (&input->shape);
  g_autofree char *got = graft_rt_tensor_describe (tensor);
  const char *want_dtype = graft_dtype_to_string (input->dtype);

  if (expects == EXPECTS_SEQUENCE)
    g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "input '%s' expects a sequence (%s), got %s",
                 input->name, input->type_string ? input->type_string : "", got);
  else if (expects == EXPECTS_TENSOR)
    g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "input '%s' expects a tensor %s[%s], got %s",
                 input->name, want_dtype, expected, got);
  else if (expects == EXPECTS_DTYPE)
    g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                 "input '%s' expects element type %s (shape %s), got %s", input->name, want_dtype, expected, got);
  else
    g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "input '%s' expects shape %s (%s), got %s",
                 input->name, expected, want_dtype, got);
  return FALSE;
}

gboolean
graft_runtime_check_input (GraftRuntime *self, GraftValue *input, GraftRtTensor *tensor, GError **error)
{
  if (input->kind == GRAFT_VALUE_SEQUENCE)
    return tensor->kind == GRAFT_RT_SEQUENCE || input_refused (input, tensor, EXPECTS_SEQUENCE, error);
  if (input->kind == GRAFT_VALUE_OPTIONAL && tensor->kind != GRAFT_RT_TENSOR)
    return TRUE;
  if (tensor->kind != GRAFT_RT_TENSOR)
    return input_refused (input, tensor, EXPECTS_TENSOR, error);
  if (input->dtype != GRAFT_DTYPE_UNDEFINED && tensor->dtype != input->dtype)
    return input_refused (input, tensor, EXPECTS_DTYPE, error);
  if (input->shape.rank >= 0)
    {
      gboolean ok = input->shape.rank == tensor->rank;
      for (int i = 0; ok && i < tensor->rank; i++)
        if (input->shape.dims[i].kind == GRAFT_DIM_FIXED && input->shape.dims[i].value != tensor->dims[i])
          ok = FALSE;
      if (!ok)
        return input_refused (input, tensor, EXPECTS_SHAPE, error);
      return check_dim_ranges (self, input, tensor, error);
    }
  return TRUE;
}
