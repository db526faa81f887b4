/* Hostile and damaged input for the PyTorch readers: hand-built pickles,
 * code the parser must refuse, truncated and bit-flipped archives, and
 * archives with hostile TorchScript code. Every case must end in a clear
 * error (or a model), never a crash or a hang; this suite also runs under
 * ASan/UBSan. */
#include <string.h>
#include <glib/gstdio.h>
#include <zip.h>
#include "loader.h"
#include "pytorch/pickle.h"
#include "loader.h"
#include "torchscript/script-parser.h"
#include "pytorch/torch-archive.h"
#include "../onnx/fixtures.h"
#include "torch-generations.h"
#include "../test-scratch.h"
#include "../test-python.h"

/* ------------------------------------------------------------------ pickles */

typedef struct {
  const char *name;
  const char *bytes;
  gsize len;
  const char *error;     /* substring of the message */
} PickleCase;

#define P(literal) literal, sizeof (literal) - 1

static const PickleCase pickle_cases[] = {
  { "empty", P (""), "needs 1 more bytes" },
  { "no-stop", P ("\x80\x02K\x01"), "needs 1 more bytes" },
  { "huge-binunicode", P ("\x80\x02X\xff\xff\xff\x7f" "ab"), "needs 2147483647 more bytes" },
  { "huge-binbytes8", P ("\x80\x02\x8e\xff\xff\xff\xff\xff\xff\xff\x7f"), "more bytes" },
  { "huge-long4", P ("\x80\x02\x8b\xff\xff\xff\xff"), "more bytes" },
  { "bad-memo-get", P ("\x80\x02h\x05."), "memo index 5 was never stored" },
  { "huge-memo-put", P ("\x80\x02Nr\xff\xff\xff\x7f."), "out of range" },
  { "tuple-without-mark", P ("\x80\x02t."), "no MARK" },
  { "reduce-underflow", P ("\x80\x02R."), "stack underflow" },
  { "pop-underflow", P ("\x80\x02" "0."), "stack underflow" },
  { "setitems-on-int", P ("\x80\x02K\x01(K\x02K\x03u."), "not a dict" },
  { "recursive-list", P ("\x80\x02]q\x00h\x00" "a."), "contains itself" },
  { "recursive-indirect", P ("\x80\x02]q\x00]q\x01h\x00" "a0h\x01" "a."), "modified after being stored" },
  { "unknown-opcode", P ("\x80\x02\xff."), "unknown or unsupported pickle opcode" },
  { "two-values", P ("\x80\x02K\x01K\x02."), "expected one value" },
  { "bad-utf8", P ("\x80\x02X\x02\x00\x00\x00\xff\xfe."), "not valid UTF-8" },
  { "global-without-newline", P ("\x80\x02" "ctorch"), "no end of line" },
  { "rebuild-not-storage", P ("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x00))tR."), "first arguments are not" },
  { "storage-negative-numel",
    P ("\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00" "0X\x03\x00\x00\x00"
       "cpuJ\xff\xff\xff\xfftQ."), "unexpected fields" },
  { "protocol-6", P ("\x80\x06N."), "pickle protocol 6" },
};

static GBytes *
case_bytes (const PickleCase *c)
{
  return g_bytes_new_static (c->bytes, c->len);
}

static GBytes *
repeated (const char *prefix, char ch, guint n, const char *suffix)
{
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, (const guint8 *) prefix, strlen (prefix));
  for (guint k = 0; k < n; k++)
    g_byte_array_append (b, (const guint8 *) &ch, 1);
  g_byte_array_append (b, (const guint8 *) suffix, strlen (suffix));
  return g_byte_array_free_to_bytes (b);
}

