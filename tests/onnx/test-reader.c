/* The ONNX reader on small hand-built files (tests/onnx/make-reader-fixtures.py)
 * and on the committed sample model. */
#include <string.h>
#include <glib/gstdio.h>

#include "loader.h"
#include "ir/torch-scopes.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "runtime/rt-tensor.h"
#include "fixtures.h"
#include "../test-scratch.h"
#include "../test-python.h"

static char *fixture_dir;

static GraftModel *
load_fixture (const char *name)
{
  g_autofree char *path = g_build_filename (fixture_dir, name, NULL);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (model);
  return model;
}

static GraftNode *
find_node (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (strcmp (node->name, name) == 0)
        return node;
    }
  g_error ("no node '%s' in graph '%s'", name, graph->name);
  return NULL;
}

static GraftValue *
input_named (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->inputs, i);
      if (strcmp (value->name, name) == 0)
        return value;
    }
  g_error ("no input '%s'", name);
  return NULL;
}

static const guint8 *
tensor_bytes (GraftTensor *tensor, gsize *size)
{
  g_autoptr(GError) error = NULL;
  GBytes *bytes = graft_tensor_get_data (tensor, &error);

  g_assert_no_error (error);
  g_assert_nonnull (bytes);
  return g_bytes_get_data (bytes, size);
}

static void
test_dims_and_metadata (void)
{
  g_autoptr(GraftModel) model = load_fixture ("dims.onnx");
  GraftGraph *graph = graft_model_get_graph (model);
  GraftValue *x, *norank, *scalar, *seq, *mapped, *opt;
  const char *key, *value;

  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_ONNX);
  g_assert_cmpstr (graft_model_get_producer_name (model), ==, "graft-tests");
  g_assert_cmpstr (graft_model_get_producer_version (model), ==, "1.0");
  g_assert_cmpstr (graft_model_get_domain (model), ==, "org.graft.test");
  g_assert_cmpstr (graft_model_get_doc_string (model), ==, "model doc");
  g_assert_cmpint (graft_model_get_model_version (model), ==, 7);
  g_assert_cmpint (graft_model_get_ir_version (model), ==, 8);
  g_assert_cmpint (graft_model_get_opset (model, "onnx"), ==, 17);
  g_assert_cmpint (graft_model_get_opset (model, "com.example"), ==, 2);
  g_assert_cmpint (graft_model_get_opset (model, "ai.onnx.ml"), ==, -1);
  g_assert_cmpuint (graft_model_get_n_metadata (model), ==, 2);
  graft_model_get_metadata (model, 0, &key, &value);
  g_assert_cmpstr (key, ==, "author");
  g_assert_cmpstr (value, ==, "graft");
  graft_model_get_metadata (model, 1, &key, &value);
  g_assert_cmpstr (key, ==, "license");
  g_assert_cmpstr (value, ==, "CC0");

  g_assert_cmpstr (graph->name, ==, "dims_graph");
  g_assert_cmpstr (graph->doc_string, ==, "graph doc");
  g_assert_cmpuint (graph->inputs->len, ==, 5);
  g_assert_cmpuint (graph->outputs->len, ==, 2);

  x = input_named (graph, "x");
  g_assert_true (x->is_graph_input);
  g_assert_cmpstr (x->doc_string, ==, "the image");
  g_assert_cmpint (x->kind, ==, GRAFT_VALUE_TENSOR);
  g_assert_cmpint (x->dtype, ==, GRAFT_DTYPE_FLOAT32);
  g_assert_cmpint (x->shape.rank, ==, 3);
  g_assert_cmpint (x->shape.dims[0].kind, ==, GRAFT_DIM_FIXED);
  g_assert_cmpint (x->shape.dims[0].value, ==, 2);
  g_assert_cmpint (x->shape.dims[1].kind, ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (x->shape.dims[1].symbol, ==, "batch");
  g_assert_cmpint (x->shape.dims[2].kind, ==, GRAFT_DIM_UNKNOWN);
  g_assert_null (x->type_string);

  norank = input_named (graph, "norank");
  g_assert_cmpint (norank->dtype, ==, GRAFT_DTYPE_INT64);
  g_assert_cmpint (norank->shape.rank, ==, -1);
  scalar = input_named (graph, "scalar");
  g_assert_cmpint (scalar->dtype, ==, GRAFT_DTYPE_FLOAT64);
  g_assert_cmpint (scalar->shape.rank, ==, 0);

  mapped = input_named (graph, "mapped");
  g_assert_cmpint (mapped->kind, ==, GRAFT_VALUE_MAP);
  g_assert_cmpstr (mapped->type_string, ==, "map(string,tensor(float))");
  opt = input_named (graph, "opt");
  g_assert_cmpint (opt->kind, ==, GRAFT_VALUE_OPTIONAL);
  g_assert_cmpstr (opt->type_string, ==, "optional(seq(tensor(int32)))");
  g_assert_cmpint (opt->dtype, ==, GRAFT_DTYPE_INT32);
  g_assert_cmpint (opt->shape.rank, ==, 1);
  g_assert_cmpint (opt->shape.dims[0].value, ==, 4);

  /* value_info annotates the node output */
  seq = graft_graph_lookup_value (graph, "seq");
  g_assert_nonnull (seq);
  g_assert_cmpint (seq->kind, ==, GRAFT_VALUE_SEQUENCE);
  g_assert_cmpstr (seq->type_string, ==, "seq(tensor(float))");
  g_assert_cmpint (seq->dtype, ==, GRAFT_DTYPE_FLOAT32);
  g_assert_cmpint (seq->shape.rank, ==, 2);
  g_assert_cmpint (seq->shape.dims[0].value, ==, 3);
  g_assert_cmpstr (seq->shape.dims[1].symbol, ==, "n");
  g_assert_true (seq->producer == find_node (graph, "/block/inner/SeqConstruct"));

  /* nodes, doc strings and the group tree from scoped names */
  {
    GraftNode *identity = find_node (graph, "/block/Identity");
    GraftNode *construct = find_node (graph, "/block/inner/SeqConstruct");
    GraftNode *len = find_node (graph, "Len");

    g_assert_cmpstr (identity->op, ==, "onnx::Identity");
    g_assert_cmpstr (identity->doc_string, ==, "copies x");
    g_assert_cmpstr (identity->group->name, ==, "block");
    g_assert_cmpstr (construct->group->name, ==, "inner");
    g_assert_true (construct->group->parent == identity->group);
    g_assert_true (len->group == graph->root_group);
    g_assert_cmpuint (identity->group->total_nodes, ==, 2);
    g_assert_true (g_ptr_array_index (identity->inputs, 0) == x);
  }
}

