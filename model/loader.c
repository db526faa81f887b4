#include "loader.h"
#include "onnx/reader.h"
#include "pt2/exported-program.h"
#include "pytorch/torch-save.h"
#include "torchscript/script-builder.h"
#include "pte/executorch-program.h"

#include <string.h>
#include <errno.h>
#include <glib/gstdio.h>


/* torch.save before 1.6 starts with the pickled protocol-2 magic number
 * 0x1950a86a20f9469cfc6c. */
static const guint8 legacy_torch_magic[] = {
  0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19,
};

/* Enough for the tar header's "ustar" at offset 257. */
#define SNIFF_LENGTH 512

GraftFileKind
graft_sniff_file_kind (const guint8 *head, gsize head_len)
{
  if (head_len == 0)
    return GRAFT_FILE_KIND_UNKNOWN;
  if (head_len >= 4 && memcmp (head, "PK\x03\x04", 4) == 0)
    return GRAFT_FILE_KIND_ZIP;
  if (head_len >= sizeof legacy_torch_magic && memcmp (head, legacy_torch_magic, sizeof legacy_torch_magic) == 0)
    return GRAFT_FILE_KIND_TORCH_LEGACY;
  if (head_len >= 262 && memcmp (head + 257, "ustar", 5) == 0)
    return GRAFT_FILE_KIND_TORCH_TAR;
  if (head_len >= 8 && memcmp (head + 4, "PTMF", 4) == 0)
    return GRAFT_FILE_KIND_FLATBUFFER_MOBILE;
  /* ExecuTorch's program schema: file_identifier "ET" + two digits of the
   * schema version ("ET12" from executorch 0.4 on). */
  if (head_len >= 8 && head[4] == 'E' && head[5] == 'T' && g_ascii_isdigit (head[6]) && g_ascii_isdigit (head[7]))
    return GRAFT_FILE_KIND_EXECUTORCH;
  if (head_len >= 8 && memcmp (head, "PYTORCH1", 8) == 0)
    return GRAFT_FILE_KIND_TORCH_PREVIEW;
  /* PROTO opcode: no ModelProto starts with tag 0x80 followed by 2..5. */
  if (head_len >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
    return GRAFT_FILE_KIND_PICKLE;
  /* ONNX has no magic number: anything else is tried as a ModelProto,
   * whose reader names the first byte that does not parse. */
  return GRAFT_FILE_KIND_ONNX;
}

/* Formats people mistake for models Graft opens. Only consulted after the
 * ONNX reader has refused a file, to say what it is instead. */
static const char *
describe_foreign_format (const guint8 *head, gsize head_len)
{
  gsize skip = 0;

  if (head_len >= 2 && head[0] == 0x1f && head[1] == 0x8b)
    return "a gzip-compressed file; decompress it first";
  if (head_len >= 4 && memcmp (head, "\x89HDF", 4) == 0)
    return "an HDF5 file (Keras .h5?), which Graft does not read; export the model to ONNX";
  if (head_len >= 8 && memcmp (head + 4, "TFL3", 4) == 0)
    return "a TensorFlow Lite model, which Graft does not read; convert it to ONNX (tf2onnx)";
  if (head_len >= 10 && head[8] == '{' && head[9] == '"')
    return "a safetensors file: weights only, no graph";
  while (skip < head_len && g_ascii_isspace (head[skip]))
    skip++;
  if (head_len - skip >= 10
      && (memcmp (head + skip, "ir_version", 10) == 0 || memcmp (head + skip, "producer_n", 10) == 0
          || memcmp (head + skip, "opset_impo", 10) == 0 || memcmp (head + skip, "graph {", 7) == 0))
    return "an ONNX model in protobuf text format; save it in the binary format (onnx.save) to open it";
  return NULL;
}

/* Only a file named .onnx is surely meant as ONNX. Anything else was
 * recognised by its content alone, and what failed was the last guess:
 * the message must not claim the file is a broken ONNX model. */
static void
describe_unrecognised (const char *path, const guint8 *head, gsize head_len, const GError *onnx_error,
                       GError **error)
{
  g_autoptr(GString) start = g_string_new (NULL);
  const char *reason = strstr (onnx_error->message, "ONNX file: ");

  g_autofree char *basename = g_path_get_basename (path);

  if (reason != NULL)
    reason += strlen ("ONNX file: ");
  else if (g_str_has_prefix (onnx_error->message, path) && g_str_has_prefix (onnx_error->message + strlen (path), ": "))
    reason = onnx_error->message + strlen (path) + 2;
  else if (g_str_has_prefix (onnx_error->message, basename)
           && g_str_has_prefix (onnx_error->message + strlen (basename), ": "))
    reason = onnx_error->message + strlen (basename) + 2;
  else
    reason = onnx_error->message;
  for (gsize i = 0; i < MIN (head_len, 8); i++)
    g_string_append_printf (start, "%s%02x", i > 0 ? " " : "", head[i]);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "%s: neither a PyTorch archive nor ONNX: it starts with %s, which is no PyTorch signature "
               "(zip, pickle, tar), and it does not parse as an ONNX model (%s)",
               path, start->str, reason);
}

