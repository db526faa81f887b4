/* libFuzzer harness: the parser of TorchScript code/ files. */
#include "torchscript/script-parser.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ScriptModule) module = script_module_parse ((const char *) data, size, "fuzz.py", &error);

  g_assert ((module == NULL) == (error != NULL));
  return 0;
}