static GraftAttribute *
attribute (GraftNode *node, const char *name)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);

  g_assert_nonnull (a);
  return a;
}

static void
test_every_attribute_type (void)
{
  g_autoptr(GraftModel) model = load_fixture ("attributes.onnx");
  GraftGraph *graph = graft_model_get_graph (model);
  GraftNode *node = find_node (graph, "every");
  GraftAttribute *a;
  g_autofree char *s = NULL;
  g_autoptr(GPtrArray) subgraphs = NULL;
  const float *floats;
  gsize size;

  g_assert_cmpstr (node->op, ==, "com.example::Everything");
  g_assert_cmpstr (node->domain, ==, "com.example");
  g_assert_cmpuint (node->attributes->len, ==, 13);

  a = attribute (node, "f");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_FLOAT);
  g_assert_cmpfloat (a->f, ==, 1.5);
  g_assert_cmpstr (a->doc_string, ==, "a float");
  a = attribute (node, "i");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_INT);
  g_assert_cmpint (a->i, ==, -3);
  a = attribute (node, "s");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_STRING);
  s = graft_attribute_dup_string (a);
  g_assert_cmpstr (s, ==, "hello");

  a = attribute (node, "t");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_TENSOR);
  g_assert_cmpint (a->t->dtype, ==, GRAFT_DTYPE_FLOAT32);
  g_assert_cmpint (a->t->rank, ==, 2);
  g_assert_cmpint (a->t->dims[0], ==, 2);
  g_assert_cmpint (a->t->dims[1], ==, 3);
  floats = (const float *) tensor_bytes (a->t, &size);
  g_assert_cmpuint (size, ==, 24);
  g_assert_cmpfloat (floats[5], ==, 5.0f);

  a = attribute (node, "g");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_GRAPH);
  g_assert_cmpstr (a->g->name, ==, "g_body");
  g_assert_true (a->g->parent_graph == graph);
  g_assert_true (a->g->parent_node == node);
  g_assert_cmpuint (a->g->nodes->len, ==, 1);

  a = attribute (node, "floats");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_FLOATS);
  g_assert_cmpuint (a->floats->len, ==, 2);
  g_assert_cmpfloat (g_array_index (a->floats, double, 1), ==, 2.0);
  a = attribute (node, "ints");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_INTS);
  g_assert_cmpuint (a->ints->len, ==, 3);
  g_assert_cmpint (g_array_index (a->ints, gint64, 2), ==, 3);
  a = attribute (node, "strings");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_STRINGS);
  g_assert_cmpuint (a->strings->len, ==, 2);
  g_assert_cmpmem (g_bytes_get_data (g_ptr_array_index (a->strings, 1), NULL),
                   g_bytes_get_size (g_ptr_array_index (a->strings, 1)), "bc", 2);
  a = attribute (node, "tensors");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_TENSORS);
  g_assert_cmpuint (a->tensors->len, ==, 2);
  g_assert_cmpint (((GraftTensor *) g_ptr_array_index (a->tensors, 1))->dtype, ==, GRAFT_DTYPE_INT64);
  a = attribute (node, "graphs");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_GRAPHS);
  g_assert_cmpuint (a->graphs->len, ==, 2);
  g_assert_cmpuint (((GraftGraph *) g_ptr_array_index (a->graphs, 1))->nodes->len, ==, 2);
  g_assert_true (((GraftGraph *) g_ptr_array_index (a->graphs, 1))->parent_node == node);

  a = attribute (node, "sparse");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_SPARSE_TENSOR);
  g_assert_cmpint (a->t->rank, ==, 2);
  floats = (const float *) tensor_bytes (a->t, &size);
  g_assert_cmpuint (size, ==, 24);
  /* values 5, 7 at linear positions 1 and 5 */
  g_assert_cmpfloat (floats[0], ==, 0.0f);
  g_assert_cmpfloat (floats[1], ==, 5.0f);
  g_assert_cmpfloat (floats[5], ==, 7.0f);

  a = attribute (node, "tp");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_TYPE);
  g_clear_pointer (&s, g_free);
  s = graft_attribute_dup_string (a);
  g_assert_cmpstr (s, ==, "tensor(int64)");
  a = attribute (node, "tps");
  g_assert_cmpint (a->type, ==, GRAFT_ATTR_TYPES);
  g_assert_cmpuint (a->strings->len, ==, 2);
  g_assert_cmpmem (g_bytes_get_data (g_ptr_array_index (a->strings, 1), NULL),
                   g_bytes_get_size (g_ptr_array_index (a->strings, 1)), "seq(tensor(bool))", 17);

  subgraphs = graft_node_get_subgraphs (node);
  g_assert_cmpuint (subgraphs->len, ==, 3);
  g_assert_cmpuint (graft_graph_count_nodes_recursive (graph), ==, 5);
}

