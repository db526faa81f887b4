#include "gui-fixtures.h"
#include "../test-python.h"

#include <glib/gstdio.h>

/* Generated once by a script of tests/gui, cached with the other fixtures. */
char *
generated_fixture (const char *script_name, const char *file_name)
{
  g_autofree char *test_python = graft_test_python ();
  const char *source = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *dir = g_build_filename (source, "tests", "fixtures-generated", "gui", NULL);
  char *path = g_build_filename (dir, file_name, NULL);
  g_autofree char *script = g_build_filename (source, "tests", "gui", script_name, NULL);
  g_autofree char *tmp_path = g_strconcat (path, ".tmp", NULL);
  const char *argv[] = { test_python, script, tmp_path, NULL };
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;
  int status = 0;

  if (g_file_test (path, G_FILE_TEST_EXISTS))
    return path;
  g_mkdir_with_parents (dir, 0755);
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("%s failed: %s\n%s", script_name, error->message, err);
  g_assert_cmpint (g_rename (tmp_path, path), ==, 0);
  return path;
}

char *
transformer_fixture (const char *override_variable)
{
  const char *given = g_getenv (override_variable);
  g_autofree char *python = NULL;
  g_autofree char *script = NULL;
  g_autofree char *dir = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;
  int status = 0;

  if (given != NULL && *given != '\0')
    return g_strdup (given);
  python = graft_test_python ();
  script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "fixtures", "make-onnx-models.py", NULL);
  dir = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "fixtures-generated", "models", NULL);
  {
    const char *argv[] = { python, script, dir, "transformer24", NULL };
    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, &error);
  }
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("make-onnx-models.py transformer24 failed: %s", err);
  return g_build_filename (dir, "transformer24.onnx", NULL);
}
