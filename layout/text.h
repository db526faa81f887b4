/* Fonts and text measurement shared by layout (box sizes) and painter
 * (drawing), so a label measured at layout time is exactly as wide when
 * drawn and is never cut off.
 *
 * Plain cairo "toy" text with metric hinting off: widths then scale
 * linearly with the zoom, which the canvas relies on. */
#pragma once

#include <cairo.h>
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_TEXT_TITLE,        /* node op type */
  GRAFT_TEXT_BODY,         /* node attributes, weights, name */
  GRAFT_TEXT_GROUP_TITLE,  /* cluster header, collapsed group name */
  GRAFT_TEXT_EDGE,         /* tensor shape on an edge, as the file declares it */
  GRAFT_TEXT_EDGE_INFERRED,/* tensor shape on an edge, found by shape inference */
} GraftTextRole;

/* Selects the font of role on cr. */
void graft_text_select (cairo_t *cr, GraftTextRole role);

double graft_text_get_size (GraftTextRole role);
double graft_text_get_line_height (GraftTextRole role);

/* Advance width of text in the font currently selected on cr. */
double graft_text_measure (cairo_t *cr, const char *text);

/* text, or its longest prefix followed by "…" that fits max_width. */
char *graft_text_elide (cairo_t *cr, const char *text, double max_width);

/* A context on a tiny image surface, for measuring only. */
cairo_t *graft_text_context_new (void);

#define GRAFT_TEXT_N_ROLES (GRAFT_TEXT_EDGE_INFERRED + 1)

/* The widths of the texts one writer of a document (layout/svg-writer.h,
 * layout/pdf-writer.h) draws, remembered without a lock: labels repeat
 * ("Conv", "batch×64×56×56") by the thousand, and one lookup here costs
 * less than graft_text_measure()'s locked one (the 40,000-node probe's SVG:
 * 0.79 -> 0.41 s). For one thread. */
typedef struct _GraftTextWidths GraftTextWidths;

GraftTextWidths *graft_text_widths_new (void);
void graft_text_widths_free (GraftTextWidths *widths);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTextWidths, graft_text_widths_free)
/* What graft_text_measure() gives for text in role's font. */
double graft_text_widths_measure (GraftTextWidths *widths, GraftTextRole role, const char *text);
/* A measuring context with role's font selected (owned by widths). */
cairo_t *graft_text_widths_get_context (GraftTextWidths *widths, GraftTextRole role);

G_END_DECLS
