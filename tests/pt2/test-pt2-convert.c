/* TorchScript → torch.export (issue 34, point 3): graft-cli convert TS.pt
 * -o OUT.pt2 on archives torch 2.13 made of library models
 * (make-ts2pt2-fixtures.py: a torchvision ResNet-18 traced and scripted, a
 * transformers BERT traced, a MobileNetV2, a torchvision ViT and a timm
 * DeiT scripted) with the batch
 * dynamic; torch.export.load reads each result and ep.module()(x) equals
 * torch.jit.load(TS)(x) within 1e-4·max|ref| at batch 2 and 3
 * (check-converted-pt2.py). Graft reads the program back with its
 * symbol, range and module groups. A scripted module branching on its
 * input's values is refused, naming the If, and writes nothing. */
#include <string.h>
#include <glib/gstdio.h>
#include "loader.h"
#include "../onnx/fixtures.h"
#include "../test-python.h"
#include "../test-scratch.h"

typedef struct {
  const char *model;      /* folder in the fixtures */
  const char *kind;       /* traced, scripted */
  const char *input;      /* the archive's input names, separated by commas */
  const char *shape;      /* at batch 2 */
  const char *dtype;
  const char *group;      /* a module group the program must show, or NULL */
} Case;

static const Case cases[] = {
  { "tv_resnet18", "traced", "x", "2x3x64x64", "float32", "layer1.0.conv1" },
  { "tv_resnet18", "scripted", "x", "2x3x64x64", "float32", "layer4.1.bn2" },
  { "hf_bert", "traced", "input_ids", "2x16", "int64", "model.encoder.layer.1.attention.self" },
  { "tv_mobilenet_v2", "scripted", "x", "2x3x64x64", "float32", "features.3.conv" },
  /* n, c, h, w = x.shape of the graph input: the sizes come from the input */
  { "tv_vit_small", "scripted", "x", "2x3x64x64", "float32", "encoder.layers.encoder_layer_0.self_attention" },
  /* forward(x, attn_mask=None): the Optional input left out is None, and
   * the program takes x alone */
  { "timm_deit_tiny_patch16_224", "scripted", "x", "2x3x64x64", "float32", "blocks.0.attn" },
  /* IntermediateLayerGetter's dict of strings, x.shape[-2:], a dict
   * result: the program returns {"out": …} as TorchScript does */
  { "tv_lraspp_mobilenet", "scripted", "x", "2x3x64x64", "float32", "model.classifier" },
  /* attention_bias_cache["cpu"], kept by torch.jit.save: a tensor constant */
  { "timm_levit_128s", "scripted", "x", "2x3x64x64", "float32", "stages.0.blocks.0.attn" },
  /* (logits, None, None) */
  { "tv_googlenet", "scripted", "x", "2x3x64x64", "float32", "inception3a.branch1" },
  /* if x.sum() > 0: torch.cond, each branch a graph of its own reading x
   * and the weights as operands (b2 takes the then branch, b3 the else) */
  { "branchy", "scripted", "x", "2x4", "float32", NULL },
  /* while x.abs().sum() < 100: while_loop carrying the condition's tensor
   * and x, the weights as additional inputs (b2 loops, b3 does not) */
  { "whiley", "scripted", "x", "2x4", "float32", NULL },
  /* for-loops over constant ranges (the pyramid, the flow updates),
   * self.corr_pyramid set in forward, coords[::-1] */
  { "tv_raft_small", "scripted", "image1,image2", "2x3x128x128", "float32", "raft.corr_block" },
};

static const char *
fixtures (void)
{
  static char *dir;

  if (dir == NULL)
    dir = graft_test_generate_fixtures ("tests/pt2/make-ts2pt2-fixtures.py", "tests/fixtures-generated/ts2pt2", NULL);
  return dir;
}

/* Runs graft-cli convert; returns its exit status, stderr in *err.
 * inputs: names separated by commas, each of shape and dtype. */
