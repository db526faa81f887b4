/* The runtime's execution: a frame of value slots per run of a plan, each
 * step's kernel called with its inputs (or its fused step tried first),
 * values released after their last use, limits checked between steps. */
#include "runtime/runtime-private.h"

#include <cblas.h>
#include <dlfcn.h>
#include <string.h>
#include <time.h>
#include "runtime/kernels/aten-args.h"

/* GraftRuntime.given_back, per slot */
#define GIVEN_BACK 1
#define KEPT_RESIDENT 2
/* smaller weights are not worth their checksum and read-in (a page or two) */
#define GIVE_BACK_MIN_BYTES ((gsize) 64 << 10)


GraftRtTensor *
_graft_frame_get (Frame *frame, ValueRef ref)
{
  for (guint i = 0; i < ref.up && frame; i++)
    frame = frame->parent;
  if (frame == NULL || ref.slot == NO_SLOT)
    return NULL;
  return frame->values[ref.slot];
}

/* The model tensor whose data the constant at ref (in frame's plan, or a
 * plan up) borrows, when the runtime gave its pages back. */
static GraftTensor *
given_back_tensor (GraftRuntime *rt, Frame *frame, ValueRef ref, guint *main_slot)
{
  for (guint i = 0; i < ref.up && frame; i++)
    frame = frame->parent;
  if (frame == NULL || ref.slot == NO_SLOT || frame->plan != rt->main || rt->given_back == NULL ||
      rt->given_back[ref.slot] != GIVEN_BACK)
    return NULL;
  *main_slot = ref.slot;
  return frame->plan->values[ref.slot]->initializer;
}

gboolean
_graft_frame_restore_input (GraftRuntime *rt, Frame *frame, ValueRef ref, GError **error)
{
  guint slot;
  GraftTensor *tensor = given_back_tensor (rt, frame, ref, &slot);
  if (tensor == NULL)
    return TRUE;
  if (!graft_tensor_restore (tensor, error))
    return FALSE;
  /* read at a shape the kept datum does not serve: it stays, not read
   * from the file at every such run */
  rt->given_back[slot] = KEPT_RESIDENT;
  rt->given_back_bytes -= graft_tensor_get_nbytes (tensor);
  return TRUE;
}

/* GraftRuntime.given_back for the main plan: initializers whose bytes
 * another one shares (an edit may have made two of one) stay, as the
 * other would read the pages given back. */
static guint8 *
new_given_back (Plan *plan)
{
  guint8 *given_back = g_new0 (guint8, MAX (plan->n_slots, 1));
  g_autoptr(GHashTable) first = g_hash_table_new (NULL, NULL);   /* data → slot + 1 */
  for (guint s = 0; s < plan->n_slots; s++)
    {
      GraftTensor *tensor = plan->values[s]->initializer;
      if (tensor == NULL || tensor->data == NULL || g_bytes_get_size (tensor->data) == 0)
        continue;
      gconstpointer data = g_bytes_get_data (tensor->data, NULL);
      guint other = GPOINTER_TO_UINT (g_hash_table_lookup (first, data));
      if (other)
        given_back[other - 1] = given_back[s] = KEPT_RESIDENT;
      else
        g_hash_table_insert (first, (gpointer) data, GUINT_TO_POINTER (s + 1));
    }
  return given_back;
}

/* After step's kernel kept what it derived from its weight B (a packed
 * matrix) in place of B's values, gives B's pages back (ir/tensor.h)
 * when nothing else can read them unasked: the runtime holds the model
 * alone (graft-cli run, not a window showing it), B is a main-graph
 * initializer read again from the model file on demand, and this step,
 * of an op that asks for values it reads (GRAFT_OP_ASKS_FOR_VALUES), is
 * its only reader. onnxruntime frees its initializers once prepacked in
 * the same way; without this a transformer holds its weights twice. */
