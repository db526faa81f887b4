/* Laid-out scenes for the tests of the picture writers (SVG, PDF). */
#pragma once

#include <glib.h>
#include "layout/painter.h"
#include "layout/scene.h"
#include "test-graphs.h"

/* graph laid out with every group open but collapsed (may be NULL). */
GraftScene *test_scene_lay_out (GraftGraph *graph, GraftGroup *collapsed);

/* The skip-th node of graph that has a box of its own in scene. */
GraftNode *test_scene_shown_node (GraftScene *scene, GraftGraph *graph, guint skip);

/* What the window marks on its scene before File → Export, on 2 stages of
 * 4 blocks (test_graph_new_blocks (2, 4, 3)) with block stage1.block2
 * collapsed: that block hides an error; shown nodes carry a warning badge
 * "unsupported <op>" (found by Find, as is the block), heat 1, a #123456
 * tint, the selection and a dead branch. found is filled, options point to
 * it. */
GraftScene *test_scene_new_marked (GraftGraph **graph, GHashTable *found, GraftPaintOptions *options);
