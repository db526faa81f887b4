/* Structural diff of two aligned models: nodes only in A, only in B, and
 * matched nodes whose op, attributes, constant inputs, declared shapes or
 * dtypes differ; counts per module group; a one-line summary. */
#pragma once

#include "compare/alignment.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_CHANGE_OP = 0,
  GRAFT_CHANGE_ATTRIBUTE,
  GRAFT_CHANGE_CONSTANT,     /* a constant input (initializer, Constant) holds other data */
  GRAFT_CHANGE_SHAPE,        /* declared shape of an output */
  GRAFT_CHANGE_DTYPE,        /* declared dtype of an output */
  GRAFT_CHANGE_INPUT,        /* a graph input's declared dtype or shape */
} GraftChangeKind;

typedef struct {
  GraftChangeKind kind;
  GraftNode *a;              /* NULL for GRAFT_CHANGE_INPUT */
  GraftNode *b;
  char *what;                /* attribute, input or output name */
  char *before;              /* in A */
  char *after;               /* in B */
  gboolean inferred;         /* a shape change seen in inferred shapes (neither file declares both) */
} GraftChange;

typedef struct {
  char *path;                /* module group path, "" for the top level */
  guint matched;
  guint changed;
  guint only_a;
  guint only_b;
  guint notes;
} GraftGroupDiff;

typedef struct {
  /*< public, read-only >*/
  GraftAlignment *alignment; /* borrowed: keep it alive as long as the diff */
  GPtrArray *changes;        /* GraftChange* */
  GPtrArray *groups;         /* GraftGroupDiff*, by path */
  guint n_exact;             /* node pairs by kind */
  guint n_inferred;
  guint n_changed_nodes;     /* matched nodes with at least one change */
  guint n_notes[GRAFT_N_NOTE_KINDS];
  char *summary;             /* one line */
  /*< private >*/
  GHashTable *input_dims;    /* symbol (interned) → the fixed size it replaced in a graph input */
  GraftInference *inference_a;   /* shape inference on each model, for values no file declares */
  GraftInference *inference_b;
} GraftStructuralDiff;

GraftStructuralDiff *graft_structural_diff_new (GraftAlignment *alignment);
void graft_structural_diff_free (GraftStructuralDiff *self);

/* No node only on one side, no change, and no note but folded
 * BatchNorms and runtime checks (which do not change the results of inputs
 * the checks accept). */
gboolean graft_structural_diff_is_equivalent (GraftStructuralDiff *self);

const char *graft_change_kind_to_string (GraftChangeKind kind); /* "op", "attribute", ... */

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftStructuralDiff, graft_structural_diff_free)

G_END_DECLS
