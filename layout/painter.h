/* Draws a laid-out scene onto any cairo_t: the canvas and PNG files (SVG
 * and PDF files are written by layout/svg-writer.h and layout/pdf-writer.h,
 * in the same style; PDF through cairo when its fonts cannot be embedded). Only
 * items intersecting the visible rectangle are drawn, and text is left out
 * once it would be too small to read, so a 10k-node scene stays cheap to
 * draw at any zoom. */
#pragma once

#include <cairo.h>
#include "layout/scene.h"
#include "layout/text.h"

G_BEGIN_DECLS

typedef struct {
  gboolean dark;
  gboolean paint_background;
  gboolean picture;        /* for a file: no controls (the groups' collapse boxes) */
  GraftNode *selected_node;
  GraftValue *selected_value;
  /* What a collapsed group's count of marked nodes is called ("3 differ");
   * NULL: the worst level's sign ("3 ⚠"). */
  const char *hidden_marks_noun;
  /* GraftNode* and GraftValue* that Find matched, and the GraftGroup*
   * holding them (a set; may be NULL): drawn with a highlight around them
   * (a collapsed group's box for what it hides), visible at any zoom. */
  GHashTable *found;
} GraftPaintOptions;

/* cr maps scene points to the device already (any translation or scale);
 * visible is the part of the scene to draw, in scene coordinates. */
void graft_painter_paint (cairo_t *cr, GraftScene *scene, const GraftRect *visible,
                          const GraftPaintOptions *options);

/* Where the "+" box of a node whose bodies open in place (node->inline_group)
 * is drawn: a click there opens them. */
void graft_painter_get_inline_mark (const GraftSceneNode *node, GraftRect *mark);

/* Background colour of a style, for widgets drawing around the scene. */
void graft_painter_get_background (gboolean dark, double rgb[3]);

/* The heat ramp of numeric overlays: 0 green (agrees), through yellow and
 * orange, to 1 red; drawn by the painter and by legends. */
void graft_painter_get_heat_colour (double heat, double rgb[3]);

G_END_DECLS
