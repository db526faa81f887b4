/* Element types of tensors and values.
 *
 * The numbering follows ONNX TensorProto.DataType so that ONNX files map
 * one to one; types that only PyTorch has come after 100.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_DTYPE_UNDEFINED = 0,
  GRAFT_DTYPE_FLOAT32 = 1,
  GRAFT_DTYPE_UINT8 = 2,
  GRAFT_DTYPE_INT8 = 3,
  GRAFT_DTYPE_UINT16 = 4,
  GRAFT_DTYPE_INT16 = 5,
  GRAFT_DTYPE_INT32 = 6,
  GRAFT_DTYPE_INT64 = 7,
  GRAFT_DTYPE_STRING = 8,
  GRAFT_DTYPE_BOOL = 9,
  GRAFT_DTYPE_FLOAT16 = 10,
  GRAFT_DTYPE_FLOAT64 = 11,
  GRAFT_DTYPE_UINT32 = 12,
  GRAFT_DTYPE_UINT64 = 13,
  GRAFT_DTYPE_COMPLEX64 = 14,
  GRAFT_DTYPE_COMPLEX128 = 15,
  GRAFT_DTYPE_BFLOAT16 = 16,

  /* PyTorch-only element types */
  GRAFT_DTYPE_QINT8 = 101,
  GRAFT_DTYPE_QUINT8 = 102,
  GRAFT_DTYPE_QINT32 = 103,
  GRAFT_DTYPE_QUINT4X2 = 104,
  GRAFT_DTYPE_QUINT2X4 = 105,
} GraftDType;

/* Short lower-case name: "float32", "int64", "bool", "string"... */
const char *graft_dtype_to_string (GraftDType dtype);

/* Accepts the names of graft_dtype_to_string() and ONNX's upper-case
 * names ("FLOAT", "INT64"); returns GRAFT_DTYPE_UNDEFINED if unknown. */
GraftDType graft_dtype_from_string (const char *name);

/* Bytes per element in Graft's in-memory layout; 0 for STRING and
 * UNDEFINED (strings are stored as an array of GBytes). */
gsize graft_dtype_get_size (GraftDType dtype);

gboolean graft_dtype_is_valid (int dtype);
gboolean graft_dtype_is_float (GraftDType dtype);
gboolean graft_dtype_is_integer (GraftDType dtype);

G_END_DECLS
