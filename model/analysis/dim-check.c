#include "analysis/dim-check.h"
#include "analysis/baked-shape.h"
#include "analysis/shape-inference.h"
#include "ir/sym-dim.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "runtime/inputs.h"
#include "runtime/runtime.h"

#include <math.h>
#include <string.h>

/* Samples of a batch must agree with single runs to this fraction of the
 * largest output magnitude. */
#define BATCH_TOLERANCE 1e-5

/* Sizes for dims that are dynamic but not being checked. */
#define OTHER_DIM_SIZE 3

typedef struct {
  GraftModel *symbolic;       /* copy of the model, the checked dims symbolic */
  const GraftDimCheckDim *dims;
  guint n_dims;
  const char **symbols;       /* interned, per dim */
  GPtrArray *expected;        /* GraftShape* per graph output, symbolic */
  GraftRuntime *runtime;      /* on symbolic; NULL when the runtime cannot run it */
  GRand *rng;
  GraftDimCheck *result;
} Checker;

static void
shape_free (gpointer data)
{
  graft_shape_clear (data);
  g_free (data);
}

static GraftValue *
find_input (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      if (input->initializer == NULL && strcmp (input->name, name) == 0)
        return input;
    }
  return NULL;
}

static void
add_line (Checker *checker, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
add_line (Checker *checker, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  g_ptr_array_add (checker->result->lines, g_strdup_vprintf (format, args));
  va_end (args);
}

/* Records a failure (the first one becomes the check's verdict). */
static void
fail (Checker *checker, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
fail (Checker *checker, const char *format, ...)
{
  va_list args;
  char *text;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  g_ptr_array_add (checker->result->lines, g_strdup_printf ("FAILED: %s", text));
  checker->result->passed = FALSE;
  if (checker->result->failure == NULL)
    checker->result->failure = text;
  else
    g_free (text);
}

/* "seq=5, batch=7" for the checked symbols. */
static char *
describe_sizes (Checker *checker, GHashTable *sizes)
{
  GString *text = g_string_new (NULL);
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < checker->n_dims; i++)
    if (g_hash_table_add (seen, (gpointer) checker->symbols[i]))
      g_string_append_printf (text, "%s%s=%" G_GINT64_FORMAT, text->len ? ", " : "", checker->symbols[i],
                              *(gint64 *) g_hash_table_lookup (sizes, checker->symbols[i]));
  return g_string_free (text, FALSE);
}

/* Ops whose integer inputs are sizes, and which inputs those are. */
static gboolean
takes_sizes (GraftNode *node, guint input)
{
  const char *op = node->op;

  if (op == g_intern_static_string ("onnx::Reshape") || op == g_intern_static_string ("onnx::Expand")
      || op == g_intern_static_string ("onnx::Tile") || op == g_intern_static_string ("onnx::Split"))
    return input == 1;
  if (op == g_intern_static_string ("onnx::ConstantOfShape"))
    return input == 0;
  if (op == g_intern_static_string ("onnx::Range"))
    return input <= 2;
  if (op == g_intern_static_string ("onnx::Slice"))
    return input == 1 || input == 2;
  if (op == g_intern_static_string ("onnx::Resize"))
    return input == 3;
  return FALSE;
}

/* Where merged dims are written (batch × heads): a multiple of a traced
 * size means something there, not in Split sizes or Slice bounds. */
static gboolean
merges_dims (GraftNode *node)
{
  return node->op == g_intern_static_string ("onnx::Reshape") || node->op == g_intern_static_string ("onnx::Expand")
         || node->op == g_intern_static_string ("onnx::Tile");
}

/* What node's size constants say about the traced sizes, or NULL: the
 * traced size itself (multiples only when exact is FALSE). */
static char *
stale_constant (Checker *checker, GraftNode *node, gboolean exact)
{
  for (guint i = 0; i < node->inputs->len && (exact || merges_dims (node)); i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      GraftTensor *tensor = takes_sizes (node, i) ? graft_value_get_constant (value) : NULL;
      gint64 n;

      if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || (n = graft_tensor_get_numel (tensor)) > 64)
        continue;
      for (gint64 e = 0; e < n; e++)
        for (guint d = 0; d < checker->n_dims; d++)
          {
            gint64 v = graft_tensor_get_int (tensor, e), traced = checker->dims[d].traced;
            g_autofree char *values = NULL;

            /* Everything is a multiple of 2: only larger sizes make a
             * multiple worth naming. */
            if (traced < (exact ? 2 : 3) || v < traced || (exact ? v != traced : v % traced != 0))
              continue;
            values = graft_tensor_format_ints (tensor);
            return g_strdup_printf ("%s '%s' still takes the constant '%s' = %s, whose element %" G_GINT64_FORMAT
                                    " is %s%s's traced size %" G_GINT64_FORMAT, node->op_type, node->name,
                                    value->name, values, e, v == traced ? "" : "a multiple of ",
                                    checker->symbols[d], traced);
          }
    }
  return NULL;
}

