/* libFuzzer harness: the PyTorch loader from the file on (zip archive,
 * TorchScript pickles and code, torch.save state dicts, .pt2, ExecuTorch
 * .pte flatbuffers): each input is written to a file in $TMPDIR and opened
 * with graft_model_load(). The executorch-*.pte seeds are programs
 * executorch 1.5.1 wrote (tests/pte/check-pte.py's MLP, its
 * XNNPACK-delegated twin, a program with aten::erfinv, the CNN with its
 * constants inline). */
#include <unistd.h>
#include <glib/gstdio.h>
#include "loader.h"
#include "../test-scratch.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

static char *path;

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GError) error = NULL;

  if (path == NULL)
    path = graft_test_scratch_file ("graft-fuzz-XXXXXX");
  g_assert (g_file_set_contents (path, (const char *) data, (gssize) size, NULL));
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert ((model == NULL) == (error != NULL));
  return 0;
}
