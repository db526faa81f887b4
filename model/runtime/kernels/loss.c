/* Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, with
 * class weights, ignore_index and none/sum/mean reductions. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

static gboolean
infer_loss (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *target = graft_infer_input (ctx, 1);
  const char *reduction = graft_node_attr_string (ctx->node, "reduction", "mean");
  if (strcmp (reduction, "none") == 0)
    graft_infer_set_output (ctx, 0, x->dtype, &target->shape);
  else
    graft_infer_set_output_fixed (ctx, 0, x->dtype, 0, NULL);
  if (ctx->n_outputs > 1)
    graft_infer_set_output (ctx, 1, x->dtype, &x->shape);
  return TRUE;
}

/* logp [N, C, inner...] as doubles; target [N, inner...]. */
static gboolean
nll (GraftKernelContext *ctx, const double *logp, const GraftRtTensor *x, GError **error)
{
  GraftRtTensor *target = ctx->inputs[1], *weight = graft_kernel_input (ctx, 2);
  const char *reduction = graft_node_attr_string (ctx->node, "reduction", "mean");
  gboolean has_ignore = graft_node_has_attr (ctx->node, "ignore_index");
  gint64 ignore = graft_node_attr_int (ctx->node, "ignore_index", 0);
  gint64 N = x->dims[0], C = x->rank > 1 ? x->dims[1] : 1, inner = graft_dims_product (x->dims, 2, x->rank);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  g_autofree double *loss = g_new0 (double, MAX (N * inner, 1));
  double total = 0, wsum = 0;
  for (gint64 n = 0; n < N; n++)
    for (gint64 i = 0; i < inner; i++)
      {
        gint64 t = graft_rt_tensor_get_i64 (target, n * inner + i);
        if (has_ignore && t == ignore)
          continue;
        if (t < 0 || t >= C)
          return graft_kernel_fail (error, "target %" G_GINT64_FORMAT " is not a class index in 0..%" G_GINT64_FORMAT, t, C - 1);
        double w = weight ? graft_rt_tensor_get_f64 (weight, t) : 1;
        double l = -logp[(n * C + t) * inner + i] * w;
        loss[n * inner + i] = l;
        total += l;
        wsum += w;
      }
  if (strcmp (reduction, "none") == 0)
    for (gint64 k = 0; k < N * inner; k++)
      graft_rt_tensor_set_f64 (out, k, loss[k]);
  else if (strcmp (reduction, "sum") == 0)
    graft_rt_tensor_set_f64 (out, 0, total);
  else
    graft_rt_tensor_set_f64 (out, 0, wsum != 0 ? total / wsum : NAN);
  return TRUE;
}

static gboolean
kernel_nll (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  g_autofree double *logp = g_new (double, MAX (x->numel, 1));
  for (gint64 i = 0; i < x->numel; i++)
    logp[i] = graft_rt_tensor_get_f64 (x, i);
  return nll (ctx, logp, x, error);
}

static gboolean
kernel_sce (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 N = x->dims[0], C = x->rank > 1 ? x->dims[1] : 1, inner = graft_dims_product (x->dims, 2, x->rank);
  g_autofree double *logp = g_new (double, MAX (x->numel, 1));
  for (gint64 n = 0; n < N; n++)
    for (gint64 i = 0; i < inner; i++)
      {
        double mx = -INFINITY, sum = 0;
        for (gint64 c = 0; c < C; c++)
          mx = MAX (mx, graft_rt_tensor_get_f64 (x, (n * C + c) * inner + i));
        for (gint64 c = 0; c < C; c++)
          sum += exp (graft_rt_tensor_get_f64 (x, (n * C + c) * inner + i) - mx);
        for (gint64 c = 0; c < C; c++)
          logp[(n * C + c) * inner + i] = graft_rt_tensor_get_f64 (x, (n * C + c) * inner + i) - mx - log (sum);
      }
  if (graft_kernel_wants_output (ctx, 1))
    {
      GraftRtTensor *lp = graft_kernel_output (ctx, 1, error);
      if (lp == NULL)
        return FALSE;
      for (gint64 i = 0; i < x->numel; i++)
        graft_rt_tensor_set_f64 (lp, i, logp[i]);
    }
  return nll (ctx, logp, x, error);
}

const GraftOpSchema graft_ops_loss[] = {
  { "onnx::NegativeLogLikelihoodLoss", 12, 0, infer_loss, kernel_nll, GRAFT_OP_HALF_AS_FLOAT, "input target weight", "loss" },
  { "onnx::SoftmaxCrossEntropyLoss", 12, 0, infer_loss, kernel_sce, GRAFT_OP_HALF_AS_FLOAT, "scores labels weights", "output log_prob" },
  { NULL }
};
