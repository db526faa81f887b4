/* Random generators (RandomUniform, RandomNormal, their *Like forms,
 * Bernoulli, Multinomial) with the declared shapes and dtypes; values come
 * from GLib's generator (seeded by the seed attribute when given), so they
 * cannot match another runtime's numbers. Also the text operators
 * StringNormalizer and TfIdfVectorizer. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* Without a seed attribute the sequence is still fixed, so that runs of
 * the reference runtime are reproducible. */
static GRand *
make_rng (GraftNode *node)
{
  return g_rand_new_with_seed ((guint32) (gint64) graft_node_attr_float (node, "seed", 0));
}

static GraftDType
output_dtype (GraftInferContext *ctx, GraftDType fallback)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  return graft_node_attr_int (ctx->node, "dtype", in ? in->dtype : fallback);
}

static gboolean
infer_random (GraftInferContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  if (strcmp (op, "RandomUniform") == 0 || strcmp (op, "RandomNormal") == 0)
    {
      guint n;
      const gint64 *shape = graft_node_attr_ints (ctx->node, "shape", &n);
      if (shape == NULL)
        return graft_kernel_fail (error, "the shape attribute is missing");
      graft_infer_set_output_fixed (ctx, 0, graft_node_attr_int (ctx->node, "dtype", GRAFT_DTYPE_FLOAT32), n, shape);
      return TRUE;
    }
  GraftInferValue *in = graft_infer_input (ctx, 0);
  if (strcmp (op, "Multinomial") == 0)
    {
      GraftShape s;
      graft_shape_init (&s, 2);
      s.dims[0] = in->shape.rank == 2 ? in->shape.dims[0] : graft_dim_unknown ();
      s.dims[1] = graft_dim_fixed (graft_node_attr_int (ctx->node, "sample_size", 1));
      graft_infer_set_output (ctx, 0, graft_node_attr_int (ctx->node, "dtype", GRAFT_DTYPE_INT32), &s);
      graft_shape_clear (&s);
      return TRUE;
    }
  graft_infer_set_output (ctx, 0, output_dtype (ctx, GRAFT_DTYPE_FLOAT32), &in->shape);
  return TRUE;
}

static double
normal (GRand *rng)
{
  double u1 = g_rand_double (rng), u2 = g_rand_double (rng);
  return sqrt (-2 * log (MAX (u1, 1e-300))) * cos (2 * G_PI * u2);
}

static gboolean
kernel_random (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  g_autoptr(GRand) rng = make_rng (ctx->node);
  if (strcmp (op, "Bernoulli") == 0)
    {
      GraftRtTensor *p = ctx->inputs[0];
      for (gint64 i = 0; i < y->numel; i++)
        graft_rt_tensor_set_f64 (y, i, g_rand_double (rng) < graft_rt_tensor_get_f64 (p, i) ? 1 : 0);
      return TRUE;
    }
  if (strcmp (op, "Multinomial") == 0)
    {
      GraftRtTensor *logits = ctx->inputs[0];
      gint64 B = y->dims[0], samples = y->dims[1], C = logits->dims[1];
      for (gint64 b = 0; b < B; b++)
        {
          double total = 0;
          for (gint64 k = 0; k < C; k++)
            total += exp (graft_rt_tensor_get_f64 (logits, b * C + k));
          for (gint64 s = 0; s < samples; s++)
            {
              double u = g_rand_double (rng) * total, acc = 0;
              gint64 k = 0;
              for (; k < C - 1; k++)
                {
                  acc += exp (graft_rt_tensor_get_f64 (logits, b * C + k));
                  if (u < acc)
                    break;
                }
              graft_rt_tensor_set_i64 (y, b * samples + s, k);
            }
        }
      return TRUE;
    }
  gboolean uniform = g_str_has_prefix (op, "RandomUniform");
  double a = uniform ? graft_node_attr_float (ctx->node, "low", 0) : graft_node_attr_float (ctx->node, "mean", 0);
  double b = uniform ? graft_node_attr_float (ctx->node, "high", 1) : graft_node_attr_float (ctx->node, "scale", 1);
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, uniform ? a + (b - a) * g_rand_double (rng) : a + b * normal (rng));
  return TRUE;
}

