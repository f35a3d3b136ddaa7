/* Every usable Gemm kernel family of every element type against a straightforward
 * reference.
 *
 * Portable C (built natively by run_native.sh, cross-built for aarch64 and run under
 * qemu by scripts/test_qemu_aarch64.sh, run under emulated x86 CPUs by
 * scripts/test_qemu_x86.sh).  The families are found through the dispatch's Gemm rows
 * (gk_gemm_kernel_count / _at / _usable), so a family added to a row is tested without
 * naming it here.  Each case (random data in one of several layouts: row/column-major,
 * negative strides, strided, byte strides that are not multiples of the element size,
 * broadcast rows) is run through gk_gemm_run with every usable family of its type, with
 * shapes derived from each family's tile and cache blocks (gk_gemm_blocking): edge tiles
 * 1..17, K around KC (and around the sub-blocks of kc_sub), M past MC, N past NC, the
 * small-call path below GK_GEMM_SMALL_FLOPS (size rules off: every family runs every
 * shape); every broadcast form of C, several alpha/beta (beta == 0 with a
 * NaN C, which must not be read), K == 0, empty outputs, NaN/inf inputs.
 *
 * The reference sums in double (integers: in uint64_t, wrapping) from the operands
 * themselves, not from any family:
 *   integers: bit-exact, modulo 2**bits, including the non-integral alpha/beta path
 *             (double math, then gk_gemm_f64_to_u64_mod);
 *   floats:   |y - ref| <= |alpha| (K+2) u S + 2u (|alpha dot| + |alpha| (K+2) u S
 *             + |beta c|) + underflow floor, with S = sum_k |a||b| and u = 2**-24
 *             (float32 accumulation: float16, bfloat16, float32) or 2**-53 (float64, whose
 *             double reference has the same error again: the bound is doubled); 16-bit
 *             outputs add one rounding to the output type; NaN references need NaN,
 *             infinite ones the same infinity.
 * A family's ukernel_rounded (products rounded before their adds) must give the scalar
 * oracle's (the row's last family's) output bit for bit; so must the sse41 float families
 * themselves (SSE has no FMA: mul, then add, in the oracle's k order).
 * The guard columns right of Y and the row below it must keep their fill, and a first K
 * block must not read Y (it starts filled with NaN / all-ones bytes).
 * Prints the families with their case counts and "N passed, N failed"; exits 1 on any
 * failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_gemm.h"
#include "gk_test_util.h"
#include "gemm/gk_gemm_bf16dot_guard.h"

static const char *const dt_name[GK_DT_COUNT] = {"float16", "bfloat16", "float32", "float64",
                                                 "int32",   "uint32",   "int64",   "uint64"};
#define MAX_FAM 8
static int fam_usable[GK_DT_COUNT][MAX_FAM];
static long fam_cases[GK_DT_COUNT][MAX_FAM], fam_fail[GK_DT_COUNT][MAX_FAM];
static long rounded_cases[GK_DT_COUNT][MAX_FAM];
static long exact_cases[GK_DT_COUNT][MAX_FAM];
static long declined_cases[GK_DT_COUNT][MAX_FAM]; /* the family's guard said no */

/* A family that may hand a call on to the next one of its row (its guard). */
static int has_guard(const gk_gemm_kernel *kr)
{
    return kr->check_packed != NULL;
}

/* The second half of a guard folded into packing (gk_gemm_kernel.check_packed, the
 * bfloat16 dot families'), on spans this harness takes of A' and B' itself (not the
 * packers'): 0 where gk_gemm_run runs the call again on the next family. */
static int packed_guard_passes(const gk_gemm_kernel *kr, const gk_gemm_args *g)
{
    gk_bf16_span sa = GK_BF16_SPAN_EMPTY, sb = GK_BF16_SPAN_EMPTY;
    gk_gemm_seen seen;
    if (kr->check_packed == NULL)
        return 1;
    gk_bf16_span_scan(&sa, (const char *)g->a, g->a_rs, g->a_cs, g->m, g->k);
    gk_bf16_span_scan(&sb, (const char *)g->b, g->b_rs, g->b_cs, g->k, g->n);
    seen.a_min = sa.lo;
    seen.a_max = sa.hi;
    seen.b_min = sb.lo;
    seen.b_max = sb.hi;
    return kr->check_packed(&seen, g);
}
static long n_pass, n_fail;

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd64(void) { return gk_test_xorshift64(&rng); }
static uint32_t rnd(void) { return (uint32_t)(rnd64() >> 20); }
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }

static size_t dt_size(int dt)
{
    return dt <= GK_DT_BF16 ? 2 : (dt == GK_DT_F32 || dt == GK_DT_I32 || dt == GK_DT_U32) ? 4 : 8;
}
static int is_float(int dt) { return dt <= GK_DT_F64; }
static uint64_t int_mask(int dt)
{
    return dt_size(dt) == 4 ? 0xFFFFFFFFull : ~0ull;
}

