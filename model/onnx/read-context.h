/* State shared by the parts of the ONNX reader while one file is read. */
#pragma once

#include <gio/gio.h>
#include <gio/gio.h>
#include "ir/external-file.h"
#include "ir/model.h"
#include "ir/model-error.h"

G_BEGIN_DECLS

typedef struct {
  const char *display_name;   /* the file, for error messages */
  const char *model_dir;      /* canonical folder of the file; NULL: external data refused */
  GHashTable *external_files; /* canonical path → GraftExternalFile*, each opened once */
  GBytes *file_bytes;         /* the whole (mapped) file: stripped raw_data are slices of it or copies */
  GArray *slices;             /* GraftOnnxSlice, from graft_onnx_wire_strip() */
  GraftExternalFile *source;  /* the file itself, kept open: where copied-out raw_data can be read again; may be NULL */
  GCancellable *cancellable;
  GraftProgressFunc progress;
  gpointer progress_data;
  guint nodes_total;
  guint nodes_done;
} GraftOnnxReadContext;

G_END_DECLS
