/* Shape manipulation: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
 * Concat, Split, Slice, Expand, Tile, Pad, Shape, Size, Identity,
 * Constant, ConstantOfShape, Range, EyeLike, Trilu, DepthToSpace,
 * SpaceToDepth, Cast, CastLike, Dropout (inference). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/simd-target.h"
#include "ir/sym-dim.h"
#include "ir/narrow-dtype.h"

void
graft_copy_element (GraftRtTensor *dst, gint64 di, const GraftRtTensor *src, gint64 si)
{
  if (dst->dtype == GRAFT_DTYPE_STRING)
    {
      g_free (((char **) dst->data)[di]);
      ((char **) dst->data)[di] = g_strdup (((char **) src->data)[si]);
      return;
    }
  gsize e = graft_rt_dtype_size (dst->dtype);
  switch (e)
    {
    case 4: ((guint32 *) dst->data)[di] = ((const guint32 *) src->data)[si]; break;
    case 8: ((guint64 *) dst->data)[di] = ((const guint64 *) src->data)[si]; break;
    case 1: ((guint8 *) dst->data)[di] = ((const guint8 *) src->data)[si]; break;
    case 2: ((guint16 *) dst->data)[di] = ((const guint16 *) src->data)[si]; break;
    default: memcpy ((char *) dst->data + di * e, (const char *) src->data + si * e, e);
    }
}

void
graft_copy_block (GraftRtTensor *dst, gint64 di, const GraftRtTensor *src, gint64 si, gint64 n)
{
  if (dst->dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 k = 0; k < n; k++)
        graft_copy_element (dst, di + k, src, si + k);
      return;
    }
  gsize e = graft_rt_dtype_size (dst->dtype);
  memcpy ((char *) dst->data + di * e, (const char *) src->data + si * e, n * e);
}

/* n copies of value: zero bytes as one memset, else one, then the filled
 * part copied onto the rest in doubling runs (a memcpy call per element cost Swin's Pad of a 2×2 map
 * to a 7×7 window 0.23 ms for 300 kB) */
static inline void
fill_elements (guint8 *dst, gint64 n, const guint8 *value, gsize size)
{
  if (n <= 0)
    return;
  gboolean zero = TRUE;
  for (gsize b = 0; b < size; b++)
    zero = zero && value[b] == 0;
  if (zero)
    {
      memset (dst, 0, n * size);
      return;
    }
  memcpy (dst, value, size);
  for (gint64 done = 1; done < n; done *= 2)
    memcpy (dst + done * size, dst, MIN (done, n - done) * size);
}

/* Output with the same data as input (a view when possible). */
static gboolean
output_view (GraftKernelContext *ctx, guint out_index, GraftRtTensor *in, int rank, const gint64 *dims, GError **error)
{
  GraftRtTensor *view = graft_rt_tensor_reshape (in, rank, dims, error);
  if (view == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, out_index, view);
  return TRUE;
}

static gboolean
inferred_dims (GraftKernelContext *ctx, guint i, int *rank, gint64 *dims, GError **error)
{
  GraftInferValue *info = &ctx->inferred[i];
  if (!info->present || !graft_shape_is_fully_fixed (&info->shape))
    return graft_kernel_fail (error, "the output shape could not be determined");
  *rank = info->shape.rank;
  for (int d = 0; d < *rank; d++)
    dims[d] = info->shape.dims[d].value;
  return TRUE;
}

static gboolean
kernel_view (GraftKernelContext *ctx, GError **error)
{
  int rank = 0;
  gint64 dims[GRAFT_RT_MAX_RANK];
  if (!inferred_dims (ctx, 0, &rank, dims, error))
    return FALSE;
  return output_view (ctx, 0, graft_kernel_input (ctx, 0), rank, dims, error);
}

/* ---- Reshape ---- */

