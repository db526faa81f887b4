/* Edited torch.export programs saved as .pt2 (issue 34): graft-cli edit
 * IN.pt2 -o OUT.pt2 with each edit family that works on the program's
 * own graph (rename, argument change, bypass, delete, add/remove output,
 * make a dim dynamic) on programs torch 2.13 exported
 * (make-pt2-save-fixtures.py); torch.export.load reads every result and
 * ep.module()(x) (tests/pt2/compare-pt2.py) equals Graft's run of the
 * saved file within 1e-4·max|torch| per output, at the export size and,
 * where a dim was freed, at another. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../onnx/fixtures.h"
#include "pt2-test-common.h"
#include "../test-python.h"
#include "../test-scratch.h"


typedef struct {
  const char *name;
  /* What the saved file must show of the edit, read back by Graft: a node
   * ("act0") or value ("%image") that must exist, or with a leading '!'
   * must not; "node.attribute=value" an argument's new value;
   * "value[axis]=symbol" a dim made symbolic; "node@op" the operator the
   * saved file gives a node (its target, read back). */
  const char *expect[3];
  const char *program;           /* in the fixtures */
  const char *edits[8];          /* graft-cli edit arguments */
  const char *inputs[3];         /* one run per input file (single-input programs) */
  guint n_outputs;               /* user outputs after the edit */
} Scenario;

static const Scenario scenarios[] = {
  { "rename", { "act0", "%image", "!relu" }, "programs/cnn_static.pt2",
    { "--rename-node", "relu=act0", "--rename-value", "x=image", "--rename-value", "linear=logits" },
    { "programs/cnn_static.input0.npy" }, 1 },
  { "arguments", { "batch_norm.arg7=0.001", "max_pool2d.arg1=[1, 1]" }, "programs/cnn_static.pt2",
    { "--attr", "batch_norm:arg7=float:0.001", "--attr", "max_pool2d:arg1=ints:[1,1]" },
    { "programs/cnn_static.input0.npy" }, 1 },
  { "bypass", { "!relu_1" }, "programs/cnn_static.pt2", { "--bypass", "relu_1" }, { "programs/cnn_static.input0.npy" }, 1 },
  { "add-output", { "relu" }, "programs/cnn_static.pt2", { "--add-output", "relu" }, { "programs/cnn_static.input0.npy" }, 2 },
  { "dynamic-batch", { "x[0]=batch" }, "programs/cnn_static.pt2", { "--dynamic", "x:0=batch" },
    { "programs/cnn_static.input0.npy", "cnn_static.input3.npy" }, 1 },
  { "delete", { "!nonzero" }, "programs/data_dependent.pt2", { "--delete", "nonzero" }, { "programs/data_dependent.input0.npy" }, 1 },
  { "remove-output", { "!nonzero" }, "programs/data_dependent.pt2", { "--remove-output", "nonzero" },
    { "programs/data_dependent.input0.npy" }, 1 },
  { "resnet18-bypass-add-output", { "!relu__16" }, "tv_resnet18.pt2", { "--bypass", "relu__16", "--add-output", "add__7" },
    { "tv_resnet18.input.npy", "tv_resnet18.input3.npy" }, 2 },
  /* nodes whose operator an edit chose: written from the aten schema
   * table (overload, argument names), the keyword slope put in place */
  { "insert-keyword-argument", { "features/leaky_relu@aten::leaky_relu", "features/leaky_relu.arg1=0.2" },
    "programs/cnn_static.pt2", { "--insert", "conv2d=aten::leaky_relu;negative_slope=float:0.2" },
    { "programs/cnn_static.input0.npy" }, 1 },
  { "replace-op", { "relu@aten::gelu", "relu_1@aten::relu" }, "programs/cnn_static.pt2",
    { "--replace-op", "relu=aten::gelu" }, { "programs/cnn_static.input0.npy" }, 1 },
  { "add-node", { "extra@aten::add" }, "programs/cnn_static.pt2", { "--add-node", "extra=aten::add(relu,relu)" },
    { "programs/cnn_static.input0.npy" }, 2 },
  { "replace-pattern", { "relu@aten::sigmoid", "relu_1@aten::sigmoid" }, "programs/cnn_static.pt2",
    { "--replace-pattern", "r=aten::relu(x)=>aten::sigmoid" }, { "programs/cnn_static.input0.npy" }, 1 },
  /* a parameter and a buffer with the same bytes stay two state-dict entries */
  { "cleanup-keeps-state", { "%b_features_1_running_mean" }, "programs/cnn_static.pt2", { "--cleanup" },
    { "programs/cnn_static.input0.npy" }, 1 },
  { "bert-rename-argument", { "%pooled", "layer_norm_4.arg4=0.001" }, "hf_bert.pt2",
    { "--rename-value", "tanh=pooled", "--attr", "layer_norm_4:arg4=float:0.001" },
    { "hf_bert.input.npy", "hf_bert.input3.npy" }, 2 },
};

