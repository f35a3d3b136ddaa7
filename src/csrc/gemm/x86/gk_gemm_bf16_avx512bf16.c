/* The bfloat16 Gemm family on vdpbf16ps (group avx512bf16: the avx512 group's flags +
 * AVX512_BF16; dispatch entry: level avx512 + GK_CPU_AVX512BF16).
 *
 * What vdpbf16ps computes, per float32 lane j (Intel SDM, VDPBF16PS):
 *     acc[j] = RNE(RNE(acc[j] + a[2j+1]*b[2j+1]) + a[2j]*b[2j])
 * with the products exact (8-bit significands: 16 bits fit float32's 24) and each add
 * rounded once (an FMA each), input denormals read as zero (DAZ), denormal results
 * flushed to zero (FTZ), MXCSR neither read nor written.  So where no denormal appears,
 * it is the widening float32 path's arithmetic exactly, with the two k of a pair added
 * odd first: the same float32 accumulation bound (gamma_K * sum |a||b|), one RNE rounding
 * to bfloat16 at the end (the avx512 group's fused epilogue, bit for bit
 * gk_gemm_epilogue_bf16).
 *
 * The guard: DAZ/FTZ could break that bound on hostile inputs, so a call where A' or B'
 * holds a bfloat16 denormal, or whose smallest exponents could make a product or partial
 * sum denormal (gk_bf16dot_no_flush, gk_gemm_bf16dot_guard.h; the rounding is to nearest,
 * so an overflow gives infinity as in the float32 path: no bound on the largest
 * exponents), gets the result of the next family of the bfloat16 row (the widening
 * float32 one), bit for bit.  The scan is folded into packing (gk_bf16_seen,
 * gk_gemm_bf16_pairs_x86.h) and judged after the call (gk_gemm_kernel.check_packed): such
 * a call runs again on that family, which rewrites Y.  Typical data always passes.  Small
 * calls are not declined: scan and packing included, this family took at most the
 * float32 avx512 family's time on float32 copies of the same data from 8^3 up (Zen 4,
 * measured with the scan before the call: 8^3 0.50 vs 0.47 us, 16^3 0.78 vs 0.84, 64^3
 * 5.9 vs 6.9), a lower bound for any widening bfloat16 family.  Products of at most
 * GK_GEMM_STRIP_ROWS rows with B' rows contiguous go to the widening family, which reads
 * B' in place (gk_gemm_driver.c, hands_thin_16bit_on).
 *
 * Blocking: tile 14 x 32 (28 zmm accumulators).  KC = 1024 (even, so only a product's
 * last K block can be odd), not the L1 formula's 512: the k-loop needs 184 bytes of
 * panels per 28 vdpbf16ps, which L2 streams with room to spare, while every K block
 * costs a pass over the M x NC float32 workspace where the sums of bfloat16 outputs wait
 * (Zen 4, one core: 1024^3 at 201 GFLOP/s with KC 1024, 183 with 512, 168 with 256).
 * MC and NC from the CPU's caches with 2-byte packed elements (pack_esz): the A block in
 * half of L2, the B block in a quarter of the LLC.
 * Panels (the driver places them kc*mr / kc*nr floats apart; these use half of that):
 *   A panel: pair p (k = 2p, 2p+1) of row i is the 32-bit word [p*14 + i]:
 *            low half a(i, 2p), high half a(i, 2p+1);
 *   B panel: pair p of column j is the word [p*32 + j]: low b(2p, j), high b(2p+1, j);
 *   an odd kc pads its last pair's high half with +0 (adds +0: no effect, the running sum
 *   is never -0), rows / columns beyond the valid ones are +0.
 * The micro-kernel follows gk_gemm_ukernel_fn: float32 running sums in c, overwritten on
 * the first K block, continued on the next ones.  gcc 12 spills intrinsic accumulators of
 * a tile this size, so under GNU asm the k-loop is one asm block with the accumulators
 * pinned (row i in zmm 4+2i, 5+2i), as in gk_gemm_fma_ukernel.inc. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/gk_gemm_bf16dot_guard.h"
#include "gemm/x86/gk_gemm_bf16_pairs_x86.h"
#include "gemmkit/gk_gemm.h"
#include "gk_gemm_f32_x86.h"

#define MR 14
#define NR 32

/* ---- packers -------------------------------------------------------------------------- */

