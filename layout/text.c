#include "layout/text.h"

#include <string.h>

static const struct {
  double size;
  double line_height;
  cairo_font_weight_t weight;
  cairo_font_slant_t slant;
} roles[] = {
  [GRAFT_TEXT_TITLE] = { 11.0, 14.0, CAIRO_FONT_WEIGHT_BOLD, CAIRO_FONT_SLANT_NORMAL },
  [GRAFT_TEXT_BODY] = { 9.0, 11.5, CAIRO_FONT_WEIGHT_NORMAL, CAIRO_FONT_SLANT_NORMAL },
  [GRAFT_TEXT_GROUP_TITLE] = { 10.0, 13.0, CAIRO_FONT_WEIGHT_BOLD, CAIRO_FONT_SLANT_NORMAL },
  [GRAFT_TEXT_EDGE] = { 8.0, 10.0, CAIRO_FONT_WEIGHT_NORMAL, CAIRO_FONT_SLANT_NORMAL },
  [GRAFT_TEXT_EDGE_INFERRED] = { 8.0, 10.0, CAIRO_FONT_WEIGHT_NORMAL, CAIRO_FONT_SLANT_ITALIC },
};

/* Made once: a big graph selects a font for every line it measures and
 * draws, and cairo_select_font_face() looks its face up each time. */
static cairo_font_options_t *font_options;
static cairo_font_face_t *font_faces[G_N_ELEMENTS (roles)];

void
graft_text_select (cairo_t *cr, GraftTextRole role)
{
  static gsize initialized;

  if (g_once_init_enter (&initialized))
    {
      font_options = cairo_font_options_create ();
      /* Unhinted metrics: the measured width is the same at every zoom. */
      cairo_font_options_set_hint_metrics (font_options, CAIRO_HINT_METRICS_OFF);
      cairo_font_options_set_hint_style (font_options, CAIRO_HINT_STYLE_NONE);
      for (gsize i = 0; i < G_N_ELEMENTS (roles); i++)
        font_faces[i] = cairo_toy_font_face_create ("Sans", roles[i].slant, roles[i].weight);
      g_once_init_leave (&initialized, 1);
    }
  cairo_set_font_options (cr, font_options);
  cairo_set_font_face (cr, font_faces[role]);
  cairo_set_font_size (cr, roles[role].size);
}

double
graft_text_get_size (GraftTextRole role)
{
  return roles[role].size;
}

double
graft_text_get_line_height (GraftTextRole role)
{
  return roles[role].line_height;
}

/* Labels repeat by the thousand in a big graph ("MatMul", "batch×16", a
 * stage's block names): each distinct text is measured once per font. The
 * key is the scaled font cairo measures with (face, size, weight, slant,
 * matrix and options all in one object), so a remembered width is exactly
 * what cairo_text_extents would return. Layout runs on worker threads while
 * the painter measures on the main thread, hence the lock. Past either bound
 * everything is forgotten: a graph's label vocabulary is small, and the
 * painter at a new zoom is a new font. */
#define MAX_REMEMBERED_WIDTHS 65536
#define MAX_REMEMBERED_FONTS 64

static GMutex remembered_lock;
static GHashTable *remembered_fonts; /* cairo_scaled_font_t (a reference) → GHashTable text → double * */
static guint n_remembered_widths;

static double
measure_uncached (cairo_t *cr, const char *text)
{
  cairo_text_extents_t extents;

  cairo_text_extents (cr, text, &extents);
  /* Ink can reach past the advance (italic overhang, bold); keep the larger. */
  return MAX (extents.x_advance, extents.x_bearing + extents.width);
}

/* The widths remembered for font, made on first use; called locked. */
static GHashTable *
remembered_widths_of (cairo_scaled_font_t *font)
{
  GHashTable *widths;

  if (remembered_fonts == NULL)
    remembered_fonts = g_hash_table_new_full (g_direct_hash, g_direct_equal,
                                              (GDestroyNotify) cairo_scaled_font_destroy,
                                              (GDestroyNotify) g_hash_table_unref);
  widths = g_hash_table_lookup (remembered_fonts, font);
  if (widths != NULL)
    return widths;
  if (g_hash_table_size (remembered_fonts) >= MAX_REMEMBERED_FONTS)
    {
      g_hash_table_remove_all (remembered_fonts);
      n_remembered_widths = 0;
    }
  widths = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_insert (remembered_fonts, cairo_scaled_font_reference (font), widths);
  return widths;
}