static char *
fixture (const char *relative)
{
  return g_build_filename (graft_test_pt2_save_fixtures (), relative, NULL);
}

static void
edit_program (const Scenario *s, const char *out)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *in = fixture (s->program);
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;

  g_ptr_array_add (argv, cli);
  g_ptr_array_add (argv, "edit");
  g_ptr_array_add (argv, in);
  g_ptr_array_add (argv, "-o");
  g_ptr_array_add (argv, (char *) out);
  for (guint i = 0; s->edits[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) s->edits[i]);
  g_ptr_array_add (argv, NULL);
  graft_test_spawn ((const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
}

static GraftNode *
find_node (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    if (strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->name, name) == 0)
      return g_ptr_array_index (graph->nodes, i);
  return NULL;
}

static void
check_expectations (const Scenario *s, GraftGraph *graph)
{
  for (guint i = 0; i < G_N_ELEMENTS (s->expect) && s->expect[i] != NULL; i++)
    {
      const char *what = s->expect[i];
      gboolean negated = what[0] == '!';
      const char *name = negated ? what + 1 : what;
      const char *equals = strchr (name, '=');
      const char *bracket = strchr (name, '[');
      const char *at = strchr (name, '@');
      if (at != NULL)
        {
          g_autofree char *node_name = g_strndup (name, at - name);
          GraftNode *node = find_node (graph, node_name);
          g_assert_nonnull (node);
          g_assert_cmpstr (node->op, ==, at + 1);
        }
      else if (bracket != NULL && equals != NULL && bracket < equals)
        {
          g_autofree char *value_name = g_strndup (name, bracket - name);
          GraftValue *value = graft_graph_lookup_value (graph, value_name);
          guint axis = (guint) g_ascii_strtoull (bracket + 1, NULL, 10);
          g_assert_nonnull (value);
          g_assert_cmpint (value->shape.rank, >, (int) axis);
          g_assert_cmpint (value->shape.dims[axis].kind, ==, GRAFT_DIM_SYMBOLIC);
          g_assert_cmpstr (value->shape.dims[axis].symbol, ==, equals + 1);
        }
      else if (equals != NULL)
        {
          g_autofree char *node_name = g_strndup (name, strchr (name, '.') - name);
          g_autofree char *attribute_name = g_strndup (strchr (name, '.') + 1, equals - strchr (name, '.') - 1);
          GraftNode *node = find_node (graph, node_name);
          g_assert_nonnull (node);
          GraftAttribute *found = NULL;
          for (guint k = 0; k < node->attributes->len; k++)
            if (strcmp (((GraftAttribute *) g_ptr_array_index (node->attributes, k))->name, attribute_name) == 0)
              found = g_ptr_array_index (node->attributes, k);
          g_assert_nonnull (found);
          g_autofree char *value = graft_attribute_format_value (found, 16);
          g_assert_cmpstr (value, ==, equals + 1);
        }
      else if (name[0] == '%')
        g_assert_true ((graft_graph_lookup_value (graph, name + 1) != NULL) != negated);
      else
        g_assert_true ((find_node (graph, name) != NULL) != negated);
    }
}

/* Graft's run of the saved program on input against torch's outputs
 * PREFIX.i.npy. */
