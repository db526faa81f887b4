/* "Will it run there?": every node of a model checked against a deployment
 * target (analysis/deploy-target.h), and the partitions the supported
 * nodes form.
 *
 * Partitions are grouped as onnxruntime's partitioner groups them
 * (CreateSupportedPartitionNodeGroups, which check_onnx_model_mobile_usability
 * mirrors): nodes are visited in topological order, a supported node joins
 * the open group, an unsupported node that consumes the open group's
 * output waits until the group closes, and the group closes when nothing
 * else is ready. A group is therefore a maximal set of supported nodes
 * that can run as one piece without data leaving and coming back through
 * an unsupported node. Each graph (and each If/Loop/Scan body) is grouped
 * on its own; Constant nodes are weights to every runtime and are not
 * counted as nodes. */
#pragma once

#include "ir/model.h"
#include "lint/deploy-target.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_SUPPORT_OK = 0,
  GRAFT_SUPPORT_OP,             /* the target has no such op */
  GRAFT_SUPPORT_OPSET,          /* not at this opset */
  GRAFT_SUPPORT_DTYPE,
  GRAFT_SUPPORT_ATTRIBUTE,
  GRAFT_SUPPORT_DYNAMIC_SHAPE,  /* an input's shape is not fully known */
  GRAFT_SUPPORT_RANK,
  GRAFT_SUPPORT_CONSTANT_INPUT, /* an input must be a constant and is computed */
  GRAFT_SUPPORT_OUTPUT,         /* an optional output the target cannot produce is used */
  GRAFT_SUPPORT_INPUTS,         /* too many inputs */
} GraftSupportReason;

/* "op", "opset", "dtype", "attribute", "dynamic-shape", "rank", "constant-input", "output", "inputs" */
const char *graft_support_reason_to_string (GraftSupportReason reason);

typedef struct {
  GraftNode *node;              /* borrowed from the model */
  GraftSupportReason reason;    /* OK when supported */
  char *message;                /* why not ("Erf is not in ort-nnapi's operator list"), or NULL */
  int partition;                /* index in report->partitions, or -1 */
} GraftNodeSupport;

typedef struct {
  guint index;
  GraftGraph *graph;            /* the graph the partition lies in */
  GPtrArray *nodes;             /* GraftNode*, in the order they were grouped */
  GPtrArray *inputs;            /* GraftValue* that enter from outside the partition (not weights) */
  GPtrArray *outputs;           /* GraftValue* used outside the partition or graph outputs */
} GraftPartition;

typedef struct {
  const GraftDeployTarget *target;
  GPtrArray *nodes;             /* GraftNodeSupport*, every counted node in graph order (bodies after their graph) */
  GHashTable *by_node;          /* GraftNode* → GraftNodeSupport* */
  GPtrArray *partitions;        /* GraftPartition* */
  guint n_nodes;
  guint n_supported;
} GraftTargetReport;

/* Checks every node of model against target. inference may be NULL (it is
 * run then). Fails when the target reads another kind of graph (an
 * ExecuTorch target on an ONNX file). The model is only read. */
GraftTargetReport *graft_target_check (GraftModel *model, const GraftDeployTarget *target,
                                       GraftInference *inference, GError **error);
void graft_target_report_free (GraftTargetReport *report);

/* The node's entry, or NULL for a node that is not counted (Constant). */
const GraftNodeSupport *graft_target_report_lookup (const GraftTargetReport *report, const GraftNode *node);
/* "2 partitions, 121/122 nodes on ort-nnapi; Flatten falls back" */
char *graft_target_report_summary (const GraftTargetReport *report);
/* The op types of unsupported nodes, sorted and unique ("onnx::Erf"). */
GPtrArray *graft_target_report_unsupported_ops (const GraftTargetReport *report);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTargetReport, graft_target_report_free)

G_END_DECLS
