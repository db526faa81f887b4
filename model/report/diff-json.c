/* A comparison as JSON, for graft-cli diff --json and the Python
 * module's graft.diff(). */
#include <math.h>
#include <json-glib/json-glib.h>

#include "report/diff-json.h"

static void
add_string (JsonBuilder *b, const char *member, const char *value)
{
  json_builder_set_member_name (b, member);
  if (value)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

static void
add_int (JsonBuilder *b, const char *member, gint64 value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_int_value (b, value);
}

static void
add_bool (JsonBuilder *b, const char *member, gboolean value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_boolean_value (b, value);
}

static void
add_node_object (JsonBuilder *b, GraftNode *node)
{
  json_builder_begin_object (b);
  add_string (b, "name", node->name ? node->name : "");
  add_string (b, "op", node->op);
  add_string (b, "group", node->group && node->group->path ? node->group->path : "");
  json_builder_end_object (b);
}

static void
add_node_json (JsonBuilder *b, const char *member, GraftNode *node)
{
  json_builder_set_member_name (b, member);
  if (node == NULL)
    json_builder_add_null_value (b);
  else
    add_node_object (b, node);
}

static void
add_double (JsonBuilder *b, const char *member, double v)
{
  json_builder_set_member_name (b, member);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}

static void
add_nodes_json (JsonBuilder *b, const char *member, GPtrArray *nodes)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  for (guint i = 0; i < nodes->len; i++)
    add_node_object (b, nodes->pdata[i]);
  json_builder_end_array (b);
}

static void
add_alignment_json (JsonBuilder *b, GraftAlignment *al, GraftStructuralDiff *sd)
{
  json_builder_set_member_name (b, "alignment");
  json_builder_begin_object (b);
  add_int (b, "compute_nodes_a", al->n_compute_a);
  add_int (b, "compute_nodes_b", al->n_compute_b);
  add_int (b, "matched_a", al->n_matched_a);
  add_int (b, "matched_b", al->n_matched_b);
  add_int (b, "exact", sd->n_exact);
  add_int (b, "inferred", sd->n_inferred);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "pairs");
  json_builder_begin_array (b);
  for (guint i = 0; i < al->node_pairs->len; i++)
    {
      GraftNodePair *p = &g_array_index (al->node_pairs, GraftNodePair, i);
      json_builder_begin_object (b);
      add_node_json (b, "a", p->a);
      add_node_json (b, "b", p->b);
      add_string (b, "match", p->kind == GRAFT_MATCH_EXACT ? "exact" : "inferred");
      add_string (b, "reason", p->reason);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);

  json_builder_set_member_name (b, "unmatched");
  json_builder_begin_object (b);
  add_nodes_json (b, "a", al->only_a);
  add_nodes_json (b, "b", al->only_b);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "notes");
  json_builder_begin_array (b);
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *n = al->notes->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "kind", graft_note_kind_to_string (n->kind));
      add_string (b, "side", n->in_a ? "a" : "b");
      add_node_json (b, "node", n->node);
      add_node_json (b, "other", n->other);
      add_nodes_json (b, "absorbed", n->absorbed);
      add_nodes_json (b, "absorbed_other", n->absorbed_other);
      add_string (b, "description", n->description);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
