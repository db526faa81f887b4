/* graft._graft: the CPython extension under the graft package. It is a
 * thin layer over model/ and layout/ (the library graft-cli links; no GTK):
 * every verb calls the function graft-cli calls, and the JSON the CLI
 * prints (report/) is what the Python side turns into dicts. The long
 * calls (load, run, diff, convert, render, edits) release the GIL; each
 * Model has a lock so that two threads cannot use one GraftModel at once.
 *
 * Tensors go in and out through the buffer protocol: an input array that
 * is C-contiguous and 16-byte aligned is read in place, and an output is a
 * Tensor object exporting the runtime's buffer, which numpy.asarray()
 * wraps without a copy. numpy itself is only needed by the Python side. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <string.h>

#include "graft-config.h"
#include "loader.h"
#include "analysis/diagnostics.h"
#include "analysis/shape-inference.h"
#include "compare/alignment.h"
#include "compare/input-settings.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "edit/edit.h"
#include "edit/edit-history.h"
#include "edit/edit-operation.h"
#include "edit/recipe.h"
#include "layout/export.h"
#include "layout/layout.h"
#include "lower/lower.h"
#include "onnx/writer.h"
#include "report/diff-json.h"
#include "report/lint-json.h"
#include "report/model-info.h"
#include "runtime/rt-tensor.h"
#include "runtime/inputs.h"
#include "runtime/runtime.h"

static PyObject *graft_error_type;

/* Raises GraftError with Graft's own message. Returns NULL. */
static PyObject *
raise_error (GError *error)
{
  PyErr_SetString (graft_error_type, error != NULL ? error->message : "unknown error");
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Tensor: an output of the runtime, exported through the buffer protocol */

typedef struct {
  PyObject_HEAD
  GraftRtTensor *tensor;
  Py_ssize_t shape[GRAFT_RT_MAX_RANK];
  Py_ssize_t strides[GRAFT_RT_MAX_RANK];
} TensorObject;

/* struct module format of a dtype numpy reads; NULL for the others. */
static const char *
dtype_format (GraftDType dtype)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_FLOAT32: return "f";
    case GRAFT_DTYPE_FLOAT64: return "d";
    case GRAFT_DTYPE_FLOAT16: return "e";
    case GRAFT_DTYPE_INT8: return "b";
    case GRAFT_DTYPE_UINT8: return "B";
    case GRAFT_DTYPE_INT16: return "h";
    case GRAFT_DTYPE_UINT16: return "H";
    case GRAFT_DTYPE_INT32: return "i";
    case GRAFT_DTYPE_UINT32: return "I";
    case GRAFT_DTYPE_INT64: return "q";
    case GRAFT_DTYPE_UINT64: return "Q";
    case GRAFT_DTYPE_BOOL: return "?";
    case GRAFT_DTYPE_COMPLEX64: return "Zf";
    case GRAFT_DTYPE_COMPLEX128: return "Zd";
    default: return NULL;
    }
}

/* The dtype of a buffer format ("<f", "=q", "l" ...), or UNDEFINED. */
static GraftDType
format_dtype (const char *format, Py_ssize_t itemsize)
{
  if (format == NULL)
    return GRAFT_DTYPE_UINT8;
  if (*format == '<' || *format == '=' || *format == '@')
    format++;
  if (format[0] == 'Z')
    return format[1] == 'f' ? GRAFT_DTYPE_COMPLEX64 : format[1] == 'd' ? GRAFT_DTYPE_COMPLEX128 : GRAFT_DTYPE_UNDEFINED;
  if (format[0] == '\0' || format[1] != '\0')
    return GRAFT_DTYPE_UNDEFINED;
  switch (format[0])
    {
    case 'f': return GRAFT_DTYPE_FLOAT32;
    case 'd': return GRAFT_DTYPE_FLOAT64;
    case 'e': return GRAFT_DTYPE_FLOAT16;
    case 'b': return GRAFT_DTYPE_INT8;
    case 'B': return GRAFT_DTYPE_UINT8;
    case 'h': return GRAFT_DTYPE_INT16;
    case 'H': return GRAFT_DTYPE_UINT16;
    case '?': return GRAFT_DTYPE_BOOL;
    case 'i': case 'l': case 'q':
      return itemsize == 8 ? GRAFT_DTYPE_INT64 : itemsize == 4 ? GRAFT_DTYPE_INT32 : GRAFT_DTYPE_UNDEFINED;
    case 'I': case 'L': case 'Q':
      return itemsize == 8 ? GRAFT_DTYPE_UINT64 : itemsize == 4 ? GRAFT_DTYPE_UINT32 : GRAFT_DTYPE_UNDEFINED;
    default: return GRAFT_DTYPE_UNDEFINED;
    }
}

