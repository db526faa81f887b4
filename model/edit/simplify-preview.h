/* What the Simplify… dialog shows before it runs: the passes of
 * "simplify" in the order a round runs them, and what each does to the
 * model on its own (tried on a copy). */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef struct {
  const char *id;          /* the operation's id: "fuse-gelu" */
  char *title;             /* its description: "Fuse GELU into Gelu" */
  int removed;             /* nodes it removes on its own (negative: adds) */
  int initializers_removed;
  char *reason;            /* why it did nothing ("…opset 17 has no Gelu…"), or NULL */
} GraftSimplifyPass;

/* The pass ids, NULL-terminated, in a round's order. */
const char *const *graft_simplify_pass_ids (void);

/* Every pass tried alone on a copy of model (GraftSimplifyPass*, owned). */
GPtrArray *graft_simplify_preview (GraftModel *model);

G_END_DECLS