/* ---- elements: floats as double, integers as their bits (zero-extended) ---- */
static double getf(int dt, const char *p)
{
    uint16_t h;
    float f;
    double d;
    switch (dt) {
    case GK_DT_F16: memcpy(&h, p, 2); return gk_f16_to_f32(h);
    case GK_DT_BF16: memcpy(&h, p, 2); return gk_bf16_to_f32(h);
    case GK_DT_F32: memcpy(&f, p, 4); return f;
    default: memcpy(&d, p, 8); return d;
    }
}
static void setf(int dt, char *p, double v)
{
    uint16_t h;
    float f = (float)v;
    switch (dt) {
    case GK_DT_F16: h = gk_f32_to_f16(f); memcpy(p, &h, 2); break;
    case GK_DT_BF16: h = gk_f32_to_bf16(f); memcpy(p, &h, 2); break;
    case GK_DT_F32: memcpy(p, &f, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}
static uint64_t geti(int dt, const char *p)
{
    uint32_t u;
    uint64_t w;
    if (dt_size(dt) == 4) {
        memcpy(&u, p, 4);
        return u;
    }
    memcpy(&w, p, 8);
    return w;
}
static void seti(int dt, char *p, uint64_t v)
{
    uint32_t u = (uint32_t)v;
    if (dt_size(dt) == 4)
        memcpy(p, &u, 4);
    else
        memcpy(p, &v, 8);
}
/* an integer's value as the element type reads it (signed types: two's complement) */
static double int_as_f64(int dt, uint64_t u)
{
    if (dt == GK_DT_I32)
        return u < 0x80000000u ? (double)u : (double)u - 4294967296.0;
    if (dt == GK_DT_I64)
        return u < ((uint64_t)1 << 63) ? (double)u : -(double)((uint64_t)0 - u);
    return (double)u;
}

/* ---- matrices: rows x cols elements somewhere in a buffer, byte strides ---- */
enum { LAY_ROW, LAY_COL, LAY_NEGROW, LAY_NEGCOL, LAY_STRIDED, LAY_ODD, LAY_ODDCOL,
       LAY_BCASTROW, LAY_COUNT };
static const char *const lay_name[LAY_COUNT] = {"row", "col", "negrow", "negcol", "strided",
                                                "oddrow", "oddcol", "bcastrow"};
typedef struct {
    char *buf;
    char *p; /* element (0, 0) */
    ptrdiff_t rs, cs;
} mat;

static mat make_mat(int dt, int rows, int cols, int lay)
{
    const ptrdiff_t es = (ptrdiff_t)dt_size(dt), r = rows, c = cols;
    mat m;
    size_t n = (size_t)(r * c * es * 3 + r * 8 + c * 8 + 128);
    char *base;
    m.buf = (char *)xmalloc(n);
    memset(m.buf, 0x7F, n);
    base = m.buf + 32;
    switch (lay) {
    case LAY_ROW: m.rs = c * es; m.cs = es; m.p = base; break;
    case LAY_COL: m.rs = es; m.cs = r * es; m.p = base; break;
    case LAY_NEGROW: m.rs = -c * es; m.cs = es; m.p = base + (r - 1) * c * es; break;
    case LAY_NEGCOL: m.rs = c * es; m.cs = -es; m.p = base + (c - 1) * es; break;
    case LAY_STRIDED: m.rs = 2 * c * es + es; m.cs = 2 * es; m.p = base; break;
    /* byte strides that are no multiple of the element size, unaligned elements */
    case LAY_ODD: m.rs = c * es + 1; m.cs = es; m.p = base + 1; break;
    case LAY_ODDCOL: m.rs = es; m.cs = r * es + 3; m.p = base + 3; break;
    default: m.rs = 0; m.cs = es; m.p = base; break;
    }
    return m;
}
static char *at(const mat *m, ptrdiff_t i, ptrdiff_t j) { return m->p + i * m->rs + j * m->cs; }

/* fill modes: floats 0 random in [-2, 2), 1 the same with wide exponents, 2 multiples of
 * 2**-10 in [-2, 2] (exact products, ties),
 * integers 0 random bits, 1 extremes (MIN, MAX, -1, 0, 1), 2 small */
static void fill(int dt, mat *m, int rows, int cols, int mode)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            char *p = at(m, i, j);
            if (is_float(dt) && mode == 5) { /* bfloat16 only: denormals of either sign */
                uint16_t h = (uint16_t)(rnd_in(1, 0x7f) | (rnd() & 1 ? 0x8000 : 0));
                memcpy(p, &h, 2);
            } else if (is_float(dt)) {
                /* full precision (53 random bits, rounded to the type) or coarse; scaled
                 * by 2**-66..2**-62 (3: products straddle float32's denormal boundary),
                 * 2**60..2**62 (4: products up to 2**126) or 2**100 (6) */
                double v = mode == 2 ? ((int)(rnd() % 4097) - 2048) / 1024.0
                                     : (double)(rnd64() >> 11) * 0x1p-51 - 2.0;
                if (mode == 1) {
                    const int span = dt == GK_DT_F16 ? 4 : dt == GK_DT_F64 ? 60 : 20;
                    v = ldexp(v, rnd_in(-span, span / 2));
                }
                if (mode == 3)
                    v = ldexp(v, rnd_in(-66, -62));
                else if (mode == 4)
                    v = ldexp(v, rnd_in(60, 62));
                else if (mode == 6)
                    v = ldexp(v, 100);
                setf(dt, p, v);
            } else {
                uint64_t v = rnd64();
                if (mode == 1) {
                    static const uint64_t ext[5] = {0, 1, ~0ull, 0x7FFFFFFFFFFFFFFFull,
                                                    0x8000000000000000ull};
                    v = ext[rnd() % 5];
                    if (dt_size(dt) == 4)
                        v = v == 0x7FFFFFFFFFFFFFFFull ? 0x7FFFFFFFu
                            : v == 0x8000000000000000ull ? 0x80000000u : v;
                } else if (mode == 2) {
                    v = (uint64_t)(int64_t)rnd_in(-100, 100);
                }
                seti(dt, p, v);
            }
        }
}

