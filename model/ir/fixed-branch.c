#include "ir/fixed-branch.h"

#include <string.h>

/* Argument k of a TorchScript node: a constant folded into attribute
 * "argK", else (NULL, *value) its next input, as aten-args.c reads it. */
static GraftAttribute *
node_arg (GraftNode *node, guint k, GraftValue **value)
{
  guint next_input = 0;
  GraftAttribute *a = NULL;
  *value = NULL;
  for (guint p = 0; p <= k; p++)
    {
      char key[24];
      g_snprintf (key, sizeof key, "arg%u", p);
      if ((a = graft_node_get_attribute (node, key)) == NULL && next_input < node->inputs->len)
        {
          if (p == k)
            *value = node->inputs->pdata[next_input];
          next_input++;
        }
    }
  return a;
}

/* Argument k when the module fixes it: a constant, or the value of a
 * prim::Constant or plain module attribute (stochastic depth's self.p,
 * self.mode); NULL otherwise. */
static GraftAttribute *
fixed_arg (GraftNode *node, guint k)
{
  GraftValue *value;
  GraftAttribute *a = node_arg (node, k, &value);
  GraftNode *producer = value ? value->producer : NULL;
  if (a != NULL)
    return a;
  if (producer != NULL && (producer->op == g_intern_static_string ("prim::Constant") ||
                           producer->op == g_intern_static_string ("prim::GetAttr")))
    return graft_node_get_attribute (producer, "value");
  return NULL;
}

static gboolean
attr_number (const GraftAttribute *a, double *x)
{
  if (a->type == GRAFT_ATTR_INT || a->type == GRAFT_ATTR_BOOL)
    *x = a->i;
  else if (a->type == GRAFT_ATTR_FLOAT)
    *x = a->f;
  else
    return FALSE;
  return TRUE;
}

/* A comparison of two fixed numbers or strings (`p < 0.0 or p > 1.0`,
 * `mode == "row"`), or `item in [constants]` (`mode not in ["batch",
 * "row"]`): TRUE or FALSE, -1 when an operand is not fixed. */
static int
fixed_comparison (GraftNode *node)
{
  static const char *const ops[] = { "aten::lt", "aten::gt", "aten::le", "aten::ge", "aten::eq", "aten::ne" };
  guint op = G_N_ELEMENTS (ops);
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (node->op == g_intern_static_string (ops[k]))
      op = k;
  if (op == G_N_ELEMENTS (ops) && node->op != g_intern_static_string ("aten::__contains__"))
    return -1;
  GraftAttribute *a = fixed_arg (node, 0), *b = fixed_arg (node, 1);
  double x, y;
  if (a == NULL || b == NULL)
    return -1;
  if (op == G_N_ELEMENTS (ops))
    {
      /* __contains__(list, item) */
      if (a->type == GRAFT_ATTR_STRINGS && b->type == GRAFT_ATTR_STRING && b->s != NULL)
        {
          for (guint k = 0; k < a->strings->len; k++)
            if (g_bytes_equal (a->strings->pdata[k], b->s))
              return TRUE;
          return FALSE;
        }
      if (a->type == GRAFT_ATTR_INTS && attr_number (b, &y))
        {
          for (guint k = 0; k < a->ints->len; k++)
            if (g_array_index (a->ints, gint64, k) == y)
              return TRUE;
          return FALSE;
        }
      return -1;
    }
  if (a->type == GRAFT_ATTR_STRING && b->type == GRAFT_ATTR_STRING && a->s != NULL && b->s != NULL && op >= 4)
    return g_bytes_equal (a->s, b->s) == (op == 4);
  if (!attr_number (a, &x) || !attr_number (b, &y))
    return -1;
  switch (op)
    {
    case 0: return x < y;
    case 1: return x > y;
    case 2: return x <= y;
    case 3: return x >= y;
    case 4: return x == y;
    default: return x != y;
    }
}

/* TRUE or FALSE for a condition the module fixes (a constant, a plain
 * module attribute such as self.training, a comparison of such numbers or
 * strings, or what an If on those yields); -1 if it depends on the input. */