static void
give_back_weight (GraftRuntime *rt, Frame *frame, Step *step, GraftRtTensor *b)
{
  Plan *plan = frame->plan;
  if (plan != rt->main || rt->observe || rt->drop_derived || !(step->schema->flags & GRAFT_OP_ASKS_FOR_VALUES) ||
      step->n_inputs < 2 || step->inputs[1].up != 0 || step->inputs[1].slot == NO_SLOT || b == NULL ||
      step->derived_kind == NULL || !step->derived_kind->holds_values || step->derived_key != b->data ||
      step < plan->steps || step >= plan->steps + plan->n_steps || step->pattern || step->pattern_at != NO_STEP ||
      step->qdq || step->absorbed || step->memo)
    return;
  guint slot = step->inputs[1].slot;
  GraftValue *value = plan->values[slot];
  GraftTensor *tensor = value->initializer;
  if (rt->given_back == NULL)
    rt->given_back = new_given_back (plan);
  if (rt->given_back[slot] != 0 || tensor == NULL || plan->constants[slot] != b || frame->values[slot] != b ||
      b->dtype != GRAFT_DTYPE_FLOAT32 || b->nbytes < GIVE_BACK_MIN_BYTES || tensor->source_file == NULL ||
      value->consumers->len != 1 || value->consumers->pdata[0] != step->node ||
      _graft_plan_slot_is_state (plan, slot) || _graft_plan_value_leaves_run (plan, value) ||
      g_atomic_int_get (&tensor->ref_count) != 1 || g_atomic_int_get (&G_OBJECT (rt->model)->ref_count) != 1 ||
      tensor->data == NULL || g_bytes_get_data (tensor->data, NULL) != b->data)
    return;
  if (graft_tensor_give_back (tensor))
    {
      rt->given_back[slot] = GIVEN_BACK;
      rt->given_back_bytes += b->nbytes;
    }
}

/* dims: room for GRAFT_RT_MAX_RANK dims that the shape then uses (not
 * to be cleared), or NULL to allocate them. */
static void
infer_value_from_tensor (GraftInferValue *iv, GraftRtTensor *t, GraftDim *dims)
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
      if (dims == NULL)
        {
          graft_shape_init_fixed (&iv->shape, t->rank, t->dims);
          break;
        }
      iv->shape.rank = t->rank;
      iv->shape.dims = t->rank > 0 ? dims : NULL;
      for (int d = 0; d < t->rank; d++)
        dims[d] = (GraftDim) { GRAFT_DIM_FIXED, t->dims[d], NULL };
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
gboolean
_graft_step_input_transposed (RunState *run, Step *step, guint j)
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
        inputs[j] = _graft_frame_get (frame, view->inputs[j]);
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

/* The producing Conv already applied this activation (or residual Add):
 * the step only forwards its input (never while observing). */
static gboolean
step_forwards (RunState *run, Frame *frame, Step *step)
{
  return run->runtime->observe == NULL &&
         (step->forward_input || (step->residual_from != NO_STEP && frame->residual_taken[step->residual_from]));
}

/* FALSE when the forwarded input has no value. */
static gboolean
forward_input (Frame *frame, Step *step)
{
  GraftRtTensor *input = _graft_frame_get (frame, step->inputs[step->forward_index]);
  if (input == NULL)
    return FALSE;
  if (step->n_outputs > 0 && step->outputs[0] != NO_SLOT)
    {
      GraftRtTensor **slot = &frame->values[step->outputs[0]];
      g_clear_pointer (slot, graft_rt_tensor_unref);
      *slot = graft_rt_tensor_ref (input);   /* not a float32 copy */
    }
  return TRUE;
}

/* Inputs at their last use, held only by this frame and passed once,
 * may be overwritten by the kernel (in-place activations, Add). */
static void
donatable_inputs (Step *step, GraftRtTensor **inputs, GraftRtTensor **converted, gboolean *donatable)
{
  /* a memoised step keeps its inputs to compare with the next run's */
  if (step->memo)
    return;
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
}

#define STEP_ARRAYS_HERE 8

/* declined: NULL, or where a kernel that may decline the run (a fused
 * step whose nodes then run) says so by producing no output. */
/* One output as the schema's infer gave it: reused while the inputs'
 * key is the same (Step.infer_key). */
typedef struct _InferredOutput {
  gboolean present;
  GraftValueKind kind;
  GraftDType dtype;
  int rank;                          /* -1: unknown */
  gint64 dims[GRAFT_RT_MAX_RANK];
} InferredOutput;

/* Inputs of up to this many elements are part of the key by value: the
 * shapes, pads, axes, sizes (integers) and scales or range limits
 * (floats) that shape logic reads; activations, which change every run,
 * mostly are not. */
#define INFER_INTEGERS_MAX 256
#define INFER_FLOATS_MAX 16
#define INFER_KEY_MAX 8192

static gboolean
key_append (guint8 *key, gsize *length, gconstpointer data, gsize size)
{
  if (*length + size > INFER_KEY_MAX)
    return FALSE;
  memcpy (key + *length, data, size);
  *length += size;
  return TRUE;
}

