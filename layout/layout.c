#include "layout/layout.h"

#include <string.h>
#include "ir/fixed-branch.h"
#include "layout/labels.h"
#include "layout/label-pool.h"
#include "layout/attribute-fold.h"
#include "layout/shared-values.h"
#include "layout/text.h"

/* Geometry, in points. */
#define NODE_MAX_WIDTH 260.0
#define GROUP_PAD 10.0
#define GROUP_HEADER 22.0
#define NODE_SEPARATION 14.0
#define RANK_SEPARATION 22.0
#define RANK_SEPARATION_SHAPES 30.0
#define MAX_LR_RANK_SEPARATION 160.0
#define PORT_SIZE 1.0
#define INLINE_MARK_ROOM 14.0

typedef struct _LGroup LGroup;

/* Besides the module groups of the graph's tree, a node with subgraphs
 * (If, Loop, Scan, prim::If, prim::Loop) gets a CONTROL group holding it
 * and one BODY group per subgraph holding the subgraph's nodes, so that
 * its bodies open in place as clusters. Collapsed, a CONTROL group shows
 * as the plain node; expanded, as a cluster with the node on top and its
 * bodies below, the values leaving through the node's outputs. */
typedef enum {
  LGROUP_MODULE,
  LGROUP_CONTROL,
  LGROUP_BODY,
} LGroupKind;

struct _LGroup {
  guint id;
  GraftGroup *group;   /* deepest group of a merged chain */
  char *title;
  LGroup *parent;
  GPtrArray *children; /* LGroup*, not owned */
  GPtrArray *nodes;    /* GraftNode*, not owned */
  guint total_nodes;
  guint depth;
  LGroupKind kind;
  GraftNode *control;  /* CONTROL and BODY: the node with the subgraphs */
  GraftGraph *body;    /* BODY: the subgraph */
  gboolean dead;       /* BODY: a branch that never runs (graft_if_get_fixed_branch()), or inside one */
};

typedef enum {
  ITEM_NODE,
  ITEM_GROUP,
  ITEM_INPUT,
  ITEM_OUTPUT,
  ITEM_IN_PORT,
  ITEM_OUT_PORT,
} ItemKind;

typedef struct {
  ItemKind kind;
  gpointer ref;        /* GraftNode*, LGroup* or GraftValue* */
  double cx, cy, width, height;
  char **lines;        /* borrowed from the layout's label pool */
  GraftOpCategory category;
  gboolean expanded;
} Item;

typedef struct {
  guint src, dst;
  GraftValue *value;
  GraftPoint *points;  /* in its GroupLayout's points */
  guint n_points;
  gboolean has_arrow;
  GraftPoint tip;
  gboolean labelled;
} Edge;

/* The layout of one expanded group's contents, cached. */
typedef struct {
  gint ref_count;
  double width, height;
  GArray *items;         /* Item */
  GArray *edges;         /* Edge */
  GArray *points;        /* GraftPoint: every edge's, one after the other */
  GHashTable *in_ports;  /* GraftValue* → item index + 1 */
  GHashTable *out_ports; /* GraftValue* → item index + 1 */
} GroupLayout;

typedef struct {
  LGroup *group;
  guint64 signature;
} CacheKey;

struct _GraftLayout {
  GObject parent_instance;

  GraftGraph *graph;
  GraftModel *model;       /* borrowed, for dim ranges; may be NULL */
  LGroup *root;
  GPtrArray *groups;       /* LGroup*, owned, by id; parents before children */
  GPtrArray *chunk_groups; /* GraftGroup*, owned: groups made up for big flat levels */
  GHashTable *group_map;   /* GraftGroup* → LGroup* */
  GHashTable *node_groups; /* GraftNode* → LGroup* */
  GHashTable *drawn_totals; /* GraftGroup* → its nodes drawn as boxes, with its descendants' */
  GraftSharedValues *shared; /* constants read far apart, drawn at each reader */
  GraftLabelPool *labels;  /* every box's lines and edge's label, shared with the scenes */

  GMutex lock;             /* guards everything below */
  gboolean *expanded;      /* by LGroup id */
  GraftLayoutOptions options;
  GraftInference *inference; /* owned, may be NULL: the shapes edges are labelled with */
  guint inference_serial;  /* counts set_inference() calls: part of the cache key */
  GHashTable *cache;       /* CacheKey* → GroupLayout* */
  guint last_hits, last_runs;
};

G_DEFINE_FINAL_TYPE (GraftLayout, graft_layout, G_TYPE_OBJECT)

void
graft_layout_options_init (GraftLayoutOptions *options)
{
  *options = (GraftLayoutOptions) {
    .direction = GRAFT_LAYOUT_DIRECTION_TB,
    .show_names = FALSE,
    .show_attributes = TRUE,
    .show_shapes = TRUE,
  };
}

/* Group layouts */

static GroupLayout *
group_layout_new (void)
{
  GroupLayout *layout = g_new0 (GroupLayout, 1);

  layout->ref_count = 1;
  layout->items = g_array_new (FALSE, TRUE, sizeof (Item));
  layout->edges = g_array_new (FALSE, TRUE, sizeof (Edge));
  layout->points = g_array_new (FALSE, FALSE, sizeof (GraftPoint));
  layout->in_ports = g_hash_table_new (NULL, NULL);
  layout->out_ports = g_hash_table_new (NULL, NULL);
  return layout;
}

static GroupLayout *
group_layout_ref (GroupLayout *layout)
{
  g_atomic_int_inc (&layout->ref_count);
  return layout;
}

static void
group_layout_unref (gpointer data)
{
  GroupLayout *layout = data;

  if (layout == NULL || !g_atomic_int_dec_and_test (&layout->ref_count))
    return;
  g_array_unref (layout->items);
  g_array_unref (layout->edges);
  g_array_unref (layout->points);
  g_hash_table_unref (layout->in_ports);
  g_hash_table_unref (layout->out_ports);
  g_free (layout);
}

static guint
cache_key_hash (gconstpointer data)
{
  const CacheKey *key = data;

  return g_direct_hash (key->group) ^ (guint) key->signature ^ (guint) (key->signature >> 32);
}

static gboolean
cache_key_equal (gconstpointer a, gconstpointer b)
{
  const CacheKey *x = a, *y = b;

  return x->group == y->group && x->signature == y->signature;
}

/* The group tree, flattened */

static LGroup *
lgroup_new (GraftLayout *self, GraftGroup *group, const char *title, LGroup *parent)
{
  LGroup *lgroup = g_new0 (LGroup, 1);

  lgroup->id = self->groups->len;
  lgroup->group = group;
  lgroup->title = g_strdup (title);
  lgroup->parent = parent;
  lgroup->children = g_ptr_array_new ();
  lgroup->nodes = g_ptr_array_new ();
  lgroup->depth = parent != NULL ? parent->depth + 1 : 0;
  if (parent != NULL)
    g_ptr_array_add (parent->children, lgroup);
  g_ptr_array_add (self->groups, lgroup);
  return lgroup;
}

static void
lgroup_free (gpointer data)
{
  LGroup *lgroup = data;

  g_free (lgroup->title);
  g_ptr_array_unref (lgroup->children);
  g_ptr_array_unref (lgroup->nodes);
  g_free (lgroup);
}

static void
map_subtree (GraftLayout *self, GraftGroup *group, LGroup *lgroup)
{
  g_hash_table_insert (self->group_map, group, lgroup);
  for (guint i = 0; i < group->children->len; i++)
    map_subtree (self, g_ptr_array_index (group->children, i), lgroup);
}

/* Nodes of group and its descendants that get a box of their own: a
 * scripted module's group holds its op and the prim::GetAttr /
 * prim::Constant nodes its reader lists (layout/attribute-fold.h), which
 * must not make a box around the op alone where a traced one has none. */
static guint
drawn_total (GraftLayout *self, GraftGroup *group)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (self->drawn_totals, group));
}

static void
count_drawn_totals (GraftLayout *self)
{
  g_autoptr (GHashTable) own = g_hash_table_new (NULL, NULL); /* GraftGroup* → its own drawn nodes */
  GHashTableIter iter;
  gpointer group, count;

  /* Each node counts in its group, then each group's count in its
   * ancestors: a million nodes cost a million lookups, not one per level. */
  for (guint i = 0; i < self->graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (self->graph->nodes, i);

      if (node->group == NULL || graft_attribute_fold_applies (node))
        continue;
      g_hash_table_insert (own, node->group,
                           GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (own, node->group)) + 1));
    }
  g_hash_table_iter_init (&iter, own);
  while (g_hash_table_iter_next (&iter, &group, &count))
    for (GraftGroup *walk = group; walk != NULL; walk = walk->parent)
      g_hash_table_insert (self->drawn_totals, walk,
                           GUINT_TO_POINTER (drawn_total (self, walk) + GPOINTER_TO_UINT (count)));
}

/* The only child of group holding nodes, when group holds none itself. */
static GraftGroup *
single_nonempty_child (GraftLayout *self, GraftGroup *group)
{
  GraftGroup *found = NULL;

  if (group->nodes->len > 0)
    return NULL;
  for (guint i = 0; i < group->children->len; i++)
    {
      GraftGroup *child = g_ptr_array_index (group->children, i);

      if (drawn_total (self, child) == 0)
        continue;
      if (found != NULL)
        return NULL;
      found = child;
    }
  return found;
}

