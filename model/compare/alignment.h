/* Alignment of two models: which node of A is which node of B, across
 * formats (a traced and a scripted TorchScript of the same module, a
 * TorchScript model and its ONNX export, an ONNX model before and after an
 * edit).
 *
 * The evidence, strongest first: equal weight data (a layer's weights
 * identify it), graph inputs and outputs, module paths with the operator
 * family (aten::conv2d in layer1.0.conv1 is onnx::Conv in /layer1/0/conv1),
 * then graph structure: matches spread along the edges to producers and
 * consumers of the same family. Only nodes that compute on data derived
 * from the graph inputs are aligned; constants, lists and shape reads are
 * glue, and ops that only forward their input (dropout, contiguous) are
 * looked through.
 *
 * Differences that are not a node of one model missing in the other are
 * recognised and explained instead of being left unmatched (notes): an
 * If/Loop kept in one model and flattened or unrolled in the other, a
 * number read at run time in one (x.size(0), .item()) that is a literal in
 * the other, a BatchNorm folded into the preceding Conv, a runtime check
 * (a branch that only raises) that the other model dropped, one fused op
 * (aten::_native_multi_head_attention) whose neighbours match and whose
 * place the other side fills with several ops.
 *
 * The alignment only reads the models. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_MATCH_EXACT = 0,   /* same weights, or same op in the same module at the same place */
  GRAFT_MATCH_INFERRED,    /* from op families, structure, or control flow */
} GraftMatchKind;

typedef struct {
  GraftNode *a;
  GraftNode *b;
  GraftMatchKind kind;
  const char *reason;      /* static: "same weights", "module path", "graph structure", ... */
} GraftNodePair;

typedef struct {
  GraftValue *a;
  GraftValue *b;
} GraftValuePair;

typedef enum {
  GRAFT_NOTE_FLATTENED_IF = 0, /* an If kept on one side, only its taken branch on the other */
  GRAFT_NOTE_UNROLLED_LOOP,    /* a Loop kept on one side, unrolled on the other */
  GRAFT_NOTE_RUNTIME_CHECK,    /* an If whose other branch only raises, dropped on the other side */
  GRAFT_NOTE_BAKED_SHAPE,      /* a size read at run time on one side, a literal on the other */
  GRAFT_NOTE_BAKED_NUMBER,     /* a tensor value read as a number (.item()) on one side, a literal on the other */
  GRAFT_NOTE_FOLDED,           /* a BatchNorm folded into the Conv before it on the other side */
  GRAFT_NOTE_DECOMPOSED,       /* one fused op on one side, several ops between the same neighbours on the other */
  GRAFT_N_NOTE_KINDS,
} GraftNoteKind;

typedef struct {
  GraftNoteKind kind;
  gboolean in_a;           /* node is in A (and the other side flattened, baked or folded it) */
  GraftNode *node;         /* the If/Loop, the node reading the number, the folded BatchNorm */
  GraftNode *other;        /* its counterpart on the other side, or NULL */
  GPtrArray *absorbed;     /* GraftNode* on node's side that this note explains (not owned) */
  GPtrArray *absorbed_other; /* GraftNode* on the other side it explains (a decomposition's ops) */
  char *description;       /* one sentence */
} GraftAlignmentNote;

typedef struct _GraftAlignment GraftAlignment;

struct _GraftAlignment {
  /*< public, read-only >*/
  GraftModel *a;           /* owned references */
  GraftModel *b;
  GArray *node_pairs;      /* GraftNodePair, in A's order (several B nodes may pair with one
                            * node of a loop body A kept) */
  GArray *value_pairs;     /* GraftValuePair: values that must hold the same data */
  GPtrArray *only_a;       /* GraftNode*: aligned-kind nodes of A left unmatched and unexplained */
  GPtrArray *only_b;
  GPtrArray *notes;        /* GraftAlignmentNote* */
  guint n_compute_a;       /* nodes that compute on data, per side */
  guint n_compute_b;
  guint n_matched_a;       /* of those, matched or explained by a note */
  guint n_matched_b;
  /*< private >*/
  GHashTable *pair_of_a;   /* GraftNode* → index + 1 in node_pairs */
  GHashTable *pair_of_b;
};

/* Aligns a's main graph (and its subgraphs) with b's. Fails only when a
 * model has no graph (weights only). */
GraftAlignment *graft_alignment_new (GraftModel *a, GraftModel *b, GError **error);
void graft_alignment_free (GraftAlignment *self);

/* The pair node belongs to (node of A when from_a), or NULL. */
const GraftNodePair *graft_alignment_lookup (GraftAlignment *self, GraftNode *node, gboolean from_a);

const char *graft_note_kind_to_string (GraftNoteKind kind); /* "flattened-if", ... */

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftAlignment, graft_alignment_free)

G_END_DECLS
