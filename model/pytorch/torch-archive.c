#include "pytorch/torch-archive.h"

#include <string.h>
#include <sys/mman.h>
#include <zip.h>
#include <gio/gio.h>
#include "ir/file-bytes.h"
#include "ir/model.h"
#include "ir/model-error.h"

struct _GraftTorchArchive {
  char *path;
  GBytes *bytes;
  const guint8 *data;
  gsize size;
  zip_t *zip;
  char *prefix;
  GArray *entries;          /* GraftTorchArchiveEntry */
  GHashTable *by_record;    /* const char* record → guint index + 1 */

  /* The load this archive serves */
  GCancellable *cancellable;
  GHashTable *inflated;     /* libzip index → GBytes: each Deflate record inflates once */
  guint64 allocated;        /* bytes spent from GRAFT_TORCH_ARCHIVE_MAX_ALLOCATED */
  GraftPickleBudget pickle_budget;
};

static guint16
read_u16 (const guint8 *p)
{
  return (guint16) (p[0] | (p[1] << 8));
}

static guint32
read_u32 (const guint8 *p)
{
  return (guint32) p[0] | ((guint32) p[1] << 8) | ((guint32) p[2] << 16) | ((guint32) p[3] << 24);
}

static guint64
read_u64 (const guint8 *p)
{
  return (guint64) read_u32 (p) | ((guint64) read_u32 (p + 4) << 32);
}

static void
entry_clear (gpointer data)
{
  GraftTorchArchiveEntry *entry = data;
  g_free (entry->name);
}

void
graft_torch_archive_free (GraftTorchArchive *archive)
{
  if (archive == NULL)
    return;
  if (archive->zip)
    zip_discard (archive->zip);
  g_clear_pointer (&archive->by_record, g_hash_table_unref);
  g_clear_pointer (&archive->inflated, g_hash_table_unref);
  g_clear_object (&archive->cancellable);
  g_clear_pointer (&archive->entries, g_array_unref);
  g_clear_pointer (&archive->bytes, g_bytes_unref);
  g_free (archive->prefix);
  g_free (archive->path);
  g_free (archive);
}

/* Finds the end-of-central-directory record and returns where the
 * central directory starts and how many records it has, following the
 * ZIP64 locator when the classic fields are saturated (PyTorch always
 * writes ZIP64 records, but small files keep valid classic values). */
static gboolean
find_central_directory (GraftTorchArchive *archive, guint64 *cd_offset, guint64 *cd_count, GError **error)
{
  const guint8 *d = archive->data;
  gsize n = archive->size;
  gssize eocd = -1;

  if (n < 22)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "%s: zip archive is truncated (%" G_GSIZE_FORMAT " bytes, no end-of-central-directory record)",
                   archive->path, n);
      return FALSE;
    }
  gsize lowest = n > 22 + 65535 ? n - 22 - 65535 : 0;
  for (gsize pos = n - 22 + 1; pos-- > lowest;)
    if (read_u32 (d + pos) == 0x06054b50 && pos + 22 + read_u16 (d + pos + 20) <= n)
      {
        eocd = (gssize) pos;
        break;
      }
  if (eocd < 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "%s: zip archive has no end-of-central-directory record (truncated or not a zip file)",
                   archive->path);
      return FALSE;
    }

  *cd_count = read_u16 (d + eocd + 10);
  *cd_offset = read_u32 (d + eocd + 16);
  if ((*cd_count == 0xffff || *cd_offset == 0xffffffff) && eocd >= 20 &&
      read_u32 (d + eocd - 20) == 0x07064b50)
    {
      guint64 z64 = read_u64 (d + eocd - 20 + 8);
      if (z64 > n || n - z64 < 56 || read_u32 (d + z64) != 0x06064b50)
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                       "%s: ZIP64 end-of-central-directory locator points outside the file (offset %" G_GUINT64_FORMAT ")",
                       archive->path, z64);
          return FALSE;
        }
      *cd_count = read_u64 (d + z64 + 32);
      *cd_offset = read_u64 (d + z64 + 48);
    }
  if (*cd_offset > n)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "%s: central directory offset %" G_GUINT64_FORMAT " is past the end of the file (%" G_GSIZE_FORMAT " bytes)",
                   archive->path, *cd_offset, n);
      return FALSE;
    }
  return TRUE;
}

