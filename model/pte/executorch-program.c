#include "pte/executorch-program.h"
#include "pte/executorch-ops.h"
#include "pte/flatbuffer.h"
#include "pytorch/aten-schemas.h"
#include "ir/file-bytes.h"
#include "ir/model-error.h"

#include <string.h>

/* Field slots of schema/program.fbs (a union takes two: type, value). */
enum { PROGRAM_VERSION, PROGRAM_EXECUTION_PLAN, PROGRAM_CONSTANT_BUFFER, PROGRAM_BACKEND_DELEGATE_DATA,
       PROGRAM_SEGMENTS, PROGRAM_CONSTANT_SEGMENT, PROGRAM_MUTABLE_DATA_SEGMENTS };
enum { PLAN_NAME, PLAN_CONTAINER_META_TYPE, PLAN_VALUES, PLAN_INPUTS, PLAN_OUTPUTS, PLAN_CHAINS, PLAN_OPERATORS,
       PLAN_DELEGATES };
enum { EVALUE_TYPE, EVALUE_VALUE };
enum { TENSOR_SCALAR_TYPE, TENSOR_STORAGE_OFFSET, TENSOR_SIZES, TENSOR_DIM_ORDER, TENSOR_REQUIRES_GRAD,
       TENSOR_DATA_BUFFER_IDX, TENSOR_ALLOCATION_INFO, TENSOR_LAYOUT, TENSOR_SHAPE_DYNAMISM,
       TENSOR_EXTRA_INFO };
enum { EXTRA_MUTABLE_DATA_SEGMENTS_IDX, EXTRA_FULLY_QUALIFIED_NAME, EXTRA_LOCATION };
enum { CHAIN_INPUTS, CHAIN_OUTPUTS, CHAIN_INSTRUCTIONS };
enum { INSTRUCTION_TYPE, INSTRUCTION_ARGS };
enum { OPERATOR_NAME, OPERATOR_OVERLOAD };
enum { DELEGATE_ID, DELEGATE_PROCESSED, DELEGATE_COMPILE_SPECS };
enum { SEGMENT_OFFSET, SEGMENT_SIZE };
enum { SUBSEGMENT_SEGMENT_INDEX, SUBSEGMENT_OFFSETS };

/* KernelTypes */
typedef enum {
  KIND_NONE, KIND_NULL, KIND_INT, KIND_BOOL, KIND_DOUBLE, KIND_TENSOR, KIND_STRING, KIND_INT_LIST,
  KIND_DOUBLE_LIST, KIND_BOOL_LIST, KIND_TENSOR_LIST, KIND_OPTIONAL_TENSOR_LIST, KIND_LAST = KIND_OPTIONAL_TENSOR_LIST
} ValueKind;

static const char *const kind_names[] = {
  "NONE", "Null", "Int", "Bool", "Double", "Tensor", "String", "IntList", "DoubleList", "BoolList", "TensorList",
  "OptionalTensorList",
};

/* InstructionArguments */
enum { INSTRUCTION_KERNEL_CALL = 1, INSTRUCTION_DELEGATE_CALL, INSTRUCTION_MOVE_CALL, INSTRUCTION_JUMP_FALSE_CALL,
       INSTRUCTION_FREE_CALL };

/* The largest rank a tensor of the program may have (ExecuTorch's own
 * kTensorDimensionLimit is 16). */
#define MAX_RANK 16

typedef struct {
  ValueKind kind;
  GraftFlatbufferTable table;   /* the union's table */
} ProgramValue;

/* A planned tensor an instruction wrote: ExecuTorch makes a static view
 * (flatten, a view_copy it removed) by planning the view's tensor at the
 * same bytes, without an instruction, so reading a tensor nothing wrote
 * reads what was last written there. */
typedef struct {
  guint32 memory_id;
  guint64 start, end;
  GraftValue *value;
} MemoryWrite;

typedef struct {
  const char *path;
  GBytes *file;
  const guint8 *data;
  gsize size;
  GraftFlatbuffer fb;
  guint64 segment_base;         /* where segment offsets start; 0 without an extended header */
  GraftFlatbufferTable program;
  GraftFlatbufferVector constant_buffer, segments, mutable_data_segments, delegate_data;
  GraftFlatbufferTable constant_segment;

  GraftFlatbufferTable plan;
  GraftFlatbufferVector operators, delegates;
  guint n_values;
  ProgramValue *values;
  GraftValue **current;         /* the IR value an ExecuTorch value holds now; NULL: none yet */
  GHashTable *constants;        /* "segment:index" → GraftValue*, shared by values of one buffer */
  GHashTable *mutable_buffers;  /* value index → the initializer of its initial state */
  GArray *writes;               /* MemoryWrite, in instruction order */
  GraftModel *model;
  GraftGraph *graph;
} Reader;

static gboolean
fail (GError **error, GraftModelError code, const Reader *r, const char *format, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (GError **error, GraftModelError code, const Reader *r, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, code, "%s: %s", r->path, message);
  return FALSE;
}

/* ------------------------------------------------------------------ header */

/* The extended header ExecuTorch inserts after the identifier when the
 * program has segments (schema/extended_header.h): "eh00", uint32 header
 * length, uint64 program size, uint64 segment base offset. */
static gboolean
read_extended_header (Reader *r, GError **error)
{
  r->fb.data = r->data;
  r->fb.size = r->size;
  r->fb.path = r->path;
  if (r->size < 16 || memcmp (r->data + 8, "eh00", 4) != 0)
    return TRUE;
  guint32 header_length = graft_flatbuffer_get_u32 (r->data + 12);
  if (header_length < 24 || r->size < 8 + (gsize) header_length)
    return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, r, "the extended header says it is %u bytes long, the file has "
                 "%" G_GSIZE_FORMAT " bytes after its start", header_length, r->size - MIN (r->size, 8));
  guint64 program_size = graft_flatbuffer_get_u64 (r->data + 16);
  guint64 segment_base = graft_flatbuffer_get_u64 (r->data + 24);
  if (program_size < 8 + (guint64) header_length || program_size > r->size)
    return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, r, "the extended header's program size %" G_GUINT64_FORMAT
                 " is out of range (the file has %" G_GSIZE_FORMAT " bytes)", program_size, r->size);
  if (segment_base > r->size)
    return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, r, "the segments start at byte %" G_GUINT64_FORMAT
                 ", past the end of the file (%" G_GSIZE_FORMAT " bytes): truncated?", segment_base, r->size);
  r->fb.size = program_size;
  r->segment_base = segment_base;
  return TRUE;
}

/* ------------------------------------------------------------------ data */

