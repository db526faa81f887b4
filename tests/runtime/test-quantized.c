/* Quantized models and the int8 GEMM under them.
 *
 * /quantized/qgemm/LEVEL: graft_qgemm_s16 at every SIMD level this CPU has
 * against a plain triple loop, on random edge shapes (1×1, odd K, tile
 * tails) with operands at the int16 extremes a zero-point-subtracted
 * 8-bit value can reach (±255): the results must be equal.
 * /quantized/qgemm-u8s8/LEVEL: the same for the vpmaddubsw byte GEMM
 * (graft_qgemm_u8s8) at its exactness bounds, 7-bit weights (±64) by
 * 0..255; QLinearConv takes it for such filters, so the whole-network
 * avx2-vs-portable tests below also compare it with the int16 path.
 *
 * /quantized/conv-integer-random/LEVEL: ConvInteger graphs on 48 random
 * edge shapes (odd sizes, 1×1 maps, strides 1–3 with stride-2 rows wide
 * enough for the vector gathers, asymmetric pads, groups, 7×7 kernels;
 * uint8/int8 x with zero points 0, 128, 255 or random; per-tensor and
 * per-channel weight zero points; 7-bit filters, which take the byte
 * GEMM, and full-range ones) at 1 and 2 threads, each run twice (the
 * second with the kept packed filter): the int32 outputs must equal an
 * exact 64-bit loop. /quantized/dynamic-quantize/avx2-vs-portable:
 * DynamicQuantizeLinear's AVX2 loops against the portable ones on random
 * lengths, signs, all-zero input and rounding ties: bit-identical; and
 * the int32 → float32 Cast loop against the round trip through double.
 *
 * /quantized/resnet18_FORMAT/avx2-vs-portable: the whole quantized
 * network (every QLinearConv/ConvInteger shape of ResNet-18, the
 * requantization, QGemm/MatMulInteger) at the AVX2 level and at the
 * portable one: the logits must be bit-identical.
 *
 * /quantized/resnet18_FORMAT-vs-onnxruntime: ResNet-18 (random weights)
 * quantized by onnxruntime's quantize_static (QDQ and QOperator formats)
 * and quantize_dynamic (tests/fixtures/make-quantized-models.py), run in
 * Graft and in onnxruntime on the same input. Integer products are
 * exact in both (the static models use reduce_range, see the fixture
 * script); both requantize with round-half-to-even but may form a float
 * product in a different order, so a value on a rounding boundary can
 * differ by one quantum, and that ±1 travels on through later layers.
 * Asserted on the float logits, and that the two top-1 classes agree
 * for every image:
 * - static (QDQ, QOperator; the logits are dequantized uint8): the largest
 *   difference is at most STATIC_QUANTA output steps (the smallest gap
 *   between distinct onnxruntime logits, a multiple of the step), the
 *   mean at most a quarter step;
 * - dynamic (float logits from MatMulInteger): the largest difference at
 *   most DYNAMIC_RELATIVE of the largest logit.
 *
 * /quantized/qdq-ops/TYPE/fused-vs-float: small QDQ models
 * (tests/fixtures/make-qdq-ops.py: Conv with per-channel weights and an
 * int32 bias, grouped Conv, MaxPool, Add, GlobalAveragePool, Flatten,
 * Gemm; uint8 and int8 activations) run with the runtime's QDQ fusion
 * (qdq-fusion.h) and with an observer attached (the float path as written):
 * every pattern must be fused (its QuantizeLinear never runs), every
 * output within one quantum of the float path, MaxPool and Flatten's
 * exactly equal, and the fused outputs bit-identical at the portable
 * SIMD level. /quantized/resnet18_qdq/fused: every pattern of the QDQ
 * ResNet-18 fused, logits within STATIC_QUANTA steps of the float path.
 * /quantized/resnet18_dynamic/fused: quantize_dynamic's convolutions
 * (ConvInteger → Cast → Mul → Add …) all fused, the logits those of the
 * nodes run one by one, bit for bit.
 *
 * /quantized/max-pool-8bit: the 8-bit MaxPool kernel against the float
 * one on the same values, random shapes, strides, pads, ceil_mode. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "loader.h"
#include "runtime/kernels/qlinear.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "simd-levels.h"
#include "../test-python.h"
#include "../test-scratch.h"

#define STATIC_QUANTA 2
#define DYNAMIC_RELATIVE 1e-5

static char *models_dir;

/* ---- the GEMM against a triple loop ---- */

/* A value in [lo, hi], the ends half of the time. */
static gint
random_operand (GRand *rng, gint lo, gint hi)
{
  return g_rand_boolean (rng) ? g_rand_int_range (rng, lo, hi + 1) : (g_rand_boolean (rng) ? lo : hi);
}

/* bytes: graft_qgemm_u8s8 on a in [-64, 64] and b in [0, 255] (the
 * bounds within which vpmaddubsw is exact), else graft_qgemm_s16 on
 * operands in [-255, 255]. */
