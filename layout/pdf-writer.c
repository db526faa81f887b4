#include "layout/pdf-writer.h"

#include <math.h>
#include <string.h>
#include <gio/gio.h>
#include <zlib.h>
#include "layout/decimal.h"
#include "layout/export.h"
#include "layout/labels.h"
#include "layout/pdf-font.h"
#include "layout/style.h"
#include "layout/text.h"

/* Pieces handed to the write function: big enough that writing costs
 * little, small next to any scene. */
#define FLUSH_SIZE (64 * 1024)

#define N_ROLES GRAFT_TEXT_N_ROLES

/* The painter's translucent paints, in percent: one graphics state each,
 * setting the fill and stroke opacity alike (a paint uses one of them). */
static const int alphas[] = { 100, 85, 55, 45, 35 };

/* The shear fontconfig gives a face it has to slant itself. */
#define SYNTHETIC_SLANT 0.2

/* Fixed object numbers; the fonts' five objects each follow, then each
 * page's content stream and page dictionary. */
enum {
  OBJECT_CATALOG = 1,
  OBJECT_PAGES,
  OBJECT_RESOURCES,
  OBJECT_INFO,
  OBJECT_FIRST_FONT,
};
enum { FONT_TYPE0, FONT_CIDFONT, FONT_DESCRIPTOR, FONT_PROGRAM, FONT_TO_UNICODE, FONT_N_OBJECTS };

/* What the page's graphics state holds, so that an operator is only
 * written when it changes something. */
typedef struct {
  GraftRgb fill, stroke;
  gboolean fill_known, stroke_known;
  double line_width;          /* < 0: unknown */
  int alpha;                  /* percent; < 0: unknown */
  gboolean dashed;
} PageState;

typedef struct {
  GString *out;               /* the file's bytes not yet handed to write */
  GraftPdfWriteFunc write;
  gpointer write_data;
  GError *error;              /* the first write error; later output is dropped */
  guint64 written;            /* bytes handed to write */
  GArray *offsets;            /* guint64 by object number: where it starts in the file */
  z_stream deflate;

  GString *page;              /* the content stream of the page being drawn */
  PageState state;

  const GraftPalette *palette;
  const GraftPaintOptions *options;
  GraftScene *scene;
  GraftTextWidths *widths;
  GPtrArray *fonts;           /* GraftPdfFont, one per face the roles use */
  guint role_font[N_ROLES];   /* index into fonts */
  gboolean lacks_bold[N_ROLES], lacks_italic[N_ROLES];
} PdfWriter;

/* File output */

static void
flush (PdfWriter *w)
{
  if (w->error == NULL && w->out->len > 0)
    w->write (w->out->str, w->out->len, w->write_data, &w->error);
  w->written += w->out->len;
  g_string_truncate (w->out, 0);
}

static void
maybe_flush (PdfWriter *w)
{
  if (w->out->len >= FLUSH_SIZE)
    flush (w);
}

static void
begin_object (PdfWriter *w, guint number)
{
  if (number >= w->offsets->len)
    g_array_set_size (w->offsets, number + 1);
  g_array_index (w->offsets, guint64, number) = w->written + w->out->len;
  g_string_append_printf (w->out, "%u 0 obj\n", number);
}

static void
end_object (PdfWriter *w)
{
  g_string_append (w->out, "endobj\n");
  maybe_flush (w);
}

/* An object holding data, deflated; extra goes into its dictionary. */
static void
write_stream (PdfWriter *w, guint number, const char *extra, const void *data, gsize length)
{
  gsize bound = deflateBound (&w->deflate, length);
  gsize start;

  begin_object (w, number);
  g_string_append (w->out, "<< /Filter /FlateDecode");
  if (extra != NULL)
    g_string_append (w->out, extra);
  g_string_append (w->out, " /Length ");
  /* Deflated straight into the output, the length written after. */
  start = w->out->len;
  g_string_set_size (w->out, start + 32 + bound);
  deflateReset (&w->deflate);
  w->deflate.next_in = (Bytef *) data;
  w->deflate.avail_in = (uInt) length;
  w->deflate.next_out = (Bytef *) w->out->str + start + 32;
  w->deflate.avail_out = (uInt) bound;
  deflate (&w->deflate, Z_FINISH);
  {
    char head[32];
    gsize deflated = bound - w->deflate.avail_out;
    int n = g_snprintf (head, sizeof head, "%" G_GSIZE_FORMAT " >>\nstream\n", deflated);

    /* The header before the data, in the room left for it. */
    memmove (w->out->str + start + n, w->out->str + start + 32, deflated);
    memcpy (w->out->str + start, head, n);
    g_string_set_size (w->out, start + n + deflated);
  }
  g_string_append (w->out, "\nendstream\n");
  end_object (w);
}

