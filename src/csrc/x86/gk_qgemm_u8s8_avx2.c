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
#include "gk_qukernel_ymm.h"

/* ---------------------------------------------------------------- small M */

/* Up to 16 rows the small-M path beats packing (measured, K = N = 256..4096: M = 16 in
 * about half the packed time, whose cost is dominated by widening B to int16 panels). */
#define SM_MAX 16
#define SM_W 16 /* columns per block: one 16-byte load per depth row */

/* One pass (GK_SMP_KC depth rows) over one block of 16 columns.  vpmovsxbw/zxbw keep the
 * columns in order, vpunpck*wd works inside 128-bit lanes, so the two accumulator vectors
 * of a row hold columns (0-3 | 8-11) and (4-7 | 12-15); sm_unpermute restores the order.
 * Row m of acc collects colsum(B) when colsum: the int16 sum of the pass's 16 rows is
 * exact (|.| <= 16 * 255 < 2^15) and is widened in the same lane order.
 * rows[d] + off .. + 15 are readable (full block, zero row or tail copy). */
static inline __attribute__((always_inline)) void sm_block16(int m, int colsum, int b_signed,
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
static inline void sm_unpermute(const int32_t *p, __m256i *q0, __m256i *q1)
{
    __m256i p0 = _mm256_load_si256((const __m256i *)p), p1 = _mm256_load_si256((const __m256i *)p + 1);
    *q0 = _mm256_permute2x128_si256(p0, p1, 0x20);
    *q1 = _mm256_permute2x128_si256(p0, p1, 0x31);
}

/* M <= SM_MAX rows; B read once, GK_SMP_KC rows at a time, each row front to back within
 * a chunk of columns whose (m + 1) rows of int32 accumulators fit GK_SMP_STACK.
 * b_signed is a compile-time constant at both call sites (int8 B: sign-extend; uint8 B:
 * zero-extend and correct, see gk_qsmallm_pair.h). */
static inline __attribute__((always_inline)) void smallm_impl(
    int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs, uint8_t a_xor,
    const uint8_t *b, ptrdiff_t b_rs, const gk_qepi *e, int b_signed)
{
    int32_t buf[GK_SMP_STACK / 4] __attribute__((aligned(64)));
    int32_t aq[SM_MAX * GK_SMP_NP];
    uint8_t tmp[GK_SMP_KC * SM_W];
    const uint8_t *rp[GK_SMP_KC], *tp[GK_SMP_KC];
    const int need_colsum = gk_x86_smallm_need_colsum(e, m);
    const int nc_max = gk_smp_chunk(m + 1);
    const int vec_ok = gk_x86_epi_vector_ok(e);
    const int bu = !b_signed;

    for (int nc0 = 0; nc0 < n; nc0 += nc_max) {
        const int ncw = n - nc0 < nc_max ? n - nc0 : nc_max;
        const int nfull = ncw / SM_W, ldb = (ncw + SM_W - 1) / SM_W * SM_W;
        /* (m + 1) * ldb <= GK_SMP_STACK / 4 since ldb <= nc_max (a multiple of SM_W) */
        memset(buf, 0, sizeof(int32_t) * (size_t)(m + 1) * (size_t)ldb);
        for (int k0 = 0; k0 < k; k0 += GK_SMP_KC) {
            gk_smp_gather_a(m, k, k0, a, a_rs, a_cs, a_xor, aq);
            gk_smp_rows(b, b_rs, k, k0, nc0, rp);
            for (int blk = 0; blk < nfull; blk++)
                sm_block16(m, need_colsum, b_signed, rp, (ptrdiff_t)blk * SM_W, aq, buf + blk * SM_W, ldb);
            if (nfull * SM_W < ncw) {
                gk_smp_tail_copy(rp, nfull * SM_W, ncw - nfull * SM_W, SM_W, tmp, tp);
                sm_block16(m, need_colsum, b_signed, tp, 0, aq, buf + nfull * SM_W, ldb);
            }
        }
        /* epilogue: b'-domain dot products and colcorr, then the reference rounding */
        for (int j0 = 0; j0 < ncw; j0 += SM_W) {
            const int n0 = nc0 + j0, w = ncw - j0 < SM_W ? ncw - j0 : SM_W;
            __m256i cs0, cs1;
            sm_unpermute(buf + (ptrdiff_t)m * ldb + j0, &cs0, &cs1);
            if (vec_ok && w == SM_W) {
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
                    sm_unpermute(buf + (ptrdiff_t)i * ldb + j0, &q0, &q1);
                    gk_epi_vec8_avx(e, i, n0, _mm256_sub_epi32(q0, sh), z0, k0);
                    gk_epi_vec8_avx(e, i, n0 + 8, _mm256_sub_epi32(q1, sh), z1, k1);
                }
            } else {
                int32_t t[SM_W], cst[SM_W];
                _mm256_storeu_si256((__m256i *)cst, cs0);
                _mm256_storeu_si256((__m256i *)(cst + 8), cs1);
                for (int i = 0; i < m; i++) {
                    __m256i q0, q1;
                    sm_unpermute(buf + (ptrdiff_t)i * ldb + j0, &q0, &q1);
                    _mm256_storeu_si256((__m256i *)t, q0);
                    _mm256_storeu_si256((__m256i *)(t + 8), q1);
                    for (int j = 0; j < w; j++)
                        gk_x86_store1_cc(e, i, n0 + j, (uint32_t)t[j] - gk_smp_dot_shift(e, i, bu),
                                      need_colsum ? gk_smp_colcorr1(e, n0 + j, (uint32_t)cst[j], bu) : 0u);
                }
            }
        }
    }
}

static void smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    if (b_xor == 0)
        smallm_impl(m, n, k, a, a_rs, a_cs, a_xor, b, b_rs, e, 1);
    else /* b_xor == 0x80: B is uint8, b' = B - 128 */
        smallm_impl(m, n, k, a, a_rs, a_cs, a_xor, b, b_rs, e, 0);
}

const gk_qgemm_kernel gk_qgemm_u8s8_avx2 = {
    "avx2", MR, NR, 2, 2, 2, pack_a, pack_b, ukernel, SM_MAX, smallm,
};
