/* ExecuTorch's operators and the IR's: one row per operator whose name or
 * arguments differ from the functional aten op the rest of Graft knows
 * (aten::convolution.out → aten::_convolution, aten::view_copy.out →
 * aten::view, executorch_prim::mul.Scalar → _operator::mul), and the
 * operators of ExecuTorch's portable kernel library, which lint reads. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_EXECUTORCH_ARG_END = 0,
  GRAFT_EXECUTORCH_ARG_FROM,          /* the program's argument number source */
  GRAFT_EXECUTORCH_ARG_FALSE,         /* a constant the functional op has and the out variant lacks */
  GRAFT_EXECUTORCH_ARG_NONE,
  GRAFT_EXECUTORCH_ARG_RESULT_DTYPE,  /* the first result's dtype as a torch ScalarType code */
} GraftExecutorchArgumentKind;

typedef struct {
  GraftExecutorchArgumentKind kind;
  guint source;
} GraftExecutorchArgument;

typedef struct {
  const char *domain;                         /* "aten" */
  const char *op_type;                        /* "_convolution" (interned) */
  const char *overload;                       /* "Scalar" for "Scalar_out"; NULL for the default */
  const GraftExecutorchArgument *arguments;   /* NULL: the program's, in order */
  guint n_results;                            /* results the functional op has; 0: all of the call's */
} GraftExecutorchOp;

/* name "aten::convolution", overload "out" (may be NULL) → the IR's op. */
void graft_executorch_op_translate (const char *name, const char *overload, GraftExecutorchOp *op);

/* TRUE if "aten::add.out" (name.overload as the program spells it) is a
 * kernel of ExecuTorch's portable library or one of its prim ops. */
gboolean graft_executorch_op_is_portable (const char *qualified_name);

G_END_DECLS
