#include "pt2/exported-program.h"
#include "pt2/exported-program-private.h"

#include <json-glib/json-glib.h>
#include <string.h>
#include "ir/json-nesting.h"
#include "ir/model-error.h"
#include "pytorch/pickle.h"

/* The one record every layout must have, and where the weights live. */
typedef struct {
  GraftTorchArchive *archive;   /* borrowed */
  const char *path;
  GraftModel *model;            /* borrowed */
  GraftGraph *graph;            /* borrowed */
  gboolean flat;                /* torch ≤ 2.7 layout */
  char *program_record;         /* "models/model.json", "serialized_exported_program.json" */
  char *model_name;             /* "model" */
  GHashTable *value_by_arg;     /* graph value name → GraftValue* (borrowed) */
  GraftTorchArchive *state_dict;   /* flat layout: the nested torch.save zip, owned by the model */
  GraftPickleValue *state_root;    /* flat layout: its data.pkl */
  GraftTorchArchive *constants;
  GraftPickleValue *constants_root;
  GHashTable *weight_configs;   /* PT2 archive: "weights" / "constants" → the JsonParser of its config */
  guint64 json_values_left;     /* of PROGRAM_MAX_JSON_VALUES */
  GHashTable *kept_by_value;    /* GraftValue* → JsonObject of its exported_json, owned */
  GHashTable *given_tensors;    /* a program built in memory: fqn → GraftTensor* (borrowed); else NULL */
} Reader;

/* torch.export programs nest about ten deep (a node, its arguments, a
 * list of tensors, a SymInt); json-glib parses recursively, and so do the
 * walks below. */
#define PROGRAM_MAX_NESTING 256
/* The JSON values one load may parse, program and weight configs
 * together: as many as the pickles of a TorchScript load
 * (GRAFT_PICKLE_MAX_VALUES). A real program has about 60 per node, so this
 * is some 70,000 nodes; json-glib holds them in about 1.3 GB. */
#define PROGRAM_MAX_JSON_VALUES GRAFT_PICKLE_MAX_VALUES

static gboolean
fail (GError **error, GraftModelError code, const Reader *r, const char *format, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (GError **error, GraftModelError code, const Reader *r, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  if (r->program_record != NULL)
    g_set_error (error, GRAFT_MODEL_ERROR, code, "%s: %s: %s", r->path, r->program_record, message);
  else
    g_set_error (error, GRAFT_MODEL_ERROR, code, "%s: %s", r->path, message);
  return FALSE;
}

gboolean
graft_exported_program_recognize (GraftTorchArchive *archive)
{
  return graft_torch_archive_has (archive, "serialized_exported_program.json") ||
         graft_torch_archive_has (archive, "archive_format") || graft_torch_archive_has_prefix (archive, "models/");
}

char *
graft_exported_program_normalize_symbol (const char *expr)
{
  if (g_str_has_prefix (expr, "Symbol('"))
    {
      const char *start = expr + strlen ("Symbol('");
      const char *end = strchr (start, '\'');
      if (end != NULL && end > start)
        return g_strndup (start, end - start);
    }
  return g_strdup (expr);
}

/* ------------------------------------------------------------------ JSON helpers */

JsonObject *
_graft_exported_member_object (JsonObject *object, const char *name)
{
  JsonNode *node = object ? json_object_get_member (object, name) : NULL;
  return node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

JsonArray *
_graft_exported_member_array (JsonObject *object, const char *name)
{
  JsonNode *node = object ? json_object_get_member (object, name) : NULL;
  return node && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

const char *
_graft_exported_member_string (JsonObject *object, const char *name)
{
  JsonNode *node = object ? json_object_get_member (object, name) : NULL;
  return node && JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING
         ? json_node_get_string (node) : NULL;
}

gboolean
_graft_exported_member_int (JsonObject *object, const char *name, gint64 *value)
{
  JsonNode *node = object ? json_object_get_member (object, name) : NULL;
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  GType type = json_node_get_value_type (node);
  if (type != G_TYPE_INT64 && type != G_TYPE_BOOLEAN)
    return FALSE;
  *value = json_node_get_int (node);
  return TRUE;
}

/* torch 2.1–2.3 wrote unbounded ranges with Python's json, as the
 * non-standard tokens Infinity / -Infinity; they become null (unbounded),
 * padded to the same length, outside strings. */
static char *
replace_infinity (const char *data, gsize len)
{
  char *text = g_strndup (data, len);
  gboolean in_string = FALSE;
  for (gsize i = 0; i < len; i++)
    {
      if (in_string)
        {
          if (text[i] == '\\')
            i++;
          else if (text[i] == '"')
            in_string = FALSE;
          continue;
        }
      if (text[i] == '"')
        in_string = TRUE;
      else if (len - i >= 8 && memcmp (text + i, "Infinity", 8) == 0)
        {
          gsize start = i > 0 && text[i - 1] == '-' ? i - 1 : i;
          memset (text + start, ' ', i + 8 - start);
          memcpy (text + start, "null", 4);
          i += 7;
        }
    }
  return text;
}

/* The JSON object in record, owned by parser. */
static JsonObject *
parse_json_record (Reader *r, const char *record, JsonParser *parser, GError **error)
{
  g_autoptr(GBytes) bytes = graft_torch_archive_read (r->archive, record, error);
  if (bytes == NULL)
    return NULL;
  gsize len;
  const char *data = g_bytes_get_data (bytes, &len);
  guint64 values;
  if (!graft_json_check_nesting (data, len, PROGRAM_MAX_NESTING, record, error) ||
      !graft_json_count_values (data, len, r->json_values_left, &values, record, error))
    {
      g_prefix_error (error, "%s: ", r->path);
      return NULL;
    }
  r->json_values_left -= values;
  g_autofree char *text = replace_infinity (data, len);
  /* fail() already names the program record. */
  const char *what = g_strcmp0 (record, r->program_record) == 0 ? "the program" : record;
  g_autoptr(GError) json_error = NULL;
  if (!json_parser_load_from_data (parser, text, len, &json_error))
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s is not valid JSON: %s", what, json_error->message);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s is not a JSON object", what);
      return NULL;
    }
  return json_node_get_object (root);
}

JsonNode *
_graft_exported_tensor_meta (gint64 dtype_code, JsonArray *sizes, JsonNode *strides, gboolean requires_grad)
{
  JsonObject *meta = json_object_new ();
  JsonObject *device = json_object_new ();
  json_object_set_string_member (device, "type", "cpu");
  json_object_set_null_member (device, "index");
  json_object_set_int_member (meta, "dtype", dtype_code);
  json_object_set_array_member (meta, "sizes", sizes);
  json_object_set_boolean_member (meta, "requires_grad", requires_grad);
  json_object_set_object_member (meta, "device", device);
  json_object_set_member (meta, "strides", strides);
  JsonObject *offset = json_object_new ();
  json_object_set_int_member (offset, "as_int", 0);
  json_object_set_object_member (meta, "storage_offset", offset);
  json_object_set_int_member (meta, "layout", 7);   /* Strided */
  return json_node_init_object (json_node_alloc (), meta);
}

JsonNode *
_graft_exported_treespec_leaf (void)
{
  JsonObject *leaf = json_object_new ();
  json_object_set_null_member (leaf, "type");
  json_object_set_null_member (leaf, "context");
  json_object_set_array_member (leaf, "children_spec", json_array_new ());
  return json_node_init_object (json_node_alloc (), leaf);
}

JsonNode *
_graft_exported_range_node (gint64 min, gint64 max)
{
  JsonObject *range = json_object_new ();
  json_object_set_int_member (range, "min_val", min);
  if (max < 0)
    json_object_set_null_member (range, "max_val");
  else
    json_object_set_int_member (range, "max_val", max);
  return json_node_init_object (json_node_alloc (), range);
}

/* A schema union is an object with one member: its field name and value. */
const char *
_graft_exported_union_field (JsonNode *node, JsonNode **value)
{
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node))
    return NULL;
  JsonObject *object = json_node_get_object (node);
  g_autoptr(GList) members = json_object_get_members (object);
  /* Older writers kept every field with nulls beside the one set. */
  for (GList *l = members; l; l = l->next)
    {
      JsonNode *member = json_object_get_member (object, l->data);
      if (!JSON_NODE_HOLDS_NULL (member) || g_list_length (members) == 1)
        {
          *value = member;
          return l->data;
        }
    }
  return NULL;
}

