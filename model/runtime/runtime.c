#include "runtime/runtime.h"
#include "runtime/function-call.h"

#include <cblas.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include "ir/fixed-branch.h"
#include "ir/graph-check.h"
#include "runtime/op.h"
#include "runtime/kernels/aten-args.h"
#include "runtime/fusion-patterns.h"
#include "runtime/qdq-fusion.h"
#include "runtime/worker-pool.h"

#define NO_SLOT G_MAXUINT
#define NO_STEP G_MAXUINT

typedef struct {
  guint up;      /* how many frames up the value lives */
  guint slot;    /* NO_SLOT: omitted optional input */
} ValueRef;

typedef struct _Step {
  GraftNode *node;
  const GraftOpSchema *schema;
  gint64 opset;
  guint n_inputs;
  ValueRef *inputs;
  guint n_outputs;
  guint *outputs;
  guint n_release;
  guint *release;
  guint timing_index;
  /* Conv followed by its only consumer Relu/Clip: the clamp runs in the
   * Conv's epilogue and the activation step just forwards its input. */
  gboolean fused;
  float fused_lo, fused_hi;
  gboolean forward_input;
  /* Conv whose only consumer is an Add of a value computed before it (a
   * residual connection): the kernel may add that value in its epilogue
   * (graft_kernel_take_residual); then the Add, and a Relu/Clip after it
   * whose clamp the Conv applies as well, forward input forward_index
   * instead of running. Decided per run: the kernel only takes a
   * residual of its own shape and dtype. A MatMul followed by the Add of
   * a constant (a bias row) works the same way, without a clamp. */
  gboolean has_residual;
  ValueRef residual;
  guint residual_from;      /* NO_STEP, or the Conv step whose taken residual makes this step forward */
  guint forward_index;
  /* Inputs (bit j: input j) that a MatMul reads with their last two axes
   * swapped: each came from a Transpose of just those axes whose only
   * consumer is this step, and that Transpose forwards its input
   * instead of running (see graft_kernel_input_transposed). */
  guint transposed_inputs;
  /* what the kernel derived from a constant input (graft_kernel_derived_keep) */
  gconstpointer derived_key;
  gpointer derived;
  GDestroyNotify derived_free;
  /* A QuantizeLinear closing a DequantizeLinear → op → QuantizeLinear
   * pattern (qdq-fusion.h): the 8-bit step run instead of this one, and
   * the pattern's other steps `absorbed` (skipped). Both only while no
   * observer watches the float values in between. */
  struct _Step *qdq;
  gboolean absorbed;
  /* The first step of a pattern of nodes that one fused step computes
   * (fusion-patterns.h, fuse_patterns): the fused step tried in its place,
   * whose kernel may decline the run's shapes. The pattern's other steps
   * have pattern_at, the first step's index, and are skipped when the
   * fused step ran (Frame.pattern_taken). Both only while no observer
   * watches the values in between. */
  struct _Step *pattern;
  guint pattern_at;         /* NO_STEP, or as above */
  /* An in-place aten op whose first input is a view (aten::slice/select,
   * possibly of a view): the steps that made the views, innermost first.
   * The op's result is written back through each into the tensor the
   * view was taken from (graft_aten_view_write_back). */
  guint n_views;
  guint *views;
} Step;

typedef struct {
  GraftGraph *graph;
  GHashTable *slots;         /* GraftValue* → slot + 1 */
  guint n_slots;
  GraftValue **values;       /* slot → value */
  guint n_steps;
  Step *steps;
  GraftRtTensor **constants; /* slot → initializer, or NULL */
  /* State (main graph only): after a run, the tensor of slot
   * state_values[k] becomes the constant of slot state_buffers[k]
   * (GraftValue.writes_back_to). */
  guint n_state;
  guint *state_values;
  guint *state_buffers;
} Plan;

struct _GraftRuntime {
  GraftModel *model;
  GHashTable *plans;         /* GraftGraph* → Plan* */
  Plan *main;
  GraftRtPool *pool;
  GraftWorkerPool *workers;
  guint n_threads;
  gboolean profiling;
  GArray *timings;           /* GraftNodeTiming, by Step.timing_index */
  GMutex run_lock;           /* one run at a time: frames share the pool and timings */
  GPtrArray *inputs;
  GPtrArray *outputs;
  GHashTable *function_bodies; /* calling GraftNode* → its own copy of the function body (owned) */
  GHashTable *function_opsets; /* such a body → the function's opset imports */
  GHashTable *function_depths; /* such a body → how many calls deep it is */
  double max_seconds;          /* 0: no limit */
  guint64 max_bytes;           /* 0: no limit */
  GraftRuntimeObserveFunc observe;
  gpointer observe_data;
  gboolean drop_derived;       /* derived weights made per run, not kept */
  gboolean observe_subgraphs;
};

typedef struct {
  GraftRuntime *runtime;
  GCancellable *cancellable;
  GraftRuntimeProgressFunc progress;
  gpointer progress_data;
  guint done;
  gint64 deadline;           /* g_get_monotonic_time() limit, 0: none */
  GHashTable *module_attributes;  /* qualified name → GraftRtTensor*, set by prim::SetAttr; NULL until then */
} RunState;

typedef struct _Frame Frame;
struct _Frame {
  Plan *plan;
  GraftRtTensor **values;
  Frame *parent;
  gboolean *residual_taken;  /* per step: the Conv added its residual this run */
  gboolean *pattern_taken;   /* per step: its fused pattern step ran (Step.pattern) */
};

typedef struct {
  RunState *run;
  Frame *frame;
  Step *step;
  gboolean *donatable;       /* per input: the frame's reference is the last one */
} EngineCtx;

/* ------------------------------------------------------------------ */
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

/* ------------------------------------------------------------------ */
/* Planning                                                            */

static void
step_clear (Step *step)
{
  g_free (step->inputs);
  g_free (step->outputs);
  g_free (step->release);
  g_free (step->views);
  if (step->derived_free)
    step->derived_free (step->derived);
  if (step->qdq)
    {
      step_clear (step->qdq);
      g_free (step->qdq);
    }
  if (step->pattern)
    {
      step_clear (step->pattern);
      g_free (step->pattern);
    }
}

static void
plan_free (Plan *plan)
{
  for (guint i = 0; i < plan->n_steps; i++)
    step_clear (&plan->steps[i]);
  g_free (plan->steps);
  for (guint i = 0; i < plan->n_slots; i++)
    if (plan->constants[i])
      graft_rt_tensor_unref (plan->constants[i]);
  g_free (plan->constants);
  g_free (plan->state_values);
  g_free (plan->state_buffers);
  g_free (plan->values);
  g_hash_table_destroy (plan->slots);
  g_free (plan);
}

