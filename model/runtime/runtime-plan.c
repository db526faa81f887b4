/* The runtime's support check and planning: each graph's steps in
 * topological order, their kernels, value slots and when each value is
 * released; then the fusions (runtime-fusion.c). */
#include "runtime/runtime-private.h"
#include "runtime/function-call.h"

#include <string.h>
#include "ir/fixed-branch.h"
#include "runtime/kernels/aten-args.h"

/* Support check                                                       */

static gint64
node_opset (GraftModel *model, GraftNode *node)
{
  return graft_model_get_opset (model, node->domain ? node->domain : "onnx");
}

/* Opset of a node in a graph whose root is the body of a function with
 * its own opset imports (or the model's). */
static gint64
opset_in (GraftModel *model, GHashTable *opsets, GraftNode *node)
{
  if (opsets == NULL)
    return node_opset (model, node);
  const gint64 *v = g_hash_table_lookup (opsets, graft_canonical_domain (node->domain ? node->domain : "onnx"));
  return v ? *v : -1;
}

#define MAX_FUNCTION_DEPTH 32

/* Every node of a local function's body (and of the functions it calls)
 * has a kernel. */
static gboolean
function_supported (GraftModel *model, GraftFunction *function, guint depth);

typedef struct {
  GraftModel *model;
  GHashTable *opsets;
  guint depth;
  gboolean ok;
  GPtrArray *unsupported;
} CheckData;

static gboolean
node_supported (GraftModel *model, GHashTable *opsets, GraftNode *node, guint depth)
{
  if (graft_op_registry_lookup (node->op, opset_in (model, opsets, node)) != NULL)
    return TRUE;
  GraftFunction *function = graft_function_for_call (model, node);
  return function && depth < MAX_FUNCTION_DEPTH && function_supported (model, function, depth + 1);
}

/* TRUE for a node inside a branch of a TorchScript prim::If whose
 * condition is known only at run time. PyTorch runs such a model and fails
 * only if the branch is taken (F.interpolate scripted keeps a branch per
 * mode, each with its own upsampling op), and so does the runtime. */
static gboolean
in_runtime_branch (GraftNode *node)
{
  for (GraftGraph *g = node->graph; g && g->parent_node; g = g->parent_graph)
    if (g->parent_node->op == g_intern_static_string ("prim::If") && graft_if_get_fixed_branch (g->parent_node) != g)
      return TRUE;
  return FALSE;
}

static void
check_node (GraftNode *node, gpointer user_data)
{
  CheckData *data = user_data;
  if (node_supported (data->model, data->opsets, node, data->depth) || in_runtime_branch (node))
    return;
  data->ok = FALSE;
  if (data->unsupported)
    g_ptr_array_add (data->unsupported, node);
}

static gboolean
function_supported (GraftModel *model, GraftFunction *function, guint depth)
{
  CheckData data = { model, function->opsets, depth, TRUE, NULL };
  graft_graph_foreach_live_node_recursive (function->body, check_node, &data);
  return data.ok;
}

gboolean
graft_runtime_check_supported (GraftModel *model, GPtrArray **unsupported, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  CheckData data = { model, NULL, 0, TRUE, g_ptr_array_new () };

  if (graph == NULL)
    {
      g_ptr_array_unref (data.unsupported);
      *unsupported = NULL;
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "the model has no graph to run (weights only)");
      return FALSE;
    }
  graft_graph_foreach_live_node_recursive (graph, check_node, &data);
  *unsupported = data.unsupported;
  return TRUE;
}

gboolean
graft_runtime_supports_op (const char *op, gint64 opset)
{
  return graft_op_registry_lookup (op, opset) != NULL;
}

char *
graft_runtime_describe_unsupported (GraftModel *model, GPtrArray *unsupported)
{
  g_autoptr(GHashTable) counts = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) order = g_ptr_array_new ();
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < unsupported->len; i++)
    {
      GraftNode *node = unsupported->pdata[i];
      guint n = GPOINTER_TO_UINT (g_hash_table_lookup (counts, node->op));
      if (n == 0)
        g_ptr_array_add (order, node);
      g_hash_table_insert (counts, (gpointer) node->op, GUINT_TO_POINTER (n + 1));
    }
  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = order->pdata[i];
      guint n = GPOINTER_TO_UINT (g_hash_table_lookup (counts, node->op));
      gint64 opset = node_opset (model, node);
      if (i > 0)
        g_string_append (s, ", ");
      g_string_append (s, node->op);
      if (opset >= 0 && !g_str_has_prefix (node->op, "aten::") && !g_str_has_prefix (node->op, "prim::"))
        g_string_append_printf (s, " (opset %" G_GINT64_FORMAT ")", opset);
      if (n > 1)
        g_string_append_printf (s, " ×%u", n);
    }
  return g_string_free (s, FALSE);
}

