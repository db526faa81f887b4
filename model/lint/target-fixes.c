/* The fixes a deployment target's report offers (target-fixes.h): one
 * table of rules, each proposing operations of the edit table for the
 * model as the fixes before it left it. */
#include "lint/target-fixes.h"

#include <string.h>

#include "edit/edit-operation.h"
#include "ir/graph-copy.h"

/* What a rule sees: the model after the fixes kept so far, its inference
 * and the target's verdicts on it. */
typedef struct {
  GraftModel *model;
  GraftInference *inference;
  GraftTargetReport *report;
  GHashTable *dim_sizes;
} Proposal;

/* Adds the operations that fix what the rule fixes to operations and
 * returns the title, or NULL when the rule has nothing to offer. */
typedef char *(*ProposeFunc) (Proposal *proposal, GPtrArray *operations);

static void
add_operation (GPtrArray *operations, const char *id, GVariant *params)
{
  g_ptr_array_add (operations, g_variant_ref_sink (g_variant_new ("(s@a{sv})", id, params)));
}

static guint
count_unsupported (const GraftTargetReport *report)
{
  return report->n_nodes - report->n_supported;
}

static gboolean
any_unsupported_because (const GraftTargetReport *report, GraftSupportReason reason)
{
  for (guint i = 0; i < report->nodes->len; i++)
    if (((GraftNodeSupport *) g_ptr_array_index (report->nodes, i))->reason == reason)
      return TRUE;
  return FALSE;
}

static GraftDType
value_dtype (Proposal *proposal, const GraftValue *value)
{
  GraftDType dtype = graft_inference_get_dtype (proposal->inference, value);

  return dtype != GRAFT_DTYPE_UNDEFINED ? dtype : value->dtype;
}

/* ---------- static-shapes: every symbolic input dim fixed ---------- */

static char *
propose_static_shapes (Proposal *proposal, GPtrArray *operations)
{
  GraftGraph *graph = graft_model_get_graph (proposal->model);
  g_autoptr(GString) title = g_string_new ("Fix the dynamic input dims:");
  g_autoptr(GHashTable) named = g_hash_table_new (g_str_hash, g_str_equal);

  if (!any_unsupported_because (proposal->report, GRAFT_SUPPORT_DYNAMIC_SHAPE))
    return NULL;
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      g_autoptr(GArray) dims = NULL;
      g_autoptr(GString) sizes = g_string_new (NULL);

      if (input->initializer != NULL || input->kind != GRAFT_VALUE_TENSOR || input->shape.rank <= 0
          || graft_shape_is_fully_fixed (&input->shape))
        continue;
      dims = g_array_sized_new (FALSE, FALSE, sizeof (gint64), input->shape.rank);
      for (int axis = 0; axis < input->shape.rank; axis++)
        {
          const GraftDim *dim = &input->shape.dims[axis];
          const gint64 *given = dim->kind == GRAFT_DIM_SYMBOLIC && proposal->dim_sizes != NULL
                                  ? g_hash_table_lookup (proposal->dim_sizes, dim->symbol) : NULL;
          gint64 size = dim->kind == GRAFT_DIM_FIXED ? dim->value : given != NULL ? *given : 1;

          g_array_append_val (dims, size);
          g_string_append_printf (sizes, "%s%" G_GINT64_FORMAT, axis ? "×" : "", size);
          if (dim->kind == GRAFT_DIM_SYMBOLIC && !g_hash_table_contains (named, dim->symbol))
            g_hash_table_add (named, (gpointer) dim->symbol);
        }
      g_string_append_printf (title, "%s %s %s", operations->len ? "," : "", input->name, sizes->str);
      add_operation (operations, "set-input-shape",
                     graft_edit_params_new ("input", g_variant_new_string (input->name),
                                            "dims", g_variant_new_fixed_array (G_VARIANT_TYPE_INT64, dims->data,
                                                                               dims->len, sizeof (gint64)),
                                            NULL));
    }
  if (operations->len == 0)
    return NULL;
  if (g_hash_table_size (named) > 0)
    {
      g_autofree const char **symbols = (const char **) g_hash_table_get_keys_as_array (named, NULL);
      guint n = g_hash_table_size (named);

      g_string_append (title, " (");
      for (guint i = 0; i < n; i++)
        {
          const gint64 *given = proposal->dim_sizes ? g_hash_table_lookup (proposal->dim_sizes, symbols[i]) : NULL;
          g_string_append_printf (title, "%s%s=%" G_GINT64_FORMAT, i ? ", " : "", symbols[i], given ? *given : 1);
        }
      g_string_append (title, ")");
    }
  return g_string_free (g_steal_pointer (&title), FALSE);
}