static void
test_pickle_deep_mark_and_tuple (void)
{
  g_autoptr(GBytes) marks = repeated ("\x80\x02", '(', 10000, ".");
  g_autoptr(GBytes) tuples = repeated ("\x80\x02N", (char) 0x85, 2000, ".");
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftPickleValue) v = graft_pickle_load (g_bytes_get_data (marks, NULL), g_bytes_get_size (marks),
                                                     "marks", NULL, &error);
  g_assert_null (v);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_assert_nonnull (strstr (error->message, "nested MARKs"));
  g_clear_error (&error);
  g_autoptr(GraftPickleValue) w = graft_pickle_load (g_bytes_get_data (tuples, NULL), g_bytes_get_size (tuples),
                                                     "tuples", NULL, &error);
  g_assert_null (w);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_assert_nonnull (strstr (error->message, "nesting deeper"));
}

static void
test_pickle_case (gconstpointer data)
{
  const PickleCase *c = data;
  g_autoptr(GBytes) bytes = case_bytes (c);
  g_autoptr(GError) error = NULL;
  gsize len;
  const guint8 *p = g_bytes_get_data (bytes, &len);
  g_autoptr(GraftPickleValue) v = graft_pickle_load (p, len, c->name, NULL, &error);

  g_assert_null (v);
  g_assert_nonnull (error);
  g_test_message ("%s: %s", c->name, error->message);
  g_assert_true (g_str_has_prefix (error->message, c->name));
  g_assert_nonnull (strstr (error->message, "pickle byte"));
  g_assert_nonnull (strstr (error->message, c->error));
}

static void
test_pickle_deep_list (void)
{
  /* ] × 1000 then a × 999: each APPEND nests the top list in the one below */
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, (const guint8 *) "\x80\x02", 2);
  for (int k = 0; k < 1000; k++)
    g_byte_array_append (b, (const guint8 *) "]", 1);
  for (int k = 0; k < 999; k++)
    g_byte_array_append (b, (const guint8 *) "a", 1);
  g_byte_array_append (b, (const guint8 *) ".", 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftPickleValue) v = graft_pickle_load (b->data, b->len, "deep-list", NULL, &error);
  g_byte_array_unref (b);
  g_assert_null (v);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_assert_nonnull (strstr (error->message, "nesting deeper than 400 levels"));
}

