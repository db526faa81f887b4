#include "onnx/data-file-writer.h"
#include "ir/atomic-save.h"
#include "ir/external-file.h"
#include "ir/model-error.h"

#include <string.h>

/* onnx (external_data_helper) and onnxruntime's mapping agree on 4 KiB
 * pages for tensors of a megabyte or more; small ones are packed. */
#define PAGE_ALIGN_MIN_BYTES ((gsize) 1 << 20)
#define PAGE_BYTES 4096
#define SMALL_ALIGN_BYTES 64
/* Bounded memory while copying from the data file the model was read from. */
#define COPY_CHUNK_BYTES ((gsize) 16 << 20)

typedef struct {
  GraftTensor *tensor;
  guint64 offset;
} PlacedTensor;

struct _GraftOnnxDataFile {
  char *location;
  GArray *placed;   /* PlacedTensor, by offset */
  guint64 size;
};

GraftOnnxDataFile *
graft_onnx_data_file_new (const char *location)
{
  GraftOnnxDataFile *file = g_new0 (GraftOnnxDataFile, 1);

  file->location = g_strdup (location);
  file->placed = g_array_new (FALSE, FALSE, sizeof (PlacedTensor));
  return file;
}

void
graft_onnx_data_file_free (GraftOnnxDataFile *file)
{
  if (file == NULL)
    return;
  g_free (file->location);
  g_array_unref (file->placed);
  g_free (file);
}

const char *
graft_onnx_data_file_get_location (GraftOnnxDataFile *file)
{
  return file->location;
}

gboolean
graft_onnx_data_file_is_empty (GraftOnnxDataFile *file)
{
  return file->placed->len == 0;
}

guint64
graft_onnx_data_file_place (GraftOnnxDataFile *file, GraftTensor *tensor)
{
  gsize nbytes = graft_tensor_get_nbytes (tensor);
  guint64 align = nbytes >= PAGE_ALIGN_MIN_BYTES ? PAGE_BYTES : SMALL_ALIGN_BYTES;
  PlacedTensor placed = { tensor, (file->size + align - 1) / align * align };

  g_array_append_val (file->placed, placed);
  file->size = placed.offset + nbytes;
  return placed.offset;
}

static gboolean
write_zeros (int fd, const char *path, guint64 count, GError **error)
{
  static const guint8 zeros[PAGE_BYTES];

  while (count > 0)
    {
      gsize n = MIN (count, sizeof zeros);

      if (!graft_atomic_write_all (fd, path, zeros, n, error))
        return FALSE;
      count -= n;
    }
  return TRUE;
}

/* A tensor whose bytes still lie in the file it was read from is copied
 * chunk by chunk, neither loaded into the model nor held whole. */
static gboolean
copy_external (int fd, const char *path, GraftTensor *tensor, gsize nbytes, GError **error)
{
  for (gsize done = 0; done < nbytes;)
    {
      gsize n = MIN (COPY_CHUNK_BYTES, nbytes - done);
      g_autoptr(GBytes) chunk = graft_external_file_read (tensor->external_file, tensor->external_offset + done, n, error);

      if (chunk == NULL)
        {
          g_prefix_error (error, "tensor '%s': ", tensor->name);
          return FALSE;
        }
      if (!graft_atomic_write_all (fd, path, g_bytes_get_data (chunk, NULL), n, error))
        return FALSE;
      done += n;
    }
  return TRUE;
}

static gboolean
write_tensor (int fd, const char *path, GraftTensor *tensor, GError **error)
{
  gsize nbytes = graft_tensor_get_nbytes (tensor);
  GBytes *bytes;
  gsize size;

  if (tensor->data == NULL && graft_tensor_is_external (tensor)
      && (tensor->external_length < 0 || (guint64) tensor->external_length == nbytes))
    return copy_external (fd, path, tensor, nbytes, error);
  if ((bytes = graft_tensor_get_data (tensor, error)) == NULL)
    return FALSE;
  const void *data = g_bytes_get_data (bytes, &size);
  if (size != nbytes)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "tensor '%s' holds %" G_GSIZE_FORMAT " bytes, its shape needs %" G_GSIZE_FORMAT, tensor->name,
                   size, nbytes);
      return FALSE;
    }
  return graft_atomic_write_all (fd, path, data, size, error);
}

gboolean
graft_onnx_data_file_write (int fd, const char *path, gpointer user_data, GError **error)
{
  GraftOnnxDataFile *file = user_data;
  guint64 written = 0;

  for (guint i = 0; i < file->placed->len; i++)
    {
      PlacedTensor *placed = &g_array_index (file->placed, PlacedTensor, i);

      if (!write_zeros (fd, path, placed->offset - written, error) || !write_tensor (fd, path, placed->tensor, error))
        return FALSE;
      written = placed->offset + graft_tensor_get_nbytes (placed->tensor);
    }
  return TRUE;
}