/* Where segment index lies in the file. */
static gboolean
segment_range (Reader *r, guint32 index, gsize *start, gsize *size, GError **error)
{
  GraftFlatbufferTable segment;
  guint64 offset, length;
  if (index >= r->segments.length)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "segment %u does not exist (the program has %u)", index,
                 r->segments.length);
  if (!graft_flatbuffer_vector_table (&r->fb, &r->segments, index, "a data segment", &segment, error) ||
      !graft_flatbuffer_read_u64 (&r->fb, &segment, SEGMENT_OFFSET, "a segment's offset", 0, &offset, error) ||
      !graft_flatbuffer_read_u64 (&r->fb, &segment, SEGMENT_SIZE, "a segment's size", 0, &length, error))
    return FALSE;
  if (r->segment_base == 0 || offset > r->size - r->segment_base || length > r->size - r->segment_base - offset)
    return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, r, "segment %u (%" G_GUINT64_FORMAT " bytes at %"
                 G_GUINT64_FORMAT " after byte %" G_GUINT64_FORMAT ") lies outside the file (%" G_GSIZE_FORMAT
                 " bytes)%s", index, length, offset, r->segment_base, r->size,
                 r->segment_base == 0 ? "; the file has no extended header to place it" : "");
  *start = r->segment_base + offset;
  *size = length;
  return TRUE;
}

/* nbytes at entry index of a SubsegmentOffsets table. */
static GBytes *
subsegment_bytes (Reader *r, const GraftFlatbufferTable *subsegment, guint32 index, gsize nbytes, const char *what,
                  GError **error)
{
  guint32 segment_index;
  GraftFlatbufferVector offsets;
  gsize start, size;
  if (!graft_flatbuffer_read_u32 (&r->fb, subsegment, SUBSEGMENT_SEGMENT_INDEX, "a subsegment's segment", 0,
                                  &segment_index, error) ||
      !graft_flatbuffer_read_vector (&r->fb, subsegment, SUBSEGMENT_OFFSETS, 8, "a subsegment's offsets", &offsets,
                                     error))
    return NULL;
  if (index >= offsets.length)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s: data buffer %u does not exist (the segment has %u)", what,
            index, offsets.length);
      return NULL;
    }
  if (!segment_range (r, segment_index, &start, &size, error))
    return NULL;
  guint64 offset = graft_flatbuffer_vector_u64 (&r->fb, &offsets, index);
  if (offset > size || nbytes > size - offset)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s: %" G_GSIZE_FORMAT " bytes at %" G_GUINT64_FORMAT
            " run past the end of segment %u (%" G_GSIZE_FORMAT " bytes)", what, nbytes, offset, segment_index, size);
      return NULL;
    }
  return g_bytes_new_from_bytes (r->file, start + offset, nbytes);
}

/* The bytes of a constant tensor: the inline constant_buffer of files
 * before executorch 0.4, else the constant segment. */
static GBytes *
constant_bytes (Reader *r, guint32 index, gsize nbytes, const char *what, GError **error)
{
  if (r->constant_buffer.length > 0)
    {
      GraftFlatbufferTable buffer;
      GraftFlatbufferVector storage;
      if (index >= r->constant_buffer.length)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s: constant buffer %u does not exist (the program has %u)",
                what, index, r->constant_buffer.length);
          return NULL;
        }
      if (!graft_flatbuffer_vector_table (&r->fb, &r->constant_buffer, index, "a constant buffer", &buffer, error) ||
          !graft_flatbuffer_read_vector (&r->fb, &buffer, 0, 1, "a constant buffer's storage", &storage, error))
        return NULL;
      if (nbytes > storage.length)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s needs %" G_GSIZE_FORMAT " bytes, constant buffer %u has %u",
                what, nbytes, index, storage.length);
          return NULL;
        }
      return g_bytes_new_from_bytes (r->file, storage.position, nbytes);
    }
  if (!graft_flatbuffer_table_present (&r->constant_segment))
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s is constant but the program has no constant data", what);
      return NULL;
    }
  return subsegment_bytes (r, &r->constant_segment, index, nbytes, what, error);
}

/* ------------------------------------------------------------------ values */

/* ExecuTorch's ScalarType is c10's, except that a Bits16 tensor is
 * read as the raw 16-bit values it holds. */
static GraftDType
dtype_from_scalar_type (guint8 scalar_type)
{
  if (scalar_type == 22)
    return GRAFT_DTYPE_UINT16;
  return graft_dtype_from_torch_scalar_type (scalar_type);
}

static gboolean
read_values (Reader *r, GError **error)
{
  GraftFlatbufferVector values;
  if (!graft_flatbuffer_read_vector (&r->fb, &r->plan, PLAN_VALUES, 4, "the plan's values", &values, error))
    return FALSE;
  r->n_values = values.length;
  r->values = g_new0 (ProgramValue, MAX (values.length, 1));
  r->current = g_new0 (GraftValue *, MAX (values.length, 1));
  for (guint i = 0; i < values.length; i++)
    {
      GraftFlatbufferTable evalue;
      guint8 kind;
      if (!graft_flatbuffer_vector_table (&r->fb, &values, i, "a value", &evalue, error) ||
          !graft_flatbuffer_read_u8 (&r->fb, &evalue, EVALUE_TYPE, "a value's type", 0, &kind, error) ||
          !graft_flatbuffer_read_table (&r->fb, &evalue, EVALUE_VALUE, "a value's payload", &r->values[i].table,
                                        error))
        return FALSE;
      if (kind > KIND_LAST)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "value %u has the unknown type %u", i, kind);
      if (kind != KIND_NONE && kind != KIND_NULL && !graft_flatbuffer_table_present (&r->values[i].table))
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "value %u (%s) has no payload", i, kind_names[kind]);
      r->values[i].kind = kind;
    }
  return TRUE;
}

static gboolean
check_index (Reader *r, gint64 index, const char *what, GError **error)
{
  if (index < 0 || index >= r->n_values)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s refers to value %" G_GINT64_FORMAT
                 ", which does not exist (the plan has %u)", what, index, r->n_values);
  return TRUE;
}

typedef struct {
  GraftDType dtype;
  int rank;
  gint64 dims[MAX_RANK];
  guint32 data_buffer;
  gboolean planned;              /* allocation_info: memory-planned (mutable) */
  guint32 memory_id;
  guint64 memory_offset;
  guint64 nbytes;
  GraftFlatbufferTable extra;
  guint8 dynamism;
} TensorInfo;

