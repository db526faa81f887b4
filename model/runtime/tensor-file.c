#include "runtime/tensor-file.h"

#include <gio/gio.h>
#include <string.h>
#include "onnx/tensor-proto.h"
#include "runtime/npy.h"

static GraftRtTensor *
fail (GError **error, const char *what, const char *message)
{
  g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_FILE, "%s: %s", what, message);
  return NULL;
}

static GraftRtTensor *
parse_tensor_proto (const guint8 *data, gsize length, char **name, const char *what, GError **error)
{
  Onnx__TensorProto *proto = onnx__tensor_proto__unpack (NULL, length, data);
  if (proto == NULL)
    return fail (error, what, "not a valid ONNX TensorProto (truncated or malformed protobuf)");

  GraftOnnxReadContext context = { .display_name = what };
  g_autoptr(GraftTensor) tensor = graft_onnx_tensor_from_proto (&context, proto, what, error);
  if (name && tensor)
    *name = g_strdup (proto->name ? proto->name : "");
  onnx__tensor_proto__free_unpacked (proto, NULL);
  if (tensor == NULL)
    return NULL;
  GraftRtTensor *t = graft_rt_tensor_new_from_tensor (tensor, error);
  if (t == NULL)
    return NULL;
  /* Borrowed data would keep the GraftTensor alive anyway; copy so the
   * result is writable and independent. */
  GraftRtTensor *copy = graft_rt_tensor_copy (t, error);
  graft_rt_tensor_unref (t);
  return copy;
}

/* Minimal protobuf wire reading for the SequenceProto / OptionalProto
 * wrappers of onnx-data.proto (not part of onnx.proto, so no generated
 * code exists for them). */
static gboolean
read_varint (const guint8 *data, gsize length, gsize *pos, guint64 *value)
{
  guint64 v = 0;
  for (int shift = 0; shift < 64; shift += 7)
    {
      if (*pos >= length)
        return FALSE;
      guint8 b = data[(*pos)++];
      v |= (guint64) (b & 0x7f) << shift;
      if ((b & 0x80) == 0)
        {
          *value = v;
          return TRUE;
        }
    }
  return FALSE;
}

typedef struct {
  char *name;
  gint64 elem_type;
  GPtrArray *tensors;     /* (offset, length) pairs of field 3 as GBytes slices */
  GPtrArray *sequences;   /* field 5 */
} Wrapper;

static gboolean
parse_wrapper (const guint8 *data, gsize length, Wrapper *w)
{
  gsize pos = 0;
  w->elem_type = 1;
  w->tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  w->sequences = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  while (pos < length)
    {
      guint64 key, v;
      if (!read_varint (data, length, &pos, &key))
        return FALSE;
      guint field = key >> 3, wire = key & 7;
      if (wire == 0)
        {
          if (!read_varint (data, length, &pos, &v))
            return FALSE;
          if (field == 2)
            w->elem_type = (gint64) v;
        }
      else if (wire == 2)
        {
          if (!read_varint (data, length, &pos, &v) || v > length - pos)
            return FALSE;
          if (field == 1)
            {
              g_free (w->name);
              w->name = g_strndup ((const char *) data + pos, v);
            }
          else if (field == 3)
            g_ptr_array_add (w->tensors, g_bytes_new (data + pos, v));
          else if (field == 5)
            g_ptr_array_add (w->sequences, g_bytes_new (data + pos, v));
          pos += v;
        }
      else if (wire == 5)
        pos += 4;
      else if (wire == 1)
        pos += 8;
      else
        return FALSE;
      if (pos > length)
        return FALSE;
    }
  return TRUE;
}

static void
wrapper_clear (Wrapper *w)
{
  g_free (w->name);
  g_clear_pointer (&w->tensors, g_ptr_array_unref);
  g_clear_pointer (&w->sequences, g_ptr_array_unref);
}

static GraftRtTensor *
parse_sequence (const guint8 *data, gsize length, char **name, const char *what, GError **error)
{
  Wrapper w = { 0 };
  if (!parse_wrapper (data, length, &w))
    {
      wrapper_clear (&w);
      return fail (error, what, "not a valid ONNX SequenceProto (truncated or malformed protobuf)");
    }
  GraftRtTensor *seq = graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED);
  for (guint i = 0; i < w.tensors->len; i++)
    {
      gsize n;
      const guint8 *p = g_bytes_get_data (w.tensors->pdata[i], &n);
      GraftRtTensor *t = parse_tensor_proto (p, n, NULL, what, error);
      if (t == NULL)
        {
          graft_rt_tensor_unref (seq);
          wrapper_clear (&w);
          return NULL;
        }
      seq->dtype = t->dtype;
      g_ptr_array_add (seq->items, t);
    }
  if (name)
    *name = g_strdup (w.name ? w.name : "");
  wrapper_clear (&w);
  return seq;
}

static GraftRtTensor *
parse_optional (const guint8 *data, gsize length, char **name, const char *what, GError **error)
{
  Wrapper w = { 0 };
  GraftRtTensor *result = NULL;

  if (!parse_wrapper (data, length, &w))
    {
      wrapper_clear (&w);
      return fail (error, what, "not a valid ONNX OptionalProto (truncated or malformed protobuf)");
    }
  if (w.tensors->len > 0)
    {
      gsize n;
      const guint8 *p = g_bytes_get_data (w.tensors->pdata[0], &n);
      result = parse_tensor_proto (p, n, NULL, what, error);
    }
  else if (w.sequences->len > 0)
    {
      gsize n;
      const guint8 *p = g_bytes_get_data (w.sequences->pdata[0], &n);
      result = parse_sequence (p, n, NULL, what, error);
    }
  else
    result = graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED);
  if (result && name)
    *name = g_strdup (w.name ? w.name : "");
  wrapper_clear (&w);
  return result;
}

GraftRtTensor *
graft_tensor_file_parse_pb (const guint8 *data, gsize length, GraftValueKind kind, char **name,
                            const char *what, GError **error)
{
  switch (kind)
    {
    case GRAFT_VALUE_SEQUENCE:
      return parse_sequence (data, length, name, what, error);
    case GRAFT_VALUE_OPTIONAL:
      return parse_optional (data, length, name, what, error);
    default:
      return parse_tensor_proto (data, length, name, what, error);
    }
}

GraftRtTensor *
graft_tensor_file_read (const char *path, GraftValueKind kind, char **name, GError **error)
{
  g_autoptr(GMappedFile) file = g_mapped_file_new (path, FALSE, error);
  if (file == NULL)
    return NULL;
  const guint8 *data = (const guint8 *) g_mapped_file_get_contents (file);
  gsize length = g_mapped_file_get_length (file);
  if (length >= 6 && memcmp (data, "\x93NUMPY", 6) == 0)
    {
      if (name)
        *name = NULL;
      return graft_npy_parse (data, length, path, error);
    }
  return graft_tensor_file_parse_pb (data, length, kind, name, path, error);
}

char *
graft_tensor_file_safe_stem (const char *name)
{
  GString *s = g_string_new (NULL);

  for (const char *p = name; p && *p; p++)
    g_string_append_c (s, (g_ascii_isalnum (*p) || *p == '-' || *p == '_' || *p == '.') ? *p : '_');
  if (s->len > 0 && s->str[0] == '.')
    s->str[0] = '_';
  if (s->len > 200)
    g_string_truncate (s, 200);
  return g_string_free (s, FALSE);
}