static void
build_children (GraftLayout *self, GraftGroup *group, LGroup *into)
{
  for (guint i = 0; i < group->children->len; i++)
    {
      GraftGroup *child = g_ptr_array_index (group->children, i);
      g_autoptr (GString) title = NULL;
      GraftGroup *next;
      LGroup *lgroup;

      if (drawn_total (self, child) <= 1)
        {
          /* Nothing to collapse: its node (if any) shows in the parent. */
          map_subtree (self, child, into);
          continue;
        }

      title = g_string_new (child->name);
      while ((next = single_nonempty_child (self, child)) != NULL)
        {
          g_string_append_printf (title, ".%s", next->name);
          child = next;
        }
      lgroup = lgroup_new (self, child, title->str, into);
      /* Map the chain (from the top) and its node-less side branches. */
      for (GraftGroup *walk = child; walk != NULL && walk != group; walk = walk->parent)
        {
          g_hash_table_insert (self->group_map, walk, lgroup);
          if (walk != child)
            for (guint j = 0; j < walk->children->len; j++)
              {
                GraftGroup *side = g_ptr_array_index (walk->children, j);

                if (!g_hash_table_contains (self->group_map, side))
                  map_subtree (self, side, lgroup);
              }
        }
      build_children (self, child, lgroup);
    }
}

/* Nodes fed only by weights (Constant, exporters' Identity of a shared
 * initializer) often carry no scope; they belong where they are used. */
static gboolean
is_source_node (GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);

      if (value != NULL && value->initializer == NULL)
        return FALSE;
    }
  return TRUE;
}

static LGroup *
common_ancestor (LGroup *a, LGroup *b)
{
  while (a->depth > b->depth)
    a = a->parent;
  while (b->depth > a->depth)
    b = b->parent;
  while (a != b)
    {
      a = a->parent;
      b = b->parent;
    }
  return a;
}

/* The node of graph that node is, or whose subgraph (at any depth) holds
 * node; NULL if node is not under graph. A value used inside an If/Loop
 * body is drawn as an edge into the If/Loop node. */
static GraftNode *
lift_to_graph (GraftGraph *graph, GraftNode *node)
{
  while (node != NULL && node->graph != graph)
    node = node->graph != NULL ? node->graph->parent_node : NULL;
  return node;
}

static gboolean
graph_is_within (GraftGraph *graph, GraftGraph *ancestor)
{
  for (; graph != NULL; graph = graph->parent_graph)
    if (graph == ancestor)
      return TRUE;
  return FALSE;
}

/* The deepest group holding every consumer of node's outputs, by the
 * consumers' own (scope) groups. */
static LGroup *
consumers_ancestor (GraftLayout *self, GraftNode *node)
{
  LGroup *found = NULL;

  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->outputs, i);

      if (value == NULL)
        continue;
      if (value->is_graph_output)
        return self->root;
      for (guint j = 0; j < value->consumers->len; j++)
        {
          GraftNode *consumer = lift_to_graph (self->graph, g_ptr_array_index (value->consumers, j));
          LGroup *lgroup = consumer != NULL ? g_hash_table_lookup (self->node_groups, consumer) : NULL;

          if (lgroup == NULL)
            return self->root;
          found = found != NULL ? common_ancestor (found, lgroup) : lgroup;
        }
    }
  return found != NULL ? found : self->root;
}

static void
count_total_nodes (GraftLayout *self)
{
  /* Children come after their parents in self->groups. */
  for (guint i = 0; i < self->groups->len; i++)
    {
      LGroup *lgroup = g_ptr_array_index (self->groups, i);
      lgroup->total_nodes = lgroup->nodes->len;
    }
  for (guint i = self->groups->len; i-- > 1;)
    {
      LGroup *lgroup = g_ptr_array_index (self->groups, i);
      lgroup->parent->total_nodes += lgroup->total_nodes;
    }
}

static void
assign_nodes (GraftLayout *self)
{
  for (guint i = 0; i < self->graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (self->graph->nodes, i);
      LGroup *lgroup = node->group != NULL ? g_hash_table_lookup (self->group_map, node->group) : NULL;

      if (lgroup == NULL)
        lgroup = self->root;
      g_hash_table_insert (self->node_groups, node, lgroup);
    }
  for (guint i = 0; i < self->graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (self->graph->nodes, i);
      LGroup *lgroup = g_hash_table_lookup (self->node_groups, node);

      if (lgroup == self->root && is_source_node (node))
        {
          lgroup = consumers_ancestor (self, node);
          g_hash_table_insert (self->node_groups, node, lgroup);
        }
      g_ptr_array_add (lgroup->nodes, node);
    }
  count_total_nodes (self);
}

/* A level with more nodes than this is cut into consecutive parts (file
 * order, which ONNX keeps topological), so models without scope names do
 * not end up in one slow whole-graph dot run. */
#define CHUNK_LIMIT 300
#define CHUNK_SIZE 150

/* A group the graph's tree does not have (owned by the layout). */
static GraftGroup *
made_up_group (GraftLayout *self, const char *name, char *path /* transfer full */, guint total_nodes)
{
  GraftGroup *group = graft_group_new_root ();

  g_free (group->name);
  g_free (group->path);
  group->name = g_strdup (name);
  group->path = path;
  group->total_nodes = total_nodes;
  g_ptr_array_add (self->chunk_groups, group);
  return group;
}

static void
chunk_big_levels (GraftLayout *self)
{
  guint n_groups = self->groups->len;

  for (guint g = 0; g < n_groups; g++)
    {
      LGroup *lgroup = g_ptr_array_index (self->groups, g);
      g_autoptr (GPtrArray) nodes = NULL;

      if (lgroup->nodes->len <= CHUNK_LIMIT)
        continue;
      nodes = g_steal_pointer (&lgroup->nodes);
      lgroup->nodes = g_ptr_array_new ();
      for (guint start = 0; start < nodes->len; start += CHUNK_SIZE)
        {
          guint end = MIN (start + CHUNK_SIZE, nodes->len);
          g_autofree char *title = g_strdup_printf ("nodes %u–%u", start + 1, end);
          GraftGroup *group = made_up_group (
            self, title, g_strdup_printf ("%s#%u", lgroup->group != NULL ? lgroup->group->path : "", start + 1),
            end - start);
          LGroup *chunk;

          chunk = lgroup_new (self, group, title, lgroup);
          chunk->total_nodes = end - start;
          g_hash_table_insert (self->group_map, group, chunk);
          for (guint i = start; i < end; i++)
            {
              GraftNode *node = g_ptr_array_index (nodes, i);

              g_ptr_array_add (chunk->nodes, node);
              g_hash_table_insert (self->node_groups, node, chunk);
            }
        }
    }
}

/* "then_branch" → "then": what a body is called on its cluster. */
static char *
body_title (GraftNode *node, GraftGraph *body)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);

      if (attribute->type == GRAFT_ATTR_GRAPH && attribute->g == body)
        return g_str_has_suffix (attribute->name, "_branch")
                 ? g_strndup (attribute->name, strlen (attribute->name) - strlen ("_branch"))
                 : g_strdup (attribute->name);
      if (attribute->type == GRAFT_ATTR_GRAPHS && attribute->graphs != NULL)
        for (guint j = 0; j < attribute->graphs->len; j++)
          if (g_ptr_array_index (attribute->graphs, j) == body)
            return g_strdup_printf ("%s[%u]", attribute->name, j);
    }
  return g_strdup (body->name != NULL && body->name[0] != '\0' ? body->name : "body");
}

static void add_control_groups (GraftLayout *self, LGroup *lgroup, gboolean dead);

/* Whether node holds subgraphs (If, Loop, Scan): asked of every node of a
 * big graph, without the array graft_node_get_subgraphs() makes. */
static gboolean
has_subgraphs (GraftNode *node)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);

      if ((attribute->type == GRAFT_ATTR_GRAPH && attribute->g != NULL)
          || (attribute->type == GRAFT_ATTR_GRAPHS && attribute->graphs->len > 0))
        return TRUE;
    }
  return FALSE;
}

/* node's CONTROL group under parent, and a BODY group per subgraph. */
static LGroup *
add_control_group (GraftLayout *self, LGroup *parent, GraftNode *node, GPtrArray *subgraphs, gboolean dead)
{
  GraftGraph *taken = graft_if_get_fixed_branch (node);
  const char *path_base = parent->group != NULL ? parent->group->path : "";
  g_autofree char *title = g_strdup (node->op_type);
  /* By the node's name, so that an edited copy of the graph finds it
   * (graft_layout_expand_control_path()); unnamed nodes by address. */
  char *path = node->name != NULL && node->name[0] != '\0'
                 ? g_strdup_printf ("%s#%s", path_base, node->name)
                 : g_strdup_printf ("%s#%s@%p", path_base, title, (void *) node);
  GraftGroup *group = made_up_group (self, title, path, 1);
  LGroup *control = lgroup_new (self, group, title, parent);

  control->kind = LGROUP_CONTROL;
  control->control = node;
  control->dead = dead;
  g_ptr_array_add (control->nodes, node);
  g_hash_table_insert (self->group_map, group, control);
  g_hash_table_insert (self->node_groups, node, control);
  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftGraph *body = g_ptr_array_index (subgraphs, i);
      g_autofree char *name = body_title (node, body);
      gboolean body_dead = dead || (taken != NULL && body != taken);
      g_autofree char *body_name = body_dead && !dead ? g_strdup_printf ("%s · never runs", name) : g_strdup (name);
      GraftGroup *body_group = made_up_group (self, body_name, g_strdup_printf ("%s/%s", group->path, name),
                                              body->nodes->len);
      LGroup *lbody = lgroup_new (self, body_group, body_name, control);

      lbody->kind = LGROUP_BODY;
      lbody->control = node;
      lbody->body = body;
      lbody->dead = body_dead;
      g_hash_table_insert (self->group_map, body_group, lbody);
      for (guint j = 0; j < body->nodes->len; j++)
        {
          GraftNode *inner = g_ptr_array_index (body->nodes, j);

          g_ptr_array_add (lbody->nodes, inner);
          g_hash_table_insert (self->node_groups, inner, lbody);
        }
      add_control_groups (self, lbody, body_dead);
    }
  return control;
}

