/* Operator families: what an operator computes, independent of the format
 * that spells it (aten::conv2d, aten::_convolution and onnx::Conv are all
 * "conv"), and the part it plays in a graph. Alignment matches nodes of
 * the same family across TorchScript and ONNX. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_OP_ROLE_COMPUTE = 0,   /* computes tensor data */
  GRAFT_OP_ROLE_PASSTHROUGH,   /* forwards its input's values (dropout in eval, contiguous, Identity) */
  GRAFT_OP_ROLE_GLUE,          /* constants, lists, tuples, module attributes, shape and number reads */
  GRAFT_OP_ROLE_CONTROL,       /* prim::If, prim::Loop, onnx::If, onnx::Loop */
} GraftOpRole;

typedef struct {
  const char *family;  /* "conv"; for an op without a row, the op itself */
  GraftOpRole role;
  /* the op reads a run-time number (x.size(0), .item(), Shape): where the
   * other model has a literal instead, that literal was baked in. Also
   * set for the "property" family (prim::dtype, prim::requires_grad):
   * neither carries the tensor's data on. */
  gboolean reads_number;
} GraftOpFamily;

/* The row of op ("aten::conv2d", "onnx::Conv"); never NULL. */
const GraftOpFamily *graft_op_family_lookup (const char *op);

G_END_DECLS
