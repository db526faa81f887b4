/* What torch.save writes, as far as it can be shown without running
 * Python: a state_dict or checkpoint as its tensors, a pickled nn.Module
 * as its module tree; other objects and the legacy formats are named
 * with how to get a model file instead. */
#include "pytorch/torch-save.h"

#include <stdio.h>
#include <string.h>

GraftModel *
graft_torch_save_unsupported (GError **error, const char *path, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "%s: %s", path, message);
  return NULL;
}

/* ------------------------------------------------------------------ state dicts */

static gboolean
add_state_tensors (GraftTorchArchive *archive, GraftModel *model, GraftPickleValue *dict, const char *prefix,
                   guint depth, GHashTable *visited, guint *count, GError **error)
{
  /* A pickle may reach one dict from many places (memo references): each
   * is listed once, under its first name, so the walk stays linear. */
  if (!g_hash_table_add (visited, dict))
    return TRUE;
  for (guint k = 0; k + 1 < dict->items->len; k += 2)
    {
      GraftPickleValue *key = g_ptr_array_index (dict->items, k);
      GraftPickleValue *value = g_ptr_array_index (dict->items, k + 1);
      g_autofree char *key_text = key->kind == GRAFT_PICKLE_STRING ? g_strdup (key->s)
                                  : key->kind == GRAFT_PICKLE_INT ? g_strdup_printf ("%" G_GINT64_FORMAT, key->i) : NULL;
      if (key_text == NULL)
        continue;
      g_autofree char *name = *prefix ? g_strdup_printf ("%s.%s", prefix, key_text) : g_strdup (key_text);
      if (value->kind == GRAFT_PICKLE_TENSOR)
        {
          GraftTensor *tensor = graft_torch_archive_load_tensor (archive, "data", value, name, error);
          if (tensor == NULL)
            return FALSE;
          graft_model_add_tensor (model, tensor);
          (*count)++;
        }
      else if (value->kind == GRAFT_PICKLE_DICT && depth < 8)
        {
          if (!add_state_tensors (archive, model, value, name, depth + 1, visited, count, error))
            return FALSE;
        }
    }
  return TRUE;
}

/* The nn.Module state of a pickled module object (what __dict__ held), or
 * NULL if value is no module. */
static GraftPickleValue *
module_state (GraftPickleValue *value)
{
  if (value == NULL || value->kind != GRAFT_PICKLE_OBJECT || value->state == NULL
      || value->state->kind != GRAFT_PICKLE_DICT)
    return NULL;
  if (graft_pickle_dict_lookup (value->state, "_modules") == NULL
      && graft_pickle_dict_lookup (value->state, "_parameters") == NULL)
    return NULL;
  return value->state;
}

/* torch.save(model): the module tree read without running any of its
 * code, as Netron shows it: each submodule's class, and its parameters and
 * buffers named by their path (layer1.0.conv1.weight). */
static gboolean
add_module_tree (GraftTorchArchive *archive, GraftModel *model, GraftPickleValue *module, const char *path,
                 guint depth, GHashTable *visited, guint *n_tensors, guint *n_modules, GError **error)
{
  GraftPickleValue *state = module_state (module);
  const char *tensor_dicts[] = { "_parameters", "_buffers" };
  GraftPickleValue *children;

  /* A module shared by several parents (memo references) is listed once,
   * under its first path, so the walk stays linear. */
  if (state == NULL || depth > 64 || !g_hash_table_add (visited, module))
    return TRUE;
  (*n_modules)++;
  if (*path != '\0')
    {
      g_autofree char *key = g_strdup_printf ("module %s", path);
      graft_model_add_metadata (model, key, module->s);
    }
  for (guint i = 0; i < G_N_ELEMENTS (tensor_dicts); i++)
    {
      GraftPickleValue *tensors = graft_pickle_dict_lookup (state, tensor_dicts[i]);

      if (tensors != NULL && tensors->kind == GRAFT_PICKLE_DICT
          && !add_state_tensors (archive, model, tensors, path, 0, visited, n_tensors, error))
        return FALSE;
    }
  children = graft_pickle_dict_lookup (state, "_modules");
  for (guint k = 0; children != NULL && children->kind == GRAFT_PICKLE_DICT && k + 1 < children->items->len; k += 2)
    {
      GraftPickleValue *key = g_ptr_array_index (children->items, k);
      g_autofree char *child_path = NULL;

      if (key->kind != GRAFT_PICKLE_STRING)
        continue;
      child_path = *path ? g_strdup_printf ("%s.%s", path, key->s) : g_strdup (key->s);
      if (!add_module_tree (archive, model, g_ptr_array_index (children->items, k + 1), child_path, depth + 1,
                            visited, n_tensors, n_modules, error))
        return FALSE;
    }
  return TRUE;
}

