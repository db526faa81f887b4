#include "pt2/exported-program-writer.h"
#include "pt2/exported-program.h"
#include "pt2/exported-program-private.h"
#include "ir/atomic-save.h"
#include "ir/model-error.h"
#include "pytorch/torch-archive-writer.h"
#include "pytorch/aten-schemas.h"

#include <string.h>

#define member_object _graft_exported_member_object
#define member_array _graft_exported_member_array
#define member_string _graft_exported_member_string
#define member_int _graft_exported_member_int
#define union_field _graft_exported_union_field

/* PyTorchFileWriter.set_min_version(6) in torch's PT2ArchiveWriter. */
#define PT2_FILE_FORMAT_VERSION 6

typedef struct {
  GraftModel *model;           /* borrowed */
  GraftGraph *graph;           /* borrowed */
  const char *path;
  JsonParser *program_parser;  /* the kept program */
  JsonObject *program;         /* owned by program_parser */
  GHashTable *kept;            /* GraftValue* → JsonObject* (parsed exported_json), owned */
  GHashTable *hints;           /* interned symbol → gint64* size torch saw */
  GHashTable *renamed;         /* name as read → name now */
  GPtrArray *weights;          /* GraftValue* written to data/weights, in order */
  GPtrArray *constants;        /* GraftValue* written to data/constants */
  gboolean inputs_changed;     /* user inputs differ from the example inputs kept */
} Writer;

static gboolean
refuse (GError **error, const Writer *w, const char *format, ...) G_GNUC_PRINTF (3, 4);

static gboolean
refuse (GError **error, const Writer *w, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "cannot save '%s' as torch.export: %s",
               w->path, message);
  return FALSE;
}

static JsonNode *
parse_json (GBytes *bytes)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  gsize len;
  const char *data = g_bytes_get_data (bytes, &len);
  if (!json_parser_load_from_data (parser, data, len, NULL) || json_parser_get_root (parser) == NULL)
    return NULL;
  return json_node_copy (json_parser_get_root (parser));
}

/* The value's exported_json as an object (an empty one when none). */
static JsonObject *
kept_of (Writer *w, GraftValue *value)
{
  JsonObject *kept = g_hash_table_lookup (w->kept, value);
  if (kept != NULL)
    return kept;
  g_autoptr(JsonNode) root = value->exported_json ? parse_json (value->exported_json) : NULL;
  kept = root && JSON_NODE_HOLDS_OBJECT (root) ? json_object_ref (json_node_get_object (root)) : json_object_new ();
  g_hash_table_insert (w->kept, value, kept);
  return kept;
}

/* ------------------------------------------------------------------ symbolic sizes */

static JsonNode *
int_node (gint64 v)
{
  JsonNode *node = json_node_new (JSON_NODE_VALUE);
  json_node_set_int (node, v);
  return node;
}

static JsonNode *
union_node (const char *field, JsonNode *value /* transfer full */)
{
  JsonObject *object = json_object_new ();
  json_object_set_member (object, field, value);
  return json_node_init_object (json_node_alloc (), object);
}

static JsonNode *
symint_fixed (gint64 v)
{
  return union_node ("as_int", int_node (v));
}

/* {"as_expr": {"expr_str": expr, "hint": {"as_int": hint}}}; hint < 0: none. */
static JsonNode *
symint_expr (const char *expr, gint64 hint)
{
  JsonObject *object = json_object_new ();
  json_object_set_string_member (object, "expr_str", expr);
  if (hint >= 0)
    json_object_set_member (object, "hint", symint_fixed (hint));
  return union_node ("as_expr", json_node_init_object (json_node_alloc (), object));
}

static gint64
hint_of (Writer *w, const char *symbol)
{
  gint64 *hint = g_hash_table_lookup (w->hints, symbol);
  return hint ? *hint : -1;
}

static void
record_hint (Writer *w, const char *symbol, gint64 size)
{
  symbol = g_intern_string (symbol);
  if (size >= 0 && !g_hash_table_contains (w->hints, symbol))
    g_hash_table_insert (w->hints, (gpointer) symbol, g_memdup2 (&size, sizeof size));
}

/* A kept SymInt compared with an IR dim. */
static gboolean
symint_matches (JsonNode *node, const GraftDim *dim)
{
  JsonNode *value = NULL;
  const char *field = union_field (node, &value);
  if (field && strcmp (field, "as_int") == 0 && JSON_NODE_HOLDS_VALUE (value))
    return dim->kind == GRAFT_DIM_FIXED && dim->value == json_node_get_int (value);
  if (field && strcmp (field, "as_expr") == 0 && JSON_NODE_HOLDS_OBJECT (value) && dim->kind == GRAFT_DIM_SYMBOLIC)
    {
      const char *expr = member_string (json_node_get_object (value), "expr_str");
      g_autofree char *symbol = expr ? graft_exported_program_normalize_symbol (expr) : NULL;
      return symbol && strcmp (symbol, dim->symbol) == 0;
    }
  return FALSE;
}

/* Sizes torch saw: the hints of kept symbols, and for a dim an edit made
 * symbolic the size it had. */
static void
collect_hints (Writer *w)
{
  for (guint i = 0; i < w->graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (w->graph->values, i);
      JsonObject *meta = member_object (kept_of (w, value), "meta");
      JsonArray *sizes = member_array (meta, "sizes");
      if (sizes == NULL)
        continue;
      for (guint d = 0; d < json_array_get_length (sizes); d++)
        {
          JsonNode *inner = NULL;
          const char *field = union_field (json_array_get_element (sizes, d), &inner);
          if (field && strcmp (field, "as_expr") == 0 && JSON_NODE_HOLDS_OBJECT (inner))
            {
              JsonObject *expr = json_node_get_object (inner);
              JsonNode *hint_value = NULL;
              const char *hint_field = union_field (json_object_get_member (expr, "hint"), &hint_value);
              const char *text = member_string (expr, "expr_str");
              if (text && hint_field && strcmp (hint_field, "as_int") == 0 && JSON_NODE_HOLDS_VALUE (hint_value))
                {
                  g_autofree char *symbol = graft_exported_program_normalize_symbol (text);
                  record_hint (w, symbol, json_node_get_int (hint_value));
                }
            }
          else if (field && strcmp (field, "as_int") == 0 && value->shape.rank == (int) json_array_get_length (sizes) &&
                   value->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC)
            record_hint (w, value->shape.dims[d].symbol, json_node_get_int (inner));
        }
    }
}

/* ------------------------------------------------------------------ tensor metadata */

static gboolean
meta_matches (JsonObject *meta, GraftValue *value)
{
  gint64 code = 0;
  JsonArray *sizes = member_array (meta, "sizes");
  if (sizes == NULL || !member_int (meta, "dtype", &code) || _graft_exported_dtype_from_schema (code) != value->dtype)
    return FALSE;
  if (value->shape.rank != (int) json_array_get_length (sizes))
    return FALSE;
  for (int d = 0; d < value->shape.rank; d++)
    if (!symint_matches (json_array_get_element (sizes, d), &value->shape.dims[d]))
      return FALSE;
  return TRUE;
}

/* Row-major strides of shape as SymInts: a product of sizes, written as
 * a sympy expression ("32*s0") where it holds a symbol. */
static JsonNode *
contiguous_strides (Writer *w, const GraftShape *shape)
{
  JsonArray *strides = json_array_new ();
  g_autoptr(GPtrArray) nodes = g_ptr_array_new ();
  gint64 fixed = 1, hint = 1;
  g_autoptr(GString) symbols = g_string_new (NULL);
  for (int d = shape->rank - 1; d >= 0; d--)
    {
      if (symbols->len == 0)
        g_ptr_array_add (nodes, symint_fixed (fixed));
      else
        {
          g_autofree char *expr = fixed == 1 ? g_strdup (symbols->str + 1)
                                  : g_strdup_printf ("%" G_GINT64_FORMAT "%s", fixed, symbols->str);
          g_ptr_array_add (nodes, symint_expr (expr, hint));
        }
      const GraftDim *dim = &shape->dims[d];
      if (dim->kind == GRAFT_DIM_FIXED)
        {
          fixed *= dim->value;
          if (hint >= 0)
            hint *= dim->value;
        }
      else
        {
          g_string_append_printf (symbols, "*%s", dim->symbol);
          gint64 h = hint_of (w, dim->symbol);
          hint = hint >= 0 && h >= 0 ? hint * h : -1;
        }
    }
  for (guint i = nodes->len; i > 0; i--)
    json_array_add_element (strides, g_ptr_array_index (nodes, i - 1));
  return json_node_init_array (json_node_alloc (), strides);
}

