/* Finding the shape constants that froze the traced value of an input
 * dimension (Reshape [2, 512] in a model traced with batch 2).
 *
 * The search replaces the input's dim by a probe symbol, runs shape
 * inference, and reports shape-taking nodes whose constant holds the
 * traced value where their data carries the probe. For Reshape the element
 * is the one whose extent, at trace time, contains the data dim carrying
 * the probe, so merged dims (batch × heads) are found too. The probe is an
 * overlay given to shape inference: the model is only read.
 */
#pragma once

#include "ir/model.h"
#include "analysis/shape-inference.h"

G_BEGIN_DECLS

#define GRAFT_PROBE_SYMBOL "__graft_probe__"

typedef struct {
  GraftNode *node;          /* Reshape, Expand, Tile, ConstantOfShape, Range (limit), Slice,
                             * Split, Resize, the Concat building a Resize's sizes, or any op
                             * reading an arange(traced) constant (below); in the main graph
                             * or an If/Loop body */
  guint shape_input;        /* node input holding the constant; G_MAXUINT for a Split's
                             * split attribute (opset < 13) */
  GraftValue *constant;     /* that input (an initializer or a Constant output, or a shape
                             * vector an earlier make-dynamic built); NULL for an attribute */
  guint element;            /* index in the constant that holds the traced value */
  gint64 traced;            /* the traced value of the input dim */
  gint64 multiplier;        /* the element is traced × multiplier (Reshape merging
                             * the batch with heads: [16, 8, 16] with batch 2 → 4) */
  GraftValue *input;        /* the graph input and axis it came from */
  int axis;
  gboolean arange;          /* the constant counts 0 .. traced - 1 along dim element
                             * (positions, a causal mask's ranges), shape_input of any op */
} GraftBakedShape;

/* A Reshape can split a merged dim into several elements that are each a
 * multiple of the traced size ([2, 4] from batch × heads with batch 2,
 * [16, 2] from seq × batch): the dim is then read as the outermost of
 * them, unless the node is listed in innermost. The search lists every
 * node where it had that choice in ambiguous, so that a caller can probe
 * the result and read them the other way. */
typedef struct {
  GHashTable *innermost;   /* node index in graph->nodes + 1 (GUINT_TO_POINTER); may be NULL */
  GArray *ambiguous;       /* guint node indices, graph order; filled by the search; may be NULL */
  /* Also Reshape targets built by Concat and a scalar batch in a product
   * (Swin's windows): more constants equal to the traced size, so more
   * chances of taking a head count for the batch (SAM's B * heads); the
   * edit tries without them first. A search without readings reads them. */
  gboolean concat_targets;
} GraftSplitReadings;

/* GraftBakedShape* (g_free). Empty when input's dim axis is not fixed.
 * Splits are read outermost (exporters usually merge the batch as the
 * major factor: b * heads + h). */
GPtrArray *graft_find_baked_shapes (GraftModel *model, GraftValue *input, int axis);
/* As graft_find_baked_shapes(), with inference a plain run over model
 * (graft_shape_inference_run(), as lint has one): the probe's runs infer
 * only what the probe changes and read the rest from it. */
GPtrArray *graft_find_baked_shapes_over (GraftModel *model, GraftInference *inference, GraftValue *input, int axis);
/* As graft_find_baked_shapes(), reading splits as readings says (NULL:
 * all outermost). shared_symbol (may be NULL) is the name input's dim is
 * to get: dims of other inputs already made dynamic under that name are
 * the same size, so they take the traced size and the probe too (RAFT
 * concatenates its two images along the batch; T5's encoder and decoder
 * ids share it). */
GPtrArray *graft_find_baked_shapes_read (GraftModel *model, GraftValue *input, int axis,
                                         GraftSplitReadings *readings, const char *shared_symbol);

/* The constant's values if value is an integer initializer or the output
 * of an onnx::Constant node; NULL otherwise. */
GraftTensor *graft_value_get_constant (GraftValue *value);

/* An element graft_value_read_ints() cannot tell (symbolic). */
#define GRAFT_NOT_AN_INT G_MININT64

/* value's integers: a constant's, or (inference not NULL) what inference
 * found for a shape vector an earlier make-dynamic built
 * (Concat(Gather(Shape(x), 0), [1, 16, 16])), whose symbolic elements
 * are GRAFT_NOT_AN_INT. NULL when neither. */
gint64 *graft_value_read_ints (GraftInference *inference, GraftValue *value, guint *n);

/* Element i of an integer tensor, exactly (doubles lose INT64_MAX). */
gint64 graft_tensor_get_int (GraftTensor *tensor, gint64 index);

/* "[16, 2, 64]" for an integer tensor (the first 16 elements, then "…"). */
char *graft_tensor_format_ints (GraftTensor *tensor);

/* TRUE if dim is, or is a product involving, symbol. */
gboolean graft_dim_mentions (const GraftDim *dim, const char *symbol);

G_END_DECLS
