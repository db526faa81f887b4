/* TorchScript → torch.export: a traced or scripted archive's graph as an
 * ExportedProgram (the GraftModel the .pt2 writer saves), without PyTorch.
 *
 * What it writes: each aten node as the op overload torch's IR names
 * ("torch.ops.aten.add.Tensor"), found from the call's arguments in the
 * aten schemas (pytorch/aten-schemas.h), every argument named as the
 * schema names it; constant and list arguments folded into the call;
 * parameters, buffers (the classes' __buffers__) and tensor constants as
 * lifted placeholders with their state-dict names; nn_module_stack from
 * the module groups; dims that --dynamic frees as symbols with their
 * ranges, and the sizes that follow them (x.size(0) as sym_size, int
 * arithmetic as _operator nodes). Sizes torch would specialise (a
 * TorchScript size that does not change with the dynamic dims) become
 * constants, as torch.export makes them.
 *
 * The sizes of every value come from runs of Graft's runtime on random
 * inputs: at the export shape, and for each dynamic dim at two other
 * sizes in its range, so a size that follows a dim is written as the
 * multiple of it the runs show (2*batch + 1, batch*seq).
 *
 * Refused, naming the node: control flow (prim::If, prim::Loop), ops
 * torch has no overload for the call of, a size that is no such
 * function of the dynamic dims, in-place updates of weights or inputs
 * (torch.export would record them as mutations), and what Graft's
 * runtime cannot run. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef struct {
  const char *input;       /* graph input name */
  int axis;
  const char *symbol;      /* "batch" */
  gint64 min, max;         /* range; max < 0: unbounded */
} GraftPt2DynamicDim;

typedef struct {
  /* Shapes of graph inputs at export (char* → GraftShape*, fixed dims;
   * borrowed): TorchScript declares none, so every input needs one. */
  GHashTable *input_shapes;
  /* Element types (char* → GINT_TO_POINTER (GraftDType), may be NULL);
   * without one, float32 (int64 for ids an embedding reads). */
  GHashTable *input_dtypes;
  const GraftPt2DynamicDim *dynamic_dims;
  guint n_dynamic_dims;
} GraftPt2ConvertOptions;

/* A new model (format EXPORTED_PROGRAM) computing what model (format
 * TORCHSCRIPT) computes; graft_format_save (…, "pt2", …) writes it. */
GraftModel *graft_torchscript_to_pt2 (GraftModel *model, const GraftPt2ConvertOptions *options, GError **error);

G_END_DECLS
