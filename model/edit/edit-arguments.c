/* The argument syntax of the edit operations (GraftEditParseFunc, the
 * parse column of the operation table): text as graft-cli edit reads it
 * after an option ("OLD=NEW", "INPUT:AXIS=NAME"), or from the window, the
 * menu's target with what its dialog asked for. The generic parsers fill
 * the row's keys; the others read one syntax each. */
#include "edit/edit-private.h"
#include "edit/attribute-value.h"

#include <string.h>

/* The row's keys: "node to" → { "node", "to" }. */
static GStrv
row_keys (const GraftEditOperation *operation)
{
  return g_strsplit (operation->keys ? operation->keys : "", " ", -1);
}

/* Splits "LEFT=RIGHT" at the first '=' (names rarely hold one; values
 * may); a target given from the window is LEFT and text all of RIGHT. */
static gboolean
split_pair (const char *target, const char *text, char **left, char **right)
{
  const char *equals;

  if (target != NULL)
    {
      if (text == NULL)
        return FALSE;
      *left = g_strdup (target);
      *right = g_strdup (text);
      return TRUE;
    }
  if (text == NULL || (equals = strchr (text, '=')) == NULL || equals == text)
    return FALSE;
  *left = g_strndup (text, equals - text);
  *right = g_strdup (equals + 1);
  return TRUE;
}

GVariant *
graft_edit_parse_name (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                       const char *argument, GError **error)
{
  g_auto(GStrv) keys = row_keys (operation);
  const char *name = target != NULL ? target : argument;

  if (name == NULL || keys[0] == NULL)
    return NULL;
  return graft_edit_params_new (keys[0], g_variant_new_string (name), NULL);
}

GVariant *
graft_edit_parse_pair (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                       const char *argument, GError **error)
{
  g_auto(GStrv) keys = row_keys (operation);
  g_autofree char *left = NULL, *right = NULL;

  if (keys[0] == NULL || keys[1] == NULL || !split_pair (target, argument, &left, &right) || *right == '\0')
    return NULL;
  return graft_edit_params_new (keys[0], g_variant_new_string (left), keys[1], g_variant_new_string (right), NULL);
}

/* Splits NODE:REST at the last ':' before end (the node name may hold
 * ':'), or takes a window's target as NODE and text as REST. */
static gboolean
split_node (const char *target, const char *text, const char *end, char **node, const char **rest)
{
  const char *colon;

  if (target != NULL)
    {
      *node = g_strdup (target);
      *rest = text;
      return text != NULL;
    }
  for (colon = end; colon > text && *colon != ':'; colon--)
    ;
  if (colon == text || colon + 1 == end)
    return FALSE;
  *node = g_strndup (text, colon - text);
  *rest = colon + 1;
  return TRUE;
}

GVariant *
graft_edit_parse_set_attribute (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                const char *argument, GError **error)
{
  const char *equals = argument ? strchr (argument, '=') : NULL;
  g_autofree char *node = NULL, *name = NULL, *type = NULL, *value = NULL;
  const char *assignment;

  if (equals == NULL && target != NULL && argument != NULL)
    equals = argument + strlen (argument);   /* no '=': the assignment's parser says so */
  if (equals == NULL || !split_node (target, argument, equals, &node, &assignment)
      || !graft_attribute_assignment_parse (assignment, &name, &type, &value, error))
    return NULL;
  return graft_edit_params_new ("node", g_variant_new_string (node), "name", g_variant_new_string (name),
                                "value", g_variant_new_string (value),
                                "type", type ? g_variant_new_string (type) : NULL, NULL);
}

GVariant *
graft_edit_parse_remove_attribute (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                   const char *argument, GError **error)
{
  g_autofree char *node = NULL;
  const char *name;

  if (argument == NULL || !split_node (target, argument, argument + strlen (argument), &node, &name) || *name == '\0')
    return NULL;
  return graft_edit_params_new ("node", g_variant_new_string (node), "name", g_variant_new_string (name), NULL);
}

static gboolean
parse_size (const char *text, gint64 min, gint64 *value)
{
  guint64 parsed;

  if (!g_ascii_string_to_unsigned (text, 10, min, G_MAXINT32, &parsed, NULL))
    return FALSE;
  *value = (gint64) parsed;
  return TRUE;
}

