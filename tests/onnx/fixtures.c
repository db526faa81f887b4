#include "fixtures.h"
#include "../test-python.h"

const char *
graft_test_source_dir (void)
{
  const char *dir = g_getenv ("GRAFT_SOURCE_DIR");

  if (dir == NULL || *dir == '\0')
    g_error ("GRAFT_SOURCE_DIR is not set: run the tests through meson test");
  return dir;
}

char *
graft_test_source_path (const char *relative)
{
  return g_build_filename (graft_test_source_dir (), relative, NULL);
}

char *
graft_test_generate_fixtures (const char *script, const char *outdir_rel, const char *const *extra_args)
{
  g_autofree char *python = graft_test_python ();

  return graft_test_generate_fixtures_with (python, script, outdir_rel, extra_args);
}

char *
graft_test_generate_fixtures_with (const char *python, const char *script, const char *outdir_rel,
                                   const char *const *extra_args)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  char *outdir = graft_test_source_path (outdir_rel);
  int status = 0;

  g_ptr_array_add (argv, g_strdup (python));
  g_ptr_array_add (argv, graft_test_source_path (script));
  g_ptr_array_add (argv, g_strdup (outdir));
  for (guint i = 0; extra_args != NULL && extra_args[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (extra_args[i]));
  g_ptr_array_add (argv, NULL);

  if (!g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error))
    g_error ("cannot run fixture generator %s: %s", script, error->message);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("fixture generator %s failed (%s):\n%s", script, error->message, err);
  return outdir;
}

JsonParser *
graft_test_cli_info_json (const char *path)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  const char *argv[] = { cli, "info", "--json", path, NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  JsonParser *parser;
  int status;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("graft-cli info failed: %s", err);
  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, out, -1, &error))
    g_error ("graft-cli info --json printed no JSON: %s", error->message);
  return parser;
}
