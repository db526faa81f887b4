/* Weights the runtime holds only packed (graft_runtime_get_given_back_bytes):
 * a model read from an ONNX file with y = MatMul (a [batch, K], w [K, N])
 * and z = Gemm (y, wt [N2, N]ᵀ, bias [N2]), run by a runtime that holds
 * the model alone.
 * - After a run at batch 2 the pages of w and wt are given back (the
 *   small bias, read by no packed product, stays); runs at batch 3 and 2
 *   still match a double-precision product.
 * - At the portable SIMD level, whose MatMul and Gemm read B unpacked,
 *   the weights are read in again from the file and the run still
 *   matches; they then stay, at every level.
 * - graft_tensor_get_data() on the model's tensor reads a given-back
 *   weight in again, as it was.
 * - A file rewritten in place after the weights went is an error when a
 *   run needs them again, never a run on other numbers.
 * - A model the caller still holds keeps every weight.
 * - Conv's weights too: x [batch, 32, h, w] → Conv 3×3 (32 → 64) → Relu
 *   → Conv 1×1 (64 → 256), whose kernels keep a Winograd, packed,
 *   small-map or trimmed filter by the map's size. After a run both
 *   weights are given back; runs at other sizes, and at the portable
 *   level (which reads them unpacked, in again from the file), give
 *   the outputs of a runtime that never gave anything back. */
#include <glib/gstdio.h>
#include <string.h>
#include "loader.h"
#include "onnx/writer.h"
#include "runtime/runtime.h"
#include "float-graph.h"
#include "simd-levels.h"

#define K 256
#define N 192
#define N2 128

typedef struct {
  char *dir;
  char *path;
  float w[K * N], wt[N2 * N], bias[N2];
} Fixture;

/* Writes model as f->path in a new directory. */
static void
write_model (Fixture *f, GraftModel *model)
{
  g_autoptr(GError) error = NULL;
  f->dir = g_dir_make_tmp ("graft-given-back-XXXXXX", &error);
  g_assert_no_error (error);
  f->path = g_build_filename (f->dir, "model.onnx", NULL);
  g_assert_true (graft_onnx_write_file (model, f->path, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("given-back");
  graft_model_set_opset (model, "onnx", 17);
  GraftValue *a = graft_graph_ensure_value (g, "a");
  a->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init (&a->shape, 2);
  a->shape.dims[0] = graft_dim_symbolic ("batch");
  a->shape.dims[1] = graft_dim_fixed (K);
  graft_graph_add_input (g, a);
  for (gint64 i = 0; i < K * N; i++)
    f->w[i] = float_graph_value_at (i, 1);
  for (gint64 i = 0; i < N2 * N; i++)
    f->wt[i] = float_graph_value_at (i, 2);
  for (gint64 i = 0; i < N2; i++)
    f->bias[i] = float_graph_value_at (i, 3);
  gint64 dw[] = { K, N }, dwt[] = { N2, N }, db[] = { N2 };
  float_graph_add_initializer (g, "w", 2, dw, f->w);
  float_graph_add_initializer (g, "wt", 2, dwt, f->wt);
  float_graph_add_initializer (g, "bias", 1, db, f->bias);
  float_graph_add_node (g, "MatMul", "a", "w", NULL, "y");
  GraftNode *gemm = float_graph_add_node (g, "Gemm", "y", "wt", "bias", "z");
  graft_node_add_attribute (gemm, graft_attribute_new_int ("transB", 1));
  graft_graph_add_output (g, graft_graph_ensure_value (g, "z"));
  graft_model_set_graph (model, g);
  write_model (f, model);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_unlink (f->path);
  g_rmdir (f->dir);
  g_free (f->path);
  g_free (f->dir);
}

/* A runtime over the model file; *model_out (if given) keeps a reference. */
static GraftRuntime *
open_runtime (Fixture *f, GraftModel **model_out)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (f->path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftRuntime *rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  if (model_out)
    *model_out = g_object_ref (model);
  return rt;
}

/* Runs at batch rows and checks z against the double product; FALSE
 * with *error set when the run fails. */
static gboolean
run_and_check (Fixture *f, GraftRuntime *rt, gint64 rows, GError **error)
{
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  gint64 da[] = { rows, K };
  GraftRtTensor *a = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 2, da, NULL);
  float *av = a->data;
  for (gint64 i = 0; i < rows * K; i++)
    av[i] = float_graph_value_at (i, 10 + rows);
  g_hash_table_insert (inputs, (gpointer) "a", a);
  g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
  if (out == NULL)
    return FALSE;
  GraftRtTensor *z = out->pdata[0];
  g_assert_cmpint (z->dims[0], ==, rows);
  g_assert_cmpint (z->dims[1], ==, N2);
  for (gint64 r = 0; r < rows; r++)
    {
      double y[N];
      for (gint64 n = 0; n < N; n++)
        {
          y[n] = 0;
          for (gint64 k = 0; k < K; k++)
            y[n] += (double) av[r * K + k] * f->w[k * N + n];
        }
      for (gint64 m = 0; m < N2; m++)
        {
          double expected = f->bias[m];
          for (gint64 n = 0; n < N; n++)
            expected += y[n] * f->wt[m * N + n];
          g_assert_cmpfloat_with_epsilon (((const float *) z->data)[r * N2 + m], expected, 1e-3);
        }
    }
  return TRUE;
}

static const guint64 packed_bytes = (K * N + N2 * N) * sizeof (float);

/* The packed products run from AVX2 on; at AVX2 a single row goes to
 * sgemv, which reads B unpacked. */
static gboolean
packs_here (void)
{
  return graft_test_use_simd_level (GRAFT_SIMD_AVX2);
}

/* A runtime holding the model alone, after a run at batch 2 that gave
 * both weights back. */
static GraftRuntime *
open_run_once (Fixture *f)
{
  g_autoptr(GError) error = NULL;
  GraftRuntime *rt = open_runtime (f, NULL);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, 0);
  g_assert_true (run_and_check (f, rt, 2, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, packed_bytes);
  return rt;
}

static void
test_runs_at_other_shapes (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!packs_here ())
    return;
  g_autoptr(GraftRuntime) rt = open_run_once (f);
  g_assert_true (run_and_check (f, rt, 3, &error));
  g_assert_true (run_and_check (f, rt, 2, &error));
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, packed_bytes);

  /* one row at AVX2, then portable: B read unpacked, in again from the file */
  g_assert_true (run_and_check (f, rt, 1, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, 0);
  graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
  g_assert_true (run_and_check (f, rt, 3, &error));
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_assert_true (run_and_check (f, rt, 2, &error));
  g_assert_true (run_and_check (f, rt, 1, &error));
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, 0);
}

