/* TorchScript fixtures run by Graft's runtime against PyTorch's outputs,
 * for both generations of writers (torch-generations.h).
 *
 * tests/fixtures/make-torchscript-fixtures.py writes the archives,
 * tests/fixtures/make-torchscript-outputs.py the seeded inputs and
 * torch.jit.load(f)(*inputs) outputs as .npy files with a manifest. Each
 * fixture is loaded with graft_model_load, run with graft_runtime_run and
 * every output compared: max |graft - torch| <= 1e-4 * max |torch|.
 *
 * test-aten --dump FILE.pt prints the loaded graph (ops, inputs,
 * attributes, blocks), which is what the aten kernels have to read. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "runtime/kernels/aten-args.h"
#include "../../torchscript/torch-generations.h"
#include "../../onnx/fixtures.h"

/* Fixtures that do not match yet, with the reason: reported as TODO so the
 * count of passing ones can only go up. */
static const struct { const char *name, *reason; } known_gaps[] = {
  { "quantized_traced", "the runtime has no quantized:: kernels (conv2d_relu, linear on packed params) yet" },
  { "quantized_scripted", "the runtime has no quantized:: kernels (conv2d_relu, linear on packed params) yet" },
  { NULL, NULL },
};

static char *fixture_dirs[GRAFT_TORCH_N_GENERATIONS];
static char *io_dirs[GRAFT_TORCH_N_GENERATIONS];


static void
generate (GraftTorchGeneration generation)
{
  static gboolean done[GRAFT_TORCH_N_GENERATIONS];

  if (done[generation])
    return;
  done[generation] = TRUE;
  fixture_dirs[generation] = graft_torch_generation_fixtures (generation, NULL);
  if (fixture_dirs[generation] != NULL)
    io_dirs[generation] = graft_torch_generation_run (generation, "tests/fixtures/make-torchscript-outputs.py",
                                                      fixture_dirs[generation], "-io");
}

/* ------------------------------------------------------------------ dump */

static void
dump_graph (GraftGraph *graph, int depth)
{
  GString *line = g_string_new (NULL);
  g_string_append_printf (line, "%*sgraph %s (", depth * 2, "", graph->name);
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *v = graph->inputs->pdata[i];
      g_string_append_printf (line, "%s%s:%s%s", i ? ", " : "", v->name, v->type_string ? v->type_string : "?",
                              v->initializer ? "=init" : "");
    }
  g_string_append (line, ")");
  g_print ("%s\n", line->str);
  g_string_free (line, TRUE);
  for (guint n = 0; n < graph->nodes->len; n++)
    {
      GraftNode *node = graph->nodes->pdata[n];
      GString *s = g_string_new (NULL);
      g_string_append_printf (s, "%*s", depth * 2 + 2, "");
      for (guint i = 0; i < node->outputs->len; i++)
        {
          GraftValue *v = node->outputs->pdata[i];
          g_string_append_printf (s, "%s%s", i ? ", " : "", v ? v->name : "-");
        }
      g_string_append_printf (s, " = %s(", node->op);
      for (guint i = 0; i < node->inputs->len; i++)
        {
          GraftValue *v = node->inputs->pdata[i];
          g_string_append_printf (s, "%s%s", i ? ", " : "", v ? v->name : "-");
        }
      g_string_append (s, ")");
      for (guint i = 0; i < node->attributes->len; i++)
        {
          GraftAttribute *a = node->attributes->pdata[i];
          if (a->type == GRAFT_ATTR_GRAPH)
            continue;
          g_autofree char *val = graft_attribute_format_value (a, 8);
          g_string_append_printf (s, " %s=%s", a->name, val);
        }
      g_print ("%s\n", s->str);
      g_string_free (s, TRUE);
      for (guint i = 0; i < node->attributes->len; i++)
        {
          GraftAttribute *a = node->attributes->pdata[i];
          if (a->type == GRAFT_ATTR_GRAPH)
            dump_graph (a->g, depth + 2);
        }
    }
  GString *outs = g_string_new (NULL);
  for (guint i = 0; i < graph->outputs->len; i++)
    g_string_append_printf (outs, "%s%s", i ? ", " : "", ((GraftValue *) graph->outputs->pdata[i])->name);
  g_print ("%*sreturn %s\n", depth * 2 + 2, "", outs->str);
  g_string_free (outs, TRUE);
}