static void
check_bytes (GraftGraph *graph, const char *name, GraftDType dtype, const void *expected, gsize expected_size)
{
  GraftValue *value = graft_graph_lookup_value (graph, name);
  const guint8 *data;
  gsize size;

  g_assert_nonnull (value);
  g_assert_nonnull (value->initializer);
  g_assert_cmpint (value->initializer->dtype, ==, dtype);
  g_assert_cmpint (value->dtype, ==, dtype);
  data = tensor_bytes (value->initializer, &size);
  g_assert_cmpmem (data, size, expected, expected_size);
}

static void
test_typed_tensor_fields (void)
{
  g_autoptr(GraftModel) model = load_fixture ("tensors.onnx");
  GraftGraph *graph = graft_model_get_graph (model);
  const float f32[] = { 1.5f, -2.0f };
  const double f64[] = { 0.25, 1e300 };
  const gint8 i8[] = { -1, 2, -128 };
  const guint8 u8[] = { 255, 1 };
  const gint16 i16[] = { -2, 300 };
  const guint16 u16[] = { 65535 };
  const gint32 i32[] = { -5, 70000 };
  const gint64 i64[] = { -1, G_GINT64_CONSTANT (1) << 40 };
  const guint32 u32[] = { 4000000000u };
  const guint64 u64[] = { G_GUINT64_CONSTANT (1) << 63 };
  const guint8 b[] = { 1, 0, 1 };
  const guint16 f16[] = { 0x3c00, 0xc000 };
  const guint16 bf16[] = { 0x3f80 };
  const float c64[] = { 1.0f, -1.0f };
  const gint32 raw_small[] = { 3, 4 };
  float raw_big[100];
  GraftValue *str, *empty, *sparse;
  const float *dense;
  gsize size;

  for (int i = 0; i < 100; i++)
    raw_big[i] = i;
  check_bytes (graph, "f32", GRAFT_DTYPE_FLOAT32, f32, sizeof f32);
  check_bytes (graph, "f64", GRAFT_DTYPE_FLOAT64, f64, sizeof f64);
  check_bytes (graph, "i8", GRAFT_DTYPE_INT8, i8, sizeof i8);
  check_bytes (graph, "u8", GRAFT_DTYPE_UINT8, u8, sizeof u8);
  check_bytes (graph, "i16", GRAFT_DTYPE_INT16, i16, sizeof i16);
  check_bytes (graph, "u16", GRAFT_DTYPE_UINT16, u16, sizeof u16);
  check_bytes (graph, "i32", GRAFT_DTYPE_INT32, i32, sizeof i32);
  check_bytes (graph, "i64", GRAFT_DTYPE_INT64, i64, sizeof i64);
  check_bytes (graph, "u32", GRAFT_DTYPE_UINT32, u32, sizeof u32);
  check_bytes (graph, "u64", GRAFT_DTYPE_UINT64, u64, sizeof u64);
  check_bytes (graph, "b", GRAFT_DTYPE_BOOL, b, sizeof b);
  check_bytes (graph, "f16", GRAFT_DTYPE_FLOAT16, f16, sizeof f16);
  check_bytes (graph, "bf16", GRAFT_DTYPE_BFLOAT16, bf16, sizeof bf16);
  check_bytes (graph, "c64", GRAFT_DTYPE_COMPLEX64, c64, sizeof c64);
  check_bytes (graph, "raw_small", GRAFT_DTYPE_INT32, raw_small, sizeof raw_small);
  check_bytes (graph, "raw_big", GRAFT_DTYPE_FLOAT32, raw_big, sizeof raw_big);

  str = graft_graph_lookup_value (graph, "str");
  g_assert_cmpint (str->initializer->dtype, ==, GRAFT_DTYPE_STRING);
  g_assert_cmpuint (str->initializer->strings->len, ==, 2);
  g_assert_cmpmem (g_bytes_get_data (g_ptr_array_index (str->initializer->strings, 1), NULL),
                   g_bytes_get_size (g_ptr_array_index (str->initializer->strings, 1)), "\0z", 2);

  empty = graft_graph_lookup_value (graph, "empty");
  g_assert_cmpint (empty->initializer->rank, ==, 2);
  g_assert_cmpint (empty->initializer->dims[0], ==, 0);
  tensor_bytes (empty->initializer, &size);
  g_assert_cmpuint (size, ==, 0);

  sparse = graft_graph_lookup_value (graph, "sparse");
  g_assert_nonnull (sparse);
  g_assert_cmpint (sparse->initializer->rank, ==, 2);
  g_assert_cmpint (sparse->initializer->dims[0], ==, 3);
  dense = (const float *) tensor_bytes (sparse->initializer, &size);
  g_assert_cmpuint (size, ==, 6 * sizeof (float));
  /* coordinates (0,1) = 1 and (2,0) = 2 */
  g_assert_cmpfloat (dense[1], ==, 1.0f);
  g_assert_cmpfloat (dense[4], ==, 2.0f);
  g_assert_cmpfloat (dense[0] + dense[2] + dense[3] + dense[5], ==, 0.0f);
  g_assert_cmpuint (graph->initializers->len, ==, 19);
}

