/* The fusions the planner makes over a graph's steps: a Relu/Clip or a
 * residual Add into the Conv before it, a bias Add into a MatMul, a
 * Transpose into the MatMul reading it, QDQ patterns as 8-bit steps and
 * node patterns (fusion-patterns.h) as one fused step; in PyTorch files,
 * a batch_norm folded into the aten convolution before it, a residual
 * add [and relu] or an activation into that convolution, and steps whose
 * values no step then needs left out. A fused step is only tried while
 * no observer watches the values it skips. */
#include "runtime/runtime-private.h"

#include <math.h>
#include <string.h>
#include "ir/file-bytes.h"
#include "ir/fixed-branch.h"
#include "runtime/fusion-patterns.h"
#include "runtime/kernels/aten-args.h"
#include "runtime/qdq-fusion.h"

/* The step computing value, from step_of (value → 1 + step), or NO_STEP. */
static guint
producer_step (GHashTable *step_of, GraftValue *value)
{
  gpointer p = value ? g_hash_table_lookup (step_of, value) : NULL;
  return p ? GPOINTER_TO_UINT (p) - 1 : NO_STEP;
}

static gboolean is_graph_output (const Plan *plan, GraftValue *v);

/* node runs as a step of plan: a node of its graph or of a branch
 * inlined into it (Plan.aliases). */
static gboolean
in_plan (const Plan *plan, GraftNode *node)
{
  return node->graph == plan->graph ||
         (plan->inlined_graphs != NULL && g_ptr_array_find (plan->inlined_graphs, node->graph, NULL));
}

/* The reads of v in plan, as pairs (node, the value it reads) into
 * readers: v's consumers and those of the inlined Ifs' outputs standing
 * for v (Plan.aliased, which the steps read as v), without the nodes of
 * untaken branches, which never run. FALSE when v or such an If output is
 * a graph output or a reader is no step of plan (a subgraph's node). */
static gboolean
plan_readers (const Plan *plan, GraftValue *v, GPtrArray *readers)
{
  GPtrArray *aliases = plan->aliased ? g_hash_table_lookup (plan->aliased, v) : NULL;
  for (guint a = 0; a <= (aliases ? aliases->len : 0); a++)
    {
      GraftValue *w = a == 0 ? v : aliases->pdata[a - 1];
      if (is_graph_output (plan, w))
        return FALSE;
      for (guint k = 0; w->consumers && k < w->consumers->len; k++)
        {
          GraftNode *reader = w->consumers->pdata[k];
          if (_graft_node_in_untaken_branch (reader))
            continue;
          if (!in_plan (plan, reader))
            return FALSE;
          g_ptr_array_add (readers, reader);
          g_ptr_array_add (readers, w);
        }
    }
  return TRUE;
}

/* The one node reading node's only output in plan (plan_readers; it reads
 * *out_value, that output or an inlined If's output standing for it), or
 * NULL. An in-place op's input that a later node reads (as TorchScript
 * reads a mutated tensor by its old name) has two readers: an aten::add_
 * whose mutated input is read later is no residual Add to fuse. */
static GraftNode *
plan_sole_reader (const Plan *plan, GraftNode *node, GraftValue **out_value)
{
  GraftValue *v = node->outputs->len == 1 ? node->outputs->pdata[0] : NULL;
  g_autoptr(GPtrArray) readers = g_ptr_array_new ();
  *out_value = v;
  if (v == NULL || _graft_plan_value_leaves_run (plan, v) || !plan_readers (plan, v, readers) || readers->len != 2)
    return NULL;
  *out_value = readers->pdata[1];
  return readers->pdata[0];
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

/* An Add of two values: onnx::Add, or aten::add(_) of two tensors with
 * alpha 1 (a PyTorch file's residual `out += identity`). */
static gboolean
is_plain_add (GraftNode *add)
{
  GraftValue *alpha_value = NULL;
  GraftAttribute *alpha = NULL;
  if (add->inputs->len != 2 || add->outputs->len != 1 || add->inputs->pdata[0] == add->inputs->pdata[1])
    return FALSE;
  if (strcmp (add->op, "onnx::Add") == 0)
    return TRUE;
  if (strcmp (add->op, "aten::add") != 0 && strcmp (add->op, "aten::add_") != 0)
    return FALSE;
  alpha = graft_aten_node_arg (add, 2, &alpha_value);
  if (alpha == NULL)
    return alpha_value == NULL;
  return (alpha->type == GRAFT_ATTR_INT && alpha->i == 1) || (alpha->type == GRAFT_ATTR_FLOAT && alpha->f == 1);
}

/* Conv → Add (of a value ready before the Conv) [→ Relu/Clip]: see Step.
 * MatMul → Add (its bias): the same without the clamp. An aten
 * convolution [→ folded batch_norm] → aten::add(_) [→ aten::relu(_)]
 * the same way as Conv. */
static void
fuse_residual (GraftRuntime *rt, Plan *plan, GHashTable *step_of, guint i, GraftNode *add, GraftValue *v)
{
  gboolean matmul = strcmp (plan->steps[i].node->op, "onnx::MatMul") == 0;
  Step *conv = &plan->steps[i];
  if (!is_plain_add (add))
    return;
  guint index = add->inputs->pdata[0] == v ? 0 : 1;
  GraftValue *r = _graft_plan_resolve (plan, add->inputs->pdata[1 - index]);
  guint r_step = producer_step (step_of, r), add_step = producer_step (step_of, add->outputs->pdata[0]);
  /* the Add reads r itself, not the result of an in-place op on it
   * (runtime-plan.c's `mutated`) */
  if (r == NULL || (r_step != NO_STEP && r_step >= i) || add_step == NO_STEP ||
      (matmul && plan->steps[add_step].pattern_at != NO_STEP) ||
      !_graft_plan_value_ref (plan->graph, r, &conv->residual, rt, NULL) ||
      plan->steps[add_step].inputs[1 - index].up != conv->residual.up ||
      plan->steps[add_step].inputs[1 - index].slot != conv->residual.slot)
    return;
  conv->has_residual = TRUE;
  plan->steps[add_step].residual_from = i;
  plan->steps[add_step].forward_index = index;
  if (matmul)
    return;

  GraftValue *sum;
  GraftNode *act = plan_sole_reader (plan, add, &sum);
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
  /* a Transpose of constants ran when the plan was made (fold_constant_steps):
   * B is its output, already transposed */
  if (t == NO_STEP || t >= i || plan->steps[t].absorbed)
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
      if (strcmp (plan->steps[i].node->op, "onnx::Conv") != 0 || plan->steps[i].absorbed)
        continue;
      GraftValue *v;
      /* after a folded Mul/Add, what reads the last of them (they forward the Conv's output) */
      GraftNode *next = graft_fusion_sole_reader (plan->steps[i].fold_last ? plan->steps[i].fold_last
                                                                            : plan->steps[i].node, &v);
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
  guint slot = _graft_plan_slot (plan, v);   /* NO_SLOT for an outer graph's value */
  return slot == NO_SLOT ? NULL : plan->constants[slot];
}

static gboolean
is_graph_output (const Plan *plan, GraftValue *v)
{
  if (_graft_plan_value_leaves_run (plan, v))
    return TRUE;
  for (guint k = 0; k < plan->graph->outputs->len; k++)
    if (plan->graph->outputs->pdata[k] == v)
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
      if (is_graph_output (plan, v))
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
      if (!_graft_plan_value_ref (plan->graph, v, &fused->inputs[j], rt, NULL))
        {
          _graft_step_clear (fused);
          g_free (fused);
          return NULL;
        }
      guint slot = v->graph == plan->graph ? _graft_plan_slot (plan, v) : NO_SLOT;
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
  /* a fused kernel reads a Conv's own weight, and would compute a Mul that forwards a folded one again */
  return step->qdq == NULL && !step->absorbed && step->pattern == NULL && step->pattern_at == NO_STEP &&
         step->folded_weight == NULL && !step->fold_forwards;
}

/* v, the output of a Constant node, becomes a plan constant (in every
 * frame from the start) so that a fused step placed before that node
 * can read it; the node still runs, giving the same tensor. */
static gboolean
preload_constant (Plan *plan, GraftValue *v)
{
  GraftAttribute *a = strcmp (v->producer->op, "onnx::Constant") == 0 && v->producer->inputs->len == 0
                      ? graft_node_get_attribute (v->producer, "value") : NULL;
  guint slot = _graft_plan_slot (plan, v);
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
      /* (a value computed later is ready when a plan constant: Gemma's
       * RMSNorm scale, 1 + weight, computed after the norm) */
      if (v != NULL && ((producer && GPOINTER_TO_UINT (producer) - 1 >= i && plan_constant (v, plan) == NULL &&
                         !preload_constant (plan, v)) ||
                        !_graft_plan_value_ref (plan->graph, v, &fused->inputs[j], rt, NULL)))
        {
          _graft_step_clear (fused);
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

/* Step i opens the pattern of nodes that step `fused` computes (see Step);
 * match (match_size bytes, or NULL), the planner's match of the pattern,
 * goes to the fused step's kernel (graft_kernel_get_pattern). */
static void
pattern_set (Plan *plan, guint i, Step *fused, GraftNode *const *nodes, guint n_nodes, gconstpointer match,
             gsize match_size, GHashTable *step_of_node)
{
  fused->pattern_match = match ? g_memdup2 (match, match_size) : NULL;
  plan->steps[i].pattern = fused;
  for (guint k = 1; k < n_nodes; k++)
    step_of (plan, step_of_node, nodes[k])->pattern_at = i;
  unfuse_last_clamp (plan, step_of (plan, step_of_node, nodes[n_nodes - 1]), step_of_node);
}

/* Sorts nodes by their steps: the first one's step, or NO_STEP when one
 * has no step. */
static guint
order_by_step (GHashTable *step_of_node, GraftNode **nodes, guint n_nodes)
{
  for (guint k = 1; k < n_nodes; k++)
    for (guint j = k; j > 0 && GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, nodes[j - 1])) >
                                 GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, nodes[j])); j--)
      {
        GraftNode *t = nodes[j];
        nodes[j] = nodes[j - 1];
        nodes[j - 1] = t;
      }
  guint s = n_nodes ? GPOINTER_TO_UINT (g_hash_table_lookup (step_of_node, nodes[0])) : 0;
  return s ? s - 1 : NO_STEP;
}

