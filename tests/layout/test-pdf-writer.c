/* The PDF writer, read back by real consumers (poppler's pdftoppm,
 * pdftotext, pdfinfo, pdffonts; qpdf --check): the window's marks (badges,
 * hidden-node counts, Find, heat, tints, the selection) drawn as the
 * painter draws them, pixel for pixel within antialiasing; the text
 * searchable in its embedded fonts; big scenes tiled into the pages
 * export.h promises; a write error that stops it. */
#include <math.h>
#include <string.h>
#include <cairo.h>
#include <gio/gio.h>
#include "layout/export.h"
#include "layout/layout.h"
#include "layout/pdf-writer.h"
#include "layout/text.h"
#include "test-files.h"
#include "test-scenes.h"

/* Rasterised at the painter's PNG scale for small graphs (144 dots an
 * inch, 2 pixels a point). */
#define PIXELS_PER_POINT 2
#define DOTS_PER_INCH "144"

static gboolean
have_tool (const char *name)
{
  g_autofree char *path = g_find_program_in_path (name);

  return path != NULL;
}

/* Standard output of argv, which must succeed. */
static char *
run (const char *const *argv)
{
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status,
                               &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s failed: %s", argv[0], err);
  /* Poppler says on stderr what it could not read (a broken font). */
  g_assert_cmpstr (err, ==, "");
  return g_steal_pointer (&out);
}

static void
check_structure (const char *pdf)
{
  const char *qpdf[] = { "qpdf", "--check", pdf, NULL };
  const char *pdffonts[] = { "pdffonts", pdf, NULL };
  g_autofree char *fonts = NULL;
  g_auto (GStrv) lines = NULL;

  if (have_tool ("qpdf"))
    g_free (run (qpdf));
  /* Every font embedded, with a ToUnicode map: the columns emb, sub, uni
   * before the object's number and generation. A TrueType font is a
   * subset; a CFF one (Cantarell) is whole. */
  fonts = run (pdffonts);
  g_test_message ("%s", fonts);
  lines = g_strsplit (fonts, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), >, 3);
  for (guint i = 2; lines[i] != NULL && lines[i][0] != '\0'; i++)
    {
      g_auto (GStrv) words = g_strsplit_set (g_strstrip (lines[i]), " ", -1);
      g_autoptr (GPtrArray) columns = g_ptr_array_new ();

      for (guint j = 0; words[j] != NULL; j++)
        if (words[j][0] != '\0')
          g_ptr_array_add (columns, words[j]);
      g_assert_cmpuint (columns->len, >=, 6);
      g_assert_cmpstr (g_ptr_array_index (columns, columns->len - 5), ==, "yes");   /* emb */
      g_assert_cmpstr (g_ptr_array_index (columns, columns->len - 3), ==, "yes");   /* uni */
      g_assert_cmpstr (g_ptr_array_index (columns, columns->len - 4), ==,
                       strstr (lines[i], "CID TrueType") != NULL ? "yes" : "no");  /* sub */
    }
}

/* Fraction of BLOCK × BLOCK squares whose mean colour differs by more
 * than TOLERANCE (of 255) in some channel between a and b, over the area
 * both cover: cairo and poppler antialias edges and glyphs differently,
 * which averages out over a square, while a missing, misplaced or
 * miscoloured box, line or word does not. */
#define BLOCK 8
#define TOLERANCE 16

