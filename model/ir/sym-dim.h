/* Arithmetic on dimensions that may be symbolic.
 *
 * A symbolic dim's symbol is read as a product: a coefficient and named
 * factors ("batch", "batch*2", "batch*seq"). That is enough to follow a
 * batch through Reshape(-1), Flatten and Concat of shape vectors, which is
 * what the rewrites need; sums are not represented (they become unknown).
 */
#pragma once

#include "ir/shape.h"

G_BEGIN_DECLS

/* a × b; unknown if either is unknown. */
GraftDim graft_dim_multiply (GraftDim a, GraftDim b);
/* a + b when both are fixed or name the same factors (batch + batch is
 * batch*2: Concat of two inputs sharing a batch); else unknown. */
GraftDim graft_dim_add (GraftDim a, GraftDim b);
/* a ÷ b when b divides a exactly (coefficients and factors); else unknown. */
GraftDim graft_dim_divide (GraftDim a, GraftDim b);
/* Product of dims [start, end) of shape; unknown if any is unknown. */
GraftDim graft_shape_get_dim_product (const GraftShape *shape, int start, int end);

/* The dim's size when each symbol has the gint64 in values (interned or
 * plain char* symbol → gint64*): "batch*4" at batch 3 is 12. FALSE when the
 * dim is unknown or names a symbol values lacks. */
gboolean graft_dim_evaluate (GraftDim dim, GHashTable *values, gint64 *size);

G_END_DECLS