void
_graft_step_clear (Step *step)
{
  for (guint j = 0; step->memo_inputs && j < step->n_inputs + step->n_memo_captures; j++)
    g_clear_pointer (&step->memo_inputs[j], graft_rt_tensor_unref);
  for (guint j = 0; step->memo_outputs && j < step->n_outputs; j++)
    g_clear_pointer (&step->memo_outputs[j], graft_rt_tensor_unref);
  g_free (step->memo_inputs);
  g_free (step->memo_captures);
  g_free (step->memo_outputs);
  g_free (step->infer_key);
  g_free (step->inferred);
  g_free (step->inputs);
  g_free (step->outputs);
  g_free (step->release);
  g_free (step->views);
  g_free (step->positional);
  g_free (step->pattern_match);
  g_clear_pointer (&step->folded_weight, graft_rt_tensor_unref);
  g_clear_pointer (&step->folded_bias, graft_rt_tensor_unref);
  g_clear_pointer (&step->fold_source, graft_rt_tensor_unref);
  g_clear_pointer (&step->fold_scale, g_free);
  g_clear_pointer (&step->folded_pages, g_bytes_unref);
  if (step->derived_kind)
    step->derived_kind->free (step->derived);
  if (step->qdq)
    {
      _graft_step_clear (step->qdq);
      g_free (step->qdq);
    }
  if (step->pattern)
    {
      _graft_step_clear (step->pattern);
      g_free (step->pattern);
    }
}

void
_graft_plan_free (Plan *plan)
{
  for (guint i = 0; i < plan->n_steps; i++)
    _graft_step_clear (&plan->steps[i]);
  g_free (plan->steps);
  for (guint i = 0; i < plan->n_slots; i++)
    if (plan->constants[i])
      graft_rt_tensor_unref (plan->constants[i]);
  g_free (plan->constants);
  g_free (plan->state_values);
  g_free (plan->state_buffers);
  g_free (plan->values);
  g_hash_table_destroy (plan->slots);
  g_clear_pointer (&plan->aliases, g_hash_table_destroy);
  g_clear_pointer (&plan->aliased, g_hash_table_destroy);
  g_clear_pointer (&plan->inlined_graphs, g_ptr_array_unref);
  g_clear_pointer (&plan->inlined_outputs, g_hash_table_destroy);
  g_free (plan);
}

guint
_graft_plan_slot (Plan *plan, GraftValue *value)
{
  gpointer p = g_hash_table_lookup (plan->slots, value);
  return p ? GPOINTER_TO_UINT (p) - 1 : NO_SLOT;
}

gboolean
_graft_plan_value_leaves_run (const Plan *plan, GraftValue *v)
{
  if (!graft_value_leaves_run (v))
    return FALSE;
  if (v->writes_back_to != NULL || plan->inlined_outputs == NULL || !g_hash_table_contains (plan->inlined_outputs, v))
    return TRUE;
  for (guint k = 0; k < plan->graph->outputs->len; k++)
    if (plan->graph->outputs->pdata[k] == v)
      return TRUE;
  return FALSE;
}

GraftValue *
_graft_plan_resolve (const Plan *plan, GraftValue *v)
{
  for (GraftValue *w; plan->aliases && v && (w = g_hash_table_lookup (plan->aliases, v)) != NULL;)
    v = w;
  return v;
}

gboolean
_graft_node_in_untaken_branch (GraftNode *node)
{
  for (GraftGraph *g = node->graph; g && g->parent_node; g = g->parent_graph)
    {
      GraftGraph *taken = graft_if_get_fixed_branch (g->parent_node);
      if (taken != NULL && taken != g)
        return TRUE;
    }
  return FALSE;
}

/* Values of enclosing graphs that nodes inside sub (at any depth) read. */
static void
collect_captures (GraftGraph *sub, GHashTable *set)
{
  for (guint i = 0; i < sub->nodes->len; i++)
    {
      GraftNode *node = sub->nodes->pdata[i];
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *v = node->inputs->pdata[j];
          if (v != NULL && v->graph != sub)
            g_hash_table_add (set, v);
        }
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
      for (guint k = 0; subs && k < subs->len; k++)
        collect_captures (subs->pdata[k], set);
    }
  for (guint j = 0; j < sub->outputs->len; j++)
    {
      GraftValue *v = sub->outputs->pdata[j];
      if (v != NULL && v->graph != sub)
        g_hash_table_add (set, v);
    }
}