/* What the schema's infer may read of the step's inputs: their presence,
 * kind, element type and fixed dims, and the values of small ones. FALSE
 * where that is not all it could read (a sequence, strings, a symbolic
 * dim, a key too long): the step then infers every run. Every infer
 * function reads values only of such small inputs (op.h). */
static gboolean
infer_key (const Step *step, const GraftInferValue *in_info, guint8 *key, gsize *length)
{
  *length = 0;
  for (guint j = 0; j < step->n_inputs; j++)
    {
      const GraftInferValue *iv = &in_info[j];
      gint32 head[4] = { iv->present, iv->kind, iv->dtype, iv->shape.rank };
      if (!key_append (key, length, head, sizeof head))
        return FALSE;
      if (!iv->present)
        continue;
      if (iv->kind != GRAFT_VALUE_TENSOR || iv->dtype == GRAFT_DTYPE_STRING || iv->data == NULL ||
          iv->shape.rank < 0 || iv->shape.rank > GRAFT_RT_MAX_RANK)
        return FALSE;
      for (int d = 0; d < iv->shape.rank; d++)
        if (iv->shape.dims[d].kind != GRAFT_DIM_FIXED ||
            !key_append (key, length, &iv->shape.dims[d].value, sizeof (gint64)))
          return FALSE;
      const GraftRtTensor *t = iv->data;
      gboolean by_value = t->numel <= (graft_dtype_is_float (t->dtype) ? INFER_FLOATS_MAX : INFER_INTEGERS_MAX);
      if (by_value && !key_append (key, length, t->data, t->nbytes))
        return FALSE;
    }
  return TRUE;
}

/* The step's output types and shapes for in_info: the schema's infer, or
 * what it gave last for the same key (shape logic with attribute lookups
 * and allocations was a tenth of a small transformer's run). Reused
 * shapes point into out_dims. */
static gboolean
infer_outputs (Step *step, GraftInferValue *in_info, GraftInferValue *out_info,
               GraftDim out_dims[][GRAFT_RT_MAX_RANK], GError **error)
{
  guint8 key[INFER_KEY_MAX];
  gsize length;
  gboolean keyed = step->n_outputs <= STEP_ARRAYS_HERE && infer_key (step, in_info, key, &length);
  /* a step without inputs keys nothing (and keeps a NULL key) */
  if (keyed && step->inferred && step->infer_key_length == length &&
      (length == 0 || memcmp (step->infer_key, key, length) == 0))
    {
      for (guint j = 0; j < step->n_outputs; j++)
        {
          const InferredOutput *o = &step->inferred[j];
          out_info[j].present = o->present;
          out_info[j].kind = o->kind;
          out_info[j].dtype = o->dtype;
          out_info[j].shape.rank = o->rank;
          out_info[j].shape.dims = o->rank > 0 ? out_dims[j] : NULL;
          for (int d = 0; d < o->rank; d++)
            out_dims[j][d] = (GraftDim) { GRAFT_DIM_FIXED, o->dims[d], NULL };
        }
      return TRUE;
    }
  GraftInferContext ictx = { step->node, step->opset, step->n_inputs, in_info, step->n_outputs, out_info, NULL, NULL,
                             step->pattern_match };
  if (!step->schema->infer (&ictx, error))
    return FALSE;
  g_clear_pointer (&step->infer_key, g_free);
  g_clear_pointer (&step->inferred, g_free);
  if (!keyed)
    return TRUE;
  g_autofree InferredOutput *inferred = g_new0 (InferredOutput, MAX (step->n_outputs, 1));
  for (guint j = 0; j < step->n_outputs; j++)
    {
      const GraftInferValue *ov = &out_info[j];
      InferredOutput *o = &inferred[j];
      /* data an infer attached, or a symbolic dim: not what a key describes */
      if (ov->data != NULL || ov->shape.rank > GRAFT_RT_MAX_RANK || ov->dtype == GRAFT_DTYPE_STRING)
        return TRUE;
      *o = (InferredOutput) { ov->present, ov->kind, ov->dtype, ov->shape.rank, { 0 } };
      for (int d = 0; d < ov->shape.rank; d++)
        {
          if (ov->shape.dims[d].kind != GRAFT_DIM_FIXED)
            return TRUE;
          o->dims[d] = ov->shape.dims[d].value;
        }
    }
  step->infer_key = g_memdup2 (key, length);
  step->infer_key_length = length;
  step->inferred = g_steal_pointer (&inferred);
  return TRUE;
}