static guint
plan_slot (Plan *plan, GraftValue *value)
{
  gpointer p = g_hash_table_lookup (plan->slots, value);
  return p ? GPOINTER_TO_UINT (p) - 1 : NO_SLOT;
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

static gboolean
value_ref (GraftGraph *graph, GraftValue *value, ValueRef *ref, GraftRuntime *rt, GError **error)
{
  guint up = 0;
  GraftGraph *g = graph;
  while (g != NULL && g != value->graph)
    {
      g = g->parent_graph;
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
  ref->slot = plan_slot (owner, value);
  return TRUE;
}

static guint timing_counter_add (GraftRuntime *rt, GraftNode *node)
{
  GraftNodeTiming t = { node, 0, 0, 0, NULL };
  g_array_append_val (rt->timings, t);
  return rt->timings->len - 1;
}

static Plan *
plan_new_slots (GraftGraph *graph)
{
  Plan *plan = g_new0 (Plan, 1);
  plan->graph = graph;
  plan->slots = g_hash_table_new (g_direct_hash, g_direct_equal);
  plan->n_slots = graph->values->len;
  plan->values = g_new0 (GraftValue *, plan->n_slots);
  plan->constants = g_new0 (GraftRtTensor *, plan->n_slots);
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *v = graph->values->pdata[i];
      g_hash_table_insert (plan->slots, v, GUINT_TO_POINTER (i + 1));
      plan->values[i] = v;
    }
  return plan;
}

static gboolean plan_graph_steps (GraftRuntime *rt, Plan *plan, GError **error);

/* The step computing value, from step_of (value → 1 + step), or NO_STEP. */
static guint
producer_step (GHashTable *step_of, GraftValue *value)
{
  gpointer p = value ? g_hash_table_lookup (step_of, value) : NULL;
  return p ? GPOINTER_TO_UINT (p) - 1 : NO_STEP;
}

/* When act is a Relu/Clip of input that runs after step i, gives step i
 * act's clamp and returns act's step; NULL otherwise. */
static Step *
fuse_clamp (Plan *plan, GHashTable *step_of, guint i, GraftNode *act, GraftValue *input)
{
  float lo, hi;
  if (act == NULL || act->outputs->len != 1 || !graft_fusion_activation_bounds (act, input, &lo, &hi))
    return NULL;
  guint j = producer_step (step_of, act->outputs->pdata[0]);
  if (j == NO_STEP || j <= i)
    return NULL;
  plan->steps[i].fused = TRUE;
  plan->steps[i].fused_lo = lo;
  plan->steps[i].fused_hi = hi;
  return &plan->steps[j];
}

/* Conv → Add (of a value ready before the Conv) [→ Relu/Clip]: see Step.
 * MatMul → Add (its bias): the same without the clamp. */
static void
fuse_residual (GraftRuntime *rt, Plan *plan, GHashTable *step_of, guint i, GraftNode *add, GraftValue *v)
{
  gboolean matmul = strcmp (plan->steps[i].node->op, "onnx::MatMul") == 0;
  Step *conv = &plan->steps[i];
  if (strcmp (add->op, "onnx::Add") != 0 || add->inputs->len != 2 || add->outputs->len != 1 ||
      add->inputs->pdata[0] == add->inputs->pdata[1])
    return;
  guint index = add->inputs->pdata[0] == v ? 0 : 1;
  GraftValue *r = add->inputs->pdata[1 - index];
  guint r_step = producer_step (step_of, r), add_step = producer_step (step_of, add->outputs->pdata[0]);
  if (r == NULL || (r_step != NO_STEP && r_step >= i) || add_step == NO_STEP ||
      (matmul && plan->steps[add_step].pattern_at != NO_STEP) ||
      !value_ref (plan->graph, r, &conv->residual, rt, NULL))
    return;
  conv->has_residual = TRUE;
  plan->steps[add_step].residual_from = i;
  plan->steps[add_step].forward_index = index;
  if (matmul)
    return;

  GraftValue *sum;
  GraftNode *act = graft_fusion_sole_reader (add, &sum);
  Step *act_step = fuse_clamp (plan, step_of, i, act, sum);
  if (act_step)
    act_step->residual_from = i;
}

/* A Transpose whose perm swaps the last two axes and keeps the others. */
static gboolean
swaps_last_two_axes (GraftNode *node)
{
  guint n;
  const gint64 *perm = graft_node_attr_ints (node, "perm", &n);
  if (strcmp (node->op, "onnx::Transpose") != 0 || perm == NULL || n < 2 || node->inputs->len != 1)
    return FALSE;
  for (guint d = 0; d + 2 < n; d++)
    if (perm[d] != d)
      return FALSE;
  return perm[n - 2] == n - 1 && perm[n - 1] == n - 2;
}

/* MatMul (A, Transpose (X) of the last two axes): the MatMul reads X as a
 * transposed B and the Transpose, its only consumer being the MatMul,
 * forwards X (a decoder's QKᵀ over its key cache). */
static void
fuse_transposed_b (Plan *plan, GHashTable *step_of, guint i)
{
  GraftNode *node = plan->steps[i].node;
  GraftValue *b = node->inputs->len == 2 ? node->inputs->pdata[1] : NULL, *v;
  if (strcmp (node->op, "onnx::MatMul") != 0 || b == NULL || b == node->inputs->pdata[0] || b->producer == NULL ||
      !swaps_last_two_axes (b->producer) || graft_fusion_sole_reader (b->producer, &v) != node)
    return;
  guint t = producer_step (step_of, b);
  if (t == NO_STEP || t >= i)
    return;
  plan->steps[t].forward_input = TRUE;
  plan->steps[t].forward_index = 0;
  plan->steps[i].transposed_inputs |= 1u << 1;
}

/* Each step's output values to the step's index + 1 (producer_step). */
static GHashTable *
plan_step_of_outputs (Plan *plan)
{
  GHashTable *step_of = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < plan->n_steps; i++)
    for (guint j = 0; j < plan->steps[i].node->outputs->len; j++)
      if (plan->steps[i].node->outputs->pdata[j])
        g_hash_table_insert (step_of, plan->steps[i].node->outputs->pdata[j], GUINT_TO_POINTER (i + 1));
  return step_of;
}

/* Each step's node to the step's index + 1. */
static GHashTable *
plan_step_of_nodes (Plan *plan)
{
  GHashTable *step_of_node = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < plan->n_steps; i++)
    g_hash_table_insert (step_of_node, plan->steps[i].node, GUINT_TO_POINTER (i + 1));
  return step_of_node;
}

static void
fuse_activations (GraftRuntime *rt, Plan *plan)
{
  g_autoptr(GHashTable) step_of = plan_step_of_outputs (plan);

  for (guint i = 0; i < plan->n_steps; i++)
    {
      fuse_transposed_b (plan, step_of, i);
      if (strcmp (plan->steps[i].node->op, "onnx::Conv") != 0)
        continue;
      GraftValue *v;
      GraftNode *next = graft_fusion_sole_reader (plan->steps[i].node, &v);
      Step *act_step = fuse_clamp (plan, step_of, i, next, v);
      if (act_step)
        act_step->forward_input = TRUE;
      else if (next)
        fuse_residual (rt, plan, step_of, i, next, v);
    }
}

static GraftRtTensor *
plan_constant (GraftValue *v, gpointer user_data)
{
  Plan *plan = user_data;
  guint slot = v->graph == plan->graph ? plan_slot (plan, v) : NO_SLOT;
  return slot == NO_SLOT ? NULL : plan->constants[slot];
}

static gboolean
is_graph_output (GraftGraph *graph, GraftValue *v)
{
  if (graft_value_leaves_run (v))
    return TRUE;
  for (guint k = 0; k < graph->outputs->len; k++)
    if (graph->outputs->pdata[k] == v)
      return TRUE;
  return FALSE;
}

/* Node's values are read only by steps that step_of_node (node → 1 +
 * step) says are absorbed, and none is a graph output. */
static gboolean
feeds_only_absorbed (Plan *plan, GHashTable *step_of_node, GraftNode *node)
{
  for (guint j = 0; j < node->outputs->len; j++)
    {
      GraftValue *v = node->outputs->pdata[j];
      if (v == NULL)
        continue;
      if (is_graph_output (plan->graph, v))
        return FALSE;
      for (guint k = 0; v->consumers && k < v->consumers->len; k++)
        {
          guint c = GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, v->consumers->pdata[k]));
          if (c == 0 || !plan->steps[c - 1].absorbed)
            return FALSE;
        }
    }
  return TRUE;
}

/* A fused step gives the outputs of the step `closing` and releases
 * nothing (the planned steps still release their values). */
static void
fused_step_finish (Step *fused, const Step *closing, guint timing_index)
{
  fused->n_outputs = closing->n_outputs;
  fused->outputs = g_memdup2 (closing->outputs, sizeof (guint) * MAX (closing->n_outputs, 1));
  fused->release = g_new (guint, 1);
  fused->timing_index = timing_index;
  fused->residual_from = NO_STEP;
  fused->pattern_at = NO_STEP;
}

/* The 8-bit step for a QDQ pattern closed by step i, or NULL. Its inputs
 * now live until step i (last_use). */
static Step *
qdq_step_new (GraftRuntime *rt, Plan *plan, guint i, const GraftQdqFusion *f, guint op_step, guint *last_use)
{
  const GraftOpSchema *schema = graft_op_registry_lookup (f->op, f->opset);
  if (schema == NULL)
    return NULL;
  Step *fused = g_new0 (Step, 1);
  fused->node = f->node;
  fused->schema = schema;
  fused->opset = f->opset;
  fused->n_inputs = f->n_inputs;
  fused->inputs = g_new (ValueRef, MAX (f->n_inputs, 1));
  for (guint j = 0; j < f->n_inputs; j++)
    {
      GraftValue *v = f->inputs[j];
      fused->inputs[j] = (ValueRef) { 0, NO_SLOT };
      if (v == NULL)
        continue;
      if (!value_ref (plan->graph, v, &fused->inputs[j], rt, NULL))
        {
          step_clear (fused);
          g_free (fused);
          return NULL;
        }
      guint slot = v->graph == plan->graph ? plan_slot (plan, v) : NO_SLOT;
      if (slot != NO_SLOT && (last_use[slot] == NO_SLOT || last_use[slot] < i))
        last_use[slot] = i;
    }
  /* profiles show the time on the float op the 8-bit step replaces */
  fused_step_finish (fused, &plan->steps[i], plan->steps[op_step].timing_index);
  return fused;
}

/* DequantizeLinear → Conv/Gemm/Add/pool → QuantizeLinear patterns run as
 * one 8-bit step (qdq-fusion.h); a DequantizeLinear whose every reader
 * is fused is skipped too. */
