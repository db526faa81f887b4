/* NaN and Inf per value (value-check.h). */
#include <math.h>
#include "debug/value-check.h"

/* The check's ranges by value, for the inputs of a node; kept beside the
 * public struct so that its users see only the arrays. */
typedef struct {
  GraftValueCheck public;
  GHashTable *index_by_value;  /* GraftValue* → index + 1 in public.values */
  guint counter;
} ValueCheck;

static gboolean
dtype_has_range (GraftDType dtype)
{
  return dtype != GRAFT_DTYPE_STRING && dtype != GRAFT_DTYPE_COMPLEX64 && dtype != GRAFT_DTYPE_COMPLEX128
         && dtype != GRAFT_DTYPE_UNDEFINED;
}

/* Folds one element into the range: NaN and Inf are counted, not ranged. */
static inline void
take_element (GraftValueRange *range, double v, gboolean *any_finite)
{
  if (isnan (v))
    range->nan_count++;
  else if (isinf (v))
    range->inf_count++;
  else if (!*any_finite)
    {
      range->min = range->max = v;
      *any_finite = TRUE;
    }
  else
    {
      range->min = MIN (range->min, v);
      range->max = MAX (range->max, v);
    }
}

void
graft_value_range_compute (GraftValue *value, const GraftRtTensor *tensor, GraftValueRange *range)
{
  gboolean any_finite = FALSE;

  *range = (GraftValueRange) { .value = value };
  range->shape = graft_rt_tensor_describe (tensor);
  range->numeric = tensor->kind == GRAFT_RT_TENSOR && dtype_has_range (tensor->dtype) && tensor->numel > 0;
  if (!range->numeric)
    return;
  range->count = tensor->numel;
  if (tensor->dtype == GRAFT_DTYPE_FLOAT32)
    {
      const float *data = tensor->data;
      for (gint64 i = 0; i < tensor->numel; i++)
        take_element (range, data[i], &any_finite);
    }
  else
    for (gint64 i = 0; i < tensor->numel; i++)
      take_element (range, graft_rt_tensor_get_f64 (tensor, i), &any_finite);
}

void
graft_value_range_clear (GraftValueRange *range)
{
  g_clear_pointer (&range->shape, g_free);
}

void
graft_value_range_free (GraftValueRange *range)
{
  graft_value_range_clear (range);
  g_free (range);
}

gboolean
graft_value_range_is_finite (const GraftValueRange *range)
{
  return range->nan_count == 0 && range->inf_count == 0;
}

char *
graft_value_range_describe (const GraftValueRange *range)
{
  GString *s = g_string_new (range->shape);

  if (!range->numeric)
    return g_string_free (s, FALSE);
  if (range->nan_count + range->inf_count < range->count)
    g_string_append_printf (s, " in [%.6g, %.6g]", range->min, range->max);
  else
    g_string_append (s, ", no finite element");
  if (range->nan_count > 0)
    g_string_append_printf (s, ", %" G_GINT64_FORMAT " NaN", range->nan_count);
  if (range->inf_count > 0)
    g_string_append_printf (s, ", %" G_GINT64_FORMAT " Inf", range->inf_count);
  return g_string_free (s, FALSE);
}

void
graft_value_check_free (GraftValueCheck *check)
{
  ValueCheck *self = (ValueCheck *) check;

  if (check == NULL)
    return;
  for (guint i = 0; i < check->values->len; i++)
    graft_value_range_clear (&g_array_index (check->values, GraftValueRange, i));
  g_array_unref (check->values);
  g_array_unref (check->nonfinite);
  g_array_unref (check->sources);
  g_free (check->run_error);
  g_hash_table_unref (self->index_by_value);
  g_free (self);
}

static const GraftValueRange *
lookup_range (ValueCheck *self, GraftValue *value)
{
  guint index = GPOINTER_TO_UINT (g_hash_table_lookup (self->index_by_value, value));

  return index ? &g_array_index (self->public.values, GraftValueRange, index - 1) : NULL;
}

