/* gemmkit.cast's driver: any strided array of float32/float64/float16/bfloat16/float8 into
 * another of these types, through the codecs family it is given.
 *
 * Every conversion rounds once, from the exact source value:
 *  - float16, bfloat16 and float8 sources widen exactly to float32 (every value of theirs is
 *    a float32), then the family's float32 encoder rounds;
 *  - float64 sources round once: to float32 by the family's f64_to_f32_n (nearest even),
 *    to the narrower types through a float32 rounded to odd, from which their nearest-even
 *    rounding is the float64's own (gk_codecs_kernel.f64_to_f32_n), or directly
 *    (gk_fp8_encode_f64, gk_f64_to_*) -- never by nearest even through float32, which
 *    would round twice (ONNX Cast from double rounds once);
 *  - float64 destinations are exact widenings.
 * Integer arithmetic throughout (the SIMD families' few float operations are exact with
 * normal operands), so MXCSR's rounding mode, DAZ and FTZ change nothing -- except the
 * hardware float64 <-> float32 conversions, which run only where this thread's MXCSR is
 * the default one (the family checks); elsewhere the integer routes run. */
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_parallel.h"

/* Elements per pass through the stack buffers: 1024 * 8 bytes * 2 + 4 KB = 20 KB of stack,
 * big enough that the per-call overhead of the family's loops is amortised. */
#define GK_CAST_CHUNK 1024

static const size_t gk_cast_size[GK_CT_COUNT] = {4, 8, 2, 2, 1, 1, 1, 1};

/* Round x / 2^s to the nearest integer, ties to even.  1 <= s <= 63. */
static inline uint64_t gk_rne_shift64(uint64_t x, unsigned s)
{
    uint64_t q = x >> s, rem = x & ((UINT64_C(1) << s) - 1u), half = UINT64_C(1) << (s - 1u);
    return q + (rem > half || (rem == half && (q & 1u)));
}

/* float64 -> the IEEE binary format of M stored mantissa bits and E exponent bits (bias
 * 2^(E-1) - 1): its bits, RNE from the exact value, overflow to inf, NaN quiet with the sign
 * and the top M - 1 payload bits.  M <= 23, E <= 8 (float32, float16, bfloat16). */
static inline uint32_t gk_f64_narrow(double x, unsigned M, unsigned E)
{
    uint64_t u, a, man;
    uint32_t sign, inf;
    int e;
    memcpy(&u, &x, 8);
    sign = (uint32_t)(u >> 63) << (M + E);
    a = u & UINT64_C(0x7fffffffffffffff);
    inf = ((1u << E) - 1u) << M;
    if (a > UINT64_C(0x7ff0000000000000))
        return sign | inf | (1u << (M - 1u)) | (uint32_t)((a >> (52u - M)) & ((1u << M) - 1u));
    if ((a >> 52) == 0u) /* zero or float64 subnormal (< 2^-1022): far below half of any
                            target's smallest subnormal (>= 2^-149) */
        return sign;
    man = a & ((UINT64_C(1) << 52) - 1u);
    /* target biased exponent if normal there; in [-1022 - 127 + 1, 2047] */
    e = (int)(a >> 52) - 1023 + (int)((1u << (E - 1u)) - 1u);
    if (e >= (int)(1u << E) - 1) /* 2^emax+1 or beyond (and inf): rounds to >= inf */
        return sign | inf;
    if (e >= 1) {
        /* the rounding carry runs into the exponent: RNE with an unbounded exponent; a
         * result at or beyond the all-ones exponent is inf.  e << 52 fits: e < 256. */
        uint64_t code = gk_rne_shift64(((uint64_t)e << 52) | man, 52u - M);
        return sign | (code >= inf ? inf : (uint32_t)code);
    }
    {
        /* subnormal result: the 53-bit significand over 2^(52 - M + 1 - e); from a shift of
         * 54 on the quotient is below 1/2 (zero), and beyond 63 the helper cannot shift. */
        unsigned shift = 52u - M + (unsigned)(1 - e);
        if (shift > 63u)
            return sign;
        return sign | (uint32_t)gk_rne_shift64(man | (UINT64_C(1) << 52), shift);
    }
}

uint32_t gk_f64_to_f32_bits(double x) { return gk_f64_narrow(x, 23, 8); }
uint16_t gk_f64_to_f16(double x) { return (uint16_t)gk_f64_narrow(x, 10, 5); }
uint16_t gk_f64_to_bf16(double x) { return (uint16_t)gk_f64_narrow(x, 7, 8); }

