/* graft._graft.Model: a GraftModel with its edit history (for recipes),
 * its runtime (built at the first run, dropped by edits) and a lock. */
#include "python-graft.h"
#include "lint/diagnostics.h"
#include "analysis/shape-inference.h"
#include "edit/edit.h"
#include "edit/edit-operation.h"
#include "edit/recipe.h"
#include "layout/export.h"
#include "layout/layout.h"
#include "lower/lower.h"
#include "migrate/torchscript-to-pt2.h"
#include "formats.h"
#include "onnx/writer.h"
#include "report/lint-json.h"
#include "report/model-info.h"
#include "runtime/inputs.h"

static void
model_dealloc (GraftPythonModel *self)
{
  g_clear_pointer (&self->runtime, graft_runtime_free);
  g_clear_object (&self->history);
  g_clear_object (&self->model);
  if (self->lock != NULL)
    PyThread_free_lock (self->lock);
  Py_TYPE (self)->tp_free ((PyObject *) self);
}

PyObject *
graft_python_model_wrap (GraftModel *model)
{
  GraftPythonModel *self = PyObject_New (GraftPythonModel, &graft_python_model_type);
  if (self == NULL)
    {
      g_object_unref (model);
      return NULL;
    }
  self->model = model;
  self->history = NULL;
  self->runtime = NULL;
  self->lock = PyThread_allocate_lock ();
  return (PyObject *) self;
}

/* Takes the model's lock, waiting without the GIL. */
void
graft_python_model_lock (GraftPythonModel *self)
{
  if (!PyThread_acquire_lock (self->lock, NOWAIT_LOCK))
    {
      Py_BEGIN_ALLOW_THREADS
      PyThread_acquire_lock (self->lock, WAIT_LOCK);
      Py_END_ALLOW_THREADS
    }
}

void
graft_python_model_unlock (GraftPythonModel *self)
{
  PyThread_release_lock (self->lock);
}

static GraftEditHistory *
model_get_history (GraftPythonModel *self)
{
  if (self->history == NULL)
    self->history = graft_edit_history_new (self->model);
  return self->history;
}

static PyObject *
model_get_path (GraftPythonModel *self, void *closure)
{
  const char *path = graft_model_get_path (self->model);
  if (path == NULL)
    Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault (path);
}

static PyObject *
model_get_format (GraftPythonModel *self, void *closure)
{
  return PyUnicode_FromString (graft_model_format_to_string (graft_model_get_format (self->model)));
}

static PyObject *
model_info_json (GraftPythonModel *self, PyObject *unused)
{
  char *text;

  graft_python_model_lock (self);
  text = graft_model_info_to_json (self->model);
  graft_python_model_unlock (self);
  return graft_python_take_string (text);
}

static PyObject *
model_lint_json (GraftPythonModel *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "onnx_export", "target_opset", NULL };
  GraftLintOptions options = { FALSE };
  int onnx_export = FALSE;
  long long target_opset = 0;
  g_autoptr(GPtrArray) diagnostics = NULL;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "|pL", keywords, &onnx_export, &target_opset))
    return NULL;
  if (target_opset != 0 && (target_opset < GRAFT_LOWER_MIN_OPSET || target_opset > graft_lower_max_opset ()))
    return PyErr_Format (PyExc_ValueError, "target opset %lld: the conversion writes opsets %d to %" G_GINT64_FORMAT,
                         target_opset, GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset ());
  options.onnx_export_target = onnx_export;
  options.onnx_target_opset = target_opset;
  graft_python_model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  diagnostics = graft_lint_model (self->model, &options);
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (self);
  return graft_python_take_string (graft_diagnostics_to_json (diagnostics, NULL));
}

/* dict[str, int] of symbolic dim values → char* → gint64*. */
static GHashTable *
dims_from_dict (PyObject *dict)
{
  g_autoptr(GHashTable) dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  PyObject *key, *value;
  Py_ssize_t position = 0;

  while (dict != NULL && dict != Py_None && PyDict_Next (dict, &position, &key, &value))
    {
      const char *name = PyUnicode_Check (key) ? PyUnicode_AsUTF8 (key) : NULL;
      gint64 size = PyLong_Check (value) ? PyLong_AsLongLong (value) : -1;
      if (name == NULL || size < 0)
        {
          PyErr_Clear ();
          PyErr_SetString (PyExc_TypeError, "dims must map a dim's name (str) to a size (int >= 0)");
          return NULL;
        }
      g_hash_table_insert (dims, g_strdup (name), g_memdup2 (&size, sizeof size));
    }
  return g_steal_pointer (&dims);
}

