/* Find: matches nodes and values of a graph (and its subgraphs) against
 * what the user typed. Plain GLib so it is tested without a display. */
#pragma once

#include "ir/graph.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_SEARCH_MATCH_NODE_NAME,
  GRAFT_SEARCH_MATCH_OP_TYPE,
  GRAFT_SEARCH_MATCH_VALUE_NAME,
  GRAFT_SEARCH_MATCH_SHAPE,
} GraftSearchMatch;

typedef struct {
  GraftNode *node;     /* set for node hits */
  GraftValue *value;   /* set for value hits */
  GraftSearchMatch match;
  char *title;         /* "Conv “/conv1/Conv”" or the value name */
  char *detail;        /* where it matched: graph path, type */
} GraftSearchHit;

void graft_search_hit_free (GraftSearchHit *hit);

/* Case-insensitive substring search. Shapes match both "1x3x224x224" and
 * "1×3×224×224", declared or inferred (inference may be NULL). Returns at most max_hits hits (GraftSearchHit*), nodes
 * before values; *n_total gets the number of all matches. */
GPtrArray *graft_graph_search (GraftGraph *graph,
                               GraftInference *inference,
                               const char *query,
                               guint max_hits,
                               guint *n_total);

G_END_DECLS
