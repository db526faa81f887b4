/* graft-cli info --cost: MACs, FLOPs, parameter and activation bytes per
 * node and per module group (model/analysis/cost.h), the memory plan's
 * peak against the naive sum, and with --run the time of every node and
 * the peak of tensors measured in Graft's runtime. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "analysis/cost.h"
#include "runtime/inputs.h"

/* Fixed shapes for the graph inputs: --shape IN=DIMS, else the declared
 * shape with each symbolic dim from --dim NAME=V or 1 (noted). */
static GHashTable *
fixed_input_shapes (GraftGraph *graph, GHashTable *given, GHashTable *dims, GString *assumed, GError **error)
{
  g_autoptr(GHashTable) shapes = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_shape_free);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = graph->inputs->pdata[i];
      if (input->initializer != NULL || input->kind != GRAFT_VALUE_TENSOR)
        continue;
      GraftShape *shape = g_new0 (GraftShape, 1);
      GraftShape *user = g_hash_table_lookup (given, input->name);
      graft_shape_copy (shape, user ? user : &input->shape);
      g_hash_table_insert (shapes, input->name, shape);
      if (shape->rank < 0)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "input '%s' declares no shape: give one with --shape %s=DIMS", input->name, input->name);
          return NULL;
        }
      for (int d = 0; d < shape->rank; d++)
        {
          GraftDim *dim = &shape->dims[d];
          if (dim->kind == GRAFT_DIM_FIXED)
            continue;
          gint64 *value = dim->kind == GRAFT_DIM_SYMBOLIC ? g_hash_table_lookup (dims, dim->symbol) : NULL;
          if (value == NULL && dim->kind == GRAFT_DIM_SYMBOLIC && !strstr (assumed->str, dim->symbol))
            g_string_append_printf (assumed, "%s%s = 1", assumed->len ? ", " : "", dim->symbol);
          else if (value == NULL && dim->kind != GRAFT_DIM_SYMBOLIC)
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "input '%s' has an unknown dim %d: give its shape with --shape %s=DIMS", input->name, d,
                           input->name);
              return NULL;
            }
          *dim = graft_dim_fixed (value ? *value : 1);
        }
    }
  return g_steal_pointer (&shapes);
}

/* What one measured run found. */
typedef struct {
  GHashTable *seconds;   /* GraftNode* → double* per run */
  double run_seconds;
  gint64 peak_bytes;
  gint64 baseline;
} Measured;

static void
watch_live_bytes (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  Measured *m = user_data;
  m->peak_bytes = MAX (m->peak_bytes, graft_rt_tensor_get_live_bytes () - m->baseline);
}

/* One run observed (every node on its own, as the plan has them) for the
 * peak of tensors, then timed runs with the runtime's fusions. */
static gboolean
measure (GraftModel *model, GHashTable *shapes, Measured *m, GError **error)
{
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, error);
  if (rt == NULL)
    return FALSE;
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GRand) rng = g_rand_new_with_seed (0);
  GPtrArray *graph_inputs = graft_runtime_get_inputs (rt);
  gint64 fed = 0;
  for (guint i = 0; i < graph_inputs->len; i++)
    {
      GraftValue *input = graph_inputs->pdata[i];
      GraftShape *shape = g_hash_table_lookup (shapes, input->name);
      if (shape == NULL)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "input '%s' has no shape to run with",
                       input->name);
          return FALSE;
        }
      gint64 dims[GRAFT_RT_MAX_RANK];
      for (int d = 0; d < shape->rank && d < GRAFT_RT_MAX_RANK; d++)
        dims[d] = shape->dims[d].value;
      GraftDType dtype = input->dtype != GRAFT_DTYPE_UNDEFINED ? input->dtype : GRAFT_DTYPE_FLOAT32;
      GraftRtTensor *tensor = graft_runtime_random_tensor (dtype, shape->rank, dims, rng, error);
      if (tensor == NULL)
        return FALSE;
      fed += tensor->nbytes;
      g_hash_table_insert (inputs, input->name, tensor);
    }
  m->baseline = graft_rt_tensor_get_live_bytes ();
  graft_runtime_set_observer (rt, watch_live_bytes, m);
  g_autoptr(GPtrArray) observed = graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
  graft_runtime_set_observer (rt, NULL, NULL);
  if (observed == NULL)
    return FALSE;
  m->peak_bytes += fed;

  const int runs = 3;
  graft_runtime_set_profiling (rt, TRUE);
  for (int r = 0; r <= runs; r++)
    {
      if (r == 1)
        graft_runtime_reset_timings (rt);  /* the first run pays for allocations */
      gint64 start = g_get_monotonic_time ();
      g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
      if (outputs == NULL)
        return FALSE;
      if (r > 0)
        m->run_seconds += (g_get_monotonic_time () - start) / 1e6 / runs;
    }
  GArray *timings = graft_runtime_get_timings (rt);
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      double seconds = t->seconds / runs;
      g_hash_table_insert (m->seconds, t->node, g_memdup2 (&seconds, sizeof seconds));
    }
  return TRUE;
}