static const char *
describe_file_type (mode_t mode)
{
  if (S_ISFIFO (mode))
    return "named pipe (FIFO)";
  if (S_ISCHR (mode))
    return "character device";
  if (S_ISBLK (mode))
    return "block device";
  if (S_ISSOCK (mode))
    return "socket";
  return "special file";
}

static gboolean
read_head (const char *path, guint8 *head, gsize *head_len, GError **error)
{
  FILE *file;
  GStatBuf st;

  if (g_stat (path, &st) != 0)
    {
      int saved = errno;
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: %s", path, g_strerror (saved));
      return FALSE;
    }
  if (S_ISDIR (st.st_mode))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: is a folder, not a model file", path);
      return FALSE;
    }
  /* Opening a FIFO blocks until a writer appears, and a device or socket has
   * no end to read to: only regular files (or symlinks to one, which g_stat
   * follows) are models. */
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: is a %s, not a regular model file", path,
                   describe_file_type (st.st_mode));
      return FALSE;
    }
  file = g_fopen (path, "rb");
  if (file == NULL)
    {
      int saved = errno;
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: %s", path, g_strerror (saved));
      return FALSE;
    }
  *head_len = fread (head, 1, SNIFF_LENGTH, file);
  if (ferror (file))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s: read error", path);
      fclose (file);
      return FALSE;
    }
  fclose (file);
  if (*head_len == 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED, "%s: the file is empty (0 bytes)", path);
      return FALSE;
    }
  return TRUE;
}

/* A zip archive: torch.export's .pt2, a TorchScript archive, or what
 * torch.save wrote; other zips are named as not PyTorch files. */
static GraftModel *
load_pytorch_archive (const char *path, GCancellable *cancellable, GError **error)
{
  g_autoptr(GraftTorchArchive) archive = graft_torch_archive_open (path, error);
  if (archive == NULL)
    return NULL;
  graft_torch_archive_set_cancellable (archive, cancellable);

  if (graft_exported_program_recognize (archive))
    return graft_exported_program_load (archive, path, cancellable, error);
  if (graft_torch_archive_has (archive, "model.json"))
    return graft_torch_save_unsupported (error, path,
                        "this is a TorchScript archive from PyTorch before 1.3 (model.json layout). "
                        "Load it with torch.jit.load in a newer PyTorch and save it again with torch.jit.save.");
  gboolean has_code = graft_torch_archive_has_prefix (archive, "code/");
  if (graft_torch_archive_has (archive, "data.pkl") && (has_code || graft_torch_archive_has (archive, "constants.pkl")))
    {
      if (!has_code)
        return graft_torch_save_unsupported (error, path, "this TorchScript archive has no code/ folder, so its graph cannot be "
                            "rebuilt. Save the module again with torch.jit.save.");
      return graft_torchscript_load (archive, path, cancellable, error);
    }
  if (graft_torch_archive_has (archive, "bytecode.pkl"))
    return graft_torch_save_unsupported (error, path,
                        "this is a PyTorch Mobile lite-interpreter file (bytecode.pkl) without TorchScript code, so "
                        "its graph cannot be rebuilt. Save the scripted module with torch.jit.save (not "
                        "_save_for_lite_interpreter), or export it with torch.onnx.export.");
  if (graft_torch_archive_has (archive, "data.pkl"))
    return graft_torch_save_load (archive, path, error);
  const char *prefix = graft_torch_archive_get_prefix (archive);
  if (*prefix == '\0')
    return graft_torch_save_unsupported (error, path, "this zip archive is not a PyTorch file (PyTorch archives keep data.pkl, "
                        "constants.pkl and code/ in one top folder; this one has none)");
  return graft_torch_save_unsupported (error, path, "this zip archive is not a PyTorch file (no data.pkl, constants.pkl or code/ "
                      "below its top folder \"%s\")", prefix);
}