static void
tensor_dealloc (TensorObject *self)
{
  g_clear_pointer (&self->tensor, graft_rt_tensor_unref);
  Py_TYPE (self)->tp_free ((PyObject *) self);
}

static int
tensor_getbuffer (TensorObject *self, Py_buffer *view, int flags)
{
  GraftRtTensor *t = self->tensor;
  gsize itemsize = graft_rt_dtype_size (t->dtype);

  if ((flags & PyBUF_WRITABLE) && !graft_rt_tensor_is_writable (t))
    {
      PyErr_SetString (PyExc_BufferError, "this output shares a constant of the model: it is read-only");
      return -1;
    }
  view->obj = Py_NewRef ((PyObject *) self);
  view->buf = t->data;
  view->len = (Py_ssize_t) t->nbytes;
  view->readonly = !graft_rt_tensor_is_writable (t);
  view->itemsize = (Py_ssize_t) itemsize;
  view->format = (flags & PyBUF_FORMAT) ? (char *) dtype_format (t->dtype) : NULL;
  view->ndim = t->rank;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs tensor_as_buffer = {
  .bf_getbuffer = (getbufferproc) tensor_getbuffer,
};

static PyTypeObject tensor_type = {
  PyVarObject_HEAD_INIT (NULL, 0)
  .tp_name = "graft._graft.Tensor",
  .tp_basicsize = sizeof (TensorObject),
  .tp_dealloc = (destructor) tensor_dealloc,
  .tp_as_buffer = &tensor_as_buffer,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "An output of Graft's runtime; numpy.asarray() wraps its buffer without a copy.",
};

/* A Python value for an output: a Tensor for numeric dtypes, a list of
 * str for strings, a list for sequences, None for an empty optional. */
static PyObject *
wrap_output (GraftRtTensor *t)
{
  if (t->kind == GRAFT_RT_NONE)
    Py_RETURN_NONE;
  if (t->kind == GRAFT_RT_SEQUENCE)
    {
      PyObject *list = PyList_New (t->items->len);
      for (guint i = 0; list != NULL && i < t->items->len; i++)
        {
          PyObject *item = wrap_output (t->items->pdata[i]);
          if (item == NULL)
            {
              Py_CLEAR (list);
              break;
            }
          PyList_SET_ITEM (list, i, item);
        }
      return list;
    }
  if (t->dtype == GRAFT_DTYPE_STRING)
    {
      PyObject *list = PyList_New (t->numel);
      for (gint64 i = 0; list != NULL && i < t->numel; i++)
        {
          const char *s = ((char **) t->data)[i];
          PyObject *item = PyUnicode_DecodeUTF8 (s ? s : "", s ? strlen (s) : 0, "replace");
          if (item == NULL)
            {
              Py_CLEAR (list);
              break;
            }
          PyList_SET_ITEM (list, i, item);
        }
      PyObject *shape = PyTuple_New (t->rank);
      for (int d = 0; shape != NULL && d < t->rank; d++)
        PyTuple_SET_ITEM (shape, d, PyLong_FromLongLong (t->dims[d]));
      PyObject *pair = list && shape ? PyTuple_Pack (2, list, shape) : NULL;
      Py_XDECREF (list);
      Py_XDECREF (shape);
      return pair;
    }

  g_autoptr(GraftRtTensor) owned = NULL;
  if (dtype_format (t->dtype) == NULL)
    {
      /* bfloat16, float8, int4...: numpy has no such dtype; the values as float32. */
      g_autoptr(GError) error = NULL;
      owned = graft_rt_tensor_to_float32 (t, &error);
      if (owned == NULL)
        return raise_error (error);
      t = owned;
    }
  TensorObject *object = PyObject_New (TensorObject, &tensor_type);
  if (object == NULL)
    return NULL;
  object->tensor = graft_rt_tensor_ref (t);
  Py_ssize_t stride = (Py_ssize_t) graft_rt_dtype_size (t->dtype);
  for (int d = t->rank - 1; d >= 0; d--)
    {
      object->shape[d] = (Py_ssize_t) t->dims[d];
      object->strides[d] = stride;
      stride *= (Py_ssize_t) MAX (t->dims[d], 1);
    }
  return (PyObject *) object;
}

/* An input from any object with a C-contiguous buffer: read in place when
 * aligned (the tensor holds the buffer until the runtime lets it go). */
static void
release_buffer (gpointer data)
{
  Py_buffer *view = data;
  PyGILState_STATE state = PyGILState_Ensure ();
  PyBuffer_Release (view);
  PyGILState_Release (state);
  g_free (view);
}

static GraftRtTensor *
tensor_from_object (PyObject *object, const char *name)
{
  Py_buffer *view = g_new0 (Py_buffer, 1);
  g_autoptr(GError) error = NULL;

  if (PyObject_GetBuffer (object, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0)
    {
      g_free (view);
      PyErr_Format (PyExc_TypeError, "input '%s': expected a C-contiguous array (numpy.ndarray), not %s", name,
                    Py_TYPE (object)->tp_name);
      return NULL;
    }
  GraftDType dtype = format_dtype (view->format, view->itemsize);
  if (dtype == GRAFT_DTYPE_UNDEFINED || view->ndim > GRAFT_RT_MAX_RANK)
    {
      PyErr_Format (PyExc_TypeError, "input '%s': Graft cannot read arrays of format '%s' and rank %d", name,
                    view->format ? view->format : "B", view->ndim);
      PyBuffer_Release (view);
      g_free (view);
      return NULL;
    }
  gint64 dims[GRAFT_RT_MAX_RANK];
  for (int d = 0; d < view->ndim; d++)
    dims[d] = view->shape ? view->shape[d] : view->len / MAX (view->itemsize, 1);
  g_autoptr(GBytes) bytes = g_bytes_new_with_free_func (view->buf, view->len, release_buffer, view);
  GraftRtTensor *tensor = graft_rt_tensor_new_from_bytes (dtype, view->ndim, dims, bytes, &error);
  if (tensor == NULL)
    {
      g_prefix_error (&error, "input '%s': ", name);
      raise_error (error);
    }
  return tensor;
}

/* dict[str, array] → name → GraftRtTensor* (owned); NULL with an exception. */
static GHashTable *
tensors_from_dict (PyObject *dict)
{
  g_autoptr(GHashTable) tensors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                         (GDestroyNotify) graft_rt_tensor_unref);
  PyObject *key, *value;
  Py_ssize_t position = 0;

  if (dict == NULL || dict == Py_None)
    return g_steal_pointer (&tensors);
  if (!PyDict_Check (dict))
    {
      PyErr_SetString (PyExc_TypeError, "inputs must be a dict of input name → array");
      return NULL;
    }
  while (PyDict_Next (dict, &position, &key, &value))
    {
      const char *name = PyUnicode_Check (key) ? PyUnicode_AsUTF8 (key) : NULL;
      if (name == NULL)
        {
          PyErr_SetString (PyExc_TypeError, "input names must be str");
          return NULL;
        }
      GraftRtTensor *tensor = tensor_from_object (value, name);
      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (tensors, g_strdup (name), tensor);
    }
  return g_steal_pointer (&tensors);
}

/* ------------------------------------------------------------------ */
/* Model                                                               */

typedef struct {
  PyObject_HEAD
  GraftModel *model;
  GraftEditHistory *history;   /* the edits applied through this object, for recipes */
  GraftRuntime *runtime;       /* built at the first run, dropped by edits */
  PyThread_type_lock lock;     /* held (without the GIL) while a call uses model */
} ModelObject;

static PyTypeObject model_type;

static void
model_dealloc (ModelObject *self)
{
  g_clear_pointer (&self->runtime, graft_runtime_free);
  g_clear_object (&self->history);
  g_clear_object (&self->model);
  if (self->lock != NULL)
    PyThread_free_lock (self->lock);
  Py_TYPE (self)->tp_free ((PyObject *) self);
}

static PyObject *
model_wrap (GraftModel *model)
{
  ModelObject *self = PyObject_New (ModelObject, &model_type);
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
static void
model_lock (ModelObject *self)
{
  if (!PyThread_acquire_lock (self->lock, NOWAIT_LOCK))
    {
      Py_BEGIN_ALLOW_THREADS
      PyThread_acquire_lock (self->lock, WAIT_LOCK);
      Py_END_ALLOW_THREADS
    }
}

static void
model_unlock (ModelObject *self)
{
  PyThread_release_lock (self->lock);
}

static GraftEditHistory *
model_get_history (ModelObject *self)
{
  if (self->history == NULL)
    self->history = graft_edit_history_new (self->model);
  return self->history;
}

static PyObject *
model_get_path (ModelObject *self, void *closure)
{
  const char *path = graft_model_get_path (self->model);
  if (path == NULL)
    Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault (path);
}

static PyObject *
model_get_format (ModelObject *self, void *closure)
{
  return PyUnicode_FromString (graft_model_format_to_string (graft_model_get_format (self->model)));
}

static PyObject *
take_string (char *text)
{
  PyObject *result = PyUnicode_FromString (text);
  g_free (text);
  return result;
}

static PyObject *
model_info_json (ModelObject *self, PyObject *unused)
{
  char *text;

  model_lock (self);
  text = graft_model_info_to_json (self->model);
  model_unlock (self);
  return take_string (text);
}

static PyObject *
model_lint_json (ModelObject *self, PyObject *args, PyObject *kwargs)
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
  model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  diagnostics = graft_lint_model (self->model, &options);
  Py_END_ALLOW_THREADS
  model_unlock (self);
  return take_string (graft_diagnostics_to_json (diagnostics));
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
model_run (ModelObject *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "inputs", "threads", "random", "seed", "dims", NULL };
  PyObject *inputs_dict = NULL, *dims_dict = NULL;
  int threads = 1, random = FALSE;
  unsigned long long seed = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) outputs = NULL;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "|OipKO", keywords, &inputs_dict, &threads, &random, &seed,
                                    &dims_dict))
    return NULL;
  if (threads < 1)
    return PyErr_Format (PyExc_ValueError, "threads must be at least 1, not %d", threads);
  g_autoptr(GHashTable) inputs = tensors_from_dict (inputs_dict);
  g_autoptr(GHashTable) dims = inputs ? dims_from_dict (dims_dict) : NULL;
  if (dims == NULL)
    return NULL;

  model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  if (self->runtime == NULL)
    self->runtime = graft_runtime_new (self->model, &error);
  if (self->runtime != NULL)
    {
      graft_runtime_set_n_threads (self->runtime, threads);
      if (complete_inputs (self->runtime, inputs, random, (guint32) seed, dims, &error))
        outputs = graft_runtime_run (self->runtime, inputs, NULL, NULL, NULL, &error);
    }
  Py_END_ALLOW_THREADS
  if (outputs == NULL)
    {
      model_unlock (self);
      return raise_error (error);
    }
  GPtrArray *values = graft_runtime_get_outputs (self->runtime);
  PyObject *result = PyDict_New ();
  for (guint i = 0; result != NULL && i < outputs->len; i++)
    {
      PyObject *output = wrap_output (outputs->pdata[i]);
      if (output == NULL || PyDict_SetItemString (result, ((GraftValue *) values->pdata[i])->name, output) != 0)
        Py_CLEAR (result);
      Py_XDECREF (output);
    }
  model_unlock (self);
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

