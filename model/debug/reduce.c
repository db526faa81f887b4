/* Reduce a failing model to a small failing subgraph (reduce.h). */
#include <string.h>
#include <glib/gstdio.h>
#include "debug/reduce.h"
#include "debug/reference-values.h"
#include "debug/value-check.h"
#include "compare/numeric-diff.h"
#include "edit/edit.h"
#include "ir/graph-order.h"
#include "onnx/writer.h"
#include "runtime/inputs.h"

struct _GraftReduce {
  /* Borrowed references */
  GraftModel *model;

  /* Owned references */
  GraftReduceCondition condition;
  GHashTable *inputs;          /* char* → GraftRtTensor*: the model's inputs */
  GHashTable *recorded;        /* char* → GraftRtTensor*: every value of the whole model's run */
  GHashTable *dims;            /* symbol → gint64*: the sizes the inputs give the graph inputs' symbolic dims */
  GHashTable *reference;       /* char* → GraftRtTensor*, MISMATCH only */
  double rtol, atol;
  char *command;
  char *scratch_dir;           /* where a COMMAND candidate is written */
  GPtrArray *steps;            /* GraftNode*: the nodes a candidate chooses from, topological order */
  GHashTable *constant_nodes;  /* GraftNode*: nodes computing constants, taken along by their consumers */
  GQuark failure_domain;       /* FAILS_IN_GRAFT: the whole model's error */
  int failure_code;

  guint n_runs;
  GPtrArray *kept_nodes;       /* char* */
  char *failure;
  GHashTable *result_inputs;
};

/* What one candidate did. */
typedef struct {
  gboolean fails;
  char *failure;               /* how it failed, owned */
  GraftModel *candidate;       /* owned */
  GHashTable *feed;            /* char* (the candidate's) → GraftRtTensor*, owned */
} Outcome;

static void
outcome_clear (Outcome *outcome)
{
  g_clear_pointer (&outcome->failure, g_free);
  g_clear_object (&outcome->candidate);
  g_clear_pointer (&outcome->feed, g_hash_table_unref);
}

static GHashTable *
new_tensor_table (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) graft_rt_tensor_unref);
}

static void
copy_tensor_table (GHashTable *into, GHashTable *from)
{
  GHashTableIter iter;
  gpointer key, value;

  g_hash_table_iter_init (&iter, from);
  while (g_hash_table_iter_next (&iter, &key, &value))
    g_hash_table_replace (into, g_strdup (key), graft_rt_tensor_ref (value));
}

/* batch = 2 when the input declared batch×3×224×224 is fed 2×3×224×224:
 * random data for values the run never reached takes those sizes. */
static void
record_dims (GraftReduce *self)
{
  GraftGraph *graph = graft_model_get_graph (self->model);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = graph->inputs->pdata[i];
      GraftRtTensor *tensor = g_hash_table_lookup (self->inputs, input->name);
      if (tensor == NULL || tensor->kind != GRAFT_RT_TENSOR || tensor->rank != input->shape.rank)
        continue;
      for (int d = 0; d < input->shape.rank; d++)
        if (input->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC)
          g_hash_table_replace (self->dims, g_strdup (input->shape.dims[d].symbol),
                                g_memdup2 (&tensor->dims[d], sizeof (gint64)));
    }
}

GraftReduce *
graft_reduce_new (GraftModel *model, GraftReduceCondition condition, GHashTable *inputs)
{
  GraftReduce *self = g_new0 (GraftReduce, 1);

  self->model = model;
  self->condition = condition;
  self->inputs = new_tensor_table ();
  copy_tensor_table (self->inputs, inputs);
  self->recorded = new_tensor_table ();
  self->reference = new_tensor_table ();
  self->dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  record_dims (self);
  self->steps = graft_graph_topological_order (graft_model_get_graph (model));
  self->constant_nodes = graft_graph_find_constant_nodes (self->steps);
  self->kept_nodes = g_ptr_array_new_with_free_func (g_free);
  for (guint i = self->steps->len; i-- > 0;)
    if (g_hash_table_contains (self->constant_nodes, self->steps->pdata[i]))
      g_ptr_array_remove_index (self->steps, i);
  return self;
}

