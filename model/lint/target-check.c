#include "lint/target-check.h"

#include <string.h>

#include "ir/model-error.h"
#include "onnx/op-schemas.h"

const char *
graft_support_reason_to_string (GraftSupportReason reason)
{
  switch (reason)
    {
    case GRAFT_SUPPORT_OK: return "ok";
    case GRAFT_SUPPORT_OP: return "op";
    case GRAFT_SUPPORT_OPSET: return "opset";
    case GRAFT_SUPPORT_DTYPE: return "dtype";
    case GRAFT_SUPPORT_ATTRIBUTE: return "attribute";
    case GRAFT_SUPPORT_DYNAMIC_SHAPE: return "dynamic-shape";
    case GRAFT_SUPPORT_RANK: return "rank";
    case GRAFT_SUPPORT_CONSTANT_INPUT: return "constant-input";
    case GRAFT_SUPPORT_OUTPUT: return "output";
    case GRAFT_SUPPORT_INPUTS: return "inputs";
    default: return "unknown";
    }
}

typedef struct {
  GraftModel *model;
  const GraftDeployTarget *target;
  GraftInference *inference;
  GraftTargetReport *report;
} Check;

static void
node_support_free (GraftNodeSupport *support)
{
  g_free (support->message);
  g_free (support);
}

static void
partition_free (GraftPartition *partition)
{
  g_ptr_array_unref (partition->nodes);
  g_ptr_array_unref (partition->inputs);
  g_ptr_array_unref (partition->outputs);
  g_free (partition);
}

void
graft_target_report_free (GraftTargetReport *report)
{
  if (report == NULL)
    return;
  g_ptr_array_unref (report->nodes);
  g_hash_table_unref (report->by_node);
  g_ptr_array_unref (report->partitions);
  g_free (report);
}

/* Every runtime folds Constant nodes into weights before it partitions. */
static gboolean
is_counted (const GraftNode *node)
{
  return node->op != g_intern_static_string ("onnx::Constant");
}

static gboolean
is_constant (const GraftValue *value)
{
  return value->initializer != NULL
         || (value->producer != NULL && value->producer->op == g_intern_static_string ("onnx::Constant"));
}

/* What is known of a value's shape: inferred, else declared, else a
 * weight's own. NULL when nothing is. */
static const GraftShape *
value_shape (Check *c, const GraftValue *value, GraftShape *scratch)
{
  const GraftShape *shape = graft_inference_get_shape (c->inference, value);

  if (shape != NULL && shape->rank >= 0)
    return shape;
  if (value->initializer != NULL)
    {
      scratch->rank = value->initializer->rank;
      scratch->dims = NULL;
      graft_shape_init_fixed (scratch, value->initializer->rank, value->initializer->dims);
      return scratch;
    }
  if (value->shape.rank >= 0)
    return &value->shape;
  return NULL;
}

static GraftDType
value_dtype (Check *c, const GraftValue *value)
{
  GraftDType dtype = graft_inference_get_dtype (c->inference, value);

  if (dtype != GRAFT_DTYPE_UNDEFINED)
    return dtype;
  if (value->initializer != NULL)
    return value->initializer->dtype;
  return value->dtype;
}

static int
value_rank (Check *c, const GraftValue *value)
{
  GraftShape scratch = GRAFT_SHAPE_UNKNOWN;
  const GraftShape *shape = value_shape (c, value, &scratch);
  int rank = shape ? shape->rank : -1;

  graft_shape_clear (&scratch);
  return rank;
}

static gboolean
value_is_fixed (Check *c, const GraftValue *value, char **described)
{
  GraftShape scratch = GRAFT_SHAPE_UNKNOWN;
  const GraftShape *shape = value->kind == GRAFT_VALUE_TENSOR ? value_shape (c, value, &scratch) : NULL;
  gboolean fixed = shape != NULL && graft_shape_is_fully_fixed (shape);

  if (!fixed && described != NULL)
    *described = shape != NULL ? graft_shape_to_string (shape) : g_strdup ("unknown");
  graft_shape_clear (&scratch);
  return fixed;
}