static char *sized_constant_input (Checker *checker, GraftNode *node);

/* The nearest node upstream of (and including) start whose size constant
 * still holds a traced size (else one reading a constant table shaped by
 * one, else a size constant holding a multiple of one), described; NULL
 * if none. */
static char *
find_stale_constant (Checker *checker, GraftNode *start, GraftNode **stale_node)
{
  for (int pass = 0; pass < 3; pass++)
    {
      g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);
      g_autoptr(GQueue) queue = g_queue_new ();

      g_queue_push_tail (queue, start);
      g_hash_table_add (seen, start);
      while (!g_queue_is_empty (queue))
        {
          GraftNode *node = g_queue_pop_head (queue);
          char *found = pass == 1 ? sized_constant_input (checker, node) : stale_constant (checker, node, pass == 0);

          if (found != NULL)
            {
              *stale_node = node;
              return found;
            }
          for (guint i = 0; i < node->inputs->len; i++)
            {
              GraftValue *value = g_ptr_array_index (node->inputs, i);
              if (value != NULL && value->producer != NULL && g_hash_table_add (seen, value->producer))
                g_queue_push_tail (queue, value->producer);
            }
        }
    }
  return NULL;
}

/* The node a runtime or inference message is about ("node '/Add' (...)"). */
static GraftNode *
node_in_message (Checker *checker, const char *message)
{
  const char *start = strstr (message, "node '");
  const char *end;
  g_autofree char *name = NULL;

  if (start == NULL || (end = strstr (start + 6, "' (")) == NULL)
    return NULL;
  name = g_strndup (start + 6, end - start - 6);
  return graft_graph_find_node (graft_model_get_graph (checker->symbolic), name);
}

/* A constant input of node shaped by a traced size (positions or a mask
 * folded into a table at export), described; NULL if none. */
static char *
sized_constant_input (Checker *checker, GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      GraftTensor *tensor = graft_value_get_constant (value);

      /* Tables have two dims or more (a vector of 2 is more likely a shape),
       * and sizes of 2 are everywhere. */
      for (int k = 0; tensor != NULL && tensor->rank >= 2 && k < tensor->rank; k++)
        for (guint d = 0; d < checker->n_dims; d++)
          if (checker->dims[d].traced >= 3 && tensor->dims[k] == checker->dims[d].traced)
            {
              GraftShape shape;
              g_autofree char *text = NULL;

              graft_shape_init_fixed (&shape, tensor->rank, tensor->dims);
              text = graft_shape_to_string (&shape);
              graft_shape_clear (&shape);
              return g_strdup_printf ("%s '%s' reads '%s', a constant of shape %s sized like %s's traced %"
                                      G_GINT64_FORMAT " (a table folded at export, such as positions or a mask): "
                                      "no rewrite can make it follow the dim", node->op_type, node->name,
                                      value->name, text, checker->symbols[d], checker->dims[d].traced);
            }
    }
  return NULL;
}

/* Why node failed, as the end of a sentence; the node to look at is
 * remembered for the first failure. */
