/* The bfloat16 Gemm family on BFMMLA (group neonbf16: ARMv8.2-A AdvSIMD + FEAT_BF16;
 * dispatch entry: level neon + GK_CPU_BF16).  Cores with FEAT_BF16: Neoverse V1/V2/N2,
 * Graviton 3/4, Apple M2 and later, Cortex-A510/A710 and later.
 *
 * What BFMMLA computes (Arm ARM, BFMMLA and BFDotAdd, FPCR.EBF == 0, the Linux default):
 * a 2 x 4 block of A rows times a 4 x 2 block of B columns added into a 2 x 2 float32
 * block; per output, the 4 depth steps go in two pairs,
 *     acc = R(acc + R(a[0]*b[0] + a[1]*b[1])),  then the same with a[2], a[3],
 * the products exact (8-bit significands), R rounding to odd, denormal inputs read as
 * zero and denormal results flushed, the FPCR neither read nor written.  Each R errs by
 * less than one float32 ulp (2u relative, u = 2**-24) against the one round-to-nearest of
 * the widening float32 path's fused adds (0.5 ulp), and there are K/2 pair sums and K/2
 * adds per output where that path has K adds: the bound stays (K + 2) u sum|a||b| to
 * first order, the float32 accumulation bound the C harness checks.  The output is
 * rounded once (RNE) to bfloat16 by gk_gemm_epilogue_bf16, shared with every family.
 *
 * The guard: a call whose A' or B' holds a denormal, an infinity or a NaN, or whose
 * exponents could make a product or partial sum denormal (flushed) or reach 2**128
 * (round to odd may saturate where IEEE gives infinity), gets the result of the widening
 * neon family (gk_gemm_f16_neon.c), bit for bit: gk_gemm_bf16dot_guard.h.  The scan is
 * folded into packing (span_fold below: the packers keep each operand's span, and a
 * pre-packing of B' keeps B's with it, so a call on it scans nothing) and judged after
 * the call (gk_gemm_kernel.check_packed): such a call runs again on that family, which
 * rewrites Y.  Typical data always passes.
 *
 * Speed: no ARM hardware was available to measure it (qemu only checks the arithmetic).
 * A BFMMLA is 16 multiply-adds where a float32 FMLA is 4, so the family is chosen
 * wherever the CPU has FEAT_BF16; GEMMKIT_ISA cannot pick between the two, the C harness
 * runs both.
 *
 * Blocking: tile 8 x 8 (16 accumulators of 2 x 2, 4 A and 4 B registers: 24 of 32, no
 * spill).  Cache blocks: the family's own (ARM reports no cache sizes to gemmkit);
 * K blocks are 512 deep, a multiple of 4, so only a product's last block pads depth.
 * Panels, in bfloat16 elements (the driver places them kc*mr / kc*nr floats apart: room
 * for the depth padded to 4, except kc == 1, below):
 *   A panel: depth group q (k = 4q .. 4q+3) of row i at [q*32 + i*4 + k%4];
 *   B panel: depth group q of column j at [q*32 + j*4 + k%4];
 *   so one 16-byte load holds the 2 x 4 block of rows (columns) 2r, 2r+1 that BFMMLA
 *   reads; depth beyond kc, rows and columns beyond the valid ones are +0 (a padded
 *   product adds +0: no effect, a running sum is never -0).
 *   kc == 1 (a last K block of one depth step) has no room for 4 steps: row i (column j)
 *   is element [i] ([j]) alone, and the kernel adds the exact products a*b (float32, one
 *   rounding each, as the widening path does). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/gk_gemm_bf16dot_guard.h"
#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_gemm.h"

#define MR 8
#define NR 8

/* ---- packers -------------------------------------------------------------------------- */

