#include "runtime/npy.h"
#include "ir/narrow-dtype.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"

static gboolean
fail (GError **error, const char *what, const char *format, ...) G_GNUC_PRINTF (3, 4);

static gboolean
fail (GError **error, const char *what, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_FILE, "%s: %s", what, message);
  return FALSE;
}

/* Finds 'key': in the header dict and returns a pointer after the colon. */
static const char *
find_key (const char *header, const char *key)
{
  g_autofree char *q1 = g_strdup_printf ("'%s'", key);
  g_autofree char *q2 = g_strdup_printf ("\"%s\"", key);
  const char *p = strstr (header, q1);
  if (p == NULL)
    p = strstr (header, q2);
  if (p == NULL)
    return NULL;
  p += strlen (q1);
  while (*p == ' ')
    p++;
  if (*p != ':')
    return NULL;
  p++;
  while (*p == ' ')
    p++;
  return p;
}

static gboolean
parse_descr (const char *descr, GraftDType *dtype, gboolean *swap, int *unicode_len, const char *what, GError **error)
{
  *swap = FALSE;
  if (strlen (descr) < 3)
    return fail (error, what, "unsupported dtype '%s'", descr);
  char order = descr[0];
  char kind = descr[1];
  char *size_end;
  gint64 size = g_ascii_strtoll (descr + 2, &size_end, 10);

  *unicode_len = 0;
  /* The size must be the whole rest; 'U' lengths beyond 2^20 characters
   * per cell are no text any model reads. */
  if ((order != '<' && order != '>' && order != '|' && order != '=') || *size_end != '\0' || size <= 0 ||
      size > (1 << 20))
    return fail (error, what, "unsupported dtype '%s'", descr);
  *swap = order == '>' && size > 1;
  switch (kind)
    {
    case 'f':
      *dtype = size == 2 ? GRAFT_DTYPE_FLOAT16 : size == 4 ? GRAFT_DTYPE_FLOAT32 : size == 8 ? GRAFT_DTYPE_FLOAT64 : 0;
      break;
    case 'i':
      *dtype = size == 1 ? GRAFT_DTYPE_INT8 : size == 2 ? GRAFT_DTYPE_INT16 : size == 4 ? GRAFT_DTYPE_INT32 :
               size == 8 ? GRAFT_DTYPE_INT64 : 0;
      break;
    case 'u':
      *dtype = size == 1 ? GRAFT_DTYPE_UINT8 : size == 2 ? GRAFT_DTYPE_UINT16 : size == 4 ? GRAFT_DTYPE_UINT32 :
               size == 8 ? GRAFT_DTYPE_UINT64 : 0;
      break;
    case 'b':
      *dtype = size == 1 ? GRAFT_DTYPE_BOOL : 0;
      break;
    case 'U':
      *dtype = GRAFT_DTYPE_STRING;
      *unicode_len = (int) size;
      *swap = order == '>';
      break;
    default:
      *dtype = 0;
    }
  if (*dtype == 0)
    return fail (error, what, "unsupported dtype '%s'", descr);
  return TRUE;
}

static void
byteswap (guint8 *data, gsize n, gsize size)
{
  for (gsize i = 0; i < n; i++)
    for (gsize a = 0, b = size - 1; a < b; a++, b--)
      {
        guint8 t = data[i * size + a];
        data[i * size + a] = data[i * size + b];
        data[i * size + b] = t;
      }
}

