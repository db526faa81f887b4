/* Saving onto what users point -o at (issue 20): a symbolic link is
 * followed and stays a link, a device or a FIFO is written through and
 * stays what it was, and a replaced file keeps its mode, owner and
 * extended attributes. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include "loader.h"
#include "onnx/writer.h"
#include "../onnx/fixtures.h"
#include "../test-scratch.h"

static GraftModel *
sample_model (void)
{
  g_autofree char *path = graft_test_source_path ("data/samples/tiny-cnn.onnx");
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

static void
assert_loads (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (model);
}

static void
test_symlink_followed (void)
{
  g_autoptr(GraftModel) model = sample_model ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-XXXXXX", NULL);
  g_autofree char *target = g_build_filename (dir, "target.onnx", NULL);
  g_autofree char *link = g_build_filename (dir, "link.onnx", NULL);
  g_autoptr(GError) error = NULL;
  GStatBuf st;

  g_assert_true (g_file_set_contents (target, "old", 3, NULL));
  g_assert_cmpint (g_chmod (target, 0640), ==, 0);
  g_assert_cmpint (symlink ("target.onnx", link), ==, 0);
  g_assert_true (graft_onnx_write_file (model, link, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
  g_assert_cmpint (g_stat (target, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0640);
  g_assert_cmpint (st.st_size, >, 1000);
  assert_loads (link);
  g_unlink (link);
  g_unlink (target);

  /* A dangling link is an error naming it, not a new file somewhere. */
  g_assert_cmpint (symlink ("nowhere/x.onnx", link), ==, 0);
  g_assert_false (graft_onnx_write_file (model, link, GRAFT_ONNX_WRITE_NONE, &error));
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "points nowhere"));
  g_unlink (link);
  g_rmdir (dir);
}

typedef struct {
  char *path;
  GByteArray *received;
} FifoReader;

static gpointer
read_fifo (gpointer data)
{
  FifoReader *r = data;
  int fd = open (r->path, O_RDONLY | O_CLOEXEC);
  guint8 buffer[65536];
  ssize_t n;

  g_assert_cmpint (fd, >=, 0);
  while ((n = read (fd, buffer, sizeof buffer)) > 0)
    g_byte_array_append (r->received, buffer, (guint) n);
  close (fd);
  return NULL;
}

static void
test_fifo_written_through (void)
{
  g_autoptr(GraftModel) model = sample_model ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-XXXXXX", NULL);
  g_autofree char *fifo = g_build_filename (dir, "pipe.onnx", NULL);
  g_autoptr(GError) error = NULL;
  GStatBuf st;

  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  FifoReader reader = { fifo, g_byte_array_new () };
  GThread *thread = g_thread_new ("reader", read_fifo, &reader);
  g_assert_true (graft_onnx_write_file (model, fifo, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);
  g_thread_join (thread);
  g_assert_cmpint (g_stat (fifo, &st), ==, 0);
  g_assert_true (S_ISFIFO (st.st_mode));
  g_autofree char *copy = g_build_filename (dir, "copy.onnx", NULL);
  g_assert_true (g_file_set_contents (copy, (const char *) reader.received->data, reader.received->len, NULL));
  assert_loads (copy);
  g_byte_array_unref (reader.received);
  g_unlink (copy);
  g_unlink (fifo);
  g_rmdir (dir);
}

/* As root a private null device is made (mknod) so that a regression
 * cannot clobber the real /dev/null; otherwise /dev/null itself, which a
 * user cannot replace anyway. */
static void
test_device_written_through (void)
{
  g_autoptr(GraftModel) model = sample_model ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-XXXXXX", NULL);
  g_autofree char *device = getuid () == 0 ? g_build_filename (dir, "null", NULL) : g_strdup ("/dev/null");
  g_autoptr(GError) error = NULL;
  GStatBuf st;

  if (getuid () == 0 && mknod (device, S_IFCHR | 0666, makedev (1, 3)) != 0)
    {
      g_test_skip ("cannot make a device node here");
      g_rmdir (dir);
      return;
    }
  g_assert_true (graft_onnx_write_file (model, device, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (device, &st), ==, 0);
  g_assert_true (S_ISCHR (st.st_mode));
  g_assert_cmpuint (major (st.st_rdev), ==, 1);
  g_assert_cmpuint (minor (st.st_rdev), ==, 3);
  if (getuid () == 0)
    g_unlink (device);
  g_rmdir (dir);
}

static void
test_overwrite_keeps_attributes (void)
{
  g_autoptr(GraftModel) model = sample_model ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "model.onnx", NULL);
  g_autoptr(GError) error = NULL;
  gboolean root = getuid () == 0;
  GStatBuf st;

  g_assert_true (g_file_set_contents (path, "old", 3, NULL));
  g_assert_cmpint (g_chmod (path, 0600), ==, 0);
  if (root)
    g_assert_cmpint (chown (path, 1234, 1234), ==, 0);
  gboolean xattrs = setxattr (path, "user.graft-test", "kept", 4, 0) == 0;
  g_assert_true (graft_onnx_write_file (model, path, GRAFT_ONNX_WRITE_OVERWRITE_SOURCE, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0600);
  if (root)
    {
      g_assert_cmpuint (st.st_uid, ==, 1234);
      g_assert_cmpuint (st.st_gid, ==, 1234);
    }
  if (xattrs)
    {
      char value[16] = { 0 };
      g_assert_cmpint (getxattr (path, "user.graft-test", value, sizeof value), ==, 4);
      g_assert_cmpstr (value, ==, "kept");
    }
  else
    g_test_message ("extended attributes not supported in %s", dir);
  assert_loads (path);
  g_unlink (path);

  /* A new file gets the usual 0666 less the umask, not mkstemp's 0600. */
  mode_t mask = umask (022);
  g_assert_true (graft_onnx_write_file (model, path, GRAFT_ONNX_WRITE_NONE, &error));
  umask (mask);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0644);
  g_unlink (path);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/save-targets/symlink-followed", test_symlink_followed);
  g_test_add_func ("/save-targets/fifo-written-through", test_fifo_written_through);
  g_test_add_func ("/save-targets/device-written-through", test_device_written_through);
  g_test_add_func ("/save-targets/overwrite-keeps-attributes", test_overwrite_keeps_attributes);
  return g_test_run ();
}