static JsonNode *
tensor_meta_from_ir (Writer *w, GraftValue *value, gboolean requires_grad, GError **error)
{
  gint64 code = _graft_exported_dtype_to_schema (value->dtype);
  if (code < 0 || value->shape.rank < 0)
    {
      refuse (error, w, "value %s has %s, which torch.export cannot describe", value->name,
              code < 0 ? "a dtype" : "no known rank");
      return NULL;
    }
  JsonArray *sizes = json_array_new ();
  for (int d = 0; d < value->shape.rank; d++)
    {
      const GraftDim *dim = &value->shape.dims[d];
      if (dim->kind == GRAFT_DIM_UNKNOWN)
        {
          json_array_unref (sizes);
          refuse (error, w, "value %s has an unknown dim %d; give it a shape first", value->name, d);
          return NULL;
        }
      json_array_add_element (sizes, dim->kind == GRAFT_DIM_FIXED ? symint_fixed (dim->value)
                                                                  : symint_expr (dim->symbol, hint_of (w, dim->symbol)));
    }
  return _graft_exported_tensor_meta (code, sizes, contiguous_strides (w, &value->shape), requires_grad);
}

/* The TensorMeta of value: as read while it still says what the IR says. */
static JsonNode *
tensor_meta_for (Writer *w, GraftValue *value, GError **error)
{
  JsonObject *kept = member_object (kept_of (w, value), "meta");
  if (kept != NULL && member_array (kept, "sizes") != NULL && meta_matches (kept, value))
    return json_node_init_object (json_node_alloc (), json_object_ref (kept));
  /* An intermediate whose shape an edit left unknown keeps what torch saw. */
  if (kept != NULL && member_array (kept, "sizes") != NULL && value->producer != NULL &&
      (value->shape.rank < 0 || !graft_shape_is_fully_fixed (&value->shape)))
    {
      gboolean any_unknown = value->shape.rank < 0;
      for (int d = 0; d < value->shape.rank; d++)
        any_unknown |= value->shape.dims[d].kind == GRAFT_DIM_UNKNOWN;
      if (any_unknown)
        return json_node_init_object (json_node_alloc (), json_object_ref (kept));
    }
  gboolean requires_grad = FALSE;
  if (kept != NULL && json_object_has_member (kept, "requires_grad"))
    requires_grad = json_object_get_boolean_member (kept, "requires_grad");
  return tensor_meta_from_ir (w, value, requires_grad, error);
}

/* ------------------------------------------------------------------ arguments */

static GraftAttribute *
find_attribute (GraftNode *node, const char *name)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (strcmp (attribute->name, name) == 0)
        return attribute;
    }
  return NULL;
}

/* An attribute as the Argument kind the IR type suggests. */
static JsonNode *
argument_from_attribute (const GraftAttribute *attribute)
{
  switch (attribute->type)
    {
    case GRAFT_ATTR_NONE:
      return union_node ("as_none", json_node_init_boolean (json_node_alloc (), TRUE));
    case GRAFT_ATTR_INT:
      return union_node ("as_int", int_node (attribute->i));
    case GRAFT_ATTR_BOOL:
      return union_node ("as_bool", json_node_init_boolean (json_node_alloc (), attribute->i != 0));
    case GRAFT_ATTR_FLOAT:
      return union_node ("as_float", json_node_init_double (json_node_alloc (), attribute->f));
    case GRAFT_ATTR_STRING:
      {
        g_autofree char *text = graft_attribute_dup_string (attribute);
        return union_node ("as_string", json_node_init_string (json_node_alloc (), text));
      }
    case GRAFT_ATTR_INTS:
      {
        JsonArray *items = json_array_new ();
        for (guint i = 0; i < attribute->ints->len; i++)
          json_array_add_int_element (items, g_array_index (attribute->ints, gint64, i));
        return union_node ("as_ints", json_node_init_array (json_node_alloc (), items));
      }
    case GRAFT_ATTR_FLOATS:
      {
        JsonArray *items = json_array_new ();
        for (guint i = 0; i < attribute->floats->len; i++)
          json_array_add_double_element (items, g_array_index (attribute->floats, double, i));
        return union_node ("as_floats", json_node_init_array (json_node_alloc (), items));
      }
    case GRAFT_ATTR_STRINGS:
      {
        JsonArray *items = json_array_new ();
        for (guint i = 0; i < attribute->strings->len; i++)
          {
            gsize len;
            const char *data = g_bytes_get_data (g_ptr_array_index (attribute->strings, i), &len);
            g_autofree char *text = g_strndup (data, len);
            json_array_add_string_element (items, text);
          }
        return union_node ("as_strings", json_node_init_array (json_node_alloc (), items));
      }
    default:
      return NULL;
    }
}

/* The attribute in the Argument kind the program used (field), which
 * the IR folded into its attribute types; original is the Argument read. */
static JsonNode *
argument_as_read (const GraftAttribute *attribute, const char *field, JsonNode *original)
{
  JsonNode *inner = NULL;
  union_field (original, &inner);
  gboolean is_int = attribute->type == GRAFT_ATTR_INT || attribute->type == GRAFT_ATTR_BOOL;
  if ((strcmp (field, "as_memory_format") == 0 || strcmp (field, "as_layout") == 0) && is_int)
    return union_node (field, int_node (attribute->i));
  if (strcmp (field, "as_scalar_type") == 0 && is_int)
    return union_node (field, int_node (_graft_exported_c10_scalar_type_to_schema (attribute->i)));
  if (strcmp (field, "as_bool") == 0 && is_int)
    return union_node (field, json_node_init_boolean (json_node_alloc (), attribute->i != 0));
  if (strcmp (field, "as_float") == 0 && attribute->type == GRAFT_ATTR_INT)
    return union_node (field, json_node_init_double (json_node_alloc (), (double) attribute->i));
  if (strcmp (field, "as_operator") == 0 && attribute->type == GRAFT_ATTR_STRING)
    {
      g_autofree char *text = graft_attribute_dup_string (attribute);
      return union_node (field, json_node_init_string (json_node_alloc (), text));
    }
  if (strcmp (field, "as_device") == 0 && attribute->type == GRAFT_ATTR_STRING)
    {
      g_autofree char *text = graft_attribute_dup_string (attribute);
      const char *type = inner && JSON_NODE_HOLDS_OBJECT (inner) ? member_string (json_node_get_object (inner), "type")
                                                                  : NULL;
      if (g_strcmp0 (type, text) == 0)
        return json_node_copy (original);
      JsonObject *device = json_object_new ();
      json_object_set_string_member (device, "type", text);
      json_object_set_null_member (device, "index");
      return union_node (field, json_node_init_object (json_node_alloc (), device));
    }
  if ((strcmp (field, "as_bools") == 0) && attribute->type == GRAFT_ATTR_INTS)
    {
      JsonArray *items = json_array_new ();
      for (guint i = 0; i < attribute->ints->len; i++)
        json_array_add_boolean_element (items, g_array_index (attribute->ints, gint64, i) != 0);
      return union_node (field, json_node_init_array (json_node_alloc (), items));
    }
  if ((strcmp (field, "as_sym_ints") == 0) && attribute->type == GRAFT_ATTR_INTS)
    {
      JsonArray *items = json_array_new ();
      for (guint i = 0; i < attribute->ints->len; i++)
        json_array_add_element (items, symint_fixed (g_array_index (attribute->ints, gint64, i)));
      return union_node (field, json_node_init_array (json_node_alloc (), items));
    }
  /* A symbolic argument torch resolved to a constant: {"as_sym_int": {"as_int": 3}}. */
  if ((strcmp (field, "as_sym_int") == 0 || strcmp (field, "as_sym_float") == 0 || strcmp (field, "as_sym_bool") == 0)
      && attribute->type != GRAFT_ATTR_STRING)
    {
      g_autoptr(JsonNode) plain = argument_from_attribute (attribute);
      JsonNode *plain_value = NULL;
      const char *plain_field = union_field (plain, &plain_value);
      return union_node (field, union_node (plain_field, json_node_copy (plain_value)));
    }
  /* as_graph, as_custom_obj…: the IR shows them as text; they cannot change. */
  if (attribute->type == GRAFT_ATTR_STRING && strcmp (field, "as_string") != 0)
    return json_node_copy (original);
  return argument_from_attribute (attribute);
}

