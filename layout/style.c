#include "layout/style.h"

#include <math.h>
#include <string.h>

/* Fills light enough for dark text in the light style, dark enough for
 * light text in the dark style; each category keeps its hue in both. */
static const GraftPalette light_palette = {
  .background = GRAFT_RGB (0xfafafb),
  .text = GRAFT_RGB (0x1c1c1f),
  .text_muted = GRAFT_RGB (0x45474d),
  .edge = GRAFT_RGB (0x6f7178),
  .accent = GRAFT_RGB (0x1c71d8),
  .group_fill = { GRAFT_RGB (0xf1f2f6), GRAFT_RGB (0xe7e9ef) },
  .group_border = GRAFT_RGB (0xb8bcc6),
  .group_text = GRAFT_RGB (0x3a3d44),
  .collapsed_fill = GRAFT_RGB (0xe3e6ee),
  .label_halo = GRAFT_RGB (0xfafafb),
  .found = GRAFT_RGB (0xf6d32d),
  .severity = { GRAFT_RGB (0x000000), GRAFT_RGB (0x1c71d8), GRAFT_RGB (0xe5a50a), GRAFT_RGB (0xe01b24) },
  .fill = {
    [GRAFT_OP_CATEGORY_OTHER] = GRAFT_RGB (0xe8e8eb),
    [GRAFT_OP_CATEGORY_LAYER] = GRAFT_RGB (0xc9dcfb),
    [GRAFT_OP_CATEGORY_ACTIVATION] = GRAFT_RGB (0xfbd9bb),
    [GRAFT_OP_CATEGORY_NORMALIZATION] = GRAFT_RGB (0xcdeccf),
    [GRAFT_OP_CATEGORY_POOLING] = GRAFT_RGB (0xe2d6f5),
    [GRAFT_OP_CATEGORY_MATH] = GRAFT_RGB (0xf1ecd9),
    [GRAFT_OP_CATEGORY_SHAPE] = GRAFT_RGB (0xd3eef0),
    [GRAFT_OP_CATEGORY_CONTROL] = GRAFT_RGB (0xfbeb9e),
    [GRAFT_OP_CATEGORY_CONSTANT] = GRAFT_RGB (0xeeeeee),
    [GRAFT_OP_CATEGORY_PRIM] = GRAFT_RGB (0xf6d2e4),
    [GRAFT_OP_CATEGORY_IO] = GRAFT_RGB (0xffffff),
  },
  .border = {
    [GRAFT_OP_CATEGORY_OTHER] = GRAFT_RGB (0x8e8e96),
    [GRAFT_OP_CATEGORY_LAYER] = GRAFT_RGB (0x3d6fc4),
    [GRAFT_OP_CATEGORY_ACTIVATION] = GRAFT_RGB (0xc2651c),
    [GRAFT_OP_CATEGORY_NORMALIZATION] = GRAFT_RGB (0x3b8f45),
    [GRAFT_OP_CATEGORY_POOLING] = GRAFT_RGB (0x7b56b8),
    [GRAFT_OP_CATEGORY_MATH] = GRAFT_RGB (0x9c8a45),
    [GRAFT_OP_CATEGORY_SHAPE] = GRAFT_RGB (0x2f8b93),
    [GRAFT_OP_CATEGORY_CONTROL] = GRAFT_RGB (0xb38b00),
    [GRAFT_OP_CATEGORY_CONSTANT] = GRAFT_RGB (0x9a9a9a),
    [GRAFT_OP_CATEGORY_PRIM] = GRAFT_RGB (0xb5487c),
    [GRAFT_OP_CATEGORY_IO] = GRAFT_RGB (0x45474d),
  },
};

