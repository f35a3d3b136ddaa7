/* Every usable codecs family against the scalar family (gk_codecs_scalar), bit for bit,
 * member by member (contract: gk_codecs_kernel in gemmkit/gk_codecs.h).
 *
 * Portable C (built natively by run_native.sh -- the x86 families --, cross-built for
 * aarch64 and run under qemu by scripts/test_qemu_aarch64.sh -- the NEON family).  The
 * families are found through the dispatch's codecs table (gk_codecs_kernel_count / _at /
 * _usable), so a family added there is tested without naming it here.  Inputs:
 *   - all 65536 float16 / bfloat16 codes, all 256 float8 codes of each format;
 *   - float32: every rounding tie of float16, bfloat16 and each float8 format (the
 *     midpoint between adjacent codes, the one past the largest finite value included)
 *     with its neighbours one ulp either side, each code's value and +-1, +-2 ulps, both
 *     signs; +-0, +-inf, quiet and signalling NaNs with payloads, subnormals, FLT_MAX,
 *     huge values; random bit patterns and random values of moderate size;
 *   - float64: every float32 exponent with several mantissas, the midpoint to the next
 *     float32 and float64 neighbours of both, the float32 overflow boundary, float64
 *     subnormals, NaNs with payloads, random bit patterns and random values in and around
 *     the float32 range.  The float64 members (where not NULL) are checked against
 *     integer references: gk_f64_to_f32_bits (nearest even), round to odd and the exact
 *     widening written out here;
 *   - the contrib loops: f32_range on arrays with mixed-sign zeros, subnormals, NaN/inf;
 *     quantize_u8_n on rint ties, tiny (subnormal) and large scales; i32_scale_n over
 *     column counts 1..20 with NaN/inf scales and biases;
 *   - tails: lengths 0..70 at element offsets 0..3, the source ending at an unreadable
 *     page (a read past n faults; POSIX hosts) and the destination between guard bytes
 *     (a write past n, or before 0, is reported);
 *   - a non-default floating-point mode (round toward zero; FZ / FTZ+DAZ; on ARM64 also
 *     DN, AHP, FZ16): the conversions must still equal the scalar family (a family whose
 *     instructions depend on the mode must check it and fall back), the float64 members
 *     must return 0 having written nothing; on ARM64 the contrib loops must equal the
 *     scalar family under the same mode too (AdvSIMD obeys FPCR as scalar code does; the
 *     contract defines them under round-to-nearest only, which x86's fixed-rounding
 *     vroundps relies on).
 * Prints one line per family ("codecs ISA: N checks, ok" or "... FAILED") and
 * "N passed, N failed"; exits 1 on any failure. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_dispatch.h"
#include "gk_test_util.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define HAVE_GUARD_PAGE 1
#else
#define HAVE_GUARD_PAGE 0
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

static long n_checks, n_fail;
static const char *cur_fam = "";
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd64(void) { return gk_test_xorshift64(&rng); }
static uint32_t rnd32(void) { return (uint32_t)(rnd64() >> 32); }

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* Compares n elements of `size` bytes; reports the first few mismatches of a check. */
static void expect_same(const char *what, const void *got, const void *want, size_t n,
                        size_t size, const void *input, size_t in_size)
{
    size_t bad = 0;
    n_checks++;
    for (size_t i = 0; i < n; i++) {
        const char *g = (const char *)got + i * size, *w = (const char *)want + i * size;
        if (memcmp(g, w, size) != 0) {
            if (bad < 4) {
                uint64_t gv = 0, wv = 0, iv = 0;
                memcpy(&gv, g, size);
                memcpy(&wv, w, size);
                if (input)
                    memcpy(&iv, (const char *)input + i * in_size, in_size);
                fprintf(stderr, "FAIL %s %s [%zu of %zu]: input 0x%llx got 0x%llx want 0x%llx\n",
                        cur_fam, what, i, n, (unsigned long long)iv, (unsigned long long)gv,
                        (unsigned long long)wv);
            }
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "FAIL %s %s: %zu of %zu elements differ\n", cur_fam, what, bad, n);
        n_fail++;
    }
}

static void expect(int ok, const char *what)
{
    n_checks++;
    if (!ok) {
        fprintf(stderr, "FAIL %s %s\n", cur_fam, what);
        n_fail++;
    }
}

/* ---- input sets ------------------------------------------------------------------------ */