static void
fuse_qdq (GraftRuntime *rt, Plan *plan, guint *last_use)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  g_autoptr(GPtrArray) dequantize = g_ptr_array_new ();
  for (guint i = 0; i < plan->n_steps; i++)
    {
      GraftQdqFusion f;
      if (!graft_qdq_fusion_match (plan->steps[i].node, plan->steps[i].opset, plan_constant, plan, &f))
        continue;
      guint op_step = GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, f.node));
      if (op_step == 0 || op_step - 1 >= i || plan->steps[op_step - 1].fused || plan->steps[op_step - 1].has_residual)
        continue;
      Step *fused = qdq_step_new (rt, plan, i, &f, op_step - 1, last_use);
      if (fused == NULL)
        continue;
      plan->steps[i].qdq = fused;
      plan->steps[op_step - 1].absorbed = TRUE;
      for (guint k = 0; k < f.n_dequantize; k++)
        g_ptr_array_add (dequantize, f.dequantize[k]);
    }
  for (guint k = 0; k < dequantize->len; k++)
    {
      guint d = GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, dequantize->pdata[k]));
      if (d != 0 && feeds_only_absorbed (plan, step_of_node, dequantize->pdata[k]))
        plan->steps[d - 1].absorbed = TRUE;
    }
}

static gint64
step_opset_of (GraftNode *node, gpointer data)
{
  Plan *plan = ((gpointer *) data)[0];
  GHashTable *step_of_node = ((gpointer *) data)[1];
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, node));
  return i ? plan->steps[i - 1].opset : -1;
}

/* A step left as planned by the other fusions. */
static gboolean
step_unfused (const Step *step)
{
  return !step->fused && !step->forward_input && !step->has_residual && step->residual_from == NO_STEP &&
         step->qdq == NULL && !step->absorbed && step->pattern == NULL && step->pattern_at == NO_STEP;
}

/* A step a fused pattern may take in: left as planned, or a Conv with
 * the clamp of its Relu/Clip or the residual of its Add, and that
 * activation or Add forwarding (fuse_activations): they run as planned
 * when the fused kernel declines, and not at all when it runs. */
static gboolean
step_free_for_pattern (const Step *step)
{
  return step->qdq == NULL && !step->absorbed && step->pattern == NULL && step->pattern_at == NO_STEP;
}

/* v, the output of a Constant node, becomes a plan constant (in every
 * frame from the start) so that a fused step placed before that node
 * can read it; the node still runs, giving the same tensor. */
static gboolean
preload_constant (Plan *plan, GraftValue *v)
{
  GraftAttribute *a = strcmp (v->producer->op, "onnx::Constant") == 0 && v->producer->inputs->len == 0
                      ? graft_node_get_attribute (v->producer, "value") : NULL;
  guint slot = plan_slot (plan, v);
  if (a == NULL || a->t == NULL || slot == NO_SLOT)
    return FALSE;
  if (plan->constants[slot] == NULL)
    plan->constants[slot] = graft_rt_tensor_new_from_tensor (a->t, NULL);
  return plan->constants[slot] != NULL;
}

/* The fused step (schema at opset) computing the pattern of nodes that
 * starts at step i and whose last node gives its outputs, or NULL. Each
 * node must have a step of its own, after the previous node's, free for a
 * pattern (step_free_for_pattern). The inputs must all be ready at step i;
 * they stay alive until the pattern's later steps read them anyway. */
static Step *
pattern_step_new (GraftRuntime *rt, Plan *plan, guint i, const GraftOpSchema *schema, gint64 opset,
                  GraftValue *const *inputs, guint n_inputs, GraftNode *const *nodes, guint n_nodes,
                  GHashTable *step_of_node)
{
  guint last = i;
  for (guint k = 0; k < n_nodes; k++)
    {
      guint s = GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, nodes[k]));
      if (s == 0 || (k == 0) != (s - 1 == i) || (k > 0 && s - 1 <= last) ||
          !step_free_for_pattern (&plan->steps[s - 1]) || (k > 0 && plan->steps[s - 1].transposed_inputs != 0))
        return NULL;
      last = s - 1;
    }
  Step *fused = g_new0 (Step, 1);
  fused->node = plan->steps[i].node;
  fused->schema = schema;
  fused->opset = opset;
  fused->n_inputs = n_inputs;
  fused->inputs = g_new (ValueRef, MAX (n_inputs, 1));
  for (guint j = 0; j < n_inputs; j++)
    {
      GraftValue *v = inputs[j];
      fused->inputs[j] = (ValueRef) { 0, NO_SLOT };
      gpointer producer = v && v->producer ? g_hash_table_lookup (step_of_node, v->producer) : NULL;
      if (v != NULL && ((producer && GPOINTER_TO_UINT (producer) - 1 >= i && !preload_constant (plan, v)) ||
                        !value_ref (plan->graph, v, &fused->inputs[j], rt, NULL)))
        {
          step_clear (fused);
          g_free (fused);
          return NULL;
        }
    }
  fused_step_finish (fused, &plan->steps[last], plan->steps[i].timing_index);
  return fused;
}

static Step *
step_of (Plan *plan, GHashTable *step_of_node, GraftNode *node)
{
  guint i = node ? GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, node)) : 0;
  return i ? &plan->steps[i - 1] : NULL;
}

/* The pattern's last node, a Conv, applied the clamp of the Relu/Clip
 * after it (fuse_activations), which then only forwards: the fused step
 * computes the Conv without that clamp (ShuffleNet's 1×1 Conv → Relu
 * after the depthwise layer), so the activation runs again, and so does
 * one after a residual Add the Conv would take. */
static void
unfuse_last_clamp (Plan *plan, Step *last, GHashTable *step_of_node)
{
  if (!last->fused)
    return;
  last->fused = FALSE;
  GraftValue *v;
  GraftNode *next = graft_fusion_sole_reader (last->node, &v);
  Step *next_step = step_of (plan, step_of_node, next);
  if (next_step == NULL)
    return;
  next_step->forward_input = FALSE;
  GraftNode *after_add = graft_fusion_sole_reader (next, &v);
  Step *act_step = step_of (plan, step_of_node, after_add);
  if (act_step && act_step->residual_from == (guint) (last - plan->steps))
    act_step->residual_from = NO_STEP;
}

/* Step i opens the pattern of nodes that step `fused` computes (see Step). */
static void
pattern_set (Plan *plan, guint i, Step *fused, GraftNode *const *nodes, guint n_nodes, GHashTable *step_of_node)
{
  plan->steps[i].pattern = fused;
  for (guint k = 1; k < n_nodes; k++)
    step_of (plan, step_of_node, nodes[k])->pattern_at = i;
  unfuse_last_clamp (plan, step_of (plan, step_of_node, nodes[n_nodes - 1]), step_of_node);
}

/* Patterns of nodes run as one fused step: attention (MatMul → [Mul/Div]
 * → [Add] → Softmax → MatMul, as one blocked attention step when the
 * kernel takes the run's shapes), the erf GELU (as onnx::Gelu, whose
 * kernel reads the Div's attributes: none, so approximate = "none") and
 * a 1×1 Conv → [Relu/Clip] → depthwise Conv → [Relu/Clip] [→ 1×1 Conv
 * [→ Add of the first Conv's input]] (MobileNet's inverted residual, as
 * one banded step whose kernel finds the pattern's nodes again from the
 * first one), and ConvInteger → Cast → Mul → [Add] [→ Add] [→ Relu]
 * (quantize_dynamic's convolutions), and Reshape → InstanceNormalization
 * → Reshape → Mul → Add [→ SiLU] (an exported GroupNorm). */
