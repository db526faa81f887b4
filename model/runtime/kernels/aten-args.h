/* How aten:: and prim:: nodes from the TorchScript builder carry their
 * arguments, and the runtime values TorchScript needs beyond tensors.
 *
 * The builder (model/torchscript/script-builder.c) keeps the call's
 * arguments in order: a constant argument becomes an attribute named
 * "arg<position>" (or its keyword), a runtime argument the node's next
 * input. graft_aten_args() undoes that, so kernels see positions again.
 *
 * Values: int / float / bool scalars are 0-d int64 / float64 / bool
 * tensors, str a 0-d string tensor, None a GRAFT_RT_NONE value, lists and
 * tuples GRAFT_RT_SEQUENCE values (items are scalars or tensors). Lists are
 * shared by reference, so aten::append mutates the list every holder sees,
 * as in TorchScript. */
#pragma once

#include "runtime/kernels/kernel-util.h"

G_BEGIN_DECLS

#define GRAFT_ATEN_MAX_ARGS 24

typedef struct {
  GraftAttribute *attr;    /* constant argument */
  GraftRtTensor *value;    /* runtime argument (borrowed) */
} GraftAtenArg;

/* Fills args[0..n) from ctx; names (may be NULL, entries may be NULL) are
 * the keyword names of the positions. */
void graft_aten_args (GraftKernelContext *ctx, const char *const *names, guint n, GraftAtenArg *args);
/* The "arg<k>" attributes of an aten:: or prim:: node by k (*n of them:
 * the highest k + 1), NULL at positions without one, as graft_aten_args
 * finds them; NULL for other nodes and nodes without any (g_free). */
GraftAttribute **graft_aten_positional_attributes (GraftNode *node, guint *n);
/* The same for position k of node at plan time: the constant attribute
 * "arg<k>", or NULL and the graph value given as input (*value, NULL for
 * an absent argument). */
GraftAttribute *graft_aten_node_arg (GraftNode *node, guint k, GraftValue **value);
/* Absent or None */
gboolean graft_arg_is_none (const GraftAtenArg *arg);
gint64 graft_arg_int (const GraftAtenArg *arg, gint64 fallback);
double graft_arg_double (const GraftAtenArg *arg, double fallback);
/* An int list (INTS attribute, sequence of scalars, 1-D int tensor) or a
 * single int repeated to `repeat` entries (repeat 0: as is). */
gboolean graft_arg_ints (const GraftAtenArg *arg, gint64 *values, guint max, guint *n, guint repeat,
                              GError **error);
/* A str argument (constant or runtime), NULL if it is not one; *owned
 * (g_free) is set when the text had to be copied. */
const char *graft_arg_string (const GraftAtenArg *arg, char **owned);
/* The tensor of a runtime argument, NULL for constants or non-tensors. */
GraftRtTensor *graft_arg_tensor (const GraftAtenArg *arg);
/* The argument as a runtime value (new reference), constants converted. */
GraftRtTensor *graft_arg_value (const GraftAtenArg *arg, GError **error);
/* A constant attribute as a runtime value (new reference). */
GraftRtTensor *graft_aten_value_from_attr (const GraftAttribute *attr, GError **error);
/* The same with int and float lists as 1-D int64 / float64 tensors rather
 * than lists, as prim::Constant and prim::ListConstruct items and folded
 * operands of aten::add/sub are read. */
GraftRtTensor *graft_aten_constant_tensor (GraftAttribute *attr, GError **error);

/* Scalars */
GraftRtTensor *graft_aten_new_bool (gboolean value);
GraftRtTensor *graft_aten_new_f64 (double value);
/* A 0-d string tensor; takes ownership of value. */
GraftRtTensor *graft_aten_new_string (char *value);
/* Truth value of a condition (bool / number scalar, one-element tensor). */
gboolean graft_aten_truth (const GraftRtTensor *value, gboolean *out, GError **error);
/* Required tensor input: error naming the position when missing. */
GraftRtTensor *graft_aten_need_tensor (const GraftAtenArg *arg, guint position, GError **error);
/* A new tensor of dtype with the values of t (a reference to t if it already has it). */
GraftRtTensor *graft_aten_as_dtype (GraftRtTensor *t, GraftDType dtype, GError **error);

/* aten:: arithmetic and comparisons (add, mul, lt, …, alpha, rounding
 * modes) with PyTorch's type promotion; binary.c's faster kernel hands the
 * nodes whose result type is not self's to it. */
gboolean graft_aten_binary_promoted (GraftKernelContext *ctx, GError **error);

/* In-place ops on views: TorchScript's aten::fill_(aten::slice(x, …), v)
 * changes x. Runtime views are copies, so the engine writes the in-place
 * op's result back into each tensor the view chain came from. TRUE for a
 * node whose output is such a view (aten::slice, aten::select). */
gboolean graft_aten_is_view (GraftNode *node);
/* The view node's input (view->inputs[0], a tensor) with the elements the
 * view took replaced by src's (the view's size, cast to its dtype): a new
 * tensor. view holds the view node and its inputs; it allocates nothing
 * through the engine. */
GraftRtTensor *graft_aten_view_write_back (GraftKernelContext *view, GraftRtTensor *src, GError **error);

G_END_DECLS
