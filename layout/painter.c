#include "layout/painter.h"

#include <math.h>
#include <string.h>
#include "layout/labels.h"
#include "layout/style.h"
#include "layout/text.h"

/* Below this many device pixels per text em, text is not drawn. */
#define MIN_READABLE_PIXELS 3.5

typedef struct {
  cairo_t *cr;
  GraftScene *scene;
  const GraftPalette *palette;
  const GraftPaintOptions *options;
  double scale;          /* device pixels per scene point */
  gboolean draw_text;
} Painter;

static void
set_rgb (cairo_t *cr, const GraftRgb *rgb)
{
  cairo_set_source_rgb (cr, rgb->r, rgb->g, rgb->b);
}

static void
rounded_rect (cairo_t *cr, const GraftRect *rect, double radius)
{
  double x = rect->x, y = rect->y, w = rect->width, h = rect->height;

  radius = MIN (radius, MIN (w, h) / 2);
  cairo_new_sub_path (cr);
  cairo_arc (cr, x + w - radius, y + radius, radius, -G_PI / 2, 0);
  cairo_arc (cr, x + w - radius, y + h - radius, radius, 0, G_PI / 2);
  cairo_arc (cr, x + radius, y + h - radius, radius, G_PI / 2, G_PI);
  cairo_arc (cr, x + radius, y + radius, radius, G_PI, 3 * G_PI / 2);
  cairo_close_path (cr);
}

/* Title centred, other lines left-aligned: the layout measured them with
 * the same fonts (labels.c), so they fit. */
static void
draw_lines (Painter *p, char **lines, const GraftRect *rect, const GraftRgb *title, const GraftRgb *body)
{
  cairo_t *cr = p->cr;
  double y = rect->y + GRAFT_LABEL_PAD_Y;

  for (guint i = 0; lines[i] != NULL; i++)
    {
      GraftTextRole role = i == 0 ? GRAFT_TEXT_TITLE : GRAFT_TEXT_BODY;
      double x;

      graft_text_select (cr, role);
      if (i == 0)
        x = rect->x + (rect->width - graft_text_measure (cr, lines[i])) / 2;
      else
        x = rect->x + GRAFT_LABEL_PAD_X;
      set_rgb (cr, i == 0 ? title : body);
      cairo_move_to (cr, x, y + graft_style_get_baseline_offset (role));
      cairo_show_text (cr, lines[i]);
      y += graft_text_get_line_height (role);
    }
}

/* A pill of text in colour (graft_style_get_badge()). */
static void
draw_badge (Painter *p, const char *text, double right, double top, const GraftRgb *colour)
{
  cairo_t *cr = p->cr;
  GraftRect pill;
  GraftPoint start;

  graft_text_select (cr, GRAFT_TEXT_EDGE);
  graft_style_get_badge (right, top, graft_text_measure (cr, text), &pill, &start);
  rounded_rect (cr, &pill, 6);
  set_rgb (cr, colour);
  cairo_fill (cr);
  set_rgb (cr, graft_style_get_badge_text_colour (colour));
  cairo_move_to (cr, start.x, start.y);
  cairo_show_text (cr, text);
}

void
graft_painter_get_heat_colour (double heat, double rgb[3])
{
  static const GraftRgb stops[] = { GRAFT_RGB (0x2ec27e), GRAFT_RGB (0xf6d32d), GRAFT_RGB (0xff7800), GRAFT_RGB (0xe01b24) };
  double position = CLAMP (isnan (heat) ? 1.0 : heat, 0.0, 1.0) * (G_N_ELEMENTS (stops) - 1);
  guint low = MIN ((guint) position, G_N_ELEMENTS (stops) - 2);
  double t = position - low;

  rgb[0] = stops[low].r + (stops[low + 1].r - stops[low].r) * t;
  rgb[1] = stops[low].g + (stops[low + 1].g - stops[low].g) * t;
  rgb[2] = stops[low].b + (stops[low + 1].b - stops[low].b) * t;
}

/* The heat of a node or collapsed group: a stripe down the box's left
 * side, inside the text's padding, clipped to the rounded box; the whole
 * box once too small for text, so a zoomed-out graph reads as a heat map. */
