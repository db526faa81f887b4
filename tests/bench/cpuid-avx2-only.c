/* An AVX2-only machine on a machine with AVX-512, for `make bench-avx2`.
 *
 * Loaded with LD_PRELOAD into every process of a benchmark (Graft,
 * onnxruntime's Python, PyTorch), it hides AVX-512, AVX-VNNI and AMX from
 * the CPUID instruction, so each runtime picks the kernels it would pick
 * on an AVX2 + FMA CPU. onnxruntime has no switch for that (its MLAS
 * kernels are chosen from CPUID alone), which is why this exists: Graft's
 * speed target holds on AVX2-only machines too, and CI may run on either.
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, 0; the CPU flag
 * cpuid_fault) makes every CPUID instruction of the process raise SIGSEGV;
 * the handler runs the real instruction with faulting briefly off, clears
 * the bits and steps over it. The setting is kept across fork and clone
 * and dropped by execve, where LD_PRELOAD installs it again. Constructors
 * of libraries loaded before this one (glibc's own string functions) have
 * already chosen; GLIBC_TUNABLES covers those (tests/bench/run).
 *
 * Test tooling only: never part of the shipped program. A process that
 * installs its own SIGSEGV handler afterwards would take CPUID's faults
 * itself; none of the benchmarks' runtimes does. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static struct sigaction previous_action;

/* CPUID leaf 7 sub-leaf 0: EBX AVX512F DQ IFMA PF ER CD BW VL */
#define LEAF7_EBX_AVX512 ((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) \
                          | (1u << 30) | (1u << 31))
/* ECX: AVX512_VBMI VBMI2 VNNI BITALG VPOPCNTDQ */
#define LEAF7_ECX_AVX512 ((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14))
/* EDX: AVX512_4VNNIW 4FMAPS VP2INTERSECT, AMX-BF16, AVX512_FP16, AMX-TILE, AMX-INT8 */
#define LEAF7_EDX_AVX512_AMX ((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) \
                              | (1u << 25))
/* sub-leaf 1 EAX: AVX-VNNI, AVX512_BF16 */
#define LEAF7_1_EAX_VNNI_BF16 ((1u << 4) | (1u << 5))
/* leaf 0xD sub-leaf 0 EAX (state the OS may enable): opmask, ZMM, tiles */
#define LEAF_D_EAX_AVX512_AMX ((7u << 5) | (3u << 17))

static void
on_sigsegv (int sig, siginfo_t *info, void *context)
{
  ucontext_t *uc = context;
  const uint8_t *ip = (const uint8_t *) uc->uc_mcontext.gregs[REG_RIP];
  if (ip[0] != 0x0f || ip[1] != 0xa2)
    {
      /* a real fault: returning re-runs the instruction under the
       * handler that was there before (the default one: a core dump) */
      sigaction (SIGSEGV, &previous_action, NULL);
      return;
    }
  uint32_t leaf = (uint32_t) uc->uc_mcontext.gregs[REG_RAX], sub = (uint32_t) uc->uc_mcontext.gregs[REG_RCX];
  uint32_t a, b, c, d;
  syscall (SYS_arch_prctl, ARCH_SET_CPUID, 1);
  __asm__ volatile ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (leaf), "c" (sub));
  syscall (SYS_arch_prctl, ARCH_SET_CPUID, 0);
  if (leaf == 7 && sub == 0)
    {
      b &= ~LEAF7_EBX_AVX512;
      c &= ~LEAF7_ECX_AVX512;
      d &= ~LEAF7_EDX_AVX512_AMX;
    }
  else if (leaf == 7 && sub == 1)
    a &= ~LEAF7_1_EAX_VNNI_BF16;
  else if (leaf == 0xd && sub == 0)
    a &= ~LEAF_D_EAX_AVX512_AMX;
  /* CPUID writes the whole 64-bit registers, upper halves zero */
  uc->uc_mcontext.gregs[REG_RAX] = a;
  uc->uc_mcontext.gregs[REG_RBX] = b;
  uc->uc_mcontext.gregs[REG_RCX] = c;
  uc->uc_mcontext.gregs[REG_RDX] = d;
  uc->uc_mcontext.gregs[REG_RIP] += 2;
}

__attribute__ ((constructor)) static void
hide_avx512 (void)
{
  struct sigaction action;
  memset (&action, 0, sizeof action);
  action.sa_sigaction = on_sigsegv;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset (&action.sa_mask);
  if (sigaction (SIGSEGV, &action, &previous_action) != 0)
    return;
  /* Without CPUID faulting nothing is hidden: tests/bench/run checks what
   * the processes see and refuses to call the result AVX2-only, and with
   * CPUID_AVX2_ONLY_REPORT set this says so (a seccomp filter may forbid
   * the call where the CPU allows it). */
  if (syscall (SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0)
    {
      int error = errno;
      sigaction (SIGSEGV, &previous_action, NULL);
      if (getenv ("CPUID_AVX2_ONLY_REPORT"))
        fprintf (stderr, "cpuid-avx2-only: no CPUID faulting here (%s): nothing hidden\n", strerror (error));
    }
}