typedef struct {
    uint32_t *v;
    size_t n, cap;
} u32vec;
typedef struct {
    uint64_t *v;
    size_t n, cap;
} u64vec;
static void push32(u32vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1024;
        a->v = (uint32_t *)realloc(a->v, a->cap * 4);
        if (!a->v)
            exit(2);
    }
    a->v[a->n++] = x;
}
static void push64(u64vec *a, uint64_t x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1024;
        a->v = (uint64_t *)realloc(a->v, a->cap * 8);
        if (!a->v)
            exit(2);
    }
    a->v[a->n++] = x;
}
/* x and its neighbours d codes away in the float32 bit order, both signs */
static void push32_around(u32vec *a, uint32_t x, int d)
{
    for (int k = -d; k <= d; k++) {
        const uint32_t y = x + (uint32_t)k;
        if ((y & 0x7fffffffu) != y || (k < 0 && x < (uint32_t)-k))
            continue; /* crossed into the other sign: not a neighbour */
        push32(a, y);
        push32(a, y | 0x80000000u);
    }
}

/* The value of each code 0..maxc (magnitudes, increasing) of a narrow format, its
 * rounding ties with the next code (past maxc: one more step of the top binade's ulp),
 * and the float32 neighbours of both. */
static void push_format_ties(u32vec *a, double (*value)(unsigned), unsigned maxc)
{
    for (unsigned c = 0; c <= maxc; c++) {
        const double v = value(c);
        const double w = c < maxc ? value(c + 1) : v + (v - value(c - 1));
        const double mid = 0.5 * (v + w); /* exact in float32 for every format here */
        push32_around(a, f2u((float)v), 2);
        push32_around(a, f2u((float)mid), 1);
    }
}
static double val_f16(unsigned c) { return gk_f16_to_f32((uint16_t)c); }
static double val_bf16(unsigned c) { return gk_bf16_to_f32((uint16_t)c); }
static int cur_fmt;
static double val_fp8(unsigned c) { return gk_fp8_decode_table[cur_fmt][c]; }

static u32vec build_f32_inputs(void)
{
    static const unsigned fp8_max_mag[GK_FP8_NFORMATS] = {0x7e, 0x7f, 0x7b, 0x7f};
    static const uint32_t specials[] = {
        0x00000000u, 0x7f800000u, 0x7fc00000u, 0x7fc00001u, 0x7fffffffu, 0x7f800001u,
        0x7f802000u, 0x7f801fffu, 0x7fa00000u, 0x7fbfffffu, 0x7fc02000u, 0x7f810000u,
        0x7f8000ffu, 0x7fe00000u, 0x00000001u, 0x00000002u, 0x00001000u, 0x00400000u,
        0x007fffffu, 0x00800000u, 0x00800001u, 0x7f7fffffu, 0x7f7ffffeu, 0x7f000000u,
        0x7effffffu, 0x477fe000u, 0x477ff000u, 0x477fefffu, 0x47800000u, 0x43e00000u,
        0x43e80000u, 0x43e80001u, 0x43f00000u, 0x43700000u, 0x43780000u, 0x47600000u,
        0x47700000u, 0x47700001u, 0x3f800000u, 0x33000000u, 0x33000001u, 0x32ffffffu,
        0x38800000u, 0x387fffffu, 0x3b000000u, 0x3a800000u, 0x37800000u, 0x37000000u,
    };
    u32vec a = {0, 0, 0};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        push32_around(&a, specials[i], 1);
    push_format_ties(&a, val_f16, 0x7bffu);
    push_format_ties(&a, val_bf16, 0x7f7fu);
    for (cur_fmt = 0; cur_fmt < GK_FP8_NFORMATS; cur_fmt++)
        push_format_ties(&a, val_fp8, fp8_max_mag[cur_fmt]);
    for (int i = 0; i < 100000; i++)
        push32(&a, rnd32());
    for (int i = 0; i < 50000; i++) /* moderate magnitudes: 2^-30 .. 2^20, every sign */
        push32(&a, (rnd32() & 0x807fffffu) | ((uint32_t)(97 + rnd32() % 50) << 23));
    /* NaNs with random payloads, quiet and signalling */
    for (int i = 0; i < 2000; i++)
        push32(&a, 0x7f800001u | (rnd32() & 0x807fffffu));
    return a;
}

