/* The operations behind GraftEdit (the other files of model/edit). Each works on the
 * model's main graph in place and adds char* notes; on error the caller
 * restores its snapshot. */
#pragma once

#include "analysis/shape-inference.h"

#include "edit/edit.h"
#include "edit/edit-operation.h"
#include "analysis/baked-shape.h"

G_BEGIN_DECLS

/* readings (may be NULL): how to read merged dims the repair could split
 * two ways, and where it met them (analysis/baked-shape.h). */
gboolean graft_edit_do_make_dim_dynamic (GraftModel *model, const char *input, int axis, const char *symbol,
                                         GraftSplitReadings *readings, GPtrArray *notes, GError **error);
/* make-dim-dynamic on a torch.export program (unspecialize.c): a dim
 * torch specialized gets the sizes it baked repaired, one free already is
 * renamed; either way the result is proven by running it at other sizes,
 * or the edit fails naming the node that pins the dim. */
gboolean graft_edit_unspecialize (GraftModel *model, GraftValue *input, int axis, const char *symbol,
                                  GPtrArray *notes, GError **error);
gboolean graft_edit_do_set_input_shape (GraftModel *model, const char *input, int rank, const gint64 *dims,
                                        GPtrArray *notes, GError **error);

/* The argument syntaxes (edit-arguments.c), for the parse column of the
 * table: name fills the row's one key with the target or the argument,
 * pair its two keys from "LEFT=RIGHT" (or the target and the text). */
GVariant *graft_edit_parse_name (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                 const char *argument, GError **error);
GVariant *graft_edit_parse_pair (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                 const char *argument, GError **error);
GVariant *graft_edit_parse_set_attribute (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                          const char *argument, GError **error);
GVariant *graft_edit_parse_remove_attribute (const GraftEditOperation *operation, GraftGraph *graph,
                                             const char *target, const char *argument, GError **error);
GVariant *graft_edit_parse_dynamic (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                    const char *argument, GError **error);
GVariant *graft_edit_parse_shape (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                  const char *argument, GError **error);
GVariant *graft_edit_parse_extract (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                    const char *argument, GError **error);
GVariant *graft_edit_parse_insert (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                   const char *argument, GError **error);
GVariant *graft_edit_parse_add_node (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                     const char *argument, GError **error);
GVariant *graft_edit_parse_add_input (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                      const char *argument, GError **error);
GVariant *graft_edit_parse_replace_nodes (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                          const char *argument, GError **error);
GVariant *graft_edit_parse_replace_pattern (const GraftEditOperation *operation, GraftGraph *graph,
                                            const char *target, const char *argument, GError **error);

/* The graph input called name, or NULL with an error listing the inputs. */
GraftValue *graft_edit_find_input (GraftGraph *graph, const char *name, GError **error);
GraftNode *graft_edit_find_node (GraftGraph *graph, const char *name, GError **error);
/* The value called name in graph (not in enclosing graphs), or NULL with an error. */
GraftValue *graft_edit_find_value (GraftGraph *graph, const char *name, GError **error);

/* Resolves params' "function" and "graph" keys; recorded_path (may be
 * NULL) receives the subgraph path as node addresses (av), or NULL. */
gboolean graft_edit_scope_resolve (GraftModel *model, GVariant *params, GraftEditScope *scope,
                                   GVariant **recorded_path, GError **error);
/* A recorded path back to "NODE#ATTRIBUTE…" names in model. */
char *graft_edit_scope_path_from_recorded (GraftModel *model, GVariant *recorded, GError **error);

/* Structural helpers the operation families share. */
/* The only places the edits read shape inference: infer runs it over
 * model (the result is the caller's to unref, valid until the next edit
 * replaces values); value_type gives value's best known type in it
 * (declared, else inferred; shape NULL when unknown), FALSE when the
 * dtype is unknown. */
GraftInference *graft_edit_infer (GraftModel *model) G_GNUC_WARN_UNUSED_RESULT;
gboolean graft_edit_value_type (GraftInference *inference, GraftValue *value, GraftDType *dtype,
                                const GraftShape **shape);
/* With what graft_edit_infer() or graft_edit_check_node() inferred,
 * makes the declared types of graph's values (outputs,
 * value_info) agree with it where an edit made them wrong: a fixed dim
 * that is now another size, another rank or dtype, a new graph output
 * without a type. Adds a note for each. */
