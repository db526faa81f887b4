/* The painter draws a scene into an image surface: something visible,
 * the selection in the accent colour, both styles. */
#include <math.h>
#include "layout/layout.h"
#include "layout/painter.h"
#include "layout/labels.h"
#include "test-graphs.h"

typedef struct {
  cairo_surface_t *surface;
  GraftScene *scene;
} Picture;

static cairo_surface_t *
paint (GraftScene *scene, const GraftPaintOptions *options, double scale)
{
  GraftRect bounds;
  cairo_surface_t *surface;
  cairo_t *cr;

  graft_scene_get_bounds (scene, &bounds);
  surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, ceil (bounds.width * scale), ceil (bounds.height * scale));
  cr = cairo_create (surface);
  cairo_scale (cr, scale, scale);
  cairo_translate (cr, -bounds.x, -bounds.y);
  graft_painter_paint (cr, scene, &bounds, options);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  return surface;
}

static guint
count_pixels (cairo_surface_t *surface, guint32 rgb, int tolerance)
{
  int width = cairo_image_surface_get_width (surface), height = cairo_image_surface_get_height (surface);
  int stride = cairo_image_surface_get_stride (surface);
  const guint8 *data = cairo_image_surface_get_data (surface);
  guint n = 0;

  for (int y = 0; y < height; y++)
    for (int x = 0; x < width; x++)
      {
        guint32 pixel = *(const guint32 *) (data + y * stride + 4 * x);

        if (ABS ((int) (pixel >> 16 & 0xff) - (int) (rgb >> 16 & 0xff)) <= tolerance
            && ABS ((int) (pixel >> 8 & 0xff) - (int) (rgb >> 8 & 0xff)) <= tolerance
            && ABS ((int) (pixel & 0xff) - (int) (rgb & 0xff)) <= tolerance)
          n++;
      }
  return n;
}

static GraftScene *
make_scene (GraftGraph *graph)
{
  g_autoptr (GraftLayout) layout = graft_layout_new (graph);
  g_autoptr (GError) error = NULL;
  GraftScene *scene;

  graft_layout_expand_all (layout);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return scene;
}

static guint32
background (gboolean dark)
{
  double rgb[3];

  graft_painter_get_background (dark, rgb);
  return (guint32) lround (rgb[0] * 255) << 16 | (guint32) lround (rgb[1] * 255) << 8 | lround (rgb[2] * 255);
}

static void
test_not_blank (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (1, 2, 3);
  g_autoptr (GraftScene) scene = make_scene (graph);

  for (int dark = 0; dark <= 1; dark++)
    {
      GraftPaintOptions options = { .dark = dark, .paint_background = TRUE };
      cairo_surface_t *surface = paint (scene, &options, 1.0);
      guint total = cairo_image_surface_get_width (surface) * cairo_image_surface_get_height (surface);
      guint bg = count_pixels (surface, background (dark), 0);

      /* Mostly background, but a good share of boxes, lines and text. */
      g_assert_cmpuint (bg, >, total / 4);
      g_assert_cmpuint (bg, <, total * 95 / 100);
      /* Text: pixels close to the text colour exist. */
      g_assert_cmpuint (count_pixels (surface, dark ? 0xf2f2f4 : 0x1c1c1f, 40), >, 200);
      cairo_surface_destroy (surface);
    }
}

static void
test_selection (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (1, 2, 3);
  g_autoptr (GraftScene) scene = make_scene (graph);
  GraftNode *node = g_ptr_array_index (graph->nodes, 2);
  GraftPaintOptions options = { .paint_background = TRUE };
  cairo_surface_t *plain, *selected, *value_selected;
  guint accent = 0x1c71d8;

  plain = paint (scene, &options, 1.0);
  options.selected_node = node;
  selected = paint (scene, &options, 1.0);
  options.selected_node = NULL;
  options.selected_value = g_ptr_array_index (node->outputs, 0);
  value_selected = paint (scene, &options, 1.0);

  g_assert_cmpuint (count_pixels (plain, accent, 8), ==, 0);
  /* A 3-point border around the box. */
  g_assert_cmpuint (count_pixels (selected, accent, 8), >, 100);
  g_assert_cmpuint (count_pixels (value_selected, accent, 8), >, 20);
  cairo_surface_destroy (plain);
  cairo_surface_destroy (selected);
  cairo_surface_destroy (value_selected);
}

