#include "pytorch/aten-schemas.h"

#include <string.h>
#include <gio/gio.h>

#include "aten-schemas-resources.h"

#define SCHEMAS_PATH "/org/graft/Graft/model/aten-schemas.tsv"

typedef struct {
  GHashTable *by_name;  /* op → GPtrArray of GraftAtenSchema*, never freed */
} SchemaTable;

static GraftAtenSchema *
parse_line (char *line)
{
  g_auto(GStrv) fields = g_strsplit (line, "\t", -1);
  guint n_fields = g_strv_length (fields);
  GraftAtenSchema *schema;
  GraftAtenArgument *arguments;

  if (n_fields < 2)
    return NULL;
  schema = g_new0 (GraftAtenSchema, 1);
  arguments = g_new0 (GraftAtenArgument, MAX (n_fields - 2, 1));
  schema->name = g_intern_string (fields[0]);
  schema->overload = g_intern_string (fields[1]);
  for (guint i = 2; i < n_fields; i++)
    {
      char *field = fields[i];
      char *colon;
      gsize length;
      GraftAtenArgument *argument = &arguments[schema->n_arguments];

      if (*field == '*')
        {
          argument->kwarg_only = TRUE;
          field++;
        }
      length = strlen (field);
      if (length > 0 && field[length - 1] == '=')
        {
          argument->has_default = TRUE;
          field[length - 1] = '\0';
        }
      colon = strchr (field, ':');
      if (colon == NULL)
        continue;
      *colon = '\0';
      argument->name = g_intern_string (field);
      argument->type = g_intern_string (colon + 1);
      schema->n_arguments++;
    }
  schema->arguments = arguments;
  return schema;
}

static gpointer
load_table (gpointer unused)
{
  SchemaTable *table = g_new0 (SchemaTable, 1);
  g_autoptr(GBytes) bytes = g_resource_lookup_data (graft_aten_schemas_get_resource (), SCHEMAS_PATH,
                                                    G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  table->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  /* Compiled in: missing only in a broken build. */
  g_return_val_if_fail (bytes != NULL, table);
  text = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      GraftAtenSchema *schema;
      GPtrArray *overloads;

      if (lines[i][0] == '#' || lines[i][0] == '\0' || (schema = parse_line (lines[i])) == NULL)
        continue;
      overloads = g_hash_table_lookup (table->by_name, schema->name);
      if (overloads == NULL)
        {
          overloads = g_ptr_array_new ();
          g_hash_table_insert (table->by_name, (gpointer) schema->name, overloads);
        }
      g_ptr_array_add (overloads, schema);
    }
  return table;
}

static SchemaTable *
get_table (void)
{
  static GOnce once = G_ONCE_INIT;

  return g_once (&once, load_table, NULL);
}

GPtrArray *
graft_aten_schema_list (const char *op)
{
  return g_hash_table_lookup (get_table ()->by_name, op);
}

static int
find_argument (const GraftAtenSchema *schema, const char *name)
{
  for (guint i = 0; i < schema->n_arguments; i++)
    if (strcmp (schema->arguments[i].name, name) == 0)
      return i;
  return -1;
}

static gboolean
is_tensor_type (const char *type)
{
  return strstr (type, "Tensor") != NULL;
}

/* How well schema takes the call: -1 if it cannot; else one point per
 * argument whose kind (tensor value or constant) fits its type. */
static int
score_overload (const GraftAtenSchema *schema, guint n_arguments, const char *const *keywords,
                const gboolean *is_value, guint *argument_index)
{
  guint n_positional = 0;
  int score = 0;
  g_autofree gboolean *given = g_new0 (gboolean, MAX (schema->n_arguments, 1));

  for (guint k = 0; k < n_arguments; k++)
    {
      const char *keyword = keywords != NULL ? keywords[k] : NULL;
      int index;

      if (keyword != NULL)
        index = find_argument (schema, keyword);
      else
        {
          /* Positional arguments fill the schema in order, keyword-only ones
           * too: TorchScript's serialised calls pass them by position. */
          index = n_positional < schema->n_arguments ? (int) n_positional : -1;
          n_positional++;
        }
      if (index < 0 || given[index])
        return -1;
      given[index] = TRUE;
      if (argument_index != NULL)
        argument_index[k] = index;
      if (is_value != NULL && is_value[k] == is_tensor_type (schema->arguments[index].type))
        score++;
    }
  for (guint i = 0; i < schema->n_arguments; i++)
    if (!given[i] && !schema->arguments[i].has_default)
      return -1;
  return score;
}

const GraftAtenSchema *
graft_aten_schema_find (const char *op, guint n_arguments, const char *const *keywords, const gboolean *is_value,
                        guint *argument_index)
{
  GPtrArray *overloads = graft_aten_schema_list (op);
  const GraftAtenSchema *best = NULL;
  int best_score = -1;

  for (guint i = 0; overloads != NULL && i < overloads->len; i++)
    {
      const GraftAtenSchema *schema = g_ptr_array_index (overloads, i);
      int score = score_overload (schema, n_arguments, keywords, is_value, NULL);

      /* Ties go to the exact arity, then to the default overload. */
      if (score > best_score
          || (score == best_score && best != NULL && score >= 0
              && ((schema->n_arguments == n_arguments && best->n_arguments != n_arguments)
                  || (schema->n_arguments == best->n_arguments && *schema->overload == '\0'))))
        {
          best = schema;
          best_score = score;
        }
    }
  if (best_score < 0)
    return NULL;
  if (argument_index != NULL)
    score_overload (best, n_arguments, keywords, is_value, argument_index);
  return best;
}

