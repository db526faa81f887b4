#include "formats.h"
#include "ir/model-error.h"
#include "onnx/writer.h"
#include "pt2/exported-program-writer.h"

#include <string.h>

static gboolean
write_onnx (GraftModel *model, const char *path, gboolean overwrite_source, GError **error)
{
  return graft_onnx_write_file (model, path, overwrite_source ? GRAFT_ONNX_WRITE_OVERWRITE_SOURCE
                                                              : GRAFT_ONNX_WRITE_NONE, error);
}

static const char *const onnx_extensions[] = { ".onnx", NULL };
static const char *const torch_extensions[] = { ".pt", ".pth", ".ptl", ".torchscript", NULL };
static const char *const pt2_extensions[] = { ".pt2", NULL };
static const char *const pte_extensions[] = { ".pte", NULL };

static const GraftFormat formats[] = {
  { "onnx", "ONNX model", "application/x-onnx", onnx_extensions,
    GRAFT_FORMAT_FROM (GRAFT_MODEL_FORMAT_ONNX), write_onnx },
  { "torchscript", "TorchScript archive", "application/x-pytorch", torch_extensions, 0, NULL },
  { "pt2", "torch.export program", "application/x-pytorch-exported-program", pt2_extensions,
    GRAFT_FORMAT_FROM (GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM), graft_exported_program_write_file },
  { "pte", "ExecuTorch program", "application/x-executorch-program", pte_extensions, 0, NULL },
  { NULL },
};

const GraftFormat *
graft_formats (void)
{
  return formats;
}

const GraftFormat *
graft_format_lookup (const char *id)
{
  for (const GraftFormat *format = formats; format->id != NULL; format++)
    if (g_ascii_strcasecmp (format->id, id) == 0)
      return format;
  return NULL;
}

const GraftFormat *
graft_format_for_path (const char *path)
{
  gsize len = strlen (path);
  for (const GraftFormat *format = formats; format->id != NULL; format++)
    for (guint i = 0; format->extensions[i] != NULL; i++)
      {
        gsize ext_len = strlen (format->extensions[i]);
        if (len > ext_len && g_ascii_strcasecmp (path + len - ext_len, format->extensions[i]) == 0)
          return format;
      }
  return NULL;
}

gboolean
graft_format_is_model_path (const char *path)
{
  return graft_format_for_path (path) != NULL;
}

char **
graft_format_list_patterns (void)
{
  GPtrArray *patterns = g_ptr_array_new ();
  for (const GraftFormat *format = formats; format->id != NULL; format++)
    for (guint i = 0; format->extensions[i] != NULL; i++)
      g_ptr_array_add (patterns, g_strconcat ("*", format->extensions[i], NULL));
  g_ptr_array_add (patterns, NULL);
  return (char **) g_ptr_array_free (patterns, FALSE);
}

static char *
describe_writable (GraftModelFormat model_format)
{
  g_autoptr(GString) names = g_string_new (NULL);
  for (const GraftFormat *format = formats; format->id != NULL; format++)
    if (format->writes_from & GRAFT_FORMAT_FROM (model_format))
      g_string_append_printf (names, "%s%s", names->len ? ", " : "", format->extensions[0]);
  return g_string_free (g_steal_pointer (&names), FALSE);
}

gboolean
graft_format_save (GraftModel *model, const char *path, const char *format_id, gboolean overwrite_source,
                   GError **error)
{
  const GraftFormat *format = format_id ? graft_format_lookup (format_id) : graft_format_for_path (path);
  GraftModelFormat model_format = graft_model_get_format (model);

  if (format == NULL && format_id != NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "unknown format '%s' (Graft writes onnx and pt2)", format_id);
      return FALSE;
    }
  /* A name of no known format (a pipe, "model.bin") gets ONNX, as Graft
   * always saved. */
  if (format == NULL)
    format = graft_format_lookup ("onnx");
  if (format->write == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "cannot save '%s': Graft reads %ss but does not write them; save as .onnx%s", path, format->title,
                   model_format == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM ? " or .pt2" : "");
      return FALSE;
    }
  if (!(format->writes_from & GRAFT_FORMAT_FROM (model_format)))
    {
      g_autofree char *writable = describe_writable (model_format);
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "cannot save '%s': a %s model cannot be written as a %s%s%s", path,
                   graft_model_format_to_string (model_format), format->title,
                   *writable ? "; it can be saved as " : "", writable);
      return FALSE;
    }
  return format->write (model, path, overwrite_source, error);
}
