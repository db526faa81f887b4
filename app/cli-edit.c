/* graft-cli edit IN -o OUT [edits]: applies model/edit operations in the
 * order given (a TorchScript IN is first converted to ONNX by model/lower,
 * taking its input shapes from --shape and --dynamic), proves the dims they changed at other sizes (unless
 * --no-verify), and saves the result in the format OUT's extension names
 * (formats.h: ONNX, or .pt2 for a .pt2 IN, edited as the program it is;
 * atomically; never over IN unless --overwrite; not at all when the proof
 * fails, unless --force). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cli.h"
#include "loader.h"
#include "formats.h"
#include "edit/edit.h"
#include "edit/edit-history.h"
#include "edit/edit-operation.h"
#include "edit/attribute-value.h"
#include "edit/recipe.h"
#include "onnx/writer.h"
#include "debug/precision.h"
#include "lower/lower.h"

/* The dims all edits changed, each once, with its size before the first. */
static GArray *
collect_changed_dims (GPtrArray *edits)
{
  GArray *all = g_array_new (FALSE, FALSE, sizeof (GraftDimCheckDim));

  for (guint i = 0; i < edits->len; i++)
    {
      GArray *dims = graft_edit_get_changed_dims (g_ptr_array_index (edits, i));
      for (guint j = 0; j < dims->len; j++)
        {
          GraftDimCheckDim *dim = &g_array_index (dims, GraftDimCheckDim, j);
          gboolean merged = FALSE;

          for (guint k = 0; k < all->len && !merged; k++)
            {
              GraftDimCheckDim *seen = &g_array_index (all, GraftDimCheckDim, k);
              if ((merged = strcmp (seen->input, dim->input) == 0 && seen->axis == dim->axis))
                seen->batch |= dim->batch;
            }
          if (!merged)
            g_array_append_val (all, *dim);
        }
    }
  return all;
}

/* Prints the check of the changed dims; FALSE when it failed. */
static gboolean
verify_edits (GraftModel *model, GPtrArray *edits, const char *in)
{
  g_autoptr(GArray) dims = collect_changed_dims (edits);
  g_autoptr(GraftDimCheck) check = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) what = g_string_new (NULL);

  if (dims->len == 0)
    return TRUE;
  for (guint i = 0; i < dims->len; i++)
    {
      GraftDimCheckDim *dim = &g_array_index (dims, GraftDimCheckDim, i);
      g_string_append_printf (what, "%s%s:%d", i ? ", " : "", dim->input, dim->axis);
      if (dim->traced > 0)
        g_string_append_printf (what, " (traced %" G_GINT64_FORMAT "%s)", dim->traced, dim->batch ? ", a batch" : "");
    }
  printf ("Verify %s at other sizes\n", what->str);
  check = graft_dim_check_run (model, (GraftDimCheckDim *) dims->data, dims->len, &error);
  if (check == NULL)
    {
      graft_cli_print_error ("%s: cannot verify the edit: %s", in, error->message);
      return FALSE;
    }
  for (guint i = 0; i < check->lines->len; i++)
    printf ("  %s\n", (char *) g_ptr_array_index (check->lines, i));
  if (!check->passed)
    {
      graft_cli_print_error ("%s: the edit is wrong at other sizes: %s", in, check->failure);
      return FALSE;
    }
  printf ("%s: %s at other sizes (%u runs in Graft's runtime)\n",
          check->complete ? "verified" : "partly verified, see what was not checked above", what->str, check->n_runs);
  return TRUE;
}

