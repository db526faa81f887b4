#include "runtime/simd.h"

#include <string.h>

#include "runtime/kernels/simd-target.h"

#if defined(GRAFT_HAVE_X86_SIMD) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

/* probe's answer, asked once whatever the threads (AMX's asks the kernel
 * for leave, which must not race). */
static gboolean
probe_once (gsize *answer, gboolean (*probe) (void))
{
  if (g_once_init_enter (answer))
    g_once_init_leave (answer, probe () ? 2 : 1);
  return *answer == 2;
}

static gboolean
avx512_vnni_present (void)
{
#ifdef GRAFT_HAVE_X86_SIMD
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx512vnni") != 0;
#else
  return FALSE;
#endif
}

gboolean
graft_simd_cpu_has_avx512_vnni (void)
{
  static gsize present = 0;

  return probe_once (&present, avx512_vnni_present);
}

static gboolean
avx512_bf16_present (void)
{
#ifdef GRAFT_HAVE_X86_SIMD
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx512bf16") != 0;
#else
  return FALSE;
#endif
}

gboolean
graft_simd_cpu_has_avx512_bf16 (void)
{
  static gsize present = 0;

  return probe_once (&present, avx512_bf16_present);
}

/* -1 until first asked: then GRAFT_AMX (anything but 0 allows it). */
static int amx_allowed = -1;

/* CPUID leaf 7 (AMX-TILE, AMX-INT8), the OS's XCR0 enabling the tile
 * state, and this process's permission to use it. */
static gboolean
amx_int8_usable (void)
{
#if defined(GRAFT_HAVE_X86_SIMD) && defined(__linux__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count (7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 24)) || !(edx & (1u << 25)))
    return FALSE;
  if (!__get_cpuid (1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27)))   /* OSXSAVE: xgetbv works */
    return FALSE;
  unsigned xcr0_lo, xcr0_hi;
  __asm__ volatile ("xgetbv" : "=a" (xcr0_lo), "=d" (xcr0_hi) : "c" (0));
  if ((xcr0_lo & (3u << 17)) != (3u << 17))   /* XTILECFG and XTILEDATA */
    return FALSE;
  const long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  return syscall (SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
#else
  return FALSE;
#endif
}

gboolean
graft_simd_has_amx_int8 (void)
{
  static gsize usable = 0;

  if (!probe_once (&usable, amx_int8_usable))
    return FALSE;
  if (amx_allowed < 0)
    {
      const char *env = g_getenv ("GRAFT_AMX");
      amx_allowed = env == NULL || strcmp (env, "0") != 0;
    }
  return amx_allowed && graft_simd_get_level () >= GRAFT_SIMD_AVX512;
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
