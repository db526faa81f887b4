/* The steps a PyTorch file runs beyond its ONNX export cost no step of
 * their own from the third run on (runtime-fusion.c memoize_shape_steps,
 * mark_identity_steps): aten::size and sym_size of an activation,
 * the lists of those sizes and export's _assert_tensor_metadata are
 * memoised by the input's dtype and shape, and contiguous, detach, eval
 * dropout, same-dtype aten::to and whole-axis slices pass their input on
 * from the first run. Declined: casts to another dtype and slices of part
 * of an axis run every time, a list that aten::append changes is built
 * again every run, and a run with other shapes reads the sizes again.
 * Scripted checks of the input's shape (a prim::If without outputs whose
 * branches only raise, on a memoised condition) are memoised too; one
 * on the input's values runs every time. So is a scripted nn.GroupNorm's
 * prim::Loop over the input's sizes with the checks around it: computed
 * again for another shape, and a shape failing the check raises torch's
 * message; loops over values, or filling a list, run every time. Lists
 * of tensors (einsum's, cat's, unbind's) are built and taken apart
 * without a step.
 * In-place ops after a passed-on tensor leave its source (and the
 * caller's input) alone. The modules are written by the test venv's torch
 * (make-aten-steps.py), traced, scripted and exported; each file's runs
 * are checked against its nodes run one by one (an observer turns the
 * passing on off) and against torch. */
#include <string.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../test-python.h"
#include "../test-scratch.h"
#include "float-graph.h"
#include "op-timings.h"

static char *scratch;

static const char *
models (void)
{
  if (scratch == NULL)
    {
      g_autoptr(GError) error = NULL;
      scratch = graft_test_scratch_dir ("aten-steps-XXXXXX", &error);
      g_assert_no_error (error);
      g_autofree char *python = graft_test_python ();
      g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "runtime",
                                                  "make-aten-steps.py", NULL);
      const char *argv[] = { python, script, scratch, NULL };
      graft_test_spawn (argv, &error);
      g_assert_no_error (error);
    }
  return scratch;
}

/* The steps memoised by their input's shape, and those passed on. */
static const char *const memoised_ops[] = {
  "aten::size", "aten::sym_size", "aten::Int", "prim::NumToTensor", "prim::ListConstruct", "prim::ListUnpack",
  "aten::_assert_tensor_metadata",
};
static const char *const identity_ops[] = {
  "aten::contiguous", "aten::detach", "aten::dropout", "aten::dropout_",
};

static guint
calls_of (GraftRuntime *rt, const char *const *ops, guint n)
{
  guint calls = 0;
  for (guint k = 0; k < n; k++)
    calls += graft_test_op_calls (rt, ops[k], NULL, NULL);
  return calls;
}

static GraftModel *
load (const char *module, const char *file, GHashTable **inputs, GraftRtTensor **torch_y)
{
  g_autofree char *dir = g_build_filename (models (), module, NULL);
  g_autofree char *path = g_build_filename (dir, file, NULL);
  g_autofree char *x_path = g_build_filename (dir, "x.npy", NULL);
  g_autofree char *y_path = g_build_filename (dir, "y.npy", NULL);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftValue *input = graft_model_get_graph (model)->inputs->pdata[0];
  *inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (*inputs, input->name, graft_npy_read (x_path, &error));
  g_assert_no_error (error);
  *torch_y = graft_npy_read (y_path, &error);
  g_assert_no_error (error);
  return model;
}

static void
assert_close_to_torch (const char *what, GPtrArray *outputs, GraftRtTensor *torch_y)
{
  g_autoptr(GPtrArray) want = g_ptr_array_new ();
  g_ptr_array_add (want, torch_y);
  float_graph_assert_outputs_close (what, outputs, want, 1e-5);
}

