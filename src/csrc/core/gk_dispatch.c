/* THE dispatch (contract in gemmkit/gk_dispatch.h): the ISA levels of this architecture
 * and one table per engine, most specific entry first.  Tables are constant, filled at
 * compile time from the families the build made (GK_HAVE_<ISA>); an entry needs every
 * feature its compile group's flags let the compiler emit (setup.py), not only what its
 * intrinsics use.  The selection (one int) is made at import and read without locks;
 * each engine's choice is recomputed from it on demand (a short table walk). */
#include <string.h>

#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_kernels.h"

unsigned gk_cpu_features_x86(void);
unsigned gk_cpu_features_arm(void);
void gk_cpu_caches_x86(size_t *l1d, size_t *l2, size_t *l3, int *l3_slow);
int gk_amx_request_permission(void);

/* ---- levels ------------------------------------------------------------------------ */

#define X86_AVX2 (GK_CPU_AVX2 | GK_CPU_FMA | GK_CPU_F16C)
#define X86_AVX512 (GK_CPU_AVX512F | GK_CPU_AVX512BW | GK_CPU_AVX512VL | GK_CPU_AVX2 | GK_CPU_FMA)
/* the avx512 group's flags (setup.py): F/BW/VL/DQ + AVX2/FMA/F16C */
#define X86_AVX512_FULL (X86_AVX512 | GK_CPU_AVX512DQ | GK_CPU_F16C)

typedef struct {
    const char *name;
    unsigned needs; /* feature bits the level itself requires */
} gk_level;

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
enum { L_SCALAR, L_SSE41, L_AVX2, L_AVXVNNI, L_AVX512, L_AVX512VNNI, L_AMX, L_COUNT };
static const gk_level levels[L_COUNT] = {
    {"scalar", 0},
    {"sse41", GK_CPU_SSE41},
    {"avx2", X86_AVX2},
    {"avxvnni", GK_CPU_AVXVNNI | GK_CPU_AVX2 | GK_CPU_FMA},
    /* no int8 family of its own: the int8 engine runs the best one below (avxvnni where
     * the CPU has it, else avx2) */
    {"avx512", X86_AVX512_FULL},
    {"avx512vnni", X86_AVX512 | GK_CPU_AVX512VNNI},
    {"amx", X86_AVX512 | GK_CPU_AVX512VNNI | GK_CPU_AMXINT8},
};
#elif defined(__aarch64__) || defined(_M_ARM64)
enum { L_SCALAR, L_NEON, L_NEONDOT, L_I8MM, L_COUNT };
static const gk_level levels[L_COUNT] = {
    {"scalar", 0},
    {"neon", GK_CPU_NEON},
    {"neondot", GK_CPU_NEON | GK_CPU_NEONDOT},
    {"i8mm", GK_CPU_NEON | GK_CPU_I8MM},
};
#else
enum { L_SCALAR, L_COUNT };
static const gk_level levels[L_COUNT] = {{"scalar", 0}};
#endif

/* ---- the engines' tables ------------------------------------------------------------ */

typedef struct {
    const gk_qgemm_kernel *kernel;
    int level;
} gk_qentry;

static const gk_qentry qtable[] = {
#ifdef GK_HAVE_AMX
    {&gk_qgemm_u8s8_amx, L_AMX},
#endif
#ifdef GK_HAVE_AVX512VNNI
    {&gk_qgemm_u8s8_avx512vnni, L_AVX512VNNI},
#endif
#ifdef GK_HAVE_AVXVNNI
    {&gk_qgemm_u8s8_avxvnni, L_AVXVNNI},
#endif
#ifdef GK_HAVE_AVX2
    {&gk_qgemm_u8s8_avx2, L_AVX2},
#endif
#ifdef GK_HAVE_SSE41
    {&gk_qgemm_u8s8_sse41, L_SSE41},
#endif
#ifdef GK_HAVE_I8MM
    {&gk_qgemm_u8s8_i8mm, L_I8MM},
#endif
#ifdef GK_HAVE_NEONDOT
    {&gk_qgemm_u8s8_neondot, L_NEONDOT},
#endif
#ifdef GK_HAVE_NEON
    {&gk_qgemm_u8s8_neon, L_NEON},
#endif
    {&gk_qgemm_u8s8_scalar, L_SCALAR},
};
#define QTABLE_LEN ((int)(sizeof(qtable) / sizeof(qtable[0])))

