#include "layout/attribute-fold.h"

#include <string.h>

static gboolean
is_prim (const GraftNode *node, const char *op_type)
{
  return node->domain != NULL && strcmp (node->domain, "prim") == 0 && strcmp (node->op_type, op_type) == 0;
}

gboolean
graft_node_outputs_read_in_own_graph (const GraftNode *node)
{
  guint read = 0;

  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->outputs, i);

      if (value == NULL)
        continue;
      /* An output with no reader would vanish from the picture; one read
       * inside an If/Loop body is drawn as an edge into that node. */
      if (value->is_graph_output || value->consumers->len == 0)
        return FALSE;
      for (guint j = 0; j < value->consumers->len; j++)
        if (((GraftNode *) g_ptr_array_index (value->consumers, j))->graph != node->graph)
          return FALSE;
      read++;
    }
  return read > 0;
}

gboolean
graft_attribute_fold_applies (const GraftNode *node)
{
  if (node == NULL || !(is_prim (node, "GetAttr") || is_prim (node, "Constant")))
    return FALSE;
  for (guint i = 0; i < node->inputs->len; i++)
    if (g_ptr_array_index (node->inputs, i) != NULL)
      return FALSE;
  return graft_node_outputs_read_in_own_graph (node);
}

gboolean
graft_attribute_fold_is_folded_input (const GraftNode *node, guint input)
{
  GraftValue *value = input < node->inputs->len ? g_ptr_array_index (node->inputs, input) : NULL;

  return value != NULL && value->initializer == NULL && graft_attribute_fold_applies (value->producer);
}

/* The module path of a GetAttr ("layer1.0.bn1.training"), or NULL. */
static char *
attribute_path (const GraftNode *producer)
{
  GraftAttribute *path = graft_node_get_attribute ((GraftNode *) producer, "name");
  gsize length;
  const char *data;

  if (path == NULL || path->type != GRAFT_ATTR_STRING || path->s == NULL)
    return NULL;
  data = g_bytes_get_data (path->s, &length);
  return g_strndup (data, length);
}

/* What the folded node gives: its value when known, else the attribute's
 * module path. */
static char *
describe_folded (const GraftNode *producer)
{
  GraftAttribute *value = graft_node_get_attribute ((GraftNode *) producer, "value");
  g_autofree char *path = attribute_path (producer);

  if (value != NULL)
    return graft_attribute_format_value (value, 4);
  if (path != NULL)
    return g_strdup_printf ("self.%s", path);
  return g_strdup (producer->op);
}

/* The reader's argument name for the input, else the attribute's own
 * name ("training" of "layer1.0.bn1.training"). */
static char *
argument_name (const GraftNode *node, guint input, const GraftNode *producer)
{
  const char *argument = graft_node_get_input_argument_name (node, input);
  g_autofree char *path = NULL;

  if (argument != NULL)
    return g_strdup (argument);
  path = attribute_path (producer);
  if (path != NULL)
    {
      const char *dot = strrchr (path, '.');

      return g_strdup (dot != NULL ? dot + 1 : path);
    }
  return g_strdup_printf ("in%u", input);
}

void
graft_attribute_fold_add_lines (const GraftNode *node, GPtrArray *lines)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      g_autofree char *name = NULL;
      g_autofree char *text = NULL;

      if (!graft_attribute_fold_is_folded_input (node, i))
        continue;
      name = argument_name (node, i, value->producer);
      text = describe_folded (value->producer);
      g_ptr_array_add (lines, g_strdup_printf ("%s = %s", name, text));
    }
}
