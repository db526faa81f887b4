/* NumPy .npy files (format versions 1, 2 and 3) for runtime inputs and
 * outputs. Little- and big-endian numeric dtypes, bool, and unicode
 * strings ('<U'); fortran_order must be False. */
#pragma once

#include <glib.h>
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

GraftRtTensor *graft_npy_parse (const guint8 *data, gsize length, const char *what, GError **error);
GraftRtTensor *graft_npy_read (const char *path, GError **error);
/* Serialises (version 1.0, or 2.0 if the header needs it). */
GBytes *graft_npy_serialize (const GraftRtTensor *tensor, GError **error);
/* Writes atomically (temporary file then rename). */
gboolean graft_npy_write (const char *path, const GraftRtTensor *tensor, GError **error);
/* A model constant as .npy, written atomically. Types NumPy lacks are
 * widened without loss: bfloat16, float8 and float4 to float32, 4- and
 * 2-bit integers to int8/uint8, quantized integers to their storage
 * type. *saved_dtype (may be NULL) is the element type written. */
gboolean graft_npy_write_constant (const char *path, GraftTensor *tensor, GraftDType *saved_dtype, GError **error);

G_END_DECLS
