/* Display strings shared by the sidebar, Find and the tests: one wording
 * for a value's type everywhere in the window. */
#pragma once

#include "ir/graph.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

/* "float32 · 1×3×224×224", "seq(tensor(float))", "int64 · ?"; uses the
 * inferred type (inference may be NULL) when the file declares none. */
char *graft_value_format_type (const GraftValue *value, GraftInference *inference);

/* "Conv “/layer1/0/conv1/Conv”" or just "Conv" for unnamed nodes. */
char *graft_node_format_label (const GraftNode *node);

/* Path from the main graph to graph, outermost first (GraftGraph*). */
GPtrArray *graft_graph_get_ancestry (GraftGraph *graph);

/* Display name of a graph: its own name, the name of the attribute that
 * holds it, or "main graph". */
char *graft_graph_format_name (GraftGraph *graph);

/* "main graph › If “branch” › then_branch": the graph's ancestry with
 * the nodes that hold each body. */
char *graft_graph_format_location (GraftGraph *graph);

G_END_DECLS