/* The position of a condition's subject among the node's inputs: a
 * number, or a name from the op's ONNX schema at the model's opset; -1
 * when the op has no such input there (Squeeze's axes before opset 13). */
static int
input_position (Check *c, GraftNode *node, const char *subject)
{
  guint64 position;
  const GraftOnnxSchema *schema;
  g_auto(GStrv) names = NULL;

  if (g_ascii_string_to_unsigned (subject, 10, 0, G_MAXINT, &position, NULL))
    return (int) position;
  schema = graft_onnx_schema_lookup (node->domain, node->op_type, graft_model_get_opset (c->model, node->domain));
  if (schema == NULL || schema->inputs == NULL)
    return -1;
  names = g_strsplit (schema->inputs, " ", -1);
  for (guint i = 0; names[i] != NULL; i++)
    {
      g_autofree char *name = g_strdup (names[i]);
      name[strcspn (name, "?.")] = '\0';
      if (strcmp (name, subject) == 0)
        return (int) i;
    }
  return -1;
}

/* The node's inputs a subject names (present ones only). */
static GPtrArray *
subject_inputs (Check *c, GraftNode *node, char **subjects)
{
  GPtrArray *inputs = g_ptr_array_new ();

  for (guint s = 0; subjects[s] != NULL; s++)
    {
      if (strcmp (subjects[s], "*") == 0)
        {
          for (guint i = 0; i < node->inputs->len; i++)
            if (g_ptr_array_index (node->inputs, i) != NULL)
              g_ptr_array_add (inputs, g_ptr_array_index (node->inputs, i));
          continue;
        }
      int position = input_position (c, node, subjects[s]);
      if (position >= 0 && (guint) position < node->inputs->len && g_ptr_array_index (node->inputs, position) != NULL)
        g_ptr_array_add (inputs, g_ptr_array_index (node->inputs, position));
    }
  return inputs;
}

/* The attribute's value as the target files spell values: ints and
 * strings plainly; the ONNX default when the node does not set it. */
static char *
attribute_text (GraftNode *node, const char *name, gint64 opset)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, name);

  if (attribute == NULL)
    {
      const GraftOnnxSchema *schema = graft_onnx_schema_lookup (node->domain, node->op_type, opset);
      const GraftOnnxAttributeSchema *entry = schema ? graft_onnx_schema_find_attribute (schema, name) : NULL;
      return entry && entry->default_text ? g_strdup (entry->default_text) : NULL;
    }
  switch (attribute->type)
    {
    case GRAFT_ATTR_INT:
    case GRAFT_ATTR_BOOL:
      return g_strdup_printf ("%" G_GINT64_FORMAT, attribute->i);
    case GRAFT_ATTR_STRING:
      return graft_attribute_dup_string (attribute);
    default:
      return graft_attribute_format_value (attribute, 16);
    }
}

static gboolean
op_has_attribute (GraftNode *node, const char *name, gint64 opset)
{
  const GraftOnnxSchema *schema = graft_onnx_schema_lookup (node->domain, node->op_type, opset);
  /* Without a schema (aten, contrib ops) an unset attribute is its default. */
  return schema == NULL || graft_onnx_schema_find_attribute (schema, name) != NULL;
}

static gboolean
output_is_used (GraftNode *node, guint index)
{
  GraftValue *value = index < node->outputs->len ? g_ptr_array_index (node->outputs, index) : NULL;
  return value != NULL && (value->is_graph_output || (value->consumers != NULL && value->consumers->len > 0));
}