/* Every value a node depends on: its inputs and its subgraphs' captures. */
static GPtrArray *
node_dependencies (GraftNode *node)
{
  GPtrArray *deps = g_ptr_array_new ();
  for (guint j = 0; j < node->inputs->len; j++)
    if (node->inputs->pdata[j])
      g_ptr_array_add (deps, node->inputs->pdata[j]);
  g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
  if (subs && subs->len > 0)
    {
      g_autoptr(GHashTable) set = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (guint k = 0; k < subs->len; k++)
        collect_captures (subs->pdata[k], set);
      GHashTableIter iter;
      gpointer key;
      g_hash_table_iter_init (&iter, set);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        g_ptr_array_add (deps, key);
    }
  return deps;
}

/* Ready nodes leave in program order (lowest index first): TorchScript
 * ops such as aten::append mutate their inputs in place, so a node that
 * reads a list must not overtake the loop that fills it, although no data
 * edge says so. A binary min-heap of node indices keeps that O(n log n). */
static void
ready_push (GArray *heap, guint index)
{
  guint i = heap->len;

  g_array_append_val (heap, index);
  while (i > 0)
    {
      guint parent = (i - 1) / 2;
      guint *h = (guint *) heap->data;
      if (h[parent] <= h[i])
        break;
      guint tmp = h[parent];
      h[parent] = h[i];
      h[i] = tmp;
      i = parent;
    }
}

static guint
ready_pop (GArray *heap)
{
  guint *h = (guint *) heap->data;
  guint top = h[0];
  guint n = heap->len - 1;
  guint i = 0;

  h[0] = h[n];
  g_array_set_size (heap, n);
  for (;;)
    {
      guint left = 2 * i + 1, right = left + 1, smallest = i;
      if (left < n && h[left] < h[smallest])
        smallest = left;
      if (right < n && h[right] < h[smallest])
        smallest = right;
      if (smallest == i)
        break;
      guint tmp = h[smallest];
      h[smallest] = h[i];
      h[i] = tmp;
      i = smallest;
    }
  return top;
}

static gboolean
topological_order (GraftGraph *graph, GPtrArray **order, GError **error)
{
  guint n = graph->nodes->len;
  g_autofree guint *pending = g_new0 (guint, n);
  g_autoptr(GPtrArray) users = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  GPtrArray *result = g_ptr_array_sized_new (n);
  g_autoptr(GArray) ready = g_array_sized_new (FALSE, FALSE, sizeof (guint), n);

  for (guint i = 0; i < n; i++)
    g_ptr_array_add (users, g_ptr_array_new ());
  for (guint i = 0; i < n; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      g_autoptr(GPtrArray) deps = node_dependencies (node);
      g_autoptr(GHashTable) seen = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (guint j = 0; j < deps->len; j++)
        {
          GraftValue *v = deps->pdata[j];
          GraftNode *producer = v->producer;
          if (producer == NULL || producer->graph != graph || producer == node || !g_hash_table_add (seen, producer))
            continue;
          pending[i]++;
          g_ptr_array_add (users->pdata[producer->index], node);
        }
    }
  for (guint i = 0; i < n; i++)
    if (pending[i] == 0)
      ready_push (ready, i);
  while (ready->len > 0)
    {
      GraftNode *node = graph->nodes->pdata[ready_pop (ready)];
      g_ptr_array_add (result, node);
      GPtrArray *u = users->pdata[node->index];
      for (guint j = 0; j < u->len; j++)
        {
          GraftNode *user = u->pdata[j];
          if (--pending[user->index] == 0)
            ready_push (ready, user->index);
        }
    }
  if (result->len != n)
    {
      for (guint i = 0; i < n; i++)
        if (pending[i] > 0)
          {
            GraftNode *node = graph->nodes->pdata[i];
            g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                         "graph '%s' has a cycle through node '%s' (%s)",
                         graph->name ? graph->name : "", node->name, node->op);
            break;
          }
      g_ptr_array_unref (result);
      return FALSE;
    }
  *order = result;
  return TRUE;
}

/* The graph whose frame holds graph's values: graph, or for a branch
 * inlined into a plan (Plan.aliases), that plan's graph. */
static GraftGraph *
frame_graph (GraftRuntime *rt, GraftGraph *graph)
{
  Plan *host = graph ? g_hash_table_lookup (rt->inlined, graph) : NULL;
  return host ? host->graph : graph;
}

gboolean
_graft_plan_value_ref (GraftGraph *graph, GraftValue *value, ValueRef *ref, GraftRuntime *rt, GError **error)
{
  guint up = 0;
  GraftGraph *target = frame_graph (rt, value->graph);
  GraftGraph *g = frame_graph (rt, graph);
  while (g != NULL && g != target)
    {
      g = frame_graph (rt, g->parent_graph);
      up++;
    }
  Plan *owner = g ? g_hash_table_lookup (rt->plans, g) : NULL;
  if (owner == NULL)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "value '%s' belongs to no enclosing graph", value->name);
      return FALSE;
    }
  ref->up = up;
  ref->slot = _graft_plan_slot (owner, value);
  return TRUE;
}

