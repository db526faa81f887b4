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