/* libzip does not expose local-header offsets, which are needed to slice
 * Stored records out of the mapping, so the central directory is walked
 * here too (bounds-checked) and matched with libzip's entries by index. */
static gboolean
read_header_offsets (GraftTorchArchive *archive, GError **error)
{
  guint64 cd_offset, cd_count;
  const guint8 *d = archive->data;
  gsize n = archive->size;

  if (!find_central_directory (archive, &cd_offset, &cd_count, error))
    return FALSE;
  if (cd_count != archive->entries->len)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: central directory says %" G_GUINT64_FORMAT " entries, found %u",
                   archive->path, cd_count, archive->entries->len);
      return FALSE;
    }

  guint64 pos = cd_offset;
  for (guint i = 0; i < archive->entries->len; i++)
    {
      GraftTorchArchiveEntry *entry = &g_array_index (archive->entries, GraftTorchArchiveEntry, i);
      if (pos > n || n - pos < 46 || read_u32 (d + pos) != 0x02014b50)
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                       "%s: central directory record %u at byte %" G_GUINT64_FORMAT " is damaged",
                       archive->path, i, pos);
          return FALSE;
        }
      guint name_len = read_u16 (d + pos + 28);
      guint extra_len = read_u16 (d + pos + 30);
      guint comment_len = read_u16 (d + pos + 32);
      guint64 usize = read_u32 (d + pos + 24);
      guint64 csize = read_u32 (d + pos + 20);
      guint64 offset = read_u32 (d + pos + 42);
      if (n - pos - 46 < (guint64) name_len + extra_len + comment_len)
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                       "%s: central directory record %u at byte %" G_GUINT64_FORMAT " runs past the end of the file",
                       archive->path, i, pos);
          return FALSE;
        }
      const guint8 *extra = d + pos + 46 + name_len;
      for (guint e = 0; e + 4 <= extra_len;)
        {
          guint id = read_u16 (extra + e), len = read_u16 (extra + e + 2);
          if (e + 4 + len > extra_len)
            break;
          if (id == 0x0001)
            {
              const guint8 *z = extra + e + 4;
              guint left = len;
              if (usize == 0xffffffff && left >= 8) { usize = read_u64 (z); z += 8; left -= 8; }
              if (csize == 0xffffffff && left >= 8) { csize = read_u64 (z); z += 8; left -= 8; }
              if (offset == 0xffffffff && left >= 8) { offset = read_u64 (z); }
            }
          e += 4 + len;
        }
      if (name_len != strlen (entry->name) || memcmp (d + pos + 46, entry->name, name_len) != 0)
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                       "%s: central directory record %u does not match entry \"%s\"",
                       archive->path, i, entry->name);
          return FALSE;
        }
      entry->header_offset = offset;
      pos += 46 + name_len + extra_len + comment_len;
    }
  return TRUE;
}