static void
check_qgemm_shape (gint64 M, gint64 N, gint64 K, GRand *rng, gboolean bytes)
{
  g_autofree gint16 *a = g_new (gint16, MAX (M * K, 1));
  g_autofree gint16 *b = g_new (gint16, MAX (K * N, 1));
  gint64 ldc = N + 3;   /* a row stride wider than the row */
  g_autofree gint32 *c = g_new (gint32, MAX (M * ldc, 1));
  g_autofree gint32 *want = g_new0 (gint32, MAX (M * N, 1));
  for (gint64 i = 0; i < M * K; i++)
    a[i] = bytes ? random_operand (rng, -64, 64) : random_operand (rng, -255, 255);
  for (gint64 i = 0; i < K * N; i++)
    b[i] = bytes ? random_operand (rng, 0, 255) : random_operand (rng, -255, 255);
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      for (gint64 k = 0; k < K; k++)
        want[i * N + j] += a[i * K + k] * b[k * N + j];
  for (gint64 i = 0; i < M * ldc; i++)
    c[i] = 0x5a5a5a5a;
  if (bytes)
    {
      g_autofree gint8 *a8 = g_new (gint8, MAX (M * K, 1));
      g_autofree guint8 *b8 = g_new (guint8, MAX (K * N, 1));
      for (gint64 i = 0; i < M * K; i++)
        a8[i] = a[i];
      for (gint64 i = 0; i < K * N; i++)
        b8[i] = b[i];
      graft_qgemm_u8s8 (NULL, M, N, K, a8, b8, c, ldc);
    }
  else
    graft_qgemm_s16 (NULL, M, N, K, a, b, c, ldc);
  for (gint64 i = 0; i < M; i++)
    {
      for (gint64 j = 0; j < N; j++)
        if (c[i * ldc + j] != want[i * N + j])
          g_error ("M=%" G_GINT64_FORMAT " N=%" G_GINT64_FORMAT " K=%" G_GINT64_FORMAT ": c[%" G_GINT64_FORMAT
                   "][%" G_GINT64_FORMAT "] = %d, want %d", M, N, K, i, j, c[i * ldc + j], want[i * N + j]);
      for (gint64 j = N; j < ldc; j++)
        g_assert_cmpint (c[i * ldc + j], ==, 0x5a5a5a5a);
    }
}

static void
qgemm_shapes (GraftSimdLevel level, gboolean bytes)
{
  if (!graft_test_use_simd_level (level))
    return;
  g_autoptr(GRand) rng = g_rand_new_with_seed (17);
  static const gint64 sizes[] = { 1, 2, 3, 4, 5, 7, 15, 16, 17, 33, 64 };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    for (guint j = 0; j < G_N_ELEMENTS (sizes); j++)
      for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
        check_qgemm_shape (sizes[i], sizes[j], sizes[k], rng, bytes);
  /* Long sums: K of a 3×3×512 window, one past it (odd), and three past
   * (not a multiple of the byte path's 4). */
  check_qgemm_shape (5, 19, 4608, rng, bytes);
  check_qgemm_shape (3, 17, 4609, rng, bytes);
  check_qgemm_shape (7, 33, 4611, rng, bytes);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

static void
test_qgemm (gconstpointer data)
{
  qgemm_shapes (GPOINTER_TO_INT (data), FALSE);
}

static void
test_qgemm_u8s8 (gconstpointer data)
{
  qgemm_shapes (GPOINTER_TO_INT (data), TRUE);
}

/* ---- quantized ResNet-18 against onnxruntime ---- */

static int
compare_floats (gconstpointer a, gconstpointer b)
{
  float x = *(const float *) a, y = *(const float *) b;
  return (x > y) - (x < y);
}

/* The smallest gap between distinct values of t: for dequantized logits
 * a multiple of the quantization step. */
static double
smallest_step (const GraftRtTensor *t)
{
  g_autofree float *sorted = g_memdup2 (t->data, sizeof (float) * t->numel);
  qsort (sorted, t->numel, sizeof (float), compare_floats);
  double step = INFINITY;
  for (gint64 i = 1; i < t->numel; i++)
    if (sorted[i] > sorted[i - 1])
      step = MIN (step, (double) sorted[i] - sorted[i - 1]);
  return step;
}

static gint64
argmax (const float *row, gint64 n)
{
  gint64 best = 0;
  for (gint64 i = 1; i < n; i++)
    if (row[i] > row[best])
      best = i;
  return best;
}

static GraftRtTensor *
random_image (void)
{
  const gint64 dims[] = { 2, 3, 224, 224 };
  GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dims, NULL);
  g_autoptr(GRand) rng = g_rand_new_with_seed (42);
  for (gint64 i = 0; i < x->numel; i++)
    ((float *) x->data)[i] = g_rand_double_range (rng, -1, 1);
  return x;
}

typedef struct {
  const char *name;
  gboolean quantized_logits;
  /* Its convolutions run in float between QuantizeLinear/DequantizeLinear:
   * the float conv sums in another order at each SIMD level, so a value on
   * a rounding boundary may land one quantum away, as against onnxruntime. */
  gboolean float_compute;
} QuantizedCase;

/* The model's first output for `input` = x, on 2 threads. */
static GraftRtTensor *
run_model (const char *model_path, GraftRtTensor *x)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_n_threads (rt, 2);
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (inputs, "input", x);
  g_autoptr(GPtrArray) outs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return graft_rt_tensor_ref (outs->pdata[0]);
}

static void
compare_with_ort (gconstpointer data)
{
  const QuantizedCase *qcase = data;
  const char *name = qcase->name;
  g_autofree char *test_python = graft_test_python ();
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *model_path = g_strdup_printf ("%s/%s.onnx", models_dir, name);
  g_autofree char *tmp = graft_test_scratch_dir ("graft-quantized-XXXXXX", NULL);
  g_autofree char *input_path = g_build_filename (tmp, "input.npy", NULL);
  g_autofree char *ort_dir = g_build_filename (tmp, "ort", NULL);
  g_autofree char *script = g_build_filename (src, "tests", "runtime", "ort-run.py", NULL);
  g_autoptr(GError) error = NULL;

  g_autoptr(GraftRtTensor) x = random_image ();
  g_assert_true (graft_npy_write (input_path, x, &error));

  g_autofree char *feed = g_strdup_printf ("input=%s", input_path);
  const char *argv[] = { test_python, script, model_path, "--input", feed, "-o", ort_dir, NULL };
  g_assert_true (graft_test_spawn (argv, &error));
  g_assert_no_error (error);
  g_autofree char *ort_out = g_build_filename (ort_dir, "output.npy", NULL);
  g_autoptr(GraftRtTensor) want = graft_npy_read (ort_out, &error);
  g_assert_no_error (error);

  g_autoptr(GraftRtTensor) got = run_model (model_path, x);
  g_assert_true (graft_rt_tensor_same_shape (got, want));
  g_assert_cmpint (got->dtype, ==, GRAFT_DTYPE_FLOAT32);

  double step = smallest_step (want), max_diff = 0, sum_diff = 0, max_ref = 0;
  for (gint64 i = 0; i < want->numel; i++)
    {
      double a = ((float *) got->data)[i], b = ((float *) want->data)[i];
      max_ref = MAX (max_ref, fabs (b));
      max_diff = MAX (max_diff, fabs (a - b));
      sum_diff += fabs (a - b);
    }
  double mean_diff = sum_diff / want->numel;
  gint64 classes = want->dims[1];
  g_test_message ("%s: step %g, max |graft - onnxruntime| = %g (%.2f steps), mean %g (%.3f steps), max |ort| = %g",
                  name, step, max_diff, max_diff / step, mean_diff, mean_diff / step, max_ref);
  g_assert_cmpfloat (max_ref, >, 0);
  if (qcase->quantized_logits)
    {
      g_assert_cmpfloat (max_diff, <=, STATIC_QUANTA * step * (1 + 1e-5));
      g_assert_cmpfloat (mean_diff, <=, 0.25 * step);
    }
  else
    g_assert_cmpfloat (max_diff, <=, DYNAMIC_RELATIVE * max_ref);
  for (gint64 n = 0; n < want->dims[0]; n++)
    g_assert_cmpint (argmax ((float *) got->data + n * classes, classes), ==,
                     argmax ((float *) want->data + n * classes, classes));

  g_remove (ort_out);
  g_rmdir (ort_dir);
  g_remove (input_path);
  g_rmdir (tmp);
}

