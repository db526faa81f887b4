/* The lines of a node's box, as the canvas and render draw them, joined
 * by newlines: for tests that check what a label says. */
#pragma once

#include <cairo.h>
#include "layout/labels.h"

static inline char *
graft_test_label_text (GraftNode *node, const GraftLabelOptions *options)
{
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create (surface);
  g_auto(GStrv) lines = graft_node_label_lines (node, options, cr, 1000);

  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  return g_strjoinv ("\n", lines);
}
