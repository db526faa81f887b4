/* Classic ML operators of the ai.onnx.ml domain: LabelEncoder, Binarizer,
 * ArrayFeatureExtractor, TreeEnsemble (opset 5). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* ---- LabelEncoder ---- */

/* The keys_* or values_* attribute as a 1-D tensor (its own tensor for
 * *_tensor); NULL with error when none is set. */
static GraftRtTensor *
mapping_attribute (GraftNode *node, const char *prefix, GError **error)
{
  static const char *const suffixes[] = { "tensor", "strings", "int64s", "floats" };
  for (guint k = 0; k < G_N_ELEMENTS (suffixes); k++)
    {
      g_autofree char *name = g_strdup_printf ("%s_%s", prefix, suffixes[k]);
      GraftAttribute *a = graft_node_get_attribute (node, name);
      if (a == NULL)
        continue;
      if (a->type == GRAFT_ATTR_TENSOR && a->t)
        return graft_rt_tensor_new_from_tensor (a->t, error);
      gint64 n = a->type == GRAFT_ATTR_STRINGS ? (gint64) a->strings->len : a->type == GRAFT_ATTR_INTS ? (gint64) a->ints->len
               : a->type == GRAFT_ATTR_FLOATS ? (gint64) a->floats->len : -1;
      if (n < 0)
        break;
      GraftDType dtype = a->type == GRAFT_ATTR_STRINGS ? GRAFT_DTYPE_STRING
                       : a->type == GRAFT_ATTR_INTS ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT32;
      GraftRtTensor *t = graft_rt_tensor_new (dtype, 1, &n, error);
      if (t == NULL)
        return NULL;
      for (gint64 i = 0; i < n; i++)
        if (dtype == GRAFT_DTYPE_STRING)
          {
            gsize length;
            const char *s = g_bytes_get_data (a->strings->pdata[i], &length);
            g_free (((char **) t->data)[i]);
            ((char **) t->data)[i] = g_strndup (s ? s : "", length);
          }
        else if (dtype == GRAFT_DTYPE_INT64)
          graft_rt_tensor_set_i64 (t, i, g_array_index (a->ints, gint64, i));
        else
          graft_rt_tensor_set_f64 (t, i, g_array_index (a->floats, double, i));
      return t;
    }
  return graft_kernel_fail (error, "no %s_* attribute (tensor, strings, int64s or floats)", prefix), NULL;
}

static GraftDType
mapped_dtype (GraftNode *node)
{
  GraftAttribute *t = graft_node_get_attribute (node, "values_tensor");
  if (t && t->t)
    return t->t->dtype;
  if (graft_node_has_attr (node, "values_strings"))
    return GRAFT_DTYPE_STRING;
  return graft_node_has_attr (node, "values_int64s") ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT32;
}

static gboolean
infer_label_encoder (GraftInferContext *ctx, GError **error)
{
  graft_infer_set_output (ctx, 0, mapped_dtype (ctx->node), &graft_infer_input (ctx, 0)->shape);
  return TRUE;
}

static gboolean
same_key (const GraftRtTensor *keys, gint64 k, const GraftRtTensor *x, gint64 i)
{
  if (keys->dtype == GRAFT_DTYPE_STRING || x->dtype == GRAFT_DTYPE_STRING)
    return keys->dtype == x->dtype && g_strcmp0 (((char **) keys->data)[k], ((char **) x->data)[i]) == 0;
  double a = graft_rt_tensor_get_f64 (keys, k), b = graft_rt_tensor_get_f64 (x, i);
  return a == b || (isnan (a) && isnan (b));   /* a NaN key matches any NaN */
}