static GraftRtTensor *
run_at_level (const char *model_path, GraftRtTensor *x, GraftSimdLevel level)
{
  graft_simd_set_max_level (level);
  GraftRtTensor *out = run_model (model_path, x);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  return out;
}

static void
compare_simd_levels (gconstpointer data)
{
  const QuantizedCase *qcase = data;
  if (graft_simd_cpu_level () < GRAFT_SIMD_AVX2)
    {
      g_test_skip ("needs avx2");
      return;
    }
  g_autofree char *model_path = g_strdup_printf ("%s/%s.onnx", models_dir, qcase->name);
  g_autoptr(GraftRtTensor) x = random_image ();
  g_autoptr(GraftRtTensor) portable = run_at_level (model_path, x, GRAFT_SIMD_PORTABLE);
  g_autoptr(GraftRtTensor) avx2 = run_at_level (model_path, x, GRAFT_SIMD_AVX2);
  g_assert_true (graft_rt_tensor_same_shape (portable, avx2));
  if (!qcase->float_compute)
    {
      g_assert_cmpmem (portable->data, portable->numel * sizeof (float), avx2->data, avx2->numel * sizeof (float));
      return;
    }
  double step = smallest_step (portable), max_diff = 0, sum_diff = 0;
  for (gint64 i = 0; i < portable->numel; i++)
    {
      double diff = fabs (((float *) portable->data)[i] - ((float *) avx2->data)[i]);
      max_diff = MAX (max_diff, diff);
      sum_diff += diff;
    }
  g_test_message ("%s: max |portable - avx2| = %.2f steps, mean %.3f steps", qcase->name,
                  max_diff / step, sum_diff / portable->numel / step);
  g_assert_cmpfloat (max_diff, <=, 1 * step * (1 + 1e-5));
  g_assert_cmpfloat (sum_diff / portable->numel, <=, 0.25 * step);
}

/* ---- QDQ fusion against the float path ---- */

typedef struct {
  GPtrArray *outputs;
  guint fused;          /* QuantizeLinear nodes that did not run */
  guint quantize;       /* QuantizeLinear nodes */
  guint conv_integer_fused;  /* ConvInteger nodes run as graft::ConvIntegerToFloat */
} QdqRun;

static void
qdq_run_clear (QdqRun *r)
{
  g_clear_pointer (&r->outputs, g_ptr_array_unref);
}

static void
observe_nothing (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
}

/* Runs model_path on (name, tensor) inputs, with QDQ fusion or without:
 * an observer sees every value as the graph names it, so with one
 * attached the plan runs as written (the float path). */
static void
run_qdq (const char *model_path, GHashTable *inputs, gboolean fuse, QdqRun *r)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  if (!fuse)
    graft_runtime_set_observer (rt, observe_nothing, NULL);
  graft_runtime_set_n_threads (rt, 2);
  graft_runtime_set_profiling (rt, TRUE);
  r->outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  r->fused = r->quantize = r->conv_integer_fused = 0;
  GArray *timings = graft_runtime_get_timings (rt);
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      if (strcmp (t->node->op, "onnx::ConvInteger") == 0 && graft_node_timing_is_fused (t))
        {
          g_assert_cmpstr (t->fused_op, ==, "graft::ConvIntegerToFloat");
          r->conv_integer_fused++;
        }
      if (strcmp (t->node->op, "onnx::QuantizeLinear") != 0)
        continue;
      r->quantize++;
      r->fused += t->calls == 0;
    }
}

static GraftRtTensor *
random_floats (int rank, const gint64 *dims, GRand *rng)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dims, NULL);
  for (gint64 i = 0; i < t->numel; i++)
    ((float *) t->data)[i] = g_rand_double_range (rng, -2, 2);
  return t;
}

