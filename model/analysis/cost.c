/* Per-node cost and the memory plan of a run (cost.h). */
#include <string.h>
#include "analysis/cost.h"
#include "ir/graph-order.h"

typedef enum {
  PRODUCT_CONV,             /* MACs = |output| · |weight| / weight[0] */
  PRODUCT_CONV_TRANSPOSE,   /* MACs = |input| · |weight| / weight[0] */
  PRODUCT_MATMUL,           /* MACs = |output| · A[-1] */
  PRODUCT_GEMM,             /* MACs = |output| · (transA ? A[0] : A[1]) */
} ProductKind;

/* The ops that are products of two tensors, with where A and the weight are. */
static const struct {
  const char *op;
  ProductKind kind;
  guint a;
  guint weight;
} products[] = {
  { "onnx::Conv", PRODUCT_CONV, 0, 1 },
  { "onnx::ConvInteger", PRODUCT_CONV, 0, 1 },
  { "onnx::QLinearConv", PRODUCT_CONV, 0, 3 },
  { "onnx::ConvTranspose", PRODUCT_CONV_TRANSPOSE, 0, 1 },
  { "onnx::MatMul", PRODUCT_MATMUL, 0, 1 },
  { "onnx::MatMulInteger", PRODUCT_MATMUL, 0, 1 },
  { "onnx::QLinearMatMul", PRODUCT_MATMUL, 0, 3 },
  { "onnx::Gemm", PRODUCT_GEMM, 0, 1 },
  { "aten::conv1d", PRODUCT_CONV, 0, 1 },
  { "aten::conv2d", PRODUCT_CONV, 0, 1 },
  { "aten::conv3d", PRODUCT_CONV, 0, 1 },
  { "aten::convolution", PRODUCT_CONV, 0, 1 },
  { "aten::_convolution", PRODUCT_CONV, 0, 1 },
  { "aten::linear", PRODUCT_MATMUL, 0, 1 },
  { "aten::matmul", PRODUCT_MATMUL, 0, 1 },
  { "aten::mm", PRODUCT_MATMUL, 0, 1 },
  { "aten::bmm", PRODUCT_MATMUL, 0, 1 },
  { "aten::addmm", PRODUCT_MATMUL, 1, 2 },
};

/* Ops that only move, select or reshape data: no arithmetic. */
static const char *const data_movement[] = {
  "Reshape", "Transpose", "Gather", "GatherElements", "GatherND", "Concat", "Slice", "Shape", "Size",
  "Identity", "Squeeze", "Unsqueeze", "Flatten", "Cast", "CastLike", "Constant", "ConstantOfShape",
  "Expand", "Split", "Pad", "Tile", "Range", "Dropout", "DepthToSpace", "SpaceToDepth", "ScatterND",
  "ScatterElements", "NonZero", "Where", "OneHot", "Trilu", "view", "reshape", "permute", "transpose",
  "contiguous", "flatten", "size", "select", "slice", "cat", "unsqueeze", "squeeze", "to", "expand",
  "dropout", "embedding", "index_select", "t", "chunk", "split", "clone", "detach",
};

/* Ops whose cost is per window element (pooling) or per input element
 * (reductions), not per output element. */
static const char *const windowed[] = { "MaxPool", "AveragePool", "LpPool", "max_pool2d", "avg_pool2d" };
static const char *const reducing[] = {
  "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
  "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
  "adaptive_avg_pool2d", "mean", "sum",
};

static gboolean
in_list (const char *const *list, gsize n, const char *name)
{
  for (gsize i = 0; i < n; i++)
    if (strcmp (list[i], name) == 0)
      return TRUE;
  return FALSE;
}

typedef struct {
  GraftInference *inference;
  GHashTable *constant_nodes;
} Context;

static const GraftShape *
shape_of (Context *cx, GraftValue *value)
{
  if (value == NULL)
    return NULL;
  /* inferred first: a graph input declared batch×3×224×224 was inferred
   * at the sizes given */
  const GraftShape *shape = graft_inference_get_shape (cx->inference, value);
  if (shape == NULL || graft_shape_get_numel (shape) < 0)
    shape = graft_value_get_best_shape (value, cx->inference);
  return shape && graft_shape_get_numel (shape) >= 0 ? shape : NULL;
}

