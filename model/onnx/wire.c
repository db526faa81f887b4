#include "onnx/wire.h"
#include "loader.h"

#include <string.h>

/* Field number of the marker that replaces a stripped raw_data. The largest
 * legal field number, so that no ONNX version uses it; its payload is a
 * fixed64 slice index. */
#define MARKER_FIELD 0x1FFFFFFFu
#define WIRE_VARINT 0
#define WIRE_FIXED64 1
#define WIRE_LEN 2
#define WIRE_FIXED32 5

/* The ONNX messages that contain other messages. Only these are walked;
 * every other length-delimited field is copied as it is. */
typedef enum {
  MSG_NONE = 0,
  MSG_MODEL,
  MSG_GRAPH,
  MSG_NODE,
  MSG_ATTRIBUTE,
  MSG_TENSOR,
  MSG_SPARSE_TENSOR,
  MSG_VALUE_INFO,
  MSG_TYPE,
  MSG_TYPE_TENSOR,      /* TypeProto.Tensor and TypeProto.SparseTensor */
  MSG_TYPE_ELEMENT,     /* TypeProto.Sequence and TypeProto.Optional */
  MSG_TYPE_MAP,
  MSG_SHAPE,
  MSG_LEAF,             /* known message without nested messages */
  MSG_TRAINING_INFO,
  MSG_TENSOR_ANNOTATION,
  MSG_FUNCTION,
} MessageKind;

static const char *const message_names[] = {
  [MSG_NONE] = "?",
  [MSG_MODEL] = "ModelProto",
  [MSG_GRAPH] = "GraphProto",
  [MSG_NODE] = "NodeProto",
  [MSG_ATTRIBUTE] = "AttributeProto",
  [MSG_TENSOR] = "TensorProto",
  [MSG_SPARSE_TENSOR] = "SparseTensorProto",
  [MSG_VALUE_INFO] = "ValueInfoProto",
  [MSG_TYPE] = "TypeProto",
  [MSG_TYPE_TENSOR] = "TypeProto.Tensor",
  [MSG_TYPE_ELEMENT] = "TypeProto.Sequence",
  [MSG_TYPE_MAP] = "TypeProto.Map",
  [MSG_SHAPE] = "TensorShapeProto",
  [MSG_LEAF] = "message",
  [MSG_TRAINING_INFO] = "TrainingInfoProto",
  [MSG_TENSOR_ANNOTATION] = "TensorAnnotation",
  [MSG_FUNCTION] = "FunctionProto",
};

static MessageKind
child_kind (MessageKind parent, guint32 field)
{
  switch (parent)
    {
    case MSG_MODEL:
      switch (field)
        {
        case 7: return MSG_GRAPH;
        case 8: case 14: return MSG_LEAF;      /* opset_import, metadata_props */
        case 20: return MSG_TRAINING_INFO;
        case 25: return MSG_FUNCTION;
        }
      break;
    case MSG_GRAPH:
      switch (field)
        {
        case 1: return MSG_NODE;
        case 5: return MSG_TENSOR;
        case 15: return MSG_SPARSE_TENSOR;
        case 11: case 12: case 13: return MSG_VALUE_INFO;
        case 14: return MSG_TENSOR_ANNOTATION;
        }
      break;
    case MSG_NODE:
      if (field == 5)
        return MSG_ATTRIBUTE;
      break;
    case MSG_ATTRIBUTE:
      switch (field)
        {
        case 5: case 10: return MSG_TENSOR;
        case 6: case 11: return MSG_GRAPH;
        case 22: case 23: return MSG_SPARSE_TENSOR;
        case 14: case 15: return MSG_TYPE;
        }
      break;
    case MSG_TENSOR:
      if (field == 3 || field == 13)           /* segment, external_data */
        return MSG_LEAF;
      break;
    case MSG_SPARSE_TENSOR:
      if (field == 1 || field == 2)
        return MSG_TENSOR;
      break;
    case MSG_VALUE_INFO:
      if (field == 2)
        return MSG_TYPE;
      break;
    case MSG_TYPE:
      switch (field)
        {
        case 1: case 8: return MSG_TYPE_TENSOR;
        case 4: case 9: return MSG_TYPE_ELEMENT;
        case 5: return MSG_TYPE_MAP;
        }
      break;
    case MSG_TYPE_TENSOR:
      if (field == 2)
        return MSG_SHAPE;
      break;
    case MSG_TYPE_ELEMENT:
      if (field == 1)
        return MSG_TYPE;
      break;
    case MSG_TYPE_MAP:
      if (field == 2)
        return MSG_TYPE;
      break;
    case MSG_SHAPE:
      if (field == 1)
        return MSG_LEAF;                       /* Dimension */
      break;
    case MSG_TRAINING_INFO:
      if (field == 1 || field == 2)
        return MSG_GRAPH;
      if (field == 3 || field == 4)
        return MSG_LEAF;
      break;
    case MSG_TENSOR_ANNOTATION:
      if (field == 2)
        return MSG_LEAF;
      break;
    case MSG_FUNCTION:
      if (field == 7)
        return MSG_NODE;
      if (field == 9)
        return MSG_LEAF;
      break;
    case MSG_NONE:
    case MSG_LEAF:
      break;
    }
  return MSG_NONE;
}