static void
test_model_reads_again (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!packs_here ())
    return;
  g_autoptr(GraftRuntime) rt = open_run_once (f);
  GraftGraph *g = graft_model_get_graph (graft_runtime_get_model (rt));
  GraftTensor *w = graft_graph_ensure_value (g, "w")->initializer;
  g_assert_true (w->given_back);
  GBytes *bytes = graft_tensor_get_data (w, &error);
  g_assert_no_error (error);
  g_assert_false (w->given_back);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), f->w, sizeof f->w);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, N2 * N * sizeof (float));
  g_assert_true (run_and_check (f, rt, 3, &error));
}

/* Flips bits of the model file from fraction from to to of its length,
 * in place, as a tool that does not write atomically would. */
static void
rewrite_in_place (Fixture *f, double from, double to)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize length;
  g_assert_true (g_file_get_contents (f->path, &contents, &length, &error));
  for (gsize i = (gsize) (length * from); i < (gsize) (length * to); i++)
    contents[i] ^= 0x40;
  FILE *file = fopen (f->path, "r+b");
  g_assert_nonnull (file);
  g_assert_cmpuint (fwrite (contents, 1, length, file), ==, length);
  fclose (file);
}

static void
test_file_changed (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!packs_here ())
    return;
  g_autoptr(GraftRuntime) rt = open_run_once (f);

  rewrite_in_place (f, 0.25, 0.5);

  graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
  g_assert_false (run_and_check (f, rt, 2, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "changed since it was read"));
  g_clear_error (&error);
  GraftGraph *g = graft_model_get_graph (graft_runtime_get_model (rt));
  g_assert_null (graft_tensor_get_data (graft_graph_ensure_value (g, "w")->initializer, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
}

static void
test_model_held_elsewhere (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = NULL;
  if (!packs_here ())
    return;
  g_autoptr(GraftRuntime) rt = open_runtime (f, &model);
  g_assert_true (run_and_check (f, rt, 2, &error));
  g_assert_true (run_and_check (f, rt, 3, &error));
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), ==, 0);
}

#define CONV_C 32
#define CONV_M1 64
#define CONV_M2 256

/* the weight arrays of Fixture stay unused */
static void
conv_fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("given-back-conv");
  graft_model_set_opset (model, "onnx", 17);
  GraftValue *x = graft_graph_ensure_value (g, "x");
  x->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init (&x->shape, 4);
  x->shape.dims[0] = graft_dim_symbolic ("batch");
  x->shape.dims[1] = graft_dim_fixed (CONV_C);
  x->shape.dims[2] = graft_dim_symbolic ("h");
  x->shape.dims[3] = graft_dim_symbolic ("w");
  graft_graph_add_input (g, x);
  g_autofree float *w1 = g_new (float, CONV_M1 * CONV_C * 9);
  g_autofree float *w2 = g_new (float, CONV_M2 * CONV_M1);
  float b1[CONV_M1], b2[CONV_M2];
  for (gint64 i = 0; i < CONV_M1 * CONV_C * 9; i++)
    w1[i] = float_graph_value_at (i, 4) * 0.2f;
  for (gint64 i = 0; i < CONV_M2 * CONV_M1; i++)
    w2[i] = float_graph_value_at (i, 5) * 0.2f;
  for (gint64 i = 0; i < CONV_M1; i++)
    b1[i] = float_graph_value_at (i, 6);
  for (gint64 i = 0; i < CONV_M2; i++)
    b2[i] = float_graph_value_at (i, 7);
  gint64 dw1[] = { CONV_M1, CONV_C, 3, 3 }, dw2[] = { CONV_M2, CONV_M1, 1, 1 }, db1[] = { CONV_M1 }, db2[] = { CONV_M2 };
  gint64 pads1[] = { 1, 1, 1, 1 };
  float_graph_add_initializer (g, "w1", 4, dw1, w1);
  float_graph_add_initializer (g, "b1", 1, db1, b1);
  float_graph_add_initializer (g, "w2", 4, dw2, w2);
  float_graph_add_initializer (g, "b2", 1, db2, b2);
  GraftNode *conv1 = float_graph_add_node (g, "Conv", "x", "w1", "b1", "c1");
  graft_node_add_attribute (conv1, graft_attribute_new_ints ("pads", pads1, 4));
  float_graph_add_node (g, "Relu", "c1", NULL, NULL, "r1");
  float_graph_add_node (g, "Conv", "r1", "w2", "b2", "y");
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  write_model (f, model);
}

