/* Writes a laid-out scene as an SVG document, straight from its boxes,
 * edges and labels: the picture the painter draws for a file (same
 * geometry, colours, fonts and marks), with its text as real <text>
 * elements, selectable and searchable, and the shared colours and fonts
 * in one style sheet. The document is handed out in pieces as it is
 * written, so memory stays that of the scene however big the picture.
 * (Cairo's SVG surface wrote every glyph as a path, and recorded the whole
 * picture before writing it: 1.27 GB and 18 s for 100,000 nodes.) */
#pragma once

#include <glib.h>
#include "layout/painter.h"
#include "layout/scene.h"

G_BEGIN_DECLS

/* Writes length bytes of the document; FALSE with error set if it cannot. */
typedef gboolean (*GraftSvgWriteFunc) (const char *data, gsize length, gpointer user_data, GError **error);

/* The whole scene, as graft_painter_paint() draws it for a picture
 * (options->picture and paint_background are implied). */
gboolean graft_svg_write_scene (GraftScene *scene, const GraftPaintOptions *options, GraftSvgWriteFunc write,
                                gpointer user_data, GError **error);

G_END_DECLS
