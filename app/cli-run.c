/* graft-cli run: runs a model in Graft's CPU runtime.
 *
 *   graft-cli run MODEL [--input NAME=FILE]... [--random] [--seed N]
 *                 [--dim NAME=VALUE]... [-o DIR] [--threads N] [--precision f32|bf16]
 *                 [--repeat N] [--profile]
 *                 [--time-limit SECONDS] [--memory-limit MIB] [--validate [--json]]
 *
 * Inputs come from .npy or ONNX TensorProto .pb files, or are random data
 * of the declared shapes. Each output is written as DIR/<name>.npy with the
 * name reduced to a safe file name, so nothing is written outside DIR; an
 * output of sequence type as DIR/<name>/<index>.npy, one file per tensor.
 * --precision bf16 multiplies by the weights in bfloat16 with float32
 * sums, where the CPU has AVX512_BF16 (refused elsewhere, never silently f32).
 * --validate watches every value of the first run for NaN and Inf and
 * names the node that introduced them (exit status 1 if any).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <glib/gstdio.h>
#include "cli.h"
#include "loader.h"
#include "runtime/inputs.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "runtime/simd.h"
#include "runtime/tensor-file.h"

typedef struct {
  char **inputs;
  char **dims;
  gboolean random;
  gint64 seed;
  char *output_dir;
  int threads;
  char *precision;       /* NULL: f32 */
  int repeat;
  gboolean profile;
  gboolean validate;     /* observe every value of the first run for NaN/Inf */
  gboolean json;
  double time_limit;     /* seconds per run, 0: none */
  gint64 memory_limit;   /* MiB of tensors, 0: none, -1: the runtime's default */
} RunOptions;

/* A file name made of [A-Za-z0-9._-] only, never "." or "..", unique in used. */
static char *
safe_file_name (const char *name, guint index, GHashTable *used)
{
  g_autofree char *stem = graft_tensor_file_safe_stem (name);
  GString *s = g_string_new (stem);
  if (s->len == 0)
    g_string_printf (s, "output_%u", index);
  g_autofree char *base = g_strdup (s->str);
  for (guint n = 2; g_hash_table_contains (used, s->str); n++)
    g_string_printf (s, "%s_%u", base, n);
  g_hash_table_add (used, g_strdup (s->str));
  g_string_append (s, ".npy");
  return g_string_free (s, FALSE);
}

/* A tensor as path (NAME.npy); a sequence as the folder NAME with one
 * INDEX.npy per tensor. */
static gboolean
write_output (const char *path, GraftRtTensor *t, GError **error)
{
  if (t->kind != GRAFT_RT_SEQUENCE)
    return graft_npy_write (path, t, error);
  g_autofree char *folder = g_strndup (path, strlen (path) - strlen (".npy"));
  if (g_mkdir_with_parents (folder, 0755) != 0)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot create %s: %s", folder,
                   g_strerror (errno));
      return FALSE;
    }
  for (guint k = 0; k < t->items->len; k++)
    {
      g_autofree char *name = g_strdup_printf ("%u.npy", k);
      g_autofree char *item_path = g_build_filename (folder, name, NULL);
      if (!graft_npy_write (item_path, t->items->pdata[k], error))
        return FALSE;
    }
  return TRUE;
}

static void
print_output_summary (const char *name, GraftRtTensor *t)
{
  g_autofree char *desc = graft_rt_tensor_describe (t);
  GraftRtStats stats;
  if (!graft_rt_tensor_compute_stats (t, &stats))
    {
      printf ("%s: %s\n", name, desc);
      return;
    }
  printf ("%s: %s min %.6g max %.6g mean %.6g", name, desc, stats.min, stats.max, stats.mean);
  if (stats.nan_count)
    printf (" (%" G_GINT64_FORMAT " NaN)", stats.nan_count);
  printf ("\n");
}



static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static int
compare_timings (gconstpointer a, gconstpointer b)
{
  const GraftNodeTiming *x = *(GraftNodeTiming *const *) a, *y = *(GraftNodeTiming *const *) b;
  return x->cpu_seconds < y->cpu_seconds ? 1 : x->cpu_seconds > y->cpu_seconds ? -1 : 0;
}