static void
test_qdq_ops (gconstpointer data)
{
  const char *type = data;
  g_autofree char *model_path = g_strdup_printf ("%s/qdq_ops_%s.onnx", models_dir, type);
  g_autoptr(GRand) rng = g_rand_new_with_seed (5);
  gint64 xd[] = { 2, 5, 9, 11 }, yd[] = { 2, 7, 5, 6 };
  g_autoptr(GraftRtTensor) x = random_floats (4, xd, rng);
  g_autoptr(GraftRtTensor) y = random_floats (4, yd, rng);
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (inputs, "x", x);
  g_hash_table_insert (inputs, "y", y);
  QdqRun fused, unfused, portable;
  run_qdq (model_path, inputs, TRUE, &fused);
  run_qdq (model_path, inputs, FALSE, &unfused);
  graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
  run_qdq (model_path, inputs, TRUE, &portable);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);

  /* conv1, conv2, pool, sum, gap, flat, fc; the two QuantizeLinear of
   * the float inputs stay */
  g_assert_cmpuint (fused.quantize, ==, 9);
  g_assert_cmpuint (fused.fused, ==, 7);
  g_assert_cmpuint (unfused.fused, ==, 0);
  g_assert_cmpuint (fused.outputs->len, ==, 7);
  for (guint k = 0; k < fused.outputs->len; k++)
    {
      GraftRtTensor *a = fused.outputs->pdata[k], *b = unfused.outputs->pdata[k], *p = portable.outputs->pdata[k];
      g_assert_true (graft_rt_tensor_same_shape (a, b));
      g_assert_cmpint (a->dtype, ==, b->dtype);
      g_assert_cmpmem (a->data, a->nbytes, p->data, p->nbytes);
      gint64 max_diff = 0, differ = 0;
      for (gint64 i = 0; i < a->numel; i++)
        {
          gint64 d = ABS (graft_rt_tensor_get_i64 (a, i) - graft_rt_tensor_get_i64 (b, i));
          max_diff = MAX (max_diff, d);
          differ += d != 0;
        }
      g_test_message ("%s output %u: %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " values differ, by at most %"
                      G_GINT64_FORMAT, type, k, differ, a->numel, max_diff);
      /* MaxPool (2) and Flatten (5) move values: exact */
      g_assert_cmpint (max_diff, <=, k == 2 || k == 5 ? 0 : 1);
    }
  qdq_run_clear (&fused);
  qdq_run_clear (&unfused);
  qdq_run_clear (&portable);
}

/* The model NAME of models_dir on a random image, fused and not. */
static void
run_image_both_ways (const char *name, QdqRun *fused, QdqRun *unfused)
{
  g_autofree char *model_path = g_strdup_printf ("%s/%s.onnx", models_dir, name);
  g_autoptr(GraftRtTensor) x = random_image ();
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (inputs, "input", x);
  run_qdq (model_path, inputs, TRUE, fused);
  run_qdq (model_path, inputs, FALSE, unfused);
}

static void
test_resnet18_qdq_fused (void)
{
  QdqRun fused, unfused;
  run_image_both_ways ("resnet18_qdq", &fused, &unfused);
  /* 20 Conv, 8 Add, MaxPool, GlobalAveragePool, Flatten, Gemm; the
   * input's QuantizeLinear stays */
  g_assert_cmpuint (fused.quantize, ==, 33);
  g_assert_cmpuint (fused.fused, ==, 32);
  GraftRtTensor *a = fused.outputs->pdata[0], *b = unfused.outputs->pdata[0];
  g_assert_true (graft_rt_tensor_same_shape (a, b));
  double step = smallest_step (b), max_diff = 0;
  for (gint64 i = 0; i < a->numel; i++)
    max_diff = MAX (max_diff, fabs (((float *) a->data)[i] - ((float *) b->data)[i]));
  g_test_message ("resnet18_qdq: max |fused - float path| = %.2f steps", max_diff / step);
  g_assert_cmpfloat (max_diff, <=, STATIC_QUANTA * step * (1 + 1e-5));
  gint64 classes = a->dims[1];
  for (gint64 n = 0; n < a->dims[0]; n++)
    g_assert_cmpint (argmax ((float *) a->data + n * classes, classes), ==,
                     argmax ((float *) b->data + n * classes, classes));
  qdq_run_clear (&fused);
  qdq_run_clear (&unfused);
}

/* quantize_dynamic's ConvInteger → Cast → Mul → Add [→ Add] [→ Relu]
 * patterns, fused, give the nodes' own output bit for bit: all 20
 * convolutions fused (the three whose block adds a downsample branch
 * computed after them up to their bias). */
static void
test_resnet18_dynamic_fused (void)
{
  QdqRun fused, unfused;
  run_image_both_ways ("resnet18_dynamic", &fused, &unfused);
  g_assert_cmpuint (fused.conv_integer_fused, ==, 20);
  g_assert_cmpuint (unfused.conv_integer_fused, ==, 0);
  GraftRtTensor *a = fused.outputs->pdata[0], *b = unfused.outputs->pdata[0];
  g_assert_true (graft_rt_tensor_same_shape (a, b));
  g_assert_cmpmem (a->data, a->nbytes, b->data, b->nbytes);
  qdq_run_clear (&fused);
  qdq_run_clear (&unfused);
}

/* ---- 8-bit MaxPool against the float kernel ---- */

static GraftRtTensor *
run_max_pool (GraftNode *node, GraftRtTensor *x)
{
  const GraftOpSchema *schema = graft_op_registry_lookup ("onnx::MaxPool", 17);
  GraftRtTensor *inputs[1] = { x }, *outputs[1] = { NULL };
  GraftInferValue inferred[1] = { 0 };
  GraftKernelContext ctx = { node, schema, 17, 1, inputs, 1, outputs, inferred, NULL };
  g_autoptr(GError) error = NULL;
  g_assert_true (schema->kernel (&ctx, &error));
  g_assert_no_error (error);
  return outputs[0];
}

