/* Freeing a batch torch.export specialized (issue 34, point 2): programs
 * torch 2.13 exported without dynamic_shapes (make-pt2-unspec-fixtures.py:
 * a CNN flattening with view(2, -1), an MViT-like attention block, an
 * nn.TransformerEncoderLayer) edited with graft-cli edit --dynamic
 * x:0=batch and saved as .pt2 load in torch.export.load with batch in
 * their range constraints (a program whose batch was free already has it
 * renamed, its range kept), and at batch 3 both ep.module()(x) and Graft's
 * run of the saved file equal the eager model within 1e-4·max|eager|. A
 * program that merges its batch into a Linear's features is refused with
 * the node named, and nothing is saved. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "pt2-test-common.h"
#include "../test-python.h"
#include "../test-scratch.h"

static const struct {
  const char *name;
  const char *ranges;    /* the saved program's range constraints, as torch reads them */
} freed[] = {
  { "cnn_view", "batch: [1, int_oo]" },
  { "vit_block", "batch: [1, int_oo]" },
  { "encoder_layer", "batch: [1, int_oo]" },
  /* free already (as torch's s77): renamed, its range kept */
  { "vit_dynamic", "batch: [1, 32]" },
};

static const char *
fixtures (void)
{
  static char *dir;

  if (dir == NULL)
    dir = graft_test_generate_fixtures ("tests/pt2/make-pt2-unspec-fixtures.py", "tests/fixtures-generated/pt2-unspec",
                                        NULL);
  return dir;
}

static char *
fixture (const char *name, const char *suffix)
{
  g_autofree char *file = g_strconcat (name, suffix, NULL);
  return g_build_filename (fixtures (), file, NULL);
}

/* graft-cli edit IN --dynamic x:0=SPEC -o OUT; its exit status, stderr in *err. */
static gboolean
free_batch (const char *in, const char *spec, const char *out, char **err)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *dynamic = g_strdup_printf ("x:0=%s", spec);
  const char *argv[] = { cli, "edit", in, "--dynamic", dynamic, "-o", out, NULL };
  int status;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, err,
                               &status, NULL));
  return g_spawn_check_wait_status (status, NULL);
}