/* Nodes by CPU time, the measure that holds on a machine shared with
 * other work; wall time beside it (it shows what several threads saved). */
static void
print_profile (GraftRuntime *rt, guint runs)
{
  GArray *timings = graft_runtime_get_timings (rt);
  g_autoptr(GPtrArray) sorted = g_ptr_array_new ();
  double total = 0, total_cpu = 0;
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      if (t->calls == 0)
        continue;
      total += t->seconds;
      total_cpu += t->cpu_seconds;
      g_ptr_array_add (sorted, t);
    }
  g_ptr_array_sort (sorted, compare_timings);
  printf ("%-30s %-40s %10s %10s %7s\n", "op", "name", "CPU ms/run", "ms/run", "% CPU");
  gboolean any_fused = FALSE;
  for (guint i = 0; i < sorted->len; i++)
    {
      GraftNodeTiming *t = sorted->pdata[i];
      /* a fused pattern is timed as a whole on its first node: say so */
      gboolean fused = graft_node_timing_is_fused (t);
      g_autofree char *op = fused ? g_strdup_printf ("%s*", t->fused_op) : g_strdup (t->node->op);
      any_fused |= fused;
      printf ("%-30s %-40s %10.3f %10.3f %6.1f%%\n", op, t->node->name && *t->node->name ? t->node->name : "(unnamed)",
              t->cpu_seconds * 1000 / MAX (runs, 1), t->seconds * 1000 / MAX (runs, 1),
              total_cpu > 0 ? 100 * t->cpu_seconds / total_cpu : 0);
    }
  printf ("%-30s %-40s %10.3f %10.3f %6.1f%%\n", "total", "", total_cpu * 1000 / MAX (runs, 1),
          total * 1000 / MAX (runs, 1), 100.0);
  if (any_fused)
    printf ("* the nodes of a pattern fused into one operator, named by its first node\n");
}

/* The CPU time of every thread of the process, in ms: on a machine shared
 * with other work it counts what a run computed, not how long it waited
 * for a core. */