static u64vec build_f64_inputs(void)
{
    static const uint64_t specials[] = {
        0x0000000000000000ull, 0x7ff0000000000000ull, 0x7ff8000000000000ull,
        0x7ff0000000000001ull, 0x7ff4000000000000ull, 0x7ff8000000000001ull,
        0x7fffffffffffffffull, 0x7ff0000020000000ull, 0x7ff000001fffffffull,
        0x7ff7ffffffffffffull, 0x0000000000000001ull, 0x000fffffffffffffull,
        0x0010000000000000ull, 0x7fefffffffffffffull, 0x47efffffe0000000ull, /* FLT_MAX */
        0x47efffffefffffffull, 0x47effffff0000000ull, 0x47effffff0000001ull, /* its tie */
        0x47f0000000000000ull, 0x3690000000000000ull, 0x36a0000000000000ull, /* 2^-150 */
        0x3680000000000000ull, 0x369fffffffffffffull, 0x36a0000000000001ull,
        0x3810000000000000ull, 0x380fffffffffffffull, 0x3ff0000000000000ull,
    };
    u64vec a = {0, 0, 0};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        for (int k = -1; k <= 1; k++) {
            const uint64_t y = specials[i] + (uint64_t)(int64_t)k;
            if ((y & 0x7fffffffffffffffull) != y)
                continue;
            push64(&a, y);
            push64(&a, y | 0x8000000000000000ull);
        }
    /* float32 codes of every exponent: the code, the tie with the next, and float64
     * neighbours of both (the next of 0x7f7fffff is 2^128: the overflow tie) */
    for (uint32_t e = 0; e < 255; e++)
        for (int j = 0; j < 12; j++) {
            static const uint32_t fixed[6] = {0, 1, 2, 0x3fffff, 0x400000, 0x7fffff};
            const uint32_t b = (e << 23) | (j < 6 ? fixed[j] : (rnd32() & 0x7fffffu));
            const double v = u2f(b);
            const double w = b == 0x7f7fffffu ? 0x1p128 : (double)u2f(b + 1);
            const double mid = 0.5 * (v + w);
            for (int k = -1; k <= 1; k++) {
                const uint64_t vu = d2u(v) + (uint64_t)(int64_t)k, mu = d2u(mid) + (uint64_t)(int64_t)k;
                if (!(v == 0 && k < 0)) {
                    push64(&a, vu);
                    push64(&a, vu | 0x8000000000000000ull);
                }
                push64(&a, mu);
                push64(&a, mu | 0x8000000000000000ull);
            }
        }
    for (int i = 0; i < 50000; i++)
        push64(&a, rnd64());
    for (int i = 0; i < 50000; i++) /* 2^-170 .. 2^130 and every low bit pattern */
        push64(&a, (rnd64() & 0x800fffffffffffffull) | ((uint64_t)(1023 - 170 + rnd32() % 301) << 52));
    for (int i = 0; i < 2000; i++)
        push64(&a, 0x7ff0000000000001ull | (rnd64() & 0x800fffffffffffffull));
    return a;
}

/* ---- references for the float64 members ------------------------------------------------ */

/* round to odd: toward zero, then the last bit set where inexact; finite beyond FLT_MAX
 * gives FLT_MAX; inf stays; NaN as the nearest-even conversion (quiet, top payload bits) */
static uint32_t ref_f64_to_f32_odd(double x)
{
    const uint64_t u = d2u(x), a = u & 0x7fffffffffffffffull;
    const uint32_t sign = (uint32_t)(u >> 32) & 0x80000000u;
    const uint64_t man = a & 0xfffffffffffffull;
    int eb;
    if (a >= 0x7ff0000000000000ull)
        return gk_f64_to_f32_bits(x);
    if (a == 0)
        return sign;
    if ((a >> 52) == 0)
        return sign | 1u; /* below 2^-1022: truncates to 0, inexact */
    eb = (int)(a >> 52) - 1023 + 127; /* float32 biased exponent if normal there */
    if (eb >= 255)
        return sign | 0x7f7fffffu;
    if (eb >= 1)
        return sign | ((uint32_t)eb << 23) | (uint32_t)(man >> 29) |
               ((man & 0x1fffffffull) != 0);
    {
        const uint64_t sig = man | (1ull << 52);
        const unsigned shift = 29u + (unsigned)(1 - eb);
        if (shift >= 64)
            return sign | 1u;
        return sign | (uint32_t)(sig >> shift) | ((sig & ((1ull << shift) - 1u)) != 0);
    }
}

