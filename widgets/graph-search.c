#include "graph-search.h"

#include <string.h>

#include "value-format.h"

typedef struct {
  char *needle;        /* folded query */
  gsize needle_length;
  gboolean needle_is_ascii;
  GPtrArray *hits;
  guint max_hits;
  guint n_total;
  GraftInference *inference;
} SearchState;

void
graft_search_hit_free (GraftSearchHit *hit)
{
  g_free (hit->title);
  g_free (hit->detail);
  g_free (hit);
}

/* Lower case, with the multiplication sign of shape strings spelled "x" so
 * that a query typed on a keyboard finds "1×3×224×224". */
static char *
fold_text (const char *text)
{
  g_autofree char *lower = g_utf8_strdown (text, -1);
  GString *out = g_string_sized_new (strlen (lower));

  for (const char *p = lower; *p != '\0'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if (c == 0x00D7)
        g_string_append_c (out, 'x');
      else
        g_string_append_unichar (out, c);
    }
  return g_string_free (out, FALSE);
}

/* Whether needle (folded, ASCII) occurs in text, ASCII too, ignoring case:
 * names and ops nearly always are, and a million-node graph is searched
 * on every pause in typing, so without a folded copy of each. */
static gboolean
ascii_contains_folded (const char *text, const char *needle, gsize needle_length)
{
  for (const char *start = text; *start != '\0'; start++)
    {
      gsize i = 0;

      while (i < needle_length && start[i] != '\0' && g_ascii_tolower (start[i]) == needle[i])
        i++;
      if (i == needle_length)
        return TRUE;
    }
  return needle_length == 0;
}

static gboolean
is_ascii (const char *text)
{
  for (; *text != '\0'; text++)
    if ((guchar) *text >= 0x80)
      return FALSE;
  return TRUE;
}

static gboolean
text_matches (const SearchState *state, const char *text)
{
  g_autofree char *folded = NULL;

  if (text == NULL || text[0] == '\0')
    return FALSE;
  if (state->needle_is_ascii && is_ascii (text))
    return ascii_contains_folded (text, state->needle, state->needle_length);
  folded = fold_text (text);
  return strstr (folded, state->needle) != NULL;
}

static void
add_hit (SearchState *state, GraftSearchHit *hit)
{
  state->n_total++;
  if (state->hits->len < state->max_hits)
    g_ptr_array_add (state->hits, hit);
  else
    graft_search_hit_free (hit);
}

static void
search_node (GraftNode *node, gpointer user_data)
{
  SearchState *state = user_data;
  GraftSearchMatch match;
  GraftSearchHit *hit;
  g_autofree char *where = NULL;

  if (text_matches (state, node->name))
    match = GRAFT_SEARCH_MATCH_NODE_NAME;
  else if (text_matches (state, node->op))
    match = GRAFT_SEARCH_MATCH_OP_TYPE;
  else
    return;

  where = graft_graph_format_location (node->graph);
  hit = g_new0 (GraftSearchHit, 1);
  hit->node = node;
  hit->match = match;
  hit->title = g_strdup (node->name != NULL && node->name[0] != '\0' ? node->name : node->op_type);
  if (node->group != NULL && node->group->path != NULL && node->group->path[0] != '\0')
    hit->detail = g_strdup_printf ("%s · %s", node->op, node->group->path);
  else
    hit->detail = g_strdup_printf ("%s · %s", node->op, where);
  add_hit (state, hit);
}

static void
search_values_of_graph (SearchState *state, GraftGraph *graph)
{
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      g_autofree char *type_text = NULL;
      GraftSearchMatch match;
      GraftSearchHit *hit;

      if (text_matches (state, value->name))
        match = GRAFT_SEARCH_MATCH_VALUE_NAME;
      else if (text_matches (state, (type_text = graft_value_format_type (value, state->inference))))
        match = GRAFT_SEARCH_MATCH_SHAPE;
      else
        continue;
      if (type_text == NULL)
        type_text = graft_value_format_type (value, state->inference);

      hit = g_new0 (GraftSearchHit, 1);
      hit->value = value;
      hit->match = match;
      hit->title = g_strdup (value->name);
      hit->detail = g_steal_pointer (&type_text);
      add_hit (state, hit);
    }
}

static void
collect_subgraph_values (GraftNode *node, gpointer user_data)
{
  SearchState *state = user_data;
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  for (guint i = 0; i < subgraphs->len; i++)
    search_values_of_graph (state, g_ptr_array_index (subgraphs, i));
}

GPtrArray *
graft_graph_search (GraftGraph *graph,
                    GraftInference *inference,
                    const char *query,
                    guint max_hits,
                    guint *n_total)
{
  SearchState state = { 0 };
  g_autofree char *stripped = g_strstrip (g_strdup (query != NULL ? query : ""));

  state.hits = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_search_hit_free);
  state.max_hits = max_hits;
  state.inference = inference;

  if (stripped[0] != '\0')
    {
      state.needle = fold_text (stripped);
      state.needle_length = strlen (state.needle);
      state.needle_is_ascii = is_ascii (state.needle);
      graft_graph_foreach_node_recursive (graph, search_node, &state);
      search_values_of_graph (&state, graph);
      graft_graph_foreach_node_recursive (graph, collect_subgraph_values, &state);
      g_free (state.needle);
    }

  if (n_total != NULL)
    *n_total = state.n_total;
  return state.hits;
}