static gboolean
infer_reshape (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *data = graft_infer_input (ctx, 0);
  gint64 n;
  g_autofree gint64 *shape = NULL;
  gboolean allowzero = graft_node_attr_int (ctx->node, "allowzero", 0);

  if (ctx->opset < 5)
    {
      guint na;
      const gint64 *a = graft_node_attr_ints (ctx->node, "shape", &na);
      shape = g_memdup2 (a, sizeof (gint64) * na);
      n = na;
    }
  else
    {
      GraftInferValue *s = graft_infer_input (ctx, 1);
      shape = graft_infer_input_ints (ctx, 1, &n);
      if (shape == NULL)
        {
          int rank = s && s->shape.rank == 1 && s->shape.dims[0].kind == GRAFT_DIM_FIXED ? (int) s->shape.dims[0].value : -1;
          graft_infer_set_output_unknown (ctx, 0, data->dtype, rank);
          return TRUE;
        }
    }
  if (n > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "target rank %" G_GINT64_FORMAT " is too large", n);

  GraftShape out;
  graft_shape_init (&out, n);
  gint64 known = 1;
  int infer_at = -1;
  gboolean all_fixed = TRUE;
  for (gint64 i = 0; i < n; i++)
    {
      if (shape[i] == 0 && !allowzero)
        {
          if (data->shape.rank < 0 || i >= data->shape.rank)
            {
              if (data->shape.rank >= 0)
                {
                  graft_shape_clear (&out);
                  return graft_kernel_fail (error, "shape[%" G_GINT64_FORMAT "] = 0 copies a dimension the input does not have", i);
                }
              all_fixed = FALSE;
              continue;
            }
          out.dims[i] = data->shape.dims[i];
          if (out.dims[i].kind != GRAFT_DIM_FIXED)
            all_fixed = FALSE;
          else if (!graft_dim_mul_checked (known, out.dims[i].value, &known))
            {
              graft_shape_clear (&out);
              return graft_kernel_fail (error, "the target shape has more than 2^63 elements");
            }
        }
      else if (shape[i] == -1)
        {
          if (infer_at >= 0)
            {
              graft_shape_clear (&out);
              return graft_kernel_fail (error, "shape has more than one -1");
            }
          infer_at = i;
        }
      else if (shape[i] < -1)
        {
          graft_shape_clear (&out);
          return graft_kernel_fail (error, "shape[%" G_GINT64_FORMAT "] = %" G_GINT64_FORMAT " is invalid", i, shape[i]);
        }
      else
        {
          out.dims[i] = graft_dim_fixed (shape[i]);
          if (!graft_dim_mul_checked (known, shape[i], &known))
            {
              graft_shape_clear (&out);
              return graft_kernel_fail (error, "the target shape has more than 2^63 elements");
            }
        }
    }
  gint64 total = graft_shape_get_numel (&data->shape);
  if (infer_at >= 0 && all_fixed && total >= 0)
    {
      if (known == 0 || total % known != 0)
        {
          graft_shape_clear (&out);
          return graft_kernel_fail (error, "cannot reshape %" G_GINT64_FORMAT " elements with a -1 dimension", total);
        }
      out.dims[infer_at] = graft_dim_fixed (total / known);
    }
  else if (infer_at < 0 && total >= 0 && all_fixed && known != total)
    {
      g_autofree char *a = graft_shape_to_string (&data->shape);
      g_autofree char *b = graft_shape_to_string (&out);
      graft_shape_clear (&out);
      return graft_kernel_fail (error, "cannot reshape %s into %s", a, b);
    }
  graft_infer_set_output (ctx, 0, data->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* ---- Flatten ---- */

static gboolean
infer_flatten (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 1);
  if (in->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, 2);
      return TRUE;
    }
  int rank = in->shape.rank;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return graft_kernel_fail (error, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, rank);
  /* Symbolic products keep the batch: batch×512×1×1 gives batch×512. */
  GraftShape out;
  graft_shape_init (&out, 2);
  out.dims[0] = graft_shape_get_dim_product (&in->shape, 0, axis);
  out.dims[1] = graft_shape_get_dim_product (&in->shape, axis, rank);
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* ---- Squeeze / Unsqueeze ---- */

static gint64 *
axes_from (GraftInferContext *ctx, guint input, gint64 *n, gboolean *known)
{
  *known = TRUE;
  if (ctx->opset >= 13 || !graft_node_has_attr (ctx->node, "axes"))
    {
      if (graft_infer_input (ctx, input) == NULL)
        {
          *n = -1;   /* absent: all (Squeeze) */
          return NULL;
        }
      gint64 *v = graft_infer_input_ints (ctx, input, n);
      if (v == NULL && graft_infer_input (ctx, input) != NULL)
        *known = FALSE;
      if (v == NULL && *known)
        *n = -1;
      return v;
    }
  guint na;
  const gint64 *a = graft_node_attr_ints (ctx->node, "axes", &na);
  *n = na;
  return g_memdup2 (a, sizeof (gint64) * MAX (na, 1));
}

static gboolean
infer_squeeze (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 n;
  gboolean known;
  g_autofree gint64 *axes = axes_from (ctx, 1, &n, &known);

  if (!known || in->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
      return TRUE;
    }
  int rank = in->shape.rank;
  gboolean drop[GRAFT_RT_MAX_RANK * 4] = { 0 };
  if (rank > (int) G_N_ELEMENTS (drop))
    return graft_kernel_fail (error, "rank %d is too large", rank);
  if (n < 0)
    {
      for (int d = 0; d < rank; d++)
        {
          if (in->shape.dims[d].kind != GRAFT_DIM_FIXED)
            {
              graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
              return TRUE;
            }
          drop[d] = in->shape.dims[d].value == 1;
        }
    }
  for (gint64 i = 0; i < n; i++)
    {
      gint64 a = axes[i];
      if (!graft_normalize_axis (&a, rank, error))
        return FALSE;
      if (in->shape.dims[a].kind == GRAFT_DIM_FIXED && in->shape.dims[a].value != 1)
        return graft_kernel_fail (error, "cannot squeeze axis %" G_GINT64_FORMAT " of size %" G_GINT64_FORMAT,
                                  axes[i], in->shape.dims[a].value);
      drop[a] = TRUE;
    }
  GraftShape out;
  graft_shape_init (&out, 0);
  out.dims = g_new0 (GraftDim, MAX (rank, 1));
  for (int d = 0; d < rank; d++)
    if (!drop[d])
      out.dims[out.rank++] = in->shape.dims[d];
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
infer_unsqueeze (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 n;
  gboolean known;
  g_autofree gint64 *axes = axes_from (ctx, 1, &n, &known);

  if (!known || in->shape.rank < 0 || n < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
      return TRUE;
    }
  int rank = in->shape.rank + n;
  if (rank > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "rank %d is too large", rank);
  gboolean insert[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 i = 0; i < n; i++)
    {
      gint64 a = axes[i];
      if (!graft_normalize_axis (&a, rank, error))
        return FALSE;
      if (insert[a])
        return graft_kernel_fail (error, "axis %" G_GINT64_FORMAT " is repeated", axes[i]);
      insert[a] = TRUE;
    }
  GraftShape out;
  graft_shape_init (&out, rank);
  for (int d = 0, s = 0; d < rank; d++)
    out.dims[d] = insert[d] ? graft_dim_fixed (1) : in->shape.dims[s++];
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* ---- Transpose ---- */

static gboolean
get_perm (GraftNode *node, int rank, int *perm, GError **error)
{
  guint n;
  const gint64 *p = graft_node_attr_ints (node, "perm", &n);
  gboolean seen[GRAFT_RT_MAX_RANK] = { 0 };
  if (p == NULL)
    {
      for (int i = 0; i < rank; i++)
        perm[i] = rank - 1 - i;
      return TRUE;
    }
  if ((int) n != rank)
    return graft_kernel_fail (error, "perm has %u entries for rank %d", n, rank);
  for (int i = 0; i < rank; i++)
    {
      gint64 a = p[i];
      if (a < 0)
        a += rank;
      if (a < 0 || a >= rank || seen[a])
        return graft_kernel_fail (error, "perm is not a permutation of 0..%d", rank - 1);
      seen[a] = TRUE;
      perm[i] = a;
    }
  return TRUE;
}

static gboolean
infer_transpose (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  int perm[GRAFT_RT_MAX_RANK];
  if (in->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
      return TRUE;
    }
  if (in->shape.rank > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "rank too large");
  if (!get_perm (ctx->node, in->shape.rank, perm, error))
    return FALSE;
  GraftShape out;
  graft_shape_init (&out, in->shape.rank);
  for (int i = 0; i < out.rank; i++)
    out.dims[i] = in->shape.dims[perm[i]];
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* The same transpose over fewer, larger dims: dims of size 1 are dropped,
 * and input dims that stay next to each other in the output become one. The
 * copy loop then moves whole runs: ShuffleNet's channel shuffle, [2, 2, C/2,
 * H, W] → [2, C/2, 2, H, W], copies H·W floats at a time instead of W. */
static int
transpose_reduce (int rank, const gint64 *dims, const int *perm, gint64 *reduced_dims, int *reduced_perm)
{
  int kept_perm[GRAFT_RT_MAX_RANK], renumber[GRAFT_RT_MAX_RANK];
  int kept = 0;
  for (int d = 0, k = 0; d < rank; d++)
    renumber[d] = dims[d] == 1 ? -1 : k++;
  for (int i = 0; i < rank; i++)
    if (renumber[perm[i]] >= 0)
      kept_perm[kept++] = renumber[perm[i]];
  if (kept == 0)
    {
      reduced_dims[0] = 1;
      reduced_perm[0] = 0;
      return 1;
    }
  gint64 kept_dims[GRAFT_RT_MAX_RANK];
  for (int d = 0; d < rank; d++)
    if (renumber[d] >= 0)
      kept_dims[renumber[d]] = dims[d];

  /* runs of output positions whose input dims are consecutive */
  int run_first[GRAFT_RT_MAX_RANK], runs = 0;
  gint64 run_size[GRAFT_RT_MAX_RANK];
  for (int i = 0; i < kept; i++)
    {
      if (i > 0 && kept_perm[i] == kept_perm[i - 1] + 1)
        {
          run_size[runs - 1] *= kept_dims[kept_perm[i]];
          continue;
        }
      run_first[runs] = kept_perm[i];
      run_size[runs] = kept_dims[kept_perm[i]];
      runs++;
    }
  /* a run's input position is the rank of its first input dim among the runs' */
  for (int r = 0; r < runs; r++)
    {
      int position = 0;
      for (int q = 0; q < runs; q++)
        position += run_first[q] < run_first[r];
      reduced_perm[r] = position;
      reduced_dims[position] = run_size[r];
    }
  return runs;
}

/* Tiles of a 4-byte matrix transpose: dst[i·ds + j] = src[j·ss + i] for
 * i < cols, j < rows. Whole tiles of TILE × TILE stay in L1 while both
 * sides are read and written in runs, where a column gather would touch
 * a new line for every element. */
#define TRANSPOSE_TILE 32

static void
transpose_words_block (const guint32 *src, gint64 ss, guint32 *dst, gint64 ds, gint64 rows, gint64 cols)
{
  for (gint64 i = 0; i < cols; i++)
    for (gint64 j = 0; j < rows; j++)
      dst[i * ds + j] = src[j * ss + i];
}

static void
transpose_words_portable (const guint32 *src, gint64 ss, guint32 *dst, gint64 ds, gint64 rows, gint64 cols)
{
  for (gint64 j0 = 0; j0 < rows; j0 += TRANSPOSE_TILE)
    for (gint64 i0 = 0; i0 < cols; i0 += TRANSPOSE_TILE)
      transpose_words_block (src + j0 * ss + i0, ss, dst + i0 * ds + j0, ds, MIN (TRANSPOSE_TILE, rows - j0),
                             MIN (TRANSPOSE_TILE, cols - i0));
}

#ifdef GRAFT_HAVE_X86_SIMD
/* 8 × 8 floats through registers: unpack pairs, then quads, then halves */
static inline GRAFT_TARGET_AVX2_FMA void
transpose_words_8x8_avx2 (const guint32 *src, gint64 ss, guint32 *dst, gint64 ds)
{
  __m256 r[8], t[8];
  for (int k = 0; k < 8; k++)
    r[k] = _mm256_loadu_ps ((const float *) (src + k * ss));
  for (int k = 0; k < 8; k += 2)
    {
      t[k] = _mm256_unpacklo_ps (r[k], r[k + 1]);
      t[k + 1] = _mm256_unpackhi_ps (r[k], r[k + 1]);
    }
  for (int k = 0; k < 8; k += 4)
    {
      r[k] = _mm256_shuffle_ps (t[k], t[k + 2], _MM_SHUFFLE (1, 0, 1, 0));
      r[k + 1] = _mm256_shuffle_ps (t[k], t[k + 2], _MM_SHUFFLE (3, 2, 3, 2));
      r[k + 2] = _mm256_shuffle_ps (t[k + 1], t[k + 3], _MM_SHUFFLE (1, 0, 1, 0));
      r[k + 3] = _mm256_shuffle_ps (t[k + 1], t[k + 3], _MM_SHUFFLE (3, 2, 3, 2));
    }
  for (int k = 0; k < 4; k++)
    {
      _mm256_storeu_ps ((float *) (dst + k * ds), _mm256_permute2f128_ps (r[k], r[k + 4], 0x20));
      _mm256_storeu_ps ((float *) (dst + (k + 4) * ds), _mm256_permute2f128_ps (r[k], r[k + 4], 0x31));
    }
}

static GRAFT_TARGET_AVX2_FMA void
transpose_words_avx2 (const guint32 *src, gint64 ss, guint32 *dst, gint64 ds, gint64 rows, gint64 cols)
{
  for (gint64 j0 = 0; j0 < rows; j0 += TRANSPOSE_TILE)
    for (gint64 i0 = 0; i0 < cols; i0 += TRANSPOSE_TILE)
      {
        gint64 tile_rows = MIN (TRANSPOSE_TILE, rows - j0), tile_cols = MIN (TRANSPOSE_TILE, cols - i0);
        gint64 full_rows = tile_rows & ~7, full_cols = tile_cols & ~7;
        const guint32 *s = src + j0 * ss + i0;
        guint32 *d = dst + i0 * ds + j0;
        for (gint64 j = 0; j < full_rows; j += 8)
          for (gint64 i = 0; i < full_cols; i += 8)
            transpose_words_8x8_avx2 (s + j * ss + i, ss, d + i * ds + j, ds);
        /* the tile's last rows and columns, fewer than 8 */
        transpose_words_block (s + full_rows * ss, ss, d + full_rows, ds, tile_rows - full_rows, tile_cols);
        transpose_words_block (s + full_cols, ss, d + full_cols * ds, ds, full_rows, tile_cols - full_cols);
      }
}
#endif

/* out = in transposed where the input's last dim (of stride 1) becomes
 * the output's dim p, not its last: a 4-byte matrix transpose for each
 * index of the other output dims (a [B, N, C] → [B, C, N] before a
 * depthwise convolution, a key's [B, N, H, D] → [B, H, D, N]). */
static void
transpose_words_tiled (const guint32 *in, guint32 *out, int rank, const gint64 *out_dims, const gint64 *strides,
                       int p)
{
  gint64 out_strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (rank, out_dims, out_strides);
  void (*tiles) (const guint32 *, gint64, guint32 *, gint64, gint64, gint64) = transpose_words_portable;
#ifdef GRAFT_HAVE_X86_SIMD
  if (graft_kernel_table ()->avx2)
    tiles = transpose_words_avx2;
#endif
  gint64 matrices = 1;
  for (int d = 0; d < rank - 1; d++)
    if (d != p)
      matrices *= out_dims[d];
  gint64 in_off = 0, out_off = 0;
  for (gint64 m = 0; m < matrices; m++)
    {
      tiles (in + in_off, strides[rank - 1], out + out_off, out_strides[p], out_dims[rank - 1], out_dims[p]);
      for (int d = rank - 2; d >= 0; d--)
        {
          if (d == p)
            continue;
          index[d]++;
          in_off += strides[d];
          out_off += out_strides[d];
          if (index[d] < out_dims[d])
            break;
          in_off -= strides[d] * index[d];
          out_off -= out_strides[d] * index[d];
          index[d] = 0;
        }
    }
}

gboolean
graft_transpose_into (const GraftRtTensor *in, GraftRtTensor *out, const int *perm)
{
  if (out->numel == 0)
    return TRUE;
  if (in->rank == 0)
    {
      graft_copy_element (out, 0, in, 0);
      return TRUE;
    }
  gint64 dims[GRAFT_RT_MAX_RANK], out_dims[GRAFT_RT_MAX_RANK];
  int reduced_perm[GRAFT_RT_MAX_RANK];
  int rank = transpose_reduce (in->rank, in->dims, perm, dims, reduced_perm);
  gint64 in_strides[GRAFT_RT_MAX_RANK], strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (rank, dims, in_strides);
  for (int i = 0; i < rank; i++)
    {
      strides[i] = in_strides[reduced_perm[i]];
      out_dims[i] = dims[reduced_perm[i]];
    }
  gint64 off = 0;
  gint64 inner = out_dims[rank - 1], inner_stride = strides[rank - 1];
  gboolean word = out->dtype != GRAFT_DTYPE_STRING && graft_rt_dtype_size (out->dtype) == 4 && out->dtype == in->dtype;
  int p = 0;
  while (p < rank && strides[p] != 1)
    p++;
  if (word && p < rank - 1 && inner >= 8 && out_dims[p] >= 8)
    {
      transpose_words_tiled (in->data, out->data, rank, out_dims, strides, p);
      return TRUE;
    }
  for (gint64 o = 0; o < out->numel; o += inner)
    {
      if (inner_stride == 1)
        graft_copy_block (out, o, in, off, inner);
      else if (word)
        /* a strided gather of 4-byte elements (float32 key transposes in attention) */
        for (gint64 k = 0; k < inner; k++)
          ((guint32 *) out->data)[o + k] = ((const guint32 *) in->data)[off + k * inner_stride];
      else
        for (gint64 k = 0; k < inner; k++)
          graft_copy_element (out, o + k, in, off + k * inner_stride);
      for (int d = rank - 2; d >= 0; d--)
        {
          index[d]++;
          off += strides[d];
          if (index[d] < out_dims[d])
            break;
          off -= strides[d] * index[d];
          index[d] = 0;
        }
    }
  return TRUE;
}

static gboolean
kernel_transpose (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  int perm[GRAFT_RT_MAX_RANK];
  if (!get_perm (ctx->node, in->rank, perm, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  return out && graft_transpose_into (in, out, perm);
}

/* ---- Concat ---- */

static gboolean
infer_concat (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *first = NULL;
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  int rank = -1;

  for (guint i = 0; i < ctx->n_inputs; i++)
    if (graft_infer_input (ctx, i) && ctx->inputs[i].shape.rank >= 0)
      {
        first = &ctx->inputs[i];
        rank = first->shape.rank;
        break;
      }
  if (first == NULL)
    {
      GraftInferValue *any = graft_infer_input (ctx, 0);
      graft_infer_set_output_unknown (ctx, 0, any ? any->dtype : GRAFT_DTYPE_UNDEFINED, -1);
      return TRUE;
    }
  if (!graft_normalize_axis (&axis, rank, error))
    return FALSE;
  GraftShape out;
  graft_shape_copy (&out, &first->shape);
  gint64 total = 0;
  gboolean fixed = TRUE;
  /* the axis as a sum of like symbolic terms (two inputs sharing a batch) */
  GraftDim symbolic_total = graft_dim_fixed (0);
  for (guint i = 0; i < ctx->n_inputs; i++)
    {
      GraftInferValue *in = graft_infer_input (ctx, i);
      if (in == NULL)
        continue;
      if (in->shape.rank < 0)
        {
          fixed = FALSE;
          symbolic_total = graft_dim_unknown ();
          continue;
        }
      if (in->shape.rank != rank)
        {
          graft_shape_clear (&out);
          return graft_kernel_fail (error, "input %u has rank %d, input 0 has rank %d", i, in->shape.rank, rank);
        }
      for (int d = 0; d < rank; d++)
        {
          GraftDim *dim = &in->shape.dims[d];
          if (d == axis)
            {
              symbolic_total = symbolic_total.kind == GRAFT_DIM_FIXED && symbolic_total.value == 0
                               ? *dim : graft_dim_add (symbolic_total, *dim);
              if (dim->kind != GRAFT_DIM_FIXED)
                fixed = FALSE;
              else if (!graft_dim_add_checked (total, dim->value, &total))
                {
                  graft_shape_clear (&out);
                  return graft_kernel_fail (error, "the concatenated axis has more than 2^63 elements");
                }
            }
          else if (dim->kind == GRAFT_DIM_FIXED && out.dims[d].kind == GRAFT_DIM_FIXED && dim->value != out.dims[d].value)
            {
              gint64 expected = out.dims[d].value;   /* read before out is cleared */
              graft_shape_clear (&out);
              return graft_kernel_fail (error, "input %u has size %" G_GINT64_FORMAT " on axis %d, expected %" G_GINT64_FORMAT,
                                        i, dim->value, d, expected);
            }
          else if (out.dims[d].kind != GRAFT_DIM_FIXED && dim->kind == GRAFT_DIM_FIXED)
            out.dims[d] = *dim;
        }
    }
  out.dims[axis] = fixed ? graft_dim_fixed (total) : symbolic_total;
  graft_infer_set_output (ctx, 0, first->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_concat (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  if (out == NULL || !graft_normalize_axis (&axis, out->rank, error))
    return FALSE;
  gint64 outer = graft_dims_product (out->dims, 0, axis);
  gint64 out_block = graft_dims_product (out->dims, axis, out->rank);
  gint64 offset = 0;
  for (guint i = 0; i < ctx->n_inputs; i++)
    {
      GraftRtTensor *in = ctx->inputs[i];
      if (in == NULL)
        continue;
      if (in->dtype != out->dtype)
        return graft_kernel_fail (error, "input %u is %s, input 0 is %s", i, graft_dtype_to_string (in->dtype),
                                  graft_dtype_to_string (out->dtype));
      gint64 block = graft_dims_product (in->dims, axis, in->rank);
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (out, o * out_block + offset, in, o * block, block);
      offset += block;
    }
  return TRUE;
}

/* ---- Split ---- */

static gboolean
split_sizes (GraftNode *node, gint64 opset, gint64 dim, guint n_outputs, GraftRtTensor *split_input,
             gint64 *sizes, GError **error)
{
  gint64 n = 0;
  gint64 values[256];
  if (split_input)
    {
      if (!graft_rt_tensor_read_ints (split_input, values, 256, &n))
        return graft_kernel_fail (error, "split has too many entries");
    }
  else if (graft_node_has_attr (node, "split"))
    {
      guint na;
      const gint64 *a = graft_node_attr_ints (node, "split", &na);
      if (na > G_N_ELEMENTS (values))
        return graft_kernel_fail (error, "split has too many entries");
      n = a != NULL ? na : 0;   /* an empty "split" attribute has no array at all */
      if (n > 0)
        memcpy (values, a, sizeof (gint64) * n);
    }
  if (n > 0)
    {
      if (n != n_outputs)
        return graft_kernel_fail (error, "split has %" G_GINT64_FORMAT " entries for %u outputs", n, n_outputs);
      gint64 sum = 0;
      for (gint64 i = 0; i < n; i++)
        {
          /* The kernel copies blocks by these sizes: a negative one or a
           * sum that wraps would read outside the input. */
          if (values[i] < 0 || !graft_dim_add_checked (sum, values[i], &sum))
            return graft_kernel_fail (error, "split[%" G_GINT64_FORMAT "] = %" G_GINT64_FORMAT " is invalid", i, values[i]);
          sizes[i] = values[i];
        }
      if (sum != dim)
        return graft_kernel_fail (error, "split sizes add up to %" G_GINT64_FORMAT ", the axis has %" G_GINT64_FORMAT, sum, dim);
      return TRUE;
    }
  if (n_outputs == 0)
    return graft_kernel_fail (error, "Split has no outputs");
  gint64 chunk = dim / n_outputs + (dim % n_outputs != 0);
  if (!graft_node_has_attr (node, "num_outputs") && dim % n_outputs != 0)
    return graft_kernel_fail (error, "axis of size %" G_GINT64_FORMAT " cannot be split evenly into %u", dim, n_outputs);
  for (guint i = 0; i < n_outputs; i++)
    sizes[i] = MAX (0, MIN (chunk, dim - (gint64) i * chunk));
  return TRUE;
}

static gboolean
infer_split (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  if (in->shape.rank < 0)
    {
      for (guint i = 0; i < ctx->n_outputs; i++)
        graft_infer_set_output_unknown (ctx, i, in->dtype, -1);
      return TRUE;
    }
  if (in->shape.rank == 0)
    return graft_kernel_fail (error, "a scalar cannot be split");
  if (!graft_normalize_axis (&axis, in->shape.rank, error))
    return FALSE;
  GraftInferValue *split = graft_infer_input (ctx, 1);
  GraftDim dim = in->shape.dims[axis];
  gboolean known = dim.kind == GRAFT_DIM_FIXED && (split == NULL || split->data != NULL);
  g_autofree gint64 *sizes = g_new0 (gint64, MAX (ctx->n_outputs, 1));
  if (known && !split_sizes (ctx->node, ctx->opset, dim.value, ctx->n_outputs, split ? split->data : NULL, sizes, error))
    return FALSE;
  for (guint i = 0; i < ctx->n_outputs; i++)
    {
      GraftShape out;
      graft_shape_copy (&out, &in->shape);
      out.dims[axis] = known ? graft_dim_fixed (sizes[i]) : graft_dim_unknown ();
      graft_infer_set_output (ctx, i, in->dtype, &out);
      graft_shape_clear (&out);
    }
  return TRUE;
}

static gboolean
kernel_split (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  if (!graft_normalize_axis (&axis, in->rank, error))
    return FALSE;
  gint64 outer = graft_dims_product (in->dims, 0, axis);
  gint64 inner = graft_dims_product (in->dims, axis + 1, in->rank);
  gint64 offset = 0;
  for (guint i = 0; i < ctx->n_outputs; i++)
    {
      GraftRtTensor *out = graft_kernel_output (ctx, i, error);
      if (out == NULL)
        return FALSE;
      gint64 block = out->dims[axis] * inner;
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (out, o * block, in, o * in->dims[axis] * inner + offset, block);
      offset += block;
    }
  return TRUE;
}

/* ---- Slice ---- */

typedef struct {
  gint64 start[GRAFT_RT_MAX_RANK], step[GRAFT_RT_MAX_RANK], size[GRAFT_RT_MAX_RANK];
} SliceSpec;

static gboolean
slice_params (GraftInferContext *ctx, int rank, const GraftShape *shape, SliceSpec *spec, gboolean *known, GError **error)
{
  g_autofree gint64 *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  gint64 ns = 0, ne = 0, na = -1, nst = -1;

  *known = TRUE;
  if (ctx->opset < 10)
    {
      guint n1, n2, n3;
      const gint64 *a = graft_node_attr_ints (ctx->node, "starts", &n1);
      const gint64 *b = graft_node_attr_ints (ctx->node, "ends", &n2);
      const gint64 *c = graft_node_attr_ints (ctx->node, "axes", &n3);
      starts = g_memdup2 (a, sizeof (gint64) * n1); ns = n1;
      ends = g_memdup2 (b, sizeof (gint64) * n2); ne = n2;
      if (c)
        {
          axes = g_memdup2 (c, sizeof (gint64) * n3);
          na = n3;
        }
    }
  else
    {
      starts = graft_infer_input_ints (ctx, 1, &ns);
      ends = graft_infer_input_ints (ctx, 2, &ne);
      if (graft_infer_input (ctx, 3))
        {
          axes = graft_infer_input_ints (ctx, 3, &na);
          if (axes == NULL)
            *known = FALSE;
        }
      if (graft_infer_input (ctx, 4))
        {
          steps = graft_infer_input_ints (ctx, 4, &nst);
          if (steps == NULL)
            *known = FALSE;
        }
      if (starts == NULL || ends == NULL)
        *known = FALSE;
    }
  for (int d = 0; d < rank; d++)
    {
      spec->start[d] = 0;
      spec->step[d] = 1;
      spec->size[d] = shape->dims[d].kind == GRAFT_DIM_FIXED ? shape->dims[d].value : -1;
    }
  if (!*known)
    return TRUE;
  if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return graft_kernel_fail (error, "starts, ends, axes and steps have different lengths");
  gboolean seen[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 i = 0; i < ns; i++)
    {
      gint64 axis = axes ? axes[i] : i;
      if (!graft_normalize_axis (&axis, rank, error))
        return FALSE;
      if (seen[axis])
        return graft_kernel_fail (error, "axis %" G_GINT64_FORMAT " is repeated", axis);
      seen[axis] = TRUE;
      gint64 step = steps ? steps[i] : 1;
      if (step == 0)
        return graft_kernel_fail (error, "step 0 on axis %" G_GINT64_FORMAT, axis);
      if (shape->dims[axis].kind != GRAFT_DIM_FIXED)
        {
          spec->size[axis] = -1;
          continue;
        }
      gint64 dim = shape->dims[axis].value;
      gint64 s = starts[i], e = ends[i];
      if (s < 0)
        s += dim;
      if (e < 0)
        e += dim;
      if (step > 0)
        {
          s = CLAMP (s, 0, dim);
          e = CLAMP (e, 0, dim);
          spec->size[axis] = e > s ? (e - s + step - 1) / step : 0;
        }
      else
        {
          s = CLAMP (s, 0, dim - 1);
          e = CLAMP (e, -1, dim - 1);
          spec->size[axis] = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
      /* ends that were INT_MIN/MAX sentinels are handled by the clamps */
      spec->start[axis] = s;
      spec->step[axis] = step;
    }
  return TRUE;
}

/* Which axes a Slice may cut, as far as that is known before its starts
 * and ends are: exporters compute those at run time (attention heads),
 * and every other dim, symbolic or not, passes through. */
static void
slice_cut_axes (GraftInferContext *ctx, int rank, gboolean *cut)
{
  GraftInferValue *axes_input = ctx->n_inputs > 3 ? graft_infer_input (ctx, 3) : NULL;
  g_autofree gint64 *axes_values = NULL;
  guint n_attr = 0;
  gint64 n_axes;
  const gint64 *axes = graft_node_attr_ints (ctx->node, "axes", &n_attr);

  n_axes = n_attr;
  if (axes == NULL && axes_input != NULL)
    axes = axes_values = graft_infer_input_ints (ctx, 3, &n_axes);
  for (int d = 0; d < rank; d++)
    cut[d] = FALSE;
  if (axes == NULL && (axes_input != NULL || graft_node_has_attr (ctx->node, "axes")))
    {
      /* Axes exist but are not known: any dim may be cut. */
      for (int d = 0; d < rank; d++)
        cut[d] = TRUE;
      return;
    }
  if (axes == NULL)
    {
      /* Default axes: the first len(starts) dims. */
      GraftInferValue *starts = graft_infer_input (ctx, 1);
      guint n_starts = 0;
      gint64 count = graft_node_attr_ints (ctx->node, "starts", &n_starts) ? n_starts
                     : starts && starts->shape.rank == 1 && starts->shape.dims[0].kind == GRAFT_DIM_FIXED
                       ? starts->shape.dims[0].value : rank;
      for (gint64 d = 0; d < count && d < rank; d++)
        cut[d] = TRUE;
      return;
    }
  for (gint64 i = 0; i < n_axes; i++)
    {
      gint64 axis = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (axis >= 0 && axis < rank)
        cut[axis] = TRUE;
    }
}

static gboolean
infer_slice (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  SliceSpec spec;
  gboolean known, cut[GRAFT_RT_MAX_RANK];
  if (in->shape.rank < 0 || in->shape.rank > GRAFT_RT_MAX_RANK)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
      return TRUE;
    }
  if (!slice_params (ctx, in->shape.rank, &in->shape, &spec, &known, error))
    return FALSE;
  slice_cut_axes (ctx, in->shape.rank, cut);
  GraftShape out;
  graft_shape_init (&out, in->shape.rank);
  for (int d = 0; d < out.rank; d++)
    {
      if (known && spec.size[d] >= 0)
        out.dims[d] = graft_dim_fixed (spec.size[d]);
      else
        out.dims[d] = cut[d] ? graft_dim_unknown () : in->shape.dims[d];
    }
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_slice (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  g_autofree GraftInferValue *infos = g_new0 (GraftInferValue, ctx->n_inputs);
  for (guint i = 0; i < ctx->n_inputs; i++)
    infos[i] = (GraftInferValue) { ctx->inputs[i] != NULL, GRAFT_VALUE_TENSOR, 0, GRAFT_SHAPE_UNKNOWN, ctx->inputs[i] };
  GraftInferContext ictx = { ctx->node, ctx->opset, ctx->n_inputs, infos, 0, NULL };
  GraftShape shape;
  SliceSpec spec;
  gboolean known;
  graft_rt_tensor_get_shape (in, &shape);
  gboolean ok = slice_params (&ictx, in->rank, &shape, &spec, &known, error);
  graft_shape_clear (&shape);
  if (!ok)
    return FALSE;
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, in->dtype, in->rank, spec.size, error);
  if (out == NULL)
    return FALSE;
  if (out->numel == 0)
    return TRUE;
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (in->rank, in->dims, strides);
  gint64 base = 0;
  for (int d = 0; d < in->rank; d++)
    base += spec.start[d] * strides[d];
  /* Runs of consecutive values: the trailing axes kept whole, and the
   * axis before them taken with step 1 (a channel slice of NCHW copies
   * whole planes, GhostNet's), one block copy each. */
  int inner = in->rank;
  while (inner > 0 && spec.step[inner - 1] == 1 &&
         (inner == in->rank || (spec.start[inner] == 0 && out->dims[inner] == in->dims[inner])))
    inner--;
  gint64 run = graft_dims_product (out->dims, inner, in->rank);
  gint64 off = base;
  for (gint64 o = 0; o < out->numel; o += run)
    {
      if (run == 1)
        graft_copy_element (out, o, in, off);
      else
        graft_copy_block (out, o, in, off, run);
      for (int d = inner - 1; d >= 0; d--)
        {
          index[d]++;
          off += spec.step[d] * strides[d];
          if (index[d] < out->dims[d])
            break;
          off -= spec.step[d] * strides[d] * index[d];
          index[d] = 0;
        }
    }
  return TRUE;
}

/* ---- Expand, Tile ---- */

static gboolean
infer_expand (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 n;
  g_autofree gint64 *shape = graft_infer_input_ints (ctx, 1, &n);
  if (shape == NULL)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
      return TRUE;
    }
  GraftShape target, out;
  graft_shape_init_fixed (&target, n, shape);
  gboolean ok = graft_shape_broadcast (&in->shape, &target, &out, error);
  graft_shape_clear (&target);
  if (!ok)
    return FALSE;
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* dst[0..n·bytes) = n copies of the bytes at dst[0..bytes), by doubling
 * (memory speed for a broadcast of one element as for a row). */
static void
repeat_bytes (char *dst, gsize bytes, gint64 n)
{
  gsize total = bytes * n, filled = bytes;
  while (filled < total)
    {
      gsize chunk = MIN (filled, total - filled);
      memcpy (dst + filled, dst, chunk);
      filled += chunk;
    }
}

/* out = in broadcast to out's shape (not strings): the innermost axes
 * that in has in full are one block, the broadcast axes just outside
 * them repeat it, and only the axes further out are walked one index
 * at a time (Llama's key/value heads, attention masks). */
static void
broadcast_copy_blocks (GraftRtTensor *out, const GraftRtTensor *in)
{
  int R = out->rank, shift = out->rank - in->rank;
  gint64 idims[GRAFT_RT_MAX_RANK], istrides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  gsize e = graft_rt_dtype_size (out->dtype);
  for (int d = 0; d < R; d++)
    idims[d] = d < shift ? 1 : in->dims[d - shift];
  gint64 stride = 1;
  for (int d = R - 1; d >= 0; d--)
    {
      istrides[d] = idims[d] == 1 ? 0 : stride;
      stride *= idims[d];
    }
  int k = R;                 /* axes k.. : a block in has in full */
  gint64 block = 1, repeats = 1;
  while (k > 0 && idims[k - 1] == out->dims[k - 1])
    block *= out->dims[--k];
  int j = k;                 /* axes j..k-1: broadcast, the block repeated */
  while (j > 0 && idims[j - 1] == 1)
    repeats *= out->dims[--j];
  gsize block_bytes = block * e;
  gint64 outer = out->numel / MAX (block * repeats, 1);
  char *dst = out->data;
  for (gint64 o = 0; o < outer; o++)
    {
      gint64 off = 0;
      for (int d = 0; d < j; d++)
        off += index[d] * istrides[d];
      memcpy (dst, (const char *) in->data + off * e, block_bytes);
      repeat_bytes (dst, block_bytes, repeats);
      dst += block_bytes * repeats;
      graft_index_next (index, out->dims, j);
    }
}

static gboolean
kernel_broadcast_copy (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  const GraftRtTensor *ins[1] = { in };
  GraftBroadcastIter iter;
  if (out == NULL)
    return FALSE;
  if (out->dtype != GRAFT_DTYPE_STRING && out->numel > 0)
    {
      broadcast_copy_blocks (out, in);
      return TRUE;
    }
  graft_broadcast_iter_init (&iter, out, ins, 1);
  if (out->numel == 0)
    return TRUE;
  if (out->rank == 0 || out->dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&iter))
        graft_copy_element (out, i, in, iter.offsets[0]);
      return TRUE;
    }
  /* row by row of the last axis: a copy, or one value repeated (the
   * element by element walk took wav2vec2's attention mask, expanded over
   * heads and queries, 0.12 ms) */
  gsize size = graft_rt_dtype_size (out->dtype);
  gint64 inner = out->dims[out->rank - 1];
  gboolean repeat = iter.strides[0][out->rank - 1] == 0;
  guint8 *dst = out->data;
  for (gint64 o = 0; o < out->numel; o += inner, graft_broadcast_iter_next_row (&iter))
    {
      const guint8 *src = (const guint8 *) in->data + iter.offsets[0] * size;
      if (repeat)
        fill_elements (dst + o * size, inner, src, size);
      else
        memcpy (dst + o * size, src, inner * size);
    }
  return TRUE;
}

static gboolean
infer_tile (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 n;
  g_autofree gint64 *repeats = graft_infer_input_ints (ctx, 1, &n);
  if (repeats == NULL || in->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, in->shape.rank);
      return TRUE;
    }
  if (n != in->shape.rank)
    return graft_kernel_fail (error, "repeats has %" G_GINT64_FORMAT " entries for rank %d", n, in->shape.rank);
  for (int d = 0; d < n; d++)
    if (repeats[d] < 0)
      return graft_kernel_fail (error, "repeats[%d] = %" G_GINT64_FORMAT " is negative", d, repeats[d]);
  GraftShape out;
  graft_shape_copy (&out, &in->shape);
  for (int d = 0; d < out.rank; d++)
    out.dims[d] = out.dims[d].kind == GRAFT_DIM_FIXED
                  ? graft_dim_multiply (out.dims[d], graft_dim_fixed (repeats[d])) : graft_dim_unknown ();
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_tile (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  if (out == NULL)
    return FALSE;
  graft_rt_strides (in->rank, in->dims, strides);
  for (gint64 o = 0; o < out->numel; o++)
    {
      gint64 off = 0;
      for (int d = 0; d < in->rank; d++)
        off += (index[d] % in->dims[d]) * strides[d];
      graft_copy_element (out, o, in, off);
      graft_index_next (index, out->dims, in->rank);
    }
  return TRUE;
}

/* ---- Pad ---- */

/* The index along an axis of dim elements that output position i (begin
 * pads already taken off) reads, or -1 where it takes the constant. */
static inline gint64
pad_source (gint64 i, gint64 dim, GraftPadMode m)
{
  if (i >= 0 && i < dim)
    return i;
  if (m == GRAFT_PAD_CONSTANT || dim == 0)
    return -1;
  if (m == GRAFT_PAD_REFLECT)
    {
      gint64 period = dim > 1 ? 2 * (dim - 1) : 1;
      i = ((i % period) + period) % period;
      return i >= dim ? period - i : i;
    }
  if (m == GRAFT_PAD_EDGE)
    return CLAMP (i, 0, dim - 1);
  return ((i % dim) + dim) % dim;
}

static void
set_pad_value (GraftKernelContext *ctx, GraftRtTensor *out, gint64 o, double value)
{
  if (out->dtype == GRAFT_DTYPE_STRING)
    {
      g_free (((char **) out->data)[o]);
      ((char **) out->data)[o] = g_strdup ("");
    }
  else if (graft_dtype_is_float (out->dtype))
    graft_rt_tensor_set_f64 (out, o, value);
  else
    graft_rt_tensor_set_i64 (out, o, graft_kernel_input (ctx, 2) ? graft_rt_tensor_get_i64 (ctx->inputs[2], 0) : (gint64) value);
}


/* Output columns [from, to) of a row off its input row src (width
 * elements, begin pad b): mapped by the mode, or fill. */
static inline void
pad_row_edge (guint8 *dst, const guint8 *src, gint64 from, gint64 to, gint64 b, gint64 width, GraftPadMode m,
              const guint8 *fill, gsize size)
{
  if (m == GRAFT_PAD_CONSTANT)
    {
      fill_elements (dst + from * size, to - from, fill, size);   /* off the input: all fill */
      return;
    }
  for (gint64 j = from; j < to; j++)
    {
      gint64 i = pad_source (j - b, width, m);
      memcpy (dst + j * size, i < 0 ? fill : src + i * size, size);
    }
}

/* Pad of a fixed-size dtype row by row of the last axis (Swin pads its
 * [N, H, W, C] maps to whole windows: rows of C floats): each output row is
 * one input row (its outer coordinates mapped by the mode) or, off the
 * input with a constant, all fill; inside a row the input's run is one
 * copy and only the edges are mapped element by element. Negative pads
 * crop. */
void
graft_pad_rows (const GraftRtTensor *in, GraftRtTensor *out, const gint64 *begin, GraftPadMode m, const guint8 *fill)
{
  int rank = in->rank, outer = rank - 1;
  gsize size = graft_rt_dtype_size (out->dtype);
  gint64 width = in->dims[outer], out_width = out->dims[outer], b = begin[outer];
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (rank, in->dims, strides);
  /* the columns [j0, j1) of an output row read input columns j - b in order */
  gint64 j0 = CLAMP (b, 0, out_width), j1 = CLAMP (b + width, j0, out_width);
  gint64 rows = out_width > 0 ? out->numel / out_width : 0;
  const guint8 *src_data = in->data;
  guint8 *dst = out->data;
  for (gint64 r = 0; r < rows; r++, dst += out_width * size)
    {
      gint64 off = 0;
      gboolean outside = FALSE;
      for (int d = 0; d < outer && !outside; d++)
        {
          gint64 i = pad_source (index[d] - begin[d], in->dims[d], m);
          outside = i < 0;
          off += i * strides[d];
        }
      graft_index_next (index, out->dims, outer);
      if (outside)
        {
          fill_elements (dst, out_width, fill, size);
          continue;
        }
      const guint8 *src = src_data + off * size;
      pad_row_edge (dst, src, 0, j0, b, width, m, fill, size);
      if (j1 > j0)
        memcpy (dst + j0 * size, src + (j0 - b) * size, (j1 - j0) * size);
      pad_row_edge (dst, src, j1, out_width, b, width, m, fill, size);
    }
}

static gboolean
infer_pad (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  g_autofree gint64 *pads = NULL, *axes = NULL;
  gint64 n = 0, na = -1;
  if (ctx->opset < 11)
    {
      guint np;
      const gint64 *p = graft_node_attr_ints (ctx->node, "pads", &np);
      if (p == NULL)
        p = graft_node_attr_ints (ctx->node, "paddings", &np);
      pads = g_memdup2 (p, sizeof (gint64) * MAX (np, 1));
      n = np;
    }
  else
    {
      pads = graft_infer_input_ints (ctx, 1, &n);
      if (graft_infer_input (ctx, 3))
        axes = graft_infer_input_ints (ctx, 3, &na);
    }
  if (pads == NULL || in->shape.rank < 0 || (graft_infer_input (ctx, 3) && axes == NULL))
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, in->shape.rank);
      return TRUE;
    }
  int rank = in->shape.rank;
  gint64 full[2 * GRAFT_RT_MAX_RANK] = { 0 };
  gint64 n_axes = na >= 0 ? na : rank;
  if (n != 2 * n_axes || rank > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "pads has %" G_GINT64_FORMAT " entries, expected %" G_GINT64_FORMAT, n, 2 * n_axes);
  for (gint64 i = 0; i < n_axes; i++)
    {
      gint64 a = axes ? axes[i] : i;
      if (!graft_normalize_axis (&a, rank, error))
        return FALSE;
      full[a] = pads[i];
      full[a + rank] = pads[i + n_axes];
    }
  GraftShape out;
  graft_shape_copy (&out, &in->shape);
  for (int d = 0; d < rank; d++)
    if (out.dims[d].kind == GRAFT_DIM_FIXED)
      out.dims[d].value += full[d] + full[d + rank];
    else if (full[d] != 0 || full[d + rank] != 0)
      out.dims[d] = graft_dim_unknown ();   /* a symbolic dim unpadded stays itself (batch through Swin's pad) */
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  /* keep the normalised pads for the kernel: recomputed there */
  return TRUE;
}

static gboolean
kernel_pad (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  const char *mode = graft_node_attr_string (ctx->node, "mode", "constant");
  int rank = in->rank;
  gint64 begin[GRAFT_RT_MAX_RANK] = { 0 };
  if (out == NULL)
    return FALSE;

  /* begin pads = out - in - end; recover begins from the pads source */
  gint64 pads[2 * GRAFT_RT_MAX_RANK] = { 0 }, n = 0;
  gint64 axes[GRAFT_RT_MAX_RANK], na = -1;
  if (ctx->opset < 11)
    {
      guint np;
      const gint64 *p = graft_node_attr_ints (ctx->node, "pads", &np);
      if (p == NULL)
        p = graft_node_attr_ints (ctx->node, "paddings", &np);
      n = MIN (np, 2 * GRAFT_RT_MAX_RANK);
      memcpy (pads, p, sizeof (gint64) * n);
    }
  else
    {
      graft_rt_tensor_read_ints (ctx->inputs[1], pads, 2 * GRAFT_RT_MAX_RANK, &n);
      if (graft_kernel_input (ctx, 3))
        graft_rt_tensor_read_ints (ctx->inputs[3], axes, GRAFT_RT_MAX_RANK, &na);
    }
  gint64 n_axes = na >= 0 ? na : rank;
  for (gint64 i = 0; i < n_axes; i++)
    {
      gint64 a = na >= 0 ? axes[i] : i;
      if (a < 0)
        a += rank;
      begin[a] = pads[i];
    }

  double value = ctx->opset < 11 ? graft_node_attr_float (ctx->node, "value", 0) :
                 (graft_kernel_input (ctx, 2) && ctx->inputs[2]->numel > 0 ? graft_rt_tensor_get_f64 (ctx->inputs[2], 0) : 0);
  GraftPadMode m = strcmp (mode, "reflect") == 0 ? GRAFT_PAD_REFLECT : strcmp (mode, "edge") == 0 ? GRAFT_PAD_EDGE
              : strcmp (mode, "wrap") == 0 ? GRAFT_PAD_WRAP : GRAFT_PAD_CONSTANT;
  if (out->numel == 0)
    return TRUE;
  if (rank > 0 && in->numel > 0 && out->dtype != GRAFT_DTYPE_STRING)
    {
      /* the constant in the output's dtype, as its bytes */
      set_pad_value (ctx, out, 0, value);
      guint8 fill[16];
      memcpy (fill, out->data, graft_rt_dtype_size (out->dtype));
      graft_pad_rows (in, out, begin, m, fill);
      return TRUE;
    }
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (rank, in->dims, strides);
  for (gint64 o = 0; o < out->numel; o++)
    {
      gint64 off = 0;
      gboolean outside = FALSE;
      for (int d = 0; d < rank; d++)
        {
          gint64 i = pad_source (index[d] - begin[d], in->dims[d], m);
          if (i < 0)
            {
              outside = TRUE;
              break;
            }
          off += i * strides[d];
        }
      if (outside)
        set_pad_value (ctx, out, o, value);
      else
        graft_copy_element (out, o, in, off);
      graft_index_next (index, out->dims, rank);
    }
  return TRUE;
}

/* ---- Shape, Size ---- */

static void
shape_range (GraftNode *node, int rank, gint64 *start, gint64 *end)
{
  gint64 s = graft_node_attr_int (node, "start", 0);
  gint64 e = graft_node_attr_int (node, "end", rank);
  if (s < 0)
    s += rank;
  if (e < 0)
    e += rank;
  *start = CLAMP (s, 0, rank);
  *end = CLAMP (e, 0, rank);
  if (*end < *start)
    *end = *start;
}

static gboolean
infer_shape (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  if (in->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, GRAFT_DTYPE_INT64, 1);
      return TRUE;
    }
  gint64 s, e;
  shape_range (ctx->node, in->shape.rank, &s, &e);
  gint64 n = e - s;
  graft_infer_set_output_fixed (ctx, 0, GRAFT_DTYPE_INT64, 1, &n);
  return TRUE;
}

static gboolean
kernel_shape (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 s, e;
  if (out == NULL)
    return FALSE;
  shape_range (ctx->node, in->rank, &s, &e);
  for (gint64 i = s; i < e; i++)
    ((gint64 *) out->data)[i - s] = in->dims[i];
  return TRUE;
}

static gboolean
infer_size (GraftInferContext *ctx, GError **error)
{
  graft_infer_set_output_fixed (ctx, 0, GRAFT_DTYPE_INT64, 0, NULL);
  return TRUE;
}

static gboolean
kernel_size (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  *(gint64 *) out->data = graft_kernel_input (ctx, 0)->numel;
  return TRUE;
}

/* ---- Identity, Constant, ConstantOfShape ---- */

static gboolean
infer_identity (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  if (in == NULL)
    return graft_kernel_fail (error, "input is missing");
  graft_infer_set_output (ctx, 0, in->dtype, &in->shape);
  ctx->outputs[0].kind = in->kind;
  return TRUE;
}

static gboolean
kernel_identity (GraftKernelContext *ctx, GError **error)
{
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (graft_kernel_input (ctx, 0)));
  return TRUE;
}

static GraftRtTensor *
constant_value (GraftNode *node, GError **error)
{
  GraftAttribute *a;
  if ((a = graft_node_get_attribute (node, "value")) && a->t)
    return graft_rt_tensor_new_from_tensor (a->t, error);
  if ((a = graft_node_get_attribute (node, "sparse_value")) && a->t)
    return graft_rt_tensor_new_from_tensor (a->t, error);
  if ((a = graft_node_get_attribute (node, "value_float")))
    return graft_rt_tensor_new_scalar_f32 (a->f);
  if ((a = graft_node_get_attribute (node, "value_int")))
    return graft_rt_tensor_new_scalar_i64 (a->i);
  if ((a = graft_node_get_attribute (node, "value_floats")) && a->floats)
    {
      gint64 n = a->floats->len;
      GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 1, &n, error);
      for (gint64 i = 0; t && i < n; i++)
        ((float *) t->data)[i] = g_array_index (a->floats, double, i);
      return t;
    }
  if ((a = graft_node_get_attribute (node, "value_ints")) && a->ints)
    {
      gint64 n = a->ints->len;
      GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 1, &n, error);
      if (t)
        memcpy (t->data, a->ints->data, sizeof (gint64) * n);
      return t;
    }
  if ((a = graft_node_get_attribute (node, "value_string")))
    {
      GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_STRING, 0, NULL, error);
      g_free (((char **) t->data)[0]);
      ((char **) t->data)[0] = graft_attribute_dup_string (a);
      return t;
    }
  if ((a = graft_node_get_attribute (node, "value_strings")) && a->strings)
    {
      gint64 n = a->strings->len;
      GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_STRING, 1, &n, error);
      for (gint64 i = 0; t && i < n; i++)
        {
          gsize len;
          const char *s = g_bytes_get_data (a->strings->pdata[i], &len);
          g_free (((char **) t->data)[i]);
          ((char **) t->data)[i] = g_strndup (s, len);
        }
      return t;
    }
  graft_kernel_fail (error, "Constant has no value attribute");
  return NULL;
}

