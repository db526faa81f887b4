/* prim:: nodes and the TorchScript bookkeeping around them: constants,
 * lists and tuples (resolved while converting), module attributes,
 * control flow (a constant condition takes its branch, a tensor condition
 * becomes ONNX If / Loop with bodies) and the checks scripted modules
 * carry (dim checks, raise, warn), which fold away with known shapes. */
#include "lower/lower-private.h"

#include "ir/module-dict.h"

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
static LowerValue *
dict_new (void)
{
  LowerValue *dict = graft_lower_value_list ();
  dict->is_dict = TRUE;
  return dict;
}

static gboolean
lower_get_attr (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  if (graft_node_get_attribute (node, "value") != NULL)
    return lower_constant (ctx, node, error);
  /* A dict read again sees what was put into it after the last read (the
   * runtime keeps one dict per run likewise). */
  const char *attribute = graft_node_attr_string (node, "name", "");
  GraftValue *earlier = g_hash_table_lookup (ctx->attribute_reads, attribute);
  LowerValue *earlier_dict = earlier ? graft_lower_lookup (ctx, earlier) : NULL;
  GraftModuleDict module_dict;
  gboolean reads_dict = graft_module_dict_read (node, &module_dict);
  if (node->outputs->len > 0 && g_ptr_array_index (node->outputs, 0) != NULL && reads_dict)
    g_hash_table_insert (ctx->attribute_reads, (gpointer) attribute, g_ptr_array_index (node->outputs, 0));
  if (earlier_dict != NULL && earlier_dict->kind == LOWER_LIST && earlier_dict->is_dict)
    {
      bind_output (ctx, node, 0, graft_lower_value_copy (earlier_dict));
      return TRUE;
    }
  if (reads_dict)
    {
      LowerValue *dict = dict_new ();
      for (guint i = 0; i < module_dict.n_entries; i++)
        {
          g_autofree char *key = graft_module_dict_dup_key (&module_dict, i);
          g_autoptr(GraftAttribute) key_attribute = graft_attribute_new_string ("value", key);
          g_ptr_array_add (dict->items, graft_lower_value_const (key_attribute));
          if (module_dict.values_are_inputs)
            {
              LowerValue *tensor = graft_lower_lookup (ctx, g_ptr_array_index (node->inputs, i));
              g_ptr_array_add (dict->items, tensor ? graft_lower_value_copy (tensor) : g_new0 (LowerValue, 1));
            }
          else
            {
              g_autofree char *text = graft_module_dict_dup_string_value (&module_dict, i);
              g_autoptr(GraftAttribute) value_attribute = graft_attribute_new_string ("value", text);
              g_ptr_array_add (dict->items, graft_lower_value_const (value_attribute));
            }
        }
      bind_output (ctx, node, 0, dict);
      return TRUE;
    }
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


/* str(x): a device or string constant stays itself (LeViT's cache key
 * str(device)), an int is written out; anything else is for messages
 * only, which nothing in ONNX reads. */
static gboolean
lower_str (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *x = graft_lower_arg (ctx, node, 0);
  if (x != NULL && x->kind == LOWER_CONST && x->constant->type == GRAFT_ATTR_STRING)
    {
      bind_output (ctx, node, 0, graft_lower_value_copy (x));
      return TRUE;
    }
  if (x != NULL && x->kind == LOWER_CONST && x->constant->type == GRAFT_ATTR_INT)
    {
      g_autofree char *text = g_strdup_printf ("%" G_GINT64_FORMAT, x->constant->i);
      g_autoptr(GraftAttribute) a = graft_attribute_new_string ("value", text);
      bind_output (ctx, node, 0, graft_lower_value_const (a));
      return TRUE;
    }
  return lower_nothing (ctx, node, error);
}

/* dict[key] := value (owned), at the key's position from
 * graft_lower_dict_find (-1: a new key, added last) */
static void
dict_put (LowerValue *dict, gint at, LowerValue *key, LowerValue *value)
{
  if (at >= 0)
    {
      graft_lower_value_free (dict->items->pdata[at + 1]);
      dict->items->pdata[at + 1] = value;
      return;
    }
  g_ptr_array_add (dict->items, graft_lower_value_copy (key));
  g_ptr_array_add (dict->items, value);
}

/* torch.dict() and {k: v, ...}: a dict whose keys are constants while
 * converting (its values may be tensors) */
static gboolean
lower_dict (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *source = node->inputs->len == 1 ? graft_lower_arg (ctx, node, 0) : NULL;
  if (node->inputs->len == 1)
    {
      if (source == NULL || source->kind != LOWER_LIST || !source->is_dict)
        return graft_lower_fail (error, node, "the dict to copy is not known while converting");
      bind_output (ctx, node, 0, graft_lower_value_copy (source));
      return TRUE;
    }
  if (node->inputs->len % 2 != 0)
    return graft_lower_fail (error, node, "a dict needs keys and values in pairs");
  LowerValue *dict = dict_new ();
  for (guint i = 0; i < node->inputs->len; i += 2)
    {
      LowerValue *key = graft_lower_arg (ctx, node, i), *value = graft_lower_arg (ctx, node, i + 1);
      gint at;
      if (!graft_lower_dict_find (dict, key, &at))
        {
          graft_lower_value_free (dict);
          return graft_lower_fail (error, node, "a dict key is not a constant while converting");
        }
      dict_put (dict, at, key, value ? graft_lower_value_copy (value) : g_new0 (LowerValue, 1));
    }
  bind_output (ctx, node, 0, dict);
  return TRUE;
}

/* A constant int or float list (a module attribute, or its copy) about to
 * be changed item by item becomes a list of constants, in place. */
static void
expand_constant_list (LowerValue *list)
{
  GraftAttribute *constant = list->constant;
  if (list->kind != LOWER_CONST || (constant->type != GRAFT_ATTR_INTS && constant->type != GRAFT_ATTR_FLOATS))
    return;
  GPtrArray *items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
  GArray *values = constant->type == GRAFT_ATTR_INTS ? constant->ints : constant->floats;
  for (guint i = 0; i < values->len; i++)
    {
      g_autoptr(GraftAttribute) item = constant->type == GRAFT_ATTR_INTS
                                        ? graft_attribute_new_int ("value", g_array_index (values, gint64, i))
                                        : graft_attribute_new_float ("value", g_array_index (values, double, i));
      g_ptr_array_add (items, graft_lower_value_const (item));
    }
  g_clear_pointer (&list->constant, graft_attribute_free);
  list->kind = LOWER_LIST;
  list->items = items;
}

/* dict[key] = value and list[i] = value with a constant key or index: in
 * place, so every holder of the dict or list sees it */
static gboolean
lower_set_item (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *container = graft_lower_arg (ctx, node, 0), *key = graft_lower_arg (ctx, node, 1);
  LowerValue *value = graft_lower_arg (ctx, node, 2);
  if (container != NULL)
    expand_constant_list (container);
  if (container == NULL || container->kind != LOWER_LIST || key == NULL || key->kind != LOWER_CONST)
    return graft_lower_fail (error, node, "sets an item of a dict or list whose keys are not known while converting");
  LowerValue *copy = value ? graft_lower_value_copy (value) : g_new0 (LowerValue, 1);
  if (container->is_dict)
    {
      gint at;
      if (!graft_lower_dict_find (container, key, &at))
        {
          graft_lower_value_free (copy);
          return graft_lower_fail (error, node, "a dict key is not a constant while converting");
        }
      dict_put (container, at, key, copy);
    }
  else
    {
      gint64 i = key->constant->i;
      if (key->constant->type != GRAFT_ATTR_INT || i < -(gint64) container->items->len ||
          i >= (gint64) container->items->len)
        {
          graft_lower_value_free (copy);
          return graft_lower_fail (error, node, "list index out of range");
        }
      if (i < 0)
        i += container->items->len;
      graft_lower_value_free (container->items->pdata[i]);
      container->items->pdata[i] = copy;
    }
  for (guint k = 0; k < node->outputs->len; k++)
    bind_output (ctx, node, k, g_new0 (LowerValue, 1));
  return TRUE;
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
  else if (container->kind == LOWER_LIST && container->is_dict)
    {
      gint at;
      if (!graft_lower_dict_find (container, key, &at))
        return graft_lower_fail (error, node, "membership is only known for constants while converting");
      found = at >= 0;
    }
  else if (container->kind == LOWER_LIST)
    for (guint i = 0; i < container->items->len && !found; i++)
      {
        LowerValue *item = container->items->pdata[i];
        if (item->kind != LOWER_CONST)
          return graft_lower_fail (error, node, "membership is only known for constants while converting");
        found = graft_lower_same_constant (item->constant, key->constant);
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
  if (list != NULL && list->kind == LOWER_CONST)
    {
      /* a tuple of ints read from a module attribute (timm's Scale.shape) */
      list = graft_lower_value_copy (list);
      g_ptr_array_add (ctx->scratch, list);
      expand_constant_list (list);
    }
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
  if (list != NULL && list->kind == LOWER_CONST && list->constant->type == GRAFT_ATTR_INTS)
    {
      /* a tuple of ints read from a module attribute (timm's img_size) */
      guint n = list->constant->ints->len;
      if (i < 0)
        i += n;
      if (i < 0 || i >= (gint64) n)
        return graft_lower_fail (error, node, "index out of range");
      g_autoptr(GraftAttribute) item = graft_attribute_new_int ("value", g_array_index (list->constant->ints, gint64, i));
      bind_output (ctx, node, 0, graft_lower_value_const (item));
      return TRUE;
    }
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
  gint64 code = graft_dtype_to_torch_scalar_type (graft_lower_dtype (ctx, x));
  if (code >= 0)
    {
      g_autoptr(GraftAttribute) a = graft_attribute_new_int ("value", code);
      bind_output (ctx, node, 0, graft_lower_value_const (a));
      return TRUE;
    }
  return graft_lower_fail (error, node, "the dtype of '%s' is not known while converting", x->name);
}

/* device.type: the device is already its type; list(l) a copy of l */
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

/* Lowers graph's nodes into the current graph, with scratch values of
 * their own (the caller's node keeps its arguments). */
static gboolean
lower_nodes_here (GraftLowerContext *ctx, GraftGraph *graph, GError **error)
{
  GPtrArray *saved = ctx->scratch;
  ctx->scratch = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
  gboolean ok = _graft_lower_nodes (ctx, graph, error);
  g_ptr_array_unref (ctx->scratch);
  ctx->scratch = saved;
  return ok;
}

/* Lowers the branch's nodes into the current graph. */
static gboolean
inline_branch (GraftLowerContext *ctx, GraftNode *node, GraftGraph *branch, GError **error)
{
  gboolean ok = lower_nodes_here (ctx, branch, error);
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

/* ---- lists grown at run time: ONNX sequences ---- */

/* Whether value is made in graph or in a block nested in it. */
static gboolean
defined_inside (GraftValue *value, GraftGraph *graph)
{
  for (GraftGraph *g = value->graph; g != NULL; g = g->parent_node ? g->parent_node->graph : NULL)
    if (g == graph)
      return TRUE;
  return FALSE;
}

/* The lists made outside body that graph (body or a block in it) appends
 * to, each once. Setting an item of such a list is not lowered. */
static gboolean
collect_grown_lists (GraftGraph *body, GraftGraph *graph, GPtrArray *lists, GError **error)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *n = g_ptr_array_index (graph->nodes, i);
      gboolean append = strcmp (n->op, "aten::append") == 0;
      if ((append || strcmp (n->op, "aten::_set_item") == 0) && n->inputs->len > 0)
        {
          GraftValue *list = g_ptr_array_index (n->inputs, 0);
          if (list != NULL && !defined_inside (list, body))
            {
              if (!append)
                return graft_lower_fail (error, n, "sets an item of a list made outside a block that runs a number "
                                         "of times known only at run time");
              if (!g_ptr_array_find (lists, list, NULL))
                g_ptr_array_add (lists, list);
            }
        }
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (n);
      for (guint j = 0; j < bodies->len; j++)
        if (!collect_grown_lists (body, bodies->pdata[j], lists, error))
          return FALSE;
    }
  return TRUE;
}

/* Binds the list `source` to an ONNX sequence in the current graph and
 * returns it: a list of known items becomes SequenceConstruct, an empty one
 * SequenceEmpty (*empty, whose dtype is set once something appended to it
 * is typed), a sequence stays. */
static GraftValue *
bind_as_sequence (GraftLowerContext *ctx, GraftNode *node, GraftValue *source, GraftNode **empty, GError **error)
{
  LowerValue *v = graft_lower_lookup (ctx, source);
  GraftValue *seq;
  *empty = NULL;
  if (v != NULL && v->kind == LOWER_SEQUENCE)
    return v->value;
  if (v == NULL || v->kind != LOWER_LIST)
    {
      graft_lower_fail (error, node, "appends to '%s', which is not a list known while converting", source->name);
      return NULL;
    }
  if (v->items->len == 0)
    {
      *empty = graft_lower_node (ctx, "SequenceEmpty", 1, 0);
      seq = graft_lower_finish (ctx, *empty);
      graft_lower_declare_sequence (ctx, seq, GRAFT_DTYPE_UNDEFINED, -1);
    }
  else
    {
      g_autoptr(GPtrArray) items = g_ptr_array_new ();
      for (guint i = 0; i < v->items->len; i++)
        {
          LowerValue *item = v->items->pdata[i];
          GraftValue *t = item->kind == LOWER_TENSOR ? item->value
                          : item->kind == LOWER_CONST ? graft_lower_const_attribute (ctx, item->constant, error) : NULL;
          if (t == NULL)
            {
              if (item->kind != LOWER_CONST)
                graft_lower_fail (error, node, "item %u of '%s' is not a tensor or number", i, source->name);
              return NULL;
            }
          /* a sequence holds one dtype: numbers take the first item's */
          g_ptr_array_add (items, i > 0 ? graft_lower_cast (ctx, t, graft_lower_dtype (ctx, items->pdata[0])) : t);
        }
      GraftNode *construct = graft_lower_node (ctx, "SequenceConstruct", 1, 0);
      for (guint i = 0; i < items->len; i++)
        graft_node_add_input (construct, items->pdata[i]);
      seq = graft_lower_finish (ctx, construct);
      graft_lower_declare_sequence (ctx, seq, graft_lower_dtype (ctx, items->pdata[0]),
                                    graft_lower_rank (ctx, items->pdata[0]));
    }
  graft_lower_bind (ctx, source, graft_lower_value_sequence (seq));
  return seq;
}

/* The sequences of grown lists before a Loop or If, which a body reads or carries. */
static gboolean
sequences_before (GraftLowerContext *ctx, GraftNode *node, GPtrArray *lists, GPtrArray *initial, GPtrArray *empties,
                  GError **error)
{
  for (guint j = 0; j < lists->len; j++)
    {
      GraftNode *empty;
      GraftValue *seq = bind_as_sequence (ctx, node, lists->pdata[j], &empty, error);
      if (seq == NULL)
        return FALSE;
      g_ptr_array_add (initial, seq);
      g_ptr_array_add (empties, empty);
    }
  return TRUE;
}

/* After the bodies: node's outputs from first on are the grown lists'
 * sequences, of the dtype the bodies' outputs (from body_first on) give;
 * an empty initial list gets that dtype too. */
static void
sequences_after (GraftLowerContext *ctx, GraftNode *node, guint first, GPtrArray *lists, GPtrArray *initial,
                 GPtrArray *empties, GraftGraph **bodies, guint n_bodies, guint body_first)
{
  for (guint j = 0; j < lists->len; j++)
    {
      GraftDType dtype = graft_lower_dtype (ctx, initial->pdata[j]);
      int rank = graft_lower_rank (ctx, initial->pdata[j]);
      for (guint b = 0; b < n_bodies && dtype == GRAFT_DTYPE_UNDEFINED; b++)
        {
          GraftValue *out = g_ptr_array_index (bodies[b]->outputs, body_first + j);
          dtype = graft_lower_dtype (ctx, out);
          rank = graft_lower_rank (ctx, out);
        }
      if (dtype == GRAFT_DTYPE_UNDEFINED)
        dtype = GRAFT_DTYPE_FLOAT32;
      GraftNode *empty = empties->pdata[j];
      if (empty != NULL)
        {
          graft_node_add_attribute (empty, graft_attribute_new_int ("dtype", dtype));
          graft_lower_declare_sequence (ctx, initial->pdata[j], dtype, rank);
        }
      /* a branch that does not append passes the initial sequence on */
      for (guint b = 0; b < n_bodies; b++)
        {
          GraftValue *out = g_ptr_array_index (bodies[b]->outputs, body_first + j);
          if (graft_lower_dtype (ctx, out) == GRAFT_DTYPE_UNDEFINED)
            graft_lower_declare_sequence (ctx, out, dtype, rank);
        }
      GraftValue *result = g_ptr_array_index (node->outputs, first + j);
      graft_lower_declare_sequence (ctx, result, dtype, rank);
      graft_lower_bind (ctx, lists->pdata[j], graft_lower_value_sequence (result));
    }
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
  g_autoptr(GPtrArray) grown = g_ptr_array_new ();
  if (!collect_grown_lists (then_g, then_g, grown, error) || !collect_grown_lists (else_g, else_g, grown, error))
    return FALSE;
  if (node->outputs->len == 0 && grown->len == 0)
    return TRUE; /* only checks that raise, or training-mode updates: nothing to compute */
  GraftValue *c = as_bool (ctx, cond, error);
  if (c == NULL)
    return FALSE;
  /* A list a branch appends to becomes a sequence, which the If returns. */
  g_autoptr(GPtrArray) initial = g_ptr_array_new ();
  g_autoptr(GPtrArray) empties = g_ptr_array_new ();
  if (!sequences_before (ctx, node, grown, initial, empties, error))
    return FALSE;
  g_autofree char *name = _graft_lower_unique_node_name (ctx, "If");
  g_autofree char *then_name = g_strdup_printf ("%s_then", name);
  g_autofree char *else_name = g_strdup_printf ("%s_else", name);
  GraftGraph *then_body = graft_lower_subgraph (ctx, then_g, then_name, FALSE, NULL, grown, error);
  if (then_body == NULL)
    return FALSE;
  for (guint j = 0; j < grown->len; j++)
    graft_lower_bind (ctx, grown->pdata[j], graft_lower_value_sequence (initial->pdata[j]));
  GraftGraph *else_body = graft_lower_subgraph (ctx, else_g, else_name, FALSE, NULL, grown, error);
  if (else_body == NULL)
    {
      graft_graph_free (then_body);
      return FALSE;
    }
  GraftNode *n = graft_lower_node (ctx, "If", node->outputs->len + grown->len, 1, c);
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
  GraftGraph *branches[] = { then_body, else_body };
  sequences_after (ctx, n, node->outputs->len, grown, initial, empties, branches, 2, node->outputs->len);
  return TRUE;
}

/* append(list, item): lists are shared by reference, so the list every
 * holder sees grows (a copy made before, at a branch's end, does not). */
static gboolean
lower_append (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *list = graft_lower_arg (ctx, node, 0), *item = graft_lower_arg (ctx, node, 1);
  if (list != NULL && list->kind == LOWER_SEQUENCE)
    {
      GraftValue *t = graft_lower_arg_tensor (ctx, node, 1, error);
      if (t == NULL)
        return FALSE;
      GraftDType dtype = graft_lower_dtype (ctx, list->value);
      if (dtype != GRAFT_DTYPE_UNDEFINED && item->kind != LOWER_TENSOR)
        t = graft_lower_cast (ctx, t, dtype);  /* a number into a list of tensors of another dtype */
      GraftValue *grown = graft_lower_op (ctx, "SequenceInsert", 2, list->value, t);
      graft_lower_declare_sequence (ctx, grown, graft_lower_dtype (ctx, t), graft_lower_rank (ctx, t));
      list->value = grown;  /* every holder of the list sees it grow */
      bind_output (ctx, node, 0, graft_lower_value_copy (list));
      return TRUE;
    }
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

/* Whether a carried value has no ONNX tensor form (a list, None, a string). */
static gboolean
carries_non_tensors (GraftLowerContext *ctx, GraftNode *node)
{
  for (guint k = 0; k < node->outputs->len; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, 2 + k);
      if (v == NULL || v->kind == LOWER_LIST || v->kind == LOWER_NONE || v->kind == LOWER_SEQUENCE ||
          (v->kind == LOWER_CONST && v->constant->type != GRAFT_ATTR_INT && v->constant->type != GRAFT_ATTR_FLOAT &&
           v->constant->type != GRAFT_ATTR_BOOL))
        return TRUE;
    }
  return FALSE;
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
  gboolean non_tensors = carries_non_tensors (ctx, node);
  if ((non_tensors || mutates_lists (body)) && trips->kind == LOWER_CONST && trips->constant->type == GRAFT_ATTR_INT &&
      trips->constant->i <= MAX_UNROLLED_TRIPS)
    return unroll_loop (ctx, node, body, trips->constant->i, cond, error);
  if (non_tensors)
    return graft_lower_fail (error, node, "carries lists, None or strings through a loop whose trip count is "
                             "known only at run time");
  /* Lists made before the loop that it appends to are carried as sequences. */
  g_autoptr(GPtrArray) grown = g_ptr_array_new ();
  g_autoptr(GPtrArray) initial = g_ptr_array_new ();
  g_autoptr(GPtrArray) empties = g_ptr_array_new ();
  if (!collect_grown_lists (body, body, grown, error) || !sequences_before (ctx, node, grown, initial, empties, error))
    return FALSE;
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
      scalar[k] = v->kind == LOWER_CONST || v->scalar;
      if ((carried[k] = graft_lower_arg_tensor (ctx, node, 2 + k, error)) == NULL)
        return FALSE;
    }
  g_autofree char *name = _graft_lower_unique_node_name (ctx, "Loop");
  g_autofree char *body_name = g_strdup_printf ("%s_body", name);
  GraftGraph *onnx_body = graft_lower_subgraph (ctx, body, body_name, TRUE, carried, grown, error);
  if (onnx_body == NULL)
    return FALSE;
  GraftNode *n = graft_lower_node (ctx, "Loop", n_carried + grown->len, 2, m, c);
  for (guint k = 0; k < n_carried; k++)
    graft_node_add_input (n, carried[k]);
  for (guint j = 0; j < grown->len; j++)
    graft_node_add_input (n, initial->pdata[j]);
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
  sequences_after (ctx, n, n_carried, grown, initial, empties, &onnx_body, 1, 1 + n_carried);
  return TRUE;
}

