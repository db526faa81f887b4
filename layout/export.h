/* Writes a scene to an SVG, PNG or PDF file (chosen by the extension),
 * atomically: a temporary file in the output's folder, renamed over the
 * target once complete. */
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

/* Largest PNG side and pixel count; bigger scenes are scaled down. */
#define GRAFT_EXPORT_PNG_MAX_SIDE 16000
#define GRAFT_EXPORT_PNG_MAX_PIXELS (24.0 * 1000 * 1000)

/* Scale (device units per point) a PNG of this scene is drawn at. */
double graft_export_png_scale (const GraftRect *bounds);

gboolean graft_scene_export (GraftScene *scene, const GraftPaintOptions *options, const char *path,
                             GError **error);

G_END_DECLS
