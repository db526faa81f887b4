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
  /* Narrow types of ONNX 1.14+ (IR 9-12). Graft keeps one element per
   * byte in memory (the float8/float4 bit pattern, or the integer
   * sign-extended); ONNX files pack the 4- and 2-bit types. */
  GRAFT_DTYPE_FLOAT8E4M3FN = 17,
  GRAFT_DTYPE_FLOAT8E4M3FNUZ = 18,
  GRAFT_DTYPE_FLOAT8E5M2 = 19,
  GRAFT_DTYPE_FLOAT8E5M2FNUZ = 20,
  GRAFT_DTYPE_UINT4 = 21,
  GRAFT_DTYPE_INT4 = 22,
  GRAFT_DTYPE_FLOAT4E2M1 = 23,
  GRAFT_DTYPE_FLOAT8E8M0 = 24,
  GRAFT_DTYPE_UINT2 = 25,
  GRAFT_DTYPE_INT2 = 26,
  GRAFT_DTYPE_LAST_ONNX = GRAFT_DTYPE_INT2,

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

/* Bits per element in an ONNX file's packed data for the 4- and 2-bit
 * types, 0 for the others (stored as in memory). */
guint graft_dtype_get_packed_bits (GraftDType dtype);
gsize graft_dtype_get_packed_size (GraftDType dtype, gsize numel);
/* Between ONNX's packed layout (low bits first) and Graft's one element
 * per byte; both return a new buffer of the other layout's size. unpack
 * returns NULL when packed is not graft_dtype_get_packed_size() long. */
GBytes *graft_dtype_unpack (GraftDType dtype, GBytes *packed, gsize numel);
GBytes *graft_dtype_pack (GraftDType dtype, GBytes *unpacked);

gboolean graft_dtype_is_valid (int dtype);
/* torch's c10::ScalarType codes, which TorchScript keeps in dtype=
 * arguments (6 is float32): UNDEFINED / -1 where there is none. */
GraftDType graft_dtype_from_torch_scalar_type (gint64 code);
gint64 graft_dtype_to_torch_scalar_type (GraftDType dtype);
gboolean graft_dtype_is_float (GraftDType dtype);
gboolean graft_dtype_is_integer (GraftDType dtype);

G_END_DECLS
