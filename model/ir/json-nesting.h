/* How deeply JSON text nests, found without recursion.
 *
 * json-glib parses arrays and objects recursively, and so does every walk
 * over the tree it builds: a few kilobytes of "[[[[…" exhaust the stack.
 * Text from a file is measured first, and refused when it nests deeper
 * than any real document of its kind. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Checks that text nests arrays and objects at most max_depth deep;
 * otherwise fails with GRAFT_MODEL_ERROR_UNSAFE saying how deep it nests
 * and at which byte offset it passed the limit, after what (a name for
 * the text: "the recipe", "models/model.json"). Linear, no recursion. */
gboolean graft_json_check_nesting (const char *text, gsize length, guint max_depth, const char *what,
                                   GError **error);

G_END_DECLS