static char *
blame (Checker *checker, GraftNode *node)
{
  GraftNode *stale_node = node;
  g_autofree char *stale = node ? find_stale_constant (checker, node, &stale_node) : NULL;

  if (checker->result->failed_node == NULL && stale_node != NULL)
    checker->result->failed_node = g_strdup (stale_node->name);
  if (stale != NULL)
    return g_strdup_printf ("; %s", stale);
  return g_strdup ("; no size constant upstream holds a traced size, so the size comes from something "
                   "Graft cannot trace back (data-dependent, or computed in a way it does not follow)");
}

/* expected evaluated at sizes; FALSE when a dim cannot be evaluated. */
static gboolean
evaluate_shape (const GraftShape *expected, GHashTable *sizes, gint64 *dims)
{
  for (int i = 0; i < expected->rank; i++)
    if (!graft_dim_evaluate (expected->dims[i], sizes, &dims[i]))
      return FALSE;
  return TRUE;
}

static char *
format_dims (int rank, const gint64 *dims)
{
  GraftShape shape;
  char *text;

  graft_shape_init_fixed (&shape, rank, dims);
  text = graft_shape_to_string (&shape);
  graft_shape_clear (&shape);
  return text;
}

/* Compares output o's shape (rank, dims) with the expected one at sizes;
 * NULL when it matches or cannot be told, else a description. */
static char *
output_mismatch (Checker *checker, guint o, int rank, const gint64 *dims, GHashTable *sizes)
{
  const GraftShape *expected = g_ptr_array_index (checker->expected, o);
  gint64 want[GRAFT_RT_MAX_RANK];
  g_autofree char *got = NULL, *wanted = NULL;

  if (expected->rank < 0 || expected->rank > GRAFT_RT_MAX_RANK || !evaluate_shape (expected, sizes, want))
    return NULL;
  if (rank == expected->rank && memcmp (dims, want, sizeof (gint64) * rank) == 0)
    return NULL;
  got = format_dims (rank, dims);
  wanted = format_dims (expected->rank, want);
  return g_strdup_printf ("is %s, expected %s", got, wanted);
}

/* TRUE if output o's expected shape is known at sizes. */
static gboolean
output_expected (Checker *checker, guint o, GHashTable *sizes)
{
  const GraftShape *expected = g_ptr_array_index (checker->expected, o);
  gint64 dims[GRAFT_RT_MAX_RANK];

  return expected->rank >= 0 && expected->rank <= GRAFT_RT_MAX_RANK && evaluate_shape (expected, sizes, dims);
}

static GraftValue *
graph_output (Checker *checker, guint o)
{
  return g_ptr_array_index (graft_model_get_graph (checker->symbolic)->outputs, o);
}

/* A fully fixed shape's dims as plain integers. */
static void
fixed_dims (const GraftShape *shape, gint64 *dims)
{
  for (int i = 0; i < shape->rank; i++)
    dims[i] = shape->dims[i].value;
}