/* torch/_export/serde/schema.py ScalarType → GraftDType. */
GraftDType
_graft_exported_dtype_from_schema (gint64 code)
{
  switch (code)
    {
    case 1: return GRAFT_DTYPE_UINT8;
    case 2: return GRAFT_DTYPE_INT8;
    case 3: return GRAFT_DTYPE_INT16;
    case 4: return GRAFT_DTYPE_INT32;
    case 5: return GRAFT_DTYPE_INT64;
    case 6: return GRAFT_DTYPE_FLOAT16;
    case 7: return GRAFT_DTYPE_FLOAT32;
    case 8: return GRAFT_DTYPE_FLOAT64;
    case 10: return GRAFT_DTYPE_COMPLEX64;
    case 11: return GRAFT_DTYPE_COMPLEX128;
    case 12: return GRAFT_DTYPE_BOOL;
    case 13: return GRAFT_DTYPE_BFLOAT16;
    case 28: return GRAFT_DTYPE_UINT16;
    default: return GRAFT_DTYPE_UNDEFINED;
    }
}

/* The schema's ScalarType numbers differ from c10::ScalarType, which the
 * aten kernels read (float32: 7 here, 6 there). */
gint64
_graft_exported_c10_scalar_type_from_schema (gint64 code)
{
  if (code >= 1 && code <= 12)
    return code - 1;
  if (code == 13)
    return 15;
  return -1;
}

gint64
_graft_exported_c10_scalar_type_to_schema (gint64 c10)
{
  if (c10 >= 0 && c10 <= 11)
    return c10 + 1;
  if (c10 == 15)
    return 13;
  return -1;
}

gint64
_graft_exported_dtype_to_schema (GraftDType dtype)
{
  for (gint64 code = 1; code <= 28; code++)
    if (_graft_exported_dtype_from_schema (code) == dtype)
      return code;
  return -1;
}

/* A SymInt: {"as_int": 3} or {"as_expr": {"expr_str": "s77", …}}. */
static GraftDim
dim_from_symint (JsonNode *node)
{
  JsonNode *value = NULL;
  const char *field = _graft_exported_union_field (node, &value);
  if (field && strcmp (field, "as_int") == 0 && JSON_NODE_HOLDS_VALUE (value))
    return graft_dim_fixed (json_node_get_int (value));
  if (field && strcmp (field, "as_expr") == 0 && JSON_NODE_HOLDS_OBJECT (value))
    {
      const char *expr = _graft_exported_member_string (json_node_get_object (value), "expr_str");
      if (expr != NULL)
        {
          g_autofree char *symbol = graft_exported_program_normalize_symbol (expr);
          return graft_dim_symbolic (symbol);
        }
    }
  return graft_dim_unknown ();
}

static void
shape_from_sizes (GraftShape *shape, JsonArray *sizes)
{
  guint rank = json_array_get_length (sizes);
  graft_shape_clear (shape);
  graft_shape_init (shape, (int) rank);
  for (guint i = 0; i < rank; i++)
    shape->dims[i] = dim_from_symint (json_array_get_element (sizes, i));
}

/* ------------------------------------------------------------------ weights */

/* A list of SymInts that must all be integers ("sizes", "strides"). */
static gboolean
read_int_list (const Reader *r, const char *tensor_name, const char *what, JsonArray *list, gint64 *values,
               GError **error)
{
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      GraftDim d = dim_from_symint (json_array_get_element (list, i));
      if (d.kind != GRAFT_DIM_FIXED)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "tensor %s: %s[%u] is not an integer", tensor_name,
                     what, i);
      values[i] = d.value;
    }
  return TRUE;
}

/* A tensor of tensor_meta whose storage is the raw record bytes, viewed as
 * torch.export describes it (sizes, strides, storage_offset), measured
 * and gathered as every PyTorch reader does (pytorch/torch-archive.h). */
static GraftTensor *
tensor_from_storage (const Reader *r, const char *name, JsonObject *meta, GBytes *storage, const char *record,
                     GError **error)
{
  gint64 code = 0;
  _graft_exported_member_int (meta, "dtype", &code);
  GraftDType dtype = _graft_exported_dtype_from_schema (code);
  JsonArray *sizes = _graft_exported_member_array (meta, "sizes");
  JsonArray *strides = _graft_exported_member_array (meta, "strides");
  gsize element = graft_dtype_get_size (dtype);
  if (dtype == GRAFT_DTYPE_UNDEFINED || element == 0 || sizes == NULL || json_array_get_length (sizes) > 16)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "tensor %s has dtype code %" G_GINT64_FORMAT
            " or a shape Graft does not read", name, code);
      return NULL;
    }
  guint rank = json_array_get_length (sizes);
  gint64 dims[16], steps[16];
  for (guint i = 0; i < rank; i++)
    {
      GraftDim d = dim_from_symint (json_array_get_element (sizes, i));
      if (d.kind != GRAFT_DIM_FIXED || d.value < 0 || d.value > G_MAXINT32)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "tensor %s: dim %u is not a non-negative constant", name, i);
          return NULL;
        }
      dims[i] = d.value;
    }
  if (strides != NULL && json_array_get_length (strides) != rank)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "tensor %s has %u strides for %u sizes", name,
            json_array_get_length (strides), rank);
      return NULL;
    }
  if (strides != NULL && !read_int_list (r, name, "strides", strides, steps, error))
    return NULL;
  JsonNode *offset_node = json_object_get_member (meta, "storage_offset");
  GraftDim offset = offset_node ? dim_from_symint (offset_node) : graft_dim_fixed (0);
  if (offset.kind != GRAFT_DIM_FIXED)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "tensor %s: storage_offset is not an integer", name);
      return NULL;
    }
  GraftTensorView view = { (int) rank, dims, strides ? steps : NULL, offset.value, element };
  g_autoptr(GBytes) data = graft_torch_archive_view (r->archive, storage, record, &view, name, NULL, error);
  if (data == NULL)
    return NULL;
  g_autoptr(GraftTensor) tensor = graft_tensor_new (name, dtype, (int) rank, dims);
  if (!graft_tensor_set_data (tensor, data, error))
    return NULL;
  return g_steal_pointer (&tensor);
}

/* PT2 archive: fqn → PayloadMeta in data/<kind>/<model>_<kind>_config.json. */
static GraftTensor *
load_archive_tensor (Reader *r, const char *folder, const char *fqn, GError **error)
{
  g_autofree char *config_record = g_strdup_printf ("data/%s/%s_%s_config.json", folder, r->model_name, folder);
  /* Parsed once for all the tensors it describes. */
  JsonParser *parser = g_hash_table_lookup (r->weight_configs, folder);
  if (parser == NULL)
    {
      g_autoptr(JsonParser) parsed = json_parser_new ();
      if (parse_json_record (r, config_record, parsed, error) == NULL)
        return NULL;
      parser = parsed;
      g_hash_table_insert (r->weight_configs, g_strdup (folder), g_steal_pointer (&parsed));
    }
  JsonObject *config = _graft_exported_member_object (json_node_get_object (json_parser_get_root (parser)), "config");
  JsonObject *payload = _graft_exported_member_object (config, fqn);
  const char *path_name = _graft_exported_member_string (payload, "path_name");
  JsonObject *meta = _graft_exported_member_object (payload, "tensor_meta");
  if (payload == NULL || path_name == NULL || meta == NULL)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s does not describe %s (path_name and tensor_meta)",
            config_record, fqn);
      return NULL;
    }
  gint64 use_pickle = 0;
  if (_graft_exported_member_int (payload, "use_pickle", &use_pickle) && use_pickle)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "%s is a pickled tensor subclass, which Graft does not read", fqn);
      return NULL;
    }
  g_autofree char *record = g_strdup_printf ("data/%s/%s", folder, path_name);
  g_autoptr(GBytes) storage = graft_torch_archive_read (r->archive, record, error);
  if (storage == NULL)
    return NULL;
  return tensor_from_storage (r, fqn, meta, storage, record, error);
}