static gboolean
kernel_label_encoder (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  g_autoptr(GraftRtTensor) keys = mapping_attribute (ctx->node, "keys", error);
  if (keys == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) values = mapping_attribute (ctx->node, "values", error);
  if (values == NULL)
    return FALSE;
  if (keys->numel != values->numel)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " keys but %" G_GINT64_FORMAT " values", keys->numel, values->numel);
  GraftAttribute *default_tensor = graft_node_get_attribute (ctx->node, "default_tensor");
  g_autoptr(GraftRtTensor) fallback = default_tensor && default_tensor->t
                                      ? graft_rt_tensor_new_from_tensor (default_tensor->t, error)
                                      : graft_rt_tensor_new (values->dtype, 0, NULL, error);
  if (fallback == NULL)
    return FALSE;
  if (fallback->numel != 1 || fallback->dtype != values->dtype)
    return graft_kernel_fail (error, "default_tensor must be one %s value", graft_dtype_to_string (values->dtype));
  if (!(default_tensor && default_tensor->t))
    {
      if (values->dtype == GRAFT_DTYPE_STRING)
        {
          g_free (((char **) fallback->data)[0]);
          ((char **) fallback->data)[0] = g_strdup (graft_node_attr_string (ctx->node, "default_string", "_Unused"));
        }
      else if (values->dtype == GRAFT_DTYPE_INT64)
        graft_rt_tensor_set_i64 (fallback, 0, graft_node_attr_int (ctx->node, "default_int64", -1));
      else
        graft_rt_tensor_set_f64 (fallback, 0, graft_node_attr_float (ctx->node, "default_float", -0.0));
    }
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 k = keys->numel - 1;   /* a repeated key: the last one counts */
      while (k >= 0 && !same_key (keys, k, x, i))
        k--;
      graft_copy_element (y, i, k >= 0 ? values : fallback, k >= 0 ? k : 0);
    }
  return TRUE;
}

/* ---- Binarizer ---- */

static gboolean
kernel_binarizer (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  double threshold = graft_node_attr_float (ctx->node, "threshold", 0);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    graft_rt_tensor_set_f64 (y, i, graft_rt_tensor_get_f64 (x, i) > threshold ? 1 : 0);
  return TRUE;
}

/* ---- ArrayFeatureExtractor: X[..., indices] ---- */

static gboolean
infer_array_feature_extractor (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *indices = graft_infer_input (ctx, 1);
  gint64 n = graft_shape_get_numel (&indices->shape);
  if (x->shape.rank < 1 || n < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank < 1 ? -1 : MAX (x->shape.rank, 2));
      return TRUE;
    }
  GraftShape shape;
  /* a vector becomes one row */
  graft_shape_init (&shape, MAX (x->shape.rank, 2));
  for (int d = 0; d < x->shape.rank - 1; d++)
    shape.dims[d] = x->shape.dims[d];
  if (x->shape.rank == 1)
    shape.dims[0] = graft_dim_fixed (1);
  shape.dims[shape.rank - 1] = graft_dim_fixed (n);
  graft_infer_set_output (ctx, 0, x->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static gboolean
kernel_array_feature_extractor (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *indices = ctx->inputs[1];
  if (x->rank < 1)
    return graft_kernel_fail (error, "X must have at least one axis");
  gint64 last = x->dims[x->rank - 1], rows = x->numel / MAX (last, 1);
  GraftRtTensor *z = graft_kernel_output (ctx, 0, error);
  if (z == NULL)
    return FALSE;
  for (gint64 k = 0; k < indices->numel; k++)
    {
      gint64 index = graft_rt_tensor_get_i64 (indices, k);
      if (index < 0 || index >= last)
        return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is outside X's last axis of %" G_GINT64_FORMAT,
                                  index, last);
      for (gint64 r = 0; r < rows; r++)
        graft_copy_element (z, r * indices->numel + k, x, r * last + index);
    }
  return TRUE;
}

/* ---- TreeEnsemble (ai.onnx.ml 5) ---- */

enum { BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, BRANCH_MEMBER };
enum { AGGREGATE_AVERAGE, AGGREGATE_SUM, AGGREGATE_MIN, AGGREGATE_MAX };

typedef struct {
  guint n_nodes, n_leaves;
  const gint64 *features, *true_ids, *false_ids, *true_leafs, *false_leafs, *missing_true, *targets;
  GraftRtTensor *splits, *modes, *weights, *members;
  gint64 *member_start;   /* per node: first value of its set in members (MEMBER nodes) */
} Forest;

static void
forest_clear (Forest *forest)
{
  g_clear_pointer (&forest->splits, graft_rt_tensor_unref);
  g_clear_pointer (&forest->modes, graft_rt_tensor_unref);
  g_clear_pointer (&forest->weights, graft_rt_tensor_unref);
  g_clear_pointer (&forest->members, graft_rt_tensor_unref);
  g_clear_pointer (&forest->member_start, g_free);
}

static GraftRtTensor *
tensor_attribute (GraftNode *node, const char *name, gboolean required, GError **error)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  if (a == NULL || a->t == NULL)
    return required ? graft_kernel_fail (error, "the %s attribute is missing", name), NULL : NULL;
  return graft_rt_tensor_new_from_tensor (a->t, error);
}

static const gint64 *
ints_attribute (GraftNode *node, const char *name, guint want, GError **error)
{
  guint n = 0;
  const gint64 *values = graft_node_attr_ints (node, name, &n);
  if (values == NULL || n != want)
    graft_kernel_fail (error, "%s must have %u values, not %u", name, want, values ? n : 0);
  return values && n == want ? values : NULL;
}