/* Moves each node of lgroup that has subgraphs into a CONTROL group. */
static void
add_control_groups (GraftLayout *self, LGroup *lgroup, gboolean dead)
{
  for (guint i = 0; i < lgroup->nodes->len;)
    {
      GraftNode *node = g_ptr_array_index (lgroup->nodes, i);
      g_autoptr (GPtrArray) subgraphs = NULL;

      if (!has_subgraphs (node))
        {
          i++;
          continue;
        }
      subgraphs = graft_node_get_subgraphs (node);
      g_ptr_array_remove_index (lgroup->nodes, i);
      add_control_group (self, lgroup, node, subgraphs, dead);
    }
}

static GraftLayout *
layout_new (GraftGraph *graph, gboolean flat)
{
  GraftLayout *self = g_object_new (GRAFT_TYPE_LAYOUT, NULL);

  self->graph = graph;
  /* Flattening reads total_nodes; make sure it is current. */
  graft_graph_update_group_counts (graph);
  self->root = lgroup_new (self, graph->root_group, graph->name != NULL ? graph->name : "", NULL);
  if (graph->root_group != NULL)
    {
      g_hash_table_insert (self->group_map, graph->root_group, self->root);
      count_drawn_totals (self);
      if (!flat)
        build_children (self, graph->root_group, self->root);
      else
        map_subtree (self, graph->root_group, self->root);
    }
  assign_nodes (self);
  if (!flat)
    {
      guint n_groups;

      chunk_big_levels (self);
      n_groups = self->groups->len;
      for (guint i = 0; i < n_groups; i++)
        add_control_groups (self, g_ptr_array_index (self->groups, i), FALSE);
      count_total_nodes (self);
    }
  self->shared = graft_shared_values_new (graph, self->node_groups);
  self->expanded = g_new0 (gboolean, self->groups->len);
  graft_layout_reset_expansion (self, GRAFT_LAYOUT_DEFAULT_BUDGET);
  return self;
}

GraftLayout *
graft_layout_new (GraftGraph *graph)
{
  return layout_new (graph, FALSE);
}

GraftLayout *
graft_layout_new_flat (GraftGraph *graph)
{
  return layout_new (graph, TRUE);
}

static void
graft_layout_finalize (GObject *object)
{
  GraftLayout *self = GRAFT_LAYOUT (object);

  g_ptr_array_unref (self->groups);
  g_ptr_array_unref (self->chunk_groups);
  g_hash_table_unref (self->group_map);
  g_hash_table_unref (self->node_groups);
  g_hash_table_unref (self->drawn_totals);
  graft_shared_values_free (self->shared);
  g_hash_table_unref (self->cache);
  graft_label_pool_free (self->labels);
  g_clear_pointer (&self->inference, graft_inference_unref);
  g_free (self->expanded);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (graft_layout_parent_class)->finalize (object);
}

static void
graft_layout_class_init (GraftLayoutClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = graft_layout_finalize;
}

static void
graft_layout_init (GraftLayout *self)
{
  g_mutex_init (&self->lock);
  self->groups = g_ptr_array_new_with_free_func (lgroup_free);
  self->chunk_groups = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_group_free);
  self->group_map = g_hash_table_new (NULL, NULL);
  self->node_groups = g_hash_table_new (NULL, NULL);
  self->drawn_totals = g_hash_table_new (NULL, NULL);
  self->cache = g_hash_table_new_full (cache_key_hash, cache_key_equal, g_free, group_layout_unref);
  self->labels = graft_label_pool_new (NODE_MAX_WIDTH);
  graft_layout_options_init (&self->options);
}

void
graft_layout_set_model (GraftLayout *self, GraftModel *model)
{
  g_return_if_fail (GRAFT_IS_LAYOUT (self));
  self->model = model;
}

gboolean
graft_layout_is_value_shared (GraftLayout *self, GraftValue *value)
{
  g_return_val_if_fail (GRAFT_IS_LAYOUT (self), FALSE);
  return graft_shared_values_is_shared (self->shared, value);
}

void
graft_layout_set_options (GraftLayout *self, const GraftLayoutOptions *options)
{
  g_mutex_lock (&self->lock);
  if (memcmp (&self->options, options, sizeof *options) != 0)
    {
      self->options = *options;
      /* Entries for other options would only come back if the user flips
       * the toggle back; not worth the memory for big graphs. */
      g_hash_table_remove_all (self->cache);
    }
  g_mutex_unlock (&self->lock);
}

void
graft_layout_set_inference (GraftLayout *self, GraftInference *inference)
{
  g_return_if_fail (GRAFT_IS_LAYOUT (self));
  g_mutex_lock (&self->lock);
  if (self->inference != inference)
    {
      g_clear_pointer (&self->inference, graft_inference_unref);
      self->inference = inference != NULL ? graft_inference_ref (inference) : NULL;
      /* Edge labels, and so the sizes of every level, change; a compute
       * still running with the old shapes caches under the old serial. */
      self->inference_serial++;
      g_hash_table_remove_all (self->cache);
    }
  g_mutex_unlock (&self->lock);
}

/* Expansion */

static LGroup *
lookup_lgroup (GraftLayout *self, GraftGroup *group)
{
  return group != NULL ? g_hash_table_lookup (self->group_map, group) : NULL;
}

gboolean
graft_layout_get_group_expanded (GraftLayout *self, GraftGroup *group)
{
  LGroup *lgroup = lookup_lgroup (self, group);
  gboolean expanded;

  if (lgroup == NULL)
    return FALSE;
  g_mutex_lock (&self->lock);
  expanded = self->expanded[lgroup->id];
  g_mutex_unlock (&self->lock);
  return expanded;
}

void
graft_layout_set_group_expanded (GraftLayout *self, GraftGroup *group, gboolean expanded)
{
  LGroup *lgroup = lookup_lgroup (self, group);

  if (lgroup == NULL || lgroup == self->root)
    return;
  g_mutex_lock (&self->lock);
  self->expanded[lgroup->id] = expanded;
  g_mutex_unlock (&self->lock);
}

static void
set_all_expanded (GraftLayout *self, gboolean expanded)
{
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < self->groups->len; i++)
    {
      LGroup *lgroup = g_ptr_array_index (self->groups, i);

      /* A body stays open inside its collapsed node: it shows again as
       * it was when the node is expanded. */
      self->expanded[i] = expanded || i == 0 || lgroup->kind == LGROUP_BODY;
    }
  g_mutex_unlock (&self->lock);
}

void
graft_layout_expand_all (GraftLayout *self)
{
  set_all_expanded (self, TRUE);
}

void
graft_layout_collapse_all (GraftLayout *self)
{
  set_all_expanded (self, FALSE);
}

static guint
n_items (LGroup *lgroup)
{
  return lgroup->nodes->len + lgroup->children->len;
}

/* Control flow opens in place only when asked to (a click, Expand All):
 * the default view shows If and Loop as single nodes, as files do. */
static void
add_module_children (GPtrArray *frontier, LGroup *lgroup)
{
  for (guint i = 0; i < lgroup->children->len; i++)
    {
      LGroup *child = g_ptr_array_index (lgroup->children, i);

      if (child->kind == LGROUP_MODULE)
        g_ptr_array_add (frontier, child);
    }
}

void
graft_layout_reset_expansion (GraftLayout *self, guint budget)
{
  g_autoptr (GPtrArray) frontier = g_ptr_array_new ();
  guint visible;

  g_mutex_lock (&self->lock);
  for (guint i = 0; i < self->groups->len; i++)
    self->expanded[i] = i == 0 || ((LGroup *) g_ptr_array_index (self->groups, i))->kind == LGROUP_BODY;
  visible = n_items (self->root) + self->graph->inputs->len + self->graph->outputs->len;
  add_module_children (frontier, self->root);

  /* Level by level, so that siblings look alike: open a whole level only
   * if all of it fits. */
  while (frontier->len > 0)
    {
      g_autoptr (GPtrArray) next = g_ptr_array_new ();
      guint cost = 0;

      for (guint i = 0; i < frontier->len; i++)
        cost += n_items (g_ptr_array_index (frontier, i)) - 1;
      if (visible + cost > budget)
        break;
      visible += cost;
      for (guint i = 0; i < frontier->len; i++)
        {
          LGroup *lgroup = g_ptr_array_index (frontier, i);

          self->expanded[lgroup->id] = TRUE;
          add_module_children (next, lgroup);
        }
      g_ptr_array_unref (frontier);
      frontier = g_steal_pointer (&next);
    }
  g_mutex_unlock (&self->lock);
}

char **
graft_layout_dup_expanded_control (GraftLayout *self)
{
  GPtrArray *paths = g_ptr_array_new ();

  g_return_val_if_fail (GRAFT_IS_LAYOUT (self), NULL);
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < self->groups->len; i++)
    {
      LGroup *lgroup = g_ptr_array_index (self->groups, i);

      if (lgroup->kind == LGROUP_CONTROL && self->expanded[i])
        g_ptr_array_add (paths, g_strdup (lgroup->group->path));
    }
  g_mutex_unlock (&self->lock);
  g_ptr_array_add (paths, NULL);
  return (char **) g_ptr_array_free (paths, FALSE);
}