static guint
count_differences (cairo_surface_t *a, cairo_surface_t *b)
{
  int stride = cairo_image_surface_get_stride (a);
  const guint8 *pa = cairo_image_surface_get_data (a), *pb = cairo_image_surface_get_data (b);
  guint n = 0;

  for (int y = 0; y < cairo_image_surface_get_height (a); y++)
    for (int x = 0; x < cairo_image_surface_get_width (a); x++)
      n += (*(const guint32 *) (pa + y * stride + 4 * x) & 0xffffff) != (*(const guint32 *) (pb + y * stride + 4 * x) & 0xffffff);
  return n;
}

/* A node with an info mark (outlined in the accent colour, as every
 * scripted prim::If is) must still look selected when selected. */
static void
test_selection_of_marked_node (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (1, 2, 3);
  g_autoptr (GraftScene) scene = make_scene (graph);
  GraftPaintOptions options = { .paint_background = TRUE };
  GraftSceneNode *box = NULL;
  cairo_surface_t *marked, *selected;
  guint changed;

  for (guint i = 0; i < graft_scene_get_n_nodes (scene) && box == NULL; i++)
    if (graft_scene_get_node (scene, i)->kind == GRAFT_SCENE_NODE_OP)
      box = graft_scene_get_node (scene, i);
  g_assert_nonnull (box);
  box->highlight = 1;
  marked = paint (scene, &options, 1.0);
  options.selected_node = box->node;
  selected = paint (scene, &options, 1.0);
  changed = count_differences (marked, selected);
  g_test_message ("%u pixels change when the marked box %.0f×%.0f is selected", changed, box->rect.width,
                  box->rect.height);
  /* A ring of a few points all around the box. */
  g_assert_cmpuint (changed, >, 2 * (box->rect.width + box->rect.height) * 3);
  cairo_surface_destroy (marked);
  cairo_surface_destroy (selected);
}

/* A picture for a file has no collapse boxes on expanded groups: all it
 * changes is in the groups' header bands. */
static void
test_picture_has_no_controls (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (1, 2, 3);
  g_autoptr (GraftScene) scene = make_scene (graph);
  GraftPaintOptions options = { .paint_background = TRUE };
  cairo_surface_t *canvas, *picture;
  GraftRect bounds;
  int stride;
  const guint8 *a, *b;
  guint changed = 0, outside = 0;

  graft_scene_get_bounds (scene, &bounds);
  canvas = paint (scene, &options, 1.0);
  options.picture = TRUE;
  picture = paint (scene, &options, 1.0);
  stride = cairo_image_surface_get_stride (canvas);
  a = cairo_image_surface_get_data (canvas);
  b = cairo_image_surface_get_data (picture);
  for (int y = 0; y < cairo_image_surface_get_height (canvas); y++)
    for (int x = 0; x < cairo_image_surface_get_width (canvas); x++)
      if ((*(const guint32 *) (a + y * stride + 4 * x) & 0xffffff) != (*(const guint32 *) (b + y * stride + 4 * x) & 0xffffff))
        {
          gboolean in_header = FALSE;

          changed++;
          for (guint g = 0; g < graft_scene_get_n_groups (scene); g++)
            {
              GraftSceneGroup *group = graft_scene_get_group (scene, g);
              double sx = x + bounds.x, sy = y + bounds.y;

              in_header |= group->expanded && sx >= group->rect.x - 1 && sx <= group->rect.x + group->rect.width + 1
                           && sy >= group->rect.y - 1 && sy <= group->rect.y + group->header_height + 1;
            }
          outside += !in_header;
        }
  g_test_message ("%u pixels differ, %u outside group headers", changed, outside);
  g_assert_cmpuint (changed, >, 20);
  g_assert_cmpuint (outside, ==, 0);
  cairo_surface_destroy (canvas);
  cairo_surface_destroy (picture);
}

static void
test_visible_rect_culls (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (2, 3, 3);
  g_autoptr (GraftScene) scene = make_scene (graph);
  GraftPaintOptions options = { 0 };
  GraftRect nowhere = { -5000, -5000, 10, 10 };
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, 64, 64);
  cairo_t *cr = cairo_create (surface);

  /* Painting a rectangle with nothing in it draws nothing. */
  cairo_set_source_rgb (cr, 0, 0, 0);
  cairo_paint (cr);
  cairo_translate (cr, 5000, 5000);
  graft_painter_paint (cr, scene, &nowhere, &options);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  g_assert_cmpuint (count_pixels (surface, 0x000000, 0), ==, 64 * 64);
  cairo_surface_destroy (surface);
}