static void
check_steps (gconstpointer data)
{
  const char *file = data;
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftRtTensor) torch_y = NULL;
  g_autoptr(GraftModel) model = load ("steps", file, &inputs, &torch_y);
  GraftValue *input = graft_model_get_graph (model)->inputs->pdata[0];
  GraftRtTensor *x = g_hash_table_lookup (inputs, input->name);
  g_autoptr(GraftRtTensor) x_before = graft_rt_tensor_copy (x, NULL);

  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  /* an observer sees every step run */
  g_assert_cmpuint (calls_of (nodes, identity_ops, G_N_ELEMENTS (identity_ops)), >=, 1);
  assert_close_to_torch (file, reference, torch_y);

  g_autoptr(GraftRuntime) rt = NULL;
  g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, 1, TRUE, &rt);
  guint memoised_first = calls_of (rt, memoised_ops, G_N_ELEMENTS (memoised_ops));
  g_autoptr(GPtrArray) second = graft_test_run_again (rt, inputs);
  guint memoised_second = calls_of (rt, memoised_ops, G_N_ELEMENTS (memoised_ops));
  g_autoptr(GPtrArray) third = graft_test_run_again (rt, inputs);
  g_test_message ("%s: memoised steps ran %u, %u, %u times; aten::to %u, aten::slice %u", file, memoised_first,
                  memoised_second, calls_of (rt, memoised_ops, G_N_ELEMENTS (memoised_ops)),
                  graft_test_op_calls (rt, "aten::to", NULL, NULL), graft_test_op_calls (rt, "aten::slice", NULL, NULL));
  /* the first two runs read the sizes (the second keeps them), the third takes them */
  g_assert_cmpuint (memoised_first, >=, 1);
  g_assert_cmpuint (memoised_second, ==, 2 * memoised_first);
  g_assert_cmpuint (calls_of (rt, memoised_ops, G_N_ELEMENTS (memoised_ops)), ==, memoised_second);
  /* passed on from the first run; the float64 cast and back, and the
   * slice of part of an axis, run every time */
  g_assert_cmpuint (calls_of (rt, identity_ops, G_N_ELEMENTS (identity_ops)), ==, 0);
  g_assert_cmpuint (graft_test_op_calls (rt, "aten::to", NULL, NULL), ==, 3 * 2);
  g_assert_cmpuint (graft_test_op_calls (rt, "aten::slice", NULL, NULL), ==, 3 * 1);
  float_graph_assert_outputs_close (file, first, reference, 0);
  float_graph_assert_outputs_close (file, second, reference, 0);
  float_graph_assert_outputs_close (file, third, reference, 0);
  /* x.detach().mul(3) and the passed-on tensors' add_ left the input alone */
  g_autoptr(GPtrArray) x_now = g_ptr_array_new ();
  g_autoptr(GPtrArray) x_was = g_ptr_array_new ();
  g_ptr_array_add (x_now, x);
  g_ptr_array_add (x_was, x_before);
  float_graph_assert_outputs_close ("the input after the runs", x_now, x_was, 0);
}

/* Memoised sizes of a longer input, then a shorter one: its outputs are
 * those of a runtime that never ran the longer one. */
static void
check_other_shapes (gconstpointer data)
{
  const char *file = data;
  g_autoptr(GHashTable) long_inputs = NULL;
  g_autoptr(GraftRtTensor) torch_y = NULL;
  g_autoptr(GraftModel) model = load ("steps", file, &long_inputs, &torch_y);
  GraftValue *input = graft_model_get_graph (model)->inputs->pdata[0];
  GraftRtTensor *x = g_hash_table_lookup (long_inputs, input->name);
  /* the first 4 of the 6 rows of each item */
  gint64 dims[3] = { x->dims[0], 4, x->dims[2] };
  g_autoptr(GraftRtTensor) shorter = graft_rt_tensor_new (x->dtype, 3, dims, NULL);
  gsize row = x->dims[2] * graft_dtype_get_size (x->dtype);
  for (gint64 b = 0; b < x->dims[0]; b++)
    memcpy ((char *) shorter->data + b * 4 * row, (const char *) x->data + b * x->dims[1] * row, 4 * row);
  g_autoptr(GHashTable) short_inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (short_inputs, input->name, graft_rt_tensor_ref (shorter));

  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) fresh = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_autoptr(GPtrArray) want = graft_test_run_again (fresh, short_inputs);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  for (guint k = 0; k < 3; k++)
    {
      g_autoptr(GPtrArray) unused = graft_test_run_again (rt, long_inputs);
    }
  g_autoptr(GPtrArray) got = graft_test_run_again (rt, short_inputs);
  float_graph_assert_outputs_close (file, got, want, 0);
}

/* A list of sizes that aten::append changes is no memo: kept, it would
 * grow by a size every run. */
static void
check_changed_list (void)
{
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftRtTensor) torch_y = NULL;
  g_autoptr(GraftModel) model = load ("lists", "scripted.pt", &inputs, &torch_y);
  g_autoptr(GraftRuntime) rt = NULL;
  g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, 1, TRUE, &rt);
  assert_close_to_torch ("lists", first, torch_y);
  for (guint k = 0; k < 3; k++)
    {
      g_autoptr(GPtrArray) again = graft_test_run_again (rt, inputs);
      assert_close_to_torch ("lists", again, torch_y);
    }
  /* (the list is built anew each run, without a step: Step.packs) */
  g_assert_cmpuint (graft_test_op_calls (rt, "aten::append", NULL, NULL), ==, 4);
}