/* Bytes of a value, or -1 when its shape or dtype is unknown. */
static gint64
value_bytes (Context *cx, GraftValue *value)
{
  if (value->initializer != NULL)
    return graft_tensor_get_nbytes (value->initializer);
  const GraftShape *shape = shape_of (cx, value);
  GraftDType dtype = value->dtype != GRAFT_DTYPE_UNDEFINED ? value->dtype
                                                           : graft_inference_get_dtype (cx->inference, value);
  gsize size = graft_dtype_get_size (dtype);
  if (shape == NULL || size == 0 || dtype == GRAFT_DTYPE_STRING)
    return -1;
  return graft_shape_get_numel (shape) * (gint64) size;
}

static gboolean
is_constant_value (Context *cx, GraftValue *value)
{
  return value->initializer != NULL
         || (value->producer != NULL && g_hash_table_contains (cx->constant_nodes, value->producer));
}

/* MACs of a product node; FALSE when a shape it needs is unknown. */
static gboolean
product_macs (Context *cx, GraftNode *node, ProductKind kind, guint a_index, guint weight_index, guint64 *macs)
{
  GraftValue *a = a_index < node->inputs->len ? node->inputs->pdata[a_index] : NULL;
  GraftValue *weight = weight_index < node->inputs->len ? node->inputs->pdata[weight_index] : NULL;
  GraftValue *output = node->outputs->len ? node->outputs->pdata[0] : NULL;
  const GraftShape *sa = shape_of (cx, a), *sw = shape_of (cx, weight), *so = shape_of (cx, output);

  if (sa == NULL || sw == NULL || so == NULL || sa->rank < 1 || sw->rank < 1)
    return FALSE;
  switch (kind)
    {
    case PRODUCT_CONV:
      *macs = sw->dims[0].value ? graft_shape_get_numel (so) * (graft_shape_get_numel (sw) / sw->dims[0].value) : 0;
      return TRUE;
    case PRODUCT_CONV_TRANSPOSE:
      *macs = sw->dims[0].value ? graft_shape_get_numel (sa) * (graft_shape_get_numel (sw) / sw->dims[0].value) : 0;
      return TRUE;
    case PRODUCT_MATMUL:
      *macs = graft_shape_get_numel (so) * sa->dims[sa->rank - 1].value;
      return TRUE;
    case PRODUCT_GEMM:
      {
        GraftAttribute *trans_a = graft_node_get_attribute (node, "transA");
        gboolean transposed = trans_a && trans_a->type == GRAFT_ATTR_INT && trans_a->i != 0;
        if (sa->rank != 2)
          return FALSE;
        *macs = graft_shape_get_numel (so) * sa->dims[transposed ? 0 : 1].value;
        return TRUE;
      }
    }
  return FALSE;
}

static guint64
window_size (GraftNode *node)
{
  GraftAttribute *kernel = graft_node_get_attribute (node, "kernel_shape");
  guint64 size = 1;

  for (guint i = 0; kernel && kernel->type == GRAFT_ATTR_INTS && i < kernel->ints->len; i++)
    size *= (guint64) MAX (g_array_index (kernel->ints, gint64, i), 1);
  return size;
}

static void
count_arithmetic (Context *cx, GraftNode *node, GraftNodeCost *cost)
{
  for (gsize i = 0; i < G_N_ELEMENTS (products); i++)
    if (strcmp (products[i].op, node->op) == 0)
      {
        cost->known &= product_macs (cx, node, products[i].kind, products[i].a, products[i].weight, &cost->macs);
        cost->flops = 2 * cost->macs;
        return;
      }
  if (in_list (data_movement, G_N_ELEMENTS (data_movement), node->op_type))
    return;
  gboolean reduction = in_list (reducing, G_N_ELEMENTS (reducing), node->op_type);
  GraftValue *measured = reduction ? (node->inputs->len ? node->inputs->pdata[0] : NULL)
                                   : (node->outputs->len ? node->outputs->pdata[0] : NULL);
  const GraftShape *shape = shape_of (cx, measured);
  if (shape == NULL)
    {
      cost->known = FALSE;
      return;
    }
  cost->flops = graft_shape_get_numel (shape);
  if (in_list (windowed, G_N_ELEMENTS (windowed), node->op_type))
    cost->flops *= window_size (node);
}

