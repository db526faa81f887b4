#include "onnx/tensor-proto.h"
#include "onnx/kept-fields.h"
#include "onnx/external-data.h"
#include "onnx/type-proto.h"
#include "onnx/wire.h"

#include <string.h>
#include <glib/gstdio.h>

/* A sparse tensor is densified for the IR; refuse sizes that only a hostile
 * file would declare. */
#define MAX_DENSE_BYTES ((gsize) 1 << 30)

static gboolean
fail (GError **error, GraftModelError code, const char *where, const char *format, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (GError **error, GraftModelError code, const char *where, const char *format, ...)
{
  va_list args;
  g_autofree char *detail = NULL;

  va_start (args, format);
  detail = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, code, "%s: %s", where, detail);
  return FALSE;
}

/* Writes count values of width bytes, little-endian, from 32- or 64-bit
 * source words (float/double sources are copied as their bit patterns). */
static GBytes *
pack_words (const void *source, gsize source_width, gboolean sign_extend, gsize count, gsize width,
            gboolean as_bool)
{
  const guint8 *in = source;
  guint8 *out = g_malloc (count * width + 1);

  for (gsize i = 0; i < count; i++)
    {
      guint64 v;

      if (source_width == 4)
        {
          guint32 word;
          memcpy (&word, in + i * 4, 4);
          v = sign_extend ? (guint64) (gint64) (gint32) word : word;
        }
      else
        memcpy (&v, in + i * 8, 8);
      if (as_bool)
        v = v != 0;
      for (gsize b = 0; b < width; b++)
        out[i * width + b] = (v >> (8 * b)) & 0xff;
    }
  return g_bytes_new_take (out, count * width);
}

/* Converts the typed repeated field ONNX uses for the tensor's dtype.
 * Returns NULL (no error) when that field is empty. */
static GBytes *
typed_field_to_bytes (const Onnx__TensorProto *proto, GraftDType dtype, gsize numel, const char *where,
                      GError **error)
{
  gsize have = 0, want = numel;
  const char *field = NULL;
  GBytes *bytes = NULL;

  switch (dtype)
    {
    case GRAFT_DTYPE_FLOAT32:
    case GRAFT_DTYPE_COMPLEX64:
      field = "float_data";
      have = proto->n_float_data;
      want = dtype == GRAFT_DTYPE_COMPLEX64 ? numel * 2 : numel;
      if (have == want && have > 0)
        bytes = pack_words (proto->float_data, 4, FALSE, have, 4, FALSE);
      break;
    case GRAFT_DTYPE_FLOAT64:
    case GRAFT_DTYPE_COMPLEX128:
      field = "double_data";
      have = proto->n_double_data;
      want = dtype == GRAFT_DTYPE_COMPLEX128 ? numel * 2 : numel;
      if (have == want && have > 0)
        bytes = pack_words (proto->double_data, 8, FALSE, have, 8, FALSE);
      break;
    case GRAFT_DTYPE_INT32:
    case GRAFT_DTYPE_INT16:
    case GRAFT_DTYPE_INT8:
    case GRAFT_DTYPE_UINT16:
    case GRAFT_DTYPE_UINT8:
    case GRAFT_DTYPE_BOOL:
    case GRAFT_DTYPE_FLOAT16:
    case GRAFT_DTYPE_BFLOAT16:
    case GRAFT_DTYPE_FLOAT8E4M3FN:
    case GRAFT_DTYPE_FLOAT8E4M3FNUZ:
    case GRAFT_DTYPE_FLOAT8E5M2:
    case GRAFT_DTYPE_FLOAT8E5M2FNUZ:
    case GRAFT_DTYPE_FLOAT8E8M0:
    case GRAFT_DTYPE_UINT4:
    case GRAFT_DTYPE_INT4:
    case GRAFT_DTYPE_FLOAT4E2M1:
    case GRAFT_DTYPE_UINT2:
    case GRAFT_DTYPE_INT2:
      /* ONNX stores these (float16/bfloat16/float8 as bit patterns) one
       * per int32; the 4- and 2-bit types one packed byte per int32. */
      field = "int32_data";
      have = proto->n_int32_data;
      if (graft_dtype_get_packed_bits (dtype) != 0)
        want = graft_dtype_get_packed_size (dtype, numel);
      if (have == want && have > 0)
        bytes = pack_words (proto->int32_data, 4, TRUE, have, graft_dtype_get_size (dtype),
                               dtype == GRAFT_DTYPE_BOOL);
      break;
    case GRAFT_DTYPE_INT64:
      field = "int64_data";
      have = proto->n_int64_data;
      if (have == want && have > 0)
        bytes = pack_words (proto->int64_data, 8, FALSE, have, 8, FALSE);
      break;
    case GRAFT_DTYPE_UINT32:
    case GRAFT_DTYPE_UINT64:
      field = "uint64_data";
      have = proto->n_uint64_data;
      if (have == want && have > 0)
        bytes = pack_words (proto->uint64_data, 8, FALSE, have, graft_dtype_get_size (dtype), FALSE);
      break;
    default:
      break;
    }

  if (field != NULL && have > 0 && have != want)
    fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "%s has %" G_GSIZE_FORMAT " values but the shape needs %" G_GSIZE_FORMAT,
          field, have, want);
  return bytes;
}