static gboolean
read_tensor (Reader *r, guint index, TensorInfo *t, GError **error)
{
  const GraftFlatbufferTable *table = &r->values[index].table;
  GraftFlatbufferTable allocation;
  GraftFlatbufferVector sizes;
  guint8 scalar_type;
  gint64 numel = 1;
  if (!graft_flatbuffer_read_u8 (&r->fb, table, TENSOR_SCALAR_TYPE, "a tensor's scalar type", 0, &scalar_type,
                                 error) ||
      !graft_flatbuffer_read_vector (&r->fb, table, TENSOR_SIZES, 4, "a tensor's sizes", &sizes, error) ||
      !graft_flatbuffer_read_u32 (&r->fb, table, TENSOR_DATA_BUFFER_IDX, "a tensor's data buffer", 0,
                                  &t->data_buffer, error) ||
      !graft_flatbuffer_read_table (&r->fb, table, TENSOR_ALLOCATION_INFO, "a tensor's allocation", &allocation,
                                    error) ||
      !graft_flatbuffer_read_u8 (&r->fb, table, TENSOR_SHAPE_DYNAMISM, "a tensor's shape dynamism", 0, &t->dynamism,
                                 error) ||
      !graft_flatbuffer_read_table (&r->fb, table, TENSOR_EXTRA_INFO, "a tensor's extra info", &t->extra, error))
    return FALSE;
  t->dtype = dtype_from_scalar_type (scalar_type);
  if (t->dtype == GRAFT_DTYPE_UNDEFINED)
    return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "value %u is a tensor of ExecuTorch scalar type %u, "
                 "which Graft does not know", index, scalar_type);
  if (sizes.length > MAX_RANK)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "value %u is a tensor of rank %u (at most %d)", index,
                 sizes.length, MAX_RANK);
  t->rank = sizes.length;
  for (guint d = 0; d < sizes.length; d++)
    {
      t->dims[d] = graft_flatbuffer_vector_i32 (&r->fb, &sizes, d);
      gint64 nbytes;
      if (t->dims[d] < 0 || !graft_dim_mul_checked (numel, t->dims[d], &numel) ||
          !graft_dim_mul_checked (numel, (gint64) graft_dtype_get_size (t->dtype), &nbytes))
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "value %u: tensor size %" G_GINT64_FORMAT " of dim %u is "
                     "negative or the tensor's size overflows", index, t->dims[d], d);
    }
  t->planned = graft_flatbuffer_table_present (&allocation);
  t->nbytes = (guint64) numel * graft_dtype_get_size (t->dtype);
  guint32 low = 0, high = 0;
  t->memory_id = 0;
  if (!graft_flatbuffer_read_u32 (&r->fb, &allocation, 0, "an allocation's memory", 0, &t->memory_id, error) ||
      !graft_flatbuffer_read_u32 (&r->fb, &allocation, 1, "an allocation's offset", 0, &low, error) ||
      !graft_flatbuffer_read_u32 (&r->fb, &allocation, 2, "an allocation's offset", 0, &high, error))
    return FALSE;
  t->memory_offset = (guint64) low | ((guint64) high << 32);
  return TRUE;
}

static GraftValue *
new_value (Reader *r, const char *name)
{
  GraftValue *value = graft_graph_lookup_value (r->graph, name) ? graft_graph_new_anonymous_value (r->graph, name)
                                                                  : graft_graph_ensure_value (r->graph, name);
  return value;
}

/* A tensor of static shape has its sizes; one of dynamic shape only
 * bounds (DYNAMIC_BOUND) or not even that (DYNAMIC_UNBOUND), for every
 * dim alike: the program does not say which dims vary. Its dims are
 * unknown, and a graph input's are symbols ("input_0_d0") whose range
 * is the bound, so that the runtime takes any size up to it. */
static void
describe_tensor_value (Reader *r, GraftValue *value, const TensorInfo *t, gboolean is_input)
{
  value->kind = GRAFT_VALUE_TENSOR;
  value->dtype = t->dtype;
  graft_shape_clear (&value->shape);
  if (t->dynamism == 0)
    {
      graft_shape_init_fixed (&value->shape, t->rank, t->dims);
      return;
    }
  graft_shape_init (&value->shape, t->rank);
  for (int d = 0; is_input && d < t->rank; d++)
    {
      g_autofree char *symbol = g_strdup_printf ("%s_d%d", value->name, d);
      value->shape.dims[d] = graft_dim_symbolic (g_intern_string (symbol));
      graft_model_set_dim_range (r->model, symbol, 0, t->dynamism == 1 ? t->dims[d] : -1);
    }
}

/* A constant tensor (or a mutable one with an initial state) as an
 * initializer, one per data buffer however many values share it. */
static GraftValue *
constant_value (Reader *r, guint index, const TensorInfo *t, GError **error)
{
  g_autofree char *fqn = NULL;
  guint8 location = 0;
  guint64 mutable_segment = 0;
  if (!graft_flatbuffer_read_string (&r->fb, &t->extra, EXTRA_FULLY_QUALIFIED_NAME, "a tensor's name", &fqn, error) ||
      !graft_flatbuffer_read_u8 (&r->fb, &t->extra, EXTRA_LOCATION, "a tensor's data location", 0, &location, error) ||
      !graft_flatbuffer_read_u64 (&r->fb, &t->extra, EXTRA_MUTABLE_DATA_SEGMENTS_IDX, "a tensor's mutable segment", 0,
                                  &mutable_segment, error))
    return NULL;
  if (location == 1)
    {
      fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "constant '%s' (value %u) is stored outside the program, in a "
            ".ptd data file, which Graft does not read yet", fqn ? fqn : "", index);
      return NULL;
    }
  g_autofree char *key = g_strdup_printf ("%s:%" G_GUINT64_FORMAT ":%u", t->planned ? "mutable" : "constant",
                                          t->planned ? mutable_segment : 0, t->data_buffer);
  GraftValue *value = g_hash_table_lookup (r->constants, key);
  if (value != NULL)
    return value;

  g_autofree char *fallback = g_strdup_printf ("%s_%u", t->planned ? "buffer" : "constant", t->data_buffer);
  const char *name = fqn && *fqn ? fqn : fallback;
  g_autofree char *what = g_strdup_printf ("tensor '%s' (value %u)", name, index);
  gint64 numel = 1;
  for (int d = 0; d < t->rank; d++)
    numel *= t->dims[d];
  gsize nbytes = (gsize) numel * graft_dtype_get_size (t->dtype);
  g_autoptr(GBytes) data = NULL;
  if (t->planned)
    {
      GraftFlatbufferTable subsegment;
      if (mutable_segment >= r->mutable_data_segments.length)
        {
          fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s: mutable data segment %" G_GUINT64_FORMAT " does not exist "
                "(the program has %u)", what, mutable_segment, r->mutable_data_segments.length);
          return NULL;
        }
      if (!graft_flatbuffer_vector_table (&r->fb, &r->mutable_data_segments, mutable_segment,
                                          "a mutable data segment", &subsegment, error))
        return NULL;
      data = subsegment_bytes (r, &subsegment, t->data_buffer, nbytes, what, error);
    }
  else
    data = constant_bytes (r, t->data_buffer, nbytes, what, error);
  if (data == NULL)
    return NULL;
  value = new_value (r, name);
  describe_tensor_value (r, value, t, FALSE);
  g_autoptr(GraftTensor) tensor = graft_tensor_new (value->name, t->dtype, t->rank, t->dims);
  if (!graft_tensor_set_data (tensor, data, error))
    return NULL;
  graft_graph_add_initializer (r->graph, value, g_steal_pointer (&tensor));
  g_hash_table_insert (r->constants, g_steal_pointer (&key), value);
  return value;
}

