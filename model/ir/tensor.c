#include "ir/tensor.h"
#include "ir/file-bytes.h"
#include "ir/model-error.h"
#include "ir/narrow-dtype.h"

#include <math.h>
#include <string.h>

/* Lazy external loads may race between the UI thread and workers. */
static GMutex external_load_lock;

GraftTensor *
graft_tensor_new (const char *name, GraftDType dtype, int rank, const gint64 *dims)
{
  GraftTensor *tensor = g_new0 (GraftTensor, 1);

  tensor->ref_count = 1;
  tensor->name = g_strdup (name ? name : "");
  tensor->dtype = dtype;
  tensor->rank = MAX (rank, 0);
  tensor->dims = tensor->rank > 0 ? g_memdup2 (dims, sizeof (gint64) * tensor->rank) : NULL;
  tensor->external_length = -1;
  if (dtype == GRAFT_DTYPE_STRING)
    tensor->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  return tensor;
}

GraftTensor *
graft_tensor_ref (GraftTensor *tensor)
{
  g_atomic_int_inc (&tensor->ref_count);
  return tensor;
}

void
graft_tensor_unref (GraftTensor *tensor)
{
  if (tensor == NULL || !g_atomic_int_dec_and_test (&tensor->ref_count))
    return;
  g_free (tensor->name);
  g_free (tensor->doc_string);
  g_clear_pointer (&tensor->onnx_kept_fields, g_bytes_unref);
  g_clear_pointer (&tensor->onnx_sparse, g_bytes_unref);
  g_free (tensor->dims);
  g_free (tensor->strides);
  g_clear_pointer (&tensor->external_file, graft_external_file_unref);
  g_clear_pointer (&tensor->source_file, graft_external_file_unref);
  g_clear_pointer (&tensor->data, g_bytes_unref);
  g_clear_pointer (&tensor->strings, g_ptr_array_unref);
  g_free (tensor);
}

gint64
graft_tensor_get_numel (const GraftTensor *tensor)
{
  gint64 numel = 1;

  for (int i = 0; i < tensor->rank; i++)
    {
      gint64 d = tensor->dims[i];
      if (d < 0)
        return -1;
      if (d != 0 && numel > G_MAXINT64 / d)
        return -1;
      numel *= d;
    }
  return numel;
}

gsize
graft_tensor_get_nbytes (const GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  gsize item = graft_dtype_get_size (tensor->dtype);

  if (numel < 0 || item == 0 || (guint64) numel > G_MAXSIZE / item)
    return 0;
  return (gsize) numel * item;
}

gboolean
graft_tensor_is_external (const GraftTensor *tensor)
{
  return tensor->external_file != NULL;
}

gboolean
graft_tensor_set_data (GraftTensor *tensor, GBytes *data, GError **error)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  gsize expected = graft_tensor_get_nbytes (tensor);

  if (tensor->dtype == GRAFT_DTYPE_STRING || graft_dtype_get_size (tensor->dtype) == 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "tensor '%s': element type %s has no raw data layout",
                   tensor->name, graft_dtype_to_string (tensor->dtype));
      return FALSE;
    }
  if (numel < 0 || (numel > 0 && expected == 0))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "tensor '%s': invalid dimensions", tensor->name);
      return FALSE;
    }
  if (g_bytes_get_size (data) != expected)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "tensor '%s': %s needs %" G_GSIZE_FORMAT " bytes of data but has %" G_GSIZE_FORMAT,
                   tensor->name, graft_dtype_to_string (tensor->dtype), expected, g_bytes_get_size (data));
      return FALSE;
    }
  g_mutex_lock (&external_load_lock);
  g_clear_pointer (&tensor->data, g_bytes_unref);
  g_clear_pointer (&tensor->onnx_sparse, g_bytes_unref);
  /* new values are no longer the file's */
  g_clear_pointer (&tensor->source_file, graft_external_file_unref);
  tensor->given_back = FALSE;
  tensor->data = g_bytes_ref (data);
  g_mutex_unlock (&external_load_lock);
  return TRUE;
}

void
graft_tensor_set_external (GraftTensor *tensor, GraftExternalFile *file, guint64 offset, gint64 length)
{
  graft_external_file_ref (file);
  g_clear_pointer (&tensor->external_file, graft_external_file_unref);
  tensor->external_file = file;
  tensor->external_offset = offset;
  tensor->external_length = length;
  g_clear_pointer (&tensor->data, g_bytes_unref);
  g_clear_pointer (&tensor->source_file, graft_external_file_unref);
  tensor->given_back = FALSE;
}