/* One alternative of a condition: OK, or the reason and *why. */
static GraftSupportReason
check_alternative (Check *c, GraftNode *node, const GraftTargetCondition *condition, char **why)
{
  gint64 opset = graft_model_get_opset (c->model, node->domain);
  g_autoptr(GPtrArray) inputs = NULL;

  switch (condition->kind)
    {
    case GRAFT_CONDITION_RANK:
    case GRAFT_CONDITION_CONST:
    case GRAFT_CONDITION_STATIC:
    case GRAFT_CONDITION_DTYPE:
      inputs = subject_inputs (c, node, condition->subjects);
      for (guint i = 0; i < inputs->len; i++)
        {
          GraftValue *value = g_ptr_array_index (inputs, i);
          g_autofree char *shape = NULL;
          int rank;
          GraftDType dtype;

          switch (condition->kind)
            {
            case GRAFT_CONDITION_RANK:
              rank = value_rank (c, value);
              if (rank >= 0 && (rank < condition->min || rank > condition->max))
                {
                  *why = condition->min == condition->max
                    ? g_strdup_printf ("input '%s' has rank %d, not %" G_GINT64_FORMAT, value->name, rank, condition->min)
                    : g_strdup_printf ("input '%s' has rank %d, not %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT,
                                       value->name, rank, condition->min, condition->max);
                  return GRAFT_SUPPORT_RANK;
                }
              break;
            case GRAFT_CONDITION_CONST:
              if (!is_constant (value))
                {
                  *why = g_strdup_printf ("input '%s' is computed, not a constant", value->name);
                  return GRAFT_SUPPORT_CONSTANT_INPUT;
                }
              break;
            case GRAFT_CONDITION_STATIC:
              if (!value_is_fixed (c, value, &shape))
                {
                  *why = g_strdup_printf ("input '%s' has the dynamic shape %s", value->name, shape);
                  return GRAFT_SUPPORT_DYNAMIC_SHAPE;
                }
              break;
            default:
              dtype = value_dtype (c, value);
              if (dtype != GRAFT_DTYPE_UNDEFINED && !g_strv_contains ((const char *const *) condition->values,
                                                                     graft_dtype_to_string (dtype)))
                {
                  g_autofree char *accepted = g_strjoinv (", ", condition->values);
                  *why = g_strdup_printf ("input '%s' is %s, not %s", value->name, graft_dtype_to_string (dtype),
                                          accepted);
                  return GRAFT_SUPPORT_DTYPE;
                }
            }
        }
      return GRAFT_SUPPORT_OK;
    case GRAFT_CONDITION_ATTR:
      {
        g_autofree char *text = attribute_text (node, condition->subjects[0], opset);
        /* An attribute the op does not have at this opset (Resize's
         * keep_aspect_ratio_policy before opset 18) constrains nothing. */
        if (text == NULL && !op_has_attribute (node, condition->subjects[0], opset))
          return GRAFT_SUPPORT_OK;
        if (text == NULL || !g_strv_contains ((const char *const *) condition->values, text))
          {
            g_autofree char *accepted = g_strjoinv (" or ", condition->values);
            *why = g_strdup_printf ("%s = %s, not %s", condition->subjects[0], text ? text : "(unset)", accepted);
            return GRAFT_SUPPORT_ATTRIBUTE;
          }
        return GRAFT_SUPPORT_OK;
      }
    case GRAFT_CONDITION_ABSENT:
      if (graft_node_get_attribute (node, condition->subjects[0]) != NULL)
        {
          *why = g_strdup_printf ("attribute %s is set", condition->subjects[0]);
          return GRAFT_SUPPORT_ATTRIBUTE;
        }
      return GRAFT_SUPPORT_OK;
    case GRAFT_CONDITION_ONES:
      {
        guint n = 0;
        GraftAttribute *attribute = graft_node_get_attribute (node, condition->subjects[0]);
        for (guint i = 0; attribute != NULL && attribute->ints != NULL && i < attribute->ints->len; i++)
          n += g_array_index (attribute->ints, gint64, i) != 1;
        if (n > 0)
          {
            g_autofree char *value = graft_attribute_format_value (attribute, 8);
            *why = g_strdup_printf ("%s = %s, not all ones", condition->subjects[0], value);
            return GRAFT_SUPPORT_ATTRIBUTE;
          }
        return GRAFT_SUPPORT_OK;
      }
    case GRAFT_CONDITION_NO_OUTPUT:
      if (output_is_used (node, (guint) condition->min))
        {
          *why = g_strdup_printf ("output %" G_GINT64_FORMAT " is used", condition->min);
          return GRAFT_SUPPORT_OUTPUT;
        }
      return GRAFT_SUPPORT_OK;
    case GRAFT_CONDITION_MAX_INPUTS:
      if (node->inputs->len > (guint) condition->min)
        {
          *why = g_strdup_printf ("%u inputs, more than %" G_GINT64_FORMAT, node->inputs->len, condition->min);
          return GRAFT_SUPPORT_INPUTS;
        }
      return GRAFT_SUPPORT_OK;
    }
  return GRAFT_SUPPORT_OK;
}

