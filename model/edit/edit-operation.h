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

typedef struct _GraftEditOperation GraftEditOperation;

typedef gboolean (*GraftEditApplyFunc) (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error);
typedef char *(*GraftEditDescribeFunc) (GVariant *params);
/* Appends the input dims (GraftDimCheckDim, names borrowed from params)
 * an edit with params would change in graph, as it is before the edit:
 * what graft_edit_verify() proves at other sizes. */
typedef void (*GraftEditChangedDimsFunc) (GraftGraph *graph, GVariant *params, GArray *dims);
/* The parameters from text (edit-arguments.c): argument as graft-cli
 * edit reads it after the option ("OLD=NEW"), or, from the window, target
 * (the node or value the menu was opened on) with the rest (the dialog's
 * text, NULL without one). graph (may be NULL) resolves a target that
 * stands for more ("extract this node"). NULL when the text does not
 * read, with error set when it says more than the syntax. */
typedef GVariant *(*GraftEditParseFunc) (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                         const char *argument, GError **error);

typedef enum {
  GRAFT_EDIT_MAIN_GRAPH = 1 << 0, /* edits the main graph: "graph" and "function" are dropped */
  GRAFT_EDIT_SLOW = 1 << 1,       /* repairs and re-infers the whole graph: the window runs it on a worker */
} GraftEditFlags;

/* What a context menu item is offered on. */
typedef enum {
  GRAFT_EDIT_TARGET_NONE,   /* no menu item */
  GRAFT_EDIT_TARGET_NODE,
  GRAFT_EDIT_TARGET_VALUE,  /* an edge: a value and its consumers */
  GRAFT_EDIT_TARGET_INPUT,  /* a graph input (the sidebar's input rows) */
  GRAFT_EDIT_TARGET_GRAPH,  /* the canvas background */
} GraftEditTarget;

/* When a menu item is offered, besides its target kind. */
typedef enum {
  GRAFT_EDIT_WHEN_MAIN_GRAPH = 1 << 0,     /* the graph shown is the main graph */
  GRAFT_EDIT_WHEN_OUTPUT = 1 << 1,         /* the value is a graph output */
  GRAFT_EDIT_WHEN_NOT_OUTPUT = 1 << 2,     /* the value is not a graph output */
  GRAFT_EDIT_WHEN_COMPUTED = 1 << 3,       /* the value has a producer and is no initializer */
  GRAFT_EDIT_WHEN_ON_PRODUCER = 1 << 4,    /* also on the node producing the value, once per output */
} GraftEditWhen;

struct _GraftEditOperation {
  const char *id;             /* "rename-node": recipe and CLI name */
  const char *node_params;    /* space-separated keys whose string names a node of the scope */
  const char *value_params;   /* keys whose string (s) or list (as) names values of the scope */
  GraftEditApplyFunc apply;
  GraftEditDescribeFunc describe;
  /* Checked when the edit is made: "KEY:TYPE ..." with TYPE s, x, ax or
   * as (a string list, or one string). */
  const char *required;
  GraftEditFlags flags;
  GraftEditChangedDimsFunc changed_dims;  /* NULL: changes no input dim */

  /* graft-cli edit */
  const char *option;         /* "--rename-node"; NULL: no option of its own */
  const char *argument;       /* "OLD=NEW" as the help shows it; NULL: the option takes no value */
  GraftEditParseFunc parse;   /* the argument to parameters */
  const char *keys;           /* the parameters a generic parse fills, in the argument's order: "node to" */
  const char *help;           /* one sentence, for --help */

  /* The window's context menus: the item runs win.edit-operation. */
  GraftEditTarget target;
  const char *label;          /* "_Rename…"; with WHEN_ON_PRODUCER, label_each names the output (%s) */
  const char *label_each;
  GraftEditWhen when;
  guint rank;                 /* the item's place; a separator between tens */
  /* A dialog asking for the rest of the argument (an entry): its heading,
   * the sentence under it, the apply button; NULL heading: no entry. */
  const char *heading;
  const char *body;
  const char *apply_label;
  /* What the entry starts with for target in graph (NULL: empty). */
  char *(*suggest) (GraftGraph *graph, const char *target);
  /* A dialog of the window's own that collects the parameters ("op-picker",
   * "pattern"), ending in the same operation. */
  const char *dialog;
};

const GraftEditOperation *graft_edit_operation_lookup (const char *id);
/* Every operation, in table order. */
const GraftEditOperation *graft_edit_operation_list (guint *n);
/* The row whose option is option ("--rename-node"), or NULL. */
const GraftEditOperation *graft_edit_operation_for_option (const char *option);
/* The operation's parameters from text (its row's parse, see
 * GraftEditParseFunc); NULL with an error naming the syntax when it does
 * not read. */
GVariant *graft_edit_operation_parse (const GraftEditOperation *operation, GraftGraph *graph, const char *target,
                                      const char *argument, GError **error);
/* The input dims an edit with params would change in graph (GraftDimCheckDim). */
GArray *graft_edit_operation_changed_dims (const GraftEditOperation *operation, GraftGraph *graph, GVariant *params);

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