/* index's tensor as a view of the value planned at its bytes: an
 * aten::view to its sizes. */
static GraftValue *
alias_view (Reader *r, GraftValue *base, const TensorInfo *t)
{
  g_autofree char *name = g_strdup_printf ("view_of_%s", base->name);
  GraftNode *node = graft_graph_add_node (r->graph, "aten", "view", name);
  node->doc_string = g_strdup ("no instruction of the program: ExecuTorch plans this view at the bytes of its source");
  graft_node_add_input (node, base);
  graft_node_add_attribute (node, graft_attribute_new_ints ("arg1", t->dims, t->rank));
  GraftValue *value = new_value (r, name);
  describe_tensor_value (r, value, t, FALSE);
  graft_node_add_output (node, value);
  return value;
}

static void
record_write (Reader *r, const TensorInfo *t, GraftValue *value)
{
  if (!t->planned || t->nbytes == 0)
    return;
  MemoryWrite w = { t->memory_id, t->memory_offset, t->memory_offset + t->nbytes, value };
  g_array_append_val (r->writes, w);
}

/* The IR value that reading ExecuTorch value index gives: what an earlier
 * instruction wrote to it, an input, or a constant. NULL with error
 * when there is none. */
static GraftValue *
read_value (Reader *r, guint index, const char *user, GError **error)
{
  if (r->current[index] != NULL)
    return r->current[index];
  if (r->values[index].kind != KIND_TENSOR)
    {
      fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s reads value %u (%s), which nothing computed", user, index,
            kind_names[r->values[index].kind]);
      return NULL;
    }
  TensorInfo t;
  if (!read_tensor (r, index, &t, error))
    return NULL;
  if (t.data_buffer > 0)
    {
      GraftValue *constant = constant_value (r, index, &t, error);
      if (constant != NULL && t.planned)
        g_hash_table_insert (r->mutable_buffers, GUINT_TO_POINTER (index), constant);
      return r->current[index] = constant;
    }
  if (t.planned && t.nbytes > 0)
    for (guint i = r->writes->len; i > 0; i--)
      {
        const MemoryWrite *w = &g_array_index (r->writes, MemoryWrite, i - 1);
        if (w->memory_id != t.memory_id || w->end <= t.memory_offset || w->start >= t.memory_offset + t.nbytes)
          continue;
        if (w->start != t.memory_offset || w->end != t.memory_offset + t.nbytes)
          break;
        return r->current[index] = alias_view (r, w->value, &t);
      }
  /* A planned tensor read before anything wrote it: a mutated buffer
   * exported without its initial value ("meaningless initial state",
   * says ExecuTorch, unless InitializedMutableBufferPass kept it). No
   * producer: the graph check and the runtime name it. */
  g_autofree char *name = g_strdup_printf ("uninitialized_state_%u", index);
  GraftValue *value = new_value (r, name);
  value->doc_string = g_strdup ("read before any instruction writes it: a mutated buffer the program keeps no "
                                "initial value of");
  describe_tensor_value (r, value, &t, FALSE);
  return r->current[index] = value;
}

/* ------------------------------------------------------------------ arguments */

typedef struct {
  Reader *r;
  GraftNode *node;
  guint position;              /* the functional op's argument position */
} Arguments;

static gboolean
int_is_constant (Reader *r, guint index)
{
  return r->values[index].kind == KIND_INT && r->current[index] == NULL;
}

static gboolean
read_int (Reader *r, guint index, gint64 *value, GError **error)
{
  return graft_flatbuffer_read_i64 (&r->fb, &r->values[index].table, 0, "an Int", 0, value, error);
}

static GraftNode *
add_list_node (Reader *r, GraftNode *consumer, guint position)
{
  g_autofree char *name = g_strdup_printf ("%s_arg%u", consumer->name, position);
  return graft_graph_add_node (r->graph, "prim", "ListConstruct", name);
}

static void
add_list_output (Reader *r, GraftNode *list, GraftNode *consumer)
{
  GraftValue *out = new_value (r, list->name);
  out->kind = GRAFT_VALUE_SEQUENCE;
  graft_node_add_output (list, out);
  graft_node_add_input (consumer, out);
}

/* An IntList: its items are indices of Int values, some of which a
 * symbolic-size instruction may compute. */
static gboolean
add_int_list (Arguments *a, const char *attribute, GraftFlatbufferVector *items, GError **error)
{
  Reader *r = a->r;
  gboolean all_constant = TRUE;
  for (guint i = 0; i < items->length; i++)
    {
      gint64 item = graft_flatbuffer_vector_i64 (&r->fb, items, i);
      if (!check_index (r, item, "an IntList", error))
        return FALSE;
      if (r->values[item].kind != KIND_INT)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "an IntList of %s holds value %" G_GINT64_FORMAT
                     " (%s), not an Int", a->node->name, item, kind_names[r->values[item].kind]);
      all_constant = all_constant && int_is_constant (r, item);
    }
  if (all_constant)
    {
      g_autofree gint64 *ints = g_new0 (gint64, items->length + 1);
      for (guint i = 0; i < items->length; i++)
        if (!read_int (r, graft_flatbuffer_vector_i64 (&r->fb, items, i), &ints[i], error))
          return FALSE;
      graft_node_add_attribute (a->node, graft_attribute_new_ints (attribute, ints, items->length));
      return TRUE;
    }
  GraftNode *list = add_list_node (r, a->node, a->position);
  for (guint i = 0; i < items->length; i++)
    {
      gint64 item = graft_flatbuffer_vector_i64 (&r->fb, items, i), constant;
      if (int_is_constant (r, item))
        {
          g_autofree char *name = g_strdup_printf ("arg%u", i);
          if (!read_int (r, item, &constant, error))
            return FALSE;
          graft_node_add_attribute (list, graft_attribute_new_int (name, constant));
        }
      else
        graft_node_add_input (list, r->current[item]);
    }
  add_list_output (r, list, a->node);
  return TRUE;
}

static gboolean
add_tensor_list (Arguments *a, ValueKind kind, GraftFlatbufferVector *items, GError **error)
{
  Reader *r = a->r;
  GraftNode *list = add_list_node (r, a->node, a->position);
  for (guint i = 0; i < items->length; i++)
    {
      gint32 item = graft_flatbuffer_vector_i32 (&r->fb, items, i);
      if (!check_index (r, item, "a TensorList", error))
        return FALSE;
      if (kind == KIND_OPTIONAL_TENSOR_LIST && r->values[item].kind == KIND_NULL)
        {
          g_autofree char *name = g_strdup_printf ("arg%u", i);
          graft_node_add_attribute (list, graft_attribute_new (name, GRAFT_ATTR_NONE));
          continue;
        }
      if (r->values[item].kind != KIND_TENSOR)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "a TensorList of %s holds value %d (%s), not a Tensor",
                     a->node->name, item, kind_names[r->values[item].kind]);
      GraftValue *value = read_value (r, item, a->node->name, error);
      if (value == NULL)
        return FALSE;
      graft_node_add_input (list, value);
    }
  add_list_output (r, list, a->node);
  return TRUE;
}