static gboolean
load_entries (GraftTorchArchive *archive, GError **error)
{
  zip_int64_t count = zip_get_num_entries (archive->zip, 0);

  archive->entries = g_array_new (FALSE, TRUE, sizeof (GraftTorchArchiveEntry));
  g_array_set_clear_func (archive->entries, entry_clear);
  archive->by_record = g_hash_table_new (g_str_hash, g_str_equal);

  for (zip_int64_t i = 0; i < count; i++)
    {
      zip_stat_t st;
      zip_stat_init (&st);
      if (zip_stat_index (archive->zip, (zip_uint64_t) i, ZIP_FL_ENC_RAW, &st) != 0 ||
          !(st.valid & ZIP_STAT_NAME))
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                       "%s: cannot read zip entry %" G_GINT64_FORMAT ": %s",
                       archive->path, (gint64) i, zip_strerror (archive->zip));
          return FALSE;
        }
      GraftTorchArchiveEntry entry = { 0 };
      entry.name = g_strdup (st.name);
      entry.index = (guint64) i;
      entry.method = (guint16) st.comp_method;
      entry.compressed_size = st.comp_size;
      entry.size = st.size;
      g_array_append_val (archive->entries, entry);
    }

  if (archive->entries->len > 0)
    {
      const char *first = g_array_index (archive->entries, GraftTorchArchiveEntry, 0).name;
      const char *slash = strchr (first, '/');
      archive->prefix = slash ? g_strndup (first, (gsize) (slash - first)) : g_strdup ("");
    }
  else
    archive->prefix = g_strdup ("");

  gsize plen = strlen (archive->prefix);
  for (guint i = 0; i < archive->entries->len; i++)
    {
      GraftTorchArchiveEntry *entry = &g_array_index (archive->entries, GraftTorchArchiveEntry, i);
      if (plen > 0 && strncmp (entry->name, archive->prefix, plen) == 0 && entry->name[plen] == '/')
        entry->record = entry->name + plen + 1;
      else
        entry->record = entry->name;
    }
  /* Pointers into the array are stable from here on. */
  for (guint i = 0; i < archive->entries->len; i++)
    {
      GraftTorchArchiveEntry *entry = &g_array_index (archive->entries, GraftTorchArchiveEntry, i);
      if (!g_hash_table_contains (archive->by_record, entry->record))
        g_hash_table_insert (archive->by_record, (gpointer) entry->record, GUINT_TO_POINTER (i + 1));
    }
  return read_header_offsets (archive, error);
}

static GraftTorchArchive *
archive_open_common (GraftTorchArchive *archive, GError **error)
{
  g_autoptr(GraftTorchArchive) owned = archive;
  zip_error_t zerr;
  zip_error_init (&zerr);

  archive->inflated = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_bytes_unref);
  graft_pickle_budget_init (&archive->pickle_budget, NULL);
  archive->data = g_bytes_get_data (archive->bytes, &archive->size);
  if (archive->size < 4 || memcmp (archive->data, "PK\x03\x04", 4) != 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: not a zip archive (no PK\\3\\4 signature)", archive->path);
      return NULL;
    }
  /* Keep the offsets honest: a file that ends before its central
   * directory is "truncated" for the user, not "not a zip". */
  guint64 cd_offset, cd_count;
  if (!find_central_directory (archive, &cd_offset, &cd_count, error))
    return NULL;

  zip_source_t *source = zip_source_buffer_create (archive->data, archive->size, 0, &zerr);
  if (source == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO,
                   "%s: %s", archive->path, zip_error_strerror (&zerr));
      zip_error_fini (&zerr);
      return NULL;
    }
  archive->zip = zip_open_from_source (source, ZIP_RDONLY, &zerr);
  if (archive->zip == NULL)
    {
      int code = zip_error_code_zip (&zerr);
      g_set_error (error, GRAFT_MODEL_ERROR,
                   code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS ? GRAFT_MODEL_ERROR_MALFORMED : GRAFT_MODEL_ERROR_IO,
                   "%s: cannot open zip archive: %s", archive->path, zip_error_strerror (&zerr));
      zip_source_free (source);
      zip_error_fini (&zerr);
      return NULL;
    }
  zip_error_fini (&zerr);
  if (!load_entries (archive, error))
    return NULL;
  return g_steal_pointer (&owned);
}

GraftTorchArchive *
graft_torch_archive_open (const char *path, GError **error)
{
  /* Mapped only when nothing can rewrite it under us (ir/file-bytes.h). */
  GBytes *bytes = graft_file_bytes_open (path, error);

  if (bytes == NULL)
    return NULL;
  GraftTorchArchive *archive = g_new0 (GraftTorchArchive, 1);
  archive->path = g_strdup (path);
  archive->bytes = bytes;
  return archive_open_common (archive, error);
}

