/* The Run pane: runs the shown model in Graft's CPU runtime.
 *
 * Each graph input is fed random data (a seed, and a value for each
 * symbolic dim) or a .npy/.pb file; the run happens on a worker thread
 * with progress and Cancel; each output is listed with its dtype, shape
 * and min/max/mean, and the outputs can be saved as .npy files; outputs
 * holding NaN or Inf lead to the node that first made them. Unsupported
 * operators are listed before anything runs.
 *
 * Actions (on the pane): run.start, run.cancel, run.save-outputs (file
 * chooser), run.save-outputs-to(s) (a folder), run.reduce-to-here (emits
 * "reduce-to-node" with the node where NaN/Inf began, for the window's
 * Debug → Reduce). */
#pragma once

#include <gtk/gtk.h>
#include "ir/model.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_RUN_PANE (graft_run_pane_get_type ())
G_DECLARE_FINAL_TYPE (GraftRunPane, graft_run_pane, GRAFT, RUN_PANE, GtkWidget)

/* The model to run (NULL clears). Call again after every edit: the plan
 * and the input rows are rebuilt, a running run is cancelled. */
void graft_run_pane_set_model (GraftRunPane *self, GraftModel *model);

/* The value used for a symbolic dim in random inputs. */
void graft_run_pane_set_dim (GraftRunPane *self, const char *symbol, gint64 value);
/* Feeds input from a .npy or .pb file (NULL: back to random data). */
void graft_run_pane_set_input_file (GraftRunPane *self, const char *input, const char *path);
/* The shape of random data for an input that declares none, as the user
 * types it ("1x3x224x224"; NULL or "" forgets it). Fails, saying why, for
 * an unknown input, one that declares a shape, or unreadable text. Emits
 * "input-shapes-changed". */
gboolean graft_run_pane_set_input_shape (GraftRunPane *self, const char *input, const char *text, GError **error);
/* Input name → GraftShape*: the shapes given, or fed by the last run, for
 * the inputs that declare none. Borrowed. */
GHashTable *graft_run_pane_get_input_shapes (GraftRunPane *self);

void graft_run_pane_start (GraftRunPane *self);

/* The inputs the next run would be fed (name → GraftRtTensor*, owned):
 * the files chosen, random data of the seed for the rest, as a run makes
 * them (so the last run's, when nothing changed since). *description
 * (may be NULL) gets what they are: "x from x.npy; the others random data
 * of seed 0". */
GHashTable *graft_run_pane_make_inputs (GraftRunPane *self, char **description, GError **error);
gboolean graft_run_pane_is_running (GraftRunPane *self);

/* When the last run's outputs held NaN or Inf, the pane ran it again
 * watching every value: the node that first produced one (borrowed from
 * the model; NULL when the outputs were finite, or a graph input held it). */
GraftNode *graft_run_pane_get_nonfinite_node (GraftRunPane *self);

/* Per-node seconds of the last run: GraftNode* → double* (NULL before any
 * run). Borrowed until the next run or set_model. */
GHashTable *graft_run_pane_get_timings (GraftRunPane *self);
/* The nodes of the last run whose time covers a pattern of nodes the
 * runtime fused into one operator (the pattern's first node):
 * GraftNode* → the operator's name. NULL before any run. */
GHashTable *graft_run_pane_get_fused (GraftRunPane *self);

G_END_DECLS