/* Appends ExecuTorch value index as the node's argument at a->position:
 * a tensor or a computed scalar as an input, a constant as an attribute. */
static gboolean
add_argument (Arguments *a, guint index, GError **error)
{
  Reader *r = a->r;
  const GraftFlatbufferTable *table = &r->values[index].table;
  g_autofree char *attribute = g_strdup_printf ("arg%u", a->position);
  gint64 i64;
  double f64;
  guint8 u8;
  char *text;
  GraftFlatbufferVector items;

  if (r->current[index] != NULL || r->values[index].kind == KIND_TENSOR)
    {
      GraftValue *value = read_value (r, index, a->node->name, error);
      if (value == NULL)
        return FALSE;
      graft_node_add_input (a->node, value);
      return TRUE;
    }
  switch (r->values[index].kind)
    {
    case KIND_NONE:
    case KIND_NULL:
      graft_node_add_attribute (a->node, graft_attribute_new (attribute, GRAFT_ATTR_NONE));
      return TRUE;
    case KIND_INT:
      if (!read_int (r, index, &i64, error))
        return FALSE;
      graft_node_add_attribute (a->node, graft_attribute_new_int (attribute, i64));
      return TRUE;
    case KIND_BOOL:
      {
        if (!graft_flatbuffer_read_u8 (&r->fb, table, 0, "a Bool", 0, &u8, error))
          return FALSE;
        GraftAttribute *b = graft_attribute_new (attribute, GRAFT_ATTR_BOOL);
        b->i = u8 != 0;
        graft_node_add_attribute (a->node, b);
        return TRUE;
      }
    case KIND_DOUBLE:
      if (!graft_flatbuffer_read_f64 (&r->fb, table, 0, "a Double", 0, &f64, error))
        return FALSE;
      graft_node_add_attribute (a->node, graft_attribute_new_float (attribute, f64));
      return TRUE;
    case KIND_STRING:
      if (!graft_flatbuffer_read_string (&r->fb, table, 0, "a String", &text, error))
        return FALSE;
      graft_node_add_attribute (a->node, graft_attribute_new_string (attribute, text ? text : ""));
      g_free (text);
      return TRUE;
    case KIND_INT_LIST:
      return graft_flatbuffer_read_vector (&r->fb, table, 0, 8, "an IntList", &items, error) &&
             add_int_list (a, attribute, &items, error);
    case KIND_DOUBLE_LIST:
    case KIND_BOOL_LIST:
      {
        gboolean doubles = r->values[index].kind == KIND_DOUBLE_LIST;
        if (!graft_flatbuffer_read_vector (&r->fb, table, 0, doubles ? 8 : 1, "a list", &items, error))
          return FALSE;
        g_autofree double *floats = g_new0 (double, items.length + 1);
        g_autofree gint64 *ints = g_new0 (gint64, items.length + 1);
        for (guint i = 0; i < items.length; i++)
          if (doubles)
            floats[i] = graft_flatbuffer_vector_f64 (&r->fb, &items, i);
          else
            ints[i] = graft_flatbuffer_vector_u8 (&r->fb, &items, i) != 0;
        graft_node_add_attribute (a->node, doubles ? graft_attribute_new_floats (attribute, floats, items.length)
                                                   : graft_attribute_new_ints (attribute, ints, items.length));
        return TRUE;
      }
    case KIND_TENSOR_LIST:
    case KIND_OPTIONAL_TENSOR_LIST:
      return graft_flatbuffer_read_vector (&r->fb, table, 0, 4, "a TensorList", &items, error) &&
             add_tensor_list (a, r->values[index].kind, &items, error);
    default:
      return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s: argument value %u has no value", a->node->name, index);
    }
}

/* ------------------------------------------------------------------ instructions */

/* ExecuTorch's emitter appends an op's result after its arguments: the
 * out argument itself (or, for several, a TensorList of them) for an out
 * variant, a fresh value for a functional op (sym_size, et_view). So the
 * results are the last argument, and the out arguments among the others
 * are results too, not inputs; except an in-place op's self (copy_,
 * index_put_: the result is the first argument), which it also reads. */
static gboolean
split_results (Reader *r, const GraftFlatbufferVector *args, const char *user, gboolean in_place, GArray *inputs,
               GArray *results, GError **error)
{
  if (args->length == 0)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "%s has no arguments, not even its result", user);
  for (guint i = 0; i < args->length; i++)
    if (!check_index (r, graft_flatbuffer_vector_i32 (&r->fb, args, i), user, error))
      return FALSE;
  gint32 last = graft_flatbuffer_vector_i32 (&r->fb, args, args->length - 1);
  if (r->values[last].kind == KIND_TENSOR_LIST)
    {
      GraftFlatbufferVector items;
      if (!graft_flatbuffer_read_vector (&r->fb, &r->values[last].table, 0, 4, "a TensorList", &items, error))
        return FALSE;
      for (guint i = 0; i < items.length; i++)
        {
          gint32 item = graft_flatbuffer_vector_i32 (&r->fb, &items, i);
          if (!check_index (r, item, user, error))
            return FALSE;
          g_array_append_val (results, item);
        }
    }
  else
    g_array_append_val (results, last);
  for (guint i = 0; i + 1 < args->length; i++)
    {
      gint32 arg = graft_flatbuffer_vector_i32 (&r->fb, args, i);
      gboolean is_result = FALSE;
      for (guint k = 0; k < results->len && !is_result; k++)
        is_result = g_array_index (results, gint32, k) == arg;
      if (in_place && i == 0)
        is_result = FALSE;
      if (!is_result)
        g_array_append_val (inputs, arg);
    }
  return TRUE;
}

/* A new IR value that ExecuTorch value index holds from now on (an
 * input, or an instruction's result), described by the program. */
static GraftValue *
define_value (Reader *r, gint32 index, const char *name, gboolean is_input, GError **error)
{
  GraftValue *value = new_value (r, name);
  if (r->values[index].kind == KIND_TENSOR)
    {
      TensorInfo t;
      if (!read_tensor (r, index, &t, error))
        return NULL;
      describe_tensor_value (r, value, &t, is_input);
      record_write (r, &t, value);
    }
  else
    {
      value->kind = GRAFT_VALUE_SCALAR;
      value->dtype = r->values[index].kind == KIND_DOUBLE ? GRAFT_DTYPE_FLOAT64
                     : r->values[index].kind == KIND_BOOL ? GRAFT_DTYPE_BOOL : GRAFT_DTYPE_INT64;
      graft_shape_clear (&value->shape);
      graft_shape_init (&value->shape, 0);
    }
  r->current[index] = value;
  return value;
}