/* exact widening; NaN quieted keeping sign and payload */
static uint64_t ref_f32_to_f64(float f)
{
    const uint32_t u = f2u(f), a = u & 0x7fffffffu;
    const uint64_t sign = (uint64_t)(u >> 31) << 63;
    if (a == 0)
        return sign;
    if (a < 0x800000u) {
        int p = 22;
        while (!(a >> p))
            p--;
        /* a * 2^-149 = 1.f * 2^(p - 149) */
        return sign | ((uint64_t)(p - 149 + 1023) << 52) |
               (((uint64_t)a << (52 - p)) & 0xfffffffffffffull);
    }
    if (a >= 0x7f800000u)
        return sign | (0x7ffull << 52) | ((uint64_t)(a & 0x7fffffu) << 29) |
               (a > 0x7f800000u ? 1ull << 51 : 0u);
    return sign | ((uint64_t)((a >> 23) + 896u) << 52) | ((uint64_t)(a & 0x7fffffu) << 29);
}

/* ---- guarded buffers: data that ends at an unreadable page ------------------------------ */

#define ARENA 65536
typedef struct {
    char *base; /* ARENA usable bytes; with a guard page, the next page is PROT_NONE */
} arena;

static arena arena_new(void)
{
    arena r;
#if HAVE_GUARD_PAGE
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const size_t len = ((ARENA + pg - 1) / pg) * pg;
    char *m = (char *)mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + len, pg, PROT_NONE) != 0) {
        fprintf(stderr, "mmap/mprotect failed\n");
        exit(2);
    }
    r.base = m + len - ARENA;
#else
    r.base = (char *)xmalloc(ARENA);
#endif
    return r;
}
/* the last `bytes` bytes before the guard page, minus `off` elements of `size` bytes:
 * off > 0 leaves the data unaligned relative to the vector width (and the page end) */
static void *arena_tail(arena a, size_t bytes, size_t off, size_t size)
{
    return a.base + ARENA - bytes - off * size;
}

/* ---- the members ----------------------------------------------------------------------- */

typedef const gk_codecs_kernel K;
static const gk_codecs_kernel *const S = &gk_codecs_scalar;

/* One call of a member with src (n elements of in_size) and dst (of out_size) in guarded
 * arenas; compares with the scalar family's output on the same data. */
enum member { M_F16_F32, M_F32_F16, M_BF16_F32, M_F32_BF16, M_FP8_F32, M_F32_FP8, M_COUNT };
static const char *const member_name[M_COUNT] = {"f16_to_f32_n", "f32_to_f16_n", "bf16_to_f32_n",
                                                  "f32_to_bf16_n", "fp8_to_f32_n", "f32_to_fp8_n"};
static const size_t member_in[M_COUNT] = {2, 4, 2, 4, 1, 4};
static const size_t member_out[M_COUNT] = {4, 2, 4, 2, 4, 1};

static void run_member(K *k, int m, const void *src, void *dst, size_t n, int fmt, int sat)
{
    switch (m) {
    case M_F16_F32: k->f16_to_f32_n((const uint16_t *)src, (float *)dst, n); break;
    case M_F32_F16: k->f32_to_f16_n((const float *)src, (uint16_t *)dst, n); break;
    case M_BF16_F32: k->bf16_to_f32_n((const uint16_t *)src, (float *)dst, n); break;
    case M_F32_BF16: k->f32_to_bf16_n((const float *)src, (uint16_t *)dst, n); break;
    case M_FP8_F32: k->fp8_to_f32_n((const uint8_t *)src, (float *)dst, n, fmt); break;
    default: k->f32_to_fp8_n((const float *)src, (uint8_t *)dst, n, fmt, sat); break;
    }
}

/* Bulk: the whole input set of the member in one call (and the scalar's on it). */
static void check_bulk(K *k, int m, const void *in, size_t n, int fmt, int sat)
{
    void *got = xmalloc(n * member_out[m]), *want = xmalloc(n * member_out[m]);
    char what[64];
    run_member(S, m, in, want, n, fmt, sat);
    run_member(k, m, in, got, n, fmt, sat);
    snprintf(what, sizeof what, "%s fmt %d sat %d", member_name[m], fmt, sat);
    expect_same(what, got, want, n, member_out[m], in, member_in[m]);
    free(got);
    free(want);
}