/* ------------------------------------------------------------------ compare */

static double
max_abs (const GraftRtTensor *t)
{
  double m = 0;
  for (gint64 i = 0; i < t->numel; i++)
    m = MAX (m, fabs (graft_rt_tensor_get_f64 (t, i)));
  return m;
}

/* A 1-D string array (a List[str] input) as the list TorchScript takes;
 * consumes strings. */
static GraftRtTensor *
strings_as_list (GraftRtTensor *strings)
{
  GraftRtTensor *list = graft_rt_tensor_new_sequence (GRAFT_DTYPE_STRING);
  for (gint64 i = 0; i < strings->numel; i++)
    g_ptr_array_add (list->items, graft_aten_new_string (g_strdup (((char **) strings->data)[i])));
  graft_rt_tensor_unref (strings);
  return list;
}

static gboolean
compare_strings (const char *what, const GraftRtTensor *got, const GraftRtTensor *want, GString *report)
{
  gboolean same = got->kind == GRAFT_RT_TENSOR && got->dtype == GRAFT_DTYPE_STRING && got->numel == want->numel;
  for (gint64 i = 0; same && i < want->numel; i++)
    same = g_strcmp0 (((char **) got->data)[i], ((char **) want->data)[i]) == 0;
  g_string_append_printf (report, "%s: string %s%s; ", what, want->numel ? ((char **) want->data)[0] : "",
                          same ? "" : " FAIL");
  return same;
}

static gboolean
compare (const char *what, const GraftRtTensor *got, const GraftRtTensor *want, GString *report)
{
  if (want->dtype == GRAFT_DTYPE_STRING)
    return compare_strings (what, got, want, report);
  g_autofree char *gd = graft_rt_tensor_describe (got);
  g_autofree char *wd = graft_rt_tensor_describe (want);
  if (got->kind != GRAFT_RT_TENSOR || got->rank != want->rank || !graft_rt_tensor_same_shape (got, want))
    {
      g_string_append_printf (report, "%s: shape %s, want %s; ", what, gd, wd);
      return FALSE;
    }
  double ref = max_abs (want), diff = 0;
  for (gint64 i = 0; i < want->numel; i++)
    {
      double d = fabs (graft_rt_tensor_get_f64 (got, i) - graft_rt_tensor_get_f64 (want, i));
      if (isnan (d))
        d = INFINITY;
      diff = MAX (diff, d);
    }
  double tol = 1e-4 * ref;
  gboolean ok = diff <= tol;
  g_string_append_printf (report, "%s %s: max|diff| %.3g (tolerance %.3g, max|ref| %.3g)%s; ", what, wd, diff, tol,
                          ref, ok ? "" : " FAIL");
  return ok;
}

static void
fail (const char *name, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
fail (const char *name, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *msg = g_strdup_vprintf (format, args);
  va_end (args);
  for (guint k = 0; known_gaps[k].name != NULL; k++)
    if (strcmp (known_gaps[k].name, name) == 0)
      {
        g_autofree char *todo = g_strdup_printf ("known gap: %s (%s)", known_gaps[k].reason, msg);
        g_test_incomplete (todo);
        return;
      }
  g_test_fail_printf ("%s", msg);
}

/* A list result (List[int], say) item by item, as the reference script
 * flattens it; None left out. The items stay owned by their list. */
static void
flatten_result (GraftRtTensor *value, GPtrArray *out)
{
  if (value->kind == GRAFT_RT_SEQUENCE)
    for (guint i = 0; i < value->items->len; i++)
      flatten_result (value->items->pdata[i], out);
  else if (value->kind != GRAFT_RT_NONE)
    g_ptr_array_add (out, value);
}

/* The runtime for the model in path; NULL (the test failed) when it does
 * not load or cannot run. */
static GraftRuntime *
load_runtime (const char *name, const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      fail (name, "%s does not load: %s", name, error->message);
      return NULL;
    }
  GraftRuntime *runtime = graft_runtime_new (model, &error);
  if (runtime == NULL)
    fail (name, "%s loads but cannot run: %s", name, error->message);
  return runtime;
}

