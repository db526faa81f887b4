#include "layout/svg-writer.h"

#include <math.h>
#include <string.h>
#include "layout/decimal.h"
#include "layout/labels.h"
#include "layout/style.h"
#include "layout/text.h"

/* Pieces handed to the write function: big enough that writing costs
 * little, small next to any scene. */
#define FLUSH_SIZE (64 * 1024)

#define N_ROLES GRAFT_TEXT_N_ROLES

typedef struct {
  GString *out;
  GraftSvgWriteFunc write;
  gpointer write_data;
  GError *error;              /* the first write error; later output is dropped */
  const GraftPalette *palette;
  const GraftPaintOptions *options;
  GraftTextWidths *widths;
  guint n_clips;
} SvgWriter;

static void
flush (SvgWriter *w)
{
  if (w->error == NULL && w->out->len > 0)
    w->write (w->out->str, w->out->len, w->write_data, &w->error);
  g_string_truncate (w->out, 0);
}

static void
maybe_flush (SvgWriter *w)
{
  if (w->out->len >= FLUSH_SIZE)
    flush (w);
}

static void
append (SvgWriter *w, const char *text)
{
  g_string_append (w->out, text);
}

/* A coordinate to two decimals. */
static void
append_number (SvgWriter *w, double value)
{
  graft_decimal_append (w->out, value, 2);
}

/* "x y" */
static void
append_pair (SvgWriter *w, double x, double y)
{
  append_number (w, x);
  g_string_append_c (w->out, ' ');
  append_number (w, y);
}

/* name="value" with a leading space. */
static void
append_attribute (SvgWriter *w, const char *name, double value)
{
  g_string_append_c (w->out, ' ');
  g_string_append (w->out, name);
  g_string_append (w->out, "=\"");
  append_number (w, value);
  g_string_append_c (w->out, '"');
}

static void
append_colour (SvgWriter *w, const GraftRgb *rgb)
{
  g_string_append_printf (w->out, "#%02x%02x%02x", (int) lround (CLAMP (rgb->r, 0, 1) * 255),
                          (int) lround (CLAMP (rgb->g, 0, 1) * 255), (int) lround (CLAMP (rgb->b, 0, 1) * 255));
}

/* Text content as XML 1.0 allows it: markup characters escaped, invalid
 * UTF-8 and the characters XML forbids even as references (controls, U+FFFE,
 * U+FFFF) replaced by U+FFFD. Names come from the model file. */
static void
append_escaped (SvgWriter *w, const char *text)
{
  g_autofree char *valid = NULL;

  if (!g_utf8_validate (text, -1, NULL))
    text = valid = g_utf8_make_valid (text, -1);
  for (const char *c = text; *c != '\0'; c = g_utf8_next_char (c))
    {
      gunichar u = g_utf8_get_char (c);

      switch (u)
        {
        case '&':
          append (w, "&amp;");
          break;
        case '<':
          append (w, "&lt;");
          break;
        case '>':
          append (w, "&gt;");
          break;
        default:
          if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0xfffe || u == 0xffff)
            append (w, "\xef\xbf\xbd");
          else
            g_string_append_len (w->out, c, g_utf8_next_char (c) - c);
        }
    }
}

static double
measure (SvgWriter *w, GraftTextRole role, const char *text)
{
  return graft_text_widths_measure (w->widths, role, text);
}

/* A run of text whose baseline starts at (x, y), width wide as measured.
 * textLength holds it to that width in whatever font a viewer substitutes,
 * so it never overflows its box. colour NULL: the role's class colour. */
static void
write_text (SvgWriter *w, GraftTextRole role, double x, double y, double width, const GraftRgb *colour,
            const char *text)
{
  g_string_append_printf (w->out, "<text class=\"t%d\"", (int) role);
  append_attribute (w, "x", x);
  append_attribute (w, "y", y);
  if (width > 0)
    {
      append_attribute (w, "textLength", width);
      append (w, " lengthAdjust=\"spacingAndGlyphs\"");
    }
  if (colour != NULL)
    {
      append (w, " style=\"fill:");
      append_colour (w, colour);
      append (w, "\"");
    }
  append (w, ">");
  append_escaped (w, text);
  append (w, "</text>\n");
  maybe_flush (w);
}