/* INPUT:AXIS=NAME[:MIN[:MAX]]; the input name may itself contain ':'. */
GVariant *
graft_edit_parse_dynamic (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                          const char *argument, GError **error)
{
  const char *equals = argument ? strrchr (argument, '=') : NULL;
  const char *axis_start;
  g_autofree char *input = NULL, *axis_text = NULL;
  gint64 axis;

  if (equals == NULL || equals[1] == '\0' || !split_node (NULL, argument, equals, &input, &axis_start))
    return NULL;
  axis_text = g_strndup (axis_start, equals - axis_start);
  if (!parse_size (axis_text, 0, &axis))
    return NULL;
  return graft_edit_params_new ("input", g_variant_new_string (input), "axis", g_variant_new_int64 (axis),
                                "symbol", g_variant_new_string (equals + 1), NULL);
}

/* INPUT=1x3x224x224 */
GVariant *
graft_edit_parse_shape (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                        const char *argument, GError **error)
{
  const char *equals = argument ? strrchr (argument, '=') : NULL;
  g_autofree char *input = NULL;
  g_auto(GStrv) parts = NULL;
  g_autofree gint64 *dims = NULL;
  guint n;

  if (equals == NULL || equals == argument || equals[1] == '\0')
    return NULL;
  input = g_strndup (argument, equals - argument);
  parts = g_strsplit (equals + 1, "x", -1);
  n = g_strv_length (parts);
  dims = g_new (gint64, n);
  for (guint i = 0; i < n; i++)
    if (!parse_size (parts[i], 1, &dims[i]))
      return NULL;
  return graft_edit_params_new ("input", g_variant_new_string (input),
                                "dims", g_variant_new_fixed_array (G_VARIANT_TYPE_INT64, dims, n, sizeof (gint64)),
                                NULL);
}

/* The node target alone: its data inputs (no initializers) to its outputs. */
static GVariant *
extract_node (GraftGraph *graph, const char *name, GError **error)
{
  GraftNode *node = graph != NULL ? graft_edit_find_node (graph, name, error) : NULL;
  g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new ();

  if (node == NULL)
    return NULL;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (node->inputs, i);
      if (in != NULL && in->initializer == NULL)
        g_ptr_array_add (inputs, in->name);
    }
  for (guint i = 0; i < node->outputs->len; i++)
    if (g_ptr_array_index (node->outputs, i) != NULL)
      g_ptr_array_add (outputs, ((GraftValue *) g_ptr_array_index (node->outputs, i))->name);
  g_ptr_array_add (inputs, NULL);
  g_ptr_array_add (outputs, NULL);
  return graft_edit_params_new ("inputs", g_variant_new_strv ((const char *const *) inputs->pdata, -1),
                                "outputs", g_variant_new_strv ((const char *const *) outputs->pdata, -1), NULL);
}

/* IN1,IN2:OUT1,OUT2, or a node target: that node alone. */
GVariant *
graft_edit_parse_extract (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                          const char *argument, GError **error)
{
  g_auto(GStrv) halves = NULL;
  g_auto(GStrv) inputs = NULL, outputs = NULL;

  if (target != NULL)
    return extract_node (graph, target, error);
  if (argument == NULL)
    return NULL;
  halves = g_strsplit (argument, ":", 2);
  if (g_strv_length (halves) != 2 || halves[0][0] == '\0' || halves[1][0] == '\0')
    return NULL;
  inputs = g_strsplit (halves[0], ",", -1);
  outputs = g_strsplit (halves[1], ",", -1);
  return graft_edit_params_new ("inputs", g_variant_new_strv ((const char *const *) inputs, -1),
                                "outputs", g_variant_new_strv ((const char *const *) outputs, -1), NULL);
}

/* "OP(IN,...);ATTR=VALUE;..." → op, inputs (NULL without parentheses)
 * and attribute assignments (NULL without any). */
static gboolean
parse_op_call (const char *spec, char **op, GStrv *inputs, GStrv *attributes)
{
  g_auto(GStrv) parts = g_strsplit (spec, ";", -1);
  char *open;

  if (parts[0] == NULL || *parts[0] == '\0')
    return FALSE;
  *op = g_strdup (parts[0]);
  *inputs = NULL;
  *attributes = parts[1] != NULL ? g_strdupv (parts + 1) : NULL;
  if ((open = strchr (*op, '(')) != NULL)
    {
      gsize n = strlen (open);
      if (n < 2 || open[n - 1] != ')')
        return FALSE;
      open[n - 1] = '\0';
      *inputs = g_strsplit (open + 1, ",", -1);
      *open = '\0';
    }
  return **op != '\0';
}

static GVariant *
strv_or_null (GStrv strv)
{
  return strv != NULL ? g_variant_new_strv ((const char *const *) strv, -1) : NULL;
}

