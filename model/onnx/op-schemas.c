#include "onnx/op-schemas.h"

#include <stdlib.h>
#include <string.h>
#include <gio/gio.h>

#include "ir/graph.h"
#include "onnx-schemas-resources.h"

#define SCHEMAS_PATH "/org/graft/Graft/model/onnx-schemas.tsv"

static GraftAttrType
attribute_type_from_name (const char *name)
{
  for (GraftAttrType type = GRAFT_ATTR_FLOAT; type <= GRAFT_ATTR_SPARSE_TENSOR; type++)
    if (strcmp (graft_attr_type_to_string (type), name) == 0)
      return type;
  return GRAFT_ATTR_UNDEFINED;
}

/* "name:type!", "name:type=VALUE" or "name:type?" */
static gboolean
parse_attribute (char *field, GraftOnnxAttributeSchema *attribute)
{
  char *colon = strchr (field, ':');
  char *type = colon ? colon + 1 : NULL;
  char *mark = type ? type + strcspn (type, "!=?") : NULL;

  if (mark == NULL || *mark == '\0')
    return FALSE;
  attribute->required = *mark == '!';
  if (*mark == '=')
    attribute->default_text = g_intern_string (mark + 1);
  *colon = '\0';
  *mark = '\0';
  attribute->name = g_intern_string (field);
  attribute->type = attribute_type_from_name (type);
  return TRUE;
}

static GraftOnnxSchema *
parse_line (char *line)
{
  g_auto(GStrv) fields = g_strsplit (line, "\t", -1);
  guint n_fields = g_strv_length (fields);
  GraftOnnxAttributeSchema *attributes;
  GraftOnnxSchema *schema;

  if (n_fields < 6)
    return NULL;
  schema = g_new0 (GraftOnnxSchema, 1);
  attributes = g_new0 (GraftOnnxAttributeSchema, MAX (n_fields - 6, 1));
  schema->domain = graft_canonical_domain (fields[0]);
  schema->op_type = g_intern_string (fields[1]);
  schema->since = atoi (fields[2]);
  schema->deprecated = fields[3][0] != '\0';
  schema->inputs = g_intern_string (fields[4]);
  schema->outputs = g_intern_string (fields[5]);
  for (guint i = 6; i < n_fields; i++)
    if (parse_attribute (fields[i], &attributes[schema->n_attributes]))
      schema->n_attributes++;
  schema->attributes = attributes;
  return schema;
}

/* "domain::op" → GPtrArray of its versions, never freed. */
static gpointer
load_table (gpointer unused)
{
  GHashTable *table = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GBytes) bytes = g_resource_lookup_data (graft_onnx_schemas_get_resource (), SCHEMAS_PATH,
                                                    G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  /* Compiled in: missing only in a broken build. */
  g_return_val_if_fail (bytes != NULL, table);
  text = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      GraftOnnxSchema *schema;
      g_autofree char *key = NULL;
      GPtrArray *versions;

      if (lines[i][0] == '#' || lines[i][0] == '\0' || (schema = parse_line (lines[i])) == NULL)
        continue;
      key = g_strconcat (schema->domain, "::", schema->op_type, NULL);
      if ((versions = g_hash_table_lookup (table, key)) == NULL)
        {
          versions = g_ptr_array_new ();
          g_hash_table_insert (table, (gpointer) g_intern_string (key), versions);
        }
      g_ptr_array_add (versions, schema);
    }
  return table;
}

const GraftOnnxSchema *
graft_onnx_schema_lookup (const char *domain, const char *op_type, gint64 opset)
{
  static GOnce once = G_ONCE_INIT;
  GHashTable *table = g_once (&once, load_table, NULL);
  g_autofree char *key = g_strconcat (graft_canonical_domain (domain), "::", op_type, NULL);
  GPtrArray *versions = g_hash_table_lookup (table, key);
  const GraftOnnxSchema *best = NULL;

  for (guint i = 0; versions != NULL && i < versions->len; i++)
    {
      const GraftOnnxSchema *schema = g_ptr_array_index (versions, i);
      if (schema->since <= opset && (best == NULL || schema->since > best->since))
        best = schema;
    }
  return best;
}

const GraftOnnxAttributeSchema *
graft_onnx_schema_find_attribute (const GraftOnnxSchema *schema, const char *name)
{
  for (guint i = 0; schema != NULL && i < schema->n_attributes; i++)
    if (strcmp (schema->attributes[i].name, name) == 0)
      return &schema->attributes[i];
  return NULL;
}