gboolean
graft_layout_expand_control_path (GraftLayout *self, const char *path)
{
  gboolean changed = FALSE;

  g_return_val_if_fail (GRAFT_IS_LAYOUT (self), FALSE);
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < self->groups->len; i++)
    {
      LGroup *lgroup = g_ptr_array_index (self->groups, i);

      if (lgroup->kind == LGROUP_CONTROL && !self->expanded[i] && g_strcmp0 (lgroup->group->path, path) == 0)
        {
          self->expanded[i] = TRUE;
          changed = TRUE;
        }
    }
  g_mutex_unlock (&self->lock);
  return changed;
}

gboolean
graft_layout_expand_to_node (GraftLayout *self, GraftNode *node)
{
  LGroup *lgroup = g_hash_table_lookup (self->node_groups, node);
  gboolean changed = FALSE;

  /* Showing an If does not need its bodies open. */
  if (lgroup != NULL && lgroup->kind == LGROUP_CONTROL && lgroup->control == node)
    lgroup = lgroup->parent;
  g_mutex_lock (&self->lock);
  for (; lgroup != NULL; lgroup = lgroup->parent)
    if (!self->expanded[lgroup->id])
      {
        self->expanded[lgroup->id] = TRUE;
        changed = TRUE;
      }
  g_mutex_unlock (&self->lock);
  return changed;
}

/* One compute */

typedef struct _EdgeSet EdgeSet;
static void edge_set_free (EdgeSet *set);

typedef struct {
  GraftLayout *self;
  gboolean *expanded;
  GraftLayoutOptions options;
  GraftInference *inference; /* owned, may be NULL */
  guint inference_serial;
  guint64 *signatures;
  GroupLayout **layouts;  /* by id, for the expanded groups */
  cairo_t *measure;
  /* A level's lookup tables, emptied for the next one */
  GHashTable *item_of, *inputs, *outputs;
  EdgeSet *edge_keys, *labelled;
  GHashTable *label_widths[2];  /* pooled edge label → its width (a double *), declared and inferred */
} Run;

static void
run_clear (Run *run)
{
  if (run->layouts != NULL)
    for (guint i = 0; i < run->self->groups->len; i++)
      group_layout_unref (run->layouts[i]);
  g_free (run->layouts);
  g_free (run->expanded);
  g_free (run->signatures);
  g_clear_pointer (&run->measure, cairo_destroy);
  g_clear_pointer (&run->inference, graft_inference_unref);
  g_clear_pointer (&run->item_of, g_hash_table_unref);
  g_clear_pointer (&run->inputs, g_hash_table_unref);
  g_clear_pointer (&run->outputs, g_hash_table_unref);
  g_clear_pointer (&run->edge_keys, edge_set_free);
  g_clear_pointer (&run->labelled, edge_set_free);
  g_clear_pointer (&run->label_widths[0], g_hash_table_unref);
  g_clear_pointer (&run->label_widths[1], g_hash_table_unref);
}

static guint64
mix (guint64 hash, guint64 value)
{
  hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2);
  hash *= 0xff51afd7ed558ccdULL;
  return hash ^ (hash >> 33);
}

static guint64
options_bits (const GraftLayoutOptions *options)
{
  return (guint64) options->direction | (options->show_names << 2) | (options->show_attributes << 3)
         | (options->show_shapes << 4) | ((guint64) options->show_module_attributes << 5);
}

/* Expanded groups reachable from the root, children before parents. */
static void
collect_expanded (Run *run, LGroup *lgroup, GPtrArray *order)
{
  for (guint i = 0; i < lgroup->children->len; i++)
    {
      LGroup *child = g_ptr_array_index (lgroup->children, i);

      if (run->expanded[child->id])
        collect_expanded (run, child, order);
    }
  g_ptr_array_add (order, lgroup);
}

static void
compute_signature (Run *run, LGroup *lgroup)
{
  guint64 signature = mix (mix (lgroup->id, options_bits (&run->options)), run->inference_serial);

  for (guint i = 0; i < lgroup->children->len; i++)
    {
      LGroup *child = g_ptr_array_index (lgroup->children, i);

      signature = mix (signature, run->expanded[child->id] ? run->signatures[child->id] : 1);
    }
  run->signatures[lgroup->id] = signature;
}

/* A set of (item, item, value) triples, open addressing: a level adds an
 * edge per value between two boxes once, and a big graph's levels add
 * hundreds of thousands (a GHashTable of printed keys was a tenth of
 * Expand All). */
typedef struct {
  guint src, dst;
  gconstpointer value;
} EdgeKey;

struct _EdgeSet {
  EdgeKey *slots;
  guint8 *used;
  guint size;              /* a power of two */
  guint n;
};

static guint
edge_key_hash (const EdgeKey *key)
{
  guint64 hash = mix (mix (key->src, key->dst), (guint64) (guintptr) key->value);

  return (guint) hash;
}

static EdgeSet *
edge_set_new (void)
{
  EdgeSet *set = g_new0 (EdgeSet, 1);

  set->size = 64;
  set->slots = g_new (EdgeKey, set->size);
  set->used = g_new0 (guint8, set->size);
  return set;
}

static void
edge_set_free (EdgeSet *set)
{
  g_free (set->slots);
  g_free (set->used);
  g_free (set);
}

/* Empties the set, keeping its room unless a big level left it large. */
static void
edge_set_clear (EdgeSet *set)
{
  if (set->size > 4096)
    {
      set->size = 64;
      set->slots = g_renew (EdgeKey, set->slots, set->size);
      set->used = g_renew (guint8, set->used, set->size);
    }
  if (set->n > 0 || set->size == 64)
    memset (set->used, 0, set->size);
  set->n = 0;
}

static gboolean edge_set_add (EdgeSet *set, guint src, guint dst, gconstpointer value);

static void
edge_set_grow (EdgeSet *set)
{
  EdgeKey *slots = set->slots;
  guint8 *used = set->used;
  guint size = set->size;

  set->size *= 2;
  set->slots = g_new (EdgeKey, set->size);
  set->used = g_new0 (guint8, set->size);
  set->n = 0;
  for (guint i = 0; i < size; i++)
    if (used[i])
      edge_set_add (set, slots[i].src, slots[i].dst, slots[i].value);
  g_free (slots);
  g_free (used);
}

/* TRUE if the triple was not in the set. */
static gboolean
edge_set_add (EdgeSet *set, guint src, guint dst, gconstpointer value)
{
  EdgeKey key = { src, dst, value };
  guint mask, i;

  if (2 * (set->n + 1) > set->size)
    edge_set_grow (set);
  mask = set->size - 1;
  for (i = edge_key_hash (&key) & mask; set->used[i]; i = (i + 1) & mask)
    if (set->slots[i].src == src && set->slots[i].dst == dst && set->slots[i].value == value)
      return FALSE;
  set->used[i] = 1;
  set->slots[i] = key;
  set->n++;
  return TRUE;
}

static gboolean
in_subtree (LGroup *ancestor, LGroup *lgroup)
{
  for (; lgroup != NULL; lgroup = lgroup->parent)
    if (lgroup == ancestor)
      return TRUE;
  return FALSE;
}

typedef struct {
  Run *run;
  LGroup *lgroup;
  GroupLayout *layout;
  GHashTable *item_of;      /* GraftNode* / LGroup* → index + 1 */
  GHashTable *inputs;       /* GraftValue* → INPUT item index + 1 (root) */
  GHashTable *outputs;      /* GraftValue* → OUTPUT item index + 1 (root) */
  EdgeSet *edge_keys;       /* (src, dst, value): the edges added */
  EdgeSet *labelled;        /* (src, -, value): the values leaving src that have a label */
} Level;

static guint
add_item (Level *level, const Item *item)
{
  g_array_append_val (level->layout->items, *item);
  return level->layout->items->len - 1;
}

/* "s77 ∈ [2, 16]" for each ranged symbol of the value's shape, once
 * each: the box is where the user first looks for what a dim may be.
 * Edges keep the bare symbol — a range on every edge would repeat the
 * same text dozens of times, and the tooltip/sidebar of any value says it. */
static void
add_dim_range_lines (GPtrArray *lines, GraftModel *model, GraftValue *value)
{
  g_autoptr (GPtrArray) seen = g_ptr_array_new ();
  const GraftShape *shape = &value->shape;

  if (model == NULL || shape->rank < 0)
    return;
  for (gint64 i = 0; i < shape->rank; i++)
    {
      const char *symbol = shape->dims[i].kind == GRAFT_DIM_SYMBOLIC ? shape->dims[i].symbol : NULL;
      g_autofree char *range = NULL;

      if (symbol == NULL || g_ptr_array_find (seen, symbol, NULL))
        continue;
      g_ptr_array_add (seen, (gpointer) symbol);
      range = graft_model_describe_dim_range (model, symbol);
      if (range == NULL)
        continue;
      g_ptr_array_add (lines, g_strdup_printf ("%s %s", symbol, range));
    }
}

static GPtrArray *
value_box_texts (GraftModel *model, GraftInference *inference, GraftValue *value)
{
  g_autofree char *shape = graft_value_shape_label (value, inference);
  GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (lines, g_strdup (value->name));
  if (shape != NULL)
    {
      /* A TorchScript input given a shape is typed by the inference. */
      GraftDType dtype = value->dtype != GRAFT_DTYPE_UNDEFINED ? value->dtype
                                                               : graft_inference_get_dtype (inference, value);

      g_ptr_array_add (lines, g_strdup_printf ("%s %s", graft_dtype_to_string (dtype), shape));
      add_dim_range_lines (lines, model, value);
    }
  return lines;
}

static GPtrArray *
collapsed_group_texts (LGroup *lgroup)
{
  GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);
  const char *class_name = lgroup->group->class_name;

  g_ptr_array_add (lines, g_strdup (lgroup->title));
  if (class_name != NULL && class_name[0] != '\0')
    {
      /* "torchvision.models.resnet.BasicBlock" → "BasicBlock" */
      const char *dot = strrchr (class_name, '.');
      g_ptr_array_add (lines, g_strdup (dot != NULL ? dot + 1 : class_name));
    }
  g_ptr_array_add (lines, g_strdup_printf (lgroup->total_nodes == 1 ? "%u node" : "%u nodes", lgroup->total_nodes));
  return lines;
}

