/* What the lowering families share: the value a TorchScript value lowers
 * to, the context, and the row type of the lowering tables.
 *
 * A family file (lower-<family>.c) exports
 *   const GraftLowering graft_lowerings_<family>[]
 * terminated by a row with op NULL, and is listed in lower/meson.build. */
#pragma once

#include "lower/lower.h"
#include "runtime/op.h"

G_BEGIN_DECLS

typedef enum {
  LOWER_NONE = 0,   /* None, or a value nothing reads (module objects) */
  LOWER_TENSOR,     /* an ONNX value; TorchScript int/float/bool are 0-d tensors */
  LOWER_CONST,      /* a constant known while lowering (folded attribute) */
  LOWER_LIST,       /* a list or tuple whose length is known */
  LOWER_SEQUENCE,   /* an ONNX sequence: a list grown in a loop whose trip count is known only at run time */
} LowerKind;

typedef struct _LowerValue LowerValue;
struct _LowerValue {
  LowerKind kind;
  GraftValue *value;         /* TENSOR, SEQUENCE */
  gboolean scalar;           /* TENSOR holding a TorchScript scalar (0-d) */
  GraftAttribute *constant;  /* CONST: owned copy */
  GPtrArray *items;          /* LIST: LowerValue*, owned */
  gboolean is_dict;          /* LIST holding a dict: constant keys and their values alternate */
};

typedef struct _GraftLowerContext GraftLowerContext;

typedef gboolean (*GraftLowerFunc) (GraftLowerContext *ctx, GraftNode *node, GError **error);

typedef struct {
  const char *op;            /* "aten::conv2d" */
  int since;                 /* first ONNX opset it lowers at (0: any) */
  GraftLowerFunc lower;
  /* The TorchScript schema, for unsupported-op messages and argument
   * keywords: "input weight bias stride padding dilation groups". */
  const char *arguments;
} GraftLowering;

struct _GraftLowerContext {
  GraftModel *source;
  GraftModel *target;
  GraftGraph *graph;          /* target graph being written (main or a body) */
  GraftGraph *main_graph;     /* target main graph: initializers live here */
  gint64 opset;
  gboolean allow_custom;
  const GraftLowering *row;   /* of the node being lowered */
  GHashTable *map;            /* source GraftValue* → LowerValue* (owned) */
  GHashTable *types;          /* target GraftValue* → LowerType* (owned) */
  GHashTable *rt_data;        /* target GraftValue* → GraftRtTensor* of small constants */
  GHashTable *node_names;     /* used target node names */
  GHashTable *attribute_reads;/* module attribute name → source GraftValue* its last GetAttr made
                               * (a dict the module fills, read again after) */
  guint n_constants;
  const char *scope;          /* "/layer1/0/conv1" of the node being lowered, or "" */
  GPtrArray *problems;        /* GraftLowerProblem*: ops without a lowering */
  GPtrArray *scratch;         /* LowerValue* made for constant arguments, freed per node */
};

/* ---- arguments of the source node, by schema position ---- */

/* The argument at position k (attribute "argK" or the keyword of the
 * row's argument list, else the next input), or NULL when absent. */
LowerValue *graft_lower_arg (GraftLowerContext *ctx, GraftNode *node, guint k);
gboolean graft_lower_arg_is_none (GraftLowerContext *ctx, GraftNode *node, guint k);
/* A constant int / float / int list argument; FALSE with an error naming
 * the argument when it is not constant (or absent without fallback). */
gboolean graft_lower_arg_int (GraftLowerContext *ctx, GraftNode *node, guint k, gint64 fallback, gint64 *out,
                              GError **error);
gboolean graft_lower_arg_double (GraftLowerContext *ctx, GraftNode *node, guint k, double fallback, double *out,
                                 GError **error);
/* An int list (or one int repeated to `repeat`); *n = 0 when absent. */
gboolean graft_lower_arg_ints (GraftLowerContext *ctx, GraftNode *node, guint k, gint64 *values, guint max,
                               guint *n, guint repeat, GError **error);
/* The argument as an ONNX tensor value (constants become initializers). */
GraftValue *graft_lower_arg_tensor (GraftLowerContext *ctx, GraftNode *node, guint k, GError **error);
/* The argument as a tensor of dtype like (scalars and constants are cast or
 * made in like's dtype, as torch promotes a Python number). */
GraftValue *graft_lower_arg_like (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue *like,
                                  GError **error);
/* The argument as a 1-D int64 tensor (int lists, including lists of
 * symbolic sizes, become Concat of their items). */
GraftValue *graft_lower_arg_int_vector (GraftLowerContext *ctx, GraftNode *node, guint k, GError **error);
/* The same for a value v (argument k, for messages). */
GraftValue *graft_lower_int_vector (GraftLowerContext *ctx, GraftNode *node, guint k, LowerValue *v, GError **error);

/* ---- results ---- */

void graft_lower_set_output (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue *value);
void graft_lower_set_output_scalar (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue *value);
/* Takes ownership of value. */
void graft_lower_bind (GraftLowerContext *ctx, GraftValue *source, LowerValue *value);
LowerValue *graft_lower_lookup (GraftLowerContext *ctx, GraftValue *source);

LowerValue *graft_lower_value_tensor (GraftValue *value, gboolean scalar);
LowerValue *graft_lower_value_sequence (GraftValue *value);
LowerValue *graft_lower_value_const (const GraftAttribute *constant);
LowerValue *graft_lower_value_list (void);
/* Two constants of one kind with one value (strings, ints and bools, floats). */
gboolean graft_lower_same_constant (const GraftAttribute *a, const GraftAttribute *b);
/* The position of key among dict's keys (is_dict list), or -1 in *at;
 * FALSE when key or a key of dict is not a constant. */
