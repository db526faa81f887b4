/* Text measurement: graft_text_measure() remembers widths, and what it
 * remembers is exactly what cairo measures — per role, per zoom, across
 * threads, and past the bounds where it forgets. */
#include "layout/text.h"

static const char *const texts[] = {
  "MatMul", "Add", "Relu", "Tanh", "batch×16", "B: float32[16,16]", "block99", "stage12 · Sequential",
  "/stage3/block7/MatMul", "conv1.weight float32[64,3,7,7]", "iiiii", "WWWWW", "x…", "Ω≈ç√∫", "a",
};

static const GraftTextRole all_roles[] = {
  GRAFT_TEXT_TITLE, GRAFT_TEXT_BODY, GRAFT_TEXT_GROUP_TITLE, GRAFT_TEXT_EDGE, GRAFT_TEXT_EDGE_INFERRED,
};

/* What cairo itself says, on reference, a context graft_text_measure()
 * never sees, scaled by zoom. */
static double
cairo_width (cairo_t *reference, GraftTextRole role, const char *text)
{
  cairo_text_extents_t extents;

  graft_text_select (reference, role);
  cairo_text_extents (reference, text, &extents);
  return MAX (extents.x_advance, extents.x_bearing + extents.width);
}

static cairo_t *
reference_new (double zoom)
{
  cairo_t *reference = graft_text_context_new ();

  cairo_scale (reference, zoom, zoom);
  return reference;
}

/* One context switching fonts and zooms back and forth, as the painter and
 * layout do: every width, first measured or remembered, is cairo's to the
 * bit. More zooms than the cache keeps fonts for, so it forgets on the way. */
static void
test_measure_matches_cairo (void)
{
  cairo_t *cr = graft_text_context_new ();

  for (guint round = 0; round < 2; round++)
    for (guint z = 0; z < 80; z++)
      {
        double zoom = 0.25 + z * 0.05;

        cairo_t *reference = reference_new (zoom);

        cairo_save (cr);
        cairo_scale (cr, zoom, zoom);
        for (guint t = 0; t < G_N_ELEMENTS (texts); t++)
          for (guint r = 0; r < G_N_ELEMENTS (all_roles); r++)
            {
              graft_text_select (cr, all_roles[r]);
              g_assert_cmpfloat (graft_text_measure (cr, texts[t]), ==, cairo_width (reference, all_roles[r], texts[t]));
            }
        cairo_restore (cr);
        cairo_destroy (reference);
      }
  cairo_destroy (cr);
}

/* The same text in different fonts is different widths, whatever order. */
static void
test_measure_keys_on_font (void)
{
  cairo_t *cr = graft_text_context_new ();
  cairo_t *reference = reference_new (1);
  cairo_t *zoomed_reference = reference_new (3);
  double title, body, edge, inferred;

  graft_text_select (cr, GRAFT_TEXT_TITLE);
  title = graft_text_measure (cr, "MatMul");
  graft_text_select (cr, GRAFT_TEXT_BODY);
  body = graft_text_measure (cr, "MatMul");
  graft_text_select (cr, GRAFT_TEXT_EDGE);
  edge = graft_text_measure (cr, "MatMul");
  graft_text_select (cr, GRAFT_TEXT_EDGE_INFERRED);
  inferred = graft_text_measure (cr, "MatMul");
  g_assert_cmpfloat (title, >, body);
  g_assert_cmpfloat (body, >, edge);
  g_assert_cmpfloat (inferred, ==, cairo_width (reference, GRAFT_TEXT_EDGE_INFERRED, "MatMul"));
  g_assert_cmpfloat (edge, ==, cairo_width (reference, GRAFT_TEXT_EDGE, "MatMul"));

  /* Zoom scales the device font, not the width in user units. */
  cairo_scale (cr, 3, 3);
  graft_text_select (cr, GRAFT_TEXT_TITLE);
  g_assert_cmpfloat (graft_text_measure (cr, "MatMul"), ==, cairo_width (zoomed_reference, GRAFT_TEXT_TITLE, "MatMul"));
  g_assert_cmpfloat (graft_text_measure (cr, ""), ==, 0);
  g_assert_cmpfloat (graft_text_measure (cr, NULL), ==, 0);
  cairo_destroy (zoomed_reference);
  cairo_destroy (reference);
  cairo_destroy (cr);
}

/* Layout measures on worker threads while the painter measures on the main
 * one: several threads sharing repeated texts and each adding unique ones,
 * past the number of widths the cache keeps. */
#define N_THREADS 4
#define N_PER_THREAD 24000

static gpointer
measure_thread (gpointer data)
{
  guint id = GPOINTER_TO_UINT (data);
  cairo_t *cr = graft_text_context_new ();
  cairo_t *reference = reference_new (1);

  for (guint i = 0; i < N_PER_THREAD; i++)
    {
      GraftTextRole role = all_roles[i % G_N_ELEMENTS (all_roles)];
      char unique[64];
      const char *text;

      g_snprintf (unique, sizeof unique, "/stage%u/block%u/MatMul", id, i);
      text = i % 4 == 0 ? texts[i % G_N_ELEMENTS (texts)] : unique;
      graft_text_select (cr, role);
      g_assert_cmpfloat (graft_text_measure (cr, text), ==, cairo_width (reference, role, text));
    }
  cairo_destroy (reference);
  cairo_destroy (cr);
  return NULL;
}

static void
test_measure_threads (void)
{
  GThread *threads[N_THREADS];

  for (guint i = 0; i < N_THREADS; i++)
    threads[i] = g_thread_new ("measure", measure_thread, GUINT_TO_POINTER (i));
  for (guint i = 0; i < N_THREADS; i++)
    g_thread_join (threads[i]);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/text/measure-matches-cairo", test_measure_matches_cairo);
  g_test_add_func ("/text/measure-keys-on-font", test_measure_keys_on_font);
  g_test_add_func ("/text/measure-threads", test_measure_threads);
  return g_test_run ();
}