/* json_node_copy() shares objects and arrays: edits of a copy would
 * reach the original. */
static JsonNode *
deep_copy (JsonNode *node)
{
  if (JSON_NODE_HOLDS_OBJECT (node))
    {
      JsonObject *object = json_node_get_object (node), *copy = json_object_new ();
      g_autoptr(GList) members = json_object_get_members (object);
      for (GList *l = members; l; l = l->next)
        json_object_set_member (copy, l->data, deep_copy (json_object_get_member (object, l->data)));
      return json_node_init_object (json_node_alloc (), copy);
    }
  if (JSON_NODE_HOLDS_ARRAY (node))
    {
      JsonArray *array = json_node_get_array (node), *copy = json_array_new ();
      for (guint i = 0; i < json_array_get_length (array); i++)
        json_array_add_element (copy, deep_copy (json_array_get_element (array, i)));
      return json_node_init_array (json_node_alloc (), copy);
    }
  return json_node_copy (node);
}

/* Arguments that name a value: as_tensor {name}, as_sym_int {as_name}… */
static gboolean
names_value (JsonNode *argument)
{
  JsonNode *inner = NULL;
  const char *field = union_field (argument, &inner);
  if (field == NULL)
    return FALSE;
  if (strcmp (field, "as_name") == 0)
    return TRUE;
  /* a GraphArgument's name is its submodule's, not a value's */
  if (inner == NULL || !JSON_NODE_HOLDS_OBJECT (inner) || strcmp (field, "as_graph") == 0)
    return FALSE;
  return json_object_has_member (json_node_get_object (inner), "name") ||
         json_object_has_member (json_node_get_object (inner), "as_name");
}

/* original with the value name replaced. */
static JsonNode *
argument_naming (JsonNode *original, const char *name)
{
  JsonNode *copy = deep_copy (original);
  JsonNode *inner = NULL;
  const char *field = union_field (copy, &inner);
  if (strcmp (field, "as_name") == 0)
    json_node_set_string (inner, name);
  else
    {
      JsonObject *object = json_node_get_object (inner);
      json_object_set_string_member (object, json_object_has_member (object, "as_name") ? "as_name" : "name", name);
    }
  return copy;
}

typedef struct {
  GraftNode *node;
  guint next_input;
} Cursor;

static JsonNode *write_argument (Writer *w, Cursor *cursor, JsonNode *original, const char *attribute_name,
                                 GError **error);

static JsonNode *
next_value_argument (Writer *w, Cursor *cursor, JsonNode *original, const char *what, GError **error)
{
  if (cursor->next_input >= cursor->node->inputs->len)
    {
      refuse (error, w, "node %s lost its argument %s", cursor->node->name, what);
      return NULL;
    }
  GraftValue *value = g_ptr_array_index (cursor->node->inputs, cursor->next_input++);
  if (value == NULL)
    {
      refuse (error, w, "node %s: argument %s has no value", cursor->node->name, what);
      return NULL;
    }
  return argument_naming (original, value->name);
}

/* A list argument the reader turned into a prim::ListConstruct: its items
 * come back from that node, in the kinds the list had. */
static JsonNode *
write_list (Writer *w, Cursor *cursor, JsonNode *original, const char *field, JsonNode *items_node,
            const char *what, GError **error)
{
  if (cursor->next_input >= cursor->node->inputs->len)
    {
      refuse (error, w, "node %s lost its list argument %s", cursor->node->name, what);
      return NULL;
    }
  GraftValue *list_value = g_ptr_array_index (cursor->node->inputs, cursor->next_input++);
  GraftNode *list = list_value ? list_value->producer : NULL;
  if (list == NULL || strcmp (list->op, "prim::ListConstruct") != 0)
    {
      refuse (error, w, "node %s: list argument %s no longer comes from its list", cursor->node->name, what);
      return NULL;
    }
  JsonArray *items = json_node_get_array (items_node);
  JsonArray *written = json_array_new ();
  Cursor inner = { list, 0 };
  for (guint i = 0; i < json_array_get_length (items); i++)
    {
      JsonNode *item = json_array_get_element (items, i);
      g_autofree char *item_name = g_strdup_printf ("arg%u", i);
      JsonNode *out = NULL;
      if (strcmp (field, "as_tensors") == 0)
        {
          GraftValue *value = inner.next_input < list->inputs->len ? g_ptr_array_index (list->inputs, inner.next_input++)
                                                                   : NULL;
          if (value == NULL)
            {
              json_array_unref (written);
              refuse (error, w, "node %s: %s[%u] has no value", cursor->node->name, what, i);
              return NULL;
            }
          JsonObject *object = json_object_new ();
          json_object_set_string_member (object, "name", value->name);
          out = json_node_init_object (json_node_alloc (), object);
        }
      else if (strcmp (field, "as_optional_tensors") == 0)
        {
          JsonNode *inner_value = NULL;
          const char *kind = union_field (item, &inner_value);
          out = kind && strcmp (kind, "as_tensor") == 0 ? next_value_argument (w, &inner, item, what, error)
                                                        : json_node_copy (item);
        }
      else
        out = write_argument (w, &inner, item, item_name, error);
      if (out == NULL)
        {
          json_array_unref (written);
          return NULL;
        }
      json_array_add_element (written, out);
    }
  if (inner.next_input != list->inputs->len)
    {
      json_array_unref (written);
      refuse (error, w, "node %s: list %s has items Graft cannot place", cursor->node->name, what);
      return NULL;
    }
  return union_node (field, json_node_init_array (json_node_alloc (), written));
}

/* A size torch.export specialized and make-dim-dynamic freed
 * (edit/unspecialize.c): an int that became an input naming sym_size, or
 * an int list that became a prim::ListConstruct of constants ("argN"
 * attributes) and sym_size, written as torch writes SymInts. */
static JsonNode *
write_symbolic_size (Writer *w, Cursor *cursor, const char *field, const char *what, GError **error)
{
  GraftValue *value = g_ptr_array_index (cursor->node->inputs, cursor->next_input++);
  if (value == NULL)
    {
      refuse (error, w, "node %s: argument %s has no value", cursor->node->name, what);
      return NULL;
    }
  if (strcmp (field, "as_int") == 0)
    {
      JsonObject *named = json_object_new ();
      json_object_set_string_member (named, "as_name", value->name);
      return union_node ("as_sym_int", json_node_init_object (json_node_alloc (), named));
    }
  GraftNode *list = value->producer;
  if (list == NULL || strcmp (list->op, "prim::ListConstruct") != 0)
    {
      refuse (error, w, "node %s: list argument %s no longer comes from its list", cursor->node->name, what);
      return NULL;
    }
  JsonArray *items = json_array_new ();
  guint next = 0;
  for (guint i = 0; i < list->attributes->len + list->inputs->len; i++)
    {
      g_autofree char *item_name = g_strdup_printf ("arg%u", i);
      GraftAttribute *constant = find_attribute (list, item_name);
      JsonObject *item = json_object_new ();
      if (constant != NULL && constant->type == GRAFT_ATTR_INT)
        json_object_set_int_member (item, "as_int", constant->i);
      else if (constant == NULL && next < list->inputs->len && g_ptr_array_index (list->inputs, next) != NULL)
        json_object_set_string_member (item, "as_name", ((GraftValue *) g_ptr_array_index (list->inputs, next++))->name);
      else
        {
          json_object_unref (item);
          json_array_unref (items);
          refuse (error, w, "node %s: item %u of list %s is neither a constant nor a size", cursor->node->name, i, what);
          return NULL;
        }
      json_array_add_object_element (items, item);
    }
  return union_node ("as_sym_ints", json_node_init_array (json_node_alloc (), items));
}