static void
count_bytes (Context *cx, GraftNode *node, GraftNodeCost *cost, GHashTable *counted_parameters)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = node->inputs->pdata[i];
      if (in == NULL || !is_constant_value (cx, in))
        continue;
      /* a weight shared through an exporter's Identity is stored once */
      while (in->producer != NULL && strcmp (in->producer->op, "onnx::Identity") == 0 && in->producer->inputs->len > 0
             && in->producer->inputs->pdata[0] != NULL)
        in = in->producer->inputs->pdata[0];
      if (!g_hash_table_add (counted_parameters, in))
        continue;
      gint64 bytes = value_bytes (cx, in);
      if (bytes >= 0)
        cost->parameter_bytes += bytes;
    }
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = node->outputs->pdata[i];
      gint64 bytes = out ? value_bytes (cx, out) : 0;
      if (bytes < 0)
        cost->known = FALSE;
      else
        cost->activation_bytes += bytes;
    }
}

void
graft_cost_report_free (GraftCostReport *report)
{
  if (report == NULL)
    return;
  g_array_unref (report->nodes);
  g_array_unref (report->groups);
  g_free (report);
}

static void
add_group_costs (GraftGroup *group, GHashTable *by_group, GArray *groups)
{
  GraftGroupCost *cost = g_hash_table_lookup (by_group, group);

  if (cost == NULL)
    return;  /* no node below it */
  g_array_append_val (groups, *cost);
  for (guint i = 0; i < group->children->len; i++)
    add_group_costs (group->children->pdata[i], by_group, groups);
}

static void
roll_up (GraftCostReport *report, GraftGraph *graph)
{
  g_autoptr(GHashTable) by_group = g_hash_table_new_full (NULL, NULL, NULL, g_free);

  for (guint i = 0; i < report->nodes->len; i++)
    {
      GraftNodeCost *cost = &g_array_index (report->nodes, GraftNodeCost, i);
      for (GraftGroup *group = cost->node->group; group != NULL; group = group->parent)
        {
          GraftGroupCost *sum = g_hash_table_lookup (by_group, group);
          if (sum == NULL)
            {
              sum = g_new0 (GraftGroupCost, 1);
              sum->group = group;
              g_hash_table_insert (by_group, group, sum);
            }
          sum->macs += cost->macs;
          sum->flops += cost->flops;
          sum->parameter_bytes += cost->parameter_bytes;
          sum->activation_bytes += cost->constant ? 0 : cost->activation_bytes;
          sum->n_nodes++;
        }
    }
  add_group_costs (graph->root_group, by_group, report->groups);
}

/* The main-graph step that reads value last (a read from inside a
 * subgraph is a read by the node owning it), or -1. */
static gint
last_reader (GraftValue *value, GHashTable *step_of)
{
  gint last = -1;

  for (guint c = 0; c < value->consumers->len; c++)
    {
      GraftNode *reader = value->consumers->pdata[c];
      while (reader != NULL && !g_hash_table_contains (step_of, reader))
        reader = reader->graph->parent_node;
      if (reader != NULL)
        last = MAX (last, GPOINTER_TO_INT (g_hash_table_lookup (step_of, reader)) - 1);
    }
  return last;
}

/* How the runtime's kernels place an output (runtime/kernels): views share
 * their input's buffer; element-wise float kernels write into an input
 * that dies at this node and has the output's size (the runtime's
 * "donated" inputs, runtime-run.c); everything else gets a new buffer. */
