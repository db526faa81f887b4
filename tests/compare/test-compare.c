/* Comparing two models on real exports made at test time
 * (make-compare-fixtures.py): alignment quality against the module paths,
 * the notes for control flow and baked constants, the structural diff of an
 * edit, and the numeric diff through `graft-cli diff --json`. */
#include <string.h>
#include <sys/wait.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "fixtures.h"
#include "lint/diagnostics.h"
#include "loader.h"
#include "compare/alignment.h"
#include "compare/structural-diff.h"
#include "../test-scratch.h"

static char *fixture_dir;

static char *
fixture (const char *name)
{
  return g_build_filename (fixture_dir, name, NULL);
}

static GraftModel *
load (const char *name)
{
  g_autofree char *path = fixture (name);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

static GraftAlignment *
align (const char *a, const char *b)
{
  g_autoptr(GraftModel) ma = load (a);
  g_autoptr(GraftModel) mb = load (b);
  g_autoptr(GError) error = NULL;
  GraftAlignment *al = graft_alignment_new (ma, mb, &error);
  g_assert_no_error (error);
  return al;
}

static const char *
group_of (GraftNode *node)
{
  return node->group && node->group->path ? node->group->path : "";
}

/* At least 95 % of the compute nodes matched on each side, and every pair
 * in the same module (a wrong match would cross modules). */
static void
assert_aligned_by_modules (GraftAlignment *al)
{
  g_assert_cmpuint (al->n_compute_a, >, 40);
  g_assert_cmpuint (al->n_matched_a * 100, >=, al->n_compute_a * 95);
  g_assert_cmpuint (al->n_matched_b * 100, >=, al->n_compute_b * 95);
  for (guint i = 0; i < al->node_pairs->len; i++)
    {
      GraftNodePair *p = &g_array_index (al->node_pairs, GraftNodePair, i);
      if (strcmp (group_of (p->a), group_of (p->b)) != 0)
        g_error ("%s (%s) paired with %s (%s)", p->a->name, group_of (p->a), p->b->name, group_of (p->b));
    }
}

static guint
count_notes (GraftAlignment *al, GraftNoteKind kind)
{
  guint n = 0;
  for (guint i = 0; i < al->notes->len; i++)
    n += ((GraftAlignmentNote *) al->notes->pdata[i])->kind == kind;
  return n;
}

static GraftAlignmentNote *
only_note (GraftAlignment *al, GraftNoteKind kind)
{
  g_assert_cmpuint (al->notes->len, ==, 1);
  GraftAlignmentNote *note = al->notes->pdata[0];
  g_assert_cmpint (note->kind, ==, kind);
  return note;
}

/* graft-cli diff ... --json: exit status and parsed output. */
typedef struct {
  int status;
  JsonParser *parser;
  JsonObject *root;
} DiffRun;

static void
diff_run_clear (DiffRun *run)
{
  g_clear_object (&run->parser);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (DiffRun, diff_run_clear)

static void
run_diff (DiffRun *run, const char *a, const char *b, const char *const *extra)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *pa = fixture (a);
  g_autofree char *pb = g_path_is_absolute (b) ? g_strdup (b) : fixture (b);
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  int wait_status;

  g_ptr_array_add (argv, g_strdup (cli));
  g_ptr_array_add (argv, g_strdup ("diff"));
  g_ptr_array_add (argv, g_strdup (pa));
  g_ptr_array_add (argv, g_strdup (pb));
  g_ptr_array_add (argv, g_strdup ("--json"));
  /* "NAME=@FILE" names a fixture */
  for (guint i = 0; extra && extra[i]; i++)
    {
      const char *at = strstr (extra[i], "=@");
      g_autofree char *path = at ? fixture (at + 2) : NULL;
      g_ptr_array_add (argv, at ? g_strdup_printf ("%.*s=%s", (int) (at - extra[i]), extra[i], path) : g_strdup (extra[i]));
    }
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &wait_status, &error));
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (wait_status));
  run->status = WEXITSTATUS (wait_status);
  if (run->status == 2)
    g_error ("graft-cli diff %s %s failed: %s", a, b, err);
  g_assert_cmpstr (err, ==, "");
  run->parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (run->parser, out, -1, &error));
  g_assert_no_error (error);
  run->root = json_node_get_object (json_parser_get_root (run->parser));
}