static PyObject *
strings_to_list (GPtrArray *strings)
{
  PyObject *list = PyList_New (0);
  for (guint i = 0; list != NULL && strings != NULL && i < strings->len; i++)
    {
      PyObject *item = PyUnicode_FromString (strings->pdata[i]);
      if (item == NULL || PyList_Append (list, item) != 0)
        Py_CLEAR (list);
      Py_XDECREF (item);
    }
  return list;
}

/* edit(op, params, verify, force) → (description, notes, check lines,
 * verified): applies one operation of the edit table through the
 * model's history; an edit that changed input dims is then proven at
 * other sizes, and undone when that fails (unless force). */
static PyObject *
model_edit (ModelObject *self, PyObject *args)
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
    return raise_error (error);

  model_lock (self);
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
  model_unlock (self);

  if (!applied || (check == NULL && error != NULL && !force))
    return raise_error (error);
  if (check != NULL && !check->passed && !force)
    {
      PyErr_Format (graft_error_type, "%s: the edit is wrong at other sizes: %s%s", graft_edit_get_description (edit),
                    check->failure, undone ? " (undone)" : "");
      return NULL;
    }
  PyObject *notes = strings_to_list (graft_edit_get_notes (edit));
  PyObject *lines = strings_to_list (check ? check->lines : NULL);
  PyObject *verified = check == NULL ? Py_NewRef (Py_None) : PyBool_FromLong (check->passed && check->complete);
  PyObject *result = notes && lines ? Py_BuildValue ("(sOOO)", graft_edit_get_description (edit), notes, lines, verified)
                                    : NULL;
  Py_XDECREF (notes);
  Py_XDECREF (lines);
  Py_XDECREF (verified);
  return result;
}