gint64
graft_aten_argument_position (const char *attribute_name)
{
  char *end = NULL;
  gint64 position;

  if (!g_str_has_prefix (attribute_name, "arg") || !g_ascii_isdigit (attribute_name[3]))
    return -1;
  position = (gint64) g_ascii_strtoull (attribute_name + 3, &end, 10);
  return *end == '\0' ? position : -1;
}

gboolean
graft_aten_call_bind (GraftNode *node, GraftAtenCall *call, const char **problem)
{
  guint n_values = node->inputs->len, n_keywords = 0, next_value = 0, next_keyword;
  /* the readers' "overload" attribute names the overload, not an argument */
  GraftAttribute *overload = graft_node_get_attribute (node, "overload");

  memset (call, 0, sizeof *call);
  call->n_positional = n_values;
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (graft_aten_argument_position (attribute->name) >= 0)
        call->n_positional++;
      else if (attribute != overload)
        n_keywords++;
    }
  call->n = call->n_positional + n_keywords;
  call->sources = g_new0 (gpointer, call->n + 1);
  call->is_value = g_new0 (gboolean, call->n + 1);
  call->keywords = g_new0 (const char *, call->n + 1);
  call->bound = g_new0 (guint, call->n + 1);
  for (guint k = 0; k < call->n_positional; k++)
    {
      g_autofree char *name = g_strdup_printf ("arg%u", k);
      GraftAttribute *attribute = graft_node_get_attribute (node, name);

      if (attribute != NULL)
        call->sources[k] = attribute;
      else if (next_value < n_values)
        {
          call->sources[k] = g_ptr_array_index (node->inputs, next_value++);
          call->is_value[k] = TRUE;
        }
      else
        {
          *problem = "its constant arguments leave a position empty";
          return FALSE;
        }
    }
  next_keyword = call->n_positional;
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (graft_aten_argument_position (attribute->name) >= 0 || attribute == overload)
        continue;
      call->keywords[next_keyword] = attribute->name;
      call->sources[next_keyword++] = attribute;
    }
  call->schema = NULL;
  g_autofree char *overload_name = overload != NULL && overload->type == GRAFT_ATTR_STRING
                                   ? graft_attribute_dup_string (overload) : NULL;
  GPtrArray *overloads = overload_name != NULL ? graft_aten_schema_list (node->op) : NULL;
  for (guint i = 0; overloads != NULL && i < overloads->len && call->schema == NULL; i++)
    {
      const GraftAtenSchema *schema = g_ptr_array_index (overloads, i);
      if (strcmp (schema->overload, overload_name) == 0 &&
          score_overload (schema, call->n, call->keywords, call->is_value, call->bound) >= 0)
        call->schema = schema;
    }
  if (call->schema == NULL)
    call->schema = graft_aten_schema_find (node->op, call->n, call->keywords, call->is_value, call->bound);
  if (call->schema == NULL)
    {
      *problem = "no overload takes these arguments";
      return FALSE;
    }
  return TRUE;
}

/* The schema of op with the fewest arguments that still has a place for n
 * positional ones: the names of a call that leaves out trailing arguments
 * the schema requires (ExecuTorch's _convolution without cudnn_enabled). */
static const GraftAtenSchema *
schema_with_room (const char *op, guint n)
{
  GPtrArray *overloads = graft_aten_schema_list (op);
  const GraftAtenSchema *best = NULL;
  for (guint i = 0; overloads != NULL && i < overloads->len; i++)
    {
      const GraftAtenSchema *schema = g_ptr_array_index (overloads, i);
      if (schema->n_arguments >= n && (best == NULL || schema->n_arguments < best->n_arguments))
        best = schema;
    }
  return best;
}

gboolean
graft_aten_name_arguments (GraftNode *node)
{
  g_auto(GraftAtenCall) call = { 0 };
  const char *problem = NULL;
  if (!graft_aten_call_bind (node, &call, &problem))
    {
      const GraftAtenSchema *schema = call.n == call.n_positional ? schema_with_room (node->op, call.n) : NULL;
      if (schema == NULL)
        return FALSE;
      for (guint k = 0, input = 0; k < call.n; k++)
        {
          g_autofree char *attribute = g_strdup_printf ("arg%u", k);
          if (graft_node_get_attribute (node, attribute) != NULL)
            graft_node_set_attribute_argument_name (node, attribute, schema->arguments[k].name);
          else if (input < node->inputs->len)
            graft_node_set_input_argument_name (node, input++, schema->arguments[k].name);
        }
      return TRUE;
    }
  for (guint k = 0, input = 0; k < call.n; k++)
    {
      const char *name = call.schema->arguments[call.bound[k]].name;
      if (call.is_value[k])
        graft_node_set_input_argument_name (node, input++, name);
      else if (call.keywords[k] == NULL)
        graft_node_set_attribute_argument_name (node, ((GraftAttribute *) call.sources[k])->name, name);
    }
  return TRUE;
}

void
graft_aten_call_clear (GraftAtenCall *call)
{
  g_clear_pointer (&call->sources, g_free);
  g_clear_pointer (&call->is_value, g_free);
  g_clear_pointer (&call->keywords, g_free);
  g_clear_pointer (&call->bound, g_free);
}
