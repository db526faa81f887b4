/* The two generations of TorchScript writers the tests read files from:
 * the test venv's PyTorch 2.x (tests/python) and Debian's python3-torch
 * 1.13 (GRAFT_TEST_LEGACY_PYTHON). Each writes its own fixture folder
 * with tests/fixtures/make-torchscript-fixtures.py, whose manifest.json
 * lists the fixtures written and, for those that Python cannot make, why. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_TORCH_CURRENT,   /* tests/python: PyTorch 2.x */
  GRAFT_TORCH_LEGACY,    /* /usr/bin/python3: Debian's PyTorch 1.13 */
  GRAFT_TORCH_N_GENERATIONS
} GraftTorchGeneration;

/* "current" / "legacy": the test path segment */
const char *graft_torch_generation_name (GraftTorchGeneration generation);

/* The Python that writes this generation's files. */
char *graft_torch_generation_python (GraftTorchGeneration generation);

/* tests/fixtures-generated/torchscript (current) or
 * tests/fixtures-generated/torchscript-legacy, with SUFFIX appended
 * ("-io" for the runtime references, say), relative to the source dir. */
char *graft_torch_generation_dir (GraftTorchGeneration generation, const char *suffix);

/* NULL when this generation's torch imports; otherwise why not. The
 * current generation must have its torch: its absence aborts the test. */
const char *graft_torch_generation_missing (GraftTorchGeneration generation);

/* Runs make-torchscript-fixtures.py (cached) and returns the absolute
 * fixture folder, or NULL when the generation is missing. */
char *graft_torch_generation_fixtures (GraftTorchGeneration generation, const char *const *extra_args);

/* Runs SCRIPT FIXTURE_DIR OUTDIR with this generation's Python, where
 * OUTDIR is graft_torch_generation_dir (generation, suffix); returns
 * OUTDIR (absolute), or NULL when the generation is missing. */
char *graft_torch_generation_run (GraftTorchGeneration generation, const char *script, const char *fixture_dir,
                                  const char *suffix);

/* The fixtures of FIXTURE_DIR's manifest.json, written and skipped, added
 * to NAMES (a set of names the caller owns) so that a test can register
 * the same cases for both generations. */
void graft_torch_generation_add_names (const char *fixture_dir, GHashTable *names);

/* Why FIXTURE_DIR has no NAME (the manifest's "skipped" reason), or NULL
 * when it was written. */
char *graft_torch_generation_skip_reason (const char *fixture_dir, const char *name);

/* One test case: the fixture NAME of one generation. */
typedef struct {
  GraftTorchGeneration generation;
  const char *name;
} GraftTorchGenerationCase;

/* TRUE after g_test_skip, saying why, when the case's generation is
 * missing (FIXTURE_DIR NULL) or could not make the fixture. */
gboolean graft_torch_generation_skip (const GraftTorchGenerationCase *c, const char *fixture_dir);

/* Sorted keys of NAMES. */
GPtrArray *graft_torch_generation_sorted (GHashTable *names);

G_END_DECLS
