/* Damaged and unknown .pt2 files, built by hand with libzip: each must end
 * in a GError that says what is wrong, never a crash (this suite also runs
 * under ASan/UBSan). */
#include <string.h>
#include <glib/gstdio.h>
#include <zip.h>
#include "loader.h"
#include "../test-scratch.h"

typedef struct {
  const char *name;
  const char *data;
} Entry;

static char *tmp_dir;

static char *
write_zip (const char *file, const Entry *entries, guint n)
{
  char *path = g_build_filename (tmp_dir, file, NULL);
  int zerr = 0;
  zip_t *z = zip_open (path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
  g_assert_nonnull (z);
  for (guint k = 0; k < n; k++)
    {
      zip_source_t *s = zip_source_buffer (z, entries[k].data, strlen (entries[k].data), 0);
      zip_int64_t i = zip_file_add (z, entries[k].name, s, ZIP_FL_OVERWRITE);
      g_assert_cmpint (i, >=, 0);
      zip_set_file_compression (z, (zip_uint64_t) i, ZIP_CM_STORE, 0);
    }
  g_assert_cmpint (zip_close (z), ==, 0);
  return path;
}

static void
assert_load_fails (const char *path, GraftModelError code, const char *message)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_error (error, GRAFT_MODEL_ERROR, (gint) code);
  if (strstr (error->message, message) == NULL)
    g_error ("\"%s\" does not say \"%s\"", error->message, message);
}

#define GRAPH_START "{\"schema_version\": {\"major\": 8, \"minor\": 20}, \"graph_module\": {\"graph\": "
#define SIGNATURE ", \"signature\": {\"input_specs\": [], \"output_specs\": []}}}"

typedef struct {
  const char *name;
  const char *program;
  GraftModelError code;
  const char *message;
  const char *version;   /* the flat layout's "version" record, or NULL */
} ProgramCase;

