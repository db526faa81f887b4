#include "pte/executorch-ops.h"

#include <string.h>

#define FROM(i) { GRAFT_EXECUTORCH_ARG_FROM, (i) }
#define FALSE_ARG { GRAFT_EXECUTORCH_ARG_FALSE, 0 }
#define NONE_ARG { GRAFT_EXECUTORCH_ARG_NONE, 0 }
#define RESULT_DTYPE { GRAFT_EXECUTORCH_ARG_RESULT_DTYPE, 0 }
#define END { GRAFT_EXECUTORCH_ARG_END, 0 }

/* _native_batch_norm_legit_no_training(input, weight, bias, mean, var,
 * momentum, eps) → batch_norm(…, var, training=False, momentum, eps). */
static const GraftExecutorchArgument batch_norm_arguments[] = {
  FROM (0), FROM (1), FROM (2), FROM (3), FROM (4), FALSE_ARG, FROM (5), FROM (6), END,
};
/* _softmax(self, dim, half_to_float) → softmax(self, dim, dtype=None) */
static const GraftExecutorchArgument softmax_arguments[] = { FROM (0), FROM (1), NONE_ARG, END };
/* _to_dim_order_copy.out and _to_copy.out have no dtype: the out
 * tensor's is the one converted to. */
static const GraftExecutorchArgument to_arguments[] = { FROM (0), RESULT_DTYPE, END };
static const GraftExecutorchArgument clone_arguments[] = { FROM (0), END };
/* native_group_norm(input, weight, bias, N, C, HxW, group, eps) →
 * group_norm(input, num_groups, weight, bias, eps) */
static const GraftExecutorchArgument group_norm_arguments[] = { FROM (0), FROM (6), FROM (1), FROM (2), FROM (7),
                                                                END };

typedef struct {
  const char *name;                /* as the program names it */
  const char *domain, *op_type;    /* the IR's */
  const GraftExecutorchArgument *arguments;
  guint n_results;
} Translation;

static const Translation translations[] = {
  { "aten::convolution", "aten", "_convolution", NULL, 1 },
  { "aten::_native_batch_norm_legit_no_training", "aten", "batch_norm", batch_norm_arguments, 1 },
  { "aten::native_layer_norm", "aten", "layer_norm", NULL, 1 },
  { "aten::native_group_norm", "aten", "group_norm", group_norm_arguments, 1 },
  { "aten::_softmax", "aten", "softmax", softmax_arguments, 1 },
  { "aten::_log_softmax", "aten", "log_softmax", softmax_arguments, 1 },
  { "aten::max_pool2d_with_indices", "aten", "max_pool2d", NULL, 1 },
  { "aten::_adaptive_avg_pool2d", "aten", "adaptive_avg_pool2d", NULL, 1 },
  { "aten::_to_copy", "aten", "to", to_arguments, 1 },
  { "dim_order_ops::_to_dim_order_copy", "aten", "to", to_arguments, 1 },
  { "dim_order_ops::_clone_dim_order", "aten", "clone", clone_arguments, 1 },
  { "executorch_prim::et_view", "aten", "view", NULL, 1 },
  /* ExecuTorch's copies of views: the IR's views are copies already. */
  { "aten::view_copy", "aten", "view", NULL, 1 },
  { "aten::permute_copy", "aten", "permute", NULL, 1 },
  { "aten::expand_copy", "aten", "expand", NULL, 1 },
  { "aten::slice_copy", "aten", "slice", NULL, 1 },
  { "aten::select_copy", "aten", "select", NULL, 1 },
  { "aten::squeeze_copy", "aten", "squeeze", NULL, 1 },
  { "aten::unsqueeze_copy", "aten", "unsqueeze", NULL, 1 },
  { "aten::transpose_copy", "aten", "transpose", NULL, 1 },
  { "aten::t_copy", "aten", "t", NULL, 1 },
  { "aten::split_copy", "aten", "split", NULL, 0 },
  { "aten::split_with_sizes_copy", "aten", "split_with_sizes", NULL, 0 },
  { "aten::unbind_copy", "aten", "unbind", NULL, 0 },
  { "aten::alias_copy", "aten", "alias", NULL, 1 },
  { "aten::detach_copy", "aten", "detach", NULL, 1 },
  /* Symbolic sizes: Python's operators on ints, as torch.export has them. */
  { "executorch_prim::add", "_operator", "add", NULL, 1 },
  { "executorch_prim::sub", "_operator", "sub", NULL, 1 },
  { "executorch_prim::mul", "_operator", "mul", NULL, 1 },
  { "executorch_prim::floordiv", "_operator", "floordiv", NULL, 1 },
  { "executorch_prim::truediv", "_operator", "truediv", NULL, 1 },
  { "executorch_prim::mod", "_operator", "mod", NULL, 1 },
  { "executorch_prim::eq", "_operator", "eq", NULL, 1 },
  { "executorch_prim::gt", "_operator", "gt", NULL, 1 },
  { "executorch_prim::ge", "_operator", "ge", NULL, 1 },
  { "executorch_prim::lt", "_operator", "lt", NULL, 1 },
  { "executorch_prim::le", "_operator", "le", NULL, 1 },
};

