/* Hostile and broken ONNX input: every case must end in a GError naming
 * the problem, never a crash (these run again under ASan/UBSan). Inputs are
 * the committed sample model, cut and mutated, and protobuf built here. */
#include <string.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"
#include "onnx/reader.h"
#include "onnx.pb-c.h"
#include "fixtures.h"
#include "../test-scratch.h"

static GBytes *sample;

static GraftModel *
read_bytes (const void *data, gsize size, const char *model_dir, GError **error)
{
  g_autoptr(GBytes) bytes = g_bytes_new (data, size);

  return graft_onnx_read_bytes (bytes, "test.onnx", model_dir, NULL, NULL, NULL, error);
}

static void
assert_refused (const void *data, gsize size, const char *model_dir, int code)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = read_bytes (data, size, model_dir, &error);

  g_assert_null (model);
  g_assert_nonnull (error);
  g_assert_true (error->domain == GRAFT_MODEL_ERROR);
  if (code >= 0)
    g_assert_cmpint (error->code, ==, code);
  g_assert_true (g_str_has_prefix (error->message, "test.onnx: "));
  g_test_message ("%s", error->message);
}

static void
test_truncated (void)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (sample, &size);
  guint tried = 0;

  /* Every cut in the header, then cuts spread over the whole file. */
  for (gsize cut = 1; cut < size; cut += cut < 600 ? 1 : 997 + cut % 13)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = read_bytes (data, cut, NULL, &error);

      if (model != NULL)
        g_error ("a file cut at byte %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " loaded", cut, size);
      g_assert_true (error->domain == GRAFT_MODEL_ERROR);
      tried++;
    }
  /* The last byte too. */
  assert_refused (data, size - 1, NULL, GRAFT_MODEL_ERROR_TRUNCATED);
  g_test_message ("%u truncated copies refused", tried);
  g_assert_cmpuint (tried, >, 700);
}

static void
test_truncated_file_on_disk (void)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (sample, &size);
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-malformed-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "cut.onnx", NULL);
  g_autoptr(GraftModel) model = NULL;

  g_assert_true (g_file_set_contents (path, (const char *) data, size / 2, &error));
  model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED);
  g_assert_nonnull (strstr (error->message, path));
  g_assert_nonnull (strstr (error->message, "byte"));
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_random_bytes (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261202);

  for (int round = 0; round < 400; round++)
    {
      gsize size = 1 + g_rand_int_range (rand, 0, round < 200 ? 64 : 8192);
      g_autofree guint8 *data = g_malloc (size);
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = NULL;

      for (gsize i = 0; i < size; i++)
        data[i] = g_rand_int_range (rand, 0, 256);
      model = read_bytes (data, size, NULL, &error);
      /* Random bytes essentially never form a model with a graph and opsets. */
      g_assert_null (model);
      g_assert_true (error->domain == GRAFT_MODEL_ERROR);
    }
}

/* Flipped bytes inside a valid model: loading may succeed (a changed weight)
 * or fail, but must not crash or leave a half-built model behind. */
static void
test_mutated (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (7);
  gsize size;
  const guint8 *original = g_bytes_get_data (sample, &size);
  guint failed = 0;

  for (int round = 0; round < 300; round++)
    {
      g_autofree guint8 *data = g_memdup2 (original, size);
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = NULL;
      /* Most of the file is weights; aim two thirds of the mutations at the
       * nodes (at the start of the graph) and the inputs/outputs (its end). */
      gsize at;

      switch (round % 3)
        {
        case 0: at = g_rand_int_range (rand, 0, (gint32) size); break;
        case 1: at = g_rand_int_range (rand, 0, (gint32) MIN (size, 6000)); break;
        default: at = size - 1 - g_rand_int_range (rand, 0, (gint32) MIN (size, 2000)); break;
        }
      for (int k = 0; k < 1 + round % 4; k++)
        data[(at + k * 7) % size] = g_rand_int_range (rand, 0, 256);
      model = read_bytes (data, size, NULL, &error);
      g_assert_true ((model == NULL) != (error == NULL));
      if (model == NULL)
        failed++;
    }
  g_test_message ("%u of 300 mutated copies refused", failed);
}

