/* float16 conversion of weights and compute, as onnxconverter-common's
 * convert_float_to_float16 does it: every float32 value computed by a
 * converted node, and every float32 initializer, becomes float16; ops on
 * the block-list (and ops Graft cannot convert: custom domains, nodes with
 * subgraphs) keep float32 and get Cast nodes at the boundaries; with
 * keep_io_types the graph's inputs and outputs stay float32 and Casts
 * convert at the edges. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "runtime/rt-tensor.h"

#include <string.h>

/* Ops kept in float32 unless the caller names its own list: those whose
 * float16 kernels are missing or imprecise in common runtimes. */
static const char *const default_block_list[] = {
  "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
  "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
  "RandomUniformLike", "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier",
  "TreeEnsembleRegressor", "ZipMap", "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum",
  "Min", "Max", "Upsample", NULL,
};

typedef struct {
  GraftEditScope *scope;
  GHashTable *converted;    /* GraftNode* run in float16 */
  GHashTable *was_float;    /* GraftValue* that were float32 */
  GHashTable *half;         /* GraftValue* that are float16 after the conversion */
  GHashTable *casts;        /* "value\x1fdtype" → GraftValue* cast output, shared by consumers */
  guint n_casts;
} Conversion;

static gboolean
is_blocked (GraftNode *node, const char *const *block_list, GHashTable *kept_nodes)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  if (strcmp (node->domain, "onnx") != 0 || subgraphs->len > 0)
    return TRUE;
  return g_strv_contains (block_list, node->op_type) || g_hash_table_contains (kept_nodes, node->name);
}

static GraftTensor *
tensor_to_half (GraftTensor *tensor, GError **error)
{
  g_autoptr(GraftRtTensor) data = graft_rt_tensor_new_from_tensor (tensor, error);
  g_autoptr(GraftRtTensor) half = data ? graft_rt_tensor_cast (data, GRAFT_DTYPE_FLOAT16, error) : NULL;

  return half ? graft_rt_tensor_to_tensor (half, tensor->name) : NULL;
}

/* float32 tensors in the attributes of a converted node: Cast's target,
 * ConstantOfShape's and Constant's values. */
static gboolean
convert_attributes (GraftNode *node, GError **error)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (strcmp (node->op, "onnx::Cast") == 0 && strcmp (attribute->name, "to") == 0
          && attribute->i == GRAFT_DTYPE_FLOAT32)
        attribute->i = GRAFT_DTYPE_FLOAT16;
      else if (attribute->type == GRAFT_ATTR_TENSOR && attribute->t != NULL
               && attribute->t->dtype == GRAFT_DTYPE_FLOAT32)
        {
          GraftTensor *half = tensor_to_half (attribute->t, error);
          if (half == NULL)
            return FALSE;
          graft_tensor_unref (attribute->t);
          attribute->t = half;
        }
    }
  return TRUE;
}

/* The value of dtype that carries value to a consumer: value itself, or
 * the output of a Cast (one per value and dtype). */
static GraftValue *
cast_of (Conversion *conversion, GraftValue *value, GraftDType dtype)
{
  GraftGraph *graph = conversion->scope->graph;
  g_autofree char *key = g_strdup_printf ("%s\x1f%d", value->name, dtype);
  g_autofree char *name = NULL;
  GraftValue *cast = g_hash_table_lookup (conversion->casts, key);
  GraftNode *node;

  if (cast != NULL)
    return cast;
  name = graft_edit_unique_node_name (graph, dtype == GRAFT_DTYPE_FLOAT16 ? "Cast_to_float16" : "Cast_to_float32");
  node = graft_graph_add_node (graph, "", "Cast", name);
  graft_node_add_attribute (node, graft_attribute_new_int ("to", dtype));
  cast = graft_graph_new_anonymous_value (graph, name);
  graft_node_add_input (node, value);
  graft_node_add_output (node, cast);
  g_hash_table_insert (conversion->casts, g_steal_pointer (&key), cast);
  conversion->n_casts++;
  return cast;
}

static GraftDType
type_after (Conversion *conversion, GraftValue *value)
{
  return g_hash_table_contains (conversion->half, value) ? GRAFT_DTYPE_FLOAT16 : GRAFT_DTYPE_FLOAT32;
}