static void
draw_heat_stripe (Painter *p, const GraftRect *box, double radius, double heat)
{
  cairo_t *cr = p->cr;
  double rgb[3];

  graft_painter_get_heat_colour (heat, rgb);
  cairo_save (cr);
  rounded_rect (cr, box, radius);
  cairo_clip (cr);
  cairo_rectangle (cr, box->x, box->y, p->draw_text ? 5 : box->width, box->height);
  cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
  cairo_fill (cr);
  cairo_restore (cr);
}

static void
draw_group (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  cairo_t *cr = p->cr;
  GraftSceneGroup *group = graft_scene_get_group (scene, index);
  const GraftPalette *palette = p->palette;

  if (group->expanded)
    {
      g_autofree char *header = NULL;
      GraftRect mark = { group->rect.x + 8, group->rect.y + (group->header_height - 9) / 2, 9, 9 };

      rounded_rect (cr, &group->rect, 6);
      set_rgb (cr, group->dead ? &palette->background : &palette->group_fill[group->depth % 2]);
      cairo_fill_preserve (cr);
      /* Control flow in the control colour; a branch that never runs dashed. */
      set_rgb (cr, group->control && !group->dead ? &palette->border[GRAFT_OP_CATEGORY_CONTROL]
                                                  : &palette->group_border);
      cairo_set_line_width (cr, group->control ? 1.5 : 1);
      if (group->dead)
        cairo_set_dash (cr, (double[]) { 5, 3 }, 2, 0);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      if (!p->draw_text)
        return;

      /* The "−" box says a click on the header collapses the group; a
       * picture has nothing to click. */
      if (!p->options->picture)
        {
          cairo_rectangle (cr, mark.x, mark.y, mark.width, mark.height);
          cairo_move_to (cr, mark.x + 2, mark.y + mark.height / 2);
          cairo_line_to (cr, mark.x + mark.width - 2, mark.y + mark.height / 2);
          set_rgb (cr, &palette->group_text);
          cairo_set_line_width (cr, 1);
          cairo_stroke (cr);
        }

      header = graft_style_dup_group_header (group);
      graft_text_select (cr, GRAFT_TEXT_GROUP_TITLE);
      set_rgb (cr, &palette->group_text);   /* a picture draws no collapse box, which set it */
      cairo_move_to (cr, group->rect.x + (p->options->picture ? 8 : 24),
                     group->rect.y + graft_style_get_baseline_offset (GRAFT_TEXT_GROUP_TITLE) + 4);
      cairo_show_text (cr, header);
      return;
    }

  /* Collapsed: a stack of cards, so it reads as "more inside". */
  {
    GraftRect back = group->rect;

    if (p->options->found != NULL && group->group != NULL && g_hash_table_contains (p->options->found, group->group))
      {
        /* Find matched something inside. */
        GraftRect band = { group->rect.x - 7, group->rect.y - 7, group->rect.width + 14, group->rect.height + 14 };

        rounded_rect (cr, &band, 10);
        cairo_set_source_rgba (cr, palette->found.r, palette->found.g, palette->found.b, 0.85);
        cairo_fill (cr);
      }

    back.x += 4;
    back.y += 4;
    back.width -= 4;
    back.height -= 4;
    rounded_rect (cr, &back, 5);
    set_rgb (cr, &palette->group_fill[1]);
    cairo_fill_preserve (cr);
    set_rgb (cr, &palette->group_border);
    cairo_set_line_width (cr, 1);
    cairo_stroke (cr);

    back = group->rect;
    back.width -= 4;
    back.height -= 4;
    rounded_rect (cr, &back, 5);
    set_rgb (cr, &palette->collapsed_fill);
    cairo_fill (cr);
    if (group->has_heat)
      draw_heat_stripe (p, &back, 5, group->heat);
    rounded_rect (cr, &back, 5);
    /* Marked nodes inside: the front card is outlined in the worst one's
     * colour, as a marked node would be. */
    if (group->n_marked > 0)
      {
        set_rgb (cr, &palette->severity[MIN (group->highlight, 3)]);
        cairo_set_line_width (cr, 2.5);
      }
    else
      {
        set_rgb (cr, &palette->group_border);
        cairo_set_line_width (cr, 1.5);
      }
    cairo_stroke (cr);
    if (p->draw_text && group->lines != NULL)
      draw_lines (p, group->lines, &back, &palette->text, &palette->text_muted);
    if (p->draw_text && group->n_marked > 0)
      {
        g_autofree char *text = graft_style_dup_hidden_marks (group, p->options->hidden_marks_noun);

        draw_badge (p, text, back.x + back.width + 2, back.y, &palette->severity[MIN (group->highlight, 3)]);
      }
  }
}