static const char *const view_ops[] = {
  "onnx::Reshape", "onnx::Flatten", "onnx::Squeeze", "onnx::Unsqueeze", "onnx::Identity",
};
static const char *const in_place_unary[] = {
  "Abs", "Neg", "Floor", "Ceil", "Round", "Sqrt", "Exp", "Log", "Reciprocal", "Sin", "Cos", "Tan", "Asin", "Acos",
  "Atan", "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Erf", "Sign", "Sigmoid", "Relu", "LeakyRelu", "Elu",
  "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "Shrink", "Gelu",
  "Swish", "Clip",
};
static const char *const in_place_binary[] = { "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "PRelu" };

typedef struct {
  guint64 bytes;             /* what the value asked for: the live bytes the runtime counts */
  guint64 capacity;          /* what the buffer holds, back in the pool when freed */
  guint values;              /* live values in it */
} Buffer;

/* The memory of one planned run: buffers of live values, and the runtime's
 * buffer pool, where a freed buffer serves a request of between half and
 * all of its size, the most recently freed first. */
typedef struct {
  GHashTable *buffer_of;     /* GraftValue* → Buffer* (owned by buffers) */
  GPtrArray *buffers;
  GArray *free;              /* guint64 capacities in the pool */
  guint64 live;
  guint64 held;              /* bytes of every buffer the pool made */
} Memory;

static void
memory_allocate (Memory *memory, GraftValue *value, guint64 bytes)
{
  Buffer *buffer = g_new0 (Buffer, 1);
  gboolean reused = FALSE;

  buffer->bytes = buffer->capacity = bytes;
  buffer->values = 1;
  g_ptr_array_add (memory->buffers, buffer);
  g_hash_table_insert (memory->buffer_of, value, buffer);
  memory->live += bytes;
  for (guint i = memory->free->len; i-- > 0 && !reused;)
    {
      guint64 capacity = g_array_index (memory->free, guint64, i);
      if (capacity >= bytes && capacity / 2 <= bytes)
        {
          buffer->capacity = capacity;
          g_array_remove_index (memory->free, i);
          reused = TRUE;
        }
    }
  if (!reused)
    memory->held += bytes;
}

static void
memory_share (Memory *memory, GraftValue *value, GraftValue *owner)
{
  Buffer *buffer = g_hash_table_lookup (memory->buffer_of, owner);

  if (buffer == NULL)
    return;  /* a view of an input or a constant: nothing of the run's */
  buffer->values++;
  g_hash_table_insert (memory->buffer_of, value, buffer);
}

static void
memory_release (Memory *memory, GraftValue *value)
{
  Buffer *buffer = g_hash_table_lookup (memory->buffer_of, value);

  if (buffer == NULL || --buffer->values > 0)
    return;
  memory->live -= buffer->bytes;
  g_array_append_val (memory->free, buffer->capacity);
}

/* The input of node whose buffer its output may take: it dies here (in
 * dies), is float32, read once by node, held by nothing else, and has the
 * output's size. A binary op's other operand may be smaller and broadcast
 * (squeeze-and-excitation's [N, C, 1, 1] gate, a layer scale: binary.c);
 * the first operand is tried first, and PRelu gives only its first. */
static GraftValue *
donated_input (Context *cx, Memory *memory, GraftNode *node, gint64 out_bytes, GHashTable *dies)
{
  gboolean unary = in_list (in_place_unary, G_N_ELEMENTS (in_place_unary), node->op_type);
  gboolean binary = in_list (in_place_binary, G_N_ELEMENTS (in_place_binary), node->op_type);

  if (strcmp (node->domain, "onnx") != 0 || (!unary && !binary) || (binary && node->inputs->len != 2))
    return NULL;
  /* Clip's bounds are not element-wise operands */
  guint operands = unary ? 1 : node->inputs->len;
  for (guint j = 0; j < operands; j++)
    {
      GraftValue *in = node->inputs->pdata[j];
      if (in == NULL || graft_inference_get_dtype (cx->inference, in) != GRAFT_DTYPE_FLOAT32)
        return NULL;
    }
  guint donors = binary && strcmp (node->op_type, "PRelu") == 0 ? 1 : operands;
  for (guint j = 0; j < donors; j++)
    {
      GraftValue *in = node->inputs->pdata[j];
      Buffer *buffer = g_hash_table_lookup (memory->buffer_of, in);
      gboolean once = !(binary && node->inputs->pdata[0] == node->inputs->pdata[1]);
      if (value_bytes (cx, in) == out_bytes && buffer != NULL && buffer->values == 1 && once &&
          g_hash_table_contains (dies, in))
        return in;
    }
  return NULL;
}

static void
place_output (Context *cx, Memory *memory, GraftNode *node, GraftValue *out, guint64 bytes, GHashTable *dies)
{
  GraftValue *donor;

  if (out == node->outputs->pdata[0] && node->inputs->len > 0 && node->inputs->pdata[0] != NULL
      && in_list (view_ops, G_N_ELEMENTS (view_ops), node->op))
    memory_share (memory, out, node->inputs->pdata[0]);
  else if (out == node->outputs->pdata[0] && (donor = donated_input (cx, memory, node, bytes, dies)) != NULL)
    memory_share (memory, out, donor);
  else
    memory_allocate (memory, out, bytes);
}

static void
plan_memory (Context *cx, GraftCostReport *report, GraftGraph *graph)
{
  g_autoptr(GHashTable) step_of = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) steps = g_ptr_array_new ();
  Memory memory = { g_hash_table_new (NULL, NULL), g_ptr_array_new_with_free_func (g_free),
                    g_array_new (FALSE, FALSE, sizeof (guint64)), 0, 0 };

  for (guint i = 0; i < report->nodes->len; i++)
    {
      GraftNodeCost *cost = &g_array_index (report->nodes, GraftNodeCost, i);
      if (cost->constant)
        continue;
      g_ptr_array_add (steps, cost->node);
      g_hash_table_insert (step_of, cost->node, GINT_TO_POINTER (steps->len));
    }
  /* the caller's inputs are live for the whole run, outside the pool */
  guint64 inputs = 0;
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = graph->inputs->pdata[i];
      gint64 bytes = input->initializer ? -1 : value_bytes (cx, input);
      if (bytes > 0)
        inputs += bytes;
    }
  report->activation_bytes = inputs;
  report->peak_bytes = inputs;
  g_autofree GPtrArray **release = g_new0 (GPtrArray *, MAX (steps->len, 1));
  for (guint i = 0; i < steps->len; i++)
    {
      GraftNode *node = steps->pdata[i];
      g_autoptr(GHashTable) dies = g_hash_table_new (NULL, NULL);
      for (guint k = 0; release[i] != NULL && k < release[i]->len; k++)
        g_hash_table_add (dies, release[i]->pdata[k]);
      for (guint k = 0; k < node->outputs->len; k++)
        {
          GraftValue *out = node->outputs->pdata[k];
          gint64 bytes = out ? value_bytes (cx, out) : -1;
          if (bytes <= 0)
            continue;
          report->activation_bytes += bytes;
          place_output (cx, &memory, node, out, bytes, dies);
          gint last = out->is_graph_output ? -1 : last_reader (out, step_of);
          if (last < 0)
            continue;  /* kept to the end, as the runtime keeps it */
          if (release[last] == NULL)
            release[last] = g_ptr_array_new ();
          g_ptr_array_add (release[last], out);
        }
      report->peak_bytes = MAX (report->peak_bytes, inputs + memory.live);
      for (guint k = 0; release[i] != NULL && k < release[i]->len; k++)
        memory_release (&memory, release[i]->pdata[k]);
      g_clear_pointer (&release[i], g_ptr_array_unref);
    }
  report->arena_bytes = memory.held;
  g_hash_table_unref (memory.buffer_of);
  g_ptr_array_unref (memory.buffers);
  g_array_unref (memory.free);
}

