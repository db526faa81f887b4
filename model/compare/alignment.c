#include "compare/alignment.h"
#include "ir/graph-order.h"

#include <string.h>
#include "compare/op-family.h"
#include "ir/fixed-branch.h"
#include "ir/model-error.h"

/* What the alignment knows about one node of one side. */
typedef struct {
  GraftNode *node;
  guint order;                 /* pre-order over the graph and its subgraphs */
  const GraftOpFamily *family;
  gboolean data;               /* computes on values derived from the graph inputs */
  guint64 weight_hash;         /* of its largest constant input; 0 when it has none */
  gboolean computes;           /* control nodes: a block holds an aligned node (not only glue) */
  GraftNode *container;        /* innermost If/Loop holding it, or NULL */
  guint branch;                /* which subgraph of container */
} NodeInfo;

typedef struct {
  GraftModel *model;
  GHashTable *info;            /* GraftNode* → NodeInfo* */
  GPtrArray *nodes;            /* NodeInfo*, in order (owned) */
  GHashTable *data_values;     /* GraftValue* set */
  GHashTable *explained;       /* GraftNode* set: absorbed by a note */
} Side;

typedef struct {
  GraftAlignment *result;
  Side sides[2];
  GQueue worklist;             /* pair indices + 1 */
  GHashTable *value_of_a;      /* GraftValue* of A → GraftValue* of B */
  char *names[2];
} Aligner;

/* ------------------------------------------------------------------ */
/* Node facts                                                          */

static gboolean
is_data_input (Side *side, GraftValue *v)
{
  return v != NULL && g_hash_table_contains (side->data_values, v);
}

static guint64
fnv1a (guint64 h, const guint8 *p, gsize n)
{
  for (gsize i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* A hash of the tensor's type and data; big tensors are sampled (256
 * stretches of 256 bytes) so that hashing a ViT stays cheap. */
static guint64
tensor_hash (GraftTensor *tensor)
{
  GBytes *bytes = graft_tensor_get_data (tensor, NULL);
  if (bytes == NULL)
    return 0;
  gsize n;
  const guint8 *p = g_bytes_get_data (bytes, &n);
  guint64 h = 14695981039346656037ull;
  h = fnv1a (h, (const guint8 *) &tensor->dtype, sizeof tensor->dtype);
  for (int d = 0; d < tensor->rank; d++)
    h = fnv1a (h, (const guint8 *) &tensor->dims[d], sizeof tensor->dims[d]);
  if (n <= 65536)
    return fnv1a (h, p, n) | 1;
  gsize step = n / 256;
  for (gsize k = 0; k < 256; k++)
    h = fnv1a (h, p + k * step, 256);
  return h | 1;
}

static guint64
weight_hash (GraftNode *node)
{
  GraftTensor *largest = NULL;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *v = node->inputs->pdata[i];
      GraftTensor *t = v ? v->initializer : NULL;
      if (t && t->dtype != GRAFT_DTYPE_STRING && graft_tensor_get_numel (t) >= 16 &&
          (largest == NULL || graft_tensor_get_numel (t) > graft_tensor_get_numel (largest)))
        largest = t;
    }
  return largest ? tensor_hash (largest) : 0;
}


static void collect_graph (Side *side, GraftGraph *graph, GraftNode *container, guint branch);

/* Lists and tuples of tensors carry data on; reading a size or a number
 * out of a tensor does not. */
static void
mark_data_from_inputs (Side *side, NodeInfo *info)
{
  if (!info->family->reads_number)
    for (guint i = 0; i < info->node->inputs->len && !info->data; i++)
      info->data = is_data_input (side, info->node->inputs->pdata[i]);
}

static void
mark_data_outputs (Side *side, GraftNode *node)
{
  for (guint j = 0; j < node->outputs->len; j++)
    if (node->outputs->pdata[j])
      g_hash_table_add (side->data_values, node->outputs->pdata[j]);
}

static void
collect_node (Side *side, GraftNode *node, GraftNode *container, guint branch)
{
  NodeInfo *info = g_new0 (NodeInfo, 1);
  info->node = node;
  info->order = side->nodes->len;
  info->family = graft_op_family_lookup (node->op);
  info->container = container;
  info->branch = branch;
  info->weight_hash = info->family->role == GRAFT_OP_ROLE_COMPUTE ? weight_hash (node) : 0;
  g_ptr_array_add (side->nodes, info);
  g_hash_table_insert (side->info, node, info);

  mark_data_from_inputs (side, info);

  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);
  for (guint k = 0; subgraphs && k < subgraphs->len; k++)
    {
      GraftGraph *sub = subgraphs->pdata[k];
      guint first = side->nodes->len;
      collect_graph (side, sub, node, k);
      /* a control node carries data on when its blocks do, and is aligned
       * when they compute on it (not when they only check its type) */
      for (guint j = first; j < side->nodes->len; j++)
        {
          NodeInfo *inner = side->nodes->pdata[j];
          info->data |= inner->data;
          info->computes |= inner->data && (inner->family->role == GRAFT_OP_ROLE_COMPUTE || inner->computes);
        }
    }
  if (info->data)
    mark_data_outputs (side, node);
}

/* Which inputs of a graph carry data: all tensors of the main graph; of
 * a loop body, the carried values whose initial value does (not the
 * iteration counter, nor an int carried through a loop over sizes). */
static void
mark_graph_inputs (Side *side, GraftGraph *graph, GraftNode *container)
{
  guint nb = graph->inputs->len;
  gboolean onnx_loop = container && strcmp (container->op, "onnx::Loop") == 0;
  guint n_carried = container && nb > (onnx_loop ? 2u : 1u) ? nb - (onnx_loop ? 2 : 1) : 0;
  for (guint j = 0; j < nb; j++)
    {
      GraftValue *v = graph->inputs->pdata[j];
      gboolean data;
      if (container == NULL)
        data = v->initializer == NULL && v->kind == GRAFT_VALUE_TENSOR;
      else if (j < nb - n_carried)
        data = FALSE;
      else
        {
          guint nn = container->inputs->len;
          guint k = j - (nb - n_carried);
          data = nn >= n_carried && is_data_input (side, container->inputs->pdata[nn - n_carried + k]);
        }
      if (data)
        g_hash_table_add (side->data_values, v);
    }
}

static void
collect_graph (Side *side, GraftGraph *graph, GraftNode *container, guint branch)
{
  mark_graph_inputs (side, graph, container);
  for (guint i = 0; i < graph->nodes->len; i++)
    collect_node (side, graph->nodes->pdata[i], container, branch);
}

/* Which nodes carry data, again in the order data flows: a reader need
 * not list a node after its producers (ExecuTorch's planned views are made
 * when an instruction first reads them), and the first pass, in the
 * file's order, misses what such a node feeds. */
static void
mark_data_in_flow_order (Side *side, GraftGraph *graph)
{
  g_autoptr(GPtrArray) order = graft_graph_topological_order (graph);

  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = order->pdata[i];
      NodeInfo *info = g_hash_table_lookup (side->info, node);
      if (info == NULL || info->data)
        continue;
      mark_data_from_inputs (side, info);
      if (info->data)
        mark_data_outputs (side, node);
    }
}

static void
side_init (Side *side, GraftModel *model)
{
  side->model = model;
  side->info = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  side->nodes = g_ptr_array_new ();
  side->data_values = g_hash_table_new (g_direct_hash, g_direct_equal);
  side->explained = g_hash_table_new (g_direct_hash, g_direct_equal);
  collect_graph (side, graft_model_get_graph (model), NULL, 0);
  mark_data_in_flow_order (side, graft_model_get_graph (model));
}

static void
side_clear (Side *side)
{
  g_hash_table_unref (side->info);
  g_ptr_array_unref (side->nodes);
  g_hash_table_unref (side->data_values);
  g_hash_table_unref (side->explained);
}

static NodeInfo *
info_of (Side *side, GraftNode *node)
{
  return node ? g_hash_table_lookup (side->info, node) : NULL;
}

