/* The inputs of a numeric diff at one or more shapes: lists of values for
 * symbolic dims ("batch=2,5") and of input shapes ("x=2x4,5x4"); run k
 * takes the k-th value of every list (a shorter list keeps its last).
 * Inputs not given as tensors are random data (seeded) of the shape set
 * for them, or of the declared shape with its symbolic dims filled in;
 * shared by graft-cli diff and the compare window. */
#pragma once

#include "compare/numeric-diff.h"

G_BEGIN_DECLS

typedef struct _GraftInputSettings GraftInputSettings;

GraftInputSettings *graft_input_settings_new (void);
void graft_input_settings_free (GraftInputSettings *self);

/* "NAME=V[,V...]": values of a symbolic dim. */
gboolean graft_input_settings_add_dims (GraftInputSettings *self, const char *spec, GError **error);
/* "NAME=DIMS[,DIMS...]" with DIMS like 1x3x224x224: shapes of an input. */
gboolean graft_input_settings_add_shapes (GraftInputSettings *self, const char *spec, GError **error);

guint graft_input_settings_get_n_runs (GraftInputSettings *self);

/* The inputs of run (A's input name → GraftRtTensor*, owned), taking
 * given tensors (A's input names, may be NULL) first; without random, an
 * input not given is an error. label gets "x: 2×4, y: 3". */
GHashTable *graft_input_settings_make_inputs (GraftInputSettings *self, GraftNumericDiff *diff, guint run,
                                              GHashTable *given, gboolean random, guint32 seed, char **label,
                                              GError **error);

/* Reads the .npy or .pb file at path as the input named name (an input of
 * either model; NULL: A's first input not in given yet) into given (A's
 * input name → GraftRtTensor*, owned). */
gboolean graft_input_settings_read_input (GraftNumericDiff *diff, const char *name, const char *path,
                                          GHashTable *given, GError **error);

/* As graft_input_settings_read_input(), with the tensor itself (given
 * takes a reference). */
gboolean graft_input_settings_give_input (GraftNumericDiff *diff, const char *name, GraftRtTensor *tensor,
                                          GHashTable *given, GError **error);

/* Runs diff once per setting (graft_input_settings_make_inputs() then
 * graft_numeric_diff_run()): the runs (GraftNumericRun*, owned), or NULL
 * with an error. hint (may be NULL) follows, in parentheses, the message
 * of an input that cannot be made: the caller's names for the settings. */
GPtrArray *graft_input_settings_run_all (GraftInputSettings *self, GraftNumericDiff *diff, GHashTable *given,
                                         gboolean random, guint32 seed, const char *hint, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftInputSettings, graft_input_settings_free)

G_END_DECLS