/* Page content */

static void
number (PdfWriter *w, double value)
{
  graft_decimal_append (w->page, value, 2);
  g_string_append_c (w->page, ' ');
}

static void
operator (PdfWriter *w, const char *op)
{
  g_string_append (w->page, op);
  g_string_append_c (w->page, '\n');
}

static void
colour (PdfWriter *w, const GraftRgb *rgb)
{
  graft_decimal_append (w->page, CLAMP (rgb->r, 0, 1), 3);
  g_string_append_c (w->page, ' ');
  graft_decimal_append (w->page, CLAMP (rgb->g, 0, 1), 3);
  g_string_append_c (w->page, ' ');
  graft_decimal_append (w->page, CLAMP (rgb->b, 0, 1), 3);
  g_string_append_c (w->page, ' ');
}

static gboolean
same_rgb (const GraftRgb *a, const GraftRgb *b)
{
  return a->r == b->r && a->g == b->g && a->b == b->b;
}

static void
set_alpha (PdfWriter *w, double alpha)
{
  int percent = (int) lround (alpha * 100);

  if (percent == w->state.alpha)
    return;
  g_string_append_printf (w->page, "/A%d gs\n", percent);
  w->state.alpha = percent;
}

static void
set_fill (PdfWriter *w, const GraftRgb *rgb, double alpha)
{
  set_alpha (w, alpha);
  if (w->state.fill_known && same_rgb (&w->state.fill, rgb))
    return;
  colour (w, rgb);
  operator (w, "rg");
  w->state.fill = *rgb;
  w->state.fill_known = TRUE;
}

static void
set_stroke (PdfWriter *w, const GraftRgb *rgb, double alpha, double line_width)
{
  set_alpha (w, alpha);
  if (!w->state.stroke_known || !same_rgb (&w->state.stroke, rgb))
    {
      colour (w, rgb);
      operator (w, "RG");
      w->state.stroke = *rgb;
      w->state.stroke_known = TRUE;
    }
  if (line_width != w->state.line_width)
    {
      number (w, line_width);
      operator (w, "w");
      w->state.line_width = line_width;
    }
}

static void
set_dashed (PdfWriter *w, gboolean dashed)
{
  if (dashed == w->state.dashed)
    return;
  operator (w, dashed ? "[5 3] 0 d" : "[] 0 d");
  w->state.dashed = dashed;
}

static void
move_to (PdfWriter *w, double x, double y)
{
  number (w, x);
  number (w, y);
  operator (w, "m");
}

static void
line_to (PdfWriter *w, double x, double y)
{
  number (w, x);
  number (w, y);
  operator (w, "l");
}

static void
curve_to (PdfWriter *w, double x1, double y1, double x2, double y2, double x3, double y3)
{
  number (w, x1);
  number (w, y1);
  number (w, x2);
  number (w, y2);
  number (w, x3);
  number (w, y3);
  operator (w, "c");
}

static void
rectangle (PdfWriter *w, double x, double y, double width, double height)
{
  number (w, x);
  number (w, y);
  number (w, width);
  number (w, height);
  operator (w, "re");
}

/* The painter's rounded_rect: quarter circles of radius (at most half the
 * shorter side) at the corners, each one Bézier curve as cairo draws it. */
static void
rounded_rect (PdfWriter *w, const GraftRect *rect, double radius)
{
  /* Control-point distance of a quarter circle of radius 1. */
  const double k = 0.5522847498307936;
  double x = rect->x, y = rect->y, width = rect->width, height = rect->height;
  double r, c;

  r = MIN (radius, MIN (width, height) / 2);
  if (r <= 0)
    {
      rectangle (w, x, y, width, height);
      return;
    }
  c = r * (1 - k);
  move_to (w, x + width - r, y);
  curve_to (w, x + width - c, y, x + width, y + c, x + width, y + r);
  line_to (w, x + width, y + height - r);
  curve_to (w, x + width, y + height - c, x + width - c, y + height, x + width - r, y + height);
  line_to (w, x + r, y + height);
  curve_to (w, x + c, y + height, x, y + height - c, x, y + height - r);
  line_to (w, x, y + r);
  curve_to (w, x, y + c, x + c, y, x + r, y);
  operator (w, "h");
}