static char *
format_count (guint64 n)
{
  return n >= 1000000000 ? g_strdup_printf ("%.3f G", n / 1e9)
         : n >= 1000000  ? g_strdup_printf ("%.3f M", n / 1e6)
         : n >= 1000     ? g_strdup_printf ("%.3f k", n / 1e3)
                         : g_strdup_printf ("%" G_GUINT64_FORMAT, n);
}

static char *
format_bytes (guint64 n)
{
  return n >= 1000000 ? g_strdup_printf ("%.2f MB", n / 1e6) : g_strdup_printf ("%.1f kB", n / 1e3);
}

static int
by_macs (gconstpointer x, gconstpointer y)
{
  const GraftNodeCost *a = *(GraftNodeCost *const *) x, *b = *(GraftNodeCost *const *) y;
  return a->flops < b->flops ? 1 : a->flops > b->flops ? -1 : 0;
}

/* "  biggest groups by MACs: layer4 28.5 %, layer3 ..." */
static void
print_biggest_groups (GraftCostReport *report, GraftCostMetric metric)
{
  g_autoptr(GPtrArray) biggest = graft_cost_report_biggest_groups (report, metric, 5);
  double total = graft_cost_report_get_total (report, metric);

  if (biggest->len == 0 || total <= 0)
    return;
  printf ("  biggest groups by %s:", graft_cost_metrics ()[metric].title);
  for (guint i = 0; i < biggest->len; i++)
    {
      const GraftGroupCost *g = biggest->pdata[i];
      printf ("%s %s %.1f %%", i ? "," : "", g->group->path, 100 * graft_group_cost_get (g, metric) / total);
    }
  printf ("\n");
}

static void
print_text (GraftCostReport *report, Measured *m, const char *assumed, int top)
{
  g_autofree char *macs = format_count (report->macs), *flops = format_count (report->flops);
  g_autofree char *params = format_bytes (report->parameter_bytes), *naive = format_bytes (report->activation_bytes);
  g_autofree char *peak = format_bytes (report->peak_bytes), *arena = format_bytes (report->arena_bytes);

  printf ("Cost%s%s%s:\n", *assumed ? " (" : "", assumed, *assumed ? " assumed; set with --dim)" : "");
  printf ("  %sMACs, %sFLOPs, parameters %s", macs, flops, params);
  if (report->n_unknown)
    printf (" (%u nodes without inferred shapes are not counted fully)", report->n_unknown);
  printf ("\n  activations: %s summed, peak %s with values freed at last use, pool %s with buffers reused\n", naive,
          peak, arena);
  if (m->seconds)
    {
      g_autofree char *measured = format_bytes (m->peak_bytes);
      printf ("  measured in Graft's runtime: peak %s of tensors, %.3f ms per run\n", measured, m->run_seconds * 1000);
    }
  print_biggest_groups (report, GRAFT_COST_MACS);
  if (m->seconds)
    print_biggest_groups (report, GRAFT_COST_SECONDS);
  printf ("\n%-32s %12s %12s %12s %12s%s\n", "group", "MACs", "FLOPs", "parameters", "activations",
          m->seconds ? "      ms" : "");
  for (guint i = 0; i < report->groups->len; i++)
    {
      const GraftGroupCost *g = &g_array_index (report->groups, GraftGroupCost, i);
      if (graft_group_get_depth (g->group) > 2)
        continue;
      g_autofree char *gm = format_count (g->macs), *gf = format_count (g->flops);
      g_autofree char *gp = format_bytes (g->parameter_bytes), *ga = format_bytes (g->activation_bytes);
      g_autofree char *label = g_strdup_printf ("%*s%s", 2 * (int) graft_group_get_depth (g->group), "",
                                                *g->group->path ? g->group->name : "(model)");
      printf ("%-32s %12s %12s %12s %12s", label, gm, gf, gp, ga);
      if (m->seconds)
        printf (" %8.3f", g->seconds * 1000);
      printf ("\n");
    }
  g_autoptr(GPtrArray) sorted = g_ptr_array_new ();
  for (guint i = 0; i < report->nodes->len; i++)
    g_ptr_array_add (sorted, &g_array_index (report->nodes, GraftNodeCost, i));
  g_ptr_array_sort (sorted, by_macs);
  printf ("\n%-40s %-18s %12s %12s%s\n", "node", "op", "MACs", "activations", m->seconds ? "      ms" : "");
  for (guint i = 0; i < sorted->len && (int) i < top; i++)
    {
      GraftNodeCost *c = sorted->pdata[i];
      g_autofree char *cm = format_count (c->macs), *ca = format_bytes (c->activation_bytes);
      printf ("%-40s %-18s %12s %12s", c->node->name && *c->node->name ? c->node->name : "(unnamed)", c->node->op, cm, ca);
      if (m->seconds)
        printf (" %8.3f", c->seconds * 1000);
      printf ("\n");
    }
}

