/* Writes a scene to an SVG, PNG or PDF file (chosen by the extension),
 * atomically (ir/atomic-save.h): a temporary file in the output's folder,
 * renamed over the target once complete, with the replaced file's mode and
 * owner; a pipe (-o /dev/stdout) is written in place. */
#pragma once

#include <glib.h>
#include "layout/painter.h"
#include "layout/scene.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_EXPORT_SVG,
  GRAFT_EXPORT_PNG,
  GRAFT_EXPORT_PDF,
} GraftExportFormat;

/* FALSE with an error naming the extension if it is not .svg/.png/.pdf. */
gboolean graft_export_format_from_path (const char *path, GraftExportFormat *format, GError **error);

/* Largest PNG side (cairo's image limit is 32767) and pixel count; bigger
 * scenes are scaled down, but never below GRAFT_EXPORT_PNG_MIN_SCALE (one
 * pixel per point, where 8-point edge labels still read): a scene that
 * would need less is refused, as SVG and PDF hold it at full size. */
#define GRAFT_EXPORT_PNG_MAX_SIDE 32000
#define GRAFT_EXPORT_PNG_MAX_PIXELS (24.0 * 1000 * 1000)
#define GRAFT_EXPORT_PNG_MIN_SCALE 1.0
/* PDF pages stay within what viewers open (200 inches); a bigger scene is
 * drawn at full size on several pages, row by row. */
#define GRAFT_EXPORT_PDF_MAX_PAGE_SIDE 14400.0

/* Scale (device units per point) a PNG of this scene is drawn at; below
 * GRAFT_EXPORT_PNG_MIN_SCALE if the scene is too big for a readable PNG. */
double graft_export_png_scale (const GraftRect *bounds);
/* Pages a PDF of this scene has. */
guint graft_export_pdf_n_pages (const GraftRect *bounds);

gboolean graft_scene_export (GraftScene *scene, const GraftPaintOptions *options, const char *path,
                             GError **error);

G_END_DECLS