GraftRtTensor *
graft_npy_parse (const guint8 *data, gsize length, const char *what, GError **error)
{
  gsize header_len, offset;

  if (length < 10 || memcmp (data, NPY_MAGIC, 6) != 0)
    return fail (error, what, length < 10 ? "truncated .npy file (%" G_GSIZE_FORMAT " bytes)" :
                 "not a .npy file (no \\x93NUMPY magic; %" G_GSIZE_FORMAT " bytes)", length), NULL;
  guint8 major = data[6];
  if (major == 1)
    {
      header_len = data[8] | (data[9] << 8);
      offset = 10;
    }
  else if (major == 2 || major == 3)
    {
      if (length < 12)
        return fail (error, what, "truncated .npy header"), NULL;
      header_len = data[8] | (data[9] << 8) | ((gsize) data[10] << 16) | ((gsize) data[11] << 24);
      offset = 12;
    }
  else
    return fail (error, what, "unsupported .npy format version %u.%u", major, data[7]), NULL;
  if (header_len > length - offset)
    return fail (error, what, "truncated .npy header: needs %" G_GSIZE_FORMAT " bytes, file has %" G_GSIZE_FORMAT,
                 offset + header_len, length), NULL;
  g_autofree char *header = g_strndup ((const char *) data + offset, header_len);
  offset += header_len;

  const char *p = find_key (header, "descr");
  if (p == NULL || (*p != '\'' && *p != '"'))
    return fail (error, what, "the .npy header has no 'descr'"), NULL;
  char quote = *p++;
  const char *end = strchr (p, quote);
  if (end == NULL || end - p > 16)
    return fail (error, what, "malformed 'descr' in the .npy header"), NULL;
  g_autofree char *descr = g_strndup (p, end - p);

  p = find_key (header, "fortran_order");
  if (p == NULL)
    return fail (error, what, "the .npy header has no 'fortran_order'"), NULL;
  if (g_str_has_prefix (p, "True"))
    return fail (error, what, "fortran_order True is not supported (save with np.ascontiguousarray)"), NULL;

  p = find_key (header, "shape");
  if (p == NULL || *p != '(')
    return fail (error, what, "the .npy header has no 'shape'"), NULL;
  p++;
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank = 0;
  while (*p && *p != ')')
    {
      while (*p == ' ' || *p == ',')
        p++;
      if (*p == ')')
        break;
      char *num_end;
      gint64 v = g_ascii_strtoll (p, &num_end, 10);
      if (num_end == p || v < 0)
        return fail (error, what, "malformed 'shape' in the .npy header"), NULL;
      if (rank >= GRAFT_RT_MAX_RANK)
        return fail (error, what, "rank above %d", GRAFT_RT_MAX_RANK), NULL;
      dims[rank++] = v;
      p = num_end;
    }
  if (*p != ')')
    return fail (error, what, "malformed 'shape' in the .npy header"), NULL;

  GraftDType dtype;
  gboolean swap;
  int unicode_len;
  if (!parse_descr (descr, &dtype, &swap, &unicode_len, what, error))
    return NULL;

  /* The header's shape is checked against the bytes the file has before
   * anything is allocated for it. */
  gsize elem = dtype == GRAFT_DTYPE_STRING ? (gsize) unicode_len * 4 : graft_dtype_get_size (dtype);
  gint64 numel = 1;
  for (int k = 0; k < rank; k++)
    if (!graft_dim_mul_checked (numel, dims[k], &numel))
      return fail (error, what, "the .npy shape has more than 2^63 elements"), NULL;
  if ((guint64) numel > (length - offset) / elem)
    return fail (error, what, "truncated .npy data: shape needs %" G_GINT64_FORMAT " × %" G_GSIZE_FORMAT
                 " bytes, file has %" G_GSIZE_FORMAT, numel, elem, length - offset), NULL;

  g_autoptr(GError) local = NULL;
  g_autoptr(GraftRtTensor) t = graft_rt_tensor_new (dtype, rank, dims, &local);
  if (t == NULL)
    return fail (error, what, "%s", local->message), NULL;
  if (dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < t->numel; i++)
        {
          const guint8 *cell = data + offset + i * elem;
          g_autofree gunichar *chars = g_new0 (gunichar, unicode_len + 1);
          for (int c = 0; c < unicode_len; c++)
            {
              const guint8 *b = cell + c * 4;
              chars[c] = swap ? ((guint32) b[0] << 24 | (guint32) b[1] << 16 | (guint32) b[2] << 8 | b[3])
                              : ((guint32) b[3] << 24 | (guint32) b[2] << 16 | (guint32) b[1] << 8 | b[0]);
              if (!g_unichar_validate (chars[c]))
                return fail (error, what, "string %" G_GINT64_FORMAT " has an invalid code point U+%X", i, chars[c]), NULL;
            }
          g_free (((char **) t->data)[i]);
          ((char **) t->data)[i] = g_ucs4_to_utf8 (chars, -1, NULL, NULL, NULL);
        }
      return g_steal_pointer (&t);
    }
  memcpy (t->data, data + offset, t->nbytes);
  if (swap)
    byteswap (t->data, t->numel, elem);
  return g_steal_pointer (&t);
}

GraftRtTensor *
graft_npy_read (const char *path, GError **error)
{
  g_autoptr(GMappedFile) file = g_mapped_file_new (path, FALSE, error);
  if (file == NULL)
    return NULL;
  return graft_npy_parse ((const guint8 *) g_mapped_file_get_contents (file),
                          g_mapped_file_get_length (file), path, error);
}

static const char *
descr_for (GraftDType dtype)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_FLOAT32: return "<f4";
    case GRAFT_DTYPE_FLOAT64: return "<f8";
    case GRAFT_DTYPE_FLOAT16: return "<f2";
    case GRAFT_DTYPE_INT8: return "|i1";
    case GRAFT_DTYPE_UINT8: return "|u1";
    case GRAFT_DTYPE_INT16: return "<i2";
    case GRAFT_DTYPE_UINT16: return "<u2";
    case GRAFT_DTYPE_INT32: return "<i4";
    case GRAFT_DTYPE_UINT32: return "<u4";
    case GRAFT_DTYPE_INT64: return "<i8";
    case GRAFT_DTYPE_UINT64: return "<u8";
    case GRAFT_DTYPE_BOOL: return "|b1";
    default: return NULL;
    }
}