/* A condition holds when one of its alternatives does; the first
 * alternative's failure is the one reported. */
static GraftSupportReason
check_condition (Check *c, GraftNode *node, const GraftTargetCondition *condition, char **why)
{
  GraftSupportReason first = GRAFT_SUPPORT_OK;

  for (const GraftTargetCondition *alternative = condition; alternative != NULL; alternative = alternative->otherwise)
    {
      g_autofree char *reason = NULL;
      GraftSupportReason result = check_alternative (c, node, alternative, &reason);
      if (result == GRAFT_SUPPORT_OK)
        {
          if (first != GRAFT_SUPPORT_OK)
            g_clear_pointer (why, g_free);
          return GRAFT_SUPPORT_OK;
        }
      if (first == GRAFT_SUPPORT_OK)
        {
          first = result;
          *why = g_steal_pointer (&reason);
        }
    }
  return first;
}

static gboolean
dtype_accepted (const GraftDeployTarget *target, GraftDType dtype)
{
  if (target->dtypes == NULL || dtype == GRAFT_DTYPE_UNDEFINED)
    return TRUE;
  for (guint i = 0; i < target->dtypes->len; i++)
    if (g_array_index (target->dtypes, GraftDType, i) == dtype)
      return TRUE;
  return FALSE;
}

/* The target-wide limits: fixed shapes, rank, dtypes. */
static GraftSupportReason
check_target_limits (Check *c, GraftNode *node, char **why)
{
  const GraftDeployTarget *target = c->target;

  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      g_autofree char *shape = NULL;
      int rank;

      if (value == NULL)
        continue;
      if (target->static_shapes && !value_is_fixed (c, value, &shape))
        {
          *why = g_strdup_printf ("input '%s' has the dynamic shape %s and %s runs only fixed shapes", value->name,
                                  shape, target->name);
          return GRAFT_SUPPORT_DYNAMIC_SHAPE;
        }
      rank = value_rank (c, value);
      if (target->max_rank > 0 && rank > target->max_rank)
        {
          *why = g_strdup_printf ("input '%s' has rank %d; %s takes at most %d", value->name, rank, target->name,
                                  target->max_rank);
          return GRAFT_SUPPORT_RANK;
        }
    }
  /* A Transpose's perm tells its rank where inference could not. */
  if (target->max_rank > 0 && node->op == g_intern_static_string ("onnx::Transpose"))
    {
      GraftAttribute *perm = graft_node_get_attribute (node, "perm");
      if (perm != NULL && perm->ints != NULL && perm->ints->len > (guint) target->max_rank)
        {
          *why = g_strdup_printf ("it transposes %u dims; %s takes at most %d", perm->ints->len, target->name,
                                  target->max_rank);
          return GRAFT_SUPPORT_RANK;
        }
    }
  for (guint pass = 0; pass < 2 && target->dtypes != NULL; pass++)
    {
      GPtrArray *values = pass == 0 ? node->inputs : node->outputs;
      for (guint i = 0; i < values->len; i++)
        {
          GraftValue *value = g_ptr_array_index (values, i);
          GraftDType dtype = value ? value_dtype (c, value) : GRAFT_DTYPE_UNDEFINED;
          if (!dtype_accepted (target, dtype))
            {
              *why = g_strdup_printf ("%s '%s' is %s, which %s has no kernels for", pass == 0 ? "input" : "output",
                                      value->name, graft_dtype_to_string (dtype), target->name);
              return GRAFT_SUPPORT_DTYPE;
            }
        }
    }
  return GRAFT_SUPPORT_OK;
}

