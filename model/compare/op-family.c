#include "compare/op-family.h"

#include <string.h>

typedef struct {
  const char *op;
  GraftOpFamily row;
} FamilyRow;

#define C(op, family) { op, { family, GRAFT_OP_ROLE_COMPUTE, FALSE } }
#define P(op) { op, { "passthrough", GRAFT_OP_ROLE_PASSTHROUGH, FALSE } }
#define G(op) { op, { "glue", GRAFT_OP_ROLE_GLUE, FALSE } }
#define N(op, family) { op, { family, GRAFT_OP_ROLE_GLUE, TRUE } }
#define F(op) { op, { "control", GRAFT_OP_ROLE_CONTROL, FALSE } }
/* what a tensor is rather than what it holds: glue, and it carries no data on */
#define Q(op) { op, { "property", GRAFT_OP_ROLE_GLUE, TRUE } }

/* In-place aten variants (add_, relu_) share their row through the
 * trailing underscore being dropped before the lookup. */
static const FamilyRow rows[] = {
  C ("aten::conv1d", "conv"), C ("aten::conv2d", "conv"), C ("aten::conv3d", "conv"),
  C ("aten::_convolution", "conv"), C ("aten::convolution", "conv"), C ("onnx::Conv", "conv"),
  C ("aten::conv_transpose2d", "conv_transpose"), C ("onnx::ConvTranspose", "conv_transpose"),
  C ("aten::linear", "matmul"), C ("aten::addmm", "matmul"), C ("aten::matmul", "matmul"),
  C ("aten::mm", "matmul"), C ("aten::bmm", "matmul"), C ("onnx::Gemm", "matmul"), C ("onnx::MatMul", "matmul"),
  C ("aten::add", "add"), C ("onnx::Add", "add"), C ("aten::sub", "sub"), C ("aten::rsub", "sub"), C ("onnx::Sub", "sub"),
  C ("aten::mul", "mul"), C ("onnx::Mul", "mul"), C ("aten::div", "div"), C ("onnx::Div", "div"),
  C ("aten::relu", "relu"), C ("onnx::Relu", "relu"),
  C ("aten::hardtanh", "clip"), C ("aten::clamp", "clip"), C ("aten::relu6", "clip"), C ("onnx::Clip", "clip"),
  C ("aten::sigmoid", "sigmoid"), C ("onnx::Sigmoid", "sigmoid"), C ("aten::tanh", "tanh"), C ("onnx::Tanh", "tanh"),
  C ("aten::gelu", "gelu"), C ("onnx::Gelu", "gelu"), C ("aten::silu", "silu"),
  C ("aten::batch_norm", "batchnorm"), C ("aten::_native_batch_norm_legit_no_training", "batchnorm"),
  C ("onnx::BatchNormalization", "batchnorm"),
  C ("aten::layer_norm", "layernorm"), C ("onnx::LayerNormalization", "layernorm"),
  C ("aten::group_norm", "groupnorm"), C ("onnx::GroupNormalization", "groupnorm"),
  C ("aten::max_pool2d", "maxpool"), C ("aten::max_pool1d", "maxpool"), C ("onnx::MaxPool", "maxpool"),
  C ("aten::avg_pool2d", "avgpool"), C ("aten::adaptive_avg_pool2d", "avgpool"), C ("onnx::AveragePool", "avgpool"),
  C ("onnx::GlobalAveragePool", "avgpool"),
  C ("aten::flatten", "reshape"), C ("aten::view", "reshape"), C ("aten::reshape", "reshape"),
  C ("aten::unsqueeze", "reshape"), C ("aten::squeeze", "reshape"),
  C ("onnx::Flatten", "reshape"), C ("onnx::Reshape", "reshape"), C ("onnx::Unsqueeze", "reshape"),
  C ("onnx::Squeeze", "reshape"),
  C ("aten::softmax", "softmax"), C ("aten::_softmax", "softmax"), C ("onnx::Softmax", "softmax"),
  C ("aten::log_softmax", "log_softmax"), C ("onnx::LogSoftmax", "log_softmax"),
  C ("aten::transpose", "transpose"), C ("aten::permute", "transpose"), C ("aten::t", "transpose"),
  C ("onnx::Transpose", "transpose"),
  C ("aten::cat", "concat"), C ("onnx::Concat", "concat"), C ("aten::stack", "stack"),
  C ("aten::slice", "slice"), C ("onnx::Slice", "slice"), C ("aten::select", "gather"), C ("onnx::Gather", "gather"),
  C ("aten::index_select", "gather"), C ("aten::embedding", "gather"),
  C ("aten::mean", "reduce_mean"), C ("onnx::ReduceMean", "reduce_mean"),
  C ("aten::sum", "reduce_sum"), C ("onnx::ReduceSum", "reduce_sum"),
  C ("aten::max", "reduce_max"), C ("onnx::ReduceMax", "reduce_max"),
  C ("aten::pow", "pow"), C ("onnx::Pow", "pow"), C ("aten::sqrt", "sqrt"), C ("onnx::Sqrt", "sqrt"),
  C ("aten::exp", "exp"), C ("onnx::Exp", "exp"), C ("aten::abs", "abs"), C ("onnx::Abs", "abs"),
  C ("aten::erf", "erf"), C ("onnx::Erf", "erf"), C ("aten::neg", "neg"), C ("onnx::Neg", "neg"),
  C ("aten::expand", "expand"), C ("onnx::Expand", "expand"),
  C ("aten::scaled_dot_product_attention", "attention"),
  C ("aten::copy", "copy"),
  C ("aten::zeros_like", "fill"), C ("aten::ones_like", "fill"),
  P ("aten::dropout"), P ("aten::feature_dropout"), P ("aten::contiguous"), P ("aten::detach"),
  P ("aten::clone"), P ("aten::alias"), P ("onnx::Identity"), P ("onnx::Dropout"),
  G ("prim::Constant"), G ("prim::ListConstruct"), G ("prim::ListUnpack"), G ("prim::TupleConstruct"),
  G ("prim::TupleUnpack"), G ("prim::TupleIndex"), G ("prim::GetAttr"),
  G ("prim::unchecked_cast"), G ("prim::Uninitialized"), G ("prim::RaiseException"), G ("aten::__getitem__"),
  G ("aten::format"), G ("aten::warn"), G ("aten::__is__"), G ("aten::__isnot__"), G ("onnx::Constant"),
  G ("aten::eq"), G ("aten::ne"), G ("aten::lt"), G ("aten::gt"), G ("aten::le"), G ("aten::ge"),
  G ("aten::__not__"), G ("aten::__and__"), G ("aten::__or__"), G ("aten::floordiv"), G ("aten::len"),
  G ("aten::list"), G ("aten::append"), G ("aten::_set_item"), G ("aten::dict"), G ("prim::DictConstruct"),
  G ("onnx::ConstantOfShape"),
  N ("aten::size", "size"), N ("aten::sym_size", "size"), N ("aten::numel", "size"), N ("aten::dim", "size"),
  N ("prim::NumToTensor", "number"), N ("aten::Int", "number"), N ("aten::Float", "number"),
  N ("aten::ScalarImplicit", "number"), N ("aten::item", "item"), N ("aten::tolist", "item"),
  N ("prim::tolist", "item"), N ("onnx::Shape", "size"), N ("onnx::Size", "size"),
  Q ("prim::device"), Q ("prim::dtype"), Q ("prim::type"), Q ("prim::requires_grad"), Q ("prim::is_cuda"),
  Q ("prim::is_nested"), Q ("aten::__contains__"), Q ("aten::is_floating_point"), Q ("prim::layout"),
  Q ("aten::is_grad_enabled"), Q ("prim::data"),
  F ("prim::If"), F ("prim::Loop"), F ("onnx::If"), F ("onnx::Loop"), F ("onnx::Scan"),
};

