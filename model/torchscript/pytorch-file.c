#include "torchscript/pytorch-file.h"

GraftModel *
graft_pytorch_file_load (const char *path, GCancellable *cancellable, GError **error)
{
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "%s: PyTorch files cannot be opened by this build yet", path);
  return NULL;
}