static void
print_usage (void)
{
  guint n_operations;
  const GraftEditOperation *operations = graft_edit_operation_list (&n_operations);

  printf ("Usage: graft-cli edit IN -o OUT [EDIT]... [--overwrite]\n"
          "Edits, applied in the order given:\n");
  for (guint i = 0; i < n_operations; i++)
    {
      const GraftEditOperation *operation = &operations[i];
      g_autofree char *usage = NULL;
      g_auto(GStrv) words = NULL;
      int column;

      if (operation->option == NULL)
        continue;
      usage = g_strdup_printf ("%s %s", operation->option, operation->argument ? operation->argument : "");
      words = g_strsplit (operation->help, " ", -1);
      column = strlen (usage) > 27 ? (printf ("  %s\n", usage), printf ("%29s", "")) : printf ("  %-27s", usage);
      for (guint w = 0; words[w] != NULL; w++)
        {
          if (column + 1 + (int) strlen (words[w]) > 100)
            column = printf ("\n%29s", "") - 1;
          column += printf (" %s", words[w]);
        }
      printf ("\n");
    }
  printf ("  --keep-io-types             with --float16: inputs and outputs stay float32\n"
          "  --fp16-keep OP,OP           with --float16: ops kept in float32 (default: Resize, TopK, Range,\n"
          "                              Min, Max, CumSum, RoiAlign, NonMaxSuppression, ai.onnx.ml ops…)\n"
          "  --auto-keep                 with --float16: search for the fewest nodes to keep in float32 so that\n"
          "                              the outputs stay within --rtol R (default 1e-2) and --atol A (1e-3) of\n"
          "                              float32 on --input [NAME=]FILE... or --random [--seed N] (bisection, then\n"
          "                              letting nodes go while the outputs stay close)\n"
          "  --graph NODE#ATTR[#…]       the following edits work inside that subgraph ('' = main graph)\n"
          "  --function NAME             the following edits work in that local function's body\n"
          "  --recipe FILE.json          replay a recipe's steps here (nodes found by name, else by group,\n"
          "                              op and position; a step that finds no target fails, naming it)\n"
          "  --save-recipe FILE.json     save every edit applied as a recipe\n"
          "--overwrite allows OUT to be IN itself.\n"
          "After --dynamic and --shape, the edited model is run at other sizes of the changed dims (1 and\n"
          "primes) by shape inference and in Graft's runtime on random inputs, and a dim named like a\n"
          "batch must keep samples apart. If that fails, the edit fails: exit status 1, nothing saved.\n"
          "--simplify checks its result the same way against the original (see above).\n"
          "  --no-verify                 skip these checks\n"
          "  --force                     save even when the check fails (the exit status is still 1)\n");
}

/* One edit on the command line, or a recipe to replay at that point. */
typedef struct {
  GraftEdit *edit;
  char *recipe;
  /* An operation whose parameters take options that may come later on the
   * command line (--float16's --keep-io-types, --simplify's --rtol): its
   * id and scope, made into edit once every option is read. */
  const char *pending_id;
  GVariant *pending;
} Step;

static void
step_free (Step *step)
{
  g_clear_object (&step->edit);
  g_free (step->recipe);
  g_clear_pointer (&step->pending, g_variant_unref);
  g_free (step);
}

/* The operations whose parameters take options that may follow them. */
static gboolean
is_pending_operation (const char *id)
{
  return strcmp (id, "float16") == 0 || strcmp (id, "simplify") == 0 || strcmp (id, "fold-constants") == 0;
}

/* params plus the scope options in force. */
static GVariant *
with_scope (GVariant *params, const char *graph_path, const char *function)
{
  GVariantDict dict;

  g_variant_dict_init (&dict, params);
  if (graph_path != NULL && *graph_path != '\0')
    g_variant_dict_insert (&dict, "graph", "s", graph_path);
  if (function != NULL)
    g_variant_dict_insert (&dict, "function", "s", function);
  g_variant_unref (g_variant_ref_sink (params));
  return g_variant_dict_end (&dict);
}

/* seconds < 0: not measured. */
static void
print_edit (GraftEdit *edit, double seconds)
{
  GPtrArray *notes = graft_edit_get_notes (edit);

  if (seconds >= 0)
    printf ("%s (%.3f s)\n", graft_edit_get_description (edit), seconds);
  else
    printf ("%s\n", graft_edit_get_description (edit));
  for (guint j = 0; j < notes->len; j++)
    printf ("  %s\n", (char *) g_ptr_array_index (notes, j));
}