void
graft_reduce_free (GraftReduce *self)
{
  if (self == NULL)
    return;
  if (self->scratch_dir != NULL)
    {
      g_autofree char *candidate = g_build_filename (self->scratch_dir, "candidate.onnx", NULL);
      g_remove (candidate);
      g_rmdir (self->scratch_dir);
    }
  g_hash_table_unref (self->inputs);
  g_hash_table_unref (self->recorded);
  g_hash_table_unref (self->reference);
  g_hash_table_unref (self->dims);
  g_clear_pointer (&self->result_inputs, g_hash_table_unref);
  g_ptr_array_unref (self->steps);
  g_hash_table_unref (self->constant_nodes);
  g_ptr_array_unref (self->kept_nodes);
  g_free (self->command);
  g_free (self->scratch_dir);
  g_free (self->failure);
  g_free (self);
}

void
graft_reduce_set_reference (GraftReduce *self, GHashTable *values, double rtol, double atol)
{
  copy_tensor_table (self->reference, values);
  self->rtol = rtol;
  self->atol = atol;
}

void
graft_reduce_set_command (GraftReduce *self, const char *command)
{
  g_free (self->command);
  self->command = g_strdup (command);
}

/* The candidate of set: the values it reads from outside, the values it
 * computes that something outside reads. */
static void
candidate_boundary (GraftReduce *self, GHashTable *set, GPtrArray *inputs, GPtrArray *outputs)
{
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < self->steps->len; i++)
    {
      GraftNode *node = self->steps->pdata[i];
      if (!g_hash_table_contains (set, node))
        continue;
      for (guint k = 0; k < node->inputs->len; k++)
        {
          GraftValue *in = node->inputs->pdata[k];
          if (in == NULL || in->initializer != NULL || in->graph != node->graph
              || (in->producer && (g_hash_table_contains (set, in->producer)
                                   || g_hash_table_contains (self->constant_nodes, in->producer))))
            continue;
          if (g_hash_table_add (seen, in))
            g_ptr_array_add (inputs, in->name);
        }
      for (guint k = 0; k < node->outputs->len; k++)
        {
          GraftValue *out = node->outputs->pdata[k];
          gboolean read_outside = out && out->is_graph_output;
          for (guint c = 0; out && !read_outside && c < out->consumers->len; c++)
            read_outside = !g_hash_table_contains (set, out->consumers->pdata[c]);
          if (read_outside)
            g_ptr_array_add (outputs, out->name);
        }
    }
  g_ptr_array_add (inputs, NULL);
  g_ptr_array_add (outputs, NULL);
}

/* The tensor a candidate's input is fed: the reference's value when
 * comparing (what a correct model computes there), else the recorded one;
 * random data of the declared type where the whole model's run never got
 * that far. */
static GraftRtTensor *
feed_tensor (GraftReduce *self, GraftValue *input, GRand *rng)
{
  GraftRtTensor *tensor = NULL;

  if (self->condition == GRAFT_REDUCE_MISMATCH)
    tensor = g_hash_table_lookup (self->reference, input->name);
  if (tensor == NULL)
    tensor = g_hash_table_lookup (self->recorded, input->name);
  if (tensor != NULL)
    return graft_rt_tensor_ref (tensor);
  return graft_runtime_random_input (input, self->dims, rng, NULL);
}


/* Candidates declare their inputs as the recorded tensors are, where
 * inference left a type open. */
static void
declare_from_tensor (GraftValue *value, GraftRtTensor *tensor)
{
  if (tensor->kind != GRAFT_RT_TENSOR)
    return;
  if (value->dtype == GRAFT_DTYPE_UNDEFINED)
    value->dtype = tensor->dtype;
  if (value->shape.rank < 0)
    graft_rt_tensor_get_shape (tensor, &value->shape);
}