GraftCostReport *
graft_cost_analyze (GraftModel *model, GraftInference *inference)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GraftCostReport *report = g_new0 (GraftCostReport, 1);
  g_autoptr(GPtrArray) order = graft_graph_topological_order (graph);
  g_autoptr(GHashTable) constant_nodes = graft_graph_find_constant_nodes (order);
  g_autoptr(GHashTable) counted_parameters = g_hash_table_new (NULL, NULL);
  Context cx = { inference, constant_nodes };

  report->nodes = g_array_new (FALSE, FALSE, sizeof (GraftNodeCost));
  report->groups = g_array_new (FALSE, FALSE, sizeof (GraftGroupCost));
  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = order->pdata[i];
      GraftNodeCost cost = { .node = node, .known = TRUE };
      cost.constant = g_hash_table_contains (constant_nodes, node);
      if (cost.constant)
        {
          /* what it computes is a parameter of its readers */
          g_array_append_val (report->nodes, cost);
          continue;
        }
      count_arithmetic (&cx, node, &cost);
      count_bytes (&cx, node, &cost, counted_parameters);
      report->macs += cost.macs;
      report->flops += cost.flops;
      report->parameter_bytes += cost.parameter_bytes;
      report->n_unknown += !cost.known;
      g_array_append_val (report->nodes, cost);
    }
  plan_memory (&cx, report, graph);
  roll_up (report, graph);
  return report;
}