static const char *
external_entry (const Onnx__TensorProto *proto, const char *key)
{
  const char *found = NULL;

  for (size_t i = 0; i < proto->n_external_data; i++)
    if (g_strcmp0 (proto->external_data[i]->key, key) == 0)
      found = proto->external_data[i]->value;
  return found;
}

static gboolean
parse_size_entry (const Onnx__TensorProto *proto, const char *key, guint64 *value, gboolean *present,
                  const char *where, GError **error)
{
  const char *text = external_entry (proto, key);

  *present = text != NULL;
  *value = 0;
  if (text == NULL)
    return TRUE;
  if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXINT64, value, NULL))
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "external data %s '%s' is not a byte count", key, text);
  return TRUE;
}

/* Descriptors a model keeps for its external data files; the tensors of
 * files past these (a model saved one file per tensor) are read at once,
 * so that no model runs the process out of descriptors. */
#define MAX_HELD_EXTERNAL_FILES 256

/* The file at path (canonical, inside the model's folder), opened once per
 * read: *held tells whether the model keeps it open (else the caller reads
 * what it needs now). */
static GraftExternalFile *
external_file_for (GraftOnnxReadContext *context, const char *path, gboolean *held, GError **error)
{
  GraftExternalFile *file = g_hash_table_lookup (context->external_files, path);

  *held = TRUE;
  if (file != NULL)
    return graft_external_file_ref (file);
  file = graft_external_file_open_inside (context->model_dir, path + strlen (context->model_dir) + 1, error);
  if (file == NULL)
    return NULL;
  if (g_hash_table_size (context->external_files) >= MAX_HELD_EXTERNAL_FILES)
    {
      *held = FALSE;
      return file;
    }
  g_hash_table_insert (context->external_files, g_strdup (path), graft_external_file_ref (file));
  return file;
}

static gboolean
attach_external (GraftOnnxReadContext *context, GraftTensor *tensor, const Onnx__TensorProto *proto,
                 const char *where, GError **error)
{
  const char *location = external_entry (proto, "location");
  g_autofree char *path = NULL;
  g_autoptr(GError) local_error = NULL;
  g_autoptr(GraftExternalFile) file = NULL;
  guint64 offset, length, file_size;
  gboolean has_offset, has_length, held = FALSE;
  gsize expected = graft_tensor_get_nbytes (tensor);

  if (tensor->dtype == GRAFT_DTYPE_STRING)
    return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, where, "string tensors cannot have external data");
  if (context->model_dir == NULL)
    return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, where,
                 "external data '%s' cannot be read: the model was not opened from a folder",
                 location ? location : "");
  if (!parse_size_entry (proto, "offset", &offset, &has_offset, where, error)
      || !parse_size_entry (proto, "length", &length, &has_length, where, error))
    return FALSE;

  path = graft_onnx_resolve_external_location (context->model_dir, location, &local_error);
  if (path == NULL || (file = external_file_for (context, path, &held, &local_error)) == NULL)
    return fail (error, local_error->code, where, "%s", local_error->message);

  file_size = graft_external_file_get_size (file);
  if (!has_length)
    length = offset <= file_size ? file_size - offset : 0;
  if (offset > file_size || length > file_size - offset)
    return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, where,
                 "external data '%s' is %" G_GUINT64_FORMAT " bytes, too short for %" G_GUINT64_FORMAT " bytes at offset %" G_GUINT64_FORMAT,
                 location, file_size, length, offset);
  if (length != expected)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, where,
                 "external data '%s' holds %" G_GUINT64_FORMAT " bytes but the tensor needs %" G_GSIZE_FORMAT,
                 location, length, expected);

  if (held)
    {
      graft_tensor_set_external (tensor, file, offset, has_length ? (gint64) length : -1);
      return TRUE;
    }
  g_autoptr(GBytes) bytes = graft_external_file_read (file, offset, (gsize) length, &local_error);
  if (bytes == NULL || !graft_tensor_set_data (tensor, bytes, &local_error))
    return fail (error, local_error->code, where, "%s", local_error->message);
  return TRUE;
}