static GBytes *
load_external (GraftTensor *tensor, GError **error)
{
  g_autoptr(GError) local_error = NULL;
  const char *path = graft_external_file_get_path (tensor->external_file);
  guint64 file_size = graft_external_file_get_size (tensor->external_file);
  gsize expected = graft_tensor_get_nbytes (tensor);
  guint64 length;
  GBytes *bytes;

  length = tensor->external_length >= 0 ? (guint64) tensor->external_length
                                        : (tensor->external_offset <= file_size ? file_size - tensor->external_offset : 0);
  if (tensor->external_offset > file_size || length > file_size - tensor->external_offset)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "tensor '%s': external data '%s' is %" G_GUINT64_FORMAT " bytes, too short for offset %"
                   G_GUINT64_FORMAT " + length %" G_GUINT64_FORMAT,
                   tensor->name, path, file_size, tensor->external_offset, length);
      return NULL;
    }
  if (length != expected)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "tensor '%s': external data length %" G_GUINT64_FORMAT " does not match %s × %" G_GINT64_FORMAT
                   " elements (%" G_GSIZE_FORMAT " bytes)",
                   tensor->name, length, graft_dtype_to_string (tensor->dtype),
                   graft_tensor_get_numel (tensor), expected);
      return NULL;
    }
  bytes = graft_external_file_read (tensor->external_file, tensor->external_offset, (gsize) length, &local_error);
  if (bytes == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, local_error->code, "tensor '%s': %s", tensor->name, local_error->message);
      return NULL;
    }
  return bytes;
}

void
graft_tensor_set_source (GraftTensor *tensor, GraftExternalFile *file, guint64 offset)
{
  graft_external_file_ref (file);
  g_clear_pointer (&tensor->source_file, graft_external_file_unref);
  tensor->source_file = file;
  tensor->source_offset = offset;
}

/* A Fletcher-style sum of data's 64-bit words, in four lanes: running
 * sums of sums see any change of a word and its position, and the loop
 * is additions alone, at memory speed (100 MB of weights in a few ms,
 * once, on the first run). It tells whether a file rewritten in place
 * still holds what was given back. */
static guint64
checksum (const guint8 *data, gsize size)
{
  guint64 sum[4] = { 0 }, sum_of_sums[4] = { 0 };
  gsize i = 0;

  for (; i + 32 <= size; i += 32)
    for (int l = 0; l < 4; l++)
      {
        guint64 w;
        memcpy (&w, data + i + 8 * l, 8);
        sum[l] += w;
        sum_of_sums[l] += sum[l];
      }
  guint64 h = size;
  for (; i < size; i++)
    h = (h ^ data[i]) * 0x100000001b3u;
  for (int l = 0; l < 4; l++)
    h = (h ^ sum[l] ^ (sum_of_sums[l] << 1 | sum_of_sums[l] >> 63)) * 0x9e3779b97f4a7c15u;
  return h;
}

gboolean
graft_tensor_give_back (GraftTensor *tensor)
{
  gboolean done = FALSE;

  g_mutex_lock (&external_load_lock);
  if (tensor->source_file != NULL && tensor->data != NULL && !tensor->given_back)
    {
      gsize size;
      const guint8 *data = g_bytes_get_data (tensor->data, &size);
      tensor->given_back_checksum = checksum (data, size);
      graft_file_bytes_release (tensor->data, 0, size);
      tensor->given_back = done = TRUE;
    }
  g_mutex_unlock (&external_load_lock);
  return done;
}

static gboolean
restore_locked (GraftTensor *tensor, GError **error)
{
  g_autoptr(GError) local_error = NULL;
  g_autoptr(GBytes) again = NULL;
  gsize size;
  guint8 *data;

  if (!tensor->given_back)
    return TRUE;
  data = (guint8 *) g_bytes_get_data (tensor->data, &size);
  again = graft_external_file_read (tensor->source_file, tensor->source_offset, size, &local_error);
  if (again == NULL || checksum (g_bytes_get_data (again, NULL), size) != tensor->given_back_checksum)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO,
                   "tensor '%s': its values cannot be read again from %s: the file changed since it was read%s%s",
                   tensor->name, graft_external_file_get_path (tensor->source_file),
                   local_error ? ": " : "", local_error ? local_error->message : "");
      return FALSE;
    }
  memcpy (data, g_bytes_get_data (again, NULL), size);
  tensor->given_back = FALSE;
  return TRUE;
}

gboolean
graft_tensor_restore (GraftTensor *tensor, GError **error)
{
  gboolean ok;

  g_mutex_lock (&external_load_lock);
  ok = restore_locked (tensor, error);
  g_mutex_unlock (&external_load_lock);
  return ok;
}

