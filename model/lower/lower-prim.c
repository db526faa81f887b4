/* prim:: nodes and the TorchScript bookkeeping around them: constants,
 * lists and tuples (resolved while converting), module attributes,
 * control flow (a constant condition takes its branch, a tensor condition
 * becomes ONNX If / Loop with bodies) and the checks scripted modules
 * carry (dim checks, raise, warn), which fold away with known shapes. */
#include "lower/lower-private.h"

#include <string.h>

static LowerValue *
bool_constant (gboolean value)
{
  g_autoptr(GraftAttribute) a = graft_attribute_new ("value", GRAFT_ATTR_BOOL);
  a->i = value;
  return graft_lower_value_const (a);
}

static void
bind_output (GraftLowerContext *ctx, GraftNode *node, guint k, LowerValue *value)
{
  if (k < node->outputs->len)
    graft_lower_bind (ctx, g_ptr_array_index (node->outputs, k), value);
  else
    graft_lower_value_free (value);
}

static gboolean
lower_constant (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftAttribute *value = graft_node_get_attribute (node, "value");
  bind_output (ctx, node, 0, value ? graft_lower_value_const (value) : g_new0 (LowerValue, 1));
  return TRUE;
}

static gboolean lower_nothing (GraftLowerContext *ctx, GraftNode *node, GError **error);

/* Module attributes: the builder records the value of plain ones
 * (training, a None bias); module objects lower to nothing. */
static gboolean
lower_get_attr (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  if (graft_node_get_attribute (node, "value") != NULL)
    return lower_constant (ctx, node, error);
  const char *name = graft_node_attr_string (node, "name", "");
  /* Converted modules are in eval mode, as the runtime runs them. */
  if (strcmp (name, "training") == 0 || g_str_has_suffix (name, ".training"))
    {
      bind_output (ctx, node, 0, bool_constant (FALSE));
      return TRUE;
    }
  if (!g_str_has_suffix (name, "._flat_weights"))
    return lower_nothing (ctx, node, error);
  /* An RNN's weights in torch's order: per layer and direction
   * weight_ih, weight_hh, bias_ih, bias_hh. */
  static const char *const kinds[] = { "weight_ih", "weight_hh", "bias_ih", "bias_hh" };
  g_autofree char *module = g_strndup (name, strlen (name) - strlen ("._flat_weights"));
  LowerValue *list = graft_lower_value_list ();
  for (int layer = 0;; layer++)
    {
      guint before = list->items->len;
      for (int dir = 0; dir < 2; dir++)
        for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
          {
            g_autofree char *parameter = g_strdup_printf ("%s.%s_l%d%s", module, kinds[k], layer, dir ? "_reverse" : "");
            GraftValue *v = graft_graph_resolve_value (node->graph, parameter);
            LowerValue *lowered = v && v->initializer ? graft_lower_lookup (ctx, v) : NULL;
            if (lowered != NULL)
              g_ptr_array_add (list->items, graft_lower_value_copy (lowered));
          }
      if (list->items->len == before)
        break;
    }
  bind_output (ctx, node, 0, list);
  return TRUE;
}

/* Things nothing in ONNX reads: strings for messages, devices, None. */
static gboolean
lower_nothing (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  for (guint k = 0; k < node->outputs->len; k++)
    bind_output (ctx, node, k, g_new0 (LowerValue, 1));
  return TRUE;
}

/* Graft converts for the CPU: every tensor's device is "cpu". */
static gboolean
lower_device (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  g_autoptr(GraftAttribute) cpu = graft_attribute_new_string ("value", "cpu");
  bind_output (ctx, node, 0, graft_lower_value_const (cpu));
  return TRUE;
}

