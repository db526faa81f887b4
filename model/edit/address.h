/* Addresses of nodes and values that survive a re-export: what a recipe
 * records so that a step finds its target again when names changed.
 *
 * A node address is a dictionary (a{sv}) of
 *   name      the node's name
 *   op        "onnx::Conv"
 *   group     its group path ("layer1.0.conv1"), "" for the root group
 *   index     its position among the nodes of that op in that group
 *   op_index  its position among the nodes of that op in the graph
 *   op_count  how many nodes of that op the graph had
 * and is resolved by name (when the node of that name has the same op),
 * then by group + op + index, then by op + op_index when the graph still
 * has op_count nodes of that op. A value address has its name and one of
 *   producer + output   the node that writes it (a node address) and the slot
 *   input               its position among the graph inputs without data
 *   consumer + slot     for data without a producer: a node reading it and the slot
 */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

GVariant *graft_node_address_new (GraftNode *node);
/* NULL with an error naming what was looked for and why nothing fits. */
GraftNode *graft_node_address_resolve (GraftGraph *graph, GVariant *address, GError **error);

GVariant *graft_value_address_new (GraftValue *value);
GraftValue *graft_value_address_resolve (GraftGraph *graph, GVariant *address, GError **error);

/* "node '/layer1/0/conv1/Conv' (onnx::Conv, group layer1.0.conv1, #0)" */
char *graft_address_describe (GVariant *address);

G_END_DECLS
