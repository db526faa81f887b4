/* The operations behind GraftEdit (the other files of model/edit). Each works on the
 * model's main graph in place and adds char* notes; on error the caller
 * restores its snapshot. */
#pragma once

#include "edit/edit.h"
#include "analysis/baked-shape.h"

G_BEGIN_DECLS

/* readings (may be NULL): how to read merged dims the repair could split
 * two ways, and where it met them (analysis/baked-shape.h). */
gboolean graft_edit_do_make_dim_dynamic (GraftModel *model, const char *input, int axis, const char *symbol,
                                         GraftSplitReadings *readings, GPtrArray *notes, GError **error);
gboolean graft_edit_do_set_input_shape (GraftModel *model, const char *input, int rank, const gint64 *dims,
                                        GPtrArray *notes, GError **error);
gboolean graft_edit_do_delete_node (GraftModel *model, const char *node, GPtrArray *notes, GError **error);
gboolean graft_edit_do_bypass_node (GraftModel *model, const char *node, GPtrArray *notes, GError **error);
gboolean graft_edit_do_extract (GraftModel *model, const char *const *inputs, const char *const *outputs,
                                GPtrArray *notes, GError **error);

/* The graph input called name, or NULL with an error listing the inputs. */
GraftValue *graft_edit_find_input (GraftGraph *graph, const char *name, GError **error);
GraftNode *graft_edit_find_node (GraftGraph *graph, const char *name, GError **error);

G_END_DECLS
