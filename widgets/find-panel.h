/* Find (Ctrl+F): a search entry over a list of matching nodes and values. */
#pragma once

#include <gtk/gtk.h>
#include "ir/graph.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_FIND_PANEL (graft_find_panel_get_type ())
G_DECLARE_FINAL_TYPE (GraftFindPanel, graft_find_panel, GRAFT, FIND_PANEL, GtkWidget)

/* The graph searched, with all its subgraphs; NULL clears. */
void graft_find_panel_set_graph (GraftFindPanel *self, GraftGraph *graph);
/* Inferred shapes to match besides the declared ones (ref taken; may be
 * NULL); of the graph set. */
void graft_find_panel_set_inference (GraftFindPanel *self, GraftInference *inference);
void graft_find_panel_set_text (GraftFindPanel *self, const char *text);
void graft_find_panel_focus_entry (GraftFindPanel *self);

/* The GraftNode* or GraftValue* of each hit listed (at most the first 300). */
GPtrArray *graft_find_panel_dup_matched_items (GraftFindPanel *self);

G_END_DECLS
