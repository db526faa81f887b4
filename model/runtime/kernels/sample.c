/* Spatial sampling: GridSample (bilinear / nearest / bicubic with zeros,
 * border or reflection padding), AffineGrid (the grids it samples at) and
 * RoiAlign (avg / max, half_pixel or output_half_pixel coordinates). float
 * compute in double. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* ---- GridSample ---- */

static gboolean
infer_grid_sample (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *grid = graft_infer_input (ctx, 1);
  int rank = x->shape.rank;
  if ((rank != 4 && rank != 5) || grid->shape.rank != rank)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, rank);
      return TRUE;
    }
  GraftShape out;
  graft_shape_init (&out, rank);
  out.dims[0] = x->shape.dims[0];
  out.dims[1] = x->shape.dims[1];
  for (int d = 2; d < rank; d++)
    out.dims[d] = grid->shape.dims[d - 1];
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static double
reflect (double x, double lo, double hi)
{
  double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo)
    {
      double dx = lo - x;
      gint64 n = (gint64) (dx / range);
      double r = dx - n * range;
      return n % 2 == 0 ? lo + r : hi - r;
    }
  if (x > hi)
    {
      double dx = x - hi;
      gint64 n = (gint64) (dx / range);
      double r = dx - n * range;
      return n % 2 == 0 ? hi - r : lo + r;
    }
  return x;
}

typedef struct {
  const GraftRtTensor *x;
  gint64 base, H, W;
  int padding;          /* 0 zeros, 1 border, 2 reflection */
  gboolean align;
} Plane;

static double
pixel (const Plane *p, gint64 h, gint64 w)
{
  if (p->padding == 0)
    {
      if (h < 0 || h >= p->H || w < 0 || w >= p->W)
        return 0;
    }
  else if (p->padding == 1)
    {
      h = CLAMP (h, 0, p->H - 1);
      w = CLAMP (w, 0, p->W - 1);
    }
  else
    {
      double lo_h = p->align ? 0 : -0.5, hi_h = p->align ? p->H - 1 : p->H - 0.5;
      double lo_w = p->align ? 0 : -0.5, hi_w = p->align ? p->W - 1 : p->W - 0.5;
      h = (gint64) reflect (h, lo_h, hi_h);
      w = (gint64) reflect (w, lo_w, hi_w);
      h = CLAMP (h, 0, p->H - 1);
      w = CLAMP (w, 0, p->W - 1);
    }
  return graft_rt_tensor_get_f64 (p->x, p->base + h * p->W + w);
}