static JsonObject *
numeric_run (DiffRun *run, guint index)
{
  JsonObject *numeric = json_object_get_object_member (run->root, "numeric");
  JsonArray *runs = json_object_get_array_member (numeric, "runs");
  g_assert_cmpuint (index, <, json_array_get_length (runs));
  return json_array_get_object_element (runs, index);
}

/* The largest max_rel over the graph outputs' values of a run. */
static double
output_error (JsonObject *run, const char *output)
{
  JsonArray *values = json_object_get_array_member (run, "values");
  for (guint i = 0; i < json_array_get_length (values); i++)
    {
      JsonObject *v = json_array_get_object_element (values, i);
      if (strcmp (json_object_get_string_member (v, "a"), output) == 0)
        return json_object_get_double_member (v, "max_rel");
    }
  g_error ("no value %s compared", output);
}

static JsonObject *
first_divergent (JsonObject *run)
{
  JsonNode *node = json_object_get_member (run, "first_divergent");
  g_assert_nonnull (node);
  g_assert_false (JSON_NODE_HOLDS_NULL (node));
  return json_node_get_object (node);
}

static const char *
node_member (JsonObject *object, const char *member, const char *field)
{
  return json_object_get_string_member (json_object_get_object_member (object, member), field);
}

/* ------------------------------------------------------------------ */

/* The runtime checks the comparison finds in a are the Ifs the Problems
 * panel notes as control flow, no more: a check in a branch the module's
 * attributes rule out (every BatchNorm's `if self.training:
 * _verify_batch_size`, saved in eval mode) never raises, and counted 22
 * against lint's 2 on resnet18. */
static void
assert_checks_are_lint_notes (GraftAlignment *al, const char *a)
{
  g_autoptr(GraftModel) model = load (a);
  g_autoptr(GPtrArray) diagnostics = graft_lint_model (model, NULL);
  g_autoptr(GPtrArray) noted = g_ptr_array_new ();
  guint n_checks = 0;

  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *diagnostic = g_ptr_array_index (diagnostics, i);

      if (strcmp (diagnostic->rule, "control-flow") == 0)
        g_ptr_array_add (noted, diagnostic->node_name);
    }
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = g_ptr_array_index (al->notes, i);
      g_autofree char *name = NULL;

      if (note->kind != GRAFT_NOTE_RUNTIME_CHECK)
        continue;
      n_checks++;
      name = graft_node_display_name (note->node);
      g_assert_true (note->in_a);
      g_assert_true (g_ptr_array_find_with_equal_func (noted, name, g_str_equal, NULL));
    }
  g_test_message ("%u runtime checks, %u control-flow notes", n_checks, noted->len);
  g_assert_cmpuint (n_checks, ==, noted->len);
  g_assert_cmpuint (n_checks, >, 0);
}

static void
test_resnet_trace_vs_script (void)
{
  g_autoptr(GraftAlignment) al = align ("resnet18_scripted.pt", "resnet18_traced.pt");
  assert_aligned_by_modules (al);
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);
  /* the only differences are the checks scripting keeps */
  g_assert_cmpuint (count_notes (al, GRAFT_NOTE_RUNTIME_CHECK), ==, al->notes->len);
  assert_checks_are_lint_notes (al, "resnet18_scripted.pt");
  g_autoptr(GraftStructuralDiff) sd = graft_structural_diff_new (al);
  g_assert_true (graft_structural_diff_is_equivalent (sd));
  g_assert_nonnull (strstr (sd->summary, "runtime check"));

  const char *args[] = { "--random", "--seed", "3", "--shape", "x=1x3x224x224,2x3x224x224", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "resnet18_scripted.pt", "resnet18_traced.pt", args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_true (json_object_get_boolean_member (run.root, "equivalent"));
  for (guint r = 0; r < 2; r++)
    {
      JsonObject *nr = numeric_run (&run, r);
      g_assert_true (json_object_get_boolean_member (nr, "outputs_close"));
      g_assert_cmpint (json_object_get_int_member (nr, "divergent"), ==, 0);
      g_assert_cmpint (json_object_get_int_member (nr, "compared"), >=, 60);
    }
}