static gboolean
forest_init (Forest *forest, GraftNode *node, GError **error)
{
  if ((forest->splits = tensor_attribute (node, "nodes_splits", TRUE, error)) == NULL ||
      (forest->modes = tensor_attribute (node, "nodes_modes", TRUE, error)) == NULL ||
      (forest->weights = tensor_attribute (node, "leaf_weights", TRUE, error)) == NULL)
    return FALSE;
  forest->n_nodes = forest->splits->numel;
  forest->n_leaves = forest->weights->numel;
  forest->members = tensor_attribute (node, "membership_values", FALSE, error);
  if (forest->modes->numel != forest->n_nodes)
    return graft_kernel_fail (error, "nodes_modes must have one mode per node");
  if (!(forest->features = ints_attribute (node, "nodes_featureids", forest->n_nodes, error)) ||
      !(forest->true_ids = ints_attribute (node, "nodes_truenodeids", forest->n_nodes, error)) ||
      !(forest->false_ids = ints_attribute (node, "nodes_falsenodeids", forest->n_nodes, error)) ||
      !(forest->true_leafs = ints_attribute (node, "nodes_trueleafs", forest->n_nodes, error)) ||
      !(forest->false_leafs = ints_attribute (node, "nodes_falseleafs", forest->n_nodes, error)) ||
      !(forest->targets = ints_attribute (node, "leaf_targetids", forest->n_leaves, error)))
    return FALSE;
  forest->missing_true = graft_node_has_attr (node, "nodes_missing_value_tracks_true")
                         ? ints_attribute (node, "nodes_missing_value_tracks_true", forest->n_nodes, error) : NULL;
  if (graft_node_has_attr (node, "nodes_missing_value_tracks_true") && forest->missing_true == NULL)
    return FALSE;
  for (guint i = 0; i < forest->n_nodes; i++)
    if (forest->true_ids[i] < 0 || forest->false_ids[i] < 0 ||
        forest->true_ids[i] >= (forest->true_leafs[i] ? forest->n_leaves : forest->n_nodes) ||
        forest->false_ids[i] >= (forest->false_leafs[i] ? forest->n_leaves : forest->n_nodes))
      return graft_kernel_fail (error, "node %u branches outside the nodes or leaves", i);
  /* The sets of the BRANCH_MEMBER nodes follow each other, NaN-delimited. */
  forest->member_start = g_new0 (gint64, MAX (forest->n_nodes, 1));
  gint64 next = 0;
  for (guint i = 0; i < forest->n_nodes; i++)
    if (graft_rt_tensor_get_i64 (forest->modes, i) == BRANCH_MEMBER)
      {
        if (forest->members == NULL || next >= forest->members->numel)
          return graft_kernel_fail (error, "membership_values has no set for node %u", i);
        forest->member_start[i] = next;
        while (next < forest->members->numel && !isnan (graft_rt_tensor_get_f64 (forest->members, next)))
          next++;
        next++;
      }
  return TRUE;
}

static gboolean
branch_true (const Forest *forest, guint node, double value)
{
  if (isnan (value) && forest->missing_true && forest->missing_true[node])
    return TRUE;
  double split = graft_rt_tensor_get_f64 (forest->splits, node);
  switch (graft_rt_tensor_get_i64 (forest->modes, node))
    {
    case BRANCH_LEQ: return value <= split;
    case BRANCH_LT: return value < split;
    case BRANCH_GTE: return value >= split;
    case BRANCH_GT: return value > split;
    case BRANCH_EQ: return value == split;
    case BRANCH_NEQ: return value != split;
    default:
      for (gint64 k = forest->member_start[node]; k < forest->members->numel; k++)
        {
          double member = graft_rt_tensor_get_f64 (forest->members, k);
          if (isnan (member))
            break;
          if (member == value)
            return TRUE;
        }
      return FALSE;
    }
}

