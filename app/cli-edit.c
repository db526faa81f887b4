/* graft-cli edit IN -o OUT [edits]: applies model/edit operations in the
 * order given (a TorchScript IN is first converted to ONNX by model/lower,
 * taking its input shapes from --shape and --dynamic), proves the dims they changed at other sizes (unless
 * --no-verify), and saves the result as ONNX (atomically; never over IN
 * unless --overwrite; not at all when the proof fails, unless --force). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "loader.h"
#include "edit/edit.h"
#include "edit/edit-history.h"
#include "onnx/writer.h"
#include "lower/lower.h"

static gboolean
parse_int (const char *text, gint64 min, gint64 *value)
{
  guint64 parsed;

  if (!g_ascii_string_to_unsigned (text, 10, min, G_MAXINT32, &parsed, NULL))
    return FALSE;
  *value = (gint64) parsed;
  return TRUE;
}

/* INPUT:AXIS=NAME; the input name may itself contain ':'. */
static GraftEdit *
parse_dynamic (const char *spec)
{
  const char *equals = strrchr (spec, '=');
  const char *colon;
  g_autofree char *input = NULL, *axis_text = NULL;
  gint64 axis;

  if (equals == NULL)
    return NULL;
  for (colon = equals; colon > spec && *colon != ':'; colon--)
    ;
  if (colon == spec || equals[1] == '\0')
    return NULL;
  input = g_strndup (spec, colon - spec);
  axis_text = g_strndup (colon + 1, equals - colon - 1);
  if (!parse_int (axis_text, 0, &axis))
    return NULL;
  return graft_edit_new_make_dim_dynamic (input, (int) axis, equals + 1);
}

/* INPUT=1x3x224x224 */
static GraftEdit *
parse_shape (const char *spec)
{
  const char *equals = strrchr (spec, '=');
  g_autofree char *input = NULL;
  g_auto(GStrv) parts = NULL;
  g_autofree gint64 *dims = NULL;
  guint n;

  if (equals == NULL || equals == spec || equals[1] == '\0')
    return NULL;
  input = g_strndup (spec, equals - spec);
  parts = g_strsplit (equals + 1, "x", -1);
  n = g_strv_length (parts);
  dims = g_new (gint64, n);
  for (guint i = 0; i < n; i++)
    if (!parse_int (parts[i], 1, &dims[i]))
      return NULL;
  return graft_edit_new_set_input_shape (input, n, dims);
}

/* IN1,IN2:OUT1,OUT2 */
static GraftEdit *
parse_extract (const char *spec)
{
  g_auto(GStrv) halves = g_strsplit (spec, ":", 2);
  g_auto(GStrv) inputs = NULL, outputs = NULL;

  if (g_strv_length (halves) != 2 || halves[0][0] == '\0' || halves[1][0] == '\0')
    return NULL;
  inputs = g_strsplit (halves[0], ",", -1);
  outputs = g_strsplit (halves[1], ",", -1);
  return graft_edit_new_extract ((const char *const *) inputs, (const char *const *) outputs);
}

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
  printf ("Usage: graft-cli edit IN -o OUT [EDIT]... [--overwrite]\n"
          "Edits, applied in the order given:\n"
          "  --dynamic INPUT:AXIS=NAME   make a dim dynamic, repairing baked shape constants\n"
          "  --shape INPUT=1x3x224x224   fix an input's shape\n"
          "  --bypass NODE               connect NODE's input to its consumers and remove it\n"
          "  --delete NODE               remove NODE and everything depending on it\n"
          "  --extract IN,..:OUT,..      keep the part computing OUTs from INs\n"
          "--overwrite allows OUT to be IN itself.\n"
          "After --dynamic and --shape, the edited model is run at other sizes of the changed dims (1 and\n"
          "primes) by shape inference and in Graft's runtime on random inputs, and a dim named like a\n"
          "batch must keep samples apart. If that fails, the edit fails: exit status 1, nothing saved.\n"
          "  --no-verify                 skip that check\n"
          "  --force                     save even when the check fails (the exit status is still 1)\n");
}