static double
cubic (double t, int k)
{
  const double a = -0.75;
  double x = fabs (t - (k - 1));
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/* A pixel coordinate from a normalised grid value in [-1, 1]. */
static double
denormalize (double g, gint64 length, gboolean align)
{
  return align ? (g + 1) / 2 * (length - 1) : ((g + 1) * length - 1) / 2;
}

/* One coordinate under border or reflection padding (zeros: unchanged). */
static double
pad_coordinate (double f, gint64 length, int padding, gboolean align)
{
  if (padding == 1)
    return CLAMP (f, 0, length - 1);
  if (padding == 2)
    return CLAMP (reflect (f, align ? 0 : -0.5, align ? length - 1 : length - 0.5), 0, length - 1);
  return f;
}

/* Volumetric GridSample: x [N, C, D, H, W], grid [N, D', H', W', 3] of
 * (x, y, z); nearest or trilinear (cubic is 4-D only in ONNX). */
static gboolean
grid_sample_volume (GraftKernelContext *ctx, int mode, int padding, gboolean align, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
  if (grid->rank != 5 || grid->dims[4] != 3 || grid->dims[0] != x->dims[0])
    return graft_kernel_fail (error, "a 5-D X needs a [N, D, H, W, 3] grid");
  if (mode == 2)
    return graft_kernel_fail (error, "cubic mode takes 4-D inputs only");
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 N = x->dims[0], C = x->dims[1], size[3] = { x->dims[4], x->dims[3], x->dims[2] };   /* W, H, D */
  gint64 points = grid->dims[1] * grid->dims[2] * grid->dims[3];
  for (gint64 n = 0; n < N; n++)
    for (gint64 p = 0; p < points; p++)
      {
        double f[3];
        for (int a = 0; a < 3; a++)
          f[a] = pad_coordinate (denormalize (graft_rt_tensor_get_f64 (grid, (n * points + p) * 3 + a), size[a], align),
                                 size[a], padding, align);
        for (gint64 c = 0; c < C; c++)
          {
            gint64 volume = (n * C + c) * size[0] * size[1] * size[2];
            double v = 0;
            for (int corner = 0; corner < (mode == 1 ? 1 : 8); corner++)
              {
                double weight = 1;
                gint64 at[3];
                for (int a = 0; a < 3; a++)
                  {
                    if (mode == 1)
                      at[a] = (gint64) nearbyint (f[a]);
                    else
                      {
                        gint64 low = (gint64) floor (f[a]);
                        gboolean high = (corner >> a) & 1;
                        at[a] = low + high;
                        weight *= high ? f[a] - low : 1 - (f[a] - low);
                      }
                    if (padding == 1)
                      at[a] = CLAMP (at[a], 0, size[a] - 1);
                  }
                gboolean inside = TRUE;
                for (int a = 0; a < 3; a++)
                  inside = inside && at[a] >= 0 && at[a] < size[a];
                if (inside && weight != 0)
                  v += weight * graft_rt_tensor_get_f64 (x, volume + (at[2] * size[1] + at[1]) * size[0] + at[0]);
              }
            graft_rt_tensor_set_f64 (y, (n * C + c) * points + p, v);
          }
      }
  return TRUE;
}

/* float32 GridSample, bilinear or nearest, zeros or border padding: each
 * output point's four taps (input offset and weight; offset -1 for a tap
 * in the zero padding or, nearest, one it does not read, which adds
 * nothing, as in the general path) found once per image, then every
 * channel sums them. */
#define GRID_TAPS 4

typedef struct {
  const float *x, *grid;
  float *y;
  gint64 C, H, W, points;
  int mode, padding;
  gboolean align;
} GridSampleJob;

static void
grid_sample_image (gint64 n, gpointer data)
{
  const GridSampleJob *job = data;
  gint64 P = job->points, H = job->H, W = job->W;
  g_autofree gint64 *index = g_new (gint64, GRID_TAPS * MAX (P, 1));
  g_autofree float *weight = g_new (float, GRID_TAPS * MAX (P, 1));
  for (gint64 p = 0; p < P; p++)
    {
      const float *g = job->grid + (n * P + p) * 2;
      double fx = pad_coordinate (denormalize (g[0], W, job->align), W, job->padding, job->align);
      double fy = pad_coordinate (denormalize (g[1], H, job->align), H, job->padding, job->align);
      gint64 x0, y0;
      double ax, ay;
      if (job->mode == 1)
        {
          x0 = (gint64) nearbyint (fx);
          y0 = (gint64) nearbyint (fy);
          ax = ay = 0;
        }
      else
        {
          x0 = (gint64) floor (fx);
          y0 = (gint64) floor (fy);
          ax = fx - x0;
          ay = fy - y0;
        }
      for (int k = 0; k < GRID_TAPS; k++)
        {
          gint64 h = y0 + k / 2, w = x0 + k % 2;
          double wt = (k % 2 ? ax : 1 - ax) * (k / 2 ? ay : 1 - ay);
          gboolean unread = (job->padding == 0 && (h < 0 || h >= H || w < 0 || w >= W)) || (job->mode == 1 && k > 0);
          index[p * GRID_TAPS + k] = unread ? -1 : CLAMP (h, 0, H - 1) * W + CLAMP (w, 0, W - 1);
          weight[p * GRID_TAPS + k] = wt;
        }
    }
  for (gint64 c = 0; c < job->C; c++)
    {
      const float *plane = job->x + (n * job->C + c) * H * W;
      float *out = job->y + (n * job->C + c) * P;
      for (gint64 p = 0; p < P; p++)
        {
          const gint64 *i = index + p * GRID_TAPS;
          const float *w = weight + p * GRID_TAPS;
          if (i[0] >= 0 && i[1] >= 0 && i[2] >= 0 && i[3] >= 0)
            out[p] = plane[i[0]] * w[0] + plane[i[1]] * w[1] + plane[i[2]] * w[2] + plane[i[3]] * w[3];
          else
            {
              float v = 0;
              for (int k = 0; k < GRID_TAPS; k++)
                if (i[k] >= 0)
                  v += plane[i[k]] * w[k];
              out[p] = v;
            }
        }
    }
}

static gboolean
kernel_grid_sample (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
  const char *mode = graft_node_attr_string (ctx->node, "mode", "bilinear");
  const char *pad = graft_node_attr_string (ctx->node, "padding_mode", "zeros");
  gboolean align = graft_node_attr_int (ctx->node, "align_corners", 0);
  int padding = strcmp (pad, "border") == 0 ? 1 : strcmp (pad, "reflection") == 0 ? 2 : 0;
  /* opset 20 renamed bilinear / bicubic to linear / cubic */
  int m = strcmp (mode, "nearest") == 0 ? 1 : strcmp (mode, "bicubic") == 0 || strcmp (mode, "cubic") == 0 ? 2 : 0;
  if (m == 0 && strcmp (mode, "bilinear") != 0 && strcmp (mode, "linear") != 0)
    return graft_kernel_fail (error, "unknown mode '%s'", mode);
  if (x->rank == 5)
    return grid_sample_volume (ctx, m, padding, align, error);
  if (x->rank != 4 || grid->rank != 4 || grid->dims[3] != 2 || grid->dims[0] != x->dims[0])
    return graft_kernel_unsupported (error, "only 4-D inputs with a [N, H, W, 2] grid and 5-D with [N, D, H, W, 3] are supported");
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = grid->dims[1], OW = grid->dims[2];
  if (x->dtype == GRAFT_DTYPE_FLOAT32 && grid->dtype == GRAFT_DTYPE_FLOAT32 && y->dtype == GRAFT_DTYPE_FLOAT32 &&
      m != 2 && padding != 2 && H > 0 && W > 0)
    {
      GridSampleJob job = { x->data, grid->data, y->data, C, H, W, OH * OW, m, padding, align };
      graft_kernel_parallel_for (ctx, N, grid_sample_image, &job);
      return TRUE;
    }
  for (gint64 n = 0; n < N; n++)
    for (gint64 c = 0; c < C; c++)
      {
        Plane p = { x, (n * C + c) * H * W, H, W, padding, align };
        for (gint64 oh = 0; oh < OH; oh++)
          for (gint64 ow = 0; ow < OW; ow++)
            {
              gint64 g = ((n * OH + oh) * OW + ow) * 2;
              double gx = graft_rt_tensor_get_f64 (grid, g), gy = graft_rt_tensor_get_f64 (grid, g + 1);
              double fx = denormalize (gx, W, align), fy = denormalize (gy, H, align);
              /* cubic reflects each of its 16 taps instead (pixel ()) */
              if (padding == 1 || m != 2)
                {
                  fx = pad_coordinate (fx, W, padding, align);
                  fy = pad_coordinate (fy, H, padding, align);
                }
              double v;
              if (m == 1)
                v = pixel (&p, (gint64) nearbyint (fy), (gint64) nearbyint (fx));
              else if (m == 0)
                {
                  gint64 x0 = (gint64) floor (fx), y0 = (gint64) floor (fy);
                  double ax = fx - x0, ay = fy - y0;
                  v = pixel (&p, y0, x0) * (1 - ax) * (1 - ay) + pixel (&p, y0, x0 + 1) * ax * (1 - ay) +
                      pixel (&p, y0 + 1, x0) * (1 - ax) * ay + pixel (&p, y0 + 1, x0 + 1) * ax * ay;
                }
              else
                {
                  gint64 x0 = (gint64) floor (fx) - 1, y0 = (gint64) floor (fy) - 1;
                  double tx = fx - floor (fx), ty = fy - floor (fy);
                  v = 0;
                  for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++)
                      v += pixel (&p, y0 + i, x0 + j) * cubic (ty, i) * cubic (tx, j);
                }
              graft_rt_tensor_set_f64 (y, ((n * C + c) * OH + oh) * OW + ow, v);
            }
      }
  return TRUE;
}

