/* ir/tensor-view: the one measure of a strided view that the TorchScript
 * and torch.export readers trust (issue 41), on the edges a file can
 * reach: empty dims beside huge ones, size-1 dims with any stride,
 * transposed, sliced and expanded views gathered element by element. */
#include <string.h>
#include "ir/model-error.h"
#include "ir/tensor-view.h"

static const float storage[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };

static void
measure_ok (const GraftTensorView *view, GraftTensorViewExtent *extent)
{
  g_autoptr(GError) error = NULL;
  g_assert_true (graft_tensor_view_measure (view, sizeof storage, "v", extent, &error));
  g_assert_no_error (error);
}

static void
gather_expect (const GraftTensorView *view, const float *expected, gint64 n, gboolean contiguous)
{
  GraftTensorViewExtent extent;
  measure_ok (view, &extent);
  g_assert_cmpint (extent.numel, ==, n);
  g_assert_cmpuint (extent.nbytes, ==, (guint64) n * sizeof (float));
  g_assert_cmpint (extent.contiguous, ==, contiguous);
  g_autofree float *got = g_new0 (float, n);
  graft_tensor_view_gather (view, &extent, (const guint8 *) storage, (guint8 *) got);
  for (gint64 i = 0; i < n; i++)
    g_assert_cmpfloat (got[i], ==, expected[i]);
}

static void
test_views_gather (void)
{
  /* row-major [3, 4] without strides, and a slice [1:, 1:] at offset 5 */
  const gint64 whole_sizes[] = { 3, 4 };
  GraftTensorView whole = { 2, whole_sizes, NULL, 0, sizeof (float) };
  gather_expect (&whole, storage, 12, TRUE);
  const gint64 slice_sizes[] = { 2, 3 }, slice_strides[] = { 4, 1 };
  GraftTensorView slice = { 2, slice_sizes, slice_strides, 5, sizeof (float) };
  const float slice_values[] = { 5, 6, 7, 9, 10, 11 };
  gather_expect (&slice, slice_values, 6, FALSE);
  /* .t(): element (i, j) is storage[i + 4 j] */
  const gint64 t_sizes[] = { 4, 3 }, t_strides[] = { 1, 4 };
  GraftTensorView transposed = { 2, t_sizes, t_strides, 0, sizeof (float) };
  const float t_values[] = { 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11 };
  gather_expect (&transposed, t_values, 12, FALSE);
  /* expand(3, 5) of a column: stride 0 repeats it */
  const gint64 e_sizes[] = { 3, 5 }, e_strides[] = { 2, 0 };
  GraftTensorView expanded = { 2, e_sizes, e_strides, 1, sizeof (float) };
  const float e_values[] = { 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5 };
  gather_expect (&expanded, e_values, 15, FALSE);
  /* size-1 dims may carry any stride and stay contiguous */
  const gint64 one_sizes[] = { 1, 6, 1 }, one_strides[] = { 999, 1, 12345 };
  GraftTensorView ones = { 3, one_sizes, one_strides, 6, sizeof (float) };
  gather_expect (&ones, storage + 6, 6, TRUE);
}

/* An empty dim makes the view read nothing, however large the others:
 * no product of them is formed (UBSan would see it overflow). */
static void
test_empty_beside_huge (void)
{
  const gint64 sizes[] = { 1ll << 40, 0, 1ll << 40 }, strides[] = { 1ll << 62, 1ll << 62, 1ll << 62 };
  GraftTensorView view = { 3, sizes, strides, 0, sizeof (float) };
  GraftTensorViewExtent extent;
  measure_ok (&view, &extent);
  g_assert_cmpint (extent.numel, ==, 0);
  g_assert_cmpuint (extent.end_byte, ==, 0);
}

typedef struct {
  const char *name;
  int rank;
  gint64 sizes[3], strides[3], offset;
  GraftModelError code;
  const char *message;
} BadView;

static const BadView bad_views[] = {
  { "elements-overflow", 2, { 1ll << 32, 1ll << 32 }, { 0, 0 }, 0, GRAFT_MODEL_ERROR_MALFORMED,
    "has more than 2^63 elements" },
  { "bytes-overflow", 1, { (1ll << 62) + 1 }, { 0 }, 0, GRAFT_MODEL_ERROR_MALFORMED, "holds more than 2^63 bytes" },
  { "negative-size", 1, { -2 }, { 1 }, 0, GRAFT_MODEL_ERROR_MALFORMED, "negative size in dim 0" },
  { "negative-stride", 2, { 2, 2 }, { 1ll << 40, -(1ll << 40) }, 0, GRAFT_MODEL_ERROR_MALFORMED,
    "negative stride in dim 1" },
  { "negative-offset", 1, { 2 }, { 1 }, -1, GRAFT_MODEL_ERROR_MALFORMED, "starts before its storage" },
  { "reach-overflow", 2, { 2, 2 }, { 1ll << 62, 1ll << 62 }, 0, GRAFT_MODEL_ERROR_MALFORMED,
    "reaches past element 2^63" },
  { "offset-bytes-overflow", 1, { 1 }, { 1 }, 1ll << 62, GRAFT_MODEL_ERROR_MALFORMED, "reaches past byte 2^63" },
  { "past-storage", 2, { 3, 2 }, { 4, 1 }, 3, GRAFT_MODEL_ERROR_TRUNCATED,
    "tensor \"v\" (sizes [3, 2], strides [4, 1], storage offset 3) needs 52 bytes of its storage, which holds 48" },
};

static void
test_bad_view (gconstpointer data)
{
  const BadView *c = data;
  GraftTensorView view = { c->rank, c->sizes, c->strides, c->offset, sizeof (float) };
  GraftTensorViewExtent extent;
  g_autoptr(GError) error = NULL;
  g_assert_false (graft_tensor_view_measure (&view, sizeof storage, "v", &extent, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, (gint) c->code);
  g_test_message ("%s", error->message);
  g_assert_true (g_str_has_prefix (error->message, "tensor \"v\" (sizes ["));
  if (strstr (error->message, c->message) == NULL)
    g_error ("\"%s\" does not say \"%s\"", error->message, c->message);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ir/tensor-view/gather", test_views_gather);
  g_test_add_func ("/ir/tensor-view/empty-beside-huge", test_empty_beside_huge);
  for (guint i = 0; i < G_N_ELEMENTS (bad_views); i++)
    {
      g_autofree char *name = g_strdup_printf ("/ir/tensor-view/refused/%s", bad_views[i].name);
      g_test_add_data_func (name, &bad_views[i], test_bad_view);
    }
  return g_test_run ();
}
