/* The SVG writer: the window's marks (badges, hidden-node counts, Find,
 * heat, tints, the selection) in a well-formed document, written in
 * bounded pieces, and a write error that stops it. */
#include <string.h>
#include "layout/export.h"
#include "layout/layout.h"
#include "layout/svg-writer.h"
#include "test-scenes.h"

typedef struct {
  GString *document;
  guint n_pieces;
  gsize largest_piece;
  guint fail_at;             /* 0: never */
} Collected;

static gboolean
collect (const char *data, gsize length, gpointer user_data, GError **error)
{
  Collected *collected = user_data;

  collected->n_pieces++;
  if (collected->n_pieces == collected->fail_at)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, "No space left on device");
      return FALSE;
    }
  g_assert_true (collected->fail_at == 0 || collected->n_pieces < collected->fail_at);
  collected->largest_piece = MAX (collected->largest_piece, length);
  g_string_append_len (collected->document, data, length);
  return TRUE;
}

typedef struct {
  GPtrArray *texts;
  guint n_elements;
  gboolean in_text;
} Parsed;

static void
start_element (GMarkupParseContext *context, const char *element, const char **names, const char **values,
               gpointer user_data, GError **error)
{
  Parsed *parsed = user_data;

  parsed->n_elements++;
  parsed->in_text = strcmp (element, "text") == 0;
  if (parsed->in_text)
    g_ptr_array_add (parsed->texts, g_strdup (""));
  /* One style per element: a second would make the XML ill-formed. */
  for (guint i = 0; names[i] != NULL; i++)
    for (guint j = i + 1; names[j] != NULL; j++)
      g_assert_cmpstr (names[i], !=, names[j]);
}

static void
text_content (GMarkupParseContext *context, const char *text, gsize length, gpointer user_data, GError **error)
{
  Parsed *parsed = user_data;

  if (parsed->in_text)
    {
      char **last = (char **) &g_ptr_array_index (parsed->texts, parsed->texts->len - 1);
      g_autofree char *old = *last;

      *last = g_strdup_printf ("%s%.*s", old, (int) length, text);
    }
}

static void
end_element (GMarkupParseContext *context, const char *element, gpointer user_data, GError **error)
{
  ((Parsed *) user_data)->in_text = FALSE;
}

/* Parses the document (GMarkup: well-formed, no repeated attribute) and
 * returns its <text> contents. */
