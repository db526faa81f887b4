#include "layout/labels.h"

#include <string.h>
#include "layout/text.h"
#include "analysis/shape-inference.h"
#include "runtime/op.h"
#include "layout/attribute-fold.h"

/* Categories by lower-cased op type; ONNX and aten spellings side by side. */
static const struct {
  const char *op_type;
  GraftOpCategory category;
} category_table[] = {
  { "conv", GRAFT_OP_CATEGORY_LAYER }, { "convtranspose", GRAFT_OP_CATEGORY_LAYER },
  { "conv1d", GRAFT_OP_CATEGORY_LAYER }, { "conv2d", GRAFT_OP_CATEGORY_LAYER },
  { "conv3d", GRAFT_OP_CATEGORY_LAYER }, { "_convolution", GRAFT_OP_CATEGORY_LAYER },
  { "convolution", GRAFT_OP_CATEGORY_LAYER }, { "conv_transpose2d", GRAFT_OP_CATEGORY_LAYER },
  { "gemm", GRAFT_OP_CATEGORY_LAYER }, { "matmul", GRAFT_OP_CATEGORY_LAYER },
  { "linear", GRAFT_OP_CATEGORY_LAYER }, { "addmm", GRAFT_OP_CATEGORY_LAYER },
  { "mm", GRAFT_OP_CATEGORY_LAYER }, { "bmm", GRAFT_OP_CATEGORY_LAYER },
  { "einsum", GRAFT_OP_CATEGORY_LAYER }, { "lstm", GRAFT_OP_CATEGORY_LAYER },
  { "gru", GRAFT_OP_CATEGORY_LAYER }, { "rnn", GRAFT_OP_CATEGORY_LAYER },
  { "matmulinteger", GRAFT_OP_CATEGORY_LAYER }, { "qlinearconv", GRAFT_OP_CATEGORY_LAYER },
  { "qlinearmatmul", GRAFT_OP_CATEGORY_LAYER }, { "embedding", GRAFT_OP_CATEGORY_LAYER },
  { "attention", GRAFT_OP_CATEGORY_LAYER }, { "scaled_dot_product_attention", GRAFT_OP_CATEGORY_LAYER },

  { "relu", GRAFT_OP_CATEGORY_ACTIVATION }, { "relu_", GRAFT_OP_CATEGORY_ACTIVATION },
  { "leakyrelu", GRAFT_OP_CATEGORY_ACTIVATION }, { "leaky_relu", GRAFT_OP_CATEGORY_ACTIVATION },
  { "prelu", GRAFT_OP_CATEGORY_ACTIVATION }, { "sigmoid", GRAFT_OP_CATEGORY_ACTIVATION },
  { "tanh", GRAFT_OP_CATEGORY_ACTIVATION }, { "softmax", GRAFT_OP_CATEGORY_ACTIVATION },
  { "logsoftmax", GRAFT_OP_CATEGORY_ACTIVATION }, { "log_softmax", GRAFT_OP_CATEGORY_ACTIVATION },
  { "gelu", GRAFT_OP_CATEGORY_ACTIVATION }, { "elu", GRAFT_OP_CATEGORY_ACTIVATION },
  { "selu", GRAFT_OP_CATEGORY_ACTIVATION }, { "celu", GRAFT_OP_CATEGORY_ACTIVATION },
  { "hardsigmoid", GRAFT_OP_CATEGORY_ACTIVATION }, { "hardswish", GRAFT_OP_CATEGORY_ACTIVATION },
  { "hardtanh", GRAFT_OP_CATEGORY_ACTIVATION }, { "hardtanh_", GRAFT_OP_CATEGORY_ACTIVATION },
  { "softplus", GRAFT_OP_CATEGORY_ACTIVATION }, { "softsign", GRAFT_OP_CATEGORY_ACTIVATION },
  { "silu", GRAFT_OP_CATEGORY_ACTIVATION }, { "mish", GRAFT_OP_CATEGORY_ACTIVATION },
  { "clip", GRAFT_OP_CATEGORY_ACTIVATION }, { "thresholdedrelu", GRAFT_OP_CATEGORY_ACTIVATION },
  { "relu6", GRAFT_OP_CATEGORY_ACTIVATION }, { "hardswish_", GRAFT_OP_CATEGORY_ACTIVATION },

  { "batchnormalization", GRAFT_OP_CATEGORY_NORMALIZATION }, { "batch_norm", GRAFT_OP_CATEGORY_NORMALIZATION },
  { "layernormalization", GRAFT_OP_CATEGORY_NORMALIZATION }, { "layer_norm", GRAFT_OP_CATEGORY_NORMALIZATION },
  { "instancenormalization", GRAFT_OP_CATEGORY_NORMALIZATION }, { "instance_norm", GRAFT_OP_CATEGORY_NORMALIZATION },
  { "groupnormalization", GRAFT_OP_CATEGORY_NORMALIZATION }, { "group_norm", GRAFT_OP_CATEGORY_NORMALIZATION },
  { "lrn", GRAFT_OP_CATEGORY_NORMALIZATION }, { "lpnormalization", GRAFT_OP_CATEGORY_NORMALIZATION },
  { "meanvariancenormalization", GRAFT_OP_CATEGORY_NORMALIZATION }, { "dropout", GRAFT_OP_CATEGORY_NORMALIZATION },
  { "native_layer_norm", GRAFT_OP_CATEGORY_NORMALIZATION },

  { "maxpool", GRAFT_OP_CATEGORY_POOLING }, { "averagepool", GRAFT_OP_CATEGORY_POOLING },
  { "globalaveragepool", GRAFT_OP_CATEGORY_POOLING }, { "globalmaxpool", GRAFT_OP_CATEGORY_POOLING },
  { "lppool", GRAFT_OP_CATEGORY_POOLING }, { "globallppool", GRAFT_OP_CATEGORY_POOLING },
  { "maxunpool", GRAFT_OP_CATEGORY_POOLING }, { "maxroipool", GRAFT_OP_CATEGORY_POOLING },
  { "max_pool2d", GRAFT_OP_CATEGORY_POOLING }, { "avg_pool2d", GRAFT_OP_CATEGORY_POOLING },
  { "adaptive_avg_pool2d", GRAFT_OP_CATEGORY_POOLING }, { "adaptive_max_pool2d", GRAFT_OP_CATEGORY_POOLING },
  { "max_pool1d", GRAFT_OP_CATEGORY_POOLING }, { "avg_pool1d", GRAFT_OP_CATEGORY_POOLING },
  { "resize", GRAFT_OP_CATEGORY_POOLING }, { "upsample", GRAFT_OP_CATEGORY_POOLING },

  { "add", GRAFT_OP_CATEGORY_MATH }, { "sub", GRAFT_OP_CATEGORY_MATH }, { "mul", GRAFT_OP_CATEGORY_MATH },
  { "div", GRAFT_OP_CATEGORY_MATH }, { "pow", GRAFT_OP_CATEGORY_MATH }, { "sqrt", GRAFT_OP_CATEGORY_MATH },
  { "exp", GRAFT_OP_CATEGORY_MATH }, { "log", GRAFT_OP_CATEGORY_MATH }, { "abs", GRAFT_OP_CATEGORY_MATH },
  { "neg", GRAFT_OP_CATEGORY_MATH }, { "reciprocal", GRAFT_OP_CATEGORY_MATH }, { "erf", GRAFT_OP_CATEGORY_MATH },
  { "max", GRAFT_OP_CATEGORY_MATH }, { "min", GRAFT_OP_CATEGORY_MATH }, { "sum", GRAFT_OP_CATEGORY_MATH },
  { "mean", GRAFT_OP_CATEGORY_MATH }, { "floor", GRAFT_OP_CATEGORY_MATH }, { "ceil", GRAFT_OP_CATEGORY_MATH },
  { "round", GRAFT_OP_CATEGORY_MATH }, { "sin", GRAFT_OP_CATEGORY_MATH }, { "cos", GRAFT_OP_CATEGORY_MATH },
  { "mod", GRAFT_OP_CATEGORY_MATH }, { "equal", GRAFT_OP_CATEGORY_MATH }, { "less", GRAFT_OP_CATEGORY_MATH },
  { "greater", GRAFT_OP_CATEGORY_MATH }, { "and", GRAFT_OP_CATEGORY_MATH }, { "or", GRAFT_OP_CATEGORY_MATH },
  { "not", GRAFT_OP_CATEGORY_MATH }, { "xor", GRAFT_OP_CATEGORY_MATH }, { "where", GRAFT_OP_CATEGORY_MATH },
  { "reducemean", GRAFT_OP_CATEGORY_MATH }, { "reducesum", GRAFT_OP_CATEGORY_MATH },
  { "reducemax", GRAFT_OP_CATEGORY_MATH }, { "reducemin", GRAFT_OP_CATEGORY_MATH },
  { "reduceprod", GRAFT_OP_CATEGORY_MATH }, { "reducel2", GRAFT_OP_CATEGORY_MATH },
  { "argmax", GRAFT_OP_CATEGORY_MATH }, { "argmin", GRAFT_OP_CATEGORY_MATH }, { "cumsum", GRAFT_OP_CATEGORY_MATH },
  { "add_", GRAFT_OP_CATEGORY_MATH }, { "mul_", GRAFT_OP_CATEGORY_MATH }, { "rsub", GRAFT_OP_CATEGORY_MATH },
  { "eq", GRAFT_OP_CATEGORY_MATH }, { "ne", GRAFT_OP_CATEGORY_MATH }, { "lt", GRAFT_OP_CATEGORY_MATH },
  { "gt", GRAFT_OP_CATEGORY_MATH }, { "rsqrt", GRAFT_OP_CATEGORY_MATH }, { "topk", GRAFT_OP_CATEGORY_MATH },

  { "reshape", GRAFT_OP_CATEGORY_SHAPE }, { "transpose", GRAFT_OP_CATEGORY_SHAPE },
  { "flatten", GRAFT_OP_CATEGORY_SHAPE }, { "squeeze", GRAFT_OP_CATEGORY_SHAPE },
  { "unsqueeze", GRAFT_OP_CATEGORY_SHAPE }, { "concat", GRAFT_OP_CATEGORY_SHAPE },
  { "split", GRAFT_OP_CATEGORY_SHAPE }, { "slice", GRAFT_OP_CATEGORY_SHAPE },
  { "gather", GRAFT_OP_CATEGORY_SHAPE }, { "gatherelements", GRAFT_OP_CATEGORY_SHAPE },
  { "gathernd", GRAFT_OP_CATEGORY_SHAPE }, { "scatter", GRAFT_OP_CATEGORY_SHAPE },
  { "scatterelements", GRAFT_OP_CATEGORY_SHAPE }, { "scatternd", GRAFT_OP_CATEGORY_SHAPE },
  { "shape", GRAFT_OP_CATEGORY_SHAPE }, { "size", GRAFT_OP_CATEGORY_SHAPE },
  { "expand", GRAFT_OP_CATEGORY_SHAPE }, { "tile", GRAFT_OP_CATEGORY_SHAPE },
  { "pad", GRAFT_OP_CATEGORY_SHAPE }, { "cast", GRAFT_OP_CATEGORY_SHAPE },
  { "identity", GRAFT_OP_CATEGORY_SHAPE }, { "depthtospace", GRAFT_OP_CATEGORY_SHAPE },
  { "spacetodepth", GRAFT_OP_CATEGORY_SHAPE }, { "view", GRAFT_OP_CATEGORY_SHAPE },
  { "permute", GRAFT_OP_CATEGORY_SHAPE }, { "cat", GRAFT_OP_CATEGORY_SHAPE },
  { "stack", GRAFT_OP_CATEGORY_SHAPE }, { "chunk", GRAFT_OP_CATEGORY_SHAPE },
  { "select", GRAFT_OP_CATEGORY_SHAPE }, { "contiguous", GRAFT_OP_CATEGORY_SHAPE },
  { "to", GRAFT_OP_CATEGORY_SHAPE }, { "t", GRAFT_OP_CATEGORY_SHAPE },
  { "unbind", GRAFT_OP_CATEGORY_SHAPE }, { "constantofshape", GRAFT_OP_CATEGORY_SHAPE },
  { "range", GRAFT_OP_CATEGORY_SHAPE }, { "nonzero", GRAFT_OP_CATEGORY_SHAPE },
  { "onehot", GRAFT_OP_CATEGORY_SHAPE }, { "trilu", GRAFT_OP_CATEGORY_SHAPE },

  { "if", GRAFT_OP_CATEGORY_CONTROL }, { "loop", GRAFT_OP_CATEGORY_CONTROL },
  { "scan", GRAFT_OP_CATEGORY_CONTROL },

  { "constant", GRAFT_OP_CATEGORY_CONSTANT },
};