GraftTorchArchive *
graft_torch_archive_open_bytes (GBytes *bytes, const char *display_name, GError **error)
{
  GraftTorchArchive *archive = g_new0 (GraftTorchArchive, 1);
  archive->path = g_strdup (display_name);
  archive->bytes = g_bytes_ref (bytes);
  return archive_open_common (archive, error);
}

const char *
graft_torch_archive_get_path (GraftTorchArchive *archive)
{
  return archive->path;
}

void
graft_torch_archive_set_cancellable (GraftTorchArchive *archive, GCancellable *cancellable)
{
  g_set_object (&archive->cancellable, cancellable);
  archive->pickle_budget.cancellable = cancellable;
}

GraftPickleBudget *
graft_torch_archive_get_pickle_budget (GraftTorchArchive *archive)
{
  return &archive->pickle_budget;
}

gboolean
graft_torch_archive_spend (GraftTorchArchive *archive, guint64 n, const char *what, GError **error)
{
  if (n > GRAFT_TORCH_ARCHIVE_MAX_ALLOCATED - archive->allocated)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "%s: %s needs %" G_GUINT64_FORMAT " MiB, past the %" G_GUINT64_FORMAT " MiB one file may allocate "
                   "(%" G_GUINT64_FORMAT " MiB already)", archive->path, what, n >> 20,
                   (guint64) GRAFT_TORCH_ARCHIVE_MAX_ALLOCATED >> 20, archive->allocated >> 20);
      return FALSE;
    }
  archive->allocated += n;
  return TRUE;
}

GBytes *
graft_torch_archive_view (GraftTorchArchive *archive, GBytes *storage, const char *storage_name,
                          const GraftTensorView *view, const char *tensor_name, gboolean *copied,
                          GError **error)
{
  GraftTensorViewExtent extent;
  if (!graft_tensor_view_measure (view, g_bytes_get_size (storage), tensor_name, &extent, error))
    {
      g_prefix_error (error, "%s: storage %s: ", archive->path, storage_name);
      return NULL;
    }
  if (copied != NULL)
    *copied = !extent.contiguous;
  if (extent.contiguous)
    return g_bytes_new_from_bytes (storage, (gsize) extent.first_byte, (gsize) extent.nbytes);
  g_autofree char *what = g_strdup_printf ("the strided view \"%s\"", tensor_name);
  if (!graft_torch_archive_spend (archive, extent.nbytes, what, error))
    return NULL;
  guint8 *copy = g_malloc (extent.nbytes);
  graft_tensor_view_gather (view, &extent, g_bytes_get_data (storage, NULL), copy);
  return g_bytes_new_take (copy, extent.nbytes);
}

const char *
graft_torch_archive_get_prefix (GraftTorchArchive *archive)
{
  return archive->prefix;
}

guint
graft_torch_archive_get_n_entries (GraftTorchArchive *archive)
{
  return archive->entries->len;
}

const GraftTorchArchiveEntry *
graft_torch_archive_get_entry (GraftTorchArchive *archive, guint i)
{
  g_return_val_if_fail (i < archive->entries->len, NULL);
  return &g_array_index (archive->entries, GraftTorchArchiveEntry, i);
}

const GraftTorchArchiveEntry *
graft_torch_archive_lookup (GraftTorchArchive *archive, const char *record)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (archive->by_record, record));
  return i ? &g_array_index (archive->entries, GraftTorchArchiveEntry, i - 1) : NULL;
}

gboolean
graft_torch_archive_has (GraftTorchArchive *archive, const char *record)
{
  return graft_torch_archive_lookup (archive, record) != NULL;
}

gboolean
graft_torch_archive_has_prefix (GraftTorchArchive *archive, const char *prefix)
{
  for (guint i = 0; i < archive->entries->len; i++)
    if (g_str_has_prefix (g_array_index (archive->entries, GraftTorchArchiveEntry, i).record, prefix))
      return TRUE;
  return FALSE;
}

