#include "ir/dtype.h"

#include <string.h>

typedef struct {
  GraftDType dtype;
  const char *name;
  const char *onnx_name;
  gsize size;
} DTypeInfo;

static const DTypeInfo dtype_table[] = {
  { GRAFT_DTYPE_UNDEFINED, "undefined", "UNDEFINED", 0 },
  { GRAFT_DTYPE_FLOAT32, "float32", "FLOAT", 4 },
  { GRAFT_DTYPE_UINT8, "uint8", "UINT8", 1 },
  { GRAFT_DTYPE_INT8, "int8", "INT8", 1 },
  { GRAFT_DTYPE_UINT16, "uint16", "UINT16", 2 },
  { GRAFT_DTYPE_INT16, "int16", "INT16", 2 },
  { GRAFT_DTYPE_INT32, "int32", "INT32", 4 },
  { GRAFT_DTYPE_INT64, "int64", "INT64", 8 },
  { GRAFT_DTYPE_STRING, "string", "STRING", 0 },
  { GRAFT_DTYPE_BOOL, "bool", "BOOL", 1 },
  { GRAFT_DTYPE_FLOAT16, "float16", "FLOAT16", 2 },
  { GRAFT_DTYPE_FLOAT64, "float64", "DOUBLE", 8 },
  { GRAFT_DTYPE_UINT32, "uint32", "UINT32", 4 },
  { GRAFT_DTYPE_UINT64, "uint64", "UINT64", 8 },
  { GRAFT_DTYPE_COMPLEX64, "complex64", "COMPLEX64", 8 },
  { GRAFT_DTYPE_COMPLEX128, "complex128", "COMPLEX128", 16 },
  { GRAFT_DTYPE_BFLOAT16, "bfloat16", "BFLOAT16", 2 },
  { GRAFT_DTYPE_FLOAT8E4M3FN, "float8e4m3fn", "FLOAT8E4M3FN", 1 },
  { GRAFT_DTYPE_FLOAT8E4M3FNUZ, "float8e4m3fnuz", "FLOAT8E4M3FNUZ", 1 },
  { GRAFT_DTYPE_FLOAT8E5M2, "float8e5m2", "FLOAT8E5M2", 1 },
  { GRAFT_DTYPE_FLOAT8E5M2FNUZ, "float8e5m2fnuz", "FLOAT8E5M2FNUZ", 1 },
  { GRAFT_DTYPE_UINT4, "uint4", "UINT4", 1 },
  { GRAFT_DTYPE_INT4, "int4", "INT4", 1 },
  { GRAFT_DTYPE_FLOAT4E2M1, "float4e2m1", "FLOAT4E2M1", 1 },
  { GRAFT_DTYPE_FLOAT8E8M0, "float8e8m0", "FLOAT8E8M0", 1 },
  { GRAFT_DTYPE_UINT2, "uint2", "UINT2", 1 },
  { GRAFT_DTYPE_INT2, "int2", "INT2", 1 },
  { GRAFT_DTYPE_QINT8, "qint8", "QINT8", 1 },
  { GRAFT_DTYPE_QUINT8, "quint8", "QUINT8", 1 },
  { GRAFT_DTYPE_QINT32, "qint32", "QINT32", 4 },
  { GRAFT_DTYPE_QUINT4X2, "quint4x2", "QUINT4X2", 1 },
  { GRAFT_DTYPE_QUINT2X4, "quint2x4", "QUINT2X4", 1 },
};

static const DTypeInfo *
lookup (GraftDType dtype)
{
  for (gsize i = 0; i < G_N_ELEMENTS (dtype_table); i++)
    if (dtype_table[i].dtype == dtype)
      return &dtype_table[i];
  return NULL;
}

const char *
graft_dtype_to_string (GraftDType dtype)
{
  const DTypeInfo *info = lookup (dtype);
  return info ? info->name : "invalid";
}

GraftDType
graft_dtype_from_string (const char *name)
{
  if (name == NULL)
    return GRAFT_DTYPE_UNDEFINED;
  for (gsize i = 0; i < G_N_ELEMENTS (dtype_table); i++)
    if (strcmp (dtype_table[i].name, name) == 0 || strcmp (dtype_table[i].onnx_name, name) == 0)
      return dtype_table[i].dtype;
  if (strcmp (name, "float") == 0)
    return GRAFT_DTYPE_FLOAT32;
  if (strcmp (name, "double") == 0)
    return GRAFT_DTYPE_FLOAT64;
  return GRAFT_DTYPE_UNDEFINED;
}

gsize
graft_dtype_get_size (GraftDType dtype)
{
  const DTypeInfo *info = lookup (dtype);
  return info ? info->size : 0;
}

guint
graft_dtype_get_packed_bits (GraftDType dtype)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_UINT4: case GRAFT_DTYPE_INT4: case GRAFT_DTYPE_FLOAT4E2M1:
      return 4;
    case GRAFT_DTYPE_UINT2: case GRAFT_DTYPE_INT2:
      return 2;
    default:
      return 0;
    }
}

