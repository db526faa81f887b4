#include "ir/file-bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ir/model-error.h"

void
graft_pages_advise_huge (gpointer data, gsize size)
{
#ifdef MADV_HUGEPAGE
  /* the whole 2 MB pages inside [data, data + size) */
  guintptr start = ((guintptr) data + (2u << 20) - 1) & ~(guintptr) ((2u << 20) - 1);
  guintptr end = ((guintptr) data + size) & ~(guintptr) ((2u << 20) - 1);
  if (end > start)
    madvise ((gpointer) start, end - start, MADV_HUGEPAGE);
#endif
}

GraftPages *
graft_pages_new (gsize size)
{
  gpointer data = mmap (NULL, MAX (size, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  GraftPages *pages;

  if (data == MAP_FAILED)
    return NULL;
  if (size >= 4 << 20)
    graft_pages_advise_huge (data, size);
  pages = g_new (GraftPages, 1);
  pages->data = data;
  pages->size = MAX (size, 1);
  return pages;
}

void
graft_pages_free (gpointer user_data)
{
  GraftPages *pages = user_data;

  munmap (pages->data, pages->size);
  g_free (pages);
}

/* Reads a regular file into an anonymous mapping: page-aligned and this
 * process's own, so parts of it can be given back before the whole is.
 * Returns NULL without an error for what is not a regular file. */
static GBytes *
read_into_pages (const char *path, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  GraftPages *pages;
  gsize done = 0;
  int read_errno = 0;

  if (fd < 0)
    return NULL;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode) || st.st_size == 0)
    {
      close (fd);
      return NULL;
    }
  pages = graft_pages_new ((gsize) st.st_size);
  if (pages == NULL)
    {
      close (fd);
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: no memory for its %" G_GSIZE_FORMAT " bytes",
                   path, (gsize) st.st_size);
      return NULL;
    }
  while (done < pages->size)
    {
      gssize n = read (fd, (char *) pages->data + done, pages->size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        read_errno = errno;
      if (n <= 0)
        break;   /* n == 0: shrunk since fstat, and what is there is the file */
      done += (gsize) n;
    }
  close (fd);
  if (read_errno != 0)
    {
      graft_pages_free (pages);
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: %s", path, g_strerror (read_errno));
      return NULL;
    }
  return g_bytes_new_with_free_func (pages->data, done, graft_pages_free, pages);
}

static GBytes *
open_file_bytes (const char *path, gboolean map_read_only, gboolean *out_private, GError **error)
{
  g_autoptr(GError) local_error = NULL;

  *out_private = FALSE;
  if (map_read_only && access (path, W_OK) != 0)
    {
      g_autoptr(GMappedFile) mapped = g_mapped_file_new (path, FALSE, &local_error);
      if (mapped != NULL)
        return g_mapped_file_get_bytes (mapped);
    }
  else
    {
      GBytes *private = read_into_pages (path, &local_error);
      char *contents = NULL;
      gsize length = 0;

      if (private != NULL)
        {
          *out_private = TRUE;
          return private;
        }
      if (local_error != NULL)
        {
          g_propagate_error (error, g_steal_pointer (&local_error));
          return NULL;
        }
      if (g_file_get_contents (path, &contents, &length, &local_error))
        return g_bytes_new_take (contents, length);
    }
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s", local_error->message);
  return NULL;
}

GBytes *
graft_file_bytes_open (const char *path, GError **error)
{
  gboolean private_bytes;

  return open_file_bytes (path, TRUE, &private_bytes, error);
}

GBytes *
graft_file_bytes_open_for_copy_out (const char *path, gboolean *out_private, GError **error)
{
  return open_file_bytes (path, FALSE, out_private, error);
}

void
graft_file_bytes_release (GBytes *bytes, gsize offset, gsize length)
{
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  guintptr start = (guintptr) g_bytes_get_data (bytes, NULL) + offset;
  guintptr first = (start + page - 1) / page * page;
  guintptr end = (start + length) / page * page;

  if (end > first)
    madvise ((void *) first, end - first, MADV_DONTNEED);
}
