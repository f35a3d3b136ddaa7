/* QLinearMatMul with a float8 a or b (opset 21), through the Gemm engine (DESIGN.md §2):
 *
 *     real = (float(q) - float(zp)) * scale      per element of a and b, float32, each step
 *                                                rounded (per-row a, per-column b params)
 *     acc  = sum_k real_a(i, k) * real_b(k, j)   float32, k ascending (the f32 Gemm family)
 *     x    = acc / y_scale (+ y_zp), then the output cast: saturating float8 encode, or
 *            round half to even and saturate to uint8/int8
 *
 * The packers below decode uint8/int8/float8 and dequantize straight into the f32 Gemm
 * family's panels (the standard layout of gk_gemm.h); the epilogue below requantizes.
 * Everything between -- blocking, the micro-kernel, K blocks accumulating in a float32
 * workspace in increasing k -- is the Gemm engine's, so this path gets every f32 SIMD
 * kernel (and thread split) the engine gets.  Results do not depend on the block sizes:
 * every output's sum runs k = 0, 1, ..., K-1 from +0, one product at a time. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_gemm.h"
#include "gemmkit/gk_qgemm_driver.h"

static int is_f8(int t) { return t >= GK_QT_F8; }

/* Real value of one stored element (before zero point and scale). */
static float qvalue(const uint8_t *p, int type)
{
    if (type == GK_QT_U8)
        return (float)*p;
    if (type == GK_QT_S8)
        return (float)(int8_t)*p;
    return gk_fp8_decode(*p, type - GK_QT_F8);
}

/* Dequantization parameters of one operand: a (per row) or b (per column). */
typedef struct qside {
    const float *value;      /* float(q) for each stored code: the float8 decode table, or
                              * int_value */
    float int_value[256];    /* uint8/int8 operands */
    const uint8_t *zp;       /* NULL: zero point 0 */
    ptrdiff_t zp_stride;     /* per row (a) / per column (b); 0: per tensor */
    const float *scale;
    ptrdiff_t scale_stride;
    int per_tensor;          /* zero point and scale the same everywhere: deq is used */
    int f8_fmt;              /* float8 operand: its enum gk_fp8_format, else -1 */
    float deq[256];          /* per_tensor: (float(q) - float(zp)) * scale for each code */
    /* per_tensor: over the finite non-zero deq[] values, the most significant bits any
     * has (25: one is subnormal) and the least and greatest magnitude (no such value:
     * bits 0, lo = hi = 0) -- what exact_products() needs */
    int bits;
    float lo, hi;
} qside;

/* Significant bits of a finite non-zero float: 24 less the trailing zeros of its 24-bit
 * significand; 25 for a subnormal (no exactness argument is made for those). */
static int sig_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0)
        return 25;
    uint32_t m = (u & 0x7fffffu) | 0x800000u;
    int tz = 0;
    while (!(m & 1u)) {
        m >>= 1;
        tz++;
    }
    return 24 - tz;
}

static void qside_init(qside *s, int type, const uint8_t *zp, ptrdiff_t zp_stride,
                       const float *scale, ptrdiff_t scale_stride)
{
    if (is_f8(type)) {
        s->value = gk_fp8_decode_table[type - GK_QT_F8];
    } else {
        for (int v = 0; v < 256; v++)
            s->int_value[v] = type == GK_QT_U8 ? (float)v : (float)(int8_t)(uint8_t)v;
        s->value = s->int_value;
    }
    s->f8_fmt = is_f8(type) ? type - GK_QT_F8 : -1;
    s->zp = zp;
    s->zp_stride = zp_stride;
    s->scale = scale;
    s->scale_stride = scale_stride;
    s->per_tensor = (zp == NULL || zp_stride == 0) && scale_stride == 0;
    if (s->per_tensor) {
        const float z = zp ? s->value[*zp] : 0.0f, sc = scale[0];
        /* the same two float32 operations as the per-element form: identical bits */
        s->bits = 0;
        s->lo = s->hi = 0.0f;
        for (int v = 0; v < 256; v++) {
            const float d = (s->value[v] - z) * sc, m = fabsf(d);
            s->deq[v] = d;
            if (m == 0.0f || !(m <= FLT_MAX)) /* zero, inf, NaN */
                continue;
            const int b = sig_bits(d);
            s->bits = b > s->bits ? b : s->bits;
            s->lo = s->lo == 0.0f || m < s->lo ? m : s->lo;
            s->hi = m > s->hi ? m : s->hi;
        }
    }
}

