/* The fused epilogue on 16 int32 lanes with AVX-512 F/BW/VL (the avx512vnni and amx
 * families): bit-identical to gk_qepi_store1, partial rows through masks (a masked-off
 * lane is neither read from the epilogue arrays nor written to the output). */
#ifndef GEMMKIT_GK_QEPI_AVX512_H
#define GEMMKIT_GK_QEPI_AVX512_H

#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

static inline __mmask16 gk_mask16(int valid)
{
    return valid >= 16 ? (__mmask16)0xFFFF : valid <= 0 ? (__mmask16)0 : (__mmask16)((1u << valid) - 1);
}

/* 8 raw int32 -> requantized, clamped int32 in [lo, hi].  Bit-identical to
 * gk_qepi_store1: double product (both factors exact in double), round half to even,
 * + y_zp, clamp in double (so the conversion never sees an out-of-range value). */
static inline __m256i gk_requant8_avx512(__m256i y, __m512d m, __m512d z, __m512d lo, __m512d hi)
{
    __m512d x = _mm512_mul_pd(_mm512_cvtepi32_pd(y), m);
    x = _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm512_min_pd(_mm512_max_pd(_mm512_add_pd(x, z), lo), hi);
    return _mm512_cvtpd_epi32(x); /* integral, in [-128, 255]: exact */
}

/* Stores 16 outputs (m, n .. n+15) under mask mk whose zero-point correction is already
 * applied (y = the int32 Y of gk_qepi_store1): the int32 itself, or requantized.  Needs
 * gk_x86_epi_vector_ok(e). */
static inline void gk_epi_store16_avx512(const gk_qepi *e, int m, int n, __m512i y, __mmask16 mk)
{
    if (e->kind == GK_QOUT_I32) {
        _mm512_mask_storeu_epi32((int32_t *)e->y + (ptrdiff_t)m * e->ldy + n, mk, y);
        return;
    }
    const float *mp = e->mult + (ptrdiff_t)m * e->mult_rs + (ptrdiff_t)n * e->mult_cs;
    const int32_t *zp = e->y_zp + (ptrdiff_t)m * e->yzp_rs + (ptrdiff_t)n * e->yzp_cs;
    __m512d mlo, mhi, zlo, zhi;
    if (e->mult_cs) {
        __m512 f = _mm512_maskz_loadu_ps(mk, mp);
        mlo = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
        mhi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
    } else {
        mlo = mhi = _mm512_set1_pd((double)*mp);
    }
    if (e->yzp_cs) {
        __m512i z = _mm512_maskz_loadu_epi32(mk, zp);
        zlo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(z));
        zhi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(z, 1));
    } else {
        zlo = zhi = _mm512_set1_pd((double)*zp);
    }
    int u8 = e->kind == GK_QOUT_U8;
    __m512d lo = _mm512_set1_pd(u8 ? 0.0 : -128.0), hi = _mm512_set1_pd(u8 ? 255.0 : 127.0);
    __m256i q0 = gk_requant8_avx512(_mm512_castsi512_si256(y), mlo, zlo, lo, hi);
    __m256i q1 = gk_requant8_avx512(_mm512_extracti64x4_epi64(y, 1), mhi, zhi, lo, hi);
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    /* vpmovdb truncates: the values are already in the output type's range */
    _mm512_mask_cvtepi32_storeu_epi8((int8_t *)e->y + (ptrdiff_t)m * e->ldy + n, mk, q);
}

/* Epilogue of 16 outputs (m, n .. n+15) under mask mk, from their raw dot products.
 * bzp / cc hold b_zp / b_colcorr of those columns.  Arithmetic is mod 2^32 like
 * gk_qepi_store1 (vpmulld keeps the low 32 bits). */
static inline void gk_epi_vec16_avx512(const gk_qepi *e, int m, int n, __m512i dot, __m512i bzp,
                                       __m512i cc, __mmask16 mk)
{
    __m512i y = _mm512_sub_epi32(dot, _mm512_mullo_epi32(_mm512_set1_epi32(e->a_rowsum[m]), bzp));
    y = _mm512_sub_epi32(y, _mm512_mullo_epi32(_mm512_set1_epi32(e->a_zp[m]), cc));
    gk_epi_store16_avx512(e, m, n, y, mk);
}

/* The avx512vnni family's small-M path (M <= 8, B streamed once, no packing), shared by
 * the amx family: tiles do not pay off for a handful of rows. */
void gk_qgemm_u8s8_avx512vnni_smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs,
                                     ptrdiff_t a_cs, uint8_t a_xor, const uint8_t *b,
                                     ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e);
#define GK_QGEMM_AVX512VNNI_SMALLM_MAX 16

#endif
