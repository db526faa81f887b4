#include "ir/external-file.h"
#include "ir/file-bytes.h"
#include "ir/model-error.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct _GraftExternalFile {   /* in a g_atomic_rc_box */
  int fd;
  char *path;
  struct stat st;
};

static GraftExternalFile *
open_failed (GError **error, const char *path, const char *component, int saved_errno)
{
  /* O_NOFOLLOW answers ELOOP for a final symbolic link, O_DIRECTORY
   * ENOTDIR for one on the way. */
  if (saved_errno == ELOOP || saved_errno == ENOTDIR)
    g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                 "external data file '%s': '%s' is a symbolic link or not a folder; external data is opened "
                 "without following links", path, component);
  else
    g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "external data file '%s': %s", path,
                 g_strerror (saved_errno));
  return NULL;
}

GraftExternalFile *
graft_external_file_open_inside (const char *dir, const char *relative, GError **error)
{
  g_autofree char *path = g_build_filename (dir, relative, NULL);
  g_auto(GStrv) components = g_strsplit (relative, "/", -1);
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  guint n = g_strv_length (components);

  if (fd < 0)
    return open_failed (error, path, dir, errno);
  for (guint i = 0; i < n; i++)
    {
      gboolean last = i + 1 == n;
      int next;

      if (*components[i] == '\0' || strcmp (components[i], ".") == 0)
        {
          if (!last)
            continue;
          close (fd);
          return open_failed (error, path, relative, EISDIR);
        }
      next = openat (fd, components[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NOCTTY | O_NONBLOCK : O_DIRECTORY));
      int saved = errno;
      close (fd);
      if (next < 0)
        return open_failed (error, path, components[i], saved);
      fd = next;
    }

  GraftExternalFile *file = g_atomic_rc_box_new0 (GraftExternalFile);
  file->fd = fd;
  file->path = g_steal_pointer (&path);
  if (fstat (fd, &file->st) != 0 || !S_ISREG (file->st.st_mode))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "external data file '%s' is not a regular file",
                   file->path);
      graft_external_file_unref (file);
      return NULL;
    }
  return file;
}

GraftExternalFile *
graft_external_file_ref (GraftExternalFile *file)
{
  return g_atomic_rc_box_acquire (file);
}

static void
external_file_clear (gpointer data)
{
  GraftExternalFile *file = data;

  close (file->fd);
  g_free (file->path);
}

void
graft_external_file_unref (GraftExternalFile *file)
{
  if (file != NULL)
    g_atomic_rc_box_release_full (file, external_file_clear);
}

const char *
graft_external_file_get_path (GraftExternalFile *file)
{
  return file->path;
}

guint64
graft_external_file_get_size (GraftExternalFile *file)
{
  return (guint64) file->st.st_size;
}

gboolean
graft_external_file_is (GraftExternalFile *file, const GStatBuf *st)
{
  return st->st_dev == file->st.st_dev && st->st_ino == file->st.st_ino;
}

GBytes *
graft_external_file_read (GraftExternalFile *file, guint64 offset, gsize length, GError **error)
{
  GraftPages *pages = graft_pages_new (length);
  gsize done = 0;

  if (pages == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "external data file '%s': no memory for %"
                   G_GSIZE_FORMAT " bytes", file->path, length);
      return NULL;
    }
  while (done < length)
    {
      ssize_t n = pread (file->fd, (char *) pages->data + done, length - done, (off_t) (offset + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          int saved = errno;
          graft_pages_free (pages);
          if (n < 0)
            g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "external data file '%s': %s", file->path,
                         g_strerror (saved));
          else
            g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED, "external data file '%s' ends at byte %"
                         G_GUINT64_FORMAT ", before the %" G_GSIZE_FORMAT " bytes at offset %" G_GUINT64_FORMAT
                         " (cut since the model was opened)", file->path, offset + done, length, offset);
          return NULL;
        }
      done += (gsize) n;
    }
  return g_bytes_new_with_free_func (pages->data, length, graft_pages_free, pages);
}
