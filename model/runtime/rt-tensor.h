/* Runtime values: the tensors (and sequences, and empty optionals) that
 * flow between kernels while a graph runs.
 *
 * Unlike GraftTensor (constant data referenced from the model file), a
 * runtime tensor always has its data in memory, contiguous and row-major.
 * float16 and bfloat16 are stored as their 16-bit patterns; kernels that
 * do arithmetic on them convert to float32 (see graft_rt_tensor_to_float32).
 * Strings are stored as an array of NUL-terminated g_malloc'd char*.
 */
#pragma once

#include <glib.h>
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"

G_BEGIN_DECLS

#define GRAFT_RT_MAX_RANK 16

#define GRAFT_RUNTIME_ERROR (graft_runtime_error_quark ())
GQuark graft_runtime_error_quark (void);

typedef enum {
  GRAFT_RUNTIME_ERROR_UNSUPPORTED,   /* op, opset or dtype not implemented */
  GRAFT_RUNTIME_ERROR_INVALID,       /* the model or an attribute is invalid */
  GRAFT_RUNTIME_ERROR_INPUT,         /* an input does not fit (shape, dtype, missing) */
  GRAFT_RUNTIME_ERROR_TOO_LARGE,     /* a tensor would not fit in memory */
  GRAFT_RUNTIME_ERROR_FILE,          /* an input or output file is unreadable or malformed */
  GRAFT_RUNTIME_ERROR_CANCELLED,
} GraftRuntimeError;

typedef enum {
  GRAFT_RT_TENSOR = 0,
  GRAFT_RT_SEQUENCE,     /* items: GraftRtTensor* (all tensors) */
  GRAFT_RT_NONE,         /* an optional without a value */
} GraftRtKind;

typedef struct _GraftRtPool GraftRtPool;
typedef struct _GraftRtTensor GraftRtTensor;

struct _GraftRtTensor {
  /*< private >*/
  gint ref_count;
  GraftRtPool *pool;     /* where the buffer goes back to, may be NULL */
  GBytes *borrowed;      /* data points into this (read-only) */
  gsize counted;         /* bytes this tensor adds to graft_rt_tensor_get_live_bytes() */
  gsize capacity;        /* bytes of a pooled buffer: nbytes or more */

  /*< public >*/
  GraftRtKind kind;
  GraftDType dtype;      /* element type; for SEQUENCE/NONE the declared element type if known */
  int rank;
  gint64 dims[GRAFT_RT_MAX_RANK];
  gint64 numel;
  gsize nbytes;
  gpointer data;
  GPtrArray *items;      /* SEQUENCE only */
};

/* A free-list of buffers by size, so that repeated runs of the same graph
 * allocate nothing after the first one. Thread-safe. */
GraftRtPool *graft_rt_pool_new (void);
GraftRtPool *graft_rt_pool_ref (GraftRtPool *pool);
void graft_rt_pool_unref (GraftRtPool *pool);

/* Bytes held by all runtime tensors of the process (buffers, and the
 * text of string tensors that kernels report with
 * graft_rt_tensor_count_string_bytes()): what a run's memory budget reads. */
gint64 graft_rt_tensor_get_live_bytes (void);

/* Adds the text of a string tensor's elements to its counted bytes
 * (kernels that fill string tensors call it once the strings are set). */
void graft_rt_tensor_count_string_bytes (GraftRtTensor *self);

/* The memory limit of the run on the calling thread, 0 for none (the
 * runtime sets it for the length of a run): a tensor of more than 1 MiB
 * (a string tensor's heap blocks counted) that would take the live bytes
 * past it is refused with GRAFT_RUNTIME_ERROR_TOO_LARGE before it is
 * allocated. Smaller ones are left to the check between steps. */
void graft_rt_tensor_set_thread_limit (guint64 bytes);

/* Zero-filled tensor. Returns NULL (with error) for hostile sizes. */
GraftRtTensor *graft_rt_tensor_new (GraftDType dtype, int rank, const gint64 *dims, GError **error);
/* Like graft_rt_tensor_new but takes the buffer from pool (not zeroed). */
GraftRtTensor *graft_rt_tensor_new_pooled (GraftRtPool *pool, GraftDType dtype, int rank,
                                           const gint64 *dims, GError **error);
GraftRtTensor *graft_rt_tensor_new_scalar_i64 (gint64 value);
GraftRtTensor *graft_rt_tensor_new_scalar_f32 (float value);
GraftRtTensor *graft_rt_tensor_new_sequence (GraftDType elem_dtype);
GraftRtTensor *graft_rt_tensor_new_none (GraftDType elem_dtype);

/* Borrows the data of a model constant (no copy for numeric types). */
GraftRtTensor *graft_rt_tensor_new_from_tensor (GraftTensor *tensor, GError **error);
/* Over bytes (C order, exactly the shape's size; not strings): borrowed,
 * read-only, when 16-byte aligned (the tensor keeps a reference), else
 * copied. */
GraftRtTensor *graft_rt_tensor_new_from_bytes (GraftDType dtype, int rank, const gint64 *dims, GBytes *bytes,
                                               GError **error);
/* Copies into an IR tensor (for writers and the GUI). */
GraftTensor *graft_rt_tensor_to_tensor (const GraftRtTensor *self, const char *name);

GraftRtTensor *graft_rt_tensor_ref (GraftRtTensor *self);
void graft_rt_tensor_unref (GraftRtTensor *self);

/* Deep copy (writable). */
GraftRtTensor *graft_rt_tensor_copy (const GraftRtTensor *self, GError **error);
/* Same data, new shape (numel must match); shares a read-only view when
 * possible, the result must not be written to. */
GraftRtTensor *graft_rt_tensor_reshape (GraftRtTensor *self, int rank, const gint64 *dims, GError **error);

gboolean graft_rt_tensor_is_writable (const GraftRtTensor *self);
void graft_rt_tensor_get_shape (const GraftRtTensor *self, GraftShape *shape);
gboolean graft_rt_tensor_same_shape (const GraftRtTensor *a, const GraftRtTensor *b);
/* "float32[2,3]" */
char *graft_rt_tensor_describe (const GraftRtTensor *self);

/* Element access converting through double / gint64 (slow paths). */
double graft_rt_tensor_get_f64 (const GraftRtTensor *self, gint64 index);
void graft_rt_tensor_set_f64 (GraftRtTensor *self, gint64 index, double value);
gint64 graft_rt_tensor_get_i64 (const GraftRtTensor *self, gint64 index);
void graft_rt_tensor_set_i64 (GraftRtTensor *self, gint64 index, gint64 value);

/* New float32 tensor with the values of self (any numeric dtype). */
GraftRtTensor *graft_rt_tensor_to_float32 (const GraftRtTensor *self, GError **error);
/* New tensor of dtype with the values of self, as ONNX Cast does
 * (saturation is not applied; float → int truncates toward zero). */
GraftRtTensor *graft_rt_tensor_cast (const GraftRtTensor *self, GraftDType dtype, GError **error);

/* Half-precision conversions (IEEE binary16 and bfloat16). */
float graft_half_to_float (guint16 h);
guint16 graft_float_to_half (float f);
float graft_bfloat16_to_float (guint16 b);
guint16 graft_float_to_bfloat16 (float f);

/* Size in bytes of one element as stored by the runtime (strings: a pointer). */
gsize graft_rt_dtype_size (GraftDType dtype);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftRtTensor, graft_rt_tensor_unref)

G_END_DECLS
