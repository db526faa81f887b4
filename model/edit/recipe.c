#include "edit/recipe.h"
#include "edit/edit-private.h"
#include "edit/address.h"
#include "ir/json-nesting.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define RECIPE_VERSION 1
/* A recipe written by Graft nests about eight deep (steps, a step, an
 * address, a subgraph path of addresses); the JSON parser and the
 * conversion below recurse once per level. */
#define RECIPE_MAX_NESTING 64
/* A subgraph path is one step per nested graph: ONNX's protobuf nesting
 * limit (onnx/wire.h) allows about 33 of them. */
#define RECIPE_MAX_PATH_STEPS 256

static JsonNode *variant_to_json (GVariant *value);

static JsonNode *
dict_to_json (GVariant *dict)
{
  JsonObject *object = json_object_new ();
  GVariantIter iter;
  const char *key;
  GVariant *value;
  JsonNode *node = json_node_new (JSON_NODE_OBJECT);

  g_variant_iter_init (&iter, dict);
  while (g_variant_iter_next (&iter, "{&sv}", &key, &value))
    {
      json_object_set_member (object, key, variant_to_json (value));
      g_variant_unref (value);
    }
  json_node_take_object (node, object);
  return node;
}

static JsonNode *
variant_to_json (GVariant *value)
{
  JsonNode *node;

  if (g_variant_is_of_type (value, G_VARIANT_TYPE_VARIANT))
    {
      g_autoptr(GVariant) inner = g_variant_get_variant (value);
      return variant_to_json (inner);
    }
  if (g_variant_is_of_type (value, G_VARIANT_TYPE_VARDICT))
    return dict_to_json (value);
  if (g_variant_is_of_type (value, G_VARIANT_TYPE_ARRAY))
    {
      JsonArray *array = json_array_new ();
      for (gsize i = 0; i < g_variant_n_children (value); i++)
        {
          g_autoptr(GVariant) child = g_variant_get_child_value (value, i);
          json_array_add_element (array, variant_to_json (child));
        }
      node = json_node_new (JSON_NODE_ARRAY);
      json_node_take_array (node, array);
      return node;
    }
  node = json_node_new (JSON_NODE_VALUE);
  if (g_variant_is_of_type (value, G_VARIANT_TYPE_STRING))
    json_node_set_string (node, g_variant_get_string (value, NULL));
  else if (g_variant_is_of_type (value, G_VARIANT_TYPE_INT64))
    json_node_set_int (node, g_variant_get_int64 (value));
  else if (g_variant_is_of_type (value, G_VARIANT_TYPE_DOUBLE))
    json_node_set_double (node, g_variant_get_double (value));
  else if (g_variant_is_of_type (value, G_VARIANT_TYPE_BOOLEAN))
    json_node_set_boolean (node, g_variant_get_boolean (value));
  else
    json_node_init_null (node);
  return node;
}

static GVariant *json_to_variant (JsonNode *node, GError **error);

static GVariant *
array_to_variant (JsonArray *array, GError **error)
{
  guint n = json_array_get_length (array);
  gboolean all_strings = n > 0, all_ints = n > 0;
  GVariantBuilder builder;

  for (guint i = 0; i < n; i++)
    {
      JsonNode *element = json_array_get_element (array, i);
      GType type = JSON_NODE_HOLDS_VALUE (element) ? json_node_get_value_type (element) : G_TYPE_INVALID;
      all_strings &= type == G_TYPE_STRING;
      all_ints &= type == G_TYPE_INT64;
    }
  g_variant_builder_init (&builder, all_strings ? G_VARIANT_TYPE_STRING_ARRAY
                                    : all_ints  ? G_VARIANT_TYPE ("ax")
                                                : G_VARIANT_TYPE ("av"));
  for (guint i = 0; i < n; i++)
    {
      JsonNode *element = json_array_get_element (array, i);
      GVariant *value;

      if (all_strings)
        g_variant_builder_add (&builder, "s", json_node_get_string (element));
      else if (all_ints)
        g_variant_builder_add (&builder, "x", json_node_get_int (element));
      else if ((value = json_to_variant (element, error)) == NULL)
        {
          g_variant_builder_clear (&builder);
          return NULL;
        }
      else
        g_variant_builder_add (&builder, "v", value);
    }
  return g_variant_builder_end (&builder);
}

