/* The lint rules as one table: every rule's id, usual severity, title,
 * canvas badge, what it checks and the fix Graft offers. graft_lint_model
 * runs the table's checks; graft-cli lint, the Problems panel and the
 * canvas badges read the rows, so a rule is added in one place. */
#pragma once

#include "lint/diagnostics.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_LINT_FIX_NONE,
  /* The diagnostic names an input axis (input, axis): the fix is
   * graft_edit_new_make_dim_dynamic, verified at other sizes. */
  GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC,
} GraftLintFix;

/* Adds the rule's diagnostics to list. */
typedef void (*GraftLintCheckFunc) (GraftModel *model, const GraftLintOptions *options, GPtrArray *list);

typedef struct {
  const char *id;            /* "static-input-dim": stable, in JSON and filters */
  GraftSeverity severity;    /* the usual one; the description says when it differs */
  const char *title;         /* "Static input dimension" */
  const char *badge;         /* canvas badge: "static dim" */
  const char *description;   /* one sentence, for listings */
  /* NULL where one check finds several rules: the row that has it runs
   * it once for the whole family (the trace-* rules). */
  GraftLintCheckFunc check;
  GraftLintFix fix;
} GraftLintRule;

/* Every rule, in the order they run. */
const GraftLintRule *graft_lint_rules (guint *n_rules);
/* The rule with that id, or NULL. */
const GraftLintRule *graft_lint_rule_lookup (const char *id);

G_END_DECLS
