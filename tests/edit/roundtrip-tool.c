/* roundtrip-tool SUITE_DIR OUT_DIR: for every case listed in
 * SUITE_DIR/expected-counts.tsv, loads the model with Graft, saves it with
 * the ONNX writer to OUT_DIR/<same relative path>, loads the saved file and
 * compares the two IRs. Prints one line per case:
 *   same<TAB>ORIGINAL<TAB>SAVED
 *   differs<TAB>ORIGINAL<TAB>SAVED<TAB>first difference
 *   unreadable<TAB>ORIGINAL<TAB><TAB>reader's error
 *   unsaved<TAB>ORIGINAL<TAB><TAB>writer's error
 */
#include <glib/gstdio.h>
#include <stdio.h>
#include "ir-compare.h"
#include "loader.h"
#include "onnx/writer.h"

static void
one_line (char *text)
{
  g_strdelimit (text, "\t\n", ' ');
}

int
main (int argc, char **argv)
{
  g_autofree char *list_path = NULL;
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(GError) error = NULL;

  if (argc != 3)
    {
      fprintf (stderr, "usage: roundtrip-tool SUITE_DIR OUT_DIR\n");
      return 2;
    }
  list_path = g_build_filename (argv[1], "expected-counts.tsv", NULL);
  if (!g_file_get_contents (list_path, &contents, NULL, &error))
    {
      fprintf (stderr, "roundtrip-tool: %s\n", error->message);
      return 1;
    }
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) fields = g_strsplit (lines[i], "\t", 2);
      g_autofree char *original = NULL, *saved = NULL, *saved_dir = NULL;
      g_autoptr(GraftModel) a = NULL;
      g_autoptr(GraftModel) b = NULL;
      g_autoptr(GString) why = g_string_new (NULL);

      if (fields[0] == NULL || fields[0][0] == '\0')
        continue;
      original = g_build_filename (argv[1], fields[0], NULL);
      saved = g_build_filename (argv[2], fields[0], NULL);
      saved_dir = g_path_get_dirname (saved);
      g_mkdir_with_parents (saved_dir, 0755);
      g_clear_error (&error);

      a = graft_model_load (original, NULL, NULL, NULL, &error);
      if (a == NULL)
        {
          one_line (error->message);
          printf ("unreadable\t%s\t\t%s\n", original, error->message);
          continue;
        }
      if (!graft_onnx_write_file (a, saved, GRAFT_ONNX_WRITE_NONE, &error))
        {
          one_line (error->message);
          printf ("unsaved\t%s\t\t%s\n", original, error->message);
          continue;
        }
      b = graft_model_load (saved, NULL, NULL, NULL, &error);
      if (b == NULL)
        {
          one_line (error->message);
          printf ("differs\t%s\t%s\treloading failed: %s\n", original, saved, error->message);
          continue;
        }
      if (graft_test_models_equal (a, b, why))
        printf ("same\t%s\t%s\n", original, saved);
      else
        {
          one_line (why->str);
          printf ("differs\t%s\t%s\t%s\n", original, saved, why->str);
        }
    }
  return 0;
}