/* Scripted checks of the input's shape: their prim::Ifs (on aten::dim,
 * on the length of aten::size's list) take the branch they took while
 * the shape stays, and are memoised; an If on the input's values runs
 * every time. */
static void
check_shape_checks (void)
{
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftRtTensor) torch_y = NULL;
  g_autoptr(GraftModel) model = load ("checks", "scripted.pt", &inputs, &torch_y);
  g_autoptr(GraftRuntime) rt = NULL;
  g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, 1, TRUE, &rt);
  guint ifs = graft_test_op_calls (rt, "prim::If", NULL, NULL);
  g_autoptr(GPtrArray) second = graft_test_run_again (rt, inputs);
  guint ifs_second = graft_test_op_calls (rt, "prim::If", NULL, NULL);
  g_autoptr(GPtrArray) third = graft_test_run_again (rt, inputs);
  guint ifs_third = graft_test_op_calls (rt, "prim::If", NULL, NULL) - ifs_second;
  g_test_message ("prim::If: %u steps the first run, %u the third", ifs, ifs_third);
  /* the shape check and adaptive_avg_pool2d's, the checks of values, and
   * the check of the shape whose branch checks values (with its inner If) */
  g_assert_cmpuint (ifs, >=, 5);
  g_assert_cmpuint (ifs_second, ==, 2 * ifs);
  g_assert_cmpuint (ifs_third, ==, 3);
  assert_close_to_torch ("checks", first, torch_y);
  assert_close_to_torch ("checks", third, torch_y);
}

/* The lists of tensors that einsum and cat read, and unbind's that
 * ListUnpack takes apart, are built and read without a step of their own
 * from the first run (Step.packs, Step.unpacks); an observer sees them
 * run. */
static void
check_tensor_lists (gconstpointer data)
{
  const char *file = data;
  static const char *const list_ops[] = { "prim::ListConstruct", "prim::ListUnpack" };
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftRtTensor) torch_y = NULL;
  g_autoptr(GraftModel) model = load ("tensor-lists", file, &inputs, &torch_y);
  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  assert_close_to_torch (file, reference, torch_y);
  g_assert_cmpuint (calls_of (nodes, list_ops, G_N_ELEMENTS (list_ops)), >=, 3);
  g_autoptr(GraftRuntime) rt = NULL;
  g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, 1, TRUE, &rt);
  g_autoptr(GPtrArray) second = graft_test_run_again (rt, inputs);
  float_graph_assert_outputs_close (file, first, reference, 0);
  float_graph_assert_outputs_close (file, second, reference, 0);
  g_assert_cmpuint (calls_of (rt, list_ops, G_N_ELEMENTS (list_ops)), ==, 0);
  g_assert_cmpuint (graft_test_op_calls (rt, "aten::einsum", NULL, NULL), ==, 2);
}

static GHashTable *
inputs_from (GraftModel *model, const char *module, const char *file)
{
  g_autofree char *path = g_build_filename (models (), module, file, NULL);
  g_autoptr(GError) error = NULL;
  GraftValue *input = graft_model_get_graph (model)->inputs->pdata[0];
  GHashTable *inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (inputs, input->name, graft_npy_read (path, &error));
  g_assert_no_error (error);
  return inputs;
}

/* The steps of F.group_norm's check of the input's sizes (scripted: a
 * product of the sizes in a prim::Loop, compared with 1 in a prim::If),
 * and the calls of them a run added. */
static const char *const norm_check_ops[] = {
  "prim::If", "aten::len", "aten::list", "aten::eq", "aten::lt", "aten::dim",
};

static guint
norm_check_calls (GraftRuntime *rt)
{
  return calls_of (rt, norm_check_ops, G_N_ELEMENTS (norm_check_ops));
}

/* A run of rt at inputs, checked against torch's want: how many prim::Loop
 * and norm check steps it ran. */
static void
run_counting (GraftRuntime *rt, GHashTable *inputs, GraftRtTensor *want, guint *loops, guint *checks)
{
  guint loops_before = graft_test_op_calls (rt, "prim::Loop", NULL, NULL), checks_before = norm_check_calls (rt);
  g_autoptr(GPtrArray) outputs = graft_test_run_again (rt, inputs);
  assert_close_to_torch ("group-norm", outputs, want);
  *loops = graft_test_op_calls (rt, "prim::Loop", NULL, NULL) - loops_before;
  *checks = norm_check_calls (rt) - checks_before;
}

/* Scripted nn.GroupNorm: F.group_norm's loop over the input's sizes and
 * the checks around it are memoised by the input's shape (no step from
 * the third run on), computed again for another shape, and a shape that
 * fails the check raises torch's error after the memo was kept, as does
 * one failing a nested check of the module's whose outer condition holds
 * as before. A loop over the values and a loop filling a list read after
 * it run every time. */