static GraftModel *
load_pickled_module (GraftTorchArchive *archive, const char *path, GraftPickleValue *root, GError **error)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_STATE_DICT);
  g_autoptr(GHashTable) visited = g_hash_table_new (NULL, NULL);
  guint n_tensors = 0, n_modules = 0;
  g_autofree char *counts = NULL;

  graft_model_set_path (model, path);
  graft_model_set_producer (model, "torch.save(model)", NULL);
  graft_model_add_metadata (model, "pickled module", root->s);
  if (!add_module_tree (archive, model, root, "", 0, visited, &n_tensors, &n_modules, error))
    return NULL;
  counts = g_strdup_printf ("%u modules, %u parameters and buffers", n_modules, n_tensors);
  graft_model_add_metadata (model, "module tree", counts);
  graft_model_set_graph (model, graft_graph_new ("module"));
  return g_steal_pointer (&model);
}

/* torch.save zip: a state_dict / checkpoint opens as a list of tensors, a
 * pickled nn.Module as its module tree; anything else is explained. */
GraftModel *
graft_torch_save_load (GraftTorchArchive *archive, const char *path, GError **error)
{
  g_autoptr(GBytes) bytes = graft_torch_archive_read (archive, "data.pkl", error);
  if (bytes == NULL)
    return NULL;
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_autofree char *first_global = graft_pickle_peek_first_global (data, len);
  g_autofree char *where = g_strdup_printf ("%s: data.pkl", path);
  g_autoptr(GError) local_error = NULL;
  g_autoptr(GraftPickleValue) root = graft_pickle_load_budgeted (data, len, where, NULL,
                                                                 graft_torch_archive_get_pickle_budget (archive),
                                                                 &local_error);

  /* A load stopped by the user or by a limit says so, whatever the file. */
  if (root == NULL && (g_error_matches (local_error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED) ||
                       g_error_matches (local_error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE)))
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }

  if (root && root->kind == GRAFT_PICKLE_DICT)
    {
      g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_STATE_DICT);
      guint count = 0;
      graft_model_set_path (model, path);
      graft_model_set_producer (model, "torch.save", NULL);
      g_autoptr(GHashTable) visited = g_hash_table_new (NULL, NULL);
      if (!add_state_tensors (archive, model, root, "", 0, visited, &count, error))
        return NULL;
      if (count == 0)
        return graft_torch_save_unsupported (error, path, "this torch.save file holds a dict without tensors, not a model. " GRAFT_TORCH_HOW_TO_EXPORT);
      graft_model_set_graph (model, graft_graph_new ("state_dict"));
      return g_steal_pointer (&model);
    }
  if (module_state (root) != NULL)
    return load_pickled_module (archive, path, root, error);
  const char *cls = root && (root->kind == GRAFT_PICKLE_OBJECT || root->kind == GRAFT_PICKLE_OPAQUE) ? root->s : first_global;
  if (cls && (root == NULL || root->kind == GRAFT_PICKLE_OBJECT) && strcmp (cls, "collections.OrderedDict") != 0)
    return graft_torch_save_unsupported (error, path,
                        "this is a whole Python object pickled with torch.save(model) (class %s); loading it needs that "
                        "Python class and running Python code. " GRAFT_TORCH_HOW_TO_EXPORT, cls);
  if (root == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }
  return graft_torch_save_unsupported (error, path, "this torch.save file holds a %s, not a model or a state_dict. " GRAFT_TORCH_HOW_TO_EXPORT,
                      cls ? cls : "plain value");
}

/* Legacy torch.save stream: magic, protocol, sys_info, then the object pickle. */
GraftModel *
graft_torch_save_describe_legacy (const char *path, GError **error)
{
  g_autoptr(GMappedFile) mapped = g_mapped_file_new (path, FALSE, NULL);
  const char *what = "an object";
  g_autofree char *cls = NULL;
  if (mapped)
    {
      const guint8 *data = (const guint8 *) g_mapped_file_get_contents (mapped);
      gsize len = g_mapped_file_get_length (mapped), pos = 0;
      g_autofree char *where = g_strdup_printf ("%s: legacy pickle stream", path);
      for (int k = 0; k < 4 && pos < len; k++)
        {
          gsize used = 0;
          g_autoptr(GraftPickleValue) v = graft_pickle_load (data + pos, len - pos, where, &used, NULL);
          if (v == NULL)
            break;
          pos += used;
          if (k == 3)
            {
              if (v->kind == GRAFT_PICKLE_DICT)
                what = "a state_dict (weights only)";
              else if (v->kind == GRAFT_PICKLE_OBJECT || v->kind == GRAFT_PICKLE_OPAQUE)
                {
                  what = "a whole Python object pickled with torch.save(model)";
                  cls = g_strdup (v->s);
                }
            }
        }
    }
  return graft_torch_save_unsupported (error, path,
                      "this is a legacy torch.save file (the pre-1.6 pickle stream, or _use_new_zipfile_serialization=False) "
                      "holding %s%s%s%s. Load it with torch.load and save it again: torch.save(obj, f) for weights, "
                      "or torch.jit.save(torch.jit.script(model), \"model.pt\") / torch.onnx.export(model, example_inputs, "
                      "\"model.onnx\") for a model Graft can show as a graph.",
                      what, cls ? " (class " : "", cls ? cls : "", cls ? ")" : "");
}

