#include "ir/attribute.h"
#include "ir/graph.h"

#include <string.h>

GraftAttribute *
graft_attribute_new (const char *name, GraftAttrType type)
{
  GraftAttribute *attribute = g_new0 (GraftAttribute, 1);

  attribute->name = g_strdup (name ? name : "");
  attribute->type = type;
  switch (type)
    {
    case GRAFT_ATTR_FLOATS:
      attribute->floats = g_array_new (FALSE, FALSE, sizeof (double));
      break;
    case GRAFT_ATTR_INTS:
      attribute->ints = g_array_new (FALSE, FALSE, sizeof (gint64));
      break;
    case GRAFT_ATTR_STRINGS:
    case GRAFT_ATTR_TYPES:
      attribute->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      break;
    case GRAFT_ATTR_TENSORS:
      attribute->tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_tensor_unref);
      break;
    case GRAFT_ATTR_GRAPHS:
      attribute->graphs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_graph_free);
      break;
    default:
      break;
    }
  return attribute;
}

void
graft_attribute_free (GraftAttribute *attribute)
{
  if (attribute == NULL)
    return;
  g_free (attribute->name);
  g_free (attribute->doc_string);
  g_clear_pointer (&attribute->onnx_types, g_ptr_array_unref);
  g_free (attribute->ref_attr_name);
  g_clear_pointer (&attribute->s, g_bytes_unref);
  g_clear_pointer (&attribute->t, graft_tensor_unref);
  g_clear_pointer (&attribute->g, graft_graph_free);
  g_clear_pointer (&attribute->floats, g_array_unref);
  g_clear_pointer (&attribute->ints, g_array_unref);
  g_clear_pointer (&attribute->strings, g_ptr_array_unref);
  g_clear_pointer (&attribute->tensors, g_ptr_array_unref);
  g_clear_pointer (&attribute->graphs, g_ptr_array_unref);
  g_free (attribute);
}

GraftAttribute *
graft_attribute_new_int (const char *name, gint64 value)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_INT);
  attribute->i = value;
  return attribute;
}

GraftAttribute *
graft_attribute_new_float (const char *name, double value)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_FLOAT);
  attribute->f = value;
  return attribute;
}

GraftAttribute *
graft_attribute_new_string (const char *name, const char *value)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_STRING);
  attribute->s = g_bytes_new (value, strlen (value));
  return attribute;
}

GraftAttribute *
graft_attribute_new_ints (const char *name, const gint64 *values, guint n)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_INTS);
  g_array_append_vals (attribute->ints, values, n);
  return attribute;
}

GraftAttribute *
graft_attribute_new_floats (const char *name, const double *values, guint n)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_FLOATS);
  g_array_append_vals (attribute->floats, values, n);
  return attribute;
}

GraftAttribute *
graft_attribute_new_tensor (const char *name, GraftTensor *tensor)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_TENSOR);
  attribute->t = graft_tensor_ref (tensor);
  return attribute;
}

GraftAttribute *
graft_attribute_new_graph (const char *name, GraftGraph *graph)
{
  GraftAttribute *attribute = graft_attribute_new (name, GRAFT_ATTR_GRAPH);
  attribute->g = graph;
  return attribute;
}

char *
graft_attribute_dup_string (const GraftAttribute *attribute)
{
  gsize size;
  const char *data;

  if (attribute->s == NULL)
    return NULL;
  data = g_bytes_get_data (attribute->s, &size);
  return g_strndup (data, size);
}

/* Strings may hold arbitrary bytes; show them escaped and bounded. */
static void
append_quoted (GString *out, GBytes *bytes, gsize max_chars)
{
  gsize size;
  const char *data = g_bytes_get_data (bytes, &size);
  g_autofree char *text = g_strndup (data, MIN (size, max_chars));
  g_autofree char *escaped = g_strescape (text, NULL);

  g_string_append_c (out, '"');
  g_string_append (out, escaped);
  if (size > max_chars)
    g_string_append (out, "…");
  g_string_append_c (out, '"');
}

static void
append_double (GString *out, double value)
{
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];

  g_ascii_formatd (buffer, sizeof buffer, "%.6g", value);
  g_string_append (out, buffer);
}