static double
process_cpu_ms (void)
{
  struct timespec ts;
  if (clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return 0;
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
median_of (GArray *values)
{
  g_array_sort (values, compare_doubles);
  return values->len % 2 ? g_array_index (values, double, values->len / 2)
                         : (g_array_index (values, double, values->len / 2 - 1) +
                            g_array_index (values, double, values->len / 2)) / 2;
}

static int
run_model (const char *path, RunOptions *opts)
{
  g_autoptr(GError) error = NULL;
  gint64 load_start = g_get_monotonic_time ();
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  gint64 read_end = g_get_monotonic_time ();
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  if (rt == NULL)
    {
      graft_cli_print_error ("%s: %s", path, error->message);
      return 1;
    }
  gint64 load_end = g_get_monotonic_time ();
  /* the runtime holds the model alone: it may give back the pages of the
   * weights it keeps packed (graft_runtime_get_given_back_bytes) */
  g_clear_object (&model);
  graft_runtime_set_n_threads (rt, opts->threads);
  GraftPrecision precision = GRAFT_PRECISION_F32;
  if (opts->precision != NULL && !graft_precision_from_string (opts->precision, &precision))
    {
      graft_cli_print_error ("run: --precision is f32 or bf16, not '%s'", opts->precision);
      return 2;
    }
  if (!graft_runtime_set_precision (rt, precision, &error))
    {
      graft_cli_print_error ("run: --precision %s: %s", opts->precision, error->message);
      return 1;
    }
  guint64 default_bytes;
  graft_runtime_get_limits (rt, NULL, &default_bytes);
  graft_runtime_set_limits (rt, opts->time_limit,
                            opts->memory_limit < 0 ? default_bytes : (guint64) opts->memory_limit << 20);

  g_autoptr(GHashTable) bound = graft_cli_make_inputs (rt, opts->inputs, opts->dims, opts->random, opts->seed, &error);
  if (bound == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }

  graft_runtime_set_profiling (rt, opts->profile);
  g_autoptr(GArray) times = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GArray) cpu_times = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GPtrArray) outputs = NULL;
  g_autoptr(GraftValueCheck) check = NULL;
  for (int r = 0; r < opts->repeat; r++)
    {
      if (r == 1 && opts->profile)
        graft_runtime_reset_timings (rt);  /* the first run pays for allocations */
      g_clear_pointer (&outputs, g_ptr_array_unref);
      gint64 start = g_get_monotonic_time ();
      double cpu_start = process_cpu_ms ();
      if (r == 0 && opts->validate)
        {
          check = graft_value_check_run (rt, bound, NULL, &outputs, &error);
          if (check == NULL)
            {
              graft_cli_print_error ("%s: %s", path, error->message);
              return 1;
            }
          if (outputs == NULL)
            {
              /* the values up to the failure still say where NaN began */
              graft_cli_print_value_check (check, NULL, NULL, opts->json);
              graft_cli_print_error ("%s: %s", path, check->run_error);
              return 1;
            }
        }
      else
        outputs = graft_runtime_run (rt, bound, NULL, NULL, NULL, &error);
      double ms = (g_get_monotonic_time () - start) / 1000.0;
      double cpu_ms = process_cpu_ms () - cpu_start;
      if (outputs == NULL)
        {
          graft_cli_print_error ("%s: %s", path, error->message);
          return 1;
        }
      g_array_append_val (times, ms);
      g_array_append_val (cpu_times, cpu_ms);
    }

  GPtrArray *values = graft_runtime_get_outputs (rt);
  g_autoptr(GHashTable) used = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (opts->output_dir && g_mkdir_with_parents (opts->output_dir, 0755) != 0)
    {
      graft_cli_print_error ("cannot create the output folder %s: %s", opts->output_dir, g_strerror (errno));
      return 1;
    }
  for (guint i = 0; i < outputs->len; i++)
    {
      GraftValue *v = values->pdata[i];
      GraftRtTensor *t = outputs->pdata[i];
      if (!opts->json)
        print_output_summary (v->name, t);
      /* None (scripted GoogLeNet's aux logits in eval mode) has no .npy form */
      if (opts->output_dir == NULL || t->kind == GRAFT_RT_NONE)
        continue;
      g_autofree char *file = safe_file_name (v->name, i, used);
      g_autofree char *out_path = g_build_filename (opts->output_dir, file, NULL);
      if (!write_output (out_path, t, &error))
        {
          graft_cli_print_error ("output '%s': %s", v->name, error->message);
          return 1;
        }
    }
  if (opts->repeat > 1)
    {
      double first_ms = g_array_index (times, double, 0);
      double median = median_of (times);
      /* loading is reported apart from the runs, as peers' session
       * creation is; the first run pays for allocations and packing */
      printf ("load time: %.3f ms (read %.3f ms, prepare %.3f ms), first run %.3f ms\n",
              (load_end - load_start) / 1000.0, (read_end - load_start) / 1000.0,
              (load_end - read_end) / 1000.0, first_ms);
      /* which kernels ran matters as much as the thread count when
       * comparing machines (or a capped GRAFT_SIMD) */
      printf ("median time per run: %.3f ms over %d runs (%d thread%s, %s kernels%s%s)\n", median, opts->repeat,
              opts->threads, opts->threads == 1 ? "" : "s", graft_simd_level_to_string (graft_simd_get_level ()),
              graft_simd_has_amx_int8 () ? ", AMX-INT8" : "",
              precision == GRAFT_PRECISION_BF16 ? ", bf16 weights" : "");
      printf ("median CPU time per run: %.3f ms (all threads)\n", median_of (cpu_times));
      /* a program that mutates buffers gives other outputs at each run, as ep.module() does */
      g_autofree char *written_back = graft_graph_describe_written_back (graft_model_get_graph (graft_runtime_get_model (rt)));
      if (written_back)
        printf ("buffers written back after each run: %s (the outputs above are run %d's)\n", written_back, opts->repeat);
    }
  if (opts->profile)
    {
      print_profile (rt, MAX (opts->repeat - 1, 1));
      /* what the runtime holds of its own beside the model's weights:
       * folded batch norms are given back once packed (depthwise ones,
       * read as they are, stay) */
      guint64 folded = graft_runtime_get_folded_weight_bytes (rt);
      if (folded > 0)
        printf ("batch norms folded into convolution weights: %.1f KB held after the runs\n", folded / 1024.0);
      guint64 given_back = graft_runtime_get_given_back_bytes (rt);
      if (given_back > 0)
        printf ("weights held only packed (their pages given back): %.1f MB\n", given_back / 1048576.0);
    }
  if (check != NULL)
    {
      graft_cli_print_value_check (check, values, outputs, opts->json);
      return check->nonfinite->len > 0 ? 1 : 0;
    }
  return 0;
}

