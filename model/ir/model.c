#include "ir/model.h"
#include "ir/model-error.h"

#include <string.h>

typedef struct {
  gpointer data;
  GDestroyNotify destroy;
} KeepAlive;

struct _GraftModel {
  GObject parent_instance;

  GraftModelFormat format;
  char *path;
  char *producer_name;
  char *producer_version;
  char *domain;
  char *doc_string;
  gint64 model_version;
  gint64 ir_version;
  GHashTable *opsets;        /* interned domain → gint64* */
  GPtrArray *opset_domains;  /* sorted cache, rebuilt on change */
  GPtrArray *opset_order;    /* interned domains in the order they were set */
  GBytes *onnx_kept_fields;
  GHashTable *kept_records;  /* record name → GBytes */
  GPtrArray *metadata_keys;
  GPtrArray *metadata_values;
  GraftGraph *graph;
  GPtrArray *functions;
  GPtrArray *tensors;
  GArray *keep_alive;
  GHashTable *dim_ranges;    /* interned symbol → gint64[2] */
};

G_DEFINE_QUARK (graft-model-error-quark, graft_model_error)

G_DEFINE_FINAL_TYPE (GraftModel, graft_model, G_TYPE_OBJECT)

void
graft_function_free (GraftFunction *function)
{
  if (function == NULL)
    return;
  g_free (function->name);
  g_free (function->domain);
  g_free (function->doc_string);
  g_clear_pointer (&function->attribute_names, g_ptr_array_unref);
  g_clear_pointer (&function->body, graft_graph_free);
  g_clear_pointer (&function->opsets, g_hash_table_unref);
  g_clear_pointer (&function->opset_order, g_ptr_array_unref);
  g_clear_pointer (&function->onnx_kept_fields, g_bytes_unref);
  g_free (function);
}

const char *
graft_model_format_to_string (GraftModelFormat format)
{
  switch (format)
    {
    case GRAFT_MODEL_FORMAT_ONNX: return "onnx";
    case GRAFT_MODEL_FORMAT_TORCHSCRIPT: return "torchscript";
    case GRAFT_MODEL_FORMAT_STATE_DICT: return "state_dict";
    case GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM: return "exported_program";
    case GRAFT_MODEL_FORMAT_EXECUTORCH: return "executorch";
    default: return "unknown";
    }
}

static void
graft_model_finalize (GObject *object)
{
  GraftModel *self = GRAFT_MODEL (object);

  /* Graph and tensors reference memory the keep-alive objects own. */
  g_clear_pointer (&self->graph, graft_graph_free);
  g_clear_pointer (&self->functions, g_ptr_array_unref);
  g_clear_pointer (&self->tensors, g_ptr_array_unref);
  for (guint i = self->keep_alive->len; i > 0; i--)
    {
      KeepAlive *k = &g_array_index (self->keep_alive, KeepAlive, i - 1);
      if (k->destroy)
        k->destroy (k->data);
    }
  g_array_unref (self->keep_alive);
  g_clear_pointer (&self->dim_ranges, g_hash_table_unref);
  g_hash_table_unref (self->opsets);
  g_ptr_array_unref (self->opset_domains);
  g_ptr_array_unref (self->opset_order);
  g_clear_pointer (&self->onnx_kept_fields, g_bytes_unref);
  g_clear_pointer (&self->kept_records, g_hash_table_unref);
  g_ptr_array_unref (self->metadata_keys);
  g_ptr_array_unref (self->metadata_values);
  g_free (self->path);
  g_free (self->producer_name);
  g_free (self->producer_version);
  g_free (self->domain);
  g_free (self->doc_string);

  G_OBJECT_CLASS (graft_model_parent_class)->finalize (object);
}

static void
graft_model_class_init (GraftModelClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = graft_model_finalize;
}