static JsonNode *
write_argument (Writer *w, Cursor *cursor, JsonNode *original, const char *attribute_name, GError **error)
{
  JsonNode *inner = NULL;
  const char *field = union_field (original, &inner);
  if (field == NULL)
    {
      refuse (error, w, "node %s: argument %s as read is no Argument", cursor->node->name, attribute_name);
      return NULL;
    }
  if (names_value (original))
    return next_value_argument (w, cursor, original, attribute_name, error);
  GraftAttribute *attribute = find_attribute (cursor->node, attribute_name);
  gboolean is_list = inner && JSON_NODE_HOLDS_ARRAY (inner) &&
                     (strcmp (field, "as_sym_ints") == 0 || strcmp (field, "as_tensors") == 0 ||
                      strcmp (field, "as_optional_tensors") == 0 || strcmp (field, "as_sym_bools") == 0 ||
                      strcmp (field, "as_sym_floats") == 0);
  if (is_list && attribute == NULL)
    return write_list (w, cursor, original, field, inner, attribute_name, error);
  if (attribute == NULL && cursor->next_input < cursor->node->inputs->len
      && (strcmp (field, "as_ints") == 0 || strcmp (field, "as_int") == 0))
    return write_symbolic_size (w, cursor, field, attribute_name, error);
  if (attribute == NULL)
    {
      refuse (error, w, "node %s lost its argument %s", cursor->node->name, attribute_name);
      return NULL;
    }
  if (strcmp (field, "as_none") == 0 && attribute->type == GRAFT_ATTR_NONE)
    return json_node_copy (original);
  JsonNode *written = argument_as_read (attribute, field, original);
  if (written == NULL)
    refuse (error, w, "node %s: argument %s is a %s, which torch.export has no argument for", cursor->node->name,
            attribute_name, graft_attr_type_to_string (attribute->type));
  return written;
}

/* ------------------------------------------------------------------ nodes */

static JsonNode *
write_outputs (Writer *w, GraftNode *node, JsonArray *outputs, GError **error)
{
  JsonArray *written = json_array_new ();
  guint next = 0;
  for (guint i = 0; outputs && i < json_array_get_length (outputs); i++)
    {
      JsonNode *original = json_array_get_element (outputs, i);
      JsonNode *inner = NULL;
      const char *field = union_field (original, &inner);
      if (field && strcmp (field, "as_tensors") == 0 && inner && JSON_NODE_HOLDS_ARRAY (inner))
        {
          JsonArray *items = json_array_new ();
          for (guint k = 0; k < json_array_get_length (json_node_get_array (inner)); k++)
            {
              GraftValue *value = next < node->outputs->len ? g_ptr_array_index (node->outputs, next) : NULL;
              next++;
              JsonNode *item = json_node_copy (json_array_get_element (json_node_get_array (inner), k));
              if (value != NULL && JSON_NODE_HOLDS_OBJECT (item))
                json_object_set_string_member (json_node_get_object (item), "name", value->name);
              json_array_add_element (items, item);
            }
          json_array_add_element (written, union_node (field, json_node_init_array (json_node_alloc (), items)));
          continue;
        }
      GraftValue *value = next < node->outputs->len ? g_ptr_array_index (node->outputs, next) : NULL;
      next++;
      json_array_add_element (written, value && names_value (original) ? argument_naming (original, value->name)
                                                                       : json_node_copy (original));
    }
  if (next != node->outputs->len)
    {
      json_array_unref (written);
      refuse (error, w, "node %s has %u outputs where torch.export had %u", node->name, node->outputs->len, next);
      return NULL;
    }
  return json_node_init_array (json_node_alloc (), written);
}

/* The op a node written with target has when read back ("aten::relu"). */
static char *
op_of_target (const char *target)
{
  g_autofree char *domain = NULL, *op = NULL, *overload = NULL;

  if (target == NULL)
    return NULL;
  _graft_exported_split_target (target, &domain, &op, &overload);
  return g_strconcat (domain, "::", op, NULL);
}

/* A constant argument of a node an edit made, in the Argument kind its
 * schema type (TorchScript's spelling: int, float, List[int], number…)
 * and name ask for. */
static JsonNode *
argument_for_schema (const GraftAttribute *attribute, const GraftAtenArgument *argument)
{
  const char *type = argument->type;
  gboolean is_int = attribute->type == GRAFT_ATTR_INT || attribute->type == GRAFT_ATTR_BOOL;

  if (g_str_has_prefix (type, "Optional[") && attribute->type == GRAFT_ATTR_NONE)
    return union_node ("as_none", json_node_init_boolean (json_node_alloc (), TRUE));
  if (g_str_has_prefix (type, "Optional["))
    type += strlen ("Optional[");
  if (g_str_has_prefix (type, "float") && is_int)
    return argument_as_read (attribute, "as_float", NULL);
  if (g_str_has_prefix (type, "bool") && is_int)
    return argument_as_read (attribute, "as_bool", NULL);
  if (g_str_has_prefix (type, "int") && is_int && strcmp (argument->name, "dtype") == 0)
    return argument_as_read (attribute, "as_scalar_type", NULL);
  if (g_str_has_prefix (type, "int") && is_int && strcmp (argument->name, "memory_format") == 0)
    return argument_as_read (attribute, "as_memory_format", NULL);
  if (g_str_has_prefix (type, "List[bool]") && attribute->type == GRAFT_ATTR_INTS)
    return argument_as_read (attribute, "as_bools", NULL);
  if (g_str_has_prefix (type, "Device") && attribute->type == GRAFT_ATTR_STRING)
    return argument_as_read (attribute, "as_device", NULL);
  return argument_from_attribute (attribute);
}

/* A node whose operator an edit chose (inserted, added, or given another
 * op): its call is bound to an overload of the aten schema table as the
 * TorchScript reader binds calls, and written as torch.export writes one.
 * The IR holds positional constants as "argK" attributes and keyword
 * ones under their names; values fill the other positions in order. */
static gboolean
write_call_by_schema (Writer *w, GraftNode *node, JsonObject *written, GError **error)
{
  g_auto(GraftAtenCall) call = { 0 };
  const char *problem = NULL;

  if (!g_str_has_prefix (node->op, "aten::"))
    return refuse (error, w, "node %s (%s): only aten operators can be written into a torch.export program",
                   node->name, node->op);
  if (!graft_aten_call_bind (node, &call, &problem))
    return refuse (error, w, "node %s (%s): %s", node->name, node->op, problem);
  for (guint k = 0; k < call.n; k++)
    if (call.is_value[k] && call.sources[k] == NULL)
      return refuse (error, w, "node %s: argument %u has no value", node->name, k);
  const GraftAtenSchema *schema = call.schema;
  guint n = call.n;
  if (node->outputs->len != 1)
    return refuse (error, w, "node %s (%s) has %u outputs; Graft writes new nodes with one", node->name, node->op,
                   node->outputs->len);

  g_autofree char *target = g_strdup_printf ("torch.ops.aten.%s.%s", node->op + strlen ("aten::"),
                                             schema->overload[0] ? schema->overload : "default");
  json_object_set_string_member (written, "target", target);
  JsonArray *arguments = json_array_new ();
  json_object_set_array_member (written, "inputs", arguments);
  for (guint k = 0; k < n; k++)
    {
      const GraftAtenArgument *argument = &schema->arguments[call.bound[k]];
      JsonNode *arg;
      if (call.is_value[k])
        {
          if (g_str_has_prefix (argument->type, "List[") || g_str_has_prefix (argument->type, "Optional[List["))
            return refuse (error, w, "node %s: argument %s is a list of tensors, which Graft cannot write for a "
                           "new node", node->name, argument->name);
          JsonObject *tensor = json_object_new ();
          json_object_set_string_member (tensor, "name", ((GraftValue *) call.sources[k])->name);
          arg = union_node ("as_tensor", json_node_init_object (json_node_alloc (), tensor));
        }
      else if ((arg = argument_for_schema (call.sources[k], argument)) == NULL)
        return refuse (error, w, "node %s: argument %s is a %s, which torch.export has no argument for", node->name,
                       argument->name, graft_attr_type_to_string (((GraftAttribute *) call.sources[k])->type));
      JsonObject *out = json_object_new ();
      json_object_set_string_member (out, "name", argument->name);
      json_object_set_member (out, "arg", arg);
      json_object_set_int_member (out, "kind", argument->kwarg_only ? 2 : 1);
      json_array_add_object_element (arguments, out);
    }
  JsonArray *outputs = json_array_new ();
  JsonObject *tensor = json_object_new ();
  json_object_set_string_member (tensor, "name", ((GraftValue *) g_ptr_array_index (node->outputs, 0))->name);
  json_array_add_element (outputs, union_node ("as_tensor", json_node_init_object (json_node_alloc (), tensor)));
  json_object_set_array_member (written, "outputs", outputs);
  return TRUE;
}