/* Opens <rect class=... x y width height rx> as the painter's rounded_rect
 * draws it (the radius at most half the shorter side); the caller adds any
 * style and closes it. */
static void
open_rect (SvgWriter *w, const char *css_class, const GraftRect *rect, double radius)
{
  append (w, "<rect");
  if (css_class != NULL)
    g_string_append_printf (w->out, " class=\"%s\"", css_class);
  append_attribute (w, "x", rect->x);
  append_attribute (w, "y", rect->y);
  append_attribute (w, "width", MAX (rect->width, 0));
  append_attribute (w, "height", MAX (rect->height, 0));
  radius = MIN (radius, MIN (rect->width, rect->height) / 2);
  if (radius > 0)
    append_attribute (w, "rx", radius);
}

/* A border in colour, width wide (a style: presentation attributes would
 * lose to the class rules); no_fill: the box under it is drawn already. */
static void
append_border_style (SvgWriter *w, gboolean no_fill, const char *width, const GraftRgb *colour)
{
  g_string_append_printf (w->out, " style=\"%sstroke-width:%s;stroke:", no_fill ? "fill:none;" : "", width);
  append_colour (w, colour);
  append (w, "\"");
}

/* A filled rounded rectangle of colour at opacity. */
static void
write_filled_rect (SvgWriter *w, const GraftRect *rect, double radius, const GraftRgb *colour, double opacity)
{
  open_rect (w, NULL, rect, radius);
  append (w, " style=\"stroke:none;fill:");
  append_colour (w, colour);
  if (opacity < 1)
    g_string_append_printf (w->out, ";fill-opacity:%d%%", (int) lround (opacity * 100));
  append (w, "\"/>\n");
}

