/* What replace-pattern would do, without doing it: the matches of a
 * pattern and the candidates it would skip (with the reason), for the
 * GUI's live preview; and a pattern suggested from one node and the
 * producers only it reads. The pattern syntax is pattern-edits.c's. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef struct {
  GraftGraph *graph;  /* the graph (or If/Loop/Scan body) it is in */
  GPtrArray *nodes;   /* GraftNode*, one per pattern step, the root last */
  char *reason;       /* a skipped candidate: why it is not replaced; NULL for a match */
} GraftPatternMatch;

typedef struct {
  GPtrArray *matches;    /* GraftPatternMatch*, in the order replace-pattern replaces them */
  GPtrArray *skipped;    /* GraftPatternMatch*: the ops fit, but replacing would change the rest of the graph */
  guint n_steps;
  guint n_variables;
} GraftPatternPreview;

/* The matches of pattern (steps as replace-pattern takes them, in one
 * string) in graph and, when subgraphs, in the bodies inside it; NULL
 * with the parser's error when pattern is not valid. */
GraftPatternPreview *graft_pattern_preview_new (GraftModel *model, GraftGraph *graph, const char *pattern,
                                                gboolean subgraphs, GError **error);
void graft_pattern_preview_free (GraftPatternPreview *preview);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPatternPreview, graft_pattern_preview_free)

/* FALSE with the parser's error when replacement (steps reading
 * pattern's variables) is not valid for pattern. */
gboolean graft_pattern_check_replacement (const char *pattern, const char *replacement, GError **error);

/* A pattern rooted at node: node, and (up to max_steps in all) the
 * producers of its inputs whose outputs only the pattern reads; the other
 * inputs become variables (one per value). "m=MatMul(x,w) a=Add(m,b) Relu(a)". */
char *graft_pattern_suggest (GraftNode *node, guint max_steps);

G_END_DECLS