static gboolean
same_constant (const GraftAttribute *a, const GraftAttribute *b)
{
  if (a->type == GRAFT_ATTR_STRING && b->type == GRAFT_ATTR_STRING)
    return g_bytes_equal (a->s, b->s);
  if ((a->type == GRAFT_ATTR_INT || a->type == GRAFT_ATTR_BOOL) && (b->type == GRAFT_ATTR_INT || b->type == GRAFT_ATTR_BOOL))
    return a->i == b->i;
  if (a->type == GRAFT_ATTR_FLOAT && b->type == GRAFT_ATTR_FLOAT)
    return a->f == b->f;
  return FALSE;
}

/* key in container, both constant */
static gboolean
lower_contains (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *container = graft_lower_arg (ctx, node, 0), *key = graft_lower_arg (ctx, node, 1);
  if (container == NULL || key == NULL || key->kind != LOWER_CONST)
    return graft_lower_fail (error, node, "membership is only known for constants while converting");
  gboolean found = FALSE;
  if (container->kind == LOWER_CONST && container->constant->type == GRAFT_ATTR_STRINGS)
    for (guint i = 0; i < container->constant->strings->len && !found; i++)
      found = key->constant->type == GRAFT_ATTR_STRING && g_bytes_equal (key->constant->s, container->constant->strings->pdata[i]);
  else if (container->kind == LOWER_CONST && container->constant->type == GRAFT_ATTR_INTS)
    for (guint i = 0; i < container->constant->ints->len && !found; i++)
      found = key->constant->type == GRAFT_ATTR_INT && key->constant->i == g_array_index (container->constant->ints, gint64, i);
  else if (container->kind == LOWER_LIST)
    for (guint i = 0; i < container->items->len && !found; i++)
      {
        LowerValue *item = container->items->pdata[i];
        if (item->kind != LOWER_CONST)
          return graft_lower_fail (error, node, "membership is only known for constants while converting");
        found = same_constant (item->constant, key->constant);
      }
  else
    return graft_lower_fail (error, node, "membership is only known for constant lists while converting");
  bind_output (ctx, node, 0, bool_constant (found));
  return TRUE;
}

static gboolean
lower_false (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  bind_output (ctx, node, 0, bool_constant (FALSE));
  return TRUE;
}

static guint
count_arguments (GraftNode *node)
{
  guint n = node->inputs->len;
  for (guint i = 0; i < node->attributes->len; i++)
    if (g_str_has_prefix (((GraftAttribute *) g_ptr_array_index (node->attributes, i))->name, "arg"))
      n++;
  return n;
}

static gboolean
lower_list (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *list = graft_lower_value_list ();
  guint n = count_arguments (node);
  for (guint k = 0; k < n; k++)
    {
      LowerValue *item = graft_lower_arg (ctx, node, k);
      g_ptr_array_add (list->items, item ? graft_lower_value_copy (item) : g_new0 (LowerValue, 1));
    }
  bind_output (ctx, node, 0, list);
  return TRUE;
}

static gboolean
lower_unpack (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *list = graft_lower_arg (ctx, node, 0);
  if (list == NULL || list->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "the list's items are not known while converting");
  if (list->items->len != node->outputs->len)
    return graft_lower_fail (error, node, "unpacks %u values from a list of %u", node->outputs->len, list->items->len);
  for (guint k = 0; k < node->outputs->len; k++)
    bind_output (ctx, node, k, graft_lower_value_copy (list->items->pdata[k]));
  return TRUE;
}

static gboolean
lower_tuple_index (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *list = graft_lower_arg (ctx, node, 0);
  gint64 i;
  if (!graft_lower_arg_int (ctx, node, 1, 0, &i, error))
    return FALSE;
  if (list == NULL || list->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "the tuple's items are not known while converting");
  if (i < 0)
    i += list->items->len;
  if (i < 0 || i >= (gint64) list->items->len)
    return graft_lower_fail (error, node, "index out of range");
  bind_output (ctx, node, 0, graft_lower_value_copy (list->items->pdata[i]));
  return TRUE;
}