static void
test_zero_length (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-malformed-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "empty.onnx", NULL);
  g_autoptr(GraftModel) model = NULL;

  assert_refused ("", 0, NULL, GRAFT_MODEL_ERROR_TRUNCATED);
  g_assert_true (g_file_set_contents (path, "", 0, &error));
  model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED);
  g_unlink (path);
  g_rmdir (dir);
}

/* ---- hand-made wire format ---- */

static void
put_varint (GByteArray *out, guint64 value)
{
  do
    {
      guint8 byte = value & 0x7f;
      value >>= 7;
      if (value)
        byte |= 0x80;
      g_byte_array_append (out, &byte, 1);
    }
  while (value);
}

static void
put_field (GByteArray *out, guint field, const guint8 *data, gsize size)
{
  put_varint (out, (field << 3) | 2);
  put_varint (out, size);
  g_byte_array_append (out, data, size);
}

static void
test_huge_lengths (void)
{
  g_autoptr(GByteArray) out = g_byte_array_new ();

  /* ModelProto.graph with a 4 GiB length */
  put_varint (out, (7 << 3) | 2);
  put_varint (out, G_GUINT64_CONSTANT (0xFFFFFFFF));
  g_byte_array_append (out, (const guint8 *) "\x0a\x00", 2);
  assert_refused (out->data, out->len, NULL, GRAFT_MODEL_ERROR_MALFORMED);

  /* 2 GiB - 1: past the end of the file */
  g_byte_array_set_size (out, 0);
  put_varint (out, (7 << 3) | 2);
  put_varint (out, G_MAXINT32);
  g_byte_array_append (out, (const guint8 *) "\x0a\x00", 2);
  assert_refused (out->data, out->len, NULL, GRAFT_MODEL_ERROR_TRUNCATED);

  /* an 11-byte varint */
  g_byte_array_set_size (out, 0);
  put_varint (out, (1 << 3) | 0);
  g_byte_array_append (out, (const guint8 *) "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  assert_refused (out->data, out->len, NULL, -1);

  /* a length that overruns its enclosing message (initializer inside graph) */
  {
    g_autoptr(GByteArray) graph = g_byte_array_new ();
    put_varint (graph, (5 << 3) | 2);
    put_varint (graph, 1000);
    g_byte_array_append (graph, (const guint8 *) "\x08\x01", 2);
    g_byte_array_set_size (out, 0);
    put_field (out, 7, graph->data, graph->len);
    g_byte_array_append (out, (const guint8 *) "\x42\x02\x10\x11", 4);
    assert_refused (out->data, out->len, NULL, GRAFT_MODEL_ERROR_MALFORMED);
  }

  /* a known message field with the wrong wire type, and wire type 3 */
  assert_refused ("\x3d\x00\x00\x00\x00", 5, NULL, GRAFT_MODEL_ERROR_MALFORMED);
  assert_refused ("\x0b\x0c", 2, NULL, GRAFT_MODEL_ERROR_MALFORMED);

  /* a string field (NodeProto.name) sent as a varint, two levels down */
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(GraftModel) model = read_bytes ("\x3a\x04\x0a\x02\x18\x05\x42\x02\x10\x11", 10, NULL, &error);

    g_assert_null (model);
    g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED);
    g_assert_nonnull (strstr (error->message, "byte 4 (in NodeProto): field 'name' has wire type varint"));
  }
}