/* Fills and strokes go through q/Q only in clips and synthetic bold: the
 * state is saved with them. */
static void
save (PdfWriter *w, PageState *saved)
{
  *saved = w->state;
  operator (w, "q");
}

static void
restore (PdfWriter *w, const PageState *saved)
{
  operator (w, "Q");
  w->state = *saved;
}

/* Text */

static double
measure (PdfWriter *w, GraftTextRole role, const char *text)
{
  return graft_text_widths_measure (w->widths, role, text);
}

/* A run of text whose baseline starts at (x, y), in the glyphs and with
 * the advances cairo draws it with. */
static void
show_text (PdfWriter *w, GraftTextRole role, double x, double y, const GraftRgb *rgb, const char *text)
{
  GraftPdfFont *font = g_ptr_array_index (w->fonts, w->role_font[role]);
  double size = graft_text_get_size (role);
  PageState saved;

  if (text[0] == '\0')
    return;
  if (w->lacks_bold[role])
    {
      /* Drawn thicker, as cairo emboldens a face that has no bold. */
      save (w, &saved);
      set_stroke (w, rgb, 1, size / 24);
    }
  set_fill (w, rgb, 1);
  g_string_append_printf (w->page, "BT /F%u ", w->role_font[role]);
  number (w, size);
  /* The page is y-down; the glyphs' own space is y-up. */
  g_string_append (w->page, "Tf 1 0 ");
  g_string_append (w->page, w->lacks_italic[role] ? "0.2" : "0");
  g_string_append (w->page, " -1 ");
  number (w, x);
  number (w, y);
  g_string_append (w->page, w->lacks_bold[role] ? "Tm 2 Tr " : "Tm ");
  graft_pdf_font_append_text (font, w->page, text);
  g_string_append (w->page, " Tj ET\n");
  if (w->lacks_bold[role])
    restore (w, &saved);
}

/* Title centred, other lines left-aligned, as the painter's draw_lines. */
static void
draw_lines (PdfWriter *w, char **lines, const GraftRect *rect)
{
  double y = rect->y + GRAFT_LABEL_PAD_Y;

  for (guint i = 0; lines[i] != NULL; i++)
    {
      GraftTextRole role = i == 0 ? GRAFT_TEXT_TITLE : GRAFT_TEXT_BODY;
      double x = i == 0 ? rect->x + (rect->width - measure (w, role, lines[i])) / 2 : rect->x + GRAFT_LABEL_PAD_X;

      show_text (w, role, x, y + graft_style_get_baseline_offset (role),
                 i == 0 ? &w->palette->text : &w->palette->text_muted, lines[i]);
      y += graft_text_get_line_height (role);
    }
}

/* Items, as the painter draws them for a picture (scale 1, text shown, no
 * controls) */

static void
draw_badge (PdfWriter *w, const char *text, double right, double top, const GraftRgb *rgb)
{
  GraftRect pill;
  GraftPoint start;

  graft_style_get_badge (right, top, measure (w, GRAFT_TEXT_EDGE, text), &pill, &start);
  rounded_rect (w, &pill, 6);
  set_fill (w, rgb, 1);
  operator (w, "f");
  show_text (w, GRAFT_TEXT_EDGE, start.x, start.y, graft_style_get_badge_text_colour (rgb), text);
}

static void
draw_heat_stripe (PdfWriter *w, const GraftRect *box, double radius, double heat)
{
  double rgb[3];
  PageState saved;

  graft_painter_get_heat_colour (heat, rgb);
  save (w, &saved);
  rounded_rect (w, box, radius);
  operator (w, "W n");
  rectangle (w, box->x, box->y, 5, box->height);
  set_fill (w, &(GraftRgb) { rgb[0], rgb[1], rgb[2] }, 1);
  operator (w, "f");
  restore (w, &saved);
}

static gboolean
is_found (PdfWriter *w, gconstpointer item)
{
  return w->options->found != NULL && item != NULL && g_hash_table_contains (w->options->found, item);
}

