#include "onnx/wire.h"
#include "ir/model-error.h"
#include "onnx.pb-c.h"

#include <string.h>

/* Field number of the marker that replaces a stripped raw_data. The largest
 * legal field number, so that no ONNX version uses it; its payload is a
 * fixed64 slice index. */
#define MARKER_FIELD 0x1FFFFFFFu
#define WIRE_VARINT 0
#define WIRE_FIXED64 1
#define WIRE_LEN 2
#define WIRE_FIXED32 5

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
fail (GError **error, GraftModelError code, gsize offset, const ProtobufCMessageDescriptor *message,
      const char *format, ...) G_GNUC_PRINTF (5, 6);

static gboolean
fail (GError **error, GraftModelError code, gsize offset, const ProtobufCMessageDescriptor *message,
      const char *format, ...)
{
  va_list args;
  g_autofree char *detail = NULL;

  va_start (args, format);
  detail = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, code, "invalid protobuf at byte %" G_GSIZE_FORMAT " (in %s): %s",
               offset, message->short_name, detail);
  return FALSE;
}

/* The wire types protobuf-c accepts for a known field. */
static gboolean
wire_type_fits (const ProtobufCFieldDescriptor *field, guint wire_type)
{
  gboolean packable = field->label == PROTOBUF_C_LABEL_REPEATED;

  switch (field->type)
    {
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
      return wire_type == WIRE_LEN;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
      return wire_type == WIRE_FIXED32 || (packable && wire_type == WIRE_LEN);
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
      return wire_type == WIRE_FIXED64 || (packable && wire_type == WIRE_LEN);
    default:
      return wire_type == WIRE_VARINT || (packable && wire_type == WIRE_LEN);
    }
}

/* "'initializer'" for a schema field, "17" for an unknown one. */
static const char *
field_label (const ProtobufCFieldDescriptor *field, guint32 number, char buffer[64])
{
  if (field != NULL)
    g_snprintf (buffer, 64, "'%s'", field->name);
  else
    g_snprintf (buffer, 64, "%u", number);
  return buffer;
}

static const char *const wire_type_names[] = {
  "varint", "64-bit", "length-delimited", "group start", "group end", "32-bit", "6", "7",
};

static gboolean
walk_message (Walker *walker, const ProtobufCMessageDescriptor *message, gsize pos, gsize end, guint depth,
              GError **error)
{
  const guint8 *data = walker->data;
  gboolean at_file_end = end == walker->length;
  GraftModelError cut = at_file_end ? GRAFT_MODEL_ERROR_TRUNCATED : GRAFT_MODEL_ERROR_MALFORMED;

  if (depth > GRAFT_ONNX_WIRE_MAX_DEPTH)
    return fail (error, GRAFT_MODEL_ERROR_UNSAFE, pos, message,
                 "messages are nested more than %d levels deep", GRAFT_ONNX_WIRE_MAX_DEPTH);

  while (pos < end)
    {
      gsize field_start = pos;
      guint64 tag, value;
      guint width = read_varint (data, pos, end, 5, &tag);
      const ProtobufCFieldDescriptor *field;
      guint32 number;
      guint wire_type;
      char label[64];

      if (width == 0 || tag > G_MAXUINT32)
        return fail (error, cut, pos, message, "unreadable field tag");
      pos += width;
      number = (guint32) (tag >> 3);
      wire_type = tag & 7;
      if (number == 0)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, message, "field number 0");
      field = protobuf_c_message_descriptor_get_field (message, number);
      if (field != NULL && !wire_type_fits (field, wire_type))
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, message,
                     "field '%s' has wire type %s, which does not fit its type", field->name,
                     wire_type_names[wire_type]);

      switch (wire_type)
        {
        case WIRE_VARINT:
          width = read_varint (data, pos, end, 10, &value);
          if (width == 0)
            return fail (error, cut, pos, message, "field %s: unterminated varint", field_label (field, number, label));
          pos += width;
          break;
        case WIRE_FIXED64:
        case WIRE_FIXED32:
          width = wire_type == WIRE_FIXED64 ? 8 : 4;
          if (end - pos < width)
            return fail (error, cut, pos, message, "field %s: %u-byte value cut off", field_label (field, number, label), width);
          pos += width;
          break;
        case WIRE_LEN:
          {
            guint len_width = read_varint (data, pos, end, 5, &value);

            if (len_width == 0 || value > G_MAXINT32)
              return fail (error, GRAFT_MODEL_ERROR_MALFORMED, pos, message,
                           "field %s: unreadable or absurd length", field_label (field, number, label));
            pos += len_width;
            if (value > end - pos)
              {
                if (at_file_end)
                  return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, field_start, message,
                               "field %s declares %" G_GUINT64_FORMAT " bytes but the file ends after %" G_GSIZE_FORMAT,
                               field_label (field, number, label), value, end - pos);
                return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, message,
                             "field %s declares %" G_GUINT64_FORMAT " bytes but its enclosing message has only %" G_GSIZE_FORMAT " left",
                             field_label (field, number, label), value, end - pos);
              }

            if (message == &onnx__tensor_proto__descriptor && number == 9 && value >= walker->min_strip)
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
            if (field != NULL && field->type == PROTOBUF_C_TYPE_MESSAGE)
              {
                gsize prefix_at, body_start;

                g_byte_array_append (walker->out, data + field_start, pos - len_width - field_start);
                prefix_at = walker->out->len;
                g_byte_array_set_size (walker->out, prefix_at + len_width);
                body_start = walker->out->len;
                if (!walk_message (walker, field->descriptor, pos, pos + value, depth + 1, error))
                  return FALSE;
                patch_varint (walker->out->data + prefix_at, len_width, walker->out->len - body_start);
                pos += value;
                continue;
              }
            pos += value;
          }
          break;
        default:
          return fail (error, GRAFT_MODEL_ERROR_MALFORMED, field_start, message,
                       "field %u has wire type %u (%s), which ONNX never uses", number, wire_type,
                       wire_type_names[wire_type]);
        }

      /* A marker already in the file would alias our slice table. */
      if (number == MARKER_FIELD)
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
  if (!walk_message (&walker, &onnx__model_proto__descriptor, 0, length, 0, error))
    {
      g_byte_array_unref (walker.out);
      return NULL;
    }
  return g_byte_array_free_to_bytes (walker.out);
}

gboolean
graft_onnx_wire_is_marker (const ProtobufCMessageUnknownField *field)
{
  return field->tag == MARKER_FIELD && field->wire_type == PROTOBUF_C_WIRE_TYPE_64BIT && field->len == 8;
}

gboolean
graft_onnx_wire_get_raw_slice (const ProtobufCMessage *message, const GArray *slices, GraftOnnxSlice *slice)
{
  /* The last occurrence wins, as for any repeated scalar field. */
  for (guint i = message->n_unknown_fields; i > 0; i--)
    {
      const ProtobufCMessageUnknownField *field = &message->unknown_fields[i - 1];
      guint64 index = 0;

      if (!graft_onnx_wire_is_marker (field))
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