/* Large raw_data must be a view of the file, not a copy. */
static void
test_raw_data_not_copied (void)
{
  g_autofree char *path = g_build_filename (fixture_dir, "tensors.onnx", NULL);
  g_autofree char *contents = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = NULL;
  GraftValue *big, *small;
  gsize length;
  const guint8 *start, *data;

  g_assert_true (g_file_get_contents (path, &contents, &length, &error));
  bytes = g_bytes_new_take (g_steal_pointer (&contents), length);
  start = g_bytes_get_data (bytes, NULL);
  model = graft_onnx_read_bytes (bytes, "tensors.onnx", NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);

  big = graft_graph_lookup_value (graft_model_get_graph (model), "raw_big");
  data = g_bytes_get_data (big->initializer->data, NULL);
  g_assert_true (data >= start && data + 400 <= start + length);

  /* below the threshold it is copied out of the protobuf */
  small = graft_graph_lookup_value (graft_model_get_graph (model), "raw_small");
  data = g_bytes_get_data (small->initializer->data, NULL);
  g_assert_false (data >= start && data < start + length);
}

static void
test_subgraph_outer_scope (void)
{
  g_autoptr(GraftModel) model = load_fixture ("subgraphs.onnx");
  GraftGraph *graph = graft_model_get_graph (model);
  GraftNode *choose = find_node (graph, "choose");
  GraftValue *doubled = graft_graph_lookup_value (graph, "doubled");
  GraftValue *bias = graft_graph_lookup_value (graph, "bias");
  GraftAttribute *then_branch = graft_node_get_attribute (choose, "then_branch");
  GraftAttribute *else_branch = graft_node_get_attribute (choose, "else_branch");
  GraftNode *then_add, *loop, *body_add;
  GraftAttribute *body;

  g_assert_nonnull (doubled);
  g_assert_true (doubled->producer == find_node (graph, "double"));
  g_assert_nonnull (then_branch);
  g_assert_nonnull (else_branch);
  g_assert_true (then_branch->g->parent_graph == graph);
  g_assert_true (then_branch->g->parent_node == choose);

  then_add = find_node (then_branch->g, "then_add");
  g_assert_true (g_ptr_array_index (then_add->inputs, 0) == doubled);
  g_assert_true (g_ptr_array_index (then_add->inputs, 1) == bias);
  g_assert_null (graft_graph_lookup_value (then_branch->g, "doubled"));

  loop = find_node (else_branch->g, "loop");
  g_assert_cmpuint (loop->inputs->len, ==, 3);
  g_assert_null (g_ptr_array_index (loop->inputs, 1));            /* omitted optional input */
  g_assert_true (((GraftValue *) g_ptr_array_index (loop->inputs, 0))->graph == graph);  /* 'trip' initializer */
  body = graft_node_get_attribute (loop, "body");
  g_assert_true (body->g->parent_graph == else_branch->g);
  body_add = find_node (body->g, "body_add");
  /* two scopes up */
  g_assert_true (g_ptr_array_index (body_add->inputs, 1) == doubled);
  g_assert_true (graft_graph_resolve_value (body->g, "doubled") == doubled);
  g_assert_cmpuint (doubled->consumers->len, ==, 2);
  g_assert_cmpuint (body->g->inputs->len, ==, 3);
  g_assert_cmpuint (graft_graph_count_nodes_recursive (graph), ==, 6);
}

static void
test_function (void)
{
  g_autoptr(GraftModel) model = load_fixture ("function.onnx");
  GPtrArray *functions = graft_model_get_functions (model);
  GraftFunction *function;
  GraftNode *call;
  gint64 *version;

  g_assert_cmpuint (functions->len, ==, 1);
  function = g_ptr_array_index (functions, 0);
  g_assert_true (graft_model_lookup_function (model, "org.graft", "ScaledRelu") == function);
  g_assert_cmpstr (function->name, ==, "ScaledRelu");
  g_assert_cmpstr (function->domain, ==, "org.graft");
  g_assert_cmpstr (function->doc_string, ==, "relu(2x)");
  g_assert_cmpuint (function->attribute_names->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (function->attribute_names, 0), ==, "alpha");
  g_assert_cmpuint (function->body->nodes->len, ==, 3);
  g_assert_cmpuint (function->body->inputs->len, ==, 1);
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (function->body->inputs, 0))->name, ==, "X");
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (function->body->outputs, 0))->name, ==, "Y");
  g_assert_true (((GraftValue *) g_ptr_array_index (function->body->outputs, 0))->producer
                 == g_ptr_array_index (function->body->nodes, 2));
  version = g_hash_table_lookup (function->opsets, "onnx");
  g_assert_nonnull (version);
  g_assert_cmpint (*version, ==, 17);

  call = find_node (graft_model_get_graph (model), "call");
  g_assert_cmpstr (call->op, ==, "org.graft::ScaledRelu");
}

static void
test_external_good (void)
{
  g_autoptr(GraftModel) model = load_fixture ("external/good.onnx");
  GraftValue *w = graft_graph_lookup_value (graft_model_get_graph (model), "w");
  const float expected[] = { 1, 2, 3, 4 };
  const guint8 *data;
  gsize size;

  g_assert_true (graft_tensor_is_external (w->initializer));
  g_assert_true (g_str_has_suffix (graft_external_file_get_path (w->initializer->external_file), "/external/sub/weights.bin"));
  g_assert_cmpuint (w->initializer->external_offset, ==, 8);
  /* lazy: nothing read until asked */
  g_assert_null (w->initializer->data);
  data = tensor_bytes (w->initializer, &size);
  g_assert_cmpmem (data, size, expected, sizeof expected);
}