GraftOpCategory
graft_op_category_for_node (GraftNode *node)
{
  static GHashTable *by_op_type;
  static gsize initialized;
  g_autofree char *lower = NULL;
  gpointer found;

  if (g_once_init_enter (&initialized))
    {
      by_op_type = g_hash_table_new (g_str_hash, g_str_equal);
      for (gsize i = 0; i < G_N_ELEMENTS (category_table); i++)
        g_hash_table_insert (by_op_type, (gpointer) category_table[i].op_type,
                             GUINT_TO_POINTER (category_table[i].category));
      g_once_init_leave (&initialized, 1);
    }

  if (node->domain != NULL && strcmp (node->domain, "prim") == 0)
    {
      if (strcmp (node->op_type, "If") == 0 || strcmp (node->op_type, "Loop") == 0)
        return GRAFT_OP_CATEGORY_CONTROL;
      if (strcmp (node->op_type, "Constant") == 0)
        return GRAFT_OP_CATEGORY_CONSTANT;
      return GRAFT_OP_CATEGORY_PRIM;
    }
  lower = g_ascii_strdown (node->op_type, -1);
  found = g_hash_table_lookup (by_op_type, lower);
  return found != NULL ? GPOINTER_TO_UINT (found) : GRAFT_OP_CATEGORY_OTHER;
}

