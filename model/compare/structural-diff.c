#include "compare/structural-diff.h"

#include <string.h>
#include "compare/op-family.h"

static void
change_free (GraftChange *change)
{
  g_free (change->what);
  g_free (change->before);
  g_free (change->after);
  g_free (change);
}

static void
group_free (GraftGroupDiff *group)
{
  g_free (group->path);
  g_free (group);
}

static GraftChange *
add_change (GraftStructuralDiff *self, GraftChangeKind kind, GraftNode *a, GraftNode *b, const char *what,
            char *before /* transfer full */, char *after /* transfer full */)
{
  GraftChange *change = g_new0 (GraftChange, 1);
  change->kind = kind;
  change->a = a;
  change->b = b;
  change->what = g_strdup (what);
  change->before = before;
  change->after = after;
  g_ptr_array_add (self->changes, change);
  return change;
}

static GraftGroupDiff *
group_for (GHashTable *groups, GraftNode *node)
{
  const char *path = node && node->group && node->group->path ? node->group->path : "";
  GraftGroupDiff *group = g_hash_table_lookup (groups, path);
  if (group == NULL)
    {
      group = g_new0 (GraftGroupDiff, 1);
      group->path = g_strdup (path);
      g_hash_table_insert (groups, group->path, group);
    }
  return group;
}

static char *
tensor_text (GraftTensor *t)
{
  g_autofree char *type = graft_tensor_describe (t);
  gint64 n = graft_tensor_get_numel (t);
  GraftTensorStats stats;
  if ((n < 0 || n > 8) && graft_tensor_compute_stats (t, &stats, NULL))
    return g_strdup_printf ("%s (min %.4g, max %.4g, mean %.4g)", type, stats.min, stats.max, stats.mean);
  if (n < 0 || n > 8)
    return g_steal_pointer (&type);
  GString *s = g_string_new (type);
  g_string_append (s, " [");
  for (gint64 k = 0; k < n; k++)
    g_string_append_printf (s, "%s%g", k ? ", " : "", graft_tensor_get_element_as_double (t, k));
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static gboolean
same_data (GraftTensor *x, GraftTensor *y)
{
  if (x->dtype != y->dtype || x->rank != y->rank)
    return FALSE;
  for (int d = 0; d < x->rank; d++)
    if (x->dims[d] != y->dims[d])
      return FALSE;
  GBytes *bx = graft_tensor_get_data (x, NULL), *by = graft_tensor_get_data (y, NULL);
  return bx && by && g_bytes_equal (bx, by);
}

/* The constant data of an input: an initializer or a Constant's tensor. */
static GraftTensor *
constant_of (GraftValue *v)
{
  if (v == NULL)
    return NULL;
  if (v->initializer)
    return v->initializer;
  if (v->producer && strcmp (v->producer->op, "onnx::Constant") == 0)
    {
      GraftAttribute *value = graft_node_get_attribute (v->producer, "value");
      return value && value->type == GRAFT_ATTR_TENSOR ? value->t : NULL;
    }
  return NULL;
}

/* A TorchScript argument left at its default on one side and spelled out
 * on the other (dtype=None, pin_memory=False). */
static gboolean
is_default_argument (const GraftAttribute *attr)
{
  return attr->type == GRAFT_ATTR_NONE || (attr->type == GRAFT_ATTR_BOOL && attr->i == 0);
}

/* A TorchScript call's positional arguments: attribute "argN" holds
 * argument N (a constant folded by the loader), the inputs fill the other
 * places in order. */
typedef struct {
  GraftAttribute *attr;
  GraftValue *value;
} Argument;

static gboolean
positional_index (const GraftAttribute *attr, guint *index)
{
  char *end = NULL;
  if (!g_str_has_prefix (attr->name, "arg"))
    return FALSE;
  guint64 n = g_ascii_strtoull (attr->name + 3, &end, 10);
  if (end == attr->name + 3 || *end != '\0' || n > 4096)
    return FALSE;
  *index = (guint) n;
  return TRUE;
}

static GArray *
torchscript_arguments (GraftNode *node)
{
  GArray *args = g_array_new (FALSE, TRUE, sizeof (Argument));
  guint n = node->inputs->len, index;
  for (guint i = 0; i < node->attributes->len; i++)
    n += positional_index (node->attributes->pdata[i], &index);
  g_array_set_size (args, n);
  for (guint i = 0; i < node->attributes->len; i++)
    if (positional_index (node->attributes->pdata[i], &index))
      {
        if (index >= args->len)
          g_array_set_size (args, index + 1);
        g_array_index (args, Argument, index).attr = node->attributes->pdata[i];
      }
  guint next = 0;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      while (next < args->len && g_array_index (args, Argument, next).attr)
        next++;
      if (next == args->len)
        g_array_set_size (args, next + 1);
      g_array_index (args, Argument, next++).value = node->inputs->pdata[i];
    }
  return args;
}

