/* Inputs of a run for the graft-cli verbs that run a model (run, debug
 * reduce): .npy/.pb files by name, stored name or position, and seeded
 * random data of the declared shapes for the rest. */
#include <string.h>
#include "cli.h"
#include "runtime/inputs.h"

gboolean
graft_cli_parse_dims (char **dims, GHashTable *values, GError **error)
{
  for (guint i = 0; dims && dims[i]; i++)
    {
      const char *eq = strchr (dims[i], '=');
      char *end = NULL;
      gint64 v = eq ? g_ascii_strtoll (eq + 1, &end, 10) : 0;
      if (eq == NULL || end == eq + 1 || *end != '\0' || v < 0)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "--dim %s: expected NAME=VALUE with a non-negative integer", dims[i]);
          return FALSE;
        }
      g_hash_table_insert (values, g_strndup (dims[i], eq - dims[i]), g_memdup2 (&v, sizeof v));
    }
  return TRUE;
}

GHashTable *
graft_cli_make_inputs (GraftRuntime *rt, char **files, char **dim_specs, gboolean random, gint64 seed, GError **error)
{
  GPtrArray *inputs = graft_runtime_get_inputs (rt);
  g_autoptr(GHashTable) bound = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GHashTable) dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (!graft_runtime_bind_input_files (files, inputs, bound, error) || !graft_cli_parse_dims (dim_specs, dims, error))
    return NULL;
  g_autoptr(GRand) rng = g_rand_new_with_seed ((guint32) seed);
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *v = inputs->pdata[i];
      /* an Optional input left out is None, as in the caller's Python */
      if (g_hash_table_contains (bound, v->name) || v->kind == GRAFT_VALUE_OPTIONAL)
        continue;
      if (!random)
        {
          g_autofree char *shape = graft_shape_to_string (&v->shape);
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "input '%s' (%s[%s]) was not given: use --input %s=FILE or --random",
                       v->name, graft_dtype_to_string (v->dtype), shape, v->name);
          return NULL;
        }
      GraftRtTensor *t = graft_runtime_random_input (v, dims, rng, error);
      if (t == NULL)
        return NULL;
      g_hash_table_insert (bound, v->name, t);
    }
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *v = inputs->pdata[i];
      GraftRtTensor *t = g_hash_table_lookup (bound, v->name);
      if (t != NULL && !graft_runtime_check_input (rt, v, t, error))
        return NULL;
    }
  return g_steal_pointer (&bound);
}