static void
graft_model_init (GraftModel *self)
{
  self->opsets = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  self->opset_domains = g_ptr_array_new ();
  self->opset_order = g_ptr_array_new ();
  self->metadata_keys = g_ptr_array_new_with_free_func (g_free);
  self->metadata_values = g_ptr_array_new_with_free_func (g_free);
  self->functions = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_function_free);
  self->tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_tensor_unref);
  self->keep_alive = g_array_new (FALSE, FALSE, sizeof (KeepAlive));
  self->ir_version = -1;
  self->model_version = -1;
}

GraftModel *
graft_model_new (GraftModelFormat format)
{
  GraftModel *self = g_object_new (GRAFT_TYPE_MODEL, NULL);

  self->format = format;
  return self;
}

GraftModelFormat
graft_model_get_format (GraftModel *self)
{
  return self->format;
}

const char *
graft_model_get_path (GraftModel *self)
{
  return self->path;
}

void
graft_model_set_path (GraftModel *self, const char *path)
{
  g_free (self->path);
  self->path = g_strdup (path);
}

const char *
graft_model_get_producer_name (GraftModel *self)
{
  return self->producer_name;
}

const char *
graft_model_get_producer_version (GraftModel *self)
{
  return self->producer_version;
}

void
graft_model_set_producer (GraftModel *self, const char *name, const char *version)
{
  g_free (self->producer_name);
  g_free (self->producer_version);
  self->producer_name = g_strdup (name);
  self->producer_version = g_strdup (version);
}

const char *
graft_model_get_domain (GraftModel *self)
{
  return self->domain;
}

void
graft_model_set_domain (GraftModel *self, const char *domain)
{
  g_free (self->domain);
  self->domain = g_strdup (domain);
}

gint64
graft_model_get_model_version (GraftModel *self)
{
  return self->model_version;
}

void
graft_model_set_model_version (GraftModel *self, gint64 version)
{
  self->model_version = version;
}

gint64
graft_model_get_ir_version (GraftModel *self)
{
  return self->ir_version;
}

void
graft_model_set_ir_version (GraftModel *self, gint64 version)
{
  self->ir_version = version;
}

const char *
graft_model_get_doc_string (GraftModel *self)
{
  return self->doc_string;
}

void
graft_model_set_doc_string (GraftModel *self, const char *doc)
{
  g_free (self->doc_string);
  self->doc_string = g_strdup (doc);
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char **) a, *(const char **) b);
}

void
graft_model_set_opset (GraftModel *self, const char *domain, gint64 version)
{
  const char *key = graft_canonical_domain (domain);
  gint64 *value = g_new (gint64, 1);
  GHashTableIter iter;
  gpointer k;

  *value = version;
  if (!g_hash_table_contains (self->opsets, key))
    g_ptr_array_add (self->opset_order, (gpointer) key);
  g_hash_table_replace (self->opsets, (gpointer) key, value);
  g_ptr_array_set_size (self->opset_domains, 0);
  g_hash_table_iter_init (&iter, self->opsets);
  while (g_hash_table_iter_next (&iter, &k, NULL))
    g_ptr_array_add (self->opset_domains, k);
  g_ptr_array_sort (self->opset_domains, compare_strings);
}

gint64
graft_model_get_opset (GraftModel *self, const char *domain)
{
  gint64 *value = g_hash_table_lookup (self->opsets, graft_canonical_domain (domain));

  return value ? *value : -1;
}

GPtrArray *
graft_model_get_opset_domains (GraftModel *self)
{
  return self->opset_domains;
}

GPtrArray *
graft_model_get_opset_order (GraftModel *self)
{
  return self->opset_order;
}

GVariant *
graft_model_save_opsets (GraftModel *self)
{
  GVariantBuilder builder;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a(sx)"));
  for (guint i = 0; i < self->opset_order->len; i++)
    {
      const char *domain = g_ptr_array_index (self->opset_order, i);
      g_variant_builder_add (&builder, "(sx)", domain, graft_model_get_opset (self, domain));
    }
  return g_variant_ref_sink (g_variant_builder_end (&builder));
}