static GBytes *
read_stored (GraftTorchArchive *archive, const GraftTorchArchiveEntry *entry, GError **error)
{
  const guint8 *d = archive->data;
  guint64 h = entry->header_offset;

  if (h > archive->size || archive->size - h < 30 || read_u32 (d + h) != 0x04034b50)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: entry \"%s\": no local file header at byte %" G_GUINT64_FORMAT,
                   archive->path, entry->name, h);
      return NULL;
    }
  guint64 start = h + 30 + read_u16 (d + h + 26) + read_u16 (d + h + 28);
  if (start > archive->size || archive->size - start < entry->size)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "%s: entry \"%s\": %" G_GUINT64_FORMAT " bytes at byte %" G_GUINT64_FORMAT
                   " run past the end of the file (%" G_GSIZE_FORMAT " bytes)",
                   archive->path, entry->name, entry->size, start, archive->size);
      return NULL;
    }
  return g_bytes_new_from_bytes (archive->bytes, (gsize) start, (gsize) entry->size);
}

/* Inflated records live in anonymous mappings (GraftPages): no copy of a
 * large record's pages until written, and freeing one (a cancelled load)
 * is an munmap, not a walk over the memory. */
static GBytes *
read_inflated (GraftTorchArchive *archive, const GraftTorchArchiveEntry *entry, GError **error)
{
  GBytes *cached = g_hash_table_lookup (archive->inflated, GSIZE_TO_POINTER (entry->index));

  if (cached)
    return g_bytes_ref (cached);
  if (entry->size > GRAFT_TORCH_ARCHIVE_MAX_INFLATED)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "%s: entry \"%s\" declares %" G_GUINT64_FORMAT " bytes once inflated, more than the %u allowed",
                   archive->path, entry->name, entry->size, GRAFT_TORCH_ARCHIVE_MAX_INFLATED);
      return NULL;
    }
  g_autofree char *what = g_strdup_printf ("inflating entry \"%s\"", entry->name);
  if (!graft_torch_archive_spend (archive, entry->size, what, error))
    return NULL;
  zip_file_t *file = zip_fopen_index (archive->zip, entry->index, 0);
  if (file == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: entry \"%s\": %s", archive->path, entry->name, zip_strerror (archive->zip));
      return NULL;
    }
  GraftPages *mapping = graft_pages_new (entry->size + 1);
  if (mapping == NULL)
    {
      zip_fclose (file);
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: entry \"%s\": no memory for %" G_GUINT64_FORMAT
                   " bytes", archive->path, entry->name, entry->size);
      return NULL;
    }
  guint8 *buffer = mapping->data;
  guint64 got = 0;
  while (got < entry->size)
    {
      /* In slices, so a cancelled load stops within a few milliseconds. */
      if (g_cancellable_set_error_if_cancelled (archive->cancellable, error))
        {
          zip_fclose (file);
          graft_pages_free (mapping);
          return NULL;
        }
      zip_int64_t r = zip_fread (file, buffer + got, MIN (entry->size - got, 1u << 20));
      if (r <= 0)
        {
          g_set_error (error, GRAFT_MODEL_ERROR,
                       r == 0 ? GRAFT_MODEL_ERROR_TRUNCATED : GRAFT_MODEL_ERROR_MALFORMED,
                       "%s: entry \"%s\": %s after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes",
                       archive->path, entry->name,
                       r == 0 ? "data ends early" : zip_file_strerror (file), got, entry->size);
          zip_fclose (file);
          graft_pages_free (mapping);
          return NULL;
        }
      got += (guint64) r;
    }
  zip_fclose (file);
  buffer[got] = 0;   /* code is parsed as text */
  GBytes *bytes = g_bytes_new_with_free_func (buffer, (gsize) got, graft_pages_free, mapping);
  g_hash_table_insert (archive->inflated, GSIZE_TO_POINTER (entry->index), g_bytes_ref (bytes));
  return bytes;
}