typedef struct {
    const gk_gemm_kernel *kernel;
    int level;
    unsigned needs; /* feature bits beyond its level's (0: none), e.g. AVX512_BF16: a
                       family for one extra instruction needs no level of its own */
    unsigned prefer; /* ... and those without which the selection passes it over for the
                        next family of the row, though it runs (usable, the C harness):
                        where it is correct but slower than that family */
} gk_gentry;

/* One row per element type, most specific first, ended by its scalar family.  A SIMD
 * family plugs in as {&gk_gemm_f32_avx2, L_AVX2} before the scalar entry of its row. */
#define GEMM_ROW_MAX 8
#ifdef GK_HAVE_AVX512
#define GK_GEMM_AVX512(fam) {&fam, L_AVX512},
#else
#define GK_GEMM_AVX512(fam)
#endif
#ifdef GK_HAVE_AVX2
#define GK_GEMM_AVX2(fam) {&fam, L_AVX2},
#else
#define GK_GEMM_AVX2(fam)
#endif
#ifdef GK_HAVE_SSE41
#define GK_GEMM_SSE41(fam) {&fam, L_SSE41},
#else
#define GK_GEMM_SSE41(fam)
#endif
#ifdef GK_HAVE_NEON
#define GK_GEMM_NEON(fam) {&fam, L_NEON},
#else
#define GK_GEMM_NEON(fam)
#endif
/* the neonbf16 group's flags are the neon group's + FEAT_BF16 (no level of its own) */
#ifdef GK_HAVE_NEONBF16
#define GK_GEMM_NEONBF16(fam) {&fam, L_NEON, GK_CPU_BF16},
#else
#define GK_GEMM_NEONBF16(fam)
#endif
/* the avx512bf16 group's flags are the avx512 group's + AVX512_BF16 */
#ifdef GK_HAVE_AVX512BF16
#define GK_GEMM_AVX512BF16(fam) {&fam, L_AVX512, GK_CPU_AVX512BF16, GK_CPU_BF16DOT_FAST},
#else
#define GK_GEMM_AVX512BF16(fam)
#endif
/* the amxbf16 group's flags are the amx group's + AMX-BF16; its family calls the avx512
 * group's bfloat16 epilogue (level amx lacks that group's DQ and F16C) */