static void
test_tiny_scale (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (2, 3, 3);
  g_autoptr (GraftScene) scene = make_scene (graph);
  GraftPaintOptions options = { .paint_background = TRUE, .dark = TRUE };
  cairo_surface_t *surface = paint (scene, &options, 0.05);

  /* Far out, boxes still show even though text is left out. */
  g_assert_cmpuint (count_pixels (surface, background (TRUE), 0),
                    <, (guint) (cairo_image_surface_get_width (surface) * cairo_image_surface_get_height (surface)));
  cairo_surface_destroy (surface);
}

/* Shapes found by inference are drawn in their own (italic) face, so a
 * reader can tell them from the shapes the file declares. */
static void
test_inferred_shape_role (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *declared = graft_graph_ensure_value (graph, "declared");
  GraftValue *inferred = graft_graph_ensure_value (graph, "inferred");
  GraftNode *relu = graft_graph_add_node (graph, "", "Relu", "relu");
  g_autoptr(GraftInference) inference = NULL;
  gint64 dims[] = { 2, 3 };

  graft_model_set_opset (model, "", 14);
  declared->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&declared->shape, 2, dims);
  graft_graph_add_input (graph, declared);
  graft_node_add_input (relu, declared);
  graft_node_add_output (relu, inferred);
  graft_graph_add_output (graph, inferred);
  graft_model_set_graph (model, graph);
  inference = graft_shape_inference_run (model, NULL);

  g_assert_cmpint (graft_value_shape_label_role (declared, inference), ==, GRAFT_TEXT_EDGE);
  g_assert_cmpint (graft_value_shape_label_role (inferred, inference), ==, GRAFT_TEXT_EDGE_INFERRED);
  g_assert_cmpint (graft_value_shape_label_role (inferred, NULL), ==, GRAFT_TEXT_EDGE);
  {
    g_autofree char *label = graft_value_shape_label (inferred, inference);
    g_autofree char *unknown = graft_value_shape_label (inferred, NULL);
    g_assert_cmpstr (label, ==, "2×3");
    g_assert_null (unknown);
  }
  /* The inference is beside the graph, not in it. */
  g_assert_cmpint (inferred->shape.rank, <, 0);
}

/* A marked node inside a collapsed group has no box: the group's box
 * counts it, takes the worst level's colour, and is drawn so, near and far. */
static void
test_hidden_marks (void)
{
  g_autoptr (GraftGraph) graph = test_graph_new_blocks (4, 30, 3);
  g_autoptr (GraftLayout) layout = graft_layout_new (graph);
  g_autoptr (GError) error = NULL;
  g_autoptr (GraftScene) scene = NULL;
  GraftGroup *block = graft_group_find_path (graph->root_group, "stage2.block7");
  GraftNode *hidden_a, *hidden_b, *shown = NULL;
  GraftSceneGroup *box;
  cairo_surface_t *plain, *marked, *far;
  GraftPaintOptions options = { 0 };
  int index;

  /* The default first view leaves the blocks of a big graph collapsed. */
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (block);
  g_assert_cmpuint (block->nodes->len, >=, 2);
  hidden_a = g_ptr_array_index (block->nodes, 0);
  hidden_b = g_ptr_array_index (block->nodes, 1);
  for (guint i = 0; i < graph->nodes->len && shown == NULL; i++)
    if (graft_scene_find_node (scene, g_ptr_array_index (graph->nodes, i)) >= 0)
      shown = g_ptr_array_index (graph->nodes, i);
  g_assert_nonnull (shown);

  index = graft_scene_find_hiding_group (scene, hidden_a);
  g_assert_cmpint (index, >=, 0);
  box = graft_scene_get_group (scene, index);
  g_assert_false (box->expanded);
  g_assert_true (box->group == block || g_str_has_prefix (block->path, box->group->path));
  g_assert_cmpint (graft_scene_find_hiding_group (scene, shown), ==, -1);
  g_assert_cmpint (graft_scene_mark_hidden_node (scene, shown, 3), ==, -1);

  plain = paint (scene, &options, 1.0);
  g_assert_cmpint (graft_scene_mark_hidden_node (scene, hidden_a, 2), ==, index);
  g_assert_cmpint (graft_scene_mark_hidden_node (scene, hidden_b, 3), ==, index);
  g_assert_cmpuint (box->n_marked, ==, 2);
  g_assert_cmpuint (box->highlight, ==, 3);
  marked = paint (scene, &options, 1.0);
  far = paint (scene, &options, 0.1);
  /* Error red: the outline and the "2 ✖" badge; none before. */
  g_assert_cmpuint (count_pixels (plain, 0xe01b24, 8), ==, 0);
  g_assert_cmpuint (count_pixels (marked, 0xe01b24, 8), >, 150);
  g_assert_cmpuint (count_pixels (far, 0xe01b24, 8), >, 0);

  graft_scene_clear_hidden_marks (scene);
  g_assert_cmpuint (box->n_marked, ==, 0);
  g_assert_cmpuint (box->highlight, ==, 0);
  cairo_surface_destroy (plain);
  cairo_surface_destroy (marked);
  cairo_surface_destroy (far);
}

