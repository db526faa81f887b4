#include "analysis/baked-shape.h"
#include "analysis/shape-inference.h"
#include "ir/sym-dim.h"
#include "runtime/op.h"

#include <string.h>

GraftTensor *
graft_value_get_constant (GraftValue *value)
{
  GraftAttribute *attribute;

  if (value == NULL)
    return NULL;
  if (value->initializer != NULL)
    return value->initializer;
  if (value->producer != NULL && value->producer->op == g_intern_static_string ("onnx::Constant")
      && (attribute = graft_node_get_attribute (value->producer, "value")) != NULL)
    return attribute->t;
  return NULL;
}

gint64
graft_tensor_get_int (GraftTensor *tensor, gint64 index)
{
  GBytes *bytes = graft_tensor_get_data (tensor, NULL);
  gsize size = graft_dtype_get_size (tensor->dtype);
  const guint8 *p;
  guint64 v = 0;

  if (bytes == NULL || size == 0 || size > 8 || (gsize) (index + 1) * size > g_bytes_get_size (bytes))
    return 0;
  p = (const guint8 *) g_bytes_get_data (bytes, NULL) + index * size;
  for (gsize b = 0; b < size; b++)
    v |= (guint64) p[b] << (8 * b);
  /* Sign-extend the signed types. */
  if (size < 8 && (tensor->dtype == GRAFT_DTYPE_INT8 || tensor->dtype == GRAFT_DTYPE_INT16
                   || tensor->dtype == GRAFT_DTYPE_INT32) && (v >> (8 * size - 1)) & 1)
    v |= ~(guint64) 0 << (8 * size);
  return (gint64) v;
}

char *
graft_tensor_format_ints (GraftTensor *tensor)
{
  GString *out = g_string_new ("[");
  gint64 n = graft_tensor_get_numel (tensor);

  for (gint64 i = 0; i < n && i < 16; i++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? ", " : "", graft_tensor_get_int (tensor, i));
  g_string_append (out, n > 16 ? ", …]" : "]");
  return g_string_free (out, FALSE);
}

gint64 *
graft_value_read_ints (GraftInference *inference, GraftValue *value, guint *n)
{
  GraftTensor *tensor = graft_value_get_constant (value);
  GArray *data;
  gint64 *values;

  if (tensor != NULL && graft_dtype_is_integer (tensor->dtype))
    {
      *n = graft_tensor_get_numel (tensor);
      values = g_new (gint64, MAX (*n, 1));
      for (guint i = 0; i < *n; i++)
        values[i] = graft_tensor_get_int (tensor, i);
      return values;
    }
  /* Only what an earlier make-dynamic built: other computed shapes are
   * the exporter's, and it kept them dynamic on purpose. */
  if (tensor != NULL || inference == NULL || value == NULL || value->producer == NULL
      || strstr (value->producer->name, "/graft_") == NULL
      || (data = graft_inference_get_data (inference, value)) == NULL)
    return NULL;
  *n = data->len;
  values = g_new (gint64, MAX (*n, 1));
  for (guint i = 0; i < *n; i++)
    {
      GraftDim *d = &g_array_index (data, GraftDim, i);
      values[i] = d->kind == GRAFT_DIM_FIXED ? d->value : GRAFT_NOT_AN_INT;
    }
  return values;
}

gboolean
graft_dim_mentions (const GraftDim *dim, const char *symbol)
{
  g_auto(GStrv) parts = NULL;

  if (dim->kind != GRAFT_DIM_SYMBOLIC || dim->symbol == NULL)
    return FALSE;
  parts = g_strsplit (dim->symbol, "*", -1);
  return g_strv_contains ((const char *const *) parts, symbol);
}

/* Shapes as the probe run inferred them (the run in progress, when called
 * from its hook). */
static const GraftShape *
probed_shape (GraftInference *inference, GraftValue *value)
{
  const GraftShape *inferred;

  if (value == NULL)
    return NULL;
  inferred = graft_inference_get_shape (inference, value);
  return inferred != NULL ? inferred : &value->shape;
}

static gboolean
carries_probe (GraftInference *inference, GraftValue *value)
{
  const GraftShape *shape = probed_shape (inference, value);

  for (int i = 0; shape && i < shape->rank; i++)
    if (graft_dim_mentions (&shape->dims[i], GRAFT_PROBE_SYMBOL))
      return TRUE;
  return FALSE;
}

static gboolean
probe_at (GraftInference *inference, GraftValue *value, gint64 axis)
{
  const GraftShape *shape = probed_shape (inference, value);

  if (shape == NULL || shape->rank < 0)
    return FALSE;
  if (axis < 0)
    axis += shape->rank;
  return axis >= 0 && axis < shape->rank && graft_dim_mentions (&shape->dims[axis], GRAFT_PROBE_SYMBOL);
}

static gboolean
consumers_carry_probe (GraftInference *inference, GraftValue *value)
{
  for (guint i = 0; value && i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      for (guint j = 0; j < consumer->inputs->len; j++)
        {
          GraftValue *other = g_ptr_array_index (consumer->inputs, j);
          if (other != value && carries_probe (inference, other))
            return TRUE;
        }
    }
  return FALSE;
}