#if defined(GK_HAVE_AMXBF16) && defined(GK_HAVE_AVX512)
#define GK_GEMM_AMXBF16(fam) {&fam, L_AMX, GK_CPU_AMXBF16 | GK_CPU_AVX512DQ | GK_CPU_F16C},
#else
#define GK_GEMM_AMXBF16(fam)
#endif
static const gk_gentry gtable[GK_DT_COUNT][GEMM_ROW_MAX] = {
    [GK_DT_F16] = {GK_GEMM_AVX512(gk_gemm_f16_avx512) GK_GEMM_AVX2(gk_gemm_f16_avx2)
                   GK_GEMM_SSE41(gk_gemm_f16_sse41)
                   GK_GEMM_NEON(gk_gemm_f16_neon)
                   {&gk_gemm_f16_scalar, L_SCALAR}},
    [GK_DT_BF16] = {GK_GEMM_AMXBF16(gk_gemm_bf16_amxbf16)
                    GK_GEMM_AVX512BF16(gk_gemm_bf16_avx512bf16)
                    GK_GEMM_AVX512(gk_gemm_bf16_avx512) GK_GEMM_AVX2(gk_gemm_bf16_avx2)
                    GK_GEMM_SSE41(gk_gemm_bf16_sse41)
                    GK_GEMM_NEONBF16(gk_gemm_bf16_neonbf16) GK_GEMM_NEON(gk_gemm_bf16_neon)
                    {&gk_gemm_bf16_scalar, L_SCALAR}},
    [GK_DT_F32] = {GK_GEMM_AVX512(gk_gemm_f32_avx512) GK_GEMM_AVX2(gk_gemm_f32_avx2)
                   GK_GEMM_SSE41(gk_gemm_f32_sse41)
                   GK_GEMM_NEON(gk_gemm_f32_neon)
                   {&gk_gemm_f32_scalar, L_SCALAR}},
    [GK_DT_F64] = {GK_GEMM_AVX512(gk_gemm_f64_avx512) GK_GEMM_AVX2(gk_gemm_f64_avx2)
                   GK_GEMM_SSE41(gk_gemm_f64_sse41)
                   GK_GEMM_NEON(gk_gemm_f64_neon)
                   {&gk_gemm_f64_scalar, L_SCALAR}},
    [GK_DT_I32] = {GK_GEMM_AVX512(gk_gemm_i32_avx512) GK_GEMM_AVX2(gk_gemm_i32_avx2)
                   GK_GEMM_NEON(gk_gemm_i32_neon)
                   {&gk_gemm_i32_scalar, L_SCALAR}},
    [GK_DT_U32] = {GK_GEMM_AVX512(gk_gemm_u32_avx512) GK_GEMM_AVX2(gk_gemm_u32_avx2)
                   GK_GEMM_NEON(gk_gemm_u32_neon)
                   {&gk_gemm_u32_scalar, L_SCALAR}},
    [GK_DT_I64] = {GK_GEMM_AVX512(gk_gemm_i64_avx512) GK_GEMM_AVX2(gk_gemm_i64_avx2)
                   {&gk_gemm_i64_scalar, L_SCALAR}},
    [GK_DT_U64] = {GK_GEMM_AVX512(gk_gemm_u64_avx512) GK_GEMM_AVX2(gk_gemm_u64_avx2)
                   {&gk_gemm_u64_scalar, L_SCALAR}},
};

typedef struct {
    const gk_codecs_kernel *kernel;
    int level;
} gk_centry;

static const gk_centry ctable[] = {
#ifdef GK_HAVE_AVX512
    {&gk_codecs_avx512, L_AVX512},
#endif
#ifdef GK_HAVE_AVX2
    {&gk_codecs_avx2, L_AVX2},
#endif
#ifdef GK_HAVE_NEON
    {&gk_codecs_neon, L_NEON},
#endif
    {&gk_codecs_scalar, L_SCALAR},
};
#define CTABLE_LEN ((int)(sizeof(ctable) / sizeof(ctable[0])))

/* ---- detection ----------------------------------------------------------------------- */

static volatile int features_done;
static volatile unsigned features;

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

static volatile int caches_done;
static gk_cpu_cache_sizes caches;

const gk_cpu_cache_sizes *gk_cpu_caches(void)
{
    if (!caches_done) { /* idempotent: racing threads store the same values */
        size_t l1d = 0, l2 = 0, l3 = 0;
        int l3_slow = 0;
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
        gk_cpu_caches_x86(&l1d, &l2, &l3, &l3_slow);
#endif
        caches.l1d = l1d;
        caches.l2 = l2;
        caches.l3 = l3;
        caches.l3_slow = l3_slow;
        caches_done = 1;
    }
    return &caches;
}

size_t gk_cpu_llc_bytes(void)
{
    const size_t l3 = gk_cpu_caches()->l3;
    return l3 ? l3 : (size_t)32 << 20;
}