/* ---- StringNormalizer ---- */

static gboolean
kernel_string_normalizer (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  const char *action = graft_node_attr_string (ctx->node, "case_change_action", "NONE");
  gboolean sensitive = graft_node_attr_int (ctx->node, "is_case_sensitive", 0);
  GraftAttribute *stop = graft_node_get_attribute (ctx->node, "stopwords");
  if (x->dtype != GRAFT_DTYPE_STRING || x->rank < 1 || x->rank > 2 || (x->rank == 2 && x->dims[0] != 1))
    return graft_kernel_fail (error, "input must be strings of shape [C] or [1, C]");
  g_autoptr(GPtrArray) kept = g_ptr_array_new_with_free_func (g_free);
  for (gint64 i = 0; i < x->numel; i++)
    {
      const char *s = ((char **) x->data)[i];
      gboolean is_stop = FALSE;
      for (guint k = 0; stop && stop->strings && k < stop->strings->len && !is_stop; k++)
        {
          gsize len;
          const char *w = g_bytes_get_data (stop->strings->pdata[k], &len);
          g_autofree char *word = g_strndup (w, len);
          if (sensitive)
            is_stop = strcmp (s, word) == 0;
          else
            {
              g_autofree char *a = g_utf8_casefold (s, -1), *b = g_utf8_casefold (word, -1);
              is_stop = strcmp (a, b) == 0;
            }
        }
      if (is_stop)
        continue;
      if (strcmp (action, "LOWER") == 0)
        g_ptr_array_add (kept, g_utf8_strdown (s, -1));
      else if (strcmp (action, "UPPER") == 0)
        g_ptr_array_add (kept, g_utf8_strup (s, -1));
      else
        g_ptr_array_add (kept, g_strdup (s));
    }
  if (kept->len == 0)
    g_ptr_array_add (kept, g_strdup (""));
  gint64 dims[2] = { 1, kept->len };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_STRING, x->rank, x->rank == 2 ? dims : dims + 1, error);
  if (y == NULL)
    return FALSE;
  for (guint i = 0; i < kept->len; i++)
    {
      g_free (((char **) y->data)[i]);
      ((char **) y->data)[i] = g_strdup (kept->pdata[i]);
    }
  return TRUE;
}

/* ---- TfIdfVectorizer ---- */

/* Item k of the pool as an int64 (or a string pointer via strings). */
typedef struct {
  const gint64 *ints;
  GPtrArray *strings;   /* GBytes* */
} Pool;

static gboolean
token_equal (const GraftRtTensor *x, gint64 xi, const Pool *pool, gint64 k)
{
  if (x->dtype == GRAFT_DTYPE_STRING)
    {
      gsize len;
      const char *p = g_bytes_get_data (pool->strings->pdata[k], &len);
      const char *s = ((char **) x->data)[xi];
      return strlen (s) == len && memcmp (s, p, len) == 0;
    }
  return graft_rt_tensor_get_i64 (x, xi) == pool->ints[k];
}