static guint timing_counter_add (GraftRuntime *rt, GraftNode *node)
{
  GraftNodeTiming t = { .node = node };
  g_array_append_val (rt->timings, t);
  return rt->timings->len - 1;
}

/* Slots in plan for graph's values (plan's own graph, or a branch
 * inlined into it). */
static void
plan_add_slots (Plan *plan, GraftGraph *graph)
{
  guint first = plan->n_slots;
  plan->n_slots += graph->values->len;
  plan->values = g_renew (GraftValue *, plan->values, MAX (plan->n_slots, 1));
  plan->constants = g_renew (GraftRtTensor *, plan->constants, MAX (plan->n_slots, 1));
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *v = graph->values->pdata[i];
      g_hash_table_insert (plan->slots, v, GUINT_TO_POINTER (first + i + 1));
      plan->values[first + i] = v;
      plan->constants[first + i] = NULL;
    }
}

static Plan *
plan_new_slots (GraftGraph *graph)
{
  Plan *plan = g_new0 (Plan, 1);
  plan->graph = graph;
  plan->slots = g_hash_table_new (g_direct_hash, g_direct_equal);
  plan_add_slots (plan, graph);
  return plan;
}

/* The branch of node, a prim::If whose condition the module fixes, that
 * the plan holding node runs as its own steps; NULL for any other node. */
static GraftGraph *
inlined_branch (GraftNode *node)
{
  GraftGraph *branch = graft_if_get_fixed_branch (node);
  if (branch == NULL || branch->inputs->len != 0 || branch->outputs->len != node->outputs->len)
    return NULL;
  for (guint j = 0; j < node->outputs->len; j++)
    if (node->outputs->pdata[j] == NULL || branch->outputs->pdata[j] == NULL ||
        ((GraftValue *) node->outputs->pdata[j])->writes_back_to != NULL)
      return NULL;
  return branch;
}



static gboolean plan_graph_steps (GraftRuntime *rt, Plan *plan, GError **error);

/* Creates the slot maps of graph and its subgraphs first (steps refer to
 * outer plans' slots), then the steps. */
static void
register_graph (GraftRuntime *rt, GraftGraph *graph, Plan *host)
{
  Plan *plan = host;
  if (host == NULL)
    g_hash_table_insert (rt->plans, graph, plan = plan_new_slots (graph));
  else
    {
      g_hash_table_insert (rt->inlined, graph, host);
      plan_add_slots (host, graph);
      if (host->inlined_graphs == NULL)
        host->inlined_graphs = g_ptr_array_new ();
      g_ptr_array_add (host->inlined_graphs, graph);
    }
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      GraftGraph *branch = inlined_branch (node);
      if (branch != NULL)
        {
          if (plan->aliases == NULL)
            plan->aliases = g_hash_table_new (g_direct_hash, g_direct_equal);
          if (plan->inlined_outputs == NULL)
            plan->inlined_outputs = g_hash_table_new (g_direct_hash, g_direct_equal);
          for (guint j = 0; j < node->outputs->len; j++)
            {
              g_hash_table_insert (plan->aliases, node->outputs->pdata[j], branch->outputs->pdata[j]);
              g_hash_table_add (plan->inlined_outputs, branch->outputs->pdata[j]);
            }
          register_graph (rt, branch, plan);
          continue;
        }
      g_autoptr(GPtrArray) subs = graft_node_get_live_subgraphs (node);
      for (guint k = 0; subs && k < subs->len; k++)
        register_graph (rt, subs->pdata[k], NULL);
    }
}

static void
register_plans (GraftRuntime *rt, GraftGraph *graph)
{
  register_graph (rt, graph, NULL);
}

/* Runs the calling node's copy of a local function body. */
static gboolean
kernel_function_call (GraftKernelContext *ctx, GError **error)
{
  EngineCtx *e = ctx->engine;
  GraftGraph *body = g_hash_table_lookup (e->run->runtime->function_bodies, ctx->node);
  g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, body, ctx->inputs, ctx->n_inputs, error);
  if (outs == NULL)
    return FALSE;
  for (guint i = 0; i < ctx->n_outputs && i < outs->len; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (outs->pdata[i]));
  return TRUE;
}

static const GraftOpSchema function_call_schema = { "function", 0, 0, NULL, kernel_function_call, 0 };

/* The step of an op without a kernel in a branch only taken at run time
 * (in_runtime_branch): planned, and an error naming the op if it runs. */
static gboolean
kernel_unsupported_in_branch (GraftKernelContext *ctx, GError **error)
{
  g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
               "the runtime does not support %s, which this run reached in a branch of a prim::If", ctx->node->op);
  return FALSE;
}

