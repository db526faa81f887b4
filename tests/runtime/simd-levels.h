/* Running a kernel test at one SIMD level (runtime/simd.h). */
#pragma once

#include <glib.h>
#include "runtime/simd.h"

/* Caps the runtime at level and returns TRUE, or marks the test skipped
 * with the reason and returns FALSE when this CPU lacks that level: a
 * variant the CPU cannot run is never reported as passed. Undo the cap
 * with graft_simd_set_max_level (GRAFT_SIMD_AVX512). */
static inline gboolean
graft_test_use_simd_level (GraftSimdLevel level)
{
  if (graft_simd_cpu_level () < level)
    {
      g_autofree char *reason = g_strdup_printf ("needs %s; this CPU has %s", graft_simd_level_to_string (level),
                                                 graft_simd_level_to_string (graft_simd_cpu_level ()));
      g_test_skip (reason);
      return FALSE;
    }
  graft_simd_set_max_level (level);
  return TRUE;
}

/* One case of a table at one SIMD level, handed to the test function of
 * graft_test_add_cases_at_levels. */
typedef void (*GraftTestLevelCheck) (gconstpointer item, GraftSimdLevel level);

typedef struct {
  gconstpointer item;             /* &table[i] */
  GraftSimdLevel level;
  GraftTestLevelCheck check;      /* graft_test_add_checks_at_levels' */
} GraftTestLevelCase;

/* Adds func as /prefix/<level>/case-<i> for every item of the table
 * (n_items of item_size bytes) at every level from portable to AVX-512;
 * func gets a GraftTestLevelCase, holding check. */
static inline void
graft_test_add_level_cases (const char *prefix, gconstpointer table, gsize item_size, guint n_items,
                            GTestDataFunc func, GraftTestLevelCheck check)
{
  for (GraftSimdLevel level = GRAFT_SIMD_PORTABLE; level <= GRAFT_SIMD_AVX512; level++)
    for (guint i = 0; i < n_items; i++)
      {
        GraftTestLevelCase *lc = g_new (GraftTestLevelCase, 1);
        *lc = (GraftTestLevelCase) { (const char *) table + i * item_size, level, check };
        g_autofree char *path = g_strdup_printf ("%s/%s/case-%u", prefix, graft_simd_level_to_string (level), i);
        g_test_add_data_func_full (path, lc, func, g_free);
      }
}

/* The same for a test function that caps the level itself. */
static inline void
graft_test_add_cases_at_levels (const char *prefix, gconstpointer table, gsize item_size, guint n_items,
                                GTestDataFunc func)
{
  graft_test_add_level_cases (prefix, table, item_size, n_items, func, NULL);
}

/* The test of graft_test_add_checks_at_levels: its check capped at the
 * case's level (skipped where the CPU lacks it), the cap lifted after. */
static inline void
graft_test_run_check_at_level (gconstpointer data)
{
  const GraftTestLevelCase *lc = data;
  if (!graft_test_use_simd_level (lc->level))
    return;
  lc->check (lc->item, lc->level);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* graft_test_add_level_cases for a check that needs nothing but the
 * item and the level it runs at. */
static inline void
graft_test_add_checks_at_levels (const char *prefix, gconstpointer table, gsize item_size, guint n_items,
                                 GraftTestLevelCheck check)
{
  graft_test_add_level_cases (prefix, table, item_size, n_items, graft_test_run_check_at_level, check);
}