/* torch.cond(pred, true_graph, false_graph, operands) as read from a
 * .pt2 (operands one list, the graphs arg1_body and arg2_body): an ONNX
 * If whose branches read the operands from the enclosing graph. */
static gboolean
lower_torch_cond (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftGraph *graphs[2] = { graft_node_attr_graph (node, "arg1_body"), graft_node_attr_graph (node, "arg2_body") };
  /* the graphs' places (arg1, arg2) hold their names: the two inputs are
   * the predicate and the operands' list */
  LowerValue *pred = node->inputs->len == 2 ? graft_lower_lookup (ctx, node->inputs->pdata[0]) : NULL;
  LowerValue *operands = node->inputs->len == 2 ? graft_lower_lookup (ctx, node->inputs->pdata[1]) : NULL;
  if (graphs[0] == NULL || graphs[1] == NULL || pred == NULL || operands == NULL || operands->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "has no predicate, operands or graphs");
  gboolean truth;
  for (guint b = 0; b < 2; b++)
    {
      if (graphs[b]->inputs->len != operands->items->len)
        return graft_lower_fail (error, node, "its %s graph takes %u operands, the node passes %u",
                                 b ? "false" : "true", graphs[b]->inputs->len, operands->items->len);
      for (guint k = 0; k < graphs[b]->inputs->len; k++)
        graft_lower_bind (ctx, g_ptr_array_index (graphs[b]->inputs, k),
                          graft_lower_value_copy (g_ptr_array_index (operands->items, k)));
    }
  if (const_truth (pred, &truth))
    return inline_branch (ctx, node, truth ? graphs[0] : graphs[1], error);
  GraftValue *c = as_bool (ctx, pred, error);
  if (c == NULL)
    return FALSE;
  g_autofree char *name = _graft_lower_unique_node_name (ctx, "If");
  const char *suffixes[] = { "then", "else" };
  GraftGraph *bodies[2] = { NULL, NULL };
  for (guint b = 0; b < 2; b++)
    {
      g_autofree char *body_name = g_strdup_printf ("%s_%s", name, suffixes[b]);
      bodies[b] = graft_lower_subgraph (ctx, graphs[b], body_name, FALSE, NULL, NULL, error);
      if (bodies[b] == NULL)
        {
          g_clear_pointer (&bodies[0], graft_graph_free);
          return FALSE;
        }
    }
  GraftNode *n = graft_lower_node (ctx, "If", node->outputs->len, 1, c);
  graft_node_add_attribute (n, graft_attribute_new_graph ("then_branch", bodies[0]));
  graft_node_add_attribute (n, graft_attribute_new_graph ("else_branch", bodies[1]));
  graft_node_adopt_subgraph (n, bodies[0]);
  graft_node_adopt_subgraph (n, bodies[1]);
  graft_lower_finish (ctx, n);
  for (guint k = 0; k < node->outputs->len; k++)
    {
      GraftValue *out = g_ptr_array_index (n->outputs, k);
      GraftValue *t = g_ptr_array_index (bodies[0]->outputs, k);
      _graft_lower_declare_type (ctx, out, graft_lower_dtype (ctx, t), graft_lower_shape (ctx, t));
      graft_lower_set_output (ctx, node, k, out);
    }
  return TRUE;
}

