/* Where the canvas is in the model: main graph › If “cond” › then_branch.
 * Each outer graph is a button; a body whose node has sibling bodies
 * (If's then/else) is a drop-down to switch between them. */
#pragma once

#include <gtk/gtk.h>
#include "ir/graph.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_BREADCRUMBS (graft_breadcrumbs_get_type ())
G_DECLARE_FINAL_TYPE (GraftBreadcrumbs, graft_breadcrumbs, GRAFT, BREADCRUMBS, GtkWidget)

void graft_breadcrumbs_set_graph (GraftBreadcrumbs *self, GraftGraph *graph);

G_END_DECLS
