#include "onnx/writer-proto.h"
#include "onnx/type-proto.h"
#include "onnx/kept-fields.h"
#include "ir/model-error.h"

#include <string.h>

void
graft_onnx_write_context_init (GraftOnnxWriteContext *context)
{
  context->arena = g_ptr_array_new_with_free_func (g_free);
  context->tensor_bytes = 0;
  context->data_file = NULL;
}

void
graft_onnx_write_context_clear (GraftOnnxWriteContext *context)
{
  g_clear_pointer (&context->arena, g_ptr_array_unref);
}

gpointer
graft_onnx_write_alloc (GraftOnnxWriteContext *context, gsize size)
{
  gpointer block = g_malloc0 (MAX (size, 1));

  g_ptr_array_add (context->arena, block);
  return block;
}

char *
graft_onnx_write_string (const char *text)
{
  return text != NULL && text[0] != '\0' ? (char *) text : NULL;
}

#define ALLOC_MESSAGE(context, type, init) \
  ({ type *_m = graft_onnx_write_alloc ((context), sizeof (type)); type _i = init; *_m = _i; _m; })

static Onnx__TensorProto *tensor_data_to_proto (GraftOnnxWriteContext *context, GraftTensor *tensor,
                                                 const char *name, GError **error);

Onnx__TensorProto *
graft_onnx_tensor_to_proto (GraftOnnxWriteContext *context, GraftTensor *tensor, const char *name, GError **error)
{
  Onnx__TensorProto *proto = tensor_data_to_proto (context, tensor, name, error);

  if (proto == NULL || !graft_onnx_restore_kept_fields (context, &proto->base, tensor->onnx_kept_fields, error))
    return NULL;
  return proto;
}

/* Name, type and shape: everything but the data. */
static Onnx__TensorProto *
tensor_header_to_proto (GraftOnnxWriteContext *context, GraftTensor *tensor, const char *name)
{
  Onnx__TensorProto *proto = ALLOC_MESSAGE (context, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);

  proto->name = graft_onnx_write_string (name);
  proto->doc_string = graft_onnx_write_string (tensor->doc_string);
  proto->has_data_type = TRUE;
  proto->data_type = (int32_t) tensor->dtype;
  proto->n_dims = tensor->rank;
  proto->dims = tensor->dims;
  return proto;
}

Onnx__StringStringEntryProto *
graft_onnx_string_entry_to_proto (GraftOnnxWriteContext *context, const char *key, const char *value)
{
  Onnx__StringStringEntryProto *entry = ALLOC_MESSAGE (context, Onnx__StringStringEntryProto,
                                                       ONNX__STRING_STRING_ENTRY_PROTO__INIT);

  entry->key = (char *) key;
  entry->value = (char *) value;
  return entry;
}

static char *
arena_print_number (GraftOnnxWriteContext *context, guint64 number)
{
  g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT, number);
  char *copy = graft_onnx_write_alloc (context, strlen (text) + 1);

  return strcpy (copy, text);
}

Onnx__TensorProto *
graft_onnx_initializer_to_proto (GraftOnnxWriteContext *context, GraftTensor *tensor, const char *name, GError **error)
{
  Onnx__TensorProto *proto;
  gsize nbytes = graft_tensor_get_nbytes (tensor);
  guint64 offset;

  /* Strings and sub-byte types stay inline, as onnx writes them. */
  if (context->data_file == NULL || tensor->dtype == GRAFT_DTYPE_STRING || tensor->dtype > GRAFT_DTYPE_LAST_ONNX
      || graft_dtype_get_packed_bits (tensor->dtype) != 0 || nbytes < GRAFT_ONNX_EXTERNAL_MIN_BYTES)
    return graft_onnx_tensor_to_proto (context, tensor, name, error);

  proto = tensor_header_to_proto (context, tensor, name);
  offset = graft_onnx_data_file_place (context->data_file, tensor);
  proto->has_data_location = TRUE;
  proto->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  proto->n_external_data = 3;
  proto->external_data = graft_onnx_write_alloc (context, sizeof (gpointer) * 3);
  proto->external_data[0] = graft_onnx_string_entry_to_proto (context, "location",
                                                              graft_onnx_data_file_get_location (context->data_file));
  proto->external_data[1] = graft_onnx_string_entry_to_proto (context, "offset", arena_print_number (context, offset));
  proto->external_data[2] = graft_onnx_string_entry_to_proto (context, "length", arena_print_number (context, nbytes));
  if (!graft_onnx_restore_kept_fields (context, &proto->base, tensor->onnx_kept_fields, error))
    return NULL;
  return proto;
}