/* The layout onnx.save(save_as_external_data=True) writes reads back the
 * same bytes as the embedded model. */
static void
test_external_saved_by_onnx (void)
{
  g_autoptr(GraftModel) external = load_fixture ("external/real/model.onnx");
  g_autoptr(GraftModel) embedded = load_fixture ("external-embedded.onnx");
  GraftGraph *a = graft_model_get_graph (external);
  GraftGraph *b = graft_model_get_graph (embedded);

  g_assert_cmpuint (a->initializers->len, ==, 4);
  g_assert_cmpuint (b->initializers->len, ==, 4);
  for (guint i = 0; i < a->initializers->len; i++)
    {
      GraftValue *va = g_ptr_array_index (a->initializers, i);
      GraftValue *vb = g_ptr_array_index (b->initializers, i);
      const guint8 *da, *db;
      gsize na, nb;

      g_assert_cmpstr (va->name, ==, vb->name);
      g_assert_true (graft_tensor_is_external (va->initializer));
      g_assert_false (graft_tensor_is_external (vb->initializer));
      da = tensor_bytes (va->initializer, &na);
      db = tensor_bytes (vb->initializer, &nb);
      g_assert_cmpmem (da, na, db, nb);
    }
}

static void
check_refused (const char *name, int code, const char *fragment)
{
  g_autofree char *path = g_build_filename (fixture_dir, name, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, code);
  g_test_message ("%s: %s", name, error->message);
  g_assert_nonnull (strstr (error->message, path));
  g_assert_nonnull (strstr (error->message, "initializer 'w'"));
  g_assert_nonnull (strstr (error->message, fragment));
}

static void
test_external_refused (void)
{
  check_refused ("external/escape.onnx", GRAFT_MODEL_ERROR_UNSAFE, "'../outside.bin' contains '..'");
  check_refused ("external/absolute.onnx", GRAFT_MODEL_ERROR_UNSAFE, "is an absolute path");
  check_refused ("external/symlink.onnx", GRAFT_MODEL_ERROR_UNSAFE, "outside the model's folder");
  check_refused ("external/missing.onnx", GRAFT_MODEL_ERROR_IO, "'nothere.bin'");
  check_refused ("external/short.onnx", GRAFT_MODEL_ERROR_TRUNCATED, "too short");
}

static void
test_sample_model (void)
{
  g_autofree char *path = graft_test_source_path ("data/samples/tiny-cnn.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  GraftGraph *graph;
  GraftValue *image;
  GraftGroup *layer1;

  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  g_assert_cmpstr (graft_model_get_producer_name (model), ==, "pytorch");
  g_assert_cmpint (graft_model_get_opset (model, "onnx"), ==, 17);
  g_assert_cmpuint (graph->nodes->len, ==, 35);
  image = g_ptr_array_index (graph->inputs, 0);
  g_assert_cmpstr (image->name, ==, "image");
  g_assert_cmpstr (image->shape.dims[0].symbol, ==, "batch");
  g_assert_cmpint (image->shape.dims[1].value, ==, 3);
  layer1 = graft_group_find_path (graph->root_group, "layer1");
  g_assert_nonnull (layer1);
  g_assert_cmpuint (layer1->children->len, ==, 2);
  g_assert_cmpuint (layer1->total_nodes, >, 4);
  g_assert_cmpstr (graft_model_get_path (model), ==, path);
}

static void
test_sniff (void)
{
  guint8 head[512] = { 0 };

  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "PK\x03\x04rest", 8), ==, GRAFT_FILE_KIND_ZIP);
  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15),
                   ==, GRAFT_FILE_KIND_TORCH_LEGACY);
  memcpy (head + 257, "ustar", 5);
  g_assert_cmpint (graft_sniff_file_kind (head, sizeof head), ==, GRAFT_FILE_KIND_TORCH_TAR);
  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "\x1c\0\0\0PTMF", 8), ==, GRAFT_FILE_KIND_FLATBUFFER_MOBILE);
  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "\x08\x07\x12\x07pytorch", 11), ==, GRAFT_FILE_KIND_ONNX);
  g_assert_cmpint (graft_sniff_file_kind (head, 0), ==, GRAFT_FILE_KIND_UNKNOWN);
  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "PYTORCH1\0\0", 10), ==, GRAFT_FILE_KIND_TORCH_PREVIEW);
  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "\x80\x04\x95\x10", 4), ==, GRAFT_FILE_KIND_PICKLE);
  g_assert_cmpint (graft_sniff_file_kind ((const guint8 *) "\x80\x02}q\x00.", 6), ==, GRAFT_FILE_KIND_PICKLE);
}

/* Files the ONNX reader cannot parse but the PyTorch loader recognises
 * reach it by content and get its precise message. */
