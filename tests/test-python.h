/* The Pythons the tests spawn. */
#pragma once

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

/* SOURCE_DIR/tests/python: the test venv (PyTorch 2.13, onnx, onnxruntime,
 * transformers), made by `make test-venv` from tests/requirements.txt. */
static inline char *
graft_test_python (void)
{
  const char *source = g_getenv ("GRAFT_SOURCE_DIR");

  if (source == NULL || *source == '\0')
    g_error ("GRAFT_SOURCE_DIR is not set: run the tests through meson test");
  return g_build_filename (source, "tests", "python", NULL);
}

/* For a program whose cases all need the test venv: without it (no
 * `make test-venv`; tests/python then exits 127), the whole program is a
 * TAP skip, which meson counts as skipped, instead of a failure. Call it
 * after g_test_init (). */
static inline void
graft_test_require_venv (void)
{
  g_autofree char *python = graft_test_python ();
  const char *const argv[] = { python, "-c", "", NULL };
  int status;

  if (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                    NULL, NULL, NULL, &status, NULL)
      && g_spawn_check_wait_status (status, NULL))
    return;
  printf ("1..0 # SKIP no test venv: run 'make test-venv'\n");
  exit (0);
}

/* Debian's own Python with its python3-torch: a second, older generation of
 * TorchScript writers (1.13 on Debian 12). Absent on a Debian without it. */
#define GRAFT_TEST_LEGACY_PYTHON "/usr/bin/python3"

/* Runs a tool to the end, its output discarded; on failure the error
 * carries its stderr. */
static inline gboolean
graft_test_spawn (const char *const *argv, GError **error)
{
  int status;
  g_autofree char *err = NULL;

  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                     &err, &status, error))
    return FALSE;
  if (!g_spawn_check_wait_status (status, error))
    {
      g_prefix_error (error, "%s: %s: ", argv[0], err ? err : "");
      return FALSE;
    }
  return TRUE;
}