/* Flat layout: the nested torch.save zips of the state dict and constants. */
static gboolean
open_nested (Reader *r, const char *record, GraftTorchArchive **nested, GraftPickleValue **root, GError **error)
{
  if (*nested != NULL || !graft_torch_archive_has (r->archive, record))
    return TRUE;
  g_autoptr(GBytes) bytes = graft_torch_archive_read (r->archive, record, error);
  if (bytes == NULL)
    return FALSE;
  g_autofree char *name = g_strdup_printf ("%s: %s", r->path, record);
  g_autoptr(GraftTorchArchive) archive = graft_torch_archive_open_bytes (bytes, name, error);
  if (archive == NULL)
    return FALSE;
  g_autoptr(GBytes) pickle = graft_torch_archive_read (archive, "data.pkl", error);
  if (pickle == NULL)
    return FALSE;
  gsize len;
  const guint8 *data = g_bytes_get_data (pickle, &len);
  g_autofree char *where = g_strdup_printf ("%s: data.pkl", name);
  GraftPickleValue *value = graft_pickle_load_budgeted (data, len, where, NULL,
                                                        graft_torch_archive_get_pickle_budget (archive), error);
  if (value == NULL)
    return FALSE;
  graft_model_keep_alive (r->model, value, (GDestroyNotify) graft_pickle_value_unref);
  *root = value;
  *nested = g_steal_pointer (&archive);
  graft_model_keep_alive (r->model, *nested, (GDestroyNotify) graft_torch_archive_free);
  return TRUE;
}

static GraftTensor *
load_flat_tensor (Reader *r, gboolean constant, const char *fqn, GError **error)
{
  const char *record = constant ? "serialized_constants.pt" : "serialized_state_dict.pt";
  GraftTorchArchive **nested = constant ? &r->constants : &r->state_dict;
  GraftPickleValue **root = constant ? &r->constants_root : &r->state_root;
  if (!open_nested (r, record, nested, root, error))
    return NULL;
  GraftPickleValue *value = *root ? graft_pickle_dict_lookup (*root, fqn) : NULL;
  if (value == NULL || value->kind != GRAFT_PICKLE_TENSOR)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s has no tensor %s", record, fqn);
      return NULL;
    }
  return graft_torch_archive_load_tensor (*nested, "data", value, fqn, error);
}

static GraftTensor *
load_tensor (Reader *r, gboolean constant, const char *fqn, GError **error)
{
  if (r->given_tensors != NULL)
    {
      GraftTensor *tensor = g_hash_table_lookup (r->given_tensors, fqn);
      if (tensor == NULL)
        fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "the program names a weight %s that was not given", fqn);
      return tensor ? graft_tensor_ref (tensor) : NULL;
    }
  if (r->flat)
    return load_flat_tensor (r, constant, fqn, error);
  return load_archive_tensor (r, constant ? "constants" : "weights", fqn, error);
}

/* ------------------------------------------------------------------ values */

static GraftValue *
value_for (Reader *r, const char *name)
{
  GraftValue *value = g_hash_table_lookup (r->value_by_arg, name);
  if (value == NULL)
    {
      value = graft_graph_ensure_value (r->graph, name);
      g_hash_table_insert (r->value_by_arg, value->name, value);
    }
  return value;
}

/* The JSON object that becomes value->exported_json once the program is read. */
static JsonObject *
kept_for (Reader *r, GraftValue *value)
{
  JsonObject *kept = g_hash_table_lookup (r->kept_by_value, value);
  if (kept == NULL)
    {
      kept = json_object_new ();
      g_hash_table_insert (r->kept_by_value, value, kept);
    }
  return kept;
}

static void
keep_member (Reader *r, GraftValue *value, const char *key, JsonNode *node)
{
  if (node != NULL)
    json_object_set_member (kept_for (r, value), key, json_node_copy (node));
}

/* A spec and its position in the signature ("input_index"), by which the
 * writer finds the value again whatever it is called by then. */
static void
keep_spec (Reader *r, GraftValue *value, const char *key, JsonArray *specs, guint index)
{
  g_autofree char *index_key = g_strdup_printf ("%s_index", g_str_has_prefix (key, "input") ? "input" : "output");
  keep_member (r, value, key, json_array_get_element (specs, index));
  json_object_set_int_member (kept_for (r, value), index_key, index);
}

static void
store_kept_values (Reader *r)
{
  GHashTableIter iter;
  gpointer key, kept;
  g_hash_table_iter_init (&iter, r->kept_by_value);
  while (g_hash_table_iter_next (&iter, &key, &kept))
    {
      GraftValue *value = key;
      g_autoptr(JsonNode) node = json_node_init_object (json_node_alloc (), kept);
      gsize len = 0;
      char *text = json_to_string (node, FALSE);
      len = strlen (text);
      g_clear_pointer (&value->exported_json, g_bytes_unref);
      value->exported_json = g_bytes_new_take (text, len);
    }
}

static void
describe_values (Reader *r, JsonObject *graph)
{
  JsonObject *tensors = _graft_exported_member_object (graph, "tensor_values");
  g_autoptr(GList) names = tensors ? json_object_get_members (tensors) : NULL;
  for (GList *l = names; l; l = l->next)
    {
      JsonObject *meta = _graft_exported_member_object (tensors, l->data);
      JsonArray *sizes = _graft_exported_member_array (meta, "sizes");
      gint64 code = 0;
      if (meta == NULL || sizes == NULL)
        continue;
      GraftValue *value = value_for (r, l->data);
      keep_member (r, value, "meta", json_object_get_member (tensors, l->data));
      value->kind = GRAFT_VALUE_TENSOR;
      if (_graft_exported_member_int (meta, "dtype", &code))
        value->dtype = _graft_exported_dtype_from_schema (code);
      shape_from_sizes (&value->shape, sizes);
    }
  const char *scalar_kinds[] = { "sym_int_values", "sym_bool_values", "sym_float_values" };
  const GraftDType scalar_types[] = { GRAFT_DTYPE_INT64, GRAFT_DTYPE_BOOL, GRAFT_DTYPE_FLOAT64 };
  const char *type_names[] = { "SymInt", "SymBool", "SymFloat" };
  for (guint k = 0; k < G_N_ELEMENTS (scalar_kinds); k++)
    {
      JsonObject *values = _graft_exported_member_object (graph, scalar_kinds[k]);
      g_autoptr(GList) keys = values ? json_object_get_members (values) : NULL;
      for (GList *l = keys; l; l = l->next)
        {
          GraftValue *value = value_for (r, l->data);
          JsonNode *expr_node = NULL;
          keep_member (r, value, "meta", json_object_get_member (values, l->data));
          json_object_set_string_member (kept_for (r, value), "table", scalar_kinds[k]);
          const char *field = _graft_exported_union_field (json_object_get_member (values, l->data), &expr_node);
          const char *expr = field && strcmp (field, "as_expr") == 0 && JSON_NODE_HOLDS_OBJECT (expr_node)
                             ? _graft_exported_member_string (json_node_get_object (expr_node), "expr_str") : NULL;
          g_autofree char *symbol = expr ? graft_exported_program_normalize_symbol (expr) : NULL;
          value->kind = GRAFT_VALUE_SCALAR;
          value->dtype = scalar_types[k];
          graft_shape_clear (&value->shape);
          graft_shape_init (&value->shape, 0);
          g_free (value->type_string);
          value->type_string = symbol ? g_strdup_printf ("%s %s", type_names[k], symbol) : g_strdup (type_names[k]);
        }
    }
}

/* ------------------------------------------------------------------ signature */

