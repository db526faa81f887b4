#include "test-files.h"

#include <glib/gstdio.h>

void
test_remove_dir (const char *dir)
{
  g_autoptr (GDir) listing = NULL;
  const char *name;

  if (g_getenv ("GRAFT_KEEP_RENDERS") != NULL)
    {
      g_printerr ("# files kept in %s\n", dir);
      return;
    }
  listing = g_dir_open (dir, 0, NULL);
  while (listing != NULL && (name = g_dir_read_name (listing)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}
