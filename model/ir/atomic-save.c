#include "ir/atomic-save.h"
#include "ir/model-error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <glib/gstdio.h>

static gboolean
io_error (GError **error, const char *path, const char *what, int saved_errno)
{
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "cannot save '%s': %s: %s",
               path, what, g_strerror (saved_errno));
  return FALSE;
}

gboolean
graft_atomic_write_all (int fd, const char *path, const void *data, gsize len, GError **error)
{
  const guint8 *at = data;

  while (len > 0)
    {
      ssize_t n = write (fd, at, MIN (len, (gsize) G_MAXSSIZE));

      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          return io_error (error, path, "writing failed", errno);
        }
      at += n;
      len -= n;
    }
  return TRUE;
}

gboolean
graft_same_file (const char *a, const char *b)
{
  GStatBuf sa, sb;

  if (g_stat (a, &sa) != 0 || g_stat (b, &sb) != 0)
    return FALSE;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

gboolean
graft_atomic_check_target (const char *path, const char *source, gboolean overwrite_source, GError **error)
{
  if (path == NULL || path[0] == '\0')
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "no file name to save to");
      return FALSE;
    }
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "cannot save '%s': it is a folder", path);
      return FALSE;
    }
  if (source != NULL && !overwrite_source && graft_same_file (source, path))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "'%s' is the file the model was opened from; choose another name or confirm overwriting it",
                   path);
      return FALSE;
    }
  return TRUE;
}

/* The replaced file's mode, owner (where permitted: root, or a group the
 * user is in) and extended attributes (SELinux labels, user.*) go to the
 * new file, so that saving over a 0600 file does not widen it. */
static void
copy_file_attributes (int fd, const GStatBuf *original, const char *original_path)
{
  if (fchown (fd, original->st_uid, original->st_gid) != 0 && fchown (fd, (uid_t) -1, original->st_gid) != 0)
    {
      /* Neither owner nor group may be given away: the new file stays the user's. */
    }
  if (fchmod (fd, original->st_mode & 07777) != 0)
    g_debug ("cannot keep the mode of %s: %s", original_path, g_strerror (errno));

  ssize_t list_len = listxattr (original_path, NULL, 0);
  if (list_len <= 0)
    return;
  g_autofree char *names = g_malloc (list_len);
  list_len = listxattr (original_path, names, list_len);
  for (ssize_t at = 0; at < list_len; at += strlen (names + at) + 1)
    {
      ssize_t value_len = getxattr (original_path, names + at, NULL, 0);
      if (value_len < 0)
        continue;
      g_autofree char *value = g_malloc (MAX (value_len, 1));
      value_len = getxattr (original_path, names + at, value, value_len);
      if (value_len >= 0)
        fsetxattr (fd, names + at, value, value_len, 0);   /* best effort: a label the user may not set stays off */
    }
}

static gboolean
write_and_sync (int fd, const char *path, gboolean regular, GraftAtomicWriteFunc write_func, gpointer user_data,
                GError **error)
{
  if (!write_func (fd, path, user_data, error))
    return FALSE;
  /* Pipes and devices cannot be synced (EINVAL); only files must be. */
  if (fsync (fd) != 0 && (regular || errno != EINVAL))
    return io_error (error, path, "fsync failed", errno);
  return TRUE;
}

/* A pipe, a device or a socket (-o /dev/stdout, a FIFO): written in
 * place. Replacing it by a regular file would break it, and as root
 * clobber /dev/null. */
static gboolean
write_through (const char *path, GraftAtomicWriteFunc write_func, gpointer user_data, GError **error)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

  if (fd < 0)
    return io_error (error, path, "cannot open it for writing", errno);
  gboolean ok = write_and_sync (fd, path, FALSE, write_func, user_data, error);
  if (close (fd) != 0 && ok)
    return io_error (error, path, "closing failed", errno);
  return ok;
}

gboolean
graft_atomic_save (const char *requested_path, GraftAtomicWriteFunc write_func, gpointer user_data, GError **error)
{
  GStatBuf original;

  /* A pipe or a device is written through the path as given: /dev/stdout
   * is a link to /proc/self/fd/1, itself a link to "pipe:[N]", which
   * opens but has no real path to resolve. */
  if (g_stat (requested_path, &original) == 0 && !S_ISREG (original.st_mode))
    return write_through (requested_path, write_func, user_data, error);
  /* A symbolic link is followed: its target is what gets replaced, and
   * the link stays a link. */
  g_autofree char *path = g_file_test (requested_path, G_FILE_TEST_IS_SYMLINK)
                          ? realpath (requested_path, NULL) : g_strdup (requested_path);
  if (path == NULL)
    return io_error (error, requested_path, "the symbolic link points nowhere", errno);
  gboolean exists = g_stat (path, &original) == 0;
  if (exists && !S_ISREG (original.st_mode))
    return write_through (path, write_func, user_data, error);

  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *tmp = g_strdup_printf ("%s/.%s.XXXXXX", dir, base);
  int fd, dir_fd;

  fd = g_mkstemp_full (tmp, O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0)
    return io_error (error, path, "cannot create a temporary file in its folder", errno);
  if (exists)
    copy_file_attributes (fd, &original, path);
  if (!write_and_sync (fd, path, TRUE, write_func, user_data, error))
    {
      close (fd);
      g_unlink (tmp);
      return FALSE;
    }
  if (close (fd) != 0)
    {
      int saved = errno;
      g_unlink (tmp);
      return io_error (error, path, "closing the temporary file failed", saved);
    }
  if (g_rename (tmp, path) != 0)
    {
      int saved = errno;
      g_unlink (tmp);
      return io_error (error, path, "renaming the temporary file failed", saved);
    }
  /* Make the rename itself durable. */
  dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0)
    {
      fsync (dir_fd);
      close (dir_fd);
    }
  return TRUE;
}
