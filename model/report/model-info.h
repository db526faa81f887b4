/* What a model file is: its interface, opsets, metadata and which
 * operators it uses, for graft-cli info (text and --json) and the Python
 * module's Model.info (the same JSON object). Works on any GraftModel,
 * whatever its format; nothing is run. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef struct {
  const char *op;
  guint count;
} GraftOpCount;

/* Op histogram (GraftOpCount) over the graph and all its nested
 * subgraphs, by name, or by count (most used first). */
GArray *graft_op_histogram (GraftGraph *graph, gboolean by_count);

/* Graph inputs that are not initializers (old ONNX files list weights as
 * inputs); the values are borrowed. */
GPtrArray *graft_graph_list_real_inputs (GraftGraph *graph);

/* Elements and bytes of a graph's initializers (from their shapes: nothing
 * is read, external data included). */
void graft_graph_count_weights (GraftGraph *graph, gint64 *elements, guint64 *bytes);

/* The JSON object of graft-cli info --json (pretty-printed). */
char *graft_model_info_to_json (GraftModel *model);

G_END_DECLS
