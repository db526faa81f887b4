/* Scratch folders for tests that write files. */
#pragma once

#include <glib.h>

/* Removes dir and the files in it, unless GRAFT_KEEP_RENDERS is set (then
 * says where they are, for looking at the pictures). */
void test_remove_dir (const char *dir);
