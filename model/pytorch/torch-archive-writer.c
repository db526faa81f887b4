#include "pytorch/torch-archive-writer.h"
#include "ir/atomic-save.h"
#include "ir/model-error.h"

#include <string.h>
#include <zlib.h>

/* PyTorch's kFieldAlignment. */
#define RECORD_ALIGNMENT 64
#define ZIP32_LIMIT 0xFFFFFFFFu

typedef struct {
  char *name;          /* full name, prefix included */
  guint32 crc;
  guint64 size;
  guint64 header_offset;
} Entry;

struct _GraftTorchArchiveWriter {
  int fd;
  char *path;
  char *prefix;
  guint64 offset;      /* bytes written so far */
  GArray *entries;     /* Entry */
  GHashTable *names;   /* record names added (borrowed from entries) */
  guint64 name_hash;   /* for .data/serialization_id */
  guint64 crc_hash;
};

static void
entry_clear (Entry *entry)
{
  g_free (entry->name);
}

GraftTorchArchiveWriter *
graft_torch_archive_writer_new (int fd, const char *path, const char *prefix)
{
  GraftTorchArchiveWriter *writer = g_new0 (GraftTorchArchiveWriter, 1);

  writer->fd = fd;
  writer->path = g_strdup (path);
  writer->prefix = g_strdup (prefix);
  writer->entries = g_array_new (FALSE, TRUE, sizeof (Entry));
  g_array_set_clear_func (writer->entries, (GDestroyNotify) entry_clear);
  writer->names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  return writer;
}

void
graft_torch_archive_writer_free (GraftTorchArchiveWriter *writer)
{
  if (writer == NULL)
    return;
  g_array_unref (writer->entries);
  g_hash_table_unref (writer->names);
  g_free (writer->path);
  g_free (writer->prefix);
  g_free (writer);
}

char *
graft_torch_archive_prefix_for_path (const char *path)
{
  g_autofree char *base = g_path_get_basename (path);
  char *dot = strrchr (base, '.');

  if (dot != NULL && dot != base)
    *dot = '\0';
  /* A name torch could not have made ("", ".", "..") and one with a
   * separator would put records outside the one top folder. */
  if (*base == '\0' || strcmp (base, ".") == 0 || strcmp (base, "..") == 0 || strchr (base, '/') != NULL)
    return g_strdup ("archive");
  return g_steal_pointer (&base);
}

static void
put16 (GByteArray *out, guint16 v)
{
  guint8 b[2] = { v & 0xff, v >> 8 };
  g_byte_array_append (out, b, 2);
}

static void
put32 (GByteArray *out, guint32 v)
{
  guint8 b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };
  g_byte_array_append (out, b, 4);
}

static void
put64 (GByteArray *out, guint64 v)
{
  put32 (out, (guint32) v);
  put32 (out, (guint32) (v >> 32));
}

static gboolean
emit (GraftTorchArchiveWriter *writer, const void *data, gsize len, GError **error)
{
  if (!graft_atomic_write_all (writer->fd, writer->path, data, len, error))
    return FALSE;
  writer->offset += len;
  return TRUE;
}

gboolean
graft_torch_archive_writer_has (GraftTorchArchiveWriter *writer, const char *record)
{
  return g_hash_table_contains (writer->names, record);
}

/* Python's hash of nothing in particular: any stable mix will do, torch
 * only compares serialization ids for equality. */
static guint64
mix (guint64 hash, guint64 value)
{
  hash ^= value + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  return hash;
}

gboolean
graft_torch_archive_writer_add (GraftTorchArchiveWriter *writer, const char *record, const void *data, gsize len,
                                GError **error)
{
  g_return_val_if_fail (record != NULL && *record != '\0', FALSE);
  if (g_hash_table_contains (writer->names, record))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "cannot save '%s': record %s written twice",
                   writer->path, record);
      return FALSE;
    }
  g_autofree char *name = g_strdup_printf ("%s/%s", writer->prefix, record);
  gsize name_len = strlen (name);
  if (name_len > G_MAXUINT16 - 1)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "cannot save '%s': record name %s is too long",
                   writer->path, record);
      return FALSE;
    }
  gboolean zip64 = len >= ZIP32_LIMIT;
  guint32 crc = crc32 (0L, Z_NULL, 0);
  for (gsize done = 0; done < len;)
    {
      uInt chunk = (uInt) MIN (len - done, (gsize) G_MAXUINT32 / 2);
      crc = crc32 (crc, (const Bytef *) data + done, chunk);
      done += chunk;
    }

  g_autoptr(GByteArray) header = g_byte_array_new ();
  gsize zip64_extra = zip64 ? 20 : 0;
  guint64 before_padding = writer->offset + 30 + name_len + zip64_extra;
  gsize padding = (RECORD_ALIGNMENT - (before_padding + 4) % RECORD_ALIGNMENT) % RECORD_ALIGNMENT;
  put32 (header, 0x04034b50);
  put16 (header, zip64 ? 45 : 10);
  put16 (header, 0x0800);              /* UTF-8 names */
  put16 (header, 0);                   /* Stored */
  put16 (header, 0);                   /* time and date: PyTorch writes 0 */
  put16 (header, 0);
  put32 (header, crc);
  put32 (header, zip64 ? ZIP32_LIMIT : (guint32) len);
  put32 (header, zip64 ? ZIP32_LIMIT : (guint32) len);
  put16 (header, (guint16) name_len);
  put16 (header, (guint16) (zip64_extra + 4 + padding));
  g_byte_array_append (header, (const guint8 *) name, name_len);
  if (zip64)
    {
      put16 (header, 0x0001);
      put16 (header, 16);
      put64 (header, len);
      put64 (header, len);
    }
  guint8 fb[4] = { 'F', 'B', padding & 0xff, padding >> 8 };
  g_byte_array_append (header, fb, 4);
  for (gsize i = 0; i < padding; i++)
    g_byte_array_append (header, (const guint8 *) "Z", 1);

  Entry entry = { g_steal_pointer (&name), crc, len, writer->offset };
  g_array_append_val (writer->entries, entry);
  g_hash_table_add (writer->names, g_strdup (record));
  writer->name_hash = mix (writer->name_hash, g_str_hash (record));
  writer->crc_hash = mix (writer->crc_hash, crc);
  return emit (writer, header->data, header->len, error) && emit (writer, data, len, error);
}

