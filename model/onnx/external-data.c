#include "onnx/external-data.h"
#include "ir/model-error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static gboolean
has_parent_component (const char *location)
{
  g_auto (GStrv) parts = g_strsplit (location, "/", -1);

  for (guint i = 0; parts[i] != NULL; i++)
    if (strcmp (parts[i], "..") == 0)
      return TRUE;
  return FALSE;
}

static gboolean
is_inside (const char *dir, const char *path)
{
  gsize n = strlen (dir);

  if (strcmp (dir, "/") == 0)
    return TRUE;
  return strncmp (path, dir, n) == 0 && path[n] == '/';
}

char *
graft_onnx_resolve_external_location (const char *model_dir, const char *location, GError **error)
{
  g_autofree char *joined = NULL;
  g_autofree char *real = NULL;

  if (location == NULL || *location == '\0')
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "external data has no location");
      return NULL;
    }
  if (g_path_is_absolute (location))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "external data location '%s' is an absolute path; only files inside the model's folder are read",
                   location);
      return NULL;
    }
  if (has_parent_component (location))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "external data location '%s' contains '..' and could escape the model's folder; refused",
                   location);
      return NULL;
    }

  joined = g_build_filename (model_dir, location, NULL);
  real = realpath (joined, NULL);
  if (real == NULL)
    {
      int saved = errno;

      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO,
                   "external data file '%s' (in %s): %s", location, model_dir, g_strerror (saved));
      return NULL;
    }
  if (strcmp (real, model_dir) == 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "external data location '%s' is the model's folder itself, not a file in it", location);
      return NULL;
    }
  /* A symlink (of the file or of a folder on the way) may point anywhere. */
  if (!is_inside (model_dir, real))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "external data location '%s' resolves to '%s', outside the model's folder %s; refused",
                   location, real, model_dir);
      return NULL;
    }
  if (!g_file_test (real, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO,
                   "external data location '%s' is not a regular file", location);
      return NULL;
    }
  return g_steal_pointer (&real);
}
