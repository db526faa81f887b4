/* What the pt2 tests share: Graft's outputs against PyTorch's, and the
 * programs of tests/pt2/make-pt2-save-fixtures.py. */
#pragma once

#include <math.h>
#include <glib.h>
#include "runtime/rt-tensor.h"
#include "../onnx/fixtures.h"

/* The folder of make-pt2-save-fixtures.py's programs (made once per run,
 * cached by digest across runs). */
static inline const char *
graft_test_pt2_save_fixtures (void)
{
  static char *dir;

  if (dir == NULL)
    dir = graft_test_generate_fixtures ("tests/pt2/make-pt2-save-fixtures.py", "tests/fixtures-generated/pt2-save",
                                        NULL);
  return dir;
}

/* got has want's shape and max |got − want| ≤ 1e-4·max|want|; label
 * names the output in the messages. */
static inline void
graft_test_assert_matches_torch (const GraftRtTensor *got, const GraftRtTensor *want, const char *label)
{
  g_assert_cmpint (got->rank, ==, want->rank);
  for (int d = 0; d < got->rank; d++)
    g_assert_cmpint (got->dims[d], ==, want->dims[d]);
  double max_ref = 0, max_error = 0;
  for (gint64 k = 0; k < want->numel; k++)
    {
      double w = graft_rt_tensor_get_f64 (want, k), g = graft_rt_tensor_get_f64 (got, k);
      max_ref = MAX (max_ref, fabs (w));
      max_error = MAX (max_error, fabs (w - g));
    }
  g_test_message ("%s: max error %g, bound %g", label, max_error, 1e-4 * max_ref);
  if (max_error > 1e-4 * max_ref)
    g_error ("%s: max error %g > %g", label, max_error, 1e-4 * max_ref);
}