static double
group_title_width (LGroup *lgroup, cairo_t *cr)
{
  g_autofree char *header = NULL;

  if (lgroup->group->class_name != NULL && lgroup->group->class_name[0] != '\0')
    {
      const char *dot = strrchr (lgroup->group->class_name, '.');
      header = g_strdup_printf ("%s · %s", lgroup->title, dot != NULL ? dot + 1 : lgroup->group->class_name);
    }
  else
    header = g_strdup (lgroup->title);
  graft_text_select (cr, GRAFT_TEXT_GROUP_TITLE);
  /* The collapse mark takes the first 16 points of the header. */
  return graft_text_measure (cr, header) + 16 + 2 * GROUP_PAD;
}

static LGroup *control_group_of (Level *level, GraftNode *node);

/* The item shows texts (title first), fitted: its lines and size. */
static void
set_item_label (Run *run, Item *item, GPtrArray *texts)
{
  const GraftPooledLabel *label = graft_label_pool_fit (run->self->labels, texts, run->measure);

  item->lines = label->lines;
  item->width = label->width;
  item->height = label->height;
}

/* Why lint says nothing about an If the module decides (self.training of
 * an eval-mode BatchNorm): its box says which branch never runs. */
static void
append_fixed_branch_line (GPtrArray *lines, GraftNode *node)
{
  GraftGraph *taken = graft_if_get_fixed_branch (node);
  g_autoptr (GPtrArray) subgraphs = NULL;

  if (taken == NULL)
    return;
  subgraphs = graft_node_get_subgraphs (node);
  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftGraph *body = g_ptr_array_index (subgraphs, i);
      g_autofree char *title = NULL;

      if (body == taken)
        continue;
      title = body_title (node, body);
      g_ptr_array_add (lines, g_strdup_printf ("%s never runs (fixed by the module)", title));
    }
}

/* The constants this node reads that are drawn at each reader. */

static guint
node_item (Level *level, GraftNode *node)
{
  gpointer found = g_hash_table_lookup (level->item_of, node);
  Item item = { ITEM_NODE, node };
  guint index;

  if (found != NULL)
    return GPOINTER_TO_UINT (found) - 1;
  {
    GraftLabelOptions label_options = { level->run->options.show_names, level->run->options.show_attributes,
                                        level->run->options.show_shapes,
                                        level->run->options.show_module_attributes };
    g_autoptr (GPtrArray) subgraphs = has_subgraphs (node) ? graft_node_get_subgraphs (node) : NULL;
    g_autoptr (GPtrArray) texts = graft_node_label_texts (node, &label_options);

    /* The constants this node reads that are drawn at each reader. */
    graft_shared_values_add_lines (level->run->self->shared, node, !level->run->options.show_module_attributes,
                                   texts);
    if (subgraphs != NULL && subgraphs->len > 0)
      {
        /* Tell the user there is more inside (double-click opens it). */
        g_ptr_array_add (texts, g_strdup_printf (subgraphs->len == 1 ? "%u subgraph" : "%u subgraphs",
                                                 subgraphs->len));
        append_fixed_branch_line (texts, node);
      }
    set_item_label (level->run, &item, texts);
  }
  item.category = graft_op_category_for_node (node);
  if (control_group_of (level, node) != NULL)
    /* Room for the "+" box at the top right (painter.c), clear of the centred title. */
    item.width += 2 * INLINE_MARK_ROOM;
  index = add_item (level, &item);
  g_hash_table_insert (level->item_of, node, GUINT_TO_POINTER (index + 1));
  return index;
}

static void
add_group_item (Level *level, LGroup *child)
{
  Run *run = level->run;
  Item item = { ITEM_GROUP, child };
  guint index;

  item.expanded = run->expanded[child->id];
  if (child->kind == LGROUP_CONTROL && !item.expanded)
    {
      /* Collapsed control flow is its node, as in the file. */
      index = node_item (level, child->control);
      g_hash_table_insert (level->item_of, child, GUINT_TO_POINTER (index + 1));
      return;
    }
  if (item.expanded)
    {
      GroupLayout *inner = run->layouts[child->id];

      item.width = MAX (inner->width + 2 * GROUP_PAD, group_title_width (child, run->measure));
      item.height = inner->height + GROUP_HEADER + GROUP_PAD;
    }
  else
    {
      g_autoptr (GPtrArray) texts = collapsed_group_texts (child);

      set_item_label (run, &item, texts);
      /* Room for the card stacked behind (see painter.c). */
      item.width += 4;
      item.height += 4;
    }
  index = add_item (level, &item);
  g_hash_table_insert (level->item_of, child, GUINT_TO_POINTER (index + 1));
}

static guint
value_item (Level *level, GHashTable *table, ItemKind kind, GraftValue *value)
{
  gpointer found = g_hash_table_lookup (table, value);
  Item item = { kind, value };
  guint index;

  if (found != NULL)
    return GPOINTER_TO_UINT (found) - 1;
  if (kind == ITEM_INPUT || kind == ITEM_OUTPUT)
    {
      g_autoptr (GPtrArray) texts = value_box_texts (level->run->self->model, level->run->inference, value);

      set_item_label (level->run, &item, texts);
      item.category = GRAFT_OP_CATEGORY_IO;
    }
  else
    item.width = item.height = PORT_SIZE;
  index = add_item (level, &item);
  g_hash_table_insert (table, value, GUINT_TO_POINTER (index + 1));
  return index;
}

/* The group node is laid out in: its own (a body's node has one), else
 * that of the node of this graph holding it; NULL if none. */
static LGroup *
node_lgroup (GraftLayout *self, GraftNode *node)
{
  LGroup *lgroup;

  if (node == NULL)
    return NULL;
  lgroup = g_hash_table_lookup (self->node_groups, node);
  if (lgroup == NULL && (node = lift_to_graph (self->graph, node)) != NULL)
    lgroup = g_hash_table_lookup (self->node_groups, node);
  return lgroup;
}

/* The item standing for node at this level: itself or the child box it is in. */
static guint
representative (Level *level, GraftNode *node)
{
  LGroup *lgroup = node_lgroup (level->run->self, node);

  if (lgroup == level->lgroup)
    {
      /* A flat layout has no boxes for bodies: their nodes show as the
       * node holding them. */
      if (!g_hash_table_contains (level->run->self->node_groups, node))
        node = lift_to_graph (level->run->self->graph, node);
      return node_item (level, node);
    }
  while (lgroup->parent != level->lgroup)
    lgroup = lgroup->parent;
  return GPOINTER_TO_UINT (g_hash_table_lookup (level->item_of, lgroup)) - 1;
}

static gboolean
item_is_box_end (Level *level, guint index)
{
  Item *item = &g_array_index (level->layout->items, Item, index);

  return item->kind == ITEM_NODE || item->kind == ITEM_INPUT || item->kind == ITEM_OUTPUT
         || (item->kind == ITEM_GROUP && !item->expanded);
}

/* A module attribute listed in its readers' boxes instead of drawn; a
 * constant computed only for far-apart readers, likewise. */
static gboolean
is_folded (Level *level, GraftNode *node)
{
  return (!level->run->options.show_module_attributes && graft_attribute_fold_applies (node))
         || graft_shared_values_is_hidden (level->run->self->shared, node);
}

static void
add_edge (Level *level, guint src, guint dst, GraftValue *value)
{
  Edge edge = { src, dst, value };

  if (src == dst || !edge_set_add (level->edge_keys, src, dst, value))
    return;
  if (value != NULL && level->run->options.show_shapes && item_is_box_end (level, src))
    /* One shape label per value leaving a box, however many consumers. */
    edge.labelled = edge_set_add (level->labelled, src, G_MAXUINT, value);
  g_array_append_val (level->layout->edges, edge);
}

static gboolean
node_in_level (Level *level, GraftNode *node)
{
  LGroup *lgroup = node_lgroup (level->run->self, node);

  return lgroup != NULL && in_subtree (level->lgroup, lgroup);
}

/* The node a value comes from: its producer, or for a subgraph's input
 * (a Loop body's iteration count and carried values) the node running
 * the subgraph; NULL for graph inputs and weights. */
static GraftNode *
value_source (GraftValue *value)
{
  if (value->producer != NULL)
    return value->producer;
  if (value->is_graph_input && value->graph != NULL && value->graph->parent_node != NULL
      && g_ptr_array_find (value->graph->inputs, value, NULL))
    return value->graph->parent_node;
  return NULL;
}

/* The output of a node with subgraphs that its subgraph's output number
 * slot becomes, or -1: a Loop's body returns its condition first. */
static int
body_output_slot (GraftNode *node, guint slot)
{
  int index = slot;

  if (node->op_type == g_intern_static_string ("Loop"))
    index--;
  return index >= 0 && (guint) index < node->outputs->len ? index : -1;
}

/* Whether value ends at a graph output that this level's box shows: the
 * model's, at the root; a subgraph's, in its body's box. */
static gboolean
is_level_output (Level *level, GraftValue *value)
{
  if (!value->is_graph_output)
    return FALSE;
  if (value->graph == level->run->self->graph)
    return TRUE;
  return level->lgroup->kind == LGROUP_BODY && level->lgroup->body == value->graph
         && g_ptr_array_find (value->graph->outputs, value, NULL);
}