static void
test_pickle_valid (void)
{
  /* {'a': [1, 2.5, 'x', None, True], 'b': (-2,)} with memo use, protocol 2 */
  static const guint8 data[] =
    "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01]q\x02(K\x01G\x40\x04\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xN\x88"
    "eX\x01\x00\x00\x00" "bJ\xfe\xff\xff\xff\x85u.";
  g_autoptr(GError) error = NULL;
  gsize used = 0;
  g_autoptr(GraftPickleValue) v = graft_pickle_load (data, sizeof data - 1, "valid", &used, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (used, ==, sizeof data - 1);
  g_assert_cmpint (v->kind, ==, GRAFT_PICKLE_DICT);
  GraftPickleValue *a = graft_pickle_dict_lookup (v, "a");
  g_assert_nonnull (a);
  g_assert_cmpint (a->kind, ==, GRAFT_PICKLE_LIST);
  g_assert_cmpuint (graft_pickle_value_get_length (a), ==, 5);
  g_assert_cmpint (graft_pickle_value_get_item (a, 0)->i, ==, 1);
  g_assert_cmpfloat (graft_pickle_value_get_item (a, 1)->f, ==, 2.5);
  g_assert_cmpstr (graft_pickle_value_get_string (graft_pickle_value_get_item (a, 2)), ==, "x");
  g_assert_cmpint (graft_pickle_value_get_item (a, 3)->kind, ==, GRAFT_PICKLE_NONE);
  g_assert_cmpint (graft_pickle_value_get_item (a, 4)->kind, ==, GRAFT_PICKLE_BOOL);
  GraftPickleValue *b = graft_pickle_dict_lookup (v, "b");
  g_assert_cmpint (b->kind, ==, GRAFT_PICKLE_TUPLE);
  g_assert_cmpint (graft_pickle_value_get_item (b, 0)->i, ==, -2);
}

static void
test_pickle_tensor_and_opaque (void)
{
  /* (_rebuild_tensor_v2(storage('0', FloatStorage, 6), 0, (2, 3), (3, 1), False, OrderedDict()),
   *  os.system('rm -rf /'))  -- the second is never executed, only named */
  static const guint8 data[] =
    "\x80\x02(ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
    "X\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89"
    "ccollections\nOrderedDict\n)RtR"
    "cos\nsystem\nX\x08\x00\x00\x00rm -rf /\x85Rt.";
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftPickleValue) v = graft_pickle_load (data, sizeof data - 1, "tensor", NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (v->kind, ==, GRAFT_PICKLE_TUPLE);
  GraftPickleValue *t = graft_pickle_value_get_item (v, 0);
  g_assert_cmpint (t->kind, ==, GRAFT_PICKLE_TENSOR);
  g_assert_cmpint (t->tensor->rank, ==, 2);
  g_assert_cmpint (t->tensor->sizes[1], ==, 3);
  g_assert_cmpint (t->tensor->dtype, ==, GRAFT_DTYPE_FLOAT32);
  g_assert_cmpstr (t->tensor->storage->storage->key, ==, "0");
  GraftPickleValue *o = graft_pickle_value_get_item (v, 1);
  g_assert_cmpint (o->kind, ==, GRAFT_PICKLE_OPAQUE);
  g_assert_cmpstr (o->s, ==, "os.system");
}

/* ------------------------------------------------------------------ parser */

static void
test_parser_valid (void)
{
  static const char code[] =
    "op_version_set = 1\n"
    "class M(Module):\n"
    "  __parameters__ = [\"w\", ]\n"
    "  w : Tensor\n"
    "  k : Final[int] = 3\n"
    "  def forward(self: __torch__.M,\n"
    "    x: Tensor, y: Optional[Tensor]=None) -> Tuple[Tensor, int]:\n"
    "    a, b, = (self).f(x, )\n"
    "    if torch.__is__(y, None):\n"
    "      z = torch.add(x, 1, alpha=2)\n"
    "    else:\n"
    "      z = (y)[0:2]\n"
    "    for i in range(3):\n"
    "      pass\n"
    "    return (z, -1)\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(ScriptModule) m = script_module_parse (code, strlen (code), "m.py", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (m->body->len, ==, 2);
  ScriptNode *cls = g_ptr_array_index (m->body, 1);
  g_assert_cmpint (cls->kind, ==, SCRIPT_CLASS);
  g_assert_cmpstr (cls->s, ==, "M");
  ScriptNode *def = g_ptr_array_index (cls->body, 3);
  g_assert_cmpint (def->kind, ==, SCRIPT_DEF);
  g_assert_cmpuint (def->params->len, ==, 3);
  g_autofree char *type = script_node_to_type_string (((ScriptNode *) g_ptr_array_index (def->params, 2))->a);
  g_assert_cmpstr (type, ==, "Optional[Tensor]");
  ScriptNode *unpack = g_ptr_array_index (def->body, 0);
  g_assert_cmpint (unpack->kind, ==, SCRIPT_ASSIGN);
  g_assert_true (unpack->flag);
  g_assert_cmpuint (unpack->items->len, ==, 2);
}

typedef struct {
  const char *name;
  const char *code;
  const char *error;
} ParseCase;

static const ParseCase parse_cases[] = {
  { "bad-indent", "def f(x: int) -> int:\n    y = 1\n  return y\n", "inconsistent indentation" },
  { "unterminated-string", "x = \"abc\n", "unterminated string" },
  { "stray-character", "x = $\n", "unexpected character" },
  { "missing-colon", "def f(x: int) -> int\n  return x\n", "expected \":\"" },
  { "no-block", "if x:\nreturn 1\n", "an indented block" },
};

static void
test_parse_case (gconstpointer data)
{
  const ParseCase *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(ScriptModule) m = script_module_parse (c->code, strlen (c->code), c->name, &error);
  g_assert_null (m);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, c->error));
  g_assert_true (g_str_has_prefix (error->message, c->name));
}

