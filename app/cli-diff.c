/* graft-cli diff: compares two models (a trace and a script of the same
 * module, a TorchScript model and its ONNX export, an ONNX model and an
 * edit of it).
 *
 *   graft-cli diff A B [--json] [--input NAME=FILE]... [--random] [--seed N]
 *                  [--dim NAME=V[,V...]]... [--shape NAME=DIMS[,DIMS...]]...
 *                  [--rtol R] [--atol A] [--pairs]
 *
 * Always aligns the two graphs and prints the structural diff; with
 * --input or --random also runs both in Graft's runtime, once per shape
 * setting (the k-th value of every --dim / --shape list; a shorter list
 * keeps its last value), and compares outputs and matched intermediates.
 * Exit status: 0 equivalent (no structural difference but folded
 * BatchNorms and runtime checks, and all outputs close), 1 they differ,
 * 2 error. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <json-glib/json-glib.h>
#include "cli.h"
#include "loader.h"
#include "compare/alignment.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "runtime/inputs.h"
#include "runtime/tensor-file.h"

typedef struct {
  gboolean json;
  gboolean pairs;
  char **inputs;
  gboolean random;
  gint64 seed;
  char **dims;
  char **shapes;
  double rtol;
  double atol;
} DiffOptions;

/* A "NAME=V1,V2" list: name → GPtrArray of the value strings. */
static gboolean
parse_lists (char **args, const char *option, GHashTable *lists, guint *n_settings, GError **error)
{
  for (guint i = 0; args && args[i]; i++)
    {
      const char *eq = strchr (args[i], '=');
      if (eq == NULL || eq == args[i] || eq[1] == '\0')
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s %s: expected NAME=VALUE[,VALUE...]",
                       option, args[i]);
          return FALSE;
        }
      g_autofree char *name = g_strndup (args[i], eq - args[i]);
      GPtrArray *values = g_hash_table_lookup (lists, name);
      if (values == NULL)
        {
          values = g_ptr_array_new_with_free_func (g_free);
          g_hash_table_insert (lists, g_steal_pointer (&name), values);
        }
      g_auto(GStrv) parts = g_strsplit (eq + 1, ",", -1);
      for (guint k = 0; parts[k]; k++)
        g_ptr_array_add (values, g_strdup (parts[k]));
      *n_settings = MAX (*n_settings, values->len);
    }
  return TRUE;
}

static const char *
setting_value (GHashTable *lists, const char *name, guint setting)
{
  GPtrArray *values = name ? g_hash_table_lookup (lists, name) : NULL;
  if (values == NULL || values->len == 0)
    return NULL;
  return values->pdata[MIN (setting, values->len - 1)];
}

static gboolean
parse_int (const char *text, gint64 *out)
{
  char *end = NULL;
  gint64 v = g_ascii_strtoll (text, &end, 10);
  if (end == text || *end != '\0' || v < 0)
    return FALSE;
  *out = v;
  return TRUE;
}

/* "1x3x224x224" → rank and dims. */
static gboolean
parse_shape (const char *text, int *rank, gint64 *dims, GError **error)
{
  g_auto(GStrv) parts = g_strsplit (text, "x", -1);
  *rank = 0;
  for (guint k = 0; parts[k]; k++)
    {
      if (*rank >= GRAFT_RT_MAX_RANK || (strlen (text) > 0 && !parse_int (parts[k], &dims[*rank])))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "--shape: '%s' is not a shape like 1x3x224x224", text);
          return FALSE;
        }
      if (strlen (text) > 0)
        (*rank)++;
    }
  return TRUE;
}

typedef struct {
  GHashTable *tensors;   /* A input name → GraftRtTensor* (owned) */
  char *label;
} InputSet;

static void
input_set_clear (InputSet *set)
{
  g_clear_pointer (&set->tensors, g_hash_table_unref);
  g_clear_pointer (&set->label, g_free);
}

static gboolean
names_set_dim (const GraftShape *shape, GHashTable *dim_lists)
{
  for (int d = 0; d < shape->rank; d++)
    if (shape->dims[d].kind == GRAFT_DIM_SYMBOLIC && g_hash_table_contains (dim_lists, shape->dims[d].symbol))
      return TRUE;
  return FALSE;
}