static void
test_resnet_torchscript_vs_onnx (gconstpointer data)
{
  const char *onnx = data;
  g_autoptr(GraftAlignment) al = align ("resnet18_traced.pt", onnx);
  assert_aligned_by_modules (al);
  /* every BatchNorm folded into its Conv, nothing else left over */
  g_assert_cmpuint (count_notes (al, GRAFT_NOTE_FOLDED), ==, 20);
  g_assert_cmpuint (al->notes->len, ==, 20);
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);

  const char *args[] = { "--random", "--shape", "x=1x3x224x224", "--rtol", "0", "--atol", "1", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "resnet18_traced.pt", onnx, args);
  g_assert_cmpint (run.status, ==, 0);
  JsonObject *nr = numeric_run (&run, 0);
  g_autoptr(GraftModel) traced = load ("resnet18_traced.pt");
  GraftGraph *graph = graft_model_get_graph (traced);
  const char *output = ((GraftValue *) graph->outputs->pdata[0])->name;
  g_assert_cmpfloat (output_error (nr, output), <=, 1e-4);
  g_assert_cmpint (json_object_get_int_member (nr, "compared"), >=, 45);
}

/* No weight in common: module paths and structure alone, through the
 * scripted InvertedResidual's `if self.use_res_connect` whose two
 * branches call the same modules. */
static void
test_mobilenet_other_weights (void)
{
  g_autoptr(GraftAlignment) al = align ("mobilenet_v2_scripted.pt", "mobilenet_v2_traced.pt");
  assert_aligned_by_modules (al);
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);
  g_assert_cmpuint (count_notes (al, GRAFT_NOTE_FLATTENED_IF), ==, 17);
  /* the blocks without a residual took the else branch: no Add there */
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = al->notes->pdata[i];
      if (note->kind == GRAFT_NOTE_FLATTENED_IF && strcmp (group_of (note->node), "features.1") == 0)
        g_assert_nonnull (strstr (note->description, "else branch"));
    }
}

/* A fused op against its decomposition, and a Linear split in two: all
 * explained, and the values compared at the right places. */
static void
test_attention_decomposed (void)
{
  g_autoptr(GraftAlignment) al = align ("attention_traced.pt", "attention_dynamo.onnx");
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);
  g_assert_cmpuint (al->n_matched_a, ==, al->n_compute_a);
  g_assert_cmpuint (al->n_matched_b, ==, al->n_compute_b);
  gboolean attention = FALSE;
  guint splits = 0;
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = al->notes->pdata[i];
      g_assert_cmpint (note->kind, ==, GRAFT_NOTE_DECOMPOSED);
      if (strcmp (note->node->op, "aten::_native_multi_head_attention") == 0)
        attention = note->absorbed_other->len >= 5;
      splits += strcmp (note->node->op, "aten::linear") == 0;
    }
  g_assert_true (attention);
  g_assert_cmpuint (splits, ==, 2);

  const char *args[] = { "--random", "--shape", "x=1x5x16", "--rtol", "1e-4", "--atol", "1e-5", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "attention_traced.pt", "attention_dynamo.onnx", args);
  g_assert_cmpint (run.status, ==, 0);
  JsonObject *nr = numeric_run (&run, 0);
  g_assert_cmpint (json_object_get_int_member (nr, "divergent"), ==, 0);
  g_assert_cmpint (json_object_get_int_member (nr, "compared"), ==, 7);   /* every op of the trace */
}

/* Two unrelated models: little matches, and no note explains the rest
 * away (a check's upstream, an If's branches). */
static void
test_unrelated_models (void)
{
  g_autoptr(GraftAlignment) al = align ("resnet18_traced.pt", "mobilenet_v2_scripted.pt");
  g_assert_cmpuint (al->n_matched_a * 100, <, al->n_compute_a * 30);
  g_assert_cmpuint (al->n_matched_b * 100, <, al->n_compute_b * 30);
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = al->notes->pdata[i];
      g_assert_cmpuint (note->absorbed->len + note->absorbed_other->len, <=, 4);
    }
}

static void
test_if_on_tensor (void)
{
  g_autoptr(GraftAlignment) al = align ("if_tensor_scripted.pt", "if_tensor_traced.pt");
  GraftAlignmentNote *note = only_note (al, GRAFT_NOTE_FLATTENED_IF);
  g_assert_true (note->in_a);
  g_assert_cmpstr (note->node->op, ==, "prim::If");
  g_assert_nonnull (strstr (note->description, "then branch"));
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);

  /* the traced branch: the same numbers; the other: the If is where they part */
  const char *positive[] = { "--input", "x=@if_tensor_positive.npy", NULL };
  g_auto (DiffRun) same = { 0 };
  run_diff (&same, "if_tensor_scripted.pt", "if_tensor_traced.pt", positive);
  g_assert_cmpint (same.status, ==, 1);   /* the structure still differs */
  g_assert_true (json_object_get_boolean_member (numeric_run (&same, 0), "outputs_close"));

  const char *negative[] = { "--input", "x=@if_tensor_negative.npy", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "if_tensor_scripted.pt", "if_tensor_traced.pt", negative);
  JsonObject *nr = numeric_run (&run, 0);
  g_assert_false (json_object_get_boolean_member (nr, "outputs_close"));
  g_assert_cmpstr (node_member (first_divergent (nr), "node_a", "op"), ==, "prim::If");
}