static void
test_max_pool_8bit (void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed (11);
  for (int round = 0; round < 200; round++)
    {
      g_autoptr(GraftGraph) graph = graft_graph_new ("pool");
      GraftNode *node = graft_graph_add_node (graph, NULL, "MaxPool", "pool");
      gint64 kernel[2], strides[2], pads[4];
      gint64 dims[4] = { g_rand_int_range (rng, 1, 3), g_rand_int_range (rng, 1, 5), 0, 0 };
      for (int d = 0; d < 2; d++)
        {
          kernel[d] = g_rand_int_range (rng, 1, 5);
          strides[d] = g_rand_int_range (rng, 1, 4);
          pads[d] = g_rand_int_range (rng, 0, kernel[d]);
          pads[d + 2] = g_rand_int_range (rng, 0, kernel[d]);
          dims[d + 2] = g_rand_int_range (rng, kernel[d], 40);
        }
      graft_node_add_attribute (node, graft_attribute_new_ints ("kernel_shape", kernel, 2));
      graft_node_add_attribute (node, graft_attribute_new_ints ("strides", strides, 2));
      graft_node_add_attribute (node, graft_attribute_new_ints ("pads", pads, 4));
      graft_node_add_attribute (node, graft_attribute_new_int ("ceil_mode", g_rand_int_range (rng, 0, 2)));
      GraftDType dtype = round % 2 ? GRAFT_DTYPE_INT8 : GRAFT_DTYPE_UINT8;
      g_autoptr(GraftRtTensor) x = graft_rt_tensor_new (dtype, 4, dims, NULL);
      for (gint64 i = 0; i < x->numel; i++)
        graft_rt_tensor_set_i64 (x, i, g_rand_int_range (rng, dtype == GRAFT_DTYPE_INT8 ? -128 : 0,
                                                          dtype == GRAFT_DTYPE_INT8 ? 128 : 256));
      g_autoptr(GraftRtTensor) xf = graft_rt_tensor_cast (x, GRAFT_DTYPE_FLOAT32, NULL);
      g_autoptr(GraftRtTensor) got = run_max_pool (node, x);
      g_autoptr(GraftRtTensor) want = run_max_pool (node, xf);
      g_assert_cmpint (got->dtype, ==, dtype);
      g_assert_true (graft_rt_tensor_same_shape (got, want));
      for (gint64 i = 0; i < got->numel; i++)
        g_assert_cmpint (graft_rt_tensor_get_i64 (got, i), ==, (gint64) ((float *) want->data)[i]);
    }
}

/* ---- ConvInteger on random edge shapes against an exact loop ---- */

typedef struct {
  gint64 n, c, h, w, m, kh, kw, stride, dilation, pad[4], group;
  GraftDType x_dtype, w_dtype;
  gint64 x_zero;
  gboolean per_channel, small_weights;
} ConvIntegerCase;

static void
add_8bit_initializer (GraftGraph *g, const char *name, GraftDType dtype, int rank, const gint64 *dims,
                      const guint8 *bytes, gint64 n)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  GraftTensor *t = graft_tensor_new (name, dtype, rank, dims);
  g_autoptr(GBytes) data = g_bytes_new (bytes, n);
  v->dtype = dtype;
  graft_shape_init_fixed (&v->shape, rank, dims);
  g_assert_true (graft_tensor_set_data (t, data, NULL));
  graft_graph_add_initializer (g, v, t);
}

static gint64
byte_value (GraftDType dtype, guint8 b)
{
  return dtype == GRAFT_DTYPE_INT8 ? (gint8) b : b;
}

/* y[n][m][oh][ow] by the definition, in 64-bit integers. */
static gint64
conv_integer_reference (const ConvIntegerCase *c, const guint8 *x, const guint8 *w, const guint8 *wzp, gint64 OH,
                        gint64 OW, gint64 n, gint64 m, gint64 oh, gint64 ow)
{
  gint64 Cg = c->c / c->group, g = m / (c->m / c->group), acc = 0;
  gint64 w_zero = byte_value (c->w_dtype, wzp[c->per_channel ? m : 0]);
  for (gint64 ci = 0; ci < Cg; ci++)
    for (gint64 ki = 0; ki < c->kh; ki++)
      for (gint64 kj = 0; kj < c->kw; kj++)
        {
          gint64 ih = oh * c->stride + ki * c->dilation - c->pad[0];
          gint64 iw = ow * c->stride + kj * c->dilation - c->pad[1];
          gint64 xv = c->x_zero;
          if (ih >= 0 && ih < c->h && iw >= 0 && iw < c->w)
            xv = byte_value (c->x_dtype, x[((n * c->c + g * Cg + ci) * c->h + ih) * c->w + iw]);
          acc += (xv - c->x_zero) * (byte_value (c->w_dtype, w[((m * Cg + ci) * c->kh + ki) * c->kw + kj]) - w_zero);
        }
  return acc;
}