/* Aligned nodes: compute or control nodes on data. */
static gboolean
alignable (NodeInfo *info)
{
  return info != NULL && info->data &&
         (info->family->role == GRAFT_OP_ROLE_COMPUTE || (info->family->role == GRAFT_OP_ROLE_CONTROL && info->computes));
}

static const char *
group_path (GraftNode *node)
{
  return node->group && node->group->path ? node->group->path : "";
}

/* ------------------------------------------------------------------ */
/* Pairs                                                               */

static gboolean
matched (Aligner *al, guint side, GraftNode *node)
{
  GHashTable *map = side == 0 ? al->result->pair_of_a : al->result->pair_of_b;
  return g_hash_table_contains (map, node);
}

static void
add_value_pair (Aligner *al, GraftValue *a, GraftValue *b)
{
  if (a == NULL || b == NULL || g_hash_table_contains (al->value_of_a, a))
    return;
  GraftValuePair vp = { a, b };
  g_array_append_val (al->result->value_pairs, vp);
  g_hash_table_insert (al->value_of_a, a, b);
}

static guint
data_output_count (Side *side, GraftNode *node)
{
  guint n = 0;
  for (guint j = 0; j < node->outputs->len; j++)
    n += node->outputs->pdata[j] && g_hash_table_contains (side->data_values, node->outputs->pdata[j]);
  return n;
}

static void
pair_outputs (Aligner *al, GraftNode *a, GraftNode *b)
{
  guint na = data_output_count (&al->sides[0], a), nb = data_output_count (&al->sides[1], b);
  if (na != nb)
    {
      /* aten::max returns (values, indices) where ReduceMax returns one */
      if (na >= 1 && nb >= 1)
        add_value_pair (al, a->outputs->pdata[0], b->outputs->pdata[0]);
      return;
    }
  for (guint j = 0; j < a->outputs->len && j < b->outputs->len; j++)
    add_value_pair (al, a->outputs->pdata[j], b->outputs->pdata[j]);
}

static guint
add_pair (Aligner *al, GraftNode *a, GraftNode *b, GraftMatchKind kind, const char *reason, gboolean propagate)
{
  GraftNodePair pair = { a, b, kind, reason };
  g_array_append_val (al->result->node_pairs, pair);
  guint index = al->result->node_pairs->len;
  if (!g_hash_table_contains (al->result->pair_of_a, a))
    g_hash_table_insert (al->result->pair_of_a, a, GUINT_TO_POINTER (index));
  if (!g_hash_table_contains (al->result->pair_of_b, b))
    g_hash_table_insert (al->result->pair_of_b, b, GUINT_TO_POINTER (index));
  if (propagate)
    g_queue_push_tail (&al->worklist, GUINT_TO_POINTER (index));
  return index;
}

/* Exact: the same op, or the same family inside the same named module
 * (aten::conv2d in layer1.0.conv1 and onnx::Conv in /layer1/0/conv1). */
static GraftMatchKind
kind_for (GraftNode *a, GraftNode *b)
{
  const char *ga = group_path (a);
  if (strcmp (ga, group_path (b)) != 0)
    return GRAFT_MATCH_INFERRED;
  return a->op == b->op || *ga ? GRAFT_MATCH_EXACT : GRAFT_MATCH_INFERRED;
}

static gboolean
same_family (NodeInfo *x, NodeInfo *y)
{
  return strcmp (x->family->family, y->family->family) == 0;
}

/* Families one exporter turns into another: adaptive_avg_pool2d(1) is a
 * ReduceMean over H, W in the dynamo exporter. */
static const char *const compatible_families[][2] = {
  { "avgpool", "reduce_mean" },
};

static gboolean
compatible (NodeInfo *x, NodeInfo *y)
{
  if (same_family (x, y))
    return TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS (compatible_families); i++)
    for (guint k = 0; k < 2; k++)
      if (strcmp (x->family->family, compatible_families[i][k]) == 0 &&
          strcmp (y->family->family, compatible_families[i][1 - k]) == 0)
        return TRUE;
  return FALSE;
}

static gboolean
can_pair (Aligner *al, NodeInfo *x, NodeInfo *y)
{
  return alignable (x) && alignable (y) && compatible (x, y) &&
         !matched (al, 0, x->node) && !matched (al, 1, y->node);
}

/* ------------------------------------------------------------------ */
/* Anchors                                                             */

static GPtrArray *
fed_inputs (GraftModel *model)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GPtrArray *list = g_ptr_array_new ();
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *v = graph->inputs->pdata[i];
      if (v->initializer == NULL && v->kind != GRAFT_VALUE_OBJECT)
        g_ptr_array_add (list, v);
    }
  return list;
}

static GraftValue *
value_named (GPtrArray *values, const char *name)
{
  for (guint i = 0; i < values->len; i++)
    if (g_strcmp0 (((GraftValue *) values->pdata[i])->name, name) == 0)
      return values->pdata[i];
  return NULL;
}

/* The producer of v, looking through nodes that forward their input. */
static GraftNode *
real_producer (Side *side, GraftValue *v)
{
  for (guint depth = 0; v && v->producer && depth < 64; depth++)
    {
      NodeInfo *info = info_of (side, v->producer);
      if (info == NULL || info->family->role != GRAFT_OP_ROLE_PASSTHROUGH || v->producer->inputs->len == 0)
        return v->producer;
      v = v->producer->inputs->pdata[0];
    }
  return NULL;
}

static void
anchor_inputs_outputs (Aligner *al)
{
  g_autoptr(GPtrArray) in_a = fed_inputs (al->result->a);
  g_autoptr(GPtrArray) in_b = fed_inputs (al->result->b);
  for (guint i = 0; i < in_a->len; i++)
    {
      GraftValue *a = in_a->pdata[i];
      GraftValue *b = value_named (in_b, a->name);
      if (b == NULL && in_a->len == in_b->len)
        b = in_b->pdata[i];
      add_value_pair (al, a, b);
    }
  GraftGraph *ga = graft_model_get_graph (al->result->a), *gb = graft_model_get_graph (al->result->b);
  if (ga->outputs->len != gb->outputs->len)
    return;
  for (guint i = 0; i < ga->outputs->len; i++)
    {
      GraftNode *pa = real_producer (&al->sides[0], ga->outputs->pdata[i]);
      GraftNode *pb = real_producer (&al->sides[1], gb->outputs->pdata[i]);
      NodeInfo *x = info_of (&al->sides[0], pa), *y = info_of (&al->sides[1], pb);
      if (x && y && can_pair (al, x, y))
        add_pair (al, pa, pb, kind_for (pa, pb), "graph output", TRUE);
      if (x && y && alignable (x) && alignable (y))
        add_value_pair (al, ga->outputs->pdata[i], gb->outputs->pdata[i]);
    }
}

/* How many alignable nodes of side hold each weight hash. */
static GHashTable *
count_weights (Side *side)
{
  GHashTable *counts = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (guint i = 0; i < side->nodes->len; i++)
    {
      NodeInfo *x = side->nodes->pdata[i];
      if (x->weight_hash == 0 || !alignable (x))
        continue;
      guint n = GPOINTER_TO_UINT (g_hash_table_lookup (counts, &x->weight_hash));
      g_hash_table_insert (counts, &x->weight_hash, GUINT_TO_POINTER (n + 1));
    }
  return counts;
}

/* A weight identifies its layer only when no other layer holds the same
 * data on either side: freshly initialised BatchNorms all hold ones. */
