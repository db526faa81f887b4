#include "test-files.h"

#include "../test-scratch.h"

void
test_remove_dir (const char *dir)
{
  if (g_getenv ("GRAFT_KEEP_RENDERS") != NULL)
    {
      g_printerr ("# files kept in %s\n", dir);
      return;
    }
  graft_test_remove_tree (dir);
}