/* x.dtype as torch's ScalarType code (float32 → 6) */
static gboolean
lower_dtype (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  GraftDType dtype = graft_lower_dtype (ctx, x);
  for (gint64 code = 0; code < 16; code++)
    if (dtype != GRAFT_DTYPE_UNDEFINED && graft_lower_scalar_type (code) == dtype)
      {
        g_autoptr(GraftAttribute) a = graft_attribute_new_int ("value", code);
        bind_output (ctx, node, 0, graft_lower_value_const (a));
        return TRUE;
      }
  return graft_lower_fail (error, node, "the dtype of '%s' is not known while converting", x->name);
}

/* device.type: the device is already its type */
static gboolean
lower_pass_through (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, 0);
  bind_output (ctx, node, 0, v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1));
  return TRUE;
}

/* x is None / x is not None: known from what x lowered to. */
static gboolean
lower_is (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *a = graft_lower_arg (ctx, node, 0), *b = graft_lower_arg (ctx, node, 1);
  gboolean a_none = a == NULL || a->kind == LOWER_NONE, b_none = b == NULL || b->kind == LOWER_NONE;
  gboolean same = a_none == b_none;
  if (!a_none && !b_none)
    {
      /* `query is key`: the same TorchScript value lowers to the same ONNX value */
      if (a->kind != LOWER_TENSOR || b->kind != LOWER_TENSOR)
        return graft_lower_fail (error, node, "identity of two values is only known for tensors and None");
      same = a->value == b->value;
    }
  bind_output (ctx, node, 0, bool_constant (strcmp (node->op_type, "__is__") == 0 ? same : !same));
  return TRUE;
}

static gboolean
lower_num_to_tensor (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, 0);
  if (v != NULL && v->kind == LOWER_TENSOR)
    {
      bind_output (ctx, node, 0, graft_lower_value_tensor (v->value, FALSE));
      return TRUE;
    }
  GraftValue *t = graft_lower_arg_tensor (ctx, node, 0, error);
  if (t == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, t);
  return TRUE;
}

static gboolean
lower_is_floating_point (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  bind_output (ctx, node, 0, bool_constant (graft_dtype_is_float (graft_lower_dtype (ctx, x))));
  return TRUE;
}

/* A raise that conversion reaches outside any runtime branch means the
 * module raises for these shapes; inside a branch ONNX cannot raise, and
 * the branch's other results are what the file keeps (as torch.onnx does). */
static gboolean
lower_raise (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  if (ctx->graph == ctx->main_graph)
    return graft_lower_fail (error, node, "the module raises an exception for the given input shapes");
  return lower_nothing (ctx, node, error);
}

/* ---- control flow ---- */

/* The condition of an If (input 0 or attribute "cond"). */
static LowerValue *
condition (GraftLowerContext *ctx, GraftNode *node)
{
  GraftAttribute *cond = graft_node_get_attribute (node, "cond");
  if (cond != NULL)
    {
      LowerValue *v = graft_lower_value_const (cond);
      g_ptr_array_add (ctx->scratch, v);
      return v;
    }
  return node->inputs->len > 0 ? graft_lower_lookup (ctx, g_ptr_array_index (node->inputs, 0)) : NULL;
}

static gboolean
const_truth (LowerValue *v, gboolean *truth)
{
  if (v == NULL || v->kind != LOWER_CONST)
    return FALSE;
  switch (v->constant->type)
    {
    case GRAFT_ATTR_INT: case GRAFT_ATTR_BOOL: *truth = v->constant->i != 0; return TRUE;
    case GRAFT_ATTR_FLOAT: *truth = v->constant->f != 0; return TRUE;
    default: return FALSE;
    }
}