static inline uint16_t ld16(const char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* One panel of w (= MR or NR) lines: line l (< n valid) has depth element d at
 * p + l*ls + d*ds bytes; d[q*4w + l*4 + k%4] as laid out above (kc >= 2), or d[l]
 * (kc == 1). */
static void pack_panel(const char *p, ptrdiff_t ls, ptrdiff_t ds, int kc, int n, int w,
                       uint16_t *d)
{
    const int kq = (kc + 3) / 4, kfull = kc / 4;
    if (kc == 1) {
        for (int l = 0; l < w; l++)
            d[l] = l < n ? ld16(p + (ptrdiff_t)l * ls) : 0;
        return;
    }
    int q0 = 0; /* groups [0, q0) done by the vector code */
    if (ls == 2 && n == 8 && w == 8) {
        /* lines contiguous (row-major B, column-major A): 4 depth rows of 8 lines ->
         * 8 lines of 4 depth elements, two zip stages */
        for (; q0 < kfull; q0++) {
            const char *s = p + (ptrdiff_t)(4 * q0) * ds;
            const uint16x8_t r0 = vreinterpretq_u16_u8(vld1q_u8((const uint8_t *)s));
            const uint16x8_t r1 = vreinterpretq_u16_u8(vld1q_u8((const uint8_t *)(s + ds)));
            const uint16x8_t r2 = vreinterpretq_u16_u8(vld1q_u8((const uint8_t *)(s + 2 * ds)));
            const uint16x8_t r3 = vreinterpretq_u16_u8(vld1q_u8((const uint8_t *)(s + 3 * ds)));
            const uint32x4_t z01l = vreinterpretq_u32_u16(vzip1q_u16(r0, r1));
            const uint32x4_t z01h = vreinterpretq_u32_u16(vzip2q_u16(r0, r1));
            const uint32x4_t z23l = vreinterpretq_u32_u16(vzip1q_u16(r2, r3));
            const uint32x4_t z23h = vreinterpretq_u32_u16(vzip2q_u16(r2, r3));
            uint16_t *o = d + (ptrdiff_t)q0 * 32;
            vst1q_u16(o, vreinterpretq_u16_u32(vzip1q_u32(z01l, z23l)));      /* lines 0, 1 */
            vst1q_u16(o + 8, vreinterpretq_u16_u32(vzip2q_u32(z01l, z23l)));  /* lines 2, 3 */
            vst1q_u16(o + 16, vreinterpretq_u16_u32(vzip1q_u32(z01h, z23h))); /* lines 4, 5 */
            vst1q_u16(o + 24, vreinterpretq_u16_u32(vzip2q_u32(z01h, z23h))); /* lines 6, 7 */
        }
    } else if (ds == 2) {
        /* depth contiguous (row-major A, column-major B): a group is 8 bytes of a line */
        for (; q0 < kfull; q0++) {
            uint16_t *o = d + (ptrdiff_t)q0 * 4 * w;
            for (int l = 0; l < n; l++)
                memcpy(o + 4 * l, p + (ptrdiff_t)l * ls + (ptrdiff_t)(8 * q0), 8);
            for (int l = n; l < w; l++)
                memset(o + 4 * l, 0, 8);
        }
    }
    for (int q = q0; q < kq; q++) {
        uint16_t *o = d + (ptrdiff_t)q * 4 * w;
        for (int l = 0; l < w; l++)
            for (int t = 0; t < 4; t++) {
                const int k = 4 * q + t;
                o[4 * l + t] = l < n && k < kc ? ld16(p + (ptrdiff_t)l * ls + (ptrdiff_t)k * ds) : 0;
            }
    }
}

/* ---- the guard's scan, folded into packing ------------------------------------------- */

/* The span (gk_gemm_bf16dot_guard.h) of what the packers stored, per lane.  A panel holds
 * the block's elements and +0 pads, and +0 is neutral to both ends of a span (lo ignores
 * zeros, hi starts at 0), so the span of the stored panels is the block's.  The panels
 * are still in L1 when folded: one min and one max per 8 elements. */
typedef struct {
    uint16x8_t lo, hi;
} span_acc;

static inline span_acc span_acc_init(void)
{
    span_acc s;
    s.lo = vdupq_n_u16(0xffff);
    s.hi = vdupq_n_u16(0);
    return s;
}

/* n (a multiple of 8) stored elements at d */
static inline void span_fold(span_acc *s, const uint16_t *d, size_t n)
{
    const uint16x8_t mag = vdupq_n_u16(0x7fff), one = vdupq_n_u16(1);
    for (size_t i = 0; i < n; i += 8) {
        const uint16x8_t x = vandq_u16(vld1q_u16(d + i), mag);
        s->lo = vminq_u16(s->lo, vsubq_u16(x, one));
        s->hi = vmaxq_u16(s->hi, x);
    }
}

/* into the call's (or the whole-B' packing's) gk_gemm_seen at src->ctx, if any */
static void span_publish(const gk_gemm_src *src, int is_b, const span_acc *s)
{
    gk_gemm_seen *seen = (gk_gemm_seen *)(uintptr_t)src->ctx;
    gk_bf16_span sp;
    if (seen == NULL)
        return;
    sp.lo = vminvq_u16(s->lo);
    sp.hi = vmaxvq_u16(s->hi);
    if (is_b)
        gk_bf16_span_publish(&seen->b_min, &seen->b_max, sp);
    else
        gk_bf16_span_publish(&seen->a_min, &seen->a_max, sp);
}

/* The elements pack_panel stores for depth kc and width w: 4 per line per depth group, or
 * one per line (kc == 1). */
static inline size_t panel_elems(int kc, int w)
{
    return kc == 1 ? (size_t)w : (size_t)((kc + 3) / 4) * 4 * (size_t)w;
}

/* rows [i0, i0+mc) x depth [k0, k0+kc) of A' -> ceil(mc/8) panels, kc*8 floats apart */
static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc, int kc, int mr,
                   void *dst)
{
    span_acc s = span_acc_init();
    (void)mr; /* always MR: this family's own packer */
    for (int p0 = 0; p0 < mc; p0 += MR) {
        uint16_t *d = (uint16_t *)((float *)dst + (ptrdiff_t)(p0 / MR) * kc * MR);
        pack_panel(a->p + (i0 + p0) * a->rs + k0 * a->cs, a->rs, a->cs, kc,
                   mc - p0 < MR ? mc - p0 : MR, MR, d);
        span_fold(&s, d, panel_elems(kc, MR));
    }
    span_publish(a, 0, &s);
}