static void
check_conv_integer_case (const ConvIntegerCase *c, GRand *rng, GraftSimdLevel level)
{
  gint64 Cg = c->c / c->group, nx = c->n * c->c * c->h * c->w, nw = c->m * Cg * c->kh * c->kw;
  gint64 n_wzp = c->per_channel ? c->m : 1;
  g_autofree guint8 *x = g_new (guint8, nx);
  g_autofree guint8 *w = g_new (guint8, nw);
  g_autofree guint8 *wzp = g_new (guint8, n_wzp);
  gint64 lo = c->w_dtype == GRAFT_DTYPE_INT8 ? -128 : 0, hi = lo + 255;
  for (gint64 i = 0; i < n_wzp; i++)
    wzp[i] = c->small_weights && c->w_dtype == GRAFT_DTYPE_UINT8 ? g_rand_int_range (rng, 64, 192)
             : c->small_weights ? 0 : random_operand (rng, lo, hi);
  for (gint64 i = 0; i < nx; i++)
    x[i] = random_operand (rng, 0, 255);
  for (gint64 m = 0; m < c->m; m++)
    for (gint64 k = 0; k < nw / c->m; k++)
      {
        /* Small weights stay within ±64 of their zero point: the byte GEMM's filters. */
        gint64 zero = byte_value (c->w_dtype, wzp[c->per_channel ? m : 0]);
        gint64 v = c->small_weights ? zero + random_operand (rng, -64, 64) : random_operand (rng, lo, hi);
        w[m * (nw / c->m) + k] = (guint8) v;
      }
  guint8 x_zero_byte = (guint8) c->x_zero;

  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("conv-integer");
  graft_model_set_opset (model, "onnx", 17);
  gint64 dx[] = { c->n, c->c, c->h, c->w }, dw[] = { c->m, Cg, c->kh, c->kw };
  GraftValue *xin = graft_graph_ensure_value (g, "x");
  xin->dtype = c->x_dtype;
  graft_shape_init_fixed (&xin->shape, 4, dx);
  graft_graph_add_input (g, xin);
  add_8bit_initializer (g, "w", c->w_dtype, 4, dw, w, nw);
  add_8bit_initializer (g, "x_zero", c->x_dtype, 0, NULL, &x_zero_byte, 1);
  add_8bit_initializer (g, "w_zero", c->w_dtype, c->per_channel ? 1 : 0, &n_wzp, wzp, n_wzp);
  GraftNode *conv = graft_graph_add_node (g, NULL, "ConvInteger", "conv");
  const char *inputs[] = { "x", "w", "x_zero", "w_zero" };
  for (int i = 0; i < 4; i++)
    graft_node_add_input (conv, graft_graph_resolve_value (g, inputs[i]));
  graft_node_add_output (conv, graft_graph_ensure_value (g, "y"));
  gint64 strides[] = { c->stride, c->stride };
  gint64 dilations[] = { c->dilation, c->dilation };
  graft_node_add_attribute (conv, graft_attribute_new_ints ("strides", strides, 2));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("dilations", dilations, 2));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", c->pad, 4));
  graft_node_add_attribute (conv, graft_attribute_new_int ("group", c->group));
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);

  gint64 OH = (c->h + c->pad[0] + c->pad[2] - (c->kh - 1) * c->dilation - 1) / c->stride + 1;
  gint64 OW = (c->w + c->pad[1] + c->pad[3] - (c->kw - 1) * c->dilation - 1) / c->stride + 1;
  g_autofree gint64 *want = g_new (gint64, c->n * c->m * OH * OW);
  for (gint64 n = 0, at = 0; n < c->n; n++)
    for (gint64 m = 0; m < c->m; m++)
      for (gint64 oh = 0; oh < OH; oh++)
        for (gint64 ow = 0; ow < OW; ow++, at++)
          want[at] = conv_integer_reference (c, x, w, wzp, OH, OW, n, m, oh, ow);

  graft_simd_set_max_level (level);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  for (guint threads = 1; threads <= 2; threads++)
    for (int again = 0; again < 2; again++)   /* the second run uses the kept packed filter */
      {
        graft_runtime_set_n_threads (rt, threads);
        g_autoptr(GHashTable) feeds = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                             (GDestroyNotify) graft_rt_tensor_unref);
        GraftRtTensor *xt = graft_rt_tensor_new (c->x_dtype, 4, dx, NULL);
        memcpy (xt->data, x, nx);
        g_hash_table_insert (feeds, (gpointer) "x", xt);
        g_autoptr(GPtrArray) out = graft_runtime_run (rt, feeds, NULL, NULL, NULL, &error);
        g_assert_no_error (error);
        GraftRtTensor *y = out->pdata[0];
        g_assert_cmpint (y->dtype, ==, GRAFT_DTYPE_INT32);
        g_assert_cmpint (y->numel, ==, c->n * c->m * OH * OW);
        for (gint64 i = 0; i < y->numel; i++)
          if (((gint32 *) y->data)[i] != want[i])
            g_error ("%s, %u threads, %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " stride %" G_GINT64_FORMAT
                     " dilation %" G_GINT64_FORMAT " on %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ": y[%" G_GINT64_FORMAT
                     "] = %d, want %" G_GINT64_FORMAT,
                     graft_simd_level_to_string (level), threads, c->kh, c->kw, c->stride, c->dilation, c->h, c->w, i,
                     ((gint32 *) y->data)[i], want[i]);
      }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* Random shapes: odd sizes, 1×1 maps, strides 1–3 (stride 2 on rows wide
 * enough for whole 16-column panels in one output row), dilation 2,
 * asymmetric pads, groups; x zero points at 0, 128, 255 or anywhere;
 * per-tensor and per-channel weight zero points; 7-bit filters (the byte
 * GEMM) and full-range ones (int16, or bytes with AVX-512 VNNI or AMX). */
static void
conv_integer_random_rounds (GraftSimdLevel level)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed (17);
  const gint64 x_zeros[] = { 0, 128, 255, -1 };
  for (int round = 0; round < 96; round++)
    {
      ConvIntegerCase c = { 0 };
      c.group = round % 5 == 4 ? 3 : 1;
      c.n = g_rand_int_range (rng, 1, 3);
      c.c = c.group * g_rand_int_range (rng, 1, 6);
      /* now and then more channels than an AMX block's 32 rows, and a K
       * of several 64-byte AMX steps */
      c.m = c.group * (round % 8 == 3 ? g_rand_int_range (rng, 33, 70) : g_rand_int_range (rng, 1, 9));
      if (round % 8 == 5)
        c.c = c.group * g_rand_int_range (rng, 8, 20);
      c.kh = g_rand_int_range (rng, 1, 4);
      c.kw = round % 7 == 0 ? 7 : g_rand_int_range (rng, 1, 4);
      c.stride = round % 3 == 0 ? 2 : g_rand_int_range (rng, 1, 4);
      c.dilation = round % 6 == 5 ? 2 : 1;
      for (int d = 0; d < 4; d++)
        c.pad[d] = g_rand_int_range (rng, 0, (d % 2 ? c.kw : c.kh));
      gboolean tiny = round % 8 == 1;   /* a 1×1 map */
      c.h = tiny ? 1 : g_rand_int_range (rng, 1, 12);
      c.w = tiny ? 1 : g_rand_int_range (rng, 1, round % 3 == 0 ? 140 : 40);
      c.h = MAX (c.h, (c.kh - 1) * c.dilation + 1 - c.pad[0] - c.pad[2]);
      c.w = MAX (c.w, (c.kw - 1) * c.dilation + 1 - c.pad[1] - c.pad[3]);
      c.x_dtype = round % 2 ? GRAFT_DTYPE_INT8 : GRAFT_DTYPE_UINT8;
      c.w_dtype = round % 4 < 2 ? GRAFT_DTYPE_INT8 : GRAFT_DTYPE_UINT8;
      gint64 zero = x_zeros[round % 4] >= 0 ? x_zeros[round % 4] : g_rand_int_range (rng, 0, 256);
      c.x_zero = byte_value (c.x_dtype, (guint8) zero);
      c.per_channel = g_rand_boolean (rng);
      c.small_weights = round % 3 != 2;
      check_conv_integer_case (&c, rng, level);
    }
}

/* At each level without AMX: the VNNI, vpmaddubsw and int16 kernels. AMX
 * is turned off as a user turns it off, GRAFT_AMX=0, which the runtime
 * reads once: so the rounds run in a subprocess. */
