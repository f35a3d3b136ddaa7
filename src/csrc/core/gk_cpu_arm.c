/* ARM64 feature detection (auxiliary vector on Linux/Android, sysctl on macOS, the
 * platform API on Windows).  NEON (AdvSIMD) is part of the ARM64 baseline, so it is always
 * reported.  Runs no SIMD instruction and reads no system register (MRS of ID registers
 * traps or is emulated inconsistently across kernels); a feature the OS does not report
 * is treated as absent.  Other ARM64 systems get NEON only.
 * i8mm is reported only together with dotprod: the i8mm files are compiled with
 * +dotprod+i8mm, and every core with FEAT_I8MM (Armv8.6) also has FEAT_DotProd.
 * bf16 (FEAT_BF16) is reported on its own: the neonbf16 files need nothing else. */
#include "gemmkit/gk_dispatch.h"

#if defined(__aarch64__) || defined(_M_ARM64)

#if defined(__linux__)
#include <sys/auxv.h>
/* Bit values of the Linux arm64 ABI (arch/arm64/include/uapi/asm/hwcap.h); they are
 * stable, so they are defined here for toolchains whose headers predate them. */
#ifndef AT_HWCAP
#define AT_HWCAP 16
#endif
#ifndef AT_HWCAP2
#define AT_HWCAP2 26
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif

unsigned gk_cpu_features_arm(void)
{
    unsigned f = GK_CPU_NEON;
    unsigned long hw = getauxval(AT_HWCAP);
    unsigned long hw2 = getauxval(AT_HWCAP2); /* 0 on kernels without AT_HWCAP2 */
    if (hw & HWCAP_ASIMDDP)
        f |= GK_CPU_NEONDOT;
    if ((hw2 & HWCAP2_I8MM) && (f & GK_CPU_NEONDOT))
        f |= GK_CPU_I8MM;
    if (hw2 & HWCAP2_BF16)
        f |= GK_CPU_BF16;
    return f;
}

#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>

/* 1 when the sysctl exists and is non-zero; older macOS versions lack these names. */
static int gk_sysctl_flag(const char *name)
{
    int v = 0;
    size_t len = sizeof(v);
    if (sysctlbyname(name, &v, &len, 0, 0) != 0)
        return 0;
    return v != 0;
}

unsigned gk_cpu_features_arm(void)
{
    unsigned f = GK_CPU_NEON;
    if (gk_sysctl_flag("hw.optional.arm.FEAT_DotProd"))
        f |= GK_CPU_NEONDOT;
    if ((f & GK_CPU_NEONDOT) && gk_sysctl_flag("hw.optional.arm.FEAT_I8MM"))
        f |= GK_CPU_I8MM;
    if (gk_sysctl_flag("hw.optional.arm.FEAT_BF16"))
        f |= GK_CPU_BF16;
    return f;
}

#elif defined(_WIN32)
#include <windows.h>

unsigned gk_cpu_features_arm(void)
{
    unsigned f = GK_CPU_NEON;
#ifdef PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE
    if (IsProcessorFeaturePresent(PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE))
        f |= GK_CPU_NEONDOT;
#endif
    /* Only an SDK that names an AdvSIMD i8mm feature can report it; without that name
     * (older SDKs) i8mm stays off rather than trusting a guessed constant. */
#ifdef PF_ARM_V82_I8MM_INSTRUCTIONS_AVAILABLE
    if ((f & GK_CPU_NEONDOT) &&
        IsProcessorFeaturePresent(PF_ARM_V82_I8MM_INSTRUCTIONS_AVAILABLE))
        f |= GK_CPU_I8MM;
#endif
#ifdef PF_ARM_V86_BF16_INSTRUCTIONS_AVAILABLE
    if (IsProcessorFeaturePresent(PF_ARM_V86_BF16_INSTRUCTIONS_AVAILABLE))
        f |= GK_CPU_BF16;
#endif
    return f;
}

#else
unsigned gk_cpu_features_arm(void)
{
    return GK_CPU_NEON;
}
#endif

#else
typedef int gk_cpu_arm_unused;
#endif