/* Patterns of nodes run as one fused step: attention (MatMul → [Mul/Div]
 * → [Add] → Softmax → MatMul, as one blocked attention step when the
 * kernel takes the run's shapes), the erf GELU (as onnx::Gelu, whose
 * kernel reads the Div's attributes: none, so approximate = "none"), the
 * tanh GELU (as onnx::Gelu approximate = "tanh", which the kernel takes
 * from the pattern's match) and
 * a 1×1 Conv → [Relu/Clip] → depthwise Conv → [Relu/Clip] [→ 1×1 Conv
 * [→ Add of the first Conv's input]] (MobileNet's inverted residual, as
 * one banded step whose kernel finds the pattern's nodes again from the
 * first one), and ConvInteger → Cast → Mul → [Add] [→ Add] [→ Relu]
 * (quantize_dynamic's convolutions), Reshape → InstanceNormalization
 * → Reshape → Mul → Add [→ SiLU] (an exported GroupNorm), and Pow →
 * ReduceMean → Add → Sqrt → Reciprocal/Div → Mul → Mul (an exported
 * RMSNorm). */
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
  const GraftOpSchema *rms_norm = graft_op_registry_lookup (GRAFT_RMS_NORM_FUSION_OP, 1);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      GraftAttentionFusion f;
      GraftGroupNormFusion norm;
      GraftRmsNormFusion rms;
      GraftPointwiseDepthwiseFusion conv;
      GraftConvIntegerFloatFusion integer;
      GraftNode *nodes[GRAFT_GELU_FUSION_N_NODES];
      GraftGeluTanhFusion tanh_gelu;
      guint first;
      Step *fused = NULL;
      if (plan->steps[i].pattern_at != NO_STEP)
        continue;
      if (attention && (graft_attention_fusion_match (plan->steps[i].node, step_opset_of, opset_data, &f) ||
                        graft_attention_fusion_match_aten (plan->steps[i].node, &f)) &&
          (fused = pattern_step_new (rt, plan, i, attention, 1, f.inputs, GRAFT_ATTENTION_FUSION_N_INPUTS, f.nodes,
                                     f.n_nodes, step_of_node)) != NULL)
        {
          /* the first MatMul may read its Kᵀ untransposed (fuse_transposed_b) */
          fused->transposed_inputs = plan->steps[i].transposed_inputs & (1u << GRAFT_ATTENTION_FUSION_KT);
          pattern_set (plan, i, fused, f.nodes, f.n_nodes, &f, sizeof f, step_of_node);
        }
      else if (gelu && graft_gelu_fusion_match (plan->steps[i].node, nodes) &&
               (fused = pattern_step_new (rt, plan, i, gelu, 20, (GraftValue **) nodes[0]->inputs->pdata, 1, nodes,
                                          GRAFT_GELU_FUSION_N_NODES,
                                          step_of_node)) != NULL)
        pattern_set (plan, i, fused, nodes, GRAFT_GELU_FUSION_N_NODES, NULL, 0, step_of_node);
      else if (gelu && graft_gelu_tanh_fusion_match (plan->steps[i].node, &tanh_gelu) &&
               (first = order_by_step (step_of_node, tanh_gelu.nodes, tanh_gelu.n_nodes)) != NO_STEP &&
               (fused = pattern_step_new (rt, plan, first, gelu, 20, &tanh_gelu.x, 1, tanh_gelu.nodes,
                                          tanh_gelu.n_nodes, step_of_node)) != NULL)
        /* opened by a step before the Tanh's, which the loop has passed */
        pattern_set (plan, first, fused, tanh_gelu.nodes, tanh_gelu.n_nodes, &tanh_gelu, sizeof tanh_gelu,
                     step_of_node);
      else if (pointwise_depthwise && graft_pointwise_depthwise_fusion_match (plan->steps[i].node, &conv) &&
               (fused = pattern_step_new (rt, plan, i, pointwise_depthwise, 1, conv.inputs,
                                          GRAFT_POINTWISE_DEPTHWISE_FUSION_N_INPUTS, conv.nodes, conv.n_nodes,
                                          step_of_node)) != NULL)
        pattern_set (plan, i, fused, conv.nodes, conv.n_nodes, &conv, sizeof conv, step_of_node);
      else if (group_norm && graft_group_norm_fusion_match (plan->steps[i].node, &norm) &&
               (fused = pattern_step_new (rt, plan, i, group_norm, 1, norm.inputs, GRAFT_GROUP_NORM_FUSION_N_INPUTS,
                                          norm.nodes, norm.n_nodes, step_of_node)) != NULL)
        pattern_set (plan, i, fused, norm.nodes, norm.n_nodes, &norm, sizeof norm, step_of_node);
      else if (rms_norm && (graft_rms_norm_fusion_match (plan->steps[i].node, &rms) ||
                            graft_rms_norm_fusion_match_aten (plan->steps[i].node, &rms)) &&
               (fused = pattern_step_new (rt, plan, i, rms_norm, 1, rms.inputs, GRAFT_RMS_NORM_FUSION_N_INPUTS,
                                          rms.nodes, rms.n_nodes, step_of_node)) != NULL)
        pattern_set (plan, i, fused, rms.nodes, rms.n_nodes, &rms, sizeof rms, step_of_node);
      else if (conv_integer_float && graft_conv_integer_float_fusion_match (plan->steps[i].node, &integer))
        {
          /* without the second Add (and its Relu) when its other operand
           * comes later than the convolution (ResNet's downsample branch) */
          fused = pattern_step_new (rt, plan, i, conv_integer_float, 1, integer.inputs,
                                    GRAFT_CONV_INTEGER_FLOAT_FUSION_N_INPUTS, integer.nodes, integer.n_nodes,
                                    step_of_node);
          if (fused == NULL && integer.inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD2] != NULL)
            {
              integer.inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD2] = NULL;
              integer.n_nodes = integer.n_nodes_to_first_add;
              integer.relu = FALSE;   /* the Relu came after the second Add */
              fused = pattern_step_new (rt, plan, i, conv_integer_float, 1, integer.inputs,
                                        GRAFT_CONV_INTEGER_FLOAT_FUSION_N_INPUTS, integer.nodes, integer.n_nodes,
                                        step_of_node);
            }
          if (fused != NULL)
            pattern_set (plan, i, fused, integer.nodes, integer.n_nodes, &integer, sizeof integer, step_of_node);
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

/* A step after step i that no other fusion took, for the nodes an
 * activation fused into step i's Conv. */
static Step *
free_step_after (Plan *plan, GHashTable *step_of_node, GraftNode *node, guint i)
{
  Step *s = step_of (plan, step_of_node, node);
  return s && (guint) (s - plan->steps) > i && step_unfused (s) && s->transposed_inputs == 0 ? s : NULL;
}

/* Node is op with n_inputs inputs and one output. */
static gboolean
is_simple_node (GraftNode *node, const char *op, guint n_inputs)
{
  return strcmp (node->op, op) == 0 && node->inputs->len == n_inputs && node->outputs->len == 1 &&
         node->outputs->pdata[0] != NULL;
}

/* The Mul of v by the output of sigmoid, v's Sigmoid, where these two
 * are all v's readers and the Mul is the Sigmoid's only one, the
 * Sigmoid's output not a graph output (a SiLU as torch.onnx.export writes
 * torch.nn.SiLU): the Mul, or NULL. */
static GraftNode *
silu_of (GraftValue *v, GraftNode **sigmoid)
{
  if (v->consumers == NULL || v->consumers->len != 2)
    return NULL;
  for (guint k = 0; k < 2; k++)
    {
      GraftNode *s = v->consumers->pdata[k], *mul = v->consumers->pdata[1 - k];
      GraftValue *sv;
      if (!is_simple_node (s, "onnx::Sigmoid", 1) || !is_simple_node (mul, "onnx::Mul", 2) ||
          graft_fusion_sole_reader (s, &sv) != mul)
        continue;
      GraftValue *a = mul->inputs->pdata[0], *b = mul->inputs->pdata[1];
      if ((a == v && b == sv) || (a == sv && b == v))
        {
          *sigmoid = s;
          return mul;
        }
    }
  return NULL;
}

static gboolean
is_aten_convolution (GraftNode *node)
{
  static const char *const ops[] = { "aten::_convolution", "aten::_convolution_mode", "aten::conv1d",
                                     "aten::conv2d", "aten::conv3d" };
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strcmp (node->op, ops[k]) == 0)
      return TRUE;
  return FALSE;
}

/* The aten:: ops (PyTorch files: TorchScript, .pt2) whose kernels apply
 * a fused activation to their output: the convolutions (aten-nn.c) and
 * batch_norm (aten.c), which in TorchScript sits between a convolution
 * and its activation where an ONNX export folded it into the Conv (and
 * stays where fold_batch_norms cannot fold it). */
static gboolean
is_aten_activation_producer (GraftNode *node)
{
  return is_aten_convolution (node) || strcmp (node->op, "aten::batch_norm") == 0;
}

/* The activation that node, of one input and output, is (aten::silu,
 * hardswish, relu and their in-place forms), or NONE. */
static GraftFusedActivation
aten_activation (GraftNode *node)
{
  static const struct {
    const char *op;
    GraftFusedActivation activation;
  } ops[] = {
    { "aten::silu", GRAFT_FUSED_ACTIVATION_SILU }, { "aten::silu_", GRAFT_FUSED_ACTIVATION_SILU },
    { "aten::hardswish", GRAFT_FUSED_ACTIVATION_HARD_SWISH }, { "aten::hardswish_", GRAFT_FUSED_ACTIVATION_HARD_SWISH },
    { "aten::relu", GRAFT_FUSED_ACTIVATION_RELU }, { "aten::relu_", GRAFT_FUSED_ACTIVATION_RELU },
  };
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (is_simple_node (node, ops[k].op, 1))
      return ops[k].activation;
  return GRAFT_FUSED_ACTIVATION_NONE;
}

/* The tensor every run gives v: a plan constant that is neither fed (a
 * graph input) nor written back by runs; NULL otherwise. */
static GraftRtTensor *
fixed_constant (Plan *plan, GraftValue *v)
{
  GraftRtTensor *t = v ? plan_constant (v, plan) : NULL;
  if (t == NULL || t->kind != GRAFT_RT_TENSOR || _graft_plan_slot_is_state (plan, _graft_plan_slot (plan, v)))
    return NULL;
  for (guint k = 0; k < plan->graph->inputs->len; k++)
    if (plan->graph->inputs->pdata[k] == v)
      return NULL;
  return t;
}

/* The module attributes the model sets (prim::SetAttr: MODULE.NAME). */
static void
add_set_attribute (GraftNode *node, gpointer user_data)
{
  if (strcmp (node->op, "prim::SetAttr") != 0)
    return;
  const char *module = graft_node_attr_string (node, "arg0", ""), *name = graft_node_attr_string (node, "name", "");
  g_hash_table_add (user_data, *module ? g_strdup_printf ("%s.%s", module, name) : g_strdup (name));
}

static GHashTable *
set_attributes_new (Plan *plan)
{
  GraftGraph *root = plan->graph;
  while (root->parent_graph)
    root = root->parent_graph;
  GHashTable *set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  graft_graph_foreach_live_node_recursive (root, add_set_attribute, set);
  return set;
}

/* Whether name is attribute or ends in "." attribute. */
static gboolean
names_attribute (const char *name, const char *attribute)
{
  gsize n = strlen (name), a = strlen (attribute);
  return strcmp (name, attribute) == 0 || (n > a && name[n - a - 1] == '.' && strcmp (name + n - a, attribute) == 0);
}

/* The GetAttr node of a module attribute that v is and that the model
 * never sets (not in set_attributes), so that every run reads the same
 * for it (aten-prim.c kernel_get_attr): its "value" attribute from
 * data.pkl when it has one, else None for a `bias` (tensor attributes
 * are initializers). NULL for any other v. */
static GraftNode *
fixed_module_attribute (GHashTable *set_attributes, GraftValue *v)
{
  GraftNode *get = v->producer;
  if (get == NULL || strcmp (get->op, "prim::GetAttr") != 0 ||
      graft_node_has_attr (get, "dict_keys") || graft_node_has_attr (get, "dict_items"))
    return NULL;
  return g_hash_table_contains (set_attributes, graft_node_attr_string (get, "name", "")) ? NULL : get;
}

typedef enum { ARG_UNKNOWN, ARG_NONE, ARG_CONSTANT } ArgKind;

static ArgKind
attribute_arg (GraftAttribute *attr, double *scalar)
{
  switch (attr->type)
    {
    case GRAFT_ATTR_NONE:
      return ARG_NONE;
    case GRAFT_ATTR_INT:
    case GRAFT_ATTR_BOOL:
      *scalar = attr->i;
      return ARG_CONSTANT;
    case GRAFT_ATTR_FLOAT:
      *scalar = attr->f;
      return ARG_CONSTANT;
    default:
      return ARG_UNKNOWN;
    }
}

/* Argument k of node: None (or absent), a constant tensor (*t) or
 * scalar (*scalar, *t NULL), or unknown until the run. */