static GVariant *
object_to_variant (JsonObject *object, GError **error)
{
  GVariantDict dict;
  JsonObjectIter iter;
  const char *key;
  JsonNode *member;

  g_variant_dict_init (&dict, NULL);
  json_object_iter_init (&iter, object);
  while (json_object_iter_next (&iter, &key, &member))
    {
      GVariant *value = json_to_variant (member, error);
      if (value == NULL)
        {
          g_variant_dict_clear (&dict);
          return NULL;
        }
      g_variant_dict_insert_value (&dict, key, value);
    }
  return g_variant_dict_end (&dict);
}

static GVariant *
json_to_variant (JsonNode *node, GError **error)
{
  switch (JSON_NODE_TYPE (node))
    {
    case JSON_NODE_OBJECT:
      return object_to_variant (json_node_get_object (node), error);
    case JSON_NODE_ARRAY:
      return array_to_variant (json_node_get_array (node), error);
    case JSON_NODE_VALUE:
      switch (json_node_get_value_type (node))
        {
        case G_TYPE_STRING:
          return g_variant_new_string (json_node_get_string (node));
        case G_TYPE_INT64:
          return g_variant_new_int64 (json_node_get_int (node));
        case G_TYPE_DOUBLE:
          return g_variant_new_double (json_node_get_double (node));
        case G_TYPE_BOOLEAN:
          return g_variant_new_boolean (json_node_get_boolean (node));
        default:
          break;
        }
      break;
    default:
      break;
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "a recipe parameter is null or of an unknown type");
  return NULL;
}

char *
graft_recipe_to_json (GPtrArray *edits, GError **error)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "graft-recipe");
  json_builder_add_int_value (builder, RECIPE_VERSION);
  json_builder_set_member_name (builder, "steps");
  json_builder_begin_array (builder);
  for (guint i = 0; i < edits->len; i++)
    {
      GraftEdit *edit = g_ptr_array_index (edits, i);
      GVariant *recorded = graft_edit_get_recorded_params (edit);
      g_autoptr(GVariant) step = NULL;

      if (recorded == NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' was never applied, so it has no recipe step",
                       graft_edit_get_description (edit));
          return NULL;
        }
      step = g_variant_ref_sink (graft_edit_params_replace (recorded, "edit",
                                                            g_variant_new_string (graft_edit_get_operation_id (edit))));
      json_builder_add_value (builder, dict_to_json (step));
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);
  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  json_generator_set_pretty (generator, TRUE);
  return json_generator_to_data (generator, NULL);
}

gboolean
graft_recipe_save (GPtrArray *edits, const char *path, GError **error)
{
  g_autofree char *text = graft_recipe_to_json (edits, error);

  return text != NULL && g_file_set_contents (path, text, -1, error);
}

