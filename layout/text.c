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

void
graft_text_select (cairo_t *cr, GraftTextRole role)
{
  cairo_font_options_t *options = cairo_font_options_create ();

  /* Unhinted metrics: the measured width is the same at every zoom. */
  cairo_font_options_set_hint_metrics (options, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style (options, CAIRO_HINT_STYLE_NONE);
  cairo_set_font_options (cr, options);
  cairo_font_options_destroy (options);

  cairo_select_font_face (cr, "Sans", roles[role].slant, roles[role].weight);
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

double
graft_text_measure (cairo_t *cr, const char *text)
{
  cairo_text_extents_t extents;

  if (text == NULL || *text == '\0')
    return 0;
  cairo_text_extents (cr, text, &extents);
  /* Ink can reach past the advance (italic overhang, bold); keep the larger. */
  return MAX (extents.x_advance, extents.x_bearing + extents.width);
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