static void
fuse_patterns (GraftRuntime *rt, Plan *plan)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  gpointer opset_data[2] = { plan, step_of_node };
  const GraftOpSchema *attention = graft_op_registry_lookup (GRAFT_ATTENTION_FUSION_OP, 1);
  const GraftOpSchema *gelu = graft_op_registry_lookup ("onnx::Gelu", 20);
  const GraftOpSchema *pointwise_depthwise = graft_op_registry_lookup (GRAFT_POINTWISE_DEPTHWISE_FUSION_OP, 1);
  const GraftOpSchema *conv_integer_float = graft_op_registry_lookup (GRAFT_CONV_INTEGER_FLOAT_FUSION_OP, 1);
  const GraftOpSchema *group_norm = graft_op_registry_lookup (GRAFT_GROUP_NORM_FUSION_OP, 1);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      GraftAttentionFusion f;
      GraftGroupNormFusion norm;
      GraftPointwiseDepthwiseFusion conv;
      GraftConvIntegerFloatFusion integer;
      GraftNode *nodes[GRAFT_GELU_FUSION_N_NODES];
      Step *fused = NULL;
      if (plan->steps[i].pattern_at != NO_STEP)
        continue;
      if (attention && graft_attention_fusion_match (plan->steps[i].node, step_opset_of, opset_data, &f) &&
          (fused = pattern_step_new (rt, plan, i, attention, 1, f.inputs, GRAFT_ATTENTION_FUSION_N_INPUTS, f.nodes,
                                     f.n_nodes, step_of_node)) != NULL)
        {
          /* the first MatMul may read its Kᵀ untransposed (fuse_transposed_b) */
          fused->transposed_inputs = plan->steps[i].transposed_inputs & (1u << GRAFT_ATTENTION_FUSION_KT);
          pattern_set (plan, i, fused, f.nodes, f.n_nodes, step_of_node);
        }
      else if (gelu && graft_gelu_fusion_match (plan->steps[i].node, nodes) &&
               (fused = pattern_step_new (rt, plan, i, gelu, 20, (GraftValue **) nodes[0]->inputs->pdata, 1, nodes,
                                          GRAFT_GELU_FUSION_N_NODES,
                                          step_of_node)) != NULL)
        pattern_set (plan, i, fused, nodes, GRAFT_GELU_FUSION_N_NODES, step_of_node);
      else if (pointwise_depthwise && graft_pointwise_depthwise_fusion_match (plan->steps[i].node, &conv) &&
               (fused = pattern_step_new (rt, plan, i, pointwise_depthwise, 1, conv.inputs,
                                          GRAFT_POINTWISE_DEPTHWISE_FUSION_N_INPUTS, conv.nodes, conv.n_nodes,
                                          step_of_node)) != NULL)
        pattern_set (plan, i, fused, conv.nodes, conv.n_nodes, step_of_node);
      else if (group_norm && graft_group_norm_fusion_match (plan->steps[i].node, &norm) &&
               (fused = pattern_step_new (rt, plan, i, group_norm, 1, norm.inputs, GRAFT_GROUP_NORM_FUSION_N_INPUTS,
                                          norm.nodes, norm.n_nodes, step_of_node)) != NULL)
        pattern_set (plan, i, fused, norm.nodes, norm.n_nodes, step_of_node);
      else if (conv_integer_float && graft_conv_integer_float_fusion_match (plan->steps[i].node, &integer))
        {
          /* without the second Add (and its Relu) when its other operand
           * comes later than the convolution (ResNet's downsample branch) */
          fused = pattern_step_new (rt, plan, i, conv_integer_float, 1, integer.inputs,
                                    GRAFT_CONV_INTEGER_FLOAT_FUSION_N_INPUTS, integer.nodes, integer.n_nodes,
                                    step_of_node);
          guint n_nodes = integer.n_nodes;
          if (fused == NULL && integer.inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD2] != NULL)
            {
              integer.inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD2] = NULL;
              n_nodes = integer.n_nodes_to_first_add;
              fused = pattern_step_new (rt, plan, i, conv_integer_float, 1, integer.inputs,
                                        GRAFT_CONV_INTEGER_FLOAT_FUSION_N_INPUTS, integer.nodes, n_nodes,
                                        step_of_node);
            }
          if (fused != NULL)
            pattern_set (plan, i, fused, integer.nodes, n_nodes, step_of_node);
        }
    }
}

/* MatMul → Add of a value ready before the MatMul (a bias, which the
 * kernel takes when it is one row), outside the fused patterns. */
static void
fuse_matmul_bias (GraftRuntime *rt, Plan *plan)
{
  g_autoptr(GHashTable) step_of = plan_step_of_outputs (plan);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      GraftValue *v;
      GraftNode *next = strcmp (plan->steps[i].node->op, "onnx::MatMul") == 0 && step_unfused (&plan->steps[i])
                        ? graft_fusion_sole_reader (plan->steps[i].node, &v) : NULL;
      if (next)
        fuse_residual (rt, plan, step_of, i, next, v);
    }
}

/* Creates the slot maps of graph and its subgraphs first (steps refer to
 * outer plans' slots), then the steps. */
static void
register_plans (GraftRuntime *rt, GraftGraph *graph)
{
  g_hash_table_insert (rt->plans, graph, plan_new_slots (graph));
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      g_autoptr(GPtrArray) subs = graft_node_get_live_subgraphs (graph->nodes->pdata[i]);
      for (guint k = 0; subs && k < subs->len; k++)
        register_plans (rt, subs->pdata[k]);
    }
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
  if (!plan_graph_steps (rt, g_hash_table_lookup (rt->plans, graph), error))
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

/* The views step's in-place op writes through (Step.views); their inputs
 * stay alive until it ran. */
static void
plan_view_write_back (Plan *plan, Step *step, GHashTable *step_of, guint *last_use, guint at)
{
  g_autoptr(GArray) views = g_array_new (FALSE, FALSE, sizeof (guint));
  GraftValue *v = step->node->inputs->pdata[0];
  for (; v != NULL && v->producer != NULL && graft_aten_is_view (v->producer); v = v->producer->inputs->pdata[0])
    {
      guint index = GPOINTER_TO_UINT (g_hash_table_lookup (step_of, v->producer));
      if (index == 0 || v->producer->inputs->len == 0)
        break;
      guint view_step = index - 1;
      Step *view = &plan->steps[view_step];
      g_array_append_val (views, view_step);
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
      guint value_slot = v->writes_back_to ? plan_slot (plan, v) : NO_SLOT;
      guint buffer_slot = buffer ? plan_slot (plan, buffer) : NO_SLOT;
      if (value_slot == NO_SLOT || buffer_slot == NO_SLOT || plan->constants[buffer_slot] == NULL)
        continue;
      plan->state_values[plan->n_state] = value_slot;
      plan->state_buffers[plan->n_state++] = buffer_slot;
    }
}

static gboolean
plan_slot_is_state (const Plan *plan, guint slot)
{
  for (guint k = 0; k < plan->n_state; k++)
    if (plan->state_buffers[k] == slot)
      return TRUE;
  return FALSE;
}

/* After a complete run, each mutated buffer takes its new value (a copy:
 * the run's tensor may share memory the pool hands out again), as
 * ep.module() assigns it; a value of another dtype is refused. */
static gboolean
write_back_state (Plan *plan, GraftRtTensor **values, GError **error)
{
  for (guint k = 0; k < plan->n_state; k++)
    {
      GraftRtTensor *updated = values[plan->state_values[k]];
      GraftRtTensor **buffer = &plan->constants[plan->state_buffers[k]];
      GraftValue *target = plan->values[plan->state_buffers[k]];
      if (updated == NULL)
        continue;
      if (updated->dtype != (*buffer)->dtype)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                       "the run gives buffer '%s' a %s value; it holds %s", target->name,
                       graft_dtype_to_string (updated->dtype), graft_dtype_to_string ((*buffer)->dtype));
          return FALSE;
        }
      GraftRtTensor *copy = graft_rt_tensor_copy (updated, error);
      if (copy == NULL)
        return FALSE;
      graft_rt_tensor_unref (*buffer);
      *buffer = copy;
    }
  return TRUE;
}

static gboolean
plan_graph_steps (GraftRuntime *rt, Plan *plan, GError **error)
{
  GraftGraph *graph = plan->graph;
  g_autoptr(GPtrArray) order = NULL;

  if (!topological_order (graph, &order, error))
    return FALSE;

  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftValue *v = graph->initializers->pdata[i];
      guint slot = plan_slot (plan, v);
      if (slot == NO_SLOT || v->initializer == NULL || plan->constants[slot])
        continue;
      plan->constants[slot] = graft_rt_tensor_new_from_tensor (v->initializer, error);
      if (plan->constants[slot] == NULL)
        return FALSE;
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
      step->node = node;
      step->opset = plan_opset (rt, graph, node);
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
          for (GraftValue *w; (w = g_hash_table_lookup (mutated, v)) != NULL;)
            {
              v = w;
              guint slot = plan_slot (plan, v);
              if (slot != NO_SLOT)
                last_use[slot] = i;
            }
          if (!value_ref (graph, v, &step->inputs[j], rt, error))
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
          step->outputs[j] = v ? plan_slot (plan, v) : NO_SLOT;
        }
      g_autoptr(GPtrArray) deps = node_dependencies (node);
      for (guint j = 0; j < deps->len; j++)
        {
          GraftValue *v = deps->pdata[j];
          if (v->graph == graph)
            {
              guint slot = plan_slot (plan, v);
              if (slot != NO_SLOT)
                last_use[slot] = i;
            }
        }
      step->timing_index = timing_counter_add (rt, node);
      step->residual_from = NO_STEP;
      step->pattern_at = NO_STEP;
      if (is_inplace_aten (node) && node->inputs->len > 0 && node->outputs->len > 0 && node->inputs->pdata[0] &&
          node->outputs->pdata[0] && ((GraftValue *) node->inputs->pdata[0])->graph == graph &&
          node->inputs->pdata[0] != node->outputs->pdata[0])
        {
          g_hash_table_insert (mutated, node->inputs->pdata[0], node->outputs->pdata[0]);
          plan_view_write_back (plan, step, step_of, last_use, i);
        }
      g_hash_table_insert (step_of, node, GUINT_TO_POINTER (i + 1));
    }

  if (!g_getenv ("GRAFT_NO_FUSION"))
    {
      fuse_activations (rt, plan);
      fuse_qdq (rt, plan, last_use);
      fuse_patterns (rt, plan);
      fuse_matmul_bias (rt, plan);
    }

  /* Free values after their last use, except graph outputs and constants. */
  g_autofree guint *n_release = g_new0 (guint, MAX (plan->n_steps, 1));
  for (guint s = 0; s < plan->n_slots; s++)
    {
      GraftValue *v = plan->values[s];
      if (last_use[s] == NO_SLOT || graft_value_leaves_run (v) || plan->constants[s])
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
      if (last_use[s] == NO_SLOT || plan->constants[s] || graft_value_leaves_run (plan->values[s]))
        continue;
      Step *step = &plan->steps[last_use[s]];
      step->release[step->n_release++] = s;
    }
  return TRUE;
}

