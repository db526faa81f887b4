/* Where a graph canvas is looking, by name: the selection and the nodes
 * nearest the middle of the view, each with the widget point it is drawn
 * at, and the zoom. An edit, undo or redo replaces the graph object; the
 * place remembered before it is shown again in the new graph once that is
 * laid out, so the user stays on the spot they edited. */
#pragma once

#include "widgets/graph-canvas.h"

G_BEGIN_DECLS

typedef struct _GraftViewPlace GraftViewPlace;

/* The place canvas shows now; NULL while it shows no laid-out graph. */
GraftViewPlace *graft_view_place_new (GraftGraphCanvas *canvas);
void graft_view_place_free (GraftViewPlace *self);

/* Selects again what was selected (if the graph canvas shows now still has
 * it) and puts the first remembered node it still has back at the same
 * widget point and zoom. FALSE when none of them is left (the view is
 * left as it is). */
gboolean graft_view_place_restore (GraftViewPlace *self, GraftGraphCanvas *canvas);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftViewPlace, graft_view_place_free)

G_END_DECLS