GBytes *
graft_torch_archive_read_entry (GraftTorchArchive *archive, const GraftTorchArchiveEntry *entry, GError **error)
{
  if (entry->method == ZIP_CM_STORE)
    return read_stored (archive, entry, error);
  if (entry->method == ZIP_CM_DEFLATE)
    return read_inflated (archive, entry, error);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "%s: entry \"%s\" uses zip compression method %u (PyTorch writes only Stored and Deflate)",
               archive->path, entry->name, entry->method);
  return NULL;
}

GBytes *
graft_torch_archive_read (GraftTorchArchive *archive, const char *record, GError **error)
{
  const GraftTorchArchiveEntry *entry = graft_torch_archive_lookup (archive, record);

  if (entry == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: archive has no record \"%s/%s\"", archive->path, archive->prefix, record);
      return NULL;
    }
  return graft_torch_archive_read_entry (archive, entry, error);
}

gboolean
graft_torch_archive_get_version (GraftTorchArchive *archive, guint64 *version, GError **error)
{
  const char *record = graft_torch_archive_has (archive, ".data/version") ? ".data/version" : "version";

  *version = 0;
  if (!graft_torch_archive_has (archive, record))
    return TRUE;
  g_autoptr(GBytes) bytes = graft_torch_archive_read (archive, record, error);
  if (bytes == NULL)
    return FALSE;
  gsize len;
  const char *data = g_bytes_get_data (bytes, &len);
  g_autofree char *text = g_strstrip (g_strndup (data, MIN (len, 64)));
  g_autoptr(GError) local_error = NULL;
  if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT32, version, &local_error))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: record \"%s\" is not a version number (\"%s\")", archive->path, record, text);
      return FALSE;
    }
  return TRUE;
}

GraftTensor *
graft_torch_archive_load_tensor (GraftTorchArchive *archive, const char *dir, GraftPickleValue *value,
                                 const char *name, GError **error)
{
  GraftPickleTensor *t = value->tensor;
  GraftPickleStorage *s = t->storage->storage;
  g_autoptr(GraftTensor) tensor = graft_tensor_new (name, t->dtype, t->rank, t->sizes);
  gsize itemsize = graft_dtype_get_size (t->dtype);
  gint64 numel = graft_tensor_get_numel (tensor);

  if (t->rank > 0)
    tensor->strides = g_memdup2 (t->strides, sizeof (gint64) * (gsize) t->rank);
  if (itemsize == 0 || numel == 0 || s->numel == 0)
    return g_steal_pointer (&tensor);

  g_autofree char *record = g_strdup_printf ("%s/%s", dir, s->key);
  gint64 storage_bytes;
  if (!graft_dim_mul_checked (s->numel, (gint64) itemsize, &storage_bytes))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: storage %s declares %" G_GINT64_FORMAT " elements, more than 2^63 bytes",
                   graft_torch_archive_get_path (archive), record, s->numel);
      return NULL;
    }
  g_autoptr(GBytes) storage = graft_torch_archive_read (archive, record, error);
  if (storage == NULL)
    return NULL;
  gsize storage_size = g_bytes_get_size (storage);
  if (storage_size < (guint64) storage_bytes)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "%s: storage %s has %" G_GSIZE_FORMAT " bytes, tensor \"%s\" needs %" G_GINT64_FORMAT " × %" G_GSIZE_FORMAT,
                   graft_torch_archive_get_path (archive), record, storage_size, name, s->numel, itemsize);
      return NULL;
    }
  /* The view may use only the elements the pickle declares. */
  g_autoptr(GBytes) declared = g_bytes_new_from_bytes (storage, 0, (gsize) storage_bytes);
  GraftTensorView view = { t->rank, t->sizes, t->strides, t->offset, itemsize };
  gboolean copied;
  g_autoptr(GBytes) data = graft_torch_archive_view (archive, declared, record, &view, name, &copied, error);
  if (data == NULL || !graft_tensor_set_data (tensor, data, error))
    return NULL;
  if (copied)
    g_clear_pointer (&tensor->strides, g_free);   /* the copy is row-major */
  return g_steal_pointer (&tensor);
}