/* ---- RoiAlign ---- */

static gboolean
infer_roi_align (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *rois = graft_infer_input (ctx, 1);
  GraftShape out;
  graft_shape_init (&out, 4);
  out.dims[0] = rois->shape.rank == 2 ? rois->shape.dims[0] : graft_dim_unknown ();
  out.dims[1] = x->shape.rank == 4 ? x->shape.dims[1] : graft_dim_unknown ();
  out.dims[2] = graft_dim_fixed (graft_node_attr_int (ctx->node, "output_height", 1));
  out.dims[3] = graft_dim_fixed (graft_node_attr_int (ctx->node, "output_width", 1));
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_roi_align (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *rois = ctx->inputs[1], *idx = ctx->inputs[2];
  gboolean max_mode = strcmp (graft_node_attr_string (ctx->node, "mode", "avg"), "max") == 0;
  gint64 ratio = graft_node_attr_int (ctx->node, "sampling_ratio", 0);
  double scale = graft_node_attr_float (ctx->node, "spatial_scale", 1.0);
  gboolean half = strcmp (graft_node_attr_string (ctx->node, "coordinate_transformation_mode", "half_pixel"), "half_pixel") == 0;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0], OH = y->dims[2], OW = y->dims[3];
  double offset = half ? 0.5 : 0;
  for (gint64 r = 0; r < R; r++)
    {
      gint64 b = graft_rt_tensor_get_i64 (idx, r);
      if (b < 0 || b >= x->dims[0])
        return graft_kernel_fail (error, "batch index %" G_GINT64_FORMAT " is out of range", b);
      double x1 = graft_rt_tensor_get_f64 (rois, r * 4) * scale - offset;
      double y1 = graft_rt_tensor_get_f64 (rois, r * 4 + 1) * scale - offset;
      double x2 = graft_rt_tensor_get_f64 (rois, r * 4 + 2) * scale - offset;
      double y2 = graft_rt_tensor_get_f64 (rois, r * 4 + 3) * scale - offset;
      double rw = x2 - x1, rh = y2 - y1;
      if (!half)
        {
          rw = MAX (rw, 1);
          rh = MAX (rh, 1);
        }
      double bh = rh / OH, bw = rw / OW;
      gint64 gh = ratio > 0 ? ratio : (gint64) ceil (rh / OH), gw = ratio > 0 ? ratio : (gint64) ceil (rw / OW);
      gh = MAX (gh, 1);
      gw = MAX (gw, 1);
      for (gint64 c = 0; c < C; c++)
        {
          gint64 base = (b * C + c) * H * W;
          for (gint64 ph = 0; ph < OH; ph++)
            for (gint64 pw = 0; pw < OW; pw++)
              {
                double acc = max_mode ? -INFINITY : 0;
                for (gint64 iy = 0; iy < gh; iy++)
                  for (gint64 ix = 0; ix < gw; ix++)
                    {
                      double yy = y1 + ph * bh + (iy + 0.5) * bh / gh;
                      double xx = x1 + pw * bw + (ix + 0.5) * bw / gw;
                      if (yy < -1 || yy > H || xx < -1 || xx > W)
                        {
                          if (max_mode)
                            acc = MAX (acc, 0);
                          continue;
                        }
                      yy = MAX (yy, 0);
                      xx = MAX (xx, 0);
                      gint64 y0 = (gint64) yy, x0 = (gint64) xx, y1i, x1i;
                      if (y0 >= H - 1)
                        y0 = y1i = H - 1, yy = y0;
                      else
                        y1i = y0 + 1;
                      if (x0 >= W - 1)
                        x0 = x1i = W - 1, xx = x0;
                      else
                        x1i = x0 + 1;
                      double ly = yy - y0, lx = xx - x0, hy = 1 - ly, hx = 1 - lx;
                      double v1 = graft_rt_tensor_get_f64 (x, base + y0 * W + x0) * hy * hx;
                      double v2 = graft_rt_tensor_get_f64 (x, base + y0 * W + x1i) * hy * lx;
                      double v3 = graft_rt_tensor_get_f64 (x, base + y1i * W + x0) * ly * hx;
                      double v4 = graft_rt_tensor_get_f64 (x, base + y1i * W + x1i) * ly * lx;
                      if (max_mode)
                        acc = MAX (acc, MAX (MAX (v1, v2), MAX (v3, v4)));
                      else
                        acc += v1 + v2 + v3 + v4;
                    }
                if (!max_mode)
                  acc /= gh * gw;
                graft_rt_tensor_set_f64 (y, ((r * C + c) * OH + ph) * OW + pw, acc);
              }
        }
    }
  return TRUE;
}

