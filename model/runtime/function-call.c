#include "runtime/function-call.h"

#include <string.h>
#include "runtime/runtime.h"

GraftFunction *
graft_function_for_call (GraftModel *model, GraftNode *call)
{
  if (graft_model_get_functions (model)->len == 0)
    return NULL;
  return graft_model_lookup_function (model, call->domain, call->op_type);
}

static GraftGraph *copy_graph (GraftGraph *src, GraftNode *call, GraftNode *parent_node, GError **error);

static GraftAttribute *
copy_attribute (const GraftAttribute *a, const char *name, GraftNode *call, GraftNode *owner, GError **error)
{
  GraftAttribute *c = graft_attribute_new (name, a->type);
  c->doc_string = g_strdup (a->doc_string);
  c->f = a->f;
  c->i = a->i;
  c->s = a->s ? g_bytes_ref (a->s) : NULL;
  c->t = a->t ? graft_tensor_ref (a->t) : NULL;
  /* graft_attribute_new made the arrays of list types */
  for (guint i = 0; a->floats && c->floats && i < a->floats->len; i++)
    g_array_append_val (c->floats, g_array_index (a->floats, double, i));
  for (guint i = 0; a->ints && c->ints && i < a->ints->len; i++)
    g_array_append_val (c->ints, g_array_index (a->ints, gint64, i));
  for (guint i = 0; a->strings && c->strings && i < a->strings->len; i++)
    g_ptr_array_add (c->strings, g_bytes_ref (a->strings->pdata[i]));
  for (guint i = 0; a->tensors && c->tensors && i < a->tensors->len; i++)
    g_ptr_array_add (c->tensors, graft_tensor_ref (a->tensors->pdata[i]));
  if (a->g && (c->g = copy_graph (a->g, call, owner, error)) == NULL)
    goto fail;
  if (a->graphs && c->graphs)
    {
      for (guint i = 0; i < a->graphs->len; i++)
        {
          GraftGraph *g = copy_graph (a->graphs->pdata[i], call, owner, error);
          if (g == NULL)
            goto fail;
          g_ptr_array_add (c->graphs, g);
        }
    }
  return c;
fail:
  graft_attribute_free (c);
  return NULL;
}

static GraftValue *
copy_value (GraftGraph *dst, GraftValue *v)
{
  GraftValue *c = graft_graph_ensure_value (dst, v->name);
  c->kind = v->kind;
  c->dtype = v->dtype;
  if (v->shape.rank >= 0 && c->shape.rank < 0)
    graft_shape_copy (&c->shape, &v->shape);
  return c;
}

/* Values of enclosing graphs are found by name in the copied enclosing graphs. */
static GraftValue *
copy_use (GraftGraph *dst, GraftValue *v)
{
  GraftValue *c = graft_graph_lookup_value (dst, v->name);
  if (c == NULL && v->graph->parent_graph != NULL)
    c = graft_graph_resolve_value (dst, v->name);
  return c ? c : copy_value (dst, v);
}

static GraftGraph *
copy_graph (GraftGraph *src, GraftNode *call, GraftNode *parent_node, GError **error)
{
  g_autoptr(GraftGraph) g = graft_graph_new (src->name);
  if (parent_node)
    graft_node_adopt_subgraph (parent_node, g);
  for (guint i = 0; i < src->inputs->len; i++)
    graft_graph_add_input (g, copy_value (g, src->inputs->pdata[i]));
  for (guint i = 0; i < src->initializers->len; i++)
    {
      GraftValue *v = src->initializers->pdata[i];
      graft_graph_add_initializer (g, copy_value (g, v), graft_tensor_ref (v->initializer));
    }
  for (guint i = 0; i < src->nodes->len; i++)
    {
      GraftNode *node = src->nodes->pdata[i];
      GraftNode *n = graft_graph_add_node (g, node->domain, node->op_type, node->name);
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *v = node->inputs->pdata[j];
          graft_node_add_input (n, v ? copy_use (g, v) : NULL);
        }
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *v = node->outputs->pdata[j];
          graft_node_add_output (n, v ? copy_value (g, v) : NULL);
        }
      for (guint j = 0; j < node->attributes->len; j++)
        {
          GraftAttribute *a = node->attributes->pdata[j], *from = a;
          if (a->ref_attr_name)
            {
              from = graft_node_get_attribute (call, a->ref_attr_name);
              if (from == NULL)
                continue;
              if (from->ref_attr_name)
                {
                  g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                               "node '%s' calling %s: attribute '%s' is an unresolved reference to '%s'",
                               call->name, call->op, from->name, from->ref_attr_name);
                  return NULL;
                }
            }
          GraftAttribute *c = copy_attribute (from, a->name, call, n, error);
          if (c == NULL)
            return NULL;
          graft_node_add_attribute (n, c);
        }
    }
  for (guint i = 0; i < src->outputs->len; i++)
    {
      GraftValue *v = src->outputs->pdata[i];
      graft_graph_add_output (g, copy_use (g, v));
    }
  return g_steal_pointer (&g);
}

GraftGraph *
graft_function_instantiate (GraftFunction *function, GraftNode *call, GError **error)
{
  if (call->inputs->len > function->body->inputs->len || call->outputs->len > function->body->outputs->len)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "node '%s' calls function %s with %u inputs and %u outputs, it has %u and %u",
                   call->name, call->op, call->inputs->len, call->outputs->len,
                   function->body->inputs->len, function->body->outputs->len);
      return NULL;
    }
  return copy_graph (function->body, call, NULL, error);
}