static void run_and_compare (const char *name, GraftRuntime *runtime, GHashTable *feed, JsonArray *want,
                             const char *dir);

static void
test_fixture (gconstpointer data)
{
  const GraftTorchGenerationCase *c = data;
  const char *name = c->name;
  generate (c->generation);
  const char *fixture_dir = fixture_dirs[c->generation], *io_dir = io_dirs[c->generation];
  if (graft_torch_generation_skip (c, fixture_dir))
    return;
  g_autofree char *manifest = g_strdup_printf ("%s/%s.io.json", io_dir, name);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  g_assert_true (json_parser_load_from_file (parser, manifest, &error));
  JsonObject *info = json_node_get_object (json_parser_get_root (parser));
  if (json_object_has_member (info, "pytorch_error"))
    {
      g_autofree char *msg = g_strdup_printf ("PyTorch itself cannot run %s: %s", name,
                                              json_object_get_string_member (info, "pytorch_error"));
      g_test_skip (msg);
      return;
    }

  gboolean in_outdir = json_object_has_member (info, "fixture_in_outdir");
  g_autofree char *pt = g_strdup_printf ("%s/%s", in_outdir ? io_dir : fixture_dir,
                                         json_object_get_string_member (info, "fixture"));
  g_autoptr(GraftRuntime) runtime = load_runtime (name, pt);
  if (runtime == NULL)
    return;

  g_autoptr(GHashTable) feed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                      (GDestroyNotify) graft_rt_tensor_unref);
  JsonArray *inputs = json_object_get_array_member (info, "inputs");
  for (guint k = 0; k < json_array_get_length (inputs); k++)
    {
      JsonObject *in = json_array_get_object_element (inputs, k);
      g_autofree char *path = g_strdup_printf ("%s/%s", io_dir, json_object_get_string_member (in, "file"));
      GraftRtTensor *t = graft_npy_read (path, &error);
      g_assert_no_error (error);
      if (g_strcmp0 (json_object_get_string_member_with_default (in, "kind", NULL), "strings") == 0)
        t = strings_as_list (t);
      g_hash_table_insert (feed, g_strdup (json_object_get_string_member (in, "name")), t);
    }
  /* Optional parameters left out of the call are None. */
  GPtrArray *declared = graft_runtime_get_inputs (runtime);
  for (guint k = 0; k < declared->len; k++)
    {
      GraftValue *v = declared->pdata[k];
      if (v->kind == GRAFT_VALUE_OPTIONAL && !g_hash_table_contains (feed, v->name))
        g_hash_table_insert (feed, g_strdup (v->name), graft_rt_tensor_new_none (v->dtype));
    }
  run_and_compare (name, runtime, feed, json_object_get_array_member (info, "outputs"), io_dir);
}

/* Runs the model on feed and compares its outputs, flattened, with the
 * .npy files named by want ({"file": …} objects or file names) in dir. */