/* Fills in the inputs not given with random data (when random) and checks
 * every input against its declaration. */
static gboolean
complete_inputs (GraftRuntime *runtime, GHashTable *inputs, gboolean random, guint32 seed, GHashTable *dims,
                 GError **error)
{
  GPtrArray *declared = graft_runtime_get_inputs (runtime);
  g_autoptr(GRand) rng = g_rand_new_with_seed (seed);

  for (guint i = 0; i < declared->len; i++)
    {
      GraftValue *value = declared->pdata[i];
      if (g_hash_table_contains (inputs, value->name))
        continue;
      if (!random)
        {
          g_autofree char *shape = graft_shape_to_string (&value->shape);
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "input '%s' (%s[%s]) was not given: pass it in inputs, or random=True", value->name,
                       graft_dtype_to_string (value->dtype), shape);
          return FALSE;
        }
      GraftRtTensor *tensor = graft_runtime_random_input (value, dims, rng, error);
      if (tensor == NULL)
        return FALSE;
      g_hash_table_insert (inputs, g_strdup (value->name), tensor);
    }
  GHashTableIter iter;
  gpointer name;
  g_hash_table_iter_init (&iter, inputs);
  while (g_hash_table_iter_next (&iter, &name, NULL))
    {
      GraftValue *value = NULL;
      for (guint i = 0; i < declared->len && value == NULL; i++)
        if (g_strcmp0 (((GraftValue *) declared->pdata[i])->name, name) == 0)
          value = declared->pdata[i];
      if (value == NULL)
        {
          g_autoptr(GString) names = g_string_new (NULL);
          for (guint k = 0; k < declared->len; k++)
            g_string_append_printf (names, "%s'%s'", k ? ", " : "", ((GraftValue *) declared->pdata[k])->name);
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "the model has no input '%s' (its inputs: %s)", (char *) name, names->str);
          return FALSE;
        }
      if (!graft_runtime_check_input (runtime, value, g_hash_table_lookup (inputs, name), error))
        return FALSE;
    }
  return TRUE;
}

static PyObject *
model_run (GraftPythonModel *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "inputs", "threads", "random", "seed", "dims", "precision", NULL };
  PyObject *inputs_dict = NULL, *dims_dict = NULL;
  int threads = 1, random = FALSE;
  unsigned long long seed = 0;
  const char *precision_name = "f32";
  GraftPrecision precision;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) outputs = NULL;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "|OipKOs", keywords, &inputs_dict, &threads, &random, &seed,
                                    &dims_dict, &precision_name))
    return NULL;
  if (threads < 1)
    return PyErr_Format (PyExc_ValueError, "threads must be at least 1, not %d", threads);
  if (!graft_precision_from_string (precision_name, &precision))
    return PyErr_Format (PyExc_ValueError, "precision is 'f32' or 'bf16', not '%s'", precision_name);
  if (!graft_precision_available (precision, &error))
    return graft_python_raise (error);
  g_autoptr(GHashTable) inputs = graft_python_tensors_from_dict (inputs_dict);
  g_autoptr(GHashTable) dims = inputs ? dims_from_dict (dims_dict) : NULL;
  if (dims == NULL)
    return NULL;

  graft_python_model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  if (self->runtime == NULL)
    self->runtime = graft_runtime_new (self->model, &error);
  if (self->runtime != NULL)
    {
      graft_runtime_set_n_threads (self->runtime, threads);
      graft_runtime_set_precision (self->runtime, precision, NULL);   /* available: checked above */
      if (complete_inputs (self->runtime, inputs, random, (guint32) seed, dims, &error))
        outputs = graft_runtime_run (self->runtime, inputs, NULL, NULL, NULL, &error);
    }
  Py_END_ALLOW_THREADS
  if (outputs == NULL)
    {
      graft_python_model_unlock (self);
      return graft_python_raise (error);
    }
  GPtrArray *values = graft_runtime_get_outputs (self->runtime);
  PyObject *result = PyDict_New ();
  for (guint i = 0; result != NULL && i < outputs->len; i++)
    {
      PyObject *output = graft_python_wrap_output (outputs->pdata[i]);
      if (output == NULL || PyDict_SetItemString (result, ((GraftValue *) values->pdata[i])->name, output) != 0)
        Py_CLEAR (result);
      Py_XDECREF (output);
    }
  graft_python_model_unlock (self);
  return result;
}

