#include "compare/input-settings.h"

#include <string.h>
#include "runtime/inputs.h"
#include "runtime/tensor-file.h"

struct _GraftInputSettings {
  GHashTable *dims;     /* symbol → GPtrArray of value strings */
  GHashTable *shapes;   /* input name → GPtrArray of shape strings */
  guint n_runs;
};

GraftInputSettings *
graft_input_settings_new (void)
{
  GraftInputSettings *self = g_new0 (GraftInputSettings, 1);
  self->dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
  self->shapes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
  self->n_runs = 1;
  return self;
}

void
graft_input_settings_free (GraftInputSettings *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->dims);
  g_hash_table_unref (self->shapes);
  g_free (self);
}

static gboolean
add_list (GraftInputSettings *self, GHashTable *lists, const char *spec, GError **error)
{
  const char *eq = strchr (spec, '=');
  if (eq == NULL || eq == spec || eq[1] == '\0')
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "'%s': expected NAME=VALUE[,VALUE...]", spec);
      return FALSE;
    }
  g_autofree char *name = g_strndup (spec, eq - spec);
  GPtrArray *values = g_hash_table_lookup (lists, name);
  if (values == NULL)
    {
      values = g_ptr_array_new_with_free_func (g_free);
      g_hash_table_insert (lists, g_steal_pointer (&name), values);
    }
  g_auto(GStrv) parts = g_strsplit (eq + 1, ",", -1);
  for (guint k = 0; parts[k]; k++)
    g_ptr_array_add (values, g_strdup (parts[k]));
  self->n_runs = MAX (self->n_runs, values->len);
  return TRUE;
}

gboolean
graft_input_settings_add_dims (GraftInputSettings *self, const char *spec, GError **error)
{
  return add_list (self, self->dims, spec, error);
}

gboolean
graft_input_settings_add_shapes (GraftInputSettings *self, const char *spec, GError **error)
{
  return add_list (self, self->shapes, spec, error);
}

guint
graft_input_settings_get_n_runs (GraftInputSettings *self)
{
  return self->n_runs;
}

static const char *
setting_value (GHashTable *lists, const char *name, guint run)
{
  GPtrArray *values = name ? g_hash_table_lookup (lists, name) : NULL;
  if (values == NULL || values->len == 0)
    return NULL;
  return values->pdata[MIN (run, values->len - 1)];
}

static gboolean
parse_int (const char *text, gint64 *out)
{
  char *end = NULL;
  gint64 v = g_ascii_strtoll (text, &end, 10);
  if (end == text || *end != '\0' || v < 0)
    return FALSE;
  *out = v;
  return TRUE;
}

/* "1x3x224x224" → rank and dims ("" is a scalar). */
static gboolean
parse_shape (const char *text, int *rank, gint64 *dims, GError **error)
{
  *rank = 0;
  if (*text == '\0')
    return TRUE;
  g_auto(GStrv) parts = g_strsplit (text, "x", -1);
  for (guint k = 0; parts[k]; k++)
    if (*rank >= GRAFT_RT_MAX_RANK || !parse_int (parts[k], &dims[(*rank)++]))
      {
        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "'%s' is not a shape like 1x3x224x224", text);
        return FALSE;
      }
  return TRUE;
}

static gboolean
names_set_dim (const GraftShape *shape, GHashTable *dims)
{
  for (int d = 0; d < shape->rank; d++)
    if (shape->dims[d].kind == GRAFT_DIM_SYMBOLIC && g_hash_table_contains (dims, shape->dims[d].symbol))
      return TRUE;
  return FALSE;
}

static GraftRtTensor *
random_for (GraftInputSettings *self, GraftNumericDiff *nd, GraftValue *v, guint run, GRand *rng, GError **error)
{
  GraftValue *partner = graft_numeric_diff_get_partner_input (nd, v);
  GraftDType dtype = v->dtype != GRAFT_DTYPE_UNDEFINED ? v->dtype
                     : partner && partner->dtype != GRAFT_DTYPE_UNDEFINED ? partner->dtype : GRAFT_DTYPE_FLOAT32;
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank;
  const char *given = setting_value (self->shapes, v->name, run);
  if (given == NULL && partner)
    given = setting_value (self->shapes, partner->name, run);
  if (given)
    {
      if (!parse_shape (given, &rank, dims, error))
        return NULL;
      return graft_runtime_random_tensor (dtype, rank, dims, rng, error);
    }
  /* A's declared shape, unless only B's names the dims set (the trace's
   * fixed batch against the edit's "batch": run at the new sizes, which is
   * where the fixed model breaks). */
  const GraftShape *shape = v->shape.rank >= 0 ? &v->shape : partner && partner->shape.rank >= 0 ? &partner->shape : NULL;
  if (partner && partner->shape.rank >= 0 && names_set_dim (&partner->shape, self->dims) &&
      !names_set_dim (&v->shape, self->dims))
    shape = &partner->shape;
  if (shape == NULL || shape->rank > GRAFT_RT_MAX_RANK)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "input '%s' has no declared shape in either model: give its shape (%s=1x3x224x224, say) or its data",
                   v->name, v->name);
      return NULL;
    }
  rank = shape->rank;
  for (int d = 0; d < rank; d++)
    {
      const GraftDim *dim = &shape->dims[d];
      const char *value = dim->kind == GRAFT_DIM_SYMBOLIC ? setting_value (self->dims, dim->symbol, run) : NULL;
      if (dim->kind == GRAFT_DIM_FIXED)
        dims[d] = dim->value;
      else if (value == NULL || !parse_int (value, &dims[d]))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "input '%s' dim %d is %s: give its value (%s=VALUE) or the input's shape", v->name, d,
                       dim->kind == GRAFT_DIM_SYMBOLIC ? dim->symbol : "unknown",
                       dim->kind == GRAFT_DIM_SYMBOLIC ? dim->symbol : "NAME");
          return NULL;
        }
    }
  return graft_runtime_random_tensor (dtype, rank, dims, rng, error);
}