static GraftNodeSupport *
check_node (Check *c, GraftNode *node)
{
  const GraftDeployTarget *target = c->target;
  GraftNodeSupport *support = g_new0 (GraftNodeSupport, 1);
  gint64 opset = graft_model_get_opset (c->model, node->domain);
  const GraftTargetOp *rule;
  g_autofree char *why = NULL;

  support->node = node;
  support->partition = -1;
  if (!graft_deploy_target_lists_op (target, node->op))
    {
      support->reason = GRAFT_SUPPORT_OP;
      support->message = g_strdup_printf ("%s is not in %s's operator list", node->op, target->name);
      return support;
    }
  rule = graft_deploy_target_find_op (target, node->op, opset);
  if (rule == NULL || (node->domain == g_intern_static_string ("onnx") && target->max_opset > 0
                       && (opset < target->min_opset || opset > target->max_opset)))
    {
      support->reason = GRAFT_SUPPORT_OPSET;
      support->message = g_strdup_printf ("%s takes %s only at other opsets than %" G_GINT64_FORMAT, target->name,
                                          node->op, opset);
      return support;
    }
  support->reason = check_target_limits (c, node, &why);
  if (support->reason != GRAFT_SUPPORT_OK)
    {
      support->message = g_strdup_printf ("%s on %s: %s", node->op, target->name, why);
      return support;
    }
  for (guint i = 0; support->reason == GRAFT_SUPPORT_OK && i < rule->conditions->len; i++)
    support->reason = check_condition (c, node, g_ptr_array_index (rule->conditions, i), &why);
  if (support->reason != GRAFT_SUPPORT_OK)
    support->message = rule->note != NULL
      ? g_strdup_printf ("%s on %s: %s (%s)", node->op, target->name, why, rule->note)
      : g_strdup_printf ("%s on %s: %s", node->op, target->name, why);
  return support;
}

static int
compare_node_index (gconstpointer a, gconstpointer b)
{
  const GraftNode *na = *(GraftNode **) a, *nb = *(GraftNode **) b;
  return (na->index > nb->index) - (na->index < nb->index);
}

/* The distinct counted producers of node within its graph. */
static GPtrArray *
node_producers (GraftNode *node)
{
  g_autoptr(GPtrArray) all = g_ptr_array_new ();
  g_autoptr(GPtrArray) captured = graft_node_get_captured_values (node);
  GPtrArray *distinct = g_ptr_array_new ();

  /* Its inputs, and what its If/Loop bodies read from its graph. */
  for (guint pass = 0; pass < 2; pass++)
    {
      GPtrArray *values = pass == 0 ? node->inputs : captured;
      for (guint i = 0; i < values->len; i++)
        {
          GraftValue *value = g_ptr_array_index (values, i);
          if (value != NULL && value->producer != NULL && value->graph == node->graph)
            g_ptr_array_add (all, value->producer);
        }
    }
  g_ptr_array_sort (all, compare_node_index);
  for (guint i = 0; i < all->len; i++)
    {
      GraftNode *producer = g_ptr_array_index (all, i);
      if (is_counted (producer) && (distinct->len == 0 || g_ptr_array_index (distinct, distinct->len - 1) != producer))
        g_ptr_array_add (distinct, producer);
    }
  return distinct;
}

static gboolean
in_partition (GHashTable *partition_of, GraftNode *node, int index)
{
  gpointer found;
  return g_hash_table_lookup_extended (partition_of, node, NULL, &found) && GPOINTER_TO_INT (found) == index;
}

static void
add_unique (GPtrArray *values, GraftValue *value)
{
  if (!g_ptr_array_find (values, value, NULL))
    g_ptr_array_add (values, value);
}

/* Where data crosses a partition's border. */
static void
find_boundaries (GraftPartition *partition, GHashTable *partition_of)
{
  for (guint i = 0; i < partition->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (partition->nodes, i);

      for (guint k = 0; k < node->inputs->len; k++)
        {
          GraftValue *value = g_ptr_array_index (node->inputs, k);
          if (value != NULL && !is_constant (value)
              && (value->producer == NULL || !in_partition (partition_of, value->producer, partition->index)))
            add_unique (partition->inputs, value);
        }
      for (guint k = 0; k < node->outputs->len; k++)
        {
          GraftValue *value = g_ptr_array_index (node->outputs, k);
          gboolean leaves = value != NULL && value->is_graph_output;

          for (guint u = 0; value != NULL && value->consumers != NULL && u < value->consumers->len && !leaves; u++)
            leaves = !in_partition (partition_of, g_ptr_array_index (value->consumers, u), partition->index);
          if (leaves)
            add_unique (partition->outputs, value);
        }
    }
}