static gboolean
infer_constant (GraftInferContext *ctx, GError **error)
{
  g_autoptr(GraftRtTensor) t = constant_value (ctx->node, error);
  if (t == NULL)
    return FALSE;
  graft_infer_set_output_fixed (ctx, 0, t->dtype, t->rank, t->dims);
  return TRUE;
}

static gboolean
kernel_constant (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *t = constant_value (ctx->node, error);
  if (t == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, t);
  return TRUE;
}

static gboolean
infer_constant_of_shape (GraftInferContext *ctx, GError **error)
{
  GraftAttribute *a = graft_node_get_attribute (ctx->node, "value");
  GraftDType dtype = a && a->t ? a->t->dtype : GRAFT_DTYPE_FLOAT32;
  gint64 n;
  g_autofree gint64 *dims = graft_infer_input_ints (ctx, 0, &n);
  if (dims == NULL)
    {
      GraftInferValue *in = graft_infer_input (ctx, 0);
      int rank = in && in->shape.rank == 1 && in->shape.dims[0].kind == GRAFT_DIM_FIXED ? in->shape.dims[0].value : -1;
      graft_infer_set_output_unknown (ctx, 0, dtype, rank);
      return TRUE;
    }
  graft_infer_set_output_fixed (ctx, 0, dtype, n, dims);
  return TRUE;
}