static void
run_and_compare (const char *name, GraftRuntime *runtime, GHashTable *feed, JsonArray *want, const char *dir)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) results = graft_runtime_run (runtime, feed, NULL, NULL, NULL, &error);
  if (results == NULL)
    {
      fail (name, "%s fails while running: %s", name, error->message);
      return;
    }
  g_autoptr(GPtrArray) outputs = g_ptr_array_new ();
  for (guint k = 0; k < results->len; k++)
    flatten_result (results->pdata[k], outputs);

  if (outputs->len != json_array_get_length (want))
    {
      fail (name, "%s: %u outputs, PyTorch gives %u", name, outputs->len, json_array_get_length (want));
      return;
    }
  g_autoptr(GString) report = g_string_new (NULL);
  gboolean ok = TRUE;
  for (guint k = 0; k < outputs->len; k++)
    {
      JsonNode *element = json_array_get_element (want, k);
      const char *file = JSON_NODE_HOLDS_OBJECT (element)
                         ? json_object_get_string_member (json_node_get_object (element), "file")
                         : json_node_get_string (element);
      g_autofree char *path = g_strdup_printf ("%s/%s", dir, file);
      g_autoptr(GraftRtTensor) ref = graft_npy_read (path, &error);
      g_assert_no_error (error);
      g_autofree char *what = g_strdup_printf ("output %u", k);
      ok &= compare (what, outputs->pdata[k], ref, report);
    }
  g_test_message ("%s: %s", name, report->str);
  if (!ok)
    fail (name, "%s: %s", name, report->str);
}

/* ------------------------------------------------------------------ one op, three files */

/* tests/fixtures/make-runtime-op-fixtures.py: a small module per aten op
 * or TorchScript construct the zoo's models need, traced, scripted and
 * exported to .pt2 by the venv's torch. */
static char *op_fixture_dir;