/* VALUE=OP or VALUE=OP(IN2,IN3);ATTR=VALUE: the extra inputs follow the edge. */
GVariant *
graft_edit_parse_insert (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                         const char *argument, GError **error)
{
  g_autofree char *value = NULL, *call = NULL, *op = NULL;
  g_auto(GStrv) inputs = NULL, attributes = NULL;

  if (!split_pair (target, argument, &value, &call) || !parse_op_call (call, &op, &inputs, &attributes))
    return NULL;
  return graft_edit_params_new ("value", g_variant_new_string (value), "op", g_variant_new_string (op),
                                "inputs", strv_or_null (inputs), "attributes", strv_or_null (attributes), NULL);
}

/* [NAME=]OP(IN,...)[;ATTR=VALUE...]: a new node whose outputs are graph outputs. */
GVariant *
graft_edit_parse_add_node (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                           const char *argument, GError **error)
{
  const char *spec = argument;
  const char *equals, *open, *semicolon;
  g_autofree char *name = NULL, *op = NULL;
  g_auto(GStrv) inputs = NULL, attributes = NULL;

  if (spec == NULL)
    return NULL;
  equals = strchr (spec, '=');
  open = strchr (spec, '(');
  semicolon = strchr (spec, ';');
  /* A '=' before the op call names the node; later ones are attributes'. */
  if (equals != NULL && (open == NULL || equals < open) && (semicolon == NULL || equals < semicolon))
    {
      name = g_strndup (spec, equals - spec);
      spec = equals + 1;
    }
  if (!parse_op_call (spec, &op, &inputs, &attributes) || inputs == NULL)
    return NULL;
  if (inputs[0] != NULL && inputs[1] == NULL && *inputs[0] == '\0')
    g_clear_pointer (&inputs[0], g_free);   /* "Op()": no inputs */
  return graft_edit_params_new ("op", g_variant_new_string (op), "name", name ? g_variant_new_string (name) : NULL,
                                "inputs", g_variant_new_strv ((const char *const *) inputs, -1),
                                "attributes", strv_or_null (attributes), NULL);
}

/* NAME (cut the graph there), or NAME=DTYPE[:SHAPE] for a new input. */
GVariant *
graft_edit_parse_add_input (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                            const char *argument, GError **error)
{
  g_autofree char *name = NULL, *type = NULL;
  char *colon;

  if (target != NULL || !split_pair (NULL, argument, &name, &type))
    return argument || target ? graft_edit_params_new ("value", g_variant_new_string (target ? target : argument), NULL)
                              : NULL;
  if ((colon = strchr (type, ':')) != NULL)
    *colon++ = '\0';
  return graft_edit_params_new ("value", g_variant_new_string (name), "dtype", g_variant_new_string (type),
                                "shape", colon ? g_variant_new_string (colon) : NULL, NULL);
}

/* N1,N2=DOMAIN::OP */
GVariant *
graft_edit_parse_replace_nodes (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                const char *argument, GError **error)
{
  const char *equals = argument ? strrchr (argument, '=') : NULL;
  g_autofree char *list = NULL;
  g_auto(GStrv) nodes = NULL;

  if (equals == NULL || equals == argument || equals[1] == '\0')
    return NULL;
  list = g_strndup (argument, equals - argument);
  nodes = g_strsplit (list, ",", -1);
  return graft_edit_params_new ("nodes", g_variant_new_strv ((const char *const *) nodes, -1),
                                "op", g_variant_new_string (equals + 1), NULL);
}

/* PATTERN=>DOMAIN::OP[;ATTR=V...] or PATTERN=>REPLACEMENT (steps, as the
 * pattern's: a replacement has parentheses, an op does not). */
GVariant *
graft_edit_parse_replace_pattern (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                  const char *argument, GError **error)
{
  const char *arrow = argument ? strstr (argument, "=>") : NULL;
  g_autofree char *pattern = NULL, *op = NULL;
  g_auto(GStrv) inputs = NULL, attributes = NULL;

  if (arrow == NULL || arrow == argument || arrow[2] == '\0')
    return NULL;
  pattern = g_strndup (argument, arrow - argument);
  if (strchr (arrow + 2, '(') != NULL)
    return graft_edit_params_new ("pattern", g_variant_new_string (pattern),
                                  "replacement", g_variant_new_string (arrow + 2), NULL);
  if (!parse_op_call (arrow + 2, &op, &inputs, &attributes))
    return NULL;
  return graft_edit_params_new ("pattern", g_variant_new_string (pattern), "op", g_variant_new_string (op),
                                "attributes", strv_or_null (attributes), NULL);
}