static gboolean
kernel_constant_of_shape (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  GraftAttribute *a = graft_node_get_attribute (ctx->node, "value");
  if (out == NULL)
    return FALSE;
  if (a == NULL || a->t == NULL)
    {
      memset (out->data, 0, out->nbytes);
      return TRUE;
    }
  g_autoptr(GraftRtTensor) v = graft_rt_tensor_new_from_tensor (a->t, error);
  if (v == NULL)
    return FALSE;
  for (gint64 i = 0; i < out->numel; i++)
    graft_copy_element (out, i, v, 0);
  return TRUE;
}

/* ---- Range, EyeLike, Trilu ---- */

static gboolean
infer_range (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *s = graft_infer_input (ctx, 0), *l = graft_infer_input (ctx, 1), *d = graft_infer_input (ctx, 2);
  if (s == NULL || l == NULL || d == NULL)
    return graft_kernel_fail (error, "Range needs start, limit and delta");
  if (s->data == NULL || l->data == NULL || d->data == NULL)
    {
      graft_infer_set_output_unknown (ctx, 0, s->dtype, 1);
      return TRUE;
    }
  double start = graft_rt_tensor_get_f64 (s->data, 0), limit = graft_rt_tensor_get_f64 (l->data, 0);
  double delta = graft_rt_tensor_get_f64 (d->data, 0);
  if (delta == 0)
    return graft_kernel_fail (error, "delta is 0");
  double count = ceil ((limit - start) / delta);
  /* inf, nan or past 2^62: no tensor (and no defined cast to an integer) */
  if (!(count < 4611686018427387904.0))
    return graft_kernel_fail (error, "Range from %g to %g by %g has too many elements", start, limit, delta);
  gint64 n = MAX ((gint64) count, 0);
  graft_infer_set_output_fixed (ctx, 0, s->dtype, 1, &n);
  return TRUE;
}