static void
anchor_weights (Aligner *al)
{
  g_autoptr(GHashTable) count_a = count_weights (&al->sides[0]);
  g_autoptr(GHashTable) count_b = count_weights (&al->sides[1]);
  g_autoptr(GHashTable) by_hash = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL,
                                                         (GDestroyNotify) g_ptr_array_unref);
  Side *sb = &al->sides[1];
  for (guint i = 0; i < sb->nodes->len; i++)
    {
      NodeInfo *y = sb->nodes->pdata[i];
      if (y->weight_hash == 0 || !alignable (y))
        continue;
      GPtrArray *list = g_hash_table_lookup (by_hash, &y->weight_hash);
      if (list == NULL)
        g_hash_table_insert (by_hash, &y->weight_hash, list = g_ptr_array_new ());
      g_ptr_array_add (list, y);
    }
  Side *sa = &al->sides[0];
  for (guint i = 0; i < sa->nodes->len; i++)
    {
      NodeInfo *x = sa->nodes->pdata[i];
      GPtrArray *list = x->weight_hash ? g_hash_table_lookup (by_hash, &x->weight_hash) : NULL;
      if (list == NULL || GPOINTER_TO_UINT (g_hash_table_lookup (count_a, &x->weight_hash)) != 1 ||
          GPOINTER_TO_UINT (g_hash_table_lookup (count_b, &x->weight_hash)) != 1)
        continue;
      for (guint k = 0; list && k < list->len; k++)
        if (can_pair (al, x, list->pdata[k]))
          {
            GraftNode *b = ((NodeInfo *) list->pdata[k])->node;
            add_pair (al, x->node, b, GRAFT_MATCH_EXACT, "same weights", TRUE);
            break;
          }
    }
}

/* Unmatched alignable nodes per "group path / family", in order. */
static GHashTable *
nodes_by_group_family (Aligner *al, guint s)
{
  GHashTable *map = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
  Side *side = &al->sides[s];
  for (guint i = 0; i < side->nodes->len; i++)
    {
      NodeInfo *info = side->nodes->pdata[i];
      if (!alignable (info) || matched (al, s, info->node))
        continue;
      char *key = g_strconcat (group_path (info->node), "\x1f", info->family->family, NULL);
      GPtrArray *list = g_hash_table_lookup (map, key);
      if (list == NULL)
        g_hash_table_insert (map, key, list = g_ptr_array_new ());
      else
        g_free (key);
      g_ptr_array_add (list, info);
    }
  return map;
}

/* Same module path and family, and as many of them on both sides: the
 * k-th of A is the k-th of B. Keys in A's order so pairs come in order. */
