/* Two target reports over an alignment (target-diff.h). */
#include "compare/target-diff.h"

void
graft_target_diff_free (GraftTargetDiff *diff)
{
  if (diff == NULL)
    return;
  graft_target_report_free (diff->a);
  graft_target_report_free (diff->b);
  g_array_unref (diff->differences);
  g_free (diff);
}

static gboolean
decided_alike (const GraftNodeSupport *a, const GraftNodeSupport *b)
{
  return a->reason == b->reason;
}

static void
add_difference (GraftTargetDiff *diff, GraftNode *a, GraftNode *b, const GraftNodeSupport *on_a,
                const GraftNodeSupport *on_b)
{
  GraftTargetDifference difference = { a, b, on_a, on_b };

  g_array_append_val (diff->differences, difference);
}

/* The node of the other side's main graph with node's name and op: the
 * alignment leaves shape math and masks unpaired, but the same model (or
 * an edit of it) keeps their names. */
static GraftNode *
namesake (GraftNode *node, GHashTable *other_names)
{
  GraftNode *found;

  if (node->graph->parent_node != NULL || node->name == NULL || *node->name == '\0')
    return NULL;
  found = g_hash_table_lookup (other_names, node->name);
  return found != NULL && found->op == node->op ? found : NULL;
}

/* name → node of model's main graph (named nodes only). */
static GHashTable *
index_names (GraftModel *model)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GHashTable *names = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (node->name != NULL && *node->name != '\0')
        g_hash_table_insert (names, node->name, node);
    }
  return names;
}

/* The nodes of report's side the alignment did not pair: with their
 * namesake on the other side when that is unpaired too (from A's pass,
 * when decided differently), else alone when their target rejects them. */
static void
add_unmatched (GraftTargetDiff *diff, GraftAlignment *al, GraftTargetReport *report, gboolean side_a)
{
  GraftTargetReport *other_report = side_a ? diff->b : diff->a;
  g_autoptr(GHashTable) other_names = index_names (side_a ? al->b : al->a);

  for (guint i = 0; i < report->nodes->len; i++)
    {
      const GraftNodeSupport *support = g_ptr_array_index (report->nodes, i);
      GraftNode *partner;
      const GraftNodeSupport *other;

      if (graft_alignment_lookup (al, support->node, side_a) != NULL)
        continue;
      partner = namesake (support->node, other_names);
      other = partner ? graft_target_report_lookup (other_report, partner) : NULL;
      if (other != NULL && graft_alignment_lookup (al, partner, !side_a) == NULL)
        {
          if (side_a && !decided_alike (support, other))
            add_difference (diff, support->node, partner, support, other);
          continue;
        }
      if (support->reason == GRAFT_SUPPORT_OK)
        continue;
      if (side_a)
        add_difference (diff, support->node, NULL, support, NULL);
      else
        add_difference (diff, NULL, support->node, NULL, support);
    }
}

/* A's graph order (main graph first), then B's nodes without a match. */
static gint
compare_positions (gconstpointer left, gconstpointer right)
{
  const GraftTargetDifference *x = left, *y = right;
  GraftNode *p = x->a ? x->a : x->b, *q = y->a ? y->a : y->b;

  if ((x->a == NULL) != (y->a == NULL))
    return x->a == NULL ? 1 : -1;
  if ((p->graph->parent_node == NULL) != (q->graph->parent_node == NULL))
    return p->graph->parent_node == NULL ? -1 : 1;
  return p->index < q->index ? -1 : p->index > q->index;
}

GraftTargetDiff *
graft_target_diff_new (GraftAlignment *al, const GraftDeployTarget *target_a, const GraftDeployTarget *target_b,
                       GError **error)
{
  g_autoptr(GraftTargetReport) a = graft_target_check (al->a, target_a, NULL, error);
  g_autoptr(GraftTargetReport) b = a ? graft_target_check (al->b, target_b, NULL, error) : NULL;
  GraftTargetDiff *diff;

  if (b == NULL)
    return NULL;
  diff = g_new0 (GraftTargetDiff, 1);
  diff->a = g_steal_pointer (&a);
  diff->b = g_steal_pointer (&b);
  diff->differences = g_array_new (FALSE, FALSE, sizeof (GraftTargetDifference));
  for (guint i = 0; i < al->node_pairs->len; i++)
    {
      GraftNodePair *pair = &g_array_index (al->node_pairs, GraftNodePair, i);
      const GraftNodeSupport *on_a = graft_target_report_lookup (diff->a, pair->a);
      const GraftNodeSupport *on_b = graft_target_report_lookup (diff->b, pair->b);

      if (on_a != NULL && on_b != NULL && !decided_alike (on_a, on_b))
        add_difference (diff, pair->a, pair->b, on_a, on_b);
    }
  add_unmatched (diff, al, diff->a, TRUE);
  add_unmatched (diff, al, diff->b, FALSE);
  g_array_sort (diff->differences, compare_positions);
  return diff;
}

char *
graft_target_difference_describe (const GraftNodeSupport *support, const GraftDeployTarget *target)
{
  if (support == NULL)
    return g_strdup ("no counterpart");
  if (support->reason == GRAFT_SUPPORT_OK)
    return g_strdup_printf ("runs on %s (partition %d)", target->name, support->partition + 1);
  if (support->message != NULL)
    return g_strdup_printf ("%s: %s", target->host_fallback ? "falls back" : "refused", support->message);
  return g_strdup_printf ("%s on %s (%s)", target->host_fallback ? "falls back" : "refused", target->name,
                          graft_support_reason_to_string (support->reason));
}