static PyObject *
model_apply_recipe (ModelObject *self, PyObject *args)
{
  PyObject *path_object;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) applied = g_ptr_array_new_with_free_func (g_object_unref);
  gboolean replayed;

  if (!PyArg_ParseTuple (args, "O&", PyUnicode_FSConverter, &path_object))
    return NULL;
  model_lock (self);
  GraftEditHistory *history = model_get_history (self);
  Py_BEGIN_ALLOW_THREADS
  replayed = graft_recipe_replay_file (PyBytes_AS_STRING (path_object), history, applied, &error);
  g_clear_pointer (&self->runtime, graft_runtime_free);
  Py_END_ALLOW_THREADS
  model_unlock (self);
  Py_DECREF (path_object);
  if (!replayed)
    return raise_error (error);
  g_autoptr(GPtrArray) descriptions = g_ptr_array_new ();
  for (guint i = 0; i < applied->len; i++)
    g_ptr_array_add (descriptions, (gpointer) graft_edit_get_description (applied->pdata[i]));
  return strings_to_list (descriptions);
}

static PyObject *
model_save_recipe (ModelObject *self, PyObject *args)
{
  PyObject *path_object;
  g_autoptr(GError) error = NULL;
  gboolean saved;

  if (!PyArg_ParseTuple (args, "O&", PyUnicode_FSConverter, &path_object))
    return NULL;
  model_lock (self);
  saved = graft_recipe_save (graft_edit_history_get_applied (model_get_history (self)), PyBytes_AS_STRING (path_object),
                             &error);
  model_unlock (self);
  Py_DECREF (path_object);
  if (!saved)
    return raise_error (error);
  Py_RETURN_NONE;
}

