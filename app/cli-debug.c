/* graft-cli debug SUBCOMMAND: finding what is wrong in a model.
 *
 *   graft-cli debug reduce MODEL -o SMALL.onnx
 *       (--fails-in graft | --nan | --mismatch REF | --command 'CMD {model}')
 *       [--rtol R] [--atol A] [--input NAME=FILE]... [--random] [--seed N] [--dim NAME=V]...
 *       [--shape IN=DIMS]... [--dynamic IN:AXIS=NAME]... [--save-inputs DIR]
 *
 * reduce (model/debug/reduce.h) finds a small subgraph that still fails the
 * same way and saves it as ONNX; a TorchScript or .pt2 model is lowered to
 * ONNX first (give TorchScript inputs a --shape). REF is a second model
 * run on the same inputs, or a folder of .npy values named by value name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>
#include "cli.h"
#include "loader.h"
#include "debug/reduce.h"
#include "debug/reference-values.h"
#include "runtime/inputs.h"
#include "onnx/writer.h"
#include "runtime/npy.h"
#include "runtime/tensor-file.h"

typedef struct {
  char *output;
  char *fails_in;
  gboolean nan;
  char *mismatch;
  char *command;
  double rtol, atol;
  char **inputs;
  char **dims;
  gboolean random;
  gint64 seed;
  char **shapes;
  char **dynamic;
  char *save_inputs;
} ReduceOptions;

static void
reduce_options_clear (ReduceOptions *opts)
{
  g_free (opts->output);
  g_free (opts->fails_in);
  g_free (opts->mismatch);
  g_free (opts->command);
  g_strfreev (opts->inputs);
  g_strfreev (opts->dims);
  g_strfreev (opts->shapes);
  g_strfreev (opts->dynamic);
  g_free (opts->save_inputs);
}

/* The model at path as ONNX (debug/reference-values.h), with the
 * shapes of --shape and --dynamic for a TorchScript model. */
static GHashTable *
conversion_shapes (ReduceOptions *opts, GError **error)
{
  g_autoptr(GPtrArray) shape_specs = g_ptr_array_new ();
  g_autoptr(GPtrArray) dynamic_specs = g_ptr_array_new ();

  for (guint i = 0; opts->shapes && opts->shapes[i]; i++)
    g_ptr_array_add (shape_specs, opts->shapes[i]);
  for (guint i = 0; opts->dynamic && opts->dynamic[i]; i++)
    g_ptr_array_add (dynamic_specs, opts->dynamic[i]);
  return graft_cli_parse_input_shapes (shape_specs, dynamic_specs, error);
}

static GraftModel *
load_as_onnx (const char *path, GHashTable *shapes, GError **error)
{
  g_autoptr(GraftModel) source = graft_model_load (path, NULL, NULL, NULL, error);

  return source != NULL ? graft_model_as_onnx (source, shapes, error) : NULL;
}

static gboolean
parse_condition (ReduceOptions *opts, GraftReduceCondition *condition, GError **error)
{
  guint given = (opts->fails_in != NULL) + (opts->nan != FALSE) + (opts->mismatch != NULL) + (opts->command != NULL);

  if (given != 1)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "give one failure condition: --fails-in graft, --nan, --mismatch REF or --command CMD");
      return FALSE;
    }
  if (opts->fails_in != NULL && strcmp (opts->fails_in, "graft") != 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--fails-in %s: only 'graft' (Graft's runtime) can be checked here; for another runtime use "
                   "--command", opts->fails_in);
      return FALSE;
    }
  *condition = opts->fails_in ? GRAFT_REDUCE_FAILS_IN_GRAFT
               : opts->nan    ? GRAFT_REDUCE_NONFINITE
               : opts->mismatch ? GRAFT_REDUCE_MISMATCH
                                : GRAFT_REDUCE_COMMAND;
  return TRUE;
}

static gboolean
save_inputs (GHashTable *inputs, const char *folder, GError **error)
{
  GHashTableIter iter;
  gpointer name, tensor;

  if (g_mkdir_with_parents (folder, 0755) != 0)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot create %s: %s", folder,
                   g_strerror (errno));
      return FALSE;
    }
  g_hash_table_iter_init (&iter, inputs);
  while (g_hash_table_iter_next (&iter, &name, &tensor))
    {
      g_autofree char *stem = graft_tensor_file_safe_stem (name);
      g_autofree char *file = g_strconcat (stem, ".npy", NULL);
      g_autofree char *path = g_build_filename (folder, file, NULL);
      if (!graft_npy_write (path, tensor, error))
        return FALSE;
    }
  return TRUE;
}

