#include "compare/numeric-diff.h"

#include <math.h>
#include <string.h>

struct _GraftNumericDiff {
  GraftAlignment *alignment;   /* borrowed */
  GraftRuntime *runtime_a;
  GraftRuntime *runtime_b;
  double rtol, atol;
  GHashTable *pairs_of_a;      /* GraftValue* of A → GArray of guint (value pair indices) */
  GHashTable *pairs_of_b;
  GPtrArray *inputs;           /* GraftValue* of A */
  GHashTable *partner_input;   /* A input → B input */
};

typedef struct {
  GraftNumericDiff *diff;
  GraftNumericRun *run;
  GraftRtTensor **stored;      /* per value pair: A's tensor until B computes its own */
  guint *order;                /* per value pair: position in A's run + 1 */
  gboolean *computed_b;
  guint counter;
} RunState;

static void
index_pairs (GHashTable *map, GraftValue *value, guint index)
{
  GArray *list = g_hash_table_lookup (map, value);
  if (list == NULL)
    g_hash_table_insert (map, value, list = g_array_new (FALSE, FALSE, sizeof (guint)));
  g_array_append_val (list, index);
}

GraftNumericDiff *
graft_numeric_diff_new (GraftAlignment *alignment, double rtol, double atol, GError **error)
{
  g_autoptr(GraftRuntime) ra = graft_runtime_new (alignment->a, error);
  if (ra == NULL)
    {
      g_prefix_error (error, "%s: ", graft_model_get_path (alignment->a) ? graft_model_get_path (alignment->a) : "A");
      return NULL;
    }
  g_autoptr(GraftRuntime) rb = graft_runtime_new (alignment->b, error);
  if (rb == NULL)
    {
      g_prefix_error (error, "%s: ", graft_model_get_path (alignment->b) ? graft_model_get_path (alignment->b) : "B");
      return NULL;
    }
  GraftNumericDiff *self = g_new0 (GraftNumericDiff, 1);
  self->alignment = alignment;
  self->runtime_a = g_steal_pointer (&ra);
  self->runtime_b = g_steal_pointer (&rb);
  self->rtol = rtol;
  self->atol = atol;
  self->pairs_of_a = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_array_unref);
  self->pairs_of_b = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_array_unref);
  self->partner_input = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < alignment->value_pairs->len; i++)
    {
      GraftValuePair *vp = &g_array_index (alignment->value_pairs, GraftValuePair, i);
      if (vp->a->is_graph_input && vp->b->is_graph_input)
        {
          g_hash_table_insert (self->partner_input, vp->a, vp->b);
          continue;
        }
      index_pairs (self->pairs_of_a, vp->a, i);
      index_pairs (self->pairs_of_b, vp->b, i);
    }
  self->inputs = g_ptr_array_copy (graft_runtime_get_inputs (self->runtime_a), NULL, NULL);
  return self;
}

void
graft_numeric_diff_free (GraftNumericDiff *self)
{
  if (self == NULL)
    return;
  graft_runtime_free (self->runtime_a);
  graft_runtime_free (self->runtime_b);
  g_hash_table_unref (self->pairs_of_a);
  g_hash_table_unref (self->pairs_of_b);
  g_hash_table_unref (self->partner_input);
  g_ptr_array_unref (self->inputs);
  g_free (self);
}

GPtrArray *
graft_numeric_diff_get_inputs (GraftNumericDiff *self)
{
  return self->inputs;
}

GraftValue *
graft_numeric_diff_get_partner_input (GraftNumericDiff *self, GraftValue *input_a)
{
  return g_hash_table_lookup (self->partner_input, input_a);
}

void
graft_numeric_run_free (GraftNumericRun *run)
{
  if (run == NULL)
    return;
  for (guint i = 0; i < run->values->len; i++)
    {
      GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
      g_free (e->shape_a);
      g_free (e->shape_b);
    }
  g_array_unref (run->values);
  g_free (run->label);
  g_free (run->error_a);
  g_free (run->error_b);
  g_free (run);
}

const GraftValueError *
graft_numeric_run_get_first_divergent (GraftNumericRun *run)
{
  return run->first_divergent >= 0 ? &g_array_index (run->values, GraftValueError, run->first_divergent) : NULL;
}

static gboolean
is_float (GraftDType dtype)
{
  return dtype == GRAFT_DTYPE_FLOAT32 || dtype == GRAFT_DTYPE_FLOAT64 || dtype == GRAFT_DTYPE_FLOAT16 ||
         dtype == GRAFT_DTYPE_BFLOAT16;
}

