/* Edit → Replace Pattern… in the window (window-patterns.c): a set of
 * functions over the window's public face (window.h), with no state of
 * its own. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

/* The Replace Pattern dialog, which replace-pattern's row names
 * (win.edit-operation: Edit → Replace Pattern…, and a node's context
 * menu), over the graph shown, the pattern starting from node (NULL:
 * empty). */
void graft_window_open_pattern_dialog (GraftWindow *self, const char *node);

G_END_DECLS