static void
check_run (const Scenario *s, const char *saved, const char *input_file, const char *prefix)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (saved, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftGraph *graph = graft_model_get_graph (model);
  g_assert_cmpuint (graph->outputs->len, ==, s->n_outputs);
  check_expectations (s, graph);
  GraftRuntime *rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_autofree char *input_path = fixture (input_file);
  GraftValue *input = g_ptr_array_index (graph->inputs, 0);
  g_hash_table_insert (inputs, input->name, graft_npy_read (input_path, &error));
  g_assert_no_error (error);
  g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < outputs->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("%s.%u.npy", prefix, i);
      g_autoptr(GraftRtTensor) want = graft_npy_read (path, &error);
      g_assert_no_error (error);
      g_autofree char *label = g_strdup_printf ("%s on %s, output %u", s->name, input_file, i);
      graft_test_assert_matches_torch (g_ptr_array_index (outputs, i), want, label);
    }
  graft_runtime_free (rt);
}

static void
test_edited_programs_run_in_torch (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-edit-XXXXXX", NULL);
  g_autoptr(JsonBuilder) jobs = json_builder_new ();

  json_builder_begin_array (jobs);
  for (guint i = 0; i < G_N_ELEMENTS (scenarios); i++)
    {
      const Scenario *s = &scenarios[i];
      g_autofree char *saved = g_strdup_printf ("%s/%s.pt2", dir, s->name);
      edit_program (s, saved);
      for (guint k = 0; s->inputs[k] != NULL; k++)
        {
          g_autofree char *input = fixture (s->inputs[k]);
          g_autofree char *prefix = g_strdup_printf ("%s/%s.run%u", dir, s->name, k);
          json_builder_begin_object (jobs);
          json_builder_set_member_name (jobs, "program");
          json_builder_add_string_value (jobs, saved);
          json_builder_set_member_name (jobs, "inputs");
          json_builder_begin_array (jobs);
          json_builder_add_string_value (jobs, input);
          json_builder_end_array (jobs);
          json_builder_set_member_name (jobs, "outputs");
          json_builder_add_string_value (jobs, prefix);
          json_builder_end_object (jobs);
        }
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

  for (guint i = 0; i < G_N_ELEMENTS (scenarios); i++)
    {
      const Scenario *s = &scenarios[i];
      g_autofree char *saved = g_strdup_printf ("%s/%s.pt2", dir, s->name);
      for (guint k = 0; s->inputs[k] != NULL; k++)
        {
          g_autofree char *prefix = g_strdup_printf ("%s/%s.run%u", dir, s->name, k);
          check_run (s, saved, s->inputs[k], prefix);
        }
    }
}

/* --dynamic on a program saved as ONNX: the program declares the
 * input's shape, so no --shape is needed. */
static void
test_dynamic_without_shape_to_onnx (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-edit-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "cnn.onnx", NULL);
  const Scenario s = { "onnx", { NULL }, "programs/cnn_static.pt2", { "--dynamic", "x:0=batch" } };
  edit_program (&s, out);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (out, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftValue *input = g_ptr_array_index (graft_model_get_graph (model)->inputs, 0);
  g_assert_cmpint (input->shape.dims[0].kind, ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (input->shape.dims[0].symbol, ==, "batch");
}

/* convert .pt2 -o .pt2 is refused, pointing to edit (it used to write
 * ONNX bytes into the .pt2 and exit 0), and no file appears; convert
 * writes .pt2 from TorchScript (test-pt2-convert.c). */
static void
test_convert_refuses_pt2_output (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-edit-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "converted.pt2", NULL);
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *in = g_build_filename (graft_test_pt2_save_fixtures (), "programs/cnn_static.pt2", NULL);
  const char *argv[] = { cli, "convert", in, "-o", out, NULL };
  g_autofree char *err = NULL;
  int status;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                               &status, NULL));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (err, "is a torch.export program already"));
  g_assert_nonnull (strstr (err, "graft-cli edit"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/pt2-edit/dynamic-without-shape-to-onnx", test_dynamic_without_shape_to_onnx);
  g_test_add_func ("/pt2-edit/convert-refuses-pt2-output", test_convert_refuses_pt2_output);
  g_test_add_func ("/pt2-edit/edited-programs-run-in-torch", test_edited_programs_run_in_torch);
  return g_test_run ();
}