static void
anchor_module_paths (Aligner *al)
{
  g_autoptr(GHashTable) in_a = nodes_by_group_family (al, 0);
  g_autoptr(GHashTable) in_b = nodes_by_group_family (al, 1);
  Side *sa = &al->sides[0];
  g_autoptr(GHashTable) done = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < sa->nodes->len; i++)
    {
      NodeInfo *x = sa->nodes->pdata[i];
      if (!alignable (x) || matched (al, 0, x->node))
        continue;
      g_autofree char *key = g_strconcat (group_path (x->node), "\x1f", x->family->family, NULL);
      GPtrArray *la = g_hash_table_lookup (in_a, key), *lb = g_hash_table_lookup (in_b, key);
      if (lb == NULL || g_hash_table_contains (done, la))
        continue;
      g_hash_table_add (done, la);
      g_autoptr(GPtrArray) one_branch = NULL;
      if (la->len != lb->len && x->container != NULL)
        {
          /* both branches of an If call the module: pair with the first
           * branch's nodes, note_if() moves them to the taken one */
          one_branch = g_ptr_array_new ();
          for (guint k = 0; k < la->len; k++)
            {
              NodeInfo *o = la->pdata[k];
              if (o->container == x->container && o->branch == x->branch)
                g_ptr_array_add (one_branch, o);
            }
          la = one_branch;
        }
      if (la->len != lb->len)
        continue;
      for (guint k = 0; k < la->len; k++)
        {
          NodeInfo *p = la->pdata[k], *q = lb->pdata[k];
          if (can_pair (al, p, q))
            add_pair (al, p->node, q->node, kind_for (p->node, q->node), "module path", TRUE);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Propagation along edges                                             */

static void
add_data_consumers (Side *side, GraftValue *v, GPtrArray *out, guint depth)
{
  if (v == NULL || depth > 32)
    return;
  for (guint c = 0; c < v->consumers->len; c++)
    {
      GraftNode *node = v->consumers->pdata[c];
      NodeInfo *info = info_of (side, node);
      if (info == NULL)
        continue;
      if (info->family->role == GRAFT_OP_ROLE_PASSTHROUGH || (info->family->role == GRAFT_OP_ROLE_GLUE && info->data) ||
          (g_hash_table_contains (side->explained, node) && strcmp (info->family->family, "batchnorm") == 0))
        {
          for (guint j = 0; j < node->outputs->len; j++)
            add_data_consumers (side, node->outputs->pdata[j], out, depth + 1);
        }
      else if (alignable (info) && !g_ptr_array_find (out, info, NULL))
        g_ptr_array_add (out, info);
    }
}

static GPtrArray *
consumers_of (Side *side, GraftNode *node)
{
  GPtrArray *out = g_ptr_array_new ();
  for (guint j = 0; j < node->outputs->len; j++)
    add_data_consumers (side, node->outputs->pdata[j], out, 0);
  return out;
}

static void
add_producers (Side *side, GraftNode *node, GPtrArray *out, guint depth)
{
  for (guint i = 0; i < node->inputs->len && depth < 16; i++)
    {
      GraftValue *v = node->inputs->pdata[i];
      if (!is_data_input (side, v))
        continue;
      GraftNode *p = real_producer (side, v);
      NodeInfo *info = info_of (side, p);
      if (info && info->family->role == GRAFT_OP_ROLE_GLUE)
        {
          /* the tensors of a list or tuple */
          add_producers (side, p, out, depth + 1);
          continue;
        }
      /* a folded BatchNorm is looked through to the Conv before it */
      while (info && g_hash_table_contains (side->explained, info->node) &&
             strcmp (info->family->family, "batchnorm") == 0 && info->node->inputs->len > 0)
        info = info_of (side, real_producer (side, info->node->inputs->pdata[0]));
      if (info && alignable (info))
        g_ptr_array_add (out, info);
    }
}

/* Producers of the node's data inputs, in input order. */
static GPtrArray *
producers_of (Side *side, GraftNode *node)
{
  GPtrArray *out = g_ptr_array_new ();
  add_producers (side, node, out, 0);
  return out;
}

/* Pairs the unmatched nodes of two neighbour lists: family by family when
 * each family has as many candidates on both sides. */
static void
pair_neighbours (Aligner *al, GPtrArray *xs, GPtrArray *ys)
{
  for (guint i = 0; i < xs->len; i++)
    {
      NodeInfo *x = xs->pdata[i];
      if (!alignable (x) || matched (al, 0, x->node))
        continue;
      guint nx = 0, ny = 0, rank = 0;
      for (guint k = 0; k < xs->len; k++)
        {
          NodeInfo *o = xs->pdata[k];
          if (same_family (o, x) && !matched (al, 0, o->node))
            {
              if (k < i)
                rank++;
              nx++;
            }
        }
      NodeInfo *pick = NULL;
      for (guint k = 0; k < ys->len; k++)
        {
          NodeInfo *y = ys->pdata[k];
          if (same_family (y, x) && !matched (al, 1, y->node))
            {
              if (ny == rank)
                pick = y;
              ny++;
            }
        }
      if (pick && nx == ny && can_pair (al, x, pick))
        add_pair (al, x->node, pick->node, kind_for (x->node, pick->node), "graph structure", TRUE);
    }
  /* one neighbour left on each side, of families an exporter converts */
  NodeInfo *last_x = NULL, *last_y = NULL;
  guint left_x = 0, left_y = 0;
  for (guint i = 0; i < xs->len; i++)
    if (alignable (xs->pdata[i]) && !matched (al, 0, ((NodeInfo *) xs->pdata[i])->node))
      left_x++, last_x = xs->pdata[i];
  for (guint i = 0; i < ys->len; i++)
    if (alignable (ys->pdata[i]) && !matched (al, 1, ((NodeInfo *) ys->pdata[i])->node))
      left_y++, last_y = ys->pdata[i];
  if (left_x == 1 && left_y == 1 && can_pair (al, last_x, last_y))
    add_pair (al, last_x->node, last_y->node, GRAFT_MATCH_INFERRED, "graph structure", TRUE);
}

static void
propagate (Aligner *al)
{
  gpointer item;
  while ((item = g_queue_pop_head (&al->worklist)) != NULL)
    {
      GraftNodePair *pair = &g_array_index (al->result->node_pairs, GraftNodePair, GPOINTER_TO_UINT (item) - 1);
      GraftNode *a = pair->a, *b = pair->b;
      g_autoptr(GPtrArray) ca = consumers_of (&al->sides[0], a);
      g_autoptr(GPtrArray) cb = consumers_of (&al->sides[1], b);
      pair_neighbours (al, ca, cb);
      g_autoptr(GPtrArray) pa = producers_of (&al->sides[0], a);
      g_autoptr(GPtrArray) pb = producers_of (&al->sides[1], b);
      if (pa->len == pb->len)
        for (guint i = 0; i < pa->len; i++)
          if (can_pair (al, pa->pdata[i], pb->pdata[i]))
            add_pair (al, ((NodeInfo *) pa->pdata[i])->node, ((NodeInfo *) pb->pdata[i])->node,
                      kind_for (((NodeInfo *) pa->pdata[i])->node, ((NodeInfo *) pb->pdata[i])->node),
                      "graph structure", TRUE);
      pair_neighbours (al, pa, pb);
    }
}

/* ------------------------------------------------------------------ */
/* Notes                                                               */

static GraftAlignmentNote *
add_note (Aligner *al, GraftNoteKind kind, guint s, GraftNode *node, GraftNode *other)
{
  GraftAlignmentNote *note = g_new0 (GraftAlignmentNote, 1);
  note->kind = kind;
  note->in_a = s == 0;
  note->node = node;
  note->other = other;
  note->absorbed = g_ptr_array_new ();
  note->absorbed_other = g_ptr_array_new ();
  g_ptr_array_add (al->result->notes, note);
  return note;
}

static void
absorb (Aligner *al, guint s, GraftAlignmentNote *note, GraftNode *node)
{
  if (node == NULL || g_hash_table_contains (al->sides[s].explained, node) || matched (al, s, node))
    return;
  g_hash_table_add (al->sides[s].explained, node);
  g_ptr_array_add (note->absorbed, node);
}

/* The other side's node paired with node of side s. */
static GraftNode *
partner (Aligner *al, guint s, GraftNode *node)
{
  const GraftNodePair *pair = graft_alignment_lookup (al->result, node, s == 0);
  return pair ? (s == 0 ? pair->b : pair->a) : NULL;
}

/* The file name of side s, for descriptions ("resnet18_traced.pt"). */
static const char *
side_name (Aligner *al, guint s)
{
  return al->names[s];
}

static char *
where (GraftNode *node)
{
  const char *group = group_path (node);
  return *group ? g_strdup_printf ("%s in %s", node->op, group) : g_strdup_printf ("%s", node->op);
}

/* BatchNorm after a matched Conv whose partner has no BatchNorm after it:
 * the exporter folded it into the Conv's weights. */
static void
find_folded (Aligner *al)
{
  for (guint s = 0; s < 2; s++)
    {
      Side *side = &al->sides[s];
      for (guint i = 0; i < side->nodes->len; i++)
        {
          NodeInfo *x = side->nodes->pdata[i];
          if (!alignable (x) || strcmp (x->family->family, "batchnorm") != 0 || matched (al, s, x->node) ||
              g_hash_table_contains (side->explained, x->node) || x->node->inputs->len == 0)
            continue;
          GraftNode *conv = real_producer (side, x->node->inputs->pdata[0]);
          NodeInfo *ci = info_of (side, conv);
          GraftNode *other = conv ? partner (al, s, conv) : NULL;
          if (ci == NULL || other == NULL || strcmp (ci->family->family, "conv") != 0)
            continue;
          g_autoptr(GPtrArray) next = consumers_of (&al->sides[1 - s], other);
          gboolean has_bn = FALSE;
          for (guint k = 0; k < next->len; k++)
            has_bn |= strcmp (((NodeInfo *) next->pdata[k])->family->family, "batchnorm") == 0;
          if (has_bn)
            continue;
          GraftAlignmentNote *note = add_note (al, GRAFT_NOTE_FOLDED, s, x->node, other);
          absorb (al, s, note, x->node);
          g_autofree char *w = where (x->node);
          note->description = g_strdup_printf ("%s is folded into %s's %s", w, side_name (al, 1 - s), other->op);
          /* Let propagation continue past the folded pair. */
          guint index = GPOINTER_TO_UINT (g_hash_table_lookup (s == 0 ? al->result->pair_of_a : al->result->pair_of_b, conv));
          g_queue_push_tail (&al->worklist, GUINT_TO_POINTER (index));
        }
    }
}

/* Every consumer of p's outputs is in set. */
static gboolean
feeds_only (GraftNode *p, GHashTable *set)
{
  for (guint j = 0; j < p->outputs->len; j++)
    {
      GraftValue *v = p->outputs->pdata[j];
      for (guint k = 0; v && k < v->consumers->len; k++)
        if (!g_hash_table_contains (set, v->consumers->pdata[k]))
          return FALSE;
    }
  return TRUE;
}

static void
absorb_feeders (Aligner *al, guint s, GraftAlignmentNote *note, GraftNode *node, GHashTable *set, guint depth)
{
  if (depth > 24)
    return;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *v = node->inputs->pdata[i];
      GraftNode *p = v ? v->producer : NULL;
      if (p == NULL || g_hash_table_contains (set, p) || matched (al, s, p) ||
          g_hash_table_contains (al->sides[s].explained, p) || !feeds_only (p, set))
        continue;
      g_hash_table_add (set, p);
      if (alignable (info_of (&al->sides[s], p)))
        absorb (al, s, note, p);
      absorb_feeders (al, s, note, p, set, depth + 1);
    }
}

/* The unmatched nodes that exist only to feed node (the abs and max
 * before an .item(), the sum behind an If's condition): those whose every
 * consumer is node or another of them. */
static void
absorb_upstream (Aligner *al, guint s, GraftAlignmentNote *note, GraftNode *node, guint depth)
{
  g_autoptr(GHashTable) set = g_hash_table_new (g_direct_hash, g_direct_equal);
  g_hash_table_add (set, node);
  absorb_feeders (al, s, note, node, set, depth);
}

static gboolean
branch_raises (GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (strcmp (node->op, "prim::RaiseException") == 0)
        return TRUE;
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
      for (guint k = 0; subs && k < subs->len; k++)
        if (branch_raises (subs->pdata[k]))
          return TRUE;
    }
  return FALSE;
}

/* Top-level Ifs on sizes and flags (not on data) that can raise: the
 * checks scripting keeps (BatchNorm's "expected 4D input"). A branch the
 * module's own attributes rule out never raises (every BatchNorm's `if
 * self.training: _verify_batch_size` saved in eval mode): not a check, as
 * lint's control-flow notes leave it out too. */
static GPtrArray *
runtime_checks (Side *side)
{
  GPtrArray *list = g_ptr_array_new ();
  for (guint i = 0; i < side->nodes->len; i++)
    {
      NodeInfo *c = side->nodes->pdata[i];
      if (c->container || alignable (c) || c->family->role != GRAFT_OP_ROLE_CONTROL)
        continue;
      g_autoptr(GPtrArray) subs = graft_node_get_live_subgraphs (c->node);
      for (guint k = 0; subs && k < subs->len; k++)
        if (branch_raises (subs->pdata[k]))
          {
            g_ptr_array_add (list, c->node);
            break;
          }
    }
  return list;
}

/* Checks only one side keeps; the other side's own checks are not
 * paired (they never change results). */