/* Whether every product real_a * real_b of these operands is exact in float32, so that
 * a fused multiply-add rounds each step exactly as the definition's product-then-add
 * does (fl(p + c) with p exact) and the family's FMA micro-kernel gives the same bits as
 * its rounded one at twice its rate.  Per-tensor parameters only (the codes' values are
 * all in deq[]): the significands of two finite non-zero values of at most p and q
 * bits multiply to at most p + q <= 24 bits, and the magnitudes keep every such product
 * normal (>= FLT_MIN) and finite (<= FLT_MAX).  Zero, infinite and NaN values give the
 * same product either way (+-0, +-inf, NaN are exact), and their sums follow the same
 * IEEE rules in both forms.  Typical for float8 with power-of-two scales and zero points
 * 0 (4 + 4 bits for e4m3, 8 + 4 for uint8 x e4m3); a scale such as 0.0123 gives 24-bit
 * values and keeps the rounded kernel. */
static int exact_products(const qside *a, const qside *b)
{
    if (!a->per_tensor || !b->per_tensor)
        return 0;
    if (a->hi == 0.0f || b->hi == 0.0f) /* every product is a zero, inf or NaN one */
        return 1;
    return a->bits + b->bits <= 24 && (double)a->lo * (double)b->lo >= (double)FLT_MIN &&
           (double)a->hi * (double)b->hi <= (double)FLT_MAX;
}

/* zero point (as a float) and scale of row / column r */
static float qside_zp(const qside *s, ptrdiff_t r)
{
    return s->zp ? s->value[s->zp[r * s->zp_stride]] : 0.0f;
}

#define GK_F8_CHUNK 256 /* float8 values decoded per codecs call */

/* A' rows [i0, i0 + mc) x depth [k0, k0 + kc) -> mr-row float panels (gk_gemm.h layout). */
static void pack_a_q(const gk_gemm_src *src, ptrdiff_t i0, ptrdiff_t k0, int mc, int kc,
                     int mr, void *dst)
{
    const qside *q = (const qside *)src->ctx;
    const gk_codecs_kernel *codec = gk_codecs_active();
    const ptrdiff_t rs = src->rs, cs = src->cs;
    const uint8_t *base = (const uint8_t *)src->p + i0 * rs + k0 * cs;
    float *d = (float *)dst;
    for (int p0 = 0; p0 < mc; p0 += mr) {
        const int rows = mc - p0 < mr ? mc - p0 : mr;
        for (int i = 0; i < rows; i++) {
            const uint8_t *row = base + (ptrdiff_t)(p0 + i) * rs;
            if (q->f8_fmt >= 0 && cs == 1) {
                /* a contiguous float8 row: decoded in bulk (SIMD), then the definition's
                 * two float32 operations, the same ones deq[] holds */
                const float z = qside_zp(q, i0 + p0 + i);
                const float sc = q->scale[(i0 + p0 + i) * q->scale_stride];
                float x[GK_F8_CHUNK];
                for (int k1 = 0; k1 < kc; k1 += GK_F8_CHUNK) {
                    const int w = kc - k1 < GK_F8_CHUNK ? kc - k1 : GK_F8_CHUNK;
                    codec->fp8_to_f32_n(row + k1, x, (size_t)w, q->f8_fmt);
                    for (int k = 0; k < w; k++)
                        d[(ptrdiff_t)(k1 + k) * mr + i] = (x[k] - z) * sc;
                }
            } else if (q->per_tensor) {
                for (int k = 0; k < kc; k++)
                    d[(ptrdiff_t)k * mr + i] = q->deq[row[(ptrdiff_t)k * cs]];
            } else {
                const float z = qside_zp(q, i0 + p0 + i);
                const float sc = q->scale[(i0 + p0 + i) * q->scale_stride];
                for (int k = 0; k < kc; k++)
                    d[(ptrdiff_t)k * mr + i] = (q->value[row[(ptrdiff_t)k * cs]] - z) * sc;
            }
        }
        for (int i = rows; i < mr; i++)
            for (int k = 0; k < kc; k++)
                d[(ptrdiff_t)k * mr + i] = 0.0f;
        d += (ptrdiff_t)kc * mr;
    }
}