static GPtrArray *
conv_run (GraftRuntime *rt, gint64 batch, gint64 side)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  gint64 dx[] = { batch, CONV_C, side, side };
  GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dx, NULL);
  for (gint64 i = 0; i < x->numel; i++)
    ((float *) x->data)[i] = float_graph_value_at (i, 20 + side);
  g_hash_table_insert (inputs, (gpointer) "x", x);
  GPtrArray *out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return out;
}

/* Runs both runtimes at batch × side × side and compares their outputs. */
static void
conv_run_both (GraftRuntime *alone, GraftRuntime *reference, gint64 batch, gint64 side)
{
  g_autoptr(GPtrArray) got = conv_run (alone, batch, side);
  g_autoptr(GPtrArray) want = conv_run (reference, batch, side);
  g_autofree char *what = g_strdup_printf ("given-back conv at %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT "², %s", batch,
                                           side, graft_simd_level_to_string (graft_simd_get_level ()));
  float_graph_assert_outputs_close (what, got, want, 1e-6);
}

static void
test_conv_weights (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!graft_test_use_simd_level (GRAFT_SIMD_AVX2))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_autoptr(GraftRuntime) alone = open_runtime (f, NULL);
  g_autoptr(GraftModel) held = NULL;
  g_autoptr(GraftRuntime) reference = open_runtime (f, &held);

  const guint64 both = (CONV_M1 * CONV_C * 9 + CONV_M2 * CONV_M1) * sizeof (float);
  conv_run_both (alone, reference, 2, 16);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (alone), ==, both);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (reference), ==, 0);
  /* the small-map, trimmed (a 3×3 on 1×1 reads its centre tap) and
   * other-batch paths keep other data, made from the weights read in again */
  static const gint64 sizes[][2] = { { 2, 3 }, { 1, 1 }, { 3, 7 }, { 2, 16 }, { 1, 12 } };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    conv_run_both (alone, reference, sizes[i][0], sizes[i][1]);
  graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
  conv_run_both (alone, reference, 2, 16);
  conv_run_both (alone, reference, 1, 5);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  conv_run_both (alone, reference, 2, 16);
  conv_run_both (alone, reference, 2, 3);
}

/* A file rewritten in place after Conv's weights went: an error at the
 * next run that reads them, never other numbers. */
static void
test_conv_file_changed (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!graft_test_use_simd_level (GRAFT_SIMD_AVX2))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_autoptr(GraftRuntime) rt = open_runtime (f, NULL);
  g_autoptr(GPtrArray) first = conv_run (rt, 2, 16);
  g_assert_cmpuint (graft_runtime_get_given_back_bytes (rt), >, 0);
  rewrite_in_place (f, 0.25, 0.75);

  gint64 dx[] = { 2, CONV_C, 16, 16 };
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (inputs, (gpointer) "x", graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dx, NULL));
  graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
  g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_null (out);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "changed since it was read"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/runtime/given-back/other-shapes", Fixture, NULL, fixture_set_up, test_runs_at_other_shapes,
              fixture_tear_down);
  g_test_add ("/runtime/given-back/model-reads-again", Fixture, NULL, fixture_set_up, test_model_reads_again,
              fixture_tear_down);
  g_test_add ("/runtime/given-back/file-changed", Fixture, NULL, fixture_set_up, test_file_changed,
              fixture_tear_down);
  g_test_add ("/runtime/given-back/model-held-elsewhere", Fixture, NULL, fixture_set_up, test_model_held_elsewhere,
              fixture_tear_down);
  g_test_add ("/runtime/given-back/conv-weights", Fixture, NULL, conv_fixture_set_up, test_conv_weights,
              fixture_tear_down);
  g_test_add ("/runtime/given-back/conv-file-changed", Fixture, NULL, conv_fixture_set_up, test_conv_file_changed,
              fixture_tear_down);
  return g_test_run ();
}
