/* The attribute-value grammar (attribute-value.h). */
#include "edit/attribute-value.h"
#include "edit/edit.h"

#include <string.h>

static const struct {
  const char *name;
  GraftAttrType type;
} attribute_types[] = {
  { "int", GRAFT_ATTR_INT }, { "float", GRAFT_ATTR_FLOAT }, { "string", GRAFT_ATTR_STRING },
  { "ints", GRAFT_ATTR_INTS }, { "floats", GRAFT_ATTR_FLOATS }, { "strings", GRAFT_ATTR_STRINGS },
};

gboolean
graft_attribute_type_from_name (const char *type_name, GraftAttrType *type, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (attribute_types); i++)
    if (g_ascii_strcasecmp (type_name, attribute_types[i].name) == 0)
      {
        *type = attribute_types[i].type;
        return TRUE;
      }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
               "unknown attribute type '%s' (int, float, string, ints, floats or strings)", type_name);
  return FALSE;
}

gboolean
graft_attribute_assignment_parse (const char *text, char **name, char **type, char **value, GError **error)
{
  const char *equals = strchr (text, '=');
  g_autofree char *stripped = equals ? g_strstrip (g_strndup (text, equals - text)) : NULL;
  const char *rest = equals ? equals + 1 : NULL;
  const char *colon = rest ? strchr (rest, ':') : NULL;
  g_autofree char *prefix = colon ? g_strstrip (g_strndup (rest, colon - rest)) : NULL;
  GraftAttrType unused;

  if (stripped == NULL || *stripped == '\0')
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "attribute '%s' is not NAME=[TYPE:]VALUE", text);
      return FALSE;
    }
  if (prefix != NULL && graft_attribute_type_from_name (prefix, &unused, NULL))
    rest = colon + 1;
  else
    g_clear_pointer (&prefix, g_free);
  *name = g_steal_pointer (&stripped);
  *type = g_steal_pointer (&prefix);
  *value = g_strdup (rest);
  return TRUE;
}

static gboolean
parse_int (const char *text, gint64 *value)
{
  return g_ascii_string_to_signed (text, 10, G_MININT64, G_MAXINT64, value, NULL);
}

gboolean
graft_attribute_value_read_float (const char *text, double *value)
{
  char *end = NULL;

  if (*text == '\0')
    return FALSE;
  *value = g_ascii_strtod (text, &end);
  return end != NULL && *end == '\0';
}

GStrv
graft_attribute_value_split_list (const char *text)
{
  g_autofree char *inner = g_strstrip (g_strdup (text));
  gsize n = strlen (inner);
  GStrv items;

  if (n >= 2 && inner[0] == '[' && inner[n - 1] == ']')
    {
      memmove (inner, inner + 1, n - 2);
      inner[n - 2] = '\0';
    }
  if (*g_strstrip (inner) == '\0')
    return g_new0 (char *, 1);
  items = g_strsplit (inner, ",", -1);
  for (guint i = 0; items[i] != NULL; i++)
    g_strstrip (items[i]);
  return items;
}

GraftAttrType
graft_attribute_value_guess_type (const char *text)
{
  g_auto(GStrv) items = NULL;
  gint64 i;
  double f;
  gboolean all_int = TRUE, all_float = TRUE;

  if (parse_int (text, &i))
    return GRAFT_ATTR_INT;
  if (graft_attribute_value_read_float (text, &f))
    return GRAFT_ATTR_FLOAT;
  if (text[0] != '[')
    return GRAFT_ATTR_STRING;
  items = graft_attribute_value_split_list (text);
  for (guint k = 0; items[k] != NULL; k++)
    {
      all_int &= parse_int (items[k], &i);
      all_float &= graft_attribute_value_read_float (items[k], &f);
    }
  return all_int ? GRAFT_ATTR_INTS : all_float ? GRAFT_ATTR_FLOATS : GRAFT_ATTR_STRINGS;
}

static GraftAttribute *
parse_list (const char *name, GraftAttrType type, const char *text, GError **error)
{
  g_auto(GStrv) items = graft_attribute_value_split_list (text);
  g_autoptr(GArray) ints = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(GArray) floats = g_array_new (FALSE, FALSE, sizeof (double));
  GraftAttribute *attribute;
  gint64 i = 0;
  double f = 0;

  if (type == GRAFT_ATTR_STRINGS)
    {
      attribute = graft_attribute_new (name, GRAFT_ATTR_STRINGS);
      for (guint k = 0; items[k] != NULL; k++)
        g_ptr_array_add (attribute->strings, g_bytes_new (items[k], strlen (items[k])));
      return attribute;
    }
  for (guint k = 0; items[k] != NULL; k++)
    {
      if (type == GRAFT_ATTR_INTS ? !parse_int (items[k], &i) : !graft_attribute_value_read_float (items[k], &f))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "attribute '%s': element %u ('%s') is not %s",
                       name, k, items[k], type == GRAFT_ATTR_INTS ? "an integer" : "a number");
          return NULL;
        }
      g_array_append_val (ints, i);
      g_array_append_val (floats, f);
    }
  return type == GRAFT_ATTR_INTS ? graft_attribute_new_ints (name, (gint64 *) ints->data, ints->len)
                                 : graft_attribute_new_floats (name, (double *) floats->data, floats->len);
}

GraftAttribute *
graft_attribute_value_parse (const char *name, GraftAttrType type, const char *text, GError **error)
{
  gint64 i;
  double f;

  switch (type)
    {
    case GRAFT_ATTR_INT:
      if (parse_int (text, &i))
        return graft_attribute_new_int (name, i);
      break;
    case GRAFT_ATTR_FLOAT:
      if (graft_attribute_value_read_float (text, &f))
        return graft_attribute_new_float (name, f);
      break;
    case GRAFT_ATTR_STRING:
      return graft_attribute_new_string (name, text);
    case GRAFT_ATTR_INTS:
    case GRAFT_ATTR_FLOATS:
    case GRAFT_ATTR_STRINGS:
      return parse_list (name, type, text, error);
    default:
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "attribute '%s' is of type %s, which cannot be set from text", name, graft_attr_type_to_string (type));
      return NULL;
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "attribute '%s' is %s %s; '%s' is not", name,
               type == GRAFT_ATTR_INT ? "an" : "a", graft_attr_type_to_string (type), text);
  return NULL;
}
