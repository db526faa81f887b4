/* graft._graft.Tensor: an output of Graft's runtime exported through
 * the buffer protocol, which numpy.asarray() wraps without a copy; and
 * the way in, any C-contiguous buffer read in place when it is aligned. */
#include <string.h>

#include "python-graft.h"

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

PyTypeObject graft_python_tensor_type = {
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
PyObject *
graft_python_wrap_output (GraftRtTensor *t)
{
  if (t->kind == GRAFT_RT_NONE)
    Py_RETURN_NONE;
  if (t->kind == GRAFT_RT_SEQUENCE)
    {
      PyObject *list = PyList_New (t->items->len);
      for (guint i = 0; list != NULL && i < t->items->len; i++)
        {
          PyObject *item = graft_python_wrap_output (t->items->pdata[i]);
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
        return graft_python_raise (error);
      t = owned;
    }
  TensorObject *object = PyObject_New (TensorObject, &graft_python_tensor_type);
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
      graft_python_raise (error);
    }
  return tensor;
}

/* dict[str, array] → name → GraftRtTensor* (owned); NULL with an exception. */
GHashTable *
graft_python_tensors_from_dict (PyObject *dict)
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