/* ---- C forms (ONNX Gemm's unidirectional broadcast) ---- */
enum { CF_NONE, CF_SCALAR, CF_ROWVEC, CF_COLVEC, CF_FULL, CF_FULLNEG, CF_COUNT };
static const char *const cf_name[CF_COUNT] = {"none", "()", "[N]", "[M,1]", "[M,N]",
                                              "[M,N]neg"};

/* alpha/beta sets: floats, and integers (exact flags, integral doubles, the float path) */
typedef struct {
    double alpha, beta;
    uint64_t alpha_u64, beta_u64;
    int alpha_exact, beta_exact;
} ab_t;
static const ab_t ab_float[] = {
    {1.0, 0.0, 0, 0, 0, 0}, {1.0, 1.0, 0, 0, 0, 0},    {0.5, -2.0, 0, 0, 0, 0},
    {-1.25, 0.75, 0, 0, 0, 0}, {0.0, 1.0, 0, 0, 0, 0}, {2.0, 0.0, 0, 0, 0, 0},
    {1.0, -1.0, 0, 0, 0, 0},
};
static const ab_t ab_int[] = {
    {1.0, 0.0, 1, 0, 1, 1},
    {1.0, 1.0, 1, 1, 1, 1},
    {3.0, -2.0, 3, (uint64_t)-2, 1, 1},
    {18446744073709551615.0, 9223372036854775808.0, ~0ull, 1ull << 63, 1, 1},
    {-7.0, 5.0, 0, 0, 0, 0},           /* integral doubles */
    {1e20, -3.0, 0, 0, 0, 0},          /* integral beyond 2**64: its value mod 2**bits */
    {0.5, 1.5, 0, 0, 0, 0},            /* the float path */
    {-2.25, 0.0, 0, 0, 0, 0},          /* the float path, C not read */
    {2.0, 0.25, 0, 0, 0, 0},           /* integral alpha, non-integral beta: float path */
};
#define N_AB_FLOAT ((int)(sizeof(ab_float) / sizeof(ab_float[0])))
#define N_AB_INT ((int)(sizeof(ab_int) / sizeof(ab_int[0])))

#define GUARD 3
enum { SP_NONE, SP_NAN_A, SP_INF_B, SP_INF_C, SP_COUNT };

typedef struct {
    int dt, M, N, K, la, lb, fa, fb, cf, ab, sp;
} spec;

static void report(const spec *s, const gk_gemm_kernel *kr, const char *what, ptrdiff_t i,
                   ptrdiff_t j, double got, double want, double bound)
{
    if (n_fail > 30)
        return;
    fprintf(stderr,
            "FAIL %s/%s %s: M=%d N=%d K=%d A=%s B=%s C=%s ab=%d special=%d at (%td,%td) "
            "got %.17g want %.17g bound %.3g\n",
            dt_name[s->dt], kr->isa, what, s->M, s->N, s->K, lay_name[s->la], lay_name[s->lb],
            cf_name[s->cf], s->ab, s->sp, i, j, got, want, bound);
}