/* TypeProto.sequence_type.elem_type... nested depth times in a graph input. */
static void
test_deep_nesting (void)
{
  g_autoptr(GByteArray) type = g_byte_array_new ();
  g_autoptr(GByteArray) info = g_byte_array_new ();
  g_autoptr(GByteArray) graph = g_byte_array_new ();
  g_autoptr(GByteArray) model = g_byte_array_new ();

  put_field (type, 1, (const guint8 *) "\x08\x01", 2);     /* tensor_type { elem_type: FLOAT } */
  for (int i = 0; i < 5000; i++)
    {
      g_autoptr(GByteArray) seq = g_byte_array_new ();
      g_autoptr(GByteArray) outer = g_byte_array_new ();

      put_field (seq, 1, type->data, type->len);            /* Sequence.elem_type */
      put_field (outer, 4, seq->data, seq->len);            /* TypeProto.sequence_type */
      g_byte_array_set_size (type, 0);
      g_byte_array_append (type, outer->data, outer->len);
    }
  put_field (info, 1, (const guint8 *) "x", 1);
  put_field (info, 2, type->data, type->len);
  put_field (graph, 11, info->data, info->len);
  put_field (model, 7, graph->data, graph->len);
  assert_refused (model->data, model->len, NULL, GRAFT_MODEL_ERROR_UNSAFE);
}

/* If nodes nested inside each other's then_branch, 60 levels. */
static void
test_deep_subgraphs (void)
{
  g_autoptr(GByteArray) graph = g_byte_array_new ();
  g_autoptr(GByteArray) model = g_byte_array_new ();

  put_field (graph, 2, (const guint8 *) "leaf", 4);
  for (int i = 0; i < 60; i++)
    {
      g_autoptr(GByteArray) attr = g_byte_array_new ();
      g_autoptr(GByteArray) node = g_byte_array_new ();

      put_field (attr, 1, (const guint8 *) "then_branch", 11);
      put_field (attr, 6, graph->data, graph->len);
      put_field (node, 4, (const guint8 *) "If", 2);
      put_field (node, 5, attr->data, attr->len);
      g_byte_array_set_size (graph, 0);
      put_field (graph, 1, node->data, node->len);
    }
  put_field (model, 7, graph->data, graph->len);
  put_field (model, 8, (const guint8 *) "\x10\x11", 2);
  assert_refused (model->data, model->len, NULL, GRAFT_MODEL_ERROR_UNSAFE);
}

/* ---- protobuf built with protobuf-c ---- */

static GBytes *
pack_model_with_tensor (Onnx__TensorProto *tensor)
{
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  Onnx__OperatorSetIdProto *opsets[] = { &opset };
  Onnx__TensorProto *initializers[] = { tensor };
  gsize size;
  guint8 *buffer;

  opset.has_version = TRUE;
  opset.version = 17;
  graph.name = "g";
  graph.n_initializer = 1;
  graph.initializer = initializers;
  model.has_ir_version = TRUE;
  model.ir_version = 8;
  model.graph = &graph;
  model.n_opset_import = 1;
  model.opset_import = opsets;
  size = onnx__model_proto__get_packed_size (&model);
  buffer = g_malloc (size);
  onnx__model_proto__pack (&model, buffer);
  return g_bytes_new_take (buffer, size);
}

static void
assert_tensor_refused (Onnx__TensorProto *tensor, const char *model_dir, int code, const char *fragment)
{
  g_autoptr(GBytes) bytes = pack_model_with_tensor (tensor);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_onnx_read_bytes (bytes, "test.onnx", model_dir, NULL, NULL, NULL, &error);

  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, code);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "initializer 'w'"));
  g_assert_nonnull (strstr (error->message, fragment));
}

static void
test_hostile_tensors (void)
{
  Onnx__TensorProto tensor = ONNX__TENSOR_PROTO__INIT;
  gint64 huge_dims[] = { G_GINT64_CONSTANT (1) << 40, G_GINT64_CONSTANT (1) << 40 };
  gint64 negative_dims[] = { -4 };
  gint64 four[] = { 4 };
  float three[] = { 1, 2, 3 };

  tensor.name = "w";
  tensor.has_data_type = TRUE;
  tensor.data_type = 1;

  tensor.n_dims = 2;
  tensor.dims = huge_dims;
  assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_UNSAFE, "absurdly large");

  tensor.n_dims = 1;
  tensor.dims = negative_dims;
  assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_MALFORMED, "negative");

  tensor.dims = four;
  tensor.n_float_data = 3;
  tensor.float_data = three;
  assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_MALFORMED, "float_data has 3 values");

  tensor.n_float_data = 0;
  tensor.has_raw_data = TRUE;
  tensor.raw_data.len = 12;
  tensor.raw_data.data = (guint8 *) three;
  assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_MALFORMED, "needs 16 bytes");

  tensor.has_raw_data = FALSE;
  tensor.data_type = 99;
  assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_UNSUPPORTED, "unknown data_type 99");
  tensor.data_type = 1;
  assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_MALFORMED, "no data");
}