/* The style sheet: what most items share, so each says only its class. */
static void
write_header (SvgWriter *w, const GraftRect *bounds)
{
  const GraftPalette *palette = w->palette;
  const char *scope = w->options->dark ? ".graft-dark" : ".graft-light";
  static const char *const role_fonts[N_ROLES] = {
    [GRAFT_TEXT_TITLE] = "font-weight:bold",
    [GRAFT_TEXT_BODY] = "font-weight:normal",
    [GRAFT_TEXT_GROUP_TITLE] = "font-weight:bold",
    [GRAFT_TEXT_EDGE] = "font-weight:normal",
    [GRAFT_TEXT_EDGE_INFERRED] = "font-style:italic",
  };
  const GraftRgb *role_colours[N_ROLES] = {
    [GRAFT_TEXT_TITLE] = &palette->text,
    [GRAFT_TEXT_BODY] = &palette->text_muted,
    [GRAFT_TEXT_GROUP_TITLE] = &palette->group_text,
    [GRAFT_TEXT_EDGE] = &palette->text_muted,
    [GRAFT_TEXT_EDGE_INFERRED] = &palette->text_muted,
  };

  append (w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"");
  /* Points, as cairo's SVG surface had them (and the PDF has). */
  append (w, " width=\"");
  append_number (w, bounds->width);
  append (w, "pt\" height=\"");
  append_number (w, bounds->height);
  append (w, "pt\" viewBox=\"");
  append_pair (w, bounds->x, bounds->y);
  append (w, " ");
  append_pair (w, bounds->width, bounds->height);
  /* Inline in a page (Jupyter), a style sheet applies to the whole page:
   * every rule is scoped to the document's style, so that it touches no
   * other picture, and a light and a dark graph side by side keep theirs. */
  g_string_append_printf (w->out, "\" class=\"%s\" xml:space=\"preserve\">\n<style>\n", scope + 1);
  g_string_append_printf (w->out, "%s{stroke-linecap:round;stroke-linejoin:round}\n", scope);
  g_string_append_printf (w->out, "%s text{font-family:'DejaVu Sans',Verdana,sans-serif;stroke:none}\n", scope);
  for (int role = 0; role < N_ROLES; role++)
    {
      g_string_append_printf (w->out, "%s .t%d{font-size:", scope, role);
      append_number (w, graft_text_get_size (role));
      g_string_append_printf (w->out, "px;%s;fill:", role_fonts[role]);
      append_colour (w, role_colours[role]);
      append (w, "}\n");
    }
  for (int category = 0; category < GRAFT_OP_CATEGORY_N; category++)
    {
      g_string_append_printf (w->out, "%s .c%d{fill:", scope, category);
      append_colour (w, &palette->fill[category]);
      append (w, ";stroke:");
      append_colour (w, &palette->border[category]);
      append (w, "}\n");
    }
  for (int parity = 0; parity < 2; parity++)
    {
      g_string_append_printf (w->out, "%s .g%d{fill:", scope, parity);
      append_colour (w, &palette->group_fill[parity]);
      append (w, ";stroke:");
      append_colour (w, &palette->group_border);
      append (w, "}\n");
    }
  g_string_append_printf (w->out, "%s .e{fill:none;stroke-width:1.1;stroke:", scope);
  append_colour (w, &palette->edge);
  g_string_append_printf (w->out, "}\n%s .a{stroke:none;fill:", scope);
  append_colour (w, &palette->edge);
  g_string_append_printf (w->out, "}\n%s .h{stroke:none;fill-opacity:.85;fill:", scope);
  append_colour (w, &palette->label_halo);
  append (w, "}\n</style>\n");

  open_rect (w, NULL, bounds, 0);
  append (w, " style=\"stroke:none;fill:");
  append_colour (w, &palette->background);
  append (w, "\"/>\n");
}

/* Title centred, other lines left-aligned, as the painter's draw_lines. */
static void
write_lines (SvgWriter *w, char **lines, const GraftRect *rect)
{
  double y = rect->y + GRAFT_LABEL_PAD_Y;

  for (guint i = 0; lines[i] != NULL; i++)
    {
      GraftTextRole role = i == 0 ? GRAFT_TEXT_TITLE : GRAFT_TEXT_BODY;
      double width = measure (w, role, lines[i]);
      double x = i == 0 ? rect->x + (rect->width - width) / 2 : rect->x + GRAFT_LABEL_PAD_X;

      if (lines[i][0] != '\0')
        write_text (w, role, x, y + graft_style_get_baseline_offset (role), width, NULL, lines[i]);
      y += graft_text_get_line_height (role);
    }
}

static void
write_badge (SvgWriter *w, const char *text, double right, double top, const GraftRgb *colour)
{
  double width = measure (w, GRAFT_TEXT_EDGE, text);
  GraftRect pill;
  GraftPoint start;

  graft_style_get_badge (right, top, width, &pill, &start);
  write_filled_rect (w, &pill, 6, colour, 1);
  write_text (w, GRAFT_TEXT_EDGE, start.x, start.y, width, graft_style_get_badge_text_colour (colour), text);
}

/* A stripe of heat down the box's left side, clipped to the rounded box. */
static void
write_heat_stripe (SvgWriter *w, const GraftRect *box, double radius, double heat)
{
  double rgb[3];
  GraftRgb colour;
  GraftRect stripe = { box->x, box->y, MIN (5, box->width), box->height };
  guint clip = w->n_clips++;

  graft_painter_get_heat_colour (heat, rgb);
  colour = (GraftRgb) { rgb[0], rgb[1], rgb[2] };
  g_string_append_printf (w->out, "<clipPath id=\"heat%u\">", clip);
  open_rect (w, NULL, box, radius);
  append (w, "/></clipPath>\n");
  open_rect (w, NULL, &stripe, 0);
  g_string_append_printf (w->out, " clip-path=\"url(#heat%u)\" style=\"stroke:none;fill:", clip);
  append_colour (w, &colour);
  append (w, "\"/>\n");
}

