#include "ir/file-bytes.h"

#include <unistd.h>
#include "ir/model-error.h"

GBytes *
graft_file_bytes_open (const char *path, GError **error)
{
  g_autoptr(GError) local_error = NULL;

  if (access (path, W_OK) != 0)
    {
      g_autoptr(GMappedFile) mapped = g_mapped_file_new (path, FALSE, &local_error);
      if (mapped != NULL)
        return g_mapped_file_get_bytes (mapped);
    }
  else
    {
      char *contents = NULL;
      gsize length = 0;
      if (g_file_get_contents (path, &contents, &length, &local_error))
        return g_bytes_new_take (contents, length);
    }
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "%s", local_error->message);
  return NULL;
}
