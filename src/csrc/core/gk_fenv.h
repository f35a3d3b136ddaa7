/* The default floating-point environment, for computations whose results are defined
 * exactly (QLinearMatMul's requantization rounds half to even by definition) and so must
 * not follow a mode the calling thread has set: fesetround, FTZ/DAZ set by a library
 * built with -ffast-math, a trap enabled with feenableexcept.
 *
 *   gk_fenv_is_default()  this thread's environment is the default one: round to nearest
 *                         with every exception masked, and on x86 MXCSR's FTZ and DAZ
 *                         off (bits 6-15 == 0x1F80), on ARM64 every FPCR mode bit clear
 *                         (rounding, FZ, FZ16, DN, AHP, FEAT_AFP's FIZ/AH/NEP, traps).
 *                         Cheap: one register read; no fegetenv (x87's fnstenv is slow).
 *   GK_FENV_DEFAULT_BEGIN / GK_FENV_DEFAULT_END  bracket a computation that must run in
 *                         the default environment: outside it, nothing happens; inside a
 *                         non-default one, FE_DFL_ENV is set and the caller's restored
 *                         after (status flags raised meanwhile are dropped).  The thread
 *                         pool's workers take the caller's environment at each job
 *                         (gk_parallel.c), so they run in the default one too. */
#ifndef GK_CORE_FENV_H
#define GK_CORE_FENV_H

#include <fenv.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include <xmmintrin.h>
static inline int gk_fenv_is_default(void)
{
    return (_mm_getcsr() & 0xFFC0u) == 0x1F80u && fegetround() == FE_TONEAREST;
}
#elif defined(__aarch64__) || defined(_M_ARM64)
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif
static inline int gk_fenv_is_default(void)
{
    uint64_t fpcr;
#if defined(_MSC_VER) && !defined(__clang__)
    fpcr = (uint64_t)_ReadStatusReg(ARM64_SYSREG(3, 3, 4, 4, 0)); /* FPCR */
#else
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
#endif
    /* AHP 26, DN 25, FZ 24, RMode 23:22, FZ16 19, trap enables 15 and 12:8, NEP/AH/FIZ
     * 2:0: all clear in the default environment (bits it ignores are RES0 on ARMv8.0; a
     * CPU without FEAT_AFP reads bits 0-2 as zero).  volatile: read at every call,
     * never hoisted past a call that may change FPCR. */
    return (fpcr & 0x07C89F07u) == 0u;
}
#else
static inline int gk_fenv_is_default(void) { return fegetround() == FE_TONEAREST; }
#endif

#define GK_FENV_DEFAULT_BEGIN                                                              \
    fenv_t gk_fenv_saved_;                                                                 \
    const int gk_fenv_swap_ = !gk_fenv_is_default();                                       \
    if (gk_fenv_swap_) {                                                                   \
        fegetenv(&gk_fenv_saved_);                                                         \
        fesetenv(FE_DFL_ENV);                                                              \
    }
#define GK_FENV_DEFAULT_END                                                                \
    if (gk_fenv_swap_)                                                                     \
        fesetenv(&gk_fenv_saved_);

#endif