/* A band behind an item Find matched. */
static void
draw_found_band (PdfWriter *w, const GraftRect *rect, double radius)
{
  GraftRect band = { rect->x - 7, rect->y - 7, rect->width + 14, rect->height + 14 };

  rounded_rect (w, &band, radius < 0 ? band.height / 2 : radius);
  set_fill (w, &w->palette->found, 0.85);
  operator (w, "f");
}

static void
draw_expanded_group (GraftScene *scene, guint index, gpointer user_data)
{
  PdfWriter *w = user_data;
  GraftSceneGroup *group = graft_scene_get_group (scene, index);
  const GraftPalette *palette = w->palette;
  g_autofree char *header = NULL;

  if (!group->expanded)
    return;
  rounded_rect (w, &group->rect, 6);
  set_fill (w, group->dead ? &palette->background : &palette->group_fill[group->depth % 2], 1);
  /* Control flow in the control colour; a branch that never runs dashed. */
  set_stroke (w, group->control && !group->dead ? &palette->border[GRAFT_OP_CATEGORY_CONTROL]
                                                : &palette->group_border,
              1, group->control ? 1.5 : 1);
  set_dashed (w, group->dead);
  operator (w, "B");
  set_dashed (w, FALSE);
  header = graft_style_dup_group_header (group);
  show_text (w, GRAFT_TEXT_GROUP_TITLE, group->rect.x + 8,
             group->rect.y + graft_style_get_baseline_offset (GRAFT_TEXT_GROUP_TITLE) + 4, &palette->group_text,
             header);
}

/* A stack of cards, so it reads as "more inside". */
static void
draw_collapsed_group (GraftScene *scene, guint index, gpointer user_data)
{
  PdfWriter *w = user_data;
  GraftSceneGroup *group = graft_scene_get_group (scene, index);
  const GraftPalette *palette = w->palette;
  GraftRect back = { group->rect.x + 4, group->rect.y + 4, group->rect.width - 4, group->rect.height - 4 };
  GraftRect front = { group->rect.x, group->rect.y, group->rect.width - 4, group->rect.height - 4 };

  if (group->expanded)
    return;
  if (is_found (w, group->group))
    draw_found_band (w, &group->rect, 10);
  rounded_rect (w, &back, 5);
  set_fill (w, &palette->group_fill[1], 1);
  set_stroke (w, &palette->group_border, 1, 1);
  operator (w, "B");

  rounded_rect (w, &front, 5);
  set_fill (w, &palette->collapsed_fill, 1);
  if (group->has_heat)
    {
      operator (w, "f");
      draw_heat_stripe (w, &front, 5, group->heat);
      rounded_rect (w, &front, 5);
    }
  /* Marked nodes inside: the front card is outlined in the worst one's
   * colour, as a marked node would be. */
  if (group->n_marked > 0)
    set_stroke (w, &palette->severity[MIN (group->highlight, 3)], 1, 2.5);
  else
    set_stroke (w, &palette->group_border, 1, 1.5);
  operator (w, group->has_heat ? "S" : "B");
  if (group->lines != NULL)
    draw_lines (w, group->lines, &front);
  if (group->n_marked > 0)
    {
      g_autofree char *text = graft_style_dup_hidden_marks (group, w->options->hidden_marks_noun);

      draw_badge (w, text, front.x + front.width + 2, front.y, &palette->severity[MIN (group->highlight, 3)]);
    }
}