GBytes *
graft_tensor_get_data (GraftTensor *tensor, GError **error)
{
  GBytes *result;

  g_mutex_lock (&external_load_lock);
  if (tensor->given_back && !restore_locked (tensor, error))
    {
      g_mutex_unlock (&external_load_lock);
      return NULL;
    }
  if (tensor->data == NULL && tensor->external_file != NULL)
    tensor->data = load_external (tensor, error);
  else if (tensor->data == NULL)
    {
      if (tensor->dtype == GRAFT_DTYPE_STRING)
        g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                     "tensor '%s' holds strings, not raw data", tensor->name);
      else if (graft_tensor_get_numel (tensor) == 0)
        tensor->data = g_bytes_new (NULL, 0);
      else
        g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                     "tensor '%s' has no data", tensor->name);
    }
  result = tensor->data;
  g_mutex_unlock (&external_load_lock);
  return result;
}

static float
half_to_float (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000) << 16;
  guint32 exponent = (h >> 10) & 0x1f;
  guint32 mantissa = h & 0x3ff;
  guint32 bits;
  float f;

  if (exponent == 0)
    {
      /* zero or subnormal: value = mantissa × 2^-24 */
      f = ldexpf ((float) mantissa, -24);
      return sign ? -f : f;
    }
  if (exponent == 31)
    bits = sign | 0x7f800000 | (mantissa << 13);
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  memcpy (&f, &bits, sizeof f);
  return f;
}

static float
bfloat16_to_float (guint16 b)
{
  guint32 bits = (guint32) b << 16;
  float f;

  memcpy (&f, &bits, sizeof f);
  return f;
}

double
graft_tensor_get_element_as_double (GraftTensor *tensor, gint64 index)
{
  gsize item = graft_dtype_get_size (tensor->dtype);
  gsize size;
  const guint8 *p;

  /* a value the runtime gave back is read in again, or reads as missing */
  if (tensor->data == NULL || item == 0 || (tensor->given_back && !graft_tensor_restore (tensor, NULL)))
    return NAN;
  p = g_bytes_get_data (tensor->data, &size);
  if (index < 0 || (guint64) index >= size / item)
    return NAN;
  p += (gsize) index * item;

#define READ(type) ({ type v_; memcpy (&v_, p, sizeof v_); v_; })
  switch (tensor->dtype)
    {
    case GRAFT_DTYPE_FLOAT32: return READ (float);
    case GRAFT_DTYPE_FLOAT64: return READ (double);
    case GRAFT_DTYPE_FLOAT16: return half_to_float (READ (guint16));
    case GRAFT_DTYPE_BFLOAT16: return bfloat16_to_float (READ (guint16));
    case GRAFT_DTYPE_INT8: case GRAFT_DTYPE_QINT8: return READ (gint8);
    case GRAFT_DTYPE_UINT8: case GRAFT_DTYPE_QUINT8: case GRAFT_DTYPE_BOOL:
    case GRAFT_DTYPE_QUINT4X2: case GRAFT_DTYPE_QUINT2X4:
      return READ (guint8);
    case GRAFT_DTYPE_INT16: return READ (gint16);
    case GRAFT_DTYPE_UINT16: return READ (guint16);
    case GRAFT_DTYPE_INT32: case GRAFT_DTYPE_QINT32: return READ (gint32);
    case GRAFT_DTYPE_UINT32: return READ (guint32);
    case GRAFT_DTYPE_INT64: return (double) READ (gint64);
    case GRAFT_DTYPE_UINT64: return (double) READ (guint64);
    default:
      if (graft_narrow_dtype_is_narrow (tensor->dtype))
        return graft_narrow_dtype_decode (tensor->dtype, READ (guint8));
      return NAN;
    }
#undef READ
}