/* Runs one case on every usable family of its type. */
static void run_case(const spec *s)
{
    const int dt = s->dt, M = s->M, N = s->N, K = s->K;
    const size_t es = dt_size(dt);
    const int fl = is_float(dt);
    const ab_t ab = fl ? ab_float[s->ab % N_AB_FLOAT] : ab_int[s->ab % N_AB_INT];
    mat A = make_mat(dt, M > 0 ? M : 1, K > 0 ? K : 1, s->la);
    mat B = make_mat(dt, K > 0 ? K : 1, N > 0 ? N : 1, s->lb);
    mat C = make_mat(dt, M > 0 ? M : 1, N > 0 ? N : 1, s->cf == CF_FULLNEG ? LAY_NEGROW : LAY_ROW);
    const ptrdiff_t ldy = N + GUARD;
    const size_t ybytes = (size_t)(M + 1) * (size_t)ldy * es;
    char *y = (char *)xmalloc(ybytes), *fillpat = (char *)xmalloc(ybytes);
    char *y0 = (char *)xmalloc(ybytes);
    double *ref = (double *)xmalloc(sizeof(double) * (size_t)(M > 0 ? M : 1) * (N > 0 ? N : 1));
    double *bnd = (double *)xmalloc(sizeof(double) * (size_t)(M > 0 ? M : 1) * (N > 0 ? N : 1));
    uint64_t *refi = (uint64_t *)xmalloc(sizeof(uint64_t) * (size_t)(M > 0 ? M : 1) * (N > 0 ? N : 1));
    ptrdiff_t c_rs = 0, c_cs = 0;
    gk_gemm_args g;
    int use_c;

    fill(dt, &A, M, K, s->fa);
    fill(dt, &B, K, N, s->fb);
    switch (s->cf) {
    case CF_ROWVEC: c_cs = C.cs; break;
    case CF_COLVEC: c_rs = C.rs; break;
    case CF_FULL:
    case CF_FULLNEG: c_rs = C.rs; c_cs = C.cs; break;
    default: break;
    }
    if (s->cf != CF_NONE) {
        /* the elements the strides reach: fill the whole M x N view (broadcast axes
         * rewrite the same element) */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                char *p = C.p + i * c_rs + j * c_cs;
                if (fl)
                    setf(dt, p, ((int)(rnd() % 4097) - 2048) / 256.0);
                else
                    seti(dt, p, s->fa == 1 ? ~0ull : rnd64());
            }
    }
    if (fl && M > 0 && N > 0 && K > 0) {
        if (s->sp == SP_NAN_A)
            setf(dt, at(&A, rnd_in(0, M - 1), rnd_in(0, K - 1)), NAN);
        if (s->sp == SP_INF_B)
            setf(dt, at(&B, rnd_in(0, K - 1), rnd_in(0, N - 1)), (rnd() & 1) ? INFINITY : -INFINITY);
    }
    if (fl && s->sp == SP_INF_C && s->cf != CF_NONE && M > 0 && N > 0)
        setf(dt, C.p + rnd_in(0, M - 1) * c_rs + rnd_in(0, N - 1) * c_cs, INFINITY);

    memset(&g, 0, sizeof g);
    g.dtype = dt;
    g.m = M; g.n = N; g.k = K;
    g.a = A.p; g.a_rs = A.rs; g.a_cs = A.cs;
    g.b = B.p; g.b_rs = B.rs; g.b_cs = B.cs;
    g.c = s->cf == CF_NONE ? NULL : C.p;
    g.c_rs = c_rs; g.c_cs = c_cs;
    g.y = y; g.ldy = ldy;
    g.alpha = ab.alpha; g.beta = ab.beta;
    g.alpha_u64 = ab.alpha_u64; g.beta_u64 = ab.beta_u64;
    g.alpha_exact = ab.alpha_exact; g.beta_exact = ab.beta_exact;
    /* beta == 0: C must not be read; make any read visible */
    if (g.c != NULL && ab.beta == 0.0)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                char *p = C.p + i * c_rs + j * c_cs;
                if (fl)
                    setf(dt, p, NAN);
                else
                    seti(dt, p, 0x5A5A5A5A5A5A5A5Aull);
            }

    /* ---- the reference ---- */
    if (fl) {
        const double alpha = dt == GK_DT_F64 ? ab.alpha : (double)(float)ab.alpha;
        const double beta = dt == GK_DT_F64 ? ab.beta : (double)(float)ab.beta;
        const double u = dt == GK_DT_F64 ? 0x1p-53 : 0x1p-24;
        const double under = dt == GK_DT_F64 ? 0x1p-1074 : 0x1p-149;
        const double scale = dt == GK_DT_F64 ? 2.0 : 1.0; /* the double reference's own error */
        const double uo = dt == GK_DT_F16 ? 0x1p-11 : dt == GK_DT_BF16 ? 0x1p-8 : 0.0;
        const double tinyo = dt == GK_DT_F16 ? 0x1p-25 : dt == GK_DT_BF16 ? 0x1p-134 : 0.0;
        use_c = g.c != NULL && beta != 0.0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double dot = 0.0, S = 0.0, cterm = 0.0, r, acc, epi, b;
                for (int k = 0; k < K; k++) {
                    const double x = getf(dt, at(&A, i, k)), w = getf(dt, at(&B, k, j));
                    dot += x * w;
                    S += fabs(x * w);
                }
                if (use_c)
                    cterm = beta * getf(dt, C.p + i * c_rs + j * c_cs);
                r = alpha * dot + cterm;
                acc = fabs(alpha) * ((K + 2) * u * S + K * 0x1p-52 * S + (K + 4) * under);
                epi = 2.0 * u * (fabs(alpha * dot) + acc + fabs(cterm));
                b = scale * (acc + epi) + 4 * under;
                b += uo * (fabs(r) + b) + tinyo;
                ref[(size_t)i * N + j] = r;
                bnd[(size_t)i * N + j] = b;
            }
    } else {
        const uint64_t mask = int_mask(dt);
        const int ai = ab.alpha_exact || (ab.alpha - ab.alpha == 0.0 && trunc(ab.alpha) == ab.alpha);
        const int bi = ab.beta_exact || (ab.beta - ab.beta == 0.0 && trunc(ab.beta) == ab.beta);
        int float_path;
        uint64_t au = 0, bu = 0;
        use_c = g.c != NULL && ab.beta != 0.0;
        float_path = !ai || (use_c && !bi);
        if (!float_path) {
            au = ab.alpha_exact ? ab.alpha_u64 : gk_gemm_f64_to_u64_mod(ab.alpha);
            bu = !use_c ? 0 : ab.beta_exact ? ab.beta_u64 : gk_gemm_f64_to_u64_mod(ab.beta);
        }
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                uint64_t dot = 0, c = 0, r;
                for (int k = 0; k < K; k++)
                    dot += geti(dt, at(&A, i, k)) * geti(dt, at(&B, k, j));
                dot &= mask;
                if (use_c)
                    c = geti(dt, C.p + i * c_rs + j * c_cs);
                if (!float_path) {
                    r = au * dot + bu * c;
                } else {
                    double v = int_as_f64(dt, dot) * ab.alpha;
                    if (use_c)
                        v += int_as_f64(dt, c) * ab.beta;
                    r = gk_gemm_f64_to_u64_mod(v);
                }
                refi[(size_t)i * N + j] = r & mask;
            }
    }

    /* ---- every usable family of the row ---- */
    memset(fillpat, 0xFF, ybytes);
    /* the oracle's output (the row's last family, scalar), for the rounded variants */
    if (fl && gk_gemm_kernel_count(dt) > 1) {
        memcpy(y0, fillpat, ybytes);
        g.y = y0;
        gk_gemm_run(gk_gemm_kernel_at(dt, gk_gemm_kernel_count(dt) - 1), &g);
        g.y = y;
    }
    for (int f = 0; f < gk_gemm_kernel_count(dt); f++) {
        const gk_gemm_kernel *kr = gk_gemm_kernel_at(dt, f);
        int ok = 1, rc;
        if (!fam_usable[dt][f])
            continue;
        memcpy(y, fillpat, ybytes);
        if (!packed_guard_passes(kr, &g))
            declined_cases[dt][f]++; /* gk_gemm_run hands the call to the next family */
        rc = gk_gemm_run(kr, &g);
        if (rc != GK_GEMM_OK) {
            report(s, kr, "status", -1, -1, rc, 0, 0);
            ok = 0;
        }
        for (ptrdiff_t i = 0; ok && i <= M; i++)
            for (ptrdiff_t j = 0; ok && j < ldy; j++) {
                const char *p = y + (size_t)(i * ldy + j) * es;
                if (i == M || j >= N) { /* guard: untouched */
                    if (memcmp(p, fillpat, es) != 0) {
                        report(s, kr, "guard written", i, j, 0, 0, 0);
                        ok = 0;
                    }
                    continue;
                }
                if (fl) {
                    const double v = getf(dt, p), r = ref[i * N + j], b = bnd[i * N + j];
                    const int good = isnan(r) ? isnan(v)
                                     : isinf(r) ? v == r
                                     : !isnan(v) && fabs(v - r) <= b;
                    if (!good) {
                        report(s, kr, "value", i, j, v, r, b);
                        ok = 0;
                    }
                } else {
                    const uint64_t v = geti(dt, p), r = refi[i * N + j];
                    if (v != r) {
                        report(s, kr, "value", i, j, (double)v, (double)r, 0);
                        ok = 0;
                    }
                }
            }
        if (ok && fl && strcmp(kr->isa, "sse41") == 0 && gk_gemm_kernel_count(dt) > 1) {
            /* no FMA at this level: every path (packed, B' in place) is the oracle's
             * arithmetic, whatever the blocking */
            for (size_t b = 0; ok && b < ybytes; b += es)
                if (memcmp(y + b, y0 + b, es) != 0 &&
                    !(isnan(getf(dt, y + b)) && isnan(getf(dt, y0 + b)))) {
                    report(s, kr, "sse41 family differs from the oracle",
                           (ptrdiff_t)(b / es) / ldy, (ptrdiff_t)(b / es) % ldy,
                           getf(dt, y + b), getf(dt, y0 + b), 0);
                    ok = 0;
                }
            exact_cases[dt][f]++;
        }
        if (ok && kr->ukernel_rounded != NULL) {
            /* products rounded before their adds: the scalar oracle's result bit for bit
             * (QLinearMatMul's float8 path runs this kernel) */
            gk_gemm_kernel rk = *kr;
            rk.ukernel = kr->ukernel_rounded;
            rk.ukernel_ldb = NULL;
            rk.ukernel_strip = NULL;
            rk.ukernel_strip_h = NULL;
            memcpy(y, fillpat, ybytes);
            gk_gemm_run(&rk, &g);
            for (size_t b = 0; ok && b < ybytes; b += es)
                if (memcmp(y + b, y0 + b, es) != 0 &&
                    !(isnan(getf(dt, y + b)) && isnan(getf(dt, y0 + b)))) {
                    report(s, kr, "ukernel_rounded differs from the oracle",
                           (ptrdiff_t)(b / es) / ldy, (ptrdiff_t)(b / es) % ldy,
                           getf(dt, y + b), getf(dt, y0 + b), 0);
                    ok = 0;
                }
            rounded_cases[dt][f]++;
        }
        fam_cases[dt][f]++;
        if (ok) {
            n_pass++;
        } else {
            n_fail++;
            fam_fail[dt][f]++;
        }
    }
    free(A.buf); free(B.buf); free(C.buf); free(y); free(y0); free(fillpat); free(ref); free(bnd);
    free(refi);
}