static void
add_range (ValueCheck *self, GraftValue *value, const GraftRtTensor *tensor, guint order)
{
  GraftValueRange range;

  graft_value_range_compute (value, tensor, &range);
  range.order = order;
  g_array_append_val (self->public.values, range);
  g_hash_table_insert (self->index_by_value, value, GUINT_TO_POINTER (self->public.values->len));
}

/* A non-finite output is a source when every input of its node that the
 * run computed or was fed is finite (initializers are the model's: a NaN
 * weight still makes this node the place where NaN enters the run). */
static gboolean
inputs_finite (ValueCheck *self, GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = node->inputs->pdata[i];
      const GraftValueRange *range = in ? lookup_range (self, in) : NULL;
      if (range != NULL && !graft_value_range_is_finite (range))
        return FALSE;
    }
  return TRUE;
}

static void
observe (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  ValueCheck *self = user_data;

  /* a value observed twice (a Loop's body) keeps its first range */
  if (g_hash_table_contains (self->index_by_value, value))
    return;
  add_range (self, value, tensor, ++self->counter);
}

static void
collect_nonfinite (ValueCheck *self)
{
  GArray *values = self->public.values;

  for (guint i = 0; i < values->len; i++)
    {
      GraftValueRange *range = &g_array_index (values, GraftValueRange, i);
      if (graft_value_range_is_finite (range))
        continue;
      g_array_append_val (self->public.nonfinite, i);
      GraftNode *producer = range->value->producer;
      if (producer == NULL || inputs_finite (self, producer))
        g_array_append_val (self->public.sources, i);
    }
}

GraftValueCheck *
graft_value_check_run (GraftRuntime *rt, GHashTable *inputs, GCancellable *cancellable, GPtrArray **outputs,
                       GError **error)
{
  GPtrArray *graph_inputs = graft_runtime_get_inputs (rt);
  ValueCheck *self = g_new0 (ValueCheck, 1);
  g_autoptr(GError) run_error = NULL;

  self->public.values = g_array_new (FALSE, FALSE, sizeof (GraftValueRange));
  self->public.nonfinite = g_array_new (FALSE, FALSE, sizeof (guint));
  self->public.sources = g_array_new (FALSE, FALSE, sizeof (guint));
  self->index_by_value = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < graph_inputs->len; i++)
    {
      GraftValue *input = graph_inputs->pdata[i];
      GraftRtTensor *tensor = g_hash_table_lookup (inputs, input->name);
      /* an Optional left out is None, as in graft_runtime_run */
      if (tensor == NULL && input->kind == GRAFT_VALUE_OPTIONAL)
        continue;
      if (tensor == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "input '%s' was not given", input->name);
          graft_value_check_free (&self->public);
          return NULL;
        }
      add_range (self, input, tensor, 0);
    }

  graft_runtime_set_observer (rt, observe, self);
  g_autoptr(GPtrArray) computed = graft_runtime_run (rt, inputs, cancellable, NULL, NULL, &run_error);
  graft_runtime_set_observer (rt, NULL, NULL);
  if (computed == NULL)
    self->public.run_error = g_strdup (run_error->message);
  if (outputs != NULL)
    *outputs = g_steal_pointer (&computed);
  collect_nonfinite (self);
  return &self->public;
}

GPtrArray *
graft_value_check_get_input_ranges (GraftValueCheck *check, GraftNode *node)
{
  ValueCheck *self = (ValueCheck *) check;
  GPtrArray *ranges = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_value_range_free);

  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = node->inputs->pdata[i];
      const GraftValueRange *known = in ? lookup_range (self, in) : NULL;
      GraftValueRange *range = NULL;

      if (known != NULL)
        {
          range = g_memdup2 (known, sizeof *known);
          range->shape = g_strdup (known->shape);
        }
      else if (in != NULL && in->initializer != NULL)
        {
          g_autoptr(GraftRtTensor) tensor = graft_rt_tensor_new_from_tensor (in->initializer, NULL);
          if (tensor != NULL)
            {
              range = g_new (GraftValueRange, 1);
              graft_value_range_compute (in, tensor, range);
            }
        }
      g_ptr_array_add (ranges, range);
    }
  return ranges;
}
