/* int8 GEMM, SSE4.1: exact.  Never pmaddubsw (saturating int16 pair sums); a' and b' are
 * widened to int16 when packing and pmaddwd adds two exact int16 products in int32
 * (|sum| <= 2 * 255 * 128); paddd then wraps mod 2^32 like ONNX.
 *
 * Tile MR x NR = 4 x 8: 8 xmm accumulators, 2 B registers, the 4 rows' a' pairs of a
 * k-pair loaded as one xmm and broadcast with pshufd (SSE has no broadcast load).
 * kstep 2, two bytes per element, the same panel layout as the AVX2 family (MR = 4).
 * Partial tiles go through a stack tile and the scalar epilogue. */
#include <smmintrin.h>

#include "gk_qgemm_x86_common.h"
#include "gk_qpack_pair.h"
#include "gk_qsmallm_pair.h"

#define MR 4
#define NR 8

static void pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs, uint8_t a_xor,
                   void *dst, int32_t *rowsum)
{
    gk_x86_pack_pair(a, rs, cs, a_xor, 0, MR, mc, k, dst, rowsum);
}

static void pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs, uint8_t b_xor,
                   void *dst, int32_t *colsum)
{
    gk_x86_pack_pair(b, cs, rs, b_xor, 1, NR, nc, k, dst, colsum);
}

/* double product (exact factors), round half to even, + y_zp, clamp in double. */
static inline __m128i requant2(__m128i y2, __m128d m, __m128d z, __m128d lo, __m128d hi)
{
    __m128d x = _mm_mul_pd(_mm_cvtepi32_pd(y2), m);
    x = _mm_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm_min_pd(_mm_max_pd(_mm_add_pd(x, z), lo), hi);
    return _mm_cvtpd_epi32(x); /* integral, in [-128, 255]: exact; 2 lanes, upper zero */
}

/* Outputs (m, n .. n+3) from their raw dot products (mod 2^32 like the reference). */
static inline void epi_vec4(const gk_qepi *e, int m, int n, __m128i dot, __m128i bzp, __m128i cc)
{
    __m128i y = _mm_sub_epi32(dot, _mm_mullo_epi32(_mm_set1_epi32(e->a_rowsum[m]), bzp));
    y = _mm_sub_epi32(y, _mm_mullo_epi32(_mm_set1_epi32(e->a_zp[m]), cc));
    if (e->kind == GK_QOUT_I32) {
        _mm_storeu_si128((__m128i *)((int32_t *)e->y + (ptrdiff_t)m * e->ldy + n), y);
        return;
    }
    const float *mp = e->mult + (ptrdiff_t)m * e->mult_rs + (ptrdiff_t)n * e->mult_cs;
    const int32_t *zp = e->y_zp + (ptrdiff_t)m * e->yzp_rs + (ptrdiff_t)n * e->yzp_cs;
    __m128d mlo, mhi, zlo, zhi;
    if (e->mult_cs) {
        __m128 f = _mm_loadu_ps(mp);
        mlo = _mm_cvtps_pd(f);
        mhi = _mm_cvtps_pd(_mm_movehl_ps(f, f));
    } else {
        mlo = mhi = _mm_set1_pd((double)*mp);
    }
    if (e->yzp_cs) {
        __m128i z = _mm_loadu_si128((const __m128i *)zp);
        zlo = _mm_cvtepi32_pd(z);
        zhi = _mm_cvtepi32_pd(_mm_shuffle_epi32(z, 0xEE));
    } else {
        zlo = zhi = _mm_set1_pd((double)*zp);
    }
    int u8 = e->kind == GK_QOUT_U8;
    __m128d lo = _mm_set1_pd(u8 ? 0.0 : -128.0), hi = _mm_set1_pd(u8 ? 255.0 : 127.0);
    __m128i q = _mm_unpacklo_epi64(requant2(y, mlo, zlo, lo, hi),
                                   requant2(_mm_shuffle_epi32(y, 0xEE), mhi, zhi, lo, hi));
    /* values already in range: the saturating packs are exact */
    q = _mm_packs_epi32(q, q);
    q = u8 ? _mm_packus_epi16(q, q) : _mm_packs_epi16(q, q);
    int32_t w = _mm_cvtsi128_si32(q);
    memcpy((int8_t *)e->y + (ptrdiff_t)m * e->ldy + n, &w, 4);
}

