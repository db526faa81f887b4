/* Shapes whose dimensions are fixed, symbolic (named) or unknown. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_DIM_UNKNOWN = 0,
  GRAFT_DIM_FIXED,
  GRAFT_DIM_SYMBOLIC,
} GraftDimKind;

typedef struct {
  GraftDimKind kind;
  gint64 value;        /* GRAFT_DIM_FIXED */
  const char *symbol;  /* GRAFT_DIM_SYMBOLIC; interned with g_intern_string() */
} GraftDim;

/* A shape is a value type: embed it, copy it with graft_shape_copy(),
 * release it with graft_shape_clear(). rank < 0 means the rank itself is
 * unknown; a scalar has rank 0. */
typedef struct {
  int rank;
  GraftDim *dims;
} GraftShape;

#define GRAFT_SHAPE_UNKNOWN ((GraftShape) { -1, NULL })

GraftDim graft_dim_fixed (gint64 value);
GraftDim graft_dim_symbolic (const char *symbol);
GraftDim graft_dim_unknown (void);
gboolean graft_dim_equal (const GraftDim *a, const GraftDim *b);

void graft_shape_init (GraftShape *shape, int rank);  /* all dims unknown */
void graft_shape_init_fixed (GraftShape *shape, int rank, const gint64 *dims);
void graft_shape_copy (GraftShape *dest, const GraftShape *src);
void graft_shape_clear (GraftShape *shape);
/* Clears and frees a shape of g_new0 (GraftShape, 1); NULL is allowed. */
void graft_shape_free (GraftShape *shape);
gboolean graft_shape_equal (const GraftShape *a, const GraftShape *b);
gboolean graft_shape_is_fully_fixed (const GraftShape *shape);

/* Overflow-checked arithmetic on dimension sizes and element counts:
 * FALSE (and *result untouched) when the exact result does not fit in a
 * gint64. Every size that comes from a file goes through these before it
 * sizes an allocation or a loop. */
gboolean graft_dim_mul_checked (gint64 a, gint64 b, gint64 *result);
gboolean graft_dim_add_checked (gint64 a, gint64 b, gint64 *result);

/* Product of the dims, or -1 when any dim (or the rank) is not fixed or
 * the product overflows. */
gint64 graft_shape_get_numel (const GraftShape *shape);

/* "2×3×224×224", "batch×3×?×?", "scalar", "?" for unknown rank. */
char *graft_shape_to_string (const GraftShape *shape);

/* A fixed shape as a user types it: "1x3x224x224", "1×3×224×224" or
 * "1,3,224,224" (spaces allowed); dims from 1 to G_MAXINT32. Fills shape
 * (graft_shape_clear it) or fails saying what is wrong. */
gboolean graft_shape_parse (const char *text, GraftShape *shape, GError **error);

G_END_DECLS