static ArgKind
constant_arg (Plan *plan, GHashTable *set_attributes, GraftNode *node, guint k, GraftRtTensor **t, double *scalar)
{
  GraftValue *value;
  GraftNode *get;
  GraftAttribute *attr = graft_aten_node_arg (node, k, &value);
  *t = NULL;
  if (attr)
    return attribute_arg (attr, scalar);
  if (value == NULL)
    return ARG_NONE;
  if ((get = fixed_module_attribute (set_attributes, value)) != NULL)
    {
      const char *name = graft_node_attr_string (get, "name", "");
      if ((attr = graft_node_get_attribute (get, "value")) != NULL)
        return attribute_arg (attr, scalar);
      return names_attribute (name, "bias") ? ARG_NONE : ARG_UNKNOWN;
    }
  if ((*t = fixed_constant (plan, value)) == NULL)
    return ARG_UNKNOWN;
  if ((*t)->numel == 1)
    *scalar = graft_rt_tensor_get_f64 (*t, 0);
  return ARG_CONSTANT;
}

/* A constant per-channel argument of n values (any float dtype), or None:
 * FALSE when it is neither. */
static gboolean
channel_arg (Plan *plan, GHashTable *set_attributes, GraftNode *node, guint k, gint64 n, GraftRtTensor **t)
{
  double scalar;
  switch (constant_arg (plan, set_attributes, node, k, t, &scalar))
    {
    case ARG_NONE:
      return TRUE;
    case ARG_CONSTANT:
      return *t != NULL && (*t)->numel == n && graft_dtype_is_float ((*t)->dtype);
    default:
      return FALSE;
    }
}

/* Nodes that read only a tensor's shape: TorchScript's BatchNorm2d checks
 * its input's dim() and, in training, size() before aten::batch_norm. */
static gboolean
reads_shape_only (GraftNode *node)
{
  return strcmp (node->op, "aten::dim") == 0 || strcmp (node->op, "aten::size") == 0 ||
         strcmp (node->op, "aten::sym_size") == 0;
}

/* The aten::batch_norm reading conv's output as its input, when the other
 * readers only read its shape; NULL otherwise. */
static GraftNode *
batch_norm_reader (Plan *plan, GraftNode *conv)
{
  GraftValue *v = conv->outputs->len == 1 ? conv->outputs->pdata[0] : NULL;
  GraftNode *bn = NULL;
  if (v == NULL || is_graph_output (plan, v) || v->consumers == NULL)
    return NULL;
  for (guint k = 0; k < v->consumers->len; k++)
    {
      GraftNode *reader = v->consumers->pdata[k];
      if (reads_shape_only (reader) || _graft_node_in_untaken_branch (reader))
        continue;
      if (bn != NULL || strcmp (reader->op, "aten::batch_norm") != 0 || !in_plan (plan, reader) ||
          reader->outputs->len != 1)
        return NULL;
      bn = reader;
    }
  if (bn == NULL || bn->inputs->len == 0 || bn->inputs->pdata[0] != v)
    return NULL;
  for (guint j = 1; j < bn->inputs->len; j++)
    if (bn->inputs->pdata[j] == v)
      return NULL;
  return bn;
}

/* Step's convolution computes with the weight w·scale[m] for each output
 * channel m and the bias shift[m] (Step.folded_weight): the bias now, the
 * weight into pages of its own when a kernel first reads it
 * (_graft_step_fold_weight). Takes *scale. FALSE when out of memory. */
static gboolean
step_set_fold (Step *step, GraftRtTensor *w, double **scale, const double *shift)
{
  gint64 M = w->dims[0];
  /* pages untouched until written: the weight costs no memory before a kernel reads it */
  GraftPages *pages = graft_pages_new (w->nbytes);
  if (pages == NULL)
    return FALSE;
  g_autoptr(GBytes) bytes = g_bytes_new_with_free_func (pages->data, w->nbytes, graft_pages_free, pages);
  g_autoptr(GraftRtTensor) w2 = graft_rt_tensor_new_from_bytes (GRAFT_DTYPE_FLOAT32, w->rank, w->dims, bytes, NULL);
  g_autoptr(GraftRtTensor) b2 = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 1, &M, NULL);
  if (w2 == NULL || w2->data != pages->data || b2 == NULL)
    return FALSE;
  for (gint64 m = 0; m < M; m++)
    ((float *) b2->data)[m] = (float) shift[m];
  step->folded_weight = g_steal_pointer (&w2);
  step->folded_bias = g_steal_pointer (&b2);
  step->fold_source = graft_rt_tensor_ref (w);
  step->fold_scale = g_steal_pointer (scale);
  step->folded_pages = g_steal_pointer (&bytes);
  step->folded_resident = FALSE;
  return TRUE;
}

/* The batch_norm bn after conv's step folded into its weight and bias:
 * W'[m] = W[m]·s[m], B'[m] = (B[m] - mean[m])·s[m] + beta[m] with
 * s = gamma / sqrt(var + eps), computed in double as the batch_norm
 * kernel (aten.c) computes s. That kernel normalises with the running
 * statistics whatever bn's training flag says (the runtime runs modules
 * in eval mode; scripted BatchNorm2d computes the flag in a prim::If), so
 * the flag is not read here either. W' is computed when a kernel first
 * reads it (_graft_step_fold_weight), B' and s now. FALSE when an argument
 * is not a constant. */
/* The constant float32 weight (*w, of M = dims[0] output channels) and
 * bias (*b, or NULL) of an aten convolution that is no transposed one;
 * FALSE when they are not constants. */
static gboolean
aten_conv_weights (Plan *plan, GHashTable *set_attributes, GraftNode *conv, GraftRtTensor **w, GraftRtTensor **b)
{
  GraftRtTensor *unused;
  double scalar, transposed = 0;
  /* conv2d(input, weight, bias, …); _convolution(…, transposed=6, …) */
  if (constant_arg (plan, set_attributes, conv, 1, w, &scalar) != ARG_CONSTANT || *w == NULL ||
      (*w)->dtype != GRAFT_DTYPE_FLOAT32 || (*w)->rank < 3 || (*w)->dims[0] <= 0)
    return FALSE;
  return channel_arg (plan, set_attributes, conv, 2, (*w)->dims[0], b) && (*b == NULL || (*b)->dtype == GRAFT_DTYPE_FLOAT32) &&
         (strcmp (conv->op, "aten::_convolution") != 0 ||
          (constant_arg (plan, set_attributes, conv, 6, &unused, &transposed) == ARG_CONSTANT && transposed == 0));
}

static gboolean
fold_batch_norm (Plan *plan, GHashTable *set_attributes, Step *step, GraftNode *bn)
{
  GraftNode *conv = step->node;
  GraftRtTensor *w, *b, *gamma, *beta, *mean, *var, *unused;
  double eps = 1e-5;
  /* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, …) */
  if (!aten_conv_weights (plan, set_attributes, conv, &w, &b))
    return FALSE;
  gint64 M = w->dims[0];
  if (!channel_arg (plan, set_attributes, bn, 1, M, &gamma) || !channel_arg (plan, set_attributes, bn, 2, M, &beta) ||
      !channel_arg (plan, set_attributes, bn, 3, M, &mean) || !channel_arg (plan, set_attributes, bn, 4, M, &var) ||
      mean == NULL || var == NULL || constant_arg (plan, set_attributes, bn, 7, &unused, &eps) == ARG_UNKNOWN)
    return FALSE;
  g_autofree double *scale = g_new (double, M), *shift = g_new (double, M);
  for (gint64 m = 0; m < M; m++)
    {
      double s = (gamma ? graft_rt_tensor_get_f64 (gamma, m) : 1) / sqrt (graft_rt_tensor_get_f64 (var, m) + eps);
      scale[m] = s;
      shift[m] = ((b ? ((const float *) b->data)[m] : 0) - graft_rt_tensor_get_f64 (mean, m)) * s +
                 (beta ? graft_rt_tensor_get_f64 (beta, m) : 0);
    }
  if (!step_set_fold (step, w, &scale, shift))
    return FALSE;
  step->fold_last = bn;
  return TRUE;
}

void
_graft_step_fold_weight (Step *step)
{
  if (step->folded_weight == NULL || step->folded_resident)
    return;
  const GraftRtTensor *w = step->fold_source;
  gint64 M = w->dims[0], per = w->numel / M;
  for (gint64 m = 0; m < M; m++)
    {
      double s = step->fold_scale[m];
      const float *src = (const float *) w->data + m * per;
      float *dst = (float *) step->folded_weight->data + m * per;
      for (gint64 i = 0; i < per; i++)
        dst[i] = src[i] * s;
    }
  step->folded_resident = TRUE;
}

void
_graft_step_give_back_folded (GraftRuntime *rt, Step *step)
{
  gboolean derived_kept = step->derived_kind != NULL && step->derived_kind->holds_values && step->folded_weight &&
                          step->derived_key == step->folded_weight->data;
  /* a runtime that keeps nothing derived holds no second copy of a weight either */
  if (!step->folded_resident || (!derived_kept && !rt->drop_derived))
    return;
  graft_file_bytes_release (step->folded_pages, 0, g_bytes_get_size (step->folded_pages));
  step->folded_resident = FALSE;
}

/* aten convolution → eval-mode aten::batch_norm (a PyTorch file's
 * Conv2d → BatchNorm2d, which an ONNX export folds into the Conv): the
 * normalisation folded into the convolution's weights (Step.folded_weight),
 * and the batch_norm forwards the convolution's output; an activation
 * after it fuses into the convolution then (fuse_conv_activations). */
static void
fold_batch_norms (Plan *plan)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  g_autoptr(GHashTable) set_attributes = set_attributes_new (plan);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *conv = &plan->steps[i];
      GraftNode *bn = is_aten_convolution (conv->node) && step_unfused (conv) && conv->folded_weight == NULL
                      ? batch_norm_reader (plan, conv->node) : NULL;
      Step *bn_step = bn ? free_step_after (plan, step_of_node, bn, i) : NULL;
      if (bn_step == NULL || !fold_batch_norm (plan, set_attributes, conv, bn))
        continue;
      bn_step->forward_input = TRUE;
      bn_step->forward_index = 0;
    }
}

/* The tensor every run gives c (fixed_constant), through the Identity
 * nodes of it that torch.onnx.export writes for equal initializers
 * (DETR's, FastViT's), and a Constant node's value preloaded. */
static GraftRtTensor *
pattern_constant (GraftValue *c, gpointer user_data)
{
  Plan *plan = user_data;
  while (c != NULL && c->producer != NULL && strcmp (c->producer->op, "onnx::Identity") == 0 &&
         c->producer->inputs->len == 1 && c->producer->inputs->pdata[0] != NULL && in_plan (plan, c->producer))
    c = c->producer->inputs->pdata[0];
  GraftRtTensor *t = c ? fixed_constant (plan, c) : NULL;
  if (t == NULL && c != NULL && c->producer != NULL && preload_constant (plan, c))
    t = fixed_constant (plan, c);
  return t;
}

/* t, a float32 constant, broadcasts per output channel against a Conv
 * output of rank `rank` and M channels: one value, or M along axis 1 and
 * 1 elsewhere (not enlarging the output). */
static gboolean
is_channel_constant (const GraftRtTensor *t, int rank, gint64 M)
{
  if (t == NULL || t->kind != GRAFT_RT_TENSOR || t->dtype != GRAFT_DTYPE_FLOAT32 || t->rank > rank ||
      (t->numel != 1 && t->numel != M))
    return FALSE;
  for (int a = rank - t->rank; a < rank; a++)
    {
      gint64 d = t->dims[a - (rank - t->rank)];
      if (d != 1 && !(a == 1 && d == M))
        return FALSE;
    }
  return TRUE;
}

/* The per-output-channel values of constant c (is_channel_constant), or
 * NULL. */
static GraftRtTensor *
channel_constant (Plan *plan, GraftValue *c, int rank, gint64 M)
{
  GraftRtTensor *t = pattern_constant (c, plan);
  return is_channel_constant (t, rank, M) ? t : NULL;
}

typedef enum { AFFINE_NONE, AFFINE_MUL, AFFINE_DIV, AFFINE_ADD, AFFINE_SUB } AffineOp;

