/* Fixtures of the GUI tests, made by the Python scripts of tests/gui with
 * Debian's python3-onnx and python3-torch and cached under
 * tests/fixtures-generated/gui. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The path of file_name, running script_name to make it when missing; a
 * failing script fails the test. */
char *generated_fixture (const char *script_name, const char *file_name);

/* The model the latency tests time: the file the environment variable
 * override_variable names, else transformer24.onnx (2.5k nodes), exported
 * by tests/fixtures/make-onnx-models.py. */
char *transformer_fixture (const char *override_variable);

G_END_DECLS