static gboolean
read_signature (Reader *r, JsonObject *graph_module, GError **error)
{
  JsonObject *signature = _graft_exported_member_object (graph_module, "signature");
  JsonArray *input_specs = _graft_exported_member_array (signature, "input_specs");
  JsonArray *output_specs = _graft_exported_member_array (signature, "output_specs");
  if (input_specs == NULL || output_specs == NULL)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "graph_module.signature needs input_specs and output_specs");
  /* buffer FQN → its placeholder's value, for the mutations below */
  g_autoptr(GHashTable) buffer_values = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < json_array_get_length (input_specs); i++)
    {
      JsonNode *spec_value = NULL;
      const char *kind = _graft_exported_union_field (json_array_get_element (input_specs, i), &spec_value);
      JsonObject *spec = spec_value && JSON_NODE_HOLDS_OBJECT (spec_value) ? json_node_get_object (spec_value) : NULL;
      if (kind == NULL || spec == NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "signature.input_specs[%u] is not an InputSpec", i);
      JsonObject *arg = _graft_exported_member_object (spec, "arg");
      if (strcmp (kind, "user_input") == 0)
        {
          JsonNode *inner = NULL;
          const char *arg_kind = _graft_exported_union_field (json_object_get_member (spec, "arg"), &inner);
          const char *name = arg_kind && strcmp (arg_kind, "as_tensor") == 0 && JSON_NODE_HOLDS_OBJECT (inner)
                             ? _graft_exported_member_string (json_node_get_object (inner), "name") : NULL;
          if (name == NULL && arg_kind && inner && JSON_NODE_HOLDS_OBJECT (inner))
            name = _graft_exported_member_string (json_node_get_object (inner), "as_name");
          if (name == NULL)
            continue;   /* a constant user input (int, None…) specialised away */
          GraftValue *value = value_for (r, name);
          keep_spec (r, value, "input_spec", input_specs, i);
          value->is_graph_input = TRUE;
          graft_graph_add_input (r->graph, value);
          continue;
        }
      const char *name = _graft_exported_member_string (arg, "name");
      const char *fqn = NULL;
      gboolean constant = FALSE;
      const char *role = kind;
      if (strcmp (kind, "parameter") == 0)
        fqn = _graft_exported_member_string (spec, "parameter_name"), role = "parameter";
      else if (strcmp (kind, "buffer") == 0)
        {
          gint64 persistent = 1;
          _graft_exported_member_int (spec, "persistent", &persistent);
          fqn = _graft_exported_member_string (spec, "buffer_name");
          role = persistent ? "buffer" : "non-persistent buffer";
          constant = !persistent;
        }
      else if (strcmp (kind, "tensor_constant") == 0)
        fqn = _graft_exported_member_string (spec, "tensor_constant_name"), constant = TRUE, role = "tensor constant";
      if (fqn == NULL || name == NULL)
        {
          /* tokens, custom objects, constant inputs: shown, not loaded */
          if (name != NULL)
            {
              GraftValue *value = value_for (r, name);
              keep_spec (r, value, "input_spec", input_specs, i);
              value->kind = GRAFT_VALUE_OBJECT;
              g_free (value->doc_string);
              value->doc_string = g_strdup (kind);
            }
          continue;
        }
      GraftTensor *tensor = load_tensor (r, constant, fqn, error);
      if (tensor == NULL)
        return FALSE;
      GraftValue *value = value_for (r, name);
      keep_spec (r, value, "input_spec", input_specs, i);
      g_free (value->doc_string);
      value->doc_string = g_strdup_printf ("%s %s", role, fqn);
      graft_graph_add_initializer (r->graph, value, graft_tensor_ref (tensor));
      graft_model_add_tensor (r->model, tensor);
      if (strcmp (kind, "buffer") == 0)
        g_hash_table_insert (buffer_values, (gpointer) fqn, value);
    }

  for (guint i = 0; i < json_array_get_length (output_specs); i++)
    {
      JsonNode *spec_value = NULL;
      const char *kind = _graft_exported_union_field (json_array_get_element (output_specs, i), &spec_value);
      JsonObject *spec = spec_value && JSON_NODE_HOLDS_OBJECT (spec_value) ? json_node_get_object (spec_value) : NULL;
      if (kind == NULL || spec == NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "signature.output_specs[%u] is not an OutputSpec", i);
      JsonNode *inner = NULL;
      JsonNode *arg_node = json_object_get_member (spec, "arg");
      const char *arg_kind = _graft_exported_union_field (arg_node, &inner);
      const char *name = NULL;
      if (arg_kind && inner && JSON_NODE_HOLDS_OBJECT (inner))
        name = _graft_exported_member_string (json_node_get_object (inner), "name");
      if (name == NULL && arg_node && JSON_NODE_HOLDS_OBJECT (arg_node))
        name = _graft_exported_member_string (json_node_get_object (arg_node), "name");   /* buffer_mutation: TensorArgument */
      if (name == NULL)
        continue;
      GraftValue *value = value_for (r, name);
      keep_spec (r, value, "output_spec", output_specs, i);
      if (strcmp (kind, "user_output") == 0)
        {
          value->is_graph_output = TRUE;
          graft_graph_add_output (r->graph, value);
          continue;
        }
      const char *target = _graft_exported_member_string (spec, "buffer_name");
      if (target == NULL)
        target = _graft_exported_member_string (spec, "user_input_name");
      g_autofree char *what = g_strdup_printf ("%s%s%s", kind, target ? " " : "", target ? target : "");
      g_free (value->doc_string);
      value->doc_string = g_strdup_printf ("new value: %s", what);
      /* Mutations are outputs of the functional graph: the sidebar and
       * info name them, and the runtime writes a buffer's new value back
       * after each run, so that a second run sees the first's update as
       * ep.module() does. A mutated user input is the caller's tensor:
       * Graft's outputs never alias inputs, so it is only named. */
      GraftValue *buffer = target ? g_hash_table_lookup (buffer_values, target) : NULL;
      if (strcmp (kind, "buffer_mutation") == 0 && buffer != NULL && buffer != value)
        {
          g_free (value->writes_back_to);
          value->writes_back_to = g_strdup (buffer->name);
        }
      if (strcmp (kind, "buffer_mutation") == 0 || strcmp (kind, "user_input_mutation") == 0)
        {
          g_autofree char *entry = g_strdup_printf ("%s ← %s", target ? target : "?", name);
          graft_model_add_metadata (r->model, strcmp (kind, "buffer_mutation") == 0 ? "mutated buffer"
                                    : "mutated input", entry);
        }
    }
  return TRUE;
}

/* ------------------------------------------------------------------ nodes */

/* nn_module_stack = "key,path,class;key,path,class…", outermost first; the
 * root module has an empty path. */
static GraftGroup *
group_for_module_stack (GraftGraph *graph, const char *stack)
{
  GraftGroup *group = graph->root_group;
  g_autofree char *parent_path = g_strdup ("");
  g_auto(GStrv) entries = g_strsplit (stack, ";", -1);
  for (guint i = 0; entries[i]; i++)
    {
      const char *first = strchr (entries[i], ',');
      const char *last = strrchr (entries[i], ',');
      if (first == NULL || last == first)
        continue;
      g_autofree char *path = g_strndup (first + 1, last - first - 1);
      if (*path == '\0')
        continue;
      /* A module called from outside its parent's forward (or a path torch
       * could not nest) starts again from the root. */
      if (*parent_path && !g_str_has_prefix (path, parent_path))
        group = graph->root_group, g_free (parent_path), parent_path = g_strdup ("");
      const char *component = graft_group_component_for_scope (path, parent_path);
      group = graft_group_ensure_child (group, component);
      if (group->class_name == NULL)
        group->class_name = g_strdup (last + 1);
      if (group->path == NULL || strcmp (group->path, path) != 0)
        {
          g_free (group->path);
          group->path = g_strdup (path);
        }
      g_free (parent_path);
      parent_path = g_steal_pointer (&path);
    }
  return group;
}

static void
move_to_group (GraftNode *node, GraftGroup *group)
{
  GPtrArray *root_nodes = node->graph->root_group->nodes;
  if (group == node->graph->root_group || root_nodes->len == 0 ||
      g_ptr_array_index (root_nodes, root_nodes->len - 1) != node)
    return;
  g_ptr_array_remove_index (root_nodes, root_nodes->len - 1);
  node->group = NULL;
  graft_group_add_node (group, node);
}