static const GraftCostMetricInfo cost_metrics[] = {
  { GRAFT_COST_FLOPS, "flops", "FLOPs" },
  { GRAFT_COST_MACS, "macs", "MACs" },
  { GRAFT_COST_PARAMETER_BYTES, "parameters", "Parameter Bytes" },
  { GRAFT_COST_ACTIVATION_BYTES, "activations", "Activation Bytes" },
  { GRAFT_COST_SECONDS, "time", "Measured Time" },
};
G_STATIC_ASSERT (G_N_ELEMENTS (cost_metrics) == GRAFT_COST_N_METRICS);

const GraftCostMetricInfo *
graft_cost_metrics (void)
{
  return cost_metrics;
}

gboolean
graft_cost_metric_from_name (const char *name, GraftCostMetric *metric)
{
  for (guint i = 0; i < G_N_ELEMENTS (cost_metrics); i++)
    if (g_strcmp0 (cost_metrics[i].name, name) == 0)
      {
        *metric = cost_metrics[i].metric;
        return TRUE;
      }
  return FALSE;
}

static double
amount_of (GraftCostMetric metric, guint64 flops, guint64 macs, guint64 parameter_bytes, guint64 activation_bytes,
           double seconds)
{
  switch (metric)
    {
    case GRAFT_COST_FLOPS: return flops;
    case GRAFT_COST_MACS: return macs;
    case GRAFT_COST_PARAMETER_BYTES: return parameter_bytes;
    case GRAFT_COST_ACTIVATION_BYTES: return activation_bytes;
    case GRAFT_COST_SECONDS: return seconds;
    default: return 0;
    }
}

double
graft_node_cost_get (const GraftNodeCost *cost, GraftCostMetric metric)
{
  /* a constant's output is a parameter of its readers (roll_up agrees) */
  return amount_of (metric, cost->flops, cost->macs, cost->parameter_bytes, cost->constant ? 0 : cost->activation_bytes,
                    cost->seconds);
}

double
graft_group_cost_get (const GraftGroupCost *cost, GraftCostMetric metric)
{
  return amount_of (metric, cost->flops, cost->macs, cost->parameter_bytes, cost->activation_bytes, cost->seconds);
}

double
graft_cost_report_get_total (const GraftCostReport *report, GraftCostMetric metric)
{
  return amount_of (metric, report->flops, report->macs, report->parameter_bytes, report->activation_bytes,
                    report->seconds);
}

