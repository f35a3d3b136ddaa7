/* The one dispatch table: int8 kernel families compiled in, most specific first, each
 * with the CPU features it needs: everything its compile group's flags let the compiler
 * emit (setup.py), not only what its intrinsics use.  Filled at compile time; the selection is made once at
 * import (gk_select_isa) and read without locks afterwards. */
#include <string.h>

#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_kernels.h"

unsigned gk_cpu_features_x86(void);
unsigned gk_cpu_features_arm(void);

typedef struct {
    const gk_qgemm_kernel *kernel;
    unsigned needs;
} gk_qentry;

static const gk_qentry qtable[] = {
#ifdef GK_HAVE_AMX
    {&gk_qgemm_u8s8_amx,
     GK_CPU_AMXINT8 | GK_CPU_AVX512F | GK_CPU_AVX512BW | GK_CPU_AVX512VL | GK_CPU_AVX512VNNI |
         GK_CPU_AVX2 | GK_CPU_FMA},
#endif
#ifdef GK_HAVE_AVX512VNNI
    {&gk_qgemm_u8s8_avx512vnni,
     GK_CPU_AVX512F | GK_CPU_AVX512BW | GK_CPU_AVX512VL | GK_CPU_AVX512VNNI | GK_CPU_AVX2 |
         GK_CPU_FMA},
#endif
#ifdef GK_HAVE_AVXVNNI
    {&gk_qgemm_u8s8_avxvnni, GK_CPU_AVXVNNI | GK_CPU_AVX2 | GK_CPU_FMA},
#endif
#ifdef GK_HAVE_AVX2
    {&gk_qgemm_u8s8_avx2, GK_CPU_AVX2 | GK_CPU_FMA | GK_CPU_F16C},
#endif
#ifdef GK_HAVE_SSE41
    {&gk_qgemm_u8s8_sse41, GK_CPU_SSE41},
#endif
#ifdef GK_HAVE_I8MM
    {&gk_qgemm_u8s8_i8mm, GK_CPU_NEON | GK_CPU_I8MM},
#endif
#ifdef GK_HAVE_NEONDOT
    {&gk_qgemm_u8s8_neondot, GK_CPU_NEON | GK_CPU_NEONDOT},
#endif
#ifdef GK_HAVE_NEON
    {&gk_qgemm_u8s8_neon, GK_CPU_NEON},
#endif
    {&gk_qgemm_u8s8_scalar, 0},
};
#define QTABLE_LEN ((int)(sizeof(qtable) / sizeof(qtable[0])))

static volatile int features_done;
static volatile unsigned features;
static volatile int active = -1;

unsigned gk_cpu_features(void)
{
    if (!features_done) {
        unsigned f = 0;
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
        f = gk_cpu_features_x86();
#elif defined(__aarch64__) || defined(_M_ARM64)
        f = gk_cpu_features_arm();
#endif
        features = f;
        features_done = 1;
    }
    return features;
}

static const struct {
    unsigned bit;
    const char *name;
} feature_names[] = {
    {GK_CPU_SSE41, "sse4.1"},        {GK_CPU_AVX2, "avx2"},
    {GK_CPU_FMA, "fma"},             {GK_CPU_F16C, "f16c"},
    {GK_CPU_AVX512F, "avx512f"},     {GK_CPU_AVX512BW, "avx512bw"},
    {GK_CPU_AVX512VL, "avx512vl"},   {GK_CPU_AVX512VNNI, "avx512vnni"},
    {GK_CPU_AVXVNNI, "avxvnni"},     {GK_CPU_AVX512BF16, "avx512bf16"},
    {GK_CPU_AMXINT8, "amx-int8"},
    {GK_CPU_NEON, "neon"},           {GK_CPU_NEONDOT, "dotprod"},
    {GK_CPU_I8MM, "i8mm"},
};

int gk_cpu_feature_names(const char **names, int cap)
{
    unsigned f = gk_cpu_features();
    int n = 0;
    for (size_t i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++)
        if ((f & feature_names[i].bit) && n < cap)
            names[n++] = feature_names[i].name;
    return n;
}

int gk_qgemm_kernel_count(void) { return QTABLE_LEN; }

const gk_qgemm_kernel *gk_qgemm_kernel_at(int i)
{
    return (i >= 0 && i < QTABLE_LEN) ? qtable[i].kernel : 0;
}

int gk_qgemm_kernel_usable(int i)
{
    if (i < 0 || i >= QTABLE_LEN)
        return 0;
    return (gk_cpu_features() & qtable[i].needs) == qtable[i].needs;
}

static int first_usable(void)
{
    for (int i = 0; i < QTABLE_LEN; i++)
        if (gk_qgemm_kernel_usable(i))
            return i;
    return QTABLE_LEN - 1;
}

const gk_qgemm_kernel *gk_qgemm_active(void)
{
    int a = active;
    if (a < 0) {
        a = first_usable();
        active = a;
    }
    return qtable[a].kernel;
}

const char *gk_active_isa(void) { return gk_qgemm_active()->isa; }

int gk_select_isa(const char *name)
{
    int known = 0;
    if (name == 0 || name[0] == 0 || strcmp(name, "auto") == 0) {
        active = first_usable();
        return 0;
    }
    for (int i = 0; i < QTABLE_LEN; i++) {
        if (strcmp(qtable[i].kernel->isa, name) == 0) {
            known = 1;
            if (gk_qgemm_kernel_usable(i)) {
                active = i;
                return 0;
            }
        }
    }
    return known ? -2 : -1;
}
