/* The fused epilogue on 8 int32 lanes with AVX2 (for the avx2 and avxvnni families):
 * bit-identical to gk_qepi_store1.  Full 8-column vectors only; partial tiles use the
 * scalar reference (gk_x86_tile_store_scalar). */
#ifndef GEMMKIT_GK_QEPI_AVX2_H
#define GEMMKIT_GK_QEPI_AVX2_H

#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

/* double product (both factors exact in double), round half to even, + y_zp, clamp in
 * double so the conversion never sees an out-of-range value. */
static inline __m128i gk_requant4_avx(__m128i y, __m256d m, __m256d z, __m256d lo, __m256d hi)
{
    __m256d x = _mm256_mul_pd(_mm256_cvtepi32_pd(y), m);
    x = _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_min_pd(_mm256_max_pd(_mm256_add_pd(x, z), lo), hi);
    return _mm256_cvtpd_epi32(x); /* integral, in [-128, 255]: exact */
}

/* Outputs (m, n .. n+7) from their raw dot products; bzp / cc: b_zp / b_colcorr of those
 * columns.  vpmulld keeps the low 32 bits: the same mod-2^32 arithmetic as the reference. */
static inline void gk_epi_vec8_avx(const gk_qepi *e, int m, int n, __m256i dot, __m256i bzp,
                                   __m256i cc)
{
    __m256i y = _mm256_sub_epi32(dot, _mm256_mullo_epi32(_mm256_set1_epi32(e->a_rowsum[m]), bzp));
    y = _mm256_sub_epi32(y, _mm256_mullo_epi32(_mm256_set1_epi32(e->a_zp[m]), cc));
    if (e->kind == GK_QOUT_I32) {
        _mm256_storeu_si256((__m256i *)((int32_t *)e->y + (ptrdiff_t)m * e->ldy + n), y);
        return;
    }
    const float *mp = e->mult + (ptrdiff_t)m * e->mult_rs + (ptrdiff_t)n * e->mult_cs;
    const int32_t *zp = e->y_zp + (ptrdiff_t)m * e->yzp_rs + (ptrdiff_t)n * e->yzp_cs;
    __m256d mlo, mhi, zlo, zhi;
    if (e->mult_cs) {
        __m256 f = _mm256_loadu_ps(mp);
        mlo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
        mhi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
    } else {
        mlo = mhi = _mm256_set1_pd((double)*mp);
    }
    if (e->yzp_cs) {
        __m256i z = _mm256_loadu_si256((const __m256i *)zp);
        zlo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(z));
        zhi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(z, 1));
    } else {
        zlo = zhi = _mm256_set1_pd((double)*zp);
    }
    int u8 = e->kind == GK_QOUT_U8;
    __m256d lo = _mm256_set1_pd(u8 ? 0.0 : -128.0), hi = _mm256_set1_pd(u8 ? 255.0 : 127.0);
    __m128i q0 = gk_requant4_avx(_mm256_castsi256_si128(y), mlo, zlo, lo, hi);
    __m128i q1 = gk_requant4_avx(_mm256_extracti128_si256(y, 1), mhi, zhi, lo, hi);
    /* values already in range: the saturating packs are exact */
    __m128i w = _mm_packs_epi32(q0, q1);
    w = u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
    _mm_storel_epi64((__m128i *)((int8_t *)e->y + (ptrdiff_t)m * e->ldy + n), w);
}

#endif