static void one(int dt, int M, int N, int K, int la, int lb, int fa, int fb, int cf, int ab,
                int sp)
{
    spec s;
    s.dt = dt; s.M = M; s.N = N; s.K = K; s.la = la; s.lb = lb; s.fa = fa; s.fb = fb;
    s.cf = cf; s.ab = ab; s.sp = sp;
    run_case(&s);
}
/* a case with layouts, fills, C form and alpha/beta drawn at random */
static void rnd_case(int dt, int M, int N, int K)
{
    const int nab = is_float(dt) ? N_AB_FLOAT : N_AB_INT;
    one(dt, M, N, K, rnd_in(0, LAY_COUNT - 1), rnd_in(0, LAY_COUNT - 1), rnd_in(0, 2),
        rnd_in(0, 2), rnd_in(0, CF_COUNT - 1), rnd_in(0, nab - 1), SP_NONE);
}
/* B' contiguous along its columns (b_cs == element size): the small-call path's
 * condition when the type is the accumulator's */
static void small_case(int dt, int M, int N, int K)
{
    static const int lbs[3] = {LAY_ROW, LAY_NEGROW, LAY_ODD};
    const int nab = is_float(dt) ? N_AB_FLOAT : N_AB_INT;
    one(dt, M, N, K, rnd_in(0, LAY_COUNT - 1), lbs[rnd() % 3], 0, 0,
        rnd_in(0, CF_COUNT - 1), rnd_in(0, nab - 1), SP_NONE);
}