static guint32
pixel_at (cairo_surface_t *surface, double x, double y, double scale)
{
  return *(const guint32 *) (cairo_image_surface_get_data (surface) + (int) (y * scale) * cairo_image_surface_get_stride (surface)
                             + 4 * (int) (x * scale)) & 0xffffff;
}

static int
distance_to (guint32 pixel, const double rgb[3])
{
  return ABS ((int) (pixel >> 16 & 0xff) - (int) (rgb[0] * 255)) + ABS ((int) (pixel >> 8 & 0xff) - (int) (rgb[1] * 255))
         + ABS ((int) (pixel & 0xff) - (int) (rgb[2] * 255));
}

/* A node of a branch that never runs is greyed (nearer the background
 * than the same box live), near and far. */
static void
test_dead_nodes_greyed (void)
{
  g_autoptr (GraftGraph) graph = graft_graph_new ("g");
  GraftNode *live = graft_graph_add_node (graph, NULL, "Conv", "live");
  GraftNode *dead = graft_graph_add_node (graph, NULL, "Conv", "dead");
  GraftScene *scene = graft_scene_new (graph);
  GraftSceneNode node = { GRAFT_SCENE_NODE_OP, live, NULL, { 0, 0, 120, 60 }, GRAFT_OP_CATEGORY_LAYER };
  GraftPaintOptions options = { .paint_background = TRUE };
  double background[3];
  const double scales[] = { 1.0, 0.1 };

  node.group = -1;
  graft_scene_add_node (scene, &node);
  node.node = dead;
  node.rect.x = 200;
  node.dead = TRUE;
  graft_scene_add_node (scene, &node);
  graft_scene_finish (scene);
  graft_painter_get_background (FALSE, background);
  for (gsize i = 0; i < G_N_ELEMENTS (scales); i++)
    {
      cairo_surface_t *surface = paint (scene, &options, scales[i]);
      GraftRect bounds;
      guint32 live_pixel, dead_pixel;

      graft_scene_get_bounds (scene, &bounds);
      live_pixel = pixel_at (surface, 60 - bounds.x, 30 - bounds.y, scales[i]);
      dead_pixel = pixel_at (surface, 260 - bounds.x, 30 - bounds.y, scales[i]);
      g_test_message ("scale %g: live %06x, dead %06x", scales[i], live_pixel, dead_pixel);
      g_assert_cmpint (distance_to (dead_pixel, background), <, distance_to (live_pixel, background) / 2);
      cairo_surface_destroy (surface);
    }
  graft_scene_free (scene);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/painter/not-blank", test_not_blank);
  g_test_add_func ("/painter/selection", test_selection);
  g_test_add_func ("/painter/selection-of-marked-node", test_selection_of_marked_node);
  g_test_add_func ("/painter/picture-has-no-controls", test_picture_has_no_controls);
  g_test_add_func ("/painter/visible-rect-culls", test_visible_rect_culls);
  g_test_add_func ("/painter/tiny-scale", test_tiny_scale);
  g_test_add_func ("/painter/inferred-shape-role", test_inferred_shape_role);
  g_test_add_func ("/painter/hidden-marks", test_hidden_marks);
  g_test_add_func ("/painter/dead-nodes-greyed", test_dead_nodes_greyed);
  return g_test_run ();
}