static PyObject *
model_save (ModelObject *self, PyObject *args)
{
  PyObject *path_object;
  int overwrite = FALSE;
  g_autoptr(GError) error = NULL;
  gboolean saved = FALSE;

  if (!PyArg_ParseTuple (args, "O&p", PyUnicode_FSConverter, &path_object, &overwrite))
    return NULL;
  model_lock (self);
  if (graft_model_get_format (self->model) != GRAFT_MODEL_FORMAT_ONNX)
    g_set_error (&error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                 "%s is %s: Graft saves ONNX; convert it first (graft.convert, or Model.to_onnx)",
                 graft_model_get_path (self->model) ? graft_model_get_path (self->model) : "this model",
                 graft_model_format_to_string (graft_model_get_format (self->model)));
  else
    {
      Py_BEGIN_ALLOW_THREADS
      saved = graft_onnx_write_file (self->model, PyBytes_AS_STRING (path_object),
                                     overwrite ? GRAFT_ONNX_WRITE_OVERWRITE_SOURCE : GRAFT_ONNX_WRITE_NONE, &error);
      Py_END_ALLOW_THREADS
      if (saved && self->history != NULL)
        graft_edit_history_mark_saved (self->history);
    }
  model_unlock (self);
  Py_DECREF (path_object);
  if (!saved)
    return raise_error (error);
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

static PyObject *
model_to_onnx (ModelObject *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "shapes", "opset", "allow_custom", NULL };
  PyObject *shapes_dict = NULL;
  long long opset = 0;
  int allow_custom = FALSE;
  g_autoptr(GError) error = NULL;
  GraftModel *onnx = NULL;

  if (!PyArg_ParseTupleAndKeywords (args, kwargs, "|OLp", keywords, &shapes_dict, &opset, &allow_custom))
    return NULL;
  if (opset != 0 && (opset < GRAFT_LOWER_MIN_OPSET || opset > graft_lower_max_opset ()))
    return PyErr_Format (PyExc_ValueError, "opset %lld: the conversion writes opsets %d to %" G_GINT64_FORMAT, opset,
                         GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset ());
  g_autoptr(GHashTable) shapes = shapes_from_dict (shapes_dict);
  if (shapes == NULL)
    return NULL;
  GraftLowerOptions options = { .opset = opset, .allow_custom = allow_custom, .input_shapes = shapes };
  model_lock (self);
  Py_BEGIN_ALLOW_THREADS
  onnx = graft_lower_to_onnx (self->model, &options, &error);
  if (onnx != NULL)
    graft_model_set_path (onnx, graft_model_get_path (self->model));
  Py_END_ALLOW_THREADS
  model_unlock (self);
  if (onnx == NULL)
    return raise_error (error);
  return model_wrap (onnx);
}