static void
test_parse_deep (void)
{
  g_autoptr(GString) code = g_string_new ("x = ");
  for (int k = 0; k < 100000; k++)
    g_string_append_c (code, '(');
  g_string_append (code, "1\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(ScriptModule) m = script_module_parse (code->str, code->len, "deep.py", &error);
  g_assert_null (m);
  g_assert_nonnull (strstr (error->message, "nesting limit"));

  g_autoptr(GString) blocks = g_string_new (NULL);
  for (int k = 0; k < 300; k++)
    {
      for (int s = 0; s < k; s++)
        g_string_append_c (blocks, ' ');
      g_string_append (blocks, "if x:\n");
    }
  g_clear_error (&error);
  g_autoptr(ScriptModule) m2 = script_module_parse (blocks->str, blocks->len, "blocks.py", &error);
  g_assert_null (m2);
  g_assert_nonnull (error);
}

/* ------------------------------------------------------------------ archives */

static char *small_dirs[GRAFT_TORCH_N_GENERATIONS];
static const GraftTorchGeneration generations[GRAFT_TORCH_N_GENERATIONS] = { GRAFT_TORCH_CURRENT, GRAFT_TORCH_LEGACY };

/* The small fixtures of the generation DATA points to, or NULL after
 * g_test_skip when that generation's torch is missing. */
static const char *
small_fixtures_or_skip (gconstpointer data)
{
  GraftTorchGeneration generation = *(const GraftTorchGeneration *) data;
  static gboolean generated[GRAFT_TORCH_N_GENERATIONS];

  if (!generated[generation])
    {
      const char *const args[] = { "--small", NULL };
      small_dirs[generation] = graft_torch_generation_fixtures (generation, args);
      generated[generation] = TRUE;
    }
  if (small_dirs[generation] == NULL)
    g_test_skip (graft_torch_generation_missing (generation));
  return small_dirs[generation];
}

static char *
write_temp (const guint8 *data, gsize len, const char *name)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-ts-XXXXXX", NULL);
  char *path = g_build_filename (dir, name, NULL);
  g_assert_true (g_file_set_contents (path, (const char *) data, (gssize) len, NULL));
  return path;
}

static void
remove_temp (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_unlink (path);
  g_rmdir (dir);
}

static void
load_must_not_crash (const char *path, guint *n_ok, guint *n_err)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  if (model)
    (*n_ok)++;
  else
    {
      g_assert_nonnull (error);
      g_assert_cmpuint (strlen (error->message), >, 10);
      (*n_err)++;
    }
}

static void
test_truncated_archives (gconstpointer data)
{
  const char *dir = small_fixtures_or_skip (data);
  if (dir == NULL)
    return;
  g_autofree char *src = g_build_filename (dir, "tiny_traced.pt", NULL);
  g_autofree char *contents = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (src, &contents, &len, NULL));
  guint ok = 0, err = 0;
  for (gsize cut = 0; cut < len; cut += cut < 64 ? 7 : 61)
    {
      g_autofree char *path = write_temp ((const guint8 *) contents, cut, "cut.pt");
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
      g_assert_null (model);
      g_assert_nonnull (error);
      if (cut > 64 && cut < len - 22)
        g_assert_nonnull (strstr (error->message, "zip") ? error->message : strstr (error->message, "truncat"));
      err++;
      remove_temp (path);
    }
  g_test_message ("truncated: %u errors, %u loaded", err, ok);
}

