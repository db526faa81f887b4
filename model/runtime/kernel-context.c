/* What a kernel asks of the engine that runs it (op.h): its inputs and
 * outputs, pooled scratch, what it derived from constant weights, the
 * fusions planned for its step, worker threads and subgraphs. */
#include "runtime/runtime-private.h"

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

/* The step's kept data when it is of kind and derived from input_data. */
static gpointer
derived_lookup (EngineCtx *e, const GraftDerivedKind *kind, gconstpointer input_data)
{
  if (e == NULL || e->step == NULL || e->step->derived_key == NULL || e->step->derived_key != input_data ||
      e->step->derived_kind != kind)
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
  return constant != NULL && frame->values[ref.slot] == constant && !_graft_plan_slot_is_state (frame->plan, ref.slot);
}

/* Keeps derived (taking it) on the step when input_data is the data of a
 * constant input of the node, in place of what the step kept before. */
static gboolean
derived_keep (GraftKernelContext *ctx, EngineCtx *e, const GraftDerivedKind *kind, gconstpointer input_data,
              gpointer derived)
{
  if (e == NULL || e->step == NULL || input_data == NULL || e->run->runtime->drop_derived)
    return FALSE;
  if (!graft_kernel_input_data_is_constant (ctx, input_data))
    return FALSE;
  if (e->step->derived_kind)
    e->step->derived_kind->free (e->step->derived);
  e->step->derived_key = input_data;
  e->step->derived = derived;
  e->step->derived_kind = kind;
  return TRUE;
}

gboolean
graft_kernel_input_data_is_constant (GraftKernelContext *ctx, gconstpointer data)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || data == NULL)
    return FALSE;
  /* weights folded at plan time are as constant as the node's own */
  if (e->step->folded_weight && data == e->step->folded_weight->data)
    return TRUE;
  for (guint i = 0; i < ctx->n_inputs; i++)
    if (ctx->inputs[i] && ctx->inputs[i]->data == data && input_is_constant (e, i))
      return TRUE;
  return FALSE;
}

gboolean
graft_kernel_need_values (GraftKernelContext *ctx, gconstpointer data, GError **error)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || data == NULL)
    return TRUE;
  if (e->step->folded_weight && data == e->step->folded_weight->data)
    _graft_step_fold_weight (e->step);
  for (guint i = 0; i < ctx->n_inputs && i < e->step->n_inputs; i++)
    if (ctx->inputs[i] && ctx->inputs[i]->data == data &&
        !_graft_frame_restore_input (e->run->runtime, e->frame, e->step->inputs[i], error))
      return FALSE;
  return TRUE;
}

gpointer
graft_kernel_derived (GraftKernelContext *ctx, const GraftDerivedKind *kind, gconstpointer input_data,
                      GraftDerivedFits fits, GraftDerivedMake make, gconstpointer args, gpointer *owned)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  *owned = NULL;
  gpointer kept = derived_lookup (e, kind, input_data);
  if (kept && (fits == NULL || fits (kept, args)))
    return kept;
  /* a failed read-in shows as no datum: the kernel's other path asks
   * again and reports it */
  if (!graft_kernel_need_values (ctx, input_data, NULL))
    return NULL;
  gpointer made = make (args);
  if (made == NULL)
    return NULL;
  if ((kept == NULL || !kind->keep_first) && derived_keep (ctx, e, kind, input_data, made))
    return made;
  *owned = made;
  return made;
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
  return _graft_frame_get (e->frame, e->step->residual);
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
  return e != NULL && e->step != NULL && _graft_step_input_transposed (e->run, e->step, i);
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

GraftFusedActivation
graft_kernel_get_fused_activation (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || e->run->runtime->observe)
    return GRAFT_FUSED_ACTIVATION_NONE;
  return e->step->fused_activation;
}

gboolean
graft_kernel_get_folded_weights (GraftKernelContext *ctx, GraftRtTensor **weight, GraftRtTensor **bias)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || e->step->folded_weight == NULL || e->run->runtime->observe)
    return FALSE;
  *weight = e->step->folded_weight;
  *bias = e->step->folded_bias;
  return TRUE;
}

gconstpointer
graft_kernel_get_pattern (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  return e != NULL && e->step != NULL ? e->step->pattern_match : NULL;
}

GraftAttribute *const *
graft_kernel_get_positional_attributes (GraftKernelContext *ctx, guint *n)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  if (e == NULL || e->step == NULL || e->step->node != ctx->node || e->step->positional == NULL)
    return NULL;
  *n = e->step->n_positional;
  return e->step->positional;
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
  return _graft_run_plan (e->run, plan, e->frame, inputs, n_inputs, error);
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

gboolean
graft_kernel_observes_untaken_branches (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  return e != NULL && e->run->runtime->observe_untaken_branches && e->run->runtime->observe != NULL;
}

guint
graft_kernel_get_n_threads (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  return e ? graft_runtime_get_n_threads (e->run->runtime) : 1;
}

GraftPrecision
graft_kernel_get_precision (GraftKernelContext *ctx)
{
  EngineCtx *e = ctx ? ctx->engine : NULL;
  return e ? e->run->runtime->precision : GRAFT_PRECISION_F32;
}
