#include "layout/shared-values.h"

#include <string.h>
#include "layout/attribute-fold.h"
#include "layout/labels.h"

struct _GraftSharedValues {
  GHashTable *shared;  /* GraftValue* → its number of distinct readers */
  GHashTable *hidden;  /* GraftNode* set */
};

/* Ordered: a node's origin is the least of its inputs'. */
typedef enum {
  ORIGIN_RUNTIME,      /* depends on what the graph computes */
  ORIGIN_SHAPE,        /* computed from constants and tensor shapes */
  ORIGIN_CONSTANT,     /* computed from constants alone */
} Origin;

static gboolean
is_shape_op (const GraftNode *node)
{
  if (strcmp (node->domain, "onnx") == 0)
    return strcmp (node->op_type, "Shape") == 0 || strcmp (node->op_type, "Size") == 0;
  if (strcmp (node->domain, "aten") == 0)
    return strcmp (node->op_type, "size") == 0 || strcmp (node->op_type, "sym_size") == 0
           || strcmp (node->op_type, "sym_numel") == 0;
  return FALSE;
}

static Origin
value_origin (GHashTable *origins, const GraftValue *value)
{
  if (value->initializer != NULL)
    return ORIGIN_CONSTANT;
  return GPOINTER_TO_UINT (g_hash_table_lookup (origins, value));
}

/* What node's outputs are computed from. Nodes with subgraphs and nodes
 * without outputs stay where they are. */
static Origin
node_origin (GHashTable *origins, GraftNode *node)
{
  Origin origin = ORIGIN_CONSTANT;
  g_autoptr (GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  /* TorchScript's module attributes and constants are the attribute
   * fold's (layout/attribute-fold.h): listed, or boxes when the view asks
   * for them. */
  if ((subgraphs != NULL && subgraphs->len > 0) || strcmp (node->domain, "prim") == 0)
    return ORIGIN_RUNTIME;
  if (is_shape_op (node))
    return ORIGIN_SHAPE;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);

      if (value != NULL)
        origin = MIN (origin, value_origin (origins, value));
    }
  return origin;
}

/* Every reader in the value's graph, and either in more than one box or,
 * for a constant, any in a box other than where it is made (BERT's
 * pooler reads an index the exporter made in the embeddings). */
static gboolean
read_far_apart (const GraftValue *value, GHashTable *node_groups, Origin origin)
{
  gpointer first_group = NULL;
  gboolean apart = FALSE;

  if (value->is_graph_output || value->consumers->len == 0)
    return FALSE;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *reader = g_ptr_array_index (value->consumers, i);
      gpointer group = g_hash_table_lookup (node_groups, reader);

      if (reader->graph != value->graph || group == NULL)
        return FALSE;
      if (i == 0)
        first_group = group;
      else if (group != first_group)
        apart = TRUE;
      /* A constant's edge is long wherever dot ranks its source (at the
       * top of its box: GPT-2's ln_f bias ran 42 ranks): listed at its
       * readers as a weight is, it has none. */
      if (origin == ORIGIN_CONSTANT)
        apart = TRUE;
    }
  return apart;
}

/* A constant's node is not drawn when nothing would point at it. */
static gboolean
is_hidden (GraftSharedValues *self, GraftNode *node)
{
  if (!graft_node_outputs_read_in_own_graph (node))
    return FALSE;
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->outputs, i);

      if (value == NULL || g_hash_table_contains (self->shared, value))
        continue;
      for (guint j = 0; j < value->consumers->len; j++)
        if (!g_hash_table_contains (self->hidden, g_ptr_array_index (value->consumers, j)))
          return FALSE;
    }
  return TRUE;
}

GraftSharedValues *
graft_shared_values_new (GraftGraph *graph, GHashTable *node_groups)
{
  GraftSharedValues *self = g_new0 (GraftSharedValues, 1);
  g_autoptr (GHashTable) origins = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) node_origins = g_hash_table_new (NULL, NULL);

  self->shared = g_hash_table_new (NULL, NULL);
  self->hidden = g_hash_table_new (NULL, NULL);
  /* Nodes are in file order, which both ONNX and TorchScript keep
   * topological; a value read before it is made counts as computed. */
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      Origin origin = node_origin (origins, node);

      if (origin == ORIGIN_RUNTIME)
        continue;
      g_hash_table_insert (node_origins, node, GUINT_TO_POINTER (origin));
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *value = g_ptr_array_index (node->outputs, j);

          if (value == NULL)
            continue;
          g_hash_table_insert (origins, value, GUINT_TO_POINTER (origin));
          if (read_far_apart (value, node_groups, origin))
            g_hash_table_insert (self->shared, value, GUINT_TO_POINTER (graft_shared_values_count_readers (value)));
        }
    }
  /* Readers come after what they read: walk back so a node knows whether
   * its readers are hidden. */
  for (guint i = graph->nodes->len; i-- > 0;)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (GPOINTER_TO_UINT (g_hash_table_lookup (node_origins, node)) == ORIGIN_CONSTANT && is_hidden (self, node))
        g_hash_table_add (self->hidden, node);
    }
  return self;
}