static void
check_group_norm_loops (void)
{
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftRtTensor) torch_y = NULL;
  g_autoptr(GraftModel) model = load ("group-norm", "scripted.pt", &inputs, &torch_y);
  g_autoptr(GHashTable) other = inputs_from (model, "group-norm", "other-x.npy");
  g_autoptr(GHashTable) failing = inputs_from (model, "group-norm", "failing-x.npy");
  g_autofree char *other_y_path = g_build_filename (models (), "group-norm", "other-y.npy", NULL);
  g_autofree char *error_path = g_build_filename (models (), "group-norm", "failing-error.txt", NULL);
  g_autofree char *torch_error = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) other_y = graft_npy_read (other_y_path, &error);
  g_assert_no_error (error);
  g_file_get_contents (error_path, &torch_error, NULL, &error);
  g_assert_no_error (error);

  g_autoptr(GraftRuntime) rt = NULL;
  g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, 1, TRUE, &rt);
  assert_close_to_torch ("group-norm", first, torch_y);
  guint loops_first = graft_test_op_calls (rt, "prim::Loop", NULL, NULL), checks_first = norm_check_calls (rt);
  guint loops[3], checks[3];
  run_counting (rt, inputs, torch_y, &loops[0], &checks[0]);
  run_counting (rt, inputs, torch_y, &loops[1], &checks[1]);
  g_test_message ("prim::Loop steps: %u, %u, %u; the check's: %u, %u, %u", loops_first, loops[0], loops[1],
                  checks_first, checks[0], checks[1]);
  /* the norm's loop, the loop over the values, the one filling a list */
  g_assert_cmpuint (loops_first, ==, 3);
  g_assert_cmpuint (loops[0], ==, 3);
  g_assert_cmpuint (loops[1], ==, 2);
  g_assert_cmpuint (checks_first, >=, 4);
  g_assert_cmpuint (checks[0], ==, checks_first);
  g_assert_cmpuint (checks[1], ==, 0);

  /* another shape: computed again (but for steps whose inputs are as
   * before: the rank's check), then kept for it */
  run_counting (rt, other, other_y, &loops[0], &checks[0]);
  g_assert_cmpuint (loops[0], ==, 3);
  g_assert_cmpuint (checks[0], >=, 3);
  run_counting (rt, other, other_y, &loops[0], &checks[0]);
  run_counting (rt, other, other_y, &loops[1], &checks[1]);
  g_assert_cmpuint (loops[1], ==, 2);
  g_assert_cmpuint (checks[1], ==, 0);

  /* a batch of one 1x1 input fails the check, as in torch */
  g_autoptr(GPtrArray) none = graft_runtime_run (rt, failing, NULL, NULL, NULL, &error);
  g_assert_null (none);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "ValueError"));
  g_assert_nonnull (strstr (error->message, torch_error));
  g_clear_error (&error);
  /* the outer condition of a nested check as before, the inner one not */
  g_autoptr(GHashTable) tall = inputs_from (model, "group-norm", "tall-x.npy");
  g_autoptr(GPtrArray) none_tall = graft_runtime_run (rt, tall, NULL, NULL, NULL, &error);
  g_assert_null (none_tall);
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "ValueError: an input of 7 rows"));
  g_clear_error (&error);
  /* and the runs after it are as before */
  run_counting (rt, other, other_y, &loops[0], &checks[0]);
  run_counting (rt, inputs, torch_y, &loops[0], &checks[0]);
  g_assert_cmpuint (loops[0], ==, 3);
}

int
main (int argc, char **argv)
{
  static const char *const files[] = { "traced.pt", "scripted.pt", "exported.pt2" };
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *name = g_strdup_printf ("/aten-steps/%s", files[i]);
      g_autofree char *shapes = g_strdup_printf ("/aten-steps/other-shapes/%s", files[i]);
      g_test_add_data_func (name, files[i], check_steps);
      /* (export fixes the input's shape) */
      if (!g_str_has_suffix (files[i], ".pt2"))
        g_test_add_data_func (shapes, files[i], check_other_shapes);
    }
  g_test_add_func ("/aten-steps/changed-list", check_changed_list);
  g_test_add_func ("/aten-steps/shape-checks", check_shape_checks);
  g_test_add_func ("/aten-steps/group-norm-loops", check_group_norm_loops);
  g_test_add_data_func ("/aten-steps/tensor-lists/traced.pt", "traced.pt", check_tensor_lists);
  g_test_add_data_func ("/aten-steps/tensor-lists/scripted.pt", "scripted.pt", check_tensor_lists);
  return g_test_run ();
}