static void
test_pytorch_kinds_routed (void)
{
  struct { const char *bytes; gsize len; const char *expected; } cases[] = {
    { "PYTORCH1\0\0\0\0", 12, "preview release" },
    { "\x80\x02}q\x00.", 6, "pickle" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *dir = graft_test_scratch_dir ("graft-sniff-XXXXXX", NULL);
      g_autofree char *path = g_build_filename (dir, "model.pt", NULL);
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = NULL;

      g_assert_true (g_file_set_contents (path, cases[i].bytes, cases[i].len, NULL));
      model = graft_model_load (path, NULL, NULL, NULL, &error);
      g_assert_null (model);
      g_assert_nonnull (error);
      if (strstr (error->message, cases[i].expected) == NULL)
        g_error ("case %" G_GSIZE_FORMAT ": unexpected message: %s", i, error->message);
      g_unlink (path);
      g_rmdir (dir);
    }
}

static char *
write_temp (const char *name, const void *data, gsize size)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-onnx-XXXXXX", &error);
  char *path;

  g_assert_no_error (error);
  path = g_build_filename (dir, name, NULL);
  g_assert_true (g_file_set_contents (path, data, size, &error));
  return path;
}

static void
remove_temp (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);

  g_unlink (path);
  g_rmdir (dir);
}

/* Read from a file, the file is a private copy in memory: large raw_data
 * are copied out of it, aligned, so that it can be freed and the runtime
 * uses the copies as they are instead of copying every weight a second
 * time. A read-only file too (it used to be mapped, and its weights were
 * copied twice); run as root, access() calls every file writable, so the
 * read-only case only differs from the first when the tests run as a user. */
