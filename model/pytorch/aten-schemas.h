/* The aten operator schemas PyTorch publishes: each overload's argument
 * names and types, read from data/aten-schemas.tsv (made from the pinned
 * torch by data/make-aten-schemas.py, compiled in). TorchScript calls pass
 * arguments by position; these give them their names. */
#pragma once

#include <glib.h>
#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;
  const char *type;        /* TorchScript type: "Tensor", "Optional[Tensor]", "List[int]", … */
  gboolean kwarg_only;
  gboolean has_default;
} GraftAtenArgument;

typedef struct {
  const char *name;        /* "aten::conv2d" */
  const char *overload;    /* "" for the default overload */
  const GraftAtenArgument *arguments;
  guint n_arguments;
} GraftAtenSchema;

/* The overload of op ("aten::conv2d") that a call with n_arguments
 * arguments matches best: argument k has keyword keywords[k] (or NULL if
 * positional; keywords may be NULL) and is a tensor value if is_value[k]
 * (else a constant). NULL if op has no schema or no overload takes such a
 * call. If found and argument_index is not NULL, argument_index[k] gets
 * the schema argument that call argument k binds to. The schemas live as
 * long as the process. */
const GraftAtenSchema *graft_aten_schema_find (const char *op, guint n_arguments, const char *const *keywords,
                                               const gboolean *is_value, guint *argument_index);

/* A node's call as the IR holds it (the TorchScript and torch.export
 * readers alike): a constant at position K is an attribute "argK", a
 * keyword constant an attribute under its keyword, and the node's inputs
 * fill the other positions in order, then come the keywords. */
typedef struct {
  const GraftAtenSchema *schema;  /* the overload bound, or NULL */
  guint n;                        /* call arguments */
  guint n_positional;
  gpointer *sources;              /* [n]: GraftValue* (is_value) or GraftAttribute* */
  gboolean *is_value;             /* [n] */
  const char **keywords;          /* [n]: NULL for positional ones */
  guint *bound;                   /* [n]: the schema argument each binds to */
} GraftAtenCall;

/* The position an attribute named "argK" holds (K); -1 for a keyword. */
gint64 graft_aten_argument_position (const char *attribute_name);

/* Binds node (op "aten::…") to its overload; FALSE, with *problem set to
 * a static text, when its constants leave a position empty or a value has
 * no place ("schema" is NULL then when no overload fits). */
gboolean graft_aten_call_bind (GraftNode *node, GraftAtenCall *call, const char **problem);
void graft_aten_call_clear (GraftAtenCall *call);
/* Names the arguments of node (op "aten::…", called by position: inputs
 * and "argK" attributes) after the overload that fits the call ("weight"
 * for its second input, "stride" for arg3), for the labels and the
 * sidebar; kernels still read them by position. FALSE when no overload
 * fits (nothing is named then). */
gboolean graft_aten_name_arguments (GraftNode *node);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (GraftAtenCall, graft_aten_call_clear)

/* All overloads of op, or NULL. */
GPtrArray *graft_aten_schema_list (const char *op);

G_END_DECLS