add_changes_json (JsonBuilder *b, GraftStructuralDiff *sd)
{
  json_builder_set_member_name (b, "changes");
  json_builder_begin_array (b);
  for (guint i = 0; i < sd->changes->len; i++)
    {
      GraftChange *c = sd->changes->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "kind", graft_change_kind_to_string (c->kind));
      add_node_json (b, "a", c->a);
      add_node_json (b, "b", c->b);
      add_string (b, "what", c->what);
      add_string (b, "before", c->before);
      add_string (b, "after", c->after);
      if (c->kind == GRAFT_CHANGE_SHAPE)
        {
          json_builder_set_member_name (b, "inferred");
          json_builder_add_boolean_value (b, c->inferred);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);

  json_builder_set_member_name (b, "groups");
  json_builder_begin_array (b);
  for (guint i = 0; i < sd->groups->len; i++)
    {
      GraftGroupDiff *g = sd->groups->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "path", g->path);
      const char *names[] = { "matched", "changed", "only_a", "only_b", "notes" };
      guint values[] = { g->matched, g->changed, g->only_a, g->only_b, g->notes };
      for (guint k = 0; k < G_N_ELEMENTS (names); k++)
        {
          add_int (b, names[k], values[k]);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
add_value_error_json (JsonBuilder *b, const GraftValueError *e)
{
  json_builder_begin_object (b);
  add_string (b, "a", e->a->name);
  add_string (b, "b", e->b->name);
  add_node_json (b, "node_a", e->a->producer);
  add_node_json (b, "node_b", e->b->producer);
  add_bool (b, "close", e->close);
  add_double (b, "max_abs", e->max_abs);
  add_double (b, "max_rel", e->max_rel);
  if (e->shape_differs)
    {
      add_string (b, "shape_a", e->shape_a);
      add_string (b, "shape_b", e->shape_b);
    }
  json_builder_end_object (b);
}

/* The run's first divergent value (or null) and every compared value. */
static void
add_run_values_json (JsonBuilder *b, GraftNumericRun *run)
{
  json_builder_set_member_name (b, "first_divergent");
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  if (first)
    add_value_error_json (b, first);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "values");
  json_builder_begin_array (b);
  for (guint i = 0; i < run->values->len; i++)
    add_value_error_json (b, &g_array_index (run->values, GraftValueError, i));
  json_builder_end_array (b);
}

static void
add_numeric_json (JsonBuilder *b, GraftAlignment *al, GPtrArray *runs, double rtol, double atol)
{
  json_builder_set_member_name (b, "numeric");
  if (runs == NULL)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  add_double (b, "rtol", rtol);
  add_double (b, "atol", atol);
  json_builder_set_member_name (b, "runs");
  json_builder_begin_array (b);
  for (guint r = 0; r < runs->len; r++)
    {
      GraftNumericRun *run = runs->pdata[r];
      g_autofree char *verdict = graft_numeric_run_describe (run, al);
      json_builder_begin_object (b);
      add_string (b, "inputs", run->label);
      add_string (b, "verdict", verdict);
      add_bool (b, "outputs_close", run->outputs_close);
      add_string (b, "error_a", run->error_a);
      add_string (b, "error_b", run->error_b);
      add_string (b, "failed_node_a", run->failed_a ? run->failed_a->name : NULL);
      add_string (b, "failed_node_b", run->failed_b ? run->failed_b->name : NULL);
      add_int (b, "compared", run->n_compared);
      add_int (b, "divergent", run->n_divergent);
      add_double (b, "seconds_a", run->seconds_a);
      add_double (b, "seconds_b", run->seconds_b);
      add_run_values_json (b, run);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static char *
builder_to_text (JsonBuilder *b)
{
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  g_autoptr(JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  return json_generator_to_data (gen, NULL);
}

/* One side's target: its name, the summary and the partition figures. */
static void
add_target_side_json (JsonBuilder *b, const char *member, const GraftTargetReport *report)
{
  g_autofree char *summary = graft_target_report_summary (report);
  g_autoptr(GPtrArray) ops = graft_target_report_unsupported_ops (report);

  json_builder_set_member_name (b, member);
  json_builder_begin_object (b);
  add_string (b, "target", report->target->name);
  add_string (b, "summary", summary);
  add_int (b, "partitions", report->partitions->len);
  add_int (b, "supported_nodes", report->n_supported);
  add_int (b, "total_nodes", report->n_nodes);
  json_builder_set_member_name (b, "unsupported_ops");
  json_builder_begin_array (b);
  for (guint i = 0; i < ops->len; i++)
    json_builder_add_string_value (b, g_ptr_array_index (ops, i));
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static void
add_verdict_json (JsonBuilder *b, const char *member, const GraftNodeSupport *support)
{
  json_builder_set_member_name (b, member);
  if (support == NULL)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  add_bool (b, "supported", support->reason == GRAFT_SUPPORT_OK);
  add_string (b, "reason", support->reason == GRAFT_SUPPORT_OK ? NULL : graft_support_reason_to_string (support->reason));
  add_string (b, "message", support->message);
  add_int (b, "partition", support->partition);
  json_builder_end_object (b);
}

/* "targets": {"a": side, "b": side, "differences": [{a, b, on_a, on_b}]} */
static void
add_targets_json (JsonBuilder *b, const GraftTargetDiff *targets)
{
  if (targets == NULL)
    return;
  json_builder_set_member_name (b, "targets");
  json_builder_begin_object (b);
  add_target_side_json (b, "a", targets->a);
  add_target_side_json (b, "b", targets->b);
  json_builder_set_member_name (b, "differences");
  json_builder_begin_array (b);
  for (guint i = 0; i < targets->differences->len; i++)
    {
      const GraftTargetDifference *d = &g_array_index (targets->differences, GraftTargetDifference, i);
      json_builder_begin_object (b);
      add_node_json (b, "a", d->a);
      add_node_json (b, "b", d->b);
      add_verdict_json (b, "on_a", d->on_a);
      add_verdict_json (b, "on_b", d->on_b);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
}

char *
graft_diff_to_json (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, double rtol, double atol,
                    gboolean equivalent, double align_seconds, const GraftTargetDiff *targets)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_string (b, "a", graft_model_get_path (al->a));
  add_string (b, "b", graft_model_get_path (al->b));
  add_bool (b, "equivalent", equivalent);
  add_string (b, "summary", sd->summary);
  add_double (b, "alignment_seconds", align_seconds);
  add_alignment_json (b, al, sd);
  add_changes_json (b, sd);
  add_numeric_json (b, al, runs, rtol, atol);
  add_targets_json (b, targets);
  json_builder_end_object (b);
  return builder_to_text (b);
}

char *
graft_reference_diff_to_json (const char *model_path, const char *reference, guint n_reference, GraftNumericRun *run)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_string (b, "model", model_path);
  add_string (b, "reference", reference);
  add_int (b, "reference_values", n_reference);
  add_int (b, "compared", run->n_compared);
  add_int (b, "divergent", run->n_divergent);
  add_bool (b, "outputs_close", run->outputs_close);
  add_string (b, "error", run->error_a);
  add_run_values_json (b, run);
  json_builder_end_object (b);
  return builder_to_text (b);
}
