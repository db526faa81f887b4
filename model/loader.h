/* Opens any model file Graft understands, choosing the reader by content
 * (not by extension). */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"
#include "ir/model-error.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_FILE_KIND_UNKNOWN = 0,
  GRAFT_FILE_KIND_ONNX,
  GRAFT_FILE_KIND_ZIP,             /* a PyTorch zip archive of some kind */
  GRAFT_FILE_KIND_TORCH_LEGACY,    /* pre-1.6 torch.save pickle stream */
  GRAFT_FILE_KIND_TORCH_TAR,       /* torch ≤ 0.3 tar */
  GRAFT_FILE_KIND_FLATBUFFER_MOBILE,
  GRAFT_FILE_KIND_TORCH_PREVIEW,   /* "PYTORCH1" container of a preview release */
  GRAFT_FILE_KIND_PICKLE,          /* a bare Python pickle (protocol 2-5) */
  GRAFT_FILE_KIND_EXECUTORCH,      /* an ExecuTorch program (.pte): flatbuffer "ET.." */
} GraftFileKind;

GraftFileKind graft_sniff_file_kind (const guint8 *head, gsize head_len);

/* cancellable may be NULL. Progress, if given, is called with a fraction in [0, 1]. */

GraftModel *graft_model_load (const char *path,
                              GCancellable *cancellable,
                              GraftProgressFunc progress,
                              gpointer progress_data,
                              GError **error);

G_END_DECLS