static void
find_runtime_checks (Aligner *al)
{
  g_autoptr(GPtrArray) checks_a = runtime_checks (&al->sides[0]);
  g_autoptr(GPtrArray) checks_b = runtime_checks (&al->sides[1]);
  if (checks_a->len == checks_b->len)
    return;
  guint s = checks_a->len > checks_b->len ? 0 : 1;
  GPtrArray *mine = s == 0 ? checks_a : checks_b;
  for (guint i = 0; i < mine->len; i++)
    {
      GraftNode *node = mine->pdata[i];
      GraftAlignmentNote *note = add_note (al, GRAFT_NOTE_RUNTIME_CHECK, s, node, NULL);
      g_autofree char *w = where (node);
      note->description = g_strdup_printf ("%s keeps a runtime check (%s, raising on bad input) that %s does not have",
                                           side_name (al, s), w, side_name (al, 1 - s));
    }
}

static void
count_branch (Aligner *al, guint s, GraftGraph *graph, guint *alignable_nodes, guint *matched_nodes)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (alignable (info_of (&al->sides[s], node)))
        {
          (*alignable_nodes)++;
          *matched_nodes += matched (al, s, node);
        }
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
      for (guint k = 0; subs && k < subs->len; k++)
        count_branch (al, s, subs->pdata[k], alignable_nodes, matched_nodes);
    }
}

static void
absorb_branch (Aligner *al, guint s, GraftAlignmentNote *note, GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (alignable (info_of (&al->sides[s], node)))
        absorb (al, s, note, node);
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
      for (guint k = 0; subs && k < subs->len; k++)
        absorb_branch (al, s, note, subs->pdata[k]);
    }
}

/* The other side's value that holds what value (of side s) holds. */
static GraftValue *
counterpart_value (Aligner *al, guint s, GraftValue *value)
{
  if (value == NULL)
    return NULL;
  if (s == 0)
    {
      GraftValue *b = g_hash_table_lookup (al->value_of_a, value);
      if (b)
        return b;
    }
  else
    for (guint i = 0; i < al->result->value_pairs->len; i++)
      if (g_array_index (al->result->value_pairs, GraftValuePair, i).b == value)
        return g_array_index (al->result->value_pairs, GraftValuePair, i).a;
  GraftNode *p = real_producer (&al->sides[s], value);
  GraftNode *other = p ? partner (al, s, p) : NULL;
  if (other == NULL || other->outputs->len == 0)
    return NULL;
  return other->outputs->pdata[MIN (value->producer_index, other->outputs->len - 1)];
}

static void
pair_across (Aligner *al, guint s, GraftValue *mine, GraftValue *theirs)
{
  if (s == 0)
    add_value_pair (al, mine, theirs);
  else
    add_value_pair (al, theirs, mine);
}

/* An aligned node of role on side s that nothing matched or explained yet. */
static gboolean
unexplained (Aligner *al, guint s, NodeInfo *info, GraftOpRole role)
{
  return alignable (info) && info->family->role == role && !matched (al, s, info->node) &&
         !g_hash_table_contains (al->sides[s].explained, info->node);
}

/* The partners of nodes (NodeInfo* of side s) into out; FALSE when one
 * has none (or nodes is empty). */
static gboolean
partners_of_all (Aligner *al, guint s, GPtrArray *nodes, GPtrArray *out)
{
  for (guint k = 0; k < nodes->len; k++)
    {
      GraftNode *p = partner (al, s, ((NodeInfo *) nodes->pdata[k])->node);
      if (p == NULL)
        return FALSE;
      g_ptr_array_add (out, p);
    }
  return nodes->len > 0;
}

/* The node of branch, not in used, that the other side's node y would
 * pair with: same module and family. */
static NodeInfo *
branch_node_for (Aligner *al, guint s, GraftGraph *branch, NodeInfo *y, GHashTable *used)
{
  for (guint i = 0; i < branch->nodes->len; i++)
    {
      NodeInfo *x = info_of (&al->sides[s], branch->nodes->pdata[i]);
      if (alignable (x) && !g_hash_table_contains (used, x) && compatible (x, y) &&
          strcmp (group_path (x->node), group_path (y->node)) == 0)
        return x;
    }
  return NULL;
}

/* Both branches often call the same modules (`x + self.conv(x)` or
 * `self.conv(x)`), so the weights pair the other side's nodes with either.
 * The taken branch is the one that holds them all with the fewest nodes
 * left over; the pairs then move into it. Returns it, or G_MAXUINT. */
static guint
choose_taken_branch (Aligner *al, guint s, GPtrArray *subs)
{
  g_autoptr(GArray) inside = g_array_new (FALSE, FALSE, sizeof (guint));   /* pair indices */
  for (guint k = 0; k < subs->len; k++)
    {
      GraftGraph *branch = subs->pdata[k];
      for (guint i = 0; i < branch->nodes->len; i++)
        {
          GHashTable *map = s == 0 ? al->result->pair_of_a : al->result->pair_of_b;
          guint index = GPOINTER_TO_UINT (g_hash_table_lookup (map, branch->nodes->pdata[i]));
          if (index)
            g_array_append_val (inside, index);
        }
    }
  if (inside->len == 0)
    return G_MAXUINT;
  guint taken = G_MAXUINT;
  gint best = G_MININT;
  for (guint k = 0; k < subs->len; k++)
    {
      g_autoptr(GHashTable) used = g_hash_table_new (g_direct_hash, g_direct_equal);
      guint n = 0, m = 0;
      count_branch (al, s, subs->pdata[k], &n, &m);
      gint held = 0;
      for (guint i = 0; i < inside->len; i++)
        {
          GraftNodePair *pair = &g_array_index (al->result->node_pairs, GraftNodePair, g_array_index (inside, guint, i) - 1);
          NodeInfo *y = info_of (&al->sides[1 - s], s == 0 ? pair->b : pair->a);
          NodeInfo *x = y ? branch_node_for (al, s, subs->pdata[k], y, used) : NULL;
          if (x)
            g_hash_table_add (used, x), held++;
        }
      gint score = 2 * held - (gint) n;
      if (score > best)
        best = score, taken = k;
    }
  /* move the pairs into the taken branch */
  g_autoptr(GHashTable) used = g_hash_table_new (g_direct_hash, g_direct_equal);
  GHashTable *map = s == 0 ? al->result->pair_of_a : al->result->pair_of_b;
  for (guint i = 0; i < inside->len; i++)
    {
      guint index = g_array_index (inside, guint, i);
      GraftNodePair *pair = &g_array_index (al->result->node_pairs, GraftNodePair, index - 1);
      GraftNode **mine = s == 0 ? &pair->a : &pair->b;
      NodeInfo *y = info_of (&al->sides[1 - s], s == 0 ? pair->b : pair->a);
      if ((*mine)->graph == subs->pdata[taken])
        {
          g_hash_table_add (used, info_of (&al->sides[s], *mine));
          continue;
        }
      NodeInfo *x = y ? branch_node_for (al, s, subs->pdata[taken], y, used) : NULL;
      if (x == NULL || g_hash_table_contains (map, x->node))
        continue;
      g_hash_table_add (used, x);
      if (GPOINTER_TO_UINT (g_hash_table_lookup (map, *mine)) == index)
        g_hash_table_remove (map, *mine);
      *mine = x->node;
      g_hash_table_insert (map, x->node, GUINT_TO_POINTER (index));
    }
  return taken;
}