/* onnxruntime's grouping (see the header) over one graph's counted nodes. */
static void
partition_graph (Check *c, GraftGraph *graph, GHashTable *partition_of)
{
  GraftTargetReport *report = c->report;
  g_autoptr(GHashTable) in_degree = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) consumers = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  g_autoptr(GQueue) ready = g_queue_new ();
  g_autoptr(GQueue) next_ready = g_queue_new ();
  g_autoptr(GHashTable) border = g_hash_table_new (NULL, NULL);
  GraftPartition *open = NULL;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autoptr(GPtrArray) producers = NULL;

      if (!is_counted (node))
        continue;
      producers = node_producers (node);
      g_hash_table_insert (in_degree, node, GUINT_TO_POINTER (producers->len));
      if (producers->len == 0)
        g_queue_push_tail (ready, node);
      for (guint k = 0; k < producers->len; k++)
        {
          GPtrArray *list = g_hash_table_lookup (consumers, g_ptr_array_index (producers, k));
          if (list == NULL)
            {
              list = g_ptr_array_new ();
              g_hash_table_insert (consumers, g_ptr_array_index (producers, k), list);
            }
          g_ptr_array_add (list, node);
        }
    }

  while (!g_queue_is_empty (ready) || !g_queue_is_empty (next_ready))
    {
      GraftNode *node;
      GraftNodeSupport *support;
      GPtrArray *out;

      if (g_queue_is_empty (ready))
        {
          /* Nothing else can join the open partition: close it. */
          open = NULL;
          g_hash_table_remove_all (border);
          while (!g_queue_is_empty (next_ready))
            g_queue_push_tail (ready, g_queue_pop_head (next_ready));
          continue;
        }
      node = g_queue_pop_head (ready);
      support = g_hash_table_lookup (report->by_node, node);
      if (support->reason != GRAFT_SUPPORT_OK && g_hash_table_contains (border, node))
        {
          /* It reads the open partition: it runs after that partition. */
          g_queue_push_tail (next_ready, node);
          continue;
        }
      if (support->reason == GRAFT_SUPPORT_OK)
        {
          if (open == NULL)
            {
              open = g_new0 (GraftPartition, 1);
              open->index = report->partitions->len;
              open->graph = graph;
              open->nodes = g_ptr_array_new ();
              open->inputs = g_ptr_array_new ();
              open->outputs = g_ptr_array_new ();
              g_ptr_array_add (report->partitions, open);
            }
          g_ptr_array_add (open->nodes, node);
          support->partition = (int) open->index;
          g_hash_table_insert (partition_of, node, GINT_TO_POINTER (open->index));
          g_hash_table_remove (border, node);
          out = g_hash_table_lookup (consumers, node);
          for (guint k = 0; out != NULL && k < out->len; k++)
            g_hash_table_add (border, g_ptr_array_index (out, k));
        }
      out = g_hash_table_lookup (consumers, node);
      for (guint k = 0; out != NULL && k < out->len; k++)
        {
          GraftNode *consumer = g_ptr_array_index (out, k);
          guint degree = GPOINTER_TO_UINT (g_hash_table_lookup (in_degree, consumer)) - 1;
          g_hash_table_insert (in_degree, consumer, GUINT_TO_POINTER (degree));
          if (degree == 0)
            g_queue_push_tail (ready, consumer);
        }
    }
}