gboolean graft_lower_dict_find (LowerValue *dict, LowerValue *key, gint *at);
LowerValue *graft_lower_value_copy (const LowerValue *value);
void graft_lower_value_free (LowerValue *value);

/* ---- emitting ONNX ---- */

/* A new node op_type (domain NULL: ONNX) named "<scope>/<op_type>" with
 * the inputs (NULL entries are omitted optional inputs) and n_outputs new
 * outputs. Add attributes, then call graft_lower_finish(). */
GraftNode *graft_lower_node (GraftLowerContext *ctx, const char *op_type, guint n_outputs, guint n_inputs, ...);
/* Infers the node's output types (the runtime registry's shape logic) and
 * returns output 0. */
GraftValue *graft_lower_finish (GraftLowerContext *ctx, GraftNode *node);
/* One-output node without attributes, finished. */
GraftValue *graft_lower_op (GraftLowerContext *ctx, const char *op_type, guint n_inputs, ...);

/* Concat of inputs (GraftValue*) along axis. */
GraftValue *graft_lower_concat (GraftLowerContext *ctx, GPtrArray *inputs, gint64 axis);
GraftValue *graft_lower_const_ints (GraftLowerContext *ctx, const gint64 *values, guint n, gboolean scalar);
GraftValue *graft_lower_const_int (GraftLowerContext *ctx, gint64 value);   /* 1-D, one element */
GraftValue *graft_lower_const_scalar (GraftLowerContext *ctx, GraftDType dtype, double value); /* 0-d */
GraftValue *graft_lower_const_attribute (GraftLowerContext *ctx, const GraftAttribute *constant, GError **error);
GraftValue *graft_lower_cast (GraftLowerContext *ctx, GraftValue *value, GraftDType dtype);

/* A value of ONNX sequence type: the type table keeps its tensors' dtype
 * and rank; a graph input or output (add it first) also says
 * seq(tensor(dtype)) for the file. Called again once the dtype is known. */
void graft_lower_declare_sequence (GraftLowerContext *ctx, GraftValue *value, GraftDType elem_dtype, int elem_rank);
gboolean graft_lower_is_sequence (GraftLowerContext *ctx, GraftValue *value);

/* What the registry's shape logic knows of a target value (of a sequence:
 * its tensors' dtype and rank). */
int graft_lower_rank (GraftLowerContext *ctx, GraftValue *value);          /* -1 unknown */
GraftDType graft_lower_dtype (GraftLowerContext *ctx, GraftValue *value);
const GraftShape *graft_lower_shape (GraftLowerContext *ctx, GraftValue *value); /* never NULL */
/* The rank, or FALSE with an error saying the lowering needs it. */
gboolean graft_lower_need_rank (GraftLowerContext *ctx, GraftValue *value, int *rank, GError **error);

gboolean graft_lower_fail (GError **error, GraftNode *node, const char *format, ...) G_GNUC_PRINTF (3, 4);

/* Lowers a source subgraph into a new target graph (If/Loop bodies). A
 * loop body gets ONNX's condition input after the trip counter, and its
 * carried inputs take the dtypes of carried[] (the initial values). A
 * branch (not loop_body) gets no inputs: the caller binds its source
 * inputs, if any, to values of the enclosing graph.
 * grown_lists (source list values defined outside the body that it
 * appends to, each bound to a LOWER_SEQUENCE; may be NULL) become extra
 * outputs after the source's, and in a loop body extra carried inputs
 * after the source's. */
GraftGraph *graft_lower_subgraph (GraftLowerContext *ctx, GraftGraph *source, const char *name,
                                  gboolean loop_body, GraftValue **carried, GPtrArray *grown_lists, GError **error);
/* torch's while_loop as an ONNX Loop body (iteration, cond_in, carried…)
 * → (cond_out, carried…): body_graph's results are the next carried
 * values, cond_graph on them the condition out. The graphs' inputs after
 * the n_carried carried ones are bound by the caller to outer values,
 * which the body reads from the enclosing scope. */
GraftGraph *graft_lower_while_body (GraftLowerContext *ctx, GraftNode *node, GraftGraph *cond_graph,
                                    GraftGraph *body_graph, const char *name, GraftValue **carried, guint n_carried,
                                    GError **error);

/* Shared between the files of the lowering. */
/* The row that lowers op at opset (for reading another node's arguments
 * by its own schema: set ctx->row to it meanwhile), or NULL. */
const GraftLowering *_graft_lower_row (const char *op, gint64 opset);
GHashTable *_graft_lower_types_new (void);
void _graft_lower_declare_type (GraftLowerContext *ctx, GraftValue *value, GraftDType dtype, const GraftShape *shape);
char *_graft_lower_unique_node_name (GraftLowerContext *ctx, const char *op_type);
GraftValue *_graft_lower_add_constant (GraftLowerContext *ctx, GraftTensor *tensor /* transfer full */);
void _graft_lower_fold_batch_norms (GraftLowerContext *ctx, GraftGraph *graph);
gboolean _graft_lower_nodes (GraftLowerContext *ctx, GraftGraph *source, GError **error);
GraftNode *_graft_lower_custom_node (GraftLowerContext *ctx, const char *domain, const char *op_type, guint n_outputs);
/* The written model checked: structure, every ONNX node against its
 * schema, and shapes inferable; FALSE naming the first invalid node.
 * allow_custom: outputs of custom-domain nodes may stay untyped. */
gboolean _graft_lower_check (GraftModel *target, gboolean allow_custom, GError **error);


G_END_DECLS