static GraftModel *
build_candidate (GraftReduce *self, GHashTable *set, GHashTable **feed)
{
  g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new ();
  g_autoptr(GRand) rng = g_rand_new_with_seed (0);

  candidate_boundary (self, set, inputs, outputs);
  if (outputs->len == 1 || inputs->len == 1)
    return NULL;  /* computes nothing anyone reads, or only constants */
  g_autoptr(GraftEdit) extract = graft_edit_new_extract ((const char *const *) inputs->pdata,
                                                         (const char *const *) outputs->pdata);
  g_autoptr(GraftModel) candidate = graft_edit_apply_to_copy (extract, self->model, NULL);
  if (candidate == NULL)
    return NULL;
  g_autoptr(GHashTable) fed = new_tensor_table ();
  GraftGraph *graph = graft_model_get_graph (candidate);
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = graph->inputs->pdata[i];
      /* a command reads the file only */
      if (input->initializer != NULL || self->condition == GRAFT_REDUCE_COMMAND)
        continue;
      GraftRtTensor *tensor = feed_tensor (self, input, rng);
      if (tensor == NULL)
        return NULL;
      declare_from_tensor (input, tensor);
      g_hash_table_replace (fed, g_strdup (input->name), tensor);
    }
  *feed = g_steal_pointer (&fed);
  return g_steal_pointer (&candidate);
}

static char *
shell_command (const char *command, const char *path)
{
  g_autofree char *quoted = g_shell_quote (path);
  g_auto(GStrv) parts = g_strsplit (command, "{model}", -1);

  if (g_strv_length (parts) < 2)
    return g_strconcat (command, " ", quoted, NULL);
  return g_strjoinv (quoted, parts);
}

static gboolean
run_command (GraftReduce *self, Outcome *outcome, GError **error)
{
  if (self->scratch_dir == NULL && (self->scratch_dir = g_dir_make_tmp ("graft-reduce-XXXXXX", error)) == NULL)
    return FALSE;
  g_autofree char *path = g_build_filename (self->scratch_dir, "candidate.onnx", NULL);
  if (!graft_onnx_write_file (outcome->candidate, path, GRAFT_ONNX_WRITE_NONE, error))
    return FALSE;
  g_autofree char *command = shell_command (self->command, path);
  const char *argv[] = { "/bin/sh", "-c", command, NULL };
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                     NULL, NULL, &status, error))
    return FALSE;
  g_autoptr(GError) exit_error = NULL;
  outcome->fails = !g_spawn_check_wait_status (status, &exit_error);
  if (outcome->fails)
    outcome->failure = g_strdup_printf ("the command failed (%s)", exit_error->message);
  return TRUE;
}

/* What the observer of a candidate's run looks for. */
typedef struct {
  GraftReduce *reduce;
  char *failure;
} RunWatch;

static void
watch_value (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  RunWatch *watch = user_data;
  GraftReduce *self = watch->reduce;

  if (watch->failure != NULL)
    return;
  if (self->condition == GRAFT_REDUCE_NONFINITE)
    {
      GraftValueRange range;
      graft_value_range_compute (value, tensor, &range);
      if (!graft_value_range_is_finite (&range))
        {
          g_autofree char *desc = graft_value_range_describe (&range);
          watch->failure = g_strdup_printf ("%s '%s' makes NaN/Inf: %s is %s", node->op, node->name, value->name, desc);
        }
      graft_value_range_clear (&range);
    }
  else if (self->condition == GRAFT_REDUCE_MISMATCH)
    {
      GraftRtTensor *want = g_hash_table_lookup (self->reference, value->name);
      GraftValueError e = { value, value };
      if (want == NULL)
        return;
      graft_value_error_compare (want, tensor, self->rtol, self->atol, &e);
      if (e.compared && !e.close)
        watch->failure = e.shape_differs
                           ? g_strdup_printf ("%s '%s': %s has shape %s, the reference %s", node->op, node->name,
                                              value->name, e.shape_b, e.shape_a)
                           : g_strdup_printf ("%s '%s': %s differs from the reference by up to %.6g (%.3g of its scale)",
                                              node->op, node->name, value->name, e.max_abs, e.max_rel);
      g_free (e.shape_a);
      g_free (e.shape_b);
    }
}

static gboolean
feed_is_finite (GHashTable *feed)
{
  GHashTableIter iter;
  gpointer tensor;

  g_hash_table_iter_init (&iter, feed);
  while (g_hash_table_iter_next (&iter, NULL, &tensor))
    {
      GraftValueRange range;
      graft_value_range_compute (NULL, tensor, &range);
      gboolean finite = graft_value_range_is_finite (&range);
      graft_value_range_clear (&range);
      if (!finite)
        return FALSE;
    }
  return TRUE;
}

