/* torch.save files (zip archives with data.pkl, and the legacy pickle
 * stream): the tensors of a state_dict, the module tree of a pickled
 * nn.Module; any other object is refused with how to export a model. */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"
#include "ir/model-error.h"
#include "pytorch/torch-archive.h"

G_BEGIN_DECLS

#define GRAFT_TORCH_HOW_TO_EXPORT \
  "To open it in Graft, load the model in Python and save a TorchScript or ONNX file: " \
  "torch.jit.save(torch.jit.script(model), \"model.pt\"), or " \
  "torch.jit.save(torch.jit.trace(model, example_inputs), \"model.pt\"), or " \
  "torch.onnx.export(model, example_inputs, \"model.onnx\")."

/* A torch.save zip archive (data.pkl without code/). */
GraftModel *graft_torch_save_load (GraftTorchArchive *archive, const char *path, GError **error);
/* The legacy (pre-1.6) torch.save stream: always NULL, with an error
 * saying what the file holds and how to save it again. */
GraftModel *graft_torch_save_describe_legacy (const char *path, GError **error);
/* NULL, with a GRAFT_MODEL_ERROR_UNSUPPORTED error "PATH: MESSAGE". */
GraftModel *graft_torch_save_unsupported (GError **error, const char *path, const char *format, ...)
  G_GNUC_PRINTF (3, 4);

G_END_DECLS