GBytes *
graft_npy_serialize (const GraftRtTensor *t, GError **error)
{
  g_autofree char *descr = NULL;
  glong max_chars = 1;

  if (t->kind != GRAFT_RT_TENSOR)
    return fail (error, "npy", "only tensors can be saved as .npy"), NULL;
  if (t->dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < t->numel; i++)
        max_chars = MAX (max_chars, g_utf8_strlen (((char **) t->data)[i], -1));
      descr = g_strdup_printf ("<U%ld", max_chars);
    }
  else if (descr_for (t->dtype) == NULL)
    return fail (error, "npy", "element type %s has no .npy equivalent", graft_dtype_to_string (t->dtype)), NULL;
  else
    descr = g_strdup (descr_for (t->dtype));

  GString *shape = g_string_new ("(");
  for (int i = 0; i < t->rank; i++)
    g_string_append_printf (shape, "%" G_GINT64_FORMAT "%s", t->dims[i], t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
  g_string_append_c (shape, ')');
  GString *header = g_string_new (NULL);
  g_string_append_printf (header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape->str);
  g_string_free (shape, TRUE);

  gboolean v2 = header->len + 11 > 65535;
  gsize prefix = v2 ? 12 : 10;
  gsize total = prefix + header->len + 1;
  gsize pad = (64 - total % 64) % 64;
  for (gsize i = 0; i < pad; i++)
    g_string_append_c (header, ' ');
  g_string_append_c (header, '\n');

  GByteArray *out = g_byte_array_new ();
  g_byte_array_append (out, (const guint8 *) NPY_MAGIC, 6);
  guint8 version[2] = { v2 ? 2 : 1, 0 };
  g_byte_array_append (out, version, 2);
  guint32 hl = header->len;
  guint8 len_bytes[4] = { hl & 0xff, (hl >> 8) & 0xff, (hl >> 16) & 0xff, (hl >> 24) & 0xff };
  g_byte_array_append (out, len_bytes, v2 ? 4 : 2);
  g_byte_array_append (out, (const guint8 *) header->str, header->len);
  g_string_free (header, TRUE);

  if (t->dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < t->numel; i++)
        {
          glong n = 0;
          g_autofree gunichar *chars = g_utf8_to_ucs4_fast (((char **) t->data)[i], -1, &n);
          for (glong c = 0; c < max_chars; c++)
            {
              guint32 ch = c < n ? chars[c] : 0;
              guint8 b[4] = { ch & 0xff, (ch >> 8) & 0xff, (ch >> 16) & 0xff, ch >> 24 };
              g_byte_array_append (out, b, 4);
            }
        }
    }
  else
    g_byte_array_append (out, t->data, t->nbytes);
  return g_byte_array_free_to_bytes (out);
}

gboolean
graft_npy_write (const char *path, const GraftRtTensor *tensor, GError **error)
{
  g_autoptr(GBytes) bytes = graft_npy_serialize (tensor, error);
  if (bytes == NULL)
    return FALSE;
  /* g_file_set_contents writes a temporary file and renames it over path. */
  return g_file_set_contents (path, g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), error);
}

/* The .npy element type that holds every value of dtype. */
static GraftDType
npy_storage_dtype (GraftDType dtype)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_INT4: case GRAFT_DTYPE_INT2: case GRAFT_DTYPE_QINT8:
      return GRAFT_DTYPE_INT8;
    case GRAFT_DTYPE_UINT4: case GRAFT_DTYPE_UINT2: case GRAFT_DTYPE_QUINT8:
      return GRAFT_DTYPE_UINT8;
    case GRAFT_DTYPE_QINT32:
      return GRAFT_DTYPE_INT32;
    case GRAFT_DTYPE_BFLOAT16:
      return GRAFT_DTYPE_FLOAT32;
    default:
      return graft_narrow_dtype_is_narrow (dtype) ? GRAFT_DTYPE_FLOAT32 : dtype;
    }
}

gboolean
graft_npy_write_constant (const char *path, GraftTensor *tensor, GraftDType *saved_dtype, GError **error)
{
  g_autoptr(GraftRtTensor) stored = graft_rt_tensor_new_from_tensor (tensor, error);
  g_autoptr(GraftRtTensor) widened = NULL;
  GraftDType target;

  if (stored == NULL)
    return FALSE;
  target = npy_storage_dtype (tensor->dtype);
  if (saved_dtype != NULL)
    *saved_dtype = target;
  if (target == tensor->dtype)
    return graft_npy_write (path, stored, error);
  widened = graft_rt_tensor_new (target, stored->rank, stored->dims, error);
  if (widened == NULL)
    return FALSE;
  if (target == GRAFT_DTYPE_FLOAT32)
    {
      /* stored has loaded the data, element reads need nothing else. */
      for (gint64 i = 0; i < stored->numel; i++)
        ((float *) widened->data)[i] = (float) graft_tensor_get_element_as_double (tensor, i);
    }
  else
    /* One byte per element already, sign-extended for the signed types. */
    memcpy (widened->data, stored->data, MIN (stored->nbytes, widened->nbytes));
  return graft_npy_write (path, widened, error);
}