/* A list item as an ONNX tensor value (a constant becomes one). */
static GraftValue *
item_tensor (GraftLowerContext *ctx, GraftNode *node, LowerValue *item, GError **error)
{
  if (item != NULL && item->kind == LOWER_TENSOR)
    return item->value;
  if (item != NULL && item->kind == LOWER_CONST)
    return graft_lower_const_attribute (ctx, item->constant, error);
  graft_lower_fail (error, node, "carries a list, None or a string: an ONNX Loop carries tensors");
  return NULL;
}

/* torch's while_loop(cond_graph, body_graph, carried, additional) as read
 * from a .pt2 (carried and additional two lists, the graphs arg0_body and
 * arg1_body): the condition on the initial values before an ONNX Loop
 * whose body runs body_graph, then cond_graph on its results. */
static gboolean
lower_torch_while_loop (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftGraph *cond_graph = graft_node_attr_graph (node, "arg0_body");
  GraftGraph *body_graph = graft_node_attr_graph (node, "arg1_body");
  LowerValue *carried_list = node->inputs->len == 2 ? graft_lower_lookup (ctx, node->inputs->pdata[0]) : NULL;
  LowerValue *additional = node->inputs->len == 2 ? graft_lower_lookup (ctx, node->inputs->pdata[1]) : NULL;
  if (cond_graph == NULL || body_graph == NULL || carried_list == NULL || additional == NULL ||
      carried_list->kind != LOWER_LIST || additional->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "has no graphs, carried values or additional inputs");
  guint n_carried = carried_list->items->len, n_additional = additional->items->len;
  if (cond_graph->inputs->len != n_carried + n_additional || body_graph->inputs->len != n_carried + n_additional ||
      body_graph->outputs->len != n_carried || cond_graph->outputs->len != 1 || node->outputs->len > n_carried)
    return graft_lower_fail (error, node, "its graphs take %u and %u inputs for %u carried and %u additional",
                             cond_graph->inputs->len, body_graph->inputs->len, n_carried, n_additional);
  g_autofree GraftValue **carried = g_new0 (GraftValue *, MAX (n_carried, 1));
  for (guint k = 0; k < n_carried; k++)
    if ((carried[k] = item_tensor (ctx, node, carried_list->items->pdata[k], error)) == NULL)
      return FALSE;
  /* both graphs read the additional inputs from the enclosing graph */
  for (guint k = 0; k < n_additional; k++)
    for (guint g = 0; g < 2; g++)
      graft_lower_bind (ctx, g_ptr_array_index ((g ? body_graph : cond_graph)->inputs, n_carried + k),
                        graft_lower_value_copy (additional->items->pdata[k]));
  /* the first test, on the initial values, before the loop */
  for (guint k = 0; k < n_carried; k++)
    graft_lower_bind (ctx, g_ptr_array_index (cond_graph->inputs, k), graft_lower_value_tensor (carried[k], FALSE));
  gboolean ok = lower_nodes_here (ctx, cond_graph, error);
  if (!ok)
    return FALSE;
  LowerValue *first = graft_lower_lookup (ctx, g_ptr_array_index (cond_graph->outputs, 0));
  if (first == NULL)
    return graft_lower_fail (error, node, "its condition graph returns nothing");
  gboolean truth;
  if (const_truth (first, &truth) && !truth)
    {
      for (guint k = 0; k < node->outputs->len; k++)
        bind_output (ctx, node, k, graft_lower_value_tensor (carried[k], FALSE));
      return TRUE;
    }
  GraftValue *c = as_bool (ctx, first, error);
  if (c == NULL)
    return FALSE;
  g_autofree char *name = _graft_lower_unique_node_name (ctx, "Loop");
  g_autofree char *body_name = g_strdup_printf ("%s_body", name);
  GraftGraph *onnx_body = graft_lower_while_body (ctx, node, cond_graph, body_graph, body_name, carried, n_carried,
                                                  error);
  if (onnx_body == NULL)
    return FALSE;
  GraftNode *n = graft_lower_node (ctx, "Loop", n_carried, 2, NULL, c);
  for (guint k = 0; k < n_carried; k++)
    graft_node_add_input (n, carried[k]);
  graft_node_add_attribute (n, graft_attribute_new_graph ("body", onnx_body));
  graft_node_adopt_subgraph (n, onnx_body);
  graft_lower_finish (ctx, n);
  for (guint k = 0; k < node->outputs->len; k++)
    {
      GraftValue *out = g_ptr_array_index (n->outputs, k);
      /* Carried values keep their rank; their dims may change per iteration. */
      GraftShape any_dims;
      graft_shape_init (&any_dims, graft_lower_rank (ctx, carried[k]));
      _graft_lower_declare_type (ctx, out, graft_lower_dtype (ctx, carried[k]), &any_dims);
      graft_shape_clear (&any_dims);
      graft_lower_set_output (ctx, node, k, out);
    }
  return TRUE;
}