static gboolean
kernel_range (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  if (graft_dtype_is_float (out->dtype))
    {
      double start = graft_rt_tensor_get_f64 (ctx->inputs[0], 0), delta = graft_rt_tensor_get_f64 (ctx->inputs[2], 0);
      for (gint64 i = 0; i < out->numel; i++)
        graft_rt_tensor_set_f64 (out, i, start + i * delta);
    }
  else
    {
      gint64 start = graft_rt_tensor_get_i64 (ctx->inputs[0], 0), delta = graft_rt_tensor_get_i64 (ctx->inputs[2], 0);
      for (gint64 i = 0; i < out->numel; i++)
        graft_rt_tensor_set_i64 (out, i, start + i * delta);
    }
  return TRUE;
}

static gboolean
infer_eye_like (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  GraftDType dtype = graft_node_attr_int (ctx->node, "dtype", in->dtype);
  graft_infer_set_output (ctx, 0, dtype, &in->shape);
  return TRUE;
}

static gboolean
kernel_eye_like (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 k = graft_node_attr_int (ctx->node, "k", 0);
  if (out == NULL)
    return FALSE;
  if (out->rank != 2)
    return graft_kernel_fail (error, "EyeLike needs a 2-D input");
  memset (out->data, 0, out->nbytes);
  for (gint64 r = 0; r < out->dims[0]; r++)
    {
      gint64 c = r + k;
      if (c >= 0 && c < out->dims[1])
        graft_rt_tensor_set_f64 (out, r * out->dims[1] + c, 1);
    }
  return TRUE;
}