GraftRuntime *
graft_runtime_new (GraftModel *model, GError **error)
{
  g_autoptr(GPtrArray) unsupported = NULL;

  /* Kernels trust SSA, order and attribute ranges: an invalid graph would
   * run to a wrong answer (or read out of bounds), so it does not run. */
  if (graft_model_get_graph (model) && !graft_graph_validate_structure (graft_model_get_graph (model), error))
    return NULL;
  if (!graft_runtime_check_supported (model, &unsupported, error))
    return NULL;
  if (unsupported->len > 0)
    {
      g_autofree char *list = graft_runtime_describe_unsupported (model, unsupported);
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                   "the runtime does not support %s", list);
      return NULL;
    }

  GraftRuntime *rt = g_new0 (GraftRuntime, 1);
  long pages = sysconf (_SC_PHYS_PAGES), page_size = sysconf (_SC_PAGESIZE);
  rt->max_seconds = GRAFT_RUNTIME_DEFAULT_SECONDS;
  rt->max_bytes = pages > 0 && page_size > 0 ? (guint64) pages * (guint64) page_size / 4 * 3 : 0;
  rt->model = g_object_ref (model);
  rt->plans = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) plan_free);
  rt->pool = graft_rt_pool_new ();
  rt->timings = g_array_new (FALSE, TRUE, sizeof (GraftNodeTiming));
  rt->n_threads = 1;
  g_mutex_init (&rt->run_lock);
  rt->function_bodies = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) graft_graph_free);
  rt->function_opsets = g_hash_table_new (g_direct_hash, g_direct_equal);
  rt->function_depths = g_hash_table_new (g_direct_hash, g_direct_equal);

  GraftGraph *graph = graft_model_get_graph (model);
  register_plans (rt, graph);
  rt->main = g_hash_table_lookup (rt->plans, graph);

  /* Main graph first so that its nodes come first in the timings. */
  g_autoptr(GList) plans = g_hash_table_get_values (rt->plans);
  if (!plan_graph_steps (rt, rt->main, error))
    {
      graft_runtime_free (rt);
      return NULL;
    }
  for (GList *l = plans; l; l = l->next)
    if (l->data != rt->main && !plan_graph_steps (rt, l->data, error))
      {
        graft_runtime_free (rt);
        return NULL;
      }

  rt->inputs = g_ptr_array_new ();
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *v = graph->inputs->pdata[i];
      if (v->initializer == NULL)
        g_ptr_array_add (rt->inputs, v);
    }
  rt->outputs = g_ptr_array_copy (graph->outputs, NULL, NULL);
  return rt;
}

void
graft_runtime_free (GraftRuntime *self)
{
  if (self == NULL)
    return;
  g_hash_table_destroy (self->plans);
  g_hash_table_destroy (self->function_bodies);
  g_hash_table_destroy (self->function_opsets);
  g_hash_table_destroy (self->function_depths);
  graft_worker_pool_free (self->workers);
  graft_rt_pool_unref (self->pool);
  g_array_unref (self->timings);
  g_clear_pointer (&self->inputs, g_ptr_array_unref);
  g_clear_pointer (&self->outputs, g_ptr_array_unref);
  g_mutex_clear (&self->run_lock);
  g_object_unref (self->model);
  g_free (self);
}

GraftModel *
graft_runtime_get_model (GraftRuntime *self)
{
  return self->model;
}

void
graft_runtime_set_n_threads (GraftRuntime *self, guint n_threads)
{
  n_threads = CLAMP (n_threads, 1, 256);
  if (n_threads == self->n_threads && (self->workers != NULL || n_threads == 1))
    return;
  graft_worker_pool_free (self->workers);
  self->workers = n_threads > 1 ? graft_worker_pool_new (n_threads) : NULL;
  self->n_threads = n_threads;
}

void
graft_runtime_set_keep_derived_weights (GraftRuntime *self, gboolean keep)
{
  self->drop_derived = !keep;
}

void
graft_runtime_set_limits (GraftRuntime *self, double seconds, guint64 bytes)
{
  self->max_seconds = MAX (seconds, 0);
  self->max_bytes = bytes;
}

void
graft_runtime_get_limits (GraftRuntime *self, double *seconds, guint64 *bytes)
{
  if (seconds)
    *seconds = self->max_seconds;
  if (bytes)
    *bytes = self->max_bytes;
}

guint
graft_runtime_get_n_threads (GraftRuntime *self)
{
  return self->n_threads;
}

GPtrArray *
graft_runtime_get_inputs (GraftRuntime *self)
{
  return self->inputs;
}

GPtrArray *
graft_runtime_get_outputs (GraftRuntime *self)
{
  return self->outputs;
}

void
graft_runtime_set_observer (GraftRuntime *self, GraftRuntimeObserveFunc func, gpointer user_data)
{
  self->observe = func;
  self->observe_data = user_data;
}

void
graft_runtime_set_observe_subgraphs (GraftRuntime *self, gboolean enabled)
{
  self->observe_subgraphs = enabled;
}

void
graft_runtime_set_profiling (GraftRuntime *self, gboolean enabled)
{
  self->profiling = enabled;
}

GArray *
graft_runtime_get_timings (GraftRuntime *self)
{
  return self->timings;
}

gboolean
graft_node_timing_is_fused (const GraftNodeTiming *t)
{
  return t->calls > 0 && t->fused_calls == t->calls && t->fused_op != NULL;
}

void
graft_runtime_reset_timings (GraftRuntime *self)
{
  for (guint i = 0; i < self->timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (self->timings, GraftNodeTiming, i);
      t->seconds = 0;
      t->calls = t->fused_calls = 0;
    }
}

/* A symbolic dim with a range (torch.export's range_constraints) refuses
 * sizes outside it, as the exported program does in PyTorch. */
static gboolean
check_dim_ranges (GraftRuntime *self, GraftValue *input, GraftRtTensor *tensor, GError **error)
{
  GraftModel *model = graft_runtime_get_model (self);
  GraftGraph *graph = graft_model_get_graph (model);
  guint position = 0;

  g_ptr_array_find (graph->inputs, input, &position);
  for (int i = 0; i < tensor->rank; i++)
    {
      const GraftDim *dim = &input->shape.dims[i];
      gint64 min, max;

      if (dim->kind != GRAFT_DIM_SYMBOLIC || !graft_model_get_dim_range (model, dim->symbol, &min, &max))
        continue;
      if (tensor->dims[i] >= min && (max < 0 || tensor->dims[i] <= max))
        continue;
      g_autofree char *range = max < 0 ? g_strdup_printf ("[%" G_GINT64_FORMAT ", ∞)", min)
                               : g_strdup_printf ("[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", min, max);
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "input '%s' dim %d (%s) is %" G_GINT64_FORMAT ", outside its range %s; the exported program "
                   "refuses it in PyTorch too (expected *args[%u].shape[%d] to be %s %" G_GINT64_FORMAT ")",
                   input->name, i, dim->symbol, tensor->dims[i], range, position, i,
                   tensor->dims[i] < min ? ">=" : "<=", tensor->dims[i] < min ? min : max);
      return FALSE;
    }
  return TRUE;
}

gboolean
graft_runtime_check_input (GraftRuntime *self, GraftValue *input, GraftRtTensor *tensor, GError **error)
{
  g_autofree char *expected = graft_shape_to_string (&input->shape);
  g_autofree char *got = graft_rt_tensor_describe (tensor);
  const char *want_dtype = graft_dtype_to_string (input->dtype);

  if (input->kind == GRAFT_VALUE_SEQUENCE)
    {
      if (tensor->kind != GRAFT_RT_SEQUENCE)
        return graft_kernel_fail (error, "input '%s' expects a sequence (%s), got %s",
                                  input->name, input->type_string ? input->type_string : "", got);
      return TRUE;
    }
  if (input->kind == GRAFT_VALUE_OPTIONAL && tensor->kind != GRAFT_RT_TENSOR)
    return TRUE;
  if (tensor->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "input '%s' expects a tensor %s[%s], got %s",
                              input->name, want_dtype, expected, got);
  if (input->dtype != GRAFT_DTYPE_UNDEFINED && tensor->dtype != input->dtype)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "input '%s' expects element type %s (shape %s), got %s",
                   input->name, want_dtype, expected, got);
      return FALSE;
    }
  if (input->shape.rank >= 0)
    {
      gboolean ok = input->shape.rank == tensor->rank;
      for (int i = 0; ok && i < tensor->rank; i++)
        if (input->shape.dims[i].kind == GRAFT_DIM_FIXED && input->shape.dims[i].value != tensor->dims[i])
          ok = FALSE;
      if (!ok)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "input '%s' expects shape %s (%s), got %s",
                       input->name, expected, want_dtype, got);
          return FALSE;
        }
      return check_dim_ranges (self, input, tensor, error);
    }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Execution                                                           */