/* A Python value as a GVariant edit parameter: str s, bool b, int x,
 * float d, a list of str as, of int ax. NULL with an exception. */
static GVariant *
variant_from_object (PyObject *object, const char *key)
{
  if (PyUnicode_Check (object))
    return g_variant_new_string (PyUnicode_AsUTF8 (object));
  if (PyBool_Check (object))
    return g_variant_new_boolean (object == Py_True);
  if (PyLong_Check (object))
    return g_variant_new_int64 (PyLong_AsLongLong (object));
  if (PyFloat_Check (object))
    return g_variant_new_double (PyFloat_AsDouble (object));
  if (PyList_Check (object) || PyTuple_Check (object))
    {
      PyObject *items = PySequence_Fast (object, "");
      Py_ssize_t n = PySequence_Fast_GET_SIZE (items);
      gboolean strings = n > 0 && PyUnicode_Check (PySequence_Fast_GET_ITEM (items, 0));
      GVariantBuilder builder;
      g_variant_builder_init (&builder, strings ? G_VARIANT_TYPE ("as") : G_VARIANT_TYPE ("ax"));
      for (Py_ssize_t i = 0; i < n; i++)
        {
          PyObject *item = PySequence_Fast_GET_ITEM (items, i);
          if (strings && PyUnicode_Check (item))
            g_variant_builder_add (&builder, "s", PyUnicode_AsUTF8 (item));
          else if (!strings && PyLong_Check (item) && !PyBool_Check (item))
            g_variant_builder_add (&builder, "x", (gint64) PyLong_AsLongLong (item));
          else
            {
              g_variant_builder_clear (&builder);
              Py_DECREF (items);
              PyErr_Format (PyExc_TypeError, "edit parameter '%s': a list of str or of int", key);
              return NULL;
            }
        }
      Py_DECREF (items);
      return g_variant_builder_end (&builder);
    }
  PyErr_Format (PyExc_TypeError, "edit parameter '%s': str, bool, int, float or a list, not %s", key,
                Py_TYPE (object)->tp_name);
  return NULL;
}

static GVariant *
params_from_dict (PyObject *dict)
{
  GVariantBuilder builder;
  PyObject *key, *value;
  Py_ssize_t position = 0;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a{sv}"));
  while (dict != NULL && dict != Py_None && PyDict_Next (dict, &position, &key, &value))
    {
      const char *name = PyUnicode_AsUTF8 (key);
      GVariant *variant = name ? variant_from_object (value, name) : NULL;
      if (variant == NULL)
        {
          g_variant_builder_clear (&builder);
          return NULL;
        }
      g_variant_builder_add (&builder, "{sv}", name, variant);
    }
  return g_variant_builder_end (&builder);
}

/* edit(op, params, verify, force) → (description, notes, check lines,
 * verified): applies one operation of the edit table through the
 * model's history; an edit that changed input dims is then proven at
 * other sizes, and undone when that fails (unless force). */