/* --auto-keep searches the model as loaded: the float16 conversion must
 * be the only edit. */
static gboolean
auto_keep_usage_ok (GPtrArray *steps)
{
  guint n_float16 = 0, n_other = 0;

  for (guint i = 0; i < steps->len; i++)
    {
      Step *step = g_ptr_array_index (steps, i);
      n_float16 += g_strcmp0 (step->pending_id, "float16") == 0;
      n_other += step->edit != NULL || step->recipe != NULL;
    }
  if (n_float16 != 1 || n_other > 0)
    {
      graft_cli_print_error ("edit: --auto-keep goes with --float16 and no other edit");
      return FALSE;
    }
  return TRUE;
}

/* Finds the nodes to keep in float32 (model/debug/precision.h) and gives
 * them to the float16 step. */
static gboolean
search_float32_nodes (GraftModel *model, GPtrArray *steps, GraftPrecisionOptions *precision, GPtrArray *input_files,
                      gboolean random, gint64 seed)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_ptr_array_add (input_files, NULL);
  g_autoptr(GHashTable) inputs = rt ? graft_cli_make_inputs (rt, (char **) input_files->pdata, NULL, random, seed, &error)
                                    : NULL;
  if (inputs == NULL)
    {
      graft_cli_print_error ("edit --auto-keep: %s", error->message);
      return FALSE;
    }
  for (guint i = 0; i < steps->len; i++)
    {
      Step *step = g_ptr_array_index (steps, i);
      if (g_strcmp0 (step->pending_id, "float16") != 0 || step->edit == NULL)
        continue;
      GVariant *params = graft_edit_get_params (step->edit);
      precision->keep_io_types = graft_edit_param_bool (params, "keep_io_types", FALSE);
      guint n_runs = 0;
      gint64 start = g_get_monotonic_time ();
      g_autoptr(GPtrArray) kept = graft_precision_find_float32_nodes (model, inputs, precision, &n_runs, NULL, &error);
      if (kept == NULL)
        {
          graft_cli_print_error ("edit --auto-keep: %s", error->message);
          return FALSE;
        }
      printf ("auto-keep: %u node%s in float32 keep the outputs within rtol %g, atol %g (%u conversions run, %.1f s)\n",
              kept->len, kept->len == 1 ? "" : "s", precision->rtol, precision->atol, n_runs,
              (g_get_monotonic_time () - start) / 1e6);
      for (guint k = 0; k < kept->len; k++)
        printf ("  %s\n", (char *) kept->pdata[k]);
      g_ptr_array_add (kept, NULL);
      g_autoptr(GVariant) with_kept = g_variant_ref_sink (graft_edit_params_replace (
          params, "keep_nodes", g_variant_new_strv ((const char *const *) kept->pdata, -1)));
      g_object_unref (step->edit);
      step->edit = graft_edit_new_operation ("float16", with_kept, NULL);
    }
  return TRUE;
}

static gboolean
is_stdout (const char *path)
{
  GStatBuf named, standard;

  return g_stat (path, &named) == 0 && fstat (STDOUT_FILENO, &standard) == 0 && named.st_dev == standard.st_dev
         && named.st_ino == standard.st_ino;
}