static void
test_hostile_external_paths (void)
{
  const char *const locations[] = {
    "../../../../etc/passwd", "/etc/passwd", "sub/../../x.bin", "..", "./../x",
  };
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-external-XXXXXX", &error);
  g_autofree char *outside = g_build_filename (g_get_tmp_dir (), "graft-outside.bin", NULL);
  g_autofree char *link = g_build_filename (dir, "link.bin", NULL);
  g_autofree char *subdir_link = g_build_filename (dir, "etc", NULL);
  gint64 four[] = { 4 };

  g_assert_true (g_file_set_contents (outside, "0123456789abcdef", 16, &error));
  g_assert_cmpint (symlink (outside, link), ==, 0);
  g_assert_cmpint (symlink ("/etc", subdir_link), ==, 0);

  for (gsize i = 0; i < G_N_ELEMENTS (locations) + 3; i++)
    {
      Onnx__TensorProto tensor = ONNX__TENSOR_PROTO__INIT;
      Onnx__StringStringEntryProto entry = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
      Onnx__StringStringEntryProto *entries[] = { &entry };

      tensor.name = "w";
      tensor.has_data_type = TRUE;
      tensor.data_type = 1;
      tensor.n_dims = 1;
      tensor.dims = four;
      tensor.has_data_location = TRUE;
      tensor.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
      tensor.n_external_data = 1;
      tensor.external_data = entries;
      entry.key = "location";
      if (i < G_N_ELEMENTS (locations))
        {
          entry.value = (char *) locations[i];
          assert_tensor_refused (&tensor, dir, GRAFT_MODEL_ERROR_UNSAFE, locations[i]);
        }
      else if (i == G_N_ELEMENTS (locations))
        {
          entry.value = "link.bin";            /* symlink to a file outside */
          assert_tensor_refused (&tensor, dir, GRAFT_MODEL_ERROR_UNSAFE, "outside the model's folder");
        }
      else if (i == G_N_ELEMENTS (locations) + 1)
        {
          entry.value = "etc/passwd";          /* through a symlinked folder */
          assert_tensor_refused (&tensor, dir, GRAFT_MODEL_ERROR_UNSAFE, "outside the model's folder");
        }
      else
        {
          entry.value = "link.bin";            /* read from memory: no folder to trust */
          assert_tensor_refused (&tensor, NULL, GRAFT_MODEL_ERROR_UNSUPPORTED, "not opened from a folder");
        }
    }

  g_unlink (link);
  g_unlink (subdir_link);
  g_unlink (outside);
  g_rmdir (dir);
}

/* Names that are not UTF-8 come out as valid UTF-8 (for JSON and GTK),
 * consistently, so that edges still connect. */