/* An address (a{sv}) or a plain name (s) → the name in graph now. */
static GVariant *
resolve_target (GraftGraph *graph, GVariant *value, gboolean node, GError **error)
{
  GraftNode *found_node;
  GraftValue *found_value;

  if (g_variant_is_of_type (value, G_VARIANT_TYPE_VARIANT))
    {
      g_autoptr(GVariant) inner = g_variant_get_variant (value);
      return resolve_target (graph, inner, node, error);
    }
  if (g_variant_is_of_type (value, G_VARIANT_TYPE_STRING) || g_variant_is_of_type (value, G_VARIANT_TYPE_STRING_ARRAY))
    return g_variant_ref (value);
  if (g_variant_is_of_type (value, G_VARIANT_TYPE ("av")))
    {
      GVariantBuilder names;
      g_variant_builder_init (&names, G_VARIANT_TYPE_STRING_ARRAY);
      for (gsize i = 0; i < g_variant_n_children (value); i++)
        {
          g_autoptr(GVariant) child = g_variant_get_child_value (value, i);
          g_autoptr(GVariant) name = resolve_target (graph, child, node, error);
          if (name == NULL || !g_variant_is_of_type (name, G_VARIANT_TYPE_STRING))
            {
              if (name != NULL)
                g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "a list of lists is not a target");
              g_variant_builder_clear (&names);
              return NULL;
            }
          g_variant_builder_add_value (&names, name);
        }
      return g_variant_ref_sink (g_variant_builder_end (&names));
    }
  if (!g_variant_is_of_type (value, G_VARIANT_TYPE_VARDICT))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "a target must be a name or an address");
      return NULL;
    }
  if (node)
    return (found_node = graft_node_address_resolve (graph, value, error))
               ? g_variant_ref_sink (g_variant_new_string (found_node->name))
               : NULL;
  return (found_value = graft_value_address_resolve (graph, value, error))
             ? g_variant_ref_sink (g_variant_new_string (found_value->name))
             : NULL;
}

static gboolean
resolve_keys (GVariantDict *dict, GVariant *step, const char *keys, GraftGraph *graph, gboolean node, GError **error)
{
  g_auto(GStrv) names = g_strsplit (keys, " ", -1);

  for (guint i = 0; names[i] != NULL; i++)
    {
      g_autoptr(GVariant) value = *names[i] ? g_variant_lookup_value (step, names[i], NULL) : NULL;
      g_autoptr(GVariant) resolved = NULL;

      if (value == NULL)
        continue;
      if ((resolved = resolve_target (graph, value, node, error)) == NULL)
        return FALSE;
      g_variant_dict_insert_value (dict, names[i], resolved);
    }
  return TRUE;
}

/* graph_path is what graft_recipe_to_json writes: a list of
 * {"node": ADDRESS, "attribute": NAME} steps. Anything else is refused
 * rather than ignored, which would edit the top-level graph instead. */
static gboolean
check_graph_path (GVariant *path, GError **error)
{
  g_autofree char *shown = NULL;

  if (g_variant_is_of_type (path, G_VARIANT_TYPE ("av")) && g_variant_n_children (path) <= RECIPE_MAX_PATH_STEPS)
    return TRUE;
  if (g_variant_is_of_type (path, G_VARIANT_TYPE_ARRAY) && g_variant_n_children (path) > RECIPE_MAX_PATH_STEPS)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "graph_path has %" G_GSIZE_FORMAT " steps; no model nests subgraphs more than %d deep",
                   g_variant_n_children (path), RECIPE_MAX_PATH_STEPS);
      return FALSE;
    }
  shown = g_variant_print (path, FALSE);
  if (g_utf8_strlen (shown, -1) > 80)
    {
      g_autofree char *start = g_utf8_substring (shown, 0, 77);
      g_free (shown);
      shown = g_strconcat (start, "...", NULL);
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
               "graph_path %s is not a list of {\"node\": …, \"attribute\": …} steps (a NODE#ATTRIBUTE path "
               "string goes in \"graph\")", shown);
  return FALSE;
}

/* A step's parameters with its targets found in model, as an edit. */
static GraftEdit *
edit_from_step (GraftModel *model, GVariant *step, GError **error)
{
  const char *id = graft_edit_param_string (step, "edit");
  const GraftEditOperation *operation = id ? graft_edit_operation_lookup (id) : NULL;
  g_autoptr(GVariant) path = g_variant_lookup_value (step, "graph_path", NULL);
  g_autoptr(GVariant) params = NULL;
  GraftEditScope scope;
  GVariantDict dict;

  if (operation == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "unknown edit '%s'", id ? id : "(none: a step "
                   "needs \"edit\")");
      return NULL;
    }
  if (path != NULL && !check_graph_path (path, error))
    return NULL;
  g_variant_dict_init (&dict, step);
  g_variant_dict_remove (&dict, "edit");
  g_variant_dict_remove (&dict, "graph_path");
  if (path != NULL)
    {
      g_autofree char *names = graft_edit_scope_path_from_recorded (model, path, error);
      if (names == NULL)
        {
          g_variant_dict_clear (&dict);
          return NULL;
        }
      g_variant_dict_insert (&dict, "graph", "s", names);
    }
  params = g_variant_ref_sink (g_variant_dict_end (&dict));
  if (!graft_edit_scope_resolve (model, params, &scope, NULL, error))
    return NULL;
  g_variant_dict_init (&dict, params);
  if (!resolve_keys (&dict, params, operation->node_params, scope.graph, TRUE, error)
      || !resolve_keys (&dict, params, operation->value_params, scope.graph, FALSE, error))
    {
      g_variant_dict_clear (&dict);
      return NULL;
    }
  return graft_edit_new_operation (id, g_variant_dict_end (&dict), error);
}

