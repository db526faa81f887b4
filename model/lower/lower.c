/* The lowering driver: finds each node's row in the family tables, walks
 * graphs and bodies, and makes the ONNX model's inputs, outputs and names. */
#include "lower/lower-private.h"

#include <string.h>
#include "ir/model-error.h"
#include "graft-config.h"
#include "ir/graph-surgery.h"

#define GRAFT_LOWER_FAMILY(family) extern const GraftLowering graft_lowerings_##family[];
#include "lower/lower-families.h"
#undef GRAFT_LOWER_FAMILY

static const GraftLowering *const families[] = {
#define GRAFT_LOWER_FAMILY(family) graft_lowerings_##family,
#include "lower/lower-families.h"
#undef GRAFT_LOWER_FAMILY
};

/* The custom domain of ops written with --allow-custom: Graft's runtime
 * runs "aten::" nodes, so the domain is "aten" itself. */
#define CUSTOM_DOMAIN "aten"

gint64
graft_lower_max_opset (void)
{
  gint64 max = GRAFT_LOWER_DEFAULT_OPSET;
  g_autoptr(GPtrArray) all = graft_op_registry_list ();
  for (guint i = 0; i < all->len; i++)
    {
      const GraftOpSchema *s = all->pdata[i];
      if (g_str_has_prefix (s->name, "onnx::"))
        max = MAX (max, s->since);
    }
  return max;
}

/* Rows by op; the row with the highest `since` not above opset wins. */
static const GraftLowering *
lookup_row (const char *op, gint64 opset)
{
  const GraftLowering *best = NULL;
  for (gsize f = 0; f < G_N_ELEMENTS (families); f++)
    for (const GraftLowering *row = families[f]; row->op != NULL; row++)
      if (strcmp (row->op, op) == 0 && row->since <= opset && (best == NULL || row->since > best->since))
        best = row;
  return best;
}

const GraftLowering *
_graft_lower_row (const char *op, gint64 opset)
{
  return lookup_row (op, opset);
}

static const GraftLowering *
lookup_any_opset (const char *op)
{
  for (gsize f = 0; f < G_N_ELEMENTS (families); f++)
    for (const GraftLowering *row = families[f]; row->op != NULL; row++)
      if (strcmp (row->op, op) == 0)
        return row;
  return NULL;
}

void
graft_lower_problem_free (GraftLowerProblem *problem)
{
  g_free (problem->node_name);
  g_free (problem->schema);
  g_free (problem->help);
  g_free (problem);
}

static GraftLowerProblem *
problem_new (GraftNode *node, gint64 opset)
{
  GraftLowerProblem *p = g_new0 (GraftLowerProblem, 1);
  const GraftLowering *any = lookup_any_opset (node->op);
  p->node = node;
  p->node_name = g_strdup (node->name);
  if (any != NULL && any->arguments != NULL)
    {
      g_auto(GStrv) names = g_strsplit (any->arguments, " ", -1);
      g_autofree char *joined = g_strjoinv (", ", names);
      p->schema = g_strdup_printf ("%s(%s)", node->op, joined);
    }
  else
    p->schema = g_strdup (node->op);
  if (any != NULL && any->since > opset)
    p->help = g_strdup_printf ("it lowers at opset %d and later (--opset %d)", any->since, any->since);
  else if (node->domain == g_intern_static_string ("aten") || node->domain == g_intern_static_string ("prim"))
    p->help = g_strdup ("no ONNX lowering yet: --allow-custom writes it as a node of the \"" CUSTOM_DOMAIN "\" "
                        "domain that Graft's runtime runs, or rewrite the module with ops that lower");
  else
    p->help = g_strdup ("not an aten:: op; nothing in ONNX stands for it");
  return p;
}

static void
collect_unsupported (GraftGraph *graph, gint64 opset, GPtrArray *problems)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (lookup_row (node->op, opset) == NULL)
        g_ptr_array_add (problems, problem_new (node, opset));
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (node);
      for (guint j = 0; j < bodies->len; j++)
        collect_unsupported (bodies->pdata[j], opset, problems);
    }
}

static GraftModel *lower_model (GraftModel *model, const GraftLowerOptions *options, gboolean check,
                                GPtrArray **problems, GError **error);

