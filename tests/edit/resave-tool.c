/* resave-tool [--operation ID PARAMS [--undo]] LISTFILE: for every
 * "ORIGINAL<TAB>SAVED" line, loads the model with Graft and saves it with
 * the ONNX writer, unchanged or after the edit operation ID (edit/edit.h)
 * with PARAMS in GVariant text form ("{'value': <'S'>}"), and with --undo
 * after undoing that edit (the graph is then its undo snapshot). Prints one line
 * per pair: "saved<TAB>ORIGINAL<TAB>SAVED" or "failed<TAB>ORIGINAL<TAB>error".
 * Exit status 1 if any pair failed. */
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include "loader.h"
#include "edit/edit.h"
#include "onnx/writer.h"

static gboolean
resave (const char *original, const char *saved, const char *operation, const char *params, gboolean undo,
        GError **error)
{
  g_autoptr(GraftModel) model = graft_model_load (original, NULL, NULL, NULL, error);
  g_autofree char *dir = g_path_get_dirname (saved);

  if (model == NULL)
    return FALSE;
  if (operation != NULL)
    {
      /* A non-floating reference, which the edit takes one more of. */
      g_autoptr(GVariant) parsed = g_variant_parse (G_VARIANT_TYPE_VARDICT, params, NULL, NULL, error);
      g_autoptr(GraftEdit) edit = parsed ? graft_edit_new_operation (operation, parsed, error) : NULL;

      if (edit == NULL || !graft_edit_apply (edit, model, error) || (undo && !graft_edit_undo (edit, model, error)))
        return FALSE;
    }
  g_mkdir_with_parents (dir, 0755);
  return graft_onnx_write_file (model, saved, GRAFT_ONNX_WRITE_NONE, error);
}

int
main (int argc, char **argv)
{
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(GError) error = NULL;
  int status = 0;
  const char *operation = NULL, *params = NULL;
  gboolean undo = FALSE;

  if (argc >= 5 && strcmp (argv[1], "--operation") == 0)
    {
      operation = argv[2];
      params = argv[3];
      argv += 3;
      argc -= 3;
      if (strcmp (argv[1], "--undo") == 0)
        {
          undo = TRUE;
          argv++;
          argc--;
        }
    }
  if (argc != 2)
    {
      fprintf (stderr, "usage: resave-tool [--operation ID PARAMS [--undo]] LISTFILE\n");
      return 2;
    }
  if (!g_file_get_contents (argv[1], &contents, NULL, &error))
    {
      fprintf (stderr, "resave-tool: %s\n", error->message);
      return 2;
    }
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) pair = g_strsplit (lines[i], "\t", 2);

      if (pair[0] == NULL || pair[1] == NULL)
        continue;
      g_clear_error (&error);
      if (resave (pair[0], pair[1], operation, params, undo, &error))
        printf ("saved\t%s\t%s\n", pair[0], pair[1]);
      else
        {
          g_strdelimit (error->message, "\t\n", ' ');
          printf ("failed\t%s\t%s\n", pair[0], error->message);
          status = 1;
        }
    }
  return status;
}