static void
check_raw_data_copied_aligned (mode_t mode)
{
  g_autofree char *fixture = g_build_filename (fixture_dir, "tensors.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *path = NULL;
  g_autoptr(GBytes) file_bytes = NULL;
  g_autoptr(GraftModel) from_bytes = NULL;
  g_autoptr(GraftModel) from_file = NULL;
  g_autoptr(GraftRtTensor) constant = NULL;
  GraftValue *big, *expected;
  gsize length;

  g_assert_true (g_file_get_contents (fixture, &contents, &length, &error));
  path = write_temp ("tensors.onnx", contents, length);
  g_assert_cmpint (g_chmod (path, mode), ==, 0);
  file_bytes = g_bytes_new_take (g_steal_pointer (&contents), length);
  from_bytes = graft_onnx_read_bytes (file_bytes, "tensors.onnx", NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  from_file = graft_onnx_read_file (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  remove_temp (path);

  big = graft_graph_lookup_value (graft_model_get_graph (from_file), "raw_big");
  expected = graft_graph_lookup_value (graft_model_get_graph (from_bytes), "raw_big");
  g_assert_true (g_bytes_equal (big->initializer->data, expected->initializer->data));
  g_assert_cmpuint ((guintptr) g_bytes_get_data (big->initializer->data, NULL) % 64, ==, 0);

  constant = graft_rt_tensor_new_from_tensor (big->initializer, &error);
  g_assert_no_error (error);
  g_assert_nonnull (constant->borrowed);
  g_assert_true (constant->data == g_bytes_get_data (big->initializer->data, NULL));
}

static void
test_raw_data_copied_aligned_from_file (void)
{
  check_raw_data_copied_aligned (0644);
  check_raw_data_copied_aligned (0444);
}

static void
test_loader_errors (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *empty = write_temp ("empty.onnx", "", 0);
  g_autofree char *mobile = write_temp ("model.ptl", "\x1c\0\0\0PTMF\0\0\0\0", 12);
  GraftModel *model;

  model = graft_model_load (empty, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED);
  g_assert_nonnull (strstr (error->message, "empty"));
  g_clear_error (&error);

  model = graft_model_load (mobile, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "torch.jit.save"));
  g_clear_error (&error);

  model = graft_model_load ("/nonexistent/model.onnx", NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_clear_error (&error);

  model = graft_model_load (fixture_dir, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "folder"));

  remove_temp (empty);
  remove_temp (mobile);
}

static void
check_foreign (const char *name, const void *data, gsize size, const char *fragment)
{
  g_autofree char *path = write_temp (name, data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, fragment));
  remove_temp (path);
}

/* Files that are not models at all get named, not "invalid protobuf". */
static void
test_loader_foreign_formats (void)
{
  check_foreign ("model.onnx.gz", "\x1f\x8b\x08\x00\x00\x00\x00\x00", 8, "gzip");
  check_foreign ("model.h5", "\x89HDF\r\n\x1a\n\0\0", 10, "HDF5");
  check_foreign ("model.tflite", "\x1c\0\0\0TFL3\0\0\0\0", 12, "TensorFlow Lite");
  check_foreign ("model.safetensors", "\x40\0\0\0\0\0\0\0{\"w\":{}}", 17, "safetensors");
  check_foreign ("model.onnxtxt", "ir_version: 8\nproducer_name: \"x\"\n", 34, "text format");
}

static void
count_progress (double fraction, gpointer user_data)
{
  double *last = user_data;

  g_assert_cmpfloat (fraction, >=, *last);
  *last = fraction;
}

static void
test_progress_and_cancel (void)
{
  g_autofree char *path = graft_test_source_path ("data/samples/tiny-cnn.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GraftModel) model = NULL;
  double last = 0;

  model = graft_model_load (path, NULL, count_progress, &last, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (last, ==, 1.0);
  g_clear_object (&model);

  g_cancellable_cancel (cancellable);
  model = graft_model_load (path, cancellable, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED);
}

/* Adds Relu(x) named name with the dynamo exporter's name_scopes and
 * class_hierarchy metadata (either may be NULL: left out). */
static GraftNode *
add_scoped_relu (GraftGraph *graph, GraftValue *x, const char *name, const char *scopes, const char *classes)
{
  g_autofree char *output_name = g_strconcat (name, "_out", NULL);
  GraftNode *node = graft_graph_add_node (graph, NULL, "Relu", name);

  graft_node_add_input (node, x);
  graft_node_add_output (node, graft_graph_ensure_value (graph, output_name));
  if (scopes != NULL)
    graft_node_add_metadata (node, GRAFT_TORCH_NAME_SCOPES_KEY, scopes);
  if (classes != NULL)
    graft_node_add_metadata (node, GRAFT_TORCH_CLASS_HIERARCHY_KEY, classes);
  return node;
}

/* Writes model as ONNX and reads it back: groups are built by the reader. */
static GraftModel *
write_and_read (GraftModel *model, GBytes **bytes_out)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = graft_onnx_model_to_bytes (model, &error);
  GraftModel *read;

  g_assert_no_error (error);
  read = graft_onnx_read_bytes (bytes, "memory.onnx", NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  if (bytes_out != NULL)
    *bytes_out = g_steal_pointer (&bytes);
  return read;
}

static GraftModel *
new_model_with_input (GraftGraph **graph_out, GraftValue **x_out)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("main");
  GraftValue *x = graft_graph_ensure_value (graph, "x");

  graft_model_set_opset (model, "onnx", 18);
  graft_model_set_ir_version (model, 9);
  x->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&x->shape, 1, (gint64[]) { 4 });
  graft_graph_add_input (graph, x);
  graft_model_set_graph (model, graph);
  *graph_out = graph;
  *x_out = x;
  return model;
}

static GraftGroup *
group_of (GraftGraph *graph, const char *node_name)
{
  return find_node (graph, node_name)->group;
}

/* NodeProto.metadata_props survive read → write → read in order, and
 * give the groups torch's TorchScript-based exporter would name: a second
 * call of a module within one call of its parent is "act_1". */
static void
test_node_metadata_round_trip (void)
{
  GraftGraph *graph, *read_graph;
  GraftValue *x;
  g_autoptr(GraftModel) model = new_model_with_input (&graph, &x);
  g_autoptr(GraftModel) read = NULL;
  g_autoptr(GraftModel) read_again = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GBytes) bytes_again = NULL;
  GraftNode *first;
  GraftGroup *group;

  first = add_scoped_relu (graph, x, "node_relu", "['', 'block', 'block.act', 'relu']",
                           "['m.Net', 'm.Block', 'torch.nn.modules.activation.ReLU', 'aten.relu.default']");
  graft_node_add_metadata (first, "namespace", ": m.Net/block: m.Block/block.act: ReLU/relu: aten.relu.default");
  add_scoped_relu (graph, x, "node_add", "['', 'block', 'add']", NULL);
  add_scoped_relu (graph, x, "node_relu_1", "['', 'block', 'block.act', 'relu_1']", NULL);
  add_scoped_relu (graph, x, "node_relu_2", "['', 'head', 'relu_2']", NULL);
  graft_graph_add_output (graph, graft_graph_lookup_value (graph, "node_relu_2_out"));

  read = write_and_read (model, &bytes);
  read_graph = graft_model_get_graph (read);
  first = find_node (read_graph, "node_relu");
  g_assert_cmpuint (graft_node_get_n_metadata (first), ==, 3);
  g_assert_cmpstr (g_ptr_array_index (first->metadata_keys, 0), ==, GRAFT_TORCH_NAME_SCOPES_KEY);
  g_assert_cmpstr (g_ptr_array_index (first->metadata_keys, 2), ==, "namespace");
  g_assert_cmpstr (graft_node_get_metadata (first, "namespace"), ==,
                   ": m.Net/block: m.Block/block.act: ReLU/relu: aten.relu.default");
  g_assert_null (graft_node_get_metadata (first, "no-such-key"));

  group = group_of (read_graph, "node_relu");
  g_assert_cmpstr (group->path, ==, "block.act");
  g_assert_cmpstr (group->class_name, ==, "torch.nn.modules.activation.ReLU");
  g_assert_cmpstr (group->parent->class_name, ==, "m.Block");
  g_assert_cmpstr (group_of (read_graph, "node_add")->path, ==, "block");
  g_assert_cmpstr (group_of (read_graph, "node_relu_1")->path, ==, "block.act_1");
  g_assert_cmpstr (group_of (read_graph, "node_relu_2")->path, ==, "head");
  g_assert_cmpuint (read_graph->root_group->total_nodes, ==, 4);
  g_assert_cmpuint (read_graph->root_group->nodes->len, ==, 0);

  /* Writing what was read gives the same file. */
  read_again = write_and_read (read, &bytes_again);
  g_assert_true (g_bytes_equal (bytes, bytes_again));
}

/* Metadata that is missing, malformed or not what the exporter writes
 * leaves the node where its name puts it (the root group here), and a
 * scoped name wins over metadata. */
