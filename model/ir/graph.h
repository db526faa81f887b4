/* Graphs, nodes and values: the one in-memory representation for ONNX and
 * TorchScript.
 *
 * Ownership: a graph owns its nodes, its values, its group tree and (through
 * node attributes) its subgraphs. A node's inputs may name values of an
 * enclosing graph (ONNX outer-scope references, TorchScript block captures):
 * value->graph tells which graph owns a value.
 */
#pragma once

#include <glib.h>
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"
#include "ir/attribute.h"
#include "ir/group.h"

G_BEGIN_DECLS

typedef struct _GraftValue GraftValue;

typedef enum {
  GRAFT_VALUE_TENSOR = 0,
  GRAFT_VALUE_SEQUENCE,    /* ONNX seq(tensor), TorchScript List[Tensor] */
  GRAFT_VALUE_MAP,
  GRAFT_VALUE_OPTIONAL,
  GRAFT_VALUE_SPARSE_TENSOR,
  GRAFT_VALUE_SCALAR,      /* TorchScript int/float/bool/str */
  GRAFT_VALUE_OBJECT,      /* TorchScript module objects, tuples, None... */
} GraftValueKind;

struct _GraftValue {
  char *name;              /* unique within its graph; never empty */
  GraftGraph *graph;       /* owner */
  GraftValueKind kind;

  /* Declared type, as the file says (graph inputs/outputs, value_info,
   * TorchScript annotations). */
  GraftDType dtype;        /* element type (of the tensor, or of the sequence's tensors) */
  GraftShape shape;
  char *type_string;       /* full type for non-tensor kinds: "seq(tensor(float))", "List[int]" */

  /* Inferred types are not stored here: shape inference returns them in
   * a GraftInference (analysis/shape-inference.h) and leaves the graph
   * as read. */

  GraftNode *producer;     /* NULL for graph inputs and initializers */
  guint producer_index;    /* output slot in producer */
  GPtrArray *consumers;    /* GraftNode*, not owned; a node appears once per use */

  GraftTensor *initializer;/* constant data (ONNX initializer, TorchScript parameter) */
  /* State: the name of the initializer (a torch.export buffer) whose data
   * this value replaces after each run, as ep.module() assigns a mutated
   * buffer; NULL for ordinary values. A name, not a pointer, so that an
   * edit removing the buffer leaves nothing dangling. */
  char *writes_back_to;
  gboolean is_graph_input;
  gboolean is_graph_output;
  char *doc_string;

  /* ONNX pass-through (onnx/kept-fields.h): the TypeProto as read, packed,
   * written back while it still says what dtype/shape/type_string say (it
   * has the denotations and the shapes inside map types the IR drops); the
   * ValueInfoProto fields the IR has no place for; the 1-based position of
   * the value's entry in graph.value_info (0: none), so that the saved
   * value_info keeps the file's order and its entries for initializers. */
  GBytes *onnx_type;
  GBytes *onnx_kept_fields;
  guint onnx_value_info_position;

  /* torch.export pass-through (pt2/exported-program-writer.h): a JSON
   * object with what the program said of this value as read — "meta" (its
   * TensorMeta, or its sym_int/sym_bool/sym_float entry), "input_spec",
   * "output_spec" — reused on saving while the IR still says the same. */
  GBytes *exported_json;
};

struct _GraftNode {
  char *name;              /* may be empty in ONNX */
  const char *domain;      /* interned: "onnx" for the default ONNX domain, "ai.onnx.ml", "aten", "prim", "com.microsoft"... */
  const char *op_type;     /* interned: "Conv", "conv2d" */
  const char *op;          /* interned "domain::op_type": "onnx::Conv", "aten::conv2d" */
  GraftGraph *graph;       /* owner */
  guint index;             /* position in graph->nodes */

  GPtrArray *inputs;       /* GraftValue*, NULL for an omitted optional input */
  GPtrArray *outputs;      /* GraftValue*, NULL for an omitted optional output */
  GPtrArray *attributes;   /* GraftAttribute*, owned */