typedef struct {
  const guint8 *data;
  gsize length;
  gsize min_strip;
  GByteArray *out;
  GArray *slices;
} Walker;

/* Reads a varint at *pos (not beyond end); returns its width in bytes, or 0
 * if it is cut off or longer than max_width bytes. */
static guint
read_varint (const guint8 *data, gsize pos, gsize end, guint max_width, guint64 *value)
{
  guint64 result = 0;

  for (guint i = 0; i < max_width && pos + i < end; i++)
    {
      result |= (guint64) (data[pos + i] & 0x7f) << (7 * i);
      if ((data[pos + i] & 0x80) == 0)
        {
          *value = result;
          return i + 1;
        }
    }
  return 0;
}

static void
append_varint (GByteArray *out, guint64 value)
{
  guint8 buffer[10];
  guint n = 0;

  do
    {
      buffer[n] = value & 0x7f;
      value >>= 7;
      if (value != 0)
        buffer[n] |= 0x80;
      n++;
    }
  while (value != 0);
  g_byte_array_append (out, buffer, n);
}

/* Writes value into width bytes as a (possibly padded) varint; protobuf
 * parsers accept the padding, and it lets a shrunk message keep the width
 * of its original length prefix. */
static void
patch_varint (guint8 *dest, guint width, guint64 value)
{
  for (guint i = 0; i < width; i++)
    {
      dest[i] = value & 0x7f;
      value >>= 7;
      if (i + 1 < width)
        dest[i] |= 0x80;
    }
}

static gboolean
fail (GError **error, GraftModelError code, gsize offset, MessageKind kind, const char *format, ...)
  G_GNUC_PRINTF (5, 6);

static gboolean
fail (GError **error, GraftModelError code, gsize offset, MessageKind kind, const char *format, ...)
{
  va_list args;
  g_autofree char *detail = NULL;

  va_start (args, format);
  detail = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, code, "invalid protobuf at byte %" G_GSIZE_FORMAT " (in %s): %s",
               offset, message_names[kind], detail);
  return FALSE;
}