void
graft_model_restore_opsets (GraftModel *self, GVariant *saved)
{
  GVariantIter iter;
  const char *domain;
  gint64 version;

  g_hash_table_remove_all (self->opsets);
  g_ptr_array_set_size (self->opset_order, 0);
  g_ptr_array_set_size (self->opset_domains, 0);
  g_variant_iter_init (&iter, saved);
  while (g_variant_iter_next (&iter, "(&sx)", &domain, &version))
    graft_model_set_opset (self, domain, version);
}

GBytes *
graft_model_get_onnx_kept_fields (GraftModel *self)
{
  return self->onnx_kept_fields;
}

void
graft_model_set_onnx_kept_fields (GraftModel *self, GBytes *kept)
{
  g_clear_pointer (&self->onnx_kept_fields, g_bytes_unref);
  self->onnx_kept_fields = kept ? g_bytes_ref (kept) : NULL;
}

GBytes *
graft_model_get_kept_record (GraftModel *self, const char *name)
{
  return self->kept_records ? g_hash_table_lookup (self->kept_records, name) : NULL;
}

void
graft_model_set_kept_record (GraftModel *self, const char *name, GBytes *bytes)
{
  if (self->kept_records == NULL)
    self->kept_records = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_bytes_unref);
  if (bytes == NULL)
    g_hash_table_remove (self->kept_records, name);
  else
    g_hash_table_insert (self->kept_records, g_strdup (name), g_bytes_ref (bytes));
}

GPtrArray *
graft_model_list_kept_records (GraftModel *self)
{
  GPtrArray *names = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer key;

  if (self->kept_records != NULL)
    {
      g_hash_table_iter_init (&iter, self->kept_records);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        g_ptr_array_add (names, key);
    }
  g_ptr_array_sort (names, compare_strings);
  return names;
}

void
graft_model_add_metadata (GraftModel *self, const char *key, const char *value)
{
  g_ptr_array_add (self->metadata_keys, g_strdup (key ? key : ""));
  g_ptr_array_add (self->metadata_values, g_strdup (value ? value : ""));
}

guint
graft_model_get_n_metadata (GraftModel *self)
{
  return self->metadata_keys->len;
}

void
graft_model_get_metadata (GraftModel *self, guint index, const char **key, const char **value)
{
  g_return_if_fail (index < self->metadata_keys->len);
  if (key)
    *key = g_ptr_array_index (self->metadata_keys, index);
  if (value)
    *value = g_ptr_array_index (self->metadata_values, index);
}

GraftGraph *
graft_model_get_graph (GraftModel *self)
{
  return self->graph;
}

void
graft_model_set_graph (GraftModel *self, GraftGraph *graph)
{
  if (self->graph != graph)
    g_clear_pointer (&self->graph, graft_graph_free);
  self->graph = graph;
}

GraftGraph *
graft_model_steal_graph (GraftModel *self)
{
  return g_steal_pointer (&self->graph);
}

GPtrArray *
graft_model_get_functions (GraftModel *self)
{
  return self->functions;
}

void
graft_model_add_function (GraftModel *self, GraftFunction *function)
{
  g_ptr_array_add (self->functions, function);
}

GraftFunction *
graft_model_lookup_function (GraftModel *self, const char *domain, const char *name)
{
  const char *canonical = graft_canonical_domain (domain);

  for (guint i = 0; i < self->functions->len; i++)
    {
      GraftFunction *function = g_ptr_array_index (self->functions, i);
      if (strcmp (function->name, name) == 0 && graft_canonical_domain (function->domain) == canonical)
        return function;
    }
  return NULL;
}

GPtrArray *
graft_model_get_tensors (GraftModel *self)
{
  return self->tensors;
}

void
graft_model_add_tensor (GraftModel *self, GraftTensor *tensor)
{
  g_ptr_array_add (self->tensors, tensor);
}

void
graft_model_keep_alive (GraftModel *self, gpointer data, GDestroyNotify destroy)
{
  KeepAlive k = { data, destroy };

  g_array_append_val (self->keep_alive, k);
}

