/* The model file formats Graft knows: one row each, read by graft-cli
 * (which writer an output name picks, what it refuses), the GUI (file
 * dialogs, recent files, Save), the Python module and the tests. Reading
 * chooses by content (loader.h); writing chooses by the output's
 * extension. */
#pragma once

#include <glib.h>
#include "ir/model.h"

G_BEGIN_DECLS

typedef gboolean (*GraftFormatWriteFunc) (GraftModel *model, const char *path, gboolean overwrite_source,
                                          GError **error);

typedef struct {
  const char *id;                  /* "onnx", "pt2": --format NAME */
  const char *title;               /* "ONNX model" */
  const char *mime_type;           /* as data/org.graft.Graft.mime.xml declares it */
  const char *const *extensions;   /* ".onnx", …, NULL-terminated; the first is the one suggested */
  /* The IR formats this writer saves (a GraftModelFormat bit each):
   * ONNX takes any IR (TorchScript and .pt2 are lowered first by the
   * caller); .pt2 only a program read from a .pt2. 0: read-only. */
  guint writes_from;
  GraftFormatWriteFunc write;      /* NULL: read-only */
} GraftFormat;

#define GRAFT_FORMAT_FROM(model_format) (1u << (model_format))

/* Every format, in the order the file dialogs list them; ends with a row
 * whose id is NULL. */
const GraftFormat *graft_formats (void);
const GraftFormat *graft_format_lookup (const char *id);
/* The format whose extension path has (case-insensitive), or NULL. */
const GraftFormat *graft_format_for_path (const char *path);
/* TRUE if path has the extension of a format Graft opens. */
gboolean graft_format_is_model_path (const char *path);
/* "*.onnx", "*.pt", … of every format (free with g_strfreev). */
char **graft_format_list_patterns (void);

/* Saves model to path in the format of path's extension (or format_id
 * when given; ONNX for a name of no known format), through that format's
 * writer: atomically, never over the file the model was read from unless
 * overwrite_source. Refuses a format Graft only reads (.pt), and a model
 * that format cannot hold (an ONNX model as .pt2), naming the formats it
 * can be saved as. */
gboolean graft_format_save (GraftModel *model, const char *path, const char *format_id, gboolean overwrite_source,
                            GError **error);

G_END_DECLS
