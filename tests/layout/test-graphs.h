/* IR graphs built in code for the layout tests. */
#pragma once

#include "ir/graph.h"

/* x → n_stages stages of n_blocks blocks; each block is a Conv (with a
 * weight initializer) followed by n_ops - 1 Relu, and a residual Add that
 * also takes the block's input. Node names are ONNX scopes
 * "/stageS/blockB/OpK", so the group tree is root › stageS › blockB. */
GraftGraph *test_graph_new_blocks (guint n_stages, guint n_blocks, guint n_ops);