static void
write_node_metadata (GraftNode *node, JsonObject *written)
{
  JsonObject *metadata = json_object_new ();
  for (guint i = 0; i < graft_node_get_n_metadata (node); i++)
    json_object_set_string_member (metadata, g_ptr_array_index (node->metadata_keys, i),
                                   g_ptr_array_index (node->metadata_values, i));
  json_object_set_object_member (written, "metadata", metadata);
  json_object_set_string_member (written, "name", node->name);
}

static JsonNode *
write_node (Writer *w, GraftNode *node, GError **error)
{
  g_autoptr(JsonNode) read = node->exported_json ? parse_json (node->exported_json) : NULL;
  JsonObject *original = read != NULL && JSON_NODE_HOLDS_OBJECT (read) ? json_node_get_object (read) : NULL;
  g_autofree char *op_as_read = original ? op_of_target (member_string (original, "target")) : NULL;
  if (original == NULL || g_strcmp0 (op_as_read, node->op) != 0)
    {
      JsonObject *made = json_object_new ();
      g_autoptr(JsonNode) result = json_node_init_object (json_node_alloc (), made);
      if (!write_call_by_schema (w, node, made, error))
        return NULL;
      write_node_metadata (node, made);
      return g_steal_pointer (&result);
    }
  JsonArray *inputs = member_array (original, "inputs");
  JsonObject *written = json_object_new ();
  g_autoptr(JsonNode) result = json_node_init_object (json_node_alloc (), written);
  json_object_set_string_member (written, "target", member_string (original, "target"));

  JsonArray *arguments = json_array_new ();
  json_object_set_array_member (written, "inputs", arguments);
  Cursor cursor = { node, 0 };
  for (guint k = 0; inputs && k < json_array_get_length (inputs); k++)
    {
      JsonObject *named = json_array_get_object_element (inputs, k);
      gint64 kind = 1;
      member_int (named, "kind", &kind);
      const char *keyword = member_string (named, "name");
      g_autofree char *attribute_name = kind == 2 && keyword ? g_strdup (keyword) : g_strdup_printf ("arg%u", k);
      JsonNode *argument = write_argument (w, &cursor, json_object_get_member (named, "arg"), attribute_name, error);
      if (argument == NULL)
        return NULL;
      JsonObject *out = json_object_new ();
      if (keyword)
        json_object_set_string_member (out, "name", keyword);
      json_object_set_member (out, "arg", argument);
      json_object_set_int_member (out, "kind", kind);
      json_array_add_object_element (arguments, out);
    }
  if (cursor.next_input != node->inputs->len)
    {
      refuse (error, w, "node %s has %u inputs where torch.export had %u", node->name, node->inputs->len,
              cursor.next_input);
      return NULL;
    }
  JsonNode *outputs = write_outputs (w, node, member_array (original, "outputs"), error);
  if (outputs == NULL)
    return NULL;
  json_object_set_member (written, "outputs", outputs);
  if (json_object_has_member (original, "is_hop_single_tensor_return"))
    json_object_set_member (written, "is_hop_single_tensor_return",
                            json_node_copy (json_object_get_member (original, "is_hop_single_tensor_return")));
  write_node_metadata (node, written);
  return g_steal_pointer (&result);
}

/* ------------------------------------------------------------------ signature */

/* The value that carries spec number index of list ("input_index",
 * "output_index") in its kept JSON. */
static GHashTable *
values_by_spec_index (Writer *w, const char *spec_key)
{
  GHashTable *by_index = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < w->graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (w->graph->values, i);
      gint64 index;
      if (member_int (kept_of (w, value), spec_key, &index))
        g_hash_table_insert (by_index, GINT_TO_POINTER (index + 1), value);
    }
  return by_index;
}

static gboolean
is_live (GraftValue *value)
{
  return value->is_graph_input || value->is_graph_output || value->initializer != NULL || value->producer != NULL ||
         value->consumers->len > 0;
}

/* The argument a spec names ("arg" of a parameter, "arg" → as_tensor of a
 * user input) renamed to value's name; the old name is remembered for
 * module_call_graph. */
static JsonNode *
rename_spec (Writer *w, JsonNode *spec, GraftValue *value)
{
  JsonNode *copy = deep_copy (spec);
  JsonNode *inner = NULL;
  union_field (copy, &inner);
  JsonObject *body = inner && JSON_NODE_HOLDS_OBJECT (inner) ? json_node_get_object (inner) : NULL;
  JsonNode *arg = body ? json_object_get_member (body, "arg") : NULL;
  if (arg && JSON_NODE_HOLDS_OBJECT (arg))
    {
      JsonObject *arg_object = json_node_get_object (arg);
      JsonNode *arg_inner = NULL;
      const char *arg_field = json_object_has_member (arg_object, "name") ? NULL : union_field (arg, &arg_inner);
      JsonObject *named = arg_field && arg_inner && JSON_NODE_HOLDS_OBJECT (arg_inner) ? json_node_get_object (arg_inner)
                                                                                        : arg_object;
      const char *old = member_string (named, "name");
      if (old && strcmp (old, value->name) != 0)
        g_hash_table_insert (w->renamed, g_strdup (old), g_strdup (value->name));
      if (json_object_has_member (named, "name"))
        json_object_set_string_member (named, "name", value->name);
    }
  return copy;
}

static JsonNode *
tensor_argument (const char *name)
{
  JsonObject *object = json_object_new ();
  json_object_set_string_member (object, "name", name);
  return union_node ("as_tensor", json_node_init_object (json_node_alloc (), object));
}

static JsonNode *
new_user_spec (const char *kind, const char *name)
{
  JsonObject *body = json_object_new ();
  json_object_set_member (body, "arg", tensor_argument (name));
  return union_node (kind, json_node_init_object (json_node_alloc (), body));
}

/* The spec's kind ("parameter") and what it describes. */
static const char *
spec_kind (JsonNode *spec, JsonObject **body)
{
  JsonNode *inner = NULL;
  const char *kind = union_field (spec, &inner);
  *body = inner && JSON_NODE_HOLDS_OBJECT (inner) ? json_node_get_object (inner) : NULL;
  return kind;
}

/* The position of the last spec of kind, after which edits' new inputs
 * or outputs go; -1 when none. */
static gint
last_of_kind (JsonArray *specs, const char *kind)
{
  gint last = -1;
  for (guint i = 0; specs && i < json_array_get_length (specs); i++)
    {
      JsonObject *body = NULL;
      if (g_strcmp0 (spec_kind (json_array_get_element (specs, i), &body), kind) == 0)
        last = i;
    }
  return last;
}

/* Graph inputs (or outputs) an edit added, as user_input (user_output)
 * specs; initializers are no user inputs. */
static void
append_new_user_specs (GPtrArray *graph_values, GHashTable *written, const char *kind, JsonArray *specs,
                       JsonArray *arguments)
{
  for (guint k = 0; k < graph_values->len; k++)
    {
      GraftValue *value = g_ptr_array_index (graph_values, k);
      if (value->initializer != NULL || g_hash_table_contains (written, value))
        continue;
      json_array_add_element (specs, new_user_spec (kind, value->name));
      json_array_add_element (arguments, tensor_argument (value->name));
      g_hash_table_add (written, value);
    }
}

/* Sorts a weight written for an input spec into the state dict or the
 * constants, as torch keeps them apart. */
static void
classify_weight (Writer *w, GraftValue *value, const char *kind, JsonObject *body)
{
  if (value->initializer == NULL)
    return;
  if (g_strcmp0 (kind, "parameter") == 0)
    g_ptr_array_add (w->weights, value);
  else if (g_strcmp0 (kind, "buffer") == 0)
    {
      gboolean persistent = !json_object_has_member (body, "persistent") ||
                            json_object_get_boolean_member (body, "persistent");
      g_ptr_array_add (persistent ? w->weights : w->constants, value);
    }
  else if (g_strcmp0 (kind, "tensor_constant") == 0)
    g_ptr_array_add (w->constants, value);
}

/* The signature's input specs (input) or output specs, with the graph's
 * inputs or outputs beside them, in the order read: specs whose value is
 * gone are dropped, values renamed since follow, and graph inputs/outputs
 * an edit added come after the last user one. */