static Onnx__TensorProto *
tensor_data_to_proto (GraftOnnxWriteContext *context, GraftTensor *tensor, const char *name, GError **error)
{
  Onnx__TensorProto *proto = tensor_header_to_proto (context, tensor, name);


  if (tensor->dtype > GRAFT_DTYPE_LAST_ONNX)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "tensor '%s': element type %s has no ONNX equivalent",
                   tensor->name, graft_dtype_to_string (tensor->dtype));
      return NULL;
    }
  if (tensor->dtype == GRAFT_DTYPE_STRING)
    {
      guint n = tensor->strings ? tensor->strings->len : 0;

      proto->n_string_data = n;
      proto->string_data = graft_onnx_write_alloc (context, sizeof (ProtobufCBinaryData) * n);
      for (guint i = 0; i < n; i++)
        {
          gsize len;
          proto->string_data[i].data = (uint8_t *) g_bytes_get_data (g_ptr_array_index (tensor->strings, i), &len);
          proto->string_data[i].len = len;
          context->tensor_bytes += len;
        }
      return proto;
    }

  {
    /* Inline (external data read in): initializers go to a data file
     * only through graft_onnx_initializer_to_proto. */
    GBytes *bytes = graft_tensor_get_data (tensor, error);
    gsize len;

    if (bytes == NULL)
      return NULL;
    if (graft_dtype_get_packed_bits (tensor->dtype) != 0)
      {
        /* The packed copy lives as long as the write context. */
        g_autoptr(GBytes) packed = graft_dtype_pack (tensor->dtype, bytes);
        gsize size;
        const void *data = g_bytes_get_data (packed, &size);
        proto->has_raw_data = TRUE;
        proto->raw_data.data = graft_onnx_write_alloc (context, size);
        memcpy (proto->raw_data.data, data, size);
        proto->raw_data.len = size;
        context->tensor_bytes += size;
        return proto;
      }
    proto->has_raw_data = TRUE;
    proto->raw_data.data = (uint8_t *) g_bytes_get_data (bytes, &len);
    proto->raw_data.len = len;
    context->tensor_bytes += len;
  }
  return proto;
}