/* The number an argument holds when it is a literal or a one-element
 * constant input; FALSE for computed inputs and other kinds. */
static gboolean
argument_number (const Argument *arg, double *out)
{
  if (arg->attr && (arg->attr->type == GRAFT_ATTR_INT || arg->attr->type == GRAFT_ATTR_BOOL))
    return *out = (double) arg->attr->i, TRUE;
  if (arg->attr && arg->attr->type == GRAFT_ATTR_FLOAT)
    return *out = arg->attr->f, TRUE;
  if (arg->value && arg->value->initializer && graft_tensor_get_numel (arg->value->initializer) == 1)
    return *out = graft_tensor_get_element_as_double (arg->value->initializer, 0), TRUE;
  return FALSE;
}

static char *
argument_text (const Argument *arg)
{
  if (arg->attr)
    return graft_attribute_format_value (arg->attr, 16);
  if (arg->value && arg->value->initializer)
    return tensor_text (arg->value->initializer);
  return g_strdup (arg->value ? arg->value->name : "(absent)");
}

static void
compare_torchscript_arguments (GraftStructuralDiff *self, GraftNode *a, GraftNode *b)
{
  g_autoptr(GArray) xa = torchscript_arguments (a);
  g_autoptr(GArray) xb = torchscript_arguments (b);
  for (guint k = 0; k < MAX (xa->len, xb->len); k++)
    {
      Argument none = { NULL, NULL };
      const Argument *x = k < xa->len ? &g_array_index (xa, Argument, k) : &none;
      const Argument *y = k < xb->len ? &g_array_index (xb, Argument, k) : &none;
      double vx, vy;
      gboolean differ;
      if ((x->attr == NULL && x->value == NULL && y->attr && is_default_argument (y->attr)) ||
          (y->attr == NULL && y->value == NULL && x->attr && is_default_argument (x->attr)))
        continue;
      if (x->attr && y->attr)
        {
          g_autofree char *fx = graft_attribute_format_value (x->attr, 16);
          g_autofree char *fy = graft_attribute_format_value (y->attr, 16);
          differ = strcmp (fx, fy) != 0;
        }
      else if (argument_number (x, &vx) && argument_number (y, &vy))
        differ = vx != vy;
      else if (x->value && y->value && x->value->initializer && y->value->initializer)
        differ = !same_data (x->value->initializer, y->value->initializer);
      else
        /* a computed argument: equal data flows in, or a baked-constant
         * note says what the other side fixed */
        continue;
      if (!differ)
        continue;
      g_autofree char *what = g_strdup_printf ("arg%u", k);
      gboolean constant = x->value && y->value;
      add_change (self, constant ? GRAFT_CHANGE_CONSTANT : GRAFT_CHANGE_ATTRIBUTE, a, b,
                  constant ? y->value->name : what, argument_text (x), argument_text (y));
    }
}