static const GraftOpSchema unsupported_in_branch_schema = { "unsupported", 0, 0, NULL, kernel_unsupported_in_branch, 0 };

static gint64
plan_opset (GraftRuntime *rt, GraftGraph *graph, GraftNode *node)
{
  while (graph->parent_graph)
    graph = graph->parent_graph;
  return opset_in (rt->model, g_hash_table_lookup (rt->function_opsets, graph), node);
}

static gboolean
plan_tree (GraftRuntime *rt, GraftGraph *graph, GError **error)
{
  Plan *plan = g_hash_table_lookup (rt->plans, graph);   /* NULL: an inlined branch */
  if (plan != NULL && !plan_graph_steps (rt, plan, error))
    return FALSE;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      g_autoptr(GPtrArray) subs = graft_node_get_live_subgraphs (graph->nodes->pdata[i]);
      for (guint k = 0; subs && k < subs->len; k++)
        if (!plan_tree (rt, subs->pdata[k], error))
          return FALSE;
    }
  return TRUE;
}

/* A call of a local function gets its own copy of the body (the caller's
 * attributes substituted), planned like a subgraph without captures. */
static const GraftOpSchema *
plan_function_call (GraftRuntime *rt, GraftGraph *graph, GraftNode *node, GError **error)
{
  GraftFunction *function = graft_function_for_call (rt->model, node);
  guint depth = 0;
  for (GraftGraph *g = graph; g; g = g->parent_graph)
    if (g->parent_graph == NULL && g_hash_table_contains (rt->function_opsets, g))
      depth = GPOINTER_TO_UINT (g_hash_table_lookup (rt->function_depths, g));
  if (function == NULL)
    return NULL;
  if (depth >= MAX_FUNCTION_DEPTH)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "node '%s': local functions nest deeper than %d calls (recursion?)", node->name, MAX_FUNCTION_DEPTH);
      return NULL;
    }
  GraftGraph *body = graft_function_instantiate (function, node, error);
  if (body == NULL)
    return NULL;
  g_hash_table_insert (rt->function_bodies, node, body);
  g_hash_table_insert (rt->function_opsets, body, function->opsets);
  g_hash_table_insert (rt->function_depths, body, GUINT_TO_POINTER (depth + 1));
  register_plans (rt, body);
  if (!plan_tree (rt, body, error))
    {
      g_prefix_error (error, "function %s called by node '%s': ", node->op, node->name);
      return NULL;
    }
  return &function_call_schema;
}

/* aten::mul_, aten::copy_ (not aten::__and__) */
static gboolean
is_inplace_aten (GraftNode *node)
{
  gsize len = strlen (node->op_type);
  return g_strcmp0 (node->domain, "aten") == 0 && len > 1 && node->op_type[len - 1] == '_' &&
         node->op_type[len - 2] != '_';
}

/* Some step not planned yet (not in step_of, node → index + 1: a later
 * one, or a subgraph's node) may read v, or v leaves the run. */
static gboolean
read_later (Plan *plan, GHashTable *step_of, GraftValue *v)
{
  if (v == NULL)
    return FALSE;
  if (_graft_plan_value_leaves_run (plan, v) || (plan->aliased && g_hash_table_contains (plan->aliased, v)))
    return TRUE;
  for (guint k = 0; k < plan->graph->outputs->len; k++)
    if (plan->graph->outputs->pdata[k] == v)
      return TRUE;
  for (guint k = 0; v->consumers && k < v->consumers->len; k++)
    if (!g_hash_table_contains (step_of, v->consumers->pdata[k]) &&
        !_graft_node_in_untaken_branch (v->consumers->pdata[k]))
      return TRUE;
  return FALSE;
}

/* The views step's in-place op writes through (Step.views); their inputs
 * stay alive until it ran. None when no step after it reads a tensor the
 * views were taken from: timm's GhostNet adds its shortcut in place to a
 * slice of a concatenation that nothing reads again, and the write back
 * (a copy of each tensor of the chain) took as long as the rest of the
 * block. */