/* Shape inference with the sizes filled in, on a copy. */
static void
check_symbolic (Checker *checker, GHashTable *sizes)
{
  g_autoptr(GraftModel) fixed = graft_model_copy (checker->symbolic);
  GraftGraph *graph = graft_model_get_graph (fixed);
  g_autofree char *where = describe_sizes (checker, sizes);
  GraftShapeInferenceReport report;
  g_autoptr(GString) shapes = g_string_new (NULL);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      for (int d = 0; d < input->shape.rank; d++)
        {
          gint64 *size = input->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC
                         ? g_hash_table_lookup (sizes, input->shape.dims[d].symbol) : NULL;
          if (size != NULL)
            input->shape.dims[d] = graft_dim_fixed (*size);
        }
    }
  g_autoptr(GraftInference) inference = graft_shape_inference_run (fixed, &report);
  if (report.problems->len > 0)
    {
      const char *problem = g_ptr_array_index (report.problems, 0);
      g_autofree char *why = blame (checker, node_in_message (checker, problem));

      fail (checker, "shape inference at %s: %s%s", where, problem, why);
      graft_shape_inference_report_clear (&report);
      return;
    }
  graft_shape_inference_report_clear (&report);
  for (guint o = 0; o < graph->outputs->len; o++)
    {
      GraftValue *output = g_ptr_array_index (graph->outputs, o);
      g_autofree char *text = NULL, *mismatch = NULL;
      gint64 dims[GRAFT_RT_MAX_RANK];
      const GraftShape *inferred = graft_inference_get_shape (inference, output);

      if (!output_expected (checker, o, sizes))
        {
          /* Nothing to hold it to: a node inference does not know (a
           * vendor op) comes before it. Said, not passed over. */
          add_line (checker, "output '%s' not checked at %s: its shape is unknown even symbolically (a node "
                    "shape inference does not know comes before it)", output->name, where);
          checker->result->complete = FALSE;
          continue;
        }
      if ((inferred == NULL || !graft_shape_is_fully_fixed (inferred))
          && graft_model_get_format (fixed) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM)
        {
          /* Shape inference follows ONNX and TorchScript, not all of
           * torch.export's aten ops: the runs below check this output. */
          add_line (checker, "output '%s' not checked symbolically at %s: shape inference does not follow every "
                    "aten op of the program", output->name, where);
          checker->result->complete = FALSE;
          continue;
        }
      if (inferred == NULL || !graft_shape_is_fully_fixed (inferred) || inferred->rank > GRAFT_RT_MAX_RANK)
        {
          fail (checker, "shape inference at %s cannot tell the shape of output '%s'%s", where, output->name,
                output->producer ? " (a node before it is not inferred)" : "");
          return;
        }
      fixed_dims (inferred, dims);
      mismatch = output_mismatch (checker, o, inferred->rank, dims, sizes);
      text = graft_shape_to_string (inferred);
      if (mismatch != NULL)
        {
          g_autofree char *why = blame (checker, graph_output (checker, o)->producer);
          fail (checker, "shape inference at %s: output '%s' %s%s", where, output->name, mismatch, why);
          return;
        }
      g_string_append_printf (shapes, "%s%s %s", shapes->len ? ", " : "", output->name, text);
    }
  add_line (checker, "symbolic inference at %s: every node accepts its inputs; %s", where,
            shapes->len ? shapes->str : "no output shape to compare");
}

static GHashTable *
random_inputs (Checker *checker, GHashTable *sizes, GError **error)
{
  GPtrArray *inputs = graft_runtime_get_inputs (checker->runtime);
  g_autoptr(GHashTable) tensors = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                         (GDestroyNotify) graft_rt_tensor_unref);

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      GraftRtTensor *tensor = graft_runtime_random_input (input, sizes, checker->rng, error);

      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (tensors, input->name, tensor);
    }
  return g_steal_pointer (&tensors);
}

/* Element index (and count) of slice index along axis, as a new tensor
 * with that axis of size 1. */
static GraftRtTensor *
slice_axis (const GraftRtTensor *tensor, int axis, gint64 index, GError **error)
{
  gint64 dims[GRAFT_RT_MAX_RANK];
  gint64 outer = 1, inner = 1;
  gsize size = graft_rt_dtype_size (tensor->dtype);
  GraftRtTensor *slice;

  memcpy (dims, tensor->dims, sizeof (gint64) * tensor->rank);
  dims[axis] = 1;
  for (int i = 0; i < axis; i++)
    outer *= tensor->dims[i];
  for (int i = axis + 1; i < tensor->rank; i++)
    inner *= tensor->dims[i];
  slice = graft_rt_tensor_new (tensor->dtype, tensor->rank, dims, error);
  if (slice == NULL)
    return NULL;
  for (gint64 o = 0; o < outer; o++)
    memcpy ((guint8 *) slice->data + o * inner * size,
            (const guint8 *) tensor->data + ((o * tensor->dims[axis] + index) * inner) * size, inner * size);
  return slice;
}

/* The axis of shape that is exactly symbol, or -1. */
static int
axis_of (const GraftShape *shape, const char *symbol)
{
  for (int i = 0; i < shape->rank; i++)
    if (shape->dims[i].kind == GRAFT_DIM_SYMBOLIC && shape->dims[i].symbol == symbol)
      return i;
  return -1;
}