static void
draw_arrow (cairo_t *cr, GraftPoint from, GraftPoint tip)
{
  GraftPoint corners[3];

  if (!graft_style_get_arrow (from, tip, corners))
    return;
  cairo_move_to (cr, corners[0].x, corners[0].y);
  cairo_line_to (cr, corners[1].x, corners[1].y);
  cairo_line_to (cr, corners[2].x, corners[2].y);
  cairo_close_path (cr);
  cairo_fill (cr);
}

static void
draw_edge (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  cairo_t *cr = p->cr;
  GraftSceneEdge *edge = graft_scene_get_edge (scene, index);
  gboolean selected = edge->value != NULL && edge->value == p->options->selected_value;
  gboolean found = edge->value != NULL && p->options->found != NULL
                   && g_hash_table_contains (p->options->found, edge->value);

  if (edge->n_points < 4)
    return;
  cairo_move_to (cr, edge->points[0].x, edge->points[0].y);
  for (guint i = 1; i + 2 < edge->n_points; i += 3)
    cairo_curve_to (cr, edge->points[i].x, edge->points[i].y, edge->points[i + 1].x, edge->points[i + 1].y,
                    edge->points[i + 2].x, edge->points[i + 2].y);
  if (found)
    {
      /* A matched value's edges: a band under the line. */
      cairo_set_source_rgba (cr, p->palette->found.r, p->palette->found.g, p->palette->found.b, 0.85);
      cairo_set_line_width (cr, MAX (7, 4 / p->scale));
      cairo_stroke_preserve (cr);
    }
  if (!selected && edge->highlight > 0)
    set_rgb (cr, &p->palette->severity[MIN (edge->highlight, 3)]);
  else
    set_rgb (cr, selected ? &p->palette->accent : &p->palette->edge);
  /* At least a device pixel wide, so far-out views still show the flow. */
  cairo_set_line_width (cr, MAX (selected ? 2.5 : edge->highlight > 0 ? 2.0 : 1.1, 0.8 / p->scale));
  cairo_stroke (cr);
  if (edge->has_arrow)
    draw_arrow (cr, edge->points[edge->n_points - 1], edge->arrow_tip);
}

static void
draw_edge_label (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  cairo_t *cr = p->cr;
  GraftSceneEdge *edge = graft_scene_get_edge (scene, index);
  gboolean selected = edge->value != NULL && edge->value == p->options->selected_value;
  double width;

  if (edge->label == NULL)
    return;
  graft_text_select (cr, edge->label_inferred ? GRAFT_TEXT_EDGE_INFERRED : GRAFT_TEXT_EDGE);
  width = graft_text_measure (cr, edge->label);
  /* A halo keeps the label readable where it crosses other edges. */
  cairo_rectangle (cr, edge->label_pos.x - 1.5, edge->label_pos.y - graft_text_get_size (GRAFT_TEXT_EDGE) + 0.5,
                   width + 3, graft_text_get_line_height (GRAFT_TEXT_EDGE));
  cairo_set_source_rgba (cr, p->palette->label_halo.r, p->palette->label_halo.g, p->palette->label_halo.b, 0.85);
  cairo_fill (cr);
  set_rgb (cr, selected ? &p->palette->accent : &p->palette->text_muted);
  cairo_move_to (cr, edge->label_pos.x, edge->label_pos.y);
  cairo_show_text (cr, edge->label);
}

static gboolean
is_found (const Painter *p, const GraftSceneNode *node)
{
  gconstpointer item = node->kind == GRAFT_SCENE_NODE_OP ? (gconstpointer) node->node : (gconstpointer) node->value;

  return p->options->found != NULL && item != NULL && g_hash_table_contains (p->options->found, item);
}

static void
draw_expanded_group (GraftScene *scene, guint index, gpointer user_data)
{
  if (graft_scene_get_group (scene, index)->expanded)
    draw_group (scene, index, user_data);
}

static void
draw_collapsed_group (GraftScene *scene, guint index, gpointer user_data)
{
  if (!graft_scene_get_group (scene, index)->expanded)
    draw_group (scene, index, user_data);
}

void
graft_painter_get_inline_mark (const GraftSceneNode *node, GraftRect *mark)
{
  *mark = (GraftRect) { node->rect.x + node->rect.width - 14, node->rect.y + 5, 9, 9 };
}

