/* The look of a drawn graph, shared by the painter (cairo: the canvas,
 * PNG and PDF) and the SVG writer, so that every picture of a scene has
 * the same colours and puts its text in the same places. */
#pragma once

#include <glib.h>
#include "layout/scene.h"
#include "layout/text.h"

G_BEGIN_DECLS

typedef struct {
  double r, g, b;
} GraftRgb;

#define GRAFT_RGB(hex) { ((hex) >> 16 & 0xff) / 255.0, ((hex) >> 8 & 0xff) / 255.0, ((hex) & 0xff) / 255.0 }

typedef struct {
  GraftRgb background;
  GraftRgb text;
  GraftRgb text_muted;
  GraftRgb edge;
  GraftRgb accent;
  GraftRgb group_fill[2];     /* alternating by depth */
  GraftRgb group_border;
  GraftRgb group_text;
  GraftRgb collapsed_fill;
  GraftRgb label_halo;
  GraftRgb found;             /* Find's matches, as a text editor's search highlight */
  GraftRgb severity[4];       /* none, info, warning, error */
  GraftRgb fill[GRAFT_OP_CATEGORY_N];
  GraftRgb border[GRAFT_OP_CATEGORY_N];
} GraftPalette;

const GraftPalette *graft_palette_get (gboolean dark);

/* From the top of a line box of role to the baseline of its text. */
double graft_style_get_baseline_offset (GraftTextRole role);

/* An expanded group's header: "layer1.0 · BasicBlock". */
char *graft_style_dup_group_header (const GraftSceneGroup *group);

/* "12 ⚠": how many marked nodes a collapsed group hides, and the sign of
 * the worst level (or what the marks are called, noun: "12 differ"). */
char *graft_style_dup_hidden_marks (const GraftSceneGroup *group, const char *noun);

/* A badge is a pill of GRAFT_TEXT_EDGE text whose right end is at right,
 * straddling a box's top edge at top: its pill for text text_width
 * wide, and where the text's baseline starts. */
void graft_style_get_badge (double right, double top, double text_width, GraftRect *pill, GraftPoint *text);

/* An edge's arrowhead: a triangle from the curve's end, from, to tip,
 * 6.4 points wide; FALSE if the two are too close to give it a direction. */
gboolean graft_style_get_arrow (GraftPoint from, GraftPoint tip, GraftPoint corners[3]);

/* A badge's text is dark on light colours (warning yellow), white on the others. */
const GraftRgb *graft_style_get_badge_text_colour (const GraftRgb *badge);

G_END_DECLS