static gboolean
float16 (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  g_autoptr(GraftInference) inference = NULL;
  GraftGraph *graph = scope->graph;
  gboolean keep_io = graft_edit_param_bool (params, "keep_io_types", FALSE);
  g_autofree const char **given_block_list = graft_edit_param_strv (params, "block_ops");
  const char *const *block_list = given_block_list ? given_block_list : default_block_list;
  /* nodes kept in float32 by name: what a precision search found */
  g_autofree const char **keep_nodes = graft_edit_param_strv (params, "keep_nodes");
  g_autoptr(GHashTable) kept_nodes = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) converted = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) was_float = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) half = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) casts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  Conversion conversion = { scope, converted, was_float, half, casts, 0 };
  g_autoptr(GPtrArray) original_nodes = NULL;
  guint n_blocked = 0, n_weights = 0;

  for (guint i = 0; keep_nodes && keep_nodes[i]; i++)
    g_hash_table_add (kept_nodes, (gpointer) keep_nodes[i]);

  if (graph != graft_model_get_graph (scope->model))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "float16 conversion works on the main graph");
      return FALSE;
    }
  inference = graft_edit_infer (scope->model);
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      GraftDType dtype;
      const GraftShape *shape;

      if (value->kind == GRAFT_VALUE_TENSOR && graft_edit_value_type (inference, value, &dtype, &shape)
          && dtype == GRAFT_DTYPE_FLOAT32)
        g_hash_table_add (was_float, value);
    }
  /* Not g_ptr_array_copy: that would take graph->nodes' free function along. */
  original_nodes = g_ptr_array_sized_new (graph->nodes->len);
  for (guint i = 0; i < graph->nodes->len; i++)
    g_ptr_array_add (original_nodes, g_ptr_array_index (graph->nodes, i));
  for (guint i = 0; i < original_nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (original_nodes, i);
      if (is_blocked (node, block_list, kept_nodes))
        {
          n_blocked++;
          continue;
        }
      g_hash_table_add (converted, node);
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *out = g_ptr_array_index (node->outputs, j);
          if (out != NULL && g_hash_table_contains (was_float, out))
            g_hash_table_add (half, out);
        }
      if (!convert_attributes (node, error))
        return FALSE;
    }
  /* Weights and, unless kept, the interface. */
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      if (!g_hash_table_contains (was_float, value))
        continue;
      if (value->initializer != NULL)
        {
          GraftTensor *tensor = tensor_to_half (value->initializer, error);
          if (tensor == NULL)
            return FALSE;
          graft_graph_add_initializer (graph, value, tensor);
          g_hash_table_add (half, value);
          n_weights++;
        }
      else if (value->is_graph_input && !keep_io)
        g_hash_table_add (half, value);
    }
  /* Each read gets the type its node computes in. */
  for (guint i = 0; i < original_nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (original_nodes, i);
      GraftDType wanted = g_hash_table_contains (converted, node) ? GRAFT_DTYPE_FLOAT16 : GRAFT_DTYPE_FLOAT32;

      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *in = g_ptr_array_index (node->inputs, j);
          if (in != NULL && g_hash_table_contains (was_float, in) && type_after (&conversion, in) != wanted)
            graft_node_set_input (node, j, cast_of (&conversion, in, wanted));
        }
    }
  for (guint i = 0; i < graph->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (graph->outputs, i);
      GraftValue *cast;
      char *name;

      if (!keep_io || !g_hash_table_contains (half, out))
        continue;
      /* The output keeps its name and float32; the float16 value inside is renamed. */
      cast = cast_of (&conversion, out, GRAFT_DTYPE_FLOAT32);
      graph->outputs->pdata[i] = cast;
      cast->is_graph_output = TRUE;
      out->is_graph_output = FALSE;
      g_hash_table_remove (graph->value_by_name, out->name);
      g_hash_table_remove (graph->value_by_name, cast->name);
      name = out->name;
      out->name = cast->name;
      cast->name = name;
      g_hash_table_insert (graph->value_by_name, out->name, out);
      g_hash_table_insert (graph->value_by_name, cast->name, cast);
      cast->dtype = GRAFT_DTYPE_FLOAT32;
      graft_shape_copy (&cast->shape, &out->shape);
    }
  /* Declared types follow. */
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      if (g_hash_table_contains (half, value) && value->dtype != GRAFT_DTYPE_UNDEFINED)
        value->dtype = GRAFT_DTYPE_FLOAT16;
    }
  if (!graft_edit_toposort (graph, error))
    return FALSE;
  g_ptr_array_add (notes, g_strdup_printf ("%u nodes in float16, %u kept in float32, %u weights converted, %u Casts "
                                           "added%s", g_hash_table_size (converted), n_blocked, n_weights,
                                           conversion.n_casts, keep_io ? "; inputs and outputs stay float32" : ""));
  return TRUE;
}

static char *
describe_float16 (GVariant *params)
{
  return g_strdup_printf ("Convert to float16%s",
                          graft_edit_param_bool (params, "keep_io_types", FALSE) ? " (inputs and outputs float32)" : "");
}

const GraftEditOperation graft_edit_ops_float16[] = {
  { .id = "float16", .node_params = "", .value_params = "", .apply = float16, .describe = describe_float16,
    .option = "--float16",
    .help = "convert weights and compute to float16 (see --keep-io-types, --fp16-keep, --auto-keep)" },
  { NULL },
};
