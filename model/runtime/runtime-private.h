/* What the runtime's files share (runtime.c, the object; runtime-plan.c,
 * support check and planning; runtime-fusion.c, the fusions the planner
 * makes; runtime-run.c, execution; kernel-context.c, what kernels call).
 * A plan is a graph's steps in run order with value slots; a step may carry
 * a fused step tried in its place (Step.qdq, Step.pattern). Nothing here is
 * for code outside model/runtime/. */
#pragma once

#include "runtime/runtime.h"
#include "runtime/op.h"
#include "runtime/worker-pool.h"

G_BEGIN_DECLS

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
  /* Conv whose output only a SiLU (Sigmoid and Mul) or a HardSwish reads
   * (never with a clamp or a residual): the kernel applies it and the
   * activation's steps forward the Conv's output. */
  GraftFusedActivation fused_activation;
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
  /* An aten convolution whose output an eval-mode aten::batch_norm reads
   * (besides shape reads): that normalisation folded into the weight and
   * bias (owned), which the kernel convolves with
   * (graft_kernel_get_folded_weights) while the batch_norm forwards. The
   * bias and the scale per output channel are computed at plan time; the
   * weight, fold_source·fold_scale, only when a kernel reads it, into
   * pages of its own that go back to the system once the step keeps what
   * the kernel derived from it (a packed filter): a run then holds no
   * folded copy beside the model's weight and the packed one
   * (_graft_step_fold_weight, _graft_step_give_back_folded). */
  GraftRtTensor *folded_weight, *folded_bias;
  /* The same for an ONNX Conv → Mul/Div by, then Add of, constants per
   * output channel (fold_conv_affines): the last node folded in, whose
   * output the Conv's now is (later fusions look after it), and on the
   * steps of those nodes, that they forward a fold and are no one
   * else's to take. */
  GraftNode *fold_last;
  gboolean fold_forwards;
  GraftRtTensor *fold_source;   /* the convolution's own weight, a constant */
  double *fold_scale;           /* per output channel */
  GBytes *folded_pages;         /* folded_weight's data (ir/file-bytes.h pages) */
  gboolean folded_resident;     /* folded_weight's data holds its values */
  /* what the kernel derived from a constant input (graft_kernel_derived) */
  gconstpointer derived_key;
  gpointer derived;
  const GraftDerivedKind *derived_kind;
  /* A QuantizeLinear closing a DequantizeLinear → op → QuantizeLinear
   * pattern (qdq-fusion.h): the 8-bit step run instead of this one, and
   * the pattern's other steps `absorbed` (skipped). Both only while no
   * observer watches the float values in between. */
  struct _Step *qdq;
  gboolean absorbed;
  /* absorbed because its outputs were computed when the plan was made
   * (fold_constant_steps): plan constants that an observed run computes
   * again, released after their last use as a computed value would be */
  gboolean computed_at_plan;
  /* The first step of a pattern of nodes that one fused step computes
   * (fusion-patterns.h, fuse_patterns): the fused step tried in its place,
   * whose kernel may decline the run's shapes. The pattern's other steps
   * have pattern_at, the first step's index, and are skipped when the
   * fused step ran (Frame.pattern_taken). Both only while no observer
   * watches the values in between. */
  struct _Step *pattern;
  guint pattern_at;         /* NO_STEP, or as above */
  /* on such a fused step: the planner's match of its pattern (owned, a
   * fusion-patterns.h struct; graft_kernel_get_pattern) */
  gpointer pattern_match;
  /* An in-place aten op whose first input is a view (aten::slice/select,
   * possibly of a view): the steps that made the views, innermost first.
   * The op's result is written back through each into the tensor the
   * view was taken from (graft_aten_view_write_back). */
  guint n_views;
  guint *views;
  /* A step whose inputs are all plan constants, outputs of Shape or
   * Size, or outputs of other such steps (memoize_shape_steps): the
   * attention masks and position biases a transformer's export builds
   * from its input's shape. Its last inputs and outputs are kept (owned
   * references, n_inputs and n_outputs of them, NULL before the first
   * run); a run whose inputs equal the kept ones takes the kept outputs
   * instead of running the kernel. */
  gboolean memo;
  /* Inputs (bit j: input j) of which a memoised step reads only the
   * dtype and shape (aten::size, onnx::Shape, _assert_tensor_metadata of
   * an activation): compared with the kept run by those alone, and kept
   * as a signature of them (memo_inputs[j], not the tensor). */
  guint memo_metadata;
  /* Its outputs may be kept though they are lists (prim::ListConstruct of
   * sizes, aten::size without a dim): no reader changes them in place. */
  gboolean memo_sequences;
  /* A memoised prim::If or prim::Loop: the values of the plan its
   * subgraphs read (captured; slots of this frame), compared and kept
   * after its inputs, as memo input n_inputs + k (with a bit of
   * memo_metadata where the subgraphs read only a tensor's dtype and
   * shape). */
  guint n_memo_captures;
  ValueRef *memo_captures;
  GraftRtTensor **memo_inputs;   /* n_inputs + n_memo_captures */
  GraftRtTensor **memo_outputs;
  gsize memo_bytes;
  gboolean memo_ran_before;   /* kept from its second run on (memo_keep) */
  /* An aten op that gives its first input unchanged when that is a tensor
   * (of dtype identity_dtype unless GRAFT_DTYPE_UNDEFINED; of rank above
   * identity_min_rank): contiguous, detach, eval dropout, aten::to of the
   * input's dtype, a slice of a whole axis. The run then passes the input
   * on without running the step, as its kernel would have
   * (mark_identity_steps). Not while an observer watches. */
  gboolean identity;
  GraftDType identity_dtype;
  int identity_min_rank;
  /* A prim::ListConstruct or TupleConstruct of its inputs alone (no
   * constant item), or a prim::ListUnpack or TupleUnpack: the run builds
   * the list of the inputs' references, or gives the list's items, without
   * the step's dispatch (mark_list_steps) — the operand lists of a traced
   * transformer's einsum and cat, and what unbind gives, steps its ONNX
   * export does not have. Not while an observer watches. */
  gboolean packs, unpacks;
  /* An aten:: or prim:: step's "arg<k>" attributes by k (owned array,
   * borrowed attributes; graft_kernel_get_positional_attributes) */
  GraftAttribute **positional;
  guint n_positional;
  /* What the schema's infer gave last (runtime-run.c infer_outputs): the
   * key its inputs made (types, shapes, and the values of small inputs)
   * and the outputs it inferred, reused
   * while the key stays the same. NULL before the first run and for
   * steps whose inputs or outputs it cannot describe. */
  guint8 *infer_key;
  gsize infer_key_length;
  struct _InferredOutput *inferred;
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
  gsize memo_bytes;          /* what the steps' memo_outputs hold */
  /* prim::Ifs whose condition the module fixes (graft_if_get_fixed_branch)
   * are inlined: the nodes of the branch they take are steps of this
   * plan, where the fusions see them (a residual `result += input` under
   * `if self.use_res_connect:`), and the branch's values have slots here
   * (GraftRuntime.inlined). Steps read the value an If output stands for
   * (aliases: If output → the branch's output, NULL without inlined Ifs;
   * aliased: that value, followed to the end of a chain of aliases, → a
   * GPtrArray of the If outputs standing for it). The If's own step gives
   * its outputs the branch's (absorbed unless a graph output, a subgraph
   * or an observer reads them). */
  GHashTable *aliases;
  GHashTable *aliased;
  GPtrArray *inlined_graphs;  /* the branches inlined here */
  GHashTable *inlined_outputs;  /* their outputs (set), which need not outlive the run */
} Plan;

