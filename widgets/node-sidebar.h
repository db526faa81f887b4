/* The details pane beside the canvas: the selected node or value, or the
 * model's own properties when nothing is selected. */
#pragma once

#include <gtk/gtk.h>
#include "ir/model.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_NODE_SIDEBAR (graft_node_sidebar_get_type ())
G_DECLARE_FINAL_TYPE (GraftNodeSidebar, graft_node_sidebar, GRAFT, NODE_SIDEBAR, GtkWidget)

void graft_node_sidebar_show_model (GraftNodeSidebar *self, GraftModel *model);
/* Inferred types shown beside the declared ones from the next show_*
 * on (ref taken; may be NULL). */
void graft_node_sidebar_set_inference (GraftNodeSidebar *self, GraftInference *inference);
void graft_node_sidebar_show_node (GraftNodeSidebar *self, GraftModel *model, GraftNode *node);
void graft_node_sidebar_show_value (GraftNodeSidebar *self, GraftModel *model, GraftValue *value);
/* One of the model's tensors (a state_dict's, a pickled module's): its
 * values, statistics and Save as .npy. */
void graft_node_sidebar_show_tensor (GraftNodeSidebar *self, GraftModel *model, GraftTensor *tensor);

/* Editing: the sidebar's fields (node name, attributes, value name,
 * graph output) ask the window for edits through the win.sidebar-edit
 * action ("(sa{sv})": operation id, parameters). The window shows the
 * details again and passes a refusal here, shown beside the field. */
void graft_node_sidebar_show_edit_error (GraftNodeSidebar *self, const char *message);

G_END_DECLS