static gboolean
same_failure_kind (GraftReduce *self, const GError *error)
{
  return error->domain == self->failure_domain && error->code == self->failure_code;
}

/* Runs the candidate in Graft's runtime and judges it. FALSE only when
 * cancelled. */
static gboolean
run_in_graft (GraftReduce *self, Outcome *outcome, GCancellable *cancellable, GError **error)
{
  g_autoptr(GError) run_error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (outcome->candidate, &run_error);
  RunWatch watch = { self, NULL };

  if (rt != NULL)
    {
      if (self->condition == GRAFT_REDUCE_NONFINITE && !feed_is_finite (outcome->feed))
        return TRUE;  /* NaN fed in is not NaN made here */
      graft_runtime_set_observer (rt, watch_value, &watch);
      G_GNUC_UNUSED g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, outcome->feed, cancellable, NULL, NULL, &run_error);
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          g_free (watch.failure);
          return FALSE;
        }
    }
  if (self->condition == GRAFT_REDUCE_FAILS_IN_GRAFT)
    {
      outcome->fails = run_error != NULL && same_failure_kind (self, run_error);
      if (outcome->fails)
        outcome->failure = g_strdup (run_error->message);
      g_free (watch.failure);
      return TRUE;
    }
  outcome->fails = watch.failure != NULL;
  outcome->failure = watch.failure;
  return TRUE;
}

static gboolean
evaluate (GraftReduce *self, GHashTable *set, Outcome *outcome, GraftReduceProgressFunc progress,
          gpointer progress_data, GCancellable *cancellable, GError **error)
{
  *outcome = (Outcome) { 0 };
  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  outcome->candidate = build_candidate (self, set, &outcome->feed);
  self->n_runs++;
  gboolean ok = TRUE;
  if (outcome->candidate != NULL)
    ok = self->condition == GRAFT_REDUCE_COMMAND ? run_command (self, outcome, error)
                                                 : run_in_graft (self, outcome, cancellable, error);
  if (progress)
    progress (self->n_runs, outcome->fails ? graft_model_get_graph (outcome->candidate)->nodes->len : 0, progress_data);
  return ok;
}

static void
record_value (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  GraftReduce *self = user_data;

  g_hash_table_replace (self->recorded, g_strdup (value->name), graft_rt_tensor_ref (tensor));
}

/* The whole model's run, every value kept; for FAILS_IN_GRAFT the kind of
 * its error. */
static gboolean
record_run (GraftReduce *self, GCancellable *cancellable, GError **error)
{
  g_autoptr(GError) run_error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (self->model, &run_error);

  copy_tensor_table (self->recorded, self->inputs);
  if (rt != NULL)
    {
      graft_runtime_set_observer (rt, record_value, self);
      G_GNUC_UNUSED g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, self->inputs, cancellable, NULL, NULL, &run_error);
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
    }
  if (run_error != NULL)
    {
      if (g_error_matches (run_error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT))
        {
          g_propagate_error (error, g_steal_pointer (&run_error));
          return FALSE;
        }
      self->failure_domain = run_error->domain;
      self->failure_code = run_error->code;
    }
  return TRUE;
}

static GHashTable *
set_of_range (GraftReduce *self, guint start, guint end)
{
  GHashTable *set = g_hash_table_new (NULL, NULL);

  for (guint i = start; i < end; i++)
    g_hash_table_add (set, self->steps->pdata[i]);
  return set;
}

/* One search: the smallest failing candidate so far, and how to report. */
typedef struct {
  GraftReduce *reduce;
  Outcome best;
  GraftReduceProgressFunc progress;
  gpointer progress_data;
  GCancellable *cancellable;
  GError *error;               /* cancelled, or a candidate could not be written or run */
} Search;

/* Evaluates set (taken over): TRUE when it fails, and then it is the best
 * so far. After an error, FALSE for every set. */
static gboolean
try_set (Search *search, GHashTable *set)
{
  G_GNUC_UNUSED g_autoptr(GHashTable) owned = set;
  Outcome outcome;

  if (search->error != NULL)
    return FALSE;
  if (!evaluate (search->reduce, set, &outcome, search->progress, search->progress_data, search->cancellable,
                 &search->error))
    {
      outcome_clear (&outcome);
      return FALSE;
    }
  if (!outcome.fails)
    {
      outcome_clear (&outcome);
      return FALSE;
    }
  outcome_clear (&search->best);
  search->best = outcome;
  return TRUE;
}