/* ---------- fold-constants: shape math with fixed shapes becomes constants ---------- */

static char *
propose_fold (Proposal *proposal, GPtrArray *operations)
{
  add_operation (operations, "fold-constants", graft_edit_params_new (NULL, NULL));
  add_operation (operations, "cleanup", graft_edit_params_new (NULL, NULL));
  return g_strdup ("Fold constants and clean up");
}

/* ---------- int32-indices: a Cast to int32 before computed int64 indices ---------- */

static gboolean
is_constant (const GraftValue *value)
{
  return value->initializer != NULL || (value->producer != NULL && strcmp (value->producer->op, "onnx::Constant") == 0);
}

/* Index inputs: an int64 index fits int32 whenever the indexed dim does,
 * so the cast keeps every valid index. */
static int
index_input (const GraftNode *node)
{
  static const char *const ops[] = { "onnx::Gather", "onnx::GatherElements", "onnx::GatherND", NULL };

  return g_strv_contains (ops, node->op) ? 1 : -1;
}

static char *
propose_int32_indices (Proposal *proposal, GPtrArray *operations)
{
  GraftGraph *graph = graft_model_get_graph (proposal->model);
  guint n = 0;

  for (guint i = 0; i < proposal->report->nodes->len; i++)
    {
      GraftNodeSupport *support = g_ptr_array_index (proposal->report->nodes, i);
      int position = index_input (support->node);
      GraftValue *indices;

      if (support->reason == GRAFT_SUPPORT_OK || support->node->graph != graph || position < 0
          || (guint) position >= support->node->inputs->len || *support->node->name == '\0')
        continue;
      indices = g_ptr_array_index (support->node->inputs, position);
      if (indices == NULL || is_constant (indices) || value_dtype (proposal, indices) != GRAFT_DTYPE_INT64)
        continue;
      add_operation (operations, "insert-node",
                     graft_edit_params_new ("value", g_variant_new_string (indices->name),
                                            "consumer", g_variant_new_string (support->node->name),
                                            "op", g_variant_new_string ("Cast"),
                                            "attributes", g_variant_new_strv ((const char *[]) { "to=6" }, 1),
                                            NULL));
      n++;
    }
  return n > 0 ? g_strdup_printf ("Cast the int64 indices of %u node%s to int32", n, n == 1 ? "" : "s") : NULL;
}

/* ---------- decompositions: an op into ops the target has ---------- */

/* The op's nodes in the main graph, by the text of the attributes named
 * (absent ones as ""), each group in node order; FALSE when a node cannot
 * be decomposed (eligible says why not). */
typedef gboolean (*EligibleFunc) (Proposal *proposal, GraftNode *node);

static char *
attribute_text (GraftNode *node, const char *name)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, name);

  return attribute ? graft_attribute_format_value (attribute, G_MAXUINT) : g_strdup ("");
}

static gboolean
single_float32_output (Proposal *proposal, GraftNode *node, guint n_inputs)
{
  if (node->inputs->len != n_inputs || node->outputs->len != 1)
    return FALSE;
  for (guint i = 0; i < n_inputs; i++)
    if (g_ptr_array_index (node->inputs, i) == NULL)
      return FALSE;
  return value_dtype (proposal, g_ptr_array_index (node->inputs, 0)) == GRAFT_DTYPE_FLOAT32;
}

