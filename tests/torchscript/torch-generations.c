#include <json-glib/json-glib.h>
#include <string.h>

#include "torch-generations.h"
#include "../onnx/fixtures.h"
#include "../test-python.h"

const char *
graft_torch_generation_name (GraftTorchGeneration generation)
{
  return generation == GRAFT_TORCH_LEGACY ? "legacy" : "current";
}

char *
graft_torch_generation_python (GraftTorchGeneration generation)
{
  return generation == GRAFT_TORCH_LEGACY ? g_strdup (GRAFT_TEST_LEGACY_PYTHON) : graft_test_python ();
}

char *
graft_torch_generation_dir (GraftTorchGeneration generation, const char *suffix)
{
  return g_strconcat ("tests/fixtures-generated/torchscript", generation == GRAFT_TORCH_LEGACY ? "-legacy" : "",
                      suffix ? suffix : "", NULL);
}

const char *
graft_torch_generation_missing (GraftTorchGeneration generation)
{
  static char *reasons[GRAFT_TORCH_N_GENERATIONS];
  static gboolean checked[GRAFT_TORCH_N_GENERATIONS];
  g_autofree char *python = graft_torch_generation_python (generation);
  const char *argv[] = { python, "-c", "import torch", NULL };
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  int status = 0;

  if (checked[generation])
    return reasons[generation];
  checked[generation] = TRUE;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, &error) ||
      !g_spawn_check_wait_status (status, &error))
    {
      g_autofree char *last = NULL;
      g_auto(GStrv) lines = g_strsplit (g_strchomp (err ? err : ""), "\n", -1);
      guint n = g_strv_length (lines);
      last = g_strdup (n ? lines[n - 1] : error->message);
      reasons[generation] = g_strdup_printf ("%s -c \"import torch\" fails (%s): no %s TorchScript fixtures",
                                             python, last, graft_torch_generation_name (generation));
      if (generation == GRAFT_TORCH_CURRENT)
        g_error ("%s", reasons[generation]);
    }
  return reasons[generation];
}

char *
graft_torch_generation_fixtures (GraftTorchGeneration generation, const char *const *extra_args)
{
  g_autofree char *python = NULL;
  g_autofree char *dir = NULL;

  if (graft_torch_generation_missing (generation))
    return NULL;
  python = graft_torch_generation_python (generation);
  dir = graft_torch_generation_dir (generation, NULL);
  return graft_test_generate_fixtures_with (python, "tests/fixtures/make-torchscript-fixtures.py", dir, extra_args);
}

char *
graft_torch_generation_run (GraftTorchGeneration generation, const char *script, const char *fixture_dir,
                            const char *suffix)
{
  g_autofree char *python = NULL;
  g_autofree char *script_path = NULL;
  g_autofree char *out_rel = NULL;
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  char *out = NULL;
  int status = 0;

  if (graft_torch_generation_missing (generation))
    return NULL;
  python = graft_torch_generation_python (generation);
  script_path = graft_test_source_path (script);
  out_rel = graft_torch_generation_dir (generation, suffix);
  out = graft_test_source_path (out_rel);
  const char *argv[] = { python, script_path, fixture_dir, out, NULL };
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, &error) ||
      !g_spawn_check_wait_status (status, &error))
    g_error ("%s %s failed: %s\n%s", python, script, error->message, err ? err : "");
  return out;
}

static JsonObject *
load_manifest (const char *fixture_dir, JsonParser *parser)
{
  g_autofree char *path = g_build_filename (fixture_dir, "manifest.json", NULL);
  g_autoptr(GError) error = NULL;

  if (!json_parser_load_from_file (parser, path, &error))
    g_error ("%s: %s", path, error->message);
  return json_node_get_object (json_parser_get_root (parser));
}

static void
add_array_names (JsonArray *array, guint index, JsonNode *element, gpointer names)
{
  g_hash_table_add (names, g_strdup (json_node_get_string (element)));
}

void
graft_torch_generation_add_names (const char *fixture_dir, GHashTable *names)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *manifest = load_manifest (fixture_dir, parser);
  g_autoptr(GList) skipped = json_object_get_members (json_object_get_object_member (manifest, "skipped"));

  json_array_foreach_element (json_object_get_array_member (manifest, "fixtures"), add_array_names, names);
  for (GList *l = skipped; l; l = l->next)
    g_hash_table_add (names, g_strdup (l->data));
}

char *
graft_torch_generation_skip_reason (const char *fixture_dir, const char *name)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *skipped = json_object_get_object_member (load_manifest (fixture_dir, parser), "skipped");

  if (!json_object_has_member (skipped, name))
    return NULL;
  return g_strdup (json_object_get_string_member (skipped, name));
}

gboolean
graft_torch_generation_skip (const GraftTorchGenerationCase *c, const char *fixture_dir)
{
  g_autofree char *not_made = NULL;

  if (fixture_dir == NULL)
    {
      g_test_skip (graft_torch_generation_missing (c->generation));
      return TRUE;
    }
  not_made = graft_torch_generation_skip_reason (fixture_dir, c->name);
  if (not_made != NULL)
    g_test_skip (not_made);
  return not_made != NULL;
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

GPtrArray *
graft_torch_generation_sorted (GHashTable *names)
{
  GPtrArray *sorted = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer name;

  g_hash_table_iter_init (&iter, names);
  while (g_hash_table_iter_next (&iter, &name, NULL))
    g_ptr_array_add (sorted, name);
  g_ptr_array_sort (sorted, compare_strings);
  return sorted;
}