int
graft_cli_edit (int argc, char **argv)
{
  const char *in = NULL, *out = NULL;
  gboolean overwrite = FALSE, verify = TRUE, force = FALSE, verified = TRUE;
  g_autoptr(GPtrArray) edits = g_ptr_array_new_with_free_func (g_object_unref);
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
      GraftEdit *edit = NULL;

      if (strcmp (arg, "--help") == 0)
        {
          print_usage ();
          return 0;
        }
      if (strcmp (arg, "--overwrite") == 0 || strcmp (arg, "--force") == 0 || strcmp (arg, "--verify") == 0
          || strcmp (arg, "--no-verify") == 0)
        {
          overwrite |= strcmp (arg, "--overwrite") == 0;
          force |= strcmp (arg, "--force") == 0;
          verify = strcmp (arg, "--no-verify") == 0 ? FALSE : strcmp (arg, "--verify") == 0 ? TRUE : verify;
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
        {
          out = next;
          continue;
        }
      if (strcmp (arg, "--dynamic") == 0)
        {
          edit = parse_dynamic (next);
          g_ptr_array_add (dynamic_specs, (gpointer) next);
          g_ptr_array_add (shape_edits, edit);
        }
      else if (strcmp (arg, "--shape") == 0)
        {
          edit = parse_shape (next);
          g_ptr_array_add (shape_specs, (gpointer) next);
          g_ptr_array_add (shape_edits, edit);
        }
      else if (strcmp (arg, "--bypass") == 0)
        edit = graft_edit_new_bypass_node (next);
      else if (strcmp (arg, "--delete") == 0)
        edit = graft_edit_new_delete_node (next);
      else if (strcmp (arg, "--extract") == 0)
        edit = parse_extract (next);
      else
        {
          graft_cli_print_error ("edit: unknown option '%s' (try --help)", arg);
          return 2;
        }
      if (edit == NULL)
        {
          graft_cli_print_error ("edit: cannot read '%s %s' (try --help)", arg, next);
          return 2;
        }
      g_ptr_array_add (edits, edit);
    }
  if (in == NULL || out == NULL)
    {
      graft_cli_print_error ("edit: needs an input model and -o OUT (try --help)");
      return 2;
    }

  model = graft_model_load (in, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_TORCHSCRIPT ||
      graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM)
    {
      /* The shapes go into the conversion (TorchScript declares none), the
       * other edits apply to the converted graph. */
      g_autoptr(GHashTable) shapes = graft_cli_parse_input_shapes (shape_specs, dynamic_specs, &error);
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
      for (guint i = 0; i < shape_edits->len; i++)
        g_ptr_array_remove (edits, shape_edits->pdata[i]);
    }
  history = graft_edit_history_new (model);
  for (guint i = 0; i < edits->len; i++)
    {
      GraftEdit *edit = g_ptr_array_index (edits, i);
      GPtrArray *notes;

      if (!graft_edit_history_apply (history, edit, &error))
        {
          graft_cli_print_error ("%s: %s: %s", in, graft_edit_get_description (edit), error->message);
          return 1;
        }
      notes = graft_edit_get_notes (edit);
      printf ("%s\n", graft_edit_get_description (edit));
      for (guint j = 0; j < notes->len; j++)
        printf ("  %s\n", (char *) g_ptr_array_index (notes, j));
    }
  if (verify)
    verified = verify_edits (model, edits, in);
  if (!verified && !force)
    return 1;
  if (!graft_onnx_write_file (model, out, overwrite ? GRAFT_ONNX_WRITE_OVERWRITE_SOURCE : GRAFT_ONNX_WRITE_NONE,
                              &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  printf ("saved %s%s\n", out, verified ? "" : " although the check failed (--force)");
  return verified ? 0 : 1;
}