GHashTable *
graft_input_settings_make_inputs (GraftInputSettings *self, GraftNumericDiff *diff, guint run, GHashTable *given,
                                  gboolean random, guint32 seed, char **label, GError **error)
{
  GPtrArray *inputs = graft_numeric_diff_get_inputs (diff);
  g_autoptr(GHashTable) tensors = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                         (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GRand) rng = g_rand_new_with_seed (seed);
  g_autoptr(GString) text = g_string_new (NULL);
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *v = inputs->pdata[i];
      GraftRtTensor *t = given ? g_hash_table_lookup (given, v->name) : NULL;
      if (t)
        t = graft_rt_tensor_ref (t);
      else if (v->kind == GRAFT_VALUE_OPTIONAL)
        continue;  /* left out: None, as a Python caller would */
      else if (!random)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "input '%s' was not given (give its data, or ask for random data)", v->name);
          return NULL;
        }
      else if ((t = random_for (self, diff, v, run, rng, error)) == NULL)
        return NULL;
      g_hash_table_insert (tensors, v->name, t);
      GraftShape shape;
      graft_rt_tensor_get_shape (t, &shape);
      g_autofree char *dims = graft_shape_to_string (&shape);
      graft_shape_clear (&shape);
      g_string_append_printf (text, "%s%s: %s", i ? ", " : "", v->name, dims);
    }
  if (label)
    *label = g_strdup (text->str);
  return g_steal_pointer (&tensors);
}

/* The input of A that name names (an input of either model; NULL: A's
 * first input not in given yet). */
static GraftValue *
find_input_to_give (GraftNumericDiff *diff, const char *name, GHashTable *given, GError **error)
{
  GPtrArray *inputs = graft_numeric_diff_get_inputs (diff);
  GraftValue *target = NULL;
  for (guint k = 0; k < inputs->len && target == NULL; k++)
    {
      GraftValue *v = inputs->pdata[k], *p = graft_numeric_diff_get_partner_input (diff, v);
      if (name == NULL ? !g_hash_table_contains (given, v->name)
                       : g_strcmp0 (v->name, name) == 0 || (p && g_strcmp0 (p->name, name) == 0))
        target = v;
    }
  if (target == NULL && name != NULL)
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "neither model has an input '%s'", name);
  else if (target == NULL)
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "every input is already given");
  return target;
}

gboolean
graft_input_settings_give_input (GraftNumericDiff *diff, const char *name, GraftRtTensor *tensor, GHashTable *given,
                                 GError **error)
{
  GraftValue *target = find_input_to_give (diff, name, given, error);
  if (target == NULL)
    return FALSE;
  g_hash_table_insert (given, target->name, graft_rt_tensor_ref (tensor));
  return TRUE;
}

gboolean
graft_input_settings_read_input (GraftNumericDiff *diff, const char *name, const char *path, GHashTable *given,
                                 GError **error)
{
  GraftValue *target = find_input_to_give (diff, name, given, error);
  if (target == NULL)
    return FALSE;
  GraftRtTensor *tensor = graft_tensor_file_read (path, target->kind, NULL, error);
  if (tensor == NULL)
    return FALSE;
  g_hash_table_insert (given, target->name, tensor);
  return TRUE;
}

GPtrArray *
graft_input_settings_run_all (GraftInputSettings *self, GraftNumericDiff *diff, GHashTable *given, gboolean random,
                              guint32 seed, const char *hint, GError **error)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_numeric_run_free);
  for (guint k = 0; k < graft_input_settings_get_n_runs (self); k++)
    {
      g_autofree char *label = NULL;
      g_autoptr(GHashTable) inputs = graft_input_settings_make_inputs (self, diff, k, given, random, seed, &label, error);
      if (inputs == NULL)
        {
          if (hint != NULL)
            {
              g_autofree char *message = g_strdup_printf ("%s (%s)", (*error)->message, hint);
              g_free ((*error)->message);
              (*error)->message = g_steal_pointer (&message);
            }
          return NULL;
        }
      GraftNumericRun *run = graft_numeric_diff_run (diff, inputs, label, error);
      if (run == NULL)
        return NULL;
      g_ptr_array_add (runs, run);
    }
  return g_steal_pointer (&runs);
}