static void
collect_subtree_nodes (LGroup *lgroup, GPtrArray *nodes)
{
  g_ptr_array_extend (nodes, lgroup->nodes, NULL, NULL);
  for (guint i = 0; i < lgroup->children->len; i++)
    collect_subtree_nodes (g_ptr_array_index (lgroup->children, i), nodes);
}

static void
add_input_edge (Level *level, guint here, GraftValue *value)
{
  guint src;

  /* Weights are listed in the node's box, not drawn as edges; so are
   * folded module attributes. */
  if (value == NULL || value->initializer != NULL || is_folded (level, value->producer)
      || graft_shared_values_is_shared (level->run->self->shared, value))
    return;
  if (node_in_level (level, value_source (value)))
    src = representative (level, value_source (value));
  else if (level->lgroup->parent == NULL)
    src = value_item (level, level->inputs, ITEM_INPUT, value);
  else
    src = value_item (level, level->layout->in_ports, ITEM_IN_PORT, value);
  add_edge (level, src, here, value);
}

/* The control group a node with subgraphs is laid out in, or NULL (a
 * flat layout has none: its bodies' captures are drawn into the node). */
static LGroup *
control_group_of (Level *level, GraftNode *node)
{
  LGroup *lgroup = g_hash_table_lookup (level->run->self->node_groups, node);

  return lgroup != NULL && lgroup->kind == LGROUP_CONTROL && lgroup->control == node ? lgroup : NULL;
}

/* In node's own expanded cluster, what each body returns flows to the
 * node's output it becomes (then's and else's results both to the If's);
 * returns which outputs are drawn so (a bit per output, up to 64). */
static guint64
add_body_result_edges (Level *level, LGroup *control)
{
  GraftNode *node = control->control;
  guint64 drawn = 0;

  for (guint b = 0; b < control->children->len; b++)
    {
      LGroup *body = g_ptr_array_index (control->children, b);

      /* Not drawn: keeps the node above its bodies when no value of its
       * goes into them (an If's condition is read by the If alone). */
      add_edge (level, representative (level, node),
                GPOINTER_TO_UINT (g_hash_table_lookup (level->item_of, body)) - 1, NULL);
      for (guint j = 0; j < body->body->outputs->len; j++)
        {
          GraftValue *result = g_ptr_array_index (body->body->outputs, j);
          int slot = body_output_slot (node, j);
          GraftValue *output = slot >= 0 ? g_ptr_array_index (node->outputs, slot) : NULL;
          GraftNode *source;
          guint src;

          if (result == NULL || output == NULL || (output->consumers->len == 0 && !output->is_graph_output))
            continue;
          source = value_source (result);
          if (result->initializer != NULL)
            continue;
          if (node_in_level (level, source))
            src = representative (level, source);
          else
            src = value_item (level, level->layout->in_ports, ITEM_IN_PORT, result);
          add_edge (level, src, value_item (level, level->layout->out_ports, ITEM_OUT_PORT, output), result);
          if (slot < 64)
            drawn |= G_GUINT64_CONSTANT (1) << slot;
        }
    }
  return drawn;
}

/* Body results that no node of the body computes (`else` returning x as
 * it was) enter the node's box like its inputs. */
static void
add_passed_through_results (Level *level, guint here, GraftNode *node)
{
  g_autoptr (GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftGraph *body = g_ptr_array_index (subgraphs, i);

      for (guint j = 0; j < body->outputs->len; j++)
        {
          GraftValue *result = g_ptr_array_index (body->outputs, j);

          if (result != NULL && (result->producer == NULL || !graph_is_within (result->producer->graph, body)))
            add_input_edge (level, here, result);
        }
    }
}

/* A shared value is listed at its readers, but where it is computed still
 * comes before the first of them: without an edge, dot is free to put the
 * node computing it (a mask, rotary tables) anywhere, often at the bottom
 * with long edges from its own inputs. An edge that is not drawn (no
 * value) to the first reader in this level keeps it there. */
static void
add_shared_rank_edge (Level *level, guint here, GraftValue *value)
{
  for (guint j = 0; j < value->consumers->len; j++)
    {
      GraftNode *reader = g_ptr_array_index (value->consumers, j);

      if (node_in_level (level, reader) && !is_folded (level, reader))
        {
          add_edge (level, here, representative (level, reader), NULL);
          return;
        }
    }
}

static void
add_value_edges (Level *level, GraftNode *node)
{
  gboolean is_root = level->lgroup->parent == NULL;
  guint here;
  LGroup *control;
  guint64 drawn_by_bodies = 0;

  if (is_folded (level, node))
    return;
  here = representative (level, node);
  control = control_group_of (level, node);

  for (guint i = 0; i < node->inputs->len; i++)
    add_input_edge (level, here, g_ptr_array_index (node->inputs, i));
  if (control == NULL && has_subgraphs (node))
    {
      g_autoptr (GPtrArray) captures = graft_node_get_captured_values (node);

      for (guint i = 0; i < captures->len; i++)
        add_input_edge (level, here, g_ptr_array_index (captures, i));
    }
  else if (control == level->lgroup)
    drawn_by_bodies = add_body_result_edges (level, control);
  else
    add_passed_through_results (level, here, node);

  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->outputs, i);
      gboolean leaves = FALSE;

      if (value == NULL || (i < 64 && (drawn_by_bodies & (G_GUINT64_CONSTANT (1) << i))))
        continue;
      if (graft_shared_values_is_shared (level->run->self->shared, value))
        {
          add_shared_rank_edge (level, here, value);
          continue;
        }
      if (is_root)
        {
          if (is_level_output (level, value))
            add_edge (level, here, value_item (level, level->outputs, ITEM_OUTPUT, value), value);
          continue;
        }
      leaves = is_level_output (level, value);
      for (guint j = 0; !leaves && j < value->consumers->len; j++)
        leaves = !node_in_level (level, g_ptr_array_index (value->consumers, j));
      if (leaves)
        add_edge (level, here, value_item (level, level->layout->out_ports, ITEM_OUT_PORT, value), value);
    }
}

/* Left to right, shape labels sit between the ranks along the edges: make
 * the gap as wide as the widest label of this level. */
static double
rank_separation (Level *level, gboolean shapes)
{
  double widest = 0;

  if (!shapes)
    return RANK_SEPARATION;
  if (level->run->options.direction != GRAFT_LAYOUT_DIRECTION_LR)
    return RANK_SEPARATION_SHAPES;
  for (guint i = 0; i < level->layout->edges->len; i++)
    {
      Edge *edge = &g_array_index (level->layout->edges, Edge, i);
      g_autofree char *label = edge->labelled ? graft_value_shape_label (edge->value, level->run->inference) : NULL;

      if (label == NULL)
        continue;
      graft_text_select (level->run->measure, graft_value_shape_label_role (edge->value, level->run->inference));
      widest = MAX (widest, graft_text_measure (level->run->measure, label));
    }
  return CLAMP (widest + 16, RANK_SEPARATION_SHAPES, MAX_LR_RANK_SEPARATION);
}

static gboolean
run_dot (Level *level, GError **error)
{
  GroupLayout *layout = level->layout;
  guint n_items = layout->items->len, n_edges = layout->edges->len;
  g_autofree GraftDotBox *boxes = g_new0 (GraftDotBox, MAX (n_items, 1));
  g_autofree GraftDotEdge *edges = g_new0 (GraftDotEdge, MAX (n_edges, 1));
  GraftDotResult result;
  gboolean shapes = level->run->options.show_shapes;

  if (n_items == 0)
    return TRUE;
  for (guint i = 0; i < n_items; i++)
    {
      Item *item = &g_array_index (layout->items, Item, i);

      boxes[i].width = item->width;
      boxes[i].height = item->height;
      boxes[i].point = item->kind == ITEM_IN_PORT || item->kind == ITEM_OUT_PORT;
      if (item->kind == ITEM_INPUT || item->kind == ITEM_IN_PORT)
        boxes[i].rank = GRAFT_DOT_RANK_FIRST;
      else if (item->kind == ITEM_OUTPUT || item->kind == ITEM_OUT_PORT)
        boxes[i].rank = GRAFT_DOT_RANK_LAST;
    }
  for (guint i = 0; i < n_edges; i++)
    {
      Edge *edge = &g_array_index (layout->edges, Edge, i);

      edges[i] = (GraftDotEdge) { edge->src, edge->dst, item_is_box_end (level, edge->dst) };
    }

  if (!graft_dot_layout (boxes, n_items, edges, n_edges, level->run->options.direction, NODE_SEPARATION,
                         rank_separation (level, shapes), &result, error))
    return FALSE;

  layout->width = result.width;
  layout->height = result.height;
  for (guint i = 0; i < n_items; i++)
    {
      Item *item = &g_array_index (layout->items, Item, i);

      item->cx = result.centers[i].x;
      item->cy = result.centers[i].y;
    }
  for (guint i = 0; i < n_edges; i++)
    {
      Edge *edge = &g_array_index (layout->edges, Edge, i);
      GraftDotSpline *spline = &result.splines[i];

      edge->n_points = spline->n_points;
      edge->has_arrow = spline->has_arrow;
      edge->tip = spline->tip;
      g_array_append_vals (layout->points, spline->points, spline->n_points);
    }
  /* Pointers once the array has stopped growing. */
  for (guint i = 0, first = 0; i < n_edges; i++)
    {
      Edge *edge = &g_array_index (layout->edges, Edge, i);

      edge->points = &g_array_index (layout->points, GraftPoint, first);
      first += edge->n_points;
    }
  graft_dot_result_clear (&result);
  return TRUE;
}

