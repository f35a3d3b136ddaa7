/* ARM64 feature detection (auxiliary vector on Linux, sysctl on macOS, the platform API on
 * Windows).  NEON is part of the ARM64 baseline.  Runs no SIMD instruction. */
#include "gemmkit/gk_dispatch.h"

#if defined(__aarch64__) || defined(_M_ARM64)
unsigned gk_cpu_features_arm(void)
{
    return GK_CPU_NEON; /* dot-product / i8mm detection: see the int8 engine issue */
}
#else
typedef int gk_cpu_arm_unused;
#endif
