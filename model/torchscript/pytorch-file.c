#include "torchscript/pytorch-file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "pt2/exported-program.h"
#include "torchscript/pickle.h"
#include "torchscript/script-builder.h"
#include "torchscript/torch-archive.h"

#define HOW_TO_EXPORT \
  "To open it in Graft, load the model in Python and save a TorchScript or ONNX file: " \
  "torch.jit.save(torch.jit.script(model), \"model.pt\"), or " \
  "torch.jit.save(torch.jit.trace(model, example_inputs), \"model.pt\"), or " \
  "torch.onnx.export(model, example_inputs, \"model.onnx\")."

static const guint8 legacy_magic[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19 };

static GraftModel *
unsupported (GError **error, const char *path, const char *format, ...) G_GNUC_PRINTF (3, 4);

static GraftModel *
unsupported (GError **error, const char *path, const char *format, ...)
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
          GraftTensor *tensor = graft_script_make_tensor (archive, "data", value, name, error);
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
static GraftModel *
load_torch_save (GraftTorchArchive *archive, const char *path, GError **error)
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
        return unsupported (error, path, "this torch.save file holds a dict without tensors, not a model. " HOW_TO_EXPORT);
      graft_model_set_graph (model, graft_graph_new ("state_dict"));
      return g_steal_pointer (&model);
    }
  if (module_state (root) != NULL)
    return load_pickled_module (archive, path, root, error);
  const char *cls = root && (root->kind == GRAFT_PICKLE_OBJECT || root->kind == GRAFT_PICKLE_OPAQUE) ? root->s : first_global;
  if (cls && (root == NULL || root->kind == GRAFT_PICKLE_OBJECT) && strcmp (cls, "collections.OrderedDict") != 0)
    return unsupported (error, path,
                        "this is a whole Python object pickled with torch.save(model) (class %s); loading it needs that "
                        "Python class and running Python code. " HOW_TO_EXPORT, cls);
  if (root == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }
  return unsupported (error, path, "this torch.save file holds a %s, not a model or a state_dict. " HOW_TO_EXPORT,
                      cls ? cls : "plain value");
}

/* ------------------------------------------------------------------ archives */

static GraftModel *
load_torchscript (GraftTorchArchive *archive, const char *path, GCancellable *cancellable, GError **error)
{
  guint64 version;
  if (!graft_torch_archive_get_version (archive, &version, error))
    return NULL;
  if (version > 64)
    return unsupported (error, path, "TorchScript file-format version %" G_GUINT64_FORMAT " is newer than Graft knows "
                        "(1 to 10 are supported)", version);
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  graft_model_set_path (model, path);
  graft_model_set_producer (model, "torch.jit.save", NULL);
  graft_model_set_opset (model, "torchscript", (gint64) version);
  if (graft_torch_archive_has (archive, "bytecode.pkl"))
    graft_model_add_metadata (model, "mobile", "lite-interpreter bytecode.pkl present (TorchScript part shown)");
  if (!graft_script_build (archive, model, cancellable, error))
    return NULL;
  return g_steal_pointer (&model);
}

static GraftModel *
load_zip (const char *path, GCancellable *cancellable, GError **error)
{
  g_autoptr(GraftTorchArchive) archive = graft_torch_archive_open (path, error);
  if (archive == NULL)
    return NULL;
  graft_torch_archive_set_cancellable (archive, cancellable);

  if (graft_exported_program_recognize (archive))
    return graft_exported_program_load (archive, path, cancellable, error);
  if (graft_torch_archive_has (archive, "model.json"))
    return unsupported (error, path,
                        "this is a TorchScript archive from PyTorch before 1.3 (model.json layout). "
                        "Load it with torch.jit.load in a newer PyTorch and save it again with torch.jit.save.");
  gboolean has_code = graft_torch_archive_has_prefix (archive, "code/");
  if (graft_torch_archive_has (archive, "data.pkl") && (has_code || graft_torch_archive_has (archive, "constants.pkl")))
    {
      if (!has_code)
        return unsupported (error, path, "this TorchScript archive has no code/ folder, so its graph cannot be "
                            "rebuilt. Save the module again with torch.jit.save.");
      return load_torchscript (archive, path, cancellable, error);
    }
  if (graft_torch_archive_has (archive, "bytecode.pkl"))
    return unsupported (error, path,
                        "this is a PyTorch Mobile lite-interpreter file (bytecode.pkl) without TorchScript code, so "
                        "its graph cannot be rebuilt. Save the scripted module with torch.jit.save (not "
                        "_save_for_lite_interpreter), or export it with torch.onnx.export.");
  if (graft_torch_archive_has (archive, "data.pkl"))
    return load_torch_save (archive, path, error);
  const char *prefix = graft_torch_archive_get_prefix (archive);
  if (*prefix == '\0')
    return unsupported (error, path, "this zip archive is not a PyTorch file (PyTorch archives keep data.pkl, "
                        "constants.pkl and code/ in one top folder; this one has none)");
  return unsupported (error, path, "this zip archive is not a PyTorch file (no data.pkl, constants.pkl or code/ "
                      "below its top folder \"%s\")", prefix);
}

/* Legacy torch.save stream: magic, protocol, sys_info, then the object pickle. */
static GraftModel *
describe_legacy (const char *path, GError **error)
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
  return unsupported (error, path,
                      "this is a legacy torch.save file (the pre-1.6 pickle stream, or _use_new_zipfile_serialization=False) "
                      "holding %s%s%s%s. Load it with torch.load and save it again: torch.save(obj, f) for weights, "
                      "or torch.jit.save(torch.jit.script(model), \"model.pt\") / torch.onnx.export(model, example_inputs, "
                      "\"model.onnx\") for a model Graft can show as a graph.",
                      what, cls ? " (class " : "", cls ? cls : "", cls ? ")" : "");
}

GraftModel *
graft_pytorch_file_load (const char *path, GCancellable *cancellable, GError **error)
{
  guint8 head[512] = { 0 };
  gsize n = 0;
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: cannot open: %s", path, g_strerror (errno));
      return NULL;
    }
  n = fread (head, 1, sizeof head, f);
  fclose (f);

  if (n >= 4 && memcmp (head, "PK\x03\x04", 4) == 0)
    return load_zip (path, cancellable, error);
  if (n >= 8 && memcmp (head, "PYTORCH1", 8) == 0)
    return unsupported (error, path, "this file uses the container format of a PyTorch preview release (\"PYTORCH1\"), "
                        "which no released PyTorch reads. Re-create the model with a current PyTorch and save it with "
                        "torch.jit.save or torch.onnx.export.");
  if (n >= 8 && memcmp (head + 4, "PTMF", 4) == 0)
    return unsupported (error, path, "this is a PyTorch Mobile flatbuffer file (.ptl/.ff, identifier PTMF), which holds "
                        "bytecode only. Save the scripted module with torch.jit.save instead, or export it with "
                        "torch.onnx.export.");
  if (n >= sizeof legacy_magic && memcmp (head, legacy_magic, sizeof legacy_magic) == 0)
    return describe_legacy (path, error);
  if (n >= 262 && memcmp (head + 257, "ustar", 5) == 0)
    return unsupported (error, path, "this is a tar archive, the torch.save format of PyTorch 0.3 and older. Load it "
                        "with an old PyTorch and save it again with torch.save, then export it with torch.jit.save or "
                        "torch.onnx.export.");
  if (n >= 2 && head[0] == 0x80 && head[1] <= 5)
    return unsupported (error, path, "this is a plain Python pickle, not a PyTorch archive. " HOW_TO_EXPORT);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "%s: not a PyTorch file", path);
  return NULL;
}