static inline double
element (const GraftRtTensor *t, gint64 i, gboolean floats)
{
  if (t->dtype == GRAFT_DTYPE_FLOAT32)
    return ((const float *) t->data)[i];
  return floats ? graft_rt_tensor_get_f64 (t, i) : (double) graft_rt_tensor_get_i64 (t, i);
}

/* Compares a (reference) and b element by element into e. */
void
graft_value_error_compare (const GraftRtTensor *a, const GraftRtTensor *b, double rtol, double atol,
                           GraftValueError *e)
{
  if (a->kind != GRAFT_RT_TENSOR || b->kind != GRAFT_RT_TENSOR || a->dtype == GRAFT_DTYPE_STRING ||
      b->dtype == GRAFT_DTYPE_STRING)
    return;
  e->compared = TRUE;
  /* a number (aten::size gives a 0-d int) against a 1-element tensor is fine */
  if (!graft_rt_tensor_same_shape (a, b) && !(a->numel == 1 && b->numel == 1))
    {
      GraftShape sa, sb;
      graft_rt_tensor_get_shape (a, &sa);
      graft_rt_tensor_get_shape (b, &sb);
      e->shape_differs = TRUE;
      e->shape_a = graft_shape_to_string (&sa);
      e->shape_b = graft_shape_to_string (&sb);
      graft_shape_clear (&sa);
      graft_shape_clear (&sb);
      e->close = FALSE;
      e->max_abs = e->max_rel = INFINITY;
      return;
    }
  double max_abs = 0, scale = 0;
  gboolean close = TRUE;
  gboolean floats = is_float (a->dtype) || is_float (b->dtype);
  for (gint64 i = 0; i < a->numel; i++)
    {
      double x = element (a, i, floats), y = element (b, i, floats);
      if (isnan (x) || isnan (y))
        {
          if (isnan (x) != isnan (y))
            close = FALSE, max_abs = INFINITY;
          continue;
        }
      double d = fabs (x - y), m = fabs (x);
      if (d > max_abs)
        max_abs = d;
      if (m > scale)
        scale = m;
      if (d > atol + rtol * m)
        close = FALSE;
    }
  e->close = close;
  e->max_abs = max_abs;
  e->max_rel = scale > 0 ? max_abs / scale : (max_abs > 0 ? INFINITY : 0);
}

static void
observe_a (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  RunState *st = user_data;
  GArray *list = g_hash_table_lookup (st->diff->pairs_of_a, value);
  for (guint k = 0; list && k < list->len; k++)
    {
      guint i = g_array_index (list, guint, k);
      if (st->stored[i])
        graft_rt_tensor_unref (st->stored[i]);
      st->stored[i] = graft_rt_tensor_ref (tensor);
      st->order[i] = ++st->counter;
    }
}

static void
observe_b (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  RunState *st = user_data;
  GArray *list = g_hash_table_lookup (st->diff->pairs_of_b, value);
  for (guint k = 0; list && k < list->len; k++)
    {
      guint i = g_array_index (list, guint, k);
      st->computed_b[i] = TRUE;
      if (st->stored[i] == NULL)
        continue;
      GraftValuePair *vp = &g_array_index (st->diff->alignment->value_pairs, GraftValuePair, i);
      GraftValueError e = { vp->a, vp->b, FALSE, FALSE, FALSE, NULL, NULL, 0, 0, st->order[i] };
      graft_value_error_compare (st->stored[i], tensor, st->diff->rtol, st->diff->atol, &e);
      g_clear_pointer (&st->stored[i], graft_rt_tensor_unref);
      if (e.compared)
        g_array_append_val (st->run->values, e);
    }
}

static int
by_order (gconstpointer x, gconstpointer y)
{
  const GraftValueError *a = x, *b = y;
  return a->order < b->order ? -1 : a->order > b->order;
}

static char *
run_model (GraftRuntime *rt, GHashTable *feed, GraftRuntimeObserveFunc observe, gpointer observe_data, double *seconds,
           GPtrArray **outputs_out)
{
  g_autoptr(GError) error = NULL;
  graft_runtime_set_observer (rt, observe, observe_data);
  gint64 start = g_get_monotonic_time ();
  g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, feed, NULL, NULL, NULL, &error);
  *seconds = (g_get_monotonic_time () - start) / 1e6;
  graft_runtime_set_observer (rt, NULL, NULL);
  if (outputs_out)
    *outputs_out = outputs ? g_ptr_array_ref (outputs) : NULL;
  return outputs ? NULL : g_strdup (error->message);
}

/* The node of graph that error names: the runtime starts a node's failure
 * with "node 'NAME' (OP): " (a node inside a subgraph names itself, and is
 * not found here). */