static void
test_flipped_archives (gconstpointer data)
{
  const char *dir = small_fixtures_or_skip (data);
  if (dir == NULL)
    return;
  g_autofree char *src = g_build_filename (dir, "lstm_scripted.pt", NULL);
  g_autofree char *contents = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (src, &contents, &len, NULL));
  guint ok = 0, err = 0;
  g_autofree char *path = write_temp ((const guint8 *) contents, len, "flip.pt");
  for (gsize at = 0; at < len; at += 29)
    {
      contents[at] ^= 0x5a;
      g_assert_true (g_file_set_contents (path, contents, (gssize) len, NULL));
      load_must_not_crash (path, &ok, &err);
      contents[at] ^= 0x5a;
    }
  remove_temp (path);
  g_test_message ("flipped bytes: %u errors, %u loaded", err, ok);
  g_assert_cmpuint (err, >, 0);
  g_assert_cmpuint (ok, >, 0);
}

typedef struct {
  const char *name;
  const void *data;
  gsize len;
} ZipEntry;

/* A zip written with libzip (Stored entries), in a temporary folder. */
static char *
make_zip (const char *file_name, const ZipEntry *entries, guint n)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-ts-XXXXXX", NULL);
  char *path = g_build_filename (dir, file_name, NULL);
  int zerr = 0;
  zip_t *z = zip_open (path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
  g_assert_nonnull (z);
  for (guint k = 0; k < n; k++)
    {
      zip_source_t *s = zip_source_buffer (z, entries[k].data, entries[k].len, 0);
      zip_int64_t i = zip_file_add (z, entries[k].name, s, ZIP_FL_OVERWRITE);
      g_assert_cmpint (i, >=, 0);
      zip_set_file_compression (z, (zip_uint64_t) i, ZIP_CM_STORE, 0);
    }
  g_assert_cmpint (zip_close (z), ==, 0);
  return path;
}

/* A TorchScript archive with one code file. */
static char *
make_archive (const char *data_pkl, gsize pkl_len, const char *code)
{
  const ZipEntry entries[] = {
    { "hostile/data.pkl", data_pkl, pkl_len },
    { "hostile/code/__torch__.py", code, strlen (code) },
    { "hostile/constants.pkl", "\x80\x02).", 4 },
    { "hostile/version", "3\n", 2 },
  };
  return make_zip ("hostile.pt", entries, G_N_ELEMENTS (entries));
}

/* __torch__.M object with an empty state */
static const char module_pkl[] = "\x80\x02" "c__torch__\nM\n)\x81}b.";

typedef struct {
  const char *name;
  const char *code;
  const char *error;
} CodeCase;

static const CodeCase code_cases[] = {
  { "infinite-recursion",
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).forward(x, )\n",
    "nested deeper" },
  { "undefined-name",
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return torch.relu(y)\n",
    "undefined name \"y\"" },
  { "missing-attribute",
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return self.conv\n",
    "has no attribute \"conv\"" },
  { "missing-method",
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).g(x, )\n",
    "has no method \"g\"" },
  { "missing-function",
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return __torch__.nowhere.f(x)\n",
    "cannot find __torch__.nowhere.f" },
  { "no-forward", "class M(Module):\n  __parameters__ = []\n", "has no forward()" },
  { "syntax-error", "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (x\n",
    "code/__torch__.py line" },
  { "bad-unpack",
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    a, b, = (x, x, x)\n    return a\n",
    "cannot unpack 3 values into 2 names" },
  { "exponential-inlining",
    "class M(Module):\n"
    "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).f0(x, )\n"
    "  def f0(self: __torch__.M, x: Tensor) -> Tensor:\n    a = (self).f1(x, )\n    b = (self).f1(a, )\n    return torch.add(a, b)\n"
    "  def f1(self: __torch__.M, x: Tensor) -> Tensor:\n    a = (self).f2(x, )\n    b = (self).f2(a, )\n    return torch.add(a, b)\n"
    "  def f2(self: __torch__.M, x: Tensor) -> Tensor:\n    a = (self).f3(x, )\n    b = (self).f3(a, )\n    return torch.add(a, b)\n"
    "  def f3(self: __torch__.M, x: Tensor) -> Tensor:\n    a = (self).f4(x, )\n    b = (self).f4(a, )\n    return torch.add(a, b)\n"
    "  def f4(self: __torch__.M, x: Tensor) -> Tensor:\n    return torch.relu(x)\n",
    NULL },
};