/* Lowers the branch's nodes into the current graph. */
static gboolean
inline_branch (GraftLowerContext *ctx, GraftNode *node, GraftGraph *branch, GError **error)
{
  GPtrArray *saved = ctx->scratch;
  ctx->scratch = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
  gboolean ok = _graft_lower_nodes (ctx, branch, error);
  g_ptr_array_unref (ctx->scratch);
  ctx->scratch = saved;
  if (!ok)
    return FALSE;
  for (guint k = 0; k < node->outputs->len && k < branch->outputs->len; k++)
    {
      LowerValue *v = graft_lower_lookup (ctx, g_ptr_array_index (branch->outputs, k));
      bind_output (ctx, node, k, v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1));
    }
  return TRUE;
}

static GraftValue *
as_bool (GraftLowerContext *ctx, LowerValue *v, GError **error)
{
  GraftValue *t = v->kind == LOWER_TENSOR ? v->value : graft_lower_const_attribute (ctx, v->constant, error);
  return t ? graft_lower_cast (ctx, t, GRAFT_DTYPE_BOOL) : NULL;
}

/* Whether every output of both branches is a TorchScript scalar. */
static gboolean
scalar_outputs (GraftLowerContext *ctx, GraftGraph *branch, guint k)
{
  LowerValue *v = k < branch->outputs->len ? graft_lower_lookup (ctx, g_ptr_array_index (branch->outputs, k)) : NULL;
  return v != NULL && (v->kind == LOWER_CONST || (v->kind == LOWER_TENSOR && v->scalar));
}

static gboolean
lower_if (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftGraph *then_g = graft_node_attr_graph (node, "then_branch");
  GraftGraph *else_g = graft_node_attr_graph (node, "else_branch");
  LowerValue *cond = condition (ctx, node);
  gboolean truth;
  if (then_g == NULL || else_g == NULL || cond == NULL)
    return graft_lower_fail (error, node, "has no condition or branches");
  if (const_truth (cond, &truth))
    return inline_branch (ctx, node, truth ? then_g : else_g, error);
  if (node->outputs->len == 0)
    return TRUE; /* only checks that raise, or training-mode updates: nothing to compute */
  GraftValue *c = as_bool (ctx, cond, error);
  if (c == NULL)
    return FALSE;
  g_autofree char *name = _graft_lower_unique_node_name (ctx, "If");
  g_autofree char *then_name = g_strdup_printf ("%s_then", name);
  g_autofree char *else_name = g_strdup_printf ("%s_else", name);
  GraftGraph *then_body = graft_lower_subgraph (ctx, then_g, then_name, FALSE, NULL, error);
  if (then_body == NULL)
    return FALSE;
  GraftGraph *else_body = graft_lower_subgraph (ctx, else_g, else_name, FALSE, NULL, error);
  if (else_body == NULL)
    {
      graft_graph_free (then_body);
      return FALSE;
    }
  GraftNode *n = graft_lower_node (ctx, "If", node->outputs->len, 1, c);
  graft_node_add_attribute (n, graft_attribute_new_graph ("then_branch", then_body));
  graft_node_add_attribute (n, graft_attribute_new_graph ("else_branch", else_body));
  graft_node_adopt_subgraph (n, then_body);
  graft_node_adopt_subgraph (n, else_body);
  graft_lower_finish (ctx, n);
  for (guint k = 0; k < node->outputs->len; k++)
    {
      GraftValue *out = g_ptr_array_index (n->outputs, k);
      GraftValue *t = g_ptr_array_index (then_body->outputs, k);
      _graft_lower_declare_type (ctx, out, graft_lower_dtype (ctx, t), graft_lower_shape (ctx, t));
      if (scalar_outputs (ctx, then_g, k) && scalar_outputs (ctx, else_g, k))
        graft_lower_set_output_scalar (ctx, node, k, out);
      else
        graft_lower_set_output (ctx, node, k, out);
    }
  return TRUE;
}

/* append(list, item): lists are shared by reference, so the list every
 * holder sees grows (a copy made before, at a branch's end, does not). */