/* The "+" box of a node whose bodies open in place, as on a group header. */
static void
draw_inline_mark (Painter *p, const GraftSceneNode *node)
{
  cairo_t *cr = p->cr;
  GraftRect mark;

  graft_painter_get_inline_mark (node, &mark);
  cairo_rectangle (cr, mark.x, mark.y, mark.width, mark.height);
  cairo_move_to (cr, mark.x + 2, mark.y + mark.height / 2);
  cairo_line_to (cr, mark.x + mark.width - 2, mark.y + mark.height / 2);
  cairo_move_to (cr, mark.x + mark.width / 2, mark.y + 2);
  cairo_line_to (cr, mark.x + mark.width / 2, mark.y + mark.height - 2);
  set_rgb (cr, &p->palette->text);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);
}

static void
draw_node (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  cairo_t *cr = p->cr;
  GraftSceneNode *node = graft_scene_get_node (scene, index);
  const GraftPalette *palette = p->palette;
  gboolean selected = node->kind == GRAFT_SCENE_NODE_OP ? node->node == p->options->selected_node
                                                         : node->value == p->options->selected_value;
  gboolean io = node->kind != GRAFT_SCENE_NODE_OP;
  const GraftRgb *border = &palette->border[node->category];

  if (is_found (p, node))
    {
      /* A wide band behind the box, outside the selection's halo. */
      GraftRect band = { node->rect.x - 7, node->rect.y - 7, node->rect.width + 14, node->rect.height + 14 };

      rounded_rect (cr, &band, io ? band.height / 2 : 10);
      cairo_set_source_rgba (cr, palette->found.r, palette->found.g, palette->found.b, 0.85);
      cairo_fill (cr);
    }
  if (selected)
    {
      /* A halo outside the box: a mark's outline (info marks are in the
       * accent colour too, as on every scripted prim::If) stays visible
       * inside it, and the selection still shows. */
      GraftRect halo = { node->rect.x - 4, node->rect.y - 4, node->rect.width + 8, node->rect.height + 8 };

      rounded_rect (cr, &halo, io ? halo.height / 2 : 8);
      cairo_set_source_rgba (cr, palette->accent.r, palette->accent.g, palette->accent.b, 0.35);
      cairo_set_line_width (cr, 5);
      cairo_stroke (cr);
    }
  rounded_rect (cr, &node->rect, io ? node->rect.height / 2 : 4);
  set_rgb (cr, &palette->fill[node->category]);
  cairo_fill (cr);
  if (node->has_tint)
    {
      rounded_rect (cr, &node->rect, io ? node->rect.height / 2 : 4);
      cairo_set_source_rgba (cr, node->tint[0], node->tint[1], node->tint[2], 0.45);
      cairo_fill (cr);
    }
  if (node->has_heat)
    draw_heat_stripe (p, &node->rect, io ? node->rect.height / 2 : 4, node->heat);
  rounded_rect (cr, &node->rect, io ? node->rect.height / 2 : 4);
  if (selected && node->highlight == 0)
    {
      set_rgb (cr, &palette->accent);
      cairo_set_line_width (cr, 3);
    }
  else if (node->highlight > 0 && node->highlight < G_N_ELEMENTS (palette->severity))
    {
      set_rgb (cr, &palette->severity[node->highlight]);
      cairo_set_line_width (cr, 2.5);
    }
  else
    {
      set_rgb (cr, border);
      cairo_set_line_width (cr, MAX (1, 0.8 / p->scale));
    }
  cairo_stroke (cr);

  if (p->draw_text && node->lines != NULL)
    draw_lines (p, node->lines, &node->rect, &palette->text, &palette->text_muted);
  if (node->dead)
    {
      /* Greyed: the background over it, the box still legible. */
      rounded_rect (cr, &node->rect, io ? node->rect.height / 2 : 4);
      cairo_set_source_rgba (cr, palette->background.r, palette->background.g, palette->background.b, 0.55);
      cairo_fill (cr);
    }
  if (p->draw_text && node->inline_group != NULL && !node->inline_expanded && !p->options->picture)
    draw_inline_mark (p, node);
  if (p->draw_text && node->badge != NULL)
    draw_badge (p, node->badge, node->rect.x + node->rect.width + 2, node->rect.y,
                &palette->severity[MIN (node->highlight, 3)]);
}