#define GUARD 32 /* bytes of fill checked before the destination */
static void check_tails(K *k, int m, const void *in, size_t n_in, arena src_a, arena dst_a,
                        int fmt, int sat)
{
    const size_t is = member_in[m], os = member_out[m];
    unsigned char want[70 * 4];
    char what[96];
    for (size_t len = 0; len <= 70; len++)
        for (size_t off = 0; off < 4; off++) {
            void *src = arena_tail(src_a, len * is, off, is);
            unsigned char *dst = (unsigned char *)arena_tail(dst_a, len * os, off, os);
            const size_t start = (size_t)(rnd32() % (uint32_t)(n_in - 70));
            int guard_ok = 1;
            memcpy(src, (const char *)in + start * is, len * is);
            memset(dst - GUARD, 0xA5, GUARD + len * os + off * os);
            run_member(S, m, src, want, len, fmt, sat);
            run_member(k, m, src, dst, len, fmt, sat);
            snprintf(what, sizeof what, "%s fmt %d sat %d len %zu off %zu", member_name[m], fmt,
                     sat, len, off);
            expect_same(what, dst, want, len, os, src, is);
            for (size_t b = 0; b < GUARD; b++)
                guard_ok &= dst[(ptrdiff_t)b - GUARD] == 0xA5;
            for (size_t b = len * os; b < len * os + off * os; b++)
                guard_ok &= dst[b] == 0xA5;
            if (!guard_ok) {
                snprintf(what, sizeof what, "%s len %zu off %zu wrote outside [0, n)",
                         member_name[m], len, off);
                expect(0, what);
            }
        }
}

/* Every conversion member, bulk and tails. */
static void check_conversions(K *k, const uint16_t *all16, const uint8_t *all8,
                              const u32vec *f32in, arena sa, arena da, int tails)
{
    check_bulk(k, M_F16_F32, all16, 65536, 0, 0);
    check_bulk(k, M_BF16_F32, all16, 65536, 0, 0);
    check_bulk(k, M_F32_F16, f32in->v, f32in->n, 0, 0);
    check_bulk(k, M_F32_BF16, f32in->v, f32in->n, 0, 0);
    for (int fmt = 0; fmt < GK_FP8_NFORMATS; fmt++) {
        check_bulk(k, M_FP8_F32, all8, 256, fmt, 0);
        for (int sat = 0; sat < 2; sat++)
            check_bulk(k, M_F32_FP8, f32in->v, f32in->n, fmt, sat);
    }
    if (!tails)
        return;
    check_tails(k, M_F16_F32, all16, 65536, sa, da, 0, 0);
    check_tails(k, M_BF16_F32, all16, 65536, sa, da, 0, 0);
    check_tails(k, M_F32_F16, f32in->v, f32in->n, sa, da, 0, 0);
    check_tails(k, M_F32_BF16, f32in->v, f32in->n, sa, da, 0, 0);
    for (int fmt = 0; fmt < GK_FP8_NFORMATS; fmt++) {
        check_tails(k, M_FP8_F32, all8, 256, sa, da, fmt, 0);
        check_tails(k, M_F32_FP8, f32in->v, f32in->n, sa, da, fmt, fmt & 1);
    }
}