static gboolean
lower_append (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *list = graft_lower_arg (ctx, node, 0), *item = graft_lower_arg (ctx, node, 1);
  if (list == NULL || list->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "appends to a list whose items are not known while converting (a list grown "
                             "in a loop whose trip count depends on the input)");
  g_ptr_array_add (list->items, item ? graft_lower_value_copy (item) : g_new0 (LowerValue, 1));
  bind_output (ctx, node, 0, graft_lower_value_copy (list));
  return TRUE;
}

/* any(list) / all(list) of bools; any(tensor) / all(tensor) */
static gboolean
lower_any_all (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean any = strcmp (node->op_type, "any") == 0;
  LowerValue *v = graft_lower_arg (ctx, node, 0);
  if (v != NULL && v->kind == LOWER_LIST)
    {
      gboolean result = !any;
      GraftValue *runtime = NULL;
      for (guint i = 0; i < v->items->len; i++)
        {
          LowerValue *item = v->items->pdata[i];
          gboolean truth;
          if (const_truth (item, &truth))
            result = any ? result || truth : result && truth;
          else if (item->kind == LOWER_TENSOR)
            {
              GraftValue *b = graft_lower_cast (ctx, item->value, GRAFT_DTYPE_BOOL);
              runtime = runtime ? graft_lower_op (ctx, any ? "Or" : "And", 2, runtime, b) : b;
            }
          else
            return graft_lower_fail (error, node, "item %u is not a bool", i);
        }
      if (runtime == NULL || result == any)
        bind_output (ctx, node, 0, bool_constant (result));
      else
        graft_lower_set_output_scalar (ctx, node, 0, runtime);
      return TRUE;
    }
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  if (!graft_lower_arg_is_none (ctx, node, 1))
    return graft_lower_fail (error, node, "any/all over a dim is not lowered yet");
  GraftValue *as_int = graft_lower_cast (ctx, graft_lower_cast (ctx, x, GRAFT_DTYPE_BOOL), GRAFT_DTYPE_INT32);
  GraftNode *r = graft_lower_node (ctx, any ? "ReduceMax" : "ReduceMin", 1, 1, as_int);
  graft_node_add_attribute (r, graft_attribute_new_int ("keepdims", 0));
  graft_lower_set_output (ctx, node, 0, graft_lower_cast (ctx, graft_lower_finish (ctx, r), GRAFT_DTYPE_BOOL));
  return TRUE;
}

static gboolean
mutates_lists (GraftGraph *body)
{
  for (guint i = 0; i < body->nodes->len; i++)
    {
      GraftNode *n = g_ptr_array_index (body->nodes, i);
      if (strcmp (n->op, "aten::append") == 0 || strcmp (n->op, "aten::_set_item") == 0)
        return TRUE;
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (n);
      for (guint j = 0; j < bodies->len; j++)
        if (mutates_lists (bodies->pdata[j]))
          return TRUE;
    }
  return FALSE;
}

/* A loop with a known trip count that carries lists, None or strings, or
 * grows a list: unrolled while converting, as tracing would. */