GPtrArray *
graft_lower_find_unsupported (GraftModel *model, gint64 opset, const GraftLowerOptions *options)
{
  GraftLowerOptions trial = { 0 };
  GPtrArray *problems = NULL;
  if (options != NULL)
    trial = *options;
  trial.opset = opset;
  trial.allow_custom = TRUE;
  /* A trial conversion names exactly the ops it reaches (checks a
   * scripted module makes fold away with the shapes); when it stops for
   * another reason, every op of the graph without a lowering is named. */
  g_autoptr(GraftModel) converted = lower_model (model, &trial, FALSE, &problems, NULL);
  if (converted != NULL)
    return problems;
  g_clear_pointer (&problems, g_ptr_array_unref);
  problems = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_problem_free);
  GraftGraph *graph = graft_model_get_graph (model);
  if (graph != NULL)
    collect_unsupported (graph, opset, problems);
  return problems;
}

/* "layer1.0.conv1" → "/layer1/0/conv1": each group's own name, as the
 * group tree shows it. */
static char *
scope_of (GraftNode *node)
{
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (GraftGroup *g = node->group; g != NULL && g->parent != NULL; g = g->parent)
    g_ptr_array_insert (parts, 0, g->name);
  GString *scope = g_string_new (NULL);
  for (guint i = 0; i < parts->len; i++)
    g_string_append_printf (scope, "/%s", (char *) parts->pdata[i]);
  return g_string_free (scope, FALSE);
}

/* With --allow-custom: the node as it is, in the custom domain, with its
 * constant arguments as attributes (ONNX has no BOOL or NONE attribute
 * types: bools become ints and Nones are left out, as the runtime reads
 * an absent argument as None). */
static gboolean
lower_custom (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  /* the inputs first: nodes they need come before the custom node */
  g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *source = g_ptr_array_index (node->inputs, i);
      LowerValue *v = source ? graft_lower_lookup (ctx, source) : NULL;
      GraftValue *t = NULL;
      if (v != NULL && v->kind == LOWER_TENSOR)
        t = v->value;
      else if (v != NULL && v->kind == LOWER_CONST && (t = graft_lower_const_attribute (ctx, v->constant, error)) == NULL)
        return FALSE;
      else if (v != NULL && v->kind == LOWER_LIST)
        {
          /* an int list (a pad list computed from sizes) as an int64 vector, as the runtime reads it */
          g_autoptr(GError) not_ints = NULL;
          if ((t = graft_lower_int_vector (ctx, node, i, v, &not_ints)) == NULL)
            return graft_lower_fail (error, node, "a list argument other than ints cannot be passed to a "
                                     "custom-domain node");
        }
      else if (v != NULL && v->kind == LOWER_SEQUENCE)
        return graft_lower_fail (error, node, "a list grown at run time cannot be passed to a custom-domain node");
      g_ptr_array_add (inputs, t);
    }
  GraftNode *custom = _graft_lower_custom_node (ctx, CUSTOM_DOMAIN, node->op_type, node->outputs->len);
  for (guint i = 0; i < inputs->len; i++)
    graft_node_add_input (custom, inputs->pdata[i]);
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *a = g_ptr_array_index (node->attributes, i);
      if (a->type == GRAFT_ATTR_NONE || a->type == GRAFT_ATTR_GRAPH || a->type == GRAFT_ATTR_GRAPHS)
        continue;
      LowerValue *copy = graft_lower_value_const (a);
      GraftAttribute *attr = g_steal_pointer (&copy->constant);
      graft_lower_value_free (copy);
      if (attr->type == GRAFT_ATTR_BOOL)
        attr->type = GRAFT_ATTR_INT;
      graft_node_add_attribute (custom, attr);
    }
  graft_lower_finish (ctx, custom);
  /* Where the runtime's kernel has no shape logic, an aten op's result
   * mostly keeps its first input's dtype (what a Python number next to it
   * then takes). */
  GraftValue *first = custom->inputs->len > 0 ? g_ptr_array_index (custom->inputs, 0) : NULL;
  for (guint k = 0; first != NULL && k < custom->outputs->len; k++)
    {
      GraftValue *out = g_ptr_array_index (custom->outputs, k);
      GraftShape guess = { -1, NULL };
      /* Without --allow-custom the file is not written: the first input's
       * rank lets the conversion go on to name every other such op. */
      if (!ctx->allow_custom)
        graft_shape_init (&guess, graft_lower_rank (ctx, first));
      if (graft_lower_dtype (ctx, out) == GRAFT_DTYPE_UNDEFINED || graft_lower_rank (ctx, out) < 0)
        _graft_lower_declare_type (ctx, out, graft_lower_dtype (ctx, first), &guess);
      graft_shape_clear (&guess);
    }
  for (guint k = 0; k < node->outputs->len; k++)
    graft_lower_set_output (ctx, node, k, g_ptr_array_index (custom->outputs, k));
  return TRUE;
}

static gboolean lower_node (GraftLowerContext *ctx, GraftNode *node, GError **error);

/* The builder may place a constant after the loop that reads it: lower
 * such a producer first. */
