/* The table of edit operations behind graft_edit_new_operation(): one row
 * per kind of edit, read by GraftEdit (apply, describe), by recipes (which
 * parameters name nodes and values, so that a replay can find them again
 * in another export) and by graft-cli edit (the id is the recipe's "op").
 *
 * Parameters are a GVariant dictionary (a{sv}) of strings (s), integers
 * (x), floats (d), booleans (b) and string lists (as). Two keys are read
 * by GraftEdit itself for every operation: "graph" (a subgraph path
 * "NODE#ATTRIBUTE", repeated for deeper ones: "loop#body#if#then_branch")
 * and "function" (the name of a local function whose body is edited);
 * without them the operation works on the main graph. */
#pragma once

#include "edit/edit.h"

G_BEGIN_DECLS

typedef struct {
  GraftModel *model;
  GraftGraph *graph;      /* the graph the operation edits */
  GraftFunction *function;/* its function when it is a function body, else NULL */
} GraftEditScope;

typedef gboolean (*GraftEditApplyFunc) (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error);
typedef char *(*GraftEditDescribeFunc) (GVariant *params);

typedef struct {
  const char *id;             /* "rename-node": recipe and CLI name */
  const char *node_params;    /* space-separated keys whose string names a node of the scope */
  const char *value_params;   /* keys whose string (s) or list (as) names values of the scope */
  GraftEditApplyFunc apply;   /* NULL for the kinds GraftEdit runs itself (make-dim-dynamic...) */
  GraftEditDescribeFunc describe;
} GraftEditOperation;

const GraftEditOperation *graft_edit_operation_lookup (const char *id);
/* Every operation, in table order. */
const GraftEditOperation *graft_edit_operation_list (guint *n);

/* Parameter access: NULL / fallback when absent or of another type. */
const char *graft_edit_param_string (GVariant *params, const char *key);
gint64 graft_edit_param_int (GVariant *params, const char *key, gint64 fallback);
gboolean graft_edit_param_bool (GVariant *params, const char *key, gboolean fallback);
/* A float (d), or an integer (x) read as one. */
double graft_edit_param_double (GVariant *params, const char *key, double fallback);
/* A string list (as), or a single string as a one-element list; free with g_free. */
const char **graft_edit_param_strv (GVariant *params, const char *key);

/* Builds a{sv} from key/value pairs: "key", GVariant* (floating), ..., NULL. */
GVariant *graft_edit_params_new (const char *first_key, ...) G_GNUC_NULL_TERMINATED;
/* params with key set to value (floating; consumed), as a new a{sv}. */
GVariant *graft_edit_params_replace (GVariant *params, const char *key, GVariant *value);

G_END_DECLS
