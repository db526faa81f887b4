#include "onnx/type-proto.h"

static const char *const elem_type_names[] = {
  "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string",
  "bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16",
  "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
  "float8e8m0", "uint2", "int2",
};

const char *
graft_onnx_elem_type_name (int elem_type)
{
  if (elem_type < 0 || (gsize) elem_type >= G_N_ELEMENTS (elem_type_names))
    return "unknown";
  return elem_type_names[elem_type];
}

GraftDType
graft_onnx_dtype_from_elem_type (int elem_type)
{
  if (elem_type <= 0 || (gsize) elem_type >= G_N_ELEMENTS (elem_type_names))
    return GRAFT_DTYPE_UNDEFINED;
  return (GraftDType) elem_type;
}

static void
append_type (GString *out, const Onnx__TypeProto *type, guint depth)
{
  /* The wire pre-pass bounds nesting; this guards direct callers. */
  if (type == NULL || depth > 200)
    {
      g_string_append_c (out, '?');
      return;
    }
  switch (type->value_case)
    {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
      g_string_append_printf (out, "tensor(%s)", graft_onnx_elem_type_name (type->tensor_type->elem_type));
      break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
      g_string_append_printf (out, "sparse_tensor(%s)", graft_onnx_elem_type_name (type->sparse_tensor_type->elem_type));
      break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      g_string_append (out, "seq(");
      append_type (out, type->sequence_type->elem_type, depth + 1);
      g_string_append_c (out, ')');
      break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
      g_string_append (out, "optional(");
      append_type (out, type->optional_type->elem_type, depth + 1);
      g_string_append_c (out, ')');
      break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
      g_string_append_printf (out, "map(%s,", graft_onnx_elem_type_name (type->map_type->key_type));
      append_type (out, type->map_type->value_type, depth + 1);
      g_string_append_c (out, ')');
      break;
    default:
      g_string_append_c (out, '?');
      break;
    }
}

char *
graft_onnx_type_to_string (const Onnx__TypeProto *type)
{
  GString *out = g_string_new (NULL);

  append_type (out, type, 0);
  return g_string_free (out, FALSE);
}

static void
shape_from_proto (GraftShape *shape, const Onnx__TensorShapeProto *proto)
{
  graft_shape_clear (shape);
  if (proto == NULL)
    {
      *shape = GRAFT_SHAPE_UNKNOWN;
      return;
    }
  graft_shape_init (shape, (int) proto->n_dim);
  for (size_t i = 0; i < proto->n_dim; i++)
    {
      const Onnx__TensorShapeProto__Dimension *dim = proto->dim[i];

      if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0)
        shape->dims[i] = graft_dim_fixed (dim->dim_value);
      else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
               && dim->dim_param != NULL && dim->dim_param[0] != '\0')
        shape->dims[i] = graft_dim_symbolic (dim->dim_param);
      else
        shape->dims[i] = graft_dim_unknown ();
    }
}

/* The innermost tensor type of seq(...)/optional(...) nests, or NULL. */
static const Onnx__TypeProto *
innermost_tensor (const Onnx__TypeProto *type)
{
  for (guint depth = 0; type != NULL && depth < 200; depth++)
    {
      switch (type->value_case)
        {
        case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
          return type;
        case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
          type = type->sequence_type->elem_type;
          break;
        case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
          type = type->optional_type->elem_type;
          break;
        default:
          return NULL;
        }
    }
  return NULL;
}

void
graft_onnx_apply_type (GraftValue *value, const Onnx__TypeProto *type)
{
  const Onnx__TypeProto *tensor;

  if (type == NULL)
    return;
  switch (type->value_case)
    {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      value->kind = GRAFT_VALUE_SEQUENCE;
      break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
      value->kind = GRAFT_VALUE_MAP;
      break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
      value->kind = GRAFT_VALUE_OPTIONAL;
      break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
      value->kind = GRAFT_VALUE_SPARSE_TENSOR;
      break;
    default:
      value->kind = GRAFT_VALUE_TENSOR;
      break;
    }

  g_clear_pointer (&value->type_string, g_free);
  if (value->kind != GRAFT_VALUE_TENSOR)
    value->type_string = graft_onnx_type_to_string (type);

  tensor = innermost_tensor (type);
  if (tensor == NULL)
    {
      value->dtype = GRAFT_DTYPE_UNDEFINED;
      graft_shape_clear (&value->shape);
      value->shape = GRAFT_SHAPE_UNKNOWN;
      return;
    }
  if (tensor->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    {
      value->dtype = graft_onnx_dtype_from_elem_type (tensor->tensor_type->elem_type);
      shape_from_proto (&value->shape, tensor->tensor_type->shape);
    }
  else
    {
      value->dtype = graft_onnx_dtype_from_elem_type (tensor->sparse_tensor_type->elem_type);
      shape_from_proto (&value->shape, tensor->sparse_tensor_type->shape);
    }
}