/* Makes index's value the next output of node (a fresh IR value when an
 * earlier instruction already wrote it: the IR is single-assignment). */
static gboolean
add_result (Reader *r, GraftNode *node, gint32 index, guint slot, GError **error)
{
  g_autofree char *name = slot == 0 ? g_strdup (node->name) : g_strdup_printf ("%s.%u", node->name, slot);
  GraftValue *value = define_value (r, index, name, FALSE, error);
  if (value == NULL)
    return FALSE;
  graft_node_add_output (node, value);
  return TRUE;
}

static gboolean
read_kernel_call (Reader *r, guint instruction, const GraftFlatbufferTable *call, GError **error)
{
  gint32 op_index;
  GraftFlatbufferVector args;
  GraftFlatbufferTable operator;
  g_autofree char *name = NULL, *overload = NULL;
  if (!graft_flatbuffer_read_i32 (&r->fb, call, 0, "a kernel call's operator", 0, &op_index, error) ||
      !graft_flatbuffer_read_vector (&r->fb, call, 1, 4, "a kernel call's arguments", &args, error))
    return FALSE;
  if (op_index < 0 || (guint32) op_index >= r->operators.length)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "instruction %u calls operator %d, which does not exist "
                 "(the plan has %u)", instruction, op_index, r->operators.length);
  if (!graft_flatbuffer_vector_table (&r->fb, &r->operators, op_index, "an operator", &operator, error) ||
      !graft_flatbuffer_read_string (&r->fb, &operator, OPERATOR_NAME, "an operator's name", &name, error) ||
      !graft_flatbuffer_read_string (&r->fb, &operator, OPERATOR_OVERLOAD, "an operator's overload", &overload, error))
    return FALSE;
  if (name == NULL || strstr (name, "::") == NULL)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "operator %d is named '%s', not namespace::name", op_index,
                 name ? name : "");

  GraftExecutorchOp op;
  graft_executorch_op_translate (name, overload, &op);
  g_autofree char *node_name = g_strdup_printf ("%s_%u", op.op_type, instruction);
  GraftNode *node = graft_graph_add_node (r->graph, op.domain, op.op_type, node_name);
  g_autofree char *full = overload && *overload ? g_strdup_printf ("%s.%s", name, overload) : g_strdup (name);
  graft_node_add_metadata (node, GRAFT_EXECUTORCH_OPERATOR_KEY, full);
  if (op.overload != NULL)
    graft_node_add_attribute (node, graft_attribute_new_string ("overload", op.overload));

  g_autoptr(GArray) inputs = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr(GArray) results = g_array_new (FALSE, FALSE, sizeof (gint32));
  gboolean in_place = g_str_has_suffix (name, "_") && (overload == NULL || *overload == '\0');
  if (!split_results (r, &args, node_name, in_place, inputs, results, error))
    return FALSE;
  Arguments a = { r, node, 0 };
  for (const GraftExecutorchArgument *plan = op.arguments; plan != NULL && plan->kind != GRAFT_EXECUTORCH_ARG_END;
       plan++, a.position++)
    {
      g_autofree char *attribute = g_strdup_printf ("arg%u", a.position);
      if (plan->kind == GRAFT_EXECUTORCH_ARG_FALSE)
        {
          GraftAttribute *b = graft_attribute_new (attribute, GRAFT_ATTR_BOOL);
          graft_node_add_attribute (node, b);
        }
      else if (plan->kind == GRAFT_EXECUTORCH_ARG_RESULT_DTYPE)
        {
          /* ExecuTorch's ScalarType numbers are torch's. */
          guint8 scalar_type = 6;
          gint32 result = g_array_index (results, gint32, 0);
          if (r->values[result].kind == KIND_TENSOR &&
              !graft_flatbuffer_read_u8 (&r->fb, &r->values[result].table, TENSOR_SCALAR_TYPE,
                                         "a tensor's scalar type", 0, &scalar_type, error))
            return FALSE;
          graft_node_add_attribute (node, graft_attribute_new_int (attribute, scalar_type));
        }
      else if (plan->kind == GRAFT_EXECUTORCH_ARG_NONE || plan->source >= inputs->len)
        graft_node_add_attribute (node, graft_attribute_new (attribute, GRAFT_ATTR_NONE));
      else if (!add_argument (&a, g_array_index (inputs, gint32, plan->source), error))
        return FALSE;
    }
  for (guint i = 0; op.arguments == NULL && i < inputs->len; i++, a.position++)
    if (!add_argument (&a, g_array_index (inputs, gint32, i), error))
      return FALSE;
  guint n_results = op.n_results > 0 ? MIN (op.n_results, results->len) : results->len;
  for (guint i = 0; i < n_results; i++)
    if (!add_result (r, node, g_array_index (results, gint32, i), i, error))
      return FALSE;
  /* "eps = 1e-05", not "arg7 = 1e-05": the functional op's schema names them */
  if (strcmp (node->domain, "aten") == 0)
    graft_aten_name_arguments (node);
  return TRUE;
}

/* A delegate call's arguments are its inputs, then its results (the
 * emitter's order); a result is what no instruction has written yet. */