/* The out overloads' functional names: "out" is the default overload,
 * "Scalar_out" the Scalar one, "out_mode" Tensor_mode. */
static const char *
functional_overload (const char *overload)
{
  if (overload == NULL || *overload == '\0' || strcmp (overload, "out") == 0 || strcmp (overload, "default") == 0)
    return NULL;
  if (strcmp (overload, "out_mode") == 0)
    return "Tensor_mode";
  gsize len = strlen (overload);
  if (len > 4 && strcmp (overload + len - 4, "_out") == 0)
    {
      g_autofree char *stem = g_strndup (overload, len - 4);
      return g_intern_string (stem);
    }
  return g_intern_string (overload);
}

void
graft_executorch_op_translate (const char *name, const char *overload, GraftExecutorchOp *op)
{
  memset (op, 0, sizeof *op);
  op->overload = functional_overload (overload);
  for (guint i = 0; i < G_N_ELEMENTS (translations); i++)
    if (strcmp (translations[i].name, name) == 0)
      {
        op->domain = translations[i].domain;
        op->op_type = g_intern_string (translations[i].op_type);
        op->arguments = translations[i].arguments;
        op->n_results = translations[i].n_results;
        if (strcmp (translations[i].domain, "_operator") == 0 || translations[i].arguments != NULL)
          op->overload = NULL;
        return;
      }
  const char *separator = strstr (name, "::");
  g_autofree char *domain = g_strndup (name, separator - name);
  op->domain = g_intern_string (domain);
  op->op_type = g_intern_string (separator + 2);
}

