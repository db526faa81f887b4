/* Setting and removing node attributes, typed. The runtime registry has
 * a shape function for most ops, which reads the attributes: an edited
 * node is run through it, so a value the op cannot take (a Transpose perm
 * of the wrong length, a Conv group that does not divide the channels) is
 * refused with the registry's reason. An ONNX op's attribute must be one
 * its schema (onnx/op-schemas.h) lists, of the type it lists. */
#include "edit/edit-private.h"
#include "edit/attribute-value.h"
#include "ir/graph-surgery.h"
#include "onnx/op-schemas.h"
#include "runtime/op.h"

#include <stdlib.h>
#include <string.h>

/* Keeps the attribute's place among the node's (the sidebar and the
 * saved file list them in order). */
static void
replace_attribute (GraftNode *node, GraftAttribute *attribute)
{
  for (guint i = 0; i < node->attributes->len; i++)
    if (strcmp (((GraftAttribute *) g_ptr_array_index (node->attributes, i))->name, attribute->name) == 0)
      {
        graft_attribute_free (g_ptr_array_index (node->attributes, i));
        node->attributes->pdata[i] = attribute;
        return;
      }
  graft_node_add_attribute (node, attribute);
}

static void
remove_attribute (GraftNode *node, const char *name)
{
  for (guint i = 0; i < node->attributes->len; i++)
    if (strcmp (((GraftAttribute *) g_ptr_array_index (node->attributes, i))->name, name) == 0)
      {
        g_ptr_array_remove_index (node->attributes, i);
        return;
      }
}

static void
note_unchecked (GraftEditScope *scope, GraftNode *node, GPtrArray *notes)
{
  if (graft_op_registry_lookup (node->op, graft_model_get_opset (scope->model, node->domain)) == NULL)
    g_ptr_array_add (notes, g_strdup_printf ("Graft has no schema for %s: the attribute is not checked", node->op));
}

static gboolean
check (GraftEditScope *scope, GraftNode *node, GPtrArray *notes, GError **error)
{
  g_autoptr(GraftInference) inference = NULL;

  note_unchecked (scope, node, notes);
  if (scope->function != NULL)
    return TRUE;
  if ((inference = graft_edit_check_node (scope->model, node, error)) == NULL)
    return FALSE;
  graft_edit_refresh_declared_types (inference, scope->model, scope->graph, notes);
  return TRUE;
}

/* The ONNX schema of node's op at the model's opset, NULL for other domains. */
static const GraftOnnxSchema *
node_schema (GraftModel *model, GraftNode *node)
{
  return graft_onnx_schema_lookup (node->domain, node->op_type, graft_model_get_opset (model, node->domain));
}

static char *
list_attribute_names (const GraftOnnxSchema *schema)
{
  g_autoptr(GString) names = g_string_new (NULL);

  for (guint i = 0; i < schema->n_attributes; i++)
    g_string_append_printf (names, "%s%s", i ? ", " : "", schema->attributes[i].name);
  return g_string_free (g_steal_pointer (&names), FALSE);
}

/* A new node of an ONNX op has the attributes its schema requires. */
static gboolean
check_required (GraftModel *model, GraftNode *node, GError **error)
{
  const GraftOnnxSchema *schema = node_schema (model, node);

  for (guint i = 0; schema != NULL && i < schema->n_attributes; i++)
    if (schema->attributes[i].required && graft_node_get_attribute (node, schema->attributes[i].name) == NULL)
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                     "%s needs the attribute '%s' (%s)", node->op_type, schema->attributes[i].name,
                     graft_attr_type_to_string (schema->attributes[i].type));
        return FALSE;
      }
  return TRUE;
}

GraftAttribute *
graft_edit_build_attribute (GraftModel *model, GraftNode *node, const char *name, const char *type_name,
                            const char *text, GError **error)
{
  const GraftOnnxSchema *schema = node_schema (model, node);
  const GraftOnnxAttributeSchema *expected = graft_onnx_schema_find_attribute (schema, name);
  GraftAttribute *existing = graft_node_get_attribute (node, name);
  GraftAttrType type;

  if (name == NULL || *name == '\0' || text == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "an attribute needs a name and a value");
      return NULL;
    }
  if (type_name != NULL && !graft_attribute_type_from_name (type_name, &type, error))
    return NULL;
  if (schema != NULL && expected == NULL)
    {
      g_autofree char *names = list_attribute_names (schema);
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "%s (opset %" G_GINT64_FORMAT ") has no attribute '%s'%s%s", node->op_type,
                   graft_model_get_opset (model, node->domain), name, *names ? "; it has " : " (it has none)", names);
      return NULL;
    }
  if (type_name != NULL)
    {
      if (existing != NULL && existing->type != type)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "attribute '%s' of '%s' is %s, not %s (remove it first to change its type)", name, node->name,
                       graft_attr_type_to_string (existing->type), type_name);
          return NULL;
        }
    }
  else
    type = existing != NULL ? existing->type : expected != NULL ? expected->type : graft_attribute_value_guess_type (text);
  if (expected != NULL && expected->type != GRAFT_ATTR_UNDEFINED && type != expected->type)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "%s's attribute '%s' is %s, not %s",
                   node->op_type, name, graft_attr_type_to_string (expected->type), graft_attr_type_to_string (type));
      return NULL;
    }
  return graft_attribute_value_parse (name, type, text, error);
}