/* Far out, thousands of boxes are a few pixels each: draw them as batched
 * plain paths (one fill per colour, one stroke for all edges) instead of
 * item by item, which keeps a whole 10k-node graph at interactive speed. */
#define FAR_SCALE 0.3

static void
add_far_edge (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  GraftSceneEdge *edge = graft_scene_get_edge (scene, index);

  if (edge->n_points < 4 || (edge->value != NULL && edge->value == p->options->selected_value))
    return;
  /* Shorter than a pixel or two: the boxes it joins already touch on screen. */
  if (MAX (edge->bounds.width, edge->bounds.height) * p->scale < 2.5)
    return;
  /* The on-curve points are close enough to the curve at this size. */
  cairo_move_to (p->cr, edge->points[0].x, edge->points[0].y);
  for (guint i = 3; i < edge->n_points; i += 3)
    cairo_line_to (p->cr, edge->points[i].x, edge->points[i].y);
  if (edge->has_arrow)
    cairo_line_to (p->cr, edge->arrow_tip.x, edge->arrow_tip.y);
}

typedef struct {
  Painter *p;
  GraftOpCategory category;
} CategoryPass;

static void
add_far_node (GraftScene *scene, guint index, gpointer user_data)
{
  CategoryPass *pass = user_data;
  GraftSceneNode *node = graft_scene_get_node (scene, index);

  if (node->category == pass->category)
    cairo_rectangle (pass->p->cr, node->rect.x, node->rect.y, node->rect.width, node->rect.height);
}

static void
add_far_dead_node (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  GraftSceneNode *node = graft_scene_get_node (scene, index);

  if (node->dead)
    cairo_rectangle (p->cr, node->rect.x, node->rect.y, node->rect.width, node->rect.height);
}

typedef struct {
  Painter *p;
  guint parity;
} GroupPass;

static void
add_far_group (GraftScene *scene, guint index, gpointer user_data)
{
  GroupPass *pass = user_data;
  GraftSceneGroup *group = graft_scene_get_group (scene, index);

  if (group->depth % 2 == pass->parity)
    cairo_rectangle (pass->p->cr, group->rect.x, group->rect.y, group->rect.width, group->rect.height);
}

static void
add_far_group_outline (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  GraftSceneGroup *group = graft_scene_get_group (scene, index);

  cairo_rectangle (p->cr, group->rect.x, group->rect.y, group->rect.width, group->rect.height);
}

static void
draw_selected_far (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  GraftSceneEdge *edge = graft_scene_get_edge (scene, index);

  if (edge->value != NULL && edge->value == p->options->selected_value)
    draw_edge (scene, index, p);
}

static void
draw_marked_far (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  GraftSceneNode *node = graft_scene_get_node (scene, index);
  gboolean selected = node->kind == GRAFT_SCENE_NODE_OP ? node->node == p->options->selected_node
                                                         : node->value == p->options->selected_value;
  gboolean found = is_found (p, node);

  if (!selected && !found && node->highlight == 0 && node->has_heat)
    {
      double rgb[3];

      graft_painter_get_heat_colour (node->heat, rgb);
      cairo_rectangle (p->cr, node->rect.x, node->rect.y, node->rect.width, node->rect.height);
      cairo_set_source_rgb (p->cr, rgb[0], rgb[1], rgb[2]);
      cairo_fill (p->cr);
    }
  else if (selected || found || node->highlight > 0)
    {
      /* Grown to stay visible at a few pixels; Find's matches most. */
      double grow = (found && !selected ? 5 : 3) / p->scale;

      cairo_rectangle (p->cr, node->rect.x - grow, node->rect.y - grow, node->rect.width + 2 * grow,
                       node->rect.height + 2 * grow);
      set_rgb (p->cr, selected ? &p->palette->accent : found ? &p->palette->found
                              : &p->palette->severity[MIN (node->highlight, 3)]);
      cairo_fill (p->cr);
    }
}

