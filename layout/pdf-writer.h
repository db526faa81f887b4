/* Writes a laid-out scene as a PDF document, straight from its boxes,
 * edges and labels: the picture the painter draws for a file (same
 * geometry, colours and marks), at full size, tiled into pages as
 * export.h says. Text is real text in the fonts the layout measured with,
 * embedded as subsets (layout/pdf-font.h), with a ToUnicode map so it can
 * be selected and searched. Pages are written as they are drawn, each with
 * only the items its grid cells hold, so memory stays that of the scene.
 * (Through cairo's PDF surface the 100,000-node probe's render took 11.4 s
 * of CPU, half of it in printf's number formatting and zlib; now 1.8 s.) */
#pragma once

#include <glib.h>
#include "layout/painter.h"
#include "layout/scene.h"

G_BEGIN_DECLS

/* Writes length bytes of the document; FALSE with error set if it cannot. */
typedef gboolean (*GraftPdfWriteFunc) (const char *data, gsize length, gpointer user_data, GError **error);

/* The whole scene, as graft_painter_paint() draws it for a picture
 * (options->picture and paint_background are implied). Fails with
 * G_IO_ERROR_NOT_SUPPORTED, before writing anything, if the text's fonts
 * cannot be embedded (not TrueType or OpenType files). */
gboolean graft_pdf_write_scene (GraftScene *scene, const GraftPaintOptions *options, GraftPdfWriteFunc write,
                                gpointer user_data, GError **error);

G_END_DECLS