/* A band behind an item Find matched, as the painter draws it. */
static void
write_found_band (SvgWriter *w, const GraftRect *rect, gboolean round_ends)
{
  GraftRect band = { rect->x - 7, rect->y - 7, rect->width + 14, rect->height + 14 };

  write_filled_rect (w, &band, round_ends ? band.height / 2 : 10, &w->palette->found, 0.85);
}

static gboolean
is_found (SvgWriter *w, gconstpointer item)
{
  return w->options->found != NULL && item != NULL && g_hash_table_contains (w->options->found, item);
}

static void
write_expanded_group (SvgWriter *w, const GraftSceneGroup *group)
{
  const GraftPalette *palette = w->palette;
  g_autofree char *header = graft_style_dup_group_header (group);
  double baseline = group->rect.y + graft_style_get_baseline_offset (GRAFT_TEXT_GROUP_TITLE) + 4;
  char css_class[] = { 'g', (char) ('0' + group->depth % 2), '\0' };

  open_rect (w, css_class, &group->rect, 6);
  /* Control flow in the control colour; a branch that never runs dashed. */
  if (group->dead)
    {
      append (w, " style=\"fill:");
      append_colour (w, &palette->background);
      append (w, ";stroke-dasharray:5 3");
      if (group->control)
        append (w, ";stroke-width:1.5");
      append (w, "\"");
    }
  else if (group->control)
    {
      append (w, " style=\"stroke-width:1.5;stroke:");
      append_colour (w, &palette->border[GRAFT_OP_CATEGORY_CONTROL]);
      append (w, "\"");
    }
  append (w, "/>\n");
  write_text (w, GRAFT_TEXT_GROUP_TITLE, group->rect.x + 8, baseline, measure (w, GRAFT_TEXT_GROUP_TITLE, header),
              NULL, header);
}

/* A stack of cards, so it reads as "more inside". */
static void
write_collapsed_group (SvgWriter *w, const GraftSceneGroup *group)
{
  const GraftPalette *palette = w->palette;
  GraftRect back = { group->rect.x + 4, group->rect.y + 4, group->rect.width - 4, group->rect.height - 4 };
  GraftRect front = { group->rect.x, group->rect.y, group->rect.width - 4, group->rect.height - 4 };

  if (is_found (w, group->group))
    write_found_band (w, &group->rect, FALSE);
  open_rect (w, "g1", &back, 5);
  append (w, "/>\n");
  write_filled_rect (w, &front, 5, &palette->collapsed_fill, 1);
  if (group->has_heat)
    write_heat_stripe (w, &front, 5, group->heat);
  /* Marked nodes inside: the front card is outlined in the worst one's
   * colour, as a marked node would be. */
  open_rect (w, NULL, &front, 5);
  if (group->n_marked > 0)
    append_border_style (w, TRUE, "2.5", &palette->severity[MIN (group->highlight, 3)]);
  else
    append_border_style (w, TRUE, "1.5", &palette->group_border);
  append (w, "/>\n");
  if (group->lines != NULL)
    write_lines (w, group->lines, &front);
  if (group->n_marked > 0)
    {
      g_autofree char *text = graft_style_dup_hidden_marks (group, w->options->hidden_marks_noun);

      write_badge (w, text, front.x + front.width + 2, front.y, &palette->severity[MIN (group->highlight, 3)]);
    }
}

