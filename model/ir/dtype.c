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
