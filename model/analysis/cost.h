/* Per-node cost from inferred shapes, and the memory plan of a run.
 *
 * MACs are the multiply-accumulates of the products: Conv/ConvTranspose
 * (and their integer forms), MatMul, Gemm and their aten spellings. FLOPs
 * count two per MAC, one per output element of element-wise and
 * normalisation ops, one per window element of pooling and one per input
 * element of reductions; ops that only move or reshape data count none.
 * Parameter bytes are the initializers (and constants computed from them)
 * a node reads, each counted once, at its first reader; activation bytes
 * the node's outputs.
 *
 * The memory plan is Graft's runtime's: the main graph's nodes in
 * topological order, constants held apart, every value freed after its
 * last reader (graph outputs and values nothing reads are kept to the
 * end, as the runtime keeps them). Its peak is the largest sum of live
 * values while a node runs (inputs and outputs at once), against the naive
 * sum of every activation. The arena is what the runtime's buffer pool
 * holds at the end: a freed buffer is reused for a value of between half
 * and all its size, the most recently freed first. */
#pragma once

#include "analysis/shape-inference.h"

G_BEGIN_DECLS

typedef struct {
  GraftNode *node;
  guint64 macs;
  guint64 flops;
  guint64 parameter_bytes;
  guint64 activation_bytes;
  gboolean known;            /* every shape the counts need was inferred */
  gboolean constant;         /* computes a constant: runs once, outside the plan */
} GraftNodeCost;

typedef struct {
  GraftGroup *group;         /* borrowed from the graph */
  guint64 macs;
  guint64 flops;
  guint64 parameter_bytes;
  guint64 activation_bytes;
  guint n_nodes;
} GraftGroupCost;

typedef struct {
  GArray *nodes;             /* GraftNodeCost, main graph in topological order */
  GArray *groups;            /* GraftGroupCost of every group with nodes (root first, depth-first) */
  guint64 macs;
  guint64 flops;
  guint64 parameter_bytes;
  guint64 activation_bytes;  /* the naive sum: every graph input and computed value */
  guint64 peak_bytes;        /* the plan's peak of live values */
  guint64 arena_bytes;       /* buffers the pool holds with reuse */
  guint n_unknown;           /* nodes whose counts are incomplete (shapes not inferred) */
} GraftCostReport;

void graft_cost_report_free (GraftCostReport *report);

/* Cost of model's main graph with inference's shapes (symbolic dims count
 * as unknown: infer with fixed input shapes first). */
GraftCostReport *graft_cost_analyze (GraftModel *model, GraftInference *inference);

/* The GraftGroupCost of group, or NULL. */
const GraftGroupCost *graft_cost_report_lookup_group (GraftCostReport *report, GraftGroup *group);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftCostReport, graft_cost_report_free)

G_END_DECLS