/* The leaf a row reaches from root; -1 with error on a cycle. */
static gint64
forest_walk (const Forest *forest, gint64 root, const GraftRtTensor *x, gint64 row, gint64 n_features, GError **error)
{
  gint64 node = root;
  if (forest->true_leafs[root] && forest->false_leafs[root] && forest->true_ids[root] == forest->false_ids[root])
    return forest->true_ids[root];   /* a tree that is one leaf */
  for (guint steps = 0; steps <= forest->n_nodes; steps++)
    {
      gint64 feature = forest->features[node];
      if (feature < 0 || feature >= n_features)
        return graft_kernel_fail (error, "node %" G_GINT64_FORMAT " reads feature %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT,
                                  node, feature, n_features), -1;
      gboolean go_true = branch_true (forest, node, graft_rt_tensor_get_f64 (x, row * n_features + feature));
      gint64 next = go_true ? forest->true_ids[node] : forest->false_ids[node];
      if (go_true ? forest->true_leafs[node] : forest->false_leafs[node])
        return next;
      node = next;
    }
  return graft_kernel_fail (error, "the tree from root %" G_GINT64_FORMAT " has a cycle", root), -1;
}

static gboolean
infer_tree_ensemble (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  GraftShape shape;
  graft_shape_init (&shape, 2);
  shape.dims[0] = x->shape.rank >= 1 ? x->shape.dims[0] : graft_dim_unknown ();
  shape.dims[1] = graft_dim_fixed (graft_node_attr_int (ctx->node, "n_targets", 1));
  graft_infer_set_output (ctx, 0, x->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static gboolean
kernel_tree_ensemble (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 aggregate = graft_node_attr_int (ctx->node, "aggregate_function", AGGREGATE_SUM);
  gint64 n_targets = graft_node_attr_int (ctx->node, "n_targets", 1);
  if (graft_node_attr_int (ctx->node, "post_transform", 0) != 0)
    return graft_kernel_unsupported (error, "post_transform other than NONE");
  if (aggregate < AGGREGATE_AVERAGE || aggregate > AGGREGATE_MAX)
    return graft_kernel_fail (error, "unknown aggregate_function %" G_GINT64_FORMAT, aggregate);
  if (x->rank != 2)
    return graft_kernel_fail (error, "X must be [rows, features]");
  guint n_roots;
  const gint64 *roots = graft_node_attr_ints (ctx->node, "tree_roots", &n_roots);
  Forest forest = { 0 };
  gboolean ok = forest_init (&forest, ctx->node, error);
  for (guint t = 0; ok && roots && t < n_roots; t++)
    if (roots[t] < 0 || roots[t] >= forest.n_nodes)
      ok = graft_kernel_fail (error, "tree root %" G_GINT64_FORMAT " is not a node", roots[t]);
  GraftRtTensor *y = ok ? graft_kernel_output (ctx, 0, error) : NULL;
  for (gint64 row = 0; y && row < x->dims[0]; row++)
    {
      for (gint64 k = 0; k < n_targets; k++)
        graft_rt_tensor_set_f64 (y, row * n_targets + k, aggregate == AGGREGATE_MIN ? G_MAXFLOAT
                                                         : aggregate == AGGREGATE_MAX ? -G_MAXFLOAT : 0);
      for (guint t = 0; roots && t < n_roots; t++)
        {
          gint64 leaf = forest_walk (&forest, roots[t], x, row, x->dims[1], error);
          if (leaf < 0)
            {
              y = NULL;
              break;
            }
          gint64 target = forest.targets[leaf];
          if (target < 0 || target >= n_targets)
            {
              y = NULL;
              graft_kernel_fail (error, "leaf %" G_GINT64_FORMAT " targets %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT,
                                 leaf, target, n_targets);
              break;
            }
          gint64 at = row * n_targets + target;
          double weight = graft_rt_tensor_get_f64 (forest.weights, leaf), have = graft_rt_tensor_get_f64 (y, at);
          graft_rt_tensor_set_f64 (y, at, aggregate == AGGREGATE_MIN ? MIN (have, weight)
                                          : aggregate == AGGREGATE_MAX ? MAX (have, weight)
                                          : aggregate == AGGREGATE_AVERAGE ? have + weight / n_roots : have + weight);
        }
    }
  forest_clear (&forest);
  return y != NULL;
}

#define ML(name, since, infer, kernel, input_names, output_names) { "ai.onnx.ml::" name, since, 0, infer, kernel, 0, input_names, output_names }

const GraftOpSchema graft_ops_ml[] = {
  ML ("LabelEncoder", 1, infer_label_encoder, kernel_label_encoder, "X", "Y"),
  ML ("Binarizer", 1, graft_infer_same_as_input, kernel_binarizer, "X", "Y"),
  ML ("ArrayFeatureExtractor", 1, infer_array_feature_extractor, kernel_array_feature_extractor, "X Y", "Z"),
  ML ("TreeEnsemble", 5, infer_tree_ensemble, kernel_tree_ensemble, "X", "Y"),
  { NULL }
};
