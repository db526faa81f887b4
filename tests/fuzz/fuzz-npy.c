/* libFuzzer harness: the .npy reader (inputs of graft-cli run). */
#include "runtime/npy.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) tensor = graft_npy_parse (data, size, "fuzz.npy", &error);

  g_assert ((tensor == NULL) == (error != NULL));
  if (tensor)
    {
      /* What was read must write back. */
      g_autoptr(GBytes) bytes = graft_npy_serialize (tensor, NULL);
    }
  return 0;
}