static void
draw_node (GraftScene *scene, guint index, gpointer user_data)
{
  PdfWriter *w = user_data;
  GraftSceneNode *node = graft_scene_get_node (scene, index);
  const GraftPalette *palette = w->palette;
  gboolean io = node->kind != GRAFT_SCENE_NODE_OP;
  gboolean selected = io ? node->value != NULL && node->value == w->options->selected_value
                         : node->node != NULL && node->node == w->options->selected_node;
  double radius = io ? node->rect.height / 2 : 4;
  gboolean layered = node->has_tint || node->has_heat;

  if (is_found (w, io ? (gconstpointer) node->value : (gconstpointer) node->node))
    draw_found_band (w, &node->rect, io ? -1 : 10);
  if (selected)
    {
      /* A halo outside the box. */
      GraftRect halo = { node->rect.x - 4, node->rect.y - 4, node->rect.width + 8, node->rect.height + 8 };

      rounded_rect (w, &halo, io ? halo.height / 2 : 8);
      set_stroke (w, &palette->accent, 0.35, 5);
      operator (w, "S");
    }
  /* The box's fill, any tint and heat over it, then its border. */
  rounded_rect (w, &node->rect, radius);
  set_fill (w, &palette->fill[node->category], 1);
  if (layered)
    {
      operator (w, "f");
      if (node->has_tint)
        {
          rounded_rect (w, &node->rect, radius);
          set_fill (w, &(GraftRgb) { node->tint[0], node->tint[1], node->tint[2] }, 0.45);
          operator (w, "f");
        }
      if (node->has_heat)
        draw_heat_stripe (w, &node->rect, radius, node->heat);
      rounded_rect (w, &node->rect, radius);
    }
  if (selected && node->highlight == 0)
    set_stroke (w, &palette->accent, 1, 3);
  else if (node->highlight > 0 && node->highlight < G_N_ELEMENTS (palette->severity))
    set_stroke (w, &palette->severity[node->highlight], 1, 2.5);
  else
    set_stroke (w, &palette->border[node->category], 1, 1);
  operator (w, layered ? "S" : "B");

  if (node->lines != NULL)
    draw_lines (w, node->lines, &node->rect);
  if (node->dead)
    {
      /* Greyed: the background over it, the box still legible. */
      rounded_rect (w, &node->rect, radius);
      set_fill (w, &palette->background, 0.55);
      operator (w, "f");
    }
  if (node->badge != NULL)
    draw_badge (w, node->badge, node->rect.x + node->rect.width + 2, node->rect.y,
                &palette->severity[MIN (node->highlight, 3)]);
}

static void
edge_path (PdfWriter *w, const GraftSceneEdge *edge)
{
  move_to (w, edge->points[0].x, edge->points[0].y);
  for (guint i = 1; i + 2 < edge->n_points; i += 3)
    curve_to (w, edge->points[i].x, edge->points[i].y, edge->points[i + 1].x, edge->points[i + 1].y,
              edge->points[i + 2].x, edge->points[i + 2].y);
}

static void
draw_edge (GraftScene *scene, guint index, gpointer user_data)
{
  PdfWriter *w = user_data;
  GraftSceneEdge *edge = graft_scene_get_edge (scene, index);
  const GraftPalette *palette = w->palette;
  gboolean selected = edge->value != NULL && edge->value == w->options->selected_value;
  const GraftRgb *rgb;
  GraftPoint corners[3];

  if (edge->n_points < 4)
    return;
  if (is_found (w, edge->value))
    {
      /* A matched value's edges: a band under the line. */
      edge_path (w, edge);
      set_stroke (w, &palette->found, 0.85, 7);
      operator (w, "S");
    }
  if (!selected && edge->highlight > 0)
    rgb = &palette->severity[MIN (edge->highlight, 3)];
  else
    rgb = selected ? &palette->accent : &palette->edge;
  edge_path (w, edge);
  set_stroke (w, rgb, 1, selected ? 2.5 : edge->highlight > 0 ? 2.0 : 1.1);
  operator (w, "S");
  if (edge->has_arrow
      && graft_style_get_arrow (edge->points[edge->n_points - 1], edge->arrow_tip, corners))
    {
      move_to (w, corners[0].x, corners[0].y);
      line_to (w, corners[1].x, corners[1].y);
      line_to (w, corners[2].x, corners[2].y);
      operator (w, "h");
      set_fill (w, rgb, 1);
      operator (w, "f");
    }
}

static void
draw_edge_label (GraftScene *scene, guint index, gpointer user_data)
{
  PdfWriter *w = user_data;
  GraftSceneEdge *edge = graft_scene_get_edge (scene, index);
  GraftTextRole role;
  gboolean selected;
  double width;

  if (edge->label == NULL)
    return;
  role = edge->label_inferred ? GRAFT_TEXT_EDGE_INFERRED : GRAFT_TEXT_EDGE;
  selected = edge->value != NULL && edge->value == w->options->selected_value;
  width = measure (w, role, edge->label);
  /* A halo keeps the label readable where it crosses other edges. */
  rectangle (w, edge->label_pos.x - 1.5, edge->label_pos.y - graft_text_get_size (GRAFT_TEXT_EDGE) + 0.5, width + 3,
             graft_text_get_line_height (GRAFT_TEXT_EDGE));
  set_fill (w, &w->palette->label_halo, 0.85);
  operator (w, "f");
  show_text (w, role, edge->label_pos.x, edge->label_pos.y, selected ? &w->palette->accent : &w->palette->text_muted,
             edge->label);
}

