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
 * The guard (accepts): the family declines a call whose A' or B' holds a denormal, an
 * infinity or a NaN, or whose exponents could make a product or partial sum denormal
 * (flushed) or reach 2**128 (round to odd may saturate where IEEE gives infinity):
 * gk_gemm_bf16dot_guard.h.  The widening neon family (gk_gemm_f16_neon.c) then runs it,
 * bit for bit that family's result.  Typical data always passes.
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

/* rows [i0, i0+mc) x depth [k0, k0+kc) of A' -> ceil(mc/8) panels, kc*8 floats apart */
static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc, int kc, int mr,
                   void *dst)
{
    (void)mr; /* always MR: this family's own packer */
    for (int p0 = 0; p0 < mc; p0 += MR)
        pack_panel(a->p + (i0 + p0) * a->rs + k0 * a->cs, a->rs, a->cs, kc,
                   mc - p0 < MR ? mc - p0 : MR, MR,
                   (uint16_t *)((float *)dst + (ptrdiff_t)(p0 / MR) * kc * MR));
}

/* depth [k0, k0+kc) x columns [j0, j0+nc) of B' -> ceil(nc/8) panels, kc*8 floats apart */
static void pack_b(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc, int nc, int nr,
                   void *dst)
{
    (void)nr; /* always NR */
    for (int q0 = 0; q0 < nc; q0 += NR)
        pack_panel(b->p + k0 * b->rs + (j0 + q0) * b->cs, b->cs, b->rs, kc,
                   nc - q0 < NR ? nc - q0 : NR, NR,
                   (uint16_t *)((float *)dst + (ptrdiff_t)(q0 / NR) * kc * NR));
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

/* The span (gk_gemm_bf16dot_guard.h) of a rows x cols bfloat16 matrix, element (r, c) at
 * p + r*rs + c*cs bytes; 8 elements per vector along contiguous rows or columns. */
static gk_bf16_span scan(const char *p, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t rows,
                         ptrdiff_t cols)
{
    gk_bf16_span s = GK_BF16_SPAN_EMPTY;
    if (!gk_bf16_rows_contiguous(&rs, &cs, &rows, &cols)) {
        gk_bf16_span_scan(&s, p, rs, cs, rows, cols);
        return s;
    }
    const uint16x8_t mag = vdupq_n_u16(0x7fff), one = vdupq_n_u16(1);
    uint16x8_t lo = vdupq_n_u16(0xffff), hi = vdupq_n_u16(0);
    for (ptrdiff_t r = 0; r < rows; r++) {
        const char *row = p + r * rs;
        ptrdiff_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            const uint16x8_t x =
                vandq_u16(vreinterpretq_u16_u8(vld1q_u8((const uint8_t *)(row + 2 * c))), mag);
            lo = vminq_u16(lo, vsubq_u16(x, one));
            hi = vmaxq_u16(hi, x);
        }
        gk_bf16_span_scan(&s, row + 2 * c, 0, 2, 1, cols - c);
    }
    if (vminvq_u16(lo) < s.lo)
        s.lo = vminvq_u16(lo);
    if (vmaxvq_u16(hi) > s.hi)
        s.hi = vmaxvq_u16(hi);
    return s;
}

static int accepts(const struct gk_gemm_args *g)
{
    gk_bf16_span sa, sb;
    if (g->m == 0 || g->n == 0 || g->k == 0)
        return 1; /* no product at all */
    sa = scan((const char *)g->a, g->a_rs, g->a_cs, g->m, g->k);
    sb = scan((const char *)g->b, g->b_rs, g->b_cs, g->k, g->n);
    return gk_bf16dot_no_flush(sa.lo, sb.lo) && gk_bf16dot_no_overflow(sa.hi, sb.hi, g->k);
}

const gk_gemm_kernel gk_gemm_bf16_neonbf16 = {
    "neonbf16", GK_DT_BF16, GK_ACC_F32, MR, NR, 128, 512, 1536,
    pack_a, pack_b, ukernel, gk_gemm_epilogue_bf16,
    1,       /* cache_blocks: from the caches where reported, else the values above */
    NULL,    /* ukernel_rounded: not used (QLinearMatMul runs the float32 family) */
    NULL,    /* ukernel_ldb: bfloat16 output needs the float32 workspace anyway */
    2,       /* pack_esz: bfloat16 panels */
    accepts, /* the guard above */
};