/* TRUE if value, within a few nodes downstream, meets a value carrying
 * the probe at the same node (arange(seq) → Cast → Unsqueeze → + x). */
static gboolean
meets_probe_downstream (GraftInference *inference, GraftValue *value, int depth)
{
  if (value == NULL || depth <= 0)
    return FALSE;
  if (consumers_carry_probe (inference, value))
    return TRUE;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      for (guint j = 0; j < consumer->outputs->len; j++)
        if (meets_probe_downstream (inference, g_ptr_array_index (consumer->outputs, j), depth - 1))
          return TRUE;
    }
  return FALSE;
}

static void
add_matches (GPtrArray *found, GraftInference *inference, GraftNode *node, guint shape_input, gint64 traced,
             GraftValue *input, int axis, gboolean (*relevant) (GraftNode *node, guint element, gpointer data),
             gpointer data)
{
  GraftValue *constant = shape_input < node->inputs->len ? g_ptr_array_index (node->inputs, shape_input) : NULL;
  g_autofree gint64 *values = NULL;
  guint n;

  if ((values = graft_value_read_ints (inference, constant, &n)) == NULL || n > 64)
    return;
  for (guint e = 0; e < n; e++)
    if (values[e] == traced
        && (relevant == NULL || relevant (node, e, data)))
      {
        GraftBakedShape *baked = g_new0 (GraftBakedShape, 1);

        baked->node = node;
        baked->shape_input = shape_input;
        baked->constant = constant;
        baked->element = e;
        baked->traced = traced;
        baked->multiplier = 1;
        baked->input = input;
        baked->axis = axis;
        g_ptr_array_add (found, baked);
      }
}

/* Slice: the element is an end (or start) on an axis that carries the probe. */
static gboolean
slice_relevant (GraftNode *node, guint element, gpointer data)
{
  GraftValue *axes_value = node->inputs->len > 3 ? g_ptr_array_index (node->inputs, 3) : NULL;
  GraftTensor *axes = graft_value_get_constant (axes_value);
  gint64 axis = element;

  if (axes_value != NULL)
    {
      if (axes == NULL || element >= graft_tensor_get_numel (axes))
        return FALSE;
      axis = graft_tensor_get_int (axes, element);
    }
  return probe_at (data, g_ptr_array_index (node->inputs, 0), axis);
}

/* Trace-time data and output shapes of a Reshape. */
typedef struct {
  GraftShape in, out;
} StaticIO;

static void
static_io_free (gpointer data)
{
  StaticIO *io = data;

  graft_shape_clear (&io->in);
  graft_shape_clear (&io->out);
  g_free (io);
}

static gint64
fixed_product (const GraftShape *shape, int end)
{
  gint64 product = 1;

  for (int i = 0; i < end; i++)
    if (!graft_dim_mul_checked (product, shape->dims[i].value, &product))
      return -1;   /* no real tensor: matches no extent */
  return product;
}

/* The output element of a split/merge reshape whose extent contains input
 * dim d, or -1. */
static int
containing_element (const StaticIO *io, int d)
{
  gint64 start = fixed_product (&io->in, d), end = fixed_product (&io->in, d + 1);

  for (int e = 0; e < io->out.rank; e++)
    if (fixed_product (&io->out, e) <= start && end <= fixed_product (&io->out, e + 1)
        && (end == start || fixed_product (&io->out, e + 1) > start))
      return e;
  return -1;
}

/* When Reshape splits input dim d (seq × batch → seq, batch), the output
 * element of that split whose constant is a multiple of the traced value;
 * -1 when none is. When several are (batch × heads = 2 × 4 → [2, 4], where
 * 4 is 2 × 2 too) the outermost or innermost one, and *ambiguous is set:
 * that is a preference, not a proof; the edit verifies the result at other
 * sizes and reads the node the other way if it fails there. */
static int
split_element (const StaticIO *io, int d, GraftTensor *tensor, gint64 traced, gboolean innermost,
               gboolean *ambiguous)
{
  gint64 start = fixed_product (&io->in, d), end = fixed_product (&io->in, d + 1);
  int found = -1;

  for (int e = 0; e < io->out.rank; e++)
    {
      gint64 value = graft_tensor_get_int (tensor, e);

      if (fixed_product (&io->out, e) < start || fixed_product (&io->out, e + 1) > end
          || io->out.dims[e].value == 1 || value <= 0 || value % traced != 0)
        continue;
      if (found >= 0)
        *ambiguous = TRUE;
      if (found < 0 || innermost)
        found = e;
    }
  return found;
}

/* When Reshape splits input dim d = batch × k across two output elements
 * and merges each part with its neighbours (torch 1.13's attention:
 * [seq, batch × heads, head_dim] → [seq × batch, heads × head_dim]), the
 * element that ends where the batch factor ends (outermost reading) or
 * starts where it starts (innermost: d = k × batch); -1 when none does. */
