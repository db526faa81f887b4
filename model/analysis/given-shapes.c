/* Shapes from input shapes the user gives by name: graft-cli render
 * --shape and the Run pane, for files whose inputs declare none.
 *
 * Static inference knows the ONNX operators; the aten operators of a
 * TorchScript graph have kernels but no shape rules. So the values static
 * inference leaves without a full shape take the shapes one run of the
 * model on random data of the given shapes computes (Graft's runtime, main
 * graph, bounded in time and memory). A model the runtime cannot run keeps
 * the static shapes alone. */
#include <gio/gio.h>
#include "analysis/shape-inference.h"
#include "analysis/inference-private.h"
#include "runtime/inputs.h"
#include "runtime/runtime.h"

/* A probe run is a view aid, not a job: bounded well below a real run. */
#define PROBE_RUN_SECONDS 60.0
#define PROBE_RUN_BYTES (G_GUINT64_CONSTANT (4) << 30)

typedef struct {
  GMutex lock;
  GHashTable *types;   /* GraftValue* → GraftShape* */
  GHashTable *dtypes;  /* GraftValue* → GraftDType */
} Recorder;

static void
record_value (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  Recorder *recorder = user_data;
  GraftShape *shape;

  if (value == NULL || tensor == NULL || tensor->kind != GRAFT_RT_TENSOR)
    return;
  shape = g_new0 (GraftShape, 1);
  graft_shape_init_fixed (shape, tensor->rank, tensor->dims);
  g_mutex_lock (&recorder->lock);
  g_hash_table_replace (recorder->types, value, shape);
  g_hash_table_replace (recorder->dtypes, value, GINT_TO_POINTER (tensor->dtype));
  g_mutex_unlock (&recorder->lock);
}

/* Random data of the given shapes for every fed input (declared shapes
 * for the others); NULL if one cannot be made. */
static GHashTable *
probe_inputs (GraftRuntime *runtime, GHashTable *by_value, GError **error)
{
  g_autoptr(GHashTable) fed = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                     (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GRand) rng = g_rand_new_with_seed (0);
  g_autoptr(GHashTable) no_dims = g_hash_table_new (g_str_hash, g_str_equal);
  GPtrArray *inputs = graft_runtime_get_inputs (runtime);

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      const GraftShape *given = g_hash_table_lookup (by_value, input);
      GraftRtTensor *tensor;

      if (given != NULL)
        {
          g_autofree gint64 *dims = g_new0 (gint64, MAX (given->rank, 1));

          for (int d = 0; d < given->rank; d++)
            dims[d] = given->dims[d].value;
          tensor = graft_runtime_random_tensor (input->dtype != GRAFT_DTYPE_UNDEFINED ? input->dtype
                                                                                      : GRAFT_DTYPE_FLOAT32,
                                                given->rank, dims, rng, error);
        }
      else
        tensor = graft_runtime_random_input (input, no_dims, rng, error);
      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (fed, input->name, tensor);
    }
  return g_steal_pointer (&fed);
}

/* Adds to inference the shapes of a run for the values it has none (or a
 * partial one) for. FALSE, with the reason, if the model does not run. */
static gboolean
add_run_shapes (GraftModel *model, GHashTable *by_value, GraftInference *inference, GError **error)
{
  g_autoptr(GraftRuntime) runtime = graft_runtime_new (model, error);
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GPtrArray) outputs = NULL;
  Recorder recorder = { 0 };
  GHashTableIter iter;
  gpointer value, shape;

  if (runtime == NULL)
    return FALSE;
  inputs = probe_inputs (runtime, by_value, error);
  if (inputs == NULL)
    return FALSE;
  g_mutex_init (&recorder.lock);
  recorder.types = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) graft_shape_free);
  recorder.dtypes = g_hash_table_new (NULL, NULL);
  graft_runtime_set_limits (runtime, PROBE_RUN_SECONDS, PROBE_RUN_BYTES);
  graft_runtime_set_observer (runtime, record_value, &recorder);
  outputs = graft_runtime_run (runtime, inputs, NULL, NULL, NULL, error);
  graft_runtime_set_observer (runtime, NULL, NULL);
  if (outputs != NULL)
    {
      g_hash_table_iter_init (&iter, recorder.types);
      while (g_hash_table_iter_next (&iter, &value, &shape))
        {
          const GraftShape *known = graft_inference_get_shape (inference, value);

          if (known == NULL || !graft_shape_is_fully_fixed (known))
            _graft_inference_set_type (inference, value,
                                       GPOINTER_TO_INT (g_hash_table_lookup (recorder.dtypes, value)), shape);
        }
    }
  g_hash_table_unref (recorder.types);
  g_hash_table_unref (recorder.dtypes);
  g_mutex_clear (&recorder.lock);
  return outputs != NULL;
}

static char *
describe_inputs (GraftGraph *graph)
{
  GString *names = g_string_new (NULL);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);

      if (input->initializer != NULL || input->kind != GRAFT_VALUE_TENSOR)
        continue;
      g_string_append_printf (names, "%s'%s'", names->len > 0 ? ", " : "", input->name);
    }
  if (names->len == 0)
    g_string_append (names, "none");
  return g_string_free (names, FALSE);
}

static GraftValue *
find_tensor_input (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);

      if (input->initializer == NULL && input->kind == GRAFT_VALUE_TENSOR && g_strcmp0 (input->name, name) == 0)
        return input;
    }
  return NULL;
}

GraftInference *
graft_shape_inference_run_given (GraftModel *model, GHashTable *shapes_by_name, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) by_value = g_hash_table_new (NULL, NULL);
  GraftShapeInferenceOptions options = { .input_shapes = by_value, .given_input_dtype = GRAFT_DTYPE_FLOAT32 };
  GHashTableIter iter;
  gpointer key, shape;

  if (graph == NULL && shapes_by_name != NULL && g_hash_table_size (shapes_by_name) > 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "the model has no graph to give input shapes to");
      return NULL;
    }
  if (shapes_by_name != NULL)
    {
      g_hash_table_iter_init (&iter, shapes_by_name);
      while (g_hash_table_iter_next (&iter, &key, &shape))
        {
          GraftValue *input = find_tensor_input (graph, key);
          const GraftShape *given = shape;

          if (input == NULL)
            {
              g_autofree char *names = describe_inputs (graph);

              g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           "the graph has no tensor input '%s' (its inputs: %s)", (const char *) key, names);
              return NULL;
            }
          if (input->shape.rank >= 0 && given->rank != input->shape.rank)
            {
              g_autofree char *declared = graft_shape_to_string (&input->shape);

              g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           "input '%s' is declared %s: a shape of rank %d does not fit it", input->name, declared,
                           given->rank);
              return NULL;
            }
          if (!graft_shape_is_fully_fixed (given))
            {
              g_autofree char *text = graft_shape_to_string (given);

              g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           "input '%s': give every dim a size (not %s)", input->name, text);
              return NULL;
            }
          g_hash_table_insert (by_value, input, (gpointer) given);
        }
    }
  {
    GraftInference *inference = graft_shape_inference_run_full (model, &options);
    g_autoptr(GError) run_error = NULL;

    if (g_hash_table_size (by_value) > 0 && !add_run_shapes (model, by_value, inference, &run_error))
      g_debug ("shapes from a run of the model: %s", run_error->message);
    return inference;
  }
}