static int
fixed_truth (GraftValue *value, guint depth)
{
  GraftNode *producer;

  if (value == NULL || (producer = value->producer) == NULL || depth > 16)
    return -1;
  if (producer->op == g_intern_static_string ("prim::Constant")
      || producer->op == g_intern_static_string ("prim::GetAttr"))
    {
      GraftAttribute *constant = graft_node_get_attribute (producer, "value");

      if (constant != NULL && (constant->type == GRAFT_ATTR_BOOL || constant->type == GRAFT_ATTR_INT))
        return constant->i != 0;
      return -1;
    }
  if (producer->outputs->len == 1 && fixed_comparison (producer) >= 0)
    return fixed_comparison (producer);
  if (producer->op == g_intern_static_string ("aten::__not__") && producer->inputs->len == 1)
    {
      int operand = fixed_truth (g_ptr_array_index (producer->inputs, 0), depth + 1);

      return operand < 0 ? -1 : !operand;
    }
  if (producer->op == g_intern_static_string ("prim::If") && producer->inputs->len > 0)
    {
      int condition = fixed_truth (g_ptr_array_index (producer->inputs, 0), depth + 1);
      GraftAttribute *branch;
      guint index;

      if (condition < 0 || !g_ptr_array_find (producer->outputs, value, &index))
        return -1;
      branch = graft_node_get_attribute (producer, condition ? "then_branch" : "else_branch");
      if (branch == NULL || branch->type != GRAFT_ATTR_GRAPH || branch->g == NULL
          || index >= branch->g->outputs->len)
        return -1;
      return fixed_truth (g_ptr_array_index (branch->g->outputs, index), depth + 1);
    }
  return -1;
}

GraftGraph *
graft_if_get_fixed_branch (GraftNode *node)
{
  int condition;
  GraftAttribute *branch;

  if (node->op != g_intern_static_string ("prim::If") || node->inputs->len == 0)
    return NULL;
  condition = fixed_truth (g_ptr_array_index (node->inputs, 0), 0);
  if (condition < 0)
    return NULL;
  branch = graft_node_get_attribute (node, condition ? "then_branch" : "else_branch");
  return branch != NULL && branch->type == GRAFT_ATTR_GRAPH ? branch->g : NULL;
}

GPtrArray *
graft_node_get_live_subgraphs (GraftNode *node)
{
  GPtrArray *subgraphs = graft_node_get_subgraphs (node);
  GraftGraph *taken = graft_if_get_fixed_branch (node);

  if (taken != NULL)
    for (guint i = subgraphs->len; i-- > 0;)
      if (g_ptr_array_index (subgraphs, i) != taken)
        g_ptr_array_remove_index (subgraphs, i);
  return subgraphs;
}

gboolean
graft_node_changes_state (GraftNode *node)
{
  static const char *const changes[] = {
    "aten::append", "aten::insert", "aten::extend", "aten::_set_item", "aten::__setitem__", "aten::pop",
    "aten::clear", "aten::remove", "prim::SetAttr", "prim::RaiseException",
  };
  for (guint i = 0; i < G_N_ELEMENTS (changes); i++)
    if (strcmp (node->op, changes[i]) == 0)
      return TRUE;
  /* add_, copy_: in place (an op's name ends in one underscore, as
   * __and__ does not) */
  const char *op = node->op_type;
  gsize len = strlen (op);
  if (len >= 2 && op[len - 1] == '_' && op[len - 2] != '_')
    return TRUE;
  g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (node);
  for (guint i = 0; i < bodies->len; i++)
    if (graft_graph_changes_state (g_ptr_array_index (bodies, i)))
      return TRUE;
  return FALSE;
}

gboolean
graft_graph_changes_state (GraftGraph *graph)
{
  for (guint k = 0; k < graph->nodes->len; k++)
    if (graft_node_changes_state (g_ptr_array_index (graph->nodes, k)))
      return TRUE;
  return FALSE;
}

gboolean
graft_node_reads_tensor_data (GraftNode *node)
{
  static const char *const reads[] = {
    "aten::Int", "aten::Float", "aten::Bool", "aten::item", "aten::ScalarImplicit", "aten::IntImplicit",
    "aten::FloatImplicit", "aten::is_nonzero", "aten::tolist",
  };
  for (guint i = 0; i < G_N_ELEMENTS (reads); i++)
    if (strcmp (node->op, reads[i]) == 0)
      return TRUE;
  return FALSE;
}