int
graft_cli_run (int argc, char **argv)
{
  RunOptions opts = { .threads = 1, .repeat = 1, .time_limit = GRAFT_RUNTIME_DEFAULT_SECONDS, .memory_limit = -1 };
  g_auto(GStrv) rest = NULL;
  g_autoptr(GError) error = NULL;
  GOptionEntry entries[] = {
    { "input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opts.inputs, "Input from a .npy or .pb file (by name, stored name or position)", "[NAME=]FILE" },
    { "random", 0, 0, G_OPTION_ARG_NONE, &opts.random, "Random data for inputs not given", NULL },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &opts.seed, "Seed for --random (default 0)", "N" },
    { "dim", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.dims, "Value of a symbolic dimension for --random", "NAME=VALUE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &opts.output_dir, "Write each output as DIR/<name>.npy", "DIR" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &opts.threads, "Worker threads (default 1)", "N" },
    { "precision", 0, 0, G_OPTION_ARG_STRING, &opts.precision,
      "Products with weights in f32 (default) or bf16 (float32 sums; CPUs with AVX512_BF16)", "f32|bf16" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &opts.repeat, "Run N times and print the median time", "N" },
    { "profile", 0, 0, G_OPTION_ARG_NONE, &opts.profile, "Print the time of every node", NULL },
    { "validate", 0, 0, G_OPTION_ARG_NONE, &opts.validate,
      "Check every value for NaN and Inf; name the node that first produced one (exit 1 if any)", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &opts.json, "With --validate: the outputs and the check as JSON", NULL },
    { "time-limit", 0, 0, G_OPTION_ARG_DOUBLE, &opts.time_limit, "Stop a run after SECONDS (default 3600, 0: none)", "SECONDS" },
    { "memory-limit", 0, 0, G_OPTION_ARG_INT64, &opts.memory_limit,
      "Stop a run holding more than MIB of tensors (default: 3/4 of the memory, 0: none)", "MIB" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL, "MODEL" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("MODEL - run a model in Graft's CPU runtime");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      graft_cli_print_error ("run: %s", error->message);
      return 2;
    }
  int status;
  if (rest == NULL || rest[0] == NULL || rest[1] != NULL)
    {
      graft_cli_print_error ("run: expected exactly one MODEL (see graft-cli run --help)");
      status = 2;
    }
  else if (opts.threads < 1 || opts.threads > 256 || opts.repeat < 1)
    {
      graft_cli_print_error ("run: --threads must be 1..256 and --repeat at least 1");
      status = 2;
    }
  else if (opts.json && !opts.validate)
    {
      graft_cli_print_error ("run: --json goes with --validate");
      status = 2;
    }
  else if (!(opts.time_limit >= 0) || opts.memory_limit < -1 || opts.memory_limit > (G_MAXINT64 >> 20))
    {
      graft_cli_print_error ("run: --time-limit and --memory-limit must not be negative");
      status = 2;
    }
  else
    status = run_model (rest[0], &opts);
  g_strfreev (opts.inputs);
  g_strfreev (opts.dims);
  g_free (opts.output_dir);
  g_free (opts.precision);
  return status;
}