static GraftRtTensor *
run_graft (const char *program, const char *input_path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (program, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftGraph *graph = graft_model_get_graph (model);
  GraftValue *input = g_ptr_array_index (graph->inputs, 0);
  g_assert_cmpint (input->shape.dims[0].kind, ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (input->shape.dims[0].symbol, ==, "batch");
  GraftRuntime *runtime = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (inputs, input->name, graft_npy_read (input_path, &error));
  g_assert_no_error (error);
  g_autoptr(GPtrArray) outputs = graft_runtime_run (runtime, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (outputs->len, ==, 1);
  graft_runtime_free (runtime);
  return graft_rt_tensor_ref (g_ptr_array_index (outputs, 0));
}

static void
test_freed_programs_match_eager (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-unspec-XXXXXX", NULL);
  g_autoptr(JsonBuilder) jobs = json_builder_new ();

  json_builder_begin_array (jobs);
  for (guint i = 0; i < G_N_ELEMENTS (freed); i++)
    {
      g_autofree char *in = fixture (freed[i].name, ".pt2");
      g_autofree char *out = g_strdup_printf ("%s/%s.pt2", dir, freed[i].name);
      g_autofree char *input = fixture (freed[i].name, ".input3.npy");
      g_autofree char *prefix = g_strdup_printf ("%s/%s.torch", dir, freed[i].name);
      g_autofree char *ranges = g_strdup_printf ("%s/%s.ranges", dir, freed[i].name);
      g_autofree char *err = NULL;

      if (!free_batch (in, "batch", out, &err))
        g_error ("%s: graft-cli edit failed: %s", freed[i].name, err);
      json_builder_begin_object (jobs);
      json_builder_set_member_name (jobs, "program");
      json_builder_add_string_value (jobs, out);
      json_builder_set_member_name (jobs, "inputs");
      json_builder_begin_array (jobs);
      json_builder_add_string_value (jobs, input);
      json_builder_end_array (jobs);
      json_builder_set_member_name (jobs, "outputs");
      json_builder_add_string_value (jobs, prefix);
      json_builder_set_member_name (jobs, "ranges");
      json_builder_add_string_value (jobs, ranges);
      json_builder_end_object (jobs);
    }
  json_builder_end_array (jobs);
  g_autoptr(JsonNode) root = json_builder_get_root (jobs);
  g_autofree char *jobs_text = json_to_string (root, TRUE);
  g_autofree char *jobs_path = g_build_filename (dir, "jobs.json", NULL);
  g_assert_true (g_file_set_contents (jobs_path, jobs_text, -1, NULL));

  g_autofree char *python = graft_test_python ();
  g_autofree char *script = graft_test_source_path ("tests/pt2/compare-pt2.py");
  const char *argv[] = { python, script, "run", jobs_path, NULL };
  g_autoptr(GError) error = NULL;
  graft_test_spawn (argv, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < G_N_ELEMENTS (freed); i++)
    {
      g_autofree char *out = g_strdup_printf ("%s/%s.pt2", dir, freed[i].name);
      g_autofree char *torch_path = g_strdup_printf ("%s/%s.torch.0.npy", dir, freed[i].name);
      g_autofree char *eager_path = fixture (freed[i].name, ".eager3.npy");
      g_autofree char *input = fixture (freed[i].name, ".input3.npy");
      g_autofree char *ranges_path = g_strdup_printf ("%s/%s.ranges", dir, freed[i].name);
      g_autofree char *ranges = NULL;
      g_autoptr(GraftRtTensor) eager = graft_npy_read (eager_path, &error);
      g_assert_no_error (error);
      g_autoptr(GraftRtTensor) in_torch = graft_npy_read (torch_path, &error);
      g_assert_no_error (error);
      g_autoptr(GraftRtTensor) in_graft = run_graft (out, input);
      g_autofree char *torch_label = g_strdup_printf ("%s: torch.export.load(saved).module() at batch 3", freed[i].name);
      g_autofree char *graft_label = g_strdup_printf ("%s: Graft's run of the saved file at batch 3", freed[i].name);

      graft_test_assert_matches_torch (in_torch, eager, torch_label);
      graft_test_assert_matches_torch (in_graft, eager, graft_label);
      g_assert_true (g_file_get_contents (ranges_path, &ranges, NULL, NULL));
      g_assert_cmpstr (ranges, ==, freed[i].ranges);
    }
}

/* A range the user gives is the program's; the proof runs inside it. */
static void
test_range_given (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-unspec-XXXXXX", NULL);
  g_autofree char *in = fixture ("cnn_view", ".pt2");
  g_autofree char *out = g_build_filename (dir, "cnn_view.pt2", NULL);
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  gint64 min = 0, max = 0;

  if (!free_batch (in, "batch:1:16", out, &err))
    g_error ("graft-cli edit failed: %s", err);
  g_autoptr(GraftModel) model = graft_model_load (out, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (graft_model_get_dim_range (model, "batch", &min, &max));
  g_assert_cmpint (min, ==, 1);
  g_assert_cmpint (max, ==, 16);
}

static void
test_batch_mixing_refused (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-unspec-XXXXXX", NULL);
  g_autofree char *in = fixture ("batch_mixing", ".pt2");
  g_autofree char *out = g_build_filename (dir, "batch_mixing.pt2", NULL);
  g_autofree char *err = NULL;

  g_assert_false (free_batch (in, "batch", out, &err));
  g_assert_nonnull (strstr (err, "x:0 stays specialized to 2"));
  g_assert_nonnull (strstr (err, "node 'linear_1' (aten::linear)"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/pt2-unspec/freed-programs-match-eager", test_freed_programs_match_eager);
  g_test_add_func ("/pt2-unspec/range-given", test_range_given);
  g_test_add_func ("/pt2-unspec/batch-mixing-refused", test_batch_mixing_refused);
  return g_test_run ();
}