static void
write_node (SvgWriter *w, const GraftSceneNode *node)
{
  const GraftPalette *palette = w->palette;
  gboolean io = node->kind != GRAFT_SCENE_NODE_OP;
  gboolean selected = io ? node->value != NULL && node->value == w->options->selected_value
                         : node->node != NULL && node->node == w->options->selected_node;
  double radius = io ? node->rect.height / 2 : 4;
  const GraftRgb *border = &palette->border[node->category];
  const char *border_width = "1";
  char css_class[8];

  g_snprintf (css_class, sizeof css_class, "c%d", (int) node->category);
  if (is_found (w, io ? (gconstpointer) node->value : (gconstpointer) node->node))
    write_found_band (w, &node->rect, io);
  if (selected)
    {
      GraftRect halo = { node->rect.x - 4, node->rect.y - 4, node->rect.width + 8, node->rect.height + 8 };

      open_rect (w, NULL, &halo, io ? halo.height / 2 : 8);
      append (w, " stroke-opacity=\".35\"");
      append_border_style (w, TRUE, "5", &palette->accent);
      append (w, "/>\n");
    }
  /* The box's fill, any tint and heat over it, then its border. */
  if (selected && node->highlight == 0)
    border = &palette->accent, border_width = "3";
  else if (node->highlight > 0 && node->highlight < G_N_ELEMENTS (palette->severity))
    border = &palette->severity[node->highlight], border_width = "2.5";
  open_rect (w, css_class, &node->rect, radius);
  if (node->has_tint || node->has_heat)
    {
      append (w, " style=\"stroke:none\"/>\n");
      if (node->has_tint)
        {
          GraftRgb tint = { node->tint[0], node->tint[1], node->tint[2] };

          write_filled_rect (w, &node->rect, radius, &tint, 0.45);
        }
      if (node->has_heat)
        write_heat_stripe (w, &node->rect, radius, node->heat);
      open_rect (w, NULL, &node->rect, radius);
      append_border_style (w, TRUE, border_width, border);
    }
  else if (border != &palette->border[node->category])
    append_border_style (w, FALSE, border_width, border);
  append (w, "/>\n");

  if (node->lines != NULL)
    write_lines (w, node->lines, &node->rect);
  if (node->dead)
    /* Greyed: the background over it, the box still legible. */
    write_filled_rect (w, &node->rect, radius, &palette->background, 0.55);
  if (node->badge != NULL)
    write_badge (w, node->badge, node->rect.x + node->rect.width + 2, node->rect.y,
                 &palette->severity[MIN (node->highlight, 3)]);
}

static void
append_edge_path (SvgWriter *w, const GraftSceneEdge *edge)
{
  append (w, " d=\"M");
  append_pair (w, edge->points[0].x, edge->points[0].y);
  for (guint i = 1; i + 2 < edge->n_points; i += 3)
    {
      append (w, "C");
      append_pair (w, edge->points[i].x, edge->points[i].y);
      append (w, " ");
      append_pair (w, edge->points[i + 1].x, edge->points[i + 1].y);
      append (w, " ");
      append_pair (w, edge->points[i + 2].x, edge->points[i + 2].y);
    }
  append (w, "\"");
}

static void
write_arrow (SvgWriter *w, GraftPoint from, GraftPoint tip, const GraftRgb *colour)
{
  GraftPoint corners[3];

  if (!graft_style_get_arrow (from, tip, corners))
    return;
  append (w, "<path class=\"a\" d=\"M");
  append_pair (w, corners[0].x, corners[0].y);
  append (w, "L");
  append_pair (w, corners[1].x, corners[1].y);
  append (w, "L");
  append_pair (w, corners[2].x, corners[2].y);
  append (w, "Z\"");
  if (colour != NULL)
    {
      append (w, " style=\"fill:");
      append_colour (w, colour);
      append (w, "\"");
    }
  append (w, "/>\n");
}

