/* Values of the narrow element types (float8, float4, 4- and 2-bit
 * integers), which Graft keeps one per byte: the byte is the type's bit
 * pattern, or for the integers the value sign-extended. */
#pragma once

#include <glib.h>
#include "ir/dtype.h"

G_BEGIN_DECLS

gboolean graft_narrow_dtype_is_narrow (GraftDType dtype);
double graft_narrow_dtype_decode (GraftDType dtype, guint8 stored);
/* Rounds to nearest even. With saturate, values beyond the largest finite
 * one (infinities too) become it; without, they become infinity or NaN,
 * whichever the type has (ONNX Cast's `saturate`). Integers out of range
 * become 0, as ONNX's reference does. FLOAT8E8M0 rounds up (Cast's default
 * round_mode). */
guint8 graft_narrow_dtype_encode (GraftDType dtype, double value, gboolean saturate);

G_END_DECLS