static int
straddling_element (const StaticIO *io, int d, gint64 traced, gboolean innermost)
{
  gint64 start = fixed_product (&io->in, d), end = fixed_product (&io->in, d + 1);
  if (start <= 0 || end <= 0 || end % traced != 0)
    return -1;
  gint64 batch_end = innermost ? end : start * traced, batch_start = innermost ? end / traced : start;
  for (int e = 0; e < io->out.rank; e++)
    {
      gint64 from = fixed_product (&io->out, e), to = fixed_product (&io->out, e + 1);
      if (from < 0 || to < 0 || io->out.dims[e].value <= 1)
        continue;
      /* the element holds the whole batch factor and stops inside d or at its end */
      if (from <= batch_start && to >= batch_end && to <= end && (innermost ? from > start : to == batch_end))
        return e;
    }
  return -1;
}

static void
add_baked (GPtrArray *found, GraftNode *node, guint shape_input, guint element, gint64 traced, gint64 multiplier,
           GraftValue *input, int axis)
{
  GraftBakedShape *baked = g_new0 (GraftBakedShape, 1);

  baked->node = node;
  baked->shape_input = shape_input;
  baked->constant = g_ptr_array_index (node->inputs, shape_input);
  baked->element = element;
  baked->traced = traced;
  baked->multiplier = multiplier;
  baked->input = input;
  baked->axis = axis;
  g_ptr_array_add (found, baked);
}

/* Slice bounds in the second half of the traced extent of an axis that
 * carries the probe (x[:, :x.size(1) - 1] baked as 15) may be a fixed prefix or
 * the size minus a constant: read fixed unless readings lists the node as
 * innermost, where they are read from the end (15 → -1); either way the
 * node is listed as ambiguous for the caller's probes to decide. */
static void
find_relative_slice_bounds (GraftInference *inference, GPtrArray *found, GraftNode *node, gint64 traced, GraftValue *input, int axis,
                            GraftSplitReadings *readings)
{
  gboolean from_end = readings != NULL && readings->innermost != NULL
                      && g_hash_table_contains (readings->innermost, GUINT_TO_POINTER (node->index + 1));
  gboolean listed = FALSE;

  for (guint i = 1; i <= 2; i++)
    {
      GraftTensor *bounds = graft_value_get_constant (g_ptr_array_index (node->inputs, i));
      gint64 n = bounds != NULL && graft_dtype_is_integer (bounds->dtype) ? graft_tensor_get_numel (bounds) : 0;

      for (gint64 e = 0; e < n && e < 64; e++)
        {
          gint64 v = graft_tensor_get_int (bounds, e);

          /* Near the start a bound is likelier a literal (x[:, 1:]) than
           * the size minus most of it. */
          if (v <= 0 || v >= traced || traced - v >= v || !slice_relevant (node, e, inference))
            continue;
          if (!listed && readings != NULL && readings->ambiguous != NULL)
            g_array_append_val (readings->ambiguous, node->index);
          listed = TRUE;
          if (from_end)
            add_baked (found, node, i, e, traced, 1, input, axis);
        }
    }
}

/* Split sizes adding up to the traced size of the split axis (chunk(2)
 * baked as [8, 8], split([4, n - 4]) as [4, 12]); from input 1, or from
 * the split attribute before opset 13 (shape_input G_MAXUINT then). The
 * element is the part that takes the rest: the largest (the first of
 * equal ones; the repair splits equal parts evenly). */
static void
find_in_split (GraftInference *inference, GPtrArray *found, GraftNode *node, gint64 traced, GraftValue *input, int axis)
{
  GraftValue *sizes_value = node->inputs->len > 1 ? g_ptr_array_index (node->inputs, 1) : NULL;
  GraftTensor *sizes = graft_value_get_constant (sizes_value);
  GraftAttribute *attribute = graft_node_get_attribute (node, "split");
  g_autofree gint64 *values = NULL;
  gint64 n = 0, sum = 0;
  guint largest = 0;
  GraftBakedShape *baked;

  if (!probe_at (inference, g_ptr_array_index (node->inputs, 0), graft_node_attr_int (node, "axis", 0)))
    return;
  if (sizes != NULL && graft_dtype_is_integer (sizes->dtype))
    {
      n = graft_tensor_get_numel (sizes);
      values = g_new (gint64, MAX (n, 1));
      for (gint64 i = 0; i < n; i++)
        values[i] = graft_tensor_get_int (sizes, i);
    }
  else if (sizes_value == NULL && attribute != NULL && attribute->type == GRAFT_ATTR_INTS)
    {
      n = attribute->ints->len;
      values = g_memdup2 (attribute->ints->data, sizeof (gint64) * MAX (n, 1));
    }
  for (gint64 i = 0; i < n; i++)
    {
      /* a hostile file's sizes: negative, or summing past gint64 */
      if (values[i] < 0 || !graft_dim_add_checked (sum, values[i], &sum))
        return;
      if (values[i] > values[largest])
        largest = i;
    }
  if (n < 2 || sum != traced)
    return;
  baked = g_new0 (GraftBakedShape, 1);
  *baked = (GraftBakedShape) { node, sizes_value != NULL ? 1 : G_MAXUINT, sizes_value, largest, traced, 1, input, axis,
                               FALSE };
  g_ptr_array_add (found, baked);
}