static void
test_conv_integer_random (gconstpointer data)
{
  if (!graft_test_use_simd_level (GPOINTER_TO_INT (data)))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  if (g_test_subprocess ())
    {
      g_assert_false (graft_simd_has_amx_int8 ());
      conv_integer_random_rounds (GPOINTER_TO_INT (data));
      return;
    }
  g_autofree char *amx = g_strdup (g_getenv ("GRAFT_AMX"));
  g_setenv ("GRAFT_AMX", "0", TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  if (amx != NULL)
    g_setenv ("GRAFT_AMX", amx, TRUE);
  else
    g_unsetenv ("GRAFT_AMX");
  g_test_trap_assert_passed ();
}

static void
test_conv_integer_random_amx (void)
{
  if (!graft_simd_has_amx_int8 ())
    {
      g_test_skip ("needs AMX-INT8 (and the kernel's leave to use it)");
      return;
    }
  conv_integer_random_rounds (GRAFT_SIMD_AVX512);
}

/* ---- DynamicQuantizeLinear and the int32 → float Cast at each level ---- */

/* The outputs of model (one input, x) run at one SIMD level. */
static GPtrArray *
run_model_at_level (GraftModel *model, GraftRtTensor *x, GraftSimdLevel level)
{
  graft_simd_set_max_level (level);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) feeds = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                       (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (feeds, (gpointer) "x", graft_rt_tensor_ref (x));
  GPtrArray *out = graft_runtime_run (rt, feeds, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  return out;
}

/* DynamicQuantizeLinear on x (float32, 1-D) through a runtime at one
 * SIMD level; its three outputs. */
static GPtrArray *
run_dynamic_quantize (GraftRtTensor *x, GraftSimdLevel level)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("dql");
  graft_model_set_opset (model, "onnx", 17);
  GraftValue *xin = graft_graph_ensure_value (g, "x");
  xin->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&xin->shape, 1, x->dims);
  graft_graph_add_input (g, xin);
  GraftNode *node = graft_graph_add_node (g, NULL, "DynamicQuantizeLinear", "dql");
  graft_node_add_input (node, xin);
  const char *names[] = { "y", "y_scale", "y_zero_point" };
  for (int i = 0; i < 3; i++)
    {
      graft_node_add_output (node, graft_graph_ensure_value (g, names[i]));
      graft_graph_add_output (g, graft_graph_ensure_value (g, names[i]));
    }
  graft_model_set_graph (model, g);
  return run_model_at_level (model, x, level);
}

static void
test_dynamic_quantize_levels (void)
{
  if (graft_simd_cpu_level () < GRAFT_SIMD_AVX2)
    {
      g_test_skip ("needs avx2");
      return;
    }
  g_autoptr(GRand) rng = g_rand_new_with_seed (23);
  for (int round = 0; round < 300; round++)
    {
      gint64 n = g_rand_int_range (rng, 1, 70);
      g_autoptr(GraftRtTensor) x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 1, &n, NULL);
      /* Some all-positive, some all-negative, some all zero (scale 0), and
       * values on rounding ties (k + 0.5 quanta). */
      double lo = round % 5 == 0 ? 0.5 : -g_rand_double_range (rng, 0, 4), hi = round % 5 == 1 ? -0.25 : g_rand_double_range (rng, 0, 4);
      for (gint64 i = 0; i < n; i++)
        ((float *) x->data)[i] = round % 11 == 3 ? 0 : (float) g_rand_double_range (rng, MIN (lo, hi), MAX (lo, hi));
      if (round % 7 == 2)
        for (gint64 i = 0; i < n; i += 3)
          ((float *) x->data)[i] = (g_rand_int_range (rng, -100, 100) + 0.5f) * 0.0078125f;
      g_autoptr(GPtrArray) want = run_dynamic_quantize (x, GRAFT_SIMD_PORTABLE);
      g_autoptr(GPtrArray) got = run_dynamic_quantize (x, GRAFT_SIMD_AVX2);
      for (int i = 0; i < 3; i++)
        {
          GraftRtTensor *a = got->pdata[i], *b = want->pdata[i];
          g_assert_cmpmem (a->data, a->nbytes, b->data, b->nbytes);
        }
    }
  /* int32 → float32 Cast: the plain loop against a double round trip. */
  gint64 n = 4096;
  g_autoptr(GraftRtTensor) ints = graft_rt_tensor_new (GRAFT_DTYPE_INT32, 1, &n, NULL);
  for (gint64 i = 0; i < n; i++)
    ((gint32 *) ints->data)[i] = i < 4 ? (gint32[]) { G_MININT32, G_MAXINT32, 16777217, -16777219 }[i]
                                       : (gint32) g_rand_int (rng);
  g_autoptr(GraftRtTensor) floats = graft_rt_tensor_cast (ints, GRAFT_DTYPE_FLOAT32, NULL);
  for (gint64 i = 0; i < n; i++)
    g_assert_cmpfloat (((float *) floats->data)[i], ==, (float) (double) ((gint32 *) ints->data)[i]);
}

/* QuantizeLinear of x to dtype (per-tensor scale and zero point) at one level. */
static GraftRtTensor *
run_quantize_linear (GraftRtTensor *x, float scale, guint8 zero, GraftDType dtype, GraftSimdLevel level)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("ql");
  graft_model_set_opset (model, "onnx", 17);
  GraftValue *xin = graft_graph_ensure_value (g, "x");
  xin->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&xin->shape, 1, x->dims);
  graft_graph_add_input (g, xin);
  add_8bit_initializer (g, "scale", GRAFT_DTYPE_FLOAT32, 0, NULL, (const guint8 *) &scale, sizeof scale);
  add_8bit_initializer (g, "zero", dtype, 0, NULL, &zero, 1);
  GraftNode *node = graft_graph_add_node (g, NULL, "QuantizeLinear", "ql");
  const char *inputs[] = { "x", "scale", "zero" };
  for (int i = 0; i < 3; i++)
    graft_node_add_input (node, graft_graph_resolve_value (g, inputs[i]));
  graft_node_add_output (node, graft_graph_ensure_value (g, "y"));
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  g_autoptr(GPtrArray) out = run_model_at_level (model, x, level);
  return graft_rt_tensor_ref (out->pdata[0]);
}

