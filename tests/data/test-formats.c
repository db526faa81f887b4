/* The formats table (model/formats.c) and the desktop integration files
 * say the same: every format's MIME type is declared in
 * data/org.graft.Graft.mime.xml with a glob per extension and listed in
 * the desktop file's MimeType=, and those files declare nothing the table
 * does not know. */
#include <string.h>
#include <glib.h>
#include "formats.h"

typedef struct {
  GHashTable *globs_by_type;   /* MIME type → GPtrArray of "*.ext" */
  char *current;
} MimeInfo;

static void
mime_start (GMarkupParseContext *context, const char *element, const char **names, const char **values,
            gpointer user_data, GError **error)
{
  MimeInfo *info = user_data;
  for (guint i = 0; names[i] != NULL; i++)
    {
      if (strcmp (element, "mime-type") == 0 && strcmp (names[i], "type") == 0)
        {
          g_free (info->current);
          info->current = g_strdup (values[i]);
          g_hash_table_insert (info->globs_by_type, g_strdup (values[i]), g_ptr_array_new_with_free_func (g_free));
        }
      else if (strcmp (element, "glob") == 0 && strcmp (names[i], "pattern") == 0 && info->current != NULL)
        g_ptr_array_add (g_hash_table_lookup (info->globs_by_type, info->current), g_strdup (values[i]));
    }
}

static GHashTable *
read_mime_info (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "org.graft.Graft.mime.xml", NULL);
  g_autofree char *text = NULL;
  gsize len;
  g_autoptr(GError) error = NULL;
  g_assert_true (g_file_get_contents (path, &text, &len, &error));
  MimeInfo info = { g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref), NULL };
  GMarkupParser parser = { mime_start, NULL, NULL, NULL, NULL };
  g_autoptr(GMarkupParseContext) context = g_markup_parse_context_new (&parser, 0, &info, NULL);
  g_assert_true (g_markup_parse_context_parse (context, text, (gssize) len, &error));
  g_assert_no_error (error);
  g_free (info.current);
  return info.globs_by_type;
}

static gboolean
has_string (GPtrArray *array, const char *s)
{
  for (guint i = 0; i < array->len; i++)
    if (strcmp (array->pdata[i], s) == 0)
      return TRUE;
  return FALSE;
}

static void
test_mime_xml_matches_table (void)
{
  g_autoptr(GHashTable) globs_by_type = read_mime_info ();
  guint n_formats = 0;

  for (const GraftFormat *format = graft_formats (); format->id != NULL; format++, n_formats++)
    {
      GPtrArray *globs = g_hash_table_lookup (globs_by_type, format->mime_type);
      if (globs == NULL)
        g_error ("format %s: MIME type %s is not declared in data/org.graft.Graft.mime.xml", format->id,
                 format->mime_type);
      for (guint i = 0; format->extensions[i] != NULL; i++)
        {
          g_autofree char *glob = g_strconcat ("*", format->extensions[i], NULL);
          if (!has_string (globs, glob))
            g_error ("format %s: %s has no <glob pattern=\"%s\"/> in data/org.graft.Graft.mime.xml", format->id,
                     format->mime_type, glob);
        }
      g_assert_cmpuint (globs->len, ==, g_strv_length ((char **) format->extensions));
    }
  /* The other way: the MIME file declares only the table's types. */
  GHashTableIter iter;
  const char *type;
  g_hash_table_iter_init (&iter, globs_by_type);
  while (g_hash_table_iter_next (&iter, (gpointer *) &type, NULL))
    {
      gboolean known = FALSE;
      for (const GraftFormat *format = graft_formats (); format->id != NULL; format++)
        known = known || strcmp (format->mime_type, type) == 0;
      if (!known)
        g_error ("data/org.graft.Graft.mime.xml declares %s, which no row of model/formats.c has", type);
    }
  g_assert_cmpuint (g_hash_table_size (globs_by_type), ==, n_formats);
}

static void
test_desktop_file_matches_table (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "org.graft.Graft.desktop", NULL);
  g_autoptr(GKeyFile) desktop = g_key_file_new ();
  g_autoptr(GError) error = NULL;
  g_assert_true (g_key_file_load_from_file (desktop, path, G_KEY_FILE_NONE, &error));
  gsize n = 0;
  g_auto(GStrv) types = g_key_file_get_string_list (desktop, "Desktop Entry", "MimeType", &n, &error);
  g_assert_no_error (error);
  guint n_formats = 0;
  for (const GraftFormat *format = graft_formats (); format->id != NULL; format++, n_formats++)
    if (!g_strv_contains ((const char *const *) types, format->mime_type))
      g_error ("format %s: %s is missing from MimeType= in data/org.graft.Graft.desktop", format->id,
               format->mime_type);
  g_assert_cmpuint (n, ==, n_formats);
}

/* What the file dialogs and the drop target offer comes from the table. */
static void
test_patterns_cover_extensions (void)
{
  g_auto(GStrv) patterns = graft_format_list_patterns ();
  for (const GraftFormat *format = graft_formats (); format->id != NULL; format++)
    for (guint i = 0; format->extensions[i] != NULL; i++)
      {
        g_autofree char *glob = g_strconcat ("*", format->extensions[i], NULL);
        g_autofree char *name = g_strconcat ("model", format->extensions[i], NULL);
        g_assert_true (g_strv_contains ((const char *const *) patterns, glob));
        g_assert_true (graft_format_is_model_path (name));
        g_assert_true (graft_format_for_path (name) == format);
      }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/formats/mime-xml-matches-table", test_mime_xml_matches_table);
  g_test_add_func ("/formats/desktop-file-matches-table", test_desktop_file_matches_table);
  g_test_add_func ("/formats/patterns-cover-extensions", test_patterns_cover_extensions);
  return g_test_run ();
}