  GraftGroup *group;       /* innermost group, or the graph's root group */
  char *doc_string;
  char *source_range;      /* TorchScript: "code/__torch__/....py:12"; may be NULL */
  char *python_source;     /* TorchScript: the user's "torch/nn/modules/conv.py:459" (code/ debug_pkl records); may be NULL */
  /* ONNX NodeProto.metadata_props in file order (torch's dynamo exporter
   * writes "pkg.torch.onnx.name_scopes" and friends); NULL when none. */
  GPtrArray *metadata_keys;   /* char*, owned */
  GPtrArray *metadata_values; /* char*, owned, parallel to metadata_keys */
  /* Schema names of arguments that the IR keeps positional. torch.export
   * names every argument (NamedArgument.name: "stride", "weight") but the
   * aten kernels read them by position ("argN" attributes, inputs in
   * order), so the positions stay and this records the names beside them
   * for the labels and the sidebar. NULL when the format names none. */
  GPtrArray *input_argument_names;  /* char* or NULL, owned, parallel to inputs */
  GHashTable *attribute_argument_names; /* attribute name → schema name, owned */
  GBytes *onnx_kept_fields;  /* NodeProto fields the IR has no place for (onnx/kept-fields.h) */
  /* torch.export pass-through: the serialized Node as read (JSON), whose
   * argument kinds (as_memory_format, as_device, as_graph…) saving reuses. */
  GBytes *exported_json;
};

/* An ONNX graph.value_info entry naming no value of its graph (a
 * subgraph's annotation of an outer-scope value, a stale entry): not
 * applied by the reader, put back by the writer at its position. */
typedef struct {
  guint position;          /* 1-based, in the file's value_info list */
  GBytes *value_info;      /* the ValueInfoProto, packed */
} GraftOnnxUnboundValueInfo;

struct _GraftGraph {
  char *name;
  char *doc_string;
  GPtrArray *nodes;        /* GraftNode*, owned, in file order */
  GPtrArray *inputs;       /* GraftValue*: graph inputs (ONNX: includes initializers listed as inputs) */
  GPtrArray *outputs;      /* GraftValue* */
  GPtrArray *values;       /* GraftValue*, owned, in creation order */
  GHashTable *value_by_name;
  GPtrArray *initializers; /* GraftValue* whose ->initializer is set, in file order */
  GraftGroup *root_group;  /* owned */

  GraftGraph *parent_graph;/* enclosing graph for subgraphs, else NULL */
  GraftNode *parent_node;  /* node whose attribute holds this subgraph, else NULL */
  guint anonymous_counter; /* for graft_graph_new_anonymous_value() */
  GBytes *onnx_kept_fields;/* GraphProto fields the IR has no place for (onnx/kept-fields.h) */
  GArray *onnx_unbound_value_info; /* GraftOnnxUnboundValueInfo; NULL when none */
};

/* Adds an entry to graph->onnx_unbound_value_info (takes a reference). */
void graft_graph_add_onnx_unbound_value_info (GraftGraph *graph, guint position, GBytes *value_info);

GraftGraph *graft_graph_new (const char *name);
void graft_graph_free (GraftGraph *graph);

/* Values */
GraftValue *graft_graph_lookup_value (GraftGraph *graph, const char *name);  /* this graph only */
GraftValue *graft_graph_resolve_value (GraftGraph *graph, const char *name); /* this graph, then enclosing graphs */
GraftValue *graft_graph_ensure_value (GraftGraph *graph, const char *name); /* lookup or create here */
GraftValue *graft_graph_new_anonymous_value (GraftGraph *graph, const char *hint); /* unique name from hint */
/* Gives value a new name (not taken: the caller checks); the values that
 * write back to it (writes_back_to) follow. */
void graft_graph_rename_value (GraftGraph *graph, GraftValue *value, const char *name);