static gboolean
write_specs (Writer *w, gboolean input, JsonArray *original_specs, JsonArray *original_arguments, JsonArray *specs,
             JsonArray *arguments, GError **error)
{
  const char *user_kind = input ? "user_input" : "user_output";
  g_autoptr(GHashTable) by_index = values_by_spec_index (w, input ? "input_index" : "output_index");
  g_autoptr(GHashTable) written = g_hash_table_new (NULL, NULL);
  gint last_user = last_of_kind (original_specs, user_kind);
  for (guint i = 0; original_specs && i < json_array_get_length (original_specs); i++)
    {
      JsonNode *spec = json_array_get_element (original_specs, i);
      JsonNode *argument = original_arguments && i < json_array_get_length (original_arguments)
                           ? json_array_get_element (original_arguments, i) : NULL;
      GraftValue *value = g_hash_table_lookup (by_index, GINT_TO_POINTER (i + 1));
      JsonObject *body = NULL;
      const char *kind = spec_kind (spec, &body);
      gboolean user = g_strcmp0 (kind, user_kind) == 0;
      gboolean still_user = value && (input ? value->is_graph_input : value->is_graph_output);
      if (value == NULL && argument && !names_value (argument))
        {
          /* A constant torch specialised (an int, None, a constant_input
           * keyword). */
          json_array_add_element (specs, json_node_copy (spec));
          json_array_add_element (arguments, json_node_copy (argument));
        }
      else if (value != NULL && is_live (value) && (!user || still_user) && !g_hash_table_contains (written, value))
        {
          if (g_strcmp0 (kind, "custom_obj") == 0)
            return refuse (error, w, "input %s is a custom object, which Graft does not save", value->name);
          json_array_add_element (specs, rename_spec (w, spec, value));
          json_array_add_element (arguments, argument && names_value (argument) ? argument_naming (argument, value->name)
                                                                                : tensor_argument (value->name));
          g_hash_table_add (written, value);
          if (input)
            classify_weight (w, value, kind, body);
        }
      else if (user && input)
        w->inputs_changed = TRUE;
      if ((gint) i == last_user)
        {
          guint before = json_array_get_length (specs);
          append_new_user_specs (input ? w->graph->inputs : w->graph->outputs, written, user_kind, specs, arguments);
          if (input && json_array_get_length (specs) != before)
            w->inputs_changed = TRUE;
        }
    }
  return TRUE;
}

/* ------------------------------------------------------------------ values, ranges */

static gboolean
write_values (Writer *w, JsonObject *graph, GError **error)
{
  const char *tables[] = { "tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values" };
  JsonObject *objects[G_N_ELEMENTS (tables)];
  for (guint t = 0; t < G_N_ELEMENTS (tables); t++)
    {
      objects[t] = json_object_new ();
      json_object_set_object_member (graph, tables[t], objects[t]);
    }
  for (guint i = 0; i < w->graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (w->graph->values, i);
      if (!is_live (value) || value->kind == GRAFT_VALUE_SEQUENCE || value->kind == GRAFT_VALUE_OBJECT)
        continue;
      JsonObject *kept = kept_of (w, value);
      const char *table = member_string (kept, "table");
      if (table != NULL)
        {
          for (guint t = 1; t < G_N_ELEMENTS (tables); t++)
            if (strcmp (table, tables[t]) == 0 && json_object_has_member (kept, "meta"))
              json_object_set_member (objects[t], value->name, json_node_copy (json_object_get_member (kept, "meta")));
          continue;
        }
      if (value->kind != GRAFT_VALUE_TENSOR)
        continue;
      JsonNode *meta = tensor_meta_for (w, value, error);
      if (meta == NULL)
        return FALSE;
      json_object_set_member (objects[0], value->name, meta);
    }
  return TRUE;
}

/* The model's ranges; a symbol whose range is still the one read keeps
 * torch's entry (its unbounded minimum of an unbacked symbol included). */
static JsonObject *
write_ranges (Writer *w, JsonObject *original)
{
  JsonObject *ranges = json_object_new ();
  g_autoptr(GPtrArray) symbols = graft_model_list_dim_ranges (w->model);
  g_autoptr(GList) keys = original ? json_object_get_members (original) : NULL;
  for (guint i = 0; i < symbols->len; i++)
    {
      const char *symbol = g_ptr_array_index (symbols, i);
      gint64 min = 0, max = -1;
      graft_model_get_dim_range (w->model, symbol, &min, &max);
      JsonNode *kept = NULL;
      const char *key = symbol;
      for (GList *l = keys; l && kept == NULL; l = l->next)
        {
          g_autofree char *normalized = graft_exported_program_normalize_symbol (l->data);
          JsonObject *range = member_object (original, l->data);
          gint64 kept_min = 0, kept_max = -1;
          member_int (range, "min_val", &kept_min);
          if (!member_int (range, "max_val", &kept_max))
            kept_max = -1;
          if (strcmp (normalized, symbol) == 0 && MAX (kept_min, 0) == min && kept_max == max)
            kept = json_object_get_member (original, l->data), key = l->data;
        }
      json_object_set_member (ranges, key, kept ? json_node_copy (kept) : _graft_exported_range_node (min, max));
    }
  return ranges;
}

/* A symbol an edit brought in (make-dim-dynamic) has no range yet:
 * torch needs one for every symbol of the graph's sizes. It gets
 * [1, ∞), the sizes Graft's proof runs at. */
static void
add_missing_ranges (Writer *w, JsonObject *tensor_values, JsonObject *ranges)
{
  g_autoptr(GList) names = tensor_values ? json_object_get_members (tensor_values) : NULL;
  for (GList *l = names; l; l = l->next)
    {
      JsonArray *sizes = member_array (member_object (tensor_values, l->data), "sizes");
      for (guint d = 0; sizes && d < json_array_get_length (sizes); d++)
        {
          JsonNode *inner = NULL;
          const char *field = union_field (json_array_get_element (sizes, d), &inner);
          const char *expr = field && strcmp (field, "as_expr") == 0 && JSON_NODE_HOLDS_OBJECT (inner)
                             ? member_string (json_node_get_object (inner), "expr_str") : NULL;
          gboolean plain = expr != NULL && g_ascii_isalpha (*expr);
          for (const char *c = expr; plain && *c; c++)
            plain = g_ascii_isalnum (*c) || *c == '_';
          if (plain && !json_object_has_member (ranges, expr))
            {
              gint64 min, max;
              if (!graft_model_get_dim_range (w->model, expr, &min, &max))
                min = 1, max = -1;
              json_object_set_member (ranges, expr, _graft_exported_range_node (min, max));
            }
        }
    }
}

static guint
count_user_outputs (JsonArray *specs)
{
  guint n = 0;
  for (guint i = 0; specs && i < json_array_get_length (specs); i++)
    {
      JsonObject *body = NULL;
      n += g_strcmp0 (spec_kind (json_array_get_element (specs, i), &body), "user_output") == 0;
    }
  return n;
}

/* ep.module() rebuilds its return value from the out_spec treespec of
 * the root module call: outputs an edit added come after the program's
 * own, in a tuple; outputs removed from a flat tuple leave it. */