static void
test_invalid_utf8_names (void)
{
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  Onnx__OperatorSetIdProto *opsets[] = { &opset };
  Onnx__ValueInfoProto input = ONNX__VALUE_INFO_PROTO__INIT;
  Onnx__ValueInfoProto *inputs[] = { &input };
  Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
  Onnx__NodeProto *nodes[] = { &node };
  char *node_inputs[] = { "in\xff\xfeput" };
  char *node_outputs[] = { "out" };
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) loaded = NULL;
  GraftGraph *g;
  GraftNode *n;
  gsize size;
  guint8 *buffer;

  opset.has_version = TRUE;
  opset.version = 17;
  input.name = "in\xff\xfeput";
  node.op_type = "Re\xc3\x28lu";
  node.name = "/sc\x80ope/node";
  node.n_input = 1;
  node.input = node_inputs;
  node.n_output = 1;
  node.output = node_outputs;
  graph.name = "g\xff";
  graph.n_input = 1;
  graph.input = inputs;
  graph.n_node = 1;
  graph.node = nodes;
  model.graph = &graph;
  model.producer_name = "\xfe";
  model.n_opset_import = 1;
  model.opset_import = opsets;
  size = onnx__model_proto__get_packed_size (&model);
  buffer = g_malloc (size);
  onnx__model_proto__pack (&model, buffer);
  bytes = g_bytes_new_take (buffer, size);

  loaded = graft_onnx_read_bytes (bytes, "test.onnx", NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g = graft_model_get_graph (loaded);
  n = g_ptr_array_index (g->nodes, 0);
  g_assert_true (g_utf8_validate (g->name, -1, NULL));
  g_assert_true (g_utf8_validate (n->op, -1, NULL));
  g_assert_true (g_utf8_validate (n->name, -1, NULL));
  g_assert_true (g_utf8_validate (graft_model_get_producer_name (loaded), -1, NULL));
  g_assert_true (g_ptr_array_index (n->inputs, 0) == g_ptr_array_index (g->inputs, 0));
  g_assert_true (g_utf8_validate (((GraftValue *) g_ptr_array_index (g->inputs, 0))->name, -1, NULL));
  g_assert_true (g_utf8_validate (n->group->name, -1, NULL));
}

static void
test_not_a_model (void)
{
  /* valid protobuf, but no graph / no opsets */
  assert_refused ("\x08\x07", 2, NULL, GRAFT_MODEL_ERROR_MALFORMED);
  assert_refused ("\x3a\x03\x12\x01g", 5, NULL, GRAFT_MODEL_ERROR_MALFORMED);
  /* text */
  assert_refused ("hello, world\n", 13, NULL, -1);
}

static void
assert_load_refused (const char *path, const char *reason)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_assert_true (g_str_has_prefix (error->message, path));
  g_assert_nonnull (strstr (error->message, reason));
  g_test_message ("%s", error->message);
}

/* Opening a FIFO for reading blocks until a writer comes: the loader must
 * refuse anything but a regular file before it opens it. */
static void
test_special_files (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-special-XXXXXX", &error);
  g_autofree char *fifo = NULL;
  g_autofree char *link = NULL;

  g_assert_no_error (error);
  fifo = g_build_filename (dir, "pipe.onnx", NULL);
  link = g_build_filename (dir, "link.onnx", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (symlink ("pipe.onnx", link), ==, 0);

  assert_load_refused (fifo, "named pipe");
  assert_load_refused (link, "named pipe");
  assert_load_refused ("/dev/null", "character device");
  assert_load_refused (dir, "folder");

  g_unlink (link);
  g_unlink (fifo);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_autofree char *path = NULL;
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  gsize length;

  g_test_init (&argc, &argv, NULL);
  path = graft_test_source_path ("data/samples/tiny-cnn.onnx");
  if (!g_file_get_contents (path, &contents, &length, &error))
    g_error ("%s", error->message);
  sample = g_bytes_new_take (g_steal_pointer (&contents), length);

  g_test_add_func ("/onnx/malformed/truncated", test_truncated);
  g_test_add_func ("/onnx/malformed/truncated-file", test_truncated_file_on_disk);
  g_test_add_func ("/onnx/malformed/random-bytes", test_random_bytes);
  g_test_add_func ("/onnx/malformed/mutated", test_mutated);
  g_test_add_func ("/onnx/malformed/zero-length", test_zero_length);
  g_test_add_func ("/onnx/malformed/huge-lengths", test_huge_lengths);
  g_test_add_func ("/onnx/malformed/deep-type-nesting", test_deep_nesting);
  g_test_add_func ("/onnx/malformed/deep-subgraphs", test_deep_subgraphs);
  g_test_add_func ("/onnx/malformed/hostile-tensors", test_hostile_tensors);
  g_test_add_func ("/onnx/malformed/hostile-external-paths", test_hostile_external_paths);
  g_test_add_func ("/onnx/malformed/invalid-utf8-names", test_invalid_utf8_names);
  g_test_add_func ("/onnx/malformed/not-a-model", test_not_a_model);
  g_test_add_func ("/onnx/malformed/special-files", test_special_files);
  return g_test_run ();
}