static gboolean
walk_message (Walker *walker, MessageKind kind, gsize pos, gsize end, guint depth, GError **error)
{
  const guint8 *data = walker->data;

  if (depth > GRAFT_ONNX_WIRE_MAX_DEPTH)
    return fail (error, GRAFT_MODEL_ERROR_UNSAFE, pos, kind,
                 "messages are nested more than %d levels deep", GRAFT_ONNX_WIRE_MAX_DEPTH);

  while (pos < end)
    {
      gsize field_start = pos;
      guint64 tag, value;
      guint width = read_varint (data, pos, end, 5, &tag);

      if (width == 0 || tag > G_MAXUINT32)
        return fail (error, end == walker->length ? GRAFT_MODEL_ERROR_TRUNCATED : GRAFT_MODEL_ERROR_MALFORMED,
                     pos, kind, "unreadable field tag");
      pos += width;

      guint32 field = (guint32) (tag >> 3);
      guint wire_type = tag & 7;
      MessageKind child = child_kind (kind, field);

      if (field == 0)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, kind, "field number 0");
      if (child != MSG_NONE && wire_type != WIRE_LEN)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, kind,
                     "field %u must be a nested message but has wire type %u", field, wire_type);

      switch (wire_type)
        {
        case WIRE_VARINT:
          width = read_varint (data, pos, end, 10, &value);
          if (width == 0)
            return fail (error, end == walker->length ? GRAFT_MODEL_ERROR_TRUNCATED : GRAFT_MODEL_ERROR_MALFORMED,
                         pos, kind, "field %u: unterminated varint", field);
          pos += width;
          break;
        case WIRE_FIXED64:
        case WIRE_FIXED32:
          width = wire_type == WIRE_FIXED64 ? 8 : 4;
          if (end - pos < width)
            return fail (error, end == walker->length ? GRAFT_MODEL_ERROR_TRUNCATED : GRAFT_MODEL_ERROR_MALFORMED,
                         pos, kind, "field %u: %u-byte value cut off", field, width);
          pos += width;
          break;
        case WIRE_LEN:
          {
            guint len_width = read_varint (data, pos, end, 5, &value);

            if (len_width == 0 || value > G_MAXINT32)
              return fail (error, GRAFT_MODEL_ERROR_MALFORMED, pos, kind,
                           "field %u: unreadable or absurd length", field);
            pos += len_width;
            if (value > end - pos)
              {
                if (end == walker->length)
                  return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, field_start, kind,
                               "field %u declares %" G_GUINT64_FORMAT " bytes but the file ends after %" G_GSIZE_FORMAT,
                               field, value, end - pos);
                return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, kind,
                             "field %u declares %" G_GUINT64_FORMAT " bytes but its enclosing message has only %" G_GSIZE_FORMAT " left",
                             field, value, end - pos);
              }

            if (kind == MSG_TENSOR && field == 9 && value >= walker->min_strip)
              {
                GraftOnnxSlice slice = { pos, value };
                guint64 index = walker->slices->len;
                guint8 payload[8];

                g_array_append_val (walker->slices, slice);
                append_varint (walker->out, ((guint64) MARKER_FIELD << 3) | WIRE_FIXED64);
                for (guint i = 0; i < 8; i++)
                  payload[i] = (index >> (8 * i)) & 0xff;
                g_byte_array_append (walker->out, payload, 8);
                pos += value;
                continue;
              }
            if (child != MSG_NONE)
              {
                gsize prefix_at;
                gsize body_start;

                g_byte_array_append (walker->out, data + field_start, pos - len_width - field_start);
                prefix_at = walker->out->len;
                g_byte_array_set_size (walker->out, prefix_at + len_width);
                body_start = walker->out->len;
                if (!walk_message (walker, child, pos, pos + value, depth + 1, error))
                  return FALSE;
                patch_varint (walker->out->data + prefix_at, len_width, walker->out->len - body_start);
                pos += value;
                continue;
              }
            pos += value;
          }
          break;
        default:
          return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, kind,
                       "field %u has wire type %u, which ONNX never uses", field, wire_type);
        }

      /* A marker already in the file would alias our slice table. */
      if (field == MARKER_FIELD)
        continue;
      g_byte_array_append (walker->out, data + field_start, pos - field_start);
    }
  return TRUE;
}

GBytes *
graft_onnx_wire_strip (const guint8 *data, gsize length, gsize min_strip, GArray *slices, GError **error)
{
  Walker walker = { data, length, MAX (min_strip, 16), NULL, slices };

  walker.out = g_byte_array_new ();
  if (!walk_message (&walker, MSG_MODEL, 0, length, 0, error))
    {
      g_byte_array_unref (walker.out);
      return NULL;
    }
  return g_byte_array_free_to_bytes (walker.out);
}

gboolean
graft_onnx_wire_get_raw_slice (const ProtobufCMessage *message, const GArray *slices, GraftOnnxSlice *slice)
{
  /* The last occurrence wins, as for any repeated scalar field. */
  for (guint i = message->n_unknown_fields; i > 0; i--)
    {
      const ProtobufCMessageUnknownField *field = &message->unknown_fields[i - 1];
      guint64 index = 0;

      if (field->tag != MARKER_FIELD || field->wire_type != PROTOBUF_C_WIRE_TYPE_64BIT || field->len != 8)
        continue;
      for (guint b = 0; b < 8; b++)
        index |= (guint64) field->data[b] << (8 * b);
      if (index >= slices->len)
        return FALSE;
      *slice = g_array_index (slices, GraftOnnxSlice, index);
      return TRUE;
    }
  return FALSE;
}