/* Pages */

/* One page: the part of the scene in page, in the painter's order
 * (expanded groups are backgrounds; collapsed ones are boxes drawn over
 * the edges an outer level routes past them, as nodes are; edge labels
 * over everything). */
static void
write_page (PdfWriter *w, const GraftRect *page, guint content_object)
{
  GraftScene *scene = w->scene;

  g_string_truncate (w->page, 0);
  w->state = (PageState) { .line_width = 1, .alpha = 100 };
  /* Scene points, y down, with the page's corner at its origin. */
  g_string_append (w->page, "1 0 0 -1 ");
  number (w, -page->x);
  number (w, page->y + page->height);
  operator (w, "cm");
  operator (w, "1 j 1 J");
  rectangle (w, page->x, page->y, page->width, page->height);
  set_fill (w, &w->palette->background, 1);
  operator (w, "f");
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, page, draw_expanded_group, w);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_EDGE, page, draw_edge, w);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, page, draw_collapsed_group, w);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_NODE, page, draw_node, w);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_EDGE, page, draw_edge_label, w);
  write_stream (w, content_object, NULL, w->page->str, w->page->len);

  begin_object (w, content_object + 1);
  g_string_append_printf (w->out, "<< /Type /Page /Parent %u 0 R /Resources %u 0 R /MediaBox [0 0 ", OBJECT_PAGES,
                          OBJECT_RESOURCES);
  graft_decimal_append (w->out, page->width, 2);
  g_string_append_c (w->out, ' ');
  graft_decimal_append (w->out, page->height, 2);
  g_string_append_printf (w->out, "] /Contents %u 0 R >>\n", content_object);
  end_object (w);
}

/* Fonts */

/* The role fonts, one GraftPdfFont per face (the titles' bold serves two
 * roles). */
static gboolean
make_fonts (PdfWriter *w, GError **error)
{
  for (int role = 0; role < N_ROLES; role++)
    {
      guint i;

      for (i = 0; i < w->fonts->len; i++)
        if (graft_pdf_font_is_face_of (g_ptr_array_index (w->fonts, i), graft_text_widths_get_context (w->widths, role)))
          break;
      if (i == w->fonts->len)
        {
          GraftPdfFont *font = graft_pdf_font_new (graft_text_widths_get_context (w->widths, role), error);

          if (font == NULL)
            return FALSE;
          g_ptr_array_add (w->fonts, font);
        }
      w->role_font[role] = i;
      w->lacks_bold[role] = graft_pdf_font_lacks_bold (g_ptr_array_index (w->fonts, i), graft_text_widths_get_context (w->widths, role));
      w->lacks_italic[role] = graft_pdf_font_lacks_italic (g_ptr_array_index (w->fonts, i), graft_text_widths_get_context (w->widths, role));
    }
  return TRUE;
}

static void
append_name (GString *out, const char *name)
{
  /* PDF names take printable ASCII but delimiters, which are #-escaped. */
  g_string_append_c (out, '/');
  for (const guchar *c = (const guchar *) name; *c != '\0'; c++)
    {
      if (*c > 0x20 && *c < 0x7f && strchr ("#()<>[]{}/%", *c) == NULL)
        g_string_append_c (out, (char) *c);
      else
        g_string_append_printf (out, "#%02X", *c);
    }
}

/* A Type 0 font over a CIDFont whose CIDs are the glyph numbers, with the
 * subset embedded and a ToUnicode map. */