/* One step of an affine map per output channel after a convolution: a
 * node computing v·c, v/c, v + c or v - c for a constant c per channel
 * (channel[M], as the node's dtype rounds it). ONNX Mul, Div and Add;
 * aten::mul, div (without rounding mode), add and sub (alpha 1, a
 * constant tensor or scalar operand) as PyTorch files write them
 * (DETR's FrozenBatchNorm2d). *index: v's input index. */
static AffineOp
affine_step (Plan *plan, GHashTable *set_attributes, GraftNode *next, GraftValue *v, int rank, gint64 M,
             double *channel, guint *index)
{
  static const struct {
    const char *op;
    AffineOp affine;
  } ops[] = {
    { "onnx::Mul", AFFINE_MUL }, { "onnx::Div", AFFINE_DIV }, { "onnx::Add", AFFINE_ADD },
    { "aten::mul", AFFINE_MUL }, { "aten::div", AFFINE_DIV }, { "aten::add", AFFINE_ADD }, { "aten::sub", AFFINE_SUB },
  };
  AffineOp affine = AFFINE_NONE;
  GraftRtTensor *c = NULL;
  double scalar = 0;
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strcmp (next->op, ops[k].op) == 0)
      affine = ops[k].affine;
  if (affine == AFFINE_NONE || next->outputs->len != 1 || next->outputs->pdata[0] == NULL)
    return AFFINE_NONE;
  for (*index = 0; *index < next->inputs->len && next->inputs->pdata[*index] != v; (*index)++)
    ;
  for (guint j = *index + 1; j < next->inputs->len; j++)
    if (next->inputs->pdata[j] == v)
      return AFFINE_NONE;
  if (g_str_has_prefix (next->op, "onnx::"))
    {
      /* v / c, not c / v */
      if (next->inputs->len != 2 || *index > 1 || (affine == AFFINE_DIV && *index != 0) ||
          (c = channel_constant (plan, next->inputs->pdata[1 - *index], rank, M)) == NULL)
        return AFFINE_NONE;
    }
  else
    {
      GraftValue *self, *alpha_value;
      GraftAttribute *alpha = graft_aten_node_arg (next, 2, &alpha_value);
      GraftAttribute *self_attr = graft_aten_node_arg (next, 0, &self);
      guint at = self_attr == NULL && self == v ? 0 : 1;
      GraftRtTensor *unused;
      double alpha_scalar = 1;
      /* mul(self, other), div(self, other, *, rounding_mode=None), add and sub(self, other, alpha=1) */
      if ((at == 1 && (affine == AFFINE_DIV || affine == AFFINE_SUB)) ||
          (affine == AFFINE_DIV && (graft_node_has_attr (next, "rounding_mode") || alpha || alpha_value)) ||
          ((affine == AFFINE_ADD || affine == AFFINE_SUB) &&
           constant_arg (plan, set_attributes, next, 2, &unused, &alpha_scalar) == ARG_UNKNOWN) ||
          alpha_scalar != 1)
        return AFFINE_NONE;
      if (at == 1)
        {
          GraftValue *other;
          if (graft_aten_node_arg (next, 1, &other) != NULL || other != v)
            return AFFINE_NONE;
        }
      switch (constant_arg (plan, set_attributes, next, 1 - at, &c, &scalar))
        {
        case ARG_CONSTANT:
          if (c != NULL && !is_channel_constant (c, rank, M))
            return AFFINE_NONE;
          break;
        default:
          return AFFINE_NONE;
        }
    }
  for (gint64 m = 0; m < M; m++)
    channel[m] = c == NULL ? (float) scalar : ((const float *) c->data)[c->numel == 1 ? 0 : m];
  return affine;
}

/* A convolution → Mul by (or Div by) a constant per output channel → Add
 * (or Sub) of one (either may be missing): the constants folded into the
 * convolution's weight and bias (Step.folded_weight), as onnxruntime's
 * ConvMulFusion and ConvAddFusion do, and the Mul and Add forward its
 * output. ONNX Conv, where DETR's FrozenBatchNorm2d and the layer scales
 * after convolutions in PoolFormer, FastViT and EfficientFormer are such
 * nodes as torch.export writes them; aten convolutions with aten::mul,
 * div, add and sub, where the planner computed the constants
 * (fold_constant_steps: DETR's scale and bias from its buffers). Before
 * the other fusions, which then look after the last node folded in: a
 * Relu/Clip or residual Add there goes into the convolution as usual. */
static void
fold_conv_affines (Plan *plan)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  g_autoptr(GHashTable) set_attributes = NULL;
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *conv = &plan->steps[i];
      GraftNode *node = conv->node;
      gboolean aten = is_aten_convolution (node);
      GraftRtTensor *w = NULL, *b = NULL;
      if ((!aten && strcmp (node->op, "onnx::Conv") != 0) || !step_unfused (conv) || conv->folded_weight != NULL ||
          node->inputs->len < 2)
        continue;
      if (aten)
        {
          if (set_attributes == NULL)
            set_attributes = set_attributes_new (plan);
          if (!aten_conv_weights (plan, set_attributes, node, &w, &b))
            continue;
        }
      else
        {
          w = fixed_constant (plan, node->inputs->pdata[1]);
          if (w == NULL || w->dtype != GRAFT_DTYPE_FLOAT32 || w->rank < 3 || w->dims[0] <= 0)
            continue;
          if (node->inputs->len > 2 && node->inputs->pdata[2] != NULL &&
              ((b = fixed_constant (plan, node->inputs->pdata[2])) == NULL || b->dtype != GRAFT_DTYPE_FLOAT32 ||
               b->numel != w->dims[0]))
            continue;
        }
      gint64 M = w->dims[0];
      g_autofree double *scale = g_new (double, M), *shift = g_new (double, M), *channel = g_new (double, M);
      for (gint64 m = 0; m < M; m++)
        {
          scale[m] = 1;
          shift[m] = b ? ((const float *) b->data)[m] : 0;
        }
      Step *taken[2];
      guint n_taken = 0, index[2];
      GraftNode *last = node;
      GraftValue *v;
      for (GraftNode *next; n_taken < 2 &&
                            (next = aten ? plan_sole_reader (plan, last, &v) : graft_fusion_sole_reader (last, &v)) != NULL;
           last = next)
        {
          AffineOp affine = affine_step (plan, set_attributes, next, v, w->rank, M, channel, &index[n_taken]);
          /* one Mul or Div, then one Add or Sub */
          gboolean offset = affine == AFFINE_ADD || affine == AFFINE_SUB;
          Step *step = affine != AFFINE_NONE && (offset || n_taken == 0)
                       ? free_step_after (plan, step_of_node, next, i) : NULL;
          if (step == NULL)
            break;
          for (gint64 m = 0; m < M; m++)
            {
              if (offset)
                shift[m] += affine == AFFINE_SUB ? -channel[m] : channel[m];
              else
                {
                  double factor = affine == AFFINE_DIV ? 1 / channel[m] : channel[m];
                  scale[m] *= factor;
                  shift[m] *= factor;
                }
            }
          taken[n_taken++] = step;
          if (offset)
            break;
        }
      if (n_taken == 0 || !step_set_fold (conv, w, &scale, shift))
        continue;
      conv->fold_last = taken[n_taken - 1]->node;
      for (guint k = 0; k < n_taken; k++)
        {
          taken[k]->forward_input = TRUE;
          taken[k]->forward_index = index[k];
          taken[k]->fold_forwards = TRUE;
        }
    }
}

/* Parallel linear branches of one input summed (fusion-patterns.h
 * graft_conv_branches_fusion_match): the host Conv convolves with the
 * whole sum's weight and bias (Step.folded_weight), the nodes from it to
 * the tree's root forward its output, and the tree's other nodes are
 * absorbed. Roots last to first, so that the largest tree goes; before
 * the other fusions, which then look after the root. */
static void
fold_conv_branches (Plan *plan)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  for (guint i = plan->n_steps; i-- > 0;)
    {
      GraftConvBranchesFusion f;
      if (!step_unfused (&plan->steps[i]) ||
          !graft_conv_branches_fusion_match (plan->steps[i].node, pattern_constant, plan, &f))
        continue;
      Step *host = step_of (plan, step_of_node, f.host);
      gboolean free = host != NULL && step_unfused (host) && host->folded_weight == NULL;
      for (guint k = 0; k < f.n_path; k++)
        free &= step_of (plan, step_of_node, f.path[k]) && step_unfused (step_of (plan, step_of_node, f.path[k]));
      for (guint k = 0; k < f.n_others; k++)
        free &= step_of (plan, step_of_node, f.others[k]) && step_unfused (step_of (plan, step_of_node, f.others[k]));
      g_autofree double *ones = g_new (double, f.weight->dims[0]), *shift = g_new (double, f.weight->dims[0]);
      for (gint64 m = 0; m < f.weight->dims[0]; m++)
        ones[m] = 1, shift[m] = ((const float *) f.bias->data)[m];
      if (free && step_set_fold (host, f.weight, &ones, shift))
        {
          host->fold_last = f.root;
          for (guint k = 0; k < f.n_path; k++)
            {
              Step *step = step_of (plan, step_of_node, f.path[k]);
              step->forward_input = TRUE;
              step->forward_index = f.path_input[k];
              step->fold_forwards = TRUE;
            }
          for (guint k = 0; k < f.n_others; k++)
            step_of (plan, step_of_node, f.others[k])->absorbed = TRUE;
        }
      graft_conv_branches_fusion_clear (&f);
    }
}

/* An aten convolution [→ batch_norm it folded] → aten::add(_) of a value
 * ready before it [→ aten::relu(_)]: ResNet's `out += identity; relu`,
 * the residual and clamp that Conv → Add → Relu gets (fuse_residual). */
static void
fuse_aten_residuals (GraftRuntime *rt, Plan *plan)
{
  g_autoptr(GHashTable) step_of = plan_step_of_outputs (plan);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *conv = &plan->steps[i];
      GraftValue *v;
      if (!is_aten_convolution (conv->node) || !step_unfused (conv))
        continue;
      /* after a folded batch_norm or Mul and Add, what reads the last of them */
      GraftNode *next = plan_sole_reader (plan, conv->fold_last ? conv->fold_last : conv->node, &v);
      if (next)
        fuse_residual (rt, plan, step_of, i, next, v);
    }
}

/* Conv → HardSwish, and Conv → SiLU (Sigmoid and Mul): the Conv applies
 * the activation (Step.fused_activation) and its nodes forward the
 * Conv's output. Only Conv steps that no other fusion took (no clamp,
 * residual or pattern: none of those applies an activation after). In
 * PyTorch files, an aten convolution or batch_norm → aten::silu(_),
 * hardswish(_) or relu(_) the same way: the fusions an ONNX export of
 * the same model gets. */
/* node clamps its input (the aten convolution conv's output) to
 * constant bounds (*lo, *hi): aten::hardtanh(_) (ReLU6 as torchvision
 * writes it: hardtanh_(x, 0., 6.)), relu6(_) or clamp(_) of numbers,
 * and conv is no transposed convolution (whose kernel applies no clamp). */
static gboolean
aten_clamp_after_conv (Plan *plan, GHashTable *set_attributes, GraftNode *conv, GraftNode *node, float *lo,
                       float *hi)
{
  static const char *const ops[] = { "aten::hardtanh", "aten::hardtanh_", "aten::relu6", "aten::relu6_",
                                     "aten::clamp", "aten::clamp_" };
  gboolean known = FALSE, hardtanh = g_str_has_prefix (node->op, "aten::hardtanh"),
           relu6 = g_str_has_prefix (node->op, "aten::relu6");
  GraftRtTensor *t;
  double bound[2], transposed = 0;
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    known |= strcmp (node->op, ops[k]) == 0;
  if (!known || node->outputs->len != 1 ||
      (strcmp (conv->op, "aten::_convolution") == 0 &&
       (constant_arg (plan, set_attributes, conv, 6, &t, &transposed) != ARG_CONSTANT || transposed != 0)))
    return FALSE;
  for (guint k = 0; k < 2; k++)
    {
      switch (relu6 ? ARG_NONE : constant_arg (plan, set_attributes, node, k + 1, &t, &bound[k]))
        {
        case ARG_NONE:
          bound[k] = relu6 ? 6 * k : hardtanh ? 2 * (double) k - 1 : (k ? INFINITY : -INFINITY);
          break;
        case ARG_CONSTANT:
          if (t != NULL && t->numel != 1)
            return FALSE;
          break;
        default:
          return FALSE;
        }
    }
  *lo = (float) bound[0];
  *hi = (float) bound[1];
  return !(*lo > *hi);
}