static void
test_item_baked (void)
{
  g_autoptr(GraftAlignment) al = align ("item_scripted.pt", "item_traced.pt");
  GraftAlignmentNote *note = only_note (al, GRAFT_NOTE_BAKED_NUMBER);
  g_assert_cmpstr (note->node->op, ==, "aten::div");
  g_assert_nonnull (strstr (note->description, "aten::item"));
  /* abs and max feed only the .item(): explained, not unmatched */
  g_assert_cmpuint (note->absorbed->len, ==, 2);
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);

  const char *args[] = { "--random", "--seed", "1", "--shape", "x=2x3", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "item_scripted.pt", "item_traced.pt", args);
  g_assert_cmpint (run.status, ==, 1);
  JsonObject *nr = numeric_run (&run, 0);
  g_assert_false (json_object_get_boolean_member (nr, "outputs_close"));
  g_assert_cmpstr (node_member (first_divergent (nr), "node_a", "op"), ==, "aten::div");
}

static void
test_inplace_shape_baked (void)
{
  g_autoptr(GraftAlignment) al = align ("inplace_shape_scripted.pt", "inplace_shape_traced.pt");
  GraftAlignmentNote *note = only_note (al, GRAFT_NOTE_BAKED_SHAPE);
  g_assert_cmpstr (note->node->op, ==, "aten::view");
  g_assert_nonnull (strstr (note->description, "[2, -1]"));

  /* right at the traced batch, wrong at another */
  const char *args[] = { "--random", "--shape", "x=2x3,4x3", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "inplace_shape_scripted.pt", "inplace_shape_traced.pt", args);
  g_assert_true (json_object_get_boolean_member (numeric_run (&run, 0), "outputs_close"));
  JsonObject *wrong = numeric_run (&run, 1);
  g_assert_false (json_object_get_boolean_member (wrong, "outputs_close"));
  JsonObject *first = first_divergent (wrong);
  g_assert_cmpstr (node_member (first, "node_a", "op"), ==, "aten::view");
  g_assert_cmpstr (json_object_get_string_member (first, "shape_a"), ==, "4×3");
  g_assert_cmpstr (json_object_get_string_member (first, "shape_b"), ==, "2×6");
}

static void
test_size_loop_unrolled (void)
{
  g_autoptr(GraftAlignment) al = align ("size_loop_scripted.pt", "size_loop_traced.pt");
  GraftAlignmentNote *note = only_note (al, GRAFT_NOTE_UNROLLED_LOOP);
  g_assert_cmpstr (note->node->op, ==, "prim::Loop");
  g_assert_nonnull (strstr (note->description, "unrolled it 3 times"));
  g_assert_cmpuint (al->only_a->len + al->only_b->len, ==, 0);

  const char *args[] = { "--random", "--shape", "x=3x4,5x4", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "size_loop_scripted.pt", "size_loop_traced.pt", args);
  g_assert_true (json_object_get_boolean_member (numeric_run (&run, 0), "outputs_close"));
  JsonObject *wrong = numeric_run (&run, 1);
  g_assert_false (json_object_get_boolean_member (wrong, "outputs_close"));
  g_assert_cmpstr (node_member (first_divergent (wrong), "node_a", "op"), ==, "prim::Loop");
}