static gboolean
unroll_loop (GraftLowerContext *ctx, GraftNode *node, GraftGraph *body, gint64 trips, LowerValue *cond,
             GError **error)
{
  guint n_carried = node->outputs->len;
  g_autoptr(GPtrArray) state = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
  LowerValue *current_cond = graft_lower_value_copy (cond);
  gboolean ok = TRUE;
  for (guint k = 0; k < n_carried; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, 2 + k);
      g_ptr_array_add (state, v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1));
    }
  for (gint64 i = 0; ok && i < trips; i++)
    {
      gboolean truth;
      if (!const_truth (current_cond, &truth))
        {
          ok = graft_lower_fail (error, node, "a loop that carries lists stops on a condition known only at run time");
          break;
        }
      if (!truth)
        break;
      g_autoptr(GraftAttribute) counter = graft_attribute_new_int ("value", i);
      graft_lower_bind (ctx, g_ptr_array_index (body->inputs, 0), graft_lower_value_const (counter));
      for (guint k = 0; k < n_carried && k + 1 < body->inputs->len; k++)
        graft_lower_bind (ctx, g_ptr_array_index (body->inputs, k + 1), graft_lower_value_copy (state->pdata[k]));
      GPtrArray *saved = ctx->scratch;
      ctx->scratch = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
      ok = _graft_lower_nodes (ctx, body, error);
      g_ptr_array_unref (ctx->scratch);
      ctx->scratch = saved;
      if (!ok)
        break;
      LowerValue *next = graft_lower_lookup (ctx, g_ptr_array_index (body->outputs, 0));
      graft_lower_value_free (current_cond);
      current_cond = next ? graft_lower_value_copy (next) : g_new0 (LowerValue, 1);
      for (guint k = 0; k < n_carried && k + 1 < body->outputs->len; k++)
        {
          LowerValue *v = graft_lower_lookup (ctx, g_ptr_array_index (body->outputs, k + 1));
          graft_lower_value_free (state->pdata[k]);
          state->pdata[k] = v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1);
        }
    }
  graft_lower_value_free (current_cond);
  for (guint k = 0; ok && k < n_carried; k++)
    bind_output (ctx, node, k, graft_lower_value_copy (state->pdata[k]));
  return ok;
}

static gboolean
needs_unrolling (GraftLowerContext *ctx, GraftNode *node, GraftGraph *body)
{
  for (guint k = 0; k < node->outputs->len; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, 2 + k);
      if (v == NULL || v->kind == LOWER_LIST || v->kind == LOWER_NONE ||
          (v->kind == LOWER_CONST && v->constant->type != GRAFT_ATTR_INT && v->constant->type != GRAFT_ATTR_FLOAT &&
           v->constant->type != GRAFT_ATTR_BOOL))
        return TRUE;
    }
  return mutates_lists (body);
}

#define MAX_UNROLLED_TRIPS 4096

/* prim::Loop(max_trip_count, cond, carried…) with body (i, carried…) →
 * (cond, carried…): ONNX Loop with the same carried values. */
static gboolean
lower_loop (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftGraph *body = graft_node_attr_graph (node, "body");
  LowerValue *trips = graft_lower_arg (ctx, node, 0), *cond = graft_lower_arg (ctx, node, 1);
  guint n_carried = node->outputs->len;
  if (body == NULL || trips == NULL || cond == NULL)
    return graft_lower_fail (error, node, "has no trip count, condition or body");
  gboolean truth;
  if ((const_truth (cond, &truth) && !truth) ||
      (trips->kind == LOWER_CONST && trips->constant->type == GRAFT_ATTR_INT && trips->constant->i <= 0))
    {
      /* never runs: the results are the initial values */
      for (guint k = 0; k < n_carried; k++)
        {
          LowerValue *v = graft_lower_arg (ctx, node, 2 + k);
          bind_output (ctx, node, k, v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1));
        }
      return TRUE;
    }
  if (needs_unrolling (ctx, node, body))
    {
      if (trips->kind == LOWER_CONST && trips->constant->type == GRAFT_ATTR_INT &&
          trips->constant->i <= MAX_UNROLLED_TRIPS)
        return unroll_loop (ctx, node, body, trips->constant->i, cond, error);
      return graft_lower_fail (error, node, "carries lists, None or strings through a loop whose trip count is "
                               "known only at run time (ONNX sequences for them are not written yet)");
    }
  GraftValue *m = trips->kind == LOWER_NONE ? NULL : graft_lower_arg_tensor (ctx, node, 0, error);
  if (trips->kind != LOWER_NONE && m == NULL)
    return FALSE;
  if (m != NULL)
    m = graft_lower_cast (ctx, m, GRAFT_DTYPE_INT64);
  GraftValue *c = as_bool (ctx, cond, error);
  if (c == NULL)
    return FALSE;
  g_autofree GraftValue **carried = g_new0 (GraftValue *, MAX (n_carried, 1));
  g_autofree gboolean *scalar = g_new0 (gboolean, MAX (n_carried, 1));
  for (guint k = 0; k < n_carried; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, 2 + k);
      if (v == NULL || v->kind == LOWER_LIST || v->kind == LOWER_NONE)
        return graft_lower_fail (error, node, "carries a list or None through the loop, which is not lowered yet");
      scalar[k] = v->kind == LOWER_CONST || v->scalar;
      if ((carried[k] = graft_lower_arg_tensor (ctx, node, 2 + k, error)) == NULL)
        return FALSE;
    }
  g_autofree char *name = _graft_lower_unique_node_name (ctx, "Loop");
  g_autofree char *body_name = g_strdup_printf ("%s_body", name);
  GraftGraph *onnx_body = graft_lower_subgraph (ctx, body, body_name, TRUE, carried, error);
  if (onnx_body == NULL)
    return FALSE;
  GraftNode *n = graft_lower_node (ctx, "Loop", n_carried, 2, m, c);
  for (guint k = 0; k < n_carried; k++)
    graft_node_add_input (n, carried[k]);
  graft_node_add_attribute (n, graft_attribute_new_graph ("body", onnx_body));
  graft_node_adopt_subgraph (n, onnx_body);
  graft_lower_finish (ctx, n);
  for (guint k = 0; k < n_carried; k++)
    {
      GraftValue *out = g_ptr_array_index (n->outputs, k);
      /* Carried values keep their rank; their dims may change per iteration. */
      GraftShape any_dims;
      graft_shape_init (&any_dims, graft_lower_rank (ctx, carried[k]));
      _graft_lower_declare_type (ctx, out, graft_lower_dtype (ctx, carried[k]), &any_dims);
      graft_shape_clear (&any_dims);
      if (scalar[k])
        graft_lower_set_output_scalar (ctx, node, k, out);
      else
        graft_lower_set_output (ctx, node, k, out);
    }
  return TRUE;
}