static void
compare_attributes (GraftStructuralDiff *self, GraftNode *a, GraftNode *b, gboolean torchscript)
{
  guint index;
  if (torchscript)
    compare_torchscript_arguments (self, a, b);
  for (guint side = 0; side < 2; side++)
    {
      GraftNode *x_node = side == 0 ? a : b, *y_node = side == 0 ? b : a;
      for (guint i = 0; i < x_node->attributes->len; i++)
        {
          GraftAttribute *x = x_node->attributes->pdata[i];
          GraftAttribute *y = graft_node_get_attribute (y_node, x->name);
          if (x->type == GRAFT_ATTR_GRAPH || x->type == GRAFT_ATTR_GRAPHS || (side == 1 && y != NULL) ||
              (torchscript && positional_index (x, &index)) || (torchscript && y == NULL && is_default_argument (x)))
            continue;
          g_autofree char *vx = graft_attribute_format_value (x, 16);
          g_autofree char *vy = y ? graft_attribute_format_value (y, 16) : g_strdup ("(absent)");
          if (g_strcmp0 (vx, vy) == 0)
            continue;
          if (side == 0)
            add_change (self, GRAFT_CHANGE_ATTRIBUTE, a, b, x->name, g_steal_pointer (&vx), g_steal_pointer (&vy));
          else
            add_change (self, GRAFT_CHANGE_ATTRIBUTE, a, b, x->name, g_steal_pointer (&vy), g_steal_pointer (&vx));
        }
    }
}

/* The dims where a and b differ are all a fixed size on one side and a
 * symbol on the other that a graph input changed the same way (x: 2×3 →
 * batch×3 makes y: 2×10 → batch×10): a consequence of the input change,
 * not a change of its own. */
static gboolean
follows_inputs (GraftStructuralDiff *self, const GraftShape *a, const GraftShape *b)
{
  if (a->rank != b->rank)
    return FALSE;
  for (int d = 0; d < a->rank; d++)
    {
      const GraftDim *x = &a->dims[d], *y = &b->dims[d];
      if (graft_dim_equal (x, y))
        continue;
      const GraftDim *fixed = x->kind == GRAFT_DIM_FIXED ? x : y, *symbolic = x->kind == GRAFT_DIM_FIXED ? y : x;
      if (fixed->kind != GRAFT_DIM_FIXED || symbolic->kind != GRAFT_DIM_SYMBOLIC)
        return FALSE;
      gpointer traced;
      if (!g_hash_table_lookup_extended (self->input_dims, symbolic->symbol, NULL, &traced) ||
          GPOINTER_TO_SIZE (traced) != (gsize) fixed->value)
        return FALSE;
    }
  return TRUE;
}

/* symbol → fixed size, for the graph input dims that changed between the
 * two (x: 2×3×8×8 → batch×3×8×8 gives batch → 2). */
static void
collect_input_dims (GraftStructuralDiff *self)
{
  GArray *values = self->alignment->value_pairs;
  for (guint i = 0; i < values->len; i++)
    {
      GraftValuePair *vp = &g_array_index (values, GraftValuePair, i);
      if (!vp->a->is_graph_input || !vp->b->is_graph_input || vp->a->shape.rank != vp->b->shape.rank)
        continue;
      for (int d = 0; d < vp->a->shape.rank; d++)
        {
          const GraftDim *x = &vp->a->shape.dims[d], *y = &vp->b->shape.dims[d];
          if (x->kind == GRAFT_DIM_FIXED && y->kind == GRAFT_DIM_SYMBOLIC)
            g_hash_table_insert (self->input_dims, (gpointer) y->symbol, GSIZE_TO_POINTER (x->value));
          else if (y->kind == GRAFT_DIM_FIXED && x->kind == GRAFT_DIM_SYMBOLIC)
            g_hash_table_insert (self->input_dims, (gpointer) x->symbol, GSIZE_TO_POINTER (y->value));
        }
    }
}

/* Where a file declares no shape, shape inference may know it: a change
 * there (a padding that shrinks every later activation) is reported when
 * the ranks differ or both shapes are fully known and differ; symbolic
 * dims that inference names on its own are not compared. */