static gboolean
lower_late_producers (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (node->inputs, i);
      if (in != NULL && in->producer != NULL && in->producer->graph == node->graph &&
          in->producer->index > node->index && g_hash_table_lookup (ctx->map, in) == NULL &&
          !lower_node (ctx, in->producer, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
lower_node (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  if (!lower_late_producers (ctx, node, error))
    return FALSE;
  g_autofree char *scope = scope_of (node);
  const char *saved_scope = ctx->scope;
  const GraftLowering *saved_row = ctx->row;
  gboolean ok;

  ctx->row = lookup_row (node->op, ctx->opset);
  ctx->scope = scope;
  if (ctx->row != NULL)
    {
      g_autoptr(GError) refused = NULL;
      ok = ctx->row->lower (ctx, node, &refused);
      /* A lowering that refuses these arguments (a pad mode ONNX lacks, a
       * mask with is_causal) leaves the op as unconverted as one without a
       * lowering: named with its reason, and kept as a custom node where
       * those are allowed (lint's trial too); what it had written is dead
       * and pruned. Structural ops (prim::) still stop the conversion. */
      if (!ok && ctx->allow_custom && node->domain == g_intern_static_string ("aten") &&
          g_error_matches (refused, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED))
        {
          GraftLowerProblem *p = problem_new (node, ctx->opset);
          const char *reason = strstr (refused->message, "): ");
          g_free (p->help);
          p->help = g_strdup_printf ("%s; --allow-custom writes it as a node of the \"" CUSTOM_DOMAIN "\" domain",
                                     reason ? reason + 3 : refused->message);
          g_ptr_array_add (ctx->problems, p);
          g_clear_error (&refused);
          ok = lower_custom (ctx, node, error);
        }
      else if (!ok)
        g_propagate_error (error, g_steal_pointer (&refused));
    }
  else
    {
      /* The node is written as a custom one either way, so the lowering
       * goes on and the error (or the lint) names every such op. */
      g_ptr_array_add (ctx->problems, problem_new (node, ctx->opset));
      ok = lower_custom (ctx, node, error);
    }
  if (!ok && error && *error && !g_str_has_prefix ((*error)->message, "node '"))
    g_prefix_error (error, "node '%s' (%s): ", node->name, node->op);
  g_ptr_array_set_size (ctx->scratch, 0);
  ctx->scope = saved_scope;
  ctx->row = saved_row;
  return ok;
}

gboolean
_graft_lower_nodes (GraftLowerContext *ctx, GraftGraph *source, GError **error)
{
  for (guint i = 0; i < source->nodes->len; i++)
    if (!lower_node (ctx, g_ptr_array_index (source->nodes, i), error))
      return FALSE;
  return TRUE;
}

/* A unique value name in the target model for a source input name. */
static GraftValue *
new_named_value (GraftLowerContext *ctx, GraftGraph *graph, const char *name)
{
  g_autofree char *unique = g_strdup (name);
  for (guint n = 1; graft_graph_resolve_value (graph, unique) != NULL || g_hash_table_contains (ctx->node_names, unique); n++)
    {
      g_free (unique);
      unique = g_strdup_printf ("%s.%u", name, n);
    }
  g_hash_table_add (ctx->node_names, g_strdup (unique));
  return graft_graph_ensure_value (graph, unique);
}

static void
declare (GraftLowerContext *ctx, GraftValue *value, GraftDType dtype, const GraftShape *shape)
{
  value->dtype = dtype;
  graft_shape_clear (&value->shape);
  graft_shape_copy (&value->shape, shape);
  _graft_lower_declare_type (ctx, value, dtype, shape);
}

static gboolean
is_scalar_type (const GraftValue *source, GraftDType *dtype)
{
  const char *t = source->type_string;
  if (t == NULL)
    return FALSE;
  if (strcmp (t, "int") == 0 || strcmp (t, "SymInt") == 0)
    *dtype = GRAFT_DTYPE_INT64;
  else if (strcmp (t, "float") == 0)
    *dtype = GRAFT_DTYPE_FLOAT32;
  else if (strcmp (t, "bool") == 0)
    *dtype = GRAFT_DTYPE_BOOL;
  else
    return FALSE;
  return TRUE;
}

/* A TorchScript input without a declared shape still has the rank of the
 * convolution that reads it (its weight's rank): enough to convert a CNN
 * with every dim left symbolic ("x_dim0"…). -1 when nothing tells. */
static int
rank_from_consumers (GraftValue *input)
{
  for (guint i = 0; i < input->consumers->len; i++)
    {
      GraftNode *node = g_ptr_array_index (input->consumers, i);
      if (node->inputs->len < 2 || g_ptr_array_index (node->inputs, 0) != input ||
          (strcmp (node->op, "aten::_convolution") != 0 && !g_str_has_prefix (node->op, "aten::conv")))
        continue;
      GraftValue *weight = g_ptr_array_index (node->inputs, 1);
      if (weight != NULL && weight->initializer != NULL)
        return weight->initializer->rank;
    }
  return -1;
}

static gboolean
indexes_an_embedding (GraftValue *value, guint depth)
{
  /* ops that only move the ids (GPT-2 and CLIP view input_ids first) */
  static const char *const moves[] = { "aten::view", "aten::reshape", "aten::unsqueeze", "aten::squeeze",
                                       "aten::flatten", "aten::contiguous", "aten::slice", "aten::select" };
  if (depth > 4)
    return FALSE;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *node = g_ptr_array_index (value->consumers, i);
      if (strcmp (node->op, "aten::embedding") == 0 && node->inputs->len > 1 && g_ptr_array_index (node->inputs, 1) == value)
        return TRUE;
      for (guint k = 0; k < G_N_ELEMENTS (moves); k++)
        if (strcmp (node->op, moves[k]) == 0 && node->inputs->len > 0 && node->inputs->pdata[0] == value &&
            node->outputs->len > 0 && indexes_an_embedding (node->outputs->pdata[0], depth + 1))
          return TRUE;
    }
  return FALSE;
}

/* A TorchScript input declares no dtype: one that an embedding looks up
 * holds token ids (int64); float32 otherwise. */
GraftDType
graft_lower_guess_input_dtype (GraftValue *input)
{
  return indexes_an_embedding (input, 0) ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT32;
}

/* torch.export's own name of a dynamic dim: "s77", "u0" (unbacked). */
static gboolean
is_torch_symbol (const char *symbol)
{
  if (symbol == NULL || (symbol[0] != 's' && symbol[0] != 'u') || symbol[1] == '\0')
    return FALSE;
  for (const char *p = symbol + 1; *p; p++)
    if (!g_ascii_isdigit (*p))
      return FALSE;
  return TRUE;
}

/* A .pt2 keeps torch.export's symbols ("s77"), not the names of the
 * torch.export.Dim objects ("batch"), which the archive does not store.
 * In the file each symbol is named after the first input dim it sizes
 * ("x_dim0"), so that inputs sharing a dim share its name (names: symbol →
 * readable name, filled as inputs come). */
static void
name_torch_symbols (GraftShape *shape, const char *input, GHashTable *names)
{
  for (int d = 0; d < shape->rank; d++)
    {
      GraftDim *dim = &shape->dims[d];
      if (dim->kind != GRAFT_DIM_SYMBOLIC || !is_torch_symbol (dim->symbol))
        continue;
      const char *name = g_hash_table_lookup (names, dim->symbol);
      if (name == NULL)
        {
          g_autofree char *readable = g_strdup_printf ("%s_dim%d", input, d);
          name = g_intern_string (readable);
          g_hash_table_insert (names, (gpointer) dim->symbol, (gpointer) name);
        }
      dim->symbol = name;
    }
}

/* The graph's inputs: module objects lower to nothing; tensors and
 * scalars become ONNX inputs. */
static gboolean
lower_inputs (GraftLowerContext *ctx, GraftGraph *source, const GraftLowerOptions *options, GError **error)
{
  g_autoptr(GHashTable) symbol_names = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < source->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (source->inputs, i);
      GraftDType dtype;
      if (in->initializer != NULL)
        continue;
      if (in->kind == GRAFT_VALUE_OBJECT && (in->type_string == NULL || !g_str_has_prefix (in->type_string, "Tuple")))
        {
          graft_lower_bind (ctx, in, g_new0 (LowerValue, 1));
          continue;
        }
      const GraftShape *given = options->input_shapes ? g_hash_table_lookup (options->input_shapes, in->name) : NULL;
      if (in->type_string != NULL && g_str_has_prefix (in->type_string, "Optional[") && given == NULL)
        {
          /* An optional input without a shape is left out: None, its default. */
          graft_lower_bind (ctx, in, g_new0 (LowerValue, 1));
          continue;
        }
      if (is_scalar_type (in, &dtype))
        {
          GraftValue *v = new_named_value (ctx, ctx->graph, in->name);
          GraftShape scalar = { 0, NULL };
          declare (ctx, v, dtype, &scalar);
          graft_graph_add_input (ctx->graph, v);
          graft_lower_bind (ctx, in, graft_lower_value_tensor (v, TRUE));
          continue;
        }
      if (in->kind != GRAFT_VALUE_TENSOR && given == NULL)
        return graft_lower_fail (error, NULL, "input '%s' of type %s has no ONNX form; only tensor and scalar inputs do",
                                 in->name, in->type_string ? in->type_string : "?");
      const GraftShape *shape = given;
      GraftShape named = { -1, NULL };
      if (shape == NULL && in->shape.rank >= 0)
        shape = &in->shape;
      if (shape == &in->shape && graft_model_get_format (ctx->source) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM)
        {
          graft_shape_copy (&named, &in->shape);
          name_torch_symbols (&named, in->name, symbol_names);
          shape = &named;
        }
      GraftShape guessed = { -1, NULL };
      if (shape == NULL)
        {
          graft_shape_init (&guessed, rank_from_consumers (in));
          for (int d = 0; d < guessed.rank; d++)
            {
              g_autofree char *symbol = g_strdup_printf ("%s_dim%d", in->name, d);
              guessed.dims[d] = graft_dim_symbolic (g_intern_string (symbol));
            }
        }
      GraftValue *v = new_named_value (ctx, ctx->graph, in->name);
      GraftDType given_dtype = options->input_dtypes ? GPOINTER_TO_INT (g_hash_table_lookup (options->input_dtypes, in->name))
                               : GRAFT_DTYPE_UNDEFINED;
      declare (ctx, v, given_dtype != GRAFT_DTYPE_UNDEFINED ? given_dtype
                       : in->dtype != GRAFT_DTYPE_UNDEFINED ? in->dtype : graft_lower_guess_input_dtype (in),
               shape ? shape : &guessed);
      graft_shape_clear (&guessed);
      graft_shape_clear (&named);
      graft_graph_add_input (ctx->graph, v);
      graft_lower_bind (ctx, in, graft_lower_value_tensor (v, FALSE));
    }
  return TRUE;
}

/* Renames a value in its graph (graph outputs get the source's names). */
static void
rename_value (GraftValue *value, const char *name)
{
  g_hash_table_remove (value->graph->value_by_name, value->name);
  g_free (value->name);
  value->name = g_strdup (name);
  g_hash_table_insert (value->graph->value_by_name, value->name, value);
}

/* A graph output: must be produced by a node of this graph and appear once. */
static GraftValue *
output_value (GraftLowerContext *ctx, LowerValue *v, const char *name, GraftNode *source_node, GError **error)
{
  GraftValue *t;
  if (v == NULL || v->kind == LOWER_NONE)
    {
      graft_lower_fail (error, source_node, "output '%s' is None, which ONNX cannot return", name);
      return NULL;
    }
  if (v->kind == LOWER_LIST)
    {
      graft_lower_fail (error, source_node, "output '%s' is a list of %u items inside a graph body", name, v->items->len);
      return NULL;
    }
  if (v->kind == LOWER_CONST)
    t = graft_lower_const_attribute (ctx, v->constant, error);
  else
    t = v->value;
  if (t == NULL)
    return NULL;
  if (t->producer == NULL || t->graph != ctx->graph || t->is_graph_output || t->is_graph_input)
    {
      gboolean sequence = v->kind == LOWER_SEQUENCE;
      if (sequence && ctx->opset < 14)
        {
          graft_lower_fail (error, source_node, "output '%s' passes a list grown at run time through unchanged, "
                            "which needs Identity on a sequence (--opset 14 or later)", name);
          return NULL;
        }
      GraftValue *copy = graft_lower_op (ctx, "Identity", 1, t);
      if (sequence)
        graft_lower_declare_sequence (ctx, copy, graft_lower_dtype (ctx, t), graft_lower_rank (ctx, t));
      t = copy;
    }
  return t;
}

static gboolean
add_output (GraftLowerContext *ctx, GraftGraph *target, LowerValue *v, const char *name, gboolean rename,
            GError **error)
{
  if (v != NULL && v->kind == LOWER_LIST)
    {
      /* A tuple return: one ONNX output per item. The model's own
       * outputs leave out items that are None (scripted GoogLeNet's
       * aux logits in eval mode), as torch.onnx.export does; a body's
       * outputs keep their positions. */
      for (guint i = 0; i < v->items->len; i++)
        {
          LowerValue *item = v->items->pdata[i];
          if (rename && item != NULL && item->kind == LOWER_NONE)
            continue;
          g_autofree char *item_name = g_strdup_printf ("%s.%u", name, i);
          if (!add_output (ctx, target, v->items->pdata[i], item_name, rename, error))
            return FALSE;
        }
      return TRUE;
    }
  GraftValue *t = output_value (ctx, v, name, NULL, error);
  if (t == NULL)
    return FALSE;
  if (rename && graft_graph_resolve_value (target, name) == NULL)
    rename_value (t, name);
  graft_graph_add_output (target, t);
  if (graft_lower_is_sequence (ctx, t))
    graft_lower_declare_sequence (ctx, t, graft_lower_dtype (ctx, t), graft_lower_rank (ctx, t));
  else
    {
      const GraftShape *shape = graft_lower_shape (ctx, t);
      t->dtype = graft_lower_dtype (ctx, t);
      graft_shape_clear (&t->shape);
      graft_shape_copy (&t->shape, shape);
    }
  return TRUE;
}

GraftGraph *
graft_lower_subgraph (GraftLowerContext *ctx, GraftGraph *source, const char *name, gboolean loop_body,
                      GraftValue **carried, GPtrArray *grown_lists, GError **error)
{
  g_autoptr(GraftGraph) body = graft_graph_new (name);
  GraftGraph *saved = ctx->graph;
  gboolean ok = TRUE;

  body->parent_graph = saved;
  ctx->graph = body;
  /* A branch's inputs (torch.cond's operands) are bound by the caller to
   * outer values, which an ONNX If branch reads from the enclosing scope:
   * only a loop body takes inputs. */
  for (guint i = 0; ok && loop_body && i < source->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (source->inputs, i);
      g_autofree char *input_name = g_strdup_printf ("%s_%s", name, in->name);
      GraftValue *v = new_named_value (ctx, body, input_name);
      GraftShape scalar = { 0, NULL }, unknown = { -1, NULL };
      if (loop_body && i == 0)
        declare (ctx, v, GRAFT_DTYPE_INT64, &scalar);
      else
        {
          GraftDType dtype = GRAFT_DTYPE_UNDEFINED;
          gboolean scalar_input = is_scalar_type (in, &dtype);
          GraftShape any_dims = { -1, NULL };
          if (carried != NULL)
            {
              /* A carried value keeps its dtype and rank; its dims may change. */
              GraftValue *initial = carried[i - 1];
              dtype = graft_lower_dtype (ctx, initial);
              graft_shape_init (&any_dims, graft_lower_rank (ctx, initial));
            }
          declare (ctx, v, dtype, carried != NULL ? &any_dims : scalar_input ? &scalar : &unknown);
          graft_shape_clear (&any_dims);
        }
      graft_graph_add_input (body, v);
      graft_lower_bind (ctx, in, graft_lower_value_tensor (v, loop_body && i == 0));
      if (loop_body && i == 0)
        {
          /* ONNX passes the loop condition in; TorchScript does not. */
          g_autofree char *cond_name = g_strdup_printf ("%s_cond_in", name);
          GraftValue *cond = new_named_value (ctx, body, cond_name);
          declare (ctx, cond, GRAFT_DTYPE_BOOL, &scalar);
          graft_graph_add_input (body, cond);
        }
    }
  guint n_grown = grown_lists != NULL ? grown_lists->len : 0;
  g_autofree GraftValue **grown_inputs = g_new0 (GraftValue *, MAX (n_grown, 1));
  for (guint j = 0; loop_body && j < n_grown; j++)
    {
      /* A list the body appends to: carried as a sequence after the source's values. */
      LowerValue *outer = graft_lower_lookup (ctx, grown_lists->pdata[j]);
      g_autofree char *input_name = g_strdup_printf ("%s_%s", name, ((GraftValue *) grown_lists->pdata[j])->name);
      GraftValue *v = new_named_value (ctx, body, input_name);
      graft_graph_add_input (body, v);
      graft_lower_declare_sequence (ctx, v, graft_lower_dtype (ctx, outer->value), graft_lower_rank (ctx, outer->value));
      if (graft_lower_dtype (ctx, outer->value) == GRAFT_DTYPE_UNDEFINED)
        grown_inputs[j] = v;  /* an empty list: its tensors' type is known once the body appends */
      graft_lower_bind (ctx, grown_lists->pdata[j], graft_lower_value_sequence (v));
    }
  ok = ok && _graft_lower_nodes (ctx, source, error);
  for (guint i = 0; ok && i < source->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (source->outputs, i);
      LowerValue *v = graft_lower_lookup (ctx, out);
      g_autofree char *out_name = g_strdup_printf ("%s_out_%u", name, i);
      if (v != NULL && v->kind == LOWER_TENSOR && loop_body && i == 0)
        {
          LowerValue cond = *v;
          cond.value = graft_lower_cast (ctx, v->value, GRAFT_DTYPE_BOOL);
          ok = add_output (ctx, body, &cond, out_name, FALSE, error);
        }
      else
        ok = add_output (ctx, body, v, out_name, FALSE, error);
    }
  for (guint j = 0; ok && j < n_grown; j++)
    {
      g_autofree char *out_name = g_strdup_printf ("%s_out_%s", name, ((GraftValue *) grown_lists->pdata[j])->name);
      ok = add_output (ctx, body, graft_lower_lookup (ctx, grown_lists->pdata[j]), out_name, FALSE, error);
      GraftValue *out = ok ? g_ptr_array_index (body->outputs, body->outputs->len - 1) : NULL;
      if (ok && grown_inputs[j] != NULL)
        graft_lower_declare_sequence (ctx, grown_inputs[j], graft_lower_dtype (ctx, out), graft_lower_rank (ctx, out));
    }
  ctx->graph = saved;
  if (!ok)
    return NULL;
  body->parent_graph = NULL;
  return g_steal_pointer (&body);
}

GraftGraph *
graft_lower_while_body (GraftLowerContext *ctx, GraftNode *node, GraftGraph *cond_graph, GraftGraph *body_graph,
                        const char *name, GraftValue **carried, guint n_carried, GError **error)
{
  g_autoptr(GraftGraph) body = graft_graph_new (name);
  GraftGraph *saved = ctx->graph;
  GraftShape scalar = { 0, NULL };

  body->parent_graph = saved;
  ctx->graph = body;
  g_autofree char *iteration_name = g_strdup_printf ("%s_iteration", name);
  GraftValue *iteration = new_named_value (ctx, body, iteration_name);
  declare (ctx, iteration, GRAFT_DTYPE_INT64, &scalar);
  graft_graph_add_input (body, iteration);
  g_autofree char *cond_name = g_strdup_printf ("%s_cond_in", name);
  GraftValue *cond_in = new_named_value (ctx, body, cond_name);
  declare (ctx, cond_in, GRAFT_DTYPE_BOOL, &scalar);
  graft_graph_add_input (body, cond_in);
  for (guint k = 0; k < n_carried; k++)
    {
      GraftValue *source = g_ptr_array_index (body_graph->inputs, k);
      g_autofree char *input_name = g_strdup_printf ("%s_%s", name, source->name);
      GraftValue *v = new_named_value (ctx, body, input_name);
      /* A carried value keeps its dtype and rank; its dims may change. */
      GraftShape any_dims;
      graft_shape_init (&any_dims, graft_lower_rank (ctx, carried[k]));
      declare (ctx, v, graft_lower_dtype (ctx, carried[k]), &any_dims);
      graft_shape_clear (&any_dims);
      graft_graph_add_input (body, v);
      graft_lower_bind (ctx, source, graft_lower_value_tensor (v, FALSE));
    }
  gboolean ok = _graft_lower_nodes (ctx, body_graph, error);
  /* the condition of the next iteration, on the values this one made */
  for (guint k = 0; ok && k < n_carried; k++)
    {
      LowerValue *next = graft_lower_lookup (ctx, g_ptr_array_index (body_graph->outputs, k));
      graft_lower_bind (ctx, g_ptr_array_index (cond_graph->inputs, k),
                        next ? graft_lower_value_copy (next) : g_new0 (LowerValue, 1));
    }
  ok = ok && _graft_lower_nodes (ctx, cond_graph, error);
  LowerValue *cond = ok ? graft_lower_lookup (ctx, g_ptr_array_index (cond_graph->outputs, 0)) : NULL;
  if (ok && (cond == NULL || cond->kind != LOWER_TENSOR))
    ok = graft_lower_fail (error, node, "its condition graph returns no tensor");
  g_autofree char *cond_out_name = g_strdup_printf ("%s_cond_out", name);
  if (ok)
    {
      LowerValue as_bool = *cond;
      as_bool.value = graft_lower_cast (ctx, cond->value, GRAFT_DTYPE_BOOL);
      ok = add_output (ctx, body, &as_bool, cond_out_name, FALSE, error);
    }
  for (guint k = 0; ok && k < n_carried; k++)
    {
      g_autofree char *out_name = g_strdup_printf ("%s_out_%u", name, k);
      ok = add_output (ctx, body, graft_lower_lookup (ctx, g_ptr_array_index (body_graph->outputs, k)), out_name,
                       FALSE, error);
    }
  ctx->graph = saved;
  if (!ok)
    return NULL;
  body->parent_graph = NULL;
  return g_steal_pointer (&body);
}

static gint64
ir_version_for (gint64 opset)
{
  return opset >= 23 ? 11 : opset >= 21 ? 10 : opset >= 19 ? 9 : opset >= 15 ? 8 : 7;
}

GraftModel *
graft_lower_to_onnx (GraftModel *model, const GraftLowerOptions *options, GError **error)
{
  g_autoptr(GPtrArray) problems = NULL;
  return lower_model (model, options, TRUE, &problems, error);
}

static GraftModel *
lower_model (GraftModel *model, const GraftLowerOptions *options, gboolean check, GPtrArray **problems_out,
             GError **error)
{
  GraftGraph *source = graft_model_get_graph (model);
  GraftLowerOptions defaults = { 0 };
  gint64 opset, max_opset = graft_lower_max_opset ();

  if (options == NULL)
    options = &defaults;
  opset = options->opset > 0 ? options->opset : GRAFT_LOWER_DEFAULT_OPSET;
  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_TORCHSCRIPT &&
      graft_model_get_format (model) != GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM &&
      graft_model_get_format (model) != GRAFT_MODEL_FORMAT_EXECUTORCH)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "only TorchScript, torch.export and ExecuTorch programs are converted to ONNX; this is a %s model",
                   graft_model_format_to_string (graft_model_get_format (model)));
      return NULL;
    }
  if (source == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "the model has no graph to convert");
      return NULL;
    }
  if (opset < GRAFT_LOWER_MIN_OPSET || opset > max_opset)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "opset %" G_GINT64_FORMAT " is outside what the conversion writes (%d to %" G_GINT64_FORMAT ")",
                   opset, GRAFT_LOWER_MIN_OPSET, max_opset);
      return NULL;
    }

  g_autoptr(GraftModel) target = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  graft_model_set_ir_version (target, ir_version_for (opset));
  graft_model_set_opset (target, "onnx", opset);
  if (options->allow_custom)
    graft_model_set_opset (target, CUSTOM_DOMAIN, 1);
  graft_model_set_producer (target, "graft", GRAFT_VERSION);
  GraftGraph *graph = graft_graph_new (source->name && *source->name ? source->name : "main_graph");
  graft_model_set_graph (target, graph);

  GraftLowerContext ctx = { 0 };
  ctx.source = model;
  ctx.target = target;
  ctx.graph = graph;
  ctx.main_graph = graph;
  ctx.opset = opset;
  ctx.allow_custom = options->allow_custom;
  ctx.map = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) graft_lower_value_free);
  ctx.types = _graft_lower_types_new ();
  ctx.rt_data = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  ctx.attribute_reads = g_hash_table_new (g_str_hash, g_str_equal);
  ctx.node_names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  ctx.scratch = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
  ctx.scope = "";
  ctx.problems = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_problem_free);

  gboolean ok = lower_inputs (&ctx, source, options, error) && _graft_lower_nodes (&ctx, source, error);
  for (guint i = 0; ok && i < source->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (source->outputs, i);
      LowerValue *v = graft_lower_lookup (&ctx, out);
      /* None outputs are left out, as torch.onnx.export does (a scripted
       * GoogLeNet returns its aux logits as None in eval mode); a model
       * that returns only None still fails below. */
      if (v != NULL && v->kind == LOWER_NONE && (graph->outputs->len > 0 || i + 1 < source->outputs->len))
        continue;
      ok = add_output (&ctx, graph, v, out->name, TRUE, error);
    }

  if (ok)
    {
      _graft_lower_fold_batch_norms (&ctx, graph);
      /* Shape → Gather made for a dim only a dropped check read, and
       * weights a fold replaced. */
      graft_graph_prune (graph);
    }
  g_hash_table_unref (ctx.map);
  g_hash_table_unref (ctx.types);
  g_hash_table_unref (ctx.rt_data);
  g_hash_table_unref (ctx.attribute_reads);
  g_hash_table_unref (ctx.node_names);
  g_ptr_array_unref (ctx.scratch);
  GPtrArray *problems = *problems_out = ctx.problems;
  if (problems->len > 0 && !options->allow_custom)
    {
      g_autoptr(GString) list = g_string_new (NULL);
      for (guint i = 0; i < problems->len; i++)
        {
          GraftLowerProblem *p = problems->pdata[i];
          g_string_append_printf (list, "%s%s (%s): %s", i ? "; " : "", p->node_name, p->schema, p->help);
        }
      if (error != NULL && *error != NULL)
        {
          /* what stopped the conversion after those ops */
          g_string_append_printf (list, "; then %s", (*error)->message);
          g_clear_error (error);
        }
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "%u op%s cannot be written as ONNX opset %" G_GINT64_FORMAT ": %s", problems->len,
                   problems->len == 1 ? "" : "s", opset, list->str);
      return NULL;
    }
  /* a file is written only once Graft's own checks accept it (a trial
   * conversion that names unsupported ops writes none) */
  if (!ok || (check && !_graft_lower_check (target, options->allow_custom, error)))
    return NULL;
  graft_graph_build_groups_from_names (graph);
  return g_steal_pointer (&target);
}
