/* Hierarchical layout of a graph along its group tree.
 *
 * Each expanded group is laid out on its own by Graphviz dot: its direct
 * nodes plus its child groups as single boxes (collapsed: a label box;
 * expanded: their own layout's size), bottom-up. Values crossing a group's
 * border enter and leave through ports on its first and last rank, and
 * the parent level routes them between the boxes. Per-group layouts are
 * cached by group, the expansion state below it and the options, so
 * expanding one group re-lays out only its ancestors.
 *
 * Groups with a single child and no nodes of their own are merged into one
 * ("layers.0"), groups of a single node are dissolved into their parent.
 *
 * Control flow opens in place: a node with subgraphs (If, Loop, Scan,
 * prim::If, prim::Loop) has a group of its own (GraftSceneNode.inline_group),
 * collapsed by default and shown as the plain node; expanded, it is a
 * cluster with the node on top and a cluster per body ("then", "else",
 * "body") holding the body's nodes, values from outside drawn into them
 * and each body's results out through the node's outputs. A branch that
 * never runs (ir/fixed-branch.h) is marked dead. Expand All opens
 * them; the default expansion does not.
 *
 * Thread-safety: the expansion and option setters may be called from any
 * thread; graft_layout_compute() snapshots them when it starts, so a
 * compute running in a worker thread is not affected by later changes. */
#pragma once

#include <gio/gio.h>
#include "ir/graph.h"
#include <gio/gio.h>
#include "ir/model.h"
#include "ir/model-error.h"
#include "analysis/shape-inference.h"
#include "layout/graphviz.h"
#include "layout/scene.h"

G_BEGIN_DECLS

typedef struct {
  GraftLayoutDirection direction;
  gboolean show_names;
  gboolean show_attributes;
  gboolean show_shapes;
  /* TorchScript's prim::GetAttr / prim::Constant as boxes; FALSE folds
   * them into the nodes that read them (layout/attribute-fold.h). */
  gboolean show_module_attributes;
} GraftLayoutOptions;

/* TB, attributes and shapes shown, names hidden. */
void graft_layout_options_init (GraftLayoutOptions *options);

/* Default expansion: groups are opened level by level from the top while
 * the number of boxes on screen stays within this budget. */
#define GRAFT_LAYOUT_DEFAULT_BUDGET 250

#define GRAFT_TYPE_LAYOUT (graft_layout_get_type ())
G_DECLARE_FINAL_TYPE (GraftLayout, graft_layout, GRAFT, LAYOUT, GObject)

/* graph must outlive the layout and the scenes it computes. */
GraftLayout *graft_layout_new (GraftGraph *graph);
/* Ignores the group tree: the whole graph in one dot run (for comparison). */
GraftLayout *graft_layout_new_flat (GraftGraph *graph);

/* model (borrowed, may be NULL) names the ranges of symbolic dims, shown
 * on the graph input boxes: "s77 ∈ [2, 16]". Set before the first scene. */
void graft_layout_set_model (GraftLayout *self, GraftModel *model);

void graft_layout_set_options (GraftLayout *self, const GraftLayoutOptions *options);
/* The shapes that edges and value boxes are labelled with beside the
 * declared ones (ref taken; NULL: declared shapes only). Like the options,
 * snapshotted when a compute starts. */
void graft_layout_set_inference (GraftLayout *self, GraftInference *inference);

/* group may be any group of the graph's tree; merged and dissolved groups
 * act on the box that shows them. The root is always expanded. */
gboolean graft_layout_get_group_expanded (GraftLayout *self, GraftGroup *group);
void graft_layout_set_group_expanded (GraftLayout *self, GraftGroup *group, gboolean expanded);
void graft_layout_expand_all (GraftLayout *self);
void graft_layout_collapse_all (GraftLayout *self);
void graft_layout_reset_expansion (GraftLayout *self, guint budget);
/* The paths of the control-flow nodes opened in place ("layer1#If_35"),
 * NULL-terminated, to carry them over to an edited copy of the graph; and
 * opening one by such a path (TRUE if it was closed and is found). */
char **graft_layout_dup_expanded_control (GraftLayout *self);
gboolean graft_layout_expand_control_path (GraftLayout *self, const char *path);

/* Expands every group containing node; TRUE if anything changed. */
gboolean graft_layout_expand_to_node (GraftLayout *self, GraftNode *node);

/* Whether value is a constant or shape value read far apart, listed in
 * each reader's box instead of drawn as edges (layout/shared-values.h). */
gboolean graft_layout_is_value_shared (GraftLayout *self, GraftValue *value);

/* Lays out with the current state. progress (may be NULL) is called from
 * the calling thread with the fraction of group layouts done. */
GraftScene *graft_layout_compute (GraftLayout *self, GCancellable *cancellable,
                                  GraftProgressFunc progress, gpointer progress_data,
                                  GError **error);

/* The same in a worker thread; progress is called from the worker. */
void graft_layout_compute_async (GraftLayout *self, GCancellable *cancellable,
                                 GraftProgressFunc progress, gpointer progress_data,
                                 GAsyncReadyCallback callback, gpointer user_data);
GraftScene *graft_layout_compute_finish (GraftLayout *self, GAsyncResult *result, GError **error);

/* Statistics of the most recent compute: group layouts found in the cache
 * and group layouts run through dot. */
void graft_layout_get_last_stats (GraftLayout *self, guint *cache_hits, guint *dot_runs);

G_END_DECLS