static void ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel, const void *b_panel,
                    const gk_qepi *e, int m0, int n0)
{
    const __m128i *ap = (const __m128i *)a_panel;
    const __m128i *bp = (const __m128i *)b_panel;
    __m128i c00 = _mm_setzero_si128(), c01 = c00, c10 = c00, c11 = c00;
    __m128i c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    int ng = kp / 2;
    for (int g = 0; g < ng; g++) {
        __m128i a = _mm_loadu_si128(ap + g);
        __m128i b0 = _mm_loadu_si128(bp + 2 * (ptrdiff_t)g), b1 = _mm_loadu_si128(bp + 2 * (ptrdiff_t)g + 1);
        __m128i a0 = _mm_shuffle_epi32(a, 0x00), a1 = _mm_shuffle_epi32(a, 0x55);
        __m128i a2 = _mm_shuffle_epi32(a, 0xAA), a3 = _mm_shuffle_epi32(a, 0xFF);
        c00 = _mm_add_epi32(c00, _mm_madd_epi16(a0, b0));
        c01 = _mm_add_epi32(c01, _mm_madd_epi16(a0, b1));
        c10 = _mm_add_epi32(c10, _mm_madd_epi16(a1, b0));
        c11 = _mm_add_epi32(c11, _mm_madd_epi16(a1, b1));
        c20 = _mm_add_epi32(c20, _mm_madd_epi16(a2, b0));
        c21 = _mm_add_epi32(c21, _mm_madd_epi16(a2, b1));
        c30 = _mm_add_epi32(c30, _mm_madd_epi16(a3, b0));
        c31 = _mm_add_epi32(c31, _mm_madd_epi16(a3, b1));
    }
    if (mr_valid < MR || nr_valid < NR || !gk_x86_epi_vector_ok(e)) {
        int32_t t[MR * NR];
        _mm_storeu_si128((__m128i *)(t + 0), c00);
        _mm_storeu_si128((__m128i *)(t + 4), c01);
        _mm_storeu_si128((__m128i *)(t + 8), c10);
        _mm_storeu_si128((__m128i *)(t + 12), c11);
        _mm_storeu_si128((__m128i *)(t + 16), c20);
        _mm_storeu_si128((__m128i *)(t + 20), c21);
        _mm_storeu_si128((__m128i *)(t + 24), c30);
        _mm_storeu_si128((__m128i *)(t + 28), c31);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, NR);
        return;
    }
    __m128i z0 = _mm_loadu_si128((const __m128i *)(e->b_zp + n0));
    __m128i z1 = _mm_loadu_si128((const __m128i *)(e->b_zp + n0 + 4));
    __m128i k0 = _mm_loadu_si128((const __m128i *)(e->b_colcorr + n0));
    __m128i k1 = _mm_loadu_si128((const __m128i *)(e->b_colcorr + n0 + 4));
    epi_vec4(e, m0, n0, c00, z0, k0);
    epi_vec4(e, m0, n0 + 4, c01, z1, k1);
    epi_vec4(e, m0 + 1, n0, c10, z0, k0);
    epi_vec4(e, m0 + 1, n0 + 4, c11, z1, k1);
    epi_vec4(e, m0 + 2, n0, c20, z0, k0);
    epi_vec4(e, m0 + 2, n0 + 4, c21, z1, k1);
    epi_vec4(e, m0 + 3, n0, c30, z0, k0);
    epi_vec4(e, m0 + 3, n0 + 4, c31, z1, k1);
}

/* ---------------------------------------------------------------- small M */

#define GK_SMP_W 8 /* columns per block: one 8-byte load per depth row */
#define GK_SMP_AQ_T __m128i

/* The a' pairs broadcast once per pass (SSE has no broadcast load; this keeps pshufd out
 * of the block loop). */
static inline const __m128i *gk_smp_prep_a(const int32_t *aq, __m128i *aqv, int n)
{
    for (int q = 0; q < n; q++)
        aqv[q] = _mm_set1_epi32(aq[q]);
    return aqv;
}

/* One pass (GK_SMP_KC depth rows) over one block of 8 columns: acc[i * ldb + j] +=
 * sum over the pass of a'[i, k] B[k, j], columns in order (aqv: from gk_smp_prep_a).
 * Row m of acc collects colsum(B) when colsum: the int16 sum of the pass's 16 rows is exact
 * (|.| <= 16 * 255 < 2^15), then sign-extended to int32.
 * rows[d] + off .. + 7 are readable (full block, zero row or tail copy). */
