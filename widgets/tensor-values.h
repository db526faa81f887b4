/* The numbers of a constant tensor as the sidebar shows them: the first
 * values, a scrollable table for small tensors, and the statistics line. */
#pragma once

#include <gtk/gtk.h>
#include "ir/tensor.h"

G_BEGIN_DECLS

/* Tensors up to this many elements get the whole table. */
#define GRAFT_TENSOR_TABLE_MAX_ELEMENTS 1024
/* Values listed for bigger tensors. */
#define GRAFT_TENSOR_PREVIEW_ELEMENTS 16

/* "0.1, -0.25, 3, … (first 16 of 4,096)"; the data must be loaded. */
char *graft_tensor_values_preview (GraftTensor *tensor);

/* A grid of every element (rows are the leading indices, columns the last
 * dim; a vector wraps every 8), in a scroller that stops growing at a few
 * rows. The data must be loaded and the tensor at most
 * GRAFT_TENSOR_TABLE_MAX_ELEMENTS long. */
GtkWidget *graft_tensor_values_table_new (GraftTensor *tensor);

/* "min … · max … · mean … · std …\nsparsity …" */
char *graft_tensor_stats_format (const GraftTensorStats *stats, GraftTensor *tensor);

G_END_DECLS