/* B' depth [k0, k0 + kc) x columns [j0, j0 + nc) -> nr-column float panels. */
#define GK_F8_PACK_NR 64 /* per-column parameters of a panel held in registers/stack */
static void pack_b_q(const gk_gemm_src *src, ptrdiff_t k0, ptrdiff_t j0, int kc, int nc,
                     int nr, void *dst)
{
    const qside *q = (const qside *)src->ctx;
    const gk_codecs_kernel *codec = gk_codecs_active();
    const ptrdiff_t rs = src->rs, cs = src->cs;
    const uint8_t *base = (const uint8_t *)src->p + k0 * rs + j0 * cs;
    float *d = (float *)dst;
    for (int q0 = 0; q0 < nc; q0 += nr) {
        const int cols = nc - q0 < nr ? nc - q0 : nr;
        float z[GK_F8_PACK_NR], sc[GK_F8_PACK_NR];
        const float zt = q->zp ? q->value[q->zp[0]] : 0.0f, st = q->scale[0];
        if (!q->per_tensor && cols <= GK_F8_PACK_NR)
            for (int j = 0; j < cols; j++) {
                z[j] = qside_zp(q, j0 + q0 + j);
                sc[j] = q->scale[(j0 + q0 + j) * q->scale_stride];
            }
        /* k outer: B' rows are read along j (contiguous in the usual layout) and each
         * panel row written in order */
        for (int k = 0; k < kc; k++) {
            const uint8_t *row = base + (ptrdiff_t)k * rs + (ptrdiff_t)q0 * cs;
            float *o = d + (ptrdiff_t)k * nr;
            if (q->f8_fmt >= 0 && cs == 1 && cols <= GK_F8_PACK_NR) {
                /* a contiguous float8 row piece: decoded in bulk (SIMD), then the
                 * definition's two float32 operations (deq[]'s, per column) */
                float x[GK_F8_PACK_NR];
                codec->fp8_to_f32_n(row, x, (size_t)cols, q->f8_fmt);
                if (q->per_tensor)
                    for (int j = 0; j < cols; j++)
                        o[j] = (x[j] - zt) * st;
                else
                    for (int j = 0; j < cols; j++)
                        o[j] = (x[j] - z[j]) * sc[j];
            } else if (q->per_tensor) {
                for (int j = 0; j < cols; j++)
                    o[j] = q->deq[row[(ptrdiff_t)j * cs]];
            } else if (cols <= GK_F8_PACK_NR) {
                for (int j = 0; j < cols; j++)
                    o[j] = (q->value[row[(ptrdiff_t)j * cs]] - z[j]) * sc[j];
            } else {
                for (int j = 0; j < cols; j++)
                    o[j] = (q->value[row[(ptrdiff_t)j * cs]] - qside_zp(q, j0 + q0 + j)) *
                           q->scale[(j0 + q0 + j) * q->scale_stride];
            }
            for (int j = cols; j < nr; j++)
                o[j] = 0.0f;
        }
        d += (ptrdiff_t)kc * nr;
    }
}

static void store_int(void *y, ptrdiff_t idx, int type, double x, double zp)
{
    /* x is +-inf on overflow (saturates); NaN (only from NaN float8 inputs) has no
     * integer value: it is treated as 0, giving the zero point. */
    double r = (x != x) ? zp : nearbyint(x) + zp;
    if (type == GK_QT_U8) {
        r = r < 0.0 ? 0.0 : (r > 255.0 ? 255.0 : r);
        ((uint8_t *)y)[idx] = (uint8_t)(int)r;
    } else {
        r = r < -128.0 ? -128.0 : (r > 127.0 ? 127.0 : r);
        ((int8_t *)y)[idx] = (int8_t)(int)r;
    }
}

/* x = acc / y_scale, then the output cast (float32 division, as the definition says).
 * float8 outputs: each row of the tile is divided and offset in float32 (the same two
 * operations as the definition, vectorisable), then encoded by the codecs engine's bulk
 * saturating encoder (SIMD where the CPU has it, bit-identical to gk_fp8_encode_f32). */
