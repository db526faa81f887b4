/* libFuzzer harness: the ONNX reader, then the writer on what was read
 * and the reader again on what was written; lint on the model too (shape
 * inference and the structure checks run over anything a file can say). */
#include "lint/diagnostics.h"
#include "onnx/reader.h"
#include "onnx/writer.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GBytes) bytes = g_bytes_new_static (data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_onnx_read_bytes (bytes, "fuzz.onnx", NULL, NULL, NULL, NULL, &error);

  g_assert ((model == NULL) == (error != NULL));
  if (model == NULL)
    return 0;
  g_autoptr(GPtrArray) diagnostics = graft_lint_model (model, NULL);
  g_autoptr(GBytes) written = graft_onnx_model_to_bytes (model, NULL);
  if (written)
    {
      g_autoptr(GraftModel) again = graft_onnx_read_bytes (written, "written.onnx", NULL, NULL, NULL, NULL, NULL);
    }
  return 0;
}