static PyObject *
model_render (ModelObject *self, PyObject *args, PyObject *kwargs)
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
      return raise_error (error);
    }

  model_lock (self);
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
  model_unlock (self);
  Py_DECREF (path_object);
  if (!done)
    return raise_error (error);
  Py_RETURN_NONE;
}

static PyMethodDef model_methods[] = {
  { "info_json", (PyCFunction) model_info_json, METH_NOARGS, "graft-cli info --json of the model, as text." },
  { "lint_json", (PyCFunction) (void (*) (void)) model_lint_json, METH_VARARGS | METH_KEYWORDS,
    "lint_json(onnx_export=False, target_opset=0): graft-cli lint --json, as text." },
  { "run", (PyCFunction) (void (*) (void)) model_run, METH_VARARGS | METH_KEYWORDS,
    "run(inputs=None, threads=1, random=False, seed=0, dims=None) -> dict of Tensor" },
  { "edit", (PyCFunction) model_edit, METH_VARARGS,
    "edit(op, params, verify, force) -> (description, notes, check lines, verified)" },
  { "apply_recipe", (PyCFunction) model_apply_recipe, METH_VARARGS, "apply_recipe(path) -> edit descriptions" },
  { "save_recipe", (PyCFunction) model_save_recipe, METH_VARARGS, "save_recipe(path)" },
  { "save", (PyCFunction) model_save, METH_VARARGS, "save(path, overwrite)" },
  { "to_onnx", (PyCFunction) (void (*) (void)) model_to_onnx, METH_VARARGS | METH_KEYWORDS,
    "to_onnx(shapes=None, opset=0, allow_custom=False) -> Model" },
  { "render", (PyCFunction) (void (*) (void)) model_render, METH_VARARGS | METH_KEYWORDS,
    "render(path, expand_all=False, direction='TB', shapes=True, attributes=True, names=False, dark=False)" },
  { NULL }
};