static PyObject *
model_edit (GraftPythonModel *self, PyObject *args)
{
  const char *id;
  PyObject *params_dict;
  int verify = TRUE, force = FALSE;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftDimCheck) check = NULL;
  gboolean applied = FALSE, undone = FALSE;

  if (!PyArg_ParseTuple (args, "sO!pp", &id, &PyDict_Type, &params_dict, &verify, &force))
    return NULL;
  GVariant *params = params_from_dict (params_dict);
  if (params == NULL)
    return NULL;
  g_autoptr(GraftEdit) edit = graft_edit_new_operation (id, params, &error);
  if (edit == NULL)
    return graft_python_raise (error);

  graft_python_model_lock (self);
  GraftEditHistory *history = model_get_history (self);
  Py_BEGIN_ALLOW_THREADS
  applied = graft_edit_history_apply (history, edit, &error);
  if (applied)
    g_clear_pointer (&self->runtime, graft_runtime_free);
  if (applied && verify && graft_edit_get_changed_dims (edit)->len > 0)
    {
      check = graft_edit_verify (edit, self->model, &error);
      if ((check == NULL || !check->passed) && !force)
        undone = graft_edit_history_undo (history, NULL);
    }
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (self);

  if (!applied || (check == NULL && error != NULL && !force))
    return graft_python_raise (error);
  if (check != NULL && !check->passed && !force)
    {
      PyErr_Format (graft_python_error, "%s: the edit is wrong at other sizes: %s%s", graft_edit_get_description (edit),
                    check->failure, undone ? " (undone)" : "");
      return NULL;
    }
  PyObject *notes = graft_python_strings_to_list (graft_edit_get_notes (edit));
  PyObject *lines = graft_python_strings_to_list (check ? check->lines : NULL);
  PyObject *verified = check == NULL ? Py_NewRef (Py_None) : PyBool_FromLong (check->passed && check->complete);
  PyObject *result = notes && lines ? Py_BuildValue ("(sOOO)", graft_edit_get_description (edit), notes, lines, verified)
                                    : NULL;
  Py_XDECREF (notes);
  Py_XDECREF (lines);
  Py_XDECREF (verified);
  return result;
}

static PyObject *
model_apply_recipe (GraftPythonModel *self, PyObject *args)
{
  PyObject *path_object;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) applied = g_ptr_array_new_with_free_func (g_object_unref);
  gboolean replayed;

  if (!PyArg_ParseTuple (args, "O&", PyUnicode_FSConverter, &path_object))
    return NULL;
  graft_python_model_lock (self);
  GraftEditHistory *history = model_get_history (self);
  Py_BEGIN_ALLOW_THREADS
  replayed = graft_recipe_replay_file (PyBytes_AS_STRING (path_object), history, applied, &error);
  g_clear_pointer (&self->runtime, graft_runtime_free);
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (self);
  Py_DECREF (path_object);
  if (!replayed)
    return graft_python_raise (error);
  g_autoptr(GPtrArray) descriptions = g_ptr_array_new ();
  for (guint i = 0; i < applied->len; i++)
    g_ptr_array_add (descriptions, (gpointer) graft_edit_get_description (applied->pdata[i]));
  return graft_python_strings_to_list (descriptions);
}

static PyObject *
model_save_recipe (GraftPythonModel *self, PyObject *args)
{
  PyObject *path_object;
  g_autoptr(GError) error = NULL;
  gboolean saved;

  if (!PyArg_ParseTuple (args, "O&", PyUnicode_FSConverter, &path_object))
    return NULL;
  graft_python_model_lock (self);
  saved = graft_recipe_save (graft_edit_history_get_applied (model_get_history (self)), PyBytes_AS_STRING (path_object),
                             &error);
  graft_python_model_unlock (self);
  Py_DECREF (path_object);
  if (!saved)
    return graft_python_raise (error);
  Py_RETURN_NONE;
}

static PyObject *
model_save (GraftPythonModel *self, PyObject *args)
{
  PyObject *path_object;
  int overwrite = FALSE;
  g_autoptr(GError) error = NULL;
  gboolean saved = FALSE;

  if (!PyArg_ParseTuple (args, "O&p", PyUnicode_FSConverter, &path_object, &overwrite))
    return NULL;
  graft_python_model_lock (self);
  if (graft_model_get_format (self->model) != GRAFT_MODEL_FORMAT_ONNX &&
      graft_model_get_format (self->model) != GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM)
    g_set_error (&error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                 "%s is %s: Graft saves ONNX and torch.export programs; convert it first (graft.convert, "
                 "or Model.to_onnx)",
                 graft_model_get_path (self->model) ? graft_model_get_path (self->model) : "this model",
                 graft_model_format_to_string (graft_model_get_format (self->model)));
  else
    {
      /* The writer the name's extension picks (formats.h): a .pt2 program
       * saves as .pt2. */
      Py_BEGIN_ALLOW_THREADS
      saved = graft_format_save (self->model, PyBytes_AS_STRING (path_object), NULL, overwrite, &error);
      Py_END_ALLOW_THREADS
      if (saved && self->history != NULL)
        graft_edit_history_mark_saved (self->history);
    }
  graft_python_model_unlock (self);
  Py_DECREF (path_object);
  if (!saved)
    return graft_python_raise (error);
  Py_RETURN_NONE;
}