static void
fuse_conv_activations (Plan *plan)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  g_autoptr(GHashTable) set_attributes = NULL;
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *conv = &plan->steps[i];
      GraftValue *v = conv->node->outputs->len == 1 ? conv->node->outputs->pdata[0] : NULL;
      gboolean aten = is_aten_activation_producer (conv->node);
      if ((!aten && strcmp (conv->node->op, "onnx::Conv") != 0) || !step_unfused (conv) || v == NULL ||
          is_graph_output (plan, v))
        continue;
      GraftNode *next = aten ? plan_sole_reader (plan, conv->node, &v) : graft_fusion_sole_reader (conv->node, &v);
      GraftNode *sigmoid = NULL, *mul;
      GraftFusedActivation activation;
      Step *act, *sigmoid_step;
      if (conv->fold_last)
        {
          /* the batch_norm, or the Mul and Add, forward: the activation reads the last one's output */
          v = conv->fold_last->outputs->pdata[0];
          next = is_graph_output (plan, v) ? NULL : plan_sole_reader (plan, conv->fold_last, &v);
        }
      if (aten)
        {
          float lo, hi;
          if (set_attributes == NULL)
            set_attributes = set_attributes_new (plan);
          if (next && next->inputs->pdata[0] == v && (activation = aten_activation (next)) != GRAFT_FUSED_ACTIVATION_NONE &&
              (act = free_step_after (plan, step_of_node, next, i)) != NULL)
            {
              conv->fused_activation = activation;
              act->forward_input = TRUE;
              act->forward_index = 0;
            }
          /* (the clamp a Conv → Clip gets, fuse_activations) */
          else if (next && next->inputs->pdata[0] == v && is_aten_convolution (conv->node) &&
                   aten_clamp_after_conv (plan, set_attributes, conv->node, next, &lo, &hi) &&
                   (act = free_step_after (plan, step_of_node, next, i)) != NULL)
            {
              conv->fused = TRUE;
              conv->fused_lo = lo;
              conv->fused_hi = hi;
              act->forward_input = TRUE;
              act->forward_index = 0;
            }
        }
      else if (next && is_simple_node (next, "onnx::HardSwish", 1) &&
               (act = free_step_after (plan, step_of_node, next, i)) != NULL)
        {
          conv->fused_activation = GRAFT_FUSED_ACTIVATION_HARD_SWISH;
          act->forward_input = TRUE;
          act->forward_index = 0;
        }
      else if ((mul = silu_of (v, &sigmoid)) != NULL &&
               (sigmoid_step = free_step_after (plan, step_of_node, sigmoid, i)) != NULL &&
               (act = free_step_after (plan, step_of_node, mul, i)) != NULL)
        {
          conv->fused_activation = GRAFT_FUSED_ACTIVATION_SILU;
          sigmoid_step->forward_input = TRUE;   /* its value only reaches the Mul, which forwards */
          sigmoid_step->forward_index = 0;
          act->forward_input = TRUE;
          act->forward_index = mul->inputs->pdata[0] == v ? 0 : 1;
        }
    }
}

/* Nodes that only compute their outputs from their inputs and constants:
 * no state changed, no exception raised, no random number drawn (which
 * would shift later draws) — a prim::If among them when the branch it
 * always takes holds only such nodes. */
static gboolean
only_computes (GraftNode *node)
{
  static const char *const ops[] = {
    "prim::Constant", "prim::GetAttr", "aten::__is__", "aten::__isnot__", "aten::__not__", "aten::__and__",
    "aten::__or__", "aten::dim", "aten::len", "aten::size", "aten::eq", "aten::ne", "aten::gt", "aten::lt",
    "aten::ge", "aten::le", "aten::__contains__",
  };
  if (strcmp (node->op, "prim::If") == 0)
    {
      GraftGraph *branch = graft_if_get_fixed_branch (node);
      if (branch == NULL)
        return FALSE;
      for (guint k = 0; k < branch->nodes->len; k++)
        if (!only_computes (branch->nodes->pdata[k]))
          return FALSE;
      return TRUE;
    }
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strcmp (node->op, ops[k]) == 0)
      return TRUE;
  return FALSE;
}

/* Whether step `reader` needs value v: it runs and reads v, or forwards
 * it (Step.forward_input, decided here for good; a skipped step's other
 * inputs need no value, runtime-run.c run_step). */
static gboolean
step_needs (const Step *reader, GraftValue *v)
{
  /* an inlined If's step reads its branch's outputs, not its condition */
  if (reader->absorbed || _graft_step_is_inlined_if (reader))
    return FALSE;
  if (!reader->forward_input || reader->pattern != NULL || reader->pattern_at != NO_STEP || reader->qdq != NULL)
    return TRUE;
  for (guint j = 0; j < reader->node->inputs->len; j++)
    if (reader->node->inputs->pdata[j] == v && j == reader->forward_index)
      return TRUE;
  return FALSE;
}

/* The values of enclosing graphs that sub, or a graph inside it, gives as
 * its own outputs (a branch returning an outer value): read without
 * being any node's input. */
static void
add_outer_outputs (GraftGraph *sub, GHashTable *set)
{
  for (guint j = 0; j < sub->outputs->len; j++)
    {
      GraftValue *v = sub->outputs->pdata[j];
      if (v != NULL && v->graph != sub)
        g_hash_table_add (set, v);
    }
  for (guint i = 0; i < sub->nodes->len; i++)
    {
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (sub->nodes->pdata[i]);
      for (guint k = 0; subs && k < subs->len; k++)
        add_outer_outputs (subs->pdata[k], set);
    }
}

/* Steps that only compute values no step needs (only_computes) are
 * skipped like absorbed ones (while no observer watches): scripted
 * BatchNorm2d's `training` reads and `if self.training:` blocks, which a
 * traced file or an ONNX export never had, around a batch_norm folded
 * into its convolution. Last to first, so that a chain of them goes. */
static void
skip_unread_steps (Plan *plan)
{
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  g_autoptr(GHashTable) outer_outputs = g_hash_table_new (NULL, NULL);
  add_outer_outputs (plan->graph, outer_outputs);
  for (guint i = plan->n_steps; i-- > 0;)
    {
      Step *step = &plan->steps[i];
      gboolean needed = FALSE;
      if (!step_unfused (step) || step->n_views > 0 || !only_computes (step->node))
        continue;
      for (guint j = 0; j < step->node->outputs->len && !needed; j++)
        {
          GraftValue *v = step->node->outputs->pdata[j];
          if (v == NULL)
            continue;
          g_autoptr(GPtrArray) readers = g_ptr_array_new ();
          needed = g_hash_table_contains (outer_outputs, v) || !plan_readers (plan, v, readers);
          for (guint k = 0; !needed && k < readers->len; k += 2)
            {
              Step *reader = step_of (plan, step_of_node, readers->pdata[k]);
              needed = reader == NULL || step_needs (reader, readers->pdata[k + 1]);
            }
        }
      step->absorbed = !needed;
    }
}

/* v, the output of a prim::Constant or of a prim::GetAttr of a module
 * attribute the model never sets (fixed_module_attribute) with its value
 * (a scripted Conv2d's `self.bias`, None, read by every convolution; a
 * BatchNorm2d's training flag, timm Scale's tuple of sizes), becomes a
 * plan constant, the same tensor, tuple or None its kernel gives every
 * run (aten.c kernel_prim_constant, aten-prim.c kernel_get_attr). Not a
 * list, which a run may append to, nor a value a node changes in place. */
static gboolean
preload_aten_constant (Plan *plan, GHashTable *set_attributes, GraftValue *v)
{
  GraftNode *node = v->producer;
  GraftAttribute *a = graft_node_get_attribute (node, "value");
  guint slot = _graft_plan_slot (plan, v);
  g_autoptr(GraftRtTensor) t = NULL;
  /* (an inlined If's output standing for v may be a graph output) */
  if (slot == NO_SLOT || plan->constants[slot] != NULL || (plan->aliased && g_hash_table_contains (plan->aliased, v)))
    return FALSE;
  if (strcmp (node->op, "prim::Constant") == 0 && node->inputs->len == 0)
    t = a ? graft_aten_constant_tensor (a, NULL) : graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED);
  else if (strcmp (node->op, "prim::GetAttr") == 0 && a != NULL && fixed_module_attribute (set_attributes, v) != NULL)
    t = graft_aten_value_from_attr (a, NULL);
  /* (a tuple of numbers or strings no run can change: Scale's shape) */
  if (t == NULL || (t->kind == GRAFT_RT_SEQUENCE && !(v->type_string && g_str_has_prefix (v->type_string, "Tuple"))))
    return FALSE;
  /* (an If reads its condition; what its branches change is theirs. A
   * number, string or None no op changes: the in-place dropout_ reading
   * the training flag, the raise reading its message) */
  for (guint k = 0; a != NULL && a->type == GRAFT_ATTR_TENSOR && v->consumers && k < v->consumers->len; k++)
    if (strcmp (((GraftNode *) v->consumers->pdata[k])->op, "prim::If") != 0 &&
        graft_node_changes_state (v->consumers->pdata[k]))
      return FALSE;
  plan->constants[slot] = g_steal_pointer (&t);
  return TRUE;
}

/* ONNX Constant nodes (a tensor in "value") give their tensor at plan
 * time, as initializers do: a plan constant in every frame from the start,
 * and the step skipped while no observer watches. Swin-T's export has
 * 1,696 of them; T5's shape arithmetic runs on them. Not for a graph's
 * output: the caller gets a tensor of its own there, as before. */
static void
preload_constant_steps (Plan *plan)
{
  g_autoptr(GHashTable) set_attributes = NULL;
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      GraftValue *v = step->node->outputs->len == 1 ? step->node->outputs->pdata[0] : NULL;
      if (v == NULL || !step_unfused (step) || step->n_views > 0 || is_graph_output (plan, v))
        continue;
      if (g_str_has_prefix (step->node->op, "prim::") && set_attributes == NULL)
        set_attributes = set_attributes_new (plan);
      if (preload_constant (plan, v) || preload_aten_constant (plan, set_attributes, v))
        step->absorbed = TRUE;
    }
}

/* ONNX ops whose outputs depend only on their inputs' values (no state,
 * no random draw) and that memoize_shape_steps may memoise: the ops of
 * shape arithmetic, mask building and position biases. */
static gboolean
is_pure_shape_op (GraftNode *node)
{
  static const char *const ops[] = {
    "Abs", "Add", "And", "Cast", "CastLike", "Ceil", "Clip", "Concat", "ConstantOfShape", "Cos", "CumSum",
    "Div", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND",
    "Greater", "GreaterOrEqual", "Identity", "IsInf", "IsNaN", "Less", "LessOrEqual", "Log", "MatMul", "Max",
    "Min", "Mod", "Mul", "Neg", "Not", "OneHot", "Or", "Pow", "Range", "Reciprocal", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "Reshape", "Resize", "Round", "Shape", "Sign", "Sin", "Size", "Slice",
    "Softmax", "Split", "Sqrt", "Squeeze", "Sub", "Tile", "Transpose", "Trilu", "Unsqueeze", "Where", "Xor",
  };
  if (!g_str_has_prefix (node->op, "onnx::"))
    return FALSE;
  const char *type = node->op + strlen ("onnx::");
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strcmp (type, ops[k]) == 0)
      return TRUE;
  return FALSE;
}