static void
write_edge (SvgWriter *w, const GraftSceneEdge *edge)
{
  const GraftPalette *palette = w->palette;
  gboolean selected = edge->value != NULL && edge->value == w->options->selected_value;
  const GraftRgb *colour = NULL;

  if (edge->n_points < 4)
    return;
  if (is_found (w, edge->value))
    {
      /* A matched value's edges: a band under the line. */
      append (w, "<path class=\"e\" stroke-opacity=\".85\"");
      append_edge_path (w, edge);
      append_border_style (w, FALSE, "7", &palette->found);
      append (w, "/>\n");
    }
  append (w, "<path class=\"e\"");
  append_edge_path (w, edge);
  if (selected || edge->highlight > 0)
    {
      colour = selected ? &palette->accent : &palette->severity[MIN (edge->highlight, 3)];
      append_border_style (w, FALSE, selected ? "2.5" : "2", colour);
    }
  append (w, "/>\n");
  if (edge->has_arrow)
    write_arrow (w, edge->points[edge->n_points - 1], edge->arrow_tip, colour);
  maybe_flush (w);
}

static void
write_edge_label (SvgWriter *w, const GraftSceneEdge *edge)
{
  GraftTextRole role = edge->label_inferred ? GRAFT_TEXT_EDGE_INFERRED : GRAFT_TEXT_EDGE;
  gboolean selected = edge->value != NULL && edge->value == w->options->selected_value;
  double width;
  GraftRect halo;

  if (edge->label == NULL)
    return;
  width = measure (w, role, edge->label);
  /* A halo keeps the label readable where it crosses other edges. */
  halo = (GraftRect) { edge->label_pos.x - 1.5, edge->label_pos.y - graft_text_get_size (GRAFT_TEXT_EDGE) + 0.5,
                       width + 3, graft_text_get_line_height (GRAFT_TEXT_EDGE) };
  open_rect (w, "h", &halo, 0);
  append (w, "/>\n");
  write_text (w, role, edge->label_pos.x, edge->label_pos.y, width, selected ? &w->palette->accent : NULL,
              edge->label);
}

gboolean
graft_svg_write_scene (GraftScene *scene, const GraftPaintOptions *options, GraftSvgWriteFunc write,
                       gpointer user_data, GError **error)
{
  SvgWriter w = { g_string_sized_new (FLUSH_SIZE + 4096), write, user_data, NULL, graft_palette_get (options->dark),
                  options };
  GraftRect bounds;
  guint n_groups = graft_scene_get_n_groups (scene), n_edges = graft_scene_get_n_edges (scene);

  w.widths = graft_text_widths_new ();
  graft_scene_get_bounds (scene, &bounds);
  write_header (&w, &bounds);
  /* The painter's order: expanded groups are backgrounds; collapsed ones
   * are boxes drawn over the edges an outer level routes past them, as
   * nodes are; edge labels over everything. A failed write ends it. */
  for (guint i = 0; i < n_groups && w.error == NULL; i++)
    if (graft_scene_get_group (scene, i)->expanded)
      {
        write_expanded_group (&w, graft_scene_get_group (scene, i));
        maybe_flush (&w);
      }
  for (guint i = 0; i < n_edges && w.error == NULL; i++)
    write_edge (&w, graft_scene_get_edge (scene, i));
  for (guint i = 0; i < n_groups && w.error == NULL; i++)
    if (!graft_scene_get_group (scene, i)->expanded)
      {
        write_collapsed_group (&w, graft_scene_get_group (scene, i));
        maybe_flush (&w);
      }
  for (guint i = 0; i < graft_scene_get_n_nodes (scene) && w.error == NULL; i++)
    {
      write_node (&w, graft_scene_get_node (scene, i));
      maybe_flush (&w);
    }
  for (guint i = 0; i < n_edges && w.error == NULL; i++)
    write_edge_label (&w, graft_scene_get_edge (scene, i));
  append (&w, "</svg>\n");
  flush (&w);

  graft_text_widths_free (w.widths);
  g_string_free (w.out, TRUE);
  if (w.error != NULL)
    {
      g_propagate_error (error, w.error);
      return FALSE;
    }
  return TRUE;
}