/* dict[str, sequence of int | str] → name → GraftShape* (str dims are
 * symbolic); NULL with an exception. */
static GHashTable *
shapes_from_dict (PyObject *dict)
{
  g_autoptr(GHashTable) shapes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                        (GDestroyNotify) graft_shape_free);
  PyObject *key, *value;
  Py_ssize_t position = 0;

  while (dict != NULL && dict != Py_None && PyDict_Next (dict, &position, &key, &value))
    {
      const char *name = PyUnicode_Check (key) ? PyUnicode_AsUTF8 (key) : NULL;
      PyObject *dims = name && !PyUnicode_Check (value) ? PySequence_Fast (value, "") : NULL;
      if (dims == NULL)
        {
          PyErr_Clear ();
          PyErr_SetString (PyExc_TypeError, "shapes must map an input name to a sequence of int (or str for a named dim)");
          return NULL;
        }
      Py_ssize_t rank = PySequence_Fast_GET_SIZE (dims);
      GraftShape *shape = g_new0 (GraftShape, 1);
      graft_shape_init (shape, (int) rank);
      g_hash_table_insert (shapes, g_strdup (name), shape);
      for (Py_ssize_t d = 0; d < rank; d++)
        {
          PyObject *dim = PySequence_Fast_GET_ITEM (dims, d);
          if (PyUnicode_Check (dim))
            shape->dims[d] = graft_dim_symbolic (g_intern_string (PyUnicode_AsUTF8 (dim)));
          else if (PyLong_Check (dim) && PyLong_AsLongLong (dim) >= 0)
            shape->dims[d] = graft_dim_fixed (PyLong_AsLongLong (dim));
          else
            {
              Py_DECREF (dims);
              PyErr_Clear ();
              return PyErr_Format (PyExc_TypeError, "shape of '%s': dim %zd is neither an int >= 0 nor a name", name, d),
                     NULL;
            }
        }
      Py_DECREF (dims);
    }
  return g_steal_pointer (&shapes);
}

/* dtypes={"t": "int64"}: TorchScript inputs declare no element type.
 * NULL with a Python error set. */
static GHashTable *
dtypes_from_dict (PyObject *dtypes_dict)
{
  g_autoptr(GHashTable) dtypes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  PyObject *key, *value;
  Py_ssize_t position = 0;
  if (dtypes_dict != NULL && dtypes_dict != Py_None && !PyDict_Check (dtypes_dict))
    return PyErr_Format (PyExc_TypeError, "dtypes must be a dict"), NULL;
  while (dtypes_dict != NULL && dtypes_dict != Py_None && PyDict_Next (dtypes_dict, &position, &key, &value))
    {
      const char *name = PyUnicode_Check (key) ? PyUnicode_AsUTF8 (key) : NULL;
      const char *type = PyUnicode_Check (value) ? PyUnicode_AsUTF8 (value) : NULL;
      GraftDType dtype = type ? graft_dtype_from_string (type) : GRAFT_DTYPE_UNDEFINED;
      if (name == NULL || dtype == GRAFT_DTYPE_UNDEFINED || dtype == GRAFT_DTYPE_STRING)
        return PyErr_Format (PyExc_ValueError, "dtypes must map an input name to a numeric type name "
                             "('float32', 'int64', 'bool', ...)"), NULL;
      g_hash_table_replace (dtypes, g_strdup (name), GINT_TO_POINTER (dtype));
    }
  return g_steal_pointer (&dtypes);
}