static GraftNode *
failed_node (GraftGraph *graph, const char *error)
{
  const char *start, *end;
  g_autofree char *name = NULL;

  if (error == NULL || !g_str_has_prefix (error, "node '"))
    return NULL;
  start = error + strlen ("node '");
  if ((end = strstr (start, "' (")) == NULL)
    return NULL;
  name = g_strndup (start, end - start);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (g_strcmp0 (node->name, name) == 0)
        return node;
    }
  return NULL;
}

static gboolean
output_compared (GraftNumericRun *run, GraftValue *output_a)
{
  for (guint i = 0; i < run->values->len; i++)
    if (g_array_index (run->values, GraftValueError, i).a == output_a)
      return TRUE;
  return FALSE;
}

/* The graph outputs the alignment did not pair (a traced model's output
 * reached through glue the other model lacks, as in BERT's TorchScript
 * against its ONNX export) are compared by position when both graphs
 * have as many outputs: the user compares two exports of one model, and
 * outputs keep their order through every exporter. */
static void
compare_outputs_by_position (GraftNumericRun *run, GraftGraph *graph_a, GraftGraph *graph_b, GPtrArray *outputs_a,
                             GPtrArray *outputs_b, double rtol, double atol)
{
  if (outputs_a == NULL || outputs_b == NULL || graph_a->outputs->len != graph_b->outputs->len ||
      outputs_a->len != graph_a->outputs->len || outputs_b->len != graph_b->outputs->len)
    return;
  for (guint o = 0; o < graph_a->outputs->len; o++)
    {
      GraftValue *a = graph_a->outputs->pdata[o], *b = graph_b->outputs->pdata[o];
      if (a->is_graph_input || output_compared (run, a))
        continue;
      GraftValueError e = { a, b, FALSE, FALSE, FALSE, NULL, NULL, 0, 0, G_MAXUINT - graph_a->outputs->len + o };
      graft_value_error_compare (outputs_a->pdata[o], outputs_b->pdata[o], rtol, atol, &e);
      if (e.compared)
        g_array_append_val (run->values, e);
    }
}

/* Orders run's values by A's run, counts them, finds the first divergent
 * one and whether every graph output of graph was compared and is close. */
static void
summarize_run (GraftNumericRun *run, GraftGraph *graph)
{
  g_array_sort (run->values, by_order);
  for (guint i = 0; i < run->values->len; i++)
    {
      GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
      run->n_compared++;
      if (!e->close)
        {
          run->n_divergent++;
          if (run->first_divergent < 0)
            run->first_divergent = i;
        }
    }
  /* the outputs: every paired graph output compared and close */
  run->outputs_close = run->error_a == NULL && run->error_b == NULL;
  for (guint o = 0; o < graph->outputs->len && run->outputs_close; o++)
    {
      GraftValue *out = graph->outputs->pdata[o];
      if (out->is_graph_input)
        continue;
      gboolean found = FALSE;
      for (guint i = 0; i < run->values->len; i++)
        {
          GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
          if (e->a == out)
            {
              found = TRUE;
              run->outputs_close &= e->close;
            }
        }
      run->outputs_close &= found;
    }
}

