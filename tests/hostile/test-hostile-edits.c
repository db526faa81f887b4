/* The edit-side classes of issue 41, on files made by
 * make-hostile-edits.py: recipes that nest too deep or address a
 * subgraph in a form the replay cannot follow (a clear error naming the
 * file, the step and the address, nothing saved), names that would print
 * fake lines, -o /dev/stdout into a pipe, external data named ".", an
 * allocation failure (the process ends with a message, never hangs),
 * string tensors past --memory-limit, external data swapped for a
 * symbolic link between load and save.
 * Most run the built graft-cli. Also run under ASan/UBSan. */
#include <signal.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include "loader.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "../cli/cli-run.h"
#include "../onnx/fixtures.h"
#include "../test-sanitized.h"
#include "../test-scratch.h"
#include "../test-python.h"

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


/* ------------------------------------------------------------------ output */

static char *
cli_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
}

/* A node name with a newline would print a fake "0 errors" line, one with
 * U+202E would show the text after it reversed: both print escaped. */
static void
test_names_escaped (void)
{
  g_autofree char *model = fixture ("names-that-lie.onnx");
  g_auto(Run) info = { 0 };
  g_auto(Run) lint = { 0 };

  run_cli (&info, (const char *[]) { "info", model, NULL });
  run_cli (&lint, (const char *[]) { "lint", model, NULL });
  g_test_message ("info:\n%s\nlint:\n%s", info.out, lint.out);
  g_assert_cmpint (info.status, ==, 0);
  g_assert_nonnull (strstr (info.out, "gelu\\u202etxt.exe"));
  g_assert_nonnull (strstr (info.out, "Graph 'lies\\u202e'"));
  g_assert_nonnull (strstr (info.out, "note = one\\x0atwo"));
  g_assert_nonnull (strstr (lint.out, "relu\\x0amodel.onnx: 0 errors, 0 warnings, 0 notes: custom::Foo"));
  /* One line per diagnostic, then the count. */
  g_auto(GStrv) lines = g_strsplit (lint.out, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 3);
  g_assert_true (g_str_has_prefix (lines[1], "1 errors"));
  g_assert_null (strstr (info.out, "\u202e"));
  g_assert_null (strstr (lint.out, "\u202e"));
}

/* README: edit -o writes through to pipes. /dev/stdout into a pipe is a
 * link to "pipe:[N]", which has no path; the model arrives whole and what
 * the edit reports goes to stderr. */
static void
test_save_to_stdout_pipe (void)
{
  g_autofree char *cli = cli_path ();
  g_autofree char *model_path = fixture ("if-branches.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) process = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                                     &error, cli, "edit", model_path, "-o", "/dev/stdout",
                                                     "--rename-node", "add=plus", NULL);
  g_autoptr(GBytes) out = NULL;
  g_autoptr(GBytes) err = NULL;

  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate (process, NULL, NULL, &out, &err, &error));
  g_test_message ("stderr: %.*s", (int) g_bytes_get_size (err), (const char *) g_bytes_get_data (err, NULL));
  g_assert_cmpint (g_subprocess_get_exit_status (process), ==, 0);
  g_autoptr(GraftModel) model = graft_onnx_read_bytes (out, "stdout.onnx", NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (node_named (graft_model_get_graph (model), "plus"));
  g_assert_null (node_named (graft_model_get_graph (model), "add"));
}