/* The float64 members against the integer references (where the family has them). */
static void check_f64(K *k, const u64vec *d, const u32vec *f, arena sa, arena da)
{
    const size_t nd = d->n, nf = f->n;
    uint32_t *got = (uint32_t *)xmalloc(nd * 4), *want = (uint32_t *)xmalloc(nd * 4);
    uint64_t *got64 = (uint64_t *)xmalloc(nf * 8), *want64 = (uint64_t *)xmalloc(nf * 8);
    const double *src = (const double *)d->v;
    if (k->f64_to_f32_n == NULL || k->f32_to_f64_n == NULL) {
        expect(k->f64_to_f32_n == NULL && k->f32_to_f64_n == NULL, "f64 members both or neither");
        goto done;
    }
    for (int odd = 0; odd < 2; odd++) {
        for (size_t i = 0; i < nd; i++)
            want[i] = odd ? ref_f64_to_f32_odd(src[i]) : gk_f64_to_f32_bits(src[i]);
        expect(k->f64_to_f32_n(src, (float *)got, nd, odd) == 1, "f64_to_f32_n returned 0");
        expect_same(odd ? "f64_to_f32_n odd" : "f64_to_f32_n rne", got, want, nd, 4, src, 8);
    }
    for (size_t i = 0; i < nf; i++)
        want64[i] = ref_f32_to_f64(u2f(f->v[i]));
    expect(k->f32_to_f64_n((const float *)f->v, (double *)got64, nf) == 1, "f32_to_f64_n returned 0");
    expect_same("f32_to_f64_n", got64, want64, nf, 8, f->v, 4);
    /* tails */
    for (size_t len = 0; len <= 70; len++)
        for (size_t off = 0; off < 4; off++) {
            const size_t start = (size_t)(rnd32() % (uint32_t)(nd - 70));
            double *s = (double *)arena_tail(sa, len * 8, off, 8);
            float *o = (float *)arena_tail(da, len * 4, off, 4);
            const int odd = (int)(off & 1);
            uint32_t w[70];
            memcpy(s, src + start, len * 8);
            memset(o, 0xA5, (len + off) * 4);
            for (size_t i = 0; i < len; i++)
                w[i] = odd ? ref_f64_to_f32_odd(s[i]) : gk_f64_to_f32_bits(s[i]);
            expect(k->f64_to_f32_n(s, o, len, odd) == 1, "f64_to_f32_n tail returned 0");
            expect_same("f64_to_f32_n tail", o, w, len, 4, s, 8);
            for (size_t b = len * 4; b < (len + off) * 4; b++)
                if (((unsigned char *)o)[b] != 0xA5) {
                    expect(0, "f64_to_f32_n wrote past n");
                    break;
                }
        }
    for (size_t len = 0; len <= 70; len++)
        for (size_t off = 0; off < 4; off++) {
            const size_t start = (size_t)(rnd32() % (uint32_t)(nf - 70));
            float *s = (float *)arena_tail(sa, len * 4, off, 4);
            double *o = (double *)arena_tail(da, len * 8, off, 8);
            uint64_t w[70];
            memcpy(s, f->v + start, len * 4);
            memset(o, 0xA5, (len + off) * 8);
            for (size_t i = 0; i < len; i++)
                w[i] = ref_f32_to_f64(s[i]);
            expect(k->f32_to_f64_n(s, o, len) == 1, "f32_to_f64_n tail returned 0");
            expect_same("f32_to_f64_n tail", o, w, len, 8, s, 4);
            for (size_t b = len * 8; b < (len + off) * 8; b++)
                if (((unsigned char *)o)[b] != 0xA5) {
                    expect(0, "f32_to_f64_n wrote past n");
                    break;
                }
        }
done:
    free(got);
    free(want);
    free(got64);
    free(want64);
}

/* ---- the contrib loops ----------------------------------------------------------------- */

static float rnd_value(void)
{
    switch (rnd32() % 8) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return u2f(rnd32() & 0x807fffffu);                               /* subnormal */
    case 3: return (float)((int)(rnd32() % 513) - 256) * 0.5f;               /* ties */
    case 4: return u2f((rnd32() & 0x807fffffu) | ((uint32_t)(120 + rnd32() % 20) << 23));
    default: return u2f((rnd32() & 0x807fffffu) | ((uint32_t)(100 + rnd32() % 60) << 23));
    }
}