static const struct {
    unsigned bit;
    const char *name;
} feature_names[] = {
    {GK_CPU_SSE41, "sse4.1"},        {GK_CPU_AVX2, "avx2"},
    {GK_CPU_FMA, "fma"},             {GK_CPU_F16C, "f16c"},
    {GK_CPU_AVX512F, "avx512f"},     {GK_CPU_AVX512BW, "avx512bw"},
    {GK_CPU_AVX512VL, "avx512vl"},   {GK_CPU_AVX512DQ, "avx512dq"},
    {GK_CPU_AVX512VNNI, "avx512vnni"},
    {GK_CPU_AVXVNNI, "avxvnni"},     {GK_CPU_AVX512BF16, "avx512bf16"},
    {GK_CPU_AMXINT8, "amx-int8"},    {GK_CPU_BF16DOT_FAST, "avx512bf16-fast"},
    {GK_CPU_AMXBF16, "amx-bf16"},
    {GK_CPU_NEON, "neon"},           {GK_CPU_NEONDOT, "dotprod"},
    {GK_CPU_I8MM, "i8mm"},           {GK_CPU_BF16, "bf16"},
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

static int has(unsigned needs) { return (gk_cpu_features() & needs) == needs; }

/* ---- levels and the selection ---------------------------------------------------------- */

int gk_isa_level_count(void) { return L_COUNT; }

const char *gk_isa_level_name(int level)
{
    return level >= 0 && level < L_COUNT ? levels[level].name : 0;
}

int gk_isa_level_compiled(int level)
{
    if (level < 0 || level >= L_COUNT)
        return 0;
    if (level == L_SCALAR)
        return 1;
    for (int i = 0; i < QTABLE_LEN; i++)
        if (qtable[i].level == level)
            return 1;
    for (int d = 0; d < GK_DT_COUNT; d++)
        for (int i = 0; i < GEMM_ROW_MAX && gtable[d][i].kernel; i++)
            if (gtable[d][i].level == level)
                return 1;
    for (int i = 0; i < CTABLE_LEN; i++)
        if (ctable[i].level == level)
            return 1;
    return 0;
}

/* CPU/OS support of a level, the AMX tile permission aside. */
static int level_supported(int level) { return has(levels[level].needs); }

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
/* -1 not asked yet, else the answer.  Asked at most once, only when a selection reaches
 * amx: the request enlarges the process's signal frames, which no other path needs. */
static volatile int amx_permission = -1;
static int amx_allowed(void)
{
    int p = amx_permission;
    if (p < 0) {
        p = gk_amx_request_permission();
        amx_permission = p;
    }
    return p;
}
/* Selecting asks; reporting (usable, available) and running only read the answer, and
 * count "not asked yet" as allowed. */
#define LEVEL_PERMITTED(l) ((l) != L_AMX || amx_allowed())
#define LEVEL_NOT_REFUSED(l) ((l) != L_AMX || amx_permission != 0)
#else
#define LEVEL_PERMITTED(l) 1
#define LEVEL_NOT_REFUSED(l) 1
#endif

int gk_isa_level_usable(int level)
{
    if (level < 0 || level >= L_COUNT)
        return 0;
    return gk_isa_level_compiled(level) && level_supported(level) && LEVEL_NOT_REFUSED(level);
}

static volatile int selected = -1; /* -1: not made yet (first use picks "auto") */

static int best_level(void)
{
    for (int l = L_COUNT - 1; l > L_SCALAR; l--)
        if (gk_isa_level_compiled(l) && level_supported(l) && LEVEL_PERMITTED(l))
            return l;
    return L_SCALAR;
}

int gk_selected_level(void)
{
    int s = selected;
    if (s < 0) {
        s = best_level();
        selected = s;
    }
    return s;
}

int gk_select_isa(const char *name)
{
    if (name == 0 || name[0] == 0 || strcmp(name, "auto") == 0) {
        selected = best_level();
        return GK_SELECT_OK;
    }
    for (int l = 0; l < L_COUNT; l++) {
        if (strcmp(levels[l].name, name) != 0)
            continue;
        if (!gk_isa_level_compiled(l))
            return GK_SELECT_NOT_COMPILED;
        if (!level_supported(l) || !LEVEL_PERMITTED(l))
            return GK_SELECT_UNSUPPORTED;
        selected = l;
        return GK_SELECT_OK;
    }
    return GK_SELECT_UNKNOWN;
}

/* An entry runs when it is at or below the selected level and its level is usable here
 * (levels below a usable one are not necessarily usable: avxvnni without avx512).  The
 * AMX permission was asked for when the selection reached amx. */
static int entry_ok(int level)
{
    return level <= gk_selected_level() && level_supported(level) && LEVEL_NOT_REFUSED(level);
}

/* ---- int8 engine --------------------------------------------------------------------- */

int gk_qgemm_kernel_count(void) { return QTABLE_LEN; }

const gk_qgemm_kernel *gk_qgemm_kernel_at(int i)
{
    return (i >= 0 && i < QTABLE_LEN) ? qtable[i].kernel : 0;
}

int gk_qgemm_kernel_usable(int i)
{
    if (i < 0 || i >= QTABLE_LEN)
        return 0;
    return level_supported(qtable[i].level) && LEVEL_PERMITTED(qtable[i].level);
}

const gk_qgemm_kernel *gk_qgemm_active(void)
{
    for (int i = 0; i < QTABLE_LEN; i++)
        if (entry_ok(qtable[i].level))
            return qtable[i].kernel;
    return &gk_qgemm_u8s8_scalar;
}

const char *gk_active_isa(void) { return gk_qgemm_active()->isa; }

/* ---- Gemm engine ----------------------------------------------------------------------- */

static int gentry_ok(const gk_gentry *e)
{
    return entry_ok(e->level) && has(e->needs | e->prefer);
}
/* runnable here whatever the selection (the C harness runs every family this way) */
static int gentry_supported(const gk_gentry *e)
{
    return level_supported(e->level) && LEVEL_PERMITTED(e->level) && has(e->needs);
}

const gk_gemm_kernel *gk_gemm_kernel_for(int dtype)
{
    if (dtype < 0 || dtype >= GK_DT_COUNT)
        return 0;
    for (int i = 0; i < GEMM_ROW_MAX && gtable[dtype][i].kernel; i++)
        if (gentry_ok(&gtable[dtype][i]))
            return gtable[dtype][i].kernel;
    return 0; /* unreachable: every row ends with its scalar family */
}

int gk_gemm_kernel_count(int dtype)
{
    int n = 0;
    if (dtype < 0 || dtype >= GK_DT_COUNT)
        return 0;
    while (n < GEMM_ROW_MAX && gtable[dtype][n].kernel)
        n++;
    return n;
}

const gk_gemm_kernel *gk_gemm_kernel_at(int dtype, int i)
{
    return i >= 0 && i < gk_gemm_kernel_count(dtype) ? gtable[dtype][i].kernel : 0;
}

int gk_gemm_kernel_usable(int dtype, int i)
{
    if (i < 0 || i >= gk_gemm_kernel_count(dtype))
        return 0;
    return gentry_supported(&gtable[dtype][i]);
}


const gk_gemm_kernel *gk_gemm_kernel_after(const gk_gemm_kernel *kern)
{
    int d, i, last = 0;
    if (kern == 0 || kern->dtype < 0 || kern->dtype >= GK_DT_COUNT)
        return 0;
    d = kern->dtype;
    for (i = 0; i < GEMM_ROW_MAX && gtable[d][i].kernel; i++) {
        last = i;
        if (gtable[d][i].kernel == kern)
            break;
    }
    if (i == GEMM_ROW_MAX || gtable[d][i].kernel == 0)
        return gtable[d][last].kernel; /* not in the row: its scalar family */
    for (i++; i < GEMM_ROW_MAX && gtable[d][i].kernel; i++)
        if (gentry_ok(&gtable[d][i]))
            return gtable[d][i].kernel;
    return 0; /* unreachable: the scalar entry ends the row and runs everywhere */
}

int gk_gemm_kernel_level(const gk_gemm_kernel *kern)
{
    if (kern == 0 || kern->dtype < 0 || kern->dtype >= GK_DT_COUNT)
        return -1;
    for (int i = 0; i < GEMM_ROW_MAX && gtable[kern->dtype][i].kernel; i++)
        if (gtable[kern->dtype][i].kernel == kern)
            return gtable[kern->dtype][i].level;
    return -1;
}

/* ---- codecs engine ----------------------------------------------------------------------- */

int gk_codecs_kernel_count(void) { return CTABLE_LEN; }

const gk_codecs_kernel *gk_codecs_kernel_at(int i)
{
    return (i >= 0 && i < CTABLE_LEN) ? ctable[i].kernel : 0;
}

int gk_codecs_kernel_usable(int i)
{
    return i >= 0 && i < CTABLE_LEN && level_supported(ctable[i].level);
}

const gk_codecs_kernel *gk_codecs_active(void)
{
    for (int i = 0; i < CTABLE_LEN; i++)
        if (entry_ok(ctable[i].level))
            return ctable[i].kernel;
    return &gk_codecs_scalar;
}