/* torch.export's wrap_with_autocast / wrap_with_set_grad_enabled: the
 * body written in place, on the node's operands. An autocast that is on
 * for the CPU computes in a narrower type; ONNX would say f32, so it is
 * refused (the runtime refuses it too). */
static gboolean
lower_context_wrapper (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);
  GraftGraph *body = subgraphs->len > 0 ? g_ptr_array_index (subgraphs, 0) : NULL;
  if (body == NULL || body->inputs->len != node->inputs->len)
    return graft_lower_fail (error, node, "the body graph is missing or takes other operands");
  if (strcmp (node->op_type, "wrap_with_autocast") == 0 && graft_node_attr_int (node, "arg2", 1) &&
      strcmp (graft_node_attr_string (node, "arg0", "cpu"), "cpu") == 0)
    return graft_lower_fail (error, node, "autocast enabled on the CPU: its body computes in a narrower type");
  for (guint k = 0; k < body->inputs->len; k++)
    {
      LowerValue *v = graft_lower_lookup (ctx, g_ptr_array_index (node->inputs, k));
      graft_lower_bind (ctx, g_ptr_array_index (body->inputs, k), v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1));
    }
  gboolean ok = lower_nodes_here (ctx, body, error);
  for (guint k = 0; ok && k < body->outputs->len; k++)
    {
      LowerValue *v = graft_lower_lookup (ctx, g_ptr_array_index (body->outputs, k));
      bind_output (ctx, node, k, v ? graft_lower_value_copy (v) : g_new0 (LowerValue, 1));
    }
  return ok;
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
  { "higher_order::wrap_with_autocast", 0, lower_context_wrapper, NULL },
  { "higher_order::wrap_with_set_grad_enabled", 0, lower_context_wrapper, NULL },
  { "higher_order::cond", 0, lower_torch_cond, NULL },
  { "higher_order::while_loop", 0, lower_torch_while_loop, NULL },
  { "prim::RaiseException", 0, lower_raise, "msg cls" },
  { "prim::Uninitialized", 0, lower_nothing, NULL },
  { "prim::device", 0, lower_device, "a" },
  { "prim::dtype", 0, lower_dtype, "a" },
  { "prim::type", 0, lower_pass_through, "a" },
  { "aten::list", 0, lower_pass_through, "l" },
  { "aten::__contains__", 0, lower_contains, "dict key" },
  { "aten::dict", 0, lower_dict, NULL },
  { "prim::DictConstruct", 0, lower_dict, NULL },
  { "aten::_set_item", 0, lower_set_item, "l idx v" },
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
  { "aten::str", 0, lower_str, "elem" },
  { "aten::warn", 0, lower_nothing, NULL },
  /* torch.export's checks of what it traced: true of every input the program accepts */
  { "aten::_assert_tensor_metadata", 0, lower_nothing, NULL },
  { "aten::_assert_scalar", 0, lower_nothing, NULL },
  { "aten::_assert_async", 0, lower_nothing, NULL },
  { "aten::sym_constrain_range_for_size", 0, lower_nothing, NULL },
  { NULL }
};