int
graft_cli_edit (int argc, char **argv)
{
  const char *in = NULL, *out = NULL, *save_recipe = NULL, *graph_path = NULL, *function = NULL;
  gboolean overwrite = FALSE, verify = TRUE, force = FALSE, verified = TRUE, keep_io = FALSE;
  g_auto(GStrv) fp16_keep = NULL;
  /* --float16 --auto-keep: the search's tolerance and inputs */
  gboolean auto_keep = FALSE, random = FALSE;
  GraftPrecisionOptions precision = { .rtol = 1e-2, .atol = 1e-3 };
  g_autoptr(GPtrArray) input_files = g_ptr_array_new ();
  gint64 seed = 0;
  /* --simplify's tolerance (NAN: its default) and --fold-max-bytes (-1: the default) */
  double rtol = NAN, atol = NAN;
  gint64 fold_max_bytes = -1;
  /* --simplify's sizes for the symbolic dims (NULL: its default) */
  g_autoptr(GArray) sizes = NULL;
  g_autoptr(GPtrArray) steps = g_ptr_array_new_with_free_func ((GDestroyNotify) step_free);
  g_autoptr(GPtrArray) applied = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = NULL;
  g_autoptr(GraftEditHistory) history = NULL;
  /* The --shape and --dynamic values, for a TorchScript IN's conversion. */
  g_autoptr(GPtrArray) shape_specs = g_ptr_array_new ();
  g_autoptr(GPtrArray) dynamic_specs = g_ptr_array_new ();
  g_autoptr(GPtrArray) shape_edits = g_ptr_array_new ();

  for (int i = 1; i < argc; i++)
    {
      const char *arg = argv[i];
      const char *next = i + 1 < argc ? argv[i + 1] : NULL;
      const GraftEditOperation *operation = graft_edit_operation_for_option (arg);
      Step *step = g_new0 (Step, 1);

      g_ptr_array_add (steps, step);
      if (strcmp (arg, "--help") == 0)
        {
          print_usage ();
          return 0;
        }
      if (strcmp (arg, "--overwrite") == 0 || strcmp (arg, "--force") == 0 || strcmp (arg, "--verify") == 0
          || strcmp (arg, "--no-verify") == 0 || strcmp (arg, "--keep-io-types") == 0
          || strcmp (arg, "--auto-keep") == 0 || strcmp (arg, "--random") == 0)
        {
          auto_keep |= strcmp (arg, "--auto-keep") == 0;
          random |= strcmp (arg, "--random") == 0;
          overwrite |= strcmp (arg, "--overwrite") == 0;
          force |= strcmp (arg, "--force") == 0;
          keep_io |= strcmp (arg, "--keep-io-types") == 0;
          verify = strcmp (arg, "--no-verify") == 0 ? FALSE : strcmp (arg, "--verify") == 0 ? TRUE : verify;
          continue;
        }
      if (operation != NULL && operation->argument == NULL)
        {
          g_autoptr(GVariant) params = g_variant_ref_sink (with_scope (graft_edit_params_new (NULL, NULL), graph_path,
                                                                       function));
          if (is_pending_operation (operation->id))
            {
              step->pending_id = operation->id;
              step->pending = g_variant_ref (params);
            }
          else
            step->edit = graft_edit_new_operation (operation->id, params, &error);
          if (step->edit == NULL && step->pending == NULL)
            {
              graft_cli_print_error ("edit: %s: %s", arg, error->message);
              return 2;
            }
          continue;
        }
      if (arg[0] != '-')
        {
          if (in != NULL)
            {
              graft_cli_print_error ("edit: more than one input model ('%s' and '%s')", in, arg);
              return 2;
            }
          in = arg;
          continue;
        }
      if (next == NULL)
        {
          graft_cli_print_error ("edit: %s needs a value (try --help)", arg);
          return 2;
        }
      i++;
      if (strcmp (arg, "-o") == 0 || strcmp (arg, "--output") == 0)
        out = next;
      else if (strcmp (arg, "--save-recipe") == 0)
        save_recipe = next;
      else if (strcmp (arg, "--recipe") == 0)
        step->recipe = g_strdup (next);
      else if (strcmp (arg, "--graph") == 0)
        graph_path = next;
      else if (strcmp (arg, "--function") == 0)
        function = *next ? next : NULL;
      else if (strcmp (arg, "--rtol") == 0 || strcmp (arg, "--atol") == 0 || strcmp (arg, "--seed") == 0
               || strcmp (arg, "--fold-max-bytes") == 0)
        {
          char *end = NULL;
          double value = g_ascii_strtod (next, &end);
          if (end == next || *end != '\0' || !(value >= 0))
            {
              graft_cli_print_error ("edit: %s %s: expected a non-negative number", arg, next);
              return 2;
            }
          if (strcmp (arg, "--seed") == 0)
            seed = (gint64) value;
          else if (strcmp (arg, "--fold-max-bytes") == 0)
            fold_max_bytes = (gint64) value;
          else if (strcmp (arg, "--rtol") == 0)
            precision.rtol = rtol = value;
          else
            precision.atol = atol = value;
        }
      else if (strcmp (arg, "--input") == 0 || strcmp (arg, "--inputs") == 0)
        g_ptr_array_add (input_files, (gpointer) next);
      else if (strcmp (arg, "--sizes") == 0)
        {
          g_auto(GStrv) parts = g_strsplit (next, ",", -1);
          if (sizes == NULL)
            sizes = g_array_new (FALSE, FALSE, sizeof (gint64));
          for (guint k = 0; parts[k] != NULL; k++)
            {
              char *end = NULL;
              gint64 size = g_ascii_strtoll (parts[k], &end, 10);
              if (end == parts[k] || *end != '\0' || size < 1)
                {
                  graft_cli_print_error ("edit: --sizes %s: expected sizes like 1,2,8 (positive integers)", next);
                  return 2;
                }
              g_array_append_val (sizes, size);
            }
        }
      else if (strcmp (arg, "--fp16-keep") == 0)
        {
          g_strfreev (fp16_keep);
          fp16_keep = g_strsplit (next, ",", -1);
        }
      else if (operation != NULL)
        {
          GVariant *params = graft_edit_operation_parse (operation, NULL, NULL, next, NULL);
          if (params == NULL)
            {
              graft_cli_print_error ("edit: cannot read '%s %s' (try --help)", arg, next);
              return 2;
            }
          step->edit = graft_edit_new_operation (operation->id, with_scope (params, graph_path, function), &error);
          if (step->edit == NULL)
            {
              graft_cli_print_error ("edit: %s %s: %s", arg, next, error->message);
              return 2;
            }
          /* A TorchScript IN takes its input shapes from --dynamic and
           * --shape in its conversion, instead of as edits. */
          if (strcmp (operation->id, "make-dim-dynamic") == 0 || strcmp (operation->id, "set-input-shape") == 0)
            {
              g_ptr_array_add (operation->id[0] == 'm' ? dynamic_specs : shape_specs, (gpointer) next);
              g_ptr_array_add (shape_edits, step->edit);
            }
        }
      else
        {
          graft_cli_print_error ("edit: unknown option '%s' (try --help)", arg);
          return 2;
        }
    }
  if (in == NULL || out == NULL)
    {
      graft_cli_print_error ("edit: needs an input model and -o OUT (try --help)");
      return 2;
    }
  if (auto_keep && !auto_keep_usage_ok (steps))
    return 2;
  /* -o /dev/stdout (a pipe, say): the model's bytes go to file
   * descriptor 1, so what the edit reports goes to stderr. */
  if (is_stdout (out))
    {
      fflush (stdout);
      stdout = stderr;
    }
  for (guint i = 0; i < steps->len; i++)
    {
      Step *step = g_ptr_array_index (steps, i);
      if (step->pending == NULL)
        continue;
      g_autoptr(GVariantDict) dict = g_variant_dict_new (step->pending);
      if (strcmp (step->pending_id, "float16") == 0)
        {
          g_variant_dict_insert (dict, "keep_io_types", "b", keep_io);
          if (fp16_keep != NULL)
            g_variant_dict_insert_value (dict, "block_ops", g_variant_new_strv ((const char *const *) fp16_keep, -1));
        }
      if (strcmp (step->pending_id, "fold-constants") == 0 && fold_max_bytes >= 0)
        g_variant_dict_insert (dict, "max_bytes", "x", fold_max_bytes);
      if (strcmp (step->pending_id, "simplify") == 0)
        {
          g_variant_dict_insert (dict, "verify", "b", verify);
          g_variant_dict_insert (dict, "rtol", "d", isnan (rtol) ? 1e-5 : rtol);
          g_variant_dict_insert (dict, "atol", "d", isnan (atol) ? 1e-5 : atol);
          g_variant_dict_insert (dict, "seed", "x", seed);
          if (fold_max_bytes >= 0)
            g_variant_dict_insert (dict, "fold_max_bytes", "x", fold_max_bytes);
          if (input_files->len > 0)
            g_variant_dict_insert_value (dict, "inputs", g_variant_new_strv ((const char *const *) input_files->pdata,
                                                                              input_files->len));
          if (sizes != NULL)
            g_variant_dict_insert_value (dict, "sizes", g_variant_new_fixed_array (G_VARIANT_TYPE_INT64, sizes->data,
                                                                                   sizes->len, sizeof (gint64)));
        }
      step->edit = graft_edit_new_operation (step->pending_id, g_variant_dict_end (dict), NULL);
    }

  model = graft_model_load (in, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  /* A .pt2 saved as .pt2 is edited as the program it is; otherwise
   * TorchScript and .pt2 are lowered to ONNX first. */
  const GraftFormat *out_format = graft_format_for_path (out);
  gboolean keep_program = graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM && out_format != NULL
                          && (out_format->writes_from & GRAFT_FORMAT_FROM (GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM));
  if (!keep_program && (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_TORCHSCRIPT ||
                        graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM))
    {
      /* The shapes go into the conversion (TorchScript declares none), the
       * other edits apply to the converted graph. */
      g_autoptr(GHashTable) shapes = graft_cli_parse_input_shapes_of (model, shape_specs, dynamic_specs, &error);
      GraftLowerOptions options = { 0 };
      if (shapes == NULL)
        {
          graft_cli_print_error ("edit: %s", error->message);
          return 2;
        }
      options.input_shapes = shapes;
      GraftModel *converted = graft_lower_to_onnx (model, &options, &error);
      if (converted == NULL)
        {
          graft_cli_print_error ("%s: %s", in, error->message);
          return 1;
        }
      graft_model_set_path (converted, in);
      g_object_unref (model);
      model = converted;
      printf ("converted %s to ONNX opset %" G_GINT64_FORMAT "\n", in, graft_model_get_opset (model, "onnx"));
      for (guint i = 0; i < steps->len; i++)
        {
          Step *step = g_ptr_array_index (steps, i);
          if (step->edit != NULL && g_ptr_array_find (shape_edits, step->edit, NULL))
            g_clear_object (&step->edit);
        }
    }
  if (auto_keep && !search_float32_nodes (model, steps, &precision, input_files, random, seed))
    return 1;
  history = graft_edit_history_new (model);
  for (guint i = 0; i < steps->len; i++)
    {
      Step *step = g_ptr_array_index (steps, i);
      guint before = applied->len;
      gint64 start;

      if (step->recipe != NULL)
        {
          gboolean replayed = graft_recipe_replay_file (step->recipe, history, applied, &error);
          for (guint j = before; j < applied->len; j++)
            print_edit (g_ptr_array_index (applied, j), -1);
          if (!replayed)
            {
              graft_cli_print_error ("%s: %s", in, error->message);
              return 1;
            }
          continue;
        }
      if (step->edit == NULL)
        continue;
      start = g_get_monotonic_time ();
      if (!graft_edit_history_apply (history, step->edit, &error))
        {
          graft_cli_print_error ("%s: %s: %s", in, graft_edit_get_description (step->edit), error->message);
          return 1;
        }
      g_ptr_array_add (applied, g_object_ref (step->edit));
      print_edit (step->edit, (g_get_monotonic_time () - start) / 1e6);
    }
  if (verify)
    verified = verify_edits (model, applied, in);
  if (!verified && !force)
    return 1;
  if (save_recipe != NULL)
    {
      if (!graft_recipe_save (graft_edit_history_get_applied (history), save_recipe, &error))
        {
          graft_cli_print_error ("%s", error->message);
          return 1;
        }
      printf ("recipe of %u edits saved to %s\n", graft_edit_history_get_applied (history)->len, save_recipe);
    }
  if (!graft_format_save (model, out, NULL, overwrite, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  printf ("saved %s%s\n", out, verified ? "" : " although the check failed (--force)");
  return verified ? 0 : 1;
}