void
graft_shared_values_free (GraftSharedValues *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->shared);
  g_hash_table_unref (self->hidden);
  g_free (self);
}

gboolean
graft_shared_values_is_shared (const GraftSharedValues *self, const GraftValue *value)
{
  return self != NULL && value != NULL && g_hash_table_contains (self->shared, value);
}

gboolean
graft_shared_values_is_hidden (const GraftSharedValues *self, const GraftNode *node)
{
  return self != NULL && node != NULL && g_hash_table_contains (self->hidden, node);
}

/* The distinct readers of value, in its reader list's order. */
static GPtrArray *
distinct_readers (const GraftValue *value)
{
  GPtrArray *readers = g_ptr_array_new ();
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < value->consumers->len; i++)
    {
      gpointer reader = g_ptr_array_index (value->consumers, i);

      if (g_hash_table_add (seen, reader))
        g_ptr_array_add (readers, reader);
    }
  return readers;
}

guint
graft_shared_values_count_readers (const GraftValue *value)
{
  g_autoptr (GPtrArray) readers = distinct_readers (value);

  return readers->len;
}

GraftNode *
graft_shared_values_next_reader (const GraftValue *value, const GraftNode *current, guint *position)
{
  g_autoptr (GPtrArray) readers = distinct_readers (value);
  guint at = 0;

  if (readers->len == 0)
    return NULL;
  if (current != NULL && g_ptr_array_find (readers, current, &at))
    at = (at + 1) % readers->len;
  if (position != NULL)
    *position = at + 1;
  return g_ptr_array_index (readers, at);
}

/* What a reader is told the value is, after the slot's name: a
 * constant's value or type (" = 0", ": float32[64]"), else its type and
 * the op computing it (": int64[4] ← Concat"). */
static char *
describe_shared (GraftValue *value)
{
  GraftNode *producer = value->producer;
  GraftAttribute *attribute = NULL;
  g_autofree char *shape = NULL;

  if (producer != NULL && strcmp (producer->op_type, "Constant") == 0 && producer->attributes->len == 1)
    attribute = g_ptr_array_index (producer->attributes, 0);
  if (attribute != NULL && attribute->type == GRAFT_ATTR_TENSOR && attribute->t != NULL)
    {
      g_autofree char *values = graft_label_small_tensor_values (attribute->t);
      g_autofree char *type = values == NULL ? graft_tensor_describe (attribute->t) : NULL;

      return values != NULL ? g_strdup_printf (" = %s", values) : g_strdup_printf (": %s", type);
    }
  if (attribute != NULL)
    {
      g_autofree char *text = graft_attribute_format_value (attribute, 4);

      return g_strdup_printf (" = %s", text);
    }
  shape = graft_value_shape_label (value, NULL);
  if (shape != NULL)
    return g_strdup_printf (": %s[%s] ← %s", graft_dtype_to_string (value->dtype), shape, producer->op_type);
  return g_strdup_printf (" ← %s", producer->op_type);
}

void
graft_shared_values_add_lines (const GraftSharedValues *self, GraftNode *node, gboolean skip_folded,
                               GPtrArray *lines)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      g_autofree char *slot = NULL;
      g_autofree char *text = NULL;
      guint n_readers;

      if (!graft_shared_values_is_shared (self, value)
          || (skip_folded && graft_attribute_fold_is_folded_input (node, i)))
        continue;
      slot = graft_label_input_slot (node, i);
      text = describe_shared (value);
      n_readers = GPOINTER_TO_UINT (g_hash_table_lookup (self->shared, value));
      /* A constant with one far reader is that reader's, as a weight is. */
      if (n_readers > 1)
        g_ptr_array_add (lines, g_strdup_printf ("%s%s · shared ×%u", slot, text, n_readers));
      else
        g_ptr_array_add (lines, g_strdup_printf ("%s%s", slot, text));
    }
}
