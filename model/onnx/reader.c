#include "onnx/reader.h"
#include "ir/file-bytes.h"
#include "onnx/graph-proto.h"
#include "onnx/kept-fields.h"
#include "onnx/wire.h"
#include "onnx.pb-c.h"

#include <stdlib.h>
#include <string.h>

static void
free_model_proto (Onnx__ModelProto *proto)
{
  onnx__model_proto__free_unpacked (proto, NULL);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Onnx__ModelProto, free_model_proto)

static void
make_string_valid (char **string)
{
  g_autofree char *valid = NULL;

  if (*string == NULL || g_utf8_validate (*string, -1, NULL))
    return;
  /* protobuf-c allocated it with malloc() and will free() it. */
  valid = g_utf8_make_valid (*string, -1);
  free (*string);
  *string = strdup (valid);
}

/* ONNX declares names, op types, doc strings and metadata UTF-8; a file
 * that breaks this would hand invalid text to JSON and GTK. Every string
 * field is checked once here, through protobuf-c's own field tables, so
 * that all later code can rely on it. Nesting is bounded by the wire
 * pre-pass. */
static void
make_strings_valid (ProtobufCMessage *message)
{
  const ProtobufCMessageDescriptor *descriptor = message->descriptor;

  for (unsigned i = 0; i < descriptor->n_fields; i++)
    {
      const ProtobufCFieldDescriptor *field = &descriptor->fields[i];
      char *member = (char *) message + field->offset;

      if (field->type != PROTOBUF_C_TYPE_STRING && field->type != PROTOBUF_C_TYPE_MESSAGE)
        continue;
      if (field->label == PROTOBUF_C_LABEL_REPEATED)
        {
          size_t n = *(size_t *) ((char *) message + field->quantifier_offset);
          void **items = *(void ***) member;

          for (size_t j = 0; j < n; j++)
            if (field->type == PROTOBUF_C_TYPE_STRING)
              make_string_valid ((char **) &items[j]);
            else
              make_strings_valid (items[j]);
          continue;
        }
      if ((field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
          && *(uint32_t *) ((char *) message + field->quantifier_offset) != field->id)
        continue;
      if (field->type == PROTOBUF_C_TYPE_STRING)
        make_string_valid ((char **) member);
      else if (*(ProtobufCMessage **) member != NULL)
        make_strings_valid (*(ProtobufCMessage **) member);
    }
}

static void
read_metadata (GraftModel *model, const Onnx__ModelProto *proto)
{
  if (proto->has_ir_version)
    graft_model_set_ir_version (model, proto->ir_version);
  if (proto->has_model_version)
    graft_model_set_model_version (model, proto->model_version);
  graft_model_set_producer (model, proto->producer_name, proto->producer_version);
  if (proto->domain != NULL && proto->domain[0] != '\0')
    graft_model_set_domain (model, proto->domain);
  if (proto->doc_string != NULL && proto->doc_string[0] != '\0')
    graft_model_set_doc_string (model, proto->doc_string);
  for (size_t i = 0; i < proto->n_opset_import; i++)
    graft_model_set_opset (model, proto->opset_import[i]->domain,
                           proto->opset_import[i]->has_version ? proto->opset_import[i]->version : 1);
  for (size_t i = 0; i < proto->n_metadata_props; i++)
    graft_model_add_metadata (model, proto->metadata_props[i]->key ? proto->metadata_props[i]->key : "",
                              proto->metadata_props[i]->value ? proto->metadata_props[i]->value : "");
}

static GraftModel *
model_from_proto (GraftOnnxReadContext *context, const Onnx__ModelProto *proto, GError **error)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph;

  if (proto->graph == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "not an ONNX model: the protobuf has no graph%s",
                   proto->has_ir_version ? "" : " and no ir_version");
      return NULL;
    }
  /* IR version 3 made opset_import mandatory; a file cut at a message
   * boundary typically loses it, so this also catches truncation. */
  if (proto->n_opset_import == 0 && (!proto->has_ir_version || proto->ir_version >= 3))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "not a complete ONNX model: it has no opset_import (the file may be truncated)");
      return NULL;
    }
  if (g_cancellable_is_cancelled (context->cancellable))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED, "loading was cancelled");
      return NULL;
    }
  read_metadata (model, proto);
  {
    g_autoptr(GBytes) kept = graft_onnx_keep_fields (context, &proto->base);
    graft_model_set_onnx_kept_fields (model, kept);
  }

  context->nodes_total = proto->graph->n_node;
  for (size_t i = 0; i < proto->n_functions; i++)
    context->nodes_total += proto->functions[i]->n_node;

  graph = graft_onnx_graph_from_proto (context, proto->graph, NULL, error);
  if (graph == NULL)
    return NULL;
  graft_model_set_graph (model, graph);

  for (size_t i = 0; i < proto->n_functions; i++)
    {
      GraftFunction *function = graft_onnx_function_from_proto (context, proto->functions[i], error);
      if (function == NULL)
        return NULL;
      graft_model_add_function (model, function);
    }
  if (context->progress != NULL)
    context->progress (1.0, context->progress_data);
  return g_steal_pointer (&model);
}

/* Any SIMD load size, and the runtime's own alignment (rt-tensor.c). */
#define RAW_DATA_ALIGNMENT 64
#define COPY_STEP ((gsize) 1 << 20)
#define HUGE_PAGE_BYTES ((gsize) 2 << 20)

static void
clear_slice (gpointer data)
{
  g_clear_pointer (&((GraftOnnxSlice *) data)->copy, g_bytes_unref);
}