/* float32 -> float64, exact: NaN keeps sign and payload and is quieted (as cvtss2sd). */
static inline double gk_f32_to_f64_exact(float f)
{
    const uint32_t u = gk_f32_to_bits(f);
    const uint64_t sign = (uint64_t)(u >> 31) << 63;
    const uint32_t a = u & 0x7fffffffu;
    uint64_t bits;
    double d;
    if (a < 0x800000u) {
        /* zero or subnormal: a * 2^-149, both factors and the product normal or zero in
         * float64, so exact whatever DAZ/FTZ say */
        d = (double)a * 1.4012984643248171e-45; /* 2^-149, exact (no hex literal: MSVC) */
        return sign ? -d : d;
    }
    if (a >= 0x7f800000u)
        bits = sign | (UINT64_C(0x7ff) << 52) | ((uint64_t)(a & 0x7fffffu) << 29) |
               (a > 0x7f800000u ? UINT64_C(1) << 51 : 0u);
    else
        bits = sign | ((uint64_t)((a >> 23) + 896u) << 52) | ((uint64_t)(a & 0x7fffffu) << 29);
    memcpy(&d, &bits, 8);
    return d;
}

static void gk_cast_from_f32(const gk_codecs_kernel *k, int dt, int sat, const float *src,
                             void *dst, size_t n);

