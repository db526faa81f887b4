/* Test fixtures generated at test time by Python scripts in tests/. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* GRAFT_SOURCE_DIR (set by meson's test_env), or the compile-time fallback. */
const char *graft_test_source_dir (void);

/* Runs SOURCE_DIR/tests/python (the test venv) SOURCE_DIR/script OUTDIR [extra_args...], where
 * OUTDIR is SOURCE_DIR/outdir_rel, and returns OUTDIR. A generator that
 * fails (a missing Python module, say) fails the calling test: fixtures
 * are never silently skipped. */
char *graft_test_generate_fixtures (const char *script, const char *outdir_rel, const char *const *extra_args);

/* The same with another Python (GRAFT_TEST_LEGACY_PYTHON, say). */
char *graft_test_generate_fixtures_with (const char *python, const char *script, const char *outdir_rel,
                                         const char *const *extra_args);

/* Runs BUILD_DIR/app/graft-cli info --json path and returns the parsed
 * output; a failed run or unparsable output fails the calling test. */
JsonParser *graft_test_cli_info_json (const char *path);

/* SOURCE_DIR/relative */
char *graft_test_source_path (const char *relative);

G_END_DECLS