static gboolean
add_string (GraftTorchArchiveWriter *writer, const char *record, const char *text, GError **error)
{
  return graft_torch_archive_writer_has (writer, record) || graft_torch_archive_writer_add (writer, record, text, strlen (text), error);
}

gboolean
graft_torch_archive_writer_finish (GraftTorchArchiveWriter *writer, guint file_version, GError **error)
{
  g_autofree char *version = g_strdup_printf ("%u\n", file_version);
  g_autofree char *serialization_id = g_strdup_printf ("%020" G_GUINT64_FORMAT "%020" G_GUINT64_FORMAT,
                                                       writer->name_hash, writer->crc_hash);
  /* PyTorch writes "version" below format version 6, ".data/version" from 6 on. */
  if (!add_string (writer, file_version >= 6 ? ".data/version" : "version", version, error) ||
      !add_string (writer, "byteorder", G_BYTE_ORDER == G_LITTLE_ENDIAN ? "little" : "big", error) ||
      !add_string (writer, ".data/serialization_id", serialization_id, error))
    return FALSE;

  g_autoptr(GByteArray) directory = g_byte_array_new ();
  guint64 directory_offset = writer->offset;
  for (guint i = 0; i < writer->entries->len; i++)
    {
      const Entry *entry = &g_array_index (writer->entries, Entry, i);
      gboolean big_size = entry->size >= ZIP32_LIMIT, big_offset = entry->header_offset >= ZIP32_LIMIT;
      guint16 extra = (big_size ? 16 : 0) + (big_offset ? 8 : 0);
      gsize name_len = strlen (entry->name);
      put32 (directory, 0x02014b50);
      put16 (directory, 0x031e);      /* made by: Unix, ZIP 3.0 */
      put16 (directory, extra ? 45 : 10);
      put16 (directory, 0x0800);
      put16 (directory, 0);
      put16 (directory, 0);
      put16 (directory, 0);
      put32 (directory, entry->crc);
      put32 (directory, big_size ? ZIP32_LIMIT : (guint32) entry->size);
      put32 (directory, big_size ? ZIP32_LIMIT : (guint32) entry->size);
      put16 (directory, (guint16) name_len);
      put16 (directory, extra ? extra + 4 : 0);
      put16 (directory, 0);           /* comment */
      put16 (directory, 0);           /* disk */
      put16 (directory, 0);           /* internal attributes */
      put32 (directory, 0100644u << 16);
      put32 (directory, big_offset ? ZIP32_LIMIT : (guint32) entry->header_offset);
      g_byte_array_append (directory, (const guint8 *) entry->name, name_len);
      if (extra)
        {
          put16 (directory, 0x0001);
          put16 (directory, extra);
          if (big_size)
            {
              put64 (directory, entry->size);
              put64 (directory, entry->size);
            }
          if (big_offset)
            put64 (directory, entry->header_offset);
        }
    }
  guint64 directory_size = directory->len;
  guint64 n = writer->entries->len;
  guint64 end64_offset = directory_offset + directory_size;
  put32 (directory, 0x06064b50);
  put64 (directory, 44);
  put16 (directory, 0x031e);
  put16 (directory, 45);
  put32 (directory, 0);
  put32 (directory, 0);
  put64 (directory, n);
  put64 (directory, n);
  put64 (directory, directory_size);
  put64 (directory, directory_offset);
  put32 (directory, 0x07064b50);
  put32 (directory, 0);
  put64 (directory, end64_offset);
  put32 (directory, 1);
  put32 (directory, 0x06054b50);
  put16 (directory, 0);
  put16 (directory, 0);
  put16 (directory, (guint16) MIN (n, 0xFFFF));
  put16 (directory, (guint16) MIN (n, 0xFFFF));
  put32 (directory, (guint32) MIN (directory_size, ZIP32_LIMIT));
  put32 (directory, (guint32) MIN (directory_offset, ZIP32_LIMIT));
  put16 (directory, 0);
  return emit (writer, directory->data, directory->len, error);
}