static gboolean
read_delegate_call (Reader *r, guint instruction, const GraftFlatbufferTable *call, GError **error)
{
  gint32 delegate_index;
  GraftFlatbufferVector args, specs;
  GraftFlatbufferTable delegate, processed;
  g_autofree char *id = NULL;
  guint8 location;
  guint32 data_index;
  if (!graft_flatbuffer_read_i32 (&r->fb, call, 0, "a delegate call's delegate", 0, &delegate_index, error) ||
      !graft_flatbuffer_read_vector (&r->fb, call, 1, 4, "a delegate call's arguments", &args, error))
    return FALSE;
  if (delegate_index < 0 || (guint32) delegate_index >= r->delegates.length)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "instruction %u calls delegate %d, which does not exist "
                 "(the plan has %u)", instruction, delegate_index, r->delegates.length);
  if (!graft_flatbuffer_vector_table (&r->fb, &r->delegates, delegate_index, "a delegate", &delegate, error) ||
      !graft_flatbuffer_read_string (&r->fb, &delegate, DELEGATE_ID, "a delegate's backend id", &id, error) ||
      !graft_flatbuffer_read_table (&r->fb, &delegate, DELEGATE_PROCESSED, "a delegate's payload", &processed,
                                    error) ||
      !graft_flatbuffer_read_vector (&r->fb, &delegate, DELEGATE_COMPILE_SPECS, 4, "a delegate's compile specs",
                                     &specs, error) ||
      !graft_flatbuffer_read_u8 (&r->fb, &processed, 0, "a payload's location", 0, &location, error) ||
      !graft_flatbuffer_read_u32 (&r->fb, &processed, 1, "a payload's index", 0, &data_index, error))
    return FALSE;
  if (id == NULL || *id == '\0' || !g_utf8_validate (id, -1, NULL))
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "delegate %d has no backend id", delegate_index);

  /* The payload: inline in backend_delegate_data, or a segment. */
  gsize payload_size = 0;
  if (location == 0)
    {
      GraftFlatbufferTable inline_data;
      GraftFlatbufferVector bytes;
      if (data_index >= r->delegate_data.length)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "delegate %s's payload %u does not exist (the program has "
                     "%u inline)", id, data_index, r->delegate_data.length);
      if (!graft_flatbuffer_vector_table (&r->fb, &r->delegate_data, data_index, "a delegate payload", &inline_data,
                                          error) ||
          !graft_flatbuffer_read_vector (&r->fb, &inline_data, 0, 1, "a delegate payload's data", &bytes, error))
        return FALSE;
      payload_size = bytes.length;
    }
  else
    {
      gsize start;
      if (!segment_range (r, data_index, &start, &payload_size, error))
        return FALSE;
    }

  g_autofree char *node_name = g_strdup_printf ("%s_%u", id, instruction);
  GraftNode *node = graft_graph_add_node (r->graph, GRAFT_EXECUTORCH_DELEGATE_DOMAIN, id, node_name);
  graft_node_add_attribute (node, graft_attribute_new_string ("backend_id", id));
  graft_node_add_attribute (node, graft_attribute_new_int ("payload_bytes", payload_size));
  graft_node_add_attribute (node, graft_attribute_new_string ("payload_location", location == 0 ? "inline"
                                                                                                 : "segment"));
  if (specs.length > 0)
    {
      GraftAttribute *keys = graft_attribute_new ("compile_specs", GRAFT_ATTR_STRINGS);
      keys->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      for (guint i = 0; i < specs.length; i++)
        {
          GraftFlatbufferTable spec;
          g_autofree char *key = NULL;
          if (!graft_flatbuffer_vector_table (&r->fb, &specs, i, "a compile spec", &spec, error) ||
              !graft_flatbuffer_read_string (&r->fb, &spec, 0, "a compile spec's key", &key, error))
            {
              graft_attribute_free (keys);
              return FALSE;
            }
          g_ptr_array_add (keys->strings, g_bytes_new (key ? key : "", key ? strlen (key) : 0));
        }
      graft_node_add_attribute (node, keys);
    }

  guint first_result = args.length;
  for (guint i = 0; i < args.length; i++)
    if (!check_index (r, graft_flatbuffer_vector_i32 (&r->fb, &args, i), node_name, error))
      return FALSE;
  while (first_result > 0)
    {
      gint32 arg = graft_flatbuffer_vector_i32 (&r->fb, &args, first_result - 1);
      if (r->current[arg] != NULL || r->values[arg].kind != KIND_TENSOR)
        break;
      TensorInfo t;
      if (!read_tensor (r, arg, &t, error))
        return FALSE;
      if (t.data_buffer > 0)
        break;
      first_result--;
    }
  Arguments a = { r, node, 0 };
  for (guint i = 0; i < first_result; i++, a.position++)
    if (!add_argument (&a, graft_flatbuffer_vector_i32 (&r->fb, &args, i), error))
      return FALSE;
  for (guint i = first_result; i < args.length; i++)
    if (!add_result (r, node, graft_flatbuffer_vector_i32 (&r->fb, &args, i), i - first_result, error))
      return FALSE;
  return TRUE;
}

/* move_from's value becomes move_to's (control flow's phi). */
static gboolean
read_move_call (Reader *r, guint instruction, const GraftFlatbufferTable *call, GError **error)
{
  gint32 from, to;
  if (!graft_flatbuffer_read_i32 (&r->fb, call, 0, "a move's source", 0, &from, error) ||
      !graft_flatbuffer_read_i32 (&r->fb, call, 1, "a move's destination", 0, &to, error) ||
      !check_index (r, from, "a move", error) || !check_index (r, to, "a move", error))
    return FALSE;
  g_autofree char *node_name = g_strdup_printf ("move_%u", instruction);
  GraftNode *node = graft_graph_add_node (r->graph, "executorch_prim", "move", node_name);
  Arguments a = { r, node, 0 };
  return add_argument (&a, from, error) && add_result (r, node, to, 0, error);
}

static gboolean
read_instructions (Reader *r, GCancellable *cancellable, GError **error)
{
  GraftFlatbufferVector chains;
  guint counter = 0;
  if (!graft_flatbuffer_read_vector (&r->fb, &r->plan, PLAN_CHAINS, 4, "the plan's chains", &chains, error))
    return FALSE;
  for (guint c = 0; c < chains.length; c++)
    {
      GraftFlatbufferTable chain;
      GraftFlatbufferVector instructions;
      if (!graft_flatbuffer_vector_table (&r->fb, &chains, c, "a chain", &chain, error) ||
          !graft_flatbuffer_read_vector (&r->fb, &chain, CHAIN_INSTRUCTIONS, 4, "a chain's instructions",
                                         &instructions, error))
        return FALSE;
      for (guint i = 0; i < instructions.length; i++, counter++)
        {
          GraftFlatbufferTable instruction, call;
          guint8 type;
          if (counter % 256 == 0 && g_cancellable_set_error_if_cancelled (cancellable, error))
            return FALSE;
          if (!graft_flatbuffer_vector_table (&r->fb, &instructions, i, "an instruction", &instruction, error) ||
              !graft_flatbuffer_read_u8 (&r->fb, &instruction, INSTRUCTION_TYPE, "an instruction's type", 0, &type,
                                         error) ||
              !graft_flatbuffer_read_table (&r->fb, &instruction, INSTRUCTION_ARGS, "an instruction's arguments",
                                            &call, error))
            return FALSE;
          if (type != INSTRUCTION_FREE_CALL && !graft_flatbuffer_table_present (&call))
            return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "instruction %u has no arguments", counter);
          gboolean ok = TRUE;
          switch (type)
            {
            case INSTRUCTION_KERNEL_CALL:
              ok = read_kernel_call (r, counter, &call, error);
              break;
            case INSTRUCTION_DELEGATE_CALL:
              ok = read_delegate_call (r, counter, &call, error);
              break;
            case INSTRUCTION_MOVE_CALL:
              ok = read_move_call (r, counter, &call, error);
              break;
            case INSTRUCTION_FREE_CALL:
              break;   /* memory only */
            case INSTRUCTION_JUMP_FALSE_CALL:
              return fail (error, GRAFT_MODEL_ERROR_UNSUPPORTED, r, "instruction %u is a conditional jump: Graft does "
                           "not read ExecuTorch control flow yet", counter);
            default:
              return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "instruction %u has the unknown type %u", counter,
                           type);
            }
          if (!ok)
            return FALSE;
        }
    }
  return TRUE;
}