/* The constant elements of sizes (a constant, or a Concat of pieces,
 * nested when an earlier repair rebuilt a piece) that follow a dim of
 * data carrying the probe: sizes[e] = traced × k (the same size, or an
 * integer upscale). The entry is the constant's consumer: node itself, or
 * the Concat. FALSE when where the later pieces start is unknown. */
static gboolean
scan_sizes (GraftInference *inference, GPtrArray *found, GraftNode *node, guint at, GraftValue *data, gint64 *offset, gint64 traced,
            GraftValue *input, int axis)
{
  GraftValue *sizes = g_ptr_array_index (node->inputs, at);
  GraftTensor *tensor = graft_value_get_constant (sizes);
  const GraftShape *shape = probed_shape (inference, sizes);

  if (tensor == NULL && sizes != NULL && sizes->producer != NULL
      && sizes->producer->op == g_intern_static_string ("onnx::Concat"))
    {
      for (guint j = 0; j < sizes->producer->inputs->len; j++)
        if (!scan_sizes (inference, found, sizes->producer, j, data, offset, traced, input, axis))
          return FALSE;
      return TRUE;
    }
  if (tensor == NULL)
    {
      if (shape == NULL || shape->rank != 1 || shape->dims[0].kind != GRAFT_DIM_FIXED)
        return FALSE;
      *offset += shape->dims[0].value;
      return TRUE;
    }
  for (gint64 e = 0; graft_dtype_is_integer (tensor->dtype) && e < graft_tensor_get_numel (tensor); e++)
    {
      gint64 v = graft_tensor_get_int (tensor, e);

      if (probe_at (inference, data, *offset + e) && v > 0 && v % traced == 0)
        add_baked (found, node, at, e, traced, v / traced, input, axis);
    }
  *offset += graft_tensor_get_numel (tensor);
  return TRUE;
}

/* Resize sizes that follow a dim carrying the probe, from a constant or
 * from a constant piece of the Concat that builds them (torch writes
 * Concat(Shape(x)[:2], [16, 16]) for interpolate(size=(2h, 2w))). Scales
 * need nothing: a ratio is not a size. */
static void
find_in_resize (GraftInference *inference, GPtrArray *found, GraftNode *node, gint64 traced, GraftValue *input, int axis)
{
  gint64 offset = 0;

  scan_sizes (inference, found, node, 3, g_ptr_array_index (node->inputs, 0), &offset, traced, input, axis);
}

/* Where piece of concat starts in the sizes of the Resize that reads it
 * (through nested Concats). */
static void
concat_piece_offset (GraftInference *inference, GraftNode *concat, guint piece, gint64 *offset)
{
  *offset = 0;
  while (concat != NULL && concat->op == g_intern_static_string ("onnx::Concat"))
    {
      GraftValue *out = g_ptr_array_index (concat->outputs, 0);
      GraftNode *next = out->consumers->len == 1 ? g_ptr_array_index (out->consumers, 0) : NULL;

      for (guint j = 0; j < piece; j++)
        {
          const GraftShape *shape = probed_shape (inference, g_ptr_array_index (concat->inputs, j));
          *offset += shape != NULL && shape->rank == 1 ? shape->dims[0].value : 0;
        }
      for (piece = 0; next != NULL && piece < next->inputs->len && g_ptr_array_index (next->inputs, piece) != out;
           piece++)
        ;
      concat = next;
    }
}

/* In a product of Muls (depth-first, a few levels), the Mul reading a
 * scalar int constant equal to traced, and which of its inputs that is. */
static GraftNode *
batch_factor (GraftNode *mul, gint64 traced, guint *which, int depth)
{
  if (mul == NULL || mul->op != g_intern_static_string ("onnx::Mul") || mul->inputs->len != 2 || depth > 4)
    return NULL;
  for (guint k = 0; k < 2; k++)
    {
      GraftTensor *factor = graft_value_get_constant (g_ptr_array_index (mul->inputs, k));
      if (factor != NULL && graft_dtype_is_integer (factor->dtype) && factor->rank == 0
          && graft_tensor_get_int (factor, 0) == traced)
        {
          *which = k;
          return mul;
        }
    }
  for (guint k = 0; k < 2; k++)
    {
      GraftNode *found = batch_factor (((GraftValue *) g_ptr_array_index (mul->inputs, k))->producer, traced, which,
                                       depth + 1);
      if (found != NULL)
        return found;
    }
  return NULL;
}

/* A piece computed as Unsqueeze(B × n × …) with B the traced size written
 * as a scalar constant (Swin merges the batch with its window count:
 * x.view(B * nW, 49, C) exports as Mul(2, Mul(H/7, W/7))): the constant
 * is the entry, read by its Mul. */