static void
compare_inferred_shapes (GraftStructuralDiff *self, GraftNode *a, GraftNode *b, GraftValue *x, GraftValue *y)
{
  const GraftShape *sx = graft_value_get_best_shape (x, self->inference_a);
  const GraftShape *sy = graft_value_get_best_shape (y, self->inference_b);
  if (sx == NULL || sy == NULL || sx->rank < 0 || sy->rank < 0)
    return;
  gboolean differ = sx->rank != sy->rank
                    || (graft_shape_is_fully_fixed (sx) && graft_shape_is_fully_fixed (sy) && !graft_shape_equal (sx, sy));
  if (differ && !follows_inputs (self, sx, sy))
    add_change (self, GRAFT_CHANGE_SHAPE, a, b, y->name, graft_shape_to_string (sx),
                graft_shape_to_string (sy))->inferred = TRUE;
}

static guint
compare_nodes (GraftStructuralDiff *self, GraftNode *a, GraftNode *b, gboolean same_format)
{
  guint before = self->changes->len;
  gboolean torchscript = graft_model_get_format (self->alignment->a) == GRAFT_MODEL_FORMAT_TORCHSCRIPT;
  /* a trace records aten::_convolution where a script calls aten::conv2d:
   * the same operation spelled with other arguments */
  gboolean respelled = torchscript && a->op != b->op &&
                       strcmp (graft_op_family_lookup (a->op)->family, graft_op_family_lookup (b->op)->family) == 0;
  if (same_format && a->op != b->op && !respelled)
    add_change (self, GRAFT_CHANGE_OP, a, b, "op", g_strdup (a->op), g_strdup (b->op));
  if (same_format && !respelled)
    {
      compare_attributes (self, a, b, torchscript);
      for (guint i = 0; !torchscript && i < a->inputs->len && i < b->inputs->len; i++)
        {
          GraftTensor *x = constant_of (a->inputs->pdata[i]), *y = constant_of (b->inputs->pdata[i]);
          if (x && y && !same_data (x, y))
            add_change (self, GRAFT_CHANGE_CONSTANT, a, b, ((GraftValue *) b->inputs->pdata[i])->name,
                        tensor_text (x), tensor_text (y));
        }
    }
  for (guint j = 0; j < a->outputs->len && j < b->outputs->len; j++)
    {
      GraftValue *x = a->outputs->pdata[j], *y = b->outputs->pdata[j];
      if (x == NULL || y == NULL)
        continue;
      if (x->dtype != GRAFT_DTYPE_UNDEFINED && y->dtype != GRAFT_DTYPE_UNDEFINED && x->dtype != y->dtype)
        add_change (self, GRAFT_CHANGE_DTYPE, a, b, y->name, g_strdup (graft_dtype_to_string (x->dtype)),
                    g_strdup (graft_dtype_to_string (y->dtype)));
      if (x->shape.rank >= 0 && y->shape.rank >= 0)
        {
          if (!graft_shape_equal (&x->shape, &y->shape) && !follows_inputs (self, &x->shape, &y->shape))
            add_change (self, GRAFT_CHANGE_SHAPE, a, b, y->name, graft_shape_to_string (&x->shape),
                        graft_shape_to_string (&y->shape));
          continue;
        }
      compare_inferred_shapes (self, a, b, x, y);
    }
  return self->changes->len - before;
}

static void
compare_inputs (GraftStructuralDiff *self)
{
  GArray *values = self->alignment->value_pairs;
  for (guint i = 0; i < values->len; i++)
    {
      GraftValuePair *vp = &g_array_index (values, GraftValuePair, i);
      if (!vp->a->is_graph_input || !vp->b->is_graph_input)
        continue;
      if (vp->a->shape.rank >= 0 && vp->b->shape.rank >= 0 && !graft_shape_equal (&vp->a->shape, &vp->b->shape))
        add_change (self, GRAFT_CHANGE_INPUT, NULL, NULL, vp->b->name, graft_shape_to_string (&vp->a->shape),
                    graft_shape_to_string (&vp->b->shape));
      if (vp->a->dtype != GRAFT_DTYPE_UNDEFINED && vp->b->dtype != GRAFT_DTYPE_UNDEFINED && vp->a->dtype != vp->b->dtype)
        add_change (self, GRAFT_CHANGE_INPUT, NULL, NULL, vp->b->name, g_strdup (graft_dtype_to_string (vp->a->dtype)),
                    g_strdup (graft_dtype_to_string (vp->b->dtype)));
    }
}