static void
draw_marked_group_far (GraftScene *scene, guint index, gpointer user_data)
{
  Painter *p = user_data;
  GraftSceneGroup *group = graft_scene_get_group (scene, index);

  if (!group->expanded && p->options->found != NULL && group->group != NULL
      && g_hash_table_contains (p->options->found, group->group))
    {
      double grow = 5 / p->scale;

      cairo_rectangle (p->cr, group->rect.x - grow, group->rect.y - grow, group->rect.width + 2 * grow,
                       group->rect.height + 2 * grow);
      cairo_set_line_width (p->cr, 4 / p->scale);
      set_rgb (p->cr, &p->palette->found);
      cairo_stroke (p->cr);
    }
  if (group->expanded || group->n_marked == 0)
    return;
  /* An outline a few pixels wide, so the box's contents still show. */
  cairo_rectangle (p->cr, group->rect.x, group->rect.y, group->rect.width, group->rect.height);
  set_rgb (p->cr, &p->palette->severity[MIN (group->highlight, 3)]);
  cairo_set_line_width (p->cr, 3 / p->scale);
  cairo_stroke (p->cr);
}

static void
paint_far (Painter *p, const GraftRect *visible)
{
  cairo_t *cr = p->cr;
  GraftScene *scene = p->scene;

  for (guint parity = 0; parity < 2; parity++)
    {
      GroupPass pass = { p, parity };

      graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, visible, add_far_group, &pass);
      set_rgb (cr, &p->palette->group_fill[parity]);
      cairo_fill (cr);
    }
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, visible, add_far_group_outline, p);
  set_rgb (cr, &p->palette->group_border);
  cairo_set_line_width (cr, 1 / p->scale);
  cairo_stroke (cr);

  /* Round joins cost trigonometry per vertex; nobody sees them at this size. */
  cairo_set_line_join (cr, CAIRO_LINE_JOIN_BEVEL);
  cairo_set_line_cap (cr, CAIRO_LINE_CAP_BUTT);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_EDGE, visible, add_far_edge, p);
  set_rgb (cr, &p->palette->edge);
  cairo_set_line_width (cr, 0.8 / p->scale);
  cairo_stroke (cr);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_EDGE, visible, draw_selected_far, p);

  for (guint category = 0; category < GRAFT_OP_CATEGORY_N; category++)
    {
      CategoryPass pass = { p, category };

      graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_NODE, visible, add_far_node, &pass);
      /* Borders carry the category at this size: they are more saturated. */
      set_rgb (cr, &p->palette->border[category]);
      cairo_fill (cr);
    }
  /* Branches that never run stay greyed from afar too. */
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_NODE, visible, add_far_dead_node, p);
  cairo_set_source_rgba (cr, p->palette->background.r, p->palette->background.g, p->palette->background.b, 0.55);
  cairo_fill (cr);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, visible, draw_marked_group_far, p);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_NODE, visible, draw_marked_far, p);
}

void
graft_painter_get_background (gboolean dark, double rgb[3])
{
  const GraftPalette *palette = graft_palette_get (dark);

  rgb[0] = palette->background.r;
  rgb[1] = palette->background.g;
  rgb[2] = palette->background.b;
}

void
graft_painter_paint (cairo_t *cr, GraftScene *scene, const GraftRect *visible, const GraftPaintOptions *options)
{
  Painter p = { cr, scene, graft_palette_get (options->dark), options };
  double dx = 1, dy = 0;

  cairo_save (cr);
  cairo_user_to_device_distance (cr, &dx, &dy);
  p.scale = MAX (sqrt (dx * dx + dy * dy), 1e-6);
  p.draw_text = graft_text_get_size (GRAFT_TEXT_BODY) * p.scale >= MIN_READABLE_PIXELS;

  if (options->paint_background)
    {
      set_rgb (cr, &p.palette->background);
      cairo_rectangle (cr, visible->x, visible->y, visible->width, visible->height);
      cairo_fill (cr);
    }
  cairo_set_line_join (cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap (cr, CAIRO_LINE_CAP_ROUND);

  if (p.scale < FAR_SCALE)
    {
      paint_far (&p, visible);
      cairo_restore (cr);
      return;
    }
  /* Expanded groups are backgrounds; collapsed ones are boxes, drawn over
   * the edges that an outer level routes past them, as nodes are. */
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, visible, draw_expanded_group, &p);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_EDGE, visible, draw_edge, &p);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_GROUP, visible, draw_collapsed_group, &p);
  graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_NODE, visible, draw_node, &p);
  if (graft_text_get_size (GRAFT_TEXT_EDGE) * p.scale >= MIN_READABLE_PIXELS)
    graft_scene_foreach_in_rect (scene, GRAFT_SCENE_HIT_EDGE, visible, draw_edge_label, &p);
  cairo_restore (cr);
}