/* A batch of N different samples against N runs at batch 1. */
static void
check_batch (Checker *checker, const char *symbol, GHashTable *sizes, GHashTable *inputs, GPtrArray *outputs)
{
  gint64 n = *(gint64 *) g_hash_table_lookup (sizes, symbol);
  GPtrArray *runtime_inputs = graft_runtime_get_inputs (checker->runtime);
  double max_diff = 0, max_magnitude = 0;
  guint compared = 0;
  g_autofree char *where = describe_sizes (checker, sizes);

  for (guint o = 0; o < outputs->len; o++)
    {
      GraftRtTensor *full = g_ptr_array_index (outputs, o);
      for (gint64 k = 0; full->kind == GRAFT_RT_TENSOR && graft_dtype_is_float (full->dtype) && k < full->numel; k++)
        max_magnitude = MAX (max_magnitude, fabs (graft_rt_tensor_get_f64 (full, k)));
    }
  for (gint64 sample = 0; sample < n; sample++)
    {
      g_autoptr(GHashTable) single = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      g_autoptr(GPtrArray) single_outputs = NULL;
      g_autoptr(GError) error = NULL;

      for (guint i = 0; i < runtime_inputs->len; i++)
        {
          GraftValue *input = g_ptr_array_index (runtime_inputs, i);
          GraftRtTensor *tensor = g_hash_table_lookup (inputs, input->name);
          int axis = axis_of (&input->shape, symbol);

          if (axis >= 0 && (tensor = slice_axis (tensor, axis, sample, &error)) == NULL)
            break;
          g_hash_table_insert (single, input->name, axis >= 0 ? tensor : graft_rt_tensor_ref (tensor));
        }
      if (error == NULL)
        single_outputs = graft_runtime_run (checker->runtime, single, NULL, NULL, NULL, &error);
      checker->result->n_runs++;
      if (single_outputs == NULL)
        {
          g_autofree char *why = blame (checker, node_in_message (checker, error->message));
          fail (checker, "batch invariance: sample %" G_GINT64_FORMAT " alone (%s=1) does not run: %s%s", sample,
                symbol, error->message, why);
          return;
        }
      for (guint o = 0; o < outputs->len; o++)
        {
          GraftRtTensor *full = g_ptr_array_index (outputs, o);
          GraftRtTensor *alone = g_ptr_array_index (single_outputs, o);
          int axis = axis_of (g_ptr_array_index (checker->expected, o), symbol);
          g_autoptr(GraftRtTensor) part = NULL;

          if (axis < 0 || full->kind != GRAFT_RT_TENSOR || !graft_dtype_is_float (full->dtype))
            continue;
          part = slice_axis (full, axis, sample, NULL);
          if (part == NULL || part->numel != alone->numel)
            {
              fail (checker, "batch invariance: output '%s' of sample %" G_GINT64_FORMAT " alone has %" G_GINT64_FORMAT
                    " elements, its slice of the batch %" G_GINT64_FORMAT, graph_output (checker, o)->name, sample,
                    alone->numel, part ? part->numel : 0);
              return;
            }
          for (gint64 k = 0; k < part->numel; k++)
            max_diff = MAX (max_diff, fabs (graft_rt_tensor_get_f64 (part, k) - graft_rt_tensor_get_f64 (alone, k)));
          compared++;
        }
    }
  if (compared == 0)
    {
      add_line (checker, "batch invariance over %s: not checked, no float output has a dim that is exactly %s",
                symbol, symbol);
      checker->result->complete = FALSE;
      return;
    }
  if (!(max_diff <= BATCH_TOLERANCE * max_magnitude))
    fail (checker, "batch invariance at %s: %" G_GINT64_FORMAT " samples in one batch differ from %" G_GINT64_FORMAT
          " runs at %s=1 by up to %.3g (limit %.0e × max |output| %.3g): the edited model mixes samples",
          where, n, n, symbol, max_diff, BATCH_TOLERANCE, max_magnitude);
  else
    {
      add_line (checker, "batch invariance at %s: %" G_GINT64_FORMAT " samples in one batch = %" G_GINT64_FORMAT
                " runs at %s=1 (max diff %.3g, limit %.0e × max |output| %.3g)", where, n, n, symbol, max_diff,
                BATCH_TOLERANCE, max_magnitude);
      checker->result->batch_invariant = TRUE;
    }
}