gboolean
graft_recipe_replay (const char *json, gsize length, GraftEditHistory *history, GPtrArray *applied, GError **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *root;
  JsonNode *version;
  JsonArray *steps;

  if (!graft_json_check_nesting (json, length, RECIPE_MAX_NESTING, "the recipe", error)
      || !json_parser_load_from_data (parser, json, length, error))
    return FALSE;
  /* Empty text parses, to no root at all. */
  root = json_parser_get_root (parser) != NULL && JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))
             ? json_node_get_object (json_parser_get_root (parser))
             : NULL;
  if (root == NULL || !json_object_has_member (root, "steps")
      || !JSON_NODE_HOLDS_ARRAY (json_object_get_member (root, "steps")))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "not a Graft recipe: no \"steps\" list");
      return FALSE;
    }
  version = json_object_get_member (root, "graft-recipe");
  if (version != NULL && (!JSON_NODE_HOLDS_VALUE (version) || json_node_get_value_type (version) != G_TYPE_INT64))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the recipe's \"graft-recipe\" is not a version "
                   "number");
      return FALSE;
    }
  if (version != NULL && json_node_get_int (version) > RECIPE_VERSION)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the recipe has version %" G_GINT64_FORMAT
                   "; this Graft reads version %d", json_node_get_int (version), RECIPE_VERSION);
      return FALSE;
    }
  steps = json_object_get_array_member (root, "steps");
  for (guint i = 0; i < json_array_get_length (steps); i++)
    {
      JsonNode *element = json_array_get_element (steps, i);
      g_autoptr(GError) step_error = NULL;
      g_autoptr(GVariant) step = NULL;
      g_autoptr(GraftEdit) edit = NULL;
      const char *id = NULL;

      if (JSON_NODE_HOLDS_OBJECT (element))
        step = json_to_variant (element, &step_error);
      if (step != NULL)
        {
          g_variant_ref_sink (step);
          id = graft_edit_param_string (step, "edit");
        }
      else if (step_error == NULL)
        g_set_error (&step_error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "a step must be an object");
      if (step != NULL)
        edit = edit_from_step (graft_edit_history_get_model (history), step, &step_error);
      if (edit == NULL || !graft_edit_history_apply (history, edit, &step_error))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, step_error->domain == GRAFT_EDIT_ERROR ? step_error->code
                                                                                        : GRAFT_EDIT_ERROR_INVALID,
                       "recipe step %u (%s): %s", i + 1, id ? id : "?", step_error->message);
          return FALSE;
        }
      if (applied != NULL)
        g_ptr_array_add (applied, g_object_ref (edit));
    }
  return TRUE;
}

gboolean
graft_recipe_replay_file (const char *path, GraftEditHistory *history, GPtrArray *applied, GError **error)
{
  g_autofree char *text = NULL;
  gsize length;
  g_autoptr(GError) local_error = NULL;

  if (!g_file_get_contents (path, &text, &length, &local_error))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "cannot read the recipe %s: %s", path,
                   local_error->message);
      return FALSE;
    }
  if (!graft_recipe_replay (text, length, history, applied, &local_error))
    {
      g_set_error (error, local_error->domain, local_error->code, "%s: %s", path, local_error->message);
      return FALSE;
    }
  return TRUE;
}