/* Attributes worth a line, most telling first; others follow in file order. */
static const char *key_attributes[] = {
  "kernel_shape", "strides", "pads", "dilations", "group", "axis", "axes", "perm", "epsilon",
  "alpha", "beta", "transA", "transB", "mode", "to", "keepdims", "value",
};

#define MAX_ATTRIBUTE_LINES 4

static gboolean
is_key_attribute (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (key_attributes); i++)
    if (strcmp (name, key_attributes[i]) == 0)
      return TRUE;
  return FALSE;
}

static gboolean
all_ints_equal (const GraftAttribute *attribute, gint64 value)
{
  for (guint i = 0; i < attribute->ints->len; i++)
    if (g_array_index (attribute->ints, gint64, i) != value)
      return FALSE;
  return TRUE;
}

/* ONNX defaults that exporters spell out anyway; they only take room. */
static gboolean
is_default_attribute (GraftNode *node, const GraftAttribute *attribute)
{
  if (attribute->type == GRAFT_ATTR_INTS && attribute->ints != NULL)
    {
      if (strcmp (attribute->name, "strides") == 0 || strcmp (attribute->name, "dilations") == 0)
        return all_ints_equal (attribute, 1);
      if (strcmp (attribute->name, "pads") == 0)
        return all_ints_equal (attribute, 0);
    }
  if (attribute->type == GRAFT_ATTR_INT && strcmp (attribute->name, "group") == 0)
    return attribute->i == 1;
  if (strcmp (node->op_type, "Gemm") == 0)
    {
      if (attribute->type == GRAFT_ATTR_FLOAT && (strcmp (attribute->name, "alpha") == 0
                                                  || strcmp (attribute->name, "beta") == 0))
        return attribute->f == 1.0;
      if (attribute->type == GRAFT_ATTR_INT && (strcmp (attribute->name, "transA") == 0
                                                || strcmp (attribute->name, "transB") == 0))
        return attribute->i == 0;
    }
  return FALSE;
}

