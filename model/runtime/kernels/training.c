/* The optimiser steps of ai.onnx.preview.training: Adagrad, Momentum (and
 * Nesterov momentum), Adam. Each takes the learning rate R and step count
 * T, then n tensors X, their gradients G and one or two state tensors per
 * X, and returns the updated X and states (no gradient outputs). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* Inputs per optimised tensor: X, G and the states. */
static guint
inputs_per_tensor (GraftNode *node)
{
  return strcmp (node->op_type, "Adam") == 0 ? 4 : 3;
}

/* Output o is input X_o, or a state: the gradients have no output. */
static guint
input_of_output (guint o, guint n)
{
  return o < n ? 2 + o : 2 + n + o;
}

static gboolean
infer_optimizer (GraftInferContext *ctx, GError **error)
{
  guint per = inputs_per_tensor (ctx->node);
  if (ctx->n_inputs < 2 + per || (ctx->n_inputs - 2) % per != 0)
    return graft_kernel_fail (error, "%u inputs: expected R, T and %u per optimised tensor", ctx->n_inputs, per);
  guint n = (ctx->n_inputs - 2) / per;
  for (guint o = 0; o < ctx->n_outputs && input_of_output (o, n) < ctx->n_inputs; o++)
    {
      GraftInferValue *in = graft_infer_input (ctx, input_of_output (o, n));
      if (in)
        graft_infer_set_output (ctx, o, in->dtype, &in->shape);
    }
  return TRUE;
}

typedef struct {
  double rate;
  gint64 step;
} Schedule;

static gboolean
kernel_optimizer (GraftKernelContext *ctx, GError **error)
{
  guint per = inputs_per_tensor (ctx->node), n = (ctx->n_inputs - 2) / per;
  const char *op = ctx->node->op_type;
  GraftNode *node = ctx->node;
  Schedule schedule = { graft_rt_tensor_get_f64 (ctx->inputs[0], 0), graft_rt_tensor_get_i64 (ctx->inputs[1], 0) };
  double norm = graft_node_attr_float (node, "norm_coefficient", 0);
  for (guint i = 0; i < n; i++)
    {
      GraftRtTensor *x = ctx->inputs[2 + i], *g = ctx->inputs[2 + n + i];
      GraftRtTensor *state1 = ctx->inputs[2 + 2 * n + i], *state2 = per == 4 ? ctx->inputs[2 + 3 * n + i] : NULL;
      if (g->numel != x->numel || state1->numel != x->numel || (state2 && state2->numel != x->numel))
        return graft_kernel_fail (error, "tensor %u: X, its gradient and its states differ in size", i);
      GraftRtTensor *x_new = graft_kernel_output (ctx, i, error);
      GraftRtTensor *state1_new = x_new ? graft_kernel_output (ctx, n + i, error) : NULL;
      GraftRtTensor *state2_new = state2 && state1_new ? graft_kernel_output (ctx, 2 * n + i, error) : NULL;
      if (x_new == NULL || state1_new == NULL || (state2 && state2_new == NULL))
        return FALSE;
      for (gint64 k = 0; k < x->numel; k++)
        {
          double xv = graft_rt_tensor_get_f64 (x, k);
          double grad = norm * xv + graft_rt_tensor_get_f64 (g, k);
          double s1 = graft_rt_tensor_get_f64 (state1, k), updated;
          if (strcmp (op, "Adagrad") == 0)
            {
              double rate = schedule.rate / (1 + schedule.step * graft_node_attr_float (node, "decay_factor", 0));
              s1 += grad * grad;
              updated = xv - rate * grad / (sqrt (s1) + graft_node_attr_float (node, "epsilon", 0));
            }
          else if (strcmp (op, "Momentum") == 0)
            {
              double alpha = graft_node_attr_float (node, "alpha", 0), beta = graft_node_attr_float (node, "beta", 0);
              s1 = alpha * s1 + (schedule.step > 0 ? beta : 1) * grad;
              gboolean nesterov = g_str_equal (graft_node_attr_string (node, "mode", "standard"), "nesterov");
              updated = xv - schedule.rate * (nesterov ? grad + alpha * s1 : s1);
            }
          else
            {
              double alpha = graft_node_attr_float (node, "alpha", 0.9), beta = graft_node_attr_float (node, "beta", 0.999);
              double s2 = graft_rt_tensor_get_f64 (state2, k);
              s1 = alpha * s1 + (1 - alpha) * grad;
              s2 = beta * s2 + (1 - beta) * grad * grad;
              double rate = schedule.step > 0
                            ? schedule.rate * sqrt (1 - pow (beta, schedule.step)) / (1 - pow (alpha, schedule.step))
                            : schedule.rate;
              updated = (1 - graft_node_attr_float (node, "norm_coefficient_post", 0)) *
                        (xv - rate * s1 / (sqrt (s2) + graft_node_attr_float (node, "epsilon", 1e-6)));
              graft_rt_tensor_set_f64 (state2_new, k, s2);
            }
          graft_rt_tensor_set_f64 (x_new, k, updated);
          graft_rt_tensor_set_f64 (state1_new, k, s1);
        }
    }
  return TRUE;
}

#define OPTIMIZER(name, input_names, output_names) { "ai.onnx.preview.training::" name, 1, 0, infer_optimizer, kernel_optimizer, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names }

const GraftOpSchema graft_ops_training[] = {
  OPTIMIZER ("Adagrad", "R T inputs...", "outputs..."), OPTIMIZER ("Momentum", "R T inputs...", "outputs..."), OPTIMIZER ("Adam", "R T inputs...", "outputs..."),
  { NULL }
};
