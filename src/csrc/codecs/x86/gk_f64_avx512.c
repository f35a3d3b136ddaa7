/* float64 <-> float32 for gemmkit.cast with AVX-512 F/VL (the gk_codecs_avx512 family,
 * built in the avx512 group): the same conversions as gk_f64_avx2.c (see there for why they
 * are exact and for round to odd), 8 lanes per vector, tails under a lane mask. */
#include <immintrin.h>

#include "codecs/gk_codecs_impl.h"

GK_ALWAYS_INLINE __mmask8 gk_tail_mask8(size_t left)
{
    return left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1u);
}

/* 8 doubles -> 8 float32 codes */
GK_ALWAYS_INLINE __m256i gk_f64x8_to_f32(__m512d x, int odd)
{
    const __m256 r = _mm512_cvtpd_ps(x);
    __m256i u = _mm256_castps_si256(r);
    if (odd) {
        const __m256i one = _mm256_set1_epi32(1);
        const __m512d back = _mm512_cvtps_pd(r);
        const __mmask8 inexact = _mm512_cmp_pd_mask(back, x, _CMP_NEQ_OQ);
        const __mmask8 away = _mm512_cmp_pd_mask(_mm512_abs_pd(back), _mm512_abs_pd(x), _CMP_GT_OQ);
        u = _mm256_mask_sub_epi32(u, away, u, one); /* one code toward zero */
        u = _mm256_mask_or_epi32(u, inexact, u, one);
    }
    return u;
}

int gk_f64_to_f32_n_avx512(const double *src, float *dst, size_t n, int odd)
{
    size_t i = 0;
    if (!gk_mxcsr_is_default())
        return 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = gk_f64x8_to_f32(_mm512_loadu_pd(src + i), odd);
        const __m256i b = gk_f64x8_to_f32(_mm512_loadu_pd(src + i + 8), odd);
        _mm256_storeu_si256((__m256i *)(dst + i), a);
        _mm256_storeu_si256((__m256i *)(dst + i + 8), b);
    }
    for (; i < n; i += 8) {
        const __mmask8 m = gk_tail_mask8(n - i);
        _mm256_mask_storeu_epi32(dst + i, m, gk_f64x8_to_f32(_mm512_maskz_loadu_pd(m, src + i), odd));
    }
    return 1;
}

int gk_f32_to_f64_n_avx512(const float *src, double *dst, size_t n)
{
    size_t i = 0;
    if (!gk_mxcsr_is_default())
        return 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_pd(dst + i, _mm512_cvtps_pd(_mm256_loadu_ps(src + i)));
        _mm512_storeu_pd(dst + i + 8, _mm512_cvtps_pd(_mm256_loadu_ps(src + i + 8)));
    }
    for (; i < n; i += 8) {
        const __mmask8 m = gk_tail_mask8(n - i);
        _mm512_mask_storeu_pd(dst + i, m, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, src + i)));
    }
    return 1;
}