static gboolean
infer_tfidf (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  guint n;
  const gint64 *indexes = graft_node_attr_ints (ctx->node, "ngram_indexes", &n);
  gint64 width = 0;
  for (guint i = 0; i < n; i++)
    width = MAX (width, indexes[i] + 1);
  GraftShape out;
  graft_shape_init (&out, x->shape.rank == 2 ? 2 : 1);
  if (out.rank == 2)
    out.dims[0] = x->shape.dims[0];
  out.dims[out.rank - 1] = graft_dim_fixed (width);
  graft_infer_set_output (ctx, 0, GRAFT_DTYPE_FLOAT32, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_tfidf (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 min_n = graft_node_attr_int (ctx->node, "min_gram_length", 1);
  gint64 max_n = graft_node_attr_int (ctx->node, "max_gram_length", 1);
  gint64 max_skip = graft_node_attr_int (ctx->node, "max_skip_count", 0);
  const char *mode = graft_node_attr_string (ctx->node, "mode", "TF");
  guint n_counts, n_indexes, n_weights, n_ints;
  const gint64 *counts = graft_node_attr_ints (ctx->node, "ngram_counts", &n_counts);
  const gint64 *indexes = graft_node_attr_ints (ctx->node, "ngram_indexes", &n_indexes);
  const double *weights = graft_node_attr_floats (ctx->node, "weights", &n_weights);
  GraftAttribute *strings = graft_node_get_attribute (ctx->node, "pool_strings");
  Pool pool = { graft_node_attr_ints (ctx->node, "pool_int64s", &n_ints), strings ? strings->strings : NULL };
  gint64 pool_len = pool.strings ? (gint64) pool.strings->len : n_ints;
  if (counts == NULL || indexes == NULL || (pool.ints == NULL && pool.strings == NULL))
    return graft_kernel_fail (error, "ngram_counts, ngram_indexes and a pool are required");
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  memset (y->data, 0, y->nbytes);
  gint64 rows = x->rank == 2 ? x->dims[0] : 1, C = x->rank ? x->dims[x->rank - 1] : 1, width = y->dims[y->rank - 1];
  g_autofree gint64 *hits = g_new0 (gint64, MAX (n_indexes, 1));
  for (gint64 r = 0; r < rows; r++)
    {
      memset (hits, 0, sizeof (gint64) * MAX (n_indexes, 1));
      for (gint64 n = MAX (min_n, 1); n <= max_n && n <= (gint64) n_counts; n++)
        {
          /* n-grams of length n occupy pool[counts[n-1] .. counts[n]) */
          gint64 start = counts[n - 1], end = n < (gint64) n_counts ? counts[n] : pool_len;
          gint64 grams_before = 0;
          for (gint64 m = 1; m < n; m++)
            grams_before += ((m < (gint64) n_counts ? counts[m] : pool_len) - counts[m - 1]) / m;
          for (gint64 skip = 0; skip <= (n == 1 ? 0 : max_skip); skip++)
            for (gint64 i = 0; i + (n - 1) * (skip + 1) < C; i++)
              for (gint64 g = 0; g < (end - start) / n; g++)
                {
                  gboolean match = TRUE;
                  for (gint64 t = 0; t < n && match; t++)
                    match = token_equal (x, r * C + i + t * (skip + 1), &pool, start + g * n + t);
                  if (match && grams_before + g < (gint64) n_indexes)
                    hits[grams_before + g]++;
                }
        }
      for (guint k = 0; k < n_indexes; k++)
        {
          if (indexes[k] < 0 || indexes[k] >= width || hits[k] == 0)
            continue;
          double w = weights && k < n_weights ? weights[k] : 1;
          double v = strcmp (mode, "IDF") == 0 ? w : strcmp (mode, "TFIDF") == 0 ? hits[k] * w : hits[k];
          ((float *) y->data)[r * width + indexes[k]] = v;
        }
    }
  return TRUE;
}

#define OP(name, since, infer, kernel, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, 0, input_names, output_names }

const GraftOpSchema graft_ops_random[] = {
  OP ("RandomUniform", 1, infer_random, kernel_random, "", "output"),
  OP ("RandomNormal", 1, infer_random, kernel_random, "", "output"),
  OP ("RandomUniformLike", 1, infer_random, kernel_random, "input", "output"),
  OP ("RandomNormalLike", 1, infer_random, kernel_random, "input", "output"),
  OP ("Bernoulli", 15, infer_random, kernel_random, "input", "output"),
  OP ("Multinomial", 7, infer_random, kernel_random, "input", "output"),
  OP ("StringNormalizer", 10, NULL, kernel_string_normalizer, "X", "Y"),
  OP ("TfIdfVectorizer", 9, infer_tfidf, kernel_tfidf, "X", "Y"),
  { NULL }
};