gsize
graft_dtype_get_packed_size (GraftDType dtype, gsize numel)
{
  return (numel * graft_dtype_get_packed_bits (dtype) + 7) / 8;
}

GBytes *
graft_dtype_unpack (GraftDType dtype, GBytes *packed, gsize numel)
{
  guint bits = graft_dtype_get_packed_bits (dtype);
  gsize have;
  const guint8 *in = g_bytes_get_data (packed, &have);

  g_return_val_if_fail (bits != 0, NULL);
  if (have != graft_dtype_get_packed_size (dtype, numel))
    return NULL;
  guint8 *out = g_malloc (numel + 1);
  guint per_byte = 8 / bits, mask = (1u << bits) - 1;
  gboolean is_signed = dtype == GRAFT_DTYPE_INT4 || dtype == GRAFT_DTYPE_INT2;
  for (gsize i = 0; i < numel; i++)
    {
      guint value = (in[i / per_byte] >> (bits * (i % per_byte))) & mask;
      if (is_signed && (value >> (bits - 1)))
        value |= ~mask;  /* sign-extend into the byte */
      out[i] = (guint8) value;
    }
  return g_bytes_new_take (out, numel);
}

GBytes *
graft_dtype_pack (GraftDType dtype, GBytes *unpacked)
{
  guint bits = graft_dtype_get_packed_bits (dtype);
  gsize numel;
  const guint8 *in = g_bytes_get_data (unpacked, &numel);

  g_return_val_if_fail (bits != 0, NULL);
  gsize size = graft_dtype_get_packed_size (dtype, numel);
  guint8 *out = g_malloc0 (size + 1);
  guint per_byte = 8 / bits, mask = (1u << bits) - 1;
  for (gsize i = 0; i < numel; i++)
    out[i / per_byte] |= (in[i] & mask) << (bits * (i % per_byte));
  return g_bytes_new_take (out, size);
}

gboolean
graft_dtype_is_valid (int dtype)
{
  return dtype != GRAFT_DTYPE_UNDEFINED && lookup ((GraftDType) dtype) != NULL;
}

gboolean
graft_dtype_is_float (GraftDType dtype)
{
  return dtype == GRAFT_DTYPE_FLOAT32 || dtype == GRAFT_DTYPE_FLOAT64 ||
         dtype == GRAFT_DTYPE_FLOAT16 || dtype == GRAFT_DTYPE_BFLOAT16;
}

gboolean
graft_dtype_is_integer (GraftDType dtype)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_UINT8: case GRAFT_DTYPE_INT8:
    case GRAFT_DTYPE_UINT16: case GRAFT_DTYPE_INT16:
    case GRAFT_DTYPE_UINT32: case GRAFT_DTYPE_INT32:
    case GRAFT_DTYPE_UINT64: case GRAFT_DTYPE_INT64:
      return TRUE;
    default:
      return FALSE;
    }
}

GraftDType
graft_dtype_from_torch_scalar_type (gint64 code)
{
  /* c10::ScalarType order, which ExecuTorch's ScalarType keeps; the
   * complex-half and bit-packed types (8, 18-22) have no Graft dtype. */
  static const GraftDType types[] = {
    GRAFT_DTYPE_UINT8, GRAFT_DTYPE_INT8, GRAFT_DTYPE_INT16, GRAFT_DTYPE_INT32, GRAFT_DTYPE_INT64,
    GRAFT_DTYPE_FLOAT16, GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_FLOAT64, GRAFT_DTYPE_UNDEFINED,
    GRAFT_DTYPE_COMPLEX64, GRAFT_DTYPE_COMPLEX128, GRAFT_DTYPE_BOOL,
    GRAFT_DTYPE_QINT8, GRAFT_DTYPE_QUINT8, GRAFT_DTYPE_QINT32, GRAFT_DTYPE_BFLOAT16,
    GRAFT_DTYPE_QUINT4X2, GRAFT_DTYPE_QUINT2X4,
    GRAFT_DTYPE_UNDEFINED, GRAFT_DTYPE_UNDEFINED, GRAFT_DTYPE_UNDEFINED, GRAFT_DTYPE_UNDEFINED, GRAFT_DTYPE_UNDEFINED,
    GRAFT_DTYPE_FLOAT8E5M2, GRAFT_DTYPE_FLOAT8E4M3FN, GRAFT_DTYPE_FLOAT8E5M2FNUZ, GRAFT_DTYPE_FLOAT8E4M3FNUZ,
    GRAFT_DTYPE_UINT16, GRAFT_DTYPE_UINT32, GRAFT_DTYPE_UINT64,
  };
  if (code < 0 || code >= (gint64) G_N_ELEMENTS (types))
    return GRAFT_DTYPE_UNDEFINED;
  return types[code];
}

gint64
graft_dtype_to_torch_scalar_type (GraftDType dtype)
{
  for (gint64 code = 0; code < 30; code++)
    if (dtype != GRAFT_DTYPE_UNDEFINED && graft_dtype_from_torch_scalar_type (code) == dtype)
      return code;
  return -1;
}