static gboolean
update_out_spec (Writer *w, guint before, JsonArray *written_specs, JsonArray *module_call_graph, GError **error)
{
  guint after = count_user_outputs (written_specs);
  JsonObject *root_call = module_call_graph && json_array_get_length (module_call_graph) > 0
                          ? json_array_get_object_element (module_call_graph, 0) : NULL;
  JsonObject *signature = member_object (root_call, "signature");
  const char *text = member_string (signature, "out_spec");
  if (before == after || text == NULL)
    return TRUE;
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonNode *root = json_parser_load_from_data (parser, text, -1, NULL) ? json_parser_get_root (parser) : NULL;
  JsonArray *versioned = root && JSON_NODE_HOLDS_ARRAY (root) ? json_node_get_array (root) : NULL;
  JsonNode *spec = versioned && json_array_get_length (versioned) == 2 ? json_array_get_element (versioned, 1) : NULL;
  JsonObject *spec_object = spec && JSON_NODE_HOLDS_OBJECT (spec) ? json_node_get_object (spec) : NULL;
  if (spec_object == NULL)
    return refuse (error, w, "the program's out_spec is not a treespec Graft reads");
  gboolean tuple = g_strcmp0 (member_string (spec_object, "type"), "builtins.tuple") == 0;
  JsonArray *children = tuple ? member_array (spec_object, "children_spec") : NULL;
  gboolean flat = tuple && children != NULL;
  for (guint i = 0; flat && i < json_array_get_length (children); i++)
    flat = json_array_get_length (member_array (json_array_get_object_element (children, i), "children_spec")) == 0;
  if (after < before && !flat)
    return refuse (error, w, "removing an output of a program that returns a %s is not supported; remove it from "
                   "a program returning a flat tuple", tuple ? "nested tuple" : "structure");
  JsonNode *new_spec;
  if (flat)
    {
      JsonArray *leaves = json_array_new ();
      for (guint i = 0; i < after; i++)
        json_array_add_element (leaves, _graft_exported_treespec_leaf ());
      json_object_set_array_member (spec_object, "children_spec", leaves);
      new_spec = json_node_copy (spec);
    }
  else
    {
      /* (what the program returned, added output, …) */
      JsonObject *wrapper = json_object_new ();
      JsonArray *items = json_array_new ();
      json_array_add_element (items, json_node_copy (spec));
      for (guint i = before; i < after; i++)
        json_array_add_element (items, _graft_exported_treespec_leaf ());
      json_object_set_string_member (wrapper, "type", "builtins.tuple");
      json_object_set_string_member (wrapper, "context", "null");
      json_object_set_array_member (wrapper, "children_spec", items);
      new_spec = json_node_init_object (json_node_alloc (), wrapper);
    }
  JsonArray *out = json_array_new ();
  json_array_add_element (out, json_node_copy (json_array_get_element (versioned, 0)));
  json_array_add_element (out, new_spec);
  g_autoptr(JsonNode) out_node = json_node_init_array (json_node_alloc (), out);
  g_autofree char *out_text = json_to_string (out_node, FALSE);
  json_object_set_string_member (signature, "out_spec", out_text);
  return TRUE;
}

/* Names in module_call_graph (its signatures name the graph's inputs and
 * outputs) follow renames. */
static void
apply_renames (Writer *w, JsonNode *node)
{
  if (node == NULL || g_hash_table_size (w->renamed) == 0)
    return;
  if (JSON_NODE_HOLDS_ARRAY (node))
    {
      JsonArray *array = json_node_get_array (node);
      for (guint i = 0; i < json_array_get_length (array); i++)
        apply_renames (w, json_array_get_element (array, i));
    }
  else if (JSON_NODE_HOLDS_OBJECT (node))
    {
      JsonObject *object = json_node_get_object (node);
      g_autoptr(GList) members = json_object_get_members (object);
      for (GList *l = members; l; l = l->next)
        {
          JsonNode *member = json_object_get_member (object, l->data);
          const char *text = JSON_NODE_HOLDS_VALUE (member) && json_node_get_value_type (member) == G_TYPE_STRING
                             ? json_node_get_string (member) : NULL;
          const char *renamed = text && (strcmp (l->data, "name") == 0 || strcmp (l->data, "as_name") == 0)
                                ? g_hash_table_lookup (w->renamed, text) : NULL;
          if (renamed)
            json_object_set_string_member (object, l->data, renamed);
          else
            apply_renames (w, member);
        }
    }
}

/* ------------------------------------------------------------------ program */

static JsonNode *
write_program (Writer *w, GError **error)
{
  JsonNode *root = json_node_copy (json_parser_get_root (w->program_parser));
  g_autoptr(JsonNode) owned = root;
  JsonObject *program = json_node_get_object (root);
  JsonObject *graph_module = member_object (program, "graph_module");
  JsonObject *graph = member_object (graph_module, "graph");
  JsonObject *signature = member_object (graph_module, "signature");
  if (graph == NULL || signature == NULL)
    {
      refuse (error, w, "the program kept from the file has no graph_module.graph and signature");
      return NULL;
    }

  guint outputs_read = count_user_outputs (member_array (signature, "output_specs"));
  JsonArray *input_specs = json_array_new (), *inputs = json_array_new ();
  JsonArray *output_specs = json_array_new (), *outputs = json_array_new ();
  gboolean ok = write_specs (w, TRUE, member_array (signature, "input_specs"), member_array (graph, "inputs"),
                             input_specs, inputs, error) &&
                write_specs (w, FALSE, member_array (signature, "output_specs"), member_array (graph, "outputs"),
                             output_specs, outputs, error);
  json_object_set_array_member (signature, "input_specs", input_specs);
  json_object_set_array_member (signature, "output_specs", output_specs);
  json_object_set_array_member (graph, "inputs", inputs);
  json_object_set_array_member (graph, "outputs", outputs);
  if (!ok)
    return NULL;

  JsonArray *nodes = json_array_new ();
  json_object_set_array_member (graph, "nodes", nodes);
  for (guint i = 0; i < w->graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (w->graph->nodes, i);
      /* The reader's own lists, folded back into their consumers' arguments. */
      if (node->exported_json == NULL && strcmp (node->op, "prim::ListConstruct") == 0)
        continue;
      JsonNode *written = write_node (w, node, error);
      if (written == NULL)
        return NULL;
      json_array_add_element (nodes, written);
    }
  if (!write_values (w, graph, error))
    return NULL;
  if (json_object_has_member (graph, "is_single_tensor_return") && json_array_get_length (outputs) != 1)
    json_object_set_boolean_member (graph, "is_single_tensor_return", FALSE);
  JsonObject *ranges = write_ranges (w, member_object (program, "range_constraints"));
  json_object_set_object_member (program, "range_constraints", ranges);
  add_missing_ranges (w, member_object (graph, "tensor_values"), ranges);
  apply_renames (w, json_object_get_member (graph_module, "module_call_graph"));
  if (!update_out_spec (w, outputs_read, member_array (signature, "output_specs"), member_array (graph_module, "module_call_graph"),
                        error))
    return NULL;
  return g_steal_pointer (&owned);
}

/* ------------------------------------------------------------------ weights */

/* The state-dict name of a weight, from its input spec. */
static const char *
fqn_of (Writer *w, GraftValue *value, const char **kind_out)
{
  JsonObject *body = NULL;
  JsonNode *spec = json_object_get_member (kept_of (w, value), "input_spec");
  const char *kind = spec ? spec_kind (spec, &body) : NULL;
  if (kind_out)
    *kind_out = kind;
  if (g_strcmp0 (kind, "parameter") == 0)
    return member_string (body, "parameter_name");
  if (g_strcmp0 (kind, "buffer") == 0)
    return member_string (body, "buffer_name");
  if (g_strcmp0 (kind, "tensor_constant") == 0)
    return member_string (body, "tensor_constant_name");
  return NULL;
}

typedef struct {
  Writer *writer;
  GHashTable *position;   /* fqn → 1-based position in the config read */
} WeightOrder;

static int
compare_weight_order (gconstpointer a, gconstpointer b, gpointer user_data)
{
  WeightOrder *order = user_data;
  const char *fa = fqn_of (order->writer, *(GraftValue **) a, NULL);
  const char *fb = fqn_of (order->writer, *(GraftValue **) b, NULL);
  guint pa = fa ? GPOINTER_TO_UINT (g_hash_table_lookup (order->position, fa)) : 0;
  guint pb = fb ? GPOINTER_TO_UINT (g_hash_table_lookup (order->position, fb)) : 0;
  /* Weights the file did not list (none today) go last, stably. */
  pa = pa ? pa : G_MAXUINT;
  pb = pb ? pb : G_MAXUINT;
  return pa < pb ? -1 : pa > pb;
}

/* The state dict in the order torch wrote it (the module's own order),
 * which is not the signature's. */
static void
sort_as_read (Writer *w, GPtrArray *values, const char *folder)
{
  g_autofree char *kept_name = g_strdup_printf ("data/%s/model_%s_config.json", folder, folder);
  GBytes *kept = graft_model_get_kept_record (w->model, kept_name);
  g_autoptr(JsonNode) root = kept ? parse_json (kept) : NULL;
  JsonObject *config = root && JSON_NODE_HOLDS_OBJECT (root) ? member_object (json_node_get_object (root), "config")
                                                             : NULL;
  if (config == NULL)
    return;
  g_autoptr(GHashTable) position = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GList) names = json_object_get_members (config);
  guint n = 0;
  for (GList *l = names; l; l = l->next)
    g_hash_table_insert (position, l->data, GUINT_TO_POINTER (++n));
  WeightOrder order = { w, position };
  g_ptr_array_sort_with_data (values, compare_weight_order, &order);
}

