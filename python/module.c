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
#include "graft-config.h"
#include "python-graft.h"
#include "loader.h"
#include "compare/alignment.h"
#include "compare/input-settings.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "edit/edit-operation.h"
#include "report/diff-json.h"

PyObject *graft_python_error;

PyObject *
graft_python_raise (GError *error)
{
  PyErr_SetString (graft_python_error, error != NULL ? error->message : "unknown error");
  return NULL;
}

PyObject *
graft_python_take_string (char *text)
{
  PyObject *result = PyUnicode_FromString (text);
  g_free (text);
  return result;
}

PyObject *
graft_python_strings_to_list (GPtrArray *strings)
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
    return graft_python_raise (error);
  return graft_python_model_wrap (model);
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
  GraftPythonModel *a, *b;
  PyObject *inputs_dict, *dims_list, *shapes_list;
  int random;
  unsigned long long seed;
  double rtol, atol;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) dim_specs = g_ptr_array_new ();
  g_autoptr(GPtrArray) shape_specs = g_ptr_array_new ();
  char *text = NULL;

  if (!PyArg_ParseTuple (args, "O!O!OpKOOdd", &graft_python_model_type, &a, &graft_python_model_type, &b, &inputs_dict, &random, &seed,
                         &dims_list, &shapes_list, &rtol, &atol))
    return NULL;
  if (a == b)
    return PyErr_Format (PyExc_ValueError, "diff needs two Model objects (load the file twice to compare it with itself)");
  if (!(rtol >= 0) || !(atol >= 0))
    return PyErr_Format (PyExc_ValueError, "rtol and atol must be non-negative numbers");
  g_autoptr(GHashTable) given_by_name = graft_python_tensors_from_dict (inputs_dict);
  if (given_by_name == NULL || !strings_from_list (dims_list, dim_specs) || !strings_from_list (shapes_list, shape_specs))
    return NULL;
  gboolean numeric = random || g_hash_table_size (given_by_name) > 0 || (inputs_dict != Py_None);

  graft_python_model_lock (a);
  graft_python_model_lock (b);
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
        text = graft_diff_to_json (alignment, structural, runs, rtol, atol, equivalent, align_seconds, NULL);
    }
  Py_END_ALLOW_THREADS
  graft_python_model_unlock (b);
  graft_python_model_unlock (a);
  if (text == NULL)
    return graft_python_raise (error);
  return graft_python_take_string (text);
}

static PyObject *
module_edit_operations (PyObject *module, PyObject *unused)
{
  guint n;
  const GraftEditOperation *operations = graft_edit_operation_list (&n);
  g_autoptr(GPtrArray) ids = g_ptr_array_new ();

  for (guint i = 0; i < n; i++)
    g_ptr_array_add (ids, (gpointer) operations[i].id);
  return graft_python_strings_to_list (ids);
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

/* The module's entry point, which Python finds by name. */
PyMODINIT_FUNC PyInit__graft (void);

PyMODINIT_FUNC
PyInit__graft (void)
{
  if (PyType_Ready (&graft_python_tensor_type) < 0 || PyType_Ready (&graft_python_model_type) < 0)
    return NULL;
  PyObject *module = PyModule_Create (&module_definition);
  if (module == NULL)
    return NULL;
  graft_python_error = PyErr_NewExceptionWithDoc ("graft.GraftError",
                                                "A model Graft cannot read, run, edit, compare or write; the "
                                                "message is Graft's own.", PyExc_RuntimeError, NULL);
  if (graft_python_error == NULL || PyModule_AddObjectRef (module, "GraftError", graft_python_error) < 0
      || PyModule_AddObjectRef (module, "Model", (PyObject *) &graft_python_model_type) < 0
      || PyModule_AddObjectRef (module, "Tensor", (PyObject *) &graft_python_tensor_type) < 0
      || PyModule_AddStringConstant (module, "version", GRAFT_VERSION) < 0)
    {
      Py_DECREF (module);
      return NULL;
    }
  return module;
}