char *
graft_attribute_format_value (const GraftAttribute *attribute, guint max_items)
{
  GString *out = g_string_new (NULL);
  guint n;

  if (max_items == 0)
    max_items = G_MAXUINT;

  switch (attribute->type)
    {
    case GRAFT_ATTR_FLOAT:
      append_double (out, attribute->f);
      break;
    case GRAFT_ATTR_INT:
      g_string_append_printf (out, "%" G_GINT64_FORMAT, attribute->i);
      break;
    case GRAFT_ATTR_BOOL:
      g_string_append (out, attribute->i ? "True" : "False");
      break;
    case GRAFT_ATTR_NONE:
      g_string_append (out, "None");
      break;
    case GRAFT_ATTR_STRING:
    case GRAFT_ATTR_TYPE:
      if (attribute->s)
        append_quoted (out, attribute->s, 200);
      break;
    case GRAFT_ATTR_TENSOR:
    case GRAFT_ATTR_SPARSE_TENSOR:
      if (attribute->t)
        {
          g_autofree char *desc = graft_tensor_describe (attribute->t);
          g_string_append (out, desc);
          g_autofree char *element = graft_tensor_get_numel (attribute->t) == 1
                                       ? graft_tensor_format_element_short (attribute->t, 0) : NULL;
          if (element != NULL)
            g_string_append_printf (out, " = %s", element);
        }
      break;
    case GRAFT_ATTR_GRAPH:
      g_string_append_printf (out, "<graph %s: %u nodes>", attribute->g ? attribute->g->name : "",
                              attribute->g ? attribute->g->nodes->len : 0);
      break;
    case GRAFT_ATTR_FLOATS:
      g_string_append_c (out, '[');
      n = MIN (attribute->floats->len, max_items);
      for (guint i = 0; i < n; i++)
        {
          if (i)
            g_string_append (out, ", ");
          append_double (out, g_array_index (attribute->floats, double, i));
        }
      if (n < attribute->floats->len)
        g_string_append (out, ", …");
      g_string_append_c (out, ']');
      break;
    case GRAFT_ATTR_INTS:
      g_string_append_c (out, '[');
      n = MIN (attribute->ints->len, max_items);
      for (guint i = 0; i < n; i++)
        g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? ", " : "", g_array_index (attribute->ints, gint64, i));
      if (n < attribute->ints->len)
        g_string_append (out, ", …");
      g_string_append_c (out, ']');
      break;
    case GRAFT_ATTR_STRINGS:
    case GRAFT_ATTR_TYPES:
      g_string_append_c (out, '[');
      n = MIN (attribute->strings->len, max_items);
      for (guint i = 0; i < n; i++)
        {
          if (i)
            g_string_append (out, ", ");
          append_quoted (out, g_ptr_array_index (attribute->strings, i), 60);
        }
      if (n < attribute->strings->len)
        g_string_append (out, ", …");
      g_string_append_c (out, ']');
      break;
    case GRAFT_ATTR_TENSORS:
      g_string_append_c (out, '[');
      n = MIN (attribute->tensors->len, max_items);
      for (guint i = 0; i < n; i++)
        {
          g_autofree char *desc = graft_tensor_describe (g_ptr_array_index (attribute->tensors, i));
          g_string_append_printf (out, "%s%s", i ? ", " : "", desc);
        }
      if (n < attribute->tensors->len)
        g_string_append (out, ", …");
      g_string_append_c (out, ']');
      break;
    case GRAFT_ATTR_GRAPHS:
      g_string_append_printf (out, "<%u graphs>", attribute->graphs->len);
      break;
    case GRAFT_ATTR_UNDEFINED:
    default:
      g_string_append (out, "?");
      break;
    }
  return g_string_free (out, FALSE);
}

const char *
graft_attr_type_to_string (GraftAttrType type)
{
  static const char *names[] = {
    [GRAFT_ATTR_UNDEFINED] = "undefined", [GRAFT_ATTR_FLOAT] = "float", [GRAFT_ATTR_INT] = "int",
    [GRAFT_ATTR_STRING] = "string", [GRAFT_ATTR_TENSOR] = "tensor", [GRAFT_ATTR_GRAPH] = "graph",
    [GRAFT_ATTR_FLOATS] = "floats", [GRAFT_ATTR_INTS] = "ints", [GRAFT_ATTR_STRINGS] = "strings",
    [GRAFT_ATTR_TENSORS] = "tensors", [GRAFT_ATTR_GRAPHS] = "graphs", [GRAFT_ATTR_TYPE] = "type",
    [GRAFT_ATTR_TYPES] = "types", [GRAFT_ATTR_SPARSE_TENSOR] = "sparse_tensor",
    [GRAFT_ATTR_BOOL] = "bool", [GRAFT_ATTR_NONE] = "none",
  };

  if ((guint) type < G_N_ELEMENTS (names) && names[type])
    return names[type];
  return "undefined";
}
