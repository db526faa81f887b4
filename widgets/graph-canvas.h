/* The graph canvas: shows one graph of a model laid out hierarchically
 * (layout/), drawn by the shared painter, with pan, zoom, selection and
 * group expansion through event controllers. Layout runs in a worker
 * thread; "busy" and "progress" report it. */
#pragma once

#include <gtk/gtk.h>
#include "ir/model.h"
#include "analysis/shape-inference.h"
#include "layout/scene.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_GRAPH_CANVAS (graft_graph_canvas_get_type ())
G_DECLARE_FINAL_TYPE (GraftGraphCanvas, graft_graph_canvas, GRAFT, GRAPH_CANVAS, GtkWidget)

GtkWidget *graft_graph_canvas_new (void);

/* Shows graph (the model's main graph or one of its subgraphs); the model
 * is kept alive while shown. Layout is asynchronous. */
void graft_graph_canvas_set_graph (GraftGraphCanvas *self, GraftModel *model, GraftGraph *graph);
GraftGraph *graft_graph_canvas_get_graph (GraftGraphCanvas *self);
/* Inferred shapes for the edge labels (ref taken; NULL: declared shapes
 * only), kept across set_graph; a change lays the graph out again. */
void graft_graph_canvas_set_inference (GraftGraphCanvas *self, GraftInference *inference);

GraftNode *graft_graph_canvas_get_selected_node (GraftGraphCanvas *self);
GraftValue *graft_graph_canvas_get_selected_value (GraftGraphCanvas *self);
/* Selects node (NULL clears), expands the groups it is in and centres it. */
void graft_graph_canvas_select_node (GraftGraphCanvas *self, GraftNode *node);
/* Selects the node or value drawn at widget point (x, y), as a click
 * does (a group is not toggled); FALSE when nothing selectable is there. */
gboolean graft_graph_canvas_select_at (GraftGraphCanvas *self, double x, double y);
/* Selects value (NULL clears): its edges are highlighted and brought into view. */
void graft_graph_canvas_select_value (GraftGraphCanvas *self, GraftValue *value);

/* Marks for diagnostics and timings: the box of node (or the graph
 * input/output box of value, and the edges carrying value) is outlined in level's colour (1 info, 2
 * warning, 3 error) with badge (may be NULL) at its corner. Marks may name
 * items of any graph of the model; they stay across layouts and graphs
 * until cleared (the window clears them when the model changes). */
/* Whether value is listed at each of its readers instead of drawn as
 * edges (a constant read far apart, layout/shared-values.h). */
gboolean graft_graph_canvas_is_value_shared (GraftGraphCanvas *self, GraftValue *value);

void graft_graph_canvas_clear_marks (GraftGraphCanvas *self);
void graft_graph_canvas_mark_node (GraftGraphCanvas *self, GraftNode *node, guint level, const char *badge);
void graft_graph_canvas_mark_value (GraftGraphCanvas *self, GraftValue *value, guint level, const char *badge);
/* Resting the pointer on a node's box shows a tooltip: its op and name,
 * then its badge in full and what its tint means. */
/* A marked node inside a collapsed group has no box: the group's box is
 * outlined in the worst level's colour with the count as its badge
 * ("12 ⚠"), updated with the marks and the expansion. What the current
 * scene shows of the marks is counted by the read-only properties
 * "n-marked" (boxes outlined), "n-marked-groups" (collapsed groups
 * outlined) and "n-hidden-marked" (the marked nodes those hide); the
 * canvas's accessible description says the same. */

/* What the count on a collapsed group's badge is called ("3 differ"; NULL,
 * the default: the worst level's sign, "3 ⚠"). */
void graft_graph_canvas_set_hidden_marks_noun (GraftGraphCanvas *self, const char *noun);
/* A numeric overlay (cleared with the marks): node's box gets a stripe in
 * the heat colour (graft_painter_get_heat_colour(), 0 agrees … 1 far
 * off); a collapsed group hiding heated nodes shows the hottest. */
void graft_graph_canvas_set_node_heat (GraftGraphCanvas *self, GraftNode *node, double heat);
gboolean graft_graph_canvas_get_node_heat (GraftGraphCanvas *self, GraftNode *node, double *heat);
/* A translucent tint over a node's box (the partition a deployment target
 * runs it in), note saying what it means ("Runs on openvino, partition 1
 * of 2"; may be NULL); NULL tint removes it. Cleared with the marks. */
void graft_graph_canvas_set_node_tint (GraftGraphCanvas *self, GraftNode *node, const GdkRGBA *tint,
                                       const char *note);
/* "n-heated" and "n-heated-groups" count the node boxes and collapsed
 * groups of the current scene drawn with heat. */

/* Find's matches (GraftNode* and GraftValue* of the graph shown; NULL or
 * empty: none), highlighted at any zoom. */
void graft_graph_canvas_set_found (GraftGraphCanvas *self, GPtrArray *items);
/* "n-found-shown" counts the boxes of the current scene drawn as matches
 * (collapsed groups holding a match included). */
/* Centres the selection at a readable zoom (zooming in if the view is
 * smaller, never out), now or once the layout opening its groups lands. */
void graft_graph_canvas_show_selection_readable (GraftGraphCanvas *self);
/* The paths ("layer1.0") of the groups expanded now, to carry them over
 * to an edited copy of the graph (NULL-terminated; empty without a graph);
 * and expanding such paths in the graph shown (unknown paths are skipped). */
char **graft_graph_canvas_dup_expanded_groups (GraftGraphCanvas *self);
void graft_graph_canvas_expand_groups (GraftGraphCanvas *self, const char *const *paths);
/* Exactly these groups expanded (unknown paths skipped), the others
 * collapsed: how a linked view mirrors the other's. "expansion-changed"
 * says the user opened or closed groups (not this call). */
void graft_graph_canvas_set_expanded_groups (GraftGraphCanvas *self, const char *const *paths);
/* The view: zoom (screen pixels per point), the part of the scene shown,
 * and the scene's bounds (FALSE while there is no scene). */
double graft_graph_canvas_get_zoom (GraftGraphCanvas *self);
gboolean graft_graph_canvas_get_view (GraftGraphCanvas *self, GraftRect *visible, GraftRect *scene_bounds);
/* The box standing for node in the current scene (its own, or the
 * collapsed group hiding it), in scene points; FALSE if there is none. */
gboolean graft_graph_canvas_get_node_bounds (GraftGraphCanvas *self, GraftNode *node, GraftRect *rect);
void graft_graph_canvas_scene_to_screen (GraftGraphCanvas *self, double x, double y, double *screen_x,
                                         double *screen_y);
/* Shows the scene at zoom with its point (x, y) at widget point
 * (screen_x, screen_y): how a linked view follows another. */
void graft_graph_canvas_set_view (GraftGraphCanvas *self, double zoom, double x, double y, double screen_x,
                                  double screen_y);
/* Writes the graph as shown (expansion state, options, style) to an SVG,
 * PNG or PDF file chosen by the extension. */
gboolean graft_graph_canvas_export (GraftGraphCanvas *self, const char *path, GError **error);

G_END_DECLS