static GHashTable *
table (void)
{
  static gsize once;
  static GHashTable *by_op;
  if (g_once_init_enter (&once))
    {
      GHashTable *t = g_hash_table_new (g_str_hash, g_str_equal);
      for (gsize i = 0; i < G_N_ELEMENTS (rows); i++)
        g_hash_table_insert (t, (gpointer) rows[i].op, (gpointer) &rows[i].row);
      by_op = t;
      g_once_init_leave (&once, 1);
    }
  return by_op;
}

const GraftOpFamily *
graft_op_family_lookup (const char *op)
{
  GHashTable *t = table ();
  const GraftOpFamily *row = g_hash_table_lookup (t, op);
  if (row != NULL)
    return row;

  /* aten::add_ is aten::add writing into its first input */
  gsize len = strlen (op);
  if (len > 7 && g_str_has_prefix (op, "aten::") && op[len - 1] == '_' && op[len - 2] != '_')
    {
      g_autofree char *plain = g_strndup (op, len - 1);
      row = g_hash_table_lookup (t, plain);
      if (row != NULL)
        return row;
    }

  /* Every other op is its own family, computing; interned so the pointer
   * compares equal for the same op. Rows are kept per op for the life of
   * the process, as interned strings are. */
  static GMutex lock;
  static GHashTable *others;
  g_mutex_lock (&lock);
  if (others == NULL)
    others = g_hash_table_new (g_str_hash, g_str_equal);
  GraftOpFamily *other = g_hash_table_lookup (others, op);
  if (other == NULL)
    {
      other = g_new0 (GraftOpFamily, 1);
      const char *sep = strstr (op, "::");
      other->family = g_intern_string (sep ? sep + 2 : op);
      other->role = GRAFT_OP_ROLE_COMPUTE;
      g_hash_table_insert (others, (gpointer) g_intern_string (op), other);
    }
  g_mutex_unlock (&lock);
  return other;
}