static void
note_if (Aligner *al, guint s, NodeInfo *c, GPtrArray *subs)
{
  guint n_branches = subs->len, taken = choose_taken_branch (al, s, subs), total = 0;
  gboolean raises[2] = { FALSE, FALSE };
  guint counts[2] = { 0, 0 };
  for (guint k = 0; k < n_branches && k < 2; k++)
    {
      guint n = 0, m = 0;
      count_branch (al, s, subs->pdata[k], &n, &m);
      counts[k] = n;
      raises[k] = branch_raises (subs->pdata[k]);
      total += m;
    }
  /* nothing matched inside: the other side took a branch that computes
   * nothing (`if is_batched: x = x.unsqueeze(1)` traced with a batch) */
  /* what it feeds is matched, or explained by another note */
  g_autoptr(GPtrArray) consumers = consumers_of (&al->sides[s], c->node);
  gboolean placed = consumers->len > 0;
  for (guint k = 0; k < consumers->len; k++)
    {
      GraftNode *next = ((NodeInfo *) consumers->pdata[k])->node;
      placed &= matched (al, s, next) || g_hash_table_contains (al->sides[s].explained, next);
    }
  for (guint k = 0; placed && taken == G_MAXUINT && k < n_branches && k < 2; k++)
    if (counts[k] == 0 && !raises[k] && counts[1 - k] > 0)
      taken = k;
  g_autofree char *w = where (c->node);
  GraftAlignmentNote *note;
  /* a check: one branch raises, and neither computes anything */
  if (n_branches == 2 && (raises[0] || raises[1]) && counts[0] == 0 && counts[1] == 0)
    {
      note = add_note (al, GRAFT_NOTE_RUNTIME_CHECK, s, c->node, NULL);
      note->description = g_strdup_printf ("%s keeps a runtime check (%s raising an exception) that %s does not have",
                                           side_name (al, s), w, side_name (al, 1 - s));
    }
  else if (taken != G_MAXUINT)
    {
      note = add_note (al, GRAFT_NOTE_FLATTENED_IF, s, c->node, NULL);
      note->description = g_strdup_printf ("%s keeps the control flow %s; %s has only its %s branch (%u node%s matched)",
                                           side_name (al, s), w, side_name (al, 1 - s),
                                           taken == 0 ? "then" : "else", total, total == 1 ? "" : "s");
      GraftGraph *branch = subs->pdata[taken];
      for (guint j = 0; j < c->node->outputs->len && j < branch->outputs->len; j++)
        pair_across (al, s, c->node->outputs->pdata[j], counterpart_value (al, s, branch->outputs->pdata[j]));
    }
  else
    return;
  absorb (al, s, note, c->node);
  for (guint k = 0; k < n_branches; k++)
    if (k != taken)
      absorb_branch (al, s, note, subs->pdata[k]);
  absorb_upstream (al, s, note, c->node, 0);
}

/* A Loop on side s whose body nodes appear k times, unmatched, on the
 * other side: pair each copy with its body node. */
static void
note_loop (Aligner *al, guint s, NodeInfo *c, GraftGraph *body)
{
  g_autoptr(GPtrArray) unit = g_ptr_array_new ();
  for (guint i = 0; i < body->nodes->len; i++)
    {
      NodeInfo *u = info_of (&al->sides[s], body->nodes->pdata[i]);
      if (alignable (u) && !matched (al, s, u->node))
        g_ptr_array_add (unit, u);
    }
  if (unit->len == 0)
    return;
  Side *other = &al->sides[1 - s];
  g_autoptr(GPtrArray) copies = g_ptr_array_new ();
  for (guint i = 0; i < other->nodes->len; i++)
    {
      NodeInfo *y = other->nodes->pdata[i];
      if (!alignable (y) || matched (al, 1 - s, y->node) || g_hash_table_contains (other->explained, y->node) ||
          strcmp (group_path (y->node), group_path (c->node)) != 0)
        continue;
      for (guint k = 0; k < unit->len; k++)
        if (same_family (unit->pdata[k], y))
          {
            g_ptr_array_add (copies, y);
            break;
          }
    }
  /* Walk the copies in order, taking the next body node each time the
   * family fits: every full turn of the body is one iteration. */
  guint position = 0, iterations = 0;
  g_autoptr(GPtrArray) assigned = g_ptr_array_new ();   /* (copy, body node) */
  for (guint i = 0; i < copies->len; i++)
    {
      NodeInfo *y = copies->pdata[i];
      NodeInfo *u = unit->pdata[position];
      if (!same_family (u, y))
        continue;
      g_ptr_array_add (assigned, y);
      g_ptr_array_add (assigned, u);
      if (++position == unit->len)
        position = 0, iterations++;
    }
  if (iterations == 0)
    return;
  guint keep = iterations * unit->len * 2;
  g_autoptr(GHashTable) last = g_hash_table_new (g_direct_hash, g_direct_equal); /* body node → last copy */
  for (guint i = 0; i < keep; i += 2)
    {
      NodeInfo *y = assigned->pdata[i], *u = assigned->pdata[i + 1];
      if (s == 0)
        add_pair (al, u->node, y->node, GRAFT_MATCH_INFERRED, "unrolled loop iteration", FALSE);
      else
        add_pair (al, y->node, u->node, GRAFT_MATCH_INFERRED, "unrolled loop iteration", FALSE);
      g_hash_table_insert (last, u->node, y->node);
    }
  GraftAlignmentNote *note = add_note (al, GRAFT_NOTE_UNROLLED_LOOP, s, c->node, NULL);
  g_autofree char *w = where (c->node);
  note->description = g_strdup_printf ("%s keeps the loop %s; %s unrolled it %u time%s",
                                       side_name (al, s), w, side_name (al, 1 - s), iterations,
                                       iterations == 1 ? "" : "s");
  absorb (al, s, note, c->node);
  absorb_upstream (al, s, note, c->node, 0);
  /* Loop output j is body output j + 1 (after the condition) of the last iteration. */
  for (guint j = 0; j < c->node->outputs->len && j + 1 < body->outputs->len; j++)
    {
      GraftValue *bv = body->outputs->pdata[j + 1];
      GraftNode *copy = bv && bv->producer ? g_hash_table_lookup (last, bv->producer) : NULL;
      if (copy && copy->outputs->len > bv->producer_index)
        pair_across (al, s, c->node->outputs->pdata[j], copy->outputs->pdata[bv->producer_index]);
    }
}

static void
find_control_flow_once (Aligner *al)
{
  for (guint s = 0; s < 2; s++)
    {
      Side *side = &al->sides[s];
      for (guint i = 0; i < side->nodes->len; i++)
        {
          NodeInfo *c = side->nodes->pdata[i];
          if (!unexplained (al, s, c, GRAFT_OP_ROLE_CONTROL))
            continue;
          g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (c->node);
          if (subs == NULL || subs->len == 0)
            continue;
          if (strcmp (c->node->op_type, "If") == 0)
            note_if (al, s, c, subs);
          else if (strcmp (c->node->op_type, "Loop") == 0)
            note_loop (al, s, c, subs->pdata[0]);
        }
    }
}

/* Again while notes appear: an If feeding a flattened one is placed by it. */
static void
find_control_flow (Aligner *al)
{
  for (guint pass = 0; pass < 4; pass++)
    {
      guint before = al->result->notes->len;
      find_control_flow_once (al);
      if (al->result->notes->len == before)
        break;
    }
}

/* Number-reading ops (aten::size, aten::item, onnx::Shape) that a node's
 * non-data inputs come from, within a few glue steps. */
static void
find_readings (Side *side, GraftNode *node, GPtrArray *found, guint depth)
{
  if (depth > 10)
    return;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *v = node->inputs->pdata[i];
      if (v == NULL || v->producer == NULL || (depth == 0 && is_data_input (side, v)))
        continue;
      NodeInfo *p = info_of (side, v->producer);
      if (p == NULL || (p->family->role != GRAFT_OP_ROLE_GLUE && !(depth > 0 && !p->data)))
        continue;
      if (p->family->reads_number && strcmp (p->family->family, "property") != 0 && !g_ptr_array_find (found, p, NULL))
        g_ptr_array_add (found, p);
      find_readings (side, v->producer, found, depth + 1);
    }
}

/* What the baking side has where the reading side computes: its literal
 * attributes and small constant inputs ("arg1 = [2, -1]"). */
static char *
describe_literals (GraftNode *node)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attr = node->attributes->pdata[i];
      if (attr->type != GRAFT_ATTR_INTS && attr->type != GRAFT_ATTR_INT && attr->type != GRAFT_ATTR_FLOAT &&
          attr->type != GRAFT_ATTR_TENSOR)
        continue;
      g_autofree char *value = graft_attribute_format_value (attr, 8);
      g_string_append_printf (s, "%s%s = %s", s->len ? ", " : "", attr->name, value);
    }
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *v = node->inputs->pdata[i];
      GraftTensor *t = v ? v->initializer : NULL;
      if (t == NULL || graft_tensor_get_numel (t) > 8 || graft_tensor_get_numel (t) < 0)
        continue;
      g_string_append_printf (s, "%s%s = [", s->len ? ", " : "", v->name);
      for (gint64 k = 0; k < graft_tensor_get_numel (t); k++)
        g_string_append_printf (s, "%s%g", k ? ", " : "", graft_tensor_get_element_as_double (t, k));
      g_string_append_c (s, ']');
    }
  if (s->len == 0)
    g_string_append (s, "a literal");
  return g_string_free (s, FALSE);
}

