/* float64 <-> float32 for gemmkit.cast with AVX2 (the gk_codecs_avx2 family; built with
 * -mavx2): vcvtpd2ps / vcvtps2pd, only under the default MXCSR (gk_mxcsr_is_default), where
 * they are the IEEE conversions bit for bit, NaN included (quieted, sign and top payload
 * bits kept, as the scalar gk_f64_to_f32_bits and gk_f32_to_f64_exact do).  Round to odd
 * (gk_codecs_kernel.f64_to_f32_n): the nearest-even result, stepped one code toward zero
 * where it rounded away (|back| > |x|: inf becomes FLT_MAX), then the last bit set where
 * the conversion was inexact (NaN compares unordered: left as is).  Tails run the same
 * vector code on a zero-padded copy. */
#include <immintrin.h>
#include <string.h>

#include "codecs/gk_codecs_impl.h"

/* 4 doubles -> 4 float32 codes */
static inline __m128i gk_f64x4_to_f32(__m256d x, int odd)
{
    const __m128 r = _mm256_cvtpd_ps(x);
    __m128i u = _mm_castps_si128(r);
    if (odd) {
        const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
        const __m256i low_words = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        const __m256d back = _mm256_cvtps_pd(r);
        const __m256d inexact = _mm256_cmp_pd(back, x, _CMP_NEQ_OQ);
        const __m256d away = _mm256_cmp_pd(_mm256_and_pd(back, abs_mask), _mm256_and_pd(x, abs_mask),
                                           _CMP_GT_OQ);
        /* the 64-bit masks' low words, in order */
        const __m128i in32 = _mm256_castsi256_si128(
            _mm256_permutevar8x32_epi32(_mm256_castpd_si256(inexact), low_words));
        const __m128i aw32 = _mm256_castsi256_si128(
            _mm256_permutevar8x32_epi32(_mm256_castpd_si256(away), low_words));
        u = _mm_add_epi32(u, aw32); /* -1: one code toward zero */
        u = _mm_or_si128(u, _mm_srli_epi32(in32, 31));
    }
    return u;
}

int gk_f64_to_f32_n_avx2(const double *src, float *dst, size_t n, int odd)
{
    size_t i = 0;
    if (!gk_mxcsr_is_default())
        return 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i a = gk_f64x4_to_f32(_mm256_loadu_pd(src + i), odd);
        const __m128i b = gk_f64x4_to_f32(_mm256_loadu_pd(src + i + 4), odd);
        _mm_storeu_si128((__m128i *)(dst + i), a);
        _mm_storeu_si128((__m128i *)(dst + i + 4), b);
    }
    for (; i < n; i += 4) {
        double x[4] = {0, 0, 0, 0};
        float y[4];
        const size_t m = n - i < 4 ? n - i : 4;
        memcpy(x, src + i, m * sizeof(double));
        _mm_storeu_si128((__m128i *)y, gk_f64x4_to_f32(_mm256_loadu_pd(x), odd));
        memcpy(dst + i, y, m * sizeof(float));
    }
    return 1;
}

int gk_f32_to_f64_n_avx2(const float *src, double *dst, size_t n)
{
    size_t i = 0;
    if (!gk_mxcsr_is_default())
        return 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_pd(dst + i, _mm256_cvtps_pd(_mm_loadu_ps(src + i)));
        _mm256_storeu_pd(dst + i + 4, _mm256_cvtps_pd(_mm_loadu_ps(src + i + 4)));
    }
    for (; i < n; i += 4) {
        float x[4] = {0, 0, 0, 0};
        double y[4];
        const size_t m = n - i < 4 ? n - i : 4;
        memcpy(x, src + i, m * sizeof(float));
        _mm256_storeu_pd(y, _mm256_cvtps_pd(_mm_loadu_ps(x)));
        memcpy(dst + i, y, m * sizeof(double));
    }
    return 1;
}