static gboolean
check_dims (const Onnx__TensorProto *proto, const char *where, GError **error)
{
  gint64 numel = 1;

  for (size_t i = 0; i < proto->n_dims; i++)
    {
      gint64 d = proto->dims[i];

      if (d < 0)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "dimension %" G_GSIZE_FORMAT " is negative (%" G_GINT64_FORMAT ")",
                     (gsize) i, d);
      if (d != 0 && numel > G_MAXINT64 / 16 / d)
        return fail (error, GRAFT_MODEL_ERROR_UNSAFE, where, "declared dimensions are absurdly large");
      numel *= d;
    }
  return TRUE;
}

GraftTensor *
graft_onnx_tensor_from_proto (GraftOnnxReadContext *context, const Onnx__TensorProto *proto, const char *where,
                              GError **error)
{
  g_autoptr(GraftTensor) tensor = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) local_error = NULL;
  GraftDType dtype = graft_onnx_dtype_from_elem_type (proto->data_type);
  GraftOnnxSlice slice;
  gsize numel;

  if (proto->data_type == 0)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "has no data_type");
      return NULL;
    }
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, where, "unknown data_type %d (not an element type of the ONNX schema Graft was built with)",
            proto->data_type);
      return NULL;
    }
  if (proto->n_dims > 64)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSAFE, where, "rank %" G_GSIZE_FORMAT " is absurd", (gsize) proto->n_dims);
      return NULL;
    }
  if (!check_dims (proto, where, error))
    return NULL;

  tensor = graft_tensor_new (proto->name, dtype, (int) proto->n_dims, proto->dims);
  if (proto->doc_string != NULL && proto->doc_string[0] != '\0')
    tensor->doc_string = g_strdup (proto->doc_string);
  tensor->onnx_kept_fields = graft_onnx_keep_fields (context, &proto->base);
  numel = (gsize) graft_tensor_get_numel (tensor);

  if (proto->has_data_location && proto->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    {
      if (!attach_external (context, tensor, proto, where, error))
        return NULL;
      return g_steal_pointer (&tensor);
    }

  if (dtype == GRAFT_DTYPE_STRING)
    {
      if (proto->n_string_data != numel)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, where,
                "string_data has %" G_GSIZE_FORMAT " values but the shape needs %" G_GSIZE_FORMAT,
                (gsize) proto->n_string_data, numel);
          return NULL;
        }
      for (size_t i = 0; i < proto->n_string_data; i++)
        g_ptr_array_add (tensor->strings, g_bytes_new (proto->string_data[i].data, proto->string_data[i].len));
      return g_steal_pointer (&tensor);
    }

  gboolean from_source = FALSE;
  if (context->slices != NULL && graft_onnx_wire_get_raw_slice (&proto->base, context->slices, &slice))
    {
      bytes = slice.copy != NULL ? g_bytes_ref (slice.copy)
                                 : g_bytes_new_from_bytes (context->file_bytes, slice.offset, slice.length);
      from_source = slice.copy != NULL && context->source != NULL;
    }
  else if (proto->has_raw_data)
    bytes = g_bytes_new (proto->raw_data.data, proto->raw_data.len);
  else
    {
      bytes = typed_field_to_bytes (proto, dtype, numel, where, &local_error);
      if (local_error != NULL)
        {
          g_propagate_error (error, g_steal_pointer (&local_error));
          return NULL;
        }
      if (bytes == NULL)
        {
          if (numel > 0)
            {
              fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "has %" G_GSIZE_FORMAT " elements but no data", numel);
              return NULL;
            }
          bytes = g_bytes_new (NULL, 0);
        }
    }

  if (graft_dtype_get_packed_bits (dtype) != 0)
    {
      g_autoptr(GBytes) packed = g_steal_pointer (&bytes);
      bytes = graft_dtype_unpack (dtype, packed, numel);
      if (bytes == NULL)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "%s data holds %" G_GSIZE_FORMAT " bytes, %" G_GSIZE_FORMAT
                " packed elements need %" G_GSIZE_FORMAT, graft_dtype_to_string (dtype), g_bytes_get_size (packed),
                numel, graft_dtype_get_packed_size (dtype, numel));
          return NULL;
        }
    }
  if (!graft_tensor_set_data (tensor, bytes, &local_error))
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "%s", local_error->message);
      return NULL;
    }
  /* the data is the file's bytes as they are (not unpacked): they can be read again */
  if (from_source && graft_dtype_get_packed_bits (dtype) == 0)
    graft_tensor_set_source (tensor, context->source, slice.offset);
  return g_steal_pointer (&tensor);
}

