#include "onnx/kept-fields.h"
#include "onnx/wire.h"
#include "ir/model-error.h"

#include <string.h>

/* Field numbers (onnx.proto) of what the IR has no place for, per message. */
static const struct {
  const ProtobufCMessageDescriptor *descriptor;
  guint32 fields[5];   /* 0-terminated */
} kept_fields[] = {
  /* training_info, configuration */
  { &onnx__model_proto__descriptor, { 20, 26 } },
  /* quantization_annotation, metadata_props */
  { &onnx__graph_proto__descriptor, { 14, 16 } },
  /* overload, device_configurations */
  { &onnx__node_proto__descriptor, { 8, 10 } },
  /* metadata_props */
  { &onnx__value_info_proto__descriptor, { 4 } },
  /* attribute_proto, value_info, overload, metadata_props */
  { &onnx__function_proto__descriptor, { 11, 12, 13, 14 } },
  /* segment, metadata_props */
  { &onnx__tensor_proto__descriptor, { 3, 16 } },
};

static gboolean
is_kept (const ProtobufCMessageDescriptor *descriptor, guint32 id)
{
  for (guint i = 0; i < G_N_ELEMENTS (kept_fields); i++)
    if (kept_fields[i].descriptor == descriptor)
      for (guint j = 0; j < G_N_ELEMENTS (kept_fields[i].fields) && kept_fields[i].fields[j] != 0; j++)
        if (kept_fields[i].fields[j] == id)
          return TRUE;
  return FALSE;
}

static gboolean
field_is_set (const ProtobufCMessage *message, const ProtobufCFieldDescriptor *field)
{
  const char *base = (const char *) message;

  if (field->label == PROTOBUF_C_LABEL_REPEATED)
    return *(const size_t *) (base + field->quantifier_offset) > 0;
  if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
    return *(const uint32_t *) (base + field->quantifier_offset) == field->id;
  if (field->type == PROTOBUF_C_TYPE_STRING || field->type == PROTOBUF_C_TYPE_MESSAGE)
    {
      const void *pointer = *(void *const *) (base + field->offset);
      return pointer != NULL && pointer != field->default_value;
    }
  if (field->label == PROTOBUF_C_LABEL_OPTIONAL)
    return *(const protobuf_c_boolean *) (base + field->quantifier_offset);
  return TRUE;
}