static void
plan_view_write_back (Plan *plan, Step *step, GHashTable *step_of, guint *last_use, guint at)
{
  g_autoptr(GArray) views = g_array_new (FALSE, FALSE, sizeof (guint));
  GraftValue *v = step->node->inputs->pdata[0];
  gboolean read = FALSE;
  for (; v != NULL && v->producer != NULL && graft_aten_is_view (v->producer); v = v->producer->inputs->pdata[0])
    {
      guint index = GPOINTER_TO_UINT (g_hash_table_lookup (step_of, v->producer));
      if (index == 0 || v->producer->inputs->len == 0)
        break;
      guint view_step = index - 1;
      Step *view = &plan->steps[view_step];
      g_array_append_val (views, view_step);
      /* the tensor the view was taken from, as named and as the view reads it */
      ValueRef source = view->inputs[0];
      read |= source.up != 0 || read_later (plan, step_of, v->producer->inputs->pdata[0]) ||
              (source.slot != NO_SLOT && read_later (plan, step_of, plan->values[source.slot]));
    }
  if (!read)
    return;
  for (guint k = 0; k < views->len; k++)
    {
      Step *view = &plan->steps[g_array_index (views, guint, k)];
      for (guint j = 0; j < view->n_inputs; j++)
        if (view->inputs[j].up == 0 && view->inputs[j].slot != NO_SLOT &&
            (last_use[view->inputs[j].slot] == NO_SLOT || last_use[view->inputs[j].slot] < at))
          last_use[view->inputs[j].slot] = at;
    }
  step->n_views = views->len;
  step->views = (guint *) g_array_free (g_steal_pointer (&views), FALSE);
}

/* The buffers a run writes back: pairs of a value with writes_back_to and
 * the initializer it names (one the edits have since removed is skipped). */
static void
plan_state (Plan *plan)
{
  GraftGraph *graph = plan->graph;
  plan->state_values = g_new (guint, MAX (graph->values->len, 1));
  plan->state_buffers = g_new (guint, MAX (graph->values->len, 1));
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *v = graph->values->pdata[i];
      GraftValue *buffer = v->writes_back_to ? graft_graph_lookup_value (graph, v->writes_back_to) : NULL;
      guint value_slot = v->writes_back_to ? _graft_plan_slot (plan, v) : NO_SLOT;
      guint buffer_slot = buffer ? _graft_plan_slot (plan, buffer) : NO_SLOT;
      if (value_slot == NO_SLOT || buffer_slot == NO_SLOT || plan->constants[buffer_slot] == NULL)
        continue;
      plan->state_values[plan->n_state] = value_slot;
      plan->state_buffers[plan->n_state++] = buffer_slot;
    }
}

gboolean
_graft_plan_slot_is_state (const Plan *plan, guint slot)
{
  for (guint k = 0; k < plan->n_state; k++)
    if (plan->state_buffers[k] == slot)
      return TRUE;
  return FALSE;
}

/* The step of an inlined If (Plan.aliases): its inputs are the branch's
 * outputs, which it gives as its own. */
static gboolean
kernel_inlined_if (GraftKernelContext *ctx, GError **error)
{
  for (guint i = 0; i < ctx->n_outputs && i < ctx->n_inputs; i++)
    if (ctx->inputs[i] != NULL)
      graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (ctx->inputs[i]));
  return TRUE;
}

static const GraftOpSchema inlined_if_schema = { "prim::If (inlined)", 0, 0, NULL, kernel_inlined_if, 0 };

gboolean
_graft_step_is_inlined_if (const Step *step)
{
  return step->schema == &inlined_if_schema;
}

/* graph's nodes in run order into order, each inlined If (one whose branch
 * plan runs, rt->inlined) preceded by its branch's nodes. */
static gboolean
append_run_order (GraftRuntime *rt, Plan *plan, GraftGraph *graph, GPtrArray *order, GError **error)
{
  g_autoptr(GPtrArray) nodes = NULL;
  if (!topological_order (graph, &nodes, error))
    return FALSE;
  for (guint i = 0; i < nodes->len; i++)
    {
      GraftNode *node = nodes->pdata[i];
      GraftGraph *branch = inlined_branch (node);
      if (branch != NULL && g_hash_table_lookup (rt->inlined, branch) == plan &&
          !append_run_order (rt, plan, branch, order, error))
        return FALSE;
      g_ptr_array_add (order, node);
    }
  return TRUE;
}

static gboolean
load_initializers (Plan *plan, GraftGraph *graph, GError **error)
{
  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftValue *v = graph->initializers->pdata[i];
      guint slot = _graft_plan_slot (plan, v);
      if (slot == NO_SLOT || v->initializer == NULL || plan->constants[slot])
        continue;
      plan->constants[slot] = graft_rt_tensor_new_from_tensor (v->initializer, error);
      if (plan->constants[slot] == NULL)
        return FALSE;
    }
  return TRUE;
}

/* An inlined If's step runs (for the values its outputs stand for) only
 * when a reader finds them in its output slots: a graph output, or a node
 * that is no step of the plan (in a subgraph); the plan's own steps read
 * the branch's values (_graft_plan_resolve). Else it is absorbed, and
 * runs only for an observer. */