/* Graft's runtime on random inputs at sizes. */
static void
check_concrete (Checker *checker, GHashTable *sizes, gboolean with_batch)
{
  g_autofree char *where = describe_sizes (checker, sizes);
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GPtrArray) outputs = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) shapes = g_string_new (NULL);

  if (checker->runtime == NULL)
    return;
  inputs = random_inputs (checker, sizes, &error);
  if (inputs != NULL)
    outputs = graft_runtime_run (checker->runtime, inputs, NULL, NULL, NULL, &error);
  checker->result->n_runs++;
  if (outputs == NULL)
    {
      g_autofree char *why = blame (checker, node_in_message (checker, error->message));
      fail (checker, "Graft's runtime at %s: %s%s", where, error->message, why);
      return;
    }
  for (guint o = 0; o < outputs->len; o++)
    {
      GraftRtTensor *tensor = g_ptr_array_index (outputs, o);
      g_autofree char *mismatch = NULL, *text = NULL;

      if (tensor->kind != GRAFT_RT_TENSOR)
        continue;
      mismatch = output_mismatch (checker, o, tensor->rank, tensor->dims, sizes);
      if (mismatch != NULL)
        {
          g_autofree char *why = blame (checker, graph_output (checker, o)->producer);
          fail (checker, "Graft's runtime at %s: output '%s' %s%s", where, graph_output (checker, o)->name,
                mismatch, why);
          return;
        }
      text = format_dims (tensor->rank, tensor->dims);
      g_string_append_printf (shapes, "%s%s %s", shapes->len ? ", " : "", graph_output (checker, o)->name, text);
    }
  add_line (checker, "Graft's runtime at %s on random inputs: runs; %s", where, shapes->str);
  for (guint i = 0; with_batch && i < checker->n_dims; i++)
    if (checker->dims[i].batch && checker->result->passed)
      check_batch (checker, checker->symbols[i], sizes, inputs, outputs);
}

/* Sizes for every symbolic input dim: the checked ones from choose, the
 * others OTHER_DIM_SIZE. Keys are interned symbols, so g_str_hash works
 * for the runtime's lookup and pointer comparison for ours. */
static GHashTable *
sizes_new (Checker *checker)
{
  GHashTable *sizes = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  GraftGraph *graph = graft_model_get_graph (checker->symbolic);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      for (int d = 0; d < input->shape.rank; d++)
        if (input->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC)
          {
            gint64 other = OTHER_DIM_SIZE;
            g_hash_table_insert (sizes, (gpointer) input->shape.dims[d].symbol, g_memdup2 (&other, sizeof other));
          }
    }
  return sizes;
}

static void
set_size (GHashTable *sizes, const char *symbol, gint64 size)
{
  g_hash_table_insert (sizes, (gpointer) symbol, g_memdup2 (&size, sizeof size));
}

static gboolean
is_prime (gint64 n)
{
  if (n < 2)
    return FALSE;
  for (gint64 k = 2; k * k <= n; k++)
    if (n % k == 0)
      return FALSE;
  return TRUE;
}

/* The smallest prime above both the dim's traced size and 4 that is no
 * dim's traced size and not used yet: above, so that a repair that only
 * works up to the traced size (a clamped Slice, a table of positions)
 * shows; prime and distinct, so that products of dims cannot coincide. */