static gsize
member_size (const ProtobufCFieldDescriptor *field)
{
  if (field->label == PROTOBUF_C_LABEL_REPEATED)
    return sizeof (void *);
  switch (field->type)
    {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
      return 4;
    case PROTOBUF_C_TYPE_BOOL:
      return sizeof (protobuf_c_boolean);
    case PROTOBUF_C_TYPE_BYTES:
      return sizeof (ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
      return sizeof (void *);
    default:
      return 8;
    }
}

/* Copies one field (its value and its presence) between two messages of
 * the same type. Pointers are shared, not duplicated. */
static void
copy_field (ProtobufCMessage *dest, const ProtobufCMessage *src, const ProtobufCFieldDescriptor *field)
{
  char *to = (char *) dest;
  const char *from = (const char *) src;

  if (field->label == PROTOBUF_C_LABEL_REPEATED)
    memcpy (to + field->quantifier_offset, from + field->quantifier_offset, sizeof (size_t));
  else if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
    memcpy (to + field->quantifier_offset, from + field->quantifier_offset, sizeof (uint32_t));
  else if (field->label == PROTOBUF_C_LABEL_OPTIONAL && field->type != PROTOBUF_C_TYPE_STRING
           && field->type != PROTOBUF_C_TYPE_MESSAGE)
    memcpy (to + field->quantifier_offset, from + field->quantifier_offset, sizeof (protobuf_c_boolean));
  memcpy (to + field->offset, from + field->offset, member_size (field));
}

/* While a message is packed, every TensorProto under it gets its raw_data
 * back from the mapped file in place of the wire pass's marker; Undo
 * records what to put back afterwards. */
typedef struct {
  Onnx__TensorProto *tensor;
  protobuf_c_boolean has_raw_data;
  ProtobufCBinaryData raw_data;
  unsigned n_unknown_fields;
  ProtobufCMessageUnknownField *unknown_fields;
} Undo;

/* The unknown fields of message without the marker (a new array), or NULL. */
static ProtobufCMessageUnknownField *
unknown_without_marker (const ProtobufCMessage *message, unsigned *n)
{
  ProtobufCMessageUnknownField *fields = NULL;

  *n = 0;
  for (unsigned i = 0; i < message->n_unknown_fields; i++)
    if (!graft_onnx_wire_is_marker (&message->unknown_fields[i]))
      {
        if (fields == NULL)
          fields = g_new (ProtobufCMessageUnknownField, message->n_unknown_fields);
        fields[(*n)++] = message->unknown_fields[i];
      }
  return fields;
}

static void
put_back_raw_data (const GraftOnnxReadContext *context, ProtobufCMessage *message, GArray *undo)
{
  const ProtobufCMessageDescriptor *descriptor = message->descriptor;
  GraftOnnxSlice slice;

  if (descriptor == &onnx__tensor_proto__descriptor && context->slices != NULL
      && graft_onnx_wire_get_raw_slice (message, context->slices, &slice))
    {
      Onnx__TensorProto *tensor = (Onnx__TensorProto *) message;
      Undo entry = { tensor, tensor->has_raw_data, tensor->raw_data, message->n_unknown_fields, message->unknown_fields };

      g_array_append_val (undo, entry);
      tensor->has_raw_data = TRUE;
      if (slice.copy != NULL)
        tensor->raw_data.data = (uint8_t *) g_bytes_get_data (slice.copy, NULL);
      else
        tensor->raw_data.data = (uint8_t *) g_bytes_get_data (context->file_bytes, NULL) + slice.offset;
      tensor->raw_data.len = slice.length;
      message->unknown_fields = unknown_without_marker (message, &message->n_unknown_fields);
    }
  for (unsigned i = 0; i < descriptor->n_fields; i++)
    {
      const ProtobufCFieldDescriptor *field = &descriptor->fields[i];
      char *member = (char *) message + field->offset;

      if (field->type != PROTOBUF_C_TYPE_MESSAGE || !field_is_set (message, field))
        continue;
      if (field->label == PROTOBUF_C_LABEL_REPEATED)
        {
          size_t n = *(size_t *) ((char *) message + field->quantifier_offset);
          for (size_t j = 0; j < n; j++)
            put_back_raw_data (context, (*(ProtobufCMessage ***) member)[j], undo);
        }
      else
        put_back_raw_data (context, *(ProtobufCMessage **) member, undo);
    }
}

static GBytes *
pack (const GraftOnnxReadContext *context, ProtobufCMessage *message)
{
  g_autoptr(GArray) undo = g_array_new (FALSE, FALSE, sizeof (Undo));
  gsize size;
  guint8 *buffer;

  put_back_raw_data (context, message, undo);
  size = protobuf_c_message_get_packed_size (message);
  buffer = g_malloc (MAX (size, 1));
  protobuf_c_message_pack (message, buffer);
  for (guint i = undo->len; i > 0; i--)
    {
      Undo *entry = &g_array_index (undo, Undo, i - 1);

      g_free (entry->tensor->base.unknown_fields);
      entry->tensor->has_raw_data = entry->has_raw_data;
      entry->tensor->raw_data = entry->raw_data;
      entry->tensor->base.n_unknown_fields = entry->n_unknown_fields;
      entry->tensor->base.unknown_fields = entry->unknown_fields;
    }
  return g_bytes_new_take (buffer, size);
}

GBytes *
graft_onnx_keep_message (const GraftOnnxReadContext *context, const ProtobufCMessage *message)
{
  /* Packing only reads the message; the raw_data put back is undone. */
  return pack (context, (ProtobufCMessage *) message);
}

GBytes *
graft_onnx_keep_fields (const GraftOnnxReadContext *context, const ProtobufCMessage *message)
{
  const ProtobufCMessageDescriptor *descriptor = message->descriptor;
  g_autofree ProtobufCMessage *kept = g_malloc0 (descriptor->sizeof_message);
  g_autofree ProtobufCMessageUnknownField *unknown = NULL;
  gboolean any = FALSE;

  descriptor->message_init (kept);
  for (unsigned i = 0; i < descriptor->n_fields; i++)
    {
      const ProtobufCFieldDescriptor *field = &descriptor->fields[i];

      if (is_kept (descriptor, field->id) && field_is_set (message, field))
        {
          copy_field (kept, message, field);
          any = TRUE;
        }
    }
  /* Fields of a newer onnx.proto than this build's. */
  unknown = unknown_without_marker (message, &kept->n_unknown_fields);
  kept->unknown_fields = unknown;
  if (!any && kept->n_unknown_fields == 0)
    return NULL;
  /* kept shares its members with message: it is freed shallowly. */
  return pack (context, kept);
}

static void *
arena_alloc (void *allocator_data, size_t size)
{
  return graft_onnx_write_alloc (allocator_data, size);
}

static void
arena_free (void *allocator_data, void *pointer)
{
  /* The arena frees everything when the write context is cleared. */
}

ProtobufCMessage *
graft_onnx_unpack_kept (GraftOnnxWriteContext *context, const ProtobufCMessageDescriptor *descriptor, GBytes *kept)
{
  ProtobufCAllocator allocator = { arena_alloc, arena_free, context };
  gsize size;
  const guint8 *data = g_bytes_get_data (kept, &size);

  return protobuf_c_message_unpack (descriptor, &allocator, size, data);
}

gboolean
graft_onnx_restore_kept_fields (GraftOnnxWriteContext *context, ProtobufCMessage *message, GBytes *kept,
                                GError **error)
{
  const ProtobufCMessageDescriptor *descriptor = message->descriptor;
  ProtobufCMessage *unpacked;

  if (kept == NULL)
    return TRUE;
  unpacked = graft_onnx_unpack_kept (context, descriptor, kept);
  if (unpacked == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "the %s fields kept from the original file do not parse", descriptor->short_name);
      return FALSE;
    }
  for (unsigned i = 0; i < descriptor->n_fields; i++)
    if (field_is_set (unpacked, &descriptor->fields[i]))
      copy_field (message, unpacked, &descriptor->fields[i]);
  message->n_unknown_fields = unpacked->n_unknown_fields;
  message->unknown_fields = unpacked->unknown_fields;
  return TRUE;
}