static void
print_json (GraftCostReport *report, Measured *m, const char *assumed)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  graft_cli_json_string (b, "assumed_dims", *assumed ? assumed : NULL);
  graft_cli_json_int (b, "macs", report->macs);
  graft_cli_json_int (b, "flops", report->flops);
  graft_cli_json_int (b, "parameter_bytes", report->parameter_bytes);
  graft_cli_json_int (b, "activation_bytes", report->activation_bytes);
  graft_cli_json_int (b, "peak_bytes", report->peak_bytes);
  graft_cli_json_int (b, "arena_bytes", report->arena_bytes);
  graft_cli_json_int (b, "unknown_nodes", report->n_unknown);
  if (m->seconds)
    {
      graft_cli_json_int (b, "measured_peak_bytes", m->peak_bytes);
      graft_cli_json_double (b, "measured_seconds", m->run_seconds);
    }
  json_builder_set_member_name (b, "groups");
  json_builder_begin_array (b);
  for (guint i = 0; i < report->groups->len; i++)
    {
      const GraftGroupCost *g = &g_array_index (report->groups, GraftGroupCost, i);
      json_builder_begin_object (b);
      graft_cli_json_string (b, "path", g->group->path);
      graft_cli_json_int (b, "depth", graft_group_get_depth (g->group));
      graft_cli_json_int (b, "nodes", g->n_nodes);
      graft_cli_json_int (b, "macs", g->macs);
      graft_cli_json_int (b, "flops", g->flops);
      graft_cli_json_int (b, "parameter_bytes", g->parameter_bytes);
      graft_cli_json_int (b, "activation_bytes", g->activation_bytes);
      if (m->seconds)
        graft_cli_json_double (b, "seconds", g->seconds);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "nodes");
  json_builder_begin_array (b);
  for (guint i = 0; i < report->nodes->len; i++)
    {
      GraftNodeCost *c = &g_array_index (report->nodes, GraftNodeCost, i);
      json_builder_begin_object (b);
      graft_cli_json_string (b, "name", c->node->name);
      graft_cli_json_string (b, "op", c->node->op);
      graft_cli_json_string (b, "group", c->node->group ? c->node->group->path : "");
      graft_cli_json_int (b, "macs", c->macs);
      graft_cli_json_int (b, "flops", c->flops);
      graft_cli_json_int (b, "parameter_bytes", c->parameter_bytes);
      graft_cli_json_int (b, "activation_bytes", c->activation_bytes);
      graft_cli_json_bool (b, "known", c->known);
      graft_cli_json_bool (b, "constant", c->constant);
      if (m->seconds)
        graft_cli_json_double (b, "seconds", c->seconds);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  graft_cli_json_print (b);
}

int
graft_cli_print_cost (GraftModel *model, GHashTable *given_shapes, GHashTable *dims, gboolean run, gboolean json, int top)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) assumed = g_string_new (NULL);
  GraftGraph *graph = graft_model_get_graph (model);
  if (graph == NULL)
    {
      graft_cli_print_error ("info --cost: the file holds no graph");
      return 1;
    }
  g_autoptr(GHashTable) shapes = fixed_input_shapes (graph, given_shapes, dims, assumed, &error);
  g_autoptr(GraftInference) inference = shapes ? graft_shape_inference_run_given (model, shapes, &error) : NULL;
  if (inference == NULL)
    {
      graft_cli_print_error ("info --cost: %s", error->message);
      return 1;
    }
  g_autoptr(GraftCostReport) report = graft_cost_analyze (model, inference);
  Measured m = { 0 };
  g_autoptr(GHashTable) seconds = NULL;
  if (run)
    {
      seconds = m.seconds = g_hash_table_new_full (NULL, NULL, NULL, g_free);
      if (!measure (model, shapes, &m, &error))
        {
          graft_cli_print_error ("info --cost --run: %s", error->message);
          return 1;
        }
      graft_cost_report_set_timings (report, m.seconds);
    }
  if (json)
    print_json (report, &m, assumed->str);
  else
    print_text (report, &m, assumed->str, top);
  return 0;
}