static void
find_in_batch_product (GraftInference *inference, GPtrArray *found, GraftValue *piece, gint64 static_value,
                       gint64 traced, GraftValue *input, int axis)
{
  GraftNode *mul = piece->producer;
  GArray *data = graft_inference_get_data (inference, piece);
  guint which;

  /* The batch already comes from the input there (SAM's B * num_heads with
   * B from Shape): a constant equal to traced is another factor. */
  for (guint i = 0; data != NULL && i < data->len; i++)
    if (graft_dim_mentions (&g_array_index (data, GraftDim, i), GRAFT_PROBE_SYMBOL))
      return;

  if (mul != NULL && mul->op == g_intern_static_string ("onnx::Unsqueeze") && mul->inputs->len > 0)
    mul = ((GraftValue *) g_ptr_array_index (mul->inputs, 0))->producer;
  if (static_value % traced == 0 && (mul = batch_factor (mul, traced, &which, 0)) != NULL)
    add_baked (found, mul, which, 0, traced, 1, input, axis);
}

/* The Concat piece covering element e of a Reshape's target: the entry
 * when it is a constant holding the static size there (a multiple of the
 * traced one), or a batch product (above). TRUE when an entry was added. */
static gboolean
concat_target_entry (GraftInference *inference, GPtrArray *found, GraftNode *concat, const StaticIO *io, int e,
                     gint64 traced, GraftValue *input, int axis)
{
  gint64 start = 0;

  for (guint j = 0; j < concat->inputs->len; j++)
    {
      GraftValue *piece = g_ptr_array_index (concat->inputs, j);
      const GraftShape *shape = probed_shape (inference, piece);
      GraftTensor *tensor = graft_value_get_constant (piece);
      guint before = found->len;

      if (shape == NULL || shape->rank != 1 || shape->dims[0].kind != GRAFT_DIM_FIXED)
        return FALSE;
      if (e < start + shape->dims[0].value)
        {
          gint64 value = tensor != NULL && graft_dtype_is_integer (tensor->dtype)
                         ? graft_tensor_get_int (tensor, e - start) : 0;
          if (value > 0 && value == io->out.dims[e].value && value % traced == 0)
            add_baked (found, concat, j, e - start, traced, value / traced, input, axis);
          else if (tensor == NULL)
            find_in_batch_product (inference, found, piece, io->out.dims[e].value, traced, input, axis);
          return found->len > before;
        }
      start += shape->dims[0].value;
    }
  return FALSE;
}

/* A Reshape whose target torch built as Concat(pieces) (Swin's window
 * partition: Concat([2], H/7, [7], W/7, [7], [96]) with batch 2, and its
 * reverse from B·nW×49×C): the output element holding data dim d — or,
 * where the Reshape splits d, the outermost element of the split that is
 * a multiple of the traced size — found in the piece that covers it,
 * which becomes the entry (a Concat entry, repaired piece by piece as a
 * Resize's sizes are). */
static void
find_in_concat_target (GraftInference *inference, GPtrArray *found, GraftNode *node, const StaticIO *io,
                       const GraftShape *probed, gint64 traced, GraftValue *input, int axis)
{
  GraftValue *target = g_ptr_array_index (node->inputs, 1);
  GraftNode *concat = target->producer;

  if (concat == NULL || concat->op != g_intern_static_string ("onnx::Concat") || probed->rank != io->in.rank)
    return;
  for (int d = 0; d < probed->rank; d++)
    {
      int e;

      if (!graft_dim_mentions (&probed->dims[d], GRAFT_PROBE_SYMBOL))
        continue;
      if ((e = containing_element (io, d)) >= 0)
        {
          concat_target_entry (inference, found, concat, io, e, traced, input, axis);
          return;
        }
      gint64 start = fixed_product (&io->in, d), end = fixed_product (&io->in, d + 1);
      for (e = 0; e < io->out.rank; e++)
        if (fixed_product (&io->out, e) >= start && fixed_product (&io->out, e + 1) <= end
            && io->out.dims[e].value != 1 && io->out.dims[e].value % traced == 0
            && concat_target_entry (inference, found, concat, io, e, traced, input, axis))
          return;
      return;
    }
}

static void
find_in_reshape (GraftInference *inference, GPtrArray *found, GraftNode *node, const StaticIO *io, gint64 traced, GraftValue *input, int axis,
                 GraftSplitReadings *readings)
{
  GraftValue *data = g_ptr_array_index (node->inputs, 0);
  GraftTensor *tensor = node->inputs->len > 1 ? graft_value_get_constant (g_ptr_array_index (node->inputs, 1)) : NULL;
  const GraftShape *probed = probed_shape (inference, data);

  if (tensor == NULL && probed != NULL && node->inputs->len > 1)
    {
      if (readings == NULL || readings->concat_targets)
        find_in_concat_target (inference, found, node, io, probed, traced, input, axis);
      return;
    }
  if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || probed == NULL || probed->rank != io->in.rank
      || graft_tensor_get_numel (tensor) != io->out.rank)
    return;
  for (int d = 0; d < probed->rank; d++)
    {
      int e;
      gint64 value;

      if (!graft_dim_mentions (&probed->dims[d], GRAFT_PROBE_SYMBOL))
        continue;
      gboolean innermost = readings != NULL && readings->innermost != NULL
                           && g_hash_table_contains (readings->innermost, GUINT_TO_POINTER (node->index + 1));
      gboolean ambiguous = FALSE;

      if ((e = containing_element (io, d)) < 0
          && (e = split_element (io, d, tensor, traced, innermost, &ambiguous)) < 0
          && (e = straddling_element (io, d, traced, innermost)) < 0)
        continue;
      if (ambiguous && readings != NULL && readings->ambiguous != NULL)
        g_array_append_val (readings->ambiguous, node->index);
      value = graft_tensor_get_int (tensor, e);
      /* -1 is computed and 0 copies: neither is baked. */
      if (value <= 0 || value != io->out.dims[e].value || value % traced != 0)
        continue;
      add_baked (found, node, 1, e, traced, value / traced, input, axis);
      return;
    }
}