static GroupLayout *
layout_group (Run *run, LGroup *lgroup, GError **error)
{
  GraftGraph *graph = run->self->graph;
  gboolean is_root = lgroup->parent == NULL;
  g_autoptr (GPtrArray) subtree = g_ptr_array_new ();
  Level level = { run, lgroup, group_layout_new () };

  if (run->item_of == NULL)
    {
      run->item_of = g_hash_table_new (NULL, NULL);
      run->inputs = g_hash_table_new (NULL, NULL);
      run->outputs = g_hash_table_new (NULL, NULL);
      run->edge_keys = edge_set_new ();
      run->labelled = edge_set_new ();
    }
  level.item_of = run->item_of;
  level.inputs = run->inputs;
  level.outputs = run->outputs;
  level.edge_keys = run->edge_keys;
  level.labelled = run->labelled;

  /* Item order is dot's initial order: inputs, nodes in file order, groups. */
  if (is_root)
    for (guint i = 0; i < graph->inputs->len; i++)
      {
        GraftValue *value = g_ptr_array_index (graph->inputs, i);

        if (value->initializer == NULL)
          value_item (&level, level.inputs, ITEM_INPUT, value);
      }
  for (guint i = 0; i < lgroup->nodes->len; i++)
    if (!is_folded (&level, g_ptr_array_index (lgroup->nodes, i)))
      node_item (&level, g_ptr_array_index (lgroup->nodes, i));
  for (guint i = 0; i < lgroup->children->len; i++)
    add_group_item (&level, g_ptr_array_index (lgroup->children, i));

  collect_subtree_nodes (lgroup, subtree);
  for (guint i = 0; i < subtree->len; i++)
    add_value_edges (&level, g_ptr_array_index (subtree, i));

  if (is_root)
    for (guint i = 0; i < graph->outputs->len; i++)
      {
        GraftValue *value = g_ptr_array_index (graph->outputs, i);
        guint output = value_item (&level, level.outputs, ITEM_OUTPUT, value);

        /* An input passed straight through to an output. */
        if (value->producer == NULL && g_hash_table_contains (level.inputs, value))
          add_edge (&level, GPOINTER_TO_UINT (g_hash_table_lookup (level.inputs, value)) - 1, output, value);
      }

  g_hash_table_remove_all (level.item_of);
  g_hash_table_remove_all (level.inputs);
  g_hash_table_remove_all (level.outputs);
  edge_set_clear (level.edge_keys);
  edge_set_clear (level.labelled);

  if (!run_dot (&level, error))
    {
      group_layout_unref (level.layout);
      return NULL;
    }
  return level.layout;
}

/* Scene assembly */

static GraftPoint
port_position (Run *run, const Item *box, double left, double top, GHashTable *ports, GraftValue *value,
               gboolean *found)
{
  GroupLayout *inner = run->layouts[((LGroup *) box->ref)->id];
  gpointer index = g_hash_table_lookup (ports, value);
  const Item *port;

  *found = index != NULL;
  if (index == NULL)
    return (GraftPoint) { 0 };
  port = &g_array_index (inner->items, Item, GPOINTER_TO_UINT (index) - 1);
  return (GraftPoint) { left + (box->width - inner->width) / 2 + port->cx, top + GROUP_HEADER + port->cy };
}

/* A cubic from a to b leaving and arriving along the flow direction:
 * its points after a (three) at out, and a too if include_start (four);
 * returns the point after them. */
static GraftPoint *
put_join (GraftPoint *out, GraftPoint a, GraftPoint b, GraftLayoutDirection direction, gboolean include_start)
{
  GraftPoint c1 = a, c2 = b;

  if (direction == GRAFT_LAYOUT_DIRECTION_TB)
    {
      c1.y += (b.y - a.y) / 2;
      c2.y -= (b.y - a.y) / 2;
    }
  else
    {
      c1.x += (b.x - a.x) / 2;
      c2.x -= (b.x - a.x) / 2;
    }
  if (include_start)
    *out++ = a;
  *out++ = c1;
  *out++ = c2;
  *out++ = b;
  return out;
}

static gboolean
label_hits_item (GroupLayout *layout, const Edge *edge, const GraftRect *box, double ox, double oy)
{
  for (guint i = 0; i < layout->items->len; i++)
    {
      Item *item = &g_array_index (layout->items, Item, i);
      GraftRect rect = { ox + item->cx - item->width / 2, oy + item->cy - item->height / 2, item->width,
                         item->height };

      if (item->kind != ITEM_IN_PORT && item->kind != ITEM_OUT_PORT && graft_rect_intersects (&rect, box))
        return TRUE;
    }
  return FALSE;
}

static gboolean
rect_within (const GraftRect *inner, const GraftRect *outer)
{
  return inner->x >= outer->x && inner->y >= outer->y && inner->x + inner->width <= outer->x + outer->width
         && inner->y + inner->height <= outer->y + outer->height;
}

static gboolean
label_hits_label (GArray *placed, const GraftRect *box)
{
  for (guint i = 0; i < placed->len; i++)
    if (graft_rect_intersects (&g_array_index (placed, GraftRect, i), box))
      return TRUE;
  return FALSE;
}

/* Baseline start of an edge's shape label: beside the edge near its
 * start, on the first side and spot along the curve where it covers no
 * box and no label already placed at this level. Where every spot covers
 * a box, the first one is kept, as a label may cross its own edge's
 * neighbours; where that one covers another label, the edge goes without:
 * parallel edges (a fan of `scalar`s) would print their labels over each
 * other, and the shape is still in the sidebar and the tooltip. With
 * keep_inside (the bodies of control flow, often one narrow column), a
 * label must stay within the level's box: past its border it would print
 * across the edges running beside the cluster. */
/* The width of an edge's label, pooled (graft_label_pool_intern()), in
 * role's font: remembered by the pooled text, as the same few shapes
 * label most of a big graph's edges. */
static double
label_width (Run *run, const char *pooled, GraftTextRole role)
{
  GHashTable **widths = &run->label_widths[role == GRAFT_TEXT_EDGE_INFERRED];
  gpointer known;
  double width;

  if (*widths == NULL)
    *widths = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  if ((known = g_hash_table_lookup (*widths, pooled)) != NULL)
    return *(double *) known;
  graft_text_select (run->measure, role);
  width = graft_text_measure (run->measure, pooled);
  g_hash_table_insert (*widths, (gpointer) pooled, g_memdup2 (&width, sizeof width));
  return width;
}

static gboolean
place_label (Run *run, GroupLayout *layout, const Edge *edge, const char *label, GraftTextRole role, double ox,
             double oy, gboolean keep_inside, GArray *placed, GraftPoint *label_pos)
{
  GraftRect level_box = { ox, oy, layout->width, layout->height };
  static const double spots[] = { 0.35, 0.6, 0.15, 0.8 };
  GraftPoint curve[4];
  GraftPoint first = { 0 };
  GraftRect first_box = { 0 };
  double width, height = graft_text_get_line_height (GRAFT_TEXT_EDGE);

  width = label_width (run, label, role);
  for (int k = 0; k < 4; k++)
    curve[k] = (GraftPoint) { ox + edge->points[k].x, oy + edge->points[k].y };

  for (gsize s = 0; s < G_N_ELEMENTS (spots); s++)
    for (int side = 0; side < 2; side++)
      {
        GraftPoint at, pos;
        GraftRect box;

        graft_bezier_point (curve, spots[s], &at);
        if (run->options.direction == GRAFT_LAYOUT_DIRECTION_TB)
          pos = (GraftPoint) { side == 0 ? at.x + 4 : at.x - 4 - width, at.y + 3 };
        else
          pos = (GraftPoint) { at.x - width / 2, side == 0 ? at.y - 4 : at.y + 4 + height - 2 };
        box = (GraftRect) { pos.x - 2, pos.y - height + 1, width + 4, height };
        if (s == 0 && side == 0)
          {
            first = pos;
            first_box = box;
          }
        if (keep_inside && !rect_within (&box, &level_box))
          continue;
        if (!label_hits_item (layout, edge, &box, ox, oy) && !label_hits_label (placed, &box))
          {
            g_array_append_val (placed, box);
            *label_pos = pos;
            return TRUE;
          }
      }
  if (label_hits_label (placed, &first_box) || (keep_inside && !rect_within (&first_box, &level_box)))
    return FALSE;
  g_array_append_val (placed, first_box);
  *label_pos = first;
  return TRUE;
}

/* A node with subgraphs can open in place; a node of a dead branch is greyed. */
static void
set_scene_node_control (Run *run, GraftSceneNode *node)
{
  LGroup *lgroup = g_hash_table_lookup (run->self->node_groups, node->node);

  if (lgroup == NULL)
    return;
  if (lgroup->kind == LGROUP_CONTROL && lgroup->control == node->node)
    {
      node->inline_group = lgroup->group;
      node->inline_expanded = run->expanded[lgroup->id];
      lgroup = lgroup->parent;
    }
  node->dead = lgroup->dead;
}

/* Upper bounds of what assemble() adds to the scene. */
static void
count_scene_items (Run *run, LGroup *lgroup, guint *n_nodes, guint *n_groups, guint *n_edges)
{
  GroupLayout *layout = run->layouts[lgroup->id];

  *n_edges += layout->edges->len;
  for (guint i = 0; i < layout->items->len; i++)
    {
      Item *item = &g_array_index (layout->items, Item, i);

      if (item->kind == ITEM_GROUP)
        {
          (*n_groups)++;
          if (item->expanded)
            count_scene_items (run, item->ref, n_nodes, n_groups, n_edges);
        }
      else
        (*n_nodes)++;
    }
}

