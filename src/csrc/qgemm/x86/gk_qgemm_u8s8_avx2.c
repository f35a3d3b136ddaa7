/* int8 GEMM, AVX2 without VNNI: exact.  Never vpmaddubsw (it adds two u8 x s8 products
 * in an int16 lane and saturates: 255 * 127 * 2 > 32767).  Instead a' and b' are widened
 * to int16 when packing and vpmaddwd multiplies int16 pairs and adds the two products in
 * int32 (|sum| <= 2 * 255 * 128: exact); vpaddd then wraps mod 2^32 like ONNX.
 *
 * Tile MR x NR = 4 x 16: 8 ymm accumulators (the only loop-carried dependence is the
 * 1-cycle vpaddd), 2 B registers, broadcasts of a' pairs.  kstep 2, two bytes per
 * element, panel layout of gk_qgemm_x86_common.h:
 *   A panel: per k-pair g, MR int32 words = (a'[i, 2g], a'[i, 2g+1]) as int16
 *   B panel: per k-pair g, NR int32 words = (b'[2g, j], b'[2g+1, j]) as int16
 * Partial tiles go through a stack tile and the scalar epilogue. */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"
#include "gk_qepi_avx2.h"
#include "gk_qpack_pair.h"
#include "gk_qsmallm_pair.h"

#define MR 4
#define NV 2
#define GK_UK_KSTEP 2
#define GK_UK_PACK gk_x86_pack_pair
#define GK_UK_MAC(acc, a, b) ((acc) = _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b))))
/* Accumulator (row i, vector v) in ymm(8 + 2i + v); B in ymm0-1; A pair broadcast in
 * ymm2; products in ymm3-4 (vpmaddwd: two exact int16 products per int32 lane). */
#define GK_VZ(r) "vpxor %%ymm" #r ", %%ymm" #r ", %%ymm" #r "\n\t"
#define GK_VROW(i, c0, c1)                                                                  \
    "vpbroadcastd " #i "*4(%[pa]), %%ymm2\n\t"                                              \
    "vpmaddwd %%ymm0, %%ymm2, %%ymm3\n\t"                                                   \
    "vpmaddwd %%ymm1, %%ymm2, %%ymm4\n\t"                                                   \
    "vpaddd %%ymm3, %%ymm" #c0 ", %%ymm" #c0 "\n\t"                                         \
    "vpaddd %%ymm4, %%ymm" #c1 ", %%ymm" #c1 "\n\t"
#define GK_VST(r) "vmovdqu %%ymm" #r ", (" #r "-8)*32(%[t])\n\t"
#define GK_UK_ASM_LOOP(pa, pb, pe, t)                                                       \
    __asm__ volatile(GK_VZ(8) GK_VZ(9) GK_VZ(10) GK_VZ(11) GK_VZ(12) GK_VZ(13) GK_VZ(14)    \
                     GK_VZ(15)                                                              \
                     "1:\n\t"                                                               \
                     "vmovdqu (%[pb]), %%ymm0\n\t"                                          \
                     "vmovdqu 32(%[pb]), %%ymm1\n\t"                                        \
                     GK_VROW(0, 8, 9) GK_VROW(1, 10, 11) GK_VROW(2, 12, 13)                 \
                     GK_VROW(3, 14, 15)                                                     \
                     "add $16, %[pa]\n\t"                                                   \
                     "add $64, %[pb]\n\t"                                                   \
                     "cmp %[pa], %[pe]\n\t"                                                 \
                     "jne 1b\n\t"                                                           \
                     GK_VST(8) GK_VST(9) GK_VST(10) GK_VST(11) GK_VST(12) GK_VST(13)        \
                     GK_VST(14) GK_VST(15)                                                  \
                     : [pa] "+r"(pa), [pb] "+r"(pb)                                         \
                     : [pe] "r"(pe), [t] "r"(t)                                             \
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm8", "xmm9", "xmm10",     \
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory")
#include "gk_qukernel_ymm.h"

/* ---------------------------------------------------------------- small M */

#define GK_SMP_W 16 /* columns per block: one 16-byte load per depth row */
#define GK_SMP_AQ_T int32_t /* broadcast from memory in the loop (vpbroadcastd) */

static inline const int32_t *gk_smp_prep_a(const int32_t *aq, int32_t *aqx, int n)
{
    (void)aqx;
    (void)n;
    return aq;
}

/* One pass (GK_SMP_KC depth rows) over one block of 16 columns.  vpmovsxbw/zxbw keep the
 * columns in order, vpunpck*wd works inside 128-bit lanes, so the two accumulator vectors
 * of a row hold columns (0-3 | 8-11) and (4-7 | 12-15); gk_smp_unpermute16 restores the order.
 * Row m of acc collects colsum(B) when colsum: the int16 sum of the pass's 16 rows is
 * exact (|.| <= 16 * 255 < 2^15) and is widened in the same lane order.
 * rows[d] + off .. + 15 are readable (full block, zero row or tail copy). */