/* ------------------------------------------------------------------ plan */

static gboolean
read_inputs (Reader *r, GError **error)
{
  GraftFlatbufferVector inputs;
  if (!graft_flatbuffer_read_vector (&r->fb, &r->plan, PLAN_INPUTS, 4, "the plan's inputs", &inputs, error))
    return FALSE;
  for (guint i = 0; i < inputs.length; i++)
    {
      gint32 index = graft_flatbuffer_vector_i32 (&r->fb, &inputs, i);
      g_autofree char *name = g_strdup_printf ("input_%u", i);
      if (!check_index (r, index, "the plan's inputs", error))
        return FALSE;
      if (r->current[index] != NULL)
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "value %d is the plan's input twice", index);
      GraftValue *value = define_value (r, index, name, TRUE, error);
      if (value == NULL)
        return FALSE;
      graft_graph_add_input (r->graph, value);
    }
  return TRUE;
}

static gboolean
read_outputs (Reader *r, GError **error)
{
  GraftFlatbufferVector outputs;
  if (!graft_flatbuffer_read_vector (&r->fb, &r->plan, PLAN_OUTPUTS, 4, "the plan's outputs", &outputs, error))
    return FALSE;
  for (guint i = 0; i < outputs.length; i++)
    {
      gint32 index = graft_flatbuffer_vector_i32 (&r->fb, &outputs, i);
      if (!check_index (r, index, "the plan's outputs", error))
        return FALSE;
      GraftValue *value = read_value (r, index, "the plan's outputs", error);
      if (value == NULL)
        return FALSE;
      graft_graph_add_output (r->graph, value);
    }
  return TRUE;
}

/* A mutable buffer an instruction wrote (aten::copy_ into it) keeps the
 * last write for the method's next execution, as ExecuTorch's planned
 * memory does: that value is written back to its initial state. */
static void
link_mutated_buffers (Reader *r)
{
  GHashTableIter iter;
  gpointer key, buffer;
  g_hash_table_iter_init (&iter, r->mutable_buffers);
  while (g_hash_table_iter_next (&iter, &key, &buffer))
    {
      GraftValue *last = r->current[GPOINTER_TO_UINT (key)];
      if (last != NULL && last != buffer && last->producer != NULL && last->writes_back_to == NULL)
        last->writes_back_to = g_strdup (((GraftValue *) buffer)->name);
    }
}

/* The names of every execution plan, for the metadata. */
static gboolean
list_plans (Reader *r, const GraftFlatbufferVector *plans, GError **error)
{
  g_autoptr(GString) names = g_string_new (NULL);
  for (guint i = 0; i < plans->length; i++)
    {
      GraftFlatbufferTable plan;
      g_autofree char *name = NULL;
      if (!graft_flatbuffer_vector_table (&r->fb, plans, i, "an execution plan", &plan, error) ||
          !graft_flatbuffer_read_string (&r->fb, &plan, PLAN_NAME, "an execution plan's name", &name, error))
        return FALSE;
      g_string_append_printf (names, "%s%s", i ? ", " : "", name ? name : "(unnamed)");
    }
  graft_model_add_metadata (r->model, "execution plans", names->str);
  return TRUE;
}

static gboolean
read_program (Reader *r, GCancellable *cancellable, GError **error)
{
  GraftFlatbufferVector plans;
  guint32 version;
  g_autofree char *plan_name = NULL;

  if (!read_extended_header (r, error) || !graft_flatbuffer_root (&r->fb, &r->program, error) ||
      !graft_flatbuffer_read_u32 (&r->fb, &r->program, PROGRAM_VERSION, "the program's version", 0, &version, error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->program, PROGRAM_EXECUTION_PLAN, 4, "the execution plans", &plans,
                                     error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->program, PROGRAM_CONSTANT_BUFFER, 4, "the constant buffers",
                                     &r->constant_buffer, error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->program, PROGRAM_BACKEND_DELEGATE_DATA, 4, "the delegate payloads",
                                     &r->delegate_data, error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->program, PROGRAM_SEGMENTS, 4, "the segments", &r->segments, error) ||
      !graft_flatbuffer_read_table (&r->fb, &r->program, PROGRAM_CONSTANT_SEGMENT, "the constant segment",
                                    &r->constant_segment, error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->program, PROGRAM_MUTABLE_DATA_SEGMENTS, 4,
                                     "the mutable data segments", &r->mutable_data_segments, error))
    return FALSE;
  if (plans.length == 0)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, r, "the program has no execution plan");
  if (!list_plans (r, &plans, error) ||
      !graft_flatbuffer_vector_table (&r->fb, &plans, 0, "the first execution plan", &r->plan, error) ||
      !graft_flatbuffer_read_string (&r->fb, &r->plan, PLAN_NAME, "the plan's name", &plan_name, error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->plan, PLAN_OPERATORS, 4, "the plan's operators", &r->operators,
                                     error) ||
      !graft_flatbuffer_read_vector (&r->fb, &r->plan, PLAN_DELEGATES, 4, "the plan's delegates", &r->delegates,
                                     error))
    return FALSE;

  g_autofree char *identifier = g_strndup ((const char *) r->data + 4, 4);
  g_autofree char *version_text = g_strdup_printf ("%u", version);
  graft_model_add_metadata (r->model, "schema", identifier);
  graft_model_add_metadata (r->model, "program version", version_text);
  graft_model_set_producer (r->model, "executorch", identifier);
  r->graph = graft_graph_new (plan_name ? plan_name : "forward");
  graft_model_set_graph (r->model, r->graph);
  if (!read_values (r, error) || !read_inputs (r, error) || !read_instructions (r, cancellable, error) ||
      !read_outputs (r, error))
    return FALSE;
  link_mutated_buffers (r);
  return TRUE;
}

GraftModel *
graft_executorch_program_load (const char *path, GCancellable *cancellable, GError **error)
{
  g_autoptr(GBytes) file = graft_file_bytes_open (path, error);
  if (file == NULL)
    return NULL;
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_EXECUTORCH);
  Reader r = { .path = path, .file = file, .model = model };
  r.data = g_bytes_get_data (file, &r.size);
  r.constants = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  r.mutable_buffers = g_hash_table_new (g_direct_hash, g_direct_equal);
  r.writes = g_array_new (FALSE, FALSE, sizeof (MemoryWrite));
  gboolean ok = read_program (&r, cancellable, error);
  g_hash_table_unref (r.constants);
  g_hash_table_unref (r.mutable_buffers);
  g_array_unref (r.writes);
  g_free (r.values);
  g_free (r.current);
  if (!ok)
    return NULL;
  graft_graph_update_group_counts (graft_model_get_graph (model));
  graft_model_set_path (model, path);
  return g_steal_pointer (&model);
}
