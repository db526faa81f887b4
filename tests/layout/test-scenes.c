#include "test-scenes.h"

#include "layout/layout.h"

GraftScene *
test_scene_lay_out (GraftGraph *graph, GraftGroup *collapsed)
{
  g_autoptr (GraftLayout) layout = graft_layout_new (graph);
  g_autoptr (GError) error = NULL;
  GraftScene *scene;

  graft_layout_expand_all (layout);
  if (collapsed != NULL)
    graft_layout_set_group_expanded (layout, collapsed, FALSE);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return scene;
}

GraftNode *
test_scene_shown_node (GraftScene *scene, GraftGraph *graph, guint skip)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    if (graft_scene_find_node (scene, g_ptr_array_index (graph->nodes, i)) >= 0 && skip-- == 0)
      return g_ptr_array_index (graph->nodes, i);
  g_assert_not_reached ();
}

static GraftSceneNode *
box_of (GraftScene *scene, GraftNode *node)
{
  return graft_scene_get_node (scene, graft_scene_find_node (scene, node));
}

GraftScene *
test_scene_new_marked (GraftGraph **graph, GHashTable *found, GraftPaintOptions *options)
{
  GraftGroup *block;
  GraftScene *scene;
  GraftNode *badged;
  GraftSceneNode *box;

  *graph = test_graph_new_blocks (2, 4, 3);
  block = graft_group_find_path ((*graph)->root_group, "stage1.block2");
  scene = test_scene_lay_out (*graph, block);
  /* Everything open but one block, which hides a marked node. */
  g_assert_cmpint (graft_scene_mark_hidden_node (scene, g_ptr_array_index (block->nodes, 0), 3), >=, 0);
  badged = test_scene_shown_node (scene, *graph, 0);
  /* marked as the canvas marks a box */
  box = box_of (scene, badged);
  box->highlight = 2;
  g_free (box->badge);
  box->badge = g_strdup ("unsupported <op>");
  box = box_of (scene, test_scene_shown_node (scene, *graph, 1));
  box->has_heat = TRUE;
  box->heat = 1.0;
  box = box_of (scene, test_scene_shown_node (scene, *graph, 2));
  box->has_tint = TRUE;
  box->tint[0] = 0x12 / 255.0, box->tint[1] = 0x34 / 255.0, box->tint[2] = 0x56 / 255.0;
  box_of (scene, test_scene_shown_node (scene, *graph, 4))->dead = TRUE;
  g_hash_table_add (found, badged);
  g_hash_table_add (found, block);
  options->found = found;
  options->selected_node = test_scene_shown_node (scene, *graph, 3);
  return scene;
}