static double
differing_blocks (cairo_surface_t *a, cairo_surface_t *b)
{
  int width = MIN (cairo_image_surface_get_width (a), cairo_image_surface_get_width (b)) / BLOCK;
  int height = MIN (cairo_image_surface_get_height (a), cairo_image_surface_get_height (b)) / BLOCK;
  guint64 differing = 0;

  g_assert_cmpint (abs (cairo_image_surface_get_width (a) - cairo_image_surface_get_width (b)), <=, 1);
  g_assert_cmpint (abs (cairo_image_surface_get_height (a) - cairo_image_surface_get_height (b)), <=, 1);
  for (int by = 0; by < height; by++)
    for (int bx = 0; bx < width; bx++)
      {
        int sums[3] = { 0 };

        for (int y = by * BLOCK; y < (by + 1) * BLOCK; y++)
          {
            const guint32 *row_a = (const guint32 *) (cairo_image_surface_get_data (a)
                                                      + y * cairo_image_surface_get_stride (a));
            const guint32 *row_b = (const guint32 *) (cairo_image_surface_get_data (b)
                                                      + y * cairo_image_surface_get_stride (b));

            for (int x = bx * BLOCK; x < (bx + 1) * BLOCK; x++)
              for (int channel = 0; channel < 3; channel++)
                sums[channel] += (int) (row_a[x] >> (8 * channel) & 0xff) - (int) (row_b[x] >> (8 * channel) & 0xff);
          }
        for (int channel = 0; channel < 3; channel++)
          if (abs (sums[channel]) > TOLERANCE * BLOCK * BLOCK)
            {
              differing++;
              break;
            }
      }
  return (double) differing / ((double) width * height);
}

/* The PDF of scene, rasterised by poppler, against the painter's PNG of it. */
static void
compare_with_painter (GraftScene *scene, const GraftPaintOptions *options, const char *dir, const char *name)
{
  g_autofree char *pdf = g_strdup_printf ("%s/%s.pdf", dir, name);
  g_autofree char *png = g_strdup_printf ("%s/%s.png", dir, name);
  g_autofree char *raster = g_strdup_printf ("%s/%s-poppler", dir, name);
  g_autofree char *raster_png = g_strdup_printf ("%s.png", raster);
  const char *pdftoppm[] = { "pdftoppm", "-r", DOTS_PER_INCH, "-singlefile", "-png", pdf, raster,
                             NULL };
  g_autoptr (GError) error = NULL;
  cairo_surface_t *painted, *rasterised;
  GraftRect bounds;
  double differing;

  graft_scene_get_bounds (scene, &bounds);
  g_assert_cmpfloat (graft_export_png_scale (&bounds), ==, PIXELS_PER_POINT);
  g_assert_true (graft_scene_export (scene, options, pdf, &error));
  g_assert_no_error (error);
  g_assert_true (graft_scene_export (scene, options, png, &error));
  g_assert_no_error (error);
  check_structure (pdf);
  g_free (run (pdftoppm));
  painted = cairo_image_surface_create_from_png (png);
  rasterised = cairo_image_surface_create_from_png (raster_png);
  g_assert_cmpint (cairo_surface_status (painted), ==, CAIRO_STATUS_SUCCESS);
  g_assert_cmpint (cairo_surface_status (rasterised), ==, CAIRO_STATUS_SUCCESS);
  differing = differing_blocks (painted, rasterised);
  g_test_message ("%s: %.3f%% of %d-pixel squares differ", name, differing * 100, BLOCK);
  /* 0.1 % here; without the nodes' body lines 1.8 %. */
  g_assert_cmpfloat (differing, <, 0.005);
  cairo_surface_destroy (painted);
  cairo_surface_destroy (rasterised);
}

/* Whether the edge labels' font has a glyph for the character c. */
static gboolean
has_glyph (const char *c)
{
  cairo_t *cr = graft_text_context_new ();
  cairo_glyph_t *glyphs = NULL;
  int n_glyphs = 0;
  gboolean has;

  graft_text_select (cr, GRAFT_TEXT_EDGE);
  g_assert_cmpint (cairo_scaled_font_text_to_glyphs (cairo_get_scaled_font (cr), 0, 0, c, -1, &glyphs, &n_glyphs,
                                                     NULL, NULL, NULL), ==, CAIRO_STATUS_SUCCESS);
  has = n_glyphs == 1 && glyphs[0].index != 0;
  cairo_glyph_free (glyphs);
  cairo_destroy (cr);
  return has;
}

/* What the window marks on its scene before File → Export, as the painter
 * draws it, with its text searchable. */