double
graft_text_measure (cairo_t *cr, const char *text)
{
  cairo_scaled_font_t *font;
  GHashTable *widths;
  double *remembered;
  double width;

  if (text == NULL || *text == '\0')
    return 0;
  font = cairo_get_scaled_font (cr);
  if (cairo_scaled_font_status (font) != CAIRO_STATUS_SUCCESS)
    return measure_uncached (cr, text);

  {
    G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&remembered_lock);

    remembered = g_hash_table_lookup (remembered_widths_of (font), text);
    if (remembered != NULL)
      return *remembered;
  }

  /* Measured unlocked: another thread may measure the same text meanwhile,
   * and both get the same width. */
  width = measure_uncached (cr, text);

  {
    G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&remembered_lock);

    if (n_remembered_widths >= MAX_REMEMBERED_WIDTHS)
      {
        g_hash_table_remove_all (remembered_fonts);
        n_remembered_widths = 0;
      }
    widths = remembered_widths_of (font);
    if (!g_hash_table_contains (widths, text))
      {
        g_hash_table_insert (widths, g_strdup (text), g_memdup2 (&width, sizeof width));
        n_remembered_widths++;
      }
  }
  return width;
}

char *
graft_text_elide (cairo_t *cr, const char *text, double max_width)
{
  static const char ellipsis[] = "…";
  g_autoptr (GString) prefix = NULL;
  const char *end;
  glong lo, hi, n_chars;

  if (graft_text_measure (cr, text) <= max_width)
    return g_strdup (text);

  /* Binary search on the number of characters kept. */
  n_chars = g_utf8_strlen (text, -1);
  lo = 0;
  hi = n_chars;
  while (lo < hi)
    {
      glong mid = (lo + hi + 1) / 2;
      g_autofree char *candidate = NULL;

      end = g_utf8_offset_to_pointer (text, mid);
      candidate = g_strdup_printf ("%.*s%s", (int) (end - text), text, ellipsis);
      if (graft_text_measure (cr, candidate) <= max_width)
        lo = mid;
      else
        hi = mid - 1;
    }
  end = g_utf8_offset_to_pointer (text, lo);
  prefix = g_string_new_len (text, end - text);
  g_string_append (prefix, ellipsis);
  return g_string_free (g_steal_pointer (&prefix), FALSE);
}

cairo_t *
graft_text_context_new (void)
{
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_A8, 1, 1);
  cairo_t *cr = cairo_create (surface);

  cairo_surface_destroy (surface);
  return cr;
}

/* Past this many distinct texts of a role the memory starts over. */
#define MAX_WRITER_WIDTHS 65536

struct _GraftTextWidths {
  cairo_t *measure[GRAFT_TEXT_N_ROLES];  /* each with its role's font selected once */
  GHashTable *widths[GRAFT_TEXT_N_ROLES]; /* text → its width (a double in the pointer) */
};

GraftTextWidths *
graft_text_widths_new (void)
{
  GraftTextWidths *widths = g_new0 (GraftTextWidths, 1);

  for (int role = 0; role < GRAFT_TEXT_N_ROLES; role++)
    {
      widths->measure[role] = graft_text_context_new ();
      graft_text_select (widths->measure[role], role);
      widths->widths[role] = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    }
  return widths;
}

void
graft_text_widths_free (GraftTextWidths *widths)
{
  if (widths == NULL)
    return;
  for (int role = 0; role < GRAFT_TEXT_N_ROLES; role++)
    {
      cairo_destroy (widths->measure[role]);
      g_hash_table_destroy (widths->widths[role]);
    }
  g_free (widths);
}

double
graft_text_widths_measure (GraftTextWidths *widths, GraftTextRole role, const char *text)
{
  union { gpointer pointer; double width; } remembered;

  G_STATIC_ASSERT (sizeof (double) <= sizeof (gpointer));
  if (g_hash_table_lookup_extended (widths->widths[role], text, NULL, &remembered.pointer))
    return remembered.width;
  if (g_hash_table_size (widths->widths[role]) >= MAX_WRITER_WIDTHS)
    g_hash_table_remove_all (widths->widths[role]);
  remembered.pointer = NULL;
  remembered.width = graft_text_measure (widths->measure[role], text);
  g_hash_table_insert (widths->widths[role], g_strdup (text), remembered.pointer);
  return remembered.width;
}

cairo_t *
graft_text_widths_get_context (GraftTextWidths *widths, GraftTextRole role)
{
  return widths->measure[role];
}
