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

/* Splits "LEFT=RIGHT" at the first '=' (names rarely hold one; values may). */
static gboolean
split_at_equals (const char *spec, char **left, char **right)
{
  const char *equals = strchr (spec, '=');

  if (equals == NULL || equals == spec)
    return FALSE;
  *left = g_strndup (spec, equals - spec);
  *right = g_strdup (equals + 1);
  return TRUE;
}

/* NODE:NAME=[TYPE:]VALUE (the node name may hold ':'), or NODE:NAME
 * without a value; the assignment's grammar is attribute-value.h's. */
static GVariant *
parse_attribute (const char *spec, gboolean with_value)
{
  const char *equals = with_value ? strchr (spec, '=') : spec + strlen (spec);
  const char *colon;
  g_autofree char *node = NULL, *name = NULL, *type = NULL, *value = NULL;

  if (equals == NULL)
    return NULL;
  for (colon = equals; colon > spec && *colon != ':'; colon--)
    ;
  if (colon == spec || colon + 1 == equals)
    return NULL;
  node = g_strndup (spec, colon - spec);
  if (!with_value)
    return graft_edit_params_new ("node", g_variant_new_string (node), "name", g_variant_new_string (colon + 1), NULL);
  if (!graft_attribute_assignment_parse (colon + 1, &name, &type, &value, NULL))
    return NULL;
  return graft_edit_params_new ("node", g_variant_new_string (node), "name", g_variant_new_string (name),
                                "value", g_variant_new_string (value),
                                "type", type ? g_variant_new_string (type) : NULL, NULL);
}

/* OLD=NEW for key_from / "to". */
static GVariant *
parse_rename (const char *spec, const char *key)
{
  g_autofree char *from = NULL, *to = NULL;

  if (!split_at_equals (spec, &from, &to) || *to == '\0')
    return NULL;
  return graft_edit_params_new (key, g_variant_new_string (from), "to", g_variant_new_string (to), NULL);
}

/* NAME=TEXT into { key_left: NAME, key_right: TEXT }. */
static GVariant *
parse_pair (const char *spec, const char *key_left, const char *key_right)
{
  g_autofree char *left = NULL, *right = NULL;

  if (!split_at_equals (spec, &left, &right) || *right == '\0')
    return NULL;
  return graft_edit_params_new (key_left, g_variant_new_string (left), key_right, g_variant_new_string (right), NULL);
}

/* "OP(IN,...);ATTR=VALUE;..." → op, inputs (NULL without parentheses)
 * and attribute assignments (NULL without any). */
static gboolean
parse_op_call (const char *spec, char **op, GStrv *inputs, GStrv *attributes)
{
  g_auto(GStrv) parts = g_strsplit (spec, ";", -1);
  char *open;

  if (parts[0] == NULL || *parts[0] == '\0')
    return FALSE;
  *op = g_strdup (parts[0]);
  *inputs = NULL;
  *attributes = parts[1] != NULL ? g_strdupv (parts + 1) : NULL;
  if ((open = strchr (*op, '(')) != NULL)
    {
      gsize n = strlen (open);
      if (n < 2 || open[n - 1] != ')')
        return FALSE;
      open[n - 1] = '\0';
      *inputs = g_strsplit (open + 1, ",", -1);
      *open = '\0';
    }
  return **op != '\0';
}

/* VALUE=OP or VALUE=OP(IN2,IN3);ATTR=VALUE: the extra inputs follow the edge. */
static GVariant *
parse_insert (const char *spec)
{
  g_autofree char *value = NULL, *call = NULL, *op = NULL;
  g_auto(GStrv) inputs = NULL, attributes = NULL;

  if (!split_at_equals (spec, &value, &call) || !parse_op_call (call, &op, &inputs, &attributes))
    return NULL;
  return graft_edit_params_new ("value", g_variant_new_string (value), "op", g_variant_new_string (op),
                                "inputs", inputs ? g_variant_new_strv ((const char *const *) inputs, -1) : NULL,
                                "attributes", attributes ? g_variant_new_strv ((const char *const *) attributes, -1) : NULL,
                                NULL);
}