static void test_type(int dt)
{
    const int nfam = gk_gemm_kernel_count(dt);
    const int nab = is_float(dt) ? N_AB_FLOAT : N_AB_INT;
    int any = 0;
    for (int f = 0; f < nfam && f < MAX_FAM; f++) {
        fam_usable[dt][f] = gk_gemm_kernel_usable(dt, f);
        any |= fam_usable[dt][f];
    }
    if (!any)
        return;
    /* edge tiles: every M x N in 1..17 (K small, everything else at random) */
    for (int m = 1; m <= 17; m++)
        for (int n = 1; n <= 17; n++)
            rnd_case(dt, m, n, rnd_in(1, 9));
    /* every layout pair */
    for (int la = 0; la < LAY_COUNT; la++)
        for (int lb = 0; lb < LAY_COUNT; lb++)
            one(dt, rnd_in(1, 20), rnd_in(1, 30), rnd_in(1, 40), la, lb, rnd_in(0, 2),
                rnd_in(0, 2), rnd_in(0, CF_COUNT - 1), rnd_in(0, nab - 1), SP_NONE);
    /* every C form x alpha/beta */
    for (int cf = 0; cf < CF_COUNT; cf++)
        for (int ab = 0; ab < nab; ab++)
            one(dt, rnd_in(1, 19), rnd_in(1, 29), rnd_in(1, 21), rnd_in(0, LAY_COUNT - 1),
                rnd_in(0, LAY_COUNT - 1), rnd_in(0, 2), rnd_in(0, 2), cf, ab, SP_NONE);
    /* K == 0 (Y = beta*C, or 0) and empty outputs */
    for (int cf = 0; cf < CF_COUNT; cf++)
        one(dt, rnd_in(1, 13), rnd_in(1, 29), 0, LAY_ROW, LAY_ROW, 0, 0, cf, rnd_in(0, nab - 1),
            SP_NONE);
    one(dt, 0, 7, 5, LAY_ROW, LAY_ROW, 0, 0, CF_FULL, 1, SP_NONE);
    one(dt, 7, 0, 5, LAY_ROW, LAY_ROW, 0, 0, CF_FULL, 1, SP_NONE);
    /* NaN / inf propagation (floats) */
    if (is_float(dt))
        for (int sp = SP_NAN_A; sp < SP_COUNT; sp++)
            for (int r = 0; r < 3; r++)
                one(dt, rnd_in(1, 20), rnd_in(1, 30), rnd_in(1, 50), rnd_in(0, LAY_COUNT - 1),
                    rnd_in(0, LAY_COUNT - 1), 0, 0, sp == SP_INF_C ? CF_FULL : rnd_in(0, CF_COUNT - 1),
                    sp == SP_INF_C ? 1 : rnd_in(0, nab - 1), sp);
    /* shapes from each family's blocks (the union over the row's usable families) */
    for (int f = 0; f < nfam && f < MAX_FAM; f++) {
        const gk_gemm_kernel *kr = gk_gemm_kernel_at(dt, f);
        int mc, kc, nc;
        if (!fam_usable[dt][f])
            continue;
        gk_gemm_blocking(kr, &mc, &kc, &nc);
        const int mr = kr->mr, nr = kr->nr;
        /* full tiles, one past, one short; the small-call path (B' in place) */
        small_case(dt, mr, nr, rnd_in(1, 33));
        small_case(dt, 2 * mr + 1, 3 * nr + rnd_in(1, nr - 1 > 1 ? nr - 1 : 1), rnd_in(1, 64));
        small_case(dt, 3 * mr - 1, nr, kc < 200 ? kc : 200);
        small_case(dt, mr + 3, 2 * nr - 1, 17);
        rnd_case(dt, mr + 1, nr + 1, rnd_in(1, 50));
        rnd_case(dt, mr - 1 > 0 ? mr - 1 : 1, nr - 1 > 0 ? nr - 1 : 1, rnd_in(1, 50));
        /* K around KC: one block, exactly KC, one past, several blocks (the running sums
         * across blocks; 16-bit outputs: the stripe workspace) */
        rnd_case(dt, mr + 2, nr + 3, kc - 1);
        small_case(dt, mr + 2, 2 * nr, kc);
        rnd_case(dt, mr + 2, nr + 3, kc + 1);
        rnd_case(dt, 2 * mr + 1, nr + 5, 2 * kc + 3);
        small_case(dt, mr, nr, kc + 1); /* past KC: packed although small */
        /* 1..GK_GEMM_STRIP_ROWS rows (ukernel_strip where the family has one; M = 1: a
         * GEMV): a strip of full tiles with and without a column tail, B' cached (the
         * small-call path, KC-deep blocks) and B' beyond GK_GEMM_SMALL_B_BYTES (the thin
         * path, thin K blocks) */
        for (int m = 1; m <= GK_GEMM_STRIP_ROWS + 1; m++) {
            const int n1 = 4 * nr + 1, n2 = 3 * nr;
            const int k1 = (int)(GK_GEMM_SMALL_B_BYTES / ((ptrdiff_t)n1 * (ptrdiff_t)dt_size(dt))) + 37;
            const int k2 = (int)(GK_GEMM_SMALL_B_BYTES / ((ptrdiff_t)n2 * (ptrdiff_t)dt_size(dt))) + 3;
            /* both strip variants: B' as cached, and as streaming from memory (several
             * tiles per step, forced by a 1-byte threshold), 1..9 tiles */
            for (int mem = 0; mem < 2; mem++) {
                gk_gemm_set_memory_bytes(mem ? 1 : 0);
                small_case(dt, m, 5 * nr + 3, rnd_in(1, 40));
                small_case(dt, m, 3 * nr, kc + 7);
                small_case(dt, m, n1, k1);
                small_case(dt, m, n2, k2);
                small_case(dt, m, rnd_in(1, 9) * nr + rnd_in(0, nr - 1), rnd_in(1, 300));
            }
            gk_gemm_set_memory_bytes(0);
        }
        /* thin A with B' contiguous along k (transB: gk_gemm_driver.c's run_thin_bt, one
         * micro-panel of B' packed at a time): K blocks of GK_GEMM_THIN_T_KC, and of the
         * family's kc_thin_t with B' as streaming from memory (forced by a 1-byte
         * threshold), and a last one of up to twice that, row counts around the tile,
         * column tails, B' columns at byte strides that are no multiple of the element
         * size */
        for (int mem = 0; mem < 2; mem++) {
            const int KT = mem && kr->kc_thin_t > 0 ? kr->kc_thin_t : GK_GEMM_THIN_T_KC;
            gk_gemm_set_memory_bytes(mem ? 1 : 0);
            const int ms[6] = {1, 2, mr - 1, mr + 1, 2 * mr + 1, GK_GEMM_THIN_ROWS};
            const int ks[7] = {KT - 1, KT, KT + 1, 2 * KT - 1, 2 * KT, 2 * KT + 1, 3 * KT + 5};
            for (int i = 0; i < 6; i++) {
                if (ms[i] < 1 || ms[i] > GK_GEMM_THIN_ROWS ||
                    (ms[i] + mr - 1) / mr > GK_GEMM_THIN_MAX_PANELS)
                    continue;
                for (int j = i % 2; j < 7; j += 2)
                    one(dt, ms[i], (i + j) % 2 ? nr + 1 : 3 * nr - 1, ks[j], rnd_in(0, LAY_COUNT - 1),
                        j % 3 ? LAY_COL : LAY_ODDCOL, rnd_in(0, 2), rnd_in(0, 2),
                        rnd_in(0, CF_COUNT - 1), rnd_in(0, nab - 1), SP_NONE);
            }
            /* 1..GK_GEMM_STRIP_ROWS rows over two groups of the family's thin_t_tiles
             * tiles (B' cached: one strip per group), a partial group and a column tail */
            for (int m = 1; m <= GK_GEMM_STRIP_ROWS && m <= mr; m++) {
                const int tt = kr->thin_t_tiles > 1 ? kr->thin_t_tiles : 4;
                one(dt, m, (2 * tt + 1) * nr + m + 2, ks[(m + 2 * mem) % 7],
                    rnd_in(0, LAY_COUNT - 1), m % 2 ? LAY_COL : LAY_ODDCOL, rnd_in(0, 2),
                    rnd_in(0, 2), rnd_in(0, CF_COUNT - 1), rnd_in(0, nab - 1), SP_NONE);
            }
        }
        gk_gemm_set_memory_bytes(0);
        /* K blocks in sub-blocks (gk_gemm_kernel.kc_sub): just below / at / past two
         * sub-blocks (the last one takes the rest), several row tiles per strip (M past
         * MC), and with a second K block */
        if (kr->kc_sub > 0) {
            const int ks = kr->kc_sub;
            rnd_case(dt, mr + 3, nr + 5, 2 * ks - 1);
            small_case(dt, 2 * mr, nr, 2 * ks);
            rnd_case(dt, 3 * mr - 1, 2 * nr + 1, 2 * ks + 1);
            rnd_case(dt, mc + mr + 1, nr + 1, 3 * ks + 17);
            if (kc > 2 * ks)
                rnd_case(dt, 2 * mr + 5, nr + 7, kc + 2 * ks + 9);
        }
        /* M past MC (one more A block), and with several K blocks */
        rnd_case(dt, mc + mr + 3, nr + 2, rnd_in(1, 9));
        rnd_case(dt, mc + 1, 2 * nr + 1, kc + 3);
        /* N past NC (one more column stripe), and with several K blocks */
        rnd_case(dt, 3, nc + nr + 2, rnd_in(1, 7));
        rnd_case(dt, mr + 1, nc + 1, kc + 2);
        /* NaN through the blocked path */
        if (is_float(dt))
            one(dt, 2 * mr + 3, 2 * nr + 1, kc + 5, LAY_ROW, LAY_COL, 0, 0, CF_ROWVEC, 1,
                rnd_in(SP_NAN_A, SP_INF_B));
    }
    /* the bfloat16 dot families' guard (gk_gemm_bf16dot_guard.h): products near float32's
     * denormal boundary, denormal inputs against large partners (a flushed product would
     * be far outside the bound), products up to 2**126 in short sums (the round-to-odd
     * family declines those: its bound on partial sums needs a margin) */
    if (dt == GK_DT_BF16)
        for (int r = 0; r < 4; r++) {
            const int la = rnd_in(0, LAY_COUNT - 1), lb = rnd_in(0, LAY_COUNT - 1);
            one(dt, rnd_in(1, 20), rnd_in(1, 30), rnd_in(1, 60), la, lb, 3, 3, CF_NONE, 0, SP_NONE);
            one(dt, rnd_in(1, 20), rnd_in(1, 30), rnd_in(1, 60), la, lb, 5, 6, CF_NONE, 0, SP_NONE);
            one(dt, rnd_in(1, 20), rnd_in(1, 30), rnd_in(1, 60), la, lb, 6, 5, CF_ROWVEC, 1, SP_NONE);
            one(dt, rnd_in(1, 20), rnd_in(1, 30), rnd_in(1, 12), la, lb, 4, 4, CF_NONE, 0, SP_NONE);
        }
    /* extremes (integers wrap: MIN * MIN, -1 * MIN, ...), wide exponents (floats) */
    for (int r = 0; r < 6; r++)
        one(dt, rnd_in(1, 30), rnd_in(1, 40), rnd_in(1, 300), rnd_in(0, LAY_COUNT - 1),
            rnd_in(0, LAY_COUNT - 1), 1, 1, rnd_in(0, CF_COUNT - 1), rnd_in(0, nab - 1), SP_NONE);
}