static void
find_baked (Aligner *al)
{
  guint n = al->result->node_pairs->len;
  for (guint i = 0; i < n; i++)
    {
      GraftNodePair pair = g_array_index (al->result->node_pairs, GraftNodePair, i);
      if (strcmp (pair.reason, "unrolled loop iteration") == 0)
        continue;
      g_autoptr(GPtrArray) ra = g_ptr_array_new ();
      g_autoptr(GPtrArray) rb = g_ptr_array_new ();
      find_readings (&al->sides[0], pair.a, ra, 0);
      find_readings (&al->sides[1], pair.b, rb, 0);
      if ((ra->len > 0) == (rb->len > 0))
        continue;
      guint s = ra->len > 0 ? 0 : 1;
      GPtrArray *readings = s == 0 ? ra : rb;
      GraftNode *mine = s == 0 ? pair.a : pair.b, *theirs = s == 0 ? pair.b : pair.a;
      gboolean item = FALSE, size = FALSE;
      for (guint k = 0; k < readings->len; k++)
        {
          const char *family = ((NodeInfo *) readings->pdata[k])->family->family;
          item |= strcmp (family, "item") == 0;
          size |= strcmp (family, "size") == 0;
        }
      GraftNoteKind kind = !item && size ? GRAFT_NOTE_BAKED_SHAPE : GRAFT_NOTE_BAKED_NUMBER;
      GraftAlignmentNote *note = add_note (al, kind, s, mine, theirs);
      g_autofree char *w = where (mine);
      g_autofree char *literal = describe_literals (theirs);
      GString *ops = g_string_new (NULL);
      for (guint k = 0; k < readings->len; k++)
        {
          GraftNode *r = ((NodeInfo *) readings->pdata[k])->node;
          if (!strstr (ops->str, r->op))
            g_string_append_printf (ops, "%s%s", ops->len ? ", " : "", r->op);
        }
      note->description = g_strdup_printf ("%s: %s computes an argument at run time (%s) where %s has baked %s",
                                           w, side_name (al, s), ops->str, side_name (al, 1 - s), literal);
      g_string_free (ops, TRUE);
      for (guint k = 0; k < readings->len; k++)
        absorb_upstream (al, s, note, ((NodeInfo *) readings->pdata[k])->node, 0);
    }
}

/* Nodes of side s reachable from start along edges (forward: to
 * consumers; else to producers) without passing a matched or explained
 * node; at most limit of them. */
static GHashTable *
unmatched_region (Aligner *al, guint s, GPtrArray *start, gboolean forward, guint limit)
{
  GHashTable *seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  GQueue queue = G_QUEUE_INIT;
  for (guint i = 0; i < start->len; i++)
    g_queue_push_tail (&queue, start->pdata[i]);
  GraftNode *node;
  while ((node = g_queue_pop_head (&queue)) != NULL && g_hash_table_size (seen) < limit)
    {
      GPtrArray *values = forward ? node->outputs : node->inputs;
      for (guint j = 0; j < values->len; j++)
        {
          GraftValue *v = values->pdata[j];
          if (v == NULL)
            continue;
          guint n = forward ? v->consumers->len : (v->producer ? 1 : 0);
          for (guint k = 0; k < n; k++)
            {
              GraftNode *next = forward ? v->consumers->pdata[k] : v->producer;
              if (g_hash_table_contains (seen, next) || matched (al, s, next) ||
                  g_hash_table_contains (al->sides[s].explained, next) || info_of (&al->sides[s], next) == NULL)
                continue;
              g_hash_table_add (seen, next);
              g_queue_push_tail (&queue, next);
            }
        }
    }
  g_queue_clear (&queue);
  return seen;
}

/* An unmatched op whose producers and consumers all match, where the
 * other side has only unmatched ops between their partners: one fused op
 * against its decomposition (an exporter's attention, GELU, LayerNorm). */
static void
find_decomposed (Aligner *al)
{
  for (guint s = 0; s < 2; s++)
    {
      Side *side = &al->sides[s];
      for (guint i = 0; i < side->nodes->len; i++)
        {
          NodeInfo *x = side->nodes->pdata[i];
          if (!unexplained (al, s, x, GRAFT_OP_ROLE_COMPUTE))
            continue;
          g_autoptr(GPtrArray) producers = producers_of (side, x->node);
          g_autoptr(GPtrArray) consumers = consumers_of (side, x->node);
          g_autoptr(GPtrArray) starts = g_ptr_array_new ();
          g_autoptr(GPtrArray) ends = g_ptr_array_new ();
          if (!partners_of_all (al, s, producers, starts) || !partners_of_all (al, s, consumers, ends))
            continue;
          g_autoptr(GHashTable) after = unmatched_region (al, 1 - s, starts, TRUE, 4096);
          g_autoptr(GHashTable) before = unmatched_region (al, 1 - s, ends, FALSE, 4096);
          g_autoptr(GPtrArray) between = g_ptr_array_new ();
          guint computing = 0;
          Side *other = &al->sides[1 - s];
          for (guint k = 0; k < other->nodes->len; k++)
            {
              NodeInfo *y = other->nodes->pdata[k];
              if (g_hash_table_contains (after, y->node) && g_hash_table_contains (before, y->node))
                {
                  g_ptr_array_add (between, y->node);
                  computing += alignable (y);
                }
            }
          if (computing < 2)
            continue;
          GraftAlignmentNote *note = add_note (al, GRAFT_NOTE_DECOMPOSED, s, x->node, NULL);
          absorb (al, s, note, x->node);
          for (guint k = 0; k < between->len; k++)
            if (!g_hash_table_contains (other->explained, between->pdata[k]))
              {
                g_hash_table_add (other->explained, between->pdata[k]);
                g_ptr_array_add (note->absorbed_other, between->pdata[k]);
              }
          g_autofree char *w = where (x->node);
          note->description = g_strdup_printf ("%s of %s is %u ops in %s", w, side_name (al, s), computing,
                                               side_name (al, 1 - s));
          /* its output holds what the last op before the partner consumer computes */
          GraftNode *end = ends->pdata[0];
          for (guint j = 0; j < end->inputs->len && x->node->outputs->len > 0; j++)
            {
              GraftValue *v = end->inputs->pdata[j];
              if (v && v->producer && g_hash_table_contains (after, v->producer))
                {
                  pair_across (al, s, x->node->outputs->pdata[0], v);
                  break;
                }
            }
        }
    }
}

/* Replaces the value A's value a is paired with (or adds the pair). */
static void
repair_value (Aligner *al, GraftValue *a, GraftValue *b)
{
  for (guint i = 0; i < al->result->value_pairs->len; i++)
    {
      GraftValuePair *vp = &g_array_index (al->result->value_pairs, GraftValuePair, i);
      if (vp->a == a)
        {
          vp->b = b;
          g_hash_table_insert (al->value_of_a, a, b);
          return;
        }
    }
  add_value_pair (al, a, b);
}

/* Pairs B's value b with a instead of what it was paired with. */
static void
repair_b_value (Aligner *al, GraftValue *b, GraftValue *a)
{
  for (guint i = 0; i < al->result->value_pairs->len; i++)
    {
      GraftValuePair *vp = &g_array_index (al->result->value_pairs, GraftValuePair, i);
      if (vp->b == b)
        {
          g_hash_table_remove (al->value_of_a, vp->a);
          vp->a = a;
          g_hash_table_insert (al->value_of_a, a, b);
          return;
        }
    }
  add_value_pair (al, a, b);
}