/* aten:: and prim:: ops (PyTorch files) whose outputs depend only on
 * their inputs' values and constant arguments, for memoize_shape_steps:
 * the masks, position buckets and biases, rotary tables and shape
 * arithmetic that a traced or exported transformer computes from its
 * input's sizes, as its ONNX export does with the ops above. In-place
 * forms (add_) count as their op: the planner gives them outputs of their
 * own (a step on a view, which writes through, is never memoised). Lists
 * are read, sliced, joined and copied (aten::list), never changed (the
 * memo keeps a list only while no reader changes it). No random op, no
 * op on module state. */
static gboolean
is_pure_aten_op (GraftNode *node)
{
  static const char *const ops[] = {
    "Bool", "Float", "Int", "ScalarImplicit", "__and__", "__getitem__", "__or__", "__xor__", "_to_copy", "_weight_norm", "abs",
    "add", "alias", "all", "any", "arange", "bitwise_and", "bitwise_not", "bitwise_or", "cat", "ceil", "clamp",
    "clamp_max", "clamp_min", "clone", "contiguous", "cos", "cumsum", "detach", "diff", "div", "embedding", "eq",
    "exp", "expand", "expand_as", "flatten", "floor", "floor_divide", "floordiv", "fmod", "full", "full_like", "gather", "ge",
    "gt", "index", "index_select", "le", "len", "lift_fresh_copy", "list", "log", "logical_and", "logical_not", "logical_or", "lt",
    "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum", "mul", "ne", "neg", "new_full", "new_ones",
    "new_zeros", "ones", "ones_like", "outer", "permute", "pow", "reciprocal", "remainder", "repeat", "reshape",
    "round", "rsqrt", "rsub", "select", "sin", "slice", "sqrt", "squeeze", "stack", "sub", "sum", "t", "to",
    "transpose", "tril", "triu", "type_as", "unsqueeze", "view", "where", "zeros", "zeros_like",
    /* (DETR's pixel mask, upsampled to the backbone's output) */
    "upsample_bilinear2d", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
    /* (RAFT's first sampling grids, from the coordinates of the map's size) */
    "chunk", "linspace", "meshgrid", "split", "split_with_sizes", "unbind",
    /* (DeBERTa's scale, sqrt (torch.tensor (head size))) */
    "scalar_tensor", "tensor",
  };
  gsize len;
  /* torch.export's arithmetic on sizes (operator.mul of two sym_size) */
  if (g_str_has_prefix (node->op, "_operator::"))
    return TRUE;
  if (g_str_has_prefix (node->op, "prim::"))
    return strcmp (node->op, "prim::Constant") == 0 || strcmp (node->op, "prim::NumToTensor") == 0;
  if (!g_str_has_prefix (node->op, "aten::"))
    return FALSE;
  const char *type = node->op + strlen ("aten::");
  len = strlen (type);
  /* add_ → add, not __and__ */
  if (len > 1 && type[len - 1] == '_' && type[len - 2] != '_')
    len--;
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strncmp (type, ops[k], len) == 0 && ops[k][len] == '\0')
      return TRUE;
  return FALSE;
}

/* Steps whose outputs are sizes of a tensor: what onnx::Shape and Size
 * are in an export; and scripted code's x.device and x.dtype (RAFT's
 * grids go `.to(x.device)`), which follow from the tensor's dtype alone
 * as well. */
static gboolean
reads_shape (GraftNode *node)
{
  return strcmp (node->op, "onnx::Shape") == 0 || strcmp (node->op, "onnx::Size") == 0 ||
         strcmp (node->op, "aten::size") == 0 || strcmp (node->op, "aten::sym_size") == 0 ||
         strcmp (node->op, "aten::dim") == 0 || strcmp (node->op, "aten::numel") == 0 ||
         strcmp (node->op, "prim::device") == 0 || strcmp (node->op, "prim::dtype") == 0;
}

/* Values that memoised steps read and that are not tensors pass through
 * these when all their inputs are fixed: their outputs are fixed too,
 * without the steps being memoised (a list is shared by reference and
 * aten::append may change it). */
static gboolean
passes_fixed (GraftNode *node)
{
  return strcmp (node->op, "prim::ListConstruct") == 0 || strcmp (node->op, "prim::TupleConstruct") == 0 ||
         strcmp (node->op, "prim::ListUnpack") == 0 || strcmp (node->op, "prim::TupleUnpack") == 0;
}

/* Steps whose outputs follow from their inputs' dtypes and shapes alone
 * (and their other inputs' values): what a memoised step compares of
 * input 0 (Step.memo_metadata). export's dtype checks count: they pass
 * or fail by the dtype alone. */
static gboolean
reads_metadata (GraftNode *node)
{
  return reads_shape (node) || strcmp (node->op, "aten::_assert_tensor_metadata") == 0;
}

/* Ops that the subgraphs of a memoised prim::If or prim::Loop may hold
 * (memo_control_flow), beside the pure ops and the reads of sizes: list
 * and tuple reading, the None and type checks of scripted code, the
 * loop index helpers of `for i in range(a, b)`, raising and its message,
 * and further Ifs and Loops of the same. Nothing that prints (aten::warn),
 * changes a value in place or draws at random. */
static gboolean
memo_subgraph_op (GraftNode *node)
{
  static const char *const ops[] = {
    "aten::__contains__", "aten::__derive_index", "aten::__getitem__", "aten::__is__", "aten::__isnot__",
    "aten::__not__", "aten::__range_length", "aten::format", "aten::len", "aten::list", "aten::str",
    "prim::RaiseException", "prim::TupleIndex", "prim::Uninitialized",
    "prim::max", "prim::min", "prim::unchecked_cast",
  };
  /* (an If or Loop: its subgraphs are looked at on their own) */
  if (strcmp (node->op, "prim::If") == 0 || strcmp (node->op, "prim::Loop") == 0)
    return TRUE;
  if (strcmp (node->op, "prim::RaiseException") != 0 && graft_node_changes_state (node))
    return FALSE;
  if (is_pure_shape_op (node) || is_pure_aten_op (node) || passes_fixed (node) || reads_metadata (node))
    return TRUE;
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strcmp (node->op, ops[k]) == 0)
      return TRUE;
  return FALSE;
}

/* What memoize_shape_steps knows while it walks a plan. */
typedef struct {
  Plan *plan;
  gboolean *fixed;          /* slot → its value follows from constants and input shapes */
  /* a value of the plan → the nodes of its steps (GPtrArray) whose
   * subgraphs read it or give it as an output, at any depth */
  GHashTable *inner_uses;
} MemoScan;

/* Calls func for each value that graph (a subgraph, at any depth) reads
 * from outside outermost, with the node reading it and the input's
 * position, or gives as an output from there (node NULL: a block may
 * give an outer value as it is); stops at a FALSE, which it returns. */
typedef gboolean (*OuterValueFunc) (GraftValue *v, GraftNode *node, guint j, gpointer data);

static gboolean
foreach_outer_value (GraftGraph *graph, GraftGraph *outermost, OuterValueFunc func, gpointer data)
{
  for (guint i = 0; i <= graph->nodes->len; i++)
    {
      GraftNode *node = i < graph->nodes->len ? graph->nodes->pdata[i] : NULL;
      GPtrArray *values = node ? node->inputs : graph->outputs;
      for (guint j = 0; j < values->len; j++)
        {
          GraftValue *v = values->pdata[j];
          gboolean inside = FALSE;
          for (GraftGraph *g = v ? v->graph : NULL; g && !inside; g = g->parent_graph)
            inside = g == outermost;
          if (v != NULL && !inside && !func (v, node, j, data))
            return FALSE;
        }
      if (node == NULL)
        continue;
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
      for (guint k = 0; k < subs->len; k++)
        if (!foreach_outer_value (subs->pdata[k], outermost, func, data))
          return FALSE;
    }
  return TRUE;
}

typedef struct {
  GHashTable *inner_uses;
  GraftNode *owner;
} InnerUses;

static gboolean
add_inner_use (GraftValue *v, GraftNode *node, guint j, gpointer data)
{
  InnerUses *uses = data;
  GPtrArray *owners = g_hash_table_lookup (uses->inner_uses, v);
  if (owners == NULL)
    g_hash_table_insert (uses->inner_uses, v, owners = g_ptr_array_new ());
  if (!g_ptr_array_find (owners, uses->owner, NULL))
    g_ptr_array_add (owners, uses->owner);
  return TRUE;
}

static GHashTable *
inner_uses_new (Plan *plan)
{
  GHashTable *inner_uses = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      GraftNode *node = plan->steps[i].node;
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
      InnerUses uses = { inner_uses, node };
      for (guint k = 0; k < subs->len; k++)
        foreach_outer_value (subs->pdata[k], subs->pdata[k], add_inner_use, &uses);
    }
  return inner_uses;
}

static gboolean subgraphs_only_compute (GraftNode *node);

/* Every node of graph, at any depth, is one memo_subgraph_op allows. */
static gboolean
subgraph_only_computes (GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (!memo_subgraph_op (node) || !subgraphs_only_compute (node))
        return FALSE;
    }
  return TRUE;
}

/* The same of each of node's subgraphs. */
static gboolean
subgraphs_only_compute (GraftNode *node)
{
  g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
  for (guint k = 0; k < subs->len; k++)
    if (!subgraph_only_computes (subs->pdata[k]))
      return FALSE;
  return TRUE;
}

static gboolean read_unchanged (MemoScan *scan, GraftValue *v, guint depth);

/* A node with subgraphs that reads (or gives back) v leaves it as it is:
 * its subgraphs change nothing, and what they give of it (an If or Loop
 * output may be v) is read unchanged as well. */
static gboolean
control_flow_reads_unchanged (MemoScan *scan, GraftNode *node, guint depth)
{
  if (!subgraphs_only_compute (node))
    return FALSE;
  for (guint j = 0; j < node->outputs->len; j++)
    if (node->outputs->pdata[j] && (depth > 4 || !read_unchanged (scan, node->outputs->pdata[j], depth + 1)))
      return FALSE;
  return TRUE;
}

/* v's readers leave it as it is, so that a memoised step may give the
 * same list to every run: none changes state (aten::append, an in-place
 * op), an If or Loop reading it (in its subgraphs, or as carried value)
 * only computes, and what may hold or be v (a list or tuple of it, an
 * item taken out of it, prim:: casts, an If or Loop output) is read the
 * same way. */
static gboolean
read_unchanged (MemoScan *scan, GraftValue *v, guint depth)
{
  for (guint k = 0; v->consumers && k < v->consumers->len; k++)
    {
      GraftNode *reader = v->consumers->pdata[k];
      gboolean holds = (g_str_has_prefix (reader->op, "prim::") && strcmp (reader->op, "prim::NumToTensor") != 0) ||
                       strcmp (reader->op, "aten::__getitem__") == 0;
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (reader);
      /* (a reader inside a subgraph: its step's node, below) */
      if (reader->graph != v->graph)
        continue;
      if (bodies->len > 0)
        {
          if (!control_flow_reads_unchanged (scan, reader, depth))
            return FALSE;
          continue;
        }
      if (graft_node_changes_state (reader))
        return FALSE;
      for (guint j = 0; holds && j < reader->outputs->len; j++)
        if (reader->outputs->pdata[j] && (depth > 4 || !read_unchanged (scan, reader->outputs->pdata[j], depth + 1)))
          return FALSE;
    }
  GPtrArray *owners = g_hash_table_lookup (scan->inner_uses, v);
  for (guint k = 0; owners && k < owners->len; k++)
    if (!control_flow_reads_unchanged (scan, owners->pdata[k], depth))
      return FALSE;
  /* read from a subgraph of a node that is no step of this plan (the
   * plan is itself a subgraph's): no telling */
  for (guint k = 0; v->consumers && k < v->consumers->len; k++)
    {
      GraftNode *reader = v->consumers->pdata[k];
      GraftGraph *g = reader->graph;
      while (g && g->parent_graph != v->graph)
        g = g->parent_graph;
      if (reader->graph != v->graph && (g == NULL || owners == NULL || !g_ptr_array_find (owners, g->parent_node, NULL)))
        return FALSE;
    }
  return TRUE;
}