static const ProgramCase program_cases[] = {
  /* the hand-made recognition fixture of make-torchscript-fixtures.py */
  { "graph-module-only", "{\"graph_module\": {}}", GRAFT_MODEL_ERROR_UNSUPPORTED,
    "this torch.export ExportedProgram (.pt2) has schema version 5.1, older than Graft reads (8.x", "5.1" },
  { "no-version-at-all", "{\"graph_module\": {}}", GRAFT_MODEL_ERROR_UNSUPPORTED,
    "names no schema_version {major, minor}, so Graft cannot tell", NULL },
  { "version-record-only", "{\"graph_module\": {}}", GRAFT_MODEL_ERROR_MALFORMED,
    "graph_module.graph.nodes is missing", "8.6" },
  { "newer-schema", "{\"schema_version\": {\"major\": 99, \"minor\": 1}}", GRAFT_MODEL_ERROR_UNSUPPORTED,
    "schema version 99.1, newer than Graft reads (8.x" },
  { "older-schema", "{\"schema_version\": {\"major\": 3, \"minor\": 0}}", GRAFT_MODEL_ERROR_UNSUPPORTED,
    "schema version 3.0, older" },
  { "bad-json", "{\"schema_version\": ", GRAFT_MODEL_ERROR_MALFORMED, "is not valid JSON" },
  { "nan-token", "{\"range_constraints\": {\"s0\": {\"min_val\": 2, \"max_val\": NaN}}}",
    GRAFT_MODEL_ERROR_MALFORMED, "the program is not valid JSON" },
  { "not-object", "[1, 2]", GRAFT_MODEL_ERROR_MALFORMED, "is not a JSON object" },
  { "no-graph", "{\"schema_version\": {\"major\": 8, \"minor\": 20}, \"graph_module\": {}}",
    GRAFT_MODEL_ERROR_MALFORMED, "graph_module.graph.nodes is missing" },
  { "no-signature", GRAPH_START "{\"nodes\": []}}}", GRAFT_MODEL_ERROR_MALFORMED, "needs input_specs and output_specs" },
  { "bad-input-spec", GRAPH_START "{\"nodes\": []}, \"signature\": {\"input_specs\": [3], \"output_specs\": []}}}",
    GRAFT_MODEL_ERROR_MALFORMED, "input_specs[0] is not an InputSpec" },
  { "node-without-target", GRAPH_START "{\"nodes\": [{\"inputs\": []}]}" SIGNATURE, GRAFT_MODEL_ERROR_MALFORMED,
    "graph.nodes[0] needs a target and inputs" },
  { "argument-not-union", GRAPH_START "{\"nodes\": [{\"target\": \"torch.ops.aten.relu.default\", \"name\": \"relu\", "
    "\"inputs\": [{\"name\": \"self\", \"arg\": 42, \"kind\": 1}], \"outputs\": []}]}" SIGNATURE,
    GRAFT_MODEL_ERROR_MALFORMED, "node relu: argument arg0 is not an Argument" },
  { "tensor-without-name", GRAPH_START "{\"nodes\": [{\"target\": \"torch.ops.aten.relu.default\", \"name\": \"relu\", "
    "\"inputs\": [{\"name\": \"self\", \"arg\": {\"as_tensor\": {}}, \"kind\": 1}], \"outputs\": []}]}" SIGNATURE,
    GRAFT_MODEL_ERROR_MALFORMED, "names no value" },
  { "produced-twice", GRAPH_START "{\"nodes\": ["
    "{\"target\": \"torch.ops.aten.relu.default\", \"name\": \"a\", \"inputs\": [], \"outputs\": [{\"as_tensor\": {\"name\": \"y\"}}]},"
    "{\"target\": \"torch.ops.aten.relu.default\", \"name\": \"b\", \"inputs\": [], \"outputs\": [{\"as_tensor\": {\"name\": \"y\"}}]}"
    "]}" SIGNATURE, GRAFT_MODEL_ERROR_MALFORMED, "value y is produced twice (by a and b)" },
  { "missing-state-dict", GRAPH_START "{\"nodes\": []}, \"signature\": {\"input_specs\": [{\"parameter\": "
    "{\"arg\": {\"name\": \"p_w\"}, \"parameter_name\": \"w\"}}], \"output_specs\": []}}}",
    GRAFT_MODEL_ERROR_MALFORMED, "has no tensor w" },
};

static void
test_flat_program (gconstpointer data)
{
  const ProgramCase *c = data;
  g_autofree char *file = g_strdup_printf ("%s.pt2", c->name);
  Entry entries[] = { { "serialized_exported_program.json", c->program }, { "version", c->version } };
  g_autofree char *path = write_zip (file, entries, c->version ? 2 : 1);
  assert_load_fails (path, c->code, c->message);
  if (c->code == GRAFT_MODEL_ERROR_UNSUPPORTED)
    {
      /* and it says how to get a file Graft can open */
      g_autoptr(GError) error = NULL;
      G_GNUC_UNUSED g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
      g_assert_nonnull (strstr (error->message, "torch.onnx.export"));
    }
}

#define CONFIG(path, sizes) \
  "{\"config\": {\"w\": {\"path_name\": \"" path "\", \"is_param\": true, \"use_pickle\": false, \"tensor_meta\": " \
  "{\"dtype\": 7, \"sizes\": " sizes ", \"strides\": [{\"as_int\": 1}], \"storage_offset\": {\"as_int\": 0}}}}}"
#define WITH_PARAMETER \
  GRAPH_START "{\"nodes\": []}, \"signature\": {\"input_specs\": [{\"parameter\": " \
  "{\"arg\": {\"name\": \"p_w\"}, \"parameter_name\": \"w\"}}], \"output_specs\": []}}}"

