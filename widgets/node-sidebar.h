/* The details pane beside the canvas: the selected node or value, or the
 * model's own properties when nothing is selected. */
#pragma once

#include <gtk/gtk.h>
#include "ir/model.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_NODE_SIDEBAR (graft_node_sidebar_get_type ())
G_DECLARE_FINAL_TYPE (GraftNodeSidebar, graft_node_sidebar, GRAFT, NODE_SIDEBAR, GtkWidget)

GtkWidget *graft_node_sidebar_new (void);

void graft_node_sidebar_show_model (GraftNodeSidebar *self, GraftModel *model);
/* Inferred types shown beside the declared ones from the next show_*
 * on (ref taken; may be NULL). */
void graft_node_sidebar_set_inference (GraftNodeSidebar *self, GraftInference *inference);
void graft_node_sidebar_show_node (GraftNodeSidebar *self, GraftModel *model, GraftNode *node);
void graft_node_sidebar_show_value (GraftNodeSidebar *self, GraftModel *model, GraftValue *value);
/* One of the model's tensors (a state_dict's, a pickled module's): its
 * values, statistics and Save as .npy. */
void graft_node_sidebar_show_tensor (GraftNodeSidebar *self, GraftModel *model, GraftTensor *tensor);
void graft_node_sidebar_clear (GraftNodeSidebar *self);

/* What the header labels display (for the window title and test reports). */
const char *graft_node_sidebar_get_title (GraftNodeSidebar *self);
const char *graft_node_sidebar_get_subtitle (GraftNodeSidebar *self);
/* The model's File row as displayed, or NULL when the model is not shown. */
const char *graft_node_sidebar_get_file (GraftNodeSidebar *self);

/* Editing: the sidebar's fields (node name, attributes, value name,
 * graph output) ask the window for edits through the win.sidebar-edit
 * action ("(sa{sv})": operation id, parameters). The window shows the
 * details again and passes a refusal here, shown beside the field. */
void graft_node_sidebar_show_edit_error (GraftNodeSidebar *self, const char *message);
/* The refusal shown beside the field key ("name", "attribute:alpha",
 * "add-attribute", "graph-output"), or NULL. */
const char *graft_node_sidebar_get_edit_error (GraftNodeSidebar *self, const char *key);

/* Number of initializer statistics still being computed. */
guint graft_node_sidebar_get_pending_stats (GraftNodeSidebar *self);

G_END_DECLS