static GPtrArray *run_plan (RunState *run, Plan *plan, Frame *parent,
                            GraftRtTensor **inputs, guint n_inputs, GError **error);

static GraftRtTensor *
frame_get (Frame *frame, ValueRef ref)
{
  for (guint i = 0; i < ref.up && frame; i++)
    frame = frame->parent;
  if (frame == NULL || ref.slot == NO_SLOT)
    return NULL;
  return frame->values[ref.slot];
}

static void
infer_value_from_tensor (GraftInferValue *iv, GraftRtTensor *t)
{
  iv->present = t != NULL;
  iv->data = t;
  iv->shape = GRAFT_SHAPE_UNKNOWN;
  if (t == NULL)
    return;
  iv->dtype = t->dtype;
  switch (t->kind)
    {
    case GRAFT_RT_TENSOR:
      iv->kind = GRAFT_VALUE_TENSOR;
      graft_shape_init_fixed (&iv->shape, t->rank, t->dims);
      break;
    case GRAFT_RT_SEQUENCE:
      iv->kind = GRAFT_VALUE_SEQUENCE;
      break;
    case GRAFT_RT_NONE:
      iv->kind = GRAFT_VALUE_OPTIONAL;
      break;
    }
}

/* Input j reaches the step untransposed (see Step.transposed_inputs);
 * never while observing, when every Transpose runs. */
static gboolean
step_input_transposed (RunState *run, Step *step, guint j)
{
  return j < 32 && (step->transposed_inputs & (1u << j)) && run->runtime->observe == NULL;
}

static gboolean
is_half (GraftRtTensor *t)
{
  return t && t->kind == GRAFT_RT_TENSOR &&
         (t->dtype == GRAFT_DTYPE_FLOAT16 || t->dtype == GRAFT_DTYPE_BFLOAT16);
}

static void
frame_set (Frame *frame, ValueRef ref, GraftRtTensor *tensor /* transfer full */)
{
  for (guint i = 0; i < ref.up && frame; i++)
    frame = frame->parent;
  if (frame == NULL || ref.slot == NO_SLOT)
    {
      graft_rt_tensor_unref (tensor);
      return;
    }
  g_clear_pointer (&frame->values[ref.slot], graft_rt_tensor_unref);
  frame->values[ref.slot] = tensor;
}

/* After an in-place op on a view: its result written into the tensor each
 * view of the chain was taken from, up to the first, whose slot (read by
 * the nodes after, as in PyTorch, where the view shares its memory) then
 * holds the changed tensor. */
static gboolean
write_through_views (Frame *frame, Step *step, GraftRtTensor *written, GError **error)
{
  if (written == NULL)
    return TRUE;
  g_autoptr(GraftRtTensor) value = graft_rt_tensor_ref (written);
  for (guint k = 0; k < step->n_views; k++)
    {
      Step *view = &frame->plan->steps[step->views[k]];
      g_autofree GraftRtTensor **inputs = g_new0 (GraftRtTensor *, MAX (view->n_inputs, 1));
      for (guint j = 0; j < view->n_inputs; j++)
        inputs[j] = frame_get (frame, view->inputs[j]);
      if (inputs[0] == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                       "the tensor that view '%s' was taken from is gone", view->node->name);
          return FALSE;
        }
      GraftKernelContext vctx = { view->node, view->schema, view->opset, view->n_inputs, inputs, 0, NULL, NULL, NULL };
      GraftRtTensor *changed = graft_aten_view_write_back (&vctx, value, error);
      if (changed == NULL)
        {
          g_prefix_error (error, "writing through view '%s': ", view->node->name);
          return FALSE;
        }
      g_clear_pointer (&value, graft_rt_tensor_unref);
      value = graft_rt_tensor_ref (changed);
      frame_set (frame, view->inputs[0], changed);
    }
  return TRUE;
}

/* declined: NULL, or where a kernel that may decline the run (a fused
 * step whose nodes then run) says so by producing no output. */
static gboolean
run_step (RunState *run, Frame *frame, Step *step, gboolean *declined, GError **error)
{
  GraftNode *node = step->node;
  g_autofree GraftRtTensor **inputs = g_new0 (GraftRtTensor *, MAX (step->n_inputs, 1));
  g_autofree GraftRtTensor **converted = g_new0 (GraftRtTensor *, MAX (step->n_inputs, 1));
  g_autofree GraftRtTensor **outputs = g_new0 (GraftRtTensor *, MAX (step->n_outputs, 1));
  g_autofree GraftInferValue *in_info = g_new0 (GraftInferValue, MAX (step->n_inputs, 1));
  g_autofree GraftInferValue *out_info = g_new0 (GraftInferValue, MAX (step->n_outputs, 1));
  g_autofree gboolean *donatable = NULL;   /* before any goto */
  GraftDType half_type = GRAFT_DTYPE_UNDEFINED;
  gboolean ok = FALSE;

  for (guint j = 0; j < step->n_inputs; j++)
    {
      if (step->inputs[j].slot == NO_SLOT)
        continue;
      inputs[j] = frame_get (frame, step->inputs[j]);
      if (inputs[j] == NULL)
        {
          GraftValue *v = node->inputs->pdata[j];
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "node '%s' (%s): input '%s' has no value (not fed and not computed)",
                       node->name, node->op, v->name);
          return FALSE;
        }
      if ((step->schema->flags & GRAFT_OP_HALF_AS_FLOAT) && is_half (inputs[j]))
        {
          half_type = inputs[j]->dtype;
          converted[j] = graft_rt_tensor_cast (inputs[j], GRAFT_DTYPE_FLOAT32, error);
          if (converted[j] == NULL)
            goto out;
          inputs[j] = converted[j];
        }
    }

  if (run->runtime->observe == NULL &&
      (step->forward_input || (step->residual_from != NO_STEP && frame->residual_taken[step->residual_from])))
    {
      /* the producing Conv already applied this activation (or residual Add) */
      if (step->n_outputs > 0 && step->outputs[0] != NO_SLOT)
        {
          GraftRtTensor **slot = &frame->values[step->outputs[0]];
          g_clear_pointer (slot, graft_rt_tensor_unref);
          *slot = graft_rt_tensor_ref (frame_get (frame, step->inputs[step->forward_index]));   /* not a float32 copy */
        }
      ok = TRUE;
      goto out;
    }

  for (guint j = 0; j < step->n_inputs; j++)
    {
      infer_value_from_tensor (&in_info[j], inputs[j]);
      /* the shape the skipped Transpose would have given */
      if (step_input_transposed (run, step, j) && in_info[j].shape.rank >= 2)
        {
          GraftDim *dims = in_info[j].shape.dims, last = dims[in_info[j].shape.rank - 1];
          dims[in_info[j].shape.rank - 1] = dims[in_info[j].shape.rank - 2];
          dims[in_info[j].shape.rank - 2] = last;
        }
    }
  for (guint j = 0; j < step->n_outputs; j++)
    out_info[j].shape = GRAFT_SHAPE_UNKNOWN;

  const char *missing = graft_op_schema_missing_first_input (step->schema, node);
  if (missing != NULL)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "input '%s' is missing", missing);
      goto out;
    }
  if (step->schema->infer)
    {
      GraftInferContext ictx = { node, step->opset, step->n_inputs, in_info, step->n_outputs, out_info };
      if (!step->schema->infer (&ictx, error))
        goto out;
    }

  /* Inputs at their last use, held only by this frame and passed once,
   * may be overwritten by the kernel (in-place activations, Add). */
  donatable = g_new0 (gboolean, MAX (step->n_inputs, 1));
  for (guint j = 0; j < step->n_inputs; j++)
    {
      GraftRtTensor *t = inputs[j];
      if (t == NULL || converted[j] || step->inputs[j].up != 0 || t->kind != GRAFT_RT_TENSOR ||
          !graft_rt_tensor_is_writable (t) || g_atomic_int_get (&t->ref_count) != 1)
        continue;
      gboolean released = FALSE, once = TRUE;
      for (guint r = 0; r < step->n_release; r++)
        released |= step->release[r] == step->inputs[j].slot;
      for (guint k = 0; k < step->n_inputs; k++)
        if (k != j && inputs[k] == t)
          once = FALSE;
      donatable[j] = released && once;
    }
  EngineCtx ectx = { run, frame, step, donatable };
  GraftKernelContext kctx = {
    node, step->schema, step->opset,
    step->n_inputs, inputs, step->n_outputs, outputs, out_info, &ectx,
  };
  if (!step->schema->kernel (&kctx, error))
    goto out;

  if (declined && step->n_outputs > 0 && outputs[0] == NULL)
    {
      *declined = TRUE;
      ok = TRUE;
      goto out;
    }
  for (guint j = 0; j < step->n_outputs; j++)
    {
      if (step->outputs[j] == NO_SLOT)
        continue;
      if (outputs[j] == NULL)
        {
          GraftValue *v = node->outputs->pdata[j];
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                       "output '%s' was not produced", v->name);
          goto out;
        }
      if (half_type != GRAFT_DTYPE_UNDEFINED && outputs[j]->kind == GRAFT_RT_TENSOR &&
          outputs[j]->dtype == GRAFT_DTYPE_FLOAT32)
        {
          GraftRtTensor *h = graft_rt_tensor_cast (outputs[j], half_type, error);
          if (h == NULL)
            goto out;
          graft_rt_tensor_unref (outputs[j]);
          outputs[j] = h;
        }
    }
  if (step->n_views > 0 && step->n_outputs > 0 && !write_through_views (frame, step, outputs[0], error))
    goto out;
  for (guint j = 0; j < step->n_outputs; j++)
    if (step->outputs[j] != NO_SLOT)
      {
        GraftRtTensor **slot = &frame->values[step->outputs[j]];
        if (*slot)
          graft_rt_tensor_unref (*slot);
        *slot = g_steal_pointer (&outputs[j]);
      }
  ok = TRUE;