static void
test_dynamic_edit (void)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *original = fixture ("reshape_cnn.onnx");
  g_autofree char *tmp = graft_test_scratch_dir ("graft-compare-XXXXXX", NULL);
  g_autofree char *edited = g_build_filename (tmp, "reshape_cnn_dynamic.onnx", NULL);
  const char *edit[] = { cli, "edit", original, "-o", edited, "--dynamic", "x:0=batch", NULL };
  int status;
  g_autoptr(GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) edit, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL,
                               &status, &error));
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);

  g_autoptr(GraftModel) a = load ("reshape_cnn.onnx");
  g_autoptr(GraftModel) b = graft_model_load (edited, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GraftAlignment) al = graft_alignment_new (a, b, &error);
  g_assert_no_error (error);
  g_autoptr(GraftStructuralDiff) sd = graft_structural_diff_new (al);
  /* only the Reshape's shape constant and the input's batch dim */
  g_assert_cmpuint (al->only_a->len + al->only_b->len + al->notes->len, ==, 0);
  g_assert_cmpuint (al->n_matched_a, ==, al->n_compute_a);
  g_assert_cmpuint (sd->changes->len, ==, 2);
  GraftChange *constant = sd->changes->pdata[0], *input = sd->changes->pdata[1];
  g_assert_cmpint (constant->kind, ==, GRAFT_CHANGE_CONSTANT);
  g_assert_cmpstr (constant->b->op, ==, "onnx::Reshape");
  g_assert_nonnull (strstr (constant->before, "[2, -1]"));
  g_assert_cmpint (input->kind, ==, GRAFT_CHANGE_INPUT);
  g_assert_cmpstr (input->before, ==, "2×3×8×8");
  g_assert_cmpstr (input->after, ==, "batch×3×8×8");

  /* the original takes only its traced batch */
  const char *args[] = { "--random", "--dim", "batch=2,5", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "reshape_cnn.onnx", edited, args);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_true (json_object_get_boolean_member (numeric_run (&run, 0), "outputs_close"));
  JsonObject *five = numeric_run (&run, 1);
  g_assert_false (json_object_get_boolean_member (five, "outputs_close"));
  g_assert_nonnull (strstr (json_object_get_string_member (five, "error_a"), "2×3×8×8"));
  g_assert_true (JSON_NODE_HOLDS_NULL (json_object_get_member (five, "error_b")));

  g_unlink (edited);
  g_rmdir (tmp);
}

/* A padding change: the Conv's pads attribute, and the shapes after it —
 * the graph output's declared one, and the Conv's and ReLU's, which no file
 * declares but shape inference knows. */
static void
test_inferred_shapes (void)
{
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "pad_same.onnx", "pad_valid.onnx", NULL);
  g_assert_cmpint (run.status, ==, 1);
  JsonArray *changes = json_object_get_array_member (run.root, "changes");
  g_assert_cmpuint (json_array_get_length (changes), ==, 4);
  guint n_inferred = 0, n_declared = 0, n_attributes = 0;
  for (guint i = 0; i < json_array_get_length (changes); i++)
    {
      JsonObject *change = json_array_get_object_element (changes, i);
      const char *kind = json_object_get_string_member (change, "kind");
      if (strcmp (kind, "attribute") == 0)
        {
          g_assert_cmpstr (json_object_get_string_member (change, "what"), ==, "pads");
          n_attributes++;
          continue;
        }
      g_assert_cmpstr (kind, ==, "shape");
      if (json_object_get_boolean_member (change, "inferred"))
        {
          const char *op = node_member (change, "b", "op");
          g_assert_true (strcmp (op, "onnx::Conv") == 0 || strcmp (op, "onnx::Relu") == 0);
          g_assert_cmpstr (json_object_get_string_member (change, "before"), ==, "1×4×16×16");
          g_assert_cmpstr (json_object_get_string_member (change, "after"), ==, "1×4×14×14");
          n_inferred++;
        }
      else
        {
          g_assert_cmpstr (json_object_get_string_member (change, "what"), ==, "y");
          g_assert_cmpstr (json_object_get_string_member (change, "after"), ==, "1×4×7×7");
          n_declared++;
        }
    }
  g_assert_cmpuint (n_inferred, ==, 2);
  g_assert_cmpuint (n_declared, ==, 1);
  g_assert_cmpuint (n_attributes, ==, 1);
}

static void
test_corrupted_weight (void)
{
  g_autoptr(GraftAlignment) al = align ("resnet18_traced.pt", "resnet18_corrupt_traced.pt");
  assert_aligned_by_modules (al);
  g_autoptr(GraftStructuralDiff) sd = graft_structural_diff_new (al);
  g_assert_cmpuint (sd->changes->len, ==, 1);
  GraftChange *change = sd->changes->pdata[0];
  g_assert_cmpint (change->kind, ==, GRAFT_CHANGE_CONSTANT);
  g_assert_cmpstr (group_of (change->b), ==, "layer2.0.conv2");

  const char *args[] = { "--random", "--shape", "x=1x3x224x224", NULL };
  g_auto (DiffRun) run = { 0 };
  run_diff (&run, "resnet18_traced.pt", "resnet18_corrupt_traced.pt", args);
  g_assert_cmpint (run.status, ==, 1);
  JsonObject *first = first_divergent (numeric_run (&run, 0));
  g_assert_cmpstr (node_member (first, "node_a", "group"), ==, "layer2.0.conv2");
  g_assert_cmpstr (node_member (first, "node_b", "group"), ==, "layer2.0.conv2");
}