static GraftRtTensor *
random_for (GraftNumericDiff *nd, GraftValue *v, DiffOptions *opts, GHashTable *dim_lists, GHashTable *shape_lists,
            guint setting, GRand *rng, GError **error)
{
  GraftValue *partner = graft_numeric_diff_get_partner_input (nd, v);
  GraftDType dtype = v->dtype != GRAFT_DTYPE_UNDEFINED ? v->dtype
                     : partner && partner->dtype != GRAFT_DTYPE_UNDEFINED ? partner->dtype : GRAFT_DTYPE_FLOAT32;
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank;
  const char *given = setting_value (shape_lists, v->name, setting);
  if (given == NULL && partner)
    given = setting_value (shape_lists, partner->name, setting);
  if (given)
    {
      if (!parse_shape (given, &rank, dims, error))
        return NULL;
      return graft_runtime_random_tensor (dtype, rank, dims, rng, error);
    }
  /* A's declared shape, unless only B's names the dims --dim sets (the
   * trace's fixed batch against the edit's "batch": run at the new sizes,
   * which is where the fixed model breaks). */
  const GraftShape *shape = v->shape.rank >= 0 ? &v->shape : partner && partner->shape.rank >= 0 ? &partner->shape : NULL;
  if (partner && partner->shape.rank >= 0 && names_set_dim (&partner->shape, dim_lists) &&
      !names_set_dim (&v->shape, dim_lists))
    shape = &partner->shape;
  if (shape == NULL || shape->rank > GRAFT_RT_MAX_RANK)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "input '%s' has no declared shape in either model: give --shape %s=DIMS (e.g. 1x3x224x224) or --input %s=FILE",
                   v->name, v->name, v->name);
      return NULL;
    }
  rank = shape->rank;
  for (int d = 0; d < rank; d++)
    {
      const GraftDim *dim = &shape->dims[d];
      const char *value = dim->kind == GRAFT_DIM_SYMBOLIC ? setting_value (dim_lists, dim->symbol, setting) : NULL;
      if (dim->kind == GRAFT_DIM_FIXED)
        dims[d] = dim->value;
      else if (value == NULL || !parse_int (value, &dims[d]))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "input '%s' dim %d is %s: give --dim %s=VALUE (or --shape %s=DIMS)", v->name, d,
                       dim->kind == GRAFT_DIM_SYMBOLIC ? dim->symbol : "unknown",
                       dim->kind == GRAFT_DIM_SYMBOLIC ? dim->symbol : "NAME", v->name);
          return NULL;
        }
    }
  return graft_runtime_random_tensor (dtype, rank, dims, rng, error);
}

static gboolean
read_given_inputs (GraftNumericDiff *nd, DiffOptions *opts, GHashTable *given, GError **error)
{
  GPtrArray *inputs = graft_numeric_diff_get_inputs (nd);
  for (guint i = 0; opts->inputs && opts->inputs[i]; i++)
    {
      const char *arg = opts->inputs[i];
      const char *eq = strchr (arg, '=');
      GraftValue *target = NULL;
      const char *path = arg;
      if (eq)
        {
          g_autofree char *name = g_strndup (arg, eq - arg);
          for (guint k = 0; k < inputs->len && target == NULL; k++)
            {
              GraftValue *v = inputs->pdata[k], *p = graft_numeric_diff_get_partner_input (nd, v);
              if (g_strcmp0 (v->name, name) == 0 || (p && g_strcmp0 (p->name, name) == 0))
                target = v;
            }
          if (target == NULL)
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--input %s: neither model has an input '%s'",
                           arg, name);
              return FALSE;
            }
          path = eq + 1;
        }
      else
        for (guint k = 0; k < inputs->len && target == NULL; k++)
          if (!g_hash_table_contains (given, ((GraftValue *) inputs->pdata[k])->name))
            target = inputs->pdata[k];
      if (target == NULL)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--input %s: every input is already given", arg);
          return FALSE;
        }
      GraftRtTensor *t = graft_tensor_file_read (path, target->kind, NULL, error);
      if (t == NULL)
        return FALSE;
      g_hash_table_insert (given, target->name, t);
    }
  return TRUE;
}

