/* The operation table and parameter helpers. */
#include "edit/edit-private.h"

#include <stdarg.h>

extern const GraftEditOperation graft_edit_ops_input_shape[];
extern const GraftEditOperation graft_edit_ops_structure[];
extern const GraftEditOperation graft_edit_ops_rename[];
extern const GraftEditOperation graft_edit_ops_attribute[];
extern const GraftEditOperation graft_edit_ops_initializer[];
extern const GraftEditOperation graft_edit_ops_io[];
extern const GraftEditOperation graft_edit_ops_node[];
extern const GraftEditOperation graft_edit_ops_pattern[];
extern const GraftEditOperation graft_edit_ops_fold[];
extern const GraftEditOperation graft_edit_ops_float16[];
extern const GraftEditOperation graft_edit_ops_simplify[];
extern const GraftEditOperation graft_edit_ops_fusions[];

static GArray *
build_table (void)
{
  const GraftEditOperation *families[] = {
    graft_edit_ops_input_shape, graft_edit_ops_structure, graft_edit_ops_rename, graft_edit_ops_attribute,
    graft_edit_ops_initializer, graft_edit_ops_io, graft_edit_ops_node, graft_edit_ops_pattern, graft_edit_ops_fold,
    graft_edit_ops_simplify, graft_edit_ops_fusions, graft_edit_ops_float16,
  };
  GArray *table = g_array_new (FALSE, FALSE, sizeof (GraftEditOperation));

  for (guint i = 0; i < G_N_ELEMENTS (families); i++)
    for (const GraftEditOperation *op = families[i]; op->id != NULL; op++)
      g_array_append_val (table, *op);
  return table;
}

static GArray *
table (void)
{
  static GArray *operations;

  if (g_once_init_enter (&operations))
    g_once_init_leave (&operations, build_table ());
  return operations;
}

const GraftEditOperation *
graft_edit_operation_list (guint *n)
{
  *n = table ()->len;
  return (const GraftEditOperation *) table ()->data;
}

const GraftEditOperation *
graft_edit_operation_lookup (const char *id)
{
  guint n;
  const GraftEditOperation *operations = graft_edit_operation_list (&n);

  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (operations[i].id, id) == 0)
      return &operations[i];
  return NULL;
}

const GraftEditOperation *
graft_edit_operation_for_option (const char *option)
{
  guint n;
  const GraftEditOperation *operations = graft_edit_operation_list (&n);

  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (operations[i].option, option) == 0)
      return &operations[i];
  return NULL;
}

GVariant *
graft_edit_operation_parse (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                            const char *argument, GError **error)
{
  g_autoptr(GError) local = NULL;
  GVariant *params;

  if (operation->parse == NULL)
    return graft_edit_params_new (NULL, NULL);
  params = operation->parse (operation, graph, target, argument, &local);
  if (params != NULL)
    return params;
  if (local != NULL)
    g_propagate_error (error, g_steal_pointer (&local));
  else
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "“%s” is not %s",
                 argument ? argument : target ? target : "",
                 operation->argument ? operation->argument : operation->id);
  return NULL;
}

GArray *
graft_edit_operation_changed_dims (const GraftEditOperation *operation, GraftGraph *graph, GVariant *params)
{
  GArray *dims = g_array_new (FALSE, FALSE, sizeof (GraftDimCheckDim));

  if (operation->changed_dims != NULL && graph != NULL)
    operation->changed_dims (graph, params, dims);
  return dims;
}

const char *
graft_edit_param_string (GVariant *params, const char *key)
{
  const char *text = NULL;

  if (params == NULL || !g_variant_lookup (params, key, "&s", &text))
    return NULL;
  return text;
}

gint64
graft_edit_param_int (GVariant *params, const char *key, gint64 fallback)
{
  gint64 value;

  if (params == NULL || !g_variant_lookup (params, key, "x", &value))
    return fallback;
  return value;
}

gboolean
graft_edit_param_bool (GVariant *params, const char *key, gboolean fallback)
{
  gboolean value;

  if (params == NULL || !g_variant_lookup (params, key, "b", &value))
    return fallback;
  return value;
}

double
graft_edit_param_double (GVariant *params, const char *key, double fallback)
{
  double value;
  gint64 integer;

  if (params != NULL && g_variant_lookup (params, key, "d", &value))
    return value;
  if (params != NULL && g_variant_lookup (params, key, "x", &integer))
    return (double) integer;
  return fallback;
}

const char **
graft_edit_param_strv (GVariant *params, const char *key)
{
  g_autoptr(GVariant) value = params ? g_variant_lookup_value (params, key, NULL) : NULL;
  const char **strv;

  if (value == NULL)
    return NULL;
  if (g_variant_is_of_type (value, G_VARIANT_TYPE_STRING))
    {
      strv = g_new0 (const char *, 2);
      strv[0] = g_variant_get_string (value, NULL);   /* lives as long as params */
      return strv;
    }
  if (!g_variant_is_of_type (value, G_VARIANT_TYPE_STRING_ARRAY))
    return NULL;
  return g_variant_get_strv (value, NULL);
}

GVariant *
graft_edit_params_new (const char *first_key, ...)
{
  GVariantDict dict;
  va_list args;

  g_variant_dict_init (&dict, NULL);
  va_start (args, first_key);
  for (const char *key = first_key; key != NULL; key = va_arg (args, const char *))
    {
      GVariant *value = va_arg (args, GVariant *);
      if (value != NULL)
        g_variant_dict_insert_value (&dict, key, value);
    }
  va_end (args);
  return g_variant_dict_end (&dict);
}

GVariant *
graft_edit_params_replace (GVariant *params, const char *key, GVariant *value)
{
  GVariantDict dict;

  g_variant_dict_init (&dict, params);
  if (value != NULL)
    g_variant_dict_insert_value (&dict, key, value);
  else
    g_variant_dict_remove (&dict, key);
  return g_variant_dict_end (&dict);
}