static gboolean
run_step (RunState *run, Frame *frame, Step *step, gboolean *declined, GError **error)
{
  GraftNode *node = step->node;
  /* most nodes have a few inputs and outputs: their arrays on the stack
   * (allocating five per step cost tiny models a tenth of their run) */
  GraftRtTensor *inputs_here[STEP_ARRAYS_HERE] = { NULL }, *converted_here[STEP_ARRAYS_HERE] = { NULL };
  GraftRtTensor *outputs_here[STEP_ARRAYS_HERE] = { NULL };
  GraftInferValue in_info_here[STEP_ARRAYS_HERE] = { { 0 } }, out_info_here[STEP_ARRAYS_HERE] = { { 0 } };
  gboolean inputs_fit = step->n_inputs <= STEP_ARRAYS_HERE, outputs_fit = step->n_outputs <= STEP_ARRAYS_HERE;
  g_autofree GraftRtTensor **inputs_heap = inputs_fit ? NULL : g_new0 (GraftRtTensor *, step->n_inputs);
  g_autofree GraftRtTensor **converted_heap = inputs_fit ? NULL : g_new0 (GraftRtTensor *, step->n_inputs);
  g_autofree GraftInferValue *in_info_heap = inputs_fit ? NULL : g_new0 (GraftInferValue, step->n_inputs);
  g_autofree GraftRtTensor **outputs_heap = outputs_fit ? NULL : g_new0 (GraftRtTensor *, step->n_outputs);
  g_autofree GraftInferValue *out_info_heap = outputs_fit ? NULL : g_new0 (GraftInferValue, step->n_outputs);
  GraftRtTensor **inputs = inputs_fit ? inputs_here : inputs_heap;
  GraftRtTensor **converted = inputs_fit ? converted_here : converted_heap;
  GraftInferValue *in_info = inputs_fit ? in_info_here : in_info_heap;
  GraftRtTensor **outputs = outputs_fit ? outputs_here : outputs_heap;
  GraftInferValue *out_info = outputs_fit ? out_info_here : out_info_heap;
  gboolean donatable_here[STEP_ARRAYS_HERE] = { FALSE };
  /* and the inputs' dims (a malloc and a free per input otherwise) */
  GraftDim in_dims_here[STEP_ARRAYS_HERE][GRAFT_RT_MAX_RANK];
  /* and the outputs' when their inference is reused (infer_outputs) */
  GraftDim out_dims_here[STEP_ARRAYS_HERE][GRAFT_RT_MAX_RANK];
  g_autofree gboolean *donatable_heap = NULL;   /* before any goto */
  GraftDType half_type = GRAFT_DTYPE_UNDEFINED;
  gboolean ok = FALSE;

  /* only the forwarded input need have a value: the planner may skip
   * steps that only such a step's other inputs read (a folded batch_norm's
   * training flag, runtime-fusion.c skip_unread_steps) */
  if (step_forwards (run, frame, step) && forward_input (frame, step))
    return TRUE;
  /* a kernel that does not ask for a weight's values finds them there */
  if (G_UNLIKELY (run->runtime->given_back_bytes) && !(step->schema->flags & GRAFT_OP_ASKS_FOR_VALUES))
    for (guint j = 0; j < step->n_inputs; j++)
      if (!_graft_frame_restore_input (run->runtime, frame, step->inputs[j], error))
        return FALSE;
  for (guint j = 0; j < step->n_inputs; j++)
    {
      if (step->inputs[j].slot == NO_SLOT)
        continue;
      inputs[j] = _graft_frame_get (frame, step->inputs[j]);
      if (inputs[j] == NULL)
        {
          /* an inlined If's step reads its branch's outputs (Plan.aliases) */
          GraftValue *v = j < node->inputs->len ? node->inputs->pdata[j] : NULL;
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "node '%s' (%s): input '%s' has no value (not fed and not computed)",
                       node->name, node->op, v ? v->name : "(branch output)");
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

  for (guint j = 0; j < step->n_inputs; j++)
    {
      infer_value_from_tensor (&in_info[j], inputs[j], inputs_fit ? in_dims_here[j] : NULL);
      /* the shape the skipped Transpose would have given */
      if (_graft_step_input_transposed (run, step, j) && in_info[j].shape.rank >= 2)
        {
          GraftDim *dims = in_info[j].shape.dims, last = dims[in_info[j].shape.rank - 1];
          dims[in_info[j].shape.rank - 1] = dims[in_info[j].shape.rank - 2];
          dims[in_info[j].shape.rank - 2] = last;
        }
    }
  for (guint j = 0; j < step->n_outputs; j++)
    out_info[j].shape = GRAFT_SHAPE_UNKNOWN;

  /* a first input the step reads is not missing (the check reads the
   * node's input array: a cache miss per step on small models) */
  const char *missing = step->n_inputs > 0 && step->inputs[0].slot != NO_SLOT
                        ? NULL : graft_op_schema_missing_first_input (step->schema, node);
  if (missing != NULL)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "input '%s' is missing", missing);
      goto out;
    }
  if (step->schema->infer && !infer_outputs (step, in_info, out_info, out_dims_here, error))
    goto out;

  gboolean *donatable = inputs_fit ? donatable_here : (donatable_heap = g_new0 (gboolean, step->n_inputs));
  donatable_inputs (step, inputs, converted, donatable);
  EngineCtx ectx = { run, frame, step, donatable };
  GraftKernelContext kctx = {
    node, step->schema, step->opset,
    step->n_inputs, inputs, step->n_outputs, outputs, out_info, &ectx,
  };
  if (!step->schema->kernel (&kctx, error))
    goto out;
  _graft_step_give_back_folded (run->runtime, step);
  if (step->derived_kind && (step->schema->flags & GRAFT_OP_ASKS_FOR_VALUES) && step->n_inputs >= 2)
    give_back_weight (run->runtime, frame, step, inputs[1]);

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
      if (inputs_fit)
        in_info[j].shape.dims = NULL;   /* in_dims_here */
      graft_shape_clear (&in_info[j].shape);
      if (converted[j])
        graft_rt_tensor_unref (converted[j]);
    }
  for (guint j = 0; j < step->n_outputs; j++)
    {
      if (outputs_fit && out_info[j].shape.dims == out_dims_here[j])
        out_info[j].shape.dims = NULL;
      graft_shape_clear (&out_info[j].shape);
      if (outputs[j])
        graft_rt_tensor_unref (outputs[j]);
    }
  return ok;
}