static GHashTable *
random_declared_inputs (GraftModel *model, ReduceOptions *opts, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GHashTable) dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GRand) rng = g_rand_new_with_seed ((guint32) opts->seed);

  if (opts->inputs != NULL || !opts->random)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                   "Graft's runtime cannot plan the model, so its inputs are random data of their declared types: "
                   "use --random");
      return NULL;
    }
  if (!graft_cli_parse_dims (opts->dims, dims, error))
    return NULL;
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = graph->inputs->pdata[i];
      if (input->initializer != NULL)
        continue;
      GraftRtTensor *tensor = graft_runtime_random_input (input, dims, rng, error);
      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (inputs, input->name, tensor);
    }
  return g_steal_pointer (&inputs);
}

static int
reduce_model (const char *path, ReduceOptions *opts, GraftReduceCondition condition)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) shapes = conversion_shapes (opts, &error);
  g_autoptr(GraftModel) onnx = shapes ? load_as_onnx (path, shapes, &error) : NULL;

  if (onnx == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  /* inputs are bound through a plan of the whole model; a model Graft
   * cannot plan (--fails-in graft) still declares its inputs */
  g_autoptr(GHashTable) inputs = NULL;
  {
    g_autoptr(GraftRuntime) rt = graft_runtime_new (onnx, &error);
    if (rt != NULL)
      inputs = graft_cli_make_inputs (rt, opts->inputs, opts->dims, opts->random, opts->seed, &error);
    else if (condition == GRAFT_REDUCE_FAILS_IN_GRAFT)
      {
        /* a model Graft cannot plan (an op without a kernel): random data
         * of the declared inputs, for the parts that it can */
        g_clear_error (&error);
        inputs = random_declared_inputs (onnx, opts, &error);
      }
  }
  if (inputs == NULL && condition != GRAFT_REDUCE_COMMAND)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  g_clear_error (&error);
  if (inputs == NULL)
    inputs = g_hash_table_new (g_str_hash, g_str_equal);

  g_autoptr(GraftReduce) reduce = graft_reduce_new (onnx, condition, inputs);
  if (condition == GRAFT_REDUCE_MISMATCH)
    {
      g_autoptr(GHashTable) reference = graft_reference_values_load (graft_model_get_graph (onnx), opts->mismatch,
                                                                     inputs, shapes, &error);
      if (reference == NULL)
        {
          graft_cli_print_error ("%s", error->message);
          return 1;
        }
      graft_reduce_set_reference (reduce, reference, opts->rtol, opts->atol);
    }
  if (condition == GRAFT_REDUCE_COMMAND)
    graft_reduce_set_command (reduce, opts->command);

  gint64 start = g_get_monotonic_time ();
  g_autoptr(GraftModel) reduced = graft_reduce_run (reduce, NULL, NULL, NULL, &error);
  if (reduced == NULL)
    {
      graft_cli_print_error ("%s: %s", path, error->message);
      return 1;
    }
  if (!graft_onnx_write_file (reduced, opts->output, GRAFT_ONNX_WRITE_NONE, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  GPtrArray *kept = graft_reduce_get_kept_nodes (reduce);
  printf ("kept %u of %u nodes in %u runs (%.2f s): %s\n", kept->len, graft_reduce_get_n_original_nodes (reduce),
          graft_reduce_get_n_runs (reduce), (g_get_monotonic_time () - start) / 1e6, opts->output);
  for (guint i = 0; i < kept->len; i++)
    printf ("  %s\n", *(char *) kept->pdata[i] ? (char *) kept->pdata[i] : "(unnamed)");
  if (graft_reduce_get_failure (reduce))
    printf ("it fails: %s\n", graft_reduce_get_failure (reduce));
  if (opts->save_inputs != NULL)
    {
      if (!save_inputs (graft_reduce_get_result_inputs (reduce), opts->save_inputs, &error))
        {
          graft_cli_print_error ("%s", error->message);
          return 1;
        }
      printf ("its inputs: %s\n", opts->save_inputs);
    }
  return 0;
}

static int
debug_reduce (int argc, char **argv)
{
  g_auto(GStrv) rest = NULL;
  g_autoptr(GError) error = NULL;
  ReduceOptions opts = { .rtol = 1e-4, .atol = 1e-5 };
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &opts.output, "Save the reduced model (ONNX)", "SMALL.onnx" },
    { "fails-in", 0, 0, G_OPTION_ARG_STRING, &opts.fails_in, "Failure: Graft's runtime reports an error", "graft" },
    { "nan", 0, 0, G_OPTION_ARG_NONE, &opts.nan, "Failure: a value computed from finite inputs holds NaN or Inf", NULL },
    { "mismatch", 0, 0, G_OPTION_ARG_FILENAME, &opts.mismatch,
      "Failure: values differ from a reference model's, or from a folder of .npy values named by value", "REF" },
    { "command", 0, 0, G_OPTION_ARG_STRING, &opts.command,
      "Failure: the shell command exits non-zero ({model} is the candidate's file)", "'CMD {model}'" },
    { "rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opts.rtol, "Relative tolerance of --mismatch (default 1e-4)", "R" },
    { "atol", 0, 0, G_OPTION_ARG_DOUBLE, &opts.atol, "Absolute tolerance of --mismatch (default 1e-5)", "A" },
    { "input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opts.inputs, "Input from a .npy or .pb file", "[NAME=]FILE" },
    { "random", 0, 0, G_OPTION_ARG_NONE, &opts.random, "Random data for inputs not given", NULL },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &opts.seed, "Seed for --random (default 0)", "N" },
    { "dim", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.dims, "Value of a symbolic dimension for --random", "NAME=VALUE" },
    { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.shapes, "A TorchScript input's shape, for the conversion",
      "IN=1x3x224x224" },
    { "dynamic", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.dynamic, "A dynamic dim, for the conversion", "IN:AXIS=NAME" },
    { "save-inputs", 0, 0, G_OPTION_ARG_FILENAME, &opts.save_inputs,
      "Write the reduced model's inputs as DIR/<name>.npy", "DIR" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL, "MODEL" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("MODEL -o SMALL.onnx - reduce a failing model to a small failing subgraph");
  g_option_context_add_main_entries (context, entries, NULL);
  GraftReduceCondition condition;
  int status;
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      graft_cli_print_error ("debug reduce: %s", error->message);
      status = 2;
    }
  else if (rest == NULL || rest[0] == NULL || rest[1] != NULL || opts.output == NULL)
    {
      graft_cli_print_error ("debug reduce: expected one MODEL and -o SMALL.onnx (see graft-cli debug reduce --help)");
      status = 2;
    }
  else if (!parse_condition (&opts, &condition, &error))
    {
      graft_cli_print_error ("debug reduce: %s", error->message);
      status = 2;
    }
  else if (!(opts.rtol >= 0) || !(opts.atol >= 0))
    {
      graft_cli_print_error ("debug reduce: --rtol and --atol must not be negative");
      status = 2;
    }
  else
    status = reduce_model (rest[0], &opts, condition);
  reduce_options_clear (&opts);
  return status;
}

typedef struct {
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
} DebugCommand;

static const DebugCommand debug_commands[] = {
  { "reduce", debug_reduce, "MODEL -o SMALL.onnx (--fails-in graft | --nan | --mismatch REF | --command CMD)  "
                            "the smallest subgraph that still fails" },
};

int
graft_cli_debug (int argc, char **argv)
{
  if (argc >= 2)
    for (gsize i = 0; i < G_N_ELEMENTS (debug_commands); i++)
      if (strcmp (argv[1], debug_commands[i].name) == 0)
        return debug_commands[i].run (argc - 1, argv + 1);
  FILE *out = argc >= 2 && (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0) ? stdout : stderr;
  if (out == stderr)
    graft_cli_print_error ("debug: expected a subcommand: %s", debug_commands[0].name);
  fprintf (out, "Usage: graft-cli debug SUBCOMMAND [OPTIONS]\n\n");
  for (gsize i = 0; i < G_N_ELEMENTS (debug_commands); i++)
    fprintf (out, "  %-8s %s\n", debug_commands[i].name, debug_commands[i].summary);
  return out == stderr ? 2 : 0;
}