static gboolean
layer_norm_eligible (Proposal *proposal, GraftNode *node)
{
  GraftAttribute *axis = graft_node_get_attribute (node, "axis");
  const GraftShape *shape;

  if (!single_float32_output (proposal, node, 3))
    return FALSE;
  if (axis == NULL || axis->i == -1)
    return TRUE;
  /* The last axis written as a position. */
  shape = graft_value_get_best_shape (g_ptr_array_index (node->inputs, 0), proposal->inference);
  return shape != NULL && shape->rank > 0 && axis->i == shape->rank - 1;
}

/* ReduceMean over the last axis; it takes its axes as an input (the step
 * ax) from opset 18. */
static char *
reduce_mean_last_axis (gboolean axes_input, const char *input)
{
  if (axes_input)
    return g_strdup_printf ("ReduceMean(%s,ax)", input);
  return g_strdup_printf ("ReduceMean(%s);axes=[-1]", input);
}

/* A replacement step list reading the pattern's x, s, b for one
 * (axis, epsilon). */
static char *
layer_norm_replacement (gint64 opset, const char *epsilon)
{
  gboolean axes_input = opset >= 18;
  g_autofree char *mean = reduce_mean_last_axis (axes_input, "x");
  g_autofree char *variance = reduce_mean_last_axis (axes_input, "q");

  return g_strdup_printf ("%sm=%s d=Sub(x,m) q=Mul(d,d) v=%s e=Constant();value_float=%s a=Add(v,e) r=Sqrt(a) "
                          "n=Div(d,r) k=Mul(n,s) Add(k,b)",
                          axes_input ? "ax=Constant();value_ints=[-1] " : "", mean, variance,
                          *epsilon ? epsilon : "1e-05");
}

static char *
propose_layer_norm (Proposal *proposal, GPtrArray *operations)
{
  GraftGraph *graph = graft_model_get_graph (proposal->model);
  gint64 opset = graft_model_get_opset (proposal->model, "onnx");
  /* "axis\nepsilon" → TRUE when every node of the group can be decomposed */
  g_autoptr(GHashTable) groups = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) order = g_ptr_array_new ();
  gboolean any_refused = FALSE;
  guint n_nodes = 0;

  if (opset < 17)
    return NULL;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autofree char *axis = NULL, *epsilon = NULL;
      char *key;
      gboolean eligible;

      if (strcmp (node->op, "onnx::LayerNormalization") != 0)
        continue;
      axis = attribute_text (node, "axis");
      epsilon = attribute_text (node, "epsilon");
      key = g_strdup_printf ("%s\n%s", axis, epsilon);
      eligible = layer_norm_eligible (proposal, node);
      any_refused |= !eligible;
      n_nodes++;
      if (!g_hash_table_contains (groups, key))
        {
          g_ptr_array_add (order, key);
          g_hash_table_insert (groups, key, GINT_TO_POINTER (eligible));
        }
      else
        {
          if (!eligible)
            g_hash_table_insert (groups, g_strdup (key), GINT_TO_POINTER (FALSE));
          g_free (key);
        }
    }
  /* A pattern without an attribute matches nodes with any value of it:
   * groups naming both attributes go first, and the others only when no
   * node is left alone (it would be caught by them). */
  for (int explicit = 2; explicit >= 0; explicit--)
    for (guint i = 0; i < order->len; i++)
      {
        const char *key = g_ptr_array_index (order, i);
        g_auto(GStrv) parts = g_strsplit (key, "\n", 2);
        g_autoptr(GString) pattern = g_string_new ("LayerNormalization(x,s,b)");
        g_autofree char *replacement = NULL;

        if ((*parts[0] != '\0') + (*parts[1] != '\0') != explicit || !g_hash_table_lookup (groups, key)
            || (explicit < 2 && any_refused))
          continue;
        if (*parts[0] != '\0')
          g_string_append_printf (pattern, ";axis=%s", parts[0]);
        if (*parts[1] != '\0')
          g_string_append_printf (pattern, ";epsilon=%s", parts[1]);
        replacement = layer_norm_replacement (opset, parts[1]);
        add_operation (operations, "replace-pattern",
                       graft_edit_params_new ("pattern", g_variant_new_string (pattern->str),
                                              "replacement", g_variant_new_string (replacement),
                                              "subgraphs", g_variant_new_boolean (FALSE), NULL));
      }
  if (operations->len == 0)
    return NULL;
  return g_strdup_printf ("Decompose LayerNormalization into ReduceMean, Sub, Mul, Add, Sqrt, Div (%u node%s)",
                          n_nodes, n_nodes == 1 ? "" : "s");
}

