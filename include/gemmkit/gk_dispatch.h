/* CPU feature detection and THE dispatch: one table per engine (int8 qgemm; Gemm per
 * element type; codecs), all filled at compile time from the families the build made
 * (GK_HAVE_<ISA>) and chosen once from the same feature bits.
 *
 * Detection (src/csrc/core/gk_cpu_x86.c, gk_cpu_arm.c) runs no SIMD instruction: CPUID +
 * XGETBV on x86 (a path needs the CPU bit AND the OS-enabled register state), the
 * auxiliary vector / sysctl / IsProcessorFeaturePresent on ARM64.
 *
 * ISA levels.  Each architecture has a ladder of levels (x86: scalar < sse41 < avx2 <
 * avxvnni < avx512 < avx512vnni < amx; ARM64: scalar < neon < neondot < i8mm), each with the
 * feature bits it needs.  Every table entry belongs to one level.  The selected level
 * (default: the highest usable one; GEMMKIT_ISA / gk_select_isa names another) caps every
 * engine: each uses its first entry, most specific first, that is at or below the level
 * and usable on this CPU (a level with no family of an engine, e.g. avx512 for int8,
 * leaves that engine on its best family below).  A level is usable when the CPU and OS support it (AMX: also the
 * Linux per-process tile permission, requested only when a selection reaches amx). */
#ifndef GEMMKIT_GK_DISPATCH_H
#define GEMMKIT_GK_DISPATCH_H

#include "gk_codecs.h"
#include "gk_gemm.h"
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
    GK_CPU_AMXINT8 = 1u << 10,  /* AMX-TILE + AMX-INT8 and XCR0 tile state (the Linux
                                   permission is asked for separately, see above) */
    GK_CPU_AVX512DQ = 1u << 11, /* CPUID.7.0:EBX bit 17, + OS ZMM/opmask state */
    GK_CPU_BF16DOT_FAST = 1u << 12, /* AVX512_BF16 whose vdpbf16ps outruns the widening
                                       float32 FMA path: AMD's (Zen 4: 2x); not Intel's
                                       (Sapphire Rapids: 0.6x at bfloat16 1024^3) */
    GK_CPU_AMXBF16 = 1u << 13,  /* AMX-BF16 with the AMX-INT8 bit's tile conditions */
    GK_CPU_NEON = 1u << 16,
    GK_CPU_NEONDOT = 1u << 17,  /* sdot/udot */
    GK_CPU_I8MM = 1u << 18,     /* smmla/usmmla */
    GK_CPU_BF16 = 1u << 19,     /* FEAT_BF16: bfmmla/bfdot (ARM64) */
};

/* Raw detection, computed once (thread-safe: idempotent pure function of the CPU). */
unsigned gk_cpu_features(void);
/* Names of detected features, for cpu_info(): writes up to `cap` pointers, returns count. */
int gk_cpu_feature_names(const char **names, int cap);

/* Data caches of one core and the last level, in bytes, as the CPU reports them (x86:
 * CPUID's cache parameters); 0 where it does not (ARM64 here).  Computed once.
 * l3_slow: 1 where one core reads its L3 far slower than it computes, so that a cache
 * block spilling out of L2 costs much more than elsewhere: Intel's (one thread's read of
 * a 16 MB buffer, the same one every call: Cascade Lake 22.6 GB/s, Sapphire Rapids 29.7,
 * against Zen 5's 106.6).  Taken from the vendor; 0 for AMD and off x86. */
typedef struct gk_cpu_cache_sizes {
    size_t l1d, l2, l3;
    int l3_slow;
} gk_cpu_cache_sizes;
const gk_cpu_cache_sizes *gk_cpu_caches(void);
/* The last-level cache's size: gk_cpu_caches()->l3, or 32 MB where the CPU does not
 * report one (the size rules that ask "can B be in cache?" take this). */
size_t gk_cpu_llc_bytes(void);

/* Whether the calling thread's ymm/zmm upper halves are in use (x86 XINUSE): 1, 0, or -1
 * where the CPU cannot tell (off x86, no AVX, no XGETBV ECX = 1).  Tests only. */
int gk_cpu_avx_upper_in_use(void);

/* ---- levels and the selection ---- */
int gk_isa_level_count(void);                 /* levels of this build's architecture */
const char *gk_isa_level_name(int level);     /* 0 = "scalar", increasing */
int gk_isa_level_compiled(int level);        /* some engine has a family at that level */
/* Compiled in some engine + CPU/OS support (asks nothing: an AMX permission refused
 * earlier makes amx unusable, one not asked for yet does not). */
int gk_isa_level_usable(int level);

enum gk_select_status {
    GK_SELECT_OK = 0,
    GK_SELECT_UNKNOWN = -1,      /* no level has that name on this architecture */
    GK_SELECT_NOT_COMPILED = -2, /* a level of this architecture, but no engine has a
                                    family built for it */
    GK_SELECT_UNSUPPORTED = -3,  /* built, but this CPU/OS cannot run it */
};
/* Caps every engine at the named level ("auto", "" or NULL: the highest usable one).
 * Called at import (GEMMKIT_ISA) and by tests between calls, not concurrently with a
 * running product.  Returns enum gk_select_status; on failure the selection is kept. */
int gk_select_isa(const char *name);
int gk_selected_level(void);

/* ---- int8 engine ---- */
int gk_qgemm_kernel_count(void);              /* families compiled in, most specific first */
const gk_qgemm_kernel *gk_qgemm_kernel_at(int i);
/* Whether family i can run here now, whatever the selection (the C harnesses run every
 * family this way); for an amx family this asks for the AMX permission. */
int gk_qgemm_kernel_usable(int i);
const gk_qgemm_kernel *gk_qgemm_active(void); /* at or below the selected level */
const char *gk_active_isa(void);              /* gk_qgemm_active()->isa */

/* ---- Gemm engine: one row per element type (enum gk_gemm_dtype) ----
 * gk_gemm_kernel_for(dtype) (declared in gk_gemm.h, defined with the tables) is the
 * active family of a type.  An entry may need feature bits beyond its level's (the
 * bfloat16 vdpbf16ps family: level avx512 + GK_CPU_AVX512BF16); its family's isa string
 * then names the extra feature ("avx512bf16") while its level is the ladder's. */
int gk_gemm_kernel_count(int dtype);          /* families of the type's row, most specific
                                                 first (0: unknown dtype) */
const gk_gemm_kernel *gk_gemm_kernel_at(int dtype, int i);
/* Whether family i of the row can run here, whatever the selection (the C harness runs
 * every family this way). */
int gk_gemm_kernel_usable(int dtype, int i);
/* The ISA level of kern's dispatch entry, -1 for a family outside the table. */
int gk_gemm_kernel_level(const gk_gemm_kernel *kern);

/* ---- codecs engine: bulk float16/bfloat16 <-> float32 ---- */
const gk_codecs_kernel *gk_codecs_active(void);
int gk_codecs_kernel_count(void);
const gk_codecs_kernel *gk_codecs_kernel_at(int i);
int gk_codecs_kernel_usable(int i);

#ifdef __cplusplus
}
#endif
#endif