static GPtrArray *
parse (const GString *document, guint *n_elements)
{
  GMarkupParser parser = { start_element, end_element, text_content, NULL, NULL };
  Parsed parsed = { g_ptr_array_new_with_free_func (g_free), 0, FALSE };
  g_autoptr (GMarkupParseContext) context = g_markup_parse_context_new (&parser, 0, &parsed, NULL);
  g_autoptr (GError) error = NULL;

  g_assert_true (g_str_has_prefix (document->str, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
  g_markup_parse_context_parse (context, document->str, document->len, &error);
  g_assert_no_error (error);
  g_markup_parse_context_end_parse (context, &error);
  g_assert_no_error (error);
  *n_elements = parsed.n_elements;
  return parsed.texts;
}

static gboolean
has_text (GPtrArray *texts, const char *text)
{
  for (guint i = 0; i < texts->len; i++)
    if (strcmp (g_ptr_array_index (texts, i), text) == 0)
      return TRUE;
  return FALSE;
}

/* What the window marks on its scene before File → Export: every mark the
 * painter draws is in the SVG, in its colour. */
static void
test_marks (void)
{
  g_autoptr (GraftGraph) graph = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) found = g_hash_table_new (NULL, NULL);
  g_autoptr (GPtrArray) texts = NULL;
  g_autoptr (GString) document = g_string_new (NULL);
  GraftPaintOptions options = { 0 };
  g_autoptr (GraftScene) scene = NULL;
  Collected collected = { document, 0, 0, 0 };
  guint n_elements;

  scene = test_scene_new_marked (&graph, found, &options);

  g_assert_true (graft_svg_write_scene (scene, &options, collect, &collected, &error));
  g_assert_no_error (error);
  texts = parse (document, &n_elements);
  g_test_message ("%zu bytes, %u elements, %u <text>", document->len, n_elements, texts->len);
  g_assert_true (has_text (texts, "unsupported <op>"));
  g_assert_nonnull (strstr (document->str, ">unsupported &lt;op&gt;</text>"));
  g_assert_true (has_text (texts, "1 ✖"));                  /* the collapsed block's hidden mark */
  g_assert_nonnull (strstr (document->str, "#e5a50a"));     /* warning badge and outline */
  g_assert_nonnull (strstr (document->str, "#e01b24"));     /* the hidden error, and heat 1 */
  g_assert_nonnull (strstr (document->str, "#f6d32d"));     /* Find's band */
  g_assert_nonnull (strstr (document->str, "#1c71d8"));     /* the selection */
  g_assert_nonnull (strstr (document->str, "#123456"));     /* the tint */
  g_assert_nonnull (strstr (document->str, "<clipPath id=\"heat0\">"));
  g_assert_true (has_text (texts, "stage0"));

  /* GRAFT_TEST_PICTURES=DIR: the SVG and the painter's PNG of the same
   * scene, to look at side by side. */
  if (g_getenv ("GRAFT_TEST_PICTURES") != NULL)
    {
      g_autofree char *svg = g_build_filename (g_getenv ("GRAFT_TEST_PICTURES"), "marks.svg", NULL);
      g_autofree char *png = g_build_filename (g_getenv ("GRAFT_TEST_PICTURES"), "marks.png", NULL);

      g_assert_true (graft_scene_export (scene, &options, svg, &error));
      g_assert_true (graft_scene_export (scene, &options, png, &error));
    }
}

/* A whole expanded graph (450 nodes) goes out in pieces of bounded size. */
static void
test_streams (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (6, 25, 3);
  g_autoptr (GraftScene) scene = test_scene_lay_out (graph, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) texts = NULL;
  g_autoptr (GString) document = g_string_new (NULL);
  GraftPaintOptions options = { .dark = TRUE };
  Collected collected = { document, 0, 0, 0 };
  guint n_elements;

  g_assert_true (graft_svg_write_scene (scene, &options, collect, &collected, &error));
  texts = parse (document, &n_elements);
  g_test_message ("%zu bytes in %u pieces, the largest %zu; %u elements", document->len, collected.n_pieces,
                  collected.largest_piece, n_elements);
  g_assert_cmpuint (collected.n_pieces, >, 4);
  /* Every rule of the style sheet is scoped to the document's style: inline
   * in a page (Jupyter) it restyles nothing else. */
  {
    const char *sheet = strstr (document->str, "<style>\n") + strlen ("<style>\n");
    const char *end = strstr (sheet, "</style>");
    g_autofree char *text = g_strndup (sheet, end - sheet);
    g_auto (GStrv) rules = g_strsplit (text, "\n", -1);

    g_assert_nonnull (strstr (document->str, " class=\"graft-dark\""));
    for (guint i = 0; rules[i] != NULL && rules[i][0] != '\0'; i++)
      g_assert_true (g_str_has_prefix (rules[i], ".graft-dark"));
  }
  g_assert_cmpuint (collected.largest_piece, <, 80 * 1024);
  /* Every node's op type, as a title. */
  g_assert_cmpuint (texts->len, >, graph->nodes->len);
  g_assert_true (has_text (texts, "Conv"));
  g_assert_true (has_text (texts, "Add"));
}

/* The first failed write ends the document with its error; nothing is
 * written after it. */
static void
test_write_error (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (4, 20, 3);
  g_autoptr (GraftScene) scene = test_scene_lay_out (graph, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) document = g_string_new (NULL);
  GraftPaintOptions options = { 0 };
  Collected collected = { document, 0, 0, 2 };

  g_assert_false (graft_svg_write_scene (scene, &options, collect, &collected, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE);
  g_assert_cmpuint (collected.n_pieces, ==, 2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/svg-writer/marks", test_marks);
  g_test_add_func ("/svg-writer/streams", test_streams);
  g_test_add_func ("/svg-writer/write-error", test_write_error);
  return g_test_run ();
}