static PyGetSetDef model_getset[] = {
  { "path", (getter) model_get_path, NULL, "The file the model was read from.", NULL },
  { "format", (getter) model_get_format, NULL, "onnx, torchscript, exported_program, ...", NULL },
  { NULL }
};

static PyTypeObject model_type = {
  PyVarObject_HEAD_INIT (NULL, 0)
  .tp_name = "graft._graft.Model",
  .tp_basicsize = sizeof (ModelObject),
  .tp_dealloc = (destructor) model_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A model loaded by Graft (wrapped by graft.Model).",
  .tp_methods = model_methods,
  .tp_getset = model_getset,
};

/* ------------------------------------------------------------------ */
/* Module functions                                                    */

static PyObject *
module_load (PyObject *module, PyObject *args)
{
  PyObject *path_object;
  g_autoptr(GError) error = NULL;
  GraftModel *model;

  if (!PyArg_ParseTuple (args, "O&", PyUnicode_FSConverter, &path_object))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  model = graft_model_load (PyBytes_AS_STRING (path_object), NULL, NULL, NULL, &error);
  Py_END_ALLOW_THREADS
  Py_DECREF (path_object);
  if (model == NULL)
    return raise_error (error);
  return model_wrap (model);
}

/* A list of str (or None) as a NULL-terminated vector of borrowed UTF-8. */
static gboolean
strings_from_list (PyObject *list, GPtrArray *strings)
{
  if (list == NULL || list == Py_None)
    return TRUE;
  PyObject *items = PySequence_Fast (list, "expected a list of str");
  if (items == NULL)
    return FALSE;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE (items); i++)
    {
      const char *text = PyUnicode_AsUTF8 (PySequence_Fast_GET_ITEM (items, i));
      if (text == NULL)
        {
          Py_DECREF (items);
          return FALSE;
        }
      g_ptr_array_add (strings, (gpointer) text);
    }
  Py_DECREF (items);
  return TRUE;
}

/* diff_json(a, b, inputs, random, seed, dims, shapes, rtol, atol) → text:
 * graft-cli diff --json. dims and shapes are lists of the CLI's
 * "NAME=V[,V...]" and "NAME=DIMS[,DIMS...]". */
