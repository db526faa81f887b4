/* Reference values keyed by value name: a folder of .npy files (dumps of
 * onnxruntime with every value marked as an output, of PyTorch forward
 * hooks, of `graft-cli run -o`), each named by its value's name made safe
 * for a file name (runtime/tensor-file.h), or the values of a second model
 * run in Graft's runtime. */
#pragma once

#include "runtime/runtime.h"

G_BEGIN_DECLS

/* The .npy files of folder that name a value of graph (value name →
 * GraftRtTensor*, owned). Only DIR/<stem>.npy is read for each value; an
 * unreadable or malformed file is an error naming it. A folder holding no
 * file for any value of the graph is an error too: it is the wrong folder. */
GHashTable *graft_reference_values_read_folder (GraftGraph *graph, const char *folder, GError **error);

/* Every value a run of model on inputs (input name → GraftRtTensor*,
 * borrowed) computes, with the inputs themselves (value name →
 * GraftRtTensor*, owned). A run that fails is an error. */
GHashTable *graft_reference_values_run_model (GraftModel *model, GHashTable *inputs, GError **error);

/* The reference a user names for a model (debug reduce --mismatch REF, the
 * GUI's Reduce dialog): a folder of .npy files read for graph's values,
 * else a model file loaded, taken to ONNX (input_shapes as in
 * graft_model_as_onnx()) and run on inputs. */
GHashTable *graft_reference_values_load (GraftGraph *graph, const char *path, GHashTable *inputs,
                                         GHashTable *input_shapes, GError **error);

/* model as ONNX, what the debugging tools read: an ONNX model itself (a
 * new reference), a TorchScript or .pt2 model lowered to ONNX (which keeps
 * model alive: it shares its tensors). input_shapes (name → GraftShape*,
 * may be NULL) gives TorchScript inputs their shapes. A weights-only file
 * is an error. */
GraftModel *graft_model_as_onnx (GraftModel *model, GHashTable *input_shapes, GError **error);

G_END_DECLS