static void
test_code_case (gconstpointer data)
{
  const CodeCase *c = data;
  g_autofree char *path = make_archive (module_pkl, sizeof module_pkl - 1, c->code);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  if (c->error == NULL)
    {
      g_assert_no_error (error);
      g_assert_nonnull (model);
    }
  else
    {
      g_assert_null (model);
      g_assert_nonnull (error);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, c->error));
      g_assert_nonnull (strstr (error->message, "hostile.pt"));
    }
  remove_temp (path);
}

static void
test_prefix_not_archive (void)
{
  /* The top folder comes from the archive, whatever it is called. */
  g_autofree char *path = make_archive (module_pkl, sizeof module_pkl - 1,
                                        "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
                                        "    return torch.relu(x)\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftTorchArchive) archive = graft_torch_archive_open (path, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (graft_torch_archive_get_prefix (archive), ==, "hostile");
  g_autoptr(GBytes) pkl = graft_torch_archive_read (archive, "data.pkl", &error);
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (pkl, NULL), g_bytes_get_size (pkl), module_pkl, sizeof module_pkl - 1);
  guint64 version;
  g_assert_true (graft_torch_archive_get_version (archive, &version, &error));
  g_assert_cmpuint (version, ==, 3);
  remove_temp (path);
}

static void
expect_unsupported (const char *path, const char *message)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, message));
}

static void
test_recognise_headers (void)
{
  guint8 tar[1024] = { 0 };
  memcpy (tar, "storages", 8);
  memcpy (tar + 257, "ustar", 5);
  guint8 flat[64] = { 0x18, 0, 0, 0, 'P', 'T', 'M', 'F' };
  static const char pickle[] = "\x80\x02}q\x00.";
  struct { const char *name; const void *data; gsize len; const char *message; } files[] = {
    { "preview.pt", "PYTORCH1\x00\x00\x00\x00", 12, "preview release" },
    { "old.tar", tar, sizeof tar, "PyTorch 0.3 and older" },
    { "mobile.ptl", flat, sizeof flat, "flatbuffer" },
    { "plain.pkl", pickle, sizeof pickle - 1, "plain Python pickle" },
  };
  for (guint k = 0; k < G_N_ELEMENTS (files); k++)
    {
      g_autofree char *path = write_temp (files[k].data, files[k].len, files[k].name);
      expect_unsupported (path, files[k].message);
      remove_temp (path);
    }
}

static void
test_recognise_zips (void)
{
  static const char empty_dict[] = "\x80\x02}q\x00.";
  const ZipEntry model_json[] = { { "old/model.json", "{}", 2 }, { "old/tensors/0", "xxxx", 4 } };
  const ZipEntry pt2_archive[] = { { "m/archive_format", "pt2", 3 }, { "m/models/model.json", "{}", 2 } };
  const ZipEntry no_tensors[] = { { "archive/data.pkl", empty_dict, sizeof empty_dict - 1 },
                                  { "archive/version", "3\n", 2 } };
  const ZipEntry not_torch[] = { { "readme.txt", "hello", 5 } };
  const ZipEntry no_code[] = { { "m/data.pkl", empty_dict, sizeof empty_dict - 1 },
                               { "m/constants.pkl", "\x80\x02).", 4 } };
  struct { const ZipEntry *entries; guint n; const char *message; } zips[] = {
    { model_json, G_N_ELEMENTS (model_json), "before 1.3 (model.json layout)" },
    { pt2_archive, G_N_ELEMENTS (pt2_archive), "torch.export ExportedProgram" },
    { no_tensors, G_N_ELEMENTS (no_tensors), "dict without tensors" },
    { not_torch, G_N_ELEMENTS (not_torch), "not a PyTorch file" },
    { no_code, G_N_ELEMENTS (no_code), "has no code/ folder" },
  };
  for (guint k = 0; k < G_N_ELEMENTS (zips); k++)
    {
      g_autofree char *path = make_zip ("file.pt", zips[k].entries, zips[k].n);
      expect_unsupported (path, zips[k].message);
      remove_temp (path);
    }
}