static PyObject *
module_diff_json (PyObject *module, PyObject *args)
{
  ModelObject *a, *b;
  PyObject *inputs_dict, *dims_list, *shapes_list;
  int random;
  unsigned long long seed;
  double rtol, atol;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) dim_specs = g_ptr_array_new ();
  g_autoptr(GPtrArray) shape_specs = g_ptr_array_new ();
  char *text = NULL;

  if (!PyArg_ParseTuple (args, "O!O!OpKOOdd", &model_type, &a, &model_type, &b, &inputs_dict, &random, &seed,
                         &dims_list, &shapes_list, &rtol, &atol))
    return NULL;
  if (a == b)
    return PyErr_Format (PyExc_ValueError, "diff needs two Model objects (load the file twice to compare it with itself)");
  if (!(rtol >= 0) || !(atol >= 0))
    return PyErr_Format (PyExc_ValueError, "rtol and atol must be non-negative numbers");
  g_autoptr(GHashTable) given_by_name = tensors_from_dict (inputs_dict);
  if (given_by_name == NULL || !strings_from_list (dims_list, dim_specs) || !strings_from_list (shapes_list, shape_specs))
    return NULL;
  gboolean numeric = random || g_hash_table_size (given_by_name) > 0 || (inputs_dict != Py_None);

  model_lock (a);
  model_lock (b);
  Py_BEGIN_ALLOW_THREADS
  gint64 start = g_get_monotonic_time ();
  g_autoptr(GraftAlignment) alignment = graft_alignment_new (a->model, b->model, &error);
  double align_seconds = (g_get_monotonic_time () - start) / 1e6;
  if (alignment != NULL)
    {
      g_autoptr(GraftStructuralDiff) structural = graft_structural_diff_new (alignment);
      gboolean equivalent = graft_structural_diff_is_equivalent (structural);
      g_autoptr(GPtrArray) runs = NULL;
      gboolean failed = FALSE;
      if (numeric)
        {
          g_autoptr(GraftNumericDiff) nd = graft_numeric_diff_new (alignment, rtol, atol, &error);
          g_autoptr(GraftInputSettings) settings = graft_input_settings_new ();
          g_autoptr(GHashTable) given = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                               (GDestroyNotify) graft_rt_tensor_unref);
          failed = nd == NULL;
          for (guint i = 0; !failed && i < dim_specs->len; i++)
            failed = !graft_input_settings_add_dims (settings, dim_specs->pdata[i], &error);
          for (guint i = 0; !failed && i < shape_specs->len; i++)
            failed = !graft_input_settings_add_shapes (settings, shape_specs->pdata[i], &error);
          GHashTableIter iter;
          gpointer name, tensor;
          g_hash_table_iter_init (&iter, given_by_name);
          while (!failed && g_hash_table_iter_next (&iter, &name, &tensor))
            failed = !graft_input_settings_give_input (nd, name, tensor, given, &error);
          if (!failed)
            runs = graft_input_settings_run_all (settings, nd, given, random, (guint32) seed,
                                                 "keywords: inputs=, random=True, shapes=, dims=", &error);
          failed = runs == NULL;
          for (guint r = 0; !failed && r < runs->len; r++)
            equivalent &= ((GraftNumericRun *) runs->pdata[r])->outputs_close;
        }
      if (!failed)
        text = graft_diff_to_json (alignment, structural, runs, rtol, atol, equivalent, align_seconds);
    }
  Py_END_ALLOW_THREADS
  model_unlock (b);
  model_unlock (a);
  if (text == NULL)
    return raise_error (error);
  return take_string (text);
}

static PyObject *
module_edit_operations (PyObject *module, PyObject *unused)
{
  guint n;
  const GraftEditOperation *operations = graft_edit_operation_list (&n);
  g_autoptr(GPtrArray) ids = g_ptr_array_new ();

  for (guint i = 0; i < n; i++)
    g_ptr_array_add (ids, (gpointer) operations[i].id);
  return strings_to_list (ids);
}

static PyMethodDef module_methods[] = {
  { "load", module_load, METH_VARARGS, "load(path) -> Model: any file graft-cli opens." },
  { "diff_json", module_diff_json, METH_VARARGS,
    "diff_json(a, b, inputs, random, seed, dims, shapes, rtol, atol) -> graft-cli diff --json, as text" },
  { "edit_operations", module_edit_operations, METH_NOARGS, "The ids of the edit table, in order." },
  { NULL }
};

static struct PyModuleDef module_definition = {
  PyModuleDef_HEAD_INIT,
  .m_name = "graft._graft",
  .m_doc = "Graft's model library (model/ and layout/) for the graft package.",
  .m_size = -1,
  .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__graft (void)
{
  if (PyType_Ready (&tensor_type) < 0 || PyType_Ready (&model_type) < 0)
    return NULL;
  PyObject *module = PyModule_Create (&module_definition);
  if (module == NULL)
    return NULL;
  graft_error_type = PyErr_NewExceptionWithDoc ("graft.GraftError",
                                                "A model Graft cannot read, run, edit, compare or write; the "
                                                "message is Graft's own.", PyExc_RuntimeError, NULL);
  if (graft_error_type == NULL || PyModule_AddObjectRef (module, "GraftError", graft_error_type) < 0
      || PyModule_AddObjectRef (module, "Model", (PyObject *) &model_type) < 0
      || PyModule_AddObjectRef (module, "Tensor", (PyObject *) &tensor_type) < 0
      || PyModule_AddStringConstant (module, "version", GRAFT_VERSION) < 0)
    {
      Py_DECREF (module);
      return NULL;
    }
  return module;
}