static gboolean
kernel_trilu (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 k = graft_kernel_input (ctx, 1) ? graft_rt_tensor_get_i64 (ctx->inputs[1], 0) : 0;
  gboolean upper = graft_node_attr_int (ctx->node, "upper", 1);
  if (out == NULL)
    return FALSE;
  if (in->rank < 2)
    return graft_kernel_fail (error, "Trilu needs rank >= 2");
  gint64 rows = in->dims[in->rank - 2], cols = in->dims[in->rank - 1];
  gsize e = graft_rt_dtype_size (in->dtype);
  memset (out->data, 0, out->nbytes);
  for (gint64 i = 0; i < in->numel; i++)
    {
      gint64 c = i % cols, r = (i / cols) % rows;
      gboolean keep = upper ? c - r >= k : c - r <= k;
      if (keep)
        memcpy ((char *) out->data + i * e, (const char *) in->data + i * e, e);
    }
  return TRUE;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

static gboolean
infer_depth_space (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 b = graft_node_attr_int (ctx->node, "blocksize", 0);
  gboolean to_space = strcmp (ctx->node->op_type, "DepthToSpace") == 0;
  if (b <= 0 || b > G_MAXINT32)
    return graft_kernel_fail (error, "blocksize %" G_GINT64_FORMAT " is out of range", b);
  if (in->shape.rank != 4)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, 4);
      return TRUE;
    }
  GraftShape out;
  graft_shape_copy (&out, &in->shape);
  GraftDim *c = &out.dims[1], *h = &out.dims[2], *w = &out.dims[3];
  if (to_space)
    {
      if (c->kind == GRAFT_DIM_FIXED)
        c->value /= b * b;
      if (h->kind == GRAFT_DIM_FIXED)
        *h = graft_dim_multiply (*h, graft_dim_fixed (b));
      if (w->kind == GRAFT_DIM_FIXED)
        *w = graft_dim_multiply (*w, graft_dim_fixed (b));
    }
  else
    {
      if (c->kind == GRAFT_DIM_FIXED)
        *c = graft_dim_multiply (*c, graft_dim_fixed (b * b));
      if (h->kind == GRAFT_DIM_FIXED)
        h->value /= b;
      if (w->kind == GRAFT_DIM_FIXED)
        w->value /= b;
    }
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_depth_space (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 b = graft_node_attr_int (ctx->node, "blocksize", 1);
  gboolean crd = strcmp (graft_node_attr_string (ctx->node, "mode", "DCR"), "CRD") == 0;
  gboolean to_space = strcmp (ctx->node->op_type, "DepthToSpace") == 0;
  if (out == NULL)
    return FALSE;
  gint64 N = in->dims[0];
  if (to_space)
    {
      gint64 C = out->dims[1], H = in->dims[2], W = in->dims[3];
      for (gint64 n = 0; n < N; n++)
        for (gint64 c = 0; c < C; c++)
          for (gint64 h = 0; h < H * b; h++)
            for (gint64 w = 0; w < W * b; w++)
              {
                gint64 bh = h % b, bw = w % b;
                gint64 ic = crd ? c * b * b + bh * b + bw : (bh * b + bw) * C + c;
                gint64 si = ((n * in->dims[1] + ic) * H + h / b) * W + w / b;
                gint64 di = ((n * C + c) * H * b + h) * W * b + w;
                graft_copy_element (out, di, in, si);
              }
    }
  else
    {
      gint64 C = in->dims[1], H = out->dims[2], W = out->dims[3];
      for (gint64 n = 0; n < N; n++)
        for (gint64 c = 0; c < C; c++)
          for (gint64 h = 0; h < H * b; h++)
            for (gint64 w = 0; w < W * b; w++)
              {
                gint64 bh = h % b, bw = w % b;
                gint64 oc = crd ? c * b * b + bh * b + bw : (bh * b + bw) * C + c;
                gint64 si = ((n * C + c) * H * b + h) * W * b + w;
                gint64 di = ((n * out->dims[1] + oc) * H + h / b) * W + w / b;
                graft_copy_element (out, di, in, si);
              }
    }
  return TRUE;
}