static gboolean
is_shown_attribute (GraftNode *node, const GraftAttribute *attribute)
{
  return attribute->type != GRAFT_ATTR_GRAPH && attribute->type != GRAFT_ATTR_GRAPHS
         && !is_default_attribute (node, attribute);
}

static void
add_attribute_lines (GPtrArray *lines, GraftNode *node)
{
  g_autoptr (GPtrArray) ordered = g_ptr_array_new ();
  guint shown;

  /* Key attributes in the order of key_attributes, then the others in file order. */
  for (gsize k = 0; k < G_N_ELEMENTS (key_attributes); k++)
    {
      GraftAttribute *attribute = graft_node_get_attribute (node, key_attributes[k]);

      if (attribute != NULL && is_shown_attribute (node, attribute))
        g_ptr_array_add (ordered, attribute);
    }
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);

      if (is_shown_attribute (node, attribute) && !is_key_attribute (attribute->name))
        g_ptr_array_add (ordered, attribute);
    }

  for (shown = 0; shown < ordered->len && shown < MAX_ATTRIBUTE_LINES; shown++)
    {
      GraftAttribute *attribute = g_ptr_array_index (ordered, shown);
      g_autofree char *value = graft_attribute_format_value (attribute, 4);

      const char *argument = graft_node_get_attribute_argument_name (node, attribute->name);

      g_ptr_array_add (lines, g_strdup_printf ("%s = %s", argument ? argument : attribute->name, value));
    }
  if (ordered->len > shown)
    g_ptr_array_add (lines, g_strdup_printf ("+%u more", ordered->len - shown));
}

/* Up to this many elements an integer vector (a Reshape's shape, axes)
 * reads better as its values than as its type and shape. */
#define MAX_VALUE_ELEMENTS 4

/* "1.05228" for a scalar (a traced .item() baked into a constant),
 * "[1, -1, 64]" for a short integer vector; NULL for anything else (a
 * bias of 4 floats is a weight: its shape says more) or bytes not read. */
