/* Deployment targets: what TensorRT, onnxruntime's execution providers,
 * OpenVINO or ExecuTorch's XNNPACK backend can run, one file per target in
 * data/targets/ (the format is described in data/targets/README.md),
 * compiled in. graft_deploy_targets() is the one table the CLI, the window
 * and the tests read. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_TARGET_GRAPH_ONNX,
  GRAFT_TARGET_GRAPH_ATEN,   /* torch.export programs */
} GraftTargetGraph;

typedef enum {
  GRAFT_CONDITION_RANK,      /* input rank in [min, max] */
  GRAFT_CONDITION_CONST,     /* inputs constant */
  GRAFT_CONDITION_STATIC,    /* inputs fully fixed shapes */
  GRAFT_CONDITION_DTYPE,     /* input dtype among values */
  GRAFT_CONDITION_ATTR,      /* attribute (or its default) among values */
  GRAFT_CONDITION_ABSENT,    /* attribute not set */
  GRAFT_CONDITION_ONES,      /* int list attribute absent or all ones */
  GRAFT_CONDITION_NO_OUTPUT, /* optional output absent or unused */
  GRAFT_CONDITION_MAX_INPUTS,
} GraftConditionKind;

typedef struct _GraftTargetCondition GraftTargetCondition;
struct _GraftTargetCondition {
  GraftConditionKind kind;
  char **subjects;           /* input names, positions or "*"; the attribute name (one) */
  char **values;             /* DTYPE and ATTR: the accepted values */
  gint64 min, max;           /* RANK; NO_OUTPUT and MAX_INPUTS use min */
  GraftTargetCondition *otherwise;  /* "C1/C2": the next alternative, or NULL */
};

typedef struct {
  const char *op;            /* interned "onnx::Conv", "com.microsoft::QLinearAdd", "aten::convolution" */
  int min_version, max_version;  /* the op's opset range (0: any) */
  GPtrArray *conditions;     /* GraftTargetCondition*, all must hold */
  char *note;                /* "only 2-D pooling", or NULL */
} GraftTargetOp;

typedef struct {
  char *name;                /* "ort-nnapi" */
  char *title;               /* "onnxruntime NNAPI (Android)" */
  char *version;
  char **sources;
  GraftTargetGraph graph;
  /* TRUE: an unsupported node runs on the host (a warning); FALSE: the
   * model is refused (an error). */
  gboolean host_fallback;
  gboolean static_shapes;
  int max_rank;              /* 0: none */
  int min_opset, max_opset;  /* 0: none */
  GArray *dtypes;            /* GraftDType accepted for every tensor; NULL: any */
  GHashTable *ops;           /* op → GPtrArray of GraftTargetOp* (version ranges) */
  GHashTable *aliases;       /* interned op → the interned op whose rows it takes ("alias" lines) */
} GraftDeployTarget;

/* Parses a target file; file names it in errors. */
GraftDeployTarget *graft_deploy_target_parse (const char *text, gsize length, const char *file, GError **error);
void graft_deploy_target_free (GraftDeployTarget *target);

/* Every compiled-in target, sorted by name (loaded once, never freed). */
const GraftDeployTarget *const *graft_deploy_targets (guint *n_targets);
/* The target named name, or NULL. */
const GraftDeployTarget *graft_deploy_target_lookup (const char *name);
/* "ort-nnapi, ort-coreml, …" for messages. */
char *graft_deploy_target_list_names (void);

/* The rule for op at opset, or NULL when the target does not take it. */
const GraftTargetOp *graft_deploy_target_find_op (const GraftDeployTarget *target, const char *op, gint64 opset);
/* TRUE when the target lists op at some version. */
gboolean graft_deploy_target_lists_op (const GraftDeployTarget *target, const char *op);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftDeployTarget, graft_deploy_target_free)

G_END_DECLS