static gboolean
outputs_read_unchanged (MemoScan *scan, GraftNode *node)
{
  for (guint j = 0; j < node->outputs->len; j++)
    if (node->outputs->pdata[j] && !read_unchanged (scan, node->outputs->pdata[j], 0))
      return FALSE;
  return TRUE;
}

typedef struct {
  MemoScan *scan;
  GArray *captures;    /* slots */
  guint64 metadata;    /* bit k: capture k is read only for its dtype and shape */
} MemoCaptures;

/* v, read by node (input j) in a subgraph of a step to memoise: a value
 * of the plan that is fixed, or the tensor whose dtype and shape a size
 * read takes, added to the captures once. */
static gboolean
add_memo_capture (GraftValue *v, GraftNode *node, guint j, gpointer data)
{
  MemoCaptures *memo = data;
  guint slot = _graft_plan_slot (memo->scan->plan, _graft_plan_resolve (memo->scan->plan, v));
  gboolean shape_of = node != NULL && j == 0 && reads_metadata (node);
  guint k = 0;
  if (slot == NO_SLOT || !(memo->scan->fixed[slot] || shape_of))
    return FALSE;
  while (k < memo->captures->len && g_array_index (memo->captures, guint, k) != slot)
    k++;
  if (k < memo->captures->len)
    return TRUE;
  if (k >= 64)
    return FALSE;
  g_array_append_val (memo->captures, slot);
  if (!memo->scan->fixed[slot])
    memo->metadata |= G_GUINT64_CONSTANT (1) << k;
  return TRUE;
}

/* A prim::If or prim::Loop whose subgraphs only compute (memo_subgraph_op)
 * from values that follow from the input shapes: the shape checks of
 * scripted code (`if x.dim() != 4: raise`, F.adaptive_avg_pool2d's
 * checks of its output size) and the loops over sizes (F.group_norm's
 * product of the input's sizes, checked against 1). Memoised as a whole
 * with what its subgraphs read (Step.memo_captures): the same condition,
 * trip count, carried values and captured values give the same outputs,
 * and a check that passed passes again. A shape that fails the check
 * differs from the kept one, so the step runs and raises. */
static gboolean
memo_control_flow (MemoScan *scan, Step *step, guint *capture_metadata)
{
  GraftNode *node = step->node;
  if ((strcmp (node->op, "prim::If") != 0 && strcmp (node->op, "prim::Loop") != 0) ||
      _graft_step_is_inlined_if (step) || !subgraphs_only_compute (node))
    return FALSE;
  g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
  g_autoptr(GArray) captures = g_array_new (FALSE, FALSE, sizeof (guint));
  MemoCaptures memo = { scan, captures, 0 };
  for (guint k = 0; k < subs->len; k++)
    if (!foreach_outer_value (subs->pdata[k], subs->pdata[k], add_memo_capture, &memo))
      return FALSE;
  guint64 metadata = memo.metadata;
  /* (Step.memo_metadata has a bit for each of the first 32 inputs) */
  if (metadata != 0 && step->n_inputs + captures->len > 32)
    return FALSE;
  g_clear_pointer (&step->memo_captures, g_free);
  step->n_memo_captures = captures->len;
  step->memo_captures = g_new (ValueRef, MAX (captures->len, 1));
  for (guint k = 0; k < captures->len; k++)
    step->memo_captures[k] = (ValueRef) { 0, g_array_index (captures, guint, k) };
  *capture_metadata = (guint) (metadata << step->n_inputs);
  return subs->len > 0;
}

/* Steps computing values that depend only on constants and on shapes
 * (what Shape and Size read of their input) are memoised (Step.memo):
 * the same input shapes give the same values, so a run after the first
 * takes them from the step instead of running it, and a run with other
 * shapes computes them again. T5's relative position buckets, the masks
 * of BERT, ViT and wav2vec2 exports, SAM's window arithmetic: a tenth to
 * two fifths of a small transformer's nodes. Not for a graph's outputs
 * (the caller gets a tensor of its own there) nor for fused steps. */
static void
memoize_shape_steps (Plan *plan)
{
  g_autofree gboolean *fixed = g_new0 (gboolean, MAX (plan->n_slots, 1));  /* slot → shape-derived */
  g_autoptr(GHashTable) inner_uses = inner_uses_new (plan);
  MemoScan scan = { plan, fixed, inner_uses };
  for (guint s = 0; s < plan->n_slots; s++)
    fixed[s] = plan->constants[s] != NULL;
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      GraftNode *node = step->node;
      gboolean as_planned = step_unfused (step) && step->n_views == 0 && step->transposed_inputs == 0 &&
                            step->fused_activation == GRAFT_FUSED_ACTIVATION_NONE && step->folded_weight == NULL;
      gboolean shape_only = as_planned && reads_metadata (node);
      gboolean pure = is_pure_shape_op (node) || is_pure_aten_op (node), passing = passes_fixed (node);
      guint capture_metadata = 0;
      if (step->absorbed)
        continue;
      /* (its inputs, the condition, trip count and carried values: fixed,
       * as the loop below checks) */
      gboolean control_flow = as_planned && memo_control_flow (&scan, step, &capture_metadata);
      pure |= control_flow;
      gboolean derived = as_planned && (pure || passing);
      /* (a shape read's other inputs: a dim, export's expected sizes) */
      gboolean metadata_memo = shape_only;
      for (guint j = 0; (derived || metadata_memo) && j < step->n_inputs; j++)
        {
          ValueRef ref = step->inputs[j];
          gboolean fixed_input = ref.slot == NO_SLOT || (ref.up == 0 && fixed[ref.slot]);
          derived &= fixed_input;
          metadata_memo &= j == 0 ? ref.slot != NO_SLOT : fixed_input;
        }
      for (guint j = 0; (derived || shape_only) && j < step->n_outputs; j++)
        if (step->outputs[j] != NO_SLOT && is_graph_output (plan, plan->values[step->outputs[j]]))
          derived = shape_only = metadata_memo = FALSE;
      if (!(derived && control_flow))
        {
          g_clear_pointer (&step->memo_captures, g_free);
          step->n_memo_captures = 0;
        }
      if (!derived && !shape_only)
        continue;
      /* a list it gives is kept and given again only while no reader
       * changes it; sizes and lists of fixed values then cost no step */
      step->memo_sequences = (metadata_memo || derived) && outputs_read_unchanged (&scan, node);
      step->memo = (derived && pure) || (derived && passing && step->memo_sequences) ||
                   (metadata_memo && step->memo_sequences);
      step->memo_metadata = step->memo && metadata_memo ? 1u : 0u;
      if (step->memo && control_flow)
        step->memo_metadata = capture_metadata;
      if (!reads_shape (node) && !derived)
        continue;
      for (guint j = 0; j < step->n_outputs; j++)
        if (step->outputs[j] != NO_SLOT)
          fixed[step->outputs[j]] = TRUE;
    }
}

/* Position k of an aten node: absent or None (*value untouched), or a
 * constant int (*value). FALSE for a value the run gives, or a constant
 * of another kind. */
static gboolean
constant_int_arg (GraftNode *node, guint k, gint64 *value)
{
  GraftValue *given;
  GraftAttribute *a = graft_aten_node_arg (node, k, &given);
  if (a == NULL)
    return given == NULL;
  if (a->type == GRAFT_ATTR_NONE)
    return TRUE;
  if (a->type != GRAFT_ATTR_INT)
    return FALSE;
  *value = a->i;
  return TRUE;
}

/* aten::to(self, dtype, …) or to(self, device, dtype = None, …) with
 * constant arguments: the dtype it converts to, GRAFT_DTYPE_UNDEFINED
 * for the input's own (a move to a device). FALSE where the run decides
 * (to(self, other), a dtype given as a value) or the kernel would refuse
 * it. The order is kernel_to's. */
static gboolean
to_constant_dtype (GraftNode *node, GraftDType *dtype)
{
  GraftAttribute *keyword = graft_node_get_attribute (node, "dtype");
  GraftValue *given;
  GraftAttribute *a = graft_aten_node_arg (node, 1, &given);
  gint64 scalar_type = -1;
  if (keyword && keyword->type == GRAFT_ATTR_INT)
    scalar_type = keyword->i;
  else if (a == NULL)
    return FALSE;
  else if (a->type == GRAFT_ATTR_INT)
    scalar_type = a->i;
  else if (a->type != GRAFT_ATTR_STRING || !constant_int_arg (node, 2, &scalar_type))
    return FALSE;
  *dtype = scalar_type < 0 ? GRAFT_DTYPE_UNDEFINED : graft_dtype_from_torch_scalar_type (scalar_type);
  return scalar_type < 0 || *dtype != GRAFT_DTYPE_UNDEFINED;
}

/* aten::slice(self, dim, start, end, step) taking all of an axis: start
 * 0 or None, end None or the largest int64 (what tracing x[:, :n] leaves
 * for the `:`), step 1 or None. *min_rank: what the axis needs of the
 * input's rank (the kernel refuses an axis out of range). */
static gboolean
slice_takes_all (GraftNode *node, int *min_rank)
{
  gint64 dim = 0, start = 0, end = G_MAXINT64, step = 1;
  if (!constant_int_arg (node, 1, &dim) || !constant_int_arg (node, 2, &start) ||
      !constant_int_arg (node, 3, &end) || !constant_int_arg (node, 4, &step) ||
      start != 0 || end != G_MAXINT64 || step != 1 || dim >= GRAFT_RT_MAX_RANK || dim < -GRAFT_RT_MAX_RANK)
    return FALSE;
  *min_rank = dim >= 0 ? (int) dim + 1 : (int) -dim;
  return TRUE;
}

/* Steps that give their first input (a tensor) unchanged, as their kernel
 * does with a reference to it (Step.identity): the run passes the input
 * on without the step's dispatch, argument reading and shape inference —
 * the contiguous, detach, eval dropout, same-dtype aten::to and x[:, :n]
 * slices of a traced transformer, steps its ONNX export does not have.
 * In-place ops after them see a tensor two slots hold, as after the
 * kernel, and copy it rather than write into it. */
static void
mark_identity_steps (Plan *plan)
{
  static const char *const identities[] = {
    "aten::contiguous", "aten::detach", "aten::alias", "aten::lift_fresh", "aten::dropout",
    "aten::feature_dropout", "aten::alpha_dropout",
    /* in place: later readers read their output (runtime-plan.c), which
     * is their input */
    "aten::dropout_", "aten::detach_",
  };
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      GraftNode *node = step->node;
      GraftValue *self = NULL;
      GraftDType dtype = GRAFT_DTYPE_UNDEFINED;
      int min_rank = 0;
      gboolean identity = FALSE;
      if (!g_str_has_prefix (node->op, "aten::") || !step_unfused (step) || step->memo || step->n_views > 0 ||
          step->n_inputs == 0 || step->n_outputs != 1 || step->outputs[0] == NO_SLOT ||
          is_graph_output (plan, plan->values[step->outputs[0]]) ||
          graft_aten_node_arg (node, 0, &self) != NULL || self == NULL || self != node->inputs->pdata[0])
        continue;
      for (guint k = 0; k < G_N_ELEMENTS (identities); k++)
        identity |= strcmp (node->op, identities[k]) == 0;
      if (strcmp (node->op, "aten::to") == 0)
        identity = to_constant_dtype (node, &dtype);
      else if (strcmp (node->op, "aten::slice") == 0)
        identity = slice_takes_all (node, &min_rank);
      step->identity = identity;
      step->identity_dtype = dtype;
      step->identity_min_rank = min_rank;
    }
}

