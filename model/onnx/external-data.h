/* Where an ONNX tensor's external data lives, checked to stay inside the
 * model's folder. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Resolves location (TensorProto external_data "location") against
 * model_dir, the canonical folder of the model file. Refuses, with
 * GRAFT_MODEL_ERROR_UNSAFE, absolute paths, ".." components and symlinks
 * whose target lies outside model_dir; a missing file is
 * GRAFT_MODEL_ERROR_IO. Returns the canonical path of the data file. */
char *graft_onnx_resolve_external_location (const char *model_dir,
                                            const char *location,
                                            GError **error);

G_END_DECLS