static void
test_marks (void)
{
  g_autoptr (GraftGraph) graph = NULL;
  g_autoptr (GHashTable) found = g_hash_table_new (NULL, NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-pdf-XXXXXX", NULL);
  g_autofree char *pdf = g_build_filename (dir, "marks.pdf", NULL);
  /* -raw: in drawing order, each run as drawn (the layout mode guesses
   * spaces from gaps, and joins the badge's "1 ✖"). */
  const char *pdftotext[] = { "pdftotext", "-raw", "-enc", "UTF-8", pdf, "-", NULL };
  g_autofree char *text = NULL;
  GraftPaintOptions options = { 0 };
  g_autoptr (GraftScene) scene = NULL;

  if (!have_tool ("pdftoppm"))
    {
      g_test_skip ("needs pdftoppm and pdftotext (poppler-utils)");
      return;
    }
  scene = test_scene_new_marked (&graph, found, &options);

  compare_with_painter (scene, &options, dir, "marks");
  options.dark = TRUE;
  compare_with_painter (scene, &options, dir, "marks-dark");

  text = run (pdftotext);
  g_assert_nonnull (strstr (text, "unsupported <op>"));
  /* The collapsed block's hidden mark, where the font has a "✖" (Cantarell
   * has none: cairo and the PDF draw its missing glyph, which maps to no
   * character). */
  g_assert_nonnull (strstr (text, has_glyph ("✖") ? "1 ✖" : "\n1\n"));
  g_assert_nonnull (strstr (text, "stage0"));
  g_assert_nonnull (strstr (text, "block1"));
  g_assert_nonnull (strstr (text, "Conv"));
  test_remove_dir (dir);
}

/* A graph taller than a page is tiled into the pages export.h counts; its
 * labels are found on them. */
static void
test_pages (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (12, 30, 3);
  g_autoptr (GraftScene) scene = test_scene_lay_out (graph, NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("graft-pdf-XXXXXX", NULL);
  g_autofree char *pdf = g_build_filename (dir, "tall.pdf", NULL);
  g_autofree char *expected_pages = NULL;
  const char *pdfinfo[] = { "pdfinfo", pdf, NULL };
  const char *last_page[] = { "pdftotext", "-enc", "UTF-8", "-f", "2", pdf, "-", NULL };
  g_autofree char *info = NULL, *text = NULL;
  GraftPaintOptions options = { 0 };
  GraftRect bounds;

  if (!have_tool ("pdfinfo"))
    {
      g_test_skip ("needs pdfinfo and pdftotext (poppler-utils)");
      return;
    }
  graft_scene_get_bounds (scene, &bounds);
  g_assert_cmpuint (graft_export_pdf_n_pages (&bounds), >, 1);
  g_assert_true (graft_scene_export (scene, &options, pdf, &error));
  g_assert_no_error (error);
  check_structure (pdf);
  info = run (pdfinfo);
  expected_pages = g_strdup_printf ("\nPages:           %u\n", graft_export_pdf_n_pages (&bounds));
  g_test_message ("%.0f × %.0f points: %s", bounds.width, bounds.height, expected_pages + 1);
  g_assert_nonnull (strstr (info, expected_pages));
  text = run (last_page);
  g_assert_nonnull (strstr (text, "stage11"));
  test_remove_dir (dir);
}

typedef struct {
  guint n_pieces;
  guint fail_at;
} Pieces;

static gboolean
fail_at (const char *data, gsize length, gpointer user_data, GError **error)
{
  Pieces *pieces = user_data;

  g_assert_cmpuint (pieces->n_pieces, <, pieces->fail_at);
  if (++pieces->n_pieces == pieces->fail_at)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, "No space left on device");
      return FALSE;
    }
  return TRUE;
}

/* The first failed write ends the document with its error; nothing is
 * written after it. */
static void
test_write_error (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (12, 30, 3);
  g_autoptr (GraftScene) scene = test_scene_lay_out (graph, NULL);
  g_autoptr (GError) error = NULL;
  GraftPaintOptions options = { 0 };
  Pieces pieces = { 0, 2 };

  g_assert_false (graft_pdf_write_scene (scene, &options, fail_at, &pieces, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE);
  g_assert_cmpuint (pieces.n_pieces, ==, 2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/pdf-writer/marks", test_marks);
  g_test_add_func ("/pdf-writer/pages", test_pages);
  g_test_add_func ("/pdf-writer/write-error", test_write_error);
  return g_test_run ();
}