void graft_edit_refresh_declared_types (GraftInference *inference, GraftModel *model, GraftGraph *graph,
                                        GPtrArray *notes);
/* Runs inference and fails when the runtime registry's shape function for
 * node's op rejects node (its attributes, its input types); else returns
 * what it inferred (the caller's to unref). */
GraftInference *graft_edit_check_node (GraftModel *model, GraftNode *node, GError **error);
/* Removes neutral arithmetic and ops that do nothing, and merges
 * reshape chains with a static end (edit/simplify.c); call after
 * graft_edit_infer(), with what it inferred. Returns the number of nodes changed or removed. */
guint graft_edit_simplify (GraftInference *inference, GraftGraph *graph);
/* The value, computed from constants alone, run in Graft's runtime
 * (fold.c); NULL if it reads an input, an op cannot be folded, or the
 * result is over max_bytes. */
GraftTensor *graft_edit_evaluate_constant (GraftModel *model, GraftValue *value, gsize max_bytes);
/* value's constant data (an initializer that is no graph input), or NULL. */
GraftTensor *graft_edit_constant_of (GraftValue *value);
/* A constant int64 or int32 value of rank 0 or 1 as a new array of *n
 * values, or NULL. */
gint64 *graft_edit_int64_values (GraftValue *value, guint *n);
/* The "simplify" operation (simplify-run.c): constant folding and the
 * passes of simplify-passes.c to a fixed point, the result checked by
 * running it against the original unless params' "verify" is FALSE. */
gboolean graft_edit_simplify_run (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error);
char *graft_edit_simplify_describe (GVariant *params);
/* Which fusions (simplify-fusions.c) the model's ONNX opset leaves out,
 * in one sentence ("not fused: Gelu needs opset 20, …; the model has
 * 17"), or NULL when it has every fused operator. */
char *graft_edit_fusions_unavailable (GraftModel *model);
/* Identity, and Dropout at inference, bypassed: the number removed (fold.c). */
guint graft_edit_bypass_pass_through (GraftGraph *graph);
/* Initializers with the same dtype, shape and bytes become one: the number merged. */
guint graft_edit_merge_duplicate_initializers (GraftGraph *graph);
/* Prunes what reaches no output, and initializers listed as inputs that
 * nothing reads; notes (may be NULL) names unused real inputs, which stay.
 * The number of nodes removed. */
guint graft_edit_remove_dead (GraftGraph *graph, GPtrArray *notes);
/* The attribute name = text (of type_name when not NULL: "int", "ints"…)
 * for node: the type is the attribute's own when node has it, else the
 * one the op's ONNX schema gives, else guessed from text; a name or a
 * type the ONNX schema does not have is refused. */
GraftAttribute *graft_edit_build_attribute (GraftModel *model, GraftNode *node, const char *name,
                                            const char *type_name, const char *text, GError **error);
/* Adds params' "attributes" (as: "NAME=[TYPE:]VALUE") to a new node. */
gboolean graft_edit_add_attributes (GraftModel *model, GraftNode *node, GVariant *params, GError **error);
/* "Relu" → ("", "Relu"); "com.example::Swish" → ("com.example", "Swish"). */
gboolean graft_edit_split_op (const char *text, char **domain, char **op_type, GError **error);
/* A custom domain needs an opset import: node's domain gets params'
 * "opset" (1 when absent) unless the model imports it already. */
void graft_edit_import_domain (GraftEditScope *scope, GraftNode *node, GVariant *params, GPtrArray *notes);
/* Where graph is, as the "graph" parameter names it ("loop#body#if#then_branch"),
 * or "the graph" for the main graph. */
char *graft_edit_describe_graph (GraftGraph *graph);
/* A node name not used in graph yet, from hint. */
char *graft_edit_unique_node_name (GraftGraph *graph, const char *hint);

/* Reorders graph->nodes so that every node comes after the producers of
 * its inputs (and of what its subgraphs read), keeping the file order
 * where it already is; FALSE with an error naming a node on a cycle. */
gboolean graft_edit_toposort (GraftGraph *graph, GError **error);

G_END_DECLS