/* A matched op whose partner is followed by unmatched ops before the
 * partners of its consumers: the other side split it (aten::linear as
 * MatMul, then Add of the bias). Its output is the last of them. */
static void
find_split (Aligner *al)
{
  guint n = al->result->node_pairs->len;
  for (guint i = 0; i < n; i++)
    {
      GraftNodePair pair = g_array_index (al->result->node_pairs, GraftNodePair, i);
      for (guint s = 0; s < 2; s++)
        {
          GraftNode *x = s == 0 ? pair.a : pair.b, *y = s == 0 ? pair.b : pair.a;
          g_autoptr(GPtrArray) consumers = consumers_of (&al->sides[s], x);
          g_autoptr(GPtrArray) ends = g_ptr_array_new ();
          if (x->outputs->len != 1 || !partners_of_all (al, s, consumers, ends))
            continue;
          g_autoptr(GPtrArray) start = g_ptr_array_new ();
          g_ptr_array_add (start, y);
          g_autoptr(GHashTable) after = unmatched_region (al, 1 - s, start, TRUE, 64);
          g_autoptr(GHashTable) before = unmatched_region (al, 1 - s, ends, FALSE, 64);
          g_autoptr(GPtrArray) between = g_ptr_array_new ();
          Side *other = &al->sides[1 - s];
          for (guint k = 0; k < other->nodes->len; k++)
            {
              NodeInfo *z = other->nodes->pdata[k];
              if (alignable (z) && g_hash_table_contains (after, z->node) && g_hash_table_contains (before, z->node))
                g_ptr_array_add (between, z->node);
            }
          if (between->len == 0 || between->len > 4)
            continue;
          GraftAlignmentNote *note = add_note (al, GRAFT_NOTE_DECOMPOSED, s, x, y);
          for (guint k = 0; k < between->len; k++)
            {
              g_hash_table_add (other->explained, between->pdata[k]);
              g_ptr_array_add (note->absorbed_other, between->pdata[k]);
            }
          g_autofree char *w = where (x);
          note->description = g_strdup_printf ("%s of %s is %s and %u more op%s in %s", w, side_name (al, s), y->op,
                                               between->len, between->len == 1 ? "" : "s", side_name (al, 1 - s));
          GraftNode *last = between->pdata[between->len - 1];
          if (last->outputs->len > 0 && last->outputs->pdata[0])
            {
              if (s == 0)
                repair_value (al, x->outputs->pdata[0], last->outputs->pdata[0]);
              else
                repair_b_value (al, x->outputs->pdata[0], last->outputs->pdata[0]);
            }
        }
    }
}

/* ------------------------------------------------------------------ */

static void
pair_values (Aligner *al)
{
  g_autoptr(GHashTable) folded_convs = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < al->result->notes->len; i++)
    {
      GraftAlignmentNote *note = al->result->notes->pdata[i];
      if (note->kind != GRAFT_NOTE_FOLDED)
        continue;
      g_hash_table_add (folded_convs, note->other);
      guint s = note->in_a ? 0 : 1;
      pair_across (al, s, note->node->outputs->pdata[0], note->other->outputs->pdata[0]);
    }
  for (guint i = 0; i < al->result->node_pairs->len; i++)
    {
      GraftNodePair *pair = &g_array_index (al->result->node_pairs, GraftNodePair, i);
      if (g_hash_table_contains (folded_convs, pair->a) || g_hash_table_contains (folded_convs, pair->b) ||
          info_of (&al->sides[0], pair->a)->family->role == GRAFT_OP_ROLE_CONTROL)
        continue;
      pair_outputs (al, pair->a, pair->b);
    }
}

static void
finish (Aligner *al)
{
  GraftAlignment *r = al->result;
  for (guint s = 0; s < 2; s++)
    {
      Side *side = &al->sides[s];
      guint total = 0, done = 0;
      GPtrArray *only = s == 0 ? r->only_a : r->only_b;
      for (guint i = 0; i < side->nodes->len; i++)
        {
          NodeInfo *info = side->nodes->pdata[i];
          if (!alignable (info))
            continue;
          total++;
          if (matched (al, s, info->node) || g_hash_table_contains (side->explained, info->node))
            done++;
          else
            g_ptr_array_add (only, info->node);
        }
      if (s == 0)
        r->n_compute_a = total, r->n_matched_a = done;
      else
        r->n_compute_b = total, r->n_matched_b = done;
    }
}

static void
note_free (GraftAlignmentNote *note)
{
  g_ptr_array_unref (note->absorbed);
  g_ptr_array_unref (note->absorbed_other);
  g_free (note->description);
  g_free (note);
}

GraftAlignment *
graft_alignment_new (GraftModel *a, GraftModel *b, GError **error)
{
  for (guint s = 0; s < 2; s++)
    {
      GraftModel *m = s == 0 ? a : b;
      if (graft_model_get_graph (m) == NULL || graft_model_get_format (m) == GRAFT_MODEL_FORMAT_STATE_DICT)
        {
          const char *path = graft_model_get_path (m);
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                       "%s has no graph to compare (it holds weights only)", path ? path : "the model");
          return NULL;
        }
    }
  GraftAlignment *r = g_new0 (GraftAlignment, 1);
  r->a = g_object_ref (a);
  r->b = g_object_ref (b);
  r->node_pairs = g_array_new (FALSE, FALSE, sizeof (GraftNodePair));
  r->value_pairs = g_array_new (FALSE, FALSE, sizeof (GraftValuePair));
  r->only_a = g_ptr_array_new ();
  r->only_b = g_ptr_array_new ();
  r->notes = g_ptr_array_new_with_free_func ((GDestroyNotify) note_free);
  r->pair_of_a = g_hash_table_new (g_direct_hash, g_direct_equal);
  r->pair_of_b = g_hash_table_new (g_direct_hash, g_direct_equal);

  Aligner al = { r };
  al.value_of_a = g_hash_table_new (g_direct_hash, g_direct_equal);
  g_queue_init (&al.worklist);
  side_init (&al.sides[0], a);
  side_init (&al.sides[1], b);
  for (guint s = 0; s < 2; s++)
    {
      const char *path = graft_model_get_path (s == 0 ? a : b);
      al.names[s] = path ? g_path_get_basename (path) : g_strdup (s == 0 ? "A" : "B");
    }

  anchor_inputs_outputs (&al);
  anchor_weights (&al);
  anchor_module_paths (&al);
  find_folded (&al);
  propagate (&al);
  find_folded (&al);
  propagate (&al);
  pair_values (&al);
  find_control_flow (&al);
  find_runtime_checks (&al);
  find_baked (&al);
  find_decomposed (&al);
  find_split (&al);
  finish (&al);

  g_queue_clear (&al.worklist);
  g_hash_table_unref (al.value_of_a);
  side_clear (&al.sides[0]);
  side_clear (&al.sides[1]);
  g_free (al.names[0]);
  g_free (al.names[1]);
  return r;
}

void
graft_alignment_free (GraftAlignment *self)
{
  if (self == NULL)
    return;
  g_object_unref (self->a);
  g_object_unref (self->b);
  g_array_unref (self->node_pairs);
  g_array_unref (self->value_pairs);
  g_ptr_array_unref (self->only_a);
  g_ptr_array_unref (self->only_b);
  g_ptr_array_unref (self->notes);
  g_hash_table_unref (self->pair_of_a);
  g_hash_table_unref (self->pair_of_b);
  g_free (self);
}

const GraftNodePair *
graft_alignment_lookup (GraftAlignment *self, GraftNode *node, gboolean from_a)
{
  guint index = GPOINTER_TO_UINT (g_hash_table_lookup (from_a ? self->pair_of_a : self->pair_of_b, node));
  return index ? &g_array_index (self->node_pairs, GraftNodePair, index - 1) : NULL;
}

const char *
graft_note_kind_to_string (GraftNoteKind kind)
{
  static const char *const names[] = {
    "flattened-if", "unrolled-loop", "runtime-check", "baked-shape", "baked-number", "folded", "decomposed",
  };
  return kind < G_N_ELEMENTS (names) ? names[kind] : "unknown";
}