static PyObject *
model_to_onnx (GraftPythonModel *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "shapes", "opset", "allow_custom", "dtypes", NULL };
  PyObject *shapes_dict = NULL, *dtypes_dict = NULL;
  long long opset = 0;
  int allow_custom = FALSE;
  g_autoptr(GError) error = NULL;
  GraftModel *onnx = NULL;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "|OLpO", keywords, &shapes_dict, &opset, &allow_custom,
                                    &dtypes_dict))
    return NULL;
  g_autoptr(GHashTable) dtypes = dtypes_from_dict (dtypes_dict);
  if (dtypes == NULL)
    return NULL;
  if (opset != 0 && (opset < GRAFT_LOWER_MIN_OPSET || opset > graft_lower_max_opset ()))
    return PyErr_Format (PyExc_ValueError, "opset %lld: the conversion writes opsets %d to %" G_GINT64_FORMAT, opset,
                         GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset ());
  g_autoptr(GHashTable) shapes = shapes_from_dict (shapes_dict);
  if (shapes == NULL)
    return NULL;
  GraftLowerOptions options = { .opset = opset, .allow_custom = allow_custom, .input_shapes = shapes,
                                .input_dtypes = dtypes };
  graft_python_model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  onnx = graft_lower_to_onnx (self->model, &options, &error);
  if (onnx != NULL)
    graft_model_set_path (onnx, graft_model_get_path (self->model));
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (self);
  if (onnx == NULL)
    return graft_python_raise (error);
  return graft_python_model_wrap (onnx);
}

/* to_pt2(shapes, dynamic=[(input, axis, symbol, min, max)], dtypes): the
 * TorchScript graph as a torch.export program (max < 0: unbounded). */
static PyObject *
model_to_pt2 (GraftPythonModel *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "shapes", "dynamic", "dtypes", NULL };
  PyObject *shapes_dict = NULL, *dynamic_list = NULL, *dtypes_dict = NULL;
  g_autoptr(GError) error = NULL;
  GraftModel *program = NULL;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "|OOO", keywords, &shapes_dict, &dynamic_list, &dtypes_dict))
    return NULL;
  g_autoptr(GHashTable) dtypes = dtypes_from_dict (dtypes_dict);
  if (dtypes == NULL)
    return NULL;
  g_autoptr(GHashTable) shapes = shapes_from_dict (shapes_dict);
  if (shapes == NULL)
    return NULL;
  if (dynamic_list != NULL && dynamic_list != Py_None && !PyList_Check (dynamic_list))
    return PyErr_Format (PyExc_TypeError, "dynamic must be a list of (input, axis, symbol, min, max)");
  Py_ssize_t n_dims = dynamic_list != NULL && dynamic_list != Py_None ? PyList_Size (dynamic_list) : 0;
  g_autofree GraftPt2DynamicDim *dims = g_new0 (GraftPt2DynamicDim, MAX (n_dims, 1));
  for (Py_ssize_t i = 0; i < n_dims; i++)
    {
      const char *input, *symbol;
      int axis;
      long long min, max;
      if (!PyArg_ParseTuple (PyList_GET_ITEM (dynamic_list, i), "sisLL", &input, &axis, &symbol, &min, &max))
        return NULL;
      if (axis < 0 || min < 0 || (max >= 0 && max < min))
        return PyErr_Format (PyExc_ValueError, "dynamic dim %s of '%s': axis >= 0 and 0 <= min <= max", symbol, input);
      dims[i] = (GraftPt2DynamicDim) { g_intern_string (input), axis, g_intern_string (symbol), min, max };
    }
  GraftPt2ConvertOptions options = { shapes, dtypes, dims, (guint) n_dims };
  graft_python_model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  program = graft_torchscript_to_pt2 (self->model, &options, &error);
  if (program != NULL)
    graft_model_set_path (program, graft_model_get_path (self->model));
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (self);
  if (program == NULL)
    return graft_python_raise (error);
  return graft_python_model_wrap (program);
}