int main(void)
{
    /* every family on every shape: the size rules (performance only) hand small calls on */
    gk_gemm_set_size_rules(0);
    printf("Gemm kernel families (every usable one per type, against the reference):\n");
    for (int dt = 0; dt < GK_DT_COUNT; dt++) {
        const int nfam = gk_gemm_kernel_count(dt);
        if (nfam > MAX_FAM) {
            fprintf(stderr, "FAIL: %s has %d families, the harness keeps %d\n", dt_name[dt], nfam,
                    MAX_FAM);
            n_fail++;
        }
        test_type(dt);
        for (int f = 0; f < nfam && f < MAX_FAM; f++) {
            const gk_gemm_kernel *kr = gk_gemm_kernel_at(dt, f);
            int mc, kc, nc;
            gk_gemm_blocking(kr, &mc, &kc, &nc);
            if (!fam_usable[dt][f]) {
                printf("  %-9s %-8s not usable on this CPU: skipped\n", dt_name[dt], kr->isa);
                continue;
            }
            if (has_guard(kr) && declined_cases[dt][f] >= fam_cases[dt][f]) {
                fprintf(stderr, "FAIL: %s/%s declined every case: its kernel never ran\n",
                        dt_name[dt], kr->isa);
                n_fail++;
                fam_fail[dt][f]++;
            }
            printf("  %-9s %-8s %2dx%-2d mc=%d kc=%d nc=%d%s%s: %ld cases", dt_name[dt],
                   kr->isa, kr->mr, kr->nr, mc, kc, nc,
                   rounded_cases[dt][f] ? " (+ukernel_rounded)" : "",
                   exact_cases[dt][f] ? " (bit-exact)" : "", fam_cases[dt][f]);
            if (has_guard(kr))
                printf(" (%ld declined)", declined_cases[dt][f]);
            printf(", %s\n", fam_fail[dt][f] ? "FAILED" : "ok");
        }
    }
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