static gint64
pick_prime (Checker *checker, GArray *used, gint64 traced)
{
  for (gint64 n = MAX (traced, 4) + 1;; n++)
    {
      gboolean clash = !is_prime (n);

      for (guint i = 0; i < used->len && !clash; i++)
        clash = g_array_index (used, gint64, i) == n;
      for (guint d = 0; d < checker->n_dims && !clash; d++)
        clash = checker->dims[d].traced == n;
      if (!clash)
        {
          g_array_append_val (used, n);
          return n;
        }
    }
}

/* The checked dims become symbols on the copy (a dim fixed by a shape
 * edit gets one named after it, and its current size is probed too). */
static gboolean
symbolize (Checker *checker, gint64 *current, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (checker->symbolic);

  for (guint i = 0; i < checker->n_dims; i++)
    {
      const GraftDimCheckDim *dim = &checker->dims[i];
      GraftValue *input = graph ? find_input (graph, dim->input) : NULL;
      GraftDim *d;

      if (input == NULL || dim->axis < 0 || dim->axis >= input->shape.rank)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "the model has no input '%s' with a dim %d",
                       dim->input, dim->axis);
          return FALSE;
        }
      d = &input->shape.dims[dim->axis];
      current[i] = 0;
      if (d->kind == GRAFT_DIM_FIXED)
        {
          g_autofree char *symbol = g_strdup_printf ("%s:%d", dim->input, dim->axis);
          current[i] = d->value;
          *d = graft_dim_symbolic (symbol);
        }
      else if (d->kind != GRAFT_DIM_SYMBOLIC)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "input '%s' dim %d is unknown; name it first",
                       dim->input, dim->axis);
          return FALSE;
        }
      checker->symbols[i] = d->symbol;
    }
  return TRUE;
}

static void
infer_expected (Checker *checker)
{
  GraftGraph *graph = graft_model_get_graph (checker->symbolic);
  g_autoptr(GraftInference) inference = graft_shape_inference_run (checker->symbolic, NULL);

  for (guint o = 0; o < graph->outputs->len; o++)
    {
      GraftValue *output = g_ptr_array_index (graph->outputs, o);
      GraftShape *shape = g_new0 (GraftShape, 1);

      const GraftShape *inferred = graft_inference_get_shape (inference, output);

      graft_shape_copy (shape, inferred != NULL ? inferred : &output->shape);
      g_ptr_array_add (checker->expected, shape);
    }
}

/* A batch that reaches no output is one a constant still holds: every
 * output keeps the shape it was traced with. (A dim that is not a batch
 * may be pooled away; that is only said.) */
static void
check_dims_reach_outputs (Checker *checker)
{
  for (guint i = 0; i < checker->n_dims; i++)
    {
      gboolean reaches = FALSE, known = TRUE;
      g_autoptr(GString) shapes = g_string_new (NULL);

      for (guint o = 0; o < checker->expected->len; o++)
        {
          const GraftShape *shape = g_ptr_array_index (checker->expected, o);
          g_autofree char *text = graft_shape_to_string (shape);

          known &= shape->rank >= 0;
          for (int d = 0; d < shape->rank; d++)
            {
              reaches |= graft_dim_mentions (&shape->dims[d], checker->symbols[i]);
              known &= shape->dims[d].kind != GRAFT_DIM_UNKNOWN;
            }
          g_string_append_printf (shapes, "%s%s %s", shapes->len ? ", " : "", graph_output (checker, o)->name, text);
        }
      if (reaches || !known)
        continue;
      if (checker->dims[i].batch)
        {
          g_autofree char *why = blame (checker, graph_output (checker, 0)->producer);
          fail (checker, "%s reaches no output: every output keeps a fixed shape (%s)%s", checker->symbols[i],
                shapes->str, why);
        }
      else
        add_line (checker, "%s reaches no output shape (%s): pooled away, or still held by a constant the runs "
                  "below may show", checker->symbols[i], shapes->str);
    }
}