/* Reads the indices of a sparse tensor as int64 values. */
static gboolean
read_indices (GraftTensor *indices, GArray *out, const char *where, GError **error)
{
  GBytes *bytes;
  const guint8 *data;
  gint64 n = graft_tensor_get_numel (indices);

  if (indices->dtype != GRAFT_DTYPE_INT64)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "sparse indices must be int64, not %s",
                 graft_dtype_to_string (indices->dtype));
  bytes = graft_tensor_get_data (indices, error);
  if (bytes == NULL)
    return FALSE;
  data = g_bytes_get_data (bytes, NULL);
  for (gint64 i = 0; i < n; i++)
    {
      guint64 v = 0;
      for (guint b = 0; b < 8; b++)
        v |= (guint64) data[i * 8 + b] << (8 * b);
      g_array_append_val (out, v);
    }
  return TRUE;
}

GraftTensor *
graft_onnx_tensor_from_sparse_proto (GraftOnnxReadContext *context, const Onnx__SparseTensorProto *proto,
                                     const char *where, GError **error)
{
  g_autoptr(GraftTensor) values = NULL;
  g_autoptr(GraftTensor) indices = NULL;
  g_autoptr(GraftTensor) dense = NULL;
  g_autoptr(GArray) index_list = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autofree guint8 *buffer = NULL;
  GBytes *value_bytes;
  gsize item, nbytes;
  gint64 numel, nnz;
  const guint8 *source;
  Onnx__TensorProto shape_only = ONNX__TENSOR_PROTO__INIT;

  if (proto->values == NULL || proto->indices == NULL)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "sparse tensor lacks values or indices");
      return NULL;
    }
  shape_only.n_dims = proto->n_dims;
  shape_only.dims = proto->dims;
  if (proto->n_dims > 64 || !check_dims (&shape_only, where, error))
    {
      if (error != NULL && *error == NULL)
        fail (error, GRAFT_MODEL_ERROR_UNSAFE, where, "rank %" G_GSIZE_FORMAT " is absurd", (gsize) proto->n_dims);
      return NULL;
    }
  values = graft_onnx_tensor_from_proto (context, proto->values, where, error);
  if (values == NULL)
    return NULL;
  indices = graft_onnx_tensor_from_proto (context, proto->indices, where, error);
  if (indices == NULL)
    return NULL;

  dense = graft_tensor_new (proto->values->name, values->dtype, (int) proto->n_dims, proto->dims);
  item = graft_dtype_get_size (values->dtype);
  numel = graft_tensor_get_numel (dense);
  nnz = graft_tensor_get_numel (values);
  if (item == 0)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, where, "sparse %s tensors are not supported",
            graft_dtype_to_string (values->dtype));
      return NULL;
    }
  if (numel < 0 || (guint64) numel > MAX_DENSE_BYTES / item)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSAFE, where, "densified sparse tensor would exceed %" G_GSIZE_FORMAT " bytes",
            MAX_DENSE_BYTES);
      return NULL;
    }
  if (values->rank != 1)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "sparse values must be one-dimensional");
      return NULL;
    }
  if (!read_indices (indices, index_list, where, error))
    return NULL;

  /* Indices are either [NNZ] linear positions or [NNZ, rank] coordinates. */
  gboolean linear = indices->rank == 1 && (gint64) index_list->len == nnz;
  gboolean coordinates = indices->rank == 2 && indices->dims[0] == nnz && indices->dims[1] == dense->rank;
  if (!linear && !coordinates)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "sparse indices do not match %" G_GINT64_FORMAT " values", nnz);
      return NULL;
    }

  nbytes = (gsize) numel * item;
  buffer = g_malloc0 (nbytes + 1);
  value_bytes = graft_tensor_get_data (values, error);
  if (value_bytes == NULL)
    return NULL;
  source = g_bytes_get_data (value_bytes, NULL);
  for (gint64 k = 0; k < nnz; k++)
    {
      gint64 position = 0;

      if (linear)
        position = g_array_index (index_list, gint64, k);
      else
        for (int d = 0; d < dense->rank; d++)
          {
            gint64 c = g_array_index (index_list, gint64, k * dense->rank + d);
            if (c < 0 || c >= dense->dims[d])
              {
                position = -1;
                break;
              }
            position = position * dense->dims[d] + c;
          }
      if (position < 0 || position >= numel)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, where, "sparse index %" G_GINT64_FORMAT " is out of range", k);
          return NULL;
        }
      memcpy (buffer + position * item, source + k * item, item);
    }

  g_autoptr(GBytes) dense_bytes = g_bytes_new_take (g_steal_pointer (&buffer), nbytes);
  if (!graft_tensor_set_data (dense, dense_bytes, error))
    return NULL;
  /* After set_data, which drops it: the form to save it in again. */
  dense->onnx_sparse = graft_onnx_keep_message (context, &proto->base);
  return g_steal_pointer (&dense);
}