/* rows [i0, i0+mc) x depth [k0, k0+kc) of A' -> ceil(mc/14) panels, kc*14 floats apart */
static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc, int kc, int mr,
                   void *dst)
{
    const ptrdiff_t rs = a->rs, cs = a->cs;
    const char *base = a->p + i0 * rs + k0 * cs;
    const int kp = (kc + 1) / 2, odd = kc & 1;
    gk_bf16_seen seen = gk_bf16_seen_init();
    (void)mr; /* always MR: this family's own packer */
    for (int p0 = 0; p0 < mc; p0 += MR) {
        uint32_t *d = (uint32_t *)dst + (ptrdiff_t)(p0 / MR) * kc * MR;
        const int rows = mc - p0 < MR ? mc - p0 : MR;
        const char *src = base + (ptrdiff_t)p0 * rs;
        if (rs == 2) {
            /* columns of A' contiguous (transA): interleave columns 2p and 2p+1 */
            const __m512i ix = gk_bf16_pair_index(0);
            const __mmask32 m = gk_bf16_lanes(rows);
            for (int p = 0; p < kp; p++) {
                const char *c0 = src + (ptrdiff_t)(2 * p) * cs;
                const __m512i lo = _mm512_maskz_loadu_epi16(m, c0);
                const __m512i hi = (odd && p == kp - 1) ? _mm512_setzero_si512()
                                                        : _mm512_maskz_loadu_epi16(m, c0 + cs);
                gk_bf16_seen_vec(&seen, lo);
                gk_bf16_seen_vec(&seen, hi);
                _mm512_mask_storeu_epi32(d + (ptrdiff_t)p * MR, (__mmask16)0x3fff,
                                         _mm512_permutex2var_epi16(lo, ix, hi));
            }
            continue;
        }
        int pv = 0; /* pairs [0, pv) already packed */
        if (cs == 2 && rows == MR) {
            /* rows contiguous, full panel: 16 pairs of the 14 rows at a time, transposed
             * in registers (rows 14, 15 zero, not stored) */
            __m512i r[16], o[16];
            r[14] = r[15] = _mm512_setzero_si512();
            for (; pv + 16 <= kc / 2; pv += 16) {
                for (int i = 0; i < MR; i++) {
                    r[i] = _mm512_loadu_si512(
                        (const void *)(src + (ptrdiff_t)i * rs + 4 * (ptrdiff_t)pv));
                    gk_bf16_seen_vec(&seen, r[i]);
                }
                gk_bf16_transpose16(r, o);
                for (int p = 0; p < 16; p++)
                    _mm512_mask_storeu_epi32(d + (ptrdiff_t)(pv + p) * MR, (__mmask16)0x3fff,
                                             o[p]);
            }
        }
        for (int i = 0; i < rows; i++) {
            const char *r = src + (ptrdiff_t)i * rs;
            uint32_t *o = d + i;
            for (int p = cs == 2 ? pv : 0; p < kc / 2; p++) {
                /* rows contiguous (cs == 2): a pair is one 32-bit word */
                const uint32_t w = cs == 2 ? gk_bf16_ld32(r + 4 * (ptrdiff_t)p)
                                           : gk_bf16_pair_word(r, cs, p, kc);
                gk_bf16_seen_word(&seen, w);
                o[(ptrdiff_t)p * MR] = w;
            }
            if (odd) {
                const uint32_t w = gk_bf16_pair_word(r, cs, kp - 1, kc);
                gk_bf16_seen_word(&seen, w);
                o[(ptrdiff_t)(kp - 1) * MR] = w;
            }
        }
        for (int i = rows; i < MR; i++)
            for (int p = 0; p < kp; p++)
                d[(ptrdiff_t)p * MR + i] = 0;
    }
    gk_bf16_seen_publish(a, 0, &seen);
}