static void
test_odd_torch_metadata (void)
{
  static const char *const odd_scopes[] = {
    "", "[", "['', 'a'", "['', 'a',]x", "['', 'a'] trailing", "[1, 2]", "('', 'a', 'op')",
    "['a', 'b', 'op']", "['']", "['', '', 'op']", "['', 'a\\x41', 'op']", "['', \"a', 'op']", "[]",
  };
  GraftGraph *graph, *read_graph;
  GraftValue *x;
  g_autoptr(GraftModel) model = new_model_with_input (&graph, &x);
  g_autoptr(GraftModel) read = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (odd_scopes); i++)
    {
      g_autofree char *name = g_strdup_printf ("odd_%u", i);
      add_scoped_relu (graph, x, name, odd_scopes[i], "['too', 'short']");
    }
  add_scoped_relu (graph, x, "no_metadata", NULL, "['m.Net', 'x']");
  add_scoped_relu (graph, x, "/named/Relu", "['', 'other', 'relu']", NULL);
  /* Quotes of both kinds and escapes, as Python's repr writes them. */
  add_scoped_relu (graph, x, "quoted", "[ '' , \"it's\", 'it\\'s.x\\\\y' ,'op' ]", "not a list");

  read = write_and_read (model, NULL);
  read_graph = graft_model_get_graph (read);
  for (guint i = 0; i < G_N_ELEMENTS (odd_scopes); i++)
    {
      g_autofree char *name = g_strdup_printf ("odd_%u", i);
      g_test_message ("%s: %s", name, odd_scopes[i]);
      g_assert_true (group_of (read_graph, name) == read_graph->root_group);
    }
  g_assert_true (group_of (read_graph, "no_metadata") == read_graph->root_group);
  g_assert_cmpstr (group_of (read_graph, "/named/Relu")->path, ==, "named");
  g_assert_cmpstr (group_of (read_graph, "quoted")->path, ==, "it's.x\\y");
  g_assert_null (group_of (read_graph, "quoted")->class_name);
}

/* onnxscript's rewriter gives a Conv fused with its BatchNorm the
 * BatchNorm's scope; the Conv's weight name puts it back in the Conv's
 * module, as in the TorchScript-based export. */
static void
test_fused_conv_scope (void)
{
  static const char *const weights[] = { "block.conv.weight", "elsewhere.conv.weight", "block.conv.bias" };
  GraftGraph *graph, *read_graph;
  GraftValue *x;
  g_autoptr(GraftModel) model = new_model_with_input (&graph, &x);
  g_autoptr(GraftModel) read = NULL;
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (weights); i++)
    {
      g_autofree char *name = g_strdup_printf ("node_Conv_%u", i);
      g_autofree char *output_name = g_strconcat (name, "_out", NULL);
      GraftNode *node = graft_graph_add_node (graph, NULL, "Conv", name);
      GraftTensor *tensor = graft_tensor_new (weights[i], GRAFT_DTYPE_FLOAT32, 3, (gint64[]) { 1, 1, 1 });
      g_autoptr(GBytes) data = g_bytes_new (&(float) { 1 }, sizeof (float));
      GraftValue *weight = graft_graph_ensure_value (graph, weights[i]);

      g_assert_true (graft_tensor_set_data (tensor, data, &error));
      graft_graph_add_initializer (graph, weight, tensor);
      graft_node_add_input (node, x);
      graft_node_add_input (node, weight);
      graft_node_add_output (node, graft_graph_ensure_value (graph, output_name));
      graft_node_add_metadata (node, GRAFT_TORCH_NAME_SCOPES_KEY, "['', 'block', 'block.bn', 'batch_norm']");
      graft_node_add_metadata (node, GRAFT_ONNXSCRIPT_RULE_NAME_KEY, "FuseBatchNormIntoConv");
    }

  read = write_and_read (model, NULL);
  read_graph = graft_model_get_graph (read);
  g_assert_cmpstr (group_of (read_graph, "node_Conv_0")->path, ==, "block.conv");
  /* A weight of another module, or not a weight: the recorded scope stays. */
  g_assert_cmpstr (group_of (read_graph, "node_Conv_1")->path, ==, "block.bn");
  g_assert_cmpstr (group_of (read_graph, "node_Conv_2")->path, ==, "block.bn");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  fixture_dir = graft_test_generate_fixtures ("tests/onnx/make-reader-fixtures.py", "tests/fixtures-generated/onnx", NULL);

  g_test_add_func ("/onnx/reader/dims-and-metadata", test_dims_and_metadata);
  g_test_add_func ("/onnx/reader/every-attribute-type", test_every_attribute_type);
  g_test_add_func ("/onnx/reader/typed-tensor-fields", test_typed_tensor_fields);
  g_test_add_func ("/onnx/reader/raw-data-not-copied", test_raw_data_not_copied);
  g_test_add_func ("/onnx/reader/raw-data-copied-aligned-from-file", test_raw_data_copied_aligned_from_file);
  g_test_add_func ("/onnx/reader/subgraph-outer-scope", test_subgraph_outer_scope);
  g_test_add_func ("/onnx/reader/function", test_function);
  g_test_add_func ("/onnx/reader/external-data", test_external_good);
  g_test_add_func ("/onnx/reader/external-data-saved-by-onnx", test_external_saved_by_onnx);
  g_test_add_func ("/onnx/reader/external-data-refused", test_external_refused);
  g_test_add_func ("/onnx/reader/sample-model", test_sample_model);
  g_test_add_func ("/onnx/reader/node-metadata-round-trip", test_node_metadata_round_trip);
  g_test_add_func ("/onnx/reader/odd-torch-metadata", test_odd_torch_metadata);
  g_test_add_func ("/onnx/reader/fused-conv-scope", test_fused_conv_scope);
  g_test_add_func ("/onnx/loader/sniff", test_sniff);
  g_test_add_func ("/onnx/loader/pytorch-kinds-routed", test_pytorch_kinds_routed);
  g_test_add_func ("/onnx/loader/errors", test_loader_errors);
  g_test_add_func ("/onnx/loader/foreign-formats", test_loader_foreign_formats);
  g_test_add_func ("/onnx/loader/progress-and-cancel", test_progress_and_cancel);
  return g_test_run ();
}