static GArray *
make_input_sets (GraftNumericDiff *nd, DiffOptions *opts, GError **error)
{
  g_autoptr(GHashTable) dim_lists = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
  g_autoptr(GHashTable) shape_lists = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
  g_autoptr(GHashTable) given = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  guint n_settings = 1;
  if (!parse_lists (opts->dims, "--dim", dim_lists, &n_settings, error) ||
      !parse_lists (opts->shapes, "--shape", shape_lists, &n_settings, error) ||
      !read_given_inputs (nd, opts, given, error))
    return NULL;

  GPtrArray *inputs = graft_numeric_diff_get_inputs (nd);
  g_autoptr(GArray) sets = g_array_new (FALSE, TRUE, sizeof (InputSet));
  g_array_set_clear_func (sets, (GDestroyNotify) input_set_clear);
  for (guint s = 0; s < n_settings; s++)
    {
      InputSet set = { g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref), NULL };
      g_array_append_val (sets, set);
      InputSet *cur = &g_array_index (sets, InputSet, sets->len - 1);
      g_autoptr(GRand) rng = g_rand_new_with_seed ((guint32) opts->seed);
      GString *label = g_string_new (NULL);
      for (guint i = 0; i < inputs->len; i++)
        {
          GraftValue *v = inputs->pdata[i];
          GraftRtTensor *t = g_hash_table_lookup (given, v->name);
          if (t)
            t = graft_rt_tensor_ref (t);
          else if (!opts->random)
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "input '%s' was not given: use --input %s=FILE or --random", v->name, v->name);
              g_string_free (label, TRUE);
              return NULL;
            }
          else if ((t = random_for (nd, v, opts, dim_lists, shape_lists, s, rng, error)) == NULL)
            {
              g_string_free (label, TRUE);
              return NULL;
            }
          g_hash_table_insert (cur->tensors, v->name, t);
          GraftShape shape;
          graft_rt_tensor_get_shape (t, &shape);
          g_autofree char *text = graft_shape_to_string (&shape);
          graft_shape_clear (&shape);
          g_string_append_printf (label, "%s%s: %s", i ? ", " : "", v->name, text);
        }
      cur->label = g_string_free (label, FALSE);
    }
  return g_steal_pointer (&sets);
}

/* ------------------------------------------------------------------ */
/* Output                                                              */

static const char *
node_name (GraftNode *node)
{
  return node && node->name && *node->name ? node->name : node ? node->op : "";
}

static const char *
node_group (GraftNode *node)
{
  return node && node->group && node->group->path ? node->group->path : "";
}

static void
add_string (JsonBuilder *b, const char *member, const char *value)
{
  json_builder_set_member_name (b, member);
  if (value)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

static void
add_int (JsonBuilder *b, const char *member, gint64 value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_int_value (b, value);
}

static void
add_bool (JsonBuilder *b, const char *member, gboolean value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_boolean_value (b, value);
}

static void
add_node_object (JsonBuilder *b, GraftNode *node)
{
  json_builder_begin_object (b);
  add_string (b, "name", node->name ? node->name : "");
  add_string (b, "op", node->op);
  add_string (b, "group", node_group (node));
  json_builder_end_object (b);
}

static void
add_node_json (JsonBuilder *b, const char *member, GraftNode *node)
{
  json_builder_set_member_name (b, member);
  if (node == NULL)
    json_builder_add_null_value (b);
  else
    add_node_object (b, node);
}

static void
add_double (JsonBuilder *b, const char *member, double v)
{
  json_builder_set_member_name (b, member);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}

static void
add_nodes_json (JsonBuilder *b, const char *member, GPtrArray *nodes)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  for (guint i = 0; i < nodes->len; i++)
    add_node_object (b, nodes->pdata[i]);
  json_builder_end_array (b);
}

static void
add_alignment_json (JsonBuilder *b, GraftAlignment *al, GraftStructuralDiff *sd)
{
  json_builder_set_member_name (b, "alignment");
  json_builder_begin_object (b);
  add_int (b, "compute_nodes_a", al->n_compute_a);
  add_int (b, "compute_nodes_b", al->n_compute_b);
  add_int (b, "matched_a", al->n_matched_a);
  add_int (b, "matched_b", al->n_matched_b);
  add_int (b, "exact", sd->n_exact);
  add_int (b, "inferred", sd->n_inferred);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "pairs");
  json_builder_begin_array (b);
  for (guint i = 0; i < al->node_pairs->len; i++)
    {
      GraftNodePair *p = &g_array_index (al->node_pairs, GraftNodePair, i);
      json_builder_begin_object (b);
      add_node_json (b, "a", p->a);
      add_node_json (b, "b", p->b);
      add_string (b, "match", p->kind == GRAFT_MATCH_EXACT ? "exact" : "inferred");
      add_string (b, "reason", p->reason);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);

  json_builder_set_member_name (b, "unmatched");
  json_builder_begin_object (b);
  add_nodes_json (b, "a", al->only_a);
  add_nodes_json (b, "b", al->only_b);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "notes");
  json_builder_begin_array (b);
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *n = al->notes->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "kind", graft_note_kind_to_string (n->kind));
      add_string (b, "side", n->in_a ? "a" : "b");
      add_node_json (b, "node", n->node);
      add_node_json (b, "other", n->other);
      add_nodes_json (b, "absorbed", n->absorbed);
      add_string (b, "description", n->description);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
