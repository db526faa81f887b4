/* For the builders of a GraftInference inside model/analysis: a result is
 * immutable once handed out, so only call this before returning it. */
#pragma once

#include "analysis/shape-inference.h"

G_BEGIN_DECLS

/* Sets (or replaces) value's dtype and shape (copied). */
void _graft_inference_set_type (GraftInference *inference, const GraftValue *value, GraftDType dtype,
                                const GraftShape *shape);

G_END_DECLS