static void
test_external_location_dot (void)
{
  g_autofree char *path = fixture ("external-dot.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_null (model);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "initializer 'w': external data location '.' is the model's folder itself"));
  g_assert_null (strstr (error->message, "outside"));
}

/* ------------------------------------------------------------------ out of memory */

/* graft-cli parses a recipe too big for a 300 MiB address space. GLib
 * reports the failed allocation through stderr while it holds its
 * allocator's lock; the filter on stderr allocated too and waited for that
 * lock forever. Now the process ends within seconds with the message. */
/* In the child, before exec: 300 MiB of address space, and a hang ends
 * as SIGALRM (an alarm survives exec). */
static void
limit_child (gpointer user_data)
{
  struct rlimit limit = { 300u << 20, 300u << 20 };

  setrlimit (RLIMIT_AS, &limit);
  alarm (60);
}

static void
test_out_of_memory_ends (void)
{
  g_autofree char *cli = cli_path ();
  g_autofree char *model = fixture ("if-branches.onnx");
  g_autofree char *recipe = fixture ("recipe-five-million.json");
  g_autofree char *out = graft_test_scratch_file ("graft-oom-XXXXXX.onnx");
  const char *argv[] = { cli, "edit", model, "-o", out, "--overwrite", "--recipe", recipe, NULL };
  /* OpenBLAS's threads each take a buffer at start-up, and spin when they
   * cannot: one thread keeps them out of the limit. */
  g_auto(GStrv) env = g_environ_setenv (g_get_environ (), "OPENBLAS_NUM_THREADS", "1", TRUE);
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  int status;

  if (SANITIZED)
    {
      g_test_skip ("AddressSanitizer's shadow memory does not fit in a limited address space");
      return;
    }
  gint64 start = g_get_monotonic_time ();
  g_assert_true (g_spawn_sync (NULL, (char **) argv, env, G_SPAWN_STDOUT_TO_DEV_NULL, limit_child, NULL, NULL, &err,
                               &status, &error));
  g_assert_no_error (error);
  double seconds = (g_get_monotonic_time () - start) / 1e6;
  g_test_message ("%.1f s, %s %d: %s", seconds, WIFSIGNALED (status) ? "signal" : "exit",
                  WIFSIGNALED (status) ? WTERMSIG (status) : WEXITSTATUS (status), err);
  g_assert_false (WIFSIGNALED (status) && WTERMSIG (status) == SIGALRM);
  g_assert_true (WIFSIGNALED (status) || WEXITSTATUS (status) != 0);
  g_assert_nonnull (strstr (err, "failed to allocate"));
  g_assert_cmpfloat (seconds, <, 60);
}

/* ------------------------------------------------------------------ memory limit */

/* Expand of one string to 2^27 elements: 1 GiB of pointers and 4 GiB of
 * heap blocks, which the limit did not count (5.2 GB peak, 109 s). Now
 * refused before it is allocated. */
static void
test_string_payload_counted (void)
{
  g_autofree char *model = fixture ("strings-expanded.onnx");
  g_auto(Run) run = { 0 };
  struct rusage usage;

  run_cli (&run, (const char *[]) { "run", model, "--random", "--memory-limit", "2048", NULL });
  g_assert_cmpint (getrusage (RUSAGE_CHILDREN, &usage), ==, 0);
  g_test_message ("exit %d, peak of the children so far %ld MiB: %s", run.status, usage.ru_maxrss / 1024, run.err);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_nonnull (strstr (run.err, "node 'expand' (onnx::Expand): a string tensor of 134217728 elements needs "
                                     "5120 MiB, past the run's memory limit of 2048 MiB"));
  g_assert_cmpint (usage.ru_maxrss / 1024, <, 400 + (SANITIZED ? 700 : 0));
}

/* ------------------------------------------------------------------ external data */

/* A copy of external/ (model.onnx, weights.bin) in a scratch folder, and
 * a "secret" file outside it. */
static char *
copy_external_model (char **secret)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-external-XXXXXX", NULL);
  g_autofree char *folder = g_build_filename (dir, "model", NULL);
  const char *names[] = { "model.onnx", "weights.bin" };

  g_assert_cmpint (g_mkdir (folder, 0700), ==, 0);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *from = g_build_filename (files_dir, "external", names[i], NULL);
      g_autofree char *to = g_build_filename (folder, names[i], NULL);
      g_autofree char *contents = NULL;
      gsize length;
      g_assert_true (g_file_get_contents (from, &contents, &length, NULL));
      g_assert_true (g_file_set_contents (to, contents, (gssize) length, NULL));
    }
  *secret = g_build_filename (dir, "secret", NULL);
  g_assert_true (g_file_set_contents (*secret, "SECRET-PASSWORD!", 16, NULL));
  return g_steal_pointer (&folder);
}