/* "File \"/x/model.py\", line 67, in forward\n…" → "model.py:67" */
static char *
source_range_from_stack_trace (const char *trace)
{
  const char *file = strstr (trace, "File \"");
  if (file == NULL)
    return NULL;
  file += strlen ("File \"");
  const char *end = strchr (file, '"');
  const char *line = end ? strstr (end, ", line ") : NULL;
  if (end == NULL || line == NULL)
    return NULL;
  g_autofree char *full = g_strndup (file, end - file);
  g_autofree char *base = g_path_get_basename (full);
  return g_strdup_printf ("%s:%" G_GINT64_FORMAT, base, g_ascii_strtoll (line + strlen (", line "), NULL, 10));
}

static GraftNode *
add_list_node (Reader *r, GraftNode *consumer, const char *hint)
{
  g_autofree char *name = g_strdup_printf ("%s_%s", consumer->name, hint);
  GraftNode *list = graft_graph_add_node (r->graph, "prim", "ListConstruct", name);
  move_to_group (list, consumer->group);
  return list;
}

/* Appends one Argument: a value becomes an input, a constant an
 * attribute named attribute_name. */
static GraftGraph *read_subgraph (Reader *r, JsonObject *graph, const char *name, GError **error);

static gboolean
add_argument (Reader *r, GraftNode *node, JsonNode *argument, const char *attribute_name, GError **error)
{
  JsonNode *value = NULL;
  const char *field = _graft_exported_union_field (argument, &value);
  if (field == NULL)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: argument %s is not an Argument", node->name,
                 attribute_name);
  if (strcmp (field, "as_none") == 0)
    {
      graft_node_add_attribute (node, graft_attribute_new (attribute_name, GRAFT_ATTR_NONE));
      return TRUE;
    }
  /* An item of a SymInt / SymBool list: {"as_name": "sym_size_int"}. */
  if (strcmp (field, "as_name") == 0 && JSON_NODE_HOLDS_VALUE (value) &&
      json_node_get_value_type (value) == G_TYPE_STRING)
    {
      graft_node_add_input (node, value_for (r, json_node_get_string (value)));
      return TRUE;
    }
  if (strcmp (field, "as_tensor") == 0 || strcmp (field, "as_sym_int") == 0 || strcmp (field, "as_sym_bool") == 0 ||
      strcmp (field, "as_sym_float") == 0)
    {
      const char *name = JSON_NODE_HOLDS_OBJECT (value) ? _graft_exported_member_string (json_node_get_object (value), "name") : NULL;
      if (name == NULL && JSON_NODE_HOLDS_OBJECT (value))
        name = _graft_exported_member_string (json_node_get_object (value), "as_name");
      if (name != NULL)
        {
          graft_node_add_input (node, value_for (r, name));
          return TRUE;
        }
      /* A symbolic argument that torch resolved to a constant. */
      JsonNode *constant = NULL;
      const char *constant_field = _graft_exported_union_field (value, &constant);
      if (constant_field && JSON_NODE_HOLDS_VALUE (constant))
        {
          if (json_node_get_value_type (constant) == G_TYPE_BOOLEAN)
            {
              GraftAttribute *a = graft_attribute_new (attribute_name, GRAFT_ATTR_BOOL);
              a->i = json_node_get_boolean (constant);
              graft_node_add_attribute (node, a);
            }
          else if (json_node_get_value_type (constant) == G_TYPE_DOUBLE)
            graft_node_add_attribute (node, graft_attribute_new_float (attribute_name, json_node_get_double (constant)));
          else
            graft_node_add_attribute (node, graft_attribute_new_int (attribute_name, json_node_get_int (constant)));
          return TRUE;
        }
      return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: argument %s names no value", node->name,
                   attribute_name);
    }
  if (!JSON_NODE_HOLDS_ARRAY (value) && !JSON_NODE_HOLDS_VALUE (value) && strcmp (field, "as_device") != 0 &&
      strcmp (field, "as_graph") != 0 && strcmp (field, "as_custom_obj") != 0)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: argument %s (%s) has no value", node->name,
                 attribute_name, field);
  if (strcmp (field, "as_int") == 0 || strcmp (field, "as_memory_format") == 0 || strcmp (field, "as_layout") == 0)
    graft_node_add_attribute (node, graft_attribute_new_int (attribute_name, json_node_get_int (value)));
  else if (strcmp (field, "as_scalar_type") == 0)
    graft_node_add_attribute (node, graft_attribute_new_int (attribute_name,
                                                             _graft_exported_c10_scalar_type_from_schema (json_node_get_int (value))));
  else if (strcmp (field, "as_float") == 0)
    graft_node_add_attribute (node, graft_attribute_new_float (attribute_name, json_node_get_double (value)));
  else if (strcmp (field, "as_bool") == 0)
    {
      GraftAttribute *a = graft_attribute_new (attribute_name, GRAFT_ATTR_BOOL);
      a->i = json_node_get_boolean (value);
      graft_node_add_attribute (node, a);
    }
  else if (strcmp (field, "as_string") == 0 || strcmp (field, "as_operator") == 0)
    graft_node_add_attribute (node, graft_attribute_new_string (attribute_name, json_node_get_string (value)));
  else if (strcmp (field, "as_device") == 0)
    {
      const char *type = JSON_NODE_HOLDS_OBJECT (value) ? _graft_exported_member_string (json_node_get_object (value), "type") : NULL;
      graft_node_add_attribute (node, graft_attribute_new_string (attribute_name, type ? type : "cpu"));
    }
  else if (strcmp (field, "as_ints") == 0 || strcmp (field, "as_floats") == 0 || strcmp (field, "as_bools") == 0)
    {
      JsonArray *items = json_node_get_array (value);
      guint n = json_array_get_length (items);
      if (strcmp (field, "as_floats") == 0)
        {
          g_autofree double *floats = g_new0 (double, n + 1);
          for (guint i = 0; i < n; i++)
            floats[i] = json_array_get_double_element (items, i);
          graft_node_add_attribute (node, graft_attribute_new_floats (attribute_name, floats, n));
        }
      else
        {
          g_autofree gint64 *ints = g_new0 (gint64, n + 1);
          for (guint i = 0; i < n; i++)
            ints[i] = json_array_get_int_element (items, i);
          graft_node_add_attribute (node, graft_attribute_new_ints (attribute_name, ints, n));
        }
    }
  else if (strcmp (field, "as_sym_ints") == 0 || strcmp (field, "as_tensors") == 0 ||
           strcmp (field, "as_optional_tensors") == 0 || strcmp (field, "as_sym_bools") == 0 ||
           strcmp (field, "as_sym_floats") == 0 || strcmp (field, "as_strings") == 0)
    {
      JsonArray *items = json_node_get_array (value);
      guint n = json_array_get_length (items);
      /* An int list whose entries are all constants stays one attribute. */
      gboolean all_constant = strcmp (field, "as_sym_ints") == 0;
      g_autofree gint64 *ints = g_new0 (gint64, n + 1);
      for (guint i = 0; all_constant && i < n; i++)
        {
          GraftDim d = dim_from_symint (json_array_get_element (items, i));
          all_constant = d.kind == GRAFT_DIM_FIXED;
          ints[i] = d.value;
        }
      if (all_constant)
        {
          graft_node_add_attribute (node, graft_attribute_new_ints (attribute_name, ints, n));
          return TRUE;
        }
      if (strcmp (field, "as_strings") == 0)
        {
          GraftAttribute *a = graft_attribute_new (attribute_name, GRAFT_ATTR_STRINGS);
          a->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
          for (guint i = 0; i < n; i++)
            {
              const char *s = json_array_get_string_element (items, i);
              g_ptr_array_add (a->strings, g_bytes_new (s ? s : "", s ? strlen (s) : 0));
            }
          graft_node_add_attribute (node, a);
          return TRUE;
        }
      GraftNode *list = add_list_node (r, node, attribute_name);
      for (guint i = 0; i < n; i++)
        {
          JsonNode *item = json_array_get_element (items, i);
          g_autofree char *item_name = g_strdup_printf ("arg%u", i);
          if (strcmp (field, "as_tensors") == 0 && JSON_NODE_HOLDS_OBJECT (item))
            {
              const char *name = _graft_exported_member_string (json_node_get_object (item), "name");
              if (name == NULL)
                return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: %s[%u] names no tensor", node->name,
                             attribute_name, i);
              graft_node_add_input (list, value_for (r, name));
            }
          else if (strcmp (field, "as_optional_tensors") == 0)
            {
              JsonNode *inner = NULL;
              const char *kind = _graft_exported_union_field (item, &inner);
              const char *name = kind && strcmp (kind, "as_tensor") == 0 && JSON_NODE_HOLDS_OBJECT (inner)
                                 ? _graft_exported_member_string (json_node_get_object (inner), "name") : NULL;
              if (name)
                graft_node_add_input (list, value_for (r, name));
              else
                graft_node_add_attribute (list, graft_attribute_new (item_name, GRAFT_ATTR_NONE));
            }
          else if (!add_argument (r, list, item, item_name, error))   /* SymInt / SymBool union */
            return FALSE;
        }
      g_autofree char *list_value = g_strdup_printf ("%s_%s", node->name, attribute_name);
      GraftValue *out = value_for (r, list_value);
      out->kind = GRAFT_VALUE_SEQUENCE;
      graft_node_add_output (list, out);
      graft_node_add_input (node, out);
    }
  else if (strcmp (field, "as_graph") == 0)
    {
      /* A higher-order op's body (wrap_with_autocast, cond's branches):
       * read as a subgraph the runtime can run. The string attribute
       * keeps the argument's place for the writer, which copies the
       * original JSON back. */
      JsonObject *graph_argument = JSON_NODE_HOLDS_OBJECT (value) ? json_node_get_object (value) : NULL;
      const char *name = _graft_exported_member_string (graph_argument, "name");
      JsonObject *graph = _graft_exported_member_object (graph_argument, "graph");
      if (graph == NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: argument %s has no graph", node->name,
                     attribute_name);
      GraftGraph *body = read_subgraph (r, graph, name ? name : attribute_name, error);
      if (body == NULL)
        return FALSE;
      g_autofree char *shown = g_strdup_printf ("as_graph %s (%u nodes)", name ? name : "", body->nodes->len);
      graft_node_add_attribute (node, graft_attribute_new_string (attribute_name, shown));
      g_autofree char *body_name = g_strdup_printf ("%s_body", attribute_name);
      graft_node_add_attribute (node, graft_attribute_new_graph (body_name, body));
      graft_node_adopt_subgraph (node, body);
    }
  else
    {
      /* as_custom_obj…: named for the sidebar, not run. */
      g_autofree char *text = json_to_string (value, FALSE);
      g_autofree char *shown = g_strdup_printf ("%s %s", field, text);
      graft_node_add_attribute (node, graft_attribute_new_string (attribute_name, shown));
    }
  return TRUE;
}