static gboolean
write_payloads (Writer *w, GraftTorchArchiveWriter *archive, GPtrArray *values, const char *folder,
                const char *prefix, GError **error)
{
  sort_as_read (w, values, folder);
  /* Weights that shared a storage (tied embeddings) share a record again. */
  g_autoptr(GHashTable) path_by_data = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  guint n_records = 0;
  JsonObject *config = json_object_new ();
  JsonObject *root = json_object_new ();
  g_autoptr(JsonNode) root_node = json_node_init_object (json_node_alloc (), root);
  json_object_set_object_member (root, "config", config);
  for (guint i = 0; i < values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (values, i);
      JsonObject *body = NULL;
      JsonNode *spec = json_object_get_member (kept_of (w, value), "input_spec");
      const char *kind = spec ? spec_kind (spec, &body) : NULL;
      const char *fqn = NULL;
      if (g_strcmp0 (kind, "parameter") == 0)
        fqn = member_string (body, "parameter_name");
      else if (g_strcmp0 (kind, "buffer") == 0)
        fqn = member_string (body, "buffer_name");
      else if (g_strcmp0 (kind, "tensor_constant") == 0)
        fqn = member_string (body, "tensor_constant_name");
      if (fqn == NULL)
        return refuse (error, w, "weight %s names no state-dict entry", value->name);
      GraftTensor *tensor = value->initializer;
      GBytes *data = graft_tensor_get_data (tensor, error);   /* owned by the tensor */
      if (data == NULL)
        return FALSE;
      gsize len;
      const void *bytes = g_bytes_get_data (data, &len);
      g_autofree char *data_key = g_strdup_printf ("%p+%" G_GSIZE_FORMAT, bytes, len);
      const char *shared = len > 0 ? g_hash_table_lookup (path_by_data, data_key) : NULL;
      g_autofree char *path_name = shared ? g_strdup (shared) : g_strdup_printf ("%s%u", prefix, n_records++);
      if (shared == NULL)
        {
          g_autofree char *record = g_strdup_printf ("data/%s/%s", folder, path_name);
          if (!graft_torch_archive_writer_add (archive, record, bytes, len, error))
            return FALSE;
          if (len > 0)
            g_hash_table_insert (path_by_data, g_steal_pointer (&data_key), g_strdup (path_name));
        }
      /* The weight's own shape: the placeholder's meta may be symbolic-free
       * but is the program's view of it, the tensor is what is stored. */
      GraftValue stand_in = { .name = value->name, .dtype = tensor->dtype, .shape = GRAFT_SHAPE_UNKNOWN };
      graft_shape_init_fixed (&stand_in.shape, tensor->rank, tensor->dims);
      JsonObject *kept_meta = member_object (kept_of (w, value), "meta");
      /* A buffer's placeholder may say requires_grad (it follows what it
       * is computed with); the buffer itself never does. */
      gboolean requires_grad = g_strcmp0 (kind, "parameter") == 0;
      if (requires_grad && kept_meta && json_object_has_member (kept_meta, "requires_grad"))
        requires_grad = json_object_get_boolean_member (kept_meta, "requires_grad");
      JsonNode *meta = tensor_meta_from_ir (w, &stand_in, requires_grad, error);
      graft_shape_clear (&stand_in.shape);
      if (meta == NULL)
        return FALSE;
      JsonObject *payload = json_object_new ();
      json_object_set_string_member (payload, "path_name", path_name);
      json_object_set_boolean_member (payload, "is_param", g_strcmp0 (kind, "parameter") == 0);
      json_object_set_boolean_member (payload, "use_pickle", FALSE);
      json_object_set_member (payload, "tensor_meta", meta);
      json_object_set_object_member (config, fqn, payload);
    }
  g_autofree char *text = json_to_string (root_node, FALSE);
  g_autofree char *record = g_strdup_printf ("data/%s/model_%s_config.json", folder, folder);
  return graft_torch_archive_writer_add (archive, record, text, strlen (text), error);
}

typedef struct {
  Writer *writer;
  JsonNode *program;
} SaveJob;

static gboolean
write_archive (int fd, const char *path, gpointer user_data, GError **error)
{
  SaveJob *job = user_data;
  Writer *w = job->writer;
  g_autofree char *prefix = graft_torch_archive_prefix_for_path (path);
  g_autoptr(GraftTorchArchiveWriter) archive = graft_torch_archive_writer_new (fd, path, prefix);
  if (!write_payloads (w, archive, w->weights, "weights", "weight_", error) ||
      !write_payloads (w, archive, w->constants, "constants", "tensor_", error))
    return FALSE;
  g_autofree char *program = json_to_string (job->program, FALSE);
  if (!graft_torch_archive_writer_add (archive, "models/model.json", program, strlen (program), error))
    return FALSE;
  /* Example inputs of other shapes than the inputs now have would
   * mislead; torch loads an empty record as none. */
  GBytes *samples = w->inputs_changed ? NULL : graft_model_get_kept_record (w->model, GRAFT_EXPORTED_KEPT_SAMPLE_INPUTS);
  gsize samples_len = 0;
  const void *samples_data = samples ? g_bytes_get_data (samples, &samples_len) : "";
  if (!graft_torch_archive_writer_add (archive, "data/sample_inputs/model.pt", samples_data, samples_len, error))
    return FALSE;
  g_autoptr(GPtrArray) kept = graft_model_list_kept_records (w->model);
  for (guint i = 0; i < kept->len; i++)
    {
      const char *name = g_ptr_array_index (kept, i);
      GBytes *bytes = graft_model_get_kept_record (w->model, name);
      gsize len;
      const void *data = g_bytes_get_data (bytes, &len);
      if (g_str_has_prefix (name, "extra/") && !graft_torch_archive_writer_add (archive, name, data, len, error))
        return FALSE;
    }
  return graft_torch_archive_writer_add (archive, "archive_format", "pt2", 3, error) &&
         graft_torch_archive_writer_add (archive, "archive_version", "0", 1, error) &&
         graft_torch_archive_writer_finish (archive, PT2_FILE_FORMAT_VERSION, error);
}

/* An input whose shape differs from what torch saw changes what example
 * inputs fit. */
static void
check_inputs_changed (Writer *w)
{
  for (guint i = 0; i < w->graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (w->graph->inputs, i);
      JsonObject *meta = member_object (kept_of (w, input), "meta");
      if (input->initializer == NULL && (meta == NULL || !meta_matches (meta, input)))
        w->inputs_changed = TRUE;
    }
}

gboolean
graft_exported_program_write_file (GraftModel *model, const char *path, gboolean overwrite_source, GError **error)
{
  GBytes *kept_program = graft_model_get_kept_record (model, GRAFT_EXPORTED_KEPT_PROGRAM);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GHashTable) kept = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) json_object_unref);
  g_autoptr(GHashTable) hints = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  g_autoptr(GHashTable) renamed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) weights = g_ptr_array_new ();
  g_autoptr(GPtrArray) constants = g_ptr_array_new ();
  Writer w = { .model = model, .graph = graft_model_get_graph (model), .path = path, .program_parser = parser,
               .kept = kept, .hints = hints, .renamed = renamed, .weights = weights, .constants = constants };

  if (!graft_atomic_check_target (path, graft_model_get_path (model), overwrite_source, error))
    return FALSE;
  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM || kept_program == NULL || w.graph == NULL)
    return refuse (error, &w, "only a program read from a torch.export .pt2 can be saved as .pt2 (this model is %s); "
                   "save it as .onnx instead", graft_model_format_to_string (graft_model_get_format (model)));

  gsize len;
  const char *text = g_bytes_get_data (kept_program, &len);
  if (!json_parser_load_from_data (parser, text, len, error))
    return FALSE;
  collect_hints (&w);
  check_inputs_changed (&w);
  g_autoptr(JsonNode) program = write_program (&w, error);
  if (program == NULL)
    return FALSE;
  SaveJob job = { &w, program };
  return graft_atomic_save (path, write_archive, &job, error);
}