/* depth [k0, k0+kc) x columns [j0, j0+nc) of B' -> ceil(nc/8) panels, kc*8 floats apart */
static void pack_b(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc, int nc, int nr,
                   void *dst)
{
    span_acc s = span_acc_init();
    (void)nr; /* always NR */
    for (int q0 = 0; q0 < nc; q0 += NR) {
        uint16_t *d = (uint16_t *)((float *)dst + (ptrdiff_t)(q0 / NR) * kc * NR);
        pack_panel(b->p + k0 * b->rs + (j0 + q0) * b->cs, b->cs, b->rs, kc,
                   nc - q0 < NR ? nc - q0 : NR, NR, d);
        span_fold(&s, d, panel_elems(kc, NR));
    }
    span_publish(b, 1, &s);
}

/* ---- micro-kernel ------------------------------------------------------------------------ */

static inline bfloat16x8_t ldbf(const uint16_t *p) { return vreinterpretq_bf16_u16(vld1q_u16(p)); }

/* One full tile: c (row stride ldc floats) = (first ? +0 : c) + kq depth groups.
 * Accumulator acc[r][s] holds rows 2r, 2r+1 x columns 2s, 2s+1 as (r0c0, r0c1, r1c0,
 * r1c1): the 64-bit halves are row pieces of c. */
