/* What a node box says: op type, key attributes, weight shapes, name;
 * and which colour family an op belongs to. */
#pragma once

#include <cairo.h>
#include "ir/graph.h"
#include "analysis/shape-inference.h"
#include "layout/text.h"
#include "layout/scene.h"

G_BEGIN_DECLS

typedef struct {
  gboolean show_names;
  gboolean show_attributes;
  gboolean show_shapes;
  /* prim::GetAttr / prim::Constant drawn as boxes of their own, not
   * listed in their readers (layout/attribute-fold.h). */
  gboolean show_module_attributes;
} GraftLabelOptions;

GraftOpCategory graft_op_category_for_node (GraftNode *node);

/* Label lines of node, title first (char*, owned by the array); the
 * layout fits them to the box. */
GPtrArray *graft_node_label_texts (GraftNode *node, const GraftLabelOptions *options);

/* The name of node's input slot ("weight", "indices"), else "in2". */
char *graft_label_input_slot (GraftNode *node, guint input);
/* "1.05228" for a scalar, "[1, -1, 64]" for a short integer vector; NULL
 * for anything else (its dtype and shape say more) or bytes not read. */
char *graft_label_small_tensor_values (GraftTensor *tensor);

/* Size of a box showing lines (title font for the first line, body for the
 * others), padding included. */
void graft_label_box_size (char **lines, cairo_t *cr, double *width, double *height);

/* Padding inside node boxes. */
#define GRAFT_LABEL_PAD_X 7.0
#define GRAFT_LABEL_PAD_Y 4.0

/* The tensor-shape text for an edge carrying value, or NULL when nothing is
 * known about its shape; inference (may be NULL) fills in what the file
 * does not declare. */
char *graft_value_shape_label (GraftValue *value, GraftInference *inference);
/* The font role of that label: inferred shapes are set apart from the
 * ones the file declares. */
GraftTextRole graft_value_shape_label_role (GraftValue *value, GraftInference *inference);

G_END_DECLS