/* ---- Cast, CastLike, Dropout ---- */

static gboolean
infer_cast (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  GraftDType to;
  if (strcmp (ctx->node->op_type, "CastLike") == 0)
    {
      GraftInferValue *like = graft_infer_input (ctx, 1);
      to = like ? like->dtype : GRAFT_DTYPE_UNDEFINED;
    }
  else
    {
      GraftAttribute *a = graft_node_get_attribute (ctx->node, "to");
      if (a && a->type == GRAFT_ATTR_STRING)
        to = graft_dtype_from_string (graft_node_attr_string (ctx->node, "to", ""));
      else
        to = graft_node_attr_int (ctx->node, "to", 0);
    }
  if (!graft_dtype_is_valid (to) || to == GRAFT_DTYPE_UNDEFINED)
    return graft_kernel_fail (error, "invalid target type %d", to);
  graft_infer_set_output (ctx, 0, to, &in->shape);
  return TRUE;
}

static gboolean
kernel_cast (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftDType to = ctx->inferred[0].dtype;
  if (to == GRAFT_DTYPE_FLOAT8E8M0 && g_strcmp0 (graft_node_attr_string (ctx->node, "round_mode", "up"), "up") != 0)
    return graft_kernel_unsupported (error, "round_mode '%s' (only 'up')", graft_node_attr_string (ctx->node, "round_mode", ""));
  if (graft_narrow_dtype_is_narrow (to) && !graft_node_attr_int (ctx->node, "saturate", 1) &&
      in->dtype != GRAFT_DTYPE_STRING)
    {
      /* graft_rt_tensor_cast saturates, as Cast does by default. */
      GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
      if (out == NULL)
        return FALSE;
      for (gint64 i = 0; i < in->numel; i++)
        ((guint8 *) out->data)[i] = graft_narrow_dtype_encode (to, graft_rt_tensor_get_f64 (in, i), FALSE);
      return TRUE;
    }
  /* a cast to the type it has (T5's hidden_states.to(torch.float32) before
   * each norm) is the tensor itself, as Identity gives it */
  if (in->kind == GRAFT_RT_TENSOR && in->dtype == to)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (in));
      return TRUE;
    }
  GraftRtTensor *out = graft_rt_tensor_cast (in, to, error);
  if (out == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, out);
  return TRUE;
}