const GraftLowering graft_lowerings_prim[] = {
  { "prim::Constant", 0, lower_constant, NULL },
  { "prim::GetAttr", 0, lower_get_attr, NULL },
  { "prim::ListConstruct", 0, lower_list, NULL },
  { "prim::TupleConstruct", 0, lower_list, NULL },
  { "prim::ListUnpack", 0, lower_unpack, NULL },
  { "prim::TupleUnpack", 0, lower_unpack, NULL },
  { "prim::TupleIndex", 0, lower_tuple_index, "tup i" },
  { "prim::NumToTensor", 0, lower_num_to_tensor, "a" },
  { "prim::If", 0, lower_if, NULL },
  { "prim::Loop", 0, lower_loop, "max_trip_count cond" },
  { "prim::RaiseException", 0, lower_raise, "msg cls" },
  { "prim::Uninitialized", 0, lower_nothing, NULL },
  { "prim::device", 0, lower_device, "a" },
  { "prim::dtype", 0, lower_dtype, "a" },
  { "prim::type", 0, lower_pass_through, "a" },
  { "aten::__contains__", 0, lower_contains, "dict key" },
  { "prim::requires_grad", 0, lower_false, "a" },
  { "prim::is_nested", 0, lower_false, "a" },
  { "prim::is_cuda", 0, lower_false, "a" },
  { "aten::is_grad_enabled", 0, lower_false, NULL },
  { "aten::is_autocast_enabled", 0, lower_false, NULL },
  { "aten::is_floating_point", 0, lower_is_floating_point, "self" },
  { "aten::__is__", 0, lower_is, "self obj" },
  { "aten::__isnot__", 0, lower_is, "self obj" },
  { "aten::append", 0, lower_append, "self el" },
  { "aten::any", 0, lower_any_all, "self dim keepdim" },
  { "aten::all", 0, lower_any_all, "self dim keepdim" },
  { "aten::format", 0, lower_nothing, NULL },
  { "aten::str", 0, lower_nothing, NULL },
  { "aten::warn", 0, lower_nothing, NULL },
  { NULL }
};