gboolean
graft_edit_add_attributes (GraftModel *model, GraftNode *node, GVariant *params, GError **error)
{
  g_autofree const char **assignments = graft_edit_param_strv (params, "attributes");

  for (guint i = 0; assignments != NULL && assignments[i] != NULL; i++)
    {
      g_autofree char *name = NULL, *type = NULL, *text = NULL;
      GraftAttribute *attribute;

      if (!graft_attribute_assignment_parse (assignments[i], &name, &type, &text, error))
        return FALSE;
      if (graft_node_get_attribute (node, name) != NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "attribute '%s' is given twice", name);
          return FALSE;
        }
      if ((attribute = graft_edit_build_attribute (model, node, name, type, text, error)) == NULL)
        return FALSE;
      graft_node_add_attribute (node, attribute);
    }
  return check_required (model, node, error);
}

static gboolean
set_attribute (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftNode *node = graft_edit_find_node (scope->graph, graft_edit_param_string (params, "node"), error);
  const char *name = graft_edit_param_string (params, "name");
  const char *text = graft_edit_param_string (params, "value");
  GraftAttribute *existing;
  GraftAttribute *attribute;

  if (node == NULL)
    return FALSE;
  if (name == NULL || *name == '\0' || text == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "set-attribute needs 'name' and 'value'");
      return FALSE;
    }
  attribute = graft_edit_build_attribute (scope->model, node, name, graft_edit_param_string (params, "type"), text,
                                          error);
  if (attribute == NULL)
    return FALSE;
  existing = graft_node_get_attribute (node, name);
  if (existing != NULL)
    {
      g_autofree char *before = graft_attribute_format_value (existing, 8);
      g_autofree char *after = graft_attribute_format_value (attribute, 8);
      g_ptr_array_add (notes, g_strdup_printf ("%s: %s → %s", name, before, after));
    }
  else
    g_ptr_array_add (notes, g_strdup_printf ("added %s attribute '%s'", graft_attr_type_to_string (attribute->type),
                                             name));
  replace_attribute (node, attribute);
  return check (scope, node, notes, error);
}

static gboolean
remove_attribute_op (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftNode *node = graft_edit_find_node (scope->graph, graft_edit_param_string (params, "node"), error);
  const char *name = graft_edit_param_string (params, "name");

  if (node == NULL)
    return FALSE;
  if (name == NULL || graft_node_get_attribute (node, name) == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "'%s' (%s) has no attribute '%s'", node->name,
                   node->op, name ? name : "");
      return FALSE;
    }
  remove_attribute (node, name);
  if (!check_required (scope->model, node, error))
    return FALSE;
  return check (scope, node, notes, error);
}

static char *
describe_set (GVariant *params)
{
  return g_strdup_printf ("Set %s.%s = %s", graft_edit_param_string (params, "node"),
                          graft_edit_param_string (params, "name"), graft_edit_param_string (params, "value"));
}

static char *
describe_remove (GVariant *params)
{
  return g_strdup_printf ("Remove attribute %s.%s", graft_edit_param_string (params, "node"),
                          graft_edit_param_string (params, "name"));
}

/* The node's first attribute as it reads back: "alpha=0.2". */
static char *
suggest_assignment (GraftGraph *graph, const char *target)
{
  GraftNode *node = graph != NULL ? graft_graph_find_node (graph, target) : NULL;
  GraftAttribute *first;
  g_autofree char *value = NULL;

  if (node == NULL || node->attributes->len == 0)
    return g_strdup ("");
  first = g_ptr_array_index (node->attributes, 0);
  value = graft_attribute_format_value (first, 64);
  return g_strdup_printf ("%s=%s", first->name, value);
}

const GraftEditOperation graft_edit_ops_attribute[] = {
  { .id = "set-attribute", .node_params = "node", .value_params = "", .apply = set_attribute, .describe = describe_set,
    .option = "--attr", .argument = "NODE:NAME=[TYPE:]VALUE", .parse = graft_edit_parse_set_attribute,
    .help = "set or add an attribute (TYPE: int, float, string, ints, floats, strings; default: the attribute's own "
            "type)",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "Set _Attribute…", .rank = 12,
    .heading = "Set Attribute",
    .body = "NAME=VALUE, with the attribute's own type, or a type first: “alpha=float:0.2”, “perm=ints:[0, 2, 1]”. "
            "The op's shape function checks the result.",
    .apply_label = "_Set", .suggest = suggest_assignment },
  { .id = "remove-attribute", .node_params = "node", .value_params = "", .apply = remove_attribute_op,
    .describe = describe_remove,
    .option = "--remove-attr", .argument = "NODE:NAME", .parse = graft_edit_parse_remove_attribute,
    .help = "remove an attribute" },
  { NULL },
};