/* The axis along which tensor is arange(traced) (every other dim 1), or -1:
 * position ids folded into a constant at export. */
static int
arange_axis (GraftTensor *tensor, gint64 traced)
{
  int axis = -1;

  if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || graft_tensor_get_numel (tensor) != traced)
    return -1;
  for (int k = 0; k < tensor->rank; k++)
    if (tensor->dims[k] == traced && axis < 0)
      axis = k;
    else if (tensor->dims[k] != 1)
      return -1;
  for (gint64 i = 0; axis >= 0 && i < traced; i++)
    if (graft_tensor_get_int (tensor, i) != i)
      return -1;
  return axis;
}

/* Constants counting 0 .. traced - 1 that a node reads while none of its
 * inputs carries the dim but its result meets it downstream: positions
 * looked up in a table (Gather(table, arange)), the two ranges a causal
 * mask compares (LessOrEqual). */
static void
find_aranges (GraftInference *inference, GPtrArray *found, GraftNode *node, gint64 traced, GraftValue *input, int axis)
{
  if (node->outputs->len == 0 || g_ptr_array_index (node->outputs, 0) == NULL)
    return;
  for (guint i = 0; i < node->inputs->len; i++)
    if (carries_probe (inference, g_ptr_array_index (node->inputs, i)))
      return;
  if (node->op == g_intern_static_string ("onnx::Gather") && graft_node_attr_int (node, "axis", 0) != 0)
    return;
  if (!meets_probe_downstream (inference, g_ptr_array_index (node->outputs, 0), 4))
    return;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      int e = arange_axis (graft_value_get_constant (g_ptr_array_index (node->inputs, i)), traced);

      /* Gather's data is a table, not positions. */
      if (e >= 0 && !(node->op == g_intern_static_string ("onnx::Gather") && i == 0))
        {
          add_baked (found, node, i, e, traced, 1, input, axis);
          ((GraftBakedShape *) g_ptr_array_index (found, found->len - 1))->arange = TRUE;
        }
    }
}