/* weights.bin swapped for a link to a file outside the folder between the
 * load and the save (which reads the weights for the first time): the
 * saved model holds the weights as they were at the load, never the
 * secret. Before, the save re-opened the path and embedded the secret. */
static void
test_external_swapped_for_link (void)
{
  g_autofree char *secret = NULL;
  g_autofree char *folder = copy_external_model (&secret);
  g_autofree char *model_path = g_build_filename (folder, "model.onnx", NULL);
  g_autofree char *weights = g_build_filename (folder, "weights.bin", NULL);
  g_autofree char *moved = g_build_filename (folder, "weights.old", NULL);
  g_autofree char *out = g_build_filename (folder, "out.onnx", NULL);
  static const float expected[] = { 1, 2, 3, 4 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpint (g_rename (weights, moved), ==, 0);
  g_assert_cmpint (symlink (secret, weights), ==, 0);
  g_assert_true (graft_onnx_write_file (model, out, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);

  g_autoptr(GraftModel) saved = graft_model_load (out, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftValue *w = graft_graph_lookup_value (graft_model_get_graph (saved), "w");
  g_assert_false (graft_tensor_is_external (w->initializer));
  GBytes *data = graft_tensor_get_data (w->initializer, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (data, NULL), g_bytes_get_size (data), expected, sizeof expected);

  /* The moved file is still the model's external data: saving onto it is
   * refused like saving onto the model. */
  g_assert_false (graft_onnx_write_file (model, moved, GRAFT_ONNX_WRITE_OVERWRITE_SOURCE, &error));
  g_test_message ("%s", error->message);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_assert_nonnull (strstr (error->message, "holds the external data of 'w'"));

  /* A model opened after the swap does not follow the link. */
  g_clear_object (&model);
  g_clear_error (&error);
  model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_test_message ("%s", error->message);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
}

/* graft-cli edit -o onto the model's own external data is refused, and
 * the weights are left as they were. */
static void
test_cli_save_onto_external_data (void)
{
  g_autofree char *secret = NULL;
  g_autofree char *folder = copy_external_model (&secret);
  g_autofree char *model = g_build_filename (folder, "model.onnx", NULL);
  g_autofree char *weights = g_build_filename (folder, "weights.bin", NULL);
  g_auto(Run) run = { 0 };
  gsize length = 0;
  g_autofree char *after = NULL;

  run_cli (&run, (const char *[]) { "edit", model, "-o", weights, "--rename-node", "add=plus", "--overwrite", NULL });
  g_test_message ("exit %d: %s", run.status, run.err);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_nonnull (strstr (run.err, "holds the external data of 'w'"));
  g_assert_true (g_file_get_contents (weights, &after, &length, NULL));
  g_assert_cmpuint (length, ==, 16);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  files_dir = graft_test_generate_fixtures ("tests/hostile/make-hostile-edits.py",
                                            "tests/fixtures-generated/hostile-edits", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (recipe_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/hostile-edits/recipe/%s", recipe_cases[i].recipe);
      g_test_add_data_func (name, &recipe_cases[i], test_recipe_refused);
    }
  g_test_add_func ("/hostile-edits/recipe/graph-path-followed", test_recipe_graph_path_followed);
  g_test_add_func ("/hostile-edits/output/names-escaped", test_names_escaped);
  g_test_add_func ("/hostile-edits/output/stdout-pipe", test_save_to_stdout_pipe);
  g_test_add_func ("/hostile-edits/output/external-location-dot", test_external_location_dot);
  g_test_add_func ("/hostile-edits/out-of-memory-ends", test_out_of_memory_ends);
  g_test_add_func ("/hostile-edits/memory-limit/string-payload", test_string_payload_counted);
  g_test_add_func ("/hostile-edits/external/swapped-for-link", test_external_swapped_for_link);
  g_test_add_func ("/hostile-edits/external/cli-save-onto-it", test_cli_save_onto_external_data);
  int status = g_test_run ();
  g_free (files_dir);
  return status;
}