/* [NAME=]OP(IN,...)[;ATTR=VALUE...]: a new node whose outputs are graph outputs. */
static GVariant *
parse_add_node (const char *spec)
{
  const char *equals = strchr (spec, '=');
  const char *open = strchr (spec, '(');
  const char *semicolon = strchr (spec, ';');
  g_autofree char *name = NULL, *op = NULL;
  g_auto(GStrv) inputs = NULL, attributes = NULL;

  /* A '=' before the op call names the node; later ones are attributes'. */
  if (equals != NULL && (open == NULL || equals < open) && (semicolon == NULL || equals < semicolon))
    {
      name = g_strndup (spec, equals - spec);
      spec = equals + 1;
    }
  if (!parse_op_call (spec, &op, &inputs, &attributes) || inputs == NULL)
    return NULL;
  if (inputs[0] != NULL && inputs[1] == NULL && *inputs[0] == '\0')
    g_clear_pointer (&inputs[0], g_free);   /* "Op()": no inputs */
  return graft_edit_params_new ("op", g_variant_new_string (op), "name", name ? g_variant_new_string (name) : NULL,
                                "inputs", g_variant_new_strv ((const char *const *) inputs, -1),
                                "attributes", attributes ? g_variant_new_strv ((const char *const *) attributes, -1) : NULL,
                                NULL);
}

/* NAME, or NAME=DTYPE[:SHAPE] for a new input. */
static GVariant *
parse_add_input (const char *spec)
{
  g_autofree char *name = NULL, *type = NULL;
  char *colon;

  if (!split_at_equals (spec, &name, &type))
    return graft_edit_params_new ("value", g_variant_new_string (spec), NULL);
  if ((colon = strchr (type, ':')) != NULL)
    *colon++ = '\0';
  return graft_edit_params_new ("value", g_variant_new_string (name), "dtype", g_variant_new_string (type),
                                "shape", colon ? g_variant_new_string (colon) : NULL, NULL);
}

/* N1,N2=DOMAIN::OP */
static GVariant *
parse_replace_nodes (const char *spec)
{
  const char *equals = strrchr (spec, '=');
  g_autofree char *list = NULL;
  g_auto(GStrv) nodes = NULL;

  if (equals == NULL || equals == spec || equals[1] == '\0')
    return NULL;
  list = g_strndup (spec, equals - spec);
  nodes = g_strsplit (list, ",", -1);
  return graft_edit_params_new ("nodes", g_variant_new_strv ((const char *const *) nodes, -1),
                                "op", g_variant_new_string (equals + 1), NULL);
}

/* PATTERN=>DOMAIN::OP[;ATTR=V...] or PATTERN=>REPLACEMENT (steps, as the
 * pattern's: a replacement has parentheses, an op does not). */
static GVariant *
parse_replace_pattern (const char *spec)
{
  const char *arrow = strstr (spec, "=>");
  g_autofree char *pattern = NULL, *op = NULL;
  g_auto(GStrv) inputs = NULL, attributes = NULL;

  if (arrow == NULL || arrow == spec || arrow[2] == '\0')
    return NULL;
  pattern = g_strndup (spec, arrow - spec);
  if (strchr (arrow + 2, '(') != NULL)
    return graft_edit_params_new ("pattern", g_variant_new_string (pattern),
                                  "replacement", g_variant_new_string (arrow + 2), NULL);
  if (!parse_op_call (arrow + 2, &op, &inputs, &attributes))
    return NULL;
  return graft_edit_params_new ("pattern", g_variant_new_string (pattern), "op", g_variant_new_string (op),
                                "attributes", attributes ? g_variant_new_strv ((const char *const *) attributes, -1) : NULL,
                                NULL);
}

/* Options of operation edits: option, table id, how the value reads
 * (NULL for options without a value). */
typedef GVariant *(*ParseFunc) (const char *spec);

static GVariant *parse_rename_node (const char *spec) { return parse_rename (spec, "node"); }
static GVariant *parse_rename_value (const char *spec) { return parse_rename (spec, "value"); }
static GVariant *parse_set_attribute (const char *spec) { return parse_attribute (spec, TRUE); }
static GVariant *parse_remove_attribute (const char *spec) { return parse_attribute (spec, FALSE); }
static GVariant *parse_npy (const char *spec) { return parse_pair (spec, "value", "file"); }
static GVariant *parse_values (const char *spec) { return parse_pair (spec, "value", "values"); }
static GVariant *parse_cast (const char *spec) { return parse_pair (spec, "value", "dtype"); }
static GVariant *parse_value (const char *spec) { return graft_edit_params_new ("value", g_variant_new_string (spec), NULL); }
static GVariant *parse_replace_op (const char *spec) { return parse_pair (spec, "node", "op"); }