static char *
short_name (GraftModel *model, const char *fallback)
{
  const char *path = graft_model_get_path (model);
  return path ? g_path_get_basename (path) : g_strdup (fallback);
}

static void
append_clause (GString *s, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
append_clause (GString *s, const char *format, ...)
{
  va_list args;
  if (s->len)
    g_string_append (s, "; ");
  va_start (args, format);
  g_string_append_vprintf (s, format, args);
  va_end (args);
}

static void
summarise (GraftStructuralDiff *self)
{
  GraftAlignment *al = self->alignment;
  g_autofree char *name_a = short_name (al->a, "A");
  g_autofree char *name_b = short_name (al->b, "B");
  guint flow[2] = { 0, 0 }, checks[2] = { 0, 0 }, shapes[2] = { 0, 0 }, numbers[2] = { 0, 0 }, folded[2] = { 0, 0 };
  guint fused[2] = { 0, 0 };
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = al->notes->pdata[i];
      guint s = note->in_a ? 0 : 1;
      switch (note->kind)
        {
        case GRAFT_NOTE_FLATTENED_IF:
        case GRAFT_NOTE_UNROLLED_LOOP: flow[s]++; break;
        case GRAFT_NOTE_RUNTIME_CHECK: checks[s]++; break;
        case GRAFT_NOTE_BAKED_SHAPE: shapes[s]++; break;
        case GRAFT_NOTE_BAKED_NUMBER: numbers[s]++; break;
        case GRAFT_NOTE_FOLDED: folded[s]++; break;
        case GRAFT_NOTE_DECOMPOSED: fused[s]++; break;
        default: break;
        }
    }
  GString *s = g_string_new (NULL);
  for (guint k = 0; k < 2; k++)
    {
      const char *mine = k == 0 ? name_a : name_b, *theirs = k == 0 ? name_b : name_a;
      if (flow[k])
        append_clause (s, "%s keeps %u control-flow block%s that %s flattened", mine, flow[k], flow[k] == 1 ? "" : "s", theirs);
      if (checks[k])
        append_clause (s, "%s keeps %u runtime check%s that %s dropped", mine, checks[k], checks[k] == 1 ? "" : "s", theirs);
      if (shapes[k])
        append_clause (s, "%s baked %u shape constant%s", theirs, shapes[k], shapes[k] == 1 ? "" : "s");
      if (numbers[k])
        append_clause (s, "%s baked %u number%s read from tensors", theirs, numbers[k], numbers[k] == 1 ? "" : "s");
      if (folded[k])
        append_clause (s, "%s folded %u BatchNorm%s into convolutions", theirs, folded[k], folded[k] == 1 ? "" : "s");
      if (fused[k])
        append_clause (s, "%s decomposed %u fused op%s of %s", theirs, fused[k], fused[k] == 1 ? "" : "s", mine);
    }
  append_clause (s, "%u node%s matched exactly, %u inferred", self->n_exact, self->n_exact == 1 ? "" : "s", self->n_inferred);
  if (al->only_a->len || al->only_b->len)
    append_clause (s, "%u only in %s, %u only in %s", al->only_a->len, name_a, al->only_b->len, name_b);
  if (self->n_changed_nodes)
    append_clause (s, "%u matched node%s changed", self->n_changed_nodes, self->n_changed_nodes == 1 ? "" : "s");
  guint inputs = 0;
  for (guint i = 0; i < self->changes->len; i++)
    inputs += ((GraftChange *) self->changes->pdata[i])->kind == GRAFT_CHANGE_INPUT;
  if (inputs)
    append_clause (s, "%u input type%s changed", inputs, inputs == 1 ? "" : "s");
  self->summary = g_string_free (s, FALSE);
}