void graft_graph_add_input (GraftGraph *graph, GraftValue *value);
void graft_graph_add_output (GraftGraph *graph, GraftValue *value);
/* Whether a run must hand v out at its end: a graph output, or a new
 * buffer value it writes back (writes_back_to). */
static inline gboolean
graft_value_leaves_run (const GraftValue *v)
{
  return v->is_graph_output || v->writes_back_to != NULL;
}
/* The buffers a run writes back ("mean, steps"), or NULL when none. */
char *graft_graph_describe_written_back (GraftGraph *graph);
void graft_graph_add_initializer (GraftGraph *graph, GraftValue *value, GraftTensor *tensor /* transfer full */);

/* Nodes. domain NULL or "" or "ai.onnx" means the default ONNX domain ("onnx"). */
GraftNode *graft_graph_add_node (GraftGraph *graph, const char *domain, const char *op_type, const char *name);
void graft_node_add_input (GraftNode *node, GraftValue *value /* may be NULL */);
void graft_node_add_output (GraftNode *node, GraftValue *value /* may be NULL */);
void graft_node_add_attribute (GraftNode *node, GraftAttribute *attribute /* transfer full */);
GraftAttribute *graft_node_get_attribute (GraftNode *node, const char *name);
void graft_node_add_metadata (GraftNode *node, const char *key, const char *value);
/* The value of the first entry named key, or NULL. */
const char *graft_node_get_metadata (const GraftNode *node, const char *key);
void graft_node_set_input_argument_name (GraftNode *node, guint input, const char *name);
const char *graft_node_get_input_argument_name (const GraftNode *node, guint input);
void graft_node_set_attribute_argument_name (GraftNode *node, const char *attribute, const char *name);
const char *graft_node_get_attribute_argument_name (const GraftNode *node, const char *attribute);
guint graft_node_get_n_metadata (const GraftNode *node);

/* Subgraph attaching: sets graph->parent_graph/parent_node. Readers call
 * this for every GRAPH/GRAPHS attribute they add. */
void graft_node_adopt_subgraph (GraftNode *node, GraftGraph *subgraph);

/* All subgraphs of a node, in attribute order (GraftGraph*, not owned). */
GPtrArray *graft_node_get_subgraphs (GraftNode *node);

/* The values the bodies of a node's subgraphs (and their subgraphs) read
 * from outside the node, weights left out; each once (GraftValue*, not
 * owned). */
GPtrArray *graft_node_get_captured_values (GraftNode *node);

/* Interned canonical domain for a file's domain string. */
const char *graft_canonical_domain (const char *domain);

/* Number of nodes in this graph and all nested subgraphs. */
guint graft_graph_count_nodes_recursive (GraftGraph *graph);

/* Calls func for every node of graph and, depth-first, of its subgraphs. */
typedef void (*GraftNodeFunc) (GraftNode *node, gpointer user_data);
void graft_graph_foreach_node_recursive (GraftGraph *graph, GraftNodeFunc func, gpointer user_data);
/* The same over the nodes that can run: the branch a fixed If never takes
 * (ir/fixed-branch.h), and everything inside it, is skipped. */
void graft_graph_foreach_live_node_recursive (GraftGraph *graph, GraftNodeFunc func, gpointer user_data);

/* Builds the group tree of an ONNX graph from node names ("/layer1/0/conv1/Conv"
 * → groups layer1 › 0 › conv1; the last component is the node itself), or,
 * for a node whose name has no scope, from the module scopes torch's dynamo
 * exporter records in its metadata (ir/torch-scopes.h), so that both
 * exporters' files show the same tree. Nodes with neither stay in the root
 * group. Call after all nodes are added. */
void graft_graph_build_groups_from_names (GraftGraph *graph);

/* Recomputes group->total_nodes over the tree. */
void graft_graph_update_group_counts (GraftGraph *graph);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftGraph, graft_graph_free)

G_END_DECLS
