/* The edit-side classes of issue 41, on files made by
 * make-hostile-edits.py: recipes that nest too deep or address a
 * subgraph in a form the replay cannot follow. Each runs the built
 * graft-cli and checks for a clear error naming the file, the step and
 * the address, with nothing saved. Also run under ASan/UBSan. */
#include <glib/gstdio.h>
#include <string.h>
#include "loader.h"
#include "../cli/cli-run.h"
#include "../onnx/fixtures.h"
#include "../test-scratch.h"

static char *files_dir;

static char *
fixture (const char *name)
{
  return g_build_filename (files_dir, name, NULL);
}

/* ------------------------------------------------------------------ recipes */

typedef struct {
  const char *recipe;
  const char *expect;   /* in stderr, after "recipe step 1 (rename-node): " unless the whole recipe is refused */
} RecipeCase;

static const RecipeCase recipe_cases[] = {
  { "recipe-deep-nesting.json", "recipe-deep-nesting.json: the recipe nests arrays and objects 20003 deep (past 64" },
  { "recipe-graph-path-string.json", "recipe step 1 (rename-node): graph_path 'choose#then_branch' is not a list" },
  { "recipe-graph-path-strings.json", "recipe step 1 (rename-node): graph_path ['choose', 'then_branch'] is not a list" },
  { "recipe-graph-path-100k.json", "recipe step 1 (rename-node): graph_path has 100000 steps" },
  { "recipe-graph-number.json", "recipe step 1 (rename-node): 'graph' must be a name, not a number" },
};

/* Refused before anything is edited or saved: the top-level "relu" of
 * if-branches.onnx, which has the name the step wants in a branch, is
 * never renamed instead. */
static void
test_recipe_refused (gconstpointer data)
{
  const RecipeCase *c = data;
  g_autofree char *model = fixture ("if-branches.onnx");
  g_autofree char *recipe = fixture (c->recipe);
  g_autofree char *out = graft_test_scratch_file ("graft-recipe-XXXXXX.onnx");
  g_auto(Run) run = { 0 };

  g_unlink (out);
  run_cli (&run, (const char *[]) { "edit", model, "-o", out, "--recipe", recipe, NULL });
  g_test_message ("%s: exit %d: %s", c->recipe, run.status, run.err);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_nonnull (strstr (run.err, c->expect));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

static GraftNode *
node_named (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    if (strcmp (((GraftNode *) graph->nodes->pdata[i])->name, name) == 0)
      return graph->nodes->pdata[i];
  return NULL;
}

/* The form graft_recipe_to_json writes (with the node named, as a
 * hand-written recipe may) renames the branch's node, not the top one. */
static void
test_recipe_graph_path_followed (void)
{
  g_autofree char *model_path = fixture ("if-branches.onnx");
  g_autofree char *recipe = fixture ("recipe-graph-path.json");
  g_autofree char *out = graft_test_scratch_file ("graft-recipe-XXXXXX.onnx");
  g_auto(Run) run = { 0 };
  g_autoptr(GError) error = NULL;

  run_cli (&run, (const char *[]) { "edit", model_path, "-o", out, "--recipe", recipe, "--overwrite", NULL });
  g_assert_cmpint (run.status, ==, 0);
  g_autoptr(GraftModel) model = graft_model_load (out, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftGraph *top = graft_model_get_graph (model);
  GraftNode *choose = node_named (top, "choose");
  g_assert_nonnull (node_named (top, "relu"));
  g_assert_nonnull (choose);
  g_assert_nonnull (node_named (graft_node_get_attribute (choose, "then_branch")->g, "renamed"));
  g_assert_nonnull (node_named (graft_node_get_attribute (choose, "else_branch")->g, "relu"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  files_dir = graft_test_generate_fixtures ("tests/hostile/make-hostile-edits.py",
                                            "tests/fixtures-generated/hostile-edits", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (recipe_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/hostile-edits/recipe/%s", recipe_cases[i].recipe);
      g_test_add_data_func (name, &recipe_cases[i], test_recipe_refused);
    }
  g_test_add_func ("/hostile-edits/recipe/graph-path-followed", test_recipe_graph_path_followed);
  int status = g_test_run ();
  g_free (files_dir);
  return status;
}