char *
graft_label_small_tensor_values (GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  g_autoptr(GString) text = NULL;

  if (tensor->rank > 1 || numel < 1 || numel > MAX_VALUE_ELEMENTS
      || (tensor->rank == 1 && !graft_dtype_is_integer (tensor->dtype)) || graft_tensor_is_external (tensor)
      || graft_tensor_get_data (tensor, NULL) == NULL)
    return NULL;
  text = g_string_new (tensor->rank > 0 ? "[" : "");
  for (gint64 i = 0; i < numel; i++)
    {
      g_autofree char *element = graft_tensor_format_element_short (tensor, i);

      if (element == NULL)
        return NULL;
      g_string_append_printf (text, "%s%s", i > 0 ? ", " : "", element);
    }
  if (tensor->rank > 0)
    g_string_append_c (text, ']');
  return g_string_free (g_steal_pointer (&text), FALSE);
}

char *
graft_label_input_slot (GraftNode *node, guint input)
{
  const char *slot = graft_node_get_input_argument_name (node, input);

  /* The newest schema names the slot: ONNX does not rename inputs between versions. */
  if (slot == NULL)
    slot = graft_op_registry_input_name (node->op, -1, input);
  return slot != NULL ? g_strdup (slot) : g_strdup_printf ("in%u", input);
}

static void
add_weight_lines (GPtrArray *lines, GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      g_autofree char *dims = NULL;
      g_autofree char *slot = NULL;
      g_autofree char *values = NULL;

      if (value == NULL || value->initializer == NULL)
        continue;
      slot = graft_label_input_slot (node, i);
      values = graft_label_small_tensor_values (value->initializer);
      if (values != NULL)
        {
          g_ptr_array_add (lines, g_strdup_printf ("%s = %s", slot, values));
          continue;
        }
      dims = graft_tensor_describe (value->initializer);
      g_ptr_array_add (lines, g_strdup_printf ("%s: %s", slot, dims));
    }
}

/* The end of a scoped name: "/layer1/layer1.0/conv1/Conv" → "conv1/Conv"
 * (the group boxes already say the rest; the op alone says nothing new). */
static const char *
short_name (const char *name)
{
  const char *slash = strrchr (name, '/');

  if (slash == NULL || slash[1] == '\0')
    return name;
  for (const char *p = slash - 1; p > name; p--)
    if (*p == '/')
      return p + 1;
  return name[0] == '/' ? name + 1 : name;
}

GPtrArray *
graft_node_label_texts (GraftNode *node, const GraftLabelOptions *options)
{
  GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);

  if (strcmp (node->domain, "onnx") == 0)
    g_ptr_array_add (lines, g_strdup (node->op_type));
  else
    g_ptr_array_add (lines, g_strdup (node->op));
  /* A name that only repeats the op says nothing. */
  if (options->show_names && node->name != NULL && node->name[0] != '\0'
      && strcmp (short_name (node->name), node->op_type) != 0)
    g_ptr_array_add (lines, g_strdup (short_name (node->name)));
  if (options->show_attributes)
    add_attribute_lines (lines, node);
  if (options->show_attributes && !options->show_module_attributes)
    graft_attribute_fold_add_lines (node, lines);
  if (options->show_shapes)
    add_weight_lines (lines, node);
  return lines;
}

void
graft_label_box_size (char **lines, cairo_t *cr, double *width, double *height)
{
  double w = 0, h = 0;

  for (guint i = 0; lines[i] != NULL; i++)
    {
      GraftTextRole role = i == 0 ? GRAFT_TEXT_TITLE : GRAFT_TEXT_BODY;

      graft_text_select (cr, role);
      w = MAX (w, graft_text_measure (cr, lines[i]));
      h += graft_text_get_line_height (role);
    }
  /* A little slack beyond the measured advance guards against rounding in
   * device-space glyph placement at odd zoom levels. */
  *width = MAX (w + 2 * GRAFT_LABEL_PAD_X + 2, 48);
  *height = h + 2 * GRAFT_LABEL_PAD_Y;
}

GraftTextRole
graft_value_shape_label_role (GraftValue *value, GraftInference *inference)
{
  const GraftShape *inferred = graft_inference_get_shape (inference, value);

  return inferred != NULL && graft_value_get_best_shape (value, inference) == inferred ? GRAFT_TEXT_EDGE_INFERRED
                                                                                        : GRAFT_TEXT_EDGE;
}

char *
graft_value_shape_label (GraftValue *value, GraftInference *inference)
{
  const GraftShape *shape = graft_value_get_best_shape (value, inference);

  /* A partly known declared shape still says something. */
  if (shape == NULL)
    shape = &value->shape;
  if (shape->rank < 0)
    return NULL;
  return graft_shape_to_string (shape);
}
