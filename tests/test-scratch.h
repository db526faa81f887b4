/* Scratch directories of the test programs. */
#pragma once

#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <glib.h>
#include <glib/gstdio.h>

/* Removes path and, if it is a directory (not a link to one), all it holds. */
static inline void
graft_test_remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    {
      g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *child = g_build_filename (path, name, NULL);
          graft_test_remove_tree (child);
        }
      g_rmdir (path);
    }
  else
    g_remove (path);
}

static GPtrArray *graft_test_scratch_paths;

static inline void
graft_test_remove_scratch (void)
{
  for (guint i = 0; i < graft_test_scratch_paths->len; i++)
    graft_test_remove_tree (g_ptr_array_index (graft_test_scratch_paths, i));
  g_clear_pointer (&graft_test_scratch_paths, g_ptr_array_unref);
}

/* path goes, with all it holds, when the program exits. A failed
 * assertion aborts without exit handlers and so leaves it to look at;
 * `make test` runs thousands of cases, and each left-behind directory
 * would stay in /tmp for good. */
static inline void
graft_test_keep_for_removal_at_exit (const char *path)
{
  if (graft_test_scratch_paths == NULL)
    {
      graft_test_scratch_paths = g_ptr_array_new_with_free_func (g_free);
      atexit (graft_test_remove_scratch);
    }
  g_ptr_array_add (graft_test_scratch_paths, g_strdup (path));
}

/* A scratch directory (g_dir_make_tmp's template and error) or, below,
 * an empty scratch file in $TMPDIR, removed at exit. */
static inline char *
graft_test_scratch_dir (const char *tmpl, GError **error)
{
  char *path = g_dir_make_tmp (tmpl, error);

  if (path != NULL)
    graft_test_keep_for_removal_at_exit (path);
  return path;
}

static inline char *
graft_test_scratch_file (const char *tmpl)
{
  char *path = g_build_filename (g_get_tmp_dir (), tmpl, NULL);
  int fd = g_mkstemp (path);

  if (fd < 0)
    g_error ("cannot make %s: %s", path, g_strerror (errno));
  close (fd);
  graft_test_keep_for_removal_at_exit (path);
  return path;
}