/* depth [k0, k0+kc) x columns [j0, j0+nc) of B' -> ceil(nc/32) panels, kc*32 floats apart */
static void pack_b(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc, int nc, int nr,
                   void *dst)
{
    const ptrdiff_t rs = b->rs, cs = b->cs;
    const char *base = b->p + k0 * rs + j0 * cs;
    const int kp = (kc + 1) / 2, odd = kc & 1;
    gk_bf16_seen seen = gk_bf16_seen_init();
    (void)nr; /* always NR */
    for (int q0 = 0; q0 < nc; q0 += NR) {
        uint32_t *d = (uint32_t *)dst + (ptrdiff_t)(q0 / NR) * kc * NR;
        const int cols = nc - q0 < NR ? nc - q0 : NR;
        const char *src = base + (ptrdiff_t)q0 * cs;
        if (cs == 2) {
            /* rows of B' contiguous (the usual B): interleave rows 2p and 2p+1; masked
             * lanes are neither read nor faulted on */
            const __m512i ix0 = gk_bf16_pair_index(0), ix1 = gk_bf16_pair_index(1);
            const __mmask32 m = gk_bf16_lanes(cols);
            for (int p = 0; p < kp; p++) {
                const char *r0 = src + (ptrdiff_t)(2 * p) * rs;
                const __m512i lo = _mm512_maskz_loadu_epi16(m, r0);
                const __m512i hi = (odd && p == kp - 1) ? _mm512_setzero_si512()
                                                        : _mm512_maskz_loadu_epi16(m, r0 + rs);
                gk_bf16_seen_vec(&seen, lo);
                gk_bf16_seen_vec(&seen, hi);
                _mm512_storeu_si512((void *)(d + (ptrdiff_t)p * NR),
                                    _mm512_permutex2var_epi16(lo, ix0, hi));
                _mm512_storeu_si512((void *)(d + (ptrdiff_t)p * NR + 16),
                                    _mm512_permutex2var_epi16(lo, ix1, hi));
            }
            continue;
        }
        if (rs == 2) { /* columns of B' contiguous (transB) */
            gk_bf16_pack_cols32(src, cs, kc, cols, kp, d, &seen);
            continue;
        }
        for (int j = 0; j < cols; j++) {
            const char *c = src + (ptrdiff_t)j * cs;
            uint32_t *o = d + j;
            for (int p = 0; p < kc / 2; p++) {
                const uint32_t w = gk_bf16_pair_word(c, rs, p, kc);
                gk_bf16_seen_word(&seen, w);
                o[(ptrdiff_t)p * NR] = w;
            }
            if (odd) {
                const uint32_t w = gk_bf16_pair_word(c, rs, kp - 1, kc);
                gk_bf16_seen_word(&seen, w);
                o[(ptrdiff_t)(kp - 1) * NR] = w;
            }
        }
        for (int j = cols; j < NR; j++)
            for (int p = 0; p < kp; p++)
                d[(ptrdiff_t)p * NR + j] = 0;
    }
    gk_bf16_seen_publish(b, 1, &seen);
}

/* ---- micro-kernel ------------------------------------------------------------------------ */

#if GK_GNU_ASM

#define BF_ROWS(X)                                                                          \
    X(0, 2, 4, 5) X(1, 3, 6, 7) X(2, 2, 8, 9) X(3, 3, 10, 11) X(4, 2, 12, 13)                \
    X(5, 3, 14, 15) X(6, 2, 16, 17) X(7, 3, 18, 19) X(8, 2, 20, 21) X(9, 3, 22, 23)          \
    X(10, 2, 24, 25) X(11, 3, 26, 27) X(12, 2, 28, 29) X(13, 3, 30, 31)
#define BF_R(n) "%%zmm" #n
/* row i: broadcast its pair of pair p into register r, one vdpbf16ps per B vector */
#define BF_ROW_DP(i, r, c0, c1)                                                             \
    "vpbroadcastd " #i "*4(%[pa]), " BF_R(r) "\n\t"                                         \
    "vdpbf16ps " BF_R(0) ", " BF_R(r) ", " BF_R(c0) "\n\t"                                  \
    "vdpbf16ps " BF_R(1) ", " BF_R(r) ", " BF_R(c1) "\n\t"