static void
write_font (PdfWriter *w, GraftPdfFont *font, guint first)
{
  GraftPdfFontInfo info = { 0 };
  g_autoptr (GString) text = g_string_new (NULL);
  g_autoptr (GBytes) program = graft_pdf_font_dup_program (font);
  g_autofree char *length1 = g_strdup_printf (" /Length1 %" G_GSIZE_FORMAT, g_bytes_get_size (program));

  graft_pdf_font_get_info (font, &info);
  begin_object (w, first + FONT_TYPE0);
  g_string_append (w->out, "<< /Type /Font /Subtype /Type0 /BaseFont ");
  append_name (w->out, info.name);
  g_string_append_printf (w->out, " /Encoding /Identity-H /DescendantFonts [%u 0 R] /ToUnicode %u 0 R >>\n",
                          first + FONT_CIDFONT, first + FONT_TO_UNICODE);
  end_object (w);

  begin_object (w, first + FONT_CIDFONT);
  g_string_append_printf (w->out, "<< /Type /Font /Subtype /%s /BaseFont ",
                          info.truetype ? "CIDFontType2" : "CIDFontType0");
  append_name (w->out, info.name);
  g_string_append_printf (w->out, " /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >>"
                                  " /FontDescriptor %u 0 R%s /W ",
                          first + FONT_DESCRIPTOR, info.truetype ? " /CIDToGIDMap /Identity" : "");
  graft_pdf_font_append_widths (font, w->out);
  g_string_append (w->out, " >>\n");
  end_object (w);

  begin_object (w, first + FONT_DESCRIPTOR);
  g_string_append (w->out, "<< /Type /FontDescriptor /FontName ");
  append_name (w->out, info.name);
  /* Non-symbolic (32), italic (64). */
  g_string_append_printf (w->out, " /Flags %d /FontBBox [", info.italic ? 96 : 32);
  for (int i = 0; i < 4; i++)
    {
      graft_decimal_append (w->out, info.bbox[i], 0);
      g_string_append_c (w->out, i < 3 ? ' ' : ']');
    }
  g_string_append (w->out, " /ItalicAngle ");
  graft_decimal_append (w->out, info.italic_angle, 2);
  g_string_append (w->out, " /Ascent ");
  graft_decimal_append (w->out, info.ascent, 0);
  g_string_append (w->out, " /Descent ");
  graft_decimal_append (w->out, info.descent, 0);
  g_string_append (w->out, " /CapHeight ");
  graft_decimal_append (w->out, info.cap_height, 0);
  g_string_append_printf (w->out, " /StemV 80 /%s %u 0 R >>\n", info.truetype ? "FontFile2" : "FontFile3",
                          first + FONT_PROGRAM);
  end_object (w);

  write_stream (w, first + FONT_PROGRAM, info.truetype ? length1 : " /Subtype /OpenType",
                g_bytes_get_data (program, NULL), g_bytes_get_size (program));
  graft_pdf_font_append_to_unicode (font, text);
  write_stream (w, first + FONT_TO_UNICODE, NULL, text->str, text->len);
  graft_pdf_font_info_clear (&info);
}

/* The document */

static void
write_resources (PdfWriter *w)
{
  begin_object (w, OBJECT_RESOURCES);
  g_string_append (w->out, "<< /Font <<");
  for (guint i = 0; i < w->fonts->len; i++)
    g_string_append_printf (w->out, " /F%u %u 0 R", i, OBJECT_FIRST_FONT + FONT_N_OBJECTS * i + FONT_TYPE0);
  g_string_append (w->out, " >> /ExtGState <<");
  for (gsize i = 0; i < G_N_ELEMENTS (alphas); i++)
    {
      g_string_append_printf (w->out, " /A%d << /ca ", alphas[i]);
      graft_decimal_append (w->out, alphas[i] / 100.0, 2);
      g_string_append (w->out, " /CA ");
      graft_decimal_append (w->out, alphas[i] / 100.0, 2);
      g_string_append (w->out, " >>");
    }
  g_string_append (w->out, " >> >>\n");
  end_object (w);
}