static inline __attribute__((always_inline)) void gk_smp_block(int m, int colsum, int b_signed,
                                                              const uint8_t *const *rows, ptrdiff_t off,
                                                              const int32_t *aq, int32_t *acc, int ldb)
{
    __m256i pv[GK_SMP_NP][2], xs = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int p = 0; p < GK_SMP_NP; p++) {
        __m128i r0 = _mm_loadu_si128((const __m128i *)(rows[2 * p] + off));
        __m128i r1 = _mm_loadu_si128((const __m128i *)(rows[2 * p + 1] + off));
        __m256i x0 = b_signed ? _mm256_cvtepi8_epi16(r0) : _mm256_cvtepu8_epi16(r0);
        __m256i x1 = b_signed ? _mm256_cvtepi8_epi16(r1) : _mm256_cvtepu8_epi16(r1);
        pv[p][0] = _mm256_unpacklo_epi16(x0, x1);
        pv[p][1] = _mm256_unpackhi_epi16(x0, x1);
        if (colsum)
            xs = _mm256_add_epi16(xs, _mm256_add_epi16(x0, x1));
    }
    if (colsum) {
        __m256i *c = (__m256i *)(acc + (ptrdiff_t)m * ldb), sg = _mm256_srai_epi16(xs, 15);
        _mm256_store_si256(c, _mm256_add_epi32(_mm256_load_si256(c), _mm256_unpacklo_epi16(xs, sg)));
        _mm256_store_si256(c + 1, _mm256_add_epi32(_mm256_load_si256(c + 1), _mm256_unpackhi_epi16(xs, sg)));
    }
    for (int i = 0; i < m; i++) {
        __m256i *c = (__m256i *)(acc + (ptrdiff_t)i * ldb);
        __m256i c0 = _mm256_load_si256(c), c1 = _mm256_load_si256(c + 1);
#pragma GCC unroll 8
        for (int p = 0; p < GK_SMP_NP; p++) {
            __m256i av = _mm256_set1_epi32(aq[i * GK_SMP_NP + p]);
            c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(av, pv[p][0]));
            c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(av, pv[p][1]));
        }
        _mm256_store_si256(c, c0);
        _mm256_store_si256(c + 1, c1);
    }
}

/* (0-3 | 8-11), (4-7 | 12-15) -> columns 0-7, 8-15 */
static inline void gk_smp_unpermute16(const int32_t *p, __m256i *q0, __m256i *q1)
{
    __m256i p0 = _mm256_load_si256((const __m256i *)p), p1 = _mm256_load_si256((const __m256i *)p + 1);
    *q0 = _mm256_permute2x128_si256(p0, p1, 0x20);
    *q1 = _mm256_permute2x128_si256(p0, p1, 0x31);
}

/* Epilogue of one block: b'-domain dot products and colcorr, then the reference rounding. */
static inline __attribute__((always_inline)) void gk_smp_epilogue(const gk_qepi *e, int m, int n0, int w,
                                                                 const int32_t *acc, int ldb, int k,
                                                                 int need_colsum, int vec_ok, int bu)
{
    __m256i cs0, cs1;
    gk_smp_unpermute16(acc + (ptrdiff_t)m * ldb, &cs0, &cs1);
    if (vec_ok && w == GK_SMP_W) {
        __m256i z0 = _mm256_loadu_si256((const __m256i *)(e->b_zp + n0));
        __m256i z1 = _mm256_loadu_si256((const __m256i *)(e->b_zp + n0 + 8));
        __m256i k0 = _mm256_setzero_si256(), k1 = k0;
        if (need_colsum) {
            const __m256i kv = _mm256_set1_epi32(k);
            const __m256i sh = _mm256_set1_epi32((int32_t)(bu ? 128u * (uint32_t)k : 0u));
            k0 = _mm256_sub_epi32(_mm256_sub_epi32(cs0, sh), _mm256_mullo_epi32(kv, z0));
            k1 = _mm256_sub_epi32(_mm256_sub_epi32(cs1, sh), _mm256_mullo_epi32(kv, z1));
        }
        for (int i = 0; i < m; i++) {
            const __m256i sh = _mm256_set1_epi32((int32_t)gk_smp_dot_shift(e, i, bu));
            __m256i q0, q1;
            gk_smp_unpermute16(acc + (ptrdiff_t)i * ldb, &q0, &q1);
            gk_epi_vec8_avx(e, i, n0, _mm256_sub_epi32(q0, sh), z0, k0);
            gk_epi_vec8_avx(e, i, n0 + 8, _mm256_sub_epi32(q1, sh), z1, k1);
        }
    } else {
        int32_t t[GK_SMP_W], cst[GK_SMP_W];
        _mm256_storeu_si256((__m256i *)cst, cs0);
        _mm256_storeu_si256((__m256i *)(cst + 8), cs1);
        for (int i = 0; i < m; i++) {
            __m256i q0, q1;
            gk_smp_unpermute16(acc + (ptrdiff_t)i * ldb, &q0, &q1);
            _mm256_storeu_si256((__m256i *)t, q0);
            _mm256_storeu_si256((__m256i *)(t + 8), q1);
            gk_smp_store_row(e, i, n0, w, t, cst, need_colsum, bu);
        }
    }
}

#include "gk_qsmallm_pair_run.h"

const gk_qgemm_kernel gk_qgemm_u8s8_avx2 = {
    "avx2", MR, NR, 2, 2, 2, pack_a, pack_b, ukernel, GK_SMP_MAX, smallm,
};