static void
test_bad_usage (void)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *a = fixture ("item_traced.pt");
  const char *missing[] = { cli, "diff", a, "/nonexistent/model.onnx", NULL };
  const char *one[] = { cli, "diff", a, NULL };
  const char *no_shape[] = { cli, "diff", a, a, "--random", NULL };
  const char *const *cases[] = { missing, one, no_shape };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *err = NULL;
      int status;
      g_autoptr(GError) error = NULL;
      g_assert_true (g_spawn_sync (NULL, (char **) cases[i], NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                                   &err, &status, &error));
      g_assert_no_error (error);
      g_assert_true (WIFEXITED (status));
      g_assert_cmpint (WEXITSTATUS (status), ==, 2);
      g_assert_true (g_str_has_prefix (err, "graft-cli: "));
      g_assert_cmpuint (strchr (err, '\n') - err, ==, strlen (err) - 1);   /* one line */
    }
}

/* B fails at a node (the traced view's baked [2, -1] on 9 elements): the
 * JSON names the node, and the text never reports outputs compared ("outputs
 * DIFFER (max abs 0, rel 0)") that were not. */
static void
test_one_side_fails (void)
{
  const char *args[] = { "--random", "--shape", "x=3x3", NULL };
  g_auto (DiffRun) run = { 0 };
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *a = fixture ("inplace_shape_scripted.pt");
  g_autofree char *b = fixture ("inplace_shape_traced.pt");
  const char *text_argv[] = { cli, "diff", a, b, "--random", "--shape", "x=3x3", NULL };
  g_autofree char *out = NULL;
  g_autoptr(GError) error = NULL;
  JsonObject *failed;
  int status;

  run_diff (&run, "inplace_shape_scripted.pt", "inplace_shape_traced.pt", args);
  g_assert_cmpint (run.status, ==, 1);
  failed = numeric_run (&run, 0);
  g_assert_false (json_object_get_boolean_member (failed, "outputs_close"));
  g_assert_cmpstr (json_object_get_string_member (failed, "failed_node_b"), ==, "view_3");
  g_assert_true (JSON_NODE_HOLDS_NULL (json_object_get_member (failed, "failed_node_a")));

  g_assert_true (g_spawn_sync (NULL, (char **) text_argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                               &status, &error));
  g_assert_no_error (error);
  g_test_message ("%s", out);
  g_assert_nonnull (strstr (out, "Run at x: 3×3: outputs not compared (B's run failed)"));
  g_assert_null (strstr (out, "max abs 0"));
  g_assert_null (strstr (out, "DIFFER"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  fixture_dir = graft_test_generate_fixtures ("tests/compare/make-compare-fixtures.py",
                                              "tests/fixtures-generated/compare", NULL);
  g_test_add_func ("/compare/resnet18/trace-vs-script", test_resnet_trace_vs_script);
  g_test_add_data_func ("/compare/resnet18/torchscript-vs-onnx", "resnet18.onnx", test_resnet_torchscript_vs_onnx);
  g_test_add_data_func ("/compare/resnet18/torchscript-vs-onnx-dynamo", "resnet18_dynamo.onnx",
                        test_resnet_torchscript_vs_onnx);
  g_test_add_func ("/compare/mobilenet-v2/other-weights", test_mobilenet_other_weights);
  g_test_add_func ("/compare/attention-decomposed", test_attention_decomposed);
  g_test_add_func ("/compare/unrelated-models", test_unrelated_models);
  g_test_add_func ("/compare/if-on-tensor", test_if_on_tensor);
  g_test_add_func ("/compare/item-baked", test_item_baked);
  g_test_add_func ("/compare/inplace-shape-baked", test_inplace_shape_baked);
  g_test_add_func ("/compare/size-loop-unrolled", test_size_loop_unrolled);
  g_test_add_func ("/compare/dynamic-edit", test_dynamic_edit);
  g_test_add_func ("/compare/corrupted-weight", test_corrupted_weight);
  g_test_add_func ("/compare/inferred-shapes", test_inferred_shapes);
  g_test_add_func ("/compare/bad-usage", test_bad_usage);
  g_test_add_func ("/compare/one-side-fails", test_one_side_fails);
  int status = g_test_run ();
  g_free (fixture_dir);
  return status;
}
