#include "ir/tensor-view.h"

#include <string.h>
#include "ir/model-error.h"
#include "ir/shape.h"

static void
append_list (GString *text, const char *label, const gint64 *values, int rank)
{
  g_string_append_printf (text, "%s [", label);
  for (int k = 0; k < rank; k++)
    g_string_append_printf (text, "%s%" G_GINT64_FORMAT, k ? ", " : "", values[k]);
  g_string_append_c (text, ']');
}

/* "tensor "w" (sizes [2, 2], strides [2, 1], storage offset 0)" */
static char *
describe (const GraftTensorView *view, const char *tensor_name)
{
  GString *text = g_string_new (NULL);
  g_string_append_printf (text, "tensor \"%s\" (", tensor_name);
  append_list (text, "sizes", view->sizes, view->rank);
  if (view->strides != NULL)
    append_list (text, ", strides", view->strides, view->rank);
  g_string_append_printf (text, ", storage offset %" G_GINT64_FORMAT ")", view->storage_offset);
  return g_string_free (text, FALSE);
}

static gboolean fail (GError **error, GraftModelError code, const GraftTensorView *view, const char *tensor_name,
                      const char *format, ...) G_GNUC_PRINTF (5, 6);

static gboolean
fail (GError **error, GraftModelError code, const GraftTensorView *view, const char *tensor_name,
      const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *problem = g_strdup_vprintf (format, args);
  va_end (args);
  g_autofree char *what = describe (view, tensor_name);
  g_set_error (error, GRAFT_MODEL_ERROR, code, "%s %s", what, problem);
  return FALSE;
}

static gint64
stride_of (const GraftTensorView *view, int k, gint64 row_major)
{
  return view->strides != NULL ? view->strides[k] : row_major;
}

gboolean
graft_tensor_view_measure (const GraftTensorView *view, guint64 storage_bytes, const char *tensor_name,
                           GraftTensorViewExtent *extent, GError **error)
{
  gint64 numel = 1, nbytes, row_major = 1;

  memset (extent, 0, sizeof *extent);
  if (view->storage_offset < 0)
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name,
                 "starts before its storage: PyTorch storage offsets are never negative");
  for (int k = 0; k < view->rank; k++)
    if (view->sizes[k] < 0)
      return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name, "has a negative size in dim %d", k);
  for (int k = 0; k < view->rank; k++)
    if (!graft_dim_mul_checked (numel, view->sizes[k], &numel))
      return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name, "has more than 2^63 elements");
  if (!graft_dim_mul_checked (numel, (gint64) view->element_size, &nbytes))
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name, "holds more than 2^63 bytes");
  for (int k = 0; k < view->rank; k++)
    if (stride_of (view, k, 0) < 0)
      return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name,
                   "has a negative stride in dim %d: PyTorch views have none", k);
  extent->numel = numel;
  extent->nbytes = (guint64) nbytes;
  extent->contiguous = TRUE;
  if (numel == 0)
    return TRUE;   /* reads nothing */
  /* Strides are not negative: the first element read is the offset, the
   * last one the offset plus each dim's reach. Every size is at least 1
   * and their product fits, so the row-major strides do too. */
  gint64 last = view->storage_offset, first_byte, end_byte;
  for (int k = view->rank - 1; k >= 0; k--)
    {
      gint64 stride = stride_of (view, k, row_major), reach;
      if (view->sizes[k] != 1 && stride != row_major)
        extent->contiguous = FALSE;
      row_major *= view->sizes[k];
      if (!graft_dim_mul_checked (view->sizes[k] - 1, stride, &reach) || !graft_dim_add_checked (last, reach, &last))
        return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name, "reaches past element 2^63");
    }
  if (!graft_dim_mul_checked (view->storage_offset, (gint64) view->element_size, &first_byte) ||
      !graft_dim_add_checked (last, 1, &end_byte) ||
      !graft_dim_mul_checked (end_byte, (gint64) view->element_size, &end_byte))
    return fail (error, GRAFT_MODEL_ERROR_MALFORMED, view, tensor_name, "reaches past byte 2^63");
  if ((guint64) end_byte > storage_bytes)
    return fail (error, GRAFT_MODEL_ERROR_TRUNCATED, view, tensor_name,
                 "needs %" G_GINT64_FORMAT " bytes of its storage, which holds %" G_GUINT64_FORMAT,
                 end_byte, storage_bytes);
  extent->first_byte = (guint64) first_byte;
  extent->end_byte = (guint64) end_byte;
  return TRUE;
}

void
graft_tensor_view_gather (const GraftTensorView *view, const GraftTensorViewExtent *extent,
                          const guint8 *storage, guint8 *dest)
{
  gsize element = view->element_size;
  if (extent->contiguous)
    {
      memcpy (dest, storage + extent->first_byte, extent->nbytes);
      return;
    }
  /* The innermost dim is walked in a tight loop; the outer ones as an
   * odometer. Each address is below extent->end_byte (measured). */
  int inner = view->rank - 1;
  gint64 inner_size = view->sizes[inner], inner_stride = view->strides[inner];
  gint64 *index = g_new0 (gint64, view->rank);
  for (gint64 done = 0; done < extent->numel; done += inner_size)
    {
      gint64 at = view->storage_offset;
      for (int k = 0; k < inner; k++)
        at += index[k] * view->strides[k];
      for (gint64 i = 0; i < inner_size; i++, dest += element)
        memcpy (dest, storage + (gsize) (at + i * inner_stride) * element, element);
      for (int k = inner - 1; k >= 0; k--)
        {
          if (++index[k] < view->sizes[k])
            break;
          index[k] = 0;
        }
    }
  g_free (index);
}