/* torch 2.1–2.3 wrote unbounded ranges as Python's Infinity token. */
static void
test_infinity_range (void)
{
  const char *program = "{\"schema_version\": {\"major\": 8, \"minor\": 1}, \"range_constraints\": "
    "{\"s0\": {\"min_val\": 2, \"max_val\": Infinity}, \"s1\": {\"min_val\": -Infinity, \"max_val\": 5}}, "
    "\"graph_module\": {\"graph\": {\"nodes\": []}, \"signature\": {\"input_specs\": [], \"output_specs\": []}, "
    "\"metadata\": {\"note\": \"Infinity stays in strings\"}}, \"guards_code\": [\"x.size()[0] >= 2\", 3]}";
  Entry entries[] = { { "serialized_exported_program.json", program } };
  g_autofree char *path = write_zip ("infinity.pt2", entries, G_N_ELEMENTS (entries));
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  gint64 min, max;
  g_assert_true (graft_model_get_dim_range (model, "s0", &min, &max));
  g_assert_cmpint (min, ==, 2);
  g_assert_cmpint (max, <, 0);
  g_assert_true (graft_model_get_dim_range (model, "s1", &min, &max));
  g_assert_cmpint (min, ==, 0);
  g_assert_cmpint (max, ==, 5);
  /* guards_code entries are shown as metadata; a non-string is skipped */
  guint guards = 0;
  for (guint i = 0; i < graft_model_get_n_metadata (model); i++)
    {
      const char *key, *value;
      graft_model_get_metadata (model, i, &key, &value);
      if (strcmp (key, "guard") == 0)
        {
          g_assert_cmpstr (value, ==, "x.size()[0] >= 2");
          guards++;
        }
    }
  g_assert_cmpuint (guards, ==, 1);
}

static void
test_archive_version (void)
{
  Entry entries[] = { { "m/archive_format", "pt2" }, { "m/archive_version", "7" }, { "m/models/model.json", "{}" } };
  g_autofree char *path = write_zip ("archive-version.pt2", entries, G_N_ELEMENTS (entries));
  assert_load_fails (path, GRAFT_MODEL_ERROR_UNSUPPORTED, "PT2 archive_version 7 is newer than Graft reads (0)");
}

static void
test_archive_format (void)
{
  Entry entries[] = { { "m/archive_format", "aoti" }, { "m/models/model.json", "{}" } };
  g_autofree char *path = write_zip ("archive-format.pt2", entries, G_N_ELEMENTS (entries));
  assert_load_fails (path, GRAFT_MODEL_ERROR_UNSUPPORTED, "archive_format is \"aoti\", not \"pt2\"");
}

static void
test_archive_without_program (void)
{
  Entry entries[] = { { "m/archive_format", "pt2" }, { "m/data/weights/weight_0", "xxxx" } };
  g_autofree char *path = write_zip ("no-program.pt2", entries, G_N_ELEMENTS (entries));
  assert_load_fails (path, GRAFT_MODEL_ERROR_MALFORMED, "has no models/<name>.json");
}

static void
test_short_weight (void)
{
  Entry entries[] = {
    { "m/archive_format", "pt2" }, { "m/models/model.json", WITH_PARAMETER },
    { "m/data/weights/model_weights_config.json", CONFIG ("weight_0", "[{\"as_int\": 4}]") },
    { "m/data/weights/weight_0", "12345678" },   /* 8 bytes, 4 floats need 16 */
  };
  g_autofree char *path = write_zip ("short-weight.pt2", entries, G_N_ELEMENTS (entries));
  assert_load_fails (path, GRAFT_MODEL_ERROR_TRUNCATED, "storage data/weights/weight_0: tensor \"w\" (sizes [4], strides [1], storage offset 0) "
                     "needs 16 bytes of its storage, which holds 8");
}

static void
test_weight_config_broken (void)
{
  Entry entries[] = {
    { "m/archive_format", "pt2" }, { "m/models/model.json", WITH_PARAMETER },
    { "m/data/weights/model_weights_config.json", "{\"config\": " },
  };
  g_autofree char *path = write_zip ("broken-config.pt2", entries, G_N_ELEMENTS (entries));
  assert_load_fails (path, GRAFT_MODEL_ERROR_MALFORMED, "data/weights/model_weights_config.json is not valid JSON");
}