char *
graft_model_describe (GraftModel *self)
{
  GString *out = g_string_new (NULL);

  switch (self->format)
    {
    case GRAFT_MODEL_FORMAT_ONNX:
      g_string_append (out, "ONNX");
      if (graft_model_get_opset (self, "onnx") >= 0)
        g_string_append_printf (out, " · opset %" G_GINT64_FORMAT, graft_model_get_opset (self, "onnx"));
      break;
    case GRAFT_MODEL_FORMAT_TORCHSCRIPT:
      g_string_append (out, "TorchScript");
      if (graft_model_get_opset (self, "torchscript") >= 0)
        g_string_append_printf (out, " · format v%" G_GINT64_FORMAT, graft_model_get_opset (self, "torchscript"));
      break;
    case GRAFT_MODEL_FORMAT_STATE_DICT:
      g_string_append_printf (out, "PyTorch state_dict · %u tensors", self->tensors->len);
      break;
    case GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM:
      /* The program's versions are its serde schema and the torch that
       * wrote it; its "aten" opset entry is a constant that says nothing. */
      g_string_append (out, "torch.export program");
      for (guint i = 0; i < graft_model_get_n_metadata (self); i++)
        {
          const char *key, *value;

          graft_model_get_metadata (self, i, &key, &value);
          if (strcmp (key, "schema version") == 0)
            g_string_append_printf (out, " · schema %s", value);
        }
      if (self->producer_version && *self->producer_version)
        g_string_append_printf (out, " · torch %s", self->producer_version);
      return g_string_free (out, FALSE);
    case GRAFT_MODEL_FORMAT_EXECUTORCH:
      /* "ExecuTorch program · ET12": the schema is its version. */
      g_string_append (out, "ExecuTorch program");
      if (self->producer_version && *self->producer_version)
        g_string_append_printf (out, " · %s", self->producer_version);
      return g_string_free (out, FALSE);
    default:
      g_string_append (out, "model");
      break;
    }
  if (self->producer_name && *self->producer_name)
    {
      g_string_append_printf (out, " · %s", self->producer_name);
      if (self->producer_version && *self->producer_version)
        g_string_append_printf (out, " %s", self->producer_version);
    }
  return g_string_free (out, FALSE);
}

void
graft_model_set_dim_range (GraftModel *self, const char *symbol, gint64 min, gint64 max)
{
  gint64 *range = g_new (gint64, 2);

  if (self->dim_ranges == NULL)
    self->dim_ranges = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  range[0] = min;
  range[1] = max;
  g_hash_table_replace (self->dim_ranges, (gpointer) g_intern_string (symbol), range);
}

void
graft_model_remove_dim_range (GraftModel *self, const char *symbol)
{
  if (self->dim_ranges != NULL && symbol != NULL)
    g_hash_table_remove (self->dim_ranges, symbol);
}

gboolean
graft_model_get_dim_range (GraftModel *self, const char *symbol, gint64 *min, gint64 *max)
{
  const gint64 *range = self->dim_ranges && symbol ? g_hash_table_lookup (self->dim_ranges, symbol) : NULL;

  if (range == NULL)
    return FALSE;
  if (min)
    *min = range[0];
  if (max)
    *max = range[1];
  return TRUE;
}

char *
graft_model_describe_dim_range (GraftModel *self, const char *symbol)
{
  gint64 min, max;

  if (!graft_model_get_dim_range (self, symbol, &min, &max))
    return NULL;
  if (max < 0)
    return g_strdup_printf ("≥ %" G_GINT64_FORMAT, min);
  return g_strdup_printf ("∈ [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", min, max);
}

static int
compare_symbols (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const char *const *) a, *(const char *const *) b);
}

GPtrArray *
graft_model_list_dim_ranges (GraftModel *self)
{
  GPtrArray *symbols = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer key;

  if (self->dim_ranges == NULL)
    return symbols;
  g_hash_table_iter_init (&iter, self->dim_ranges);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    g_ptr_array_add (symbols, key);
  g_ptr_array_sort (symbols, compare_symbols);
  return symbols;
}
