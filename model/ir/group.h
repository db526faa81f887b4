/* The group tree: module paths (TorchScript "layer1.0.conv1") or name
 * scopes (ONNX "/layer1/0/conv1/Conv") that nodes belong to. Layout lays
 * out each group on its own and can show it collapsed as one box. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GraftNode GraftNode;
typedef struct _GraftGroup GraftGroup;

struct _GraftGroup {
  char *name;          /* last path component: "conv1"; "" for the root */
  char *path;          /* dotted path from the root: "layer1.0.conv1"; "" for the root */
  char *class_name;    /* "torchvision.models.resnet.BasicBlock", or NULL */
  GraftGroup *parent;  /* NULL for the root */
  GPtrArray *children; /* GraftGroup*, owned, in first-use order */
  GPtrArray *nodes;    /* GraftNode*, not owned: nodes directly in this group */
  guint total_nodes;   /* nodes here and in all descendants */
  /*< private >*/
  GHashTable *child_by_name;
};

GraftGroup *graft_group_new_root (void);
void graft_group_free (GraftGroup *group);  /* frees the subtree */

/* Finds or creates the child named name. */
GraftGroup *graft_group_ensure_child (GraftGroup *group, const char *name);

/* Finds or creates the descendant for a path of components. */
GraftGroup *graft_group_ensure_path (GraftGroup *root, const char *const *components, guint n_components);

GraftGroup *graft_group_find_path (GraftGroup *root, const char *path);

/* Puts node into group (node->group is set; it must not be in a group yet). */
void graft_group_add_node (GraftGroup *group, GraftNode *node);

guint graft_group_get_depth (const GraftGroup *group);

/* The group name for a module scope as torch writes it, which repeats the
 * parent's ("layer1.0" under "layer1" → "0"), so the tree reads
 * layer1 › 0 › conv1. */
const char *graft_group_component_for_scope (const char *scope, const char *parent_scope);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftGroup, graft_group_free)

G_END_DECLS