static void
write_trailer (PdfWriter *w, guint first_page, guint n_pages)
{
  guint64 xref;

  begin_object (w, OBJECT_PAGES);
  g_string_append (w->out, "<< /Type /Pages /Kids [");
  for (guint i = 0; i < n_pages; i++)
    g_string_append_printf (w->out, "%s%u 0 R", i % 10 == 0 ? "\n" : " ", first_page + 2 * i + 1);
  g_string_append_printf (w->out, "\n] /Count %u >>\n", n_pages);
  end_object (w);
  begin_object (w, OBJECT_CATALOG);
  g_string_append_printf (w->out, "<< /Type /Catalog /Pages %u 0 R >>\n", OBJECT_PAGES);
  end_object (w);
  begin_object (w, OBJECT_INFO);
  g_string_append (w->out, "<< /Producer (Graft) >>\n");
  end_object (w);

  xref = w->written + w->out->len;
  g_string_append_printf (w->out, "xref\n0 %u\n0000000000 65535 f \n", w->offsets->len);
  for (guint i = 1; i < w->offsets->len; i++)
    {
      g_string_append_printf (w->out, "%010" G_GUINT64_FORMAT " 00000 n \n", g_array_index (w->offsets, guint64, i));
      maybe_flush (w);
    }
  g_string_append_printf (w->out, "trailer\n<< /Size %u /Root %u 0 R /Info %u 0 R >>\nstartxref\n%" G_GUINT64_FORMAT
                                  "\n%%%%EOF\n",
                          w->offsets->len, OBJECT_CATALOG, OBJECT_INFO, xref);
}

static void
write_document (PdfWriter *w)
{
  GraftRect bounds;
  guint first_page = OBJECT_FIRST_FONT + FONT_N_OBJECTS * w->fonts->len;
  guint n_pages = 0;
  gboolean truetype = TRUE;

  for (guint i = 0; i < w->fonts->len; i++)
    {
      GraftPdfFontInfo info = { 0 };

      graft_pdf_font_get_info (g_ptr_array_index (w->fonts, i), &info);
      truetype &= info.truetype;
      graft_pdf_font_info_clear (&info);
    }
  /* OpenType font programs came with PDF 1.6. A binary comment tells
   * transfer programs the file is not text. */
  g_string_append_printf (w->out, "%%PDF-%s\n%%\xe2\xe3\xcf\xd3\n", truetype ? "1.5" : "1.6");
  graft_scene_get_bounds (w->scene, &bounds);
  /* Full size, tiled into pages no viewer refuses, left to right and top
   * to bottom, as export.h says. */
  for (double y = 0; y < MAX (bounds.height, 1) && w->error == NULL; y += GRAFT_EXPORT_PDF_MAX_PAGE_SIDE)
    for (double x = 0; x < MAX (bounds.width, 1) && w->error == NULL; x += GRAFT_EXPORT_PDF_MAX_PAGE_SIDE)
      {
        GraftRect page = { bounds.x + x, bounds.y + y,
                           MIN (GRAFT_EXPORT_PDF_MAX_PAGE_SIDE, MAX (bounds.width, 1) - x),
                           MIN (GRAFT_EXPORT_PDF_MAX_PAGE_SIDE, MAX (bounds.height, 1) - y) };

        write_page (w, &page, first_page + 2 * n_pages++);
      }
  for (guint i = 0; i < w->fonts->len; i++)
    write_font (w, g_ptr_array_index (w->fonts, i), OBJECT_FIRST_FONT + FONT_N_OBJECTS * i);
  write_resources (w);
  write_trailer (w, first_page, n_pages);
  flush (w);
}

gboolean
graft_pdf_write_scene (GraftScene *scene, const GraftPaintOptions *options, GraftPdfWriteFunc write,
                       gpointer user_data, GError **error)
{
  PdfWriter w = { g_string_sized_new (FLUSH_SIZE + 4096), write, user_data };
  gboolean ok;

  w.offsets = g_array_new (FALSE, TRUE, sizeof (guint64));
  w.page = g_string_sized_new (FLUSH_SIZE);
  w.palette = graft_palette_get (options->dark);
  w.options = options;
  w.scene = scene;
  w.fonts = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pdf_font_free);
  /* Level 1: the 100,000-node probe's file is 16.5 MB instead of the
   * default level's 14.2 MB, for 1.1 s less CPU (1.8 s instead of 3.0 s for
   * the whole render). */
  deflateInit (&w.deflate, 1);
  w.widths = graft_text_widths_new ();
  ok = make_fonts (&w, error);
  if (ok)
    {
      write_document (&w);
      if (w.error != NULL)
        {
          g_propagate_error (error, g_steal_pointer (&w.error));
          ok = FALSE;
        }
    }

  graft_text_widths_free (w.widths);
  deflateEnd (&w.deflate);
  g_ptr_array_unref (w.fonts);
  g_string_free (w.page, TRUE);
  g_array_unref (w.offsets);
  g_string_free (w.out, TRUE);
  return ok;
}