static inline __attribute__((always_inline)) void gk_smp_block(int m, int colsum, int b_signed,
                                                              const uint8_t *const *rows, ptrdiff_t off,
                                                              const __m128i *aqv, int32_t *acc, int ldb)
{
    __m128i pv[GK_SMP_NP][2], xs = _mm_setzero_si128();
#pragma GCC unroll 8
    for (int p = 0; p < GK_SMP_NP; p++) {
        __m128i x0 = _mm_loadl_epi64((const __m128i *)(rows[2 * p] + off));
        __m128i x1 = _mm_loadl_epi64((const __m128i *)(rows[2 * p + 1] + off));
        x0 = b_signed ? _mm_cvtepi8_epi16(x0) : _mm_cvtepu8_epi16(x0);
        x1 = b_signed ? _mm_cvtepi8_epi16(x1) : _mm_cvtepu8_epi16(x1);
        pv[p][0] = _mm_unpacklo_epi16(x0, x1);
        pv[p][1] = _mm_unpackhi_epi16(x0, x1);
        if (colsum)
            xs = _mm_add_epi16(xs, _mm_add_epi16(x0, x1));
    }
    if (colsum) {
        __m128i *c = (__m128i *)(acc + (ptrdiff_t)m * ldb), sg = _mm_srai_epi16(xs, 15);
        _mm_store_si128(c, _mm_add_epi32(_mm_load_si128(c), _mm_unpacklo_epi16(xs, sg)));
        _mm_store_si128(c + 1, _mm_add_epi32(_mm_load_si128(c + 1), _mm_unpackhi_epi16(xs, sg)));
    }
    for (int i = 0; i < m; i++) {
        __m128i *c = (__m128i *)(acc + (ptrdiff_t)i * ldb);
        __m128i c0 = _mm_load_si128(c), c1 = _mm_load_si128(c + 1);
#pragma GCC unroll 8
        for (int p = 0; p < GK_SMP_NP; p++) {
            __m128i av = _mm_load_si128(aqv + i * GK_SMP_NP + p);
            c0 = _mm_add_epi32(c0, _mm_madd_epi16(av, pv[p][0]));
            c1 = _mm_add_epi32(c1, _mm_madd_epi16(av, pv[p][1]));
        }
        _mm_store_si128(c, c0);
        _mm_store_si128(c + 1, c1);
    }
}

/* Epilogue of one block: b'-domain dot products and colcorr, then the reference rounding. */
static inline __attribute__((always_inline)) void gk_smp_epilogue(const gk_qepi *e, int m, int n0, int w,
                                                                 const int32_t *acc, int ldb, int k,
                                                                 int need_colsum, int vec_ok, int bu)
{
    const int32_t *cs = acc + (ptrdiff_t)m * ldb;
    if (vec_ok && w == GK_SMP_W) {
        __m128i z0 = _mm_loadu_si128((const __m128i *)(e->b_zp + n0));
        __m128i z1 = _mm_loadu_si128((const __m128i *)(e->b_zp + n0 + 4));
        __m128i k0 = _mm_setzero_si128(), k1 = k0;
        if (need_colsum) {
            const __m128i kv = _mm_set1_epi32(k), sh = _mm_set1_epi32((int32_t)(bu ? 128u * (uint32_t)k : 0u));
            k0 = _mm_sub_epi32(_mm_sub_epi32(_mm_load_si128((const __m128i *)cs), sh), _mm_mullo_epi32(kv, z0));
            k1 = _mm_sub_epi32(_mm_sub_epi32(_mm_load_si128((const __m128i *)cs + 1), sh), _mm_mullo_epi32(kv, z1));
        }
        for (int i = 0; i < m; i++) {
            const __m128i *d = (const __m128i *)(acc + (ptrdiff_t)i * ldb);
            const __m128i sh = _mm_set1_epi32((int32_t)gk_smp_dot_shift(e, i, bu));
            epi_vec4(e, i, n0, _mm_sub_epi32(_mm_load_si128(d), sh), z0, k0);
            epi_vec4(e, i, n0 + 4, _mm_sub_epi32(_mm_load_si128(d + 1), sh), z1, k1);
        }
    } else {
        for (int i = 0; i < m; i++)
            gk_smp_store_row(e, i, n0, w, acc + (ptrdiff_t)i * ldb, cs, need_colsum, bu);
    }
}

#include "gk_qsmallm_pair_run.h"

const gk_qgemm_kernel gk_qgemm_u8s8_sse41 = {
    "sse41", MR, NR, 2, 2, 2, pack_a, pack_b, ukernel, GK_SMP_MAX, smallm,
};