GraftNumericRun *
graft_numeric_diff_run (GraftNumericDiff *self, GHashTable *inputs, const char *label, GError **error)
{
  g_autoptr(GHashTable) feed_b = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < self->inputs->len; i++)
    {
      GraftValue *v = self->inputs->pdata[i];
      GraftRtTensor *t = g_hash_table_lookup (inputs, v->name);
      if (t == NULL && v->kind == GRAFT_VALUE_OPTIONAL)
        continue;  /* None on both sides */
      if (t == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "input '%s' was not given", v->name);
          return NULL;
        }
      GraftValue *partner = g_hash_table_lookup (self->partner_input, v);
      if (partner)
        g_hash_table_insert (feed_b, partner->name, t);
    }
  GPtrArray *inputs_b = graft_runtime_get_inputs (self->runtime_b);
  for (guint i = 0; i < inputs_b->len; i++)
    if (!g_hash_table_contains (feed_b, ((GraftValue *) inputs_b->pdata[i])->name) &&
        ((GraftValue *) inputs_b->pdata[i])->kind != GRAFT_VALUE_OPTIONAL)
      {
        g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                     "input '%s' of %s has no counterpart in %s", ((GraftValue *) inputs_b->pdata[i])->name,
                     graft_model_get_path (self->alignment->b), graft_model_get_path (self->alignment->a));
        return NULL;
      }

  guint n = self->alignment->value_pairs->len;
  GraftNumericRun *run = g_new0 (GraftNumericRun, 1);
  run->label = g_strdup (label ? label : "");
  run->values = g_array_new (FALSE, FALSE, sizeof (GraftValueError));
  run->first_divergent = -1;
  RunState st = { self, run, g_new0 (GraftRtTensor *, MAX (n, 1)), g_new0 (guint, MAX (n, 1)),
                  g_new0 (gboolean, MAX (n, 1)), 0 };

  g_autoptr(GPtrArray) outputs_a = NULL;
  g_autoptr(GPtrArray) outputs_b = NULL;
  run->error_a = run_model (self->runtime_a, inputs, observe_a, &st, &run->seconds_a, &outputs_a);
  run->error_b = run_model (self->runtime_b, feed_b, observe_b, &st, &run->seconds_b, &outputs_b);
  run->failed_a = failed_node (graft_model_get_graph (self->alignment->a), run->error_a);
  run->failed_b = failed_node (graft_model_get_graph (self->alignment->b), run->error_b);
  for (guint i = 0; i < n; i++)
    if (st.stored[i])
      graft_rt_tensor_unref (st.stored[i]);
  compare_outputs_by_position (run, graft_model_get_graph (self->alignment->a),
                               graft_model_get_graph (self->alignment->b), outputs_a, outputs_b, self->rtol, self->atol);

  summarize_run (run, graft_model_get_graph (self->alignment->a));
  g_free (st.stored);
  g_free (st.order);
  g_free (st.computed_b);
  return run;
}

static char *
file_name (GraftModel *model, const char *fallback)
{
  const char *path = graft_model_get_path (model);
  return path ? g_path_get_basename (path) : g_strdup (fallback);
}

char *
graft_numeric_run_describe (GraftNumericRun *run, GraftAlignment *alignment)
{
  g_autofree char *name_a = file_name (alignment->a, "A");
  g_autofree char *name_b = file_name (alignment->b, "B");
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  g_autofree char *where = NULL;
  if (first)
    {
      GraftNode *node = first->b->producer ? first->b->producer : first->a->producer;
      where = g_strdup_printf ("%s (%s ↔ %s)", node ? node->op : first->b->name,
                               first->a->producer ? first->a->producer->name : first->a->name,
                               first->b->producer ? first->b->producer->name : first->b->name);
    }
  if (run->error_a || run->error_b)
    {
      GString *s = g_string_new (NULL);
      g_string_append_printf (s, "at %s %s fails", run->label, run->error_a ? name_a : name_b);
      if (run->error_a && run->error_b)
        g_string_append_printf (s, " and so does %s", name_b);
      g_string_append_printf (s, " (%s)", run->error_a ? run->error_a : run->error_b);
      if (where)
        g_string_append_printf (s, ", after diverging from %s onwards", where);
      return g_string_free (s, FALSE);
    }
  if (run->outputs_close && where == NULL)
    return g_strdup_printf ("at %s the outputs agree", run->label);
  if (run->outputs_close)
    return g_strdup_printf ("at %s the outputs agree, though values differ from %s onwards", run->label, where);
  if (where)
    return g_strdup_printf ("at %s they differ from %s onwards", run->label, where);
  return g_strdup_printf ("at %s the outputs differ", run->label);
}

typedef struct {
  GraftNumericRun *run;
  GHashTable *reference;
  double rtol, atol;
  guint counter;
} ReferenceState;

static void
observe_against_reference (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  ReferenceState *st = user_data;
  GraftRtTensor *want = g_hash_table_lookup (st->reference, value->name);
  GraftValueError e = { value, value, FALSE, FALSE, FALSE, NULL, NULL, 0, 0, ++st->counter };

  if (want == NULL)
    return;
  graft_value_error_compare (want, tensor, st->rtol, st->atol, &e);
  if (e.compared)
    g_array_append_val (st->run->values, e);
}

GraftNumericRun *
graft_numeric_run_against_reference (GraftRuntime *rt, GHashTable *inputs, GHashTable *reference, double rtol,
                                     double atol, const char *label)
{
  GraftNumericRun *run = g_new0 (GraftNumericRun, 1);
  ReferenceState st = { run, reference, rtol, atol, 0 };

  run->label = g_strdup (label ? label : "");
  run->values = g_array_new (FALSE, FALSE, sizeof (GraftValueError));
  run->first_divergent = -1;
  run->error_a = run_model (rt, inputs, observe_against_reference, &st, &run->seconds_a, NULL);
  summarize_run (run, graft_model_get_graph (graft_runtime_get_model (rt)));
  return run;
}