#define GK_F8_EPI_CHUNK 256
static void epilogue_q(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols,
                       void *accv, ptrdiff_t ldacc)
{
    const gk_qgemm_problem *p = (const gk_qgemm_problem *)ctx;
    const float *acc = (const float *)accv;
    if (is_f8(p->y_type)) {
        const int fmt = p->y_type - GK_QT_F8;
        const gk_codecs_kernel *codec = gk_codecs_active();
        float x[GK_F8_EPI_CHUNK];
        for (int i = 0; i < rows; i++) {
            const ptrdiff_t m = m0 + i;
            const float *ys = p->y_scale + m * p->ys_rs;
            const uint8_t *yz = p->y_zp + m * p->yzp_rs;
            for (int j0 = 0; j0 < cols; j0 += GK_F8_EPI_CHUNK) {
                const int w = cols - j0 < GK_F8_EPI_CHUNK ? cols - j0 : GK_F8_EPI_CHUNK;
                const float *a = acc + i * ldacc + j0;
                const ptrdiff_t n = n0 + j0;
                if (p->ys_cs == 0 && p->yzp_cs == 0) {
                    const float sc = ys[0], zp = gk_fp8_decode(yz[0], fmt);
                    for (int j = 0; j < w; j++)
                        x[j] = a[j] / sc + zp;
                } else {
                    for (int j = 0; j < w; j++)
                        x[j] = a[j] / ys[(n + j) * p->ys_cs] +
                               gk_fp8_decode(yz[(n + j) * p->yzp_cs], fmt);
                }
                codec->f32_to_fp8_n(x, (uint8_t *)p->y + m * p->ldy + n, (size_t)w, fmt, 1);
            }
        }
    } else {
        for (int i = 0; i < rows; i++) {
            const ptrdiff_t m = m0 + i;
            for (int j = 0; j < cols; j++) {
                const ptrdiff_t n = n0 + j;
                const float x = acc[i * ldacc + j] / p->y_scale[m * p->ys_rs + n * p->ys_cs];
                const uint8_t *zp = p->y_zp + m * p->yzp_rs + n * p->yzp_cs;
                store_int(p->y, m * p->ldy + n, p->y_type, (double)x,
                          (double)qvalue(zp, p->y_type));
            }
        }
    }
}

static int gk_qlinear_f8_fma_mode = 1; /* gk_qlinear_f8_set_fma_mode */
int gk_qlinear_f8_set_fma_mode(int mode)
{
    const int old = gk_qlinear_f8_fma_mode;
    gk_qlinear_f8_fma_mode = mode;
    return old;
}

int gk_qlinear_float_inputs(const gk_qgemm_problem *p)
{
    const gk_gemm_kernel *fam = gk_gemm_kernel_for(GK_DT_F32);
    gk_gemm_kernel kbuf;
    const gk_gemm_kernel *kern = &kbuf;
    qside qa, qb;
    gk_gemm_plan plan;

    if (fam == NULL || fam->acc != GK_ACC_F32)
        return -1;
    /* the definition rounds every product: a family whose ukernel fuses multiply and add
     * (FMA) brings a separately rounded variant, run here (same panels, same blocking),
     * unless every product is exact (exact_products) */
    qside_init(&qa, p->a_type, p->a_zp, p->a_zp_rs, p->a_scale, p->as_rs);
    qside_init(&qb, p->b_type, p->b_zp, p->b_zp_cs, p->b_scale, p->bs_cs);
    kbuf = *fam;
    const int fma = gk_qlinear_f8_fma_mode == 2 ||
                    (gk_qlinear_f8_fma_mode == 1 && exact_products(&qa, &qb));
    if (fam->ukernel_rounded != NULL && !fma) { /* and no kernel that fuses */
        kbuf.ukernel = fam->ukernel_rounded;
        kbuf.ukernel_ldb = NULL;
        kbuf.ukernel_strip = NULL;
        kbuf.ukernel_strip_h = NULL;
    }
    plan.m = p->m;
    plan.n = p->n;
    plan.k = p->k;
    plan.a.p = (const char *)p->a;
    plan.a.rs = p->a_rs;
    plan.a.cs = p->a_cs;
    plan.a.ctx = &qa;
    plan.b.p = (const char *)p->b;
    plan.b.rs = p->b_rs;
    plan.b.cs = p->b_cs;
    plan.b.ctx = &qb;
    plan.pack_a = pack_a_q;
    plan.pack_b = pack_b_q;
    plan.epilogue = epilogue_q;
    plan.epi_ctx = p;
    plan.acc_y = NULL; /* 8-bit outputs: float32 sums in the engine's workspace */
    plan.ld_acc_y = 0;
    plan.b_packed = NULL;
    plan.kc_thin = 0;
    return gk_gemm_drive(kern, &plan) == GK_GEMM_OK ? 0 : -1;
}
