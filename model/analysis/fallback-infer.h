/* Shape inference for operators the runtime registry has no inference
 * for yet, with the registry's GraftInferFunc signature so that the driver
 * treats both alike. The registry always wins when it has an entry. */
#pragma once

#include "runtime/op.h"

G_BEGIN_DECLS

/* NULL if there is no fallback for op ("onnx::Conv"). */
GraftInferFunc graft_fallback_infer_lookup (const char *op);

G_END_DECLS
