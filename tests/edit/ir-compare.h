/* Deep comparison of two models' IR, for round-trip and undo tests. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

/* TRUE when a and b have the same metadata, opsets, functions and graphs
 * (nodes, attributes, values with their declared types, initializer
 * bytes). Otherwise appends the first difference to why. */
gboolean graft_test_models_equal (GraftModel *a, GraftModel *b, GString *why);
gboolean graft_test_graphs_equal (GraftGraph *a, GraftGraph *b, const char *where, GString *why);

G_END_DECLS