static void
add_node_metadata (GraftNode *node, JsonObject *metadata)
{
  g_autoptr(GList) keys = metadata ? json_object_get_members (metadata) : NULL;
  for (GList *l = keys; l; l = l->next)
    {
      const char *text = _graft_exported_member_string (metadata, l->data);
      if (text != NULL)
        graft_node_add_metadata (node, l->data, text);
    }
  const char *trace = graft_node_get_metadata (node, GRAFT_EXPORTED_STACK_TRACE_KEY);
  if (trace != NULL)
    node->source_range = source_range_from_stack_trace (trace);
}

/* "torch.ops.aten.conv2d.default" → ("aten", "conv2d", "default");
 * "_operator.ge" → ("_operator", "ge", NULL). */
void
_graft_exported_split_target (const char *target, char **domain, char **op, char **overload)
{
  const char *rest = g_str_has_prefix (target, "torch.ops.") ? target + strlen ("torch.ops.") : NULL;
  if (rest != NULL)
    {
      g_auto(GStrv) parts = g_strsplit (rest, ".", 3);
      guint n = g_strv_length (parts);
      if (n >= 2)
        {
          *domain = g_strdup (parts[0]);
          *op = g_strdup (parts[1]);
          *overload = n == 3 ? g_strdup (parts[2]) : NULL;
          return;
        }
    }
  const char *dot = strrchr (target, '.');
  *domain = dot ? g_strndup (target, dot - target) : g_strdup ("python");
  *op = g_strdup (dot ? dot + 1 : target);
  *overload = NULL;
}

static gboolean
add_outputs (Reader *r, GraftNode *node, JsonArray *outputs, GError **error)
{
  for (guint i = 0; outputs && i < json_array_get_length (outputs); i++)
    {
      JsonNode *value = NULL;
      const char *field = _graft_exported_union_field (json_array_get_element (outputs, i), &value);
      if (field == NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: output %u is not an Argument", node->name, i);
      if (strcmp (field, "as_tensors") == 0 && JSON_NODE_HOLDS_ARRAY (value))
        {
          /* Tensor[] results (split, unbind): one output per tensor. */
          JsonArray *items = json_node_get_array (value);
          for (guint k = 0; k < json_array_get_length (items); k++)
            {
              JsonNode *item = json_array_get_element (items, k);
              const char *name = JSON_NODE_HOLDS_OBJECT (item) ? _graft_exported_member_string (json_node_get_object (item), "name") : NULL;
              graft_node_add_output (node, name ? value_for (r, name) : NULL);
            }
          continue;
        }
      const char *name = NULL;
      if (value && JSON_NODE_HOLDS_OBJECT (value))
        {
          name = _graft_exported_member_string (json_node_get_object (value), "name");
          if (name == NULL)
            name = _graft_exported_member_string (json_node_get_object (value), "as_name");
        }
      GraftValue *out = name ? value_for (r, name) : NULL;
      if (out != NULL && out->producer != NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "value %s is produced twice (by %s and %s)", name,
                     out->producer->name, node->name);
      graft_node_add_output (node, out);
    }
  return TRUE;
}

/* Positional arguments keep their positions for the aten kernels; their
 * schema names ride beside them (see GraftNode.input_argument_names). */
static void
name_argument (GraftNode *node, const char *name, guint first_input, guint first_attribute)
{
  if (name == NULL || *name == '\0')
    return;
  for (guint i = first_input; i < node->inputs->len; i++)
    graft_node_set_input_argument_name (node, i, name);
  for (guint i = first_attribute; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (strcmp (attribute->name, name) != 0)
        graft_node_set_attribute_argument_name (node, attribute->name, name);
    }
}

static gboolean
read_nodes (Reader *r, JsonArray *nodes, GCancellable *cancellable, GError **error)
{
  for (guint i = 0; i < json_array_get_length (nodes); i++)
    {
      JsonNode *element = json_array_get_element (nodes, i);
      JsonObject *object = JSON_NODE_HOLDS_OBJECT (element) ? json_node_get_object (element) : NULL;
      const char *target = _graft_exported_member_string (object, "target");
      JsonArray *inputs = _graft_exported_member_array (object, "inputs");
      if (target == NULL || inputs == NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "graph.nodes[%u] needs a target and inputs", i);
      if (i % 256 == 0 && g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      const char *name = _graft_exported_member_string (object, "name");
      g_autofree char *fallback_name = g_strdup_printf ("node_%u", i);
      g_autofree char *domain = NULL, *op = NULL, *overload = NULL;
      _graft_exported_split_target (target, &domain, &op, &overload);
      GraftNode *node = graft_graph_add_node (r->graph, domain, op, name ? name : fallback_name);
      char *node_json = json_to_string (element, FALSE);
      node->exported_json = g_bytes_new_take (node_json, strlen (node_json));
      /* "default" is the op's only or main schema: only other overloads
       * (Tensor, Scalar, using_ints…) say something. */
      if (overload != NULL && strcmp (overload, "default") != 0)
        graft_node_add_attribute (node, graft_attribute_new_string ("overload", overload));
      JsonObject *metadata = _graft_exported_member_object (object, "metadata");
      add_node_metadata (node, metadata);
      const char *stack = graft_node_get_metadata (node, GRAFT_EXPORTED_MODULE_STACK_KEY);
      if (stack != NULL)
        move_to_group (node, group_for_module_stack (r->graph, stack));

      for (guint k = 0; k < json_array_get_length (inputs); k++)
        {
          JsonNode *named = json_array_get_element (inputs, k);
          JsonObject *named_object = JSON_NODE_HOLDS_OBJECT (named) ? json_node_get_object (named) : NULL;
          gint64 kind = 1;
          _graft_exported_member_int (named_object, "kind", &kind);
          const char *keyword = _graft_exported_member_string (named_object, "name");
          g_autofree char *attribute_name = kind == 2 && keyword ? g_strdup (keyword) : g_strdup_printf ("arg%u", k);
          guint n_inputs = node->inputs->len, n_attributes = node->attributes->len;
          if (named_object == NULL || !add_argument (r, node, json_object_get_member (named_object, "arg"),
                                                     attribute_name, error))
            return error && *error ? FALSE
                   : fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "node %s: input %u is not a NamedArgument",
                           node->name, k);
          name_argument (node, keyword, n_inputs, n_attributes);
        }
      if (!add_outputs (r, node, _graft_exported_member_array (object, "outputs"), error))
        return FALSE;
    }
  return TRUE;
}

/* The value named by a graph input or output Argument ({"as_tensor":
 * {"name": …}}, {"as_sym_int": {"as_name": …}}); NULL for a constant. */
static const char *
argument_value_name (JsonNode *argument)
{
  JsonNode *value = NULL;
  const char *field = _graft_exported_union_field (argument, &value);
  if (field == NULL || value == NULL || !JSON_NODE_HOLDS_OBJECT (value))
    return NULL;
  JsonObject *object = json_node_get_object (value);
  const char *name = _graft_exported_member_string (object, "name");
  return name ? name : _graft_exported_member_string (object, "as_name");
}

/* A GraphArgument's graph in its own GraftGraph and name scope: its
 * inputs are the operands the higher-order op passes, its outputs the
 * op's results. */
static GraftGraph *
read_subgraph (Reader *r, JsonObject *graph, const char *name, GError **error)
{
  JsonArray *inputs = _graft_exported_member_array (graph, "inputs");
  JsonArray *outputs = _graft_exported_member_array (graph, "outputs");
  JsonArray *nodes = _graft_exported_member_array (graph, "nodes");
  if (inputs == NULL || outputs == NULL || nodes == NULL)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "subgraph %s needs inputs, outputs and nodes", name), NULL;
  GraftGraph *body = graft_graph_new (name);
  GraftGraph *outer_graph = r->graph;
  GHashTable *outer_values = r->value_by_arg;
  g_autoptr(GHashTable) values = g_hash_table_new (g_str_hash, g_str_equal);
  r->graph = body;
  r->value_by_arg = values;
  describe_values (r, graph);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < json_array_get_length (inputs); i++)
    {
      const char *input = argument_value_name (json_array_get_element (inputs, i));
      if (input == NULL)
        ok = fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "subgraph %s: input %u names no value", name, i);
      else
        graft_graph_add_input (body, value_for (r, input));
    }
  ok = ok && read_nodes (r, nodes, NULL, error);
  for (guint i = 0; ok && i < json_array_get_length (outputs); i++)
    {
      const char *output = argument_value_name (json_array_get_element (outputs, i));
      if (output == NULL)
        ok = fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "subgraph %s: output %u is a constant", name, i);
      else
        graft_graph_add_output (body, value_for (r, output));
    }
  r->graph = outer_graph;
  r->value_by_arg = outer_values;
  if (!ok)
    {
      graft_graph_free (body);
      return NULL;
    }
  return body;
}