/* Copies every stripped raw_data out of a private file buffer into an
 * aligned buffer of its own, giving the file's pages back as it goes. A
 * slice would keep the whole file alive, and protobuf puts raw_data at any
 * offset, so the runtime would copy almost every weight to align it: two
 * of each weight. This way there is one, and the peak stays near the
 * file's size. Fields of the wire format never overlap, so a released
 * part is never read again. */
static gboolean
copy_out_raw_data (GBytes *file_bytes, GArray *slices, const char *display_name, GError **error)
{
  const guint8 *file = g_bytes_get_data (file_bytes, NULL);

  for (guint i = 0; i < slices->len; i++)
    {
      GraftOnnxSlice *slice = &g_array_index (slices, GraftOnnxSlice, i);
      void *copy = NULL;

      /* a large weight in 2 MB pages where the kernel has them (see
       * graft_pages_advise_huge): a fault per 4 KB page is most of what
       * copying it costs */
      gboolean huge = slice->length >= HUGE_PAGE_BYTES;
      if (posix_memalign (&copy, huge ? HUGE_PAGE_BYTES : RAW_DATA_ALIGNMENT, MAX (slice->length, 1)) != 0)
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO,
                       "%s: no memory for a tensor's %" G_GSIZE_FORMAT " bytes", display_name, slice->length);
          return FALSE;
        }
      if (huge)
        graft_pages_advise_huge (copy, slice->length);
      /* In steps, so that the peak is not one large tensor above the file. */
      for (gsize done = 0; done < slice->length;)
        {
          gsize step = MIN (COPY_STEP, slice->length - done);

          memcpy ((guint8 *) copy + done, file + slice->offset + done, step);
          done += step;
          graft_file_bytes_release (file_bytes, slice->offset, done);
        }
      slice->copy = g_bytes_new_with_free_func (copy, slice->length, free, copy);
    }
  return TRUE;
}

static GraftModel *
read_bytes (GBytes *bytes, gboolean private_bytes, GraftExternalFile *source, const char *display_name,
            const char *model_dir, GCancellable *cancellable, GraftProgressFunc progress, gpointer progress_data,
            GError **error)
{
  g_autoptr(GArray) slices = g_array_new (FALSE, FALSE, sizeof (GraftOnnxSlice));
  g_autoptr(GBytes) stripped = NULL;
  g_autoptr(Onnx__ModelProto) proto = NULL;
  g_autoptr(GraftModel) model = NULL;
  g_autoptr(GHashTable) external_files = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                               (GDestroyNotify) graft_external_file_unref);
  gsize length;
  const guint8 *data = g_bytes_get_data (bytes, &length);
  GraftOnnxReadContext context = {
    .display_name = display_name,
    .model_dir = model_dir,
    .external_files = external_files,
    .file_bytes = bytes,
    .slices = slices,
    .source = private_bytes ? source : NULL,
    .cancellable = cancellable,
    .progress = progress,
    .progress_data = progress_data,
  };

  if (length == 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED, "%s: the file is empty", display_name);
      return NULL;
    }

  stripped = graft_onnx_wire_strip (data, length, GRAFT_ONNX_WIRE_MIN_STRIP, slices, error);
  if (stripped == NULL)
    {
      g_prefix_error (error, "%s: not a readable ONNX file: ", display_name);
      return NULL;
    }
  g_array_set_clear_func (slices, clear_slice);
  if (private_bytes && !copy_out_raw_data (bytes, slices, display_name, error))
    return NULL;

  proto = onnx__model_proto__unpack (NULL, g_bytes_get_size (stripped), g_bytes_get_data (stripped, NULL));
  if (proto == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: not a valid ONNX ModelProto (a field has the wrong type or a packed array is broken)",
                   display_name);
      return NULL;
    }
  g_clear_pointer (&stripped, g_bytes_unref);
  make_strings_valid (&proto->base);

  model = model_from_proto (&context, proto, error);
  if (model == NULL)
    {
      g_prefix_error (error, "%s: ", display_name);
      return NULL;
    }
  return g_steal_pointer (&model);
}

GraftModel *
graft_onnx_read_bytes (GBytes *bytes, const char *display_name, const char *model_dir, GCancellable *cancellable,
                       GraftProgressFunc progress, gpointer progress_data, GError **error)
{
  /* The caller's bytes may be shared or mapped: the model keeps slices of them. */
  return read_bytes (bytes, FALSE, NULL, display_name, model_dir, cancellable, progress, progress_data, error);
}

GraftModel *
graft_onnx_read_file (const char *path, GCancellable *cancellable, GraftProgressFunc progress,
                      gpointer progress_data, GError **error)
{
  g_autoptr(GBytes) bytes = NULL;
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *model_dir = realpath (dir, NULL);
  GraftModel *model;
  gboolean private_bytes;

  /* Own pages even for a read-only file: read_bytes copies each weight out
   * aligned and gives the pages back as it goes (ir/file-bytes.h). */
  bytes = graft_file_bytes_open_for_copy_out (path, &private_bytes, error);
  if (bytes == NULL)
    return NULL;
  /* The weights' bytes can be read again from the file as it is now (a
   * checksum tells if it changed since); without it (a link, a pipe) they
   * just stay in memory. */
  g_autofree char *base = g_path_get_basename (path);
  g_autoptr(GraftExternalFile) source = model_dir ? graft_external_file_open_inside (model_dir, base, NULL) : NULL;
  model = read_bytes (bytes, private_bytes, source, path, model_dir, cancellable, progress, progress_data, error);
  if (model != NULL)
    graft_model_set_path (model, path);
  return model;
}