add_changes_json (JsonBuilder *b, GraftStructuralDiff *sd)
{
  json_builder_set_member_name (b, "changes");
  json_builder_begin_array (b);
  for (guint i = 0; i < sd->changes->len; i++)
    {
      GraftChange *c = sd->changes->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "kind", graft_change_kind_to_string (c->kind));
      add_node_json (b, "a", c->a);
      add_node_json (b, "b", c->b);
      add_string (b, "what", c->what);
      add_string (b, "before", c->before);
      add_string (b, "after", c->after);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);

  json_builder_set_member_name (b, "groups");
  json_builder_begin_array (b);
  for (guint i = 0; i < sd->groups->len; i++)
    {
      GraftGroupDiff *g = sd->groups->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "path", g->path);
      const char *names[] = { "matched", "changed", "only_a", "only_b", "notes" };
      guint values[] = { g->matched, g->changed, g->only_a, g->only_b, g->notes };
      for (guint k = 0; k < G_N_ELEMENTS (names); k++)
        {
          add_int (b, names[k], values[k]);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
add_value_error_json (JsonBuilder *b, const GraftValueError *e)
{
  json_builder_begin_object (b);
  add_string (b, "a", e->a->name);
  add_string (b, "b", e->b->name);
  add_node_json (b, "node_a", e->a->producer);
  add_node_json (b, "node_b", e->b->producer);
  add_bool (b, "close", e->close);
  add_double (b, "max_abs", e->max_abs);
  add_double (b, "max_rel", e->max_rel);
  if (e->shape_differs)
    {
      add_string (b, "shape_a", e->shape_a);
      add_string (b, "shape_b", e->shape_b);
    }
  json_builder_end_object (b);
}

static void
add_numeric_json (JsonBuilder *b, GraftAlignment *al, GPtrArray *runs, DiffOptions *opts)
{
  json_builder_set_member_name (b, "numeric");
  if (runs == NULL)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  add_double (b, "rtol", opts->rtol);
  add_double (b, "atol", opts->atol);
  json_builder_set_member_name (b, "runs");
  json_builder_begin_array (b);
  for (guint r = 0; r < runs->len; r++)
    {
      GraftNumericRun *run = runs->pdata[r];
      g_autofree char *verdict = graft_numeric_run_describe (run, al);
      json_builder_begin_object (b);
      add_string (b, "inputs", run->label);
      add_string (b, "verdict", verdict);
      add_bool (b, "outputs_close", run->outputs_close);
      add_string (b, "error_a", run->error_a);
      add_string (b, "error_b", run->error_b);
      add_int (b, "compared", run->n_compared);
      add_int (b, "divergent", run->n_divergent);
      add_double (b, "seconds_a", run->seconds_a);
      add_double (b, "seconds_b", run->seconds_b);
      json_builder_set_member_name (b, "first_divergent");
      const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
      if (first)
        add_value_error_json (b, first);
      else
        json_builder_add_null_value (b);
      json_builder_set_member_name (b, "values");
      json_builder_begin_array (b);
      for (guint i = 0; i < run->values->len; i++)
        add_value_error_json (b, &g_array_index (run->values, GraftValueError, i));
      json_builder_end_array (b);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static void
print_json (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, DiffOptions *opts, gboolean equivalent,
            double align_seconds)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_string (b, "a", graft_model_get_path (al->a));
  add_string (b, "b", graft_model_get_path (al->b));
  add_bool (b, "equivalent", equivalent);
  add_string (b, "summary", sd->summary);
  add_double (b, "alignment_seconds", align_seconds);
  add_alignment_json (b, al, sd);
  add_changes_json (b, sd);
  add_numeric_json (b, al, runs, opts);
  json_builder_end_object (b);
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  g_autoptr(JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}

static void
print_node_list (const char *title, GPtrArray *nodes)
{
  if (nodes->len == 0)
    return;
  printf ("\n%s (%u):\n", title, nodes->len);
  for (guint i = 0; i < nodes->len; i++)
    printf ("  %-24s %-40s %s\n", ((GraftNode *) nodes->pdata[i])->op, node_name (nodes->pdata[i]), node_group (nodes->pdata[i]));
}

static void
print_text (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, DiffOptions *opts)
{
  printf ("A: %s\nB: %s\n\n%s\n", graft_model_get_path (al->a), graft_model_get_path (al->b), sd->summary);
  printf ("\nAlignment: %u of %u compute nodes of A matched or explained (%.1f%%), %u of %u of B (%.1f%%)\n",
          al->n_matched_a, al->n_compute_a, al->n_compute_a ? 100.0 * al->n_matched_a / al->n_compute_a : 100.0,
          al->n_matched_b, al->n_compute_b, al->n_compute_b ? 100.0 * al->n_matched_b / al->n_compute_b : 100.0);
  if (al->notes->len)
    {
      printf ("\nDifferences explained:\n");
      for (guint i = 0; i < al->notes->len; i++)
        {
          GraftAlignmentNote *n = al->notes->pdata[i];
          printf ("  %-14s %s\n", graft_note_kind_to_string (n->kind), n->description);
        }
    }
  if (sd->changes->len)
    {
      printf ("\nChanged (%u):\n", sd->changes->len);
      for (guint i = 0; i < sd->changes->len; i++)
        {
          GraftChange *c = sd->changes->pdata[i];
          printf ("  %-10s %s %s: %s → %s\n", graft_change_kind_to_string (c->kind),
                  c->b ? node_name (c->b) : "input", c->what, c->before, c->after);
        }
    }
  print_node_list ("Only in A", al->only_a);
  print_node_list ("Only in B", al->only_b);
  gboolean header = FALSE;
  for (guint i = 0; i < sd->groups->len; i++)
    {
      GraftGroupDiff *g = sd->groups->pdata[i];
      if (g->changed + g->only_a + g->only_b + g->notes == 0)
        continue;
      if (!header)
        printf ("\n%-40s %8s %8s %8s %8s %8s\n", "group", "matched", "changed", "only A", "only B", "notes");
      header = TRUE;
      printf ("%-40s %8u %8u %8u %8u %8u\n", *g->path ? g->path : "(top level)", g->matched, g->changed, g->only_a,
              g->only_b, g->notes);
    }
  if (opts->pairs)
    {
      printf ("\nPairs (%u):\n", al->node_pairs->len);
      for (guint i = 0; i < al->node_pairs->len; i++)
        {
          GraftNodePair *p = &g_array_index (al->node_pairs, GraftNodePair, i);
          printf ("  %-8s %-40s ↔ %-40s (%s)\n", p->kind == GRAFT_MATCH_EXACT ? "exact" : "inferred",
                  node_name (p->a), node_name (p->b), p->reason);
        }
    }
  for (guint r = 0; runs && r < runs->len; r++)
    {
      GraftNumericRun *run = runs->pdata[r];
      double worst_abs = 0, worst_rel = 0;
      for (guint i = 0; i < run->values->len; i++)
        {
          GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
          if (e->a->is_graph_output)
            worst_abs = MAX (worst_abs, e->max_abs), worst_rel = MAX (worst_rel, e->max_rel);
        }
      g_autofree char *verdict = graft_numeric_run_describe (run, al);
      printf ("\n%c%s\n", g_ascii_toupper (verdict[0]), verdict + 1);
      printf ("Run at %s: outputs %s (max abs %.3g, rel %.3g; rtol %g, atol %g); %u values compared, %u divergent\n",
              run->label, run->outputs_close ? "close" : "DIFFER", worst_abs, worst_rel, opts->rtol, opts->atol,
              run->n_compared, run->n_divergent);
      if (run->error_a)
        printf ("  A fails: %s\n", run->error_a);
      if (run->error_b)
        printf ("  B fails: %s\n", run->error_b);
      const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
      if (first && first->shape_differs)
        printf ("  first divergent: %s (%s) ↔ %s (%s): shape %s vs %s\n", node_name (first->a->producer), first->a->name,
                node_name (first->b->producer), first->b->name, first->shape_a, first->shape_b);
      else if (first)
        printf ("  first divergent: %s (%s) ↔ %s (%s): max abs %.3g, rel %.3g\n", node_name (first->a->producer),
                first->a->name, node_name (first->b->producer), first->b->name, first->max_abs, first->max_rel);
    }
}

/* ------------------------------------------------------------------ */

static int
diff_models (const char *path_a, const char *path_b, DiffOptions *opts)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) a = graft_model_load (path_a, NULL, NULL, NULL, &error);
  if (a == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 2;
    }
  g_autoptr(GraftModel) b = graft_model_load (path_b, NULL, NULL, NULL, &error);
  if (b == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 2;
    }
  gint64 start = g_get_monotonic_time ();
  g_autoptr(GraftAlignment) al = graft_alignment_new (a, b, &error);
  double align_seconds = (g_get_monotonic_time () - start) / 1e6;
  if (al == NULL)
    {
      graft_cli_print_error ("diff: %s", error->message);
      return 2;
    }
  g_autoptr(GraftStructuralDiff) sd = graft_structural_diff_new (al);
  gboolean equivalent = graft_structural_diff_is_equivalent (sd);

  g_autoptr(GPtrArray) runs = NULL;
  if (opts->random || opts->inputs)
    {
      g_autoptr(GraftNumericDiff) nd = graft_numeric_diff_new (al, opts->rtol, opts->atol, &error);
      if (nd == NULL)
        {
          graft_cli_print_error ("diff: %s", error->message);
          return 2;
        }
      GArray *sets = make_input_sets (nd, opts, &error);
      if (sets == NULL)
        {
          graft_cli_print_error ("diff: %s", error->message);
          return 2;
        }
      runs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_numeric_run_free);
      for (guint s = 0; s < sets->len; s++)
        {
          InputSet *set = &g_array_index (sets, InputSet, s);
          GraftNumericRun *run = graft_numeric_diff_run (nd, set->tensors, set->label, &error);
          if (run == NULL)
            {
              g_array_unref (sets);
              graft_cli_print_error ("diff: %s", error->message);
              return 2;
            }
          equivalent &= run->outputs_close;
          g_ptr_array_add (runs, run);
        }
      g_array_unref (sets);
    }
  if (opts->json)
    print_json (al, sd, runs, opts, equivalent, align_seconds);
  else
    print_text (al, sd, runs, opts);
  return equivalent ? 0 : 1;
}