/* Steps that only put their inputs in a list or take a list's items out
 * (Step.packs, Step.unpacks): every item a value of the run, none a
 * constant of the node's (an "arg<k>" attribute, which the kernel turns
 * into a tensor). */
static void
mark_list_steps (Plan *plan)
{
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      GraftNode *node = step->node;
      gboolean packs = strcmp (node->op, "prim::ListConstruct") == 0 || strcmp (node->op, "prim::TupleConstruct") == 0;
      gboolean unpacks = strcmp (node->op, "prim::ListUnpack") == 0 || strcmp (node->op, "prim::TupleUnpack") == 0;
      if ((!packs && !unpacks) || !step_unfused (step) || step->memo || (unpacks && step->n_inputs != 1) ||
          (packs && step->n_outputs != 1))
        continue;
      for (guint j = 0; j < step->n_inputs; j++)
        packs &= step->inputs[j].slot != NO_SLOT;
      for (guint k = 0; k < node->attributes->len; k++)
        packs &= !g_str_has_prefix (((GraftAttribute *) node->attributes->pdata[k])->name, "arg");
      step->packs = packs;
      step->unpacks = unpacks && step->inputs[0].slot != NO_SLOT;
    }
}

/* torch.export's aten::_assert_tensor_metadata checks of the dtype of a
 * value inside a fused pattern (a value the fused step does not compute;
 * fusion-patterns.c aten_sole_reader lets them by) are skipped while no
 * observer watches: an ONNX export of the model has no such checks, and
 * the fused kernels take only float32. */
static void
skip_pattern_metadata_asserts (Plan *plan)
{
  g_autoptr(GHashTable) step_of = plan_step_of_outputs (plan);
  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      GraftValue *checked = step->node->inputs->len > 0 ? step->node->inputs->pdata[0] : NULL;
      guint producer = producer_step (step_of, checked);
      if (strcmp (step->node->op, "aten::_assert_tensor_metadata") != 0 || !step_unfused (step) ||
          producer == NO_STEP || (plan->steps[producer].pattern == NULL && plan->steps[producer].pattern_at == NO_STEP))
        continue;
      for (guint j = 0; j < step->node->outputs->len; j++)
        {
          GraftValue *v = step->node->outputs->pdata[j];
          if (v != NULL && ((v->consumers && v->consumers->len > 0) || is_graph_output (plan, v)))
            producer = NO_STEP;
        }
      step->absorbed = producer != NO_STEP;
    }
}

/* What the steps folded at plan time may add to a plan's constants
 * (outputs that are no view of an input): the scales, biases, masks and
 * tables a PyTorch file computes from its buffers, not a second copy of
 * its weights. */
#define FOLD_BUDGET_BYTES ((gsize) 8 << 20)

/* Ops a step whose inputs are all constants may be run for at plan time
 * (fold_constant_steps): those that compute their outputs from their
 * inputs alone (memoize_shape_steps' pure ops, reads of sizes, lists and
 * tuples built or taken apart). No random draw, nothing in place or on
 * module state, no control flow (a node with subgraphs). */
static gboolean
foldable_op (GraftNode *node)
{
  if (!(is_pure_shape_op (node) || is_pure_aten_op (node) || reads_shape (node) || passes_fixed (node)) ||
      graft_node_changes_state (node))
    return FALSE;
  g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
  return subs->len == 0;
}

/* Output v of a step to fold may become a plan constant: no graph output
 * (the caller gets a tensor of its own there), nor an inlined If's output
 * that may be one, read by no node that changes it, and if a list, read
 * unchanged (a run shares a constant list by reference). */
static gboolean
foldable_output (MemoScan *scan, GraftValue *v, guint slot)
{
  Plan *plan = scan->plan;
  if (slot == NO_SLOT || plan->constants[slot] != NULL || is_graph_output (plan, v) ||
      (plan->aliased && g_hash_table_contains (plan->aliased, v)))
    return FALSE;
  for (guint k = 0; v->consumers && k < v->consumers->len; k++)
    if (graft_node_changes_state (v->consumers->pdata[k]))
      return FALSE;
  return TRUE;
}

/* Bytes of t (a step's output) in no input's data: a reshape or a view
 * of a constant adds nothing. */
static gsize
fold_new_bytes (const GraftRtTensor *t, GraftRtTensor *const *inputs, guint n_inputs)
{
  gsize bytes = 0;
  if (t == NULL)
    return 0;
  if (t->kind == GRAFT_RT_SEQUENCE)
    {
      for (guint i = 0; i < t->items->len; i++)
        bytes += fold_new_bytes (t->items->pdata[i], inputs, n_inputs);
      return bytes;
    }
  if (t->kind != GRAFT_RT_TENSOR || t->nbytes == 0)
    return 0;
  for (guint j = 0; j < n_inputs; j++)
    {
      const GraftRtTensor *in = inputs[j];
      if (in && in->kind == GRAFT_RT_TENSOR && (const guint8 *) t->data >= (const guint8 *) in->data &&
          (const guint8 *) t->data + t->nbytes <= (const guint8 *) in->data + in->nbytes)
        return 0;
    }
  return t->nbytes;
}

/* Step i, whose inputs are all fixed constants, run now (Step.absorbed
 * then): TRUE when its outputs became plan constants. */
static gboolean
fold_step (GraftRuntime *rt, MemoScan *scan, guint i, gsize *budget)
{
  Plan *plan = scan->plan;
  Step *step = &plan->steps[i];
  GraftRtTensor *inputs_here[8] = { NULL };
  g_autofree GraftRtTensor **inputs_heap = step->n_inputs > 8 ? g_new0 (GraftRtTensor *, step->n_inputs) : NULL;
  GraftRtTensor **inputs = inputs_heap ? inputs_heap : inputs_here;
  gsize bytes = 0;

  for (guint j = 0; j < step->n_outputs; j++)
    {
      GraftValue *v = step->node->outputs->pdata[j];
      if (v != NULL && !foldable_output (scan, v, step->outputs[j]))
        return FALSE;
      for (guint k = 0; k < j; k++)
        if (step->outputs[k] == step->outputs[j])
          return FALSE;
    }
  for (guint j = 0; j < step->n_inputs; j++)
    inputs[j] = step->inputs[j].slot == NO_SLOT ? NULL : plan->constants[step->inputs[j].slot];
  /* (a step that fails now fails in the run, with its message there) */
  if (!_graft_plan_evaluate_step (rt, plan, step, NULL))
    return FALSE;
  gboolean keep = TRUE;
  for (guint j = 0; j < step->n_outputs; j++)
    {
      GraftRtTensor *t = step->outputs[j] != NO_SLOT ? plan->constants[step->outputs[j]] : NULL;
      bytes += fold_new_bytes (t, inputs, step->n_inputs);
      /* a list only while no reader changes it */
      if (t && t->kind == GRAFT_RT_SEQUENCE && !read_unchanged (scan, step->node->outputs->pdata[j], 0))
        keep = FALSE;
    }
  if (!keep || bytes > *budget)
    {
      for (guint j = 0; j < step->n_outputs; j++)
        if (step->outputs[j] != NO_SLOT)
          g_clear_pointer (&plan->constants[step->outputs[j]], graft_rt_tensor_unref);
      return FALSE;
    }
  *budget -= bytes;
  step->absorbed = TRUE;
  step->computed_at_plan = TRUE;
  return TRUE;
}

/* A fixed constant (fixed_constant, of any kind: None and tuples too) in
 * each slot of plan that holds one, by slot. */
static gboolean *
fixed_slots_new (Plan *plan)
{
  gboolean *fixed = g_new0 (gboolean, MAX (plan->n_slots, 1));
  for (guint s = 0; s < plan->n_slots; s++)
    fixed[s] = plan->constants[s] != NULL && !_graft_plan_slot_is_state (plan, s);
  for (guint k = 0; k < plan->graph->inputs->len; k++)
    {
      guint s = _graft_plan_slot (plan, plan->graph->inputs->pdata[k]);
      if (s != NO_SLOT)
        fixed[s] = FALSE;
    }
  return fixed;
}

/* Steps whose inputs are all constants (initializers, ONNX Constant
 * nodes, a PyTorch file's module constants and buffers, and what such
 * steps give) run once at plan time, as onnxruntime's constant folding
 * does: their outputs become plan constants, which the folds after read
 * (DETR's FrozenBatchNorm2d computes its scale from its buffers at run
 * time, `w * (rv + eps).rsqrt()`, where its ONNX export has the scale
 * as an initializer), and the steps are absorbed (they run again only
 * for an observer, from the same constants). A folded value that only
 * other folded steps read is no constant of the plan: only what a run
 * reads is kept (within FOLD_BUDGET_BYTES). */
static void
fold_constant_steps (GraftRuntime *rt, Plan *plan)
{
  g_autofree gboolean *fixed = fixed_slots_new (plan);
  g_autofree gboolean *folded = g_new0 (gboolean, MAX (plan->n_steps, 1));
  g_autoptr(GHashTable) inner_uses = inner_uses_new (plan);
  MemoScan scan = { plan, fixed, inner_uses };
  gsize budget = FOLD_BUDGET_BYTES;
  gboolean any = FALSE;

  for (guint i = 0; i < plan->n_steps; i++)
    {
      Step *step = &plan->steps[i];
      gboolean inputs_fixed = TRUE;
      if (!step_unfused (step) || step->n_views > 0 || step->n_outputs == 0 || _graft_step_is_inlined_if (step) ||
          !foldable_op (step->node))
        continue;
      for (guint j = 0; j < step->n_inputs && inputs_fixed; j++)
        inputs_fixed = step->inputs[j].slot == NO_SLOT || (step->inputs[j].up == 0 && fixed[step->inputs[j].slot]);
      if (!inputs_fixed || !fold_step (rt, &scan, i, &budget))
        continue;
      folded[i] = any = TRUE;
      for (guint j = 0; j < step->n_outputs; j++)
        if (step->outputs[j] != NO_SLOT)
          fixed[step->outputs[j]] = TRUE;
    }
  if (!any)
    return;

  /* the values only folded steps read: no constant of the plan */
  g_autoptr(GHashTable) step_of_node = plan_step_of_nodes (plan);
  g_autoptr(GHashTable) outer_outputs = g_hash_table_new (NULL, NULL);
  add_outer_outputs (plan->graph, outer_outputs);
  for (guint i = 0; i < plan->n_steps; i++)
    for (guint j = 0; folded[i] && j < plan->steps[i].n_outputs; j++)
      {
        guint slot = plan->steps[i].outputs[j];
        GraftValue *v = plan->steps[i].node->outputs->pdata[j];
        g_autoptr(GPtrArray) readers = g_ptr_array_new ();
        gboolean read = slot == NO_SLOT || g_hash_table_contains (outer_outputs, v) || !plan_readers (plan, v, readers);
        for (guint k = 0; !read && k < readers->len; k += 2)
          {
            Step *reader = step_of (plan, step_of_node, readers->pdata[k]);
            read = reader == NULL || !folded[reader - plan->steps];
          }
        if (!read)
          g_clear_pointer (&plan->constants[slot], graft_rt_tensor_unref);
      }
}

void
_graft_plan_fuse (GraftRuntime *rt, Plan *plan, guint *last_use)
{
  preload_constant_steps (plan);
  fold_constant_steps (rt, plan);
  fold_conv_branches (plan);
  fold_conv_affines (plan);
  fuse_activations (rt, plan);
  fuse_qdq (rt, plan, last_use);
  fuse_patterns (rt, plan);
  skip_pattern_metadata_asserts (plan);
  fuse_matmul_bias (rt, plan);
  fold_batch_norms (plan);
  fuse_aten_residuals (rt, plan);
  fuse_conv_activations (plan);
  skip_unread_steps (plan);
  memoize_shape_steps (plan);
  mark_identity_steps (plan);
  mark_list_steps (plan);
}
