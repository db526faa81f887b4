#include "runtime/inputs.h"
#include "runtime/tensor-file.h"

#include <math.h>
#include <string.h>

GraftRtTensor *
graft_runtime_random_input (GraftValue *v, GHashTable *dims, GRand *rng, GError **error)
{
  gint64 shape[GRAFT_RT_MAX_RANK];
  if (v->kind != GRAFT_VALUE_TENSOR)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "input '%s' is a %s: random data can only be made for tensors",
                   v->name, v->type_string ? v->type_string : "non-tensor");
      return NULL;
    }
  if (v->shape.rank < 0)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "input '%s' has no declared shape: give it with --input %s=FILE", v->name, v->name);
      return NULL;
    }
  if (v->shape.rank > GRAFT_RT_MAX_RANK)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "input '%s' has rank %d", v->name, v->shape.rank);
      return NULL;
    }
  for (int d = 0; d < v->shape.rank; d++)
    {
      GraftDim dim = v->shape.dims[d];
      if (dim.kind == GRAFT_DIM_FIXED)
        shape[d] = dim.value;
      else if (dim.kind == GRAFT_DIM_SYMBOLIC && dims && g_hash_table_contains (dims, dim.symbol))
        shape[d] = *(gint64 *) g_hash_table_lookup (dims, dim.symbol);
      else
        {
          g_autofree char *s = graft_shape_to_string (&v->shape);
          if (dim.kind == GRAFT_DIM_SYMBOLIC)
            g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                         "input '%s' (%s) has the symbolic dimension '%s': give it with --dim %s=VALUE",
                         v->name, s, dim.symbol, dim.symbol);
          else
            g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                         "input '%s' (%s) has an unknown dimension at axis %d: give the input with --input %s=FILE",
                         v->name, s, d, v->name);
          return NULL;
        }
    }
  GraftDType dtype = v->dtype == GRAFT_DTYPE_UNDEFINED ? GRAFT_DTYPE_FLOAT32 : v->dtype;
  GraftRtTensor *t = graft_runtime_random_tensor (dtype, v->shape.rank, shape, rng, error);
  if (t == NULL)
    g_prefix_error (error, "input '%s': ", v->name);
  return t;
}

GraftRtTensor *
graft_runtime_random_tensor (GraftDType dtype, int rank, const gint64 *dims, GRand *rng, GError **error)
{
  GraftRtTensor *t = graft_rt_tensor_new (dtype, rank, dims, error);
  if (t == NULL)
    return NULL;
  for (gint64 i = 0; i < t->numel; i++)
    {
      if (dtype == GRAFT_DTYPE_STRING)
        {
          g_free (((char **) t->data)[i]);
          ((char **) t->data)[i] = g_strdup_printf ("s%d", g_rand_int_range (rng, 0, 100));
        }
      else if (dtype == GRAFT_DTYPE_BOOL)
        ((guint8 *) t->data)[i] = g_rand_boolean (rng);
      else if (graft_dtype_is_integer (dtype))
        graft_rt_tensor_set_i64 (t, i, g_rand_int_range (rng, 0, 10));
      else
        graft_rt_tensor_set_f64 (t, i, g_rand_double_range (rng, -1.0, 1.0));
    }
  return t;
}

gboolean
graft_rt_tensor_compute_stats (const GraftRtTensor *t, GraftRtStats *stats)
{
  if (t->kind != GRAFT_RT_TENSOR || t->dtype == GRAFT_DTYPE_STRING || t->numel == 0)
    return FALSE;
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  gint64 nan = 0;
  for (gint64 i = 0; i < t->numel; i++)
    {
      double v = graft_rt_tensor_get_f64 (t, i);
      if (isnan (v))
        {
          nan++;
          continue;
        }
      mn = MIN (mn, v);
      mx = MAX (mx, v);
      sum += v;
    }
  stats->min = mn;
  stats->max = mx;
  stats->count = t->numel - nan;
  stats->mean = stats->count > 0 ? sum / stats->count : NAN;
  stats->nan_count = nan;
  return TRUE;
}

GHashTable *
graft_runtime_input_shapes (GHashTable *inputs)
{
  GHashTable *shapes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) graft_shape_free);
  GHashTableIter iter;
  gpointer name, value;

  g_hash_table_iter_init (&iter, inputs);
  while (g_hash_table_iter_next (&iter, &name, &value))
    {
      GraftRtTensor *tensor = value;
      if (tensor->kind != GRAFT_RT_TENSOR)
        continue;
      GraftShape *shape = g_new0 (GraftShape, 1);
      graft_shape_init_fixed (shape, tensor->rank, tensor->dims);
      g_hash_table_insert (shapes, g_strdup (name), shape);
    }
  return shapes;
}

/* ---------- inputs from files ---------- */

static GraftValue *
find_input (GPtrArray *inputs, const char *name)
{
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *v = inputs->pdata[i];
      if (g_strcmp0 (v->name, name) == 0)
        return v;
    }
  return NULL;
}

static GraftValue *
next_unbound (GPtrArray *inputs, GHashTable *bound)
{
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *v = inputs->pdata[i];
      if (!g_hash_table_contains (bound, v->name))
        return v;
    }
  return NULL;
}

gboolean
graft_runtime_bind_input_files (char **files, GPtrArray *inputs, GHashTable *bound, GError **error)
{
  for (guint i = 0; files && files[i]; i++)
    {
      const char *arg = files[i];
      const char *eq = strchr (arg, '=');
      g_autofree char *name = NULL;
      const char *path = arg;
      GraftValue *target = NULL;

      if (eq != NULL)
        {
          name = g_strndup (arg, eq - arg);
          target = find_input (inputs, name);
          if (target != NULL)
            path = eq + 1;
          else if (!g_file_test (arg, G_FILE_TEST_EXISTS))
            {
              g_autoptr(GString) names = g_string_new (NULL);
              for (guint k = 0; k < inputs->len; k++)
                g_string_append_printf (names, "%s'%s'", k ? ", " : "", ((GraftValue *) inputs->pdata[k])->name);
              g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                           "--input %s: the model has no input '%s' (its inputs: %s)", arg, name, names->str);
              return FALSE;
            }
        }
      g_autofree char *stored = NULL;
      GraftValueKind kind = target ? target->kind : GRAFT_VALUE_TENSOR;
      GraftRtTensor *t = graft_tensor_file_read (path, kind, &stored, error);
      if (t == NULL)
        return FALSE;
      if (target == NULL && stored && *stored)
        {
          target = find_input (inputs, stored);
          if (target && g_hash_table_contains (bound, target->name))
            target = NULL;
        }
      if (target == NULL)
        target = next_unbound (inputs, bound);
      if (target == NULL)
        {
          graft_rt_tensor_unref (t);
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "%s: every input of the model is already given", path);
          return FALSE;
        }
      if (g_hash_table_contains (bound, target->name))
        {
          graft_rt_tensor_unref (t);
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "input '%s' is given twice", target->name);
          return FALSE;
        }
      g_hash_table_insert (bound, target->name, t);
    }
  return TRUE;
}
