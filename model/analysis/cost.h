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
  double seconds;            /* measured per run (graft_cost_report_set_timings), else 0 */
} GraftNodeCost;

typedef struct {
  GraftGroup *group;         /* borrowed from the graph */
  guint64 macs;
  guint64 flops;
  guint64 parameter_bytes;
  guint64 activation_bytes;
  double seconds;
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
  double seconds;            /* the nodes' measured time, summed */
  gboolean timed;            /* seconds were given */
} GraftCostReport;

/* What the cost overlay colours by and the biggest groups are ranked by:
 * one row each (name for actions and options, title for menus). */
typedef enum {
  GRAFT_COST_FLOPS,
  GRAFT_COST_MACS,
  GRAFT_COST_PARAMETER_BYTES,
  GRAFT_COST_ACTIVATION_BYTES,
  GRAFT_COST_SECONDS,        /* needs graft_cost_report_set_timings() */
  GRAFT_COST_N_METRICS
} GraftCostMetric;

typedef struct {
  GraftCostMetric metric;
  const char *name;          /* "flops", "macs", "parameters", "activations", "time" */
  const char *title;         /* "FLOPs", "MACs", "Parameter Bytes", ... */
} GraftCostMetricInfo;

/* The table, in GraftCostMetric order. */
const GraftCostMetricInfo *graft_cost_metrics (void);
gboolean graft_cost_metric_from_name (const char *name, GraftCostMetric *metric);
double graft_node_cost_get (const GraftNodeCost *cost, GraftCostMetric metric);
double graft_group_cost_get (const GraftGroupCost *cost, GraftCostMetric metric);
double graft_cost_report_get_total (const GraftCostReport *report, GraftCostMetric metric);
/* "1.82 GFLOPs", "3.10 MMACs", "4.20 MB", "0.412 ms". */
char *graft_cost_format (GraftCostMetric metric, double amount);

/* Measured time per node (GraftNode* → double* seconds per run; nodes of
 * other graphs are ignored), rolled up into the groups. */
void graft_cost_report_set_timings (GraftCostReport *report, GHashTable *seconds);

/* The module groups that split the cost by metric: from the root down
 * while one child group holds at least 90 % of its parent's amount, then
 * that group's child groups with any amount, largest first, at most max
 * (GraftGroupCost*, borrowed from the report). A model without groups
 * has none. */
GPtrArray *graft_cost_report_biggest_groups (GraftCostReport *report, GraftCostMetric metric, guint max);

void graft_cost_report_free (GraftCostReport *report);

/* Cost of model's main graph with inference's shapes (symbolic dims count
 * as unknown: infer with fixed input shapes first). */
GraftCostReport *graft_cost_analyze (GraftModel *model, GraftInference *inference);


G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftCostReport, graft_cost_report_free)

G_END_DECLS