GraftModel *
graft_model_load (const char *path, GCancellable *cancellable, GraftProgressFunc progress, gpointer progress_data,
                  GError **error)
{
  guint8 head[SNIFF_LENGTH];
  gsize head_len = 0;

  g_return_val_if_fail (path != NULL, NULL);

  if (!read_head (path, head, &head_len, error))
    return NULL;

  switch (graft_sniff_file_kind (head, head_len))
    {
    case GRAFT_FILE_KIND_ZIP:
      return load_pytorch_archive (path, cancellable, error);
    case GRAFT_FILE_KIND_TORCH_LEGACY:
      return graft_torch_save_describe_legacy (path, error);
    case GRAFT_FILE_KIND_TORCH_TAR:
      return graft_torch_save_unsupported (error, path, "this is a tar archive, the torch.save format of PyTorch 0.3 "
                                           "and older. Load it with an old PyTorch and save it again with torch.save, "
                                           "then export it with torch.jit.save or torch.onnx.export.");
    case GRAFT_FILE_KIND_TORCH_PREVIEW:
      return graft_torch_save_unsupported (error, path, "this file uses the container format of a PyTorch preview "
                                           "release (\"PYTORCH1\"), which no released PyTorch reads. Re-create the model "
                                           "with a current PyTorch and save it with torch.jit.save or torch.onnx.export.");
    case GRAFT_FILE_KIND_PICKLE:
      return graft_torch_save_unsupported (error, path, "this is a plain Python pickle, not a PyTorch archive. "
                                           GRAFT_TORCH_HOW_TO_EXPORT);
    case GRAFT_FILE_KIND_FLATBUFFER_MOBILE:
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "%s: a PyTorch Mobile flatbuffer (.ptl saved with _use_flatbuffer); "
                   "re-save it with torch.jit.save() or export it with torch.onnx.export() to open it in Graft",
                   path);
      return NULL;
    case GRAFT_FILE_KIND_EXECUTORCH:
      return graft_executorch_program_load (path, cancellable, error);
    case GRAFT_FILE_KIND_ONNX:
    case GRAFT_FILE_KIND_UNKNOWN:
    default:
      {
        g_autoptr(GError) local_error = NULL;
        GraftModel *model = graft_onnx_read_file (path, cancellable, progress, progress_data, &local_error);
        const char *foreign;

        if (model != NULL)
          return model;
        foreign = describe_foreign_format (head, head_len);
        if (foreign != NULL && (g_error_matches (local_error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED)
                                || g_error_matches (local_error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED)))
          {
            g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "%s: %s", path, foreign);
            return NULL;
          }
        if (!g_str_has_suffix (path, ".onnx")
            && (g_error_matches (local_error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED)
                || g_error_matches (local_error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED)))
          {
            describe_unrecognised (path, head, head_len, local_error, error);
            return NULL;
          }
        g_propagate_error (error, g_steal_pointer (&local_error));
        return NULL;
      }
    }
}