char *
graft_cost_format (GraftCostMetric metric, double amount)
{
  if (metric == GRAFT_COST_SECONDS)
    return amount >= 1 ? g_strdup_printf ("%.2f s", amount) : g_strdup_printf ("%.3f ms", amount * 1e3);
  if (metric == GRAFT_COST_PARAMETER_BYTES || metric == GRAFT_COST_ACTIVATION_BYTES)
    return amount >= 1e9   ? g_strdup_printf ("%.2f GB", amount / 1e9)
           : amount >= 1e6 ? g_strdup_printf ("%.2f MB", amount / 1e6)
                           : g_strdup_printf ("%.1f kB", amount / 1e3);
  const char *unit = metric == GRAFT_COST_MACS ? "MACs" : "FLOPs";
  return amount >= 1e9   ? g_strdup_printf ("%.2f G%s", amount / 1e9, unit)
         : amount >= 1e6 ? g_strdup_printf ("%.1f M%s", amount / 1e6, unit)
                         : g_strdup_printf ("%.1f k%s", amount / 1e3, unit);
}

void
graft_cost_report_set_timings (GraftCostReport *report, GHashTable *seconds)
{
  g_autoptr(GHashTable) by_group = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < report->groups->len; i++)
    {
      GraftGroupCost *group = &g_array_index (report->groups, GraftGroupCost, i);
      group->seconds = 0;
      g_hash_table_insert (by_group, group->group, group);
    }
  report->seconds = 0;
  report->timed = TRUE;
  for (guint i = 0; i < report->nodes->len; i++)
    {
      GraftNodeCost *cost = &g_array_index (report->nodes, GraftNodeCost, i);
      double *measured = g_hash_table_lookup (seconds, cost->node);
      cost->seconds = measured ? *measured : 0;
      report->seconds += cost->seconds;
      for (GraftGroup *group = cost->node->group; group != NULL; group = group->parent)
        {
          GraftGroupCost *sum = g_hash_table_lookup (by_group, group);
          if (sum != NULL)
            sum->seconds += cost->seconds;
        }
    }
}

static int
by_amount_descending (gconstpointer x, gconstpointer y, gpointer metric)
{
  double a = graft_group_cost_get (*(GraftGroupCost *const *) x, GPOINTER_TO_INT (metric));
  double b = graft_group_cost_get (*(GraftGroupCost *const *) y, GPOINTER_TO_INT (metric));
  return a < b ? 1 : a > b ? -1 : 0;
}

GPtrArray *
graft_cost_report_biggest_groups (GraftCostReport *report, GraftCostMetric metric, guint max)
{
  GPtrArray *biggest = g_ptr_array_new ();
  g_autoptr(GHashTable) by_group = g_hash_table_new (NULL, NULL);
  GraftGroupCost *top = NULL;

  for (guint i = 0; i < report->groups->len; i++)
    {
      GraftGroupCost *group = &g_array_index (report->groups, GraftGroupCost, i);
      g_hash_table_insert (by_group, group->group, group);
      if (group->group->parent == NULL)
        top = group;
    }
  /* a wrapper holding (nearly) everything says nothing: look inside it */
  for (gboolean descended = TRUE; top != NULL && descended;)
    {
      descended = FALSE;
      for (guint i = 0; i < top->group->children->len; i++)
        {
          GraftGroupCost *child = g_hash_table_lookup (by_group, top->group->children->pdata[i]);
          if (child != NULL && graft_group_cost_get (top, metric) > 0
              && graft_group_cost_get (child, metric) >= 0.9 * graft_group_cost_get (top, metric)
              && child->group->children->len > 0)
            {
              top = child;
              descended = TRUE;
              break;
            }
        }
    }
  for (guint i = 0; top != NULL && i < top->group->children->len; i++)
    {
      GraftGroupCost *child = g_hash_table_lookup (by_group, top->group->children->pdata[i]);
      if (child != NULL && graft_group_cost_get (child, metric) > 0)
        g_ptr_array_add (biggest, child);
    }
  g_ptr_array_sort_with_data (biggest, by_amount_descending, GINT_TO_POINTER (metric));
  if (biggest->len > max)
    g_ptr_array_set_size (biggest, max);
  return biggest;
}