static void
find_in_node (GraftInference *inference, GPtrArray *found, GraftNode *node, GHashTable *static_io, gint64 traced,
              GraftValue *input, int axis, GraftSplitReadings *readings)
{
  GraftValue *data = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  const char *op = node->op;
  StaticIO *io;

  if (op == g_intern_static_string ("onnx::Reshape") && (io = g_hash_table_lookup (static_io, node)) != NULL)
    find_in_reshape (inference, found, node, io, traced, input, axis, readings);
  else if (op == g_intern_static_string ("onnx::Reshape"))
    {
      if (carries_probe (inference, data))
        add_matches (found, inference, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Expand") || op == g_intern_static_string ("onnx::Tile"))
    {
      /* Its data, or what its result meets (a causal mask expanded, or a
       * learned row tiled, to the batch, then applied to the activations). */
      if (carries_probe (inference, data)
          || (node->outputs->len > 0 && meets_probe_downstream (inference, g_ptr_array_index (node->outputs, 0), 10)))
        add_matches (found, inference, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::ConstantOfShape"))
    {
      if (node->outputs->len > 0 && consumers_carry_probe (inference, g_ptr_array_index (node->outputs, 0)))
        add_matches (found, inference, node, 0, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Range") && node->inputs->len >= 2)
    {
      /* arange(traced size): its limit, when what it counts meets the dim. */
      if (node->outputs->len > 0 && meets_probe_downstream (inference, g_ptr_array_index (node->outputs, 0), 4))
        add_matches (found, inference, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Slice") && node->inputs->len >= 3)
    {
      add_matches (found, inference, node, 2, traced, input, axis, slice_relevant, inference);
      find_relative_slice_bounds (inference, found, node, traced, input, axis, readings);
    }
  else if (op == g_intern_static_string ("onnx::Split") && node->inputs->len >= 1)
    find_in_split (inference, found, node, traced, input, axis);
  else if (op == g_intern_static_string ("onnx::Resize") && node->inputs->len >= 4)
    find_in_resize (inference, found, node, traced, input, axis);
  else
    find_aranges (inference, found, node, traced, input, axis);
}

/* A size no real model traces with, so that it is never taken for one. */
#define STAND_IN_SIZE 7919

static void
shape_free (gpointer shape)
{
  graft_shape_clear (shape);
  g_free (shape);
}

/* The graph inputs' shapes with each dim that is not fixed given a
 * stand-in size (dims already made dynamic: only extents matter for the
 * trace-time shapes), and with input's dim axis replaced by probe when
 * probe is not NULL; an overlay for the inference, the inputs stay as
 * they are. Dims named shared (see graft_find_baked_shapes_read) are
 * input's: its traced size, or the probe. */
static GHashTable *
probe_input_shapes (GraftGraph *graph, GraftValue *input, int axis, const GraftDim *probe, const char *shared)
{
  GHashTable *shapes = g_hash_table_new_full (NULL, NULL, NULL, shape_free);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->inputs, i);
      GraftShape *shape = g_new0 (GraftShape, 1);

      graft_shape_copy (shape, &value->shape);
      for (int d = 0; d < shape->rank; d++)
        if (shared != NULL && shape->dims[d].kind == GRAFT_DIM_SYMBOLIC && shape->dims[d].symbol == shared)
          shape->dims[d] = probe != NULL ? *probe : input->shape.dims[axis];
        else if (probe == NULL && shape->dims[d].kind != GRAFT_DIM_FIXED)
          shape->dims[d] = graft_dim_fixed (STAND_IN_SIZE);
      if (probe != NULL && value == input)
        shape->dims[axis] = *probe;
      g_hash_table_insert (shapes, value, shape);
    }
  return shapes;
}

typedef struct {
  GHashTable *overrides;
  GraftInference *scanned;  /* the run probe_node_in_scan looks at */
  GPtrArray *found;
  GHashTable *found_nodes;  /* GraftNode* set: nodes already in found */
  GHashTable *static_io;
  gint64 traced;
  GraftValue *input;
  int axis;
  GraftSplitReadings *readings;
} Probe;

typedef struct {
  GHashTable *static_io;
  GraftInference *traced;
} StaticIOSearch;

static void
record_static_io (GraftNode *node, gpointer user_data)
{
  StaticIOSearch *search = user_data;
  GraftValue *in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftValue *out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
  const GraftShape *out_shape = graft_inference_get_shape (search->traced, out);
  StaticIO *io;

  if (node->op != g_intern_static_string ("onnx::Reshape") || in == NULL || out_shape == NULL
      || !graft_shape_is_fully_fixed (probed_shape (search->traced, in)) || !graft_shape_is_fully_fixed (out_shape))
    return;
  io = g_new0 (StaticIO, 1);
  graft_shape_copy (&io->in, probed_shape (search->traced, in));
  graft_shape_copy (&io->out, out_shape);
  g_hash_table_insert (search->static_io, node, io);
}

/* Looks for a baked constant at node; a Reshape/Expand/Tile/ConstantOfShape
 * found is from then on treated as repaired (its output dim carries the
 * probe), so that what comes after it can be seen. */
static void
probe_node (GraftNode *node, GraftInference *inference, GHashTable *overrides, gpointer user_data)
{
  Probe *probe = user_data;
  guint first = probe->found->len;
  GArray *elements;
  GraftBakedShape *baked;
  GraftShapeOverride o;

  if (g_hash_table_contains (probe->found_nodes, node))
    return;
  /* Readings name nodes by their index in the main graph. */
  find_in_node (inference, probe->found, node, probe->static_io, probe->traced, probe->input, probe->axis,
                node->graph->parent_graph == NULL ? probe->readings : NULL);
  if (probe->found->len == first)
    return;
  g_hash_table_add (probe->found_nodes, node);
  /* A Split's parts are not the dim, and a Slice keeps what it keeps. */
  if (node->op == g_intern_static_string ("onnx::Slice") || node->op == g_intern_static_string ("onnx::Split"))
    return;
  /* The first match is the likeliest to be the dim itself. */
  baked = g_ptr_array_index (probe->found, first);
  o = (GraftShapeOverride) { baked->element, graft_dim_multiply (graft_dim_symbolic (GRAFT_PROBE_SYMBOL),
                                                                  graft_dim_fixed (baked->multiplier)) };
  if (baked->node != node)
    {
      /* A piece of the Resize's sizes: its output dim follows. */
      gint64 offset;
      concat_piece_offset (inference, baked->node, baked->shape_input, &offset);
      o.element += offset;
    }
  elements = g_hash_table_lookup (overrides, node);
  if (elements == NULL)
    {
      elements = g_array_new (FALSE, FALSE, sizeof (GraftShapeOverride));
      g_hash_table_insert (overrides, node, elements);
    }
  g_array_append_val (elements, o);
}

/* After an inference run: what it found for every node, bodies included
 * (their overrides take effect in the next run). */
static void
probe_node_in_scan (GraftNode *node, gpointer user_data)
{
  Probe *probe = user_data;

  probe_node (node, probe->scanned, probe->overrides, probe);
}

/* The depth of graph under the main graph (0 for the main graph). */
static guint
graph_depth (GraftGraph *graph)
{
  guint depth = 0;

  for (; graph->parent_graph != NULL; graph = graph->parent_graph)
    depth++;
  return depth;
}

/* Graph order, main graph first; a body's nodes after it, grouped by body. */
static int
compare_by_position (gconstpointer a, gconstpointer b)
{
  const GraftBakedShape *x = *(GraftBakedShape **) a, *y = *(GraftBakedShape **) b;
  guint dx = graph_depth (x->node->graph), dy = graph_depth (y->node->graph);

  if (dx != dy)
    return dx < dy ? -1 : 1;
  if (x->node->graph != y->node->graph)
    return x->node->graph < y->node->graph ? -1 : 1;
  if (x->node->index != y->node->index)
    return x->node->index < y->node->index ? -1 : 1;
  return (int) x->element - (int) y->element;
}

static void
note_reshape (GraftNode *node, gpointer user_data)
{
  gboolean *any = user_data;

  *any |= node->op == g_intern_static_string ("onnx::Reshape");
}

static gboolean
has_reshape (GraftGraph *graph)
{
  gboolean any = FALSE;

  graft_graph_foreach_node_recursive (graph, note_reshape, &any);
  return any;
}

static GPtrArray *
find_baked_shapes (GraftModel *model, GraftInference *base, GraftValue *input, int axis,
                   GraftSplitReadings *readings, const char *shared_symbol);

GPtrArray *
graft_find_baked_shapes (GraftModel *model, GraftValue *input, int axis)
{
  return find_baked_shapes (model, NULL, input, axis, NULL, NULL);
}

GPtrArray *
graft_find_baked_shapes_over (GraftModel *model, GraftInference *inference, GraftValue *input, int axis)
{
  return find_baked_shapes (model, inference, input, axis, NULL, NULL);
}

GPtrArray *
graft_find_baked_shapes_read (GraftModel *model, GraftValue *input, int axis, GraftSplitReadings *readings,
                              const char *shared_symbol)
{
  return find_baked_shapes (model, NULL, input, axis, readings, shared_symbol);
}

static GPtrArray *
find_baked_shapes (GraftModel *model, GraftInference *base, GraftValue *input, int axis,
                   GraftSplitReadings *readings, const char *shared_symbol)
{
  const char *shared = shared_symbol != NULL ? g_intern_string (shared_symbol) : NULL;
  GPtrArray *found = g_ptr_array_new_with_free_func (g_free);
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) overrides = NULL;
  g_autoptr(GHashTable) static_io = NULL;
  g_autoptr(GHashTable) stand_in_shapes = NULL;
  g_autoptr(GHashTable) probe_shapes = NULL;
  g_autoptr(GHashTable) found_nodes = NULL;
  g_autoptr(GraftInference) traced_inference = NULL;
  GraftShapeInferenceOptions options = { 0 };
  GraftDim probe_dim = graft_dim_symbolic (GRAFT_PROBE_SYMBOL);
  StaticIOSearch static_io_search;
  Probe probe;
  gint64 traced;
  guint before;

  if (graph == NULL || input->shape.rank <= axis || axis < 0 || input->shape.dims[axis].kind != GRAFT_DIM_FIXED)
    return found;
  traced = input->shape.dims[axis].value;
  if (traced <= 0)
    return found;

  /* Trace-time shapes around every Reshape, to map dims through it. Dims
   * already made dynamic get a stand-in size: only extents matter here.
   * Without a Reshape there is nothing to map (a million-node chain of
   * MatMuls spared a whole run: 40 % of its check). */
  static_io = g_hash_table_new_full (NULL, NULL, NULL, static_io_free);
  if (has_reshape (graph))
    {
      stand_in_shapes = probe_input_shapes (graph, input, axis, NULL, shared);
      options.input_shapes = stand_in_shapes;
      traced_inference = graft_shape_inference_run_full (model, &options);
      /* If/Loop bodies too: their constants bake sizes as well. */
      static_io_search = (StaticIOSearch) { static_io, traced_inference };
      graft_graph_foreach_node_recursive (graph, record_static_io, &static_io_search);
    }

  probe_shapes = probe_input_shapes (graph, input, axis, &probe_dim, shared);
  overrides = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_array_unref);

  /* A baked Reshape hides the probe from everything after it: each one
   * found is treated as repaired, and the search goes on until nothing new
   * turns up. Probing during inference sees a chain of them (one per
   * transformer layer) in one run; the scan after it catches what depends
   * on values inferred later (ConstantOfShape looks at its consumers). */
  found_nodes = g_hash_table_new (NULL, NULL);
  probe = (Probe) { overrides, NULL, found, found_nodes, static_io, traced, input, axis, readings };
  options = (GraftShapeInferenceOptions) { .input_shapes = probe_shapes, .overrides = overrides,
                                           .hook = probe_node, .hook_data = &probe, .base = base };
  do
    {
      g_autoptr(GraftInference) probed = NULL;

      before = found->len;
      probed = graft_shape_inference_run_full (model, &options);
      probe.scanned = probed;
      graft_graph_foreach_node_recursive (graph, probe_node_in_scan, &probe);
      probe.scanned = NULL;
    }
  while (found->len > before && found->len < 100000);

  g_ptr_array_sort (found, compare_by_position);
  return found;
}