out:
  if (!ok && error && *error && !g_str_has_prefix ((*error)->message, "node '"))
    g_prefix_error (error, "node '%s' (%s): ", node->name, node->op);
  for (guint j = 0; j < step->n_inputs; j++)
    {
      graft_shape_clear (&in_info[j].shape);
      if (converted[j])
        graft_rt_tensor_unref (converted[j]);
    }
  for (guint j = 0; j < step->n_outputs; j++)
    {
      graft_shape_clear (&out_info[j].shape);
      if (outputs[j])
        graft_rt_tensor_unref (outputs[j]);
    }
  return ok;
}

static void
frame_clear (Frame *frame)
{
  for (guint s = 0; s < frame->plan->n_slots; s++)
    if (frame->values[s])
      graft_rt_tensor_unref (frame->values[s]);
  g_free (frame->values);
  g_free (frame->residual_taken);
  g_free (frame->pattern_taken);
}

/* Checked before every step, in subgraphs too (a Loop of an empty body
 * still enters its plan once per iteration). */
static gboolean
within_limits (RunState *run, GError **error)
{
  GraftRuntime *rt = run->runtime;

  if (g_cancellable_set_error_if_cancelled (run->cancellable, error))
    return FALSE;
  if (run->deadline && g_get_monotonic_time () > run->deadline)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_TOO_LARGE,
                   "the run took longer than its time limit of %g s", rt->max_seconds);
      return FALSE;
    }
  gint64 live = graft_rt_tensor_get_live_bytes ();
  if (rt->max_bytes && live > 0 && (guint64) live > rt->max_bytes)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_TOO_LARGE,
                   "the run holds %" G_GINT64_FORMAT " MiB of tensors, past its memory limit of %" G_GUINT64_FORMAT " MiB",
                   live >> 20, rt->max_bytes >> 20);
      return FALSE;
    }
  return TRUE;
}

/* The step that runs for planned step `step`: its fused 8-bit step, or
 * NULL when a fused step computes what it would; an observer sees the
 * plan as written. */
static Step *
step_to_run (GraftRuntime *rt, Step *step)
{
  if (rt->observe != NULL)
    return step;
  if (step->absorbed)
    return NULL;
  return step->qdq ? step->qdq : step;
}

static GPtrArray *
run_plan (RunState *run, Plan *plan, Frame *parent, GraftRtTensor **inputs, guint n_inputs, GError **error)
{
  GraftRuntime *rt = run->runtime;
  GraftGraph *graph = plan->graph;
  Frame frame = { plan, g_new0 (GraftRtTensor *, MAX (plan->n_slots, 1)), parent,
                  g_new0 (gboolean, MAX (plan->n_steps, 1)), g_new0 (gboolean, MAX (plan->n_steps, 1)) };
  GPtrArray *result = NULL;

  if (!within_limits (run, error))
    goto out;
  for (guint s = 0; s < plan->n_slots; s++)
    if (plan->constants[s])
      frame.values[s] = graft_rt_tensor_ref (plan->constants[s]);
  for (guint i = 0; i < graph->inputs->len && i < n_inputs; i++)
    {
      if (inputs[i] == NULL)
        continue;
      guint slot = plan_slot (plan, graph->inputs->pdata[i]);
      if (slot == NO_SLOT)
        continue;
      if (frame.values[slot])
        graft_rt_tensor_unref (frame.values[slot]);
      frame.values[slot] = graft_rt_tensor_ref (inputs[i]);
    }

  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      if (!within_limits (run, error))
        goto out;
      Step *runs = step_to_run (rt, step);
      gint64 start = rt->profiling ? g_get_monotonic_time () : 0;
      if (runs && runs->pattern && rt->observe == NULL)
        {
          gboolean declined = FALSE;
          if (!run_step (run, &frame, runs->pattern, &declined, error))
            goto out;
          frame.pattern_taken[i] = !declined;
        }
      if (runs && runs->pattern_at != NO_STEP && rt->observe == NULL && frame.pattern_taken[runs->pattern_at])
        runs = NULL;
      if (runs && !frame.pattern_taken[i] && !run_step (run, &frame, runs, NULL, error))
        goto out;
      for (guint j = 0; j < step->n_outputs; j++)
        {
          GraftRtTensor *out = step->outputs[j] != NO_SLOT ? frame.values[step->outputs[j]] : NULL;
          if (out && out->dtype == GRAFT_DTYPE_STRING)
            graft_rt_tensor_count_string_bytes (out);
        }
      if (rt->profiling && runs)
        {
          GraftNodeTiming *t = &g_array_index (rt->timings, GraftNodeTiming, runs->timing_index);
          t->seconds += (g_get_monotonic_time () - start) / 1e6;
          t->calls++;
          if (frame.pattern_taken[i])
            {
              t->fused_calls++;
              t->fused_op = step->pattern->schema->name;
            }
        }
      if ((plan == rt->main || rt->observe_subgraphs) && rt->observe)
        for (guint j = 0; j < step->n_outputs; j++)
          if (step->outputs[j] != NO_SLOT && frame.values[step->outputs[j]])
            rt->observe (step->node, step->node->outputs->pdata[j], frame.values[step->outputs[j]], rt->observe_data);
      for (guint r = 0; r < step->n_release; r++)
        g_clear_pointer (&frame.values[step->release[r]], graft_rt_tensor_unref);
      if (plan == rt->main)
        {
          run->done++;
          if (run->progress)
            run->progress (run->done, plan->n_steps, run->progress_data);
        }
    }

  result = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < graph->outputs->len; i++)
    {
      GraftValue *v = graph->outputs->pdata[i];
      ValueRef ref;
      GraftRtTensor *t = NULL;
      if (value_ref (graph, v, &ref, rt, NULL))
        t = frame_get (&frame, ref);
      if (t == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                       "graph output '%s' was not computed", v->name);
          g_clear_pointer (&result, g_ptr_array_unref);
          goto out;
        }
      g_ptr_array_add (result, graft_rt_tensor_ref (t));
    }
  if (!write_back_state (plan, frame.values, error))
    g_clear_pointer (&result, g_ptr_array_unref);

out:
  frame_clear (&frame);
  return result;
}

GPtrArray *
graft_runtime_run (GraftRuntime *self, GHashTable *inputs, GCancellable *cancellable,
                   GraftRuntimeProgressFunc progress, gpointer progress_data, GError **error)
{
  GraftGraph *graph = self->main->graph;
  g_autofree GraftRtTensor **feed = g_new0 (GraftRtTensor *, MAX (graph->inputs->len, 1));
  g_autoptr(GPtrArray) left_out = NULL;
  RunState run = { self, cancellable, progress, progress_data, 0,
                   self->max_seconds > 0 ? g_get_monotonic_time () + (gint64) (self->max_seconds * 1e6) : 0 };

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *v = graph->inputs->pdata[i];
      GraftRtTensor *t = inputs ? g_hash_table_lookup (inputs, v->name) : NULL;
      if (t == NULL && v->initializer == NULL && v->kind != GRAFT_VALUE_OPTIONAL)
        {
          g_autofree char *shape = graft_shape_to_string (&v->shape);
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "input '%s' (%s[%s]) was not given", v->name,
                       graft_dtype_to_string (v->dtype), shape);
          return NULL;
        }
      if (t != NULL && !graft_runtime_check_input (self, v, t, error))
        return NULL;
      /* an Optional left out is None (TorchScript's forward(x, mask=None)) */
      if (t == NULL && v->initializer == NULL)
        {
          if (left_out == NULL)
            left_out = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
          t = graft_rt_tensor_new_none (v->dtype);
          g_ptr_array_add (left_out, t);
        }
      feed[i] = t;
    }

  g_mutex_lock (&self->run_lock);
  /* BLAS stays single-threaded: kernels split big products over the worker pool
   * (graft_kernel_sgemm); OpenBLAS threads spinning between calls would take
   * the cores the pool needs */
  openblas_set_num_threads (1);
  graft_rt_tensor_set_thread_limit (self->max_bytes);
  GPtrArray *outputs = run_plan (&run, self->main, NULL, feed, graph->inputs->len, error);
  graft_rt_tensor_set_thread_limit (0);
  g_clear_pointer (&run.module_attributes, g_hash_table_unref);
  g_mutex_unlock (&self->run_lock);
  return outputs;
}