/* ---- AffineGrid (20) ---- */

static gboolean
infer_affine_grid (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *theta = graft_infer_input (ctx, 0);
  gint64 n;
  g_autofree gint64 *size = graft_infer_input_ints (ctx, 1, &n);
  if (size == NULL)
    {
      graft_infer_set_output_unknown (ctx, 0, theta->dtype, -1);
      return TRUE;
    }
  if (n != 4 && n != 5)
    return graft_kernel_fail (error, "size must be [N, C, H, W] or [N, C, D, H, W], not %" G_GINT64_FORMAT " values", n);
  gint64 dims[5];
  dims[0] = size[0];
  for (gint64 d = 2; d < n; d++)
    dims[d - 1] = size[d];
  dims[n - 1] = n - 2;
  graft_infer_set_output_fixed (ctx, 0, theta->dtype, (int) n, dims);
  return TRUE;
}

/* Evenly spaced positions in [-1, 1] along an axis of `length` pixels:
 * pixel centres, with the corners' centres at ±1 under align_corners. */
static double
grid_position (gint64 i, gint64 length, gboolean align_corners)
{
  if (align_corners)
    return length > 1 ? -1 + 2.0 * i / (length - 1) : -1;
  return (2.0 * i + 1) / length - 1;
}

static gboolean
kernel_affine_grid (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *theta = ctx->inputs[0];
  GraftRtTensor *grid = graft_kernel_output (ctx, 0, error);
  if (grid == NULL)
    return FALSE;
  int spatial = grid->rank - 2;   /* 2 or 3; the position is (x, y[, z]) */
  if (theta->rank != 3 || theta->dims[0] != grid->dims[0] || theta->dims[1] != spatial || theta->dims[2] != spatial + 1)
    return graft_kernel_fail (error, "theta must be [N, %d, %d]", spatial, spatial + 1);
  gboolean align_corners = graft_node_attr_int (ctx->node, "align_corners", 0) != 0;
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 }, points = graft_dims_product (grid->dims, 1, grid->rank - 1);
  for (gint64 p = 0; p < grid->dims[0] * points; p++, graft_index_next (index, grid->dims, grid->rank - 1))
    {
      double position[4];
      for (int k = 0; k < spatial; k++)   /* x runs along the last axis */
        position[k] = grid_position (index[grid->rank - 2 - k], grid->dims[grid->rank - 2 - k], align_corners);
      position[spatial] = 1;
      gint64 matrix = index[0] * spatial * (spatial + 1);
      for (int row = 0; row < spatial; row++)
        {
          double acc = 0;
          for (int k = 0; k <= spatial; k++)
            acc += graft_rt_tensor_get_f64 (theta, matrix + row * (spatial + 1) + k) * position[k];
          graft_rt_tensor_set_f64 (grid, p * spatial + row, acc);
        }
    }
  return TRUE;
}

const GraftOpSchema graft_ops_sample[] = {
  { "onnx::GridSample", 16, 0, infer_grid_sample, kernel_grid_sample, GRAFT_OP_HALF_AS_FLOAT, "X grid", "Y" },
  { "onnx::RoiAlign", 10, 0, infer_roi_align, kernel_roi_align, GRAFT_OP_HALF_AS_FLOAT, "X rois batch_indices", "Y" },
  { "onnx::AffineGrid", 20, 0, infer_affine_grid, kernel_affine_grid, GRAFT_OP_HALF_AS_FLOAT, "theta size", "grid" },
  { NULL }
};
