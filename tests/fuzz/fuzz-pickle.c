/* libFuzzer harness: the data-only unpickler (data.pkl, constants.pkl,
 * legacy torch.save streams). */
#include "pytorch/pickle.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  gsize used = 0;
  g_autoptr(GraftPickleValue) value = graft_pickle_load (data, size, "fuzz.pkl", &used, &error);

  g_assert ((value == NULL) == (error != NULL));
  g_assert (value == NULL || used <= size);
  g_free (graft_pickle_peek_first_global (data, size));
  return 0;
}