static void
test_weight_symbolic_size (void)
{
  Entry entries[] = {
    { "m/archive_format", "pt2" }, { "m/models/model.json", WITH_PARAMETER },
    { "m/data/weights/model_weights_config.json",
      CONFIG ("weight_0", "[{\"as_expr\": {\"expr_str\": \"s0\"}}]") },
    { "m/data/weights/weight_0", "1234" },
  };
  g_autofree char *path = write_zip ("symbolic-weight.pt2", entries, G_N_ELEMENTS (entries));
  assert_load_fails (path, GRAFT_MODEL_ERROR_MALFORMED, "tensor w: dim 0 is not a non-negative constant");
}

/* Every prefix of a valid archive: an error or a model, never a crash. */
static void
test_truncated (void)
{
  Entry entries[] = {
    { "m/archive_format", "pt2" }, { "m/models/model.json", WITH_PARAMETER },
    { "m/data/weights/model_weights_config.json", CONFIG ("weight_0", "[{\"as_int\": 2}]") },
    { "m/data/weights/weight_0", "12345678" },
  };
  g_autofree char *path = write_zip ("whole.pt2", entries, G_N_ELEMENTS (entries));
  g_autofree char *contents = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &contents, &len, NULL));
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (graft_model_get_tensors (model)->len, ==, 1);
  }
  g_autofree char *cut = g_build_filename (tmp_dir, "cut.pt2", NULL);
  guint failures = 0;
  for (gsize n = 4; n < len; n += 7)
    {
      g_assert_true (g_file_set_contents (cut, contents, (gssize) n, NULL));
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = graft_model_load (cut, NULL, NULL, NULL, &error);
      g_assert_true ((model == NULL) != (error == NULL));
      failures += model == NULL;
    }
  g_assert_cmpuint (failures, >, 0);
}

/* An ExecuTorch program is read as one, not parsed as a broken ONNX
 * model (the header executorch 1.5 writes: root offset, "ET12", "eh00"),
 * and this one, cut inside its extended header, is named truncated. */
static void
test_executorch_named (void)
{
  static const guint8 pte[] = { 0x3c, 0, 0, 0, 'E', 'T', '1', '2', 'e', 'h', '0', '0', 0x20, 0, 0, 0, 0x38, 8, 0, 0 };
  g_autofree char *dir = graft_test_scratch_dir ("graft-pte-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "model.pte", NULL);
  g_autoptr(GError) error = NULL;

  g_assert_true (g_file_set_contents (path, (const char *) pte, sizeof pte, NULL));
  g_assert_null (graft_model_load (path, NULL, NULL, NULL, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED);
  g_assert_nonnull (strstr (error->message, "the extended header says it is 32 bytes long"));
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  tmp_dir = graft_test_scratch_dir ("graft-pt2-XXXXXX", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (program_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/pt2/malformed/program/%s", program_cases[i].name);
      g_test_add_data_func (name, &program_cases[i], test_flat_program);
    }
  g_test_add_func ("/pt2/malformed/infinity-range", test_infinity_range);
  g_test_add_func ("/pt2/malformed/archive-version", test_archive_version);
  g_test_add_func ("/pt2/malformed/archive-format", test_archive_format);
  g_test_add_func ("/pt2/malformed/archive-without-program", test_archive_without_program);
  g_test_add_func ("/pt2/malformed/short-weight", test_short_weight);
  g_test_add_func ("/pt2/malformed/weight-config-broken", test_weight_config_broken);
  g_test_add_func ("/pt2/malformed/weight-symbolic-size", test_weight_symbolic_size);
  g_test_add_func ("/pt2/malformed/truncated", test_truncated);
  g_test_add_func ("/pt2/malformed/executorch-named", test_executorch_named);
  return g_test_run ();   /* tmp_dir goes at exit (graft_test_scratch_dir) */
}