static void check_contrib(K *k, arena sa, arena da)
{
    char what[96];
    /* f32_range: lengths 1..70 at offsets 0..3, then long arrays */
    for (size_t len = 1; len <= 200; len += (len < 70 ? 1 : 13))
        for (size_t off = 0; off < 4; off++)
            for (int kind = 0; kind < 4; kind++) {
                float *s = (float *)arena_tail(sa, len * 4, off, 4);
                float lo, hi, lo_s, hi_s;
                int ok, ok_s;
                for (size_t i = 0; i < len; i++)
                    s[i] = kind == 0 ? rnd_value() : kind == 1 ? (rnd32() & 1 ? 0.0f : -0.0f)
                                                   : kind == 2 ? u2f(rnd32() & 0x801fffffu) * (float)(rnd32() & 1)
                                                               : rnd_value();
                if (kind == 3) /* a non-finite element somewhere */
                    s[rnd32() % len] = (rnd32() & 1) ? u2f(0x7fc00000u | rnd32()) : -INFINITY;
                ok_s = S->f32_range(s, len, &lo_s, &hi_s);
                ok = k->f32_range(s, len, &lo, &hi);
                snprintf(what, sizeof what, "f32_range kind %d len %zu off %zu", kind, len, off);
                expect(ok == ok_s, what);
                if (ok && ok_s) {
                    expect_same(what, &lo, &lo_s, 1, 4, NULL, 0);
                    expect_same(what, &hi, &hi_s, 1, 4, NULL, 0);
                }
            }
    /* quantize_u8_n */
    {
        static const float scales[] = {1.0f, 0.5f, 0.25f, 0.1f, 3.0f, 1e-3f, 1e-30f, 1e-40f,
                                       1.4e-45f, 1e30f, 0.0078125f};
        for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
            for (int zi = 0; zi < 3; zi++) {
                const float zp = zi == 0 ? 0.0f : zi == 1 ? 128.0f : 255.0f;
                for (size_t len = 0; len <= 70; len++) {
                    const size_t off = len & 3;
                    float *s = (float *)arena_tail(sa, len * 4, off, 4);
                    uint8_t *o = (uint8_t *)arena_tail(da, len, off, 1), w[70];
                    for (size_t i = 0; i < len; i++) {
                        const float v = rnd_value();
                        /* a tie of rint after the division where the scale allows */
                        s[i] = (i & 1) ? v : v * scales[si];
                    }
                    memset(o, 0xA5, len + off);
                    S->quantize_u8_n(s, w, len, scales[si], zp);
                    k->quantize_u8_n(s, o, len, scales[si], zp);
                    snprintf(what, sizeof what, "quantize_u8_n scale %g zp %g len %zu", scales[si], zp, len);
                    expect_same(what, o, w, len, 1, s, 4);
                    for (size_t b = len; b < len + off; b++)
                        if (o[b] != 0xA5) {
                            expect(0, "quantize_u8_n wrote past n");
                            break;
                        }
                }
            }
    }
    /* i32_scale_n */
    for (size_t ncols = 1; ncols <= 20; ncols++)
        for (int mode = 0; mode < 4; mode++) {
            const size_t rows = 1 + rnd32() % 4, n = rows * ncols;
            const int per_col = mode & 1, with_bias = mode >> 1;
            int32_t *acc = (int32_t *)arena_tail(sa, n * 4, ncols & 3, 4);
            float scale[20], bias[20], got[80], want[80];
            for (size_t i = 0; i < n; i++)
                acc[i] = (rnd32() % 8 == 0) ? (int32_t)(rnd32() % 2 ? 0x7fffffff : 0x80000000u)
                                            : (int32_t)rnd32() >> (rnd32() % 31);
            for (size_t j = 0; j < ncols; j++) {
                scale[j] = (rnd32() % 16 == 0) ? u2f(0x7f800001u | (rnd32() & 0x803fffffu)) : rnd_value();
                bias[j] = (rnd32() % 16 == 0) ? u2f(0x7fc00000u | rnd32()) : rnd_value();
            }
            if (ncols == 7)
                scale[0] = INFINITY;
            S->i32_scale_n(acc, want, n, ncols, scale, per_col, with_bias ? bias : NULL);
            k->i32_scale_n(acc, got, n, ncols, scale, per_col, with_bias ? bias : NULL);
            snprintf(what, sizeof what, "i32_scale_n ncols %zu per_col %d bias %d", ncols, per_col, with_bias);
            expect_same(what, got, want, n, 4, acc, 4);
        }
}

/* ---- non-default floating-point modes ------------------------------------------------- */

typedef struct {
    const char *name;
    int round; /* fesetround mode, or -1 */
    unsigned long arch_bits;
} fp_mode;

#if defined(__aarch64__)
static unsigned long fpcr_get(void)
{
    unsigned long r;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(r));
    return r;
}
static void fpcr_set(unsigned long r) { __asm__ __volatile__("msr fpcr, %0" : : "r"(r)); }
static const fp_mode modes[] = {
    {"round toward zero", FE_TOWARDZERO, 0},
    {"round upward", FE_UPWARD, 0},
    {"FZ", -1, 1ul << 24},
    {"DN", -1, 1ul << 25},
    {"AHP", -1, 1ul << 26},
    {"FZ16", -1, 1ul << 19},
    {"FZ + round downward", FE_DOWNWARD, 1ul << 24},
};
#define ARCH_GET() fpcr_get()
#define ARCH_SET(v) fpcr_set(v)
#elif defined(__x86_64__) || defined(__i386__)
static const fp_mode modes[] = {
    {"round toward zero", FE_TOWARDZERO, 0},
    {"round upward", FE_UPWARD, 0},
    {"FTZ + DAZ", -1, 0x8040ul},
};
#define ARCH_GET() ((unsigned long)_mm_getcsr())
#define ARCH_SET(v) _mm_setcsr((unsigned)(v))
#else
static const fp_mode modes[] = {{"round toward zero", FE_TOWARDZERO, 0}};
#define ARCH_GET() 0ul
#define ARCH_SET(v) ((void)(v))
#endif