static void gk_cast_from_f64(const gk_codecs_kernel *k, int dt, int sat, const double *s,
                             void *dst, size_t n)
{
    size_t i;
    if (k->f64_to_f32_n != NULL) {
        if (dt == GK_CT_F32) {
            if (k->f64_to_f32_n(s, (float *)dst, n, 0))
                return;
        } else {
            /* round to odd into float32, then once to nearest even from there: 1024
             * elements a pass, 4 KB of stack */
            float tmp[GK_CAST_CHUNK];
            const size_t ds = gk_cast_size[dt];
            size_t off = 0;
            for (; off < n; off += GK_CAST_CHUNK) {
                const size_t m = n - off < GK_CAST_CHUNK ? n - off : GK_CAST_CHUNK;
                if (!k->f64_to_f32_n(s + off, tmp, m, 1))
                    break; /* MXCSR not the default: the integer routes below */
                gk_cast_from_f32(k, dt, sat, tmp, (char *)dst + off * ds, m);
            }
            if (off >= n)
                return;
            s += off;
            dst = (char *)dst + off * ds;
            n -= off;
        }
    }
    switch (dt) {
    case GK_CT_F32:
        for (i = 0; i < n; i++)
            ((uint32_t *)dst)[i] = gk_f64_to_f32_bits(s[i]);
        break;
    case GK_CT_F16:
        for (i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = gk_f64_to_f16(s[i]);
        break;
    case GK_CT_BF16:
        for (i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = gk_f64_to_bf16(s[i]);
        break;
    default: /* float8 */
        gk_fp8_encode_f64_n(s, (uint8_t *)dst, n, dt - GK_CT_F8, sat);
        break;
    }
}

/* st is not float64 or float32 */
static void gk_cast_to_f32(const gk_codecs_kernel *k, int st, const void *src, float *dst, size_t n)
{
    if (st == GK_CT_F16)
        k->f16_to_f32_n((const uint16_t *)src, dst, n);
    else if (st == GK_CT_BF16)
        k->bf16_to_f32_n((const uint16_t *)src, dst, n);
    else
        k->fp8_to_f32_n((const uint8_t *)src, dst, n, st - GK_CT_F8);
}

/* dt is not float32 */
static void gk_cast_from_f32(const gk_codecs_kernel *k, int dt, int sat, const float *src,
                             void *dst, size_t n)
{
    size_t i;
    if (dt == GK_CT_F64) {
        if (k->f32_to_f64_n != NULL && k->f32_to_f64_n(src, (double *)dst, n))
            return;
        for (i = 0; i < n; i++)
            ((double *)dst)[i] = gk_f32_to_f64_exact(src[i]);
    } else if (dt == GK_CT_F16) {
        k->f32_to_f16_n(src, (uint16_t *)dst, n);
    } else if (dt == GK_CT_BF16) {
        k->f32_to_bf16_n(src, (uint16_t *)dst, n);
    } else {
        k->f32_to_fp8_n(src, (uint8_t *)dst, n, dt - GK_CT_F8, sat);
    }
}

/* n contiguous elements, src and dst not overlapping (or identical when st == dt). */
static void gk_cast_contig(const gk_codecs_kernel *k, int st, int dt, int sat, const void *src,
                           void *dst, size_t n)
{
    float tmp[GK_CAST_CHUNK];
    const size_t ss = gk_cast_size[st], ds = gk_cast_size[dt];
    size_t off;
    if (st == dt) {
        if (src != dst)
            memcpy(dst, src, n * ss);
        return;
    }
    if (st == GK_CT_F64) {
        gk_cast_from_f64(k, dt, sat, (const double *)src, dst, n);
        return;
    }
    if (st == GK_CT_F32) {
        gk_cast_from_f32(k, dt, sat, (const float *)src, dst, n);
        return;
    }
    if (dt == GK_CT_F32) {
        gk_cast_to_f32(k, st, src, (float *)dst, n);
        return;
    }
    /* neither is float32: widen exactly into the buffer, then round once */
    for (off = 0; off < n; off += GK_CAST_CHUNK) {
        const size_t m = n - off < GK_CAST_CHUNK ? n - off : GK_CAST_CHUNK;
        gk_cast_to_f32(k, st, (const char *)src + off * ss, tmp, m);
        gk_cast_from_f32(k, dt, sat, tmp, (char *)dst + off * ds, m);
    }
}

static void gk_gather(char *buf, const char *p, ptrdiff_t stride, size_t n, size_t es)
{
    size_t i;
    switch (es) {
    case 1: for (i = 0; i < n; i++) buf[i] = p[(ptrdiff_t)i * stride]; break;
    case 2: for (i = 0; i < n; i++) memcpy(buf + 2 * i, p + (ptrdiff_t)i * stride, 2); break;
    case 4: for (i = 0; i < n; i++) memcpy(buf + 4 * i, p + (ptrdiff_t)i * stride, 4); break;
    default: for (i = 0; i < n; i++) memcpy(buf + 8 * i, p + (ptrdiff_t)i * stride, 8); break;
    }
}

static void gk_scatter(char *p, ptrdiff_t stride, const char *buf, size_t n, size_t es)
{
    size_t i;
    switch (es) {
    case 1: for (i = 0; i < n; i++) p[(ptrdiff_t)i * stride] = buf[i]; break;
    case 2: for (i = 0; i < n; i++) memcpy(p + (ptrdiff_t)i * stride, buf + 2 * i, 2); break;
    case 4: for (i = 0; i < n; i++) memcpy(p + (ptrdiff_t)i * stride, buf + 4 * i, 4); break;
    default: for (i = 0; i < n; i++) memcpy(p + (ptrdiff_t)i * stride, buf + 8 * i, 8); break;
    }
}

/* One row of n elements with byte strides sst / dst_s. */
static void gk_cast_row(const gk_codecs_kernel *k, const gk_cast_args *a, const char *s,
                        ptrdiff_t sst, char *d, ptrdiff_t dst_s, size_t n)
{
    /* 8-byte aligned buffers: the families load them with unaligned loads anyway */
    uint64_t sbuf[GK_CAST_CHUNK], dbuf[GK_CAST_CHUNK];
    const size_t ss = gk_cast_size[a->src_type], ds = gk_cast_size[a->dst_type];
    /* contiguous and aligned to the element: the kernels take typed pointers (their
     * scalar tails read s[i]); a misaligned array (a NumPy view at an odd byte offset) goes
     * through the aligned buffers, as a strided one does */
    const int s_contig = sst == (ptrdiff_t)ss && (uintptr_t)s % ss == 0,
              d_contig = dst_s == (ptrdiff_t)ds && (uintptr_t)d % ds == 0;
    size_t off;
    if (s_contig && d_contig) {
        gk_cast_contig(k, a->src_type, a->dst_type, a->saturate, s, d, n);
        return;
    }
    for (off = 0; off < n; off += GK_CAST_CHUNK) {
        const size_t m = n - off < GK_CAST_CHUNK ? n - off : GK_CAST_CHUNK;
        const char *sp = s + (ptrdiff_t)off * sst;
        char *dp = d + (ptrdiff_t)off * dst_s;
        if (!s_contig) {
            gk_gather((char *)sbuf, sp, sst, m, ss);
            sp = (const char *)sbuf;
        }
        gk_cast_contig(k, a->src_type, a->dst_type, a->saturate, sp, d_contig ? dp : (char *)dbuf, m);
        if (!d_contig)
            gk_scatter(dp, dst_s, (const char *)dbuf, m, ds);
    }
}

static ptrdiff_t gk_absd(ptrdiff_t v) { return v < 0 ? -v : v; }

/* Elements per thread below which a cast stays on fewer threads (a thread must pay for
 * its wake-up: these loops move a few GB/s). */
#define GK_CAST_PAR_MIN ((double)(1 << 17))

/* A cast of nd (normalized) axes split into `parts` runs of the flattened element order,
 * each a multiple of 64 elements long but the last (no two threads write one cache line
 * of a contiguous destination). */
typedef struct cast_job {
    const gk_codecs_kernel *k;
    const gk_cast_args *a;
    int nd, parts;
    ptrdiff_t total;
    ptrdiff_t shape[GK_CAST_MAXD], sst[GK_CAST_MAXD], dst[GK_CAST_MAXD];
} cast_job;

static void cast_task(void *ctx, ptrdiff_t t, int worker)
{
    const cast_job *j = (const cast_job *)ctx;
    const ptrdiff_t L = j->shape[j->nd - 1];
    ptrdiff_t e0 = (ptrdiff_t)((double)j->total * (double)t / j->parts) / 64 * 64;
    ptrdiff_t e1 = t + 1 == j->parts ? j->total
                                     : (ptrdiff_t)((double)j->total * (double)(t + 1) / j->parts) / 64 * 64;
    (void)worker;
    while (e0 < e1) {
        /* row e0 / L of the outer axes, from its index */
        ptrdiff_t r = e0 / L, c = e0 - e0 / L * L, n = L - c;
        const char *s = (const char *)j->a->src + c * j->sst[j->nd - 1];
        char *d = (char *)j->a->dst + c * j->dst[j->nd - 1];
        for (int i = j->nd - 2; i >= 0; i--) {
            const ptrdiff_t ix = r % j->shape[i];
            r /= j->shape[i];
            s += ix * j->sst[i];
            d += ix * j->dst[i];
        }
        if (n > e1 - e0)
            n = e1 - e0;
        gk_cast_row(j->k, j->a, s, j->sst[j->nd - 1], d, j->dst[j->nd - 1], (size_t)n);
        e0 += n;
    }
}

void gk_cast_run(const gk_codecs_kernel *k, const gk_cast_args *a)
{
    ptrdiff_t shape[GK_CAST_MAXD], sst[GK_CAST_MAXD], dst[GK_CAST_MAXD];
    int nd = 0, i, j;
    const char *s;
    char *d;

    /* drop length-1 dims (an empty array has nothing to do) */
    for (i = 0; i < a->ndim; i++) {
        if (a->shape[i] == 0)
            return;
        if (a->shape[i] == 1)
            continue;
        shape[nd] = a->shape[i];
        sst[nd] = a->src_stride[i];
        dst[nd] = a->dst_stride[i];
        nd++;
    }
    /* innermost = smallest destination stride (then source stride): a stable insertion sort
     * by decreasing |stride|, so C-ordered arrays keep their order and F-ordered ones get
     * their contiguous axis inside */
    for (i = 1; i < nd; i++) {
        for (j = i; j > 0; j--) {
            ptrdiff_t dj = gk_absd(dst[j]), dp = gk_absd(dst[j - 1]);
            ptrdiff_t sj = gk_absd(sst[j]), sp = gk_absd(sst[j - 1]);
            ptrdiff_t t;
            if (dj < dp || (dj == dp && sj <= sp))
                break;
            t = shape[j]; shape[j] = shape[j - 1]; shape[j - 1] = t;
            t = sst[j]; sst[j] = sst[j - 1]; sst[j - 1] = t;
            t = dst[j]; dst[j] = dst[j - 1]; dst[j - 1] = t;
        }
    }
    /* merge an axis into the next inner one when both arrays step over it as one run */
    for (i = nd - 2; i >= 0; i--) {
        if (sst[i] == sst[i + 1] * shape[i + 1] && dst[i] == dst[i + 1] * shape[i + 1]) {
            shape[i] *= shape[i + 1];
            sst[i] = sst[i + 1];
            dst[i] = dst[i + 1];
            for (j = i + 1; j < nd - 1; j++) {
                shape[j] = shape[j + 1];
                sst[j] = sst[j + 1];
                dst[j] = dst[j + 1];
            }
            nd--;
        }
    }
    s = (const char *)a->src;
    d = (char *)a->dst;
    if (nd == 0) {
        gk_cast_row(k, a, s, (ptrdiff_t)gk_cast_size[a->src_type], d,
                    (ptrdiff_t)gk_cast_size[a->dst_type], 1);
        return;
    }
    {
        cast_job job;
        ptrdiff_t total = 1;
        int threads;
        for (i = 0; i < nd; i++) {
            job.shape[i] = shape[i];
            job.sst[i] = sst[i];
            job.dst[i] = dst[i];
            total *= shape[i]; /* <= the array's element count */
        }
        job.nd = nd;
        job.k = k;
        job.a = a;
        job.total = total;
        threads = gk_parallel_threads();
        {
            const double least = GK_CAST_PAR_MIN * gk_parallel_work_scale();
            if ((double)total < least * (double)threads)
                threads = (int)((double)total / least);
            if (threads > total)
                threads = (int)total;
        }
        if (threads < 1)
            threads = 1;
        job.parts = threads;
        gk_parallel_run(threads, threads, cast_task, &job);
    }
}