#define BF_ROW_LD(i, r, c0, c1)                                                             \
    "vmovups (%[cl]), " BF_R(c0) "\n\t"                                                     \
    "vmovups 64(%[cl]), " BF_R(c1) "\n\t"                                                   \
    "add %[ldc], %[cl]\n\t"
#define BF_ROW_ZERO(i, r, c0, c1)                                                           \
    "vpxord " BF_R(c0) ", " BF_R(c0) ", " BF_R(c0) "\n\t"                                   \
    "vpxord " BF_R(c1) ", " BF_R(c1) ", " BF_R(c1) "\n\t"
#define BF_ROW_ST(i, r, c0, c1)                                                             \
    "vmovups " BF_R(c0) ", (%[cs])\n\t"                                                     \
    "vmovups " BF_R(c1) ", 64(%[cs])\n\t"                                                   \
    "add %[ldc], %[cs]\n\t"

/* One full tile: c (row stride ldcb BYTES) = (first ? 0 : c) + the kp pairs' products. */
static void core(int kp, const uint32_t *pa, const uint32_t *pb, float *c, ptrdiff_t ldcb,
                 int first)
{
    float *cl = c, *cs = c;
    __asm__ volatile("test %[first], %[first]\n\t"
                     "jnz 5f\n\t" BF_ROWS(BF_ROW_LD) "jmp 6f\n\t"
                     "5:\n\t" BF_ROWS(BF_ROW_ZERO)
                     "6:\n\t"
                     "test %[kp], %[kp]\n\t"
                     "jz 2f\n\t"
                     ".p2align 6\n\t"
                     "1:\n\t"
                     "vmovups (%[pb]), " BF_R(0) "\n\t"
                     "vmovups 64(%[pb]), " BF_R(1) "\n\t"
                     BF_ROWS(BF_ROW_DP)
                     "add $56, %[pa]\n\t"  /* 14 pair words */
                     "add $128, %[pb]\n\t" /* 32 pair words */
                     "dec %[kp]\n\t"
                     "jnz 1b\n\t"
                     "2:\n\t" BF_ROWS(BF_ROW_ST)
                     : [pa] "+r"(pa), [pb] "+r"(pb), [kp] "+r"(kp), [cl] "+r"(cl),
                       [cs] "+r"(cs)
                     : [first] "r"(first), [ldc] "r"(ldcb)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",
                       "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
                       "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc",
                       "memory");
}

#undef BF_ROWS
#undef BF_R
#undef BF_ROW_DP
#undef BF_ROW_LD
#undef BF_ROW_ZERO
#undef BF_ROW_ST

#else /* portable intrinsics (32-bit builds): the same arithmetic, registers left to the
       * compiler */

static void core(int kp, const uint32_t *pa, const uint32_t *pb, float *c, ptrdiff_t ldcb,
                 int first)
{
    __m512 acc[MR][2];
    const ptrdiff_t ldc = ldcb / 4;
    for (int i = 0; i < MR; i++) {
        acc[i][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc);
        acc[i][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16);
    }
    for (int p = 0; p < kp; p++) {
        const __m512i b0 = _mm512_loadu_si512((const void *)(pb + (ptrdiff_t)p * NR));
        const __m512i b1 = _mm512_loadu_si512((const void *)(pb + (ptrdiff_t)p * NR + 16));
        for (int i = 0; i < MR; i++) {
            const __m512i x = _mm512_set1_epi32((int)pa[(ptrdiff_t)p * MR + i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], (__m512bh)x, (__m512bh)b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], (__m512bh)x, (__m512bh)b1);
        }
    }
    for (int i = 0; i < MR; i++) {
        _mm512_storeu_ps(c + i * ldc, acc[i][0]);
        _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
    }
}
#endif

/* Tiles of R <= FEW_ROWS valid rows (thin A: a GEMV-like product has one row): only
 * those rows' vdpbf16ps, where core computes all 14 (14x the work at M = 1).  Each
 * accumulator takes the pairs in the same order as in core, by the same instruction:
 * the same bits.  R is a constant after inlining. */