static gboolean
is_external (const Onnx__TensorProto *tensor)
{
  return tensor->has_data_location && tensor->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

Onnx__SparseTensorProto *
graft_onnx_kept_sparse_to_proto (GraftOnnxWriteContext *context, GraftTensor *tensor, const char *name)
{
  Onnx__SparseTensorProto *proto;

  if (tensor->onnx_sparse == NULL)
    return NULL;
  proto = (Onnx__SparseTensorProto *) graft_onnx_unpack_kept (context, &onnx__sparse_tensor_proto__descriptor,
                                                              tensor->onnx_sparse);
  /* Only while it still describes the tensor (set_data drops it; a
   * changed shape or type must not be), and never pointing at external
   * data: the saved file stands alone. */
  if (proto == NULL || proto->values == NULL || proto->indices == NULL || is_external (proto->values)
      || is_external (proto->indices) || proto->values->data_type != (int32_t) tensor->dtype
      || proto->n_dims != (size_t) tensor->rank
      || (tensor->rank > 0 && memcmp (proto->dims, tensor->dims, sizeof (gint64) * tensor->rank) != 0))
    return NULL;
  proto->values->name = graft_onnx_write_string (name);
  return proto;
}

Onnx__SparseTensorProto *
graft_onnx_tensor_to_sparse_proto (GraftOnnxWriteContext *context, GraftTensor *tensor, GError **error)
{
  Onnx__SparseTensorProto *proto;
  Onnx__TensorProto *values, *indices;
  gsize item = graft_dtype_get_size (tensor->dtype);
  gint64 numel = graft_tensor_get_numel (tensor);
  GBytes *bytes;
  const guint8 *dense;
  guint8 *packed;
  gint64 *positions;
  gint64 nnz = 0;

  proto = graft_onnx_kept_sparse_to_proto (context, tensor, tensor->name);
  if (proto != NULL)
    return proto;
  proto = ALLOC_MESSAGE (context, Onnx__SparseTensorProto, ONNX__SPARSE_TENSOR_PROTO__INIT);
  if (item == 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "sparse tensor '%s': %s elements cannot be written sparse",
                   tensor->name, graft_dtype_to_string (tensor->dtype));
      return NULL;
    }
  bytes = graft_tensor_get_data (tensor, error);
  if (bytes == NULL)
    return NULL;
  dense = g_bytes_get_data (bytes, NULL);
  packed = graft_onnx_write_alloc (context, item * MAX (numel, 1));
  positions = graft_onnx_write_alloc (context, sizeof (gint64) * MAX (numel, 1));
  for (gint64 i = 0; i < numel; i++)
    {
      const guint8 *element = dense + i * item;
      gboolean zero = TRUE;

      for (gsize b = 0; b < item && zero; b++)
        zero = element[b] == 0;
      if (zero)
        continue;
      memcpy (packed + nnz * item, element, item);
      positions[nnz++] = GINT64_TO_LE (i);
    }

  values = ALLOC_MESSAGE (context, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
  values->name = graft_onnx_write_string (tensor->name);
  values->has_data_type = TRUE;
  values->data_type = tensor->dtype;
  values->n_dims = 1;
  values->dims = graft_onnx_write_alloc (context, sizeof (gint64));
  values->dims[0] = nnz;
  values->has_raw_data = TRUE;
  values->raw_data.data = packed;
  values->raw_data.len = nnz * item;

  indices = ALLOC_MESSAGE (context, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
  indices->has_data_type = TRUE;
  indices->data_type = GRAFT_DTYPE_INT64;
  indices->n_dims = 1;
  indices->dims = graft_onnx_write_alloc (context, sizeof (gint64));
  indices->dims[0] = nnz;
  indices->has_raw_data = TRUE;
  indices->raw_data.data = (uint8_t *) positions;
  indices->raw_data.len = nnz * sizeof (gint64);

  proto->values = values;
  proto->indices = indices;
  proto->n_dims = tensor->rank;
  proto->dims = tensor->dims;
  context->tensor_bytes += nnz * (item + 8);
  return proto;
}

static gboolean
parse_elem_type (const char **p, int32_t *elem_type)
{
  gsize best_len = 0;

  /* Longest match: "int8" must not stop "int64" early. */
  for (int t = 1; t <= GRAFT_DTYPE_BFLOAT16; t++)
    {
      const char *name = graft_onnx_elem_type_name (t);
      gsize len = strlen (name);

      if (len > best_len && strncmp (*p, name, len) == 0)
        {
          best_len = len;
          *elem_type = t;
        }
    }
  *p += best_len;
  return best_len > 0;
}

static gboolean
expect (const char **p, const char *token)
{
  gsize len = strlen (token);

  if (strncmp (*p, token, len) != 0)
    return FALSE;
  *p += len;
  return TRUE;
}

static Onnx__TypeProto *
parse_type (GraftOnnxWriteContext *context, const char **p, guint depth)
{
  Onnx__TypeProto *type = ALLOC_MESSAGE (context, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);

  if (depth > 100)
    return NULL;
  if (expect (p, "tensor("))
    {
      type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
      type->tensor_type = ALLOC_MESSAGE (context, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
      type->tensor_type->has_elem_type = parse_elem_type (p, &type->tensor_type->elem_type);
    }
  else if (expect (p, "sparse_tensor("))
    {
      type->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
      type->sparse_tensor_type = ALLOC_MESSAGE (context, Onnx__TypeProto__SparseTensor,
                                                ONNX__TYPE_PROTO__SPARSE_TENSOR__INIT);
      type->sparse_tensor_type->has_elem_type = parse_elem_type (p, &type->sparse_tensor_type->elem_type);
    }
  else if (expect (p, "seq("))
    {
      type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
      type->sequence_type = ALLOC_MESSAGE (context, Onnx__TypeProto__Sequence, ONNX__TYPE_PROTO__SEQUENCE__INIT);
      if (**p != ')' && (type->sequence_type->elem_type = parse_type (context, p, depth + 1)) == NULL)
        return NULL;
    }
  else if (expect (p, "optional("))
    {
      type->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
      type->optional_type = ALLOC_MESSAGE (context, Onnx__TypeProto__Optional, ONNX__TYPE_PROTO__OPTIONAL__INIT);
      if (**p != ')' && (type->optional_type->elem_type = parse_type (context, p, depth + 1)) == NULL)
        return NULL;
    }
  else if (expect (p, "map("))
    {
      type->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
      type->map_type = ALLOC_MESSAGE (context, Onnx__TypeProto__Map, ONNX__TYPE_PROTO__MAP__INIT);
      type->map_type->has_key_type = parse_elem_type (p, &type->map_type->key_type);
      if (!expect (p, ",") || (type->map_type->value_type = parse_type (context, p, depth + 1)) == NULL)
        return NULL;
    }
  else if (expect (p, "?"))
    return type;   /* the reader's spelling of an unset type */
  else
    return NULL;
  return expect (p, ")") ? type : NULL;
}

Onnx__TypeProto *
graft_onnx_type_from_string (GraftOnnxWriteContext *context, const char *text)
{
  const char *p = text;
  Onnx__TypeProto *type;

  if (text == NULL)
    return NULL;
  type = parse_type (context, &p, 0);
  return type != NULL && *p == '\0' ? type : NULL;
}

static Onnx__TensorShapeProto *
shape_to_proto (GraftOnnxWriteContext *context, const GraftShape *shape)
{
  Onnx__TensorShapeProto *proto;

  if (shape->rank < 0)
    return NULL;
  proto = ALLOC_MESSAGE (context, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
  proto->n_dim = shape->rank;
  proto->dim = graft_onnx_write_alloc (context, sizeof (gpointer) * shape->rank);
  for (int i = 0; i < shape->rank; i++)
    {
      Onnx__TensorShapeProto__Dimension *dim = ALLOC_MESSAGE (context, Onnx__TensorShapeProto__Dimension,
                                                              ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
      const GraftDim *d = &shape->dims[i];

      if (d->kind == GRAFT_DIM_FIXED)
        {
          dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          dim->dim_value = d->value;
        }
      else if (d->kind == GRAFT_DIM_SYMBOLIC && d->symbol != NULL)
        {
          dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
          dim->dim_param = (char *) d->symbol;
        }
      proto->dim[i] = dim;
    }
  return proto;
}

/* The reader keeps the innermost tensor's shape of seq/optional types in
 * value->shape; put it back there. */
static void
attach_innermost_shape (GraftOnnxWriteContext *context, Onnx__TypeProto *type, const GraftShape *shape)
{
  for (guint depth = 0; type != NULL && depth < 100; depth++)
    switch (type->value_case)
      {
      case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        type->tensor_type->shape = shape_to_proto (context, shape);
        return;
      case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        type->sparse_tensor_type->shape = shape_to_proto (context, shape);
        return;
      case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        type = type->sequence_type->elem_type;
        break;
      case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        type = type->optional_type->elem_type;
        break;
      default:
        return;
      }
}

Onnx__TypeProto *
graft_onnx_kept_type (GraftOnnxWriteContext *context, GBytes *kept)
{
  return kept ? (Onnx__TypeProto *) graft_onnx_unpack_kept (context, &onnx__type_proto__descriptor, kept) : NULL;
}

/* Whether the TypeProto the value was read with still says what the IR says. */
static gboolean
kept_type_is_current (const Onnx__TypeProto *type, const GraftValue *value)
{
  GraftValue read_as = { .kind = GRAFT_VALUE_TENSOR, .shape = GRAFT_SHAPE_UNKNOWN };
  gboolean same;

  graft_onnx_apply_type (&read_as, type);
  same = read_as.kind == value->kind && read_as.dtype == value->dtype
         && graft_shape_equal (&read_as.shape, &value->shape)
         && g_strcmp0 (read_as.type_string, value->type_string) == 0;
  graft_shape_clear (&read_as.shape);
  g_free (read_as.type_string);
  return same;
}

static void
carry_dim_denotations (Onnx__TensorShapeProto *to, const Onnx__TensorShapeProto *from)
{
  /* By position only while the rank is the same. */
  if (to == NULL || from == NULL || to->n_dim != from->n_dim)
    return;
  for (size_t i = 0; i < to->n_dim; i++)
    to->dim[i]->denotation = from->dim[i]->denotation;
}

/* An edited type keeps the denotations of the type it replaces where the
 * two have the same structure. */
static void
carry_denotations (Onnx__TypeProto *to, const Onnx__TypeProto *from, guint depth)
{
  if (to == NULL || from == NULL || to->value_case != from->value_case || depth > 100)
    return;
  to->denotation = from->denotation;
  switch (to->value_case)
    {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
      carry_dim_denotations (to->tensor_type->shape, from->tensor_type->shape);
      break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
      carry_dim_denotations (to->sparse_tensor_type->shape, from->sparse_tensor_type->shape);
      break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      carry_denotations (to->sequence_type->elem_type, from->sequence_type->elem_type, depth + 1);
      break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
      carry_denotations (to->optional_type->elem_type, from->optional_type->elem_type, depth + 1);
      break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
      carry_denotations (to->map_type->value_type, from->map_type->value_type, depth + 1);
      break;
    default:
      break;
    }
}

static Onnx__TypeProto *type_from_ir (GraftOnnxWriteContext *context, const GraftValue *value);

/* The type the value was read with while the IR still agrees with it (it
 * has what the IR drops: denotations, shapes inside map types); else the
 * IR's type with the old denotations. */
Onnx__TypeProto *
graft_onnx_value_type_to_proto (GraftOnnxWriteContext *context, const GraftValue *value)
{
  Onnx__TypeProto *kept = graft_onnx_kept_type (context, value->onnx_type);
  Onnx__TypeProto *type;

  if (kept != NULL && kept_type_is_current (kept, value))
    return kept;
  type = type_from_ir (context, value);
  carry_denotations (type, kept, 0);
  return type;
}

static Onnx__TypeProto *
type_from_ir (GraftOnnxWriteContext *context, const GraftValue *value)
{
  Onnx__TypeProto *type;

  if (value->kind != GRAFT_VALUE_TENSOR && value->type_string != NULL)
    {
      type = graft_onnx_type_from_string (context, value->type_string);
      if (type != NULL)
        attach_innermost_shape (context, type, &value->shape);
      return type;
    }
  if (value->dtype == GRAFT_DTYPE_UNDEFINED && value->shape.rank < 0)
    return NULL;
  type = ALLOC_MESSAGE (context, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
  type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  type->tensor_type = ALLOC_MESSAGE (context, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
  if (value->dtype != GRAFT_DTYPE_UNDEFINED)
    {
      type->tensor_type->has_elem_type = TRUE;
      type->tensor_type->elem_type = value->dtype;
    }
  type->tensor_type->shape = shape_to_proto (context, &value->shape);
  return type;
}
