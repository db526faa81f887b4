/* libFuzzer harness: torch.export programs (.pt2). An input that is a zip
 * is opened as it is; any other input is the three parts of a PT2 archive
 * separated by NUL bytes (JSON holds none):
 *   models/model.json NUL data/weights/model_weights_config.json NUL weight_0
 * so that mutations reach the JSON of the program and of the weights'
 * views (sizes, strides, storage offsets) instead of breaking the zip.
 * The program is loaded and linted. */
#include <string.h>
#include <zip.h>
#include "loader.h"
#include "lint/diagnostics.h"
#include "../test-scratch.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

static char *path;

static void
add_record (zip_t *zip, const char *name, const guint8 *data, gsize size)
{
  zip_source_t *source = zip_source_buffer (zip, data, size, 0);
  zip_int64_t index = zip_file_add (zip, name, source, ZIP_FL_OVERWRITE);
  g_assert (index >= 0);
  zip_set_file_compression (zip, (zip_uint64_t) index, ZIP_CM_STORE, 0);
}

/* The parts of data as a PT2 archive at path. */
static void
write_archive (const guint8 *data, size_t size)
{
  static const char *const records[] = { "archive/models/model.json",
                                          "archive/data/weights/model_weights_config.json",
                                          "archive/data/weights/weight_0" };
  int zip_error = 0;
  zip_t *zip = zip_open (path, ZIP_CREATE | ZIP_TRUNCATE, &zip_error);
  g_assert (zip != NULL);
  add_record (zip, "archive/archive_format", (const guint8 *) "pt2", 3);
  const guint8 *part = data, *end = data + size;
  for (guint i = 0; i < G_N_ELEMENTS (records); i++)
    {
      const guint8 *separator = i + 1 < G_N_ELEMENTS (records) ? memchr (part, '\0', end - part) : NULL;
      const guint8 *part_end = separator ? separator : end;
      add_record (zip, records[i], part, part_end - part);
      if (separator == NULL)
        break;
      part = separator + 1;
    }
  g_assert (zip_close (zip) == 0);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GError) error = NULL;

  if (path == NULL)
    path = graft_test_scratch_file ("graft-fuzz-XXXXXX.pt2");
  if (size >= 4 && memcmp (data, "PK\3\4", 4) == 0)
    g_assert (g_file_set_contents (path, (const char *) data, (gssize) size, NULL));
  else
    write_archive (data, size);
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert ((model == NULL) == (error != NULL));
  if (model != NULL)
    {
      g_autoptr(GPtrArray) diagnostics = graft_lint_model (model, NULL);
    }
  return 0;
}
