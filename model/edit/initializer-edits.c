/* Replacing an initializer's data (from a .npy file, or small ones from
 * a list of numbers) and changing its dtype. Tensors are shared with undo
 * snapshots, so every change makes a new tensor. */
#include "edit/edit-private.h"
#include "edit/attribute-value.h"
#include "runtime/npy.h"

#include <string.h>

static GraftValue *
find_initializer (GraftEditScope *scope, GVariant *params, GError **error)
{
  GraftValue *value = graft_edit_find_value (scope->graph, graft_edit_param_string (params, "value"), error);

  if (value != NULL && value->initializer == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' is not an initializer", value->name);
      return NULL;
    }
  return value;
}

/* Makes data value's initializer, and its declared type follow. */
static gboolean
install (GraftValue *value, GraftRtTensor *data, GPtrArray *notes, GError **error)
{
  GraftTensor *tensor;
  g_autofree char *before = graft_tensor_describe (value->initializer);
  g_autofree char *after = NULL;

  if (data->kind != GRAFT_RT_TENSOR)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' needs a tensor", value->name);
      return FALSE;
    }
  tensor = graft_rt_tensor_to_tensor (data, value->name);
  after = graft_tensor_describe (tensor);
  if (strcmp (before, after) != 0)
    g_ptr_array_add (notes, g_strdup_printf ("%s: %s → %s", value->name, before, after));
  graft_graph_add_initializer (value->graph, value, tensor);
  value->dtype = tensor->dtype;
  graft_shape_clear (&value->shape);
  graft_shape_init_fixed (&value->shape, tensor->rank, tensor->dims);
  return TRUE;
}

static gboolean
replace_initializer (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftValue *value = find_initializer (scope, params, error);
  const char *file = graft_edit_param_string (params, "file");
  g_autoptr(GraftRtTensor) data = NULL;

  if (value == NULL)
    return FALSE;
  if (file == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "replace-initializer needs a 'file' (.npy)");
      return FALSE;
    }
  if ((data = graft_npy_read (file, error)) == NULL)
    return FALSE;
  return install (value, data, notes, error);
}

/* "[0.5, 1, 2]" into the initializer's own dtype and shape. */
static gboolean
set_initializer_values (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftValue *value = find_initializer (scope, params, error);
  const char *text = graft_edit_param_string (params, "values");
  g_auto(GStrv) items = NULL;
  g_autoptr(GraftRtTensor) data = NULL;
  guint n;

  if (value == NULL)
    return FALSE;
  if (text == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "set-initializer-values needs 'values'");
      return FALSE;
    }
  items = graft_attribute_value_split_list (text);
  n = g_strv_length (items);
  if ((gint64) n != graft_tensor_get_numel (value->initializer))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' has %" G_GINT64_FORMAT " elements, not %u",
                   value->name, graft_tensor_get_numel (value->initializer), n);
      return FALSE;
    }
  data = graft_rt_tensor_new (value->initializer->dtype, value->initializer->rank, value->initializer->dims, error);
  if (data == NULL)
    return FALSE;
  for (guint i = 0; i < n; i++)
    {
      double number;
      if (!graft_attribute_value_read_float (items[i], &number))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "element %u of the values ('%s') is not a number",
                       i, items[i]);
          return FALSE;
        }
      graft_rt_tensor_set_f64 (data, i, number);
    }
  return install (value, data, notes, error);
}

static gboolean
cast_initializer (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftValue *value = find_initializer (scope, params, error);
  const char *dtype_name = graft_edit_param_string (params, "dtype");
  GraftDType dtype = dtype_name ? graft_dtype_from_string (dtype_name) : GRAFT_DTYPE_UNDEFINED;
  g_autoptr(GraftRtTensor) data = NULL;
  g_autoptr(GraftRtTensor) cast = NULL;

  if (value == NULL)
    return FALSE;
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "unknown dtype '%s' (float16, float32, int64…)",
                   dtype_name ? dtype_name : "");
      return FALSE;
    }
  if ((data = graft_rt_tensor_new_from_tensor (value->initializer, error)) == NULL
      || (cast = graft_rt_tensor_cast (data, dtype, error)) == NULL)
    return FALSE;
  if (!install (value, cast, notes, error))
    return FALSE;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      g_ptr_array_add (notes, g_strdup_printf ("'%s' (%s) now reads %s", consumer->name, consumer->op,
                                               graft_dtype_to_string (dtype)));
    }
  return TRUE;
}

static char *
describe_replace (GVariant *params)
{
  return g_strdup_printf ("Replace %s from %s", graft_edit_param_string (params, "value"),
                          graft_edit_param_string (params, "file"));
}

static char *
describe_values (GVariant *params)
{
  return g_strdup_printf ("Set %s to %s", graft_edit_param_string (params, "value"),
                          graft_edit_param_string (params, "values"));
}

static char *
describe_cast (GVariant *params)
{
  return g_strdup_printf ("Cast %s to %s", graft_edit_param_string (params, "value"),
                          graft_edit_param_string (params, "dtype"));
}

const GraftEditOperation graft_edit_ops_initializer[] = {
  { .id = "replace-initializer", .node_params = "", .value_params = "value", .apply = replace_initializer,
    .describe = describe_replace,
    .option = "--initializer", .argument = "NAME=FILE.npy", .parse = graft_edit_parse_pair, .keys = "value file",
    .help = "replace an initializer's data" },
  { .id = "set-initializer-values", .node_params = "", .value_params = "value", .apply = set_initializer_values,
    .describe = describe_values,
    .option = "--initializer-values", .argument = "NAME=[1,2,...]", .parse = graft_edit_parse_pair,
    .keys = "value values", .help = "set a small initializer's elements" },
  { .id = "cast-initializer", .node_params = "", .value_params = "value", .apply = cast_initializer,
    .describe = describe_cast,
    .option = "--cast-initializer", .argument = "NAME=DTYPE", .parse = graft_edit_parse_pair, .keys = "value dtype",
    .help = "change an initializer's dtype" },
  { NULL },
};
