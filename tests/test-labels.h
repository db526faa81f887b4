/* The lines of a node's box as the layout labels it (title first), joined
 * by newlines: for tests that check what a label says. */
#pragma once

#include "layout/labels.h"

static inline char *
graft_test_label_text (GraftNode *node, const GraftLabelOptions *options)
{
  g_autoptr(GPtrArray) texts = graft_node_label_texts (node, options);

  g_ptr_array_add (texts, NULL);
  return g_strjoinv ("\n", (char **) texts->pdata);
}