static void
test_op_fixture (gconstpointer data)
{
  const char *name = data;
  if (op_fixture_dir == NULL)
    op_fixture_dir = graft_test_generate_fixtures ("tests/fixtures/make-runtime-op-fixtures.py",
                                                   "tests/fixtures-generated/runtime-ops", NULL);
  g_autofree char *manifest = g_build_filename (op_fixture_dir, "manifest.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  g_assert_true (json_parser_load_from_file (parser, manifest, &error));
  JsonArray *cases = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "cases");
  JsonObject *info = NULL;
  for (guint k = 0; k < json_array_get_length (cases); k++)
    if (g_strcmp0 (json_object_get_string_member (json_array_get_object_element (cases, k), "name"), name) == 0)
      info = json_array_get_object_element (cases, k);
  if (info == NULL)
    g_error ("make-runtime-op-fixtures.py made no case %s", name);

  g_autofree char *path = g_build_filename (op_fixture_dir, json_object_get_string_member (info, "file"), NULL);
  g_autoptr(GraftRuntime) runtime = load_runtime (name, path);
  if (runtime == NULL)
    return;
  /* the inputs in the order of forward's parameters */
  g_autoptr(GHashTable) feed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                      (GDestroyNotify) graft_rt_tensor_unref);
  JsonArray *inputs = json_object_get_array_member (info, "inputs");
  GPtrArray *declared = graft_runtime_get_inputs (runtime);
  guint given = 0;
  for (guint k = 0; k < declared->len; k++)
    given += ((GraftValue *) declared->pdata[k])->kind != GRAFT_VALUE_OPTIONAL;
  /* the inputs a caller must give; an Optional left out is None */
  g_assert_cmpuint (given, ==, json_array_get_length (inputs));
  for (guint k = 0; k < given; k++)
    {
      g_autofree char *file = g_build_filename (op_fixture_dir, json_array_get_string_element (inputs, k), NULL);
      GraftRtTensor *t = graft_npy_read (file, &error);
      g_assert_no_error (error);
      g_hash_table_insert (feed, g_strdup (((GraftValue *) declared->pdata[k])->name), t);
    }
  run_and_compare (name, runtime, feed, json_object_get_array_member (info, "outputs"), op_fixture_dir);
}

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "--dump") == 0)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = graft_model_load (argv[2], NULL, NULL, NULL, &error);
      if (model == NULL)
        {
          g_printerr ("%s\n", error->message);
          return 1;
        }
      dump_graph (graft_model_get_graph (model), 0);
      g_autoptr(GPtrArray) unsupported = NULL;
      if (graft_runtime_check_supported (model, &unsupported, &error) && unsupported->len)
        {
          g_autofree char *text = graft_runtime_describe_unsupported (model, unsupported);
          g_print ("unsupported: %s\n", text);
        }
      return 0;
    }

  g_test_init (&argc, &argv, NULL);
  static const char *const names[] = {
    "tiny_traced", "tiny_scripted", "if_tensor_traced", "if_tensor_scripted", "layer_loop_scripted",
    "while_loop_scripted", "tuple_return_traced", "tuple_return_scripted", "item_scripted", "raising_scripted",
    "lstm_traced", "lstm_scripted", "resnet18_traced", "resnet18_scripted", "mobilenet_v3_small_traced",
    "mobilenet_v3_small_scripted", "googlenet_traced", "googlenet_scripted", "vit_b_16_traced",
    "vit_b_16_scripted", "const_traced", "nested_cat_traced", "nested_cat_scripted", "frozen_scripted",
    "transformer_scripted", "mobilenet_v2_traced", "mobilenet_v2_scripted", "bert_traced", "gpt2_traced",
    "vit_hf_traced", "whisper_traced", "containers_scripted", "quantized_traced", "quantized_scripted",
  };
  static GraftTorchGenerationCase cases[GRAFT_TORCH_N_GENERATIONS][G_N_ELEMENTS (names)];
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    for (guint k = 0; k < G_N_ELEMENTS (names); k++)
      {
        g_autofree char *path = g_strdup_printf ("/runtime/torchscript/%s/%s", graft_torch_generation_name (g), names[k]);
        cases[g][k] = (GraftTorchGenerationCase) { g, names[k] };
        g_test_add_data_func (path, &cases[g][k], test_fixture);
      }
  static const char *const op_cases[] = {
    "where_traced", "where_scripted", "where_exported", "arg_reduce_traced", "arg_reduce_scripted",
    "arg_reduce_exported", "gru_traced", "gru_scripted", "gru_exported", "stochastic_depth_scripted",
    "constants_traced", "constants_scripted", "constants_exported", "qkv_traced", "qkv_scripted", "qkv_exported",
    "containers_scripted", "upsample_traced", "upsample_scripted", "upsample_exported", "norms_traced",
    "norms_exported", "grid_traced", "grid_exported", "shape_like_traced", "shape_like_scripted", "shape_like_exported",
    "shifted_windows_traced", "shifted_windows_scripted", "shifted_windows_exported", "pool3d_traced",
    "pool3d_scripted", "pool3d_exported", "index_with_none_traced", "index_with_none_scripted",
    "index_with_none_exported", "flow_ops_traced", "flow_ops_scripted", "flow_ops_exported", "module_state_scripted",
    "relative_buckets_traced", "relative_buckets_scripted", "relative_buckets_exported",
    "transposed_conv_traced", "transposed_conv_scripted", "transposed_conv_exported",
    "rounding_div_traced", "rounding_div_scripted", "rounding_div_exported", "defaults_scripted",
    "leaky_relu_traced", "leaky_relu_scripted", "leaky_relu_exported",
    "autocast_regions_traced", "autocast_regions_exported", "tensor_cache_empty_scripted", "tensor_cache_filled_scripted",
  };
  for (guint k = 0; k < G_N_ELEMENTS (op_cases); k++)
    {
      g_autofree char *path = g_strdup_printf ("/runtime/ops/%s", op_cases[k]);
      g_test_add_data_func (path, op_cases[k], test_op_fixture);
    }
  int status = g_test_run ();
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    {
      g_free (fixture_dirs[g]);
      g_free (io_dirs[g]);
    }
  g_free (op_fixture_dir);
  return status;
}