gboolean
_graft_plan_evaluate_step (GraftRuntime *rt, Plan *plan, Step *step, GError **error)
{
  RunState run = { rt, NULL, NULL, NULL, 0, 0, NULL };
  /* the frame's values are the plan's constants: the step reads them and
   * its outputs become constants too */
  Frame frame = { plan, plan->constants, NULL, NULL, NULL };
  gboolean drop_derived = rt->drop_derived;

  /* nothing kept on a step that never runs again (a packed weight), and
   * no weight given back on its account */
  rt->drop_derived = TRUE;
  graft_runtime_quiet_blas ();
  graft_rt_tensor_set_thread_limit (rt->max_bytes);
  gboolean ok = run_step (&run, &frame, step, NULL, error);
  graft_rt_tensor_set_thread_limit (0);
  g_clear_pointer (&run.module_attributes, g_hash_table_unref);
  rt->drop_derived = drop_derived;
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

/* g_get_monotonic_time () to the kernel's tick: read before every step,
 * the precise clock cost a tiny model a thirtieth of its run, and a time
 * limit in seconds needs no microseconds. */
static gint64
coarse_monotonic_time (void)
{
#ifdef CLOCK_MONOTONIC_COARSE
  struct timespec ts;
  if (clock_gettime (CLOCK_MONOTONIC_COARSE, &ts) == 0)
    return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
#endif
  return g_get_monotonic_time ();
}

/* Checked before every step, in subgraphs too (a Loop of an empty body
 * still enters its plan once per iteration). */
static gboolean
within_limits (RunState *run, GError **error)
{
  GraftRuntime *rt = run->runtime;

  if (g_cancellable_set_error_if_cancelled (run->cancellable, error))
    return FALSE;
  if (run->deadline && coarse_monotonic_time () > run->deadline)
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

/* What a plan's memoised steps may keep between runs: the masks and
 * biases of small inputs, not the broadcast of a long sequence's. */
#define MEMO_BUDGET_BYTES (8u << 20)

/* Memoisable: a contiguous tensor whose bytes are its value. */
static gboolean
memo_comparable (const GraftRtTensor *t)
{
  return t->kind == GRAFT_RT_TENSOR && t->dtype != GRAFT_DTYPE_STRING;
}

/* An input memoisable as well: such a tensor, None, or a list or tuple
 * of them (an aten op's sizes, prim::ListConstruct of aten::size values). */
static gboolean
memo_comparable_input (const GraftRtTensor *t)
{
  if (t->kind == GRAFT_RT_NONE)
    return TRUE;
  if (t->kind != GRAFT_RT_SEQUENCE)
    return memo_comparable (t);
  for (guint i = 0; i < t->items->len; i++)
    if (!memo_comparable_input (t->items->pdata[i]))
      return FALSE;
  return TRUE;
}

static gboolean
memo_same (GraftRtTensor *t, GraftRtTensor *kept)
{
  if (t == kept)
    return TRUE;
  if (t == NULL || kept == NULL || t->kind != kept->kind)
    return FALSE;
  if (t->kind == GRAFT_RT_NONE)
    return TRUE;
  if (t->kind == GRAFT_RT_SEQUENCE)
    {
      if (t->items->len != kept->items->len)
        return FALSE;
      for (guint i = 0; i < t->items->len; i++)
        if (!memo_same (t->items->pdata[i], kept->items->pdata[i]))
          return FALSE;
      return TRUE;
    }
  if (!memo_comparable (t) || t->dtype != kept->dtype || t->rank != kept->rank ||
      memcmp (t->dims, kept->dims, sizeof (gint64) * t->rank) != 0)
    return FALSE;
  return memcmp (t->data, kept->data, t->nbytes) == 0;
}

/* What a memoised step keeps of an input it reads only the dtype and
 * shape of (Step.memo_metadata): those, as int64 [dtype, rank, dims…],
 * rather than a reference that would keep the activation alive and stop
 * the steps after from writing into it. */
static GraftRtTensor *
memo_signature (const GraftRtTensor *t)
{
  gint64 length = t->kind == GRAFT_RT_TENSOR ? t->rank + 2 : 1;
  GraftRtTensor *signature = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 1, &length, NULL);
  if (signature == NULL)
    return NULL;   /* past the run's memory limit: compares unequal */
  gint64 *data = signature->data;
  data[0] = t->kind == GRAFT_RT_TENSOR ? (gint64) t->dtype : -1;
  for (int d = 0; t->kind == GRAFT_RT_TENSOR && d <= t->rank; d++)
    data[d + 1] = d == 0 ? t->rank : t->dims[d - 1];
  return signature;
}

static gboolean
memo_same_metadata (const GraftRtTensor *t, const GraftRtTensor *signature)
{
  if (signature == NULL)
    return FALSE;
  const gint64 *data = signature->data;
  if (t == NULL || t->kind != GRAFT_RT_TENSOR || signature->numel != t->rank + 2 || data[0] != t->dtype ||
      data[1] != t->rank)
    return FALSE;
  return memcmp (data + 2, t->dims, sizeof (gint64) * t->rank) == 0;
}

/* What a memoised step keeps of an input: the tensor itself (a run never
 * changes a tensor another holds), a list's items in a list of its own
 * (the run's list may be changed by aten::append after the step). */
static GraftRtTensor *
memo_kept_input (GraftRtTensor *t)
{
  if (t == NULL || t->kind != GRAFT_RT_SEQUENCE)
    return t ? graft_rt_tensor_ref (t) : NULL;
  GraftRtTensor *copy = graft_rt_tensor_new_sequence (t->dtype);
  for (guint i = 0; i < t->items->len; i++)
    g_ptr_array_add (copy->items, memo_kept_input (t->items->pdata[i]));
  return copy;
}

/* Memo input j of step: its input j, or past its inputs a value its
 * subgraphs capture (Step.memo_captures). */
static ValueRef
memo_input_ref (const Step *step, guint j)
{
  return j < step->n_inputs ? step->inputs[j] : step->memo_captures[j - step->n_inputs];
}

/* A memoised step whose inputs are those of its kept run: its kept
 * outputs go to their slots instead of a run of its kernel. */
static gboolean
memo_take (Frame *frame, Step *step)
{
  if (step->memo_outputs == NULL)
    return FALSE;
  for (guint j = 0; j < step->n_inputs + step->n_memo_captures; j++)
    {
      ValueRef ref = memo_input_ref (step, j);
      if (ref.slot == NO_SLOT)
        continue;
      GraftRtTensor *t = _graft_frame_get (frame, ref);
      if (j < 32 && (step->memo_metadata & (1u << j)) ? !memo_same_metadata (t, step->memo_inputs[j])
                                                       : !memo_same (t, step->memo_inputs[j]))
        return FALSE;
    }
  for (guint j = 0; j < step->n_outputs; j++)
    if (step->outputs[j] != NO_SLOT)
      {
        GraftRtTensor **slot = &frame->values[step->outputs[j]];
        g_clear_pointer (slot, graft_rt_tensor_unref);
        *slot = graft_rt_tensor_ref (step->memo_outputs[j]);
      }
  return TRUE;
}

static void
memo_forget (Plan *plan, Step *step)
{
  for (guint j = 0; step->memo_inputs && j < step->n_inputs + step->n_memo_captures; j++)
    g_clear_pointer (&step->memo_inputs[j], graft_rt_tensor_unref);
  for (guint j = 0; step->memo_outputs && j < step->n_outputs; j++)
    g_clear_pointer (&step->memo_outputs[j], graft_rt_tensor_unref);
  g_clear_pointer (&step->memo_outputs, g_free);
  plan->memo_bytes -= step->memo_bytes;
  step->memo_bytes = 0;
}

/* After a memoised step ran: its inputs and outputs kept for the next
 * run, within the plan's budget. */
static void
memo_keep (Frame *frame, Step *step)
{
  Plan *plan = frame->plan;
  gsize bytes = 0;

  /* from the step's second run on: a model run once (graft-cli run, the
   * cost report's measured run) holds no more than the plan says
   * (graft_cost_analyze), and a second run with the same shapes is what
   * makes keeping worth it */
  if (!step->memo_ran_before)
    {
      step->memo_ran_before = TRUE;
      return;
    }
  memo_forget (plan, step);
  for (guint j = 0; j < step->n_inputs + step->n_memo_captures; j++)
    {
      GraftRtTensor *t = _graft_frame_get (frame, memo_input_ref (step, j));
      gboolean metadata = j < 32 && (step->memo_metadata & (1u << j));
      if (t && (metadata ? t->kind != GRAFT_RT_TENSOR : !memo_comparable_input (t)))
        return;
    }
  for (guint j = 0; j < step->n_outputs; j++)
    {
      GraftRtTensor *t = step->outputs[j] != NO_SLOT ? frame->values[step->outputs[j]] : NULL;
      /* a list only where the planner saw that no reader changes it */
      if (t && !(step->memo_sequences ? memo_comparable_input (t) : memo_comparable (t)))
        return;
      bytes += t && t->kind == GRAFT_RT_TENSOR ? t->nbytes : 0;
    }
  if (plan->memo_bytes + bytes > MEMO_BUDGET_BYTES)
    return;
  if (step->memo_inputs == NULL)
    step->memo_inputs = g_new0 (GraftRtTensor *, MAX (step->n_inputs + step->n_memo_captures, 1));
  step->memo_outputs = g_new0 (GraftRtTensor *, MAX (step->n_outputs, 1));
  for (guint j = 0; j < step->n_inputs + step->n_memo_captures; j++)
    {
      GraftRtTensor *t = _graft_frame_get (frame, memo_input_ref (step, j));
      step->memo_inputs[j] = t && j < 32 && (step->memo_metadata & (1u << j)) ? memo_signature (t) : memo_kept_input (t);
    }
  for (guint j = 0; j < step->n_outputs; j++)
    {
      GraftRtTensor *t = step->outputs[j] != NO_SLOT ? frame->values[step->outputs[j]] : NULL;
      step->memo_outputs[j] = t ? graft_rt_tensor_ref (t) : NULL;
    }
  step->memo_bytes = bytes;
  plan->memo_bytes += bytes;
}

/* An identity step (Step.identity) whose input is what it passes on
 * unchanged: that input goes to its output slot instead of a run. */
static gboolean
identity_take (Frame *frame, Step *step)
{
  GraftRtTensor *t = _graft_frame_get (frame, step->inputs[0]);
  if (t == NULL || t->kind != GRAFT_RT_TENSOR || t->rank < step->identity_min_rank ||
      (step->identity_dtype != GRAFT_DTYPE_UNDEFINED && t->dtype != step->identity_dtype))
    return FALSE;
  GraftRtTensor **slot = &frame->values[step->outputs[0]];
  g_clear_pointer (slot, graft_rt_tensor_unref);
  *slot = graft_rt_tensor_ref (t);
  return TRUE;
}

/* A list step (Step.packs, Step.unpacks) as its kernel would run it: the
 * list of its inputs, or the items of its list in its output slots.
 * FALSE, the step left to its kernel (and its message), where an input
 * is missing or not a list of enough items. */
static gboolean
list_take (Frame *frame, Step *step)
{
  if (step->packs)
    {
      for (guint j = 0; j < step->n_inputs; j++)
        if (_graft_frame_get (frame, step->inputs[j]) == NULL)
          return FALSE;
      GraftRtTensor *list = graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED);
      for (guint j = 0; j < step->n_inputs; j++)
        {
          GraftRtTensor *item = _graft_frame_get (frame, step->inputs[j]);
          list->dtype = item->dtype;
          g_ptr_array_add (list->items, graft_rt_tensor_ref (item));
        }
      if (step->outputs[0] == NO_SLOT)
        {
          graft_rt_tensor_unref (list);
          return TRUE;
        }
      GraftRtTensor **slot = &frame->values[step->outputs[0]];
      g_clear_pointer (slot, graft_rt_tensor_unref);
      *slot = list;
      return TRUE;
    }
  GraftRtTensor *list = _graft_frame_get (frame, step->inputs[0]);
  if (list == NULL || list->kind != GRAFT_RT_SEQUENCE || list->items->len < step->n_outputs)
    return FALSE;
  for (guint j = 0; j < step->n_outputs; j++)
    if (step->outputs[j] != NO_SLOT)
      {
        GraftRtTensor **slot = &frame->values[step->outputs[j]];
        GraftRtTensor *item = graft_rt_tensor_ref (list->items->pdata[j]);
        g_clear_pointer (slot, graft_rt_tensor_unref);
        *slot = item;
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

GPtrArray *
_graft_run_plan (RunState *run, Plan *plan, Frame *parent, GraftRtTensor **inputs, guint n_inputs, GError **error)
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
      guint slot = _graft_plan_slot (plan, graph->inputs->pdata[i]);
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
      double cpu_start = rt->profiling ? graft_worker_pool_get_cpu_seconds (rt->workers) : 0;
      if (runs && runs->pattern && rt->observe == NULL)
        {
          gboolean declined = FALSE;
          if (!run_step (run, &frame, runs->pattern, &declined, error))
            goto out;
          frame.pattern_taken[i] = !declined;
        }
      if (runs && runs->pattern_at != NO_STEP && rt->observe == NULL && frame.pattern_taken[runs->pattern_at])
        runs = NULL;
      gboolean forwards = runs && !frame.pattern_taken[i] && step_forwards (run, &frame, runs);
      if (runs == step && step->memo && memo_take (&frame, step))
        runs = NULL;
      if (runs == step && step->identity && rt->observe == NULL && identity_take (&frame, step))
        runs = NULL;
      if (runs == step && (step->packs || step->unpacks) && rt->observe == NULL && list_take (&frame, step))
        runs = NULL;
      if (runs && !frame.pattern_taken[i] && !run_step (run, &frame, runs, NULL, error))
        goto out;
      if (runs == step && step->memo)
        memo_keep (&frame, step);
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
          t->cpu_seconds += graft_worker_pool_get_cpu_seconds (rt->workers) - cpu_start;
          t->calls++;
          t->forwarded_calls += forwards;
          if (frame.pattern_taken[i])
            {
              t->fused_calls++;
              t->fused_op = step->pattern->schema->name;
            }
        }
      /* an inlined If's branch nodes (Plan.aliases) are subgraph nodes */
      if (rt->observe && (rt->observe_subgraphs || (plan == rt->main && step->node->graph == graph)))
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
      if (_graft_plan_value_ref (graph, v, &ref, rt, NULL))
        t = _graft_frame_get (&frame, ref);
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

void
graft_runtime_quiet_blas (void)
{
  /* BLAS stays single-threaded: kernels split big products over the worker
   * pool (graft_kernel_sgemm); OpenBLAS threads spinning between calls
   * would take the cores the pool needs. Its idle server threads, started
   * when the library loaded, end with blas_thread_shutdown_ (which
   * OpenBLAS exports for its fork handler; looked up, as another BLAS or
   * build may not have it): before, they spun for their timeout in every
   * process, a third of the CPU time of `graft-cli info` of Swin-T. A
   * multi-threaded BLAS call would start them again; the runtime makes
   * none. */
  static gsize done = 0;
  if (!g_once_init_enter (&done))
    return;
  /* in this order and once: openblas_set_num_threads starts the server
   * threads again when they are down (its re-init after a fork), which
   * at every run cost a thread created and joined (a fifth of a ViT-tiny
   * run) */
  openblas_set_num_threads (1);
  gpointer shutdown = dlsym (RTLD_DEFAULT, "blas_thread_shutdown_");
  if (shutdown != NULL)
    ((int (*) (void)) shutdown) ();
  g_once_init_leave (&done, 1);
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
  graft_runtime_quiet_blas ();
  graft_rt_tensor_set_thread_limit (self->max_bytes);
  GPtrArray *outputs = _graft_run_plan (&run, self->main, NULL, feed, graph->inputs->len, error);
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