/* erf(x) = sign(x) (1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-x²)),
 * t = 1 / (1 + p |x|): Abramowitz and Stegun 7.1.26, |error| ≤ 1.5e-7;
 * computed in float32, 3.4e-7 at most from -6 to 6 (a few float32 steps
 * near 1; tests/analysis/check-target-fixes.py). sign(x) is x scaled far
 * beyond 1 and clipped, which is exact at 0 and ±inf. */
static const char erf_replacement[] =
  "p=Constant();value_float=0.3275911 o=Constant();value_float=1 z=Constant();value_float=-1 "
  "c1=Constant();value_float=0.254829592 c2=Constant();value_float=-0.284496736 "
  "c3=Constant();value_float=1.421413741 c4=Constant();value_float=-1.453152027 "
  "c5=Constant();value_float=1.061405429 big=Constant();value_float=1e30 "
  "a=Abs(x) pa=Mul(a,p) den=Add(pa,o) t=Div(o,den) "
  "h5=Mul(t,c5) h4=Add(h5,c4) g4=Mul(t,h4) h3=Add(g4,c3) g3=Mul(t,h3) h2=Add(g3,c2) g2=Mul(t,h2) "
  "h1=Add(g2,c1) g1=Mul(t,h1) sq=Mul(x,x) ng=Neg(sq) ex=Exp(ng) pe=Mul(g1,ex) y=Sub(o,pe) "
  "sc=Mul(x,big) sg=Clip(sc,z,o) Mul(sg,y)";

static char *
propose_erf (Proposal *proposal, GPtrArray *operations)
{
  GraftGraph *graph = graft_model_get_graph (proposal->model);
  guint n_nodes = 0;

  if (graft_model_get_opset (proposal->model, "onnx") < 12)   /* Clip's bounds as inputs, Constant's value_float */
    return NULL;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (strcmp (node->op, "onnx::Erf") != 0)
        continue;
      if (!single_float32_output (proposal, node, 1))
        return NULL;
      n_nodes++;
    }
  if (n_nodes == 0)
    return NULL;
  add_operation (operations, "replace-pattern",
                 graft_edit_params_new ("pattern", g_variant_new_string ("Erf(x)"),
                                        "replacement", g_variant_new_string (erf_replacement),
                                        "subgraphs", g_variant_new_boolean (FALSE), NULL));
  return g_strdup_printf ("Compute Erf from Abs, Mul, Add, Div, Exp, Clip (%u node%s; |error| < 4e-7)", n_nodes,
                          n_nodes == 1 ? "" : "s");
}

/* ---------- the table ---------- */

static const struct {
  const char *id;
  ProposeFunc propose;
} rules[] = {
  { "static-shapes", propose_static_shapes },
  { "fold-constants", propose_fold },
  { "int32-indices", propose_int32_indices },
  { "decompose-layer-normalization", propose_layer_norm },
  { "decompose-erf", propose_erf },
};

static void
target_fix_free (GraftTargetFix *fix)
{
  g_free (fix->title);
  g_ptr_array_unref (fix->operations);
  g_free (fix);
}

void
graft_target_fix_plan_free (GraftTargetFixPlan *plan)
{
  if (plan == NULL)
    return;
  g_ptr_array_unref (plan->fixes);
  g_free (plan);
}

GPtrArray *
graft_target_fix_new_edits (const GraftTargetFix *fix, GError **error)
{
  g_autoptr(GPtrArray) edits = g_ptr_array_new_with_free_func (g_object_unref);

  for (guint i = 0; i < fix->operations->len; i++)
    {
      const char *id;
      g_autoptr(GVariant) params = NULL;
      GraftEdit *edit;

      g_variant_get (g_ptr_array_index (fix->operations, i), "(&s@a{sv})", &id, &params);
      if ((edit = graft_edit_new_operation (id, params, error)) == NULL)
        return NULL;
      g_ptr_array_add (edits, edit);
    }
  return g_steal_pointer (&edits);
}