static void
check_graph (Check *c, GraftGraph *graph, GHashTable *partition_of)
{
  GraftTargetReport *report = c->report;
  guint first_partition = report->partitions->len;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftNodeSupport *support;

      if (!is_counted (node))
        continue;
      support = check_node (c, node);
      g_ptr_array_add (report->nodes, support);
      g_hash_table_insert (report->by_node, node, support);
      report->n_nodes++;
      report->n_supported += support->reason == GRAFT_SUPPORT_OK;
    }
  partition_graph (c, graph, partition_of);
  for (guint i = first_partition; i < report->partitions->len; i++)
    find_boundaries (g_ptr_array_index (report->partitions, i), partition_of);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (g_ptr_array_index (graph->nodes, i));
      for (guint b = 0; bodies != NULL && b < bodies->len; b++)
        check_graph (c, g_ptr_array_index (bodies, b), partition_of);
    }
}

GraftTargetReport *
graft_target_check (GraftModel *model, const GraftDeployTarget *target, GraftInference *inference, GError **error)
{
  GraftModelFormat format = graft_model_get_format (model);
  gboolean aten = format == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM || format == GRAFT_MODEL_FORMAT_TORCHSCRIPT;
  g_autoptr(GraftInference) own = NULL;
  g_autoptr(GHashTable) partition_of = g_hash_table_new (NULL, NULL);
  GraftTargetReport *report;
  Check c;

  if (graft_model_get_graph (model) == NULL || aten != (target->graph == GRAFT_TARGET_GRAPH_ATEN))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   target->graph == GRAFT_TARGET_GRAPH_ATEN
                   ? "%s reads torch.export programs (.pt2), not this model: export the PyTorch module with "
                     "torch.export.export and open the .pt2"
                   : "%s reads ONNX models, not this one: convert it first (graft-cli convert, or "
                     "torch.onnx.export)",
                   target->name);
      return NULL;
    }
  if (inference == NULL)
    inference = own = graft_shape_inference_run (model, NULL);
  report = g_new0 (GraftTargetReport, 1);
  report->target = target;
  report->nodes = g_ptr_array_new_with_free_func ((GDestroyNotify) node_support_free);
  report->by_node = g_hash_table_new (NULL, NULL);
  report->partitions = g_ptr_array_new_with_free_func ((GDestroyNotify) partition_free);
  c = (Check) { model, target, inference, report };
  check_graph (&c, graft_model_get_graph (model), partition_of);
  return report;
}

const GraftNodeSupport *
graft_target_report_lookup (const GraftTargetReport *report, const GraftNode *node)
{
  return g_hash_table_lookup (report->by_node, node);
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char **) a, *(const char **) b);
}

GPtrArray *
graft_target_report_unsupported_ops (const GraftTargetReport *report)
{
  GPtrArray *ops = g_ptr_array_new ();

  for (guint i = 0; i < report->nodes->len; i++)
    {
      GraftNodeSupport *support = g_ptr_array_index (report->nodes, i);
      if (support->reason != GRAFT_SUPPORT_OK && !g_ptr_array_find (ops, support->node->op, NULL))
        g_ptr_array_add (ops, (gpointer) support->node->op);
    }
  g_ptr_array_sort (ops, compare_strings);
  return ops;
}

char *
graft_target_report_summary (const GraftTargetReport *report)
{
  g_autoptr(GPtrArray) ops = graft_target_report_unsupported_ops (report);
  GString *out = g_string_new (NULL);
  guint n = report->partitions->len;

  g_string_append_printf (out, "%u partition%s, %u/%u nodes on %s", n, n == 1 ? "" : "s", report->n_supported,
                          report->n_nodes, report->target->name);
  for (guint i = 0; i < ops->len && i < 3; i++)
    {
      const char *op = g_ptr_array_index (ops, i);
      const char *colons = strstr (op, "::");
      const char *shown = colons && g_str_has_prefix (op, "onnx::") ? colons + 2 : op;
      g_string_append_printf (out, "%s%s", i == 0 ? "; " : ", ", shown);
    }
  if (ops->len > 3)
    g_string_append_printf (out, " and %u more", ops->len - 3);
  if (ops->len > 0)
    g_string_append (out, report->target->host_fallback ? (ops->len == 1 ? " falls back" : " fall back")
                                                        : (ops->len == 1 ? " is not supported" : " are not supported"));
  return g_string_free (out, FALSE);
}