static gboolean
infer_dropout (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  graft_infer_set_output (ctx, 0, in->dtype, &in->shape);
  if (ctx->n_outputs > 1)
    graft_infer_set_output (ctx, 1, GRAFT_DTYPE_BOOL, &in->shape);
  return TRUE;
}

static gboolean
kernel_dropout (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  GraftRtTensor *training = graft_kernel_input (ctx, 2);
  if (training && ((guint8 *) training->data)[0])
    {
      GraftRtTensor *ratio = graft_kernel_input (ctx, 1);
      double r = ratio ? graft_rt_tensor_get_f64 (ratio, 0) : graft_node_attr_float (ctx->node, "ratio", 0.5);
      if (r != 0)
        return graft_kernel_unsupported (error, "Dropout in training mode (random masks) is not supported");
    }
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (in));
  if (graft_kernel_wants_output (ctx, 1))
    {
      GraftRtTensor *mask = graft_kernel_output (ctx, 1, error);
      if (mask == NULL)
        return FALSE;
      memset (mask->data, 1, mask->nbytes);
    }
  return TRUE;
}

/* ---- CenterCropPad ---- */

/* Target size per axis of x (x's own size where the node leaves it). */
static gboolean
center_crop_sizes (GraftNode *node, int rank, const gint64 *shape, gint64 n_shape, gint64 *sizes, GError **error)
{
  guint n_axes;
  const gint64 *axes = graft_node_attr_ints (node, "axes", &n_axes);
  if (axes ? (gint64) n_axes != n_shape : n_shape != rank)
    return graft_kernel_fail (error, "shape has %" G_GINT64_FORMAT " values for %d axes", n_shape, axes ? (int) n_axes : rank);
  for (gint64 i = 0; i < n_shape; i++)
    {
      gint64 axis = axes ? axes[i] : i;
      if (!graft_normalize_axis (&axis, rank, error))
        return FALSE;
      if (shape[i] < 0)
        return graft_kernel_fail (error, "negative target size %" G_GINT64_FORMAT, shape[i]);
      sizes[axis] = shape[i];
    }
  return TRUE;
}

static gboolean
infer_center_crop_pad (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 n;
  g_autofree gint64 *shape = graft_infer_input_ints (ctx, 1, &n);
  if (x->shape.rank < 0 || shape == NULL)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank);
      return TRUE;
    }
  gint64 sizes[GRAFT_RT_MAX_RANK];
  for (int d = 0; d < x->shape.rank && d < GRAFT_RT_MAX_RANK; d++)
    sizes[d] = -1;
  if (x->shape.rank > GRAFT_RT_MAX_RANK || !center_crop_sizes (ctx->node, x->shape.rank, shape, n, sizes, error))
    return x->shape.rank > GRAFT_RT_MAX_RANK ? graft_kernel_fail (error, "too many axes") : FALSE;
  GraftShape out;
  graft_shape_copy (&out, &x->shape);
  for (int d = 0; d < out.rank; d++)
    if (sizes[d] >= 0)
      out.dims[d] = graft_dim_fixed (sizes[d]);
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* Crops centred (the window starts rounded down) or pads with zeros
 * (the odd pixel on the right), axis by axis. */
static gboolean
kernel_center_crop_pad (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x->dtype == GRAFT_DTYPE_STRING)
    return graft_kernel_unsupported (error, "string tensors (no zero to pad with)");
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 shift[GRAFT_RT_MAX_RANK], x_strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (x->rank, x->dims, x_strides);
  for (int d = 0; d < x->rank; d++)
    shift[d] = x->dims[d] > y->dims[d] ? (x->dims[d] - y->dims[d]) / 2 : -((y->dims[d] - x->dims[d]) / 2);
  for (gint64 i = 0; i < y->numel; i++, graft_index_next (index, y->dims, y->rank))
    {
      gint64 source = 0;
      gboolean inside = TRUE;
      for (int d = 0; d < y->rank && inside; d++)
        {
          gint64 coordinate = index[d] + shift[d];
          inside = coordinate >= 0 && coordinate < x->dims[d];
          source += coordinate * x_strides[d];
        }
      if (inside)
        graft_copy_element (y, i, x, source);
      else
        graft_rt_tensor_set_f64 (y, i, 0);
    }
  return TRUE;
}

/* ---- BitCast ---- */

static gboolean
infer_bitcast (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  GraftDType to = graft_node_attr_int (ctx->node, "to", 0);
  if (!graft_dtype_is_valid (to) || to == GRAFT_DTYPE_STRING || to > GRAFT_DTYPE_LAST_ONNX)
    return graft_kernel_fail (error, "invalid target type %d", to);
  if (in->dtype != GRAFT_DTYPE_UNDEFINED &&
      (in->dtype == GRAFT_DTYPE_STRING || graft_dtype_get_size (in->dtype) != graft_dtype_get_size (to) ||
       graft_dtype_get_packed_bits (in->dtype) != graft_dtype_get_packed_bits (to)))
    return graft_kernel_fail (error, "cannot reinterpret %s as %s: the bit widths differ",
                              graft_dtype_to_string (in->dtype), graft_dtype_to_string (to));
  graft_infer_set_output (ctx, 0, to, &in->shape);
  return TRUE;
}

static gboolean
kernel_bitcast (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = ctx->inputs[0];
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  if (out->nbytes != in->nbytes)
    return graft_kernel_fail (error, "output holds %" G_GSIZE_FORMAT " bytes, input %" G_GSIZE_FORMAT,
                              out->nbytes, in->nbytes);
  /* Graft runs on little-endian hosts only, as ONNX's bytes are. */
  memcpy (out->data, in->data, in->nbytes);
  return TRUE;
}

#define OP(name, since, until, infer, kernel, input_names, output_names) { "onnx::" name, since, until, infer, kernel, 0, input_names, output_names }

const GraftOpSchema graft_ops_shape[] = {
  OP ("Reshape", 1, 0, infer_reshape, kernel_view, "data shape", "reshaped"),
  OP ("Flatten", 1, 0, infer_flatten, kernel_view, "input", "output"),
  OP ("Squeeze", 1, 0, infer_squeeze, kernel_view, "data axes", "squeezed"),
  OP ("Unsqueeze", 1, 0, infer_unsqueeze, kernel_view, "data axes", "expanded"),
  OP ("Transpose", 1, 0, infer_transpose, kernel_transpose, "data", "transposed"),
  OP ("Concat", 1, 0, infer_concat, kernel_concat, "inputs...", "concat_result"),
  OP ("Split", 1, 0, infer_split, kernel_split, "input split", "outputs..."),
  OP ("Slice", 1, 0, infer_slice, kernel_slice, "data starts ends axes steps", "output"),
  OP ("Expand", 8, 0, infer_expand, kernel_broadcast_copy, "input shape", "output"),
  OP ("Tile", 6, 0, infer_tile, kernel_tile, "input repeats", "output"),
  OP ("Pad", 1, 0, infer_pad, kernel_pad, "data pads constant_value axes", "output"),
  OP ("Shape", 1, 0, infer_shape, kernel_shape, "data", "shape"),
  OP ("Size", 1, 0, infer_size, kernel_size, "data", "size"),
  OP ("Identity", 1, 0, infer_identity, kernel_identity, "input", "output"),
  OP ("Constant", 1, 0, infer_constant, kernel_constant, "", "output"),
  OP ("ConstantOfShape", 9, 0, infer_constant_of_shape, kernel_constant_of_shape, "input", "output"),
  OP ("Range", 11, 0, infer_range, kernel_range, "start limit delta", "output"),
  OP ("EyeLike", 9, 0, infer_eye_like, kernel_eye_like, "input", "output"),
  OP ("Trilu", 14, 0, graft_infer_same_as_input, kernel_trilu, "input k", "output"),
  OP ("DepthToSpace", 1, 0, infer_depth_space, kernel_depth_space, "input", "output"),
  OP ("SpaceToDepth", 1, 0, infer_depth_space, kernel_depth_space, "input", "output"),
  OP ("Cast", 1, 0, infer_cast, kernel_cast, "input", "output"),
  OP ("CastLike", 15, 0, infer_cast, kernel_cast, "input target_type", "output"),
  OP ("BitCast", 26, 0, infer_bitcast, kernel_bitcast, "input", "output"),
  OP ("CenterCropPad", 18, 0, infer_center_crop_pad, kernel_center_crop_pad, "input_data shape", "output_data"),
  OP ("Dropout", 1, 0, infer_dropout, kernel_dropout, "data ratio training_mode", "output mask"),
  { NULL }
};
