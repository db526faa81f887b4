/* Entry point for PyTorch files (zip archives, legacy torch.save streams):
 * TorchScript archives load as a graph; the other kinds are recognised and
 * answered with a message saying what the file is and how to get a
 * TorchScript or ONNX file from it. */
#pragma once

#include <gio/gio.h>
#include <gio/gio.h>
#include "ir/model.h"
#include "ir/model-error.h"

G_BEGIN_DECLS

GraftModel *graft_pytorch_file_load (const char *path,
                                     GCancellable *cancellable,
                                     GError **error);

G_END_DECLS