static const GraftPalette dark_palette = {
  .background = GRAFT_RGB (0x1e1e21),
  .text = GRAFT_RGB (0xf2f2f4),
  .text_muted = GRAFT_RGB (0xcfd0d6),
  .edge = GRAFT_RGB (0x9a9ca4),
  .accent = GRAFT_RGB (0x78aeed),
  .group_fill = { GRAFT_RGB (0x28292e), GRAFT_RGB (0x303137) },
  .group_border = GRAFT_RGB (0x55585f),
  .group_text = GRAFT_RGB (0xd8d9de),
  .collapsed_fill = GRAFT_RGB (0x383a41),
  .label_halo = GRAFT_RGB (0x1e1e21),
  .found = GRAFT_RGB (0xc88800),
  .severity = { GRAFT_RGB (0x000000), GRAFT_RGB (0x78aeed), GRAFT_RGB (0xf8e45c), GRAFT_RGB (0xff7b63) },
  .fill = {
    [GRAFT_OP_CATEGORY_OTHER] = GRAFT_RGB (0x3a3b40),
    [GRAFT_OP_CATEGORY_LAYER] = GRAFT_RGB (0x234673),
    [GRAFT_OP_CATEGORY_ACTIVATION] = GRAFT_RGB (0x6e3c14),
    [GRAFT_OP_CATEGORY_NORMALIZATION] = GRAFT_RGB (0x21542b),
    [GRAFT_OP_CATEGORY_POOLING] = GRAFT_RGB (0x4a3570),
    [GRAFT_OP_CATEGORY_MATH] = GRAFT_RGB (0x544a25),
    [GRAFT_OP_CATEGORY_SHAPE] = GRAFT_RGB (0x1c4d53),
    [GRAFT_OP_CATEGORY_CONTROL] = GRAFT_RGB (0x5f4f08),
    [GRAFT_OP_CATEGORY_CONSTANT] = GRAFT_RGB (0x35363a),
    [GRAFT_OP_CATEGORY_PRIM] = GRAFT_RGB (0x5c2544),
    [GRAFT_OP_CATEGORY_IO] = GRAFT_RGB (0x2a2b2f),
  },
  .border = {
    [GRAFT_OP_CATEGORY_OTHER] = GRAFT_RGB (0x7d7f87),
    [GRAFT_OP_CATEGORY_LAYER] = GRAFT_RGB (0x6f9fe0),
    [GRAFT_OP_CATEGORY_ACTIVATION] = GRAFT_RGB (0xe79b5a),
    [GRAFT_OP_CATEGORY_NORMALIZATION] = GRAFT_RGB (0x6fc47b),
    [GRAFT_OP_CATEGORY_POOLING] = GRAFT_RGB (0xaa8ce0),
    [GRAFT_OP_CATEGORY_MATH] = GRAFT_RGB (0xc9b46a),
    [GRAFT_OP_CATEGORY_SHAPE] = GRAFT_RGB (0x5fc0c8),
    [GRAFT_OP_CATEGORY_CONTROL] = GRAFT_RGB (0xe0c23a),
    [GRAFT_OP_CATEGORY_CONSTANT] = GRAFT_RGB (0x8a8b90),
    [GRAFT_OP_CATEGORY_PRIM] = GRAFT_RGB (0xe07aab),
    [GRAFT_OP_CATEGORY_IO] = GRAFT_RGB (0xb0b2b8),
  },
};

const GraftPalette *
graft_palette_get (gboolean dark)
{
  return dark ? &dark_palette : &light_palette;
}

double
graft_style_get_baseline_offset (GraftTextRole role)
{
  /* Centres the capitals in the line box. */
  return (graft_text_get_line_height (role) + graft_text_get_size (role) * 0.7) / 2;
}

char *
graft_style_dup_group_header (const GraftSceneGroup *group)
{
  const char *class_name = group->class_name;
  const char *dot;

  if (class_name == NULL || class_name[0] == '\0')
    return g_strdup (group->title);
  dot = strrchr (class_name, '.');
  return g_strdup_printf ("%s · %s", group->title, dot != NULL ? dot + 1 : class_name);
}

char *
graft_style_dup_hidden_marks (const GraftSceneGroup *group, const char *noun)
{
  static const char *const signs[] = { "", "ℹ", "⚠", "✖" };

  return g_strdup_printf ("%u %s", group->n_marked, noun != NULL ? noun : signs[MIN (group->highlight, 3)]);
}

void
graft_style_get_badge (double right, double top, double text_width, GraftRect *pill, GraftPoint *text)
{
  *pill = (GraftRect) { right - text_width - 8, top - 7, text_width + 8, 12 };
  *text = (GraftPoint) { pill->x + 4, pill->y + 9 };
}

const GraftRgb *
graft_style_get_badge_text_colour (const GraftRgb *badge)
{
  static const GraftRgb white = { 1, 1, 1 };
  double luminance = 0.2126 * badge->r + 0.7152 * badge->g + 0.0722 * badge->b;

  return luminance > 0.55 ? &light_palette.text : &white;
}

gboolean
graft_style_get_arrow (GraftPoint from, GraftPoint tip, GraftPoint corners[3])
{
  double dx = tip.x - from.x, dy = tip.y - from.y;
  double length = sqrt (dx * dx + dy * dy);
  double nx, ny;

  if (length < 0.01)
    return FALSE;
  nx = -dy / length * 3.2;
  ny = dx / length * 3.2;
  corners[0] = tip;
  corners[1] = (GraftPoint) { from.x + nx, from.y + ny };
  corners[2] = (GraftPoint) { from.x - nx, from.y - ny };
  return TRUE;
}