static void
absorb_inlined_ifs (Plan *plan, GHashTable *step_of)
{
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      gboolean needed = FALSE;
      if (step->schema != &inlined_if_schema)
        continue;
      for (guint j = 0; j < step->node->outputs->len && !needed; j++)
        {
          GraftValue *o = step->node->outputs->pdata[j];
          for (guint k = 0; k < plan->graph->outputs->len; k++)
            needed |= plan->graph->outputs->pdata[k] == o;
          for (guint k = 0; !needed && o->consumers && k < o->consumers->len; k++)
            {
              GraftNode *reader = o->consumers->pdata[k];
              needed = !g_hash_table_contains (step_of, reader) && !_graft_node_in_untaken_branch (reader);
            }
        }
      step->absorbed = !needed;
    }
}

static gboolean
plan_graph_steps (GraftRuntime *rt, Plan *plan, GError **error)
{
  GraftGraph *graph = plan->graph;
  g_autoptr(GPtrArray) order = g_ptr_array_new ();

  if (!append_run_order (rt, plan, graph, order, error) || !load_initializers (plan, graph, error))
    return FALSE;
  for (guint k = 0; plan->inlined_graphs && k < plan->inlined_graphs->len; k++)
    if (!load_initializers (plan, plan->inlined_graphs->pdata[k], error))
      return FALSE;
  if (plan->aliases != NULL)
    {
      GHashTableIter iter;
      gpointer o;
      plan->aliased = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_ptr_array_unref);
      g_hash_table_iter_init (&iter, plan->aliases);
      while (g_hash_table_iter_next (&iter, &o, NULL))
        {
          GraftValue *v = _graft_plan_resolve (plan, o);
          GPtrArray *list = g_hash_table_lookup (plan->aliased, v);
          if (list == NULL)
            g_hash_table_insert (plan->aliased, v, list = g_ptr_array_new ());
          g_ptr_array_add (list, o);
        }
    }
  if (graph->parent_graph == NULL)
    plan_state (plan);

  plan->n_steps = order->len;
  plan->steps = g_new0 (Step, order->len);
  g_autofree guint *last_use = g_new (guint, plan->n_slots);
  for (guint s = 0; s < plan->n_slots; s++)
    last_use[s] = NO_SLOT;
  /* TorchScript in-place ops (aten::mul_) mutate their first input, and
   * later nodes read the mutated tensor through the input's name: those
   * reads go to the in-place op's output instead (file order is kept by
   * the topological order, so they run after it). */
  g_autoptr(GHashTable) mutated = g_hash_table_new (g_direct_hash, g_direct_equal);
  g_autoptr(GHashTable) step_of = g_hash_table_new (g_direct_hash, g_direct_equal);  /* node → index + 1 */

  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = order->pdata[i];
      Step *step = &plan->steps[i];
      GraftGraph *branch = inlined_branch (node);
      step->node = node;
      step->opset = plan_opset (rt, graph, node);
      step->residual_from = NO_STEP;
      step->pattern_at = NO_STEP;
      if (branch != NULL && g_hash_table_lookup (rt->inlined, branch) == plan)
        {
          step->schema = &inlined_if_schema;
          step->n_inputs = branch->outputs->len;
          step->inputs = g_new (ValueRef, MAX (step->n_inputs, 1));
          step->n_outputs = node->outputs->len;
          step->outputs = g_new (guint, MAX (step->n_outputs, 1));
          for (guint j = 0; j < step->n_inputs; j++)
            {
              GraftValue *v = _graft_plan_resolve (plan, branch->outputs->pdata[j]);
              for (GraftValue *w; (w = g_hash_table_lookup (mutated, v)) != NULL;)
                v = w;
              guint slot = _graft_plan_slot (plan, v);
              if (!_graft_plan_value_ref (graph, v, &step->inputs[j], rt, error))
                return FALSE;
              if (slot != NO_SLOT)
                last_use[slot] = i;
              step->outputs[j] = _graft_plan_slot (plan, node->outputs->pdata[j]);
            }
          step->timing_index = timing_counter_add (rt, node);
          g_hash_table_insert (step_of, node, GUINT_TO_POINTER (i + 1));
          continue;
        }
      step->schema = graft_op_registry_lookup (node->op, step->opset);
      if (step->schema == NULL && (step->schema = plan_function_call (rt, graph, node, error)) == NULL)
        {
          if (error && *error)
            return FALSE;
          if (in_runtime_branch (node))
            step->schema = &unsupported_in_branch_schema;
        }
      if (step->schema == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                       "node '%s': %s is not supported at opset %" G_GINT64_FORMAT,
                       node->name, node->op, step->opset);
          return FALSE;
        }
      step->n_inputs = node->inputs->len;
      step->inputs = g_new (ValueRef, MAX (step->n_inputs, 1));
      for (guint j = 0; j < step->n_inputs; j++)
        {
          GraftValue *v = node->inputs->pdata[j];
          step->inputs[j] = (ValueRef) { 0, NO_SLOT };
          if (v == NULL)
            continue;
          v = _graft_plan_resolve (plan, v);
          for (GraftValue *w; (w = g_hash_table_lookup (mutated, v)) != NULL;)
            {
              v = w;
              guint slot = _graft_plan_slot (plan, v);
              if (slot != NO_SLOT)
                last_use[slot] = i;
            }
          if (!_graft_plan_value_ref (graph, v, &step->inputs[j], rt, error))
            {
              g_prefix_error (error, "node '%s' (%s): ", node->name, node->op);
              return FALSE;
            }
        }
      step->n_outputs = node->outputs->len;
      step->outputs = g_new (guint, MAX (step->n_outputs, 1));
      for (guint j = 0; j < step->n_outputs; j++)
        {
          GraftValue *v = node->outputs->pdata[j];
          step->outputs[j] = v ? _graft_plan_slot (plan, v) : NO_SLOT;
        }
      g_autoptr(GPtrArray) deps = node_dependencies (node);
      for (guint j = 0; j < deps->len; j++)
        {
          /* the value itself (an If output read by a subgraph), and the
           * one it stands for (read by this plan's steps) */
          GraftValue *v = deps->pdata[j], *resolved = _graft_plan_resolve (plan, v);
          guint slot = _graft_plan_slot (plan, v), resolved_slot = _graft_plan_slot (plan, resolved);
          if (slot != NO_SLOT)
            last_use[slot] = i;
          if (resolved_slot != NO_SLOT)
            last_use[resolved_slot] = i;
        }
      step->timing_index = timing_counter_add (rt, node);
      step->positional = graft_aten_positional_attributes (node, &step->n_positional);
      GraftValue *mutated_input = node->inputs->len > 0 ? _graft_plan_resolve (plan, node->inputs->pdata[0]) : NULL;
      if (is_inplace_aten (node) && node->outputs->len > 0 && mutated_input != NULL && node->outputs->pdata[0] &&
          _graft_plan_slot (plan, mutated_input) != NO_SLOT && mutated_input != node->outputs->pdata[0])
        {
          g_hash_table_insert (mutated, mutated_input, node->outputs->pdata[0]);
          plan_view_write_back (plan, step, step_of, last_use, i);
        }
      g_hash_table_insert (step_of, node, GUINT_TO_POINTER (i + 1));
    }

  if (plan->aliases != NULL)
    absorb_inlined_ifs (plan, step_of);
  _graft_plan_fuse (rt, plan, last_use);

  /* Free values after their last use, except graph outputs and constants
   * (but for constants computed when the plan was made: a run drops its
   * reference, an observed run the value it computed again). */
  g_autofree guint *n_release = g_new0 (guint, MAX (plan->n_steps, 1));
  g_autofree gboolean *kept = g_new0 (gboolean, MAX (plan->n_slots, 1));
  for (guint s = 0; s < plan->n_slots; s++)
    {
      guint producer = plan->values[s]->producer
                       ? GPOINTER_TO_UINT (g_hash_table_lookup (step_of, plan->values[s]->producer)) : 0;
      kept[s] = plan->constants[s] && !(producer && plan->steps[producer - 1].computed_at_plan);
    }
  for (guint s = 0; s < plan->n_slots; s++)
    {
      GraftValue *v = plan->values[s];
      if (last_use[s] == NO_SLOT || _graft_plan_value_leaves_run (plan, v) || kept[s])
        continue;
      gboolean is_output = FALSE;
      for (guint k = 0; k < graph->outputs->len; k++)
        is_output |= graph->outputs->pdata[k] == v;
      if (is_output)
        {
          last_use[s] = NO_SLOT;
          continue;
        }
      n_release[last_use[s]]++;
    }
  for (guint i = 0; i < plan->n_steps; i++)
    plan->steps[i].release = g_new (guint, MAX (n_release[i], 1));
  for (guint s = 0; s < plan->n_slots; s++)
    {
      if (last_use[s] == NO_SLOT || kept[s] || _graft_plan_value_leaves_run (plan, plan->values[s]))
        continue;
      Step *step = &plan->steps[last_use[s]];
      step->release[step->n_release++] = s;
    }
  return TRUE;
}

gboolean
_graft_runtime_plan (GraftRuntime *rt, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (rt->model);
  register_plans (rt, graph);
  rt->main = g_hash_table_lookup (rt->plans, graph);

  /* the plans of the main graph's subgraphs, before planning it adds those
   * of the functions it calls (planned then) */
  g_autoptr(GList) plans = g_hash_table_get_values (rt->plans);
  if (!plan_graph_steps (rt, rt->main, error))
    return FALSE;
  for (GList *l = plans; l; l = l->next)
    if (l->data != rt->main && !plan_graph_steps (rt, l->data, error))
      return FALSE;
  return TRUE;
}