static PyObject *
model_render (GraftPythonModel *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "path", "expand_all", "direction", "shapes", "attributes", "names", "dark", NULL };
  PyObject *path_object;
  int expand_all = FALSE, shapes = TRUE, attributes = TRUE, names = FALSE, dark = FALSE;
  const char *direction = "TB";
  GraftLayoutOptions options;
  GraftPaintOptions paint = { 0 };
  GraftExportFormat format;
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "O&|pspppp", keywords, PyUnicode_FSConverter, &path_object,
                                    &expand_all, &direction, &shapes, &attributes, &names, &dark))
    return NULL;
  const char *path = PyBytes_AS_STRING (path_object);
  graft_layout_options_init (&options);
  if (g_ascii_strcasecmp (direction, "LR") == 0)
    options.direction = GRAFT_LAYOUT_DIRECTION_LR;
  else if (g_ascii_strcasecmp (direction, "TB") != 0)
    {
      Py_DECREF (path_object);
      return PyErr_Format (PyExc_ValueError, "direction '%s': TB or LR", direction);
    }
  options.show_shapes = shapes;
  options.show_attributes = attributes;
  options.show_names = names;
  paint.dark = dark;
  if (!graft_export_format_from_path (path, &format, &error))
    {
      Py_DECREF (path_object);
      return graft_python_raise (error);
    }

  graft_python_model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  GraftGraph *graph = graft_model_get_graph (self->model);
  if (graph == NULL || (graph->nodes->len == 0 && graft_model_get_format (self->model) == GRAFT_MODEL_FORMAT_STATE_DICT))
    g_set_error (&error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "%s holds no graph to draw (%s)",
                 graft_model_get_path (self->model) ? graft_model_get_path (self->model) : "the model",
                 graft_model_format_to_string (graft_model_get_format (self->model)));
  else
    {
      g_autoptr(GraftInference) inference = shapes ? graft_shape_inference_run (self->model, NULL) : NULL;
      g_autoptr(GraftLayout) layout = graft_layout_new (graph);
      graft_layout_set_model (layout, self->model);
      graft_layout_set_inference (layout, inference);
      graft_layout_set_options (layout, &options);
      if (expand_all)
        graft_layout_expand_all (layout);
      g_autoptr(GraftScene) scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
      done = scene != NULL && graft_scene_export (scene, &paint, path, &error);
    }
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (self);
  Py_DECREF (path_object);
  if (!done)
    return graft_python_raise (error);
  Py_RETURN_NONE;
}

static PyMethodDef model_methods[] = {
  { "info_json", (PyCFunction) model_info_json, METH_NOARGS, "graft-cli info --json of the model, as text." },
  { "lint_json", (PyCFunction) (void (*) (void)) model_lint_json, METH_VARARGS | METH_KEYWORDS,
    "lint_json(onnx_export=False, target_opset=0): graft-cli lint --json, as text." },
  { "run", (PyCFunction) (void (*) (void)) model_run, METH_VARARGS | METH_KEYWORDS,
    "run(inputs=None, threads=1, random=False, seed=0, dims=None, precision='f32') -> dict of Tensor" },
  { "edit", (PyCFunction) model_edit, METH_VARARGS,
    "edit(op, params, verify, force) -> (description, notes, check lines, verified)" },
  { "apply_recipe", (PyCFunction) model_apply_recipe, METH_VARARGS, "apply_recipe(path) -> edit descriptions" },
  { "save_recipe", (PyCFunction) model_save_recipe, METH_VARARGS, "save_recipe(path)" },
  { "save", (PyCFunction) model_save, METH_VARARGS, "save(path, overwrite)" },
  { "to_onnx", (PyCFunction) (void (*) (void)) model_to_onnx, METH_VARARGS | METH_KEYWORDS,
    "to_onnx(shapes=None, opset=0, allow_custom=False, dtypes=None) -> Model" },
  { "to_pt2", (PyCFunction) (void (*) (void)) model_to_pt2, METH_VARARGS | METH_KEYWORDS,
    "to_pt2(shapes=None, dynamic=None, dtypes=None) -> Model" },
  { "render", (PyCFunction) (void (*) (void)) model_render, METH_VARARGS | METH_KEYWORDS,
    "render(path, expand_all=False, direction='TB', shapes=True, attributes=True, names=False, dark=False)" },
  { NULL }
};

static PyGetSetDef model_getset[] = {
  { "path", (getter) model_get_path, NULL, "The file the model was read from.", NULL },
  { "format", (getter) model_get_format, NULL, "onnx, torchscript, exported_program, ...", NULL },
  { NULL }
};

PyTypeObject graft_python_model_type = {
  PyVarObject_HEAD_INIT (NULL, 0)
  .tp_name = "graft._graft.Model",
  .tp_basicsize = sizeof (GraftPythonModel),
  .tp_dealloc = (destructor) model_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A model loaded by Graft (wrapped by graft.Model).",
  .tp_methods = model_methods,
  .tp_getset = model_getset,
};