static void
assemble (Run *run, GraftScene *scene, LGroup *lgroup, double ox, double oy, int parent_group)
{
  GroupLayout *layout = run->layouts[lgroup->id];
  GraftLayoutDirection direction = run->options.direction;
  g_autofree double *lefts = g_new (double, MAX (layout->items->len, 1));
  g_autofree double *tops = g_new (double, MAX (layout->items->len, 1));
  g_autoptr (GArray) placed_labels = g_array_new (FALSE, FALSE, sizeof (GraftRect));

  for (guint i = 0; i < layout->items->len; i++)
    {
      Item *item = &g_array_index (layout->items, Item, i);
      GraftRect rect = { ox + item->cx - item->width / 2, oy + item->cy - item->height / 2,
                         item->width, item->height };

      lefts[i] = rect.x;
      tops[i] = rect.y;
      switch (item->kind)
        {
        case ITEM_NODE:
        case ITEM_INPUT:
        case ITEM_OUTPUT:
          {
            GraftSceneNode node = { 0 };

            node.kind = item->kind == ITEM_NODE ? GRAFT_SCENE_NODE_OP
                        : item->kind == ITEM_INPUT ? GRAFT_SCENE_NODE_INPUT : GRAFT_SCENE_NODE_OUTPUT;
            if (item->kind == ITEM_NODE)
              node.node = item->ref;
            else
              node.value = item->ref;
            node.rect = rect;
            node.category = item->category;
            node.lines = item->lines;
            node.group = parent_group;
            if (item->kind == ITEM_NODE)
              set_scene_node_control (run, &node);
            graft_scene_add_node (scene, &node);
            break;
          }
        case ITEM_GROUP:
          {
            LGroup *child = item->ref;
            GraftSceneGroup group = { 0 };
            guint index;

            group.group = child->group;
            group.title = child->title;
            group.class_name = child->group->class_name;
            group.total_nodes = child->total_nodes;
            group.expanded = item->expanded;
            group.rect = rect;
            group.header_height = item->expanded ? GROUP_HEADER : 0;
            group.lines = item->lines;
            group.parent = parent_group;
            group.depth = child->depth;
            group.dead = child->dead;
            group.control = child->kind != LGROUP_MODULE;
            index = graft_scene_add_group (scene, &group);
            if (item->expanded)
              assemble (run, scene, child, rect.x + (rect.width - run->layouts[child->id]->width) / 2,
                        rect.y + GROUP_HEADER, index);
            break;
          }
        case ITEM_IN_PORT:
        case ITEM_OUT_PORT:
        default:
          break;
        }
    }

  for (guint i = 0; i < layout->edges->len; i++)
    {
      Edge *edge = &g_array_index (layout->edges, Edge, i);
      Item *src = &g_array_index (layout->items, Item, edge->src);
      Item *dst = &g_array_index (layout->items, Item, edge->dst);
      GraftPoint tip = { ox + edge->tip.x, oy + edge->tip.y };
      GraftPoint label_pos = { 0 };
      GraftPoint from = { 0 }, to = { 0 };
      gboolean from_port = FALSE, to_port = FALSE;
      g_autofree char *label = NULL;
      const char *pooled_label = NULL;
      GraftTextRole role = GRAFT_TEXT_EDGE;
      GraftPoint *points, *end;
      guint n_points, index;

      if (edge->n_points == 0 || edge->value == NULL)
        continue;
      if (src->kind == ITEM_GROUP && src->expanded)
        from = port_position (run, src, lefts[edge->src], tops[edge->src],
                              run->layouts[((LGroup *) src->ref)->id]->out_ports, edge->value, &from_port);
      if (dst->kind == ITEM_GROUP && dst->expanded)
        to = port_position (run, dst, lefts[edge->dst], tops[edge->dst],
                            run->layouts[((LGroup *) dst->ref)->id]->in_ports, edge->value, &to_port);
      /* From a port inside an expanded box: a cubic to the edge's start,
       * which it replaces; into one: a cubic from its end. */
      n_points = edge->n_points + (from_port ? 3 : 0) + (to_port ? 3 : 0);
      points = end = graft_scene_alloc_points (scene, n_points);
      if (from_port)
        end = put_join (end, from, (GraftPoint) { ox + edge->points[0].x, oy + edge->points[0].y }, direction,
                        TRUE);
      for (guint p = from_port ? 1 : 0; p < edge->n_points; p++)
        *end++ = (GraftPoint) { ox + edge->points[p].x, oy + edge->points[p].y };
      if (to_port)
        put_join (end, end[-1], to, direction, FALSE);

      role = graft_value_shape_label_role (edge->value, run->inference);
      if (edge->labelled && (label = graft_value_shape_label (edge->value, run->inference)) != NULL)
        {
          pooled_label = graft_label_pool_intern (run->self->labels, label);
          if (!place_label (run, layout, edge, pooled_label, role, ox, oy, lgroup->kind != LGROUP_MODULE,
                            placed_labels, &label_pos))
            pooled_label = NULL;
        }

      index = graft_scene_add_edge (scene, edge->value, points, n_points, edge->has_arrow, tip,
                                    (char *) pooled_label, label_pos);
      graft_scene_get_edge (scene, index)->label_inferred = role == GRAFT_TEXT_EDGE_INFERRED;
    }
}

GraftScene *
graft_layout_compute (GraftLayout *self, GCancellable *cancellable, GraftProgressFunc progress,
                      gpointer progress_data, GError **error)
{
  Run run = { self };
  g_autoptr (GPtrArray) order = g_ptr_array_new ();
  g_autoptr (GPtrArray) todo = g_ptr_array_new ();
  guint hits = 0;
  GraftScene *scene;

  g_mutex_lock (&self->lock);
  run.expanded = g_memdup2 (self->expanded, self->groups->len * sizeof (gboolean));
  run.options = self->options;
  run.inference = self->inference != NULL ? graft_inference_ref (self->inference) : NULL;
  run.inference_serial = self->inference_serial;
  g_mutex_unlock (&self->lock);
  run.signatures = g_new0 (guint64, self->groups->len);
  run.layouts = g_new0 (GroupLayout *, self->groups->len);
  run.measure = graft_text_context_new ();

  collect_expanded (&run, self->root, order);
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < order->len; i++)
    {
      LGroup *lgroup = g_ptr_array_index (order, i);
      CacheKey key;
      GroupLayout *cached;

      compute_signature (&run, lgroup);
      key = (CacheKey) { lgroup, run.signatures[lgroup->id] };
      cached = g_hash_table_lookup (self->cache, &key);
      if (cached != NULL)
        {
          run.layouts[lgroup->id] = group_layout_ref (cached);
          hits++;
        }
      else
        g_ptr_array_add (todo, lgroup);
    }
  g_mutex_unlock (&self->lock);

  /* order is children first, so every child's size is known in time. */
  for (guint i = 0; i < todo->len; i++)
    {
      LGroup *lgroup = g_ptr_array_index (todo, i);
      GroupLayout *layout;
      CacheKey *key;

      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          run_clear (&run);
          return NULL;
        }
      layout = layout_group (&run, lgroup, error);
      if (layout == NULL)
        {
          run_clear (&run);
          return NULL;
        }
      run.layouts[lgroup->id] = layout;
      key = g_new (CacheKey, 1);
      *key = (CacheKey) { lgroup, run.signatures[lgroup->id] };
      g_mutex_lock (&self->lock);
      g_hash_table_replace (self->cache, key, group_layout_ref (layout));
      g_mutex_unlock (&self->lock);
      /* In steps of a percent at most: each report is a main-loop source
       * in the window, and a big graph has tens of thousands of groups. */
      if (progress != NULL && ((i + 1) * 100 / todo->len != i * 100 / todo->len || i + 1 == todo->len))
        progress ((double) (i + 1) / todo->len, progress_data);
    }

  /* The scene borrows the labels of the layout's pool, and the titles of
   * its groups, which live as long as the layout. */
  scene = graft_scene_new_borrowing (self->graph, g_object_ref (self), g_object_unref);
  {
    guint n_nodes = 0, n_groups = 0, n_edges = 0;

    count_scene_items (&run, self->root, &n_nodes, &n_groups, &n_edges);
    graft_scene_reserve (scene, n_nodes, n_groups, n_edges);
  }
  assemble (&run, scene, self->root, 0, 0, -1);
  graft_scene_finish (scene);

  g_mutex_lock (&self->lock);
  self->last_hits = hits;
  self->last_runs = todo->len;
  g_mutex_unlock (&self->lock);
  run_clear (&run);
  return scene;
}

void
graft_layout_get_last_stats (GraftLayout *self, guint *cache_hits, guint *dot_runs)
{
  g_mutex_lock (&self->lock);
  if (cache_hits != NULL)
    *cache_hits = self->last_hits;
  if (dot_runs != NULL)
    *dot_runs = self->last_runs;
  g_mutex_unlock (&self->lock);
}

typedef struct {
  GraftProgressFunc progress;
  gpointer progress_data;
} ComputeData;

static void
compute_thread (GTask *task, gpointer source_object, gpointer task_data, GCancellable *cancellable)
{
  ComputeData *data = task_data;
  GError *error = NULL;
  GraftScene *scene;

  scene = graft_layout_compute (GRAFT_LAYOUT (source_object), cancellable, data->progress, data->progress_data,
                                &error);
  if (scene == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, scene, (GDestroyNotify) graft_scene_free);
}

void
graft_layout_compute_async (GraftLayout *self, GCancellable *cancellable, GraftProgressFunc progress,
                            gpointer progress_data, GAsyncReadyCallback callback, gpointer user_data)
{
  g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
  ComputeData *data = g_new0 (ComputeData, 1);

  data->progress = progress;
  data->progress_data = progress_data;
  g_task_set_task_data (task, data, g_free);
  g_task_set_source_tag (task, graft_layout_compute_async);
  g_task_run_in_thread (task, compute_thread);
}

GraftScene *
graft_layout_compute_finish (GraftLayout *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
