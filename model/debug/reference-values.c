/* Reference values keyed by value name (reference-values.h). */
#include "debug/reference-values.h"
#include "loader.h"
#include "lower/lower.h"
#include "runtime/npy.h"
#include "runtime/tensor-file.h"

GHashTable *
graft_reference_values_read_folder (GraftGraph *graph, const char *folder, GError **error)
{
  g_autoptr(GHashTable) values = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                        (GDestroyNotify) graft_rt_tensor_unref);

  if (!g_file_test (folder, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_FILE, "%s is not a folder of .npy values", folder);
      return NULL;
    }
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = graph->values->pdata[i];
      g_autofree char *stem = graft_tensor_file_safe_stem (value->name);
      g_autofree char *file = g_strconcat (stem, ".npy", NULL);
      g_autofree char *path = g_build_filename (folder, file, NULL);

      if (value->initializer != NULL || *stem == '\0' || !g_file_test (path, G_FILE_TEST_IS_REGULAR))
        continue;
      GraftRtTensor *tensor = graft_npy_read (path, error);
      if (tensor == NULL)
        {
          g_prefix_error (error, "reference value '%s': ", value->name);
          return NULL;
        }
      g_hash_table_replace (values, g_strdup (value->name), tensor);
    }
  if (g_hash_table_size (values) == 0)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_FILE,
                   "%s holds no .npy file named after a value of the model (such as %s.npy)", folder,
                   graph->outputs->len ? ((GraftValue *) graph->outputs->pdata[0])->name : "NAME");
      return NULL;
    }
  return g_steal_pointer (&values);
}

static void
keep_value (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  GHashTable *values = user_data;

  g_hash_table_replace (values, g_strdup (value->name), graft_rt_tensor_ref (tensor));
}

GHashTable *
graft_reference_values_run_model (GraftModel *model, GHashTable *inputs, GError **error)
{
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, error);
  g_autoptr(GHashTable) values = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                        (GDestroyNotify) graft_rt_tensor_unref);

  if (rt == NULL)
    return NULL;
  GPtrArray *graph_inputs = graft_runtime_get_inputs (rt);
  for (guint i = 0; i < graph_inputs->len; i++)
    {
      GraftValue *input = graph_inputs->pdata[i];
      GraftRtTensor *tensor = g_hash_table_lookup (inputs, input->name);
      if (tensor == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "the reference's input '%s' was not given",
                       input->name);
          return NULL;
        }
      g_hash_table_replace (values, g_strdup (input->name), graft_rt_tensor_ref (tensor));
    }
  graft_runtime_set_observer (rt, keep_value, values);
  g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
  if (outputs == NULL)
    return NULL;
  return g_steal_pointer (&values);
}

GraftModel *
graft_model_as_onnx (GraftModel *model, GHashTable *input_shapes, GError **error)
{
  GraftModelFormat format = graft_model_get_format (model);
  const char *path = graft_model_get_path (model);

  if (format == GRAFT_MODEL_FORMAT_ONNX)
    return g_object_ref (model);
  if (format == GRAFT_MODEL_FORMAT_STATE_DICT)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "%s holds weights only, no graph",
                   path ? path : "the model");
      return NULL;
    }
  GraftLowerOptions lower = { .input_shapes = input_shapes };
  GraftModel *onnx = graft_lower_to_onnx (model, &lower, error);
  if (onnx == NULL)
    {
      if (path != NULL)
        g_prefix_error (error, "%s: ", path);
      return NULL;
    }
  graft_model_keep_alive (onnx, g_object_ref (model), g_object_unref);
  if (path != NULL)
    graft_model_set_path (onnx, path);
  return onnx;
}

GHashTable *
graft_reference_values_load (GraftGraph *graph, const char *path, GHashTable *inputs, GHashTable *input_shapes,
                             GError **error)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    return graft_reference_values_read_folder (graph, path, error);
  g_autoptr(GraftModel) source = graft_model_load (path, NULL, NULL, NULL, error);
  if (source == NULL)
    return NULL;
  g_autoptr(GraftModel) reference = graft_model_as_onnx (source, input_shapes, error);
  if (reference == NULL)
    return NULL;
  GHashTable *values = graft_reference_values_run_model (reference, inputs, error);
  if (values == NULL)
    g_prefix_error (error, "the reference %s: ", path);
  return values;
}
