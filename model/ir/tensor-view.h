/* A strided view of a storage, as PyTorch files describe their tensors:
 * sizes, strides and a storage offset, all in elements.
 *
 * Every number comes from the file. The view is measured once, with every
 * product and sum overflow-checked, before any byte of the storage is
 * touched: the lowest and highest byte it reads must lie inside the
 * storage, so no view can read before or past it, wrap around to element
 * 0, or size a copy smaller than what is written into it. TorchScript
 * archives, torch.save state dicts and torch.export programs all read
 * their weights through this (pytorch/torch-archive.h gathers the
 * bytes, paying for copies from the load's allocation budget). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  int rank;
  const gint64 *sizes;      /* rank entries */
  const gint64 *strides;    /* rank entries, in elements; NULL: row-major contiguous */
  gint64 storage_offset;    /* in elements */
  gsize element_size;       /* bytes */
} GraftTensorView;

typedef struct {
  gint64 numel;
  guint64 nbytes;           /* numel × element_size: the row-major copy */
  guint64 first_byte;       /* the lowest storage byte the view reads */
  guint64 end_byte;         /* one past the highest (first_byte when numel is 0) */
  gboolean contiguous;      /* row-major: the view is storage[first_byte, first_byte + nbytes) */
} GraftTensorViewExtent;

/* Measures view against a storage of storage_bytes bytes. Fails with
 * GRAFT_MODEL_ERROR_MALFORMED (a negative size, stride or offset, which
 * PyTorch never writes; an element count or reach past 2^63) or
 * GRAFT_MODEL_ERROR_TRUNCATED (the view reads past the storage), the
 * message naming the tensor (tensor_name) and its sizes, strides and
 * offset. */
gboolean graft_tensor_view_measure (const GraftTensorView *view, guint64 storage_bytes, const char *tensor_name,
                                    GraftTensorViewExtent *extent, GError **error);

/* Copies the elements of a measured view from storage into dest
 * (extent->nbytes bytes) in row-major order. */
void graft_tensor_view_gather (const GraftTensorView *view, const GraftTensorViewExtent *extent,
                               const guint8 *storage, guint8 *dest);

G_END_DECLS