static void
open_runtime (Checker *checker)
{
  g_autoptr(GPtrArray) unsupported = NULL;
  g_autoptr(GError) error = NULL;

  if (!graft_runtime_check_supported (checker->symbolic, &unsupported, &error))
    {
      add_line (checker, "runtime runs skipped: %s", error->message);
      checker->result->complete = FALSE;
    }
  else if (unsupported->len > 0)
    {
      g_autofree char *ops = graft_runtime_describe_unsupported (checker->symbolic, unsupported);
      add_line (checker, "runtime runs skipped: Graft's runtime has no kernel for %s; checked symbolically only", ops);
      checker->result->complete = FALSE;
    }
  else if ((checker->runtime = graft_runtime_new (checker->symbolic, &error)) == NULL)
    {
      add_line (checker, "runtime runs skipped: %s", error->message);
      checker->result->complete = FALSE;
    }
}

GraftDimCheck *
graft_dim_check_run (GraftModel *model, const GraftDimCheckDim *dims, guint n_dims, GError **error)
{
  g_autoptr(GraftModel) symbolic = graft_model_copy (model);
  g_autofree const char **symbols = g_new0 (const char *, MAX (n_dims, 1));
  g_autofree gint64 *current = g_new0 (gint64, MAX (n_dims, 1));
  g_autoptr(GPtrArray) expected = g_ptr_array_new_with_free_func (shape_free);
  g_autoptr(GArray) used = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(GHashTable) assigned = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) probes = g_ptr_array_new_with_free_func ((GDestroyNotify) g_hash_table_unref);
  gboolean any_current = FALSE;
  Checker checker = { symbolic, dims, n_dims, symbols, expected, NULL, NULL, NULL };
  GHashTable *ones, *primes;

  if (!symbolize (&checker, current, error))
    return NULL;
  checker.result = g_new0 (GraftDimCheck, 1);
  checker.result->passed = TRUE;
  checker.result->complete = TRUE;
  checker.result->lines = g_ptr_array_new_with_free_func (g_free);
  checker.result->sizes = g_ptr_array_new_with_free_func (g_free);
  checker.rng = g_rand_new_with_seed (18);
  infer_expected (&checker);
  open_runtime (&checker);

  /* 1 everywhere, then a different prime per dim above its traced size,
   * then the sizes a shape edit set. */
  g_ptr_array_add (probes, ones = sizes_new (&checker));
  g_ptr_array_add (probes, primes = sizes_new (&checker));
  for (guint i = 0; i < n_dims; i++)
    {
      /* A dim traced at 1 gets 2 instead: two sizes other than the traced one. */
      set_size (ones, symbols[i], dims[i].traced == 1 ? 2 : 1);
      /* Two dims of one symbol (x:0 and mask:0 both batch) share a size. */
      if (g_hash_table_add (assigned, (gpointer) symbols[i]))
        set_size (primes, symbols[i], pick_prime (&checker, used, dims[i].traced));
      any_current |= current[i] > 0;
    }
  if (any_current)
    {
      GHashTable *sizes = sizes_new (&checker);
      for (guint i = 0; i < n_dims; i++)
        set_size (sizes, symbols[i], current[i] > 0 ? current[i] : *(gint64 *) g_hash_table_lookup (primes, symbols[i]));
      g_ptr_array_add (probes, sizes);
    }
  for (guint p = 0; p < probes->len && checker.result->passed; p++)
    {
      check_symbolic (&checker, g_ptr_array_index (probes, p));
      if (checker.result->passed)
        check_concrete (&checker, g_ptr_array_index (probes, p), g_ptr_array_index (probes, p) == primes);
      if (checker.result->passed)
        g_ptr_array_add (checker.result->sizes, describe_sizes (&checker, g_ptr_array_index (probes, p)));
    }
  /* After the runs: a node that fails names the first stale constant,
   * where this can only look back from the outputs. */
  if (checker.result->passed)
    check_dims_reach_outputs (&checker);
  g_clear_pointer (&checker.runtime, graft_runtime_free);
  g_rand_free (checker.rng);
  return checker.result;
}

void
graft_dim_check_free (GraftDimCheck *check)
{
  if (check == NULL)
    return;
  g_ptr_array_unref (check->lines);
  g_ptr_array_unref (check->sizes);
  g_free (check->failure);
  g_free (check->failed_node);
  g_free (check);
}