/* A broken code file that more than one lookup reaches (a class, then a
 * function of that name): one error, naming the archive once (the second
 * read used to set the GError over the first: a warning, fatal in tests). */
static void
test_broken_code_file_looked_up_twice (void)
{
  static const char root[] =
    "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
    "    return __torch__.lib.f(x, )\n";
  static const char lib[] = "def f(x: Tensor) -> Tensor:\n  return torch.relu(x) + 1.2.3\n";
  const ZipEntry entries[] = {
    { "hostile/data.pkl", module_pkl, sizeof module_pkl - 1 },
    { "hostile/code/__torch__.py", root, sizeof root - 1 },
    { "hostile/code/__torch__/lib.py", lib, sizeof lib - 1 },
    { "hostile/constants.pkl", "\x80\x02).", 4 },
    { "hostile/version", "3\n", 2 },
  };
  g_autofree char *path = make_zip ("hostile.pt", entries, G_N_ELEMENTS (entries));
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  const char *first;

  g_assert_null (model);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "code/__torch__/lib.py line 2"));
  first = strstr (error->message, "hostile.pt");
  g_assert_nonnull (first);
  g_assert_null (strstr (first + 1, "hostile.pt"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  g_test_add_func ("/torchscript/code/broken-file-looked-up-twice", test_broken_code_file_looked_up_twice);
  for (guint k = 0; k < G_N_ELEMENTS (pickle_cases); k++)
    {
      g_autofree char *name = g_strdup_printf ("/torchscript/pickle/hostile/%s", pickle_cases[k].name);
      g_test_add_data_func (name, &pickle_cases[k], test_pickle_case);
    }
  g_test_add_func ("/torchscript/pickle/hostile/deep-list", test_pickle_deep_list);
  g_test_add_func ("/torchscript/pickle/hostile/deep-mark-and-tuple", test_pickle_deep_mark_and_tuple);
  g_test_add_func ("/torchscript/pickle/valid", test_pickle_valid);
  g_test_add_func ("/torchscript/pickle/tensor-and-opaque", test_pickle_tensor_and_opaque);
  g_test_add_func ("/torchscript/parser/valid", test_parser_valid);
  for (guint k = 0; k < G_N_ELEMENTS (parse_cases); k++)
    {
      g_autofree char *name = g_strdup_printf ("/torchscript/parser/error/%s", parse_cases[k].name);
      g_test_add_data_func (name, &parse_cases[k], test_parse_case);
    }
  g_test_add_func ("/torchscript/parser/deep", test_parse_deep);
  for (guint k = 0; k < G_N_ELEMENTS (code_cases); k++)
    {
      g_autofree char *name = g_strdup_printf ("/torchscript/code/%s", code_cases[k].name);
      g_test_add_data_func (name, &code_cases[k], test_code_case);
    }
  g_test_add_func ("/torchscript/archive/prefix", test_prefix_not_archive);
  g_test_add_func ("/torchscript/recognise/headers", test_recognise_headers);
  g_test_add_func ("/torchscript/recognise/zips", test_recognise_zips);
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    {
      g_autofree char *truncated = g_strdup_printf ("/torchscript/archive/%s/truncated", graft_torch_generation_name (g));
      g_autofree char *flipped = g_strdup_printf ("/torchscript/archive/%s/flipped", graft_torch_generation_name (g));
      g_test_add_data_func (truncated, &generations[g], test_truncated_archives);
      g_test_add_data_func (flipped, &generations[g], test_flipped_archives);
    }
  int status = g_test_run ();
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    g_free (small_dirs[g]);
  return status;
}