/* The fix's edits applied to a copy of model, or NULL when one fails. */
static GraftModel *
apply_to_copy (GraftModel *model, const GraftTargetFix *fix)
{
  g_autoptr(GraftModel) copy = graft_model_copy (model);
  g_autoptr(GPtrArray) edits = graft_target_fix_new_edits (fix, NULL);

  for (guint i = 0; edits != NULL && i < edits->len; i++)
    if (!graft_edit_apply (g_ptr_array_index (edits, i), copy, NULL))
      return NULL;
  return edits != NULL ? g_steal_pointer (&copy) : NULL;
}

GraftTargetFixPlan *
graft_target_fix_plan_new (GraftModel *model, const GraftDeployTarget *target, GHashTable *dim_sizes, GError **error)
{
  g_autoptr(GraftInference) inference = graft_shape_inference_run (model, NULL);
  g_autoptr(GraftTargetReport) report = graft_target_check (model, target, inference, error);
  /* Copies share tensors with the model they were made from: all are
   * kept until the plan is made. */
  g_autoptr(GPtrArray) copies = g_ptr_array_new_with_free_func (g_object_unref);
  GraftModel *current = model;
  GraftTargetFixPlan *plan;

  if (report == NULL)
    return NULL;
  plan = g_new0 (GraftTargetFixPlan, 1);
  plan->target = target;
  plan->fixes = g_ptr_array_new_with_free_func ((GDestroyNotify) target_fix_free);
  plan->nodes_before = report->n_nodes;
  plan->supported_before = report->n_supported;
  plan->partitions_before = report->partitions->len;
  for (guint r = 0; r < G_N_ELEMENTS (rules) && count_unsupported (report) > 0; r++)
    {
      Proposal proposal = { current, inference, report, dim_sizes };
      GraftTargetFix *fix = g_new0 (GraftTargetFix, 1);
      g_autoptr(GraftModel) trial = NULL;
      g_autoptr(GraftInference) trial_inference = NULL;
      g_autoptr(GraftTargetReport) trial_report = NULL;

      fix->id = rules[r].id;
      fix->operations = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
      fix->title = rules[r].propose (&proposal, fix->operations);
      if (fix->title != NULL && (trial = apply_to_copy (current, fix)) != NULL)
        {
          trial_inference = graft_shape_inference_run (trial, NULL);
          trial_report = graft_target_check (trial, target, trial_inference, NULL);
        }
      if (trial_report == NULL || count_unsupported (trial_report) >= count_unsupported (report))
        {
          target_fix_free (fix);
          continue;
        }
      fix->unsupported_before = count_unsupported (report);
      fix->unsupported_after = count_unsupported (trial_report);
      fix->partitions_before = report->partitions->len;
      fix->partitions_after = trial_report->partitions->len;
      g_ptr_array_add (plan->fixes, fix);
      current = trial;
      g_ptr_array_add (copies, g_steal_pointer (&trial));
      g_clear_pointer (&inference, graft_inference_unref);
      inference = g_steal_pointer (&trial_inference);
      g_clear_pointer (&report, graft_target_report_free);
      report = g_steal_pointer (&trial_report);
    }
  plan->nodes_after = report->n_nodes;
  plan->supported_after = report->n_supported;
  plan->partitions_after = report->partitions->len;
  return plan;
}

char *
graft_target_fix_plan_summary (const GraftTargetFixPlan *plan)
{
  if (plan->fixes->len == 0)
    return g_strdup_printf ("no fix known for what %s rejects", plan->target->name);
  return g_strdup_printf ("%u fix%s: %u → %u partition%s, %u/%u → %u/%u nodes on %s", plan->fixes->len,
                          plan->fixes->len == 1 ? "" : "es", plan->partitions_before, plan->partitions_after,
                          plan->partitions_after == 1 ? "" : "s", plan->supported_before, plan->nodes_before,
                          plan->supported_after, plan->nodes_after, plan->target->name);
}