struct _GraftRuntime {
  GraftModel *model;
  GHashTable *plans;         /* GraftGraph* → Plan* */
  GHashTable *inlined;       /* an inlined If branch (GraftGraph*) → the Plan* running its nodes */
  Plan *main;
  GraftRtPool *pool;
  GraftWorkerPool *workers;  /* NULL: one thread */
  GraftPrecision precision;
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
  /* Model weights whose pages the runtime gave back (give_back_weights in
   * runtime-run.c): what they add up to, and per slot of the main plan
   * (owned, n_slots) whether one was given back, or was read in again
   * since and stays (a run at a shape the kept datum does not serve). */
  guint64 given_back_bytes;
  guint8 *given_back;
  gboolean observe_subgraphs;
  gboolean observe_untaken_branches;
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

/* runtime-plan.c */
/* Plans the model's main graph (first, so that its nodes come first in the
 * timings), its subgraphs and the local functions it calls. */
gboolean _graft_runtime_plan (GraftRuntime *rt, GError **error);
void _graft_plan_free (Plan *plan);
void _graft_step_clear (Step *step);
/* value's slot in plan (a value of plan's own graph), or NO_SLOT. */
guint _graft_plan_slot (Plan *plan, GraftValue *value);
/* slot holds a buffer that runs write back (Plan.state_buffers). */
gboolean _graft_plan_slot_is_state (const Plan *plan, guint slot);
/* The value v stands for in plan: v, or for the output of an inlined If
 * (Plan.aliases) the value its branch gives. */
GraftValue *_graft_plan_resolve (const Plan *plan, GraftValue *v);
/* v must be kept to the end of a run of plan: graft_value_leaves_run(),
 * except for an inlined branch's output that is no output of plan's own
 * graph (the steps read it like any value of the plan). */
gboolean _graft_plan_value_leaves_run (const Plan *plan, GraftValue *v);
/* step is an inlined If's (Plan.aliases): it reads its branch's outputs. */
gboolean _graft_step_is_inlined_if (const Step *step);
/* The nodes of an If's branch that the runtime never runs (the branch a
 * fixed condition does not take), and nodes inside them. */
gboolean _graft_node_in_untaken_branch (GraftNode *node);
/* Where a step of graph finds value: frames up and slot. */
gboolean _graft_plan_value_ref (GraftGraph *graph, GraftValue *value, ValueRef *ref, GraftRuntime *rt, GError **error);

/* runtime-fusion.c */
/* Marks the steps that run fused (activations and residuals into Conv and
 * MatMul, QDQ patterns as 8-bit steps, node patterns as one step); the
 * inputs of fused steps stay alive longer (last_use, by slot). */
void _graft_plan_fuse (GraftRuntime *rt, Plan *plan, guint *last_use);
/* Computes step's folded weight into its pages unless they hold it. */
void _graft_step_fold_weight (Step *step);
/* Gives the pages of step's folded weight back when the step keeps data
 * derived from it, which serves the next runs in its place, or when rt
 * keeps nothing derived; a kernel that reads the weight again has it
 * computed again (graft_kernel_need_values). */
void _graft_step_give_back_folded (GraftRuntime *rt, Step *step);

/* runtime-run.c */
GPtrArray *_graft_run_plan (RunState *run, Plan *plan, Frame *parent, GraftRtTensor **inputs, guint n_inputs,
                            GError **error);
GraftRtTensor *_graft_frame_get (Frame *frame, ValueRef ref);
/* Reads the model weight behind ref in again when the runtime gave its
 * pages back; FALSE when the file no longer holds it. */
gboolean _graft_frame_restore_input (GraftRuntime *rt, Frame *frame, ValueRef ref, GError **error);
gboolean _graft_step_input_transposed (RunState *run, Step *step, guint j);
/* Runs step once at plan time on the plan's constants, its outputs
 * becoming constants of the plan (in their slots of plan->constants):
 * the planner's folding of steps whose inputs are all constants
 * (runtime-fusion.c fold_constant_steps). The step must read no value of
 * an enclosing plan. */
gboolean _graft_plan_evaluate_step (GraftRuntime *rt, Plan *plan, Step *step, GError **error);

G_END_DECLS