int
graft_cli_diff (int argc, char **argv)
{
  DiffOptions opts = { .rtol = 1e-5, .atol = 1e-5 };
  g_auto(GStrv) rest = NULL;
  g_autoptr(GError) error = NULL;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &opts.json, "Print the result as JSON", NULL },
    { "pairs", 0, 0, G_OPTION_ARG_NONE, &opts.pairs, "List every matched pair (text output)", NULL },
    { "input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opts.inputs, "Input from a .npy or .pb file, fed to both models", "[NAME=]FILE" },
    { "random", 0, 0, G_OPTION_ARG_NONE, &opts.random, "Random data for inputs not given", NULL },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &opts.seed, "Seed for --random (default 0)", "N" },
    { "dim", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.dims, "Values of a symbolic dimension, one run each", "NAME=V[,V...]" },
    { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.shapes, "Shapes of a random input, one run each", "NAME=DIMS[,DIMS...]" },
    { "rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opts.rtol, "Relative tolerance (default 1e-5)", "R" },
    { "atol", 0, 0, G_OPTION_ARG_DOUBLE, &opts.atol, "Absolute tolerance (default 1e-5)", "A" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL, "A B" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("A B - compare two models");
  g_option_context_add_main_entries (context, entries, NULL);
  int status;
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      graft_cli_print_error ("diff: %s", error->message);
      status = 2;
    }
  else if (rest == NULL || rest[0] == NULL || rest[1] == NULL || rest[2] != NULL)
    {
      graft_cli_print_error ("diff: expected two models A and B (see graft-cli diff --help)");
      status = 2;
    }
  else if (!(opts.rtol >= 0) || !(opts.atol >= 0))
    {
      graft_cli_print_error ("diff: --rtol and --atol must be non-negative numbers");
      status = 2;
    }
  else
    status = diff_models (rest[0], rest[1], &opts);
  g_strfreev (opts.inputs);
  g_strfreev (opts.dims);
  g_strfreev (opts.shapes);
  return status;
}