/* ------------------------------------------------------------------ program */

/* A one-line record ("pt2", "8.6") as text, its first 32 bytes stripped. */
static char *
read_short_record (const Reader *r, const char *record, GError **error)
{
  g_autoptr(GBytes) bytes = graft_torch_archive_read (r->archive, record, error);
  if (bytes == NULL)
    return NULL;
  gsize len;
  const char *data = g_bytes_get_data (bytes, &len);
  return g_strstrip (g_strndup (data, MIN (len, 32)));
}

/* The flat layout also writes the schema version as a "version" record,
 * "8.6"; older programs whose JSON lacks schema_version still have it. */
static gboolean
read_version_record (Reader *r, gint64 *major, gint64 *minor)
{
  if (!r->flat || !graft_torch_archive_has (r->archive, "version"))
    return FALSE;
  g_autofree char *text = read_short_record (r, "version", NULL);
  if (text == NULL)
    return FALSE;
  char *end = NULL;
  *major = g_ascii_strtoll (text, &end, 10);
  if (end == text || *major < 0)
    return FALSE;
  *minor = *end == '.' ? g_ascii_strtoll (end + 1, NULL, 10) : 0;
  return TRUE;
}

static gboolean
check_schema_version (Reader *r, JsonObject *program, GError **error)
{
  JsonObject *version = _graft_exported_member_object (program, "schema_version");
  gint64 major = -1, minor = -1;
  if ((version == NULL || !_graft_exported_member_int (version, "major", &major) || !_graft_exported_member_int (version, "minor", &minor)) &&
      !read_version_record (r, &major, &minor))
    return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r,
                 "this torch.export ExportedProgram (.pt2) names no schema_version {major, minor}, so Graft "
                 "cannot tell which torch.export schema it follows (Graft reads %d.x, as torch 2.13 writes); "
                 "save the program again with torch.export.save(ep, \"model.pt2\"), or export the model with "
                 "torch.onnx.export", GRAFT_EXPORTED_PROGRAM_SCHEMA_MAJOR);
  g_autofree char *text = g_strdup_printf ("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT, major, minor);
  graft_model_add_metadata (r->model, "schema version", text);
  if (major != GRAFT_EXPORTED_PROGRAM_SCHEMA_MAJOR)
    return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r,
                 "this torch.export ExportedProgram (.pt2) has schema version %s, %s than Graft reads (%d.x, "
                 "as torch 2.13 writes); load it with the torch that wrote it and save it as ONNX with "
                 "torch.onnx.export(ep, …), or export the model again with a torch Graft reads",
                 text, major > GRAFT_EXPORTED_PROGRAM_SCHEMA_MAJOR ? "newer" : "older",
                 GRAFT_EXPORTED_PROGRAM_SCHEMA_MAJOR);
  return TRUE;
}

static void
read_range_constraints (Reader *r, JsonObject *program)
{
  JsonObject *ranges = _graft_exported_member_object (program, "range_constraints");
  g_autoptr(GList) symbols = ranges ? json_object_get_members (ranges) : NULL;
  for (GList *l = symbols; l; l = l->next)
    {
      JsonObject *range = _graft_exported_member_object (ranges, l->data);
      gint64 min = 0, max = -1;
      /* null (or a missing bound) is ±infinity. */
      _graft_exported_member_int (range, "min_val", &min);
      if (!_graft_exported_member_int (range, "max_val", &max))
        max = -1;
      g_autofree char *symbol = graft_exported_program_normalize_symbol (l->data);
      graft_model_set_dim_range (r->model, symbol, MAX (min, 0), max);
    }
}

/* What saving needs beyond the IR (pt2/exported-program-writer.h): the
 * program without its graph's nodes and values (nodes and values keep
 * their own JSON), the example inputs torch saved beside it, extra files. */