typedef struct {
  GraftRuntime *runtime;
  GHashTable *inputs;
  GraftRuntimeProgressFunc progress;
  gpointer progress_data;
} AsyncData;

static void
async_data_free (AsyncData *data)
{
  g_hash_table_unref (data->inputs);
  g_free (data);
}

static void
run_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  AsyncData *data = task_data;
  GraftRuntime *self = data->runtime;
  GError *error = NULL;
  GPtrArray *outputs = graft_runtime_run (self, data->inputs, cancellable, data->progress, data->progress_data, &error);
  if (outputs)
    g_task_return_pointer (task, outputs, (GDestroyNotify) g_ptr_array_unref);
  else
    g_task_return_error (task, error);
}

void
graft_runtime_run_async (GraftRuntime *self, GHashTable *inputs, GCancellable *cancellable,
                         GraftRuntimeProgressFunc progress, gpointer progress_data,
                         GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);
  AsyncData *data = g_new0 (AsyncData, 1);
  data->runtime = self;
  data->inputs = g_hash_table_ref (inputs);
  data->progress = progress;
  data->progress_data = progress_data;
  g_task_set_source_tag (task, graft_runtime_run_async);
  g_task_set_task_data (task, data, (GDestroyNotify) async_data_free);
  g_task_run_in_thread (task, run_thread);
  g_object_unref (task);
}

GPtrArray *
graft_runtime_run_finish (GraftRuntime *self, GAsyncResult *result, GError **error)
{
  return g_task_propagate_pointer (G_TASK (result), error);
}

/* ------------------------------------------------------------------ */
/* Kernel context                                                      */

GraftRtTensor *
graft_kernel_input (GraftKernelContext *ctx, guint i)
{
  return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

static GraftRtPool *
ctx_pool (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx->engine;
  return e ? e->run->runtime->pool : NULL;
}

GraftRtTensor *
graft_kernel_alloc_output (GraftKernelContext *ctx, guint i, GraftDType dtype, int rank,
                           const gint64 *dims, GError **error)
{
  if (i >= ctx->n_outputs)
    {
      /* Asked for an output the node does not have: give a scratch tensor. */
      return graft_rt_tensor_new_pooled (ctx_pool (ctx), dtype, rank, dims, error);
    }
  GraftRtTensor *t = graft_rt_tensor_new_pooled (ctx_pool (ctx), dtype, rank, dims, error);
  if (t == NULL)
    return NULL;
  if (ctx->outputs[i])
    graft_rt_tensor_unref (ctx->outputs[i]);
  ctx->outputs[i] = t;
  return t;
}

GraftRtTensor *
graft_kernel_output (GraftKernelContext *ctx, guint i, GError **error)
{
  GraftInferValue *info = i < ctx->n_outputs ? &ctx->inferred[i] : NULL;
  if (info == NULL || !info->present || !graft_shape_is_fully_fixed (&info->shape) ||
      info->dtype == GRAFT_DTYPE_UNDEFINED)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "the shape of output %u could not be determined", i);
      return NULL;
    }
  gint64 dims[GRAFT_RT_MAX_RANK];
  if (info->shape.rank > GRAFT_RT_MAX_RANK)
    return graft_kernel_unsupported (error, "rank %d is above %d", info->shape.rank, GRAFT_RT_MAX_RANK), NULL;
  for (int d = 0; d < info->shape.rank; d++)
    dims[d] = info->shape.dims[d].value;
  return graft_kernel_alloc_output (ctx, i, info->dtype, info->shape.rank, dims, error);
}

void
graft_kernel_set_output (GraftKernelContext *ctx, guint i, GraftRtTensor *tensor)
{
  if (i >= ctx->n_outputs)
    {
      graft_rt_tensor_unref (tensor);
      return;
    }
  if (ctx->outputs[i])
    graft_rt_tensor_unref (ctx->outputs[i]);
  ctx->outputs[i] = tensor;
}

GraftRtTensor *
graft_kernel_steal_input (GraftKernelContext *ctx, guint i)
{
  EngineCtx *e = ctx->engine;
  if (e == NULL || i >= ctx->n_inputs || !e->donatable[i])
    return NULL;
  GraftRtTensor **slot = &e->frame->values[e->step->inputs[i].slot];
  if (*slot != ctx->inputs[i])
    return NULL;
  e->donatable[i] = FALSE;
  return g_steal_pointer (slot);
}

GraftRtTensor *
graft_kernel_scratch (GraftKernelContext *ctx, gsize nbytes, GError **error)
{
  gint64 n = (nbytes + 3) / 4;
  return graft_rt_tensor_new_pooled (ctx ? ctx_pool (ctx) : NULL, GRAFT_DTYPE_FLOAT32, 1, &n, error);
}

gpointer
graft_kernel_derived_lookup (GraftKernelContext *ctx, gconstpointer input_data, GDestroyNotify destroy)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || e->step->derived_key == NULL || e->step->derived_key != input_data ||
      e->step->derived_free != destroy)
    return NULL;
  return e->step->derived;
}

/* Input i's tensor is its plan's initializer (not a fed or computed value). */
static gboolean
input_is_constant (EngineCtx *e, guint i)
{
  ValueRef ref = e->step->inputs[i];
  Frame *frame = e->frame;
  for (guint up = 0; up < ref.up && frame; up++)
    frame = frame->parent;
  if (frame == NULL || ref.slot == NO_SLOT)
    return FALSE;
  GraftRtTensor *constant = frame->plan->constants[ref.slot];
  /* a buffer a run writes back changes between runs: nothing derived from it is kept */
  return constant != NULL && frame->values[ref.slot] == constant && !plan_slot_is_state (frame->plan, ref.slot);
}

gboolean
graft_kernel_derived_keep (GraftKernelContext *ctx, gconstpointer input_data, gpointer derived, GDestroyNotify destroy)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || input_data == NULL || e->run->runtime->drop_derived)
    return FALSE;
  gboolean constant = FALSE;
  for (guint i = 0; i < ctx->n_inputs && !constant; i++)
    constant = ctx->inputs[i] && ctx->inputs[i]->data == input_data && input_is_constant (e, i);
  if (!constant)
    return FALSE;
  if (e->step->derived_free)
    e->step->derived_free (e->step->derived);
  e->step->derived_key = input_data;
  e->step->derived = derived;
  e->step->derived_free = destroy;
  return TRUE;
}

static gboolean
residual_taken (EngineCtx *e)
{
  return e->frame->residual_taken[e->step - e->frame->plan->steps];
}

GraftRtTensor *
graft_kernel_get_residual (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || !e->step->has_residual || e->run->runtime->observe)
    return NULL;
  return frame_get (e->frame, e->step->residual);
}

void
graft_kernel_take_residual (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  g_return_if_fail (e != NULL && e->step != NULL && e->step->has_residual);
  e->frame->residual_taken[e->step - e->frame->plan->steps] = TRUE;
}

gboolean
graft_kernel_input_transposed (GraftKernelContext *ctx, guint i)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  return e != NULL && e->step != NULL && step_input_transposed (e->run, e->step, i);
}

gboolean
graft_kernel_get_fused_clamp (GraftKernelContext *ctx, float *lo, float *hi)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  /* a clamp after a residual Add belongs after the Add */
  if (e == NULL || e->step == NULL || !e->step->fused || (e->step->has_residual && !residual_taken (e)) ||
      e->run->runtime->observe)
    return FALSE;
  *lo = e->step->fused_lo;
  *hi = e->step->fused_hi;
  return TRUE;
}

gboolean
graft_kernel_wants_output (GraftKernelContext *ctx, guint i)
{
  return i < ctx->n_outputs && ctx->node->outputs->pdata[i] != NULL;
}

GPtrArray *
graft_kernel_run_subgraph (GraftKernelContext *ctx, GraftGraph *graph, GraftRtTensor **inputs,
                           guint n_inputs, GError **error)
{
  EngineCtx *e = ctx->engine;
  Plan *plan = g_hash_table_lookup (e->run->runtime->plans, graph);
  if (plan == NULL)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "subgraph '%s' was not planned", graph->name ? graph->name : "");
      return NULL;
    }
  return run_plan (e->run, plan, e->frame, inputs, n_inputs, error);
}

void
graft_kernel_parallel_for (GraftKernelContext *ctx, gint64 n, GraftParallelFunc func, gpointer data)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  graft_worker_pool_run (e ? e->run->runtime->workers : NULL, n, func, data);
}

GHashTable *
graft_kernel_module_attributes (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL)
    return NULL;
  if (e->run->module_attributes == NULL)
    e->run->module_attributes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                       (GDestroyNotify) graft_rt_tensor_unref);
  return e->run->module_attributes;
}

guint
graft_kernel_get_n_threads (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  return e ? e->run->runtime->n_threads : 1;
}