static const struct {
  const char *option;
  const char *id;
  ParseFunc parse;
  const char *argument;
  const char *help;
} operation_options[] = {
  { "--rename-node", "rename-node", parse_rename_node, "OLD=NEW",
    "rename a node" },
  { "--rename-value", "rename-value", parse_rename_value, "OLD=NEW",
    "rename a value (consumers and outputs follow)" },
  { "--attr", "set-attribute", parse_set_attribute, "NODE:NAME=[TYPE:]VALUE",
    "set or add an attribute (TYPE: int, float, string, ints, floats, strings; default: the attribute's own type)" },
  { "--remove-attr", "remove-attribute", parse_remove_attribute, "NODE:NAME",
    "remove an attribute" },
  { "--initializer", "replace-initializer", parse_npy, "NAME=FILE.npy",
    "replace an initializer's data" },
  { "--initializer-values", "set-initializer-values", parse_values, "NAME=[1,2,...]",
    "set a small initializer's elements" },
  { "--cast-initializer", "cast-initializer", parse_cast, "NAME=DTYPE",
    "change an initializer's dtype" },
  { "--add-output", "add-output", parse_value, "VALUE",
    "mark a value as a graph output" },
  { "--remove-output", "remove-output", parse_value, "VALUE",
    "drop a graph output (and what only it needed)" },
  { "--add-input", "add-input", parse_add_input, "VALUE[=DTYPE[:SHAPE]]",
    "cut the graph at VALUE, or add a new input (SHAPE like 1xbatchx224; '?' unknown)" },
  { "--remove-input", "remove-input", parse_value, "NAME",
    "remove an unused graph input" },
  { "--insert", "insert-node", parse_insert, "VALUE=OP[(IN,...)][;ATTR=[TYPE:]V...]",
    "insert OP on the edge VALUE (all its consumers); OP may be DOMAIN::OP; IN are extra inputs" },
  { "--add-node", "add-node", parse_add_node, "[NAME=]OP(IN,...)[;ATTR=[TYPE:]V...]",
    "add a node reading the values IN ('' for an omitted input); its outputs become graph outputs" },
  { "--replace-op", "replace-op", parse_replace_op, "NODE=OP",
    "give NODE another op, keeping its edges (and its attributes when OP is a custom-domain DOMAIN::OP)" },
  { "--replace-nodes", "replace-nodes", parse_replace_nodes, "N1,N2,...=DOMAIN::OP",
    "replace nodes by one (plugin) op taking their inputs and giving their outputs" },
  { "--replace-pattern", "replace-pattern", parse_replace_pattern, "PATTERN=>DOMAIN::OP[;ATTR=V...] or PATTERN=>STEPS",
    "replace every match of PATTERN (steps like \"m=MatMul(x,w) a=Add(m,b) Relu(a)\": a step reads earlier steps or "
    "variables; ';ATTR=V' requires an attribute), also inside If/Loop bodies, by one custom op reading the variables, "
    "or by STEPS written the same way; fails when nothing matches" },
  { "--fold", "fold-constants", NULL, "",
    "fold constants (and Shape of static shapes) in Graft's runtime (results over --fold-max-bytes N stay computed; "
    "default 64 MiB)" },
  { "--cleanup", "cleanup", NULL, "",
    "remove dead nodes, Identity/Dropout, unused and duplicate initializers" },
  { "--simplify", "simplify", NULL, "",
    "fold constants and run every pass below to a fixed point, then run the original and the result on the same "
    "inputs in Graft's runtime: --input [NAME=]FILE (.npy/.pb, as graft-cli run reads them; repeatable) for those "
    "given, random data (seeded by --seed N) for the others, symbolic dims the files leave free at each of "
    "--sizes N,N,... (default: the first two sizes that run). Outputs beyond --rtol R and --atol A (default 1e-5; "
    "|a-b| <= A + R*max|a|) fail the edit, naming the pass that changed them; --no-verify skips the check" },
  { "--dead-code", "eliminate-dead-code", NULL, "",
    "remove what computes nothing the graph gives out, and unused initializers" },
  { "--cse", "eliminate-common-subexpressions", NULL, "",
    "merge nodes with the same op, inputs and attributes (equal constants count as the same)" },
  { "--no-ops", "eliminate-no-ops", NULL, "",
    "remove Identity, Dropout, Reshape/Expand to the same shape, Transpose pairs that cancel, Cast to the same type, "
    "Slice of everything, Concat of one, x+0, x*1" },
  { "--fold-into-conv", "fold-into-conv", NULL, "",
    "fold BatchNormalization and Mul/Add/Sub/Div by per-channel constants into the Conv or Gemm before them" },
  { "--fold-pad", "fold-pad", NULL, "",
    "fold Pad into the Conv, AveragePool or MaxPool after it where the result is the same" },
  { "--matmul-add-to-gemm", "matmul-add-to-gemm", NULL, "",
    "MatMul of rank-2 values followed by Add of a constant becomes Gemm" },
  { "--fuse-matmuls", "fuse-sibling-matmuls", NULL, "",
    "three or more MatMuls of one input by constant weights become one MatMul and a Split" },
  { "--fuse-layer-norm", "fuse-layer-norm", NULL, "",
    "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] over the last axes (or the channels of NCHW, then between "
    "two Transposes) becomes LayerNormalization, from opset 17 on" },
  { "--fuse-rms-norm", "fuse-rms-norm", NULL, "",
    "Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul[/Mul] over the last axes becomes RMSNormalization, from opset 23 on" },
  { "--fuse-gelu", "fuse-gelu", NULL, "",
    "x*0.5*(1+erf(x/sqrt(2))) and the tanh form become Gelu, from opset 20 on" },
  { "--fuse-attention", "fuse-attention", NULL, "",
    "MatMul(Q,K^T)[*scale][+mask]/Softmax/MatMul(.,V) on rank-4 float32 becomes Attention, from opset 23 on" },
  { "--merge-initializers", "merge-initializers", NULL, "",
    "store initializers with the same type and bytes once" },
  { "--toposort", "toposort", NULL, "",
    "sort nodes topologically" },
  { "--float16", "float16", NULL, "",
    "convert weights and compute to float16 (see --keep-io-types, --fp16-keep, --auto-keep)" },
};

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
          "  --dynamic INPUT:AXIS=NAME[:MIN[:MAX]]\n"
          "                              make a dim dynamic (in MIN..MAX), repairing baked shape constants\n"
          "                              (on a .pt2 whose dim torch.export specialized: proven at two other\n"
          "                              sizes against the original run sample by sample, or refused)\n"
          "  --shape INPUT=1x3x224x224   fix an input's shape\n"
          "  --bypass NODE               connect NODE's input to its consumers and remove it\n"
          "  --delete NODE               remove NODE and everything depending on it\n"
          "  --extract IN,..:OUT,..      keep the part computing OUTs from INs\n");
  for (guint i = 0; i < G_N_ELEMENTS (operation_options); i++)
    {
      g_autofree char *usage = g_strdup_printf ("%s %s", operation_options[i].option, operation_options[i].argument);
      g_auto(GStrv) words = g_strsplit (operation_options[i].help, " ", -1);
      int column = strlen (usage) > 27 ? (printf ("  %s\n", usage), printf ("%29s", "")) : printf ("  %-27s", usage);

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

/* The operation option arg names, or -1. */
static int
find_operation_option (const char *arg)
{
  for (guint i = 0; i < G_N_ELEMENTS (operation_options); i++)
    if (strcmp (arg, operation_options[i].option) == 0)
      return i;
  return -1;
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
      int operation = find_operation_option (arg);
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
      if (operation >= 0 && operation_options[operation].parse == NULL)
        {
          g_autoptr(GVariant) params = g_variant_ref_sink (with_scope (graft_edit_params_new (NULL, NULL), graph_path,
                                                                       function));
          if (is_pending_operation (operation_options[operation].id))
            {
              step->pending_id = operation_options[operation].id;
              step->pending = g_variant_ref (params);
            }
          else
            step->edit = graft_edit_new_operation (operation_options[operation].id, params, &error);
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
      else if (strcmp (arg, "--dynamic") == 0)
        {
          step->edit = parse_dynamic (next);
          g_ptr_array_add (dynamic_specs, (gpointer) next);
          g_ptr_array_add (shape_edits, step->edit);
        }
      else if (strcmp (arg, "--shape") == 0)
        {
          step->edit = parse_shape (next);
          g_ptr_array_add (shape_specs, (gpointer) next);
          g_ptr_array_add (shape_edits, step->edit);
        }
      else if (strcmp (arg, "--bypass") == 0)
        step->edit = graft_edit_new_bypass_node (next);
      else if (strcmp (arg, "--delete") == 0)
        step->edit = graft_edit_new_delete_node (next);
      else if (strcmp (arg, "--extract") == 0)
        step->edit = parse_extract (next);
      else if (operation >= 0)
        {
          GVariant *params = operation_options[operation].parse (next);
          if (params != NULL)
            {
              step->edit = graft_edit_new_operation (operation_options[operation].id,
                                                     with_scope (params, graph_path, function), &error);
              if (step->edit == NULL)
                {
                  graft_cli_print_error ("edit: %s %s: %s", arg, next, error->message);
                  return 2;
                }
            }
        }
      else
        {
          graft_cli_print_error ("edit: unknown option '%s' (try --help)", arg);
          return 2;
        }
      if (step->edit == NULL && step->recipe == NULL && operation >= 0)
        {
          graft_cli_print_error ("edit: cannot read '%s %s' (try --help)", arg, next);
          return 2;
        }
      if (step->edit == NULL && (strcmp (arg, "--dynamic") == 0 || strcmp (arg, "--shape") == 0
                                 || strcmp (arg, "--extract") == 0))
        {
          graft_cli_print_error ("edit: cannot read '%s %s' (try --help)", arg, next);
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