/* QuantizeLinear's vector loop against the scalar one, byte for byte:
 * ties (k + 0.5 quanta) both ways, values far past both ends, −0, tails
 * shorter than a vector. */
static void
test_quantize_linear_levels (void)
{
  if (graft_simd_cpu_level () < GRAFT_SIMD_AVX2)
    {
      g_test_skip ("needs avx2");
      return;
    }
  g_autoptr(GRand) rng = g_rand_new_with_seed (29);
  for (int round = 0; round < 200; round++)
    {
      gint64 n = g_rand_int_range (rng, 1, 90);
      GraftDType dtype = round % 2 ? GRAFT_DTYPE_INT8 : GRAFT_DTYPE_UINT8;
      float scale = 0.0078125f * g_rand_int_range (rng, 1, 9);
      guint8 zero = round % 3 == 0 ? (dtype == GRAFT_DTYPE_INT8 ? 0 : 128) : g_rand_int_range (rng, 0, 256);
      g_autoptr(GraftRtTensor) x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 1, &n, NULL);
      float *v = x->data;
      for (gint64 i = 0; i < n; i++)
        switch (g_rand_int_range (rng, 0, 4))
          {
          case 0:
            v[i] = (g_rand_int_range (rng, -300, 300) + 0.5f) * scale;
            break;
          case 1:
            v[i] = (float) g_rand_double_range (rng, -1000, 1000) * scale;
            break;
          case 2:
            v[i] = i % 2 ? -0.0f : 1e30f * (i % 3 ? 1 : -1);
            break;
          default:
            v[i] = (float) g_rand_double_range (rng, -2, 2);
          }
      g_autoptr(GraftRtTensor) want = run_quantize_linear (x, scale, zero, dtype, GRAFT_SIMD_PORTABLE);
      g_autoptr(GraftRtTensor) got = run_quantize_linear (x, scale, zero, dtype, GRAFT_SIMD_AVX2);
      g_assert_cmpmem (got->data, got->nbytes, want->data, want->nbytes);
    }
}

static const QuantizedCase quantized_models[] = {
  { "resnet18_qdq", TRUE, FALSE },   /* fused into 8-bit steps: no float conv left */
  { "resnet18_qop", TRUE, FALSE },
  { "resnet18_dynamic", FALSE, FALSE },
};

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/quantized/qgemm/portable", GINT_TO_POINTER (GRAFT_SIMD_PORTABLE), test_qgemm);
  g_test_add_data_func ("/quantized/qgemm/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2), test_qgemm);
  g_test_add_data_func ("/quantized/qgemm/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512), test_qgemm);
  g_test_add_data_func ("/quantized/qgemm-u8s8/portable", GINT_TO_POINTER (GRAFT_SIMD_PORTABLE), test_qgemm_u8s8);
  g_test_add_data_func ("/quantized/qgemm-u8s8/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2), test_qgemm_u8s8);
  /* AVX-512 VNNI where the CPU has it (the AVX2 kernel on AVX-512 without VNNI). */
  g_test_add_data_func ("/quantized/qgemm-u8s8/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512), test_qgemm_u8s8);
  g_test_add_data_func ("/quantized/conv-integer-random/portable", GINT_TO_POINTER (GRAFT_SIMD_PORTABLE),
                        test_conv_integer_random);
  g_test_add_data_func ("/quantized/conv-integer-random/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_conv_integer_random);
  g_test_add_data_func ("/quantized/conv-integer-random/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_conv_integer_random);
  g_test_add_func ("/quantized/conv-integer-random/amx", test_conv_integer_random_amx);
  g_test_add_func ("/quantized/dynamic-quantize/avx2-vs-portable", test_dynamic_quantize_levels);
  g_test_add_func ("/quantized/quantize-linear/avx2-vs-portable", test_quantize_linear_levels);

  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *test_python = graft_test_python ();
  g_autoptr(GError) error = NULL;
  models_dir = g_build_filename (src, "tests", "fixtures-generated", "models", NULL);
  g_autofree char *script = g_build_filename (src, "tests", "fixtures", "make-quantized-models.py", NULL);
  const char *gen[] = { test_python, script, models_dir, NULL };
  /* A subprocess (the rounds without AMX) finds them made by its parent. */
  if (!g_test_subprocess () && !graft_test_spawn (gen, &error))
    {
      g_printerr ("cannot generate the quantized models: %s\n", error->message);
      return 1;
    }
  g_autofree char *ops_script = g_build_filename (src, "tests", "fixtures", "make-qdq-ops.py", NULL);
  const char *gen_ops[] = { test_python, ops_script, models_dir, NULL };
  if (!g_test_subprocess () && !graft_test_spawn (gen_ops, &error))
    {
      g_printerr ("cannot generate the QDQ op models: %s\n", error->message);
      return 1;
    }
  g_test_add_data_func ("/quantized/qdq-ops/uint8/fused-vs-float", "uint8", test_qdq_ops);
  g_test_add_data_func ("/quantized/qdq-ops/int8/fused-vs-float", "int8", test_qdq_ops);
  g_test_add_func ("/quantized/resnet18_qdq/fused", test_resnet18_qdq_fused);
  g_test_add_func ("/quantized/resnet18_dynamic/fused", test_resnet18_dynamic_fused);
  g_test_add_func ("/quantized/max-pool-8bit", test_max_pool_8bit);
  for (gsize i = 0; i < G_N_ELEMENTS (quantized_models); i++)
    {
      g_autofree char *path = g_strdup_printf ("/quantized/%s-vs-onnxruntime", quantized_models[i].name);
      g_test_add_data_func (path, &quantized_models[i], compare_with_ort);
      g_autofree char *levels = g_strdup_printf ("/quantized/%s/avx2-vs-portable", quantized_models[i].name);
      g_test_add_data_func (levels, &quantized_models[i], compare_simd_levels);
    }
  int status = g_test_run ();
  g_free (models_dir);
  return status;
}