char *
graft_tensor_format_element (GraftTensor *tensor, gint64 index)
{
  gsize item = graft_dtype_get_size (tensor->dtype);
  gsize size;
  const guint8 *p;
  double v;

  if (tensor->data == NULL || item == 0 || tensor->dtype == GRAFT_DTYPE_COMPLEX64 ||
      tensor->dtype == GRAFT_DTYPE_COMPLEX128 || (tensor->given_back && !graft_tensor_restore (tensor, NULL)))
    return NULL;
  p = g_bytes_get_data (tensor->data, &size);
  if (index < 0 || (guint64) index >= size / item)
    return NULL;
  p += (gsize) index * item;
  switch (tensor->dtype)
    {
    case GRAFT_DTYPE_INT64:
      {
        gint64 i;
        memcpy (&i, p, sizeof i);
        return g_strdup_printf ("%" G_GINT64_FORMAT, i);
      }
    case GRAFT_DTYPE_UINT64:
      {
        guint64 u;
        memcpy (&u, p, sizeof u);
        return g_strdup_printf ("%" G_GUINT64_FORMAT, u);
      }
    case GRAFT_DTYPE_BOOL:
      return g_strdup (*p ? "true" : "false");
    default:
      break;
    }
  v = graft_tensor_get_element_as_double (tensor, index);
  if (graft_dtype_is_integer (tensor->dtype) || tensor->dtype >= GRAFT_DTYPE_QINT8 ||
      tensor->dtype == GRAFT_DTYPE_INT4 || tensor->dtype == GRAFT_DTYPE_UINT4 ||
      tensor->dtype == GRAFT_DTYPE_INT2 || tensor->dtype == GRAFT_DTYPE_UINT2)
    return g_strdup_printf ("%.0f", v);
  /* Enough digits to tell neighbouring values of the type apart. */
  switch (tensor->dtype)
    {
    case GRAFT_DTYPE_FLOAT64: return g_strdup_printf ("%.10g", v);
    case GRAFT_DTYPE_FLOAT32: return g_strdup_printf ("%.7g", v);
    case GRAFT_DTYPE_FLOAT16: return g_strdup_printf ("%.5g", v);
    default: return g_strdup_printf ("%.4g", v);
    }
}

/* Elements between checks of the cancellable. */
#define STATS_CHUNK (1 << 20)

char *
graft_tensor_format_element_short (GraftTensor *tensor, gint64 index)
{
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];

  if (!graft_dtype_is_float (tensor->dtype))
    return graft_tensor_format_element (tensor, index);
  if (tensor->data == NULL || index < 0 || index >= graft_tensor_get_numel (tensor))
    return NULL;
  g_ascii_formatd (buffer, sizeof buffer, "%.6g", graft_tensor_get_element_as_double (tensor, index));
  return g_strdup (buffer);
}

gboolean
graft_tensor_compute_stats_cancellable (GraftTensor *tensor, GraftTensorStats *stats,
                                        GCancellable *cancellable, GError **error)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  double sum = 0, squares = 0;

  memset (stats, 0, sizeof *stats);
  stats->min = NAN;
  stats->max = NAN;
  stats->mean = NAN;
  stats->std = NAN;
  if (tensor->dtype == GRAFT_DTYPE_STRING || tensor->dtype == GRAFT_DTYPE_COMPLEX64 ||
      tensor->dtype == GRAFT_DTYPE_COMPLEX128)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "tensor '%s': no statistics for %s elements", tensor->name,
                   graft_dtype_to_string (tensor->dtype));
      return FALSE;
    }
  if (graft_tensor_get_data (tensor, error) == NULL)
    return FALSE;
  for (gint64 i = 0; i < numel; i++)
    {
      double v = graft_tensor_get_element_as_double (tensor, i);

      if (i % STATS_CHUNK == STATS_CHUNK - 1 && g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      if (isnan (v))
        {
          stats->nan_count++;
          continue;
        }
      if (v == 0)
        stats->zero_count++;
      if (stats->count == 0 || v < stats->min)
        {
          stats->min = v;
          stats->min_index = i;
        }
      if (stats->count == 0 || v > stats->max)
        {
          stats->max = v;
          stats->max_index = i;
        }
      sum += v;
      stats->count++;
    }
  if (stats->count == 0)
    return TRUE;
  stats->mean = sum / stats->count;
  /* A second pass around the mean: sum of squares minus squared sum loses
   * every digit for weights far from zero. */
  for (gint64 i = 0; i < numel; i++)
    {
      double v = graft_tensor_get_element_as_double (tensor, i);

      if (i % STATS_CHUNK == STATS_CHUNK - 1 && g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      if (!isnan (v))
        squares += (v - stats->mean) * (v - stats->mean);
    }
  stats->std = sqrt (squares / stats->count);
  return TRUE;
}

gboolean
graft_tensor_compute_stats (GraftTensor *tensor, GraftTensorStats *stats, GError **error)
{
  return graft_tensor_compute_stats_cancellable (tensor, stats, NULL, error);
}

char *
graft_tensor_describe (const GraftTensor *tensor)
{
  GString *out = g_string_new (graft_dtype_to_string (tensor->dtype));

  g_string_append_c (out, '[');
  for (int i = 0; i < tensor->rank; i++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? "," : "", tensor->dims[i]);
  g_string_append_c (out, ']');
  return g_string_free (out, FALSE);
}