static void core(int kq, const uint16_t *pa, const uint16_t *pb, float *c, ptrdiff_t ldc,
                 int first)
{
    float32x4_t acc[4][4];
    GK_UNROLL(4)
    for (int r = 0; r < 4; r++)
        GK_UNROLL(4)
        for (int s = 0; s < 4; s++)
            acc[r][s] = first ? vdupq_n_f32(0.0f)
                              : vcombine_f32(vld1_f32(c + (2 * r) * ldc + 2 * s),
                                             vld1_f32(c + (2 * r + 1) * ldc + 2 * s));
    for (int q = 0; q < kq; q++, pa += 32, pb += 32) {
        const bfloat16x8_t b0 = ldbf(pb), b1 = ldbf(pb + 8), b2 = ldbf(pb + 16), b3 = ldbf(pb + 24);
        GK_UNROLL(4)
        for (int r = 0; r < 4; r++) {
            const bfloat16x8_t a = ldbf(pa + 8 * r);
            acc[r][0] = vbfmmlaq_f32(acc[r][0], a, b0);
            acc[r][1] = vbfmmlaq_f32(acc[r][1], a, b1);
            acc[r][2] = vbfmmlaq_f32(acc[r][2], a, b2);
            acc[r][3] = vbfmmlaq_f32(acc[r][3], a, b3);
        }
    }
    GK_UNROLL(4)
    for (int r = 0; r < 4; r++)
        GK_UNROLL(4)
        for (int s = 0; s < 4; s++) {
            vst1_f32(c + (2 * r) * ldc + 2 * s, vget_low_f32(acc[r][s]));
            vst1_f32(c + (2 * r + 1) * ldc + 2 * s, vget_high_f32(acc[r][s]));
        }
}

/* kc == 1: c (full tile) = (first ? +0 : c) + a_i * b_j, the products exact. */
static void core_one(const uint16_t *pa, const uint16_t *pb, float *c, ptrdiff_t ldc, int first)
{
    for (int i = 0; i < MR; i++) {
        const float x = gk_bf16_to_f32(pa[i]);
        for (int j = 0; j < NR; j++) {
            const float p = x * gk_bf16_to_f32(pb[j]);
            c[i * ldc + j] = first ? 0.0f + p : c[i * ldc + j] + p;
        }
    }
}

/* gk_gemm_ukernel_fn: full tiles run on c itself, edge tiles through a local full tile so
 * that only the valid part of c is read or written.  kc == 0 (K == 0, first) zeroes. */
static void ukernel(int kc, const void *a_panel, const void *b_panel, void *c, ptrdiff_t ldc,
                    int mr_valid, int nr_valid, int first)
{
    GK_ALIGNED(64) float t[MR * NR];
    const uint16_t *pa = (const uint16_t *)a_panel, *pb = (const uint16_t *)b_panel;
    const int full = mr_valid == MR && nr_valid == NR;
    float *y = (float *)c, *w = full ? y : t;
    const ptrdiff_t ldw = full ? ldc : NR;
    if (!full && !first)
        for (int i = 0; i < mr_valid; i++)
            memcpy(t + i * NR, y + i * ldc, (size_t)nr_valid * 4);
    if (kc == 1)
        core_one(pa, pb, w, ldw, first);
    else
        core((kc + 3) / 4, pa, pb, w, ldw, first);
    if (!full)
        for (int i = 0; i < mr_valid; i++)
            memcpy(y + i * ldc, t + i * NR, (size_t)nr_valid * 4);
}

/* ---- the guard ------------------------------------------------------------------------------ */

/* gk_gemm_kernel.check_packed: both rules of gk_gemm_bf16dot_guard.h on the spans the
 * packers saw (of B', for a call reading a pre-packing: what packing it saw, kept with
 * it). */
static int check_packed(const gk_gemm_seen *seen, const struct gk_gemm_args *g)
{
    return gk_bf16dot_no_flush(seen->a_min, seen->b_min) &&
           gk_bf16dot_no_overflow(seen->a_max, seen->b_max, g->k);
}

const gk_gemm_kernel gk_gemm_bf16_neonbf16 = {
    "neonbf16", GK_DT_BF16, GK_ACC_F32, MR, NR, 128, 512, 1536,
    pack_a, pack_b, ukernel, gk_gemm_epilogue_bf16,
    1,       /* cache_blocks: from the caches where reported, else the values above */
    NULL,    /* ukernel_rounded: not used (QLinearMatMul runs the float32 family) */
    NULL,    /* ukernel_ldb: bfloat16 output needs the float32 workspace anyway */
    2,       /* pack_esz: bfloat16 panels */
    .check_packed = check_packed,
};