static int
compare_groups (gconstpointer x, gconstpointer y)
{
  return strcmp ((*(GraftGroupDiff *const *) x)->path, (*(GraftGroupDiff *const *) y)->path);
}

GraftStructuralDiff *
graft_structural_diff_new (GraftAlignment *alignment)
{
  GraftStructuralDiff *self = g_new0 (GraftStructuralDiff, 1);
  self->alignment = alignment;
  self->changes = g_ptr_array_new_with_free_func ((GDestroyNotify) change_free);
  self->input_dims = g_hash_table_new (g_str_hash, g_str_equal);
  self->inference_a = graft_shape_inference_run (alignment->a, NULL);
  self->inference_b = graft_shape_inference_run (alignment->b, NULL);
  collect_input_dims (self);
  g_autoptr(GHashTable) groups = g_hash_table_new (g_str_hash, g_str_equal);
  gboolean same_format = graft_model_get_format (alignment->a) == graft_model_get_format (alignment->b);

  for (guint i = 0; i < alignment->node_pairs->len; i++)
    {
      GraftNodePair *pair = &g_array_index (alignment->node_pairs, GraftNodePair, i);
      if (pair->kind == GRAFT_MATCH_EXACT)
        self->n_exact++;
      else
        self->n_inferred++;
      GraftGroupDiff *group = group_for (groups, pair->a);
      group->matched++;
      /* an unrolled iteration has its counter baked in by design */
      gboolean unrolled = strcmp (pair->reason, "unrolled loop iteration") == 0;
      if (compare_nodes (self, pair->a, pair->b, same_format && !unrolled) > 0)
        {
          self->n_changed_nodes++;
          group->changed++;
        }
    }
  compare_inputs (self);
  for (guint i = 0; i < alignment->only_a->len; i++)
    group_for (groups, alignment->only_a->pdata[i])->only_a++;
  for (guint i = 0; i < alignment->only_b->len; i++)
    group_for (groups, alignment->only_b->pdata[i])->only_b++;
  for (guint i = 0; i < alignment->notes->len; i++)
    {
      GraftAlignmentNote *note = alignment->notes->pdata[i];
      self->n_notes[note->kind]++;
      group_for (groups, note->node)->notes++;
    }
  self->groups = g_ptr_array_new_with_free_func ((GDestroyNotify) group_free);
  GHashTableIter iter;
  gpointer group;
  g_hash_table_iter_init (&iter, groups);
  while (g_hash_table_iter_next (&iter, NULL, &group))
    g_ptr_array_add (self->groups, group);
  g_ptr_array_sort (self->groups, compare_groups);
  summarise (self);
  return self;
}

void
graft_structural_diff_free (GraftStructuralDiff *self)
{
  if (self == NULL)
    return;
  g_ptr_array_unref (self->changes);
  g_ptr_array_unref (self->groups);
  g_hash_table_unref (self->input_dims);
  g_clear_pointer (&self->inference_a, graft_inference_unref);
  g_clear_pointer (&self->inference_b, graft_inference_unref);
  g_free (self->summary);
  g_free (self);
}

gboolean
graft_structural_diff_is_equivalent (GraftStructuralDiff *self)
{
  for (guint k = 0; k < GRAFT_N_NOTE_KINDS; k++)
    if (self->n_notes[k] && k != GRAFT_NOTE_FOLDED && k != GRAFT_NOTE_RUNTIME_CHECK && k != GRAFT_NOTE_DECOMPOSED)
      return FALSE;
  return self->changes->len == 0 && self->alignment->only_a->len == 0 && self->alignment->only_b->len == 0;
}

const char *
graft_change_kind_to_string (GraftChangeKind kind)
{
  static const char *const names[] = { "op", "attribute", "constant", "shape", "dtype", "input" };
  return kind < G_N_ELEMENTS (names) ? names[kind] : "unknown";
}