static GHashTable *
set_without (GHashTable *set, GraftNode *node)
{
  GHashTable *without = g_hash_table_new (NULL, NULL);
  GHashTableIter iter;
  gpointer other;

  g_hash_table_iter_init (&iter, set);
  while (g_hash_table_iter_next (&iter, &other, NULL))
    if (other != node)
      g_hash_table_add (without, other);
  return without;
}

/* Bisection: the shortest failing prefix [0, *end), then the latest
 * *start with [*start, *end) failing. */
static void
bisect (Search *search, guint *start, guint *end)
{
  GraftReduce *self = search->reduce;
  guint low = 1, high;

  *end = self->steps->len;
  while (low < *end && search->error == NULL)
    {
      guint mid = low + (*end - low) / 2;
      if (try_set (search, set_of_range (self, 0, mid)))
        *end = mid;
      else
        low = mid + 1;
    }
  *start = 0;
  high = *end - 1;
  while (*start < high && search->error == NULL)
    {
      guint mid = *start + (high - *start + 1) / 2;
      if (try_set (search, set_of_range (self, mid, *end)))
        *start = mid;
      else
        high = mid - 1;
    }
}

/* Drops the nodes of [start, end) one at a time, from the end, while the
 * rest still fails, until a pass drops nothing. */
static void
shrink (Search *search, guint start, guint end)
{
  GraftReduce *self = search->reduce;
  g_autoptr(GHashTable) kept = set_of_range (self, start, end);

  for (gboolean changed = TRUE; changed && search->error == NULL;)
    {
      changed = FALSE;
      for (guint i = end; i-- > start && g_hash_table_size (kept) > 1;)
        {
          GraftNode *node = self->steps->pdata[i];
          if (g_hash_table_contains (kept, node) && try_set (search, set_without (kept, node)))
            {
              g_hash_table_remove (kept, node);
              changed = TRUE;
            }
        }
    }
}

GraftModel *
graft_reduce_run (GraftReduce *self, GraftReduceProgressFunc progress, gpointer progress_data,
                  GCancellable *cancellable, GError **error)
{
  Search search = { self, { 0 }, progress, progress_data, cancellable, NULL };
  guint start, end;

  if (self->steps->len == 0)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "the model computes nothing but constants");
      return NULL;
    }
  if (self->condition != GRAFT_REDUCE_COMMAND && !record_run (self, cancellable, error))
    return NULL;
  if (!try_set (&search, set_of_range (self, 0, self->steps->len)))
    {
      if (search.error == NULL)
        g_set_error (&search.error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                     "the model does not fail that way on these inputs: nothing to reduce");
      g_propagate_error (error, search.error);
      return NULL;
    }
  bisect (&search, &start, &end);
  shrink (&search, start, end);
  if (search.error != NULL)
    {
      g_propagate_error (error, search.error);
      outcome_clear (&search.best);
      return NULL;
    }

  GraftGraph *graph = graft_model_get_graph (search.best.candidate);
  for (guint i = 0; i < graph->nodes->len; i++)
    g_ptr_array_add (self->kept_nodes, g_strdup (((GraftNode *) graph->nodes->pdata[i])->name));
  self->failure = g_steal_pointer (&search.best.failure);
  self->result_inputs = g_steal_pointer (&search.best.feed);
  return g_steal_pointer (&search.best.candidate);
}

guint
graft_reduce_get_n_runs (GraftReduce *self)
{
  return self->n_runs;
}

guint
graft_reduce_get_n_original_nodes (GraftReduce *self)
{
  return graft_model_get_graph (self->model)->nodes->len;
}

GPtrArray *
graft_reduce_get_kept_nodes (GraftReduce *self)
{
  return self->kept_nodes;
}

const char *
graft_reduce_get_failure (GraftReduce *self)
{
  return self->failure;
}

GHashTable *
graft_reduce_get_result_inputs (GraftReduce *self)
{
  return self->result_inputs;
}