static void
keep_program (Reader *r, JsonObject *program)
{
  JsonObject *graph = _graft_exported_member_object (_graft_exported_member_object (program, "graph_module"), "graph");
  const char *per_value[] = { "nodes", "tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values" };
  for (guint i = 0; i < G_N_ELEMENTS (per_value); i++)
    if (json_object_has_member (graph, per_value[i]))
      json_object_remove_member (graph, per_value[i]);
  g_autoptr(JsonNode) root = json_node_init_object (json_node_alloc (), program);
  char *text = json_to_string (root, FALSE);
  g_autoptr(GBytes) kept = g_bytes_new_take (text, strlen (text));
  graft_model_set_kept_record (r->model, GRAFT_EXPORTED_KEPT_PROGRAM, kept);
  /* A program built in memory has no records beside it. */
  if (r->archive == NULL)
    return;

  const char *folders[] = { "weights", "constants" };
  for (guint i = 0; !r->flat && i < G_N_ELEMENTS (folders); i++)
    {
      g_autofree char *record = g_strdup_printf ("data/%s/%s_%s_config.json", folders[i], r->model_name, folders[i]);
      g_autofree char *kept_name = g_strdup_printf ("data/%s/model_%s_config.json", folders[i], folders[i]);
      g_autoptr(GBytes) config = graft_torch_archive_has (r->archive, record)
                                 ? graft_torch_archive_read (r->archive, record, NULL) : NULL;
      if (config != NULL)
        graft_model_set_kept_record (r->model, kept_name, config);
    }
  g_autofree char *sample_record = r->flat ? g_strdup ("serialized_example_inputs.pt")
                                           : g_strdup_printf ("data/sample_inputs/%s.pt", r->model_name);
  g_autoptr(GBytes) samples = graft_torch_archive_has (r->archive, sample_record)
                              ? graft_torch_archive_read (r->archive, sample_record, NULL) : NULL;
  if (samples != NULL)
    graft_model_set_kept_record (r->model, GRAFT_EXPORTED_KEPT_SAMPLE_INPUTS, samples);
  for (guint i = 0; i < graft_torch_archive_get_n_entries (r->archive); i++)
    {
      const GraftTorchArchiveEntry *entry = graft_torch_archive_get_entry (r->archive, i);
      const char *extra = r->flat ? "extra_files/" : "extra/";
      if (g_str_has_prefix (entry->record, extra) && entry->record[strlen (extra)] != '\0')
        {
          g_autoptr(GBytes) bytes = graft_torch_archive_read (r->archive, entry->record, NULL);
          g_autofree char *name = g_strdup_printf ("extra/%s", entry->record + strlen (extra));
          if (bytes != NULL)
            graft_model_set_kept_record (r->model, name, bytes);
        }
    }
}

/* Finds the program record and names the layout. */
static gboolean
locate_program (Reader *r, GError **error)
{
  if (graft_torch_archive_has (r->archive, "serialized_exported_program.json"))
    {
      r->flat = TRUE;
      r->program_record = g_strdup ("serialized_exported_program.json");
      r->model_name = g_strdup ("model");
      return TRUE;
    }
  if (graft_torch_archive_has (r->archive, "archive_format"))
    {
      g_autofree char *format = read_short_record (r, "archive_format", error);
      if (format == NULL)
        return FALSE;
      if (strcmp (format, "pt2") != 0)
        return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "archive_format is \"%s\", not \"pt2\"", format);
    }
  if (graft_torch_archive_has (r->archive, "archive_version"))
    {
      g_autofree char *version = read_short_record (r, "archive_version", error);
      if (version == NULL)
        return FALSE;
      if (g_ascii_strtoll (version, NULL, 10) > 0)
        return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "PT2 archive_version %s is newer than Graft reads (0)",
                     version);
    }
  /* models/<name>.json; torch.export.save names it "model". */
  for (guint i = 0; i < graft_torch_archive_get_n_entries (r->archive); i++)
    {
      const GraftTorchArchiveEntry *entry = graft_torch_archive_get_entry (r->archive, i);
      if (g_str_has_prefix (entry->record, "models/") && g_str_has_suffix (entry->record, ".json") &&
          strchr (entry->record + strlen ("models/"), '/') == NULL)
        {
          r->program_record = g_strdup (entry->record);
          r->model_name = g_strndup (entry->record + strlen ("models/"),
                                     strlen (entry->record) - strlen ("models/") - strlen (".json"));
          return TRUE;
        }
    }
  return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "this torch.export PT2 archive has no models/<name>.json "
               "holding the program (an AOTInductor-only package?); save the ExportedProgram with torch.export.save");
}

static gboolean read_program_object (Reader *r, JsonObject *program, GCancellable *cancellable, GError **error);

static gboolean
read_program (Reader *r, GCancellable *cancellable, GError **error)
{
  if (!locate_program (r, error))
    return FALSE;
  graft_model_add_metadata (r->model, "layout", r->flat ? "flat .pt2 (torch 2.1–2.7)" : "PT2 archive (torch ≥ 2.8)");
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *program = parse_json_record (r, r->program_record, parser, error);
  if (program == NULL)
    return FALSE;
  return read_program_object (r, program, cancellable, error);
}

static gboolean
read_program_object (Reader *r, JsonObject *program, GCancellable *cancellable, GError **error)
{
  if (!check_schema_version (r, program, error))
    return FALSE;
  JsonObject *graph_module = _graft_exported_member_object (program, "graph_module");
  JsonObject *graph = _graft_exported_member_object (graph_module, "graph");
  JsonArray *nodes = _graft_exported_member_array (graph, "nodes");
  if (graph == NULL || nodes == NULL)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "graph_module.graph.nodes is missing");
  graft_model_set_producer (r->model, "torch.export", _graft_exported_member_string (program, "torch_version"));
  JsonObject *opsets = _graft_exported_member_object (program, "opset_version");
  g_autoptr(GList) opset_names = opsets ? json_object_get_members (opsets) : NULL;
  for (GList *l = opset_names; l; l = l->next)
    {
      gint64 version;
      if (_graft_exported_member_int (opsets, l->data, &version))
        graft_model_set_opset (r->model, l->data, version);
    }
  /* torch 2.13 writes the input guards it checks as Python code. */
  JsonArray *guards = _graft_exported_member_array (program, "guards_code");
  for (guint i = 0; guards && i < json_array_get_length (guards); i++)
    {
      const char *guard = json_array_get_string_element (guards, i);
      if (guard)
        graft_model_add_metadata (r->model, "guard", guard);
    }
  JsonArray *verifiers = _graft_exported_member_array (program, "verifiers");
  for (guint i = 0; verifiers && i < json_array_get_length (verifiers); i++)
    {
      const char *dialect = json_array_get_string_element (verifiers, i);
      if (dialect)
        graft_model_add_metadata (r->model, "dialect", dialect);
    }

  graft_model_set_graph (r->model, graft_graph_new ("forward"));
  r->graph = graft_model_get_graph (r->model);
  read_range_constraints (r, program);
  describe_values (r, graph);
  if (!read_signature (r, graph_module, error) || !read_nodes (r, nodes, cancellable, error))
    return FALSE;
  graft_graph_update_group_counts (r->graph);
  store_kept_values (r);
  keep_program (r, program);
  return TRUE;
}

/* A program read from archive or, when given, built in memory
 * (program, with its weights in tensors). */
static GraftModel *
read_model (GraftTorchArchive *archive, JsonObject *program, GHashTable *tensors, const char *path,
            GCancellable *cancellable, GError **error)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM);
  g_autoptr(GHashTable) value_by_arg = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) weight_configs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  g_autoptr(GHashTable) kept_by_value = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) json_object_unref);
  Reader r = { .archive = archive, .path = path, .model = model, .value_by_arg = value_by_arg,
               .weight_configs = weight_configs, .json_values_left = PROGRAM_MAX_JSON_VALUES,
               .kept_by_value = kept_by_value, .given_tensors = tensors };
  graft_model_set_path (model, path);
  gboolean ok;
  if (program == NULL)
    ok = read_program (&r, cancellable, error);
  else
    {
      graft_model_add_metadata (model, "layout", "PT2 archive (torch ≥ 2.8)");
      /* keep_program() takes the graph's nodes and values out of the
       * object it reads: it reads its own copy, as it would the file's. */
      g_autoptr(JsonNode) root = json_node_init_object (json_node_alloc (), program);
      g_autofree char *text = json_to_string (root, FALSE);
      g_autoptr(JsonParser) parser = json_parser_new ();
      ok = json_parser_load_from_data (parser, text, -1, error) &&
           read_program_object (&r, json_node_get_object (json_parser_get_root (parser)), cancellable, error);
    }
  g_free (r.program_record);
  g_free (r.model_name);
  return ok ? g_steal_pointer (&model) : NULL;
}

GraftModel *
graft_exported_program_load (GraftTorchArchive *archive, const char *path, GCancellable *cancellable, GError **error)
{
  return read_model (archive, NULL, NULL, path, cancellable, error);
}

GraftModel *
graft_exported_program_new_from_json (JsonObject *program, GHashTable *tensors, const char *path,
                                      GError **error)
{
  return read_model (NULL, program, tensors, path, NULL, error);
}
