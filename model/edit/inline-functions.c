/* Inlining the calls of model-local functions before a make-dynamic.
 *
 * torch.onnx.export(..., export_modules_as_functions=...) writes each
 * layer as a FunctionProto whose body holds the traced sizes ([16, 8, 16]
 * for seq × batch·heads × head_dim) as Constant nodes. One body serves
 * every call, and a repair must read the calling graph's input (Shape(x)),
 * which a function body cannot see: so the calls whose bodies take shapes
 * are replaced by their bodies, where the search and the repairs reach
 * them as any other node. The FunctionProtos stay in the model (the edit's
 * undo restores the graph only, and an unused function is harmless). */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "runtime/function-call.h"

#include <string.h>

/* Ops whose inputs are sizes a trace can bake. */
static gboolean
takes_shape (GraftNode *node)
{
  static const char *const ops[] = {
    "onnx::Reshape", "onnx::Expand", "onnx::Tile", "onnx::ConstantOfShape", "onnx::Range", "onnx::Slice",
    "onnx::Split", "onnx::Resize", NULL,
  };

  for (guint i = 0; ops[i] != NULL; i++)
    if (node->op == g_intern_string (ops[i]))
      return TRUE;
  return FALSE;
}

/* TRUE if the function's body takes shapes and owns no subgraph (whose
 * nodes would read the body's values by pointer). */
static gboolean
worth_inlining (GraftFunction *function)
{
  gboolean shapes = FALSE;

  for (guint i = 0; i < function->body->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (function->body->nodes, i);
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

      if (subgraphs->len > 0)
        return FALSE;
      shapes = shapes || takes_shape (node);
    }
  return shapes;
}

/* The main-graph value standing for value of the instance. */
static GraftValue *
mapped_value (GraftGraph *graph, GHashTable *map, GraftNode *call, GraftValue *value)
{
  GraftValue *mapped;
  g_autofree char *hint = NULL;

  if (value == NULL)
    return NULL;
  if (g_hash_table_lookup_extended (map, value, NULL, (gpointer *) &mapped))
    return mapped;
  hint = g_strdup_printf ("%s/%s", call->name[0] ? call->name : call->op_type, value->name);
  mapped = graft_graph_new_anonymous_value (graph, hint);
  mapped->dtype = value->dtype;
  g_hash_table_insert (map, value, mapped);
  return mapped;
}

/* Replaces call by the nodes of instance (its function's body for this
 * call), placed where call was. */
static void
inline_call (GraftGraph *graph, GraftNode *call, GraftGraph *instance)
{
  g_autoptr(GHashTable) map = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) results = g_ptr_array_copy (call->outputs, NULL, NULL);
  g_autoptr(GHashTable) produced = g_hash_table_new (NULL, NULL);
  const char *prefix = call->name[0] ? call->name : call->op_type;

  for (guint i = 0; i < instance->inputs->len; i++)
    g_hash_table_insert (map, g_ptr_array_index (instance->inputs, i),
                         i < call->inputs->len ? g_ptr_array_index (call->inputs, i) : NULL);
  for (guint j = 0; j < instance->outputs->len && j < results->len; j++)
    {
      GraftValue *formal = g_ptr_array_index (instance->outputs, j);
      if (g_ptr_array_index (results, j) != NULL && !g_hash_table_contains (map, formal))
        g_hash_table_insert (map, formal, g_ptr_array_index (results, j));
    }

  for (guint i = 0; i < instance->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (instance->nodes, i);
      g_autofree char *name = g_strdup_printf ("%s/%s", prefix, node->name[0] ? node->name : node->op_type);
      GraftNode *copy = graft_graph_add_node (graph, node->domain, node->op_type, name);

      for (guint j = 0; j < node->inputs->len; j++)
        graft_node_add_input (copy, mapped_value (graph, map, call, g_ptr_array_index (node->inputs, j)));
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *out = mapped_value (graph, map, call, g_ptr_array_index (node->outputs, j));
          graft_node_add_output (copy, out);
          if (out != NULL)
            g_hash_table_add (produced, out);
        }
      /* The instance is thrown away: its attributes move. */
      for (guint j = 0; j < node->attributes->len; j++)
        graft_node_add_attribute (copy, g_ptr_array_index (node->attributes, j));
      g_ptr_array_set_free_func (node->attributes, NULL);
      g_ptr_array_set_size (node->attributes, 0);
      graft_graph_move_node_before (graph, copy, call);
    }

  /* A result the body passes through from an input (or leaves to a
   * value it did not produce) gets an Identity. */
  for (guint j = 0; j < instance->outputs->len && j < results->len; j++)
    {
      GraftValue *result = g_ptr_array_index (results, j);
      GraftValue *formal = g_ptr_array_index (instance->outputs, j);
      g_autofree char *name = NULL;
      GraftNode *identity;

      if (result == NULL || g_hash_table_contains (produced, result))
        continue;
      name = g_strdup_printf ("%s/graft_output_%u", prefix, j);
      identity = graft_graph_add_node (graph, "", "Identity", name);
      graft_node_add_input (identity, g_hash_table_lookup (map, formal) != result
                                      ? g_hash_table_lookup (map, formal) : NULL);
      graft_node_add_output (identity, result);
      graft_graph_move_node_before (graph, identity, call);
    }
  graft_graph_remove_node (graph, call);
}

guint
graft_edit_inline_shape_functions (GraftModel *model, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  guint total = 0;

  /* Bodies may call functions in turn: a few rounds. */
  for (guint round = 0; round < 8; round++)
    {
      g_autoptr(GHashTable) counts = g_hash_table_new (NULL, NULL);
      guint inlined = 0;

      for (guint i = 0; i < graph->nodes->len && inlined < 100000;)
        {
          GraftNode *call = g_ptr_array_index (graph->nodes, i);
          GraftFunction *function = graft_function_for_call (model, call);
          g_autoptr(GraftGraph) instance = NULL;

          if (function == NULL || !worth_inlining (function))
            {
              i++;
              continue;
            }
          if ((instance = graft_function_instantiate (function, call, error)) == NULL)
            return G_MAXUINT;
          inline_call (graph, call, instance);
          g_hash_table_insert (counts, function,
                               GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (counts, function)) + 1));
          inlined++;
        }
      if (inlined == 0)
        break;
      total += inlined;
      {
        GHashTableIter iter;
        gpointer key, value;

        g_hash_table_iter_init (&iter, counts);
        while (g_hash_table_iter_next (&iter, &key, &value))
          {
            GraftFunction *function = key;
            g_ptr_array_add (notes, g_strdup_printf ("function %s.%s: its body replaces its %u call%s (a body "
                                                     "shared by calls cannot follow one call's dims)",
                                                     function->domain, function->name, GPOINTER_TO_UINT (value),
                                                     GPOINTER_TO_UINT (value) == 1 ? "" : "s"));
          }
      }
    }
  return total;
}