/* kernels/portable/functions.yaml and kernels/prim_ops of executorch 1.5. */
static const char *const portable_ops[] = {
  "aten::_adaptive_avg_pool2d.out", "aten::_cdist_forward.out", "aten::_conj_physical.out",
  "aten::_local_scalar_dense", "aten::_log_softmax.out", "aten::_native_batch_norm_legit.no_stats_out",
  "aten::_native_batch_norm_legit.out", "aten::_native_batch_norm_legit_no_training.out", "aten::_pdist_forward.out",
  "aten::_softmax.out", "aten::_to_copy.out", "aten::_upsample_bilinear2d_aa.out", "aten::abs.out", "aten::acos.out",
  "aten::acosh.out", "aten::add.Scalar_out", "aten::add.out", "aten::addmm.out", "aten::alias_copy.out",
  "aten::amax.out", "aten::amin.out", "aten::any.all_out", "aten::any.dims_out", "aten::any.out", "aten::arange.out",
  "aten::arange.start_out", "aten::argmax.out", "aten::argmin.out", "aten::as_strided_copy.out", "aten::asin.out",
  "aten::asinh.out", "aten::atan.out", "aten::atan2.out", "aten::atanh.out", "aten::avg_pool2d.out",
  "aten::bitwise_and.Scalar_out", "aten::bitwise_and.Tensor_out", "aten::bitwise_left_shift.Tensor_Scalar_out",
  "aten::bitwise_left_shift.Tensor_out", "aten::bitwise_not.out", "aten::bitwise_or.Scalar_out",
  "aten::bitwise_or.Tensor_out", "aten::bitwise_right_shift.Tensor_Scalar_out",
  "aten::bitwise_right_shift.Tensor_out", "aten::bitwise_xor.Scalar_out", "aten::bitwise_xor.Tensor_out",
  "aten::bmm.out", "aten::cat.out", "aten::ceil.out", "aten::clamp.Tensor_out", "aten::clamp.out", "aten::clone.out",
  "aten::constant_pad_nd.out", "aten::convolution.out", "aten::convolution_backward.out", "aten::copy.out",
  "aten::copy_", "aten::cos.out", "aten::cosh.out", "aten::cumsum.out", "aten::detach_copy.out",
  "aten::diagonal_copy.out", "aten::div.Scalar_mode_out", "aten::div.Scalar_out", "aten::div.out",
  "aten::div.out_mode", "aten::elu.out", "aten::embedding.out", "aten::empty.out", "aten::eq.Scalar_out",
  "aten::eq.Tensor_out", "aten::erf.out", "aten::exp.out", "aten::expand_copy.out", "aten::expm1.out",
  "aten::fill.Scalar_out", "aten::fill.Tensor_out", "aten::flip.out", "aten::floor.out", "aten::floor_divide.out",
  "aten::fmod.Scalar_out", "aten::fmod.Tensor_out", "aten::full.out", "aten::full_like.out", "aten::gather.out",
  "aten::ge.Scalar_out", "aten::ge.Tensor_out", "aten::gelu.out", "aten::glu.out", "aten::grid_sampler_2d.out",
  "aten::gt.Scalar_out", "aten::gt.Tensor_out", "aten::hardtanh.out", "aten::index.Tensor_out",
  "aten::index_put.out", "aten::index_put_", "aten::index_select.out", "aten::isinf.out", "aten::isnan.out",
  "aten::le.Scalar_out", "aten::le.Tensor_out", "aten::leaky_relu.out", "aten::lift_fresh_copy.out", "aten::log.out",
  "aten::log10.out", "aten::log1p.out", "aten::log2.out", "aten::logical_and.out", "aten::logical_not.out",
  "aten::logical_or.out", "aten::logical_xor.out", "aten::logit.out", "aten::lt.Scalar_out", "aten::lt.Tensor_out",
  "aten::masked_fill.Scalar_out", "aten::masked_scatter.out", "aten::masked_select.out", "aten::max.dim_max",
  "aten::max.unary_out", "aten::max_pool2d_with_indices.out", "aten::max_pool2d_with_indices_backward.grad_input",
  "aten::maximum.out", "aten::mean.dtype_out", "aten::mean.out", "aten::min.dim_min", "aten::min.unary_out",
  "aten::minimum.out", "aten::mm.out", "aten::mul.Scalar_out", "aten::mul.out", "aten::narrow_copy.out",
  "aten::native_dropout.out", "aten::native_group_norm.out", "aten::native_layer_norm.out", "aten::ne.Scalar_out",
  "aten::ne.Tensor_out", "aten::neg.out", "aten::nonzero.out", "aten::ones.out", "aten::permute_copy.out",
  "aten::pixel_shuffle.out", "aten::pixel_unshuffle.out", "aten::pow.Scalar_out", "aten::pow.Tensor_Scalar_out",
  "aten::pow.Tensor_Tensor_out", "aten::prod.int_out", "aten::prod.out", "aten::rand.out", "aten::randn.out",
  "aten::reciprocal.out", "aten::reflection_pad1d.out", "aten::reflection_pad2d.out", "aten::reflection_pad3d.out",
  "aten::relu.out", "aten::remainder.Scalar_out", "aten::remainder.Tensor_out", "aten::repeat.out",
  "aten::repeat_interleave.Tensor_out", "aten::replication_pad1d.out", "aten::replication_pad2d.out",
  "aten::replication_pad3d.out", "aten::roll.out", "aten::round.out", "aten::rsqrt.out", "aten::rsub.Scalar_out",
  "aten::scalar_tensor.out", "aten::scatter.src_out", "aten::scatter.value_out", "aten::scatter_add.out",
  "aten::select_copy.int_out", "aten::select_scatter.out", "aten::sigmoid.out", "aten::sign.out", "aten::sin.out",
  "aten::sinh.out", "aten::slice_copy.Tensor_out", "aten::slice_scatter.out", "aten::split_copy.Tensor_out",
  "aten::split_with_sizes_copy.out", "aten::sqrt.out", "aten::squeeze_copy.dim_out", "aten::squeeze_copy.dims_out",
  "aten::stack.out", "aten::sub.Scalar_out", "aten::sub.out", "aten::sum.IntList_out", "aten::sym_numel",
  "aten::sym_size.int", "aten::t_copy.out", "aten::tan.out", "aten::tanh.out", "aten::topk.values",
  "aten::transpose_copy.int_out", "aten::tril.out", "aten::trunc.out", "aten::unbind_copy.int_out",
  "aten::unfold_copy.out", "aten::unsqueeze_copy.out", "aten::upsample_bilinear2d.vec_out",
  "aten::upsample_nearest2d.vec_out", "aten::var.correction_out", "aten::var.out", "aten::var_mean.correction_out",
  "aten::view_as_real_copy.out", "aten::view_copy.out", "aten::where.self_out", "aten::zeros.out",
  "dim_order_ops::_clone_dim_order.out", "dim_order_ops::_empty_dim_order.out",
  "dim_order_ops::_to_dim_order_copy.out", "et_copy::_d2h_copy.out", "et_copy::_h2d_copy.out",
  "executorch_prim::add.Scalar", "executorch_prim::ceil.Scalar", "executorch_prim::eq.Scalar",
  "executorch_prim::et_copy_index.tensor", "executorch_prim::et_view.default", "executorch_prim::floordiv.Scalar",
  "executorch_prim::floordiv.int", "executorch_prim::ge.Scalar", "executorch_prim::gt.Scalar",
  "executorch_prim::le.Scalar", "executorch_prim::lt.Scalar", "executorch_prim::mod.Scalar",
  "executorch_prim::mod.int", "executorch_prim::mul.Scalar", "executorch_prim::neg.Scalar",
  "executorch_prim::round.Scalar", "executorch_prim::sub.Scalar", "executorch_prim::sym_float.Scalar",
  "executorch_prim::sym_int.Scalar", "executorch_prim::sym_ite.Scalar", "executorch_prim::sym_max.Scalar",
  "executorch_prim::sym_min.Scalar", "executorch_prim::sym_not.Scalar", "executorch_prim::truediv.Scalar",
  "executorch_prim::trunc.Scalar",
};

static int
compare_names (const void *a, const void *b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

gboolean
graft_executorch_op_is_portable (const char *qualified_name)
{
  return bsearch (&qualified_name, portable_ops, G_N_ELEMENTS (portable_ops), sizeof portable_ops[0],
                  compare_names) != NULL;
}