static void check_modes(K *k, const uint16_t *all16, const uint8_t *all8, const u32vec *f32in,
                        const u64vec *f64in, arena sa, arena da)
{
    const unsigned long saved = ARCH_GET();
    const int saved_round = fegetround();
    /* a prefix of the float32 set: the ties of every format come first */
    u32vec part = *f32in;
    part.n = part.n < 400000 ? part.n : 400000;
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        const fp_mode *md = &modes[mi];
        char what[96];
        float f_out[64];
        double d_out[64];
        if (md->round >= 0)
            fesetround(md->round);
        ARCH_SET(ARCH_GET() | md->arch_bits);
        /* a bit this CPU does not implement reads back as 0 (FZ16 without FEAT_FP16):
         * the mode is then the default one and nothing is expected to fall back */
        const int took = (ARCH_GET() & md->arch_bits) == md->arch_bits &&
                         (md->round < 0 || fegetround() == md->round);
        if (!took)
            printf("codecs %s: mode %s not implemented here, checked as the default\n",
                   k->isa, md->name);
        check_conversions(k, all16, all8, &part, sa, da, 0);
        if (k->f64_to_f32_n != NULL && took) {
            memset(f_out, 0xA5, sizeof f_out);
            memset(d_out, 0xA5, sizeof d_out);
            snprintf(what, sizeof what, "f64 members under %s must return 0", md->name);
            expect(k->f64_to_f32_n((const double *)f64in->v, f_out, 64, 0) == 0 &&
                       k->f64_to_f32_n((const double *)f64in->v, f_out, 64, 1) == 0 &&
                       k->f32_to_f64_n((const float *)f32in->v, d_out, 64) == 0,
                   what);
            for (size_t b = 0; b < sizeof f_out; b++)
                if (((unsigned char *)f_out)[b] != 0xA5) {
                    expect(0, "f64_to_f32_n wrote under a non-default mode");
                    break;
                }
            for (size_t b = 0; b < sizeof d_out; b++)
                if (((unsigned char *)d_out)[b] != 0xA5) {
                    expect(0, "f32_to_f64_n wrote under a non-default mode");
                    break;
                }
        }
#if defined(__aarch64__)
        check_contrib(k, sa, da);
#endif
        ARCH_SET(saved);
        fesetround(saved_round);
    }
}

int main(void)
{
    const int nfam = gk_codecs_kernel_count();
    uint16_t *all16 = (uint16_t *)xmalloc(65536 * 2);
    uint8_t all8[256];
    const u32vec f32in = build_f32_inputs();
    const u64vec f64in = build_f64_inputs();
    const arena sa = arena_new(), da = arena_new();
    int tested = 0;
    for (int i = 0; i < 65536; i++)
        all16[i] = (uint16_t)i;
    for (int i = 0; i < 256; i++)
        all8[i] = (uint8_t)i;
    printf("codecs: %zu float32 and %zu float64 inputs\n", f32in.n, f64in.n);
    /* the scalar family's float64 routes are gk_cast.c's integer ones; check the
     * nearest-even reference itself against the hardware conversion where the mode is the
     * default (both are IEEE binary64 -> binary32, RNE) */
    {
        long bad = 0;
        for (size_t i = 0; i < f64in.n; i++) {
            const double x = u2d(f64in.v[i]);
            if (x == x && f2u((float)x) != gk_f64_to_f32_bits(x))
                bad++;
        }
        cur_fam = "reference";
        expect(bad == 0, "gk_f64_to_f32_bits vs (float)x on non-NaN inputs");
    }
    for (int i = 0; i < nfam; i++) {
        K *k = gk_codecs_kernel_at(i);
        const long fail0 = n_fail, checks0 = n_checks;
        cur_fam = k->isa;
        if (k == S)
            continue; /* the oracle */
        if (!gk_codecs_kernel_usable(i)) {
            printf("codecs %s: not usable on this CPU\n", k->isa);
            continue;
        }
        check_conversions(k, all16, all8, &f32in, sa, da, 1);
        check_f64(k, &f64in, &f32in, sa, da);
        check_contrib(k, sa, da);
        check_modes(k, all16, all8, &f32in, &f64in, sa, da);
        printf("codecs %s: %ld checks, %s\n", k->isa, n_checks - checks0,
               n_fail == fail0 ? "ok" : "FAILED");
        tested++;
    }
    if (tested == 0)
        printf("codecs: no family besides the scalar one is usable here\n");
    printf("codecs: %ld passed, %ld failed\n", n_checks - n_fail, n_fail);
    free(all16);
    return n_fail ? 1 : 0;
}
