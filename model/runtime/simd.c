#include "runtime/simd.h"

#include "runtime/kernels/simd-target.h"

static const char *const level_names[] = { "portable", "avx2", "avx512" };

/* -1 until first asked: then GRAFT_SIMD, or no cap. */
static int max_level = -1;

GraftSimdLevel
graft_simd_cpu_level (void)
{
  static int cpu_level = -1;

  if (cpu_level < 0)
    {
#ifdef GRAFT_HAVE_X86_SIMD
      __builtin_cpu_init ();
      if (__builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
        cpu_level = GRAFT_SIMD_AVX512;
      else if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
        cpu_level = GRAFT_SIMD_AVX2;
      else
#endif
        cpu_level = GRAFT_SIMD_PORTABLE;
    }
  return cpu_level;
}

GraftSimdLevel
graft_simd_get_level (void)
{
  if (max_level < 0)
    {
      GraftSimdLevel capped = GRAFT_SIMD_AVX512;
      const char *env = g_getenv ("GRAFT_SIMD");

      if (env != NULL && *env != '\0' && !graft_simd_level_from_string (env, &capped))
        g_warning ("GRAFT_SIMD=%s is not one of portable, avx2, avx512: ignored", env);
      max_level = capped;
    }
  return MIN ((GraftSimdLevel) max_level, graft_simd_cpu_level ());
}

gboolean
graft_simd_has_avx512_vnni (void)
{
  static int cpu_has = -1;

  if (cpu_has < 0)
    {
#ifdef GRAFT_HAVE_X86_SIMD
      __builtin_cpu_init ();
      cpu_has = __builtin_cpu_supports ("avx512vnni") != 0;
#else
      cpu_has = 0;
#endif
    }
  return cpu_has && graft_simd_get_level () >= GRAFT_SIMD_AVX512;
}

void
graft_simd_set_max_level (GraftSimdLevel level)
{
  g_return_if_fail (level <= GRAFT_SIMD_AVX512);
  max_level = level;
}

const char *
graft_simd_level_to_string (GraftSimdLevel level)
{
  g_return_val_if_fail (level <= GRAFT_SIMD_AVX512, NULL);
  return level_names[level];
}

gboolean
graft_simd_level_from_string (const char *text, GraftSimdLevel *level)
{
  for (guint i = 0; i < G_N_ELEMENTS (level_names); i++)
    if (g_ascii_strcasecmp (text, level_names[i]) == 0)
      {
        *level = i;
        return TRUE;
      }
  return FALSE;
}