#define FEW_ROWS 6
GK_ALWAYS_INLINE void core_rows(int R, int kp, const uint32_t *pa, const uint32_t *pb,
                                float *c, ptrdiff_t ldc, int first)
{
    __m512 acc[FEW_ROWS][2];
    GK_UNROLL(8)
    for (int i = 0; i < R; i++) {
        acc[i][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc);
        acc[i][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16);
    }
    for (int p = 0; p < kp; p++) {
        const __m512i b0 = _mm512_loadu_si512((const void *)(pb + (ptrdiff_t)p * NR));
        const __m512i b1 = _mm512_loadu_si512((const void *)(pb + (ptrdiff_t)p * NR + 16));
        GK_UNROLL(8)
        for (int i = 0; i < R; i++) {
            const __m512i x = _mm512_set1_epi32((int)pa[(ptrdiff_t)p * MR + i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], (__m512bh)x, (__m512bh)b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], (__m512bh)x, (__m512bh)b1);
        }
    }
    GK_UNROLL(8)
    for (int i = 0; i < R; i++) {
        _mm512_storeu_ps(c + i * ldc, acc[i][0]);
        _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
    }
}

static void core_few(int rows, int kp, const uint32_t *pa, const uint32_t *pb, float *c,
                     ptrdiff_t ldc, int first)
{
    switch (rows) {
    case 1: core_rows(1, kp, pa, pb, c, ldc, first); break;
    case 2: core_rows(2, kp, pa, pb, c, ldc, first); break;
    case 3: core_rows(3, kp, pa, pb, c, ldc, first); break;
    case 4: core_rows(4, kp, pa, pb, c, ldc, first); break;
    case 5: core_rows(5, kp, pa, pb, c, ldc, first); break;
    default: core_rows(6, kp, pa, pb, c, ldc, first); break;
    }
}

/* gk_gemm_ukernel_fn: full tiles run on c itself, edge tiles through a local full tile so
 * that only the valid part of c is read or written (a few rows: core_few, on c itself
 * when the columns are whole).  kc == 0 (K == 0, first) zeroes. */
static void ukernel(int kc, const void *a_panel, const void *b_panel, void *c, ptrdiff_t ldc,
                    int mr_valid, int nr_valid, int first)
{
    GK_ALIGNED(64) float t[MR * NR];
    float *y = (float *)c;
    const int kp = (kc + 1) / 2;
    const uint32_t *pa = (const uint32_t *)a_panel, *pb = (const uint32_t *)b_panel;
    if (mr_valid == MR && nr_valid == NR) {
        core(kp, pa, pb, y, ldc * 4, first);
        return;
    }
    if (mr_valid <= FEW_ROWS && nr_valid == NR) {
        core_few(mr_valid, kp, pa, pb, y, ldc, first);
        return;
    }
    if (!first)
        for (int i = 0; i < mr_valid; i++)
            memcpy(t + i * NR, y + i * ldc, (size_t)nr_valid * 4);
    if (mr_valid <= FEW_ROWS)
        core_few(mr_valid, kp, pa, pb, t, NR, first);
    else
        core(kp, pa, pb, t, NR * 4, first);
    for (int i = 0; i < mr_valid; i++)
        memcpy(y + i * ldc, t + i * NR, (size_t)nr_valid * 4);
}

const gk_gemm_kernel gk_gemm_bf16_avx512bf16 = {
    "avx512bf16", GK_DT_BF16, GK_ACC_F32, MR, NR, 252, 1024, 2048,
    pack_a, pack_b, ukernel, gk_gemm_bf16_avx512_epilogue_ext,
    2,       /* cache_blocks: mc, nc from the caches; kc 1024 (see the header) */
    NULL,    /* ukernel_rounded: not used (QLinearMatMul runs the float32 family) */
    NULL,    /* ukernel_ldb: bfloat16 output needs the float32 workspace anyway */
    2,       /* pack_esz: bfloat16 halves of the pair words */
    NULL,    /* ukernel_strip */
    NULL, NULL, /* begin, end */
    0, 0,    /* kc_sub, kc_thin */
    0, 0, 0, /* no size rule: small calls are not declined (see the header) */
    gk_bf16_check_packed, /* the DAZ/FTZ guard (gk_gemm_bf16_pairs_x86.h) */
};