static int
convert (const char *in, const char *out, const char *inputs, const char *shape, const char *dtype, char **err)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (argv, g_strdup (cli));
  g_ptr_array_add (argv, g_strdup ("convert"));
  g_ptr_array_add (argv, g_strdup (in));
  g_ptr_array_add (argv, g_strdup ("-o"));
  g_ptr_array_add (argv, g_strdup (out));
  g_auto(GStrv) names = g_strsplit (inputs, ",", -1);
  for (guint i = 0; names[i]; i++)
    {
      g_ptr_array_add (argv, g_strdup ("--shape"));
      g_ptr_array_add (argv, g_strdup_printf ("%s=%s", names[i], shape));
      g_ptr_array_add (argv, g_strdup ("--dtype"));
      g_ptr_array_add (argv, g_strdup_printf ("%s=%s", names[i], dtype));
      g_ptr_array_add (argv, g_strdup ("--dynamic"));
      g_ptr_array_add (argv, g_strdup_printf ("%s:0=batch:1:64", names[i]));
    }
  g_ptr_array_add (argv, NULL);
  int status;
  g_autoptr(GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, err, &status, &error);
  g_assert_no_error (error);
  return g_spawn_check_wait_status (status, NULL) ? 0 : WEXITSTATUS (status);
}

static void
test_converts (gconstpointer data)
{
  const Case *c = data;
  g_autofree char *folder = g_build_filename (fixtures (), c->model, NULL);
  g_autofree char *archive_name = g_strdup_printf ("%s.pt", c->kind);
  g_autofree char *in = g_build_filename (folder, archive_name, NULL);
  g_autofree char *scratch = graft_test_scratch_dir ("pt2-convert-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (scratch, "model.pt2", NULL);
  g_autofree char *err = NULL;

  int status = convert (in, out, c->input, c->shape, c->dtype, &err);
  if (status != 0)
    g_error ("graft-cli convert %s exited %d: %s", in, status, err);

  /* torch reads it and computes what TorchScript computes, at the export
   * batch and another. */
  g_autofree char *python = graft_test_python ();
  g_autofree char *check = graft_test_source_path ("tests/pt2/check-converted-pt2.py");
  g_autofree char *b2 = g_build_filename (folder, "inputs-b2", NULL);
  g_autofree char *b3 = g_build_filename (folder, "inputs-b3", NULL);
  const char *argv[] = { python, check, in, out, b2, b3, NULL };
  g_autofree char *report = NULL, *check_err = NULL;
  int check_status;
  g_autoptr(GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &report, &check_err, &check_status, &error);
  g_assert_no_error (error);
  g_test_message ("%s", report);
  if (!g_spawn_check_wait_status (check_status, NULL))
    g_error ("%s %s: torch disagrees: %s%s", c->model, c->kind, report, check_err);
  g_assert_nonnull (strstr (report, "inputs-b3: agrees"));

  /* Graft reads it back as a torch.export program: the batch a symbol
   * with its range, the modules as groups. */
  g_autoptr(GraftModel) model = graft_model_load (out, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM);
  GraftGraph *graph = graft_model_get_graph (model);
  GraftValue *input = NULL;
  for (guint i = 0; i < graph->inputs->len; i++)
    if (((GraftValue *) graph->inputs->pdata[i])->initializer == NULL)
      input = graph->inputs->pdata[i];
  g_assert_nonnull (input);
  g_assert_cmpint (input->shape.dims[0].kind, ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (input->shape.dims[0].symbol, ==, "batch");
  gint64 min = 0, max = 0;
  g_assert_true (graft_model_get_dim_range (model, "batch", &min, &max));
  g_assert_cmpint (min, ==, 1);
  g_assert_cmpint (max, ==, 64);
  if (c->group != NULL)
    g_assert_nonnull (graft_group_find_path (graph->root_group, c->group));
}

/* Programs Graft refuses to write, with the node and the reason named. */
typedef struct {
  const char *model;      /* folder in the fixtures, scripted.pt in it */
  const char *shape;      /* of its input x */
  const char *node;       /* what the refusal names */
  const char *reason;
} Refusal;

static const Refusal refusals[] = {
  /* if x.sum() > 0: x[:1] else x */
  { "uneven", "2x4", "prim::If", "branches return tensors of different shapes" },
  /* for i in range(x.size(0)) with the batch dynamic: no fixed number of
   * iterations to unroll */
  { "loopy", "2x4", "prim::Loop", "trip count follows the input's sizes" },
};

static void
test_refuses (gconstpointer data)
{
  const Refusal *r = data;
  g_autofree char *in = g_build_filename (fixtures (), r->model, "scripted.pt", NULL);
  g_autofree char *scratch = graft_test_scratch_dir ("pt2-convert-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (scratch, "refused.pt2", NULL);
  g_autofree char *err = NULL;

  g_assert_cmpint (convert (in, out, "x", r->shape, "float32", &err), ==, 1);
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, r->node));
  g_assert_nonnull (strstr (err, r->reason));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

/* DeiT at a size its patch embedding refuses: the scripted assertion's
 * message (built with str + str) is what the refusal says, as PyTorch
 * would raise it; the run used to spin forever building it. */
static void
test_reports_the_models_assertion (void)
{
  g_autofree char *in = g_build_filename (fixtures (), "timm_deit_tiny_patch16_224", "scripted.pt", NULL);
  g_autofree char *scratch = graft_test_scratch_dir ("pt2-convert-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (scratch, "deit.pt2", NULL);
  g_autofree char *err = NULL;

  g_assert_cmpint (convert (in, out, "x", "2x3x96x96", "float32", &err), ==, 1);
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "AssertionError: Input height (96) doesn't match model (64)"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

/* The torch.cond and while_loop programs written for branchy and whiley,
 * lowered to ONNX: an If / a Loop that onnx.checker accepts and
 * onnxruntime runs as TorchScript does (both branches; looping several
 * times and not at all); Graft's runtime runs the .pt2 alike. */
typedef struct
{
  const char *model;
  const char *op_type;
} ControlFlowCase;

static const ControlFlowCase control_flow_cases[] = {
  { "branchy", "If" },
  { "whiley", "Loop" },
};

static void
test_control_flow_lowers_to_onnx (gconstpointer data)
{
  const ControlFlowCase *c = data;
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *folder = g_build_filename (fixtures (), c->model, NULL);
  g_autofree char *in = g_build_filename (folder, "scripted.pt", NULL);
  g_autofree char *scratch = graft_test_scratch_dir ("pt2-convert-XXXXXX", NULL);
  g_autofree char *program = g_build_filename (scratch, "program.pt2", NULL);
  g_autofree char *onnx = g_build_filename (scratch, "program.onnx", NULL);
  g_autofree char *err = NULL;
  if (convert (in, program, "x", "2x4", "float32", &err) != 0)
    g_error ("graft-cli convert %s: %s", in, err);

  g_autofree char *python = graft_test_python ();
  g_autofree char *check = graft_test_source_path ("tests/pt2/check-control-flow-onnx.py");
  g_autofree char *b2 = g_build_filename (folder, "inputs-b2", NULL);
  g_autofree char *b3 = g_build_filename (folder, "inputs-b3", NULL);
  const char *argv[] = { python, check, cli, c->op_type, in, program, onnx, b2, b3, NULL };
  g_autofree char *report = NULL, *check_err = NULL;
  int status;
  g_autoptr(GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &report, &check_err, &status, &error);
  g_assert_no_error (error);
  g_test_message ("%s", report);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s → ONNX %s: %s%s", c->model, c->op_type, report, check_err);
  g_assert_nonnull (strstr (report, "inputs-b2: onnxruntime and Graft's runtime agree"));
  g_assert_nonnull (strstr (report, "inputs-b3: onnxruntime and Graft's runtime agree"));
}

/* run --validate of DeiT's forward(x, attn_mask=None) given x alone:
 * the mask is None, as a plain run takes it (it was refused as "not
 * given"). */
static void
test_validate_leaves_optional_out (void)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *in = g_build_filename (fixtures (), "timm_deit_tiny_patch16_224", "scripted.pt", NULL);
  g_autofree char *x = g_build_filename (fixtures (), "timm_deit_tiny_patch16_224", "inputs-b2", "0.npy", NULL);
  g_autofree char *input = g_strdup_printf ("x=%s", x);
  const char *argv[] = { cli, "run", in, "--input", input, "--validate", NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status;
  g_autoptr(GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  g_test_message ("%s%s", out, err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (out, "validate: no NaN or Inf"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/pt2-convert/%s-%s", cases[i].model, cases[i].kind);
      g_test_add_data_func (path, &cases[i], test_converts);
    }
  g_test_add_func ("/pt2-convert/reports-the-models-assertion", test_reports_the_models_assertion);
  g_test_add_func ("/pt2-convert/validate-leaves-optional-out", test_validate_leaves_optional_out);
  for (guint i = 0; i < G_N_ELEMENTS (control_flow_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/pt2-convert/%s-lowers-to-onnx-%s", control_flow_cases[i].model,
                                               control_flow_cases[i].op_type);
      g_test_add_data_func (path, &control_flow_cases[i], test_control_flow_lowers_to_onnx);
    }
  for (guint i = 0; i < G_N_ELEMENTS (refusals); i++)
    {
      g_autofree char *path = g_strdup_printf ("/pt2-convert/refuses/%s", refusals[i].model);
      g_test_add_data_func (path, &refusals[i], test_refuses);
    }
  return g_test_run ();
}
