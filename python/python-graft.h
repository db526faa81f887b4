/* The parts of graft._graft (python/) shared between its files: the
 * GraftError exception, the Tensor type (runtime outputs through the
 * buffer protocol, arrays in) and the Model type. */
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include "ir/model.h"
#include "edit/edit-history.h"
#include "runtime/rt-tensor.h"
#include "runtime/runtime.h"

/* graft.GraftError, whose message is Graft's own. */
extern PyObject *graft_python_error;

/* Raises GraftError with error's message. Returns NULL. */
PyObject *graft_python_raise (GError *error);
/* A str from text, which is freed. */
PyObject *graft_python_take_string (char *text);
/* A list of str from char* (strings may be NULL: an empty list). */
PyObject *graft_python_strings_to_list (GPtrArray *strings);

/* tensor-object.c */
extern PyTypeObject graft_python_tensor_type;
/* A Python value for a runtime output: a Tensor for numeric dtypes, a
 * (list of str, shape) pair for strings, a list for sequences, None for
 * an empty optional. */
PyObject *graft_python_wrap_output (GraftRtTensor *t);
/* dict[str, buffer] → name → GraftRtTensor* (owned, reading the buffers
 * in place when they allow); NULL with an exception. None: empty. */
GHashTable *graft_python_tensors_from_dict (PyObject *dict);

/* model-object.c */
typedef struct {
  PyObject_HEAD
  GraftModel *model;
  GraftEditHistory *history;   /* the edits applied through this object, for recipes */
  GraftRuntime *runtime;       /* built at the first run, dropped by edits */
  PyThread_type_lock lock;     /* held (without the GIL) while a call uses model */
} GraftPythonModel;

extern PyTypeObject graft_python_model_type;
/* Takes model. */
PyObject *graft_python_model_wrap (GraftModel *model);
/* Takes the model's lock, waiting without the GIL; the GIL is held again
 * when it returns. */
void graft_python_model_lock (GraftPythonModel *self);
void graft_python_model_unlock (GraftPythonModel *self);
