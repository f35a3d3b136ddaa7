/* CPU feature detection and the dispatch table.
 *
 * Detection (src/csrc/core/gk_cpu_x86.c, gk_cpu_arm.c) runs no SIMD instruction: it reads
 * CPUID + XGETBV on x86 (a path needs the CPU bit AND the OS-enabled register state) and
 * the auxiliary vector / sysctl / IsProcessorFeaturePresent on ARM64.
 * A path is "available" when it was compiled in (GK_HAVE_<ISA> defined by the build) and
 * the CPU + OS support it.  The table is filled once; GEMMKIT_ISA picks another entry. */
#ifndef GEMMKIT_GK_DISPATCH_H
#define GEMMKIT_GK_DISPATCH_H

#include "gk_qgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Detected CPU features (bit flags). */
enum gk_cpu_feature {
    GK_CPU_SSE41 = 1u << 0,
    GK_CPU_AVX2 = 1u << 1,      /* AVX2 + OS YMM state */
    GK_CPU_FMA = 1u << 2,
    GK_CPU_F16C = 1u << 3,
    GK_CPU_AVX512F = 1u << 4,   /* + OS ZMM/opmask state */
    GK_CPU_AVX512BW = 1u << 5,
    GK_CPU_AVX512VL = 1u << 6,
    GK_CPU_AVX512VNNI = 1u << 7,
    GK_CPU_AVXVNNI = 1u << 8,
    GK_CPU_AVX512BF16 = 1u << 9,
    GK_CPU_AMXINT8 = 1u << 10,  /* AMX-TILE + AMX-INT8, XCR0 tile state, OS permission */
    GK_CPU_NEON = 1u << 16,
    GK_CPU_NEONDOT = 1u << 17,  /* sdot/udot */
    GK_CPU_I8MM = 1u << 18,     /* smmla/usmmla */
};

/* Raw detection, computed once (thread-safe: idempotent pure function of the CPU). */
unsigned gk_cpu_features(void);
/* Names of detected features, for cpu_info(): writes up to `cap` pointers, returns count. */
int gk_cpu_feature_names(const char **names, int cap);

/* All int8 kernel families compiled in, most specific first (scalar last). */
int gk_qgemm_kernel_count(void);
const gk_qgemm_kernel *gk_qgemm_kernel_at(int i);
/* Whether kernel family i can run here (compiled in and CPU/OS support). */
int gk_qgemm_kernel_usable(int i);

/* The active int8 kernel family (default: first usable). */
const gk_qgemm_kernel *gk_qgemm_active(void);
/* Select by ISA name; returns 0 on success, -1 unknown name, -2 not usable here. */
int gk_select_isa(const char *name);
const char *gk_active_isa(void);

#ifdef __cplusplus
}
#endif
#endif
