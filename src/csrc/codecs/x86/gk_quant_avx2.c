/* The contrib ops' loops on AVX2 (group avx2; contract in gemmkit/gk_codecs.h): 8 lanes,
 * each lane the scalar family's operation sequence (vdivps, vroundps to nearest even,
 * vaddps, vmaxps/vminps, vmulps are IEEE single operations), so the bits equal
 * gk_quant_scalar.c's; tails through the scalar loops. */
#include <immintrin.h>

#include "codecs/gk_quant_impl.h"
#include "gemmkit/gk_codecs.h"

int gk_f32_range_avx2(const float *src, size_t n, float *lo, float *hi)
{
    const __m256 big = _mm256_set1_ps(3.40282347e38f);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 l = _mm256_set1_ps(src[0]), h = l, ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(src + i);
        ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(x, absmask), big, _CMP_LE_OQ));
        l = _mm256_min_ps(l, x);
        h = _mm256_max_ps(h, x);
    }
    float lv[8], hv[8];
    int good = _mm256_movemask_ps(ok) == 0xff;
    _mm256_storeu_ps(lv, l);
    _mm256_storeu_ps(hv, h);
    float l0 = lv[0], h0 = hv[0];
    for (int k = 1; k < 8; k++) {
        l0 = lv[k] < l0 ? lv[k] : l0;
        h0 = hv[k] > h0 ? hv[k] : h0;
    }
    if (i < n) {
        float lt, ht;
        good &= gk_f32_range_scalar(src + i, n - i, &lt, &ht);
        l0 = lt < l0 ? lt : l0;
        h0 = ht > h0 ? ht : h0;
    }
    if (good) { /* the scalar's choice among equal zeros (else lo, hi unspecified) */
        if (l0 == 0.0f)
            l0 = gk_f32_first_equal(src, n, l0);
        if (h0 == 0.0f)
            h0 = gk_f32_first_equal(src, n, h0);
    }
    *lo = l0;
    *hi = h0;
    return good;
}

static inline __m128i quantize8(__m256 x, __m256 scale, __m256 zp)
{
    const __m256 r = _mm256_round_ps(_mm256_div_ps(x, scale),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 v = _mm256_add_ps(r, zp);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    const __m256i w = _mm256_cvttps_epi32(v); /* integral, in [0, 255] */
    const __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_packus_epi16(p, p);
}

void gk_quantize_u8_n_avx2(const float *src, uint8_t *dst, size_t n, float scale, float zp)
{
    const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zp);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storel_epi64((__m128i *)(dst + i), quantize8(_mm256_loadu_ps(src + i), s, z));
    gk_quantize_u8_n_scalar(src + i, dst + i, n - i, scale, zp);
}

void gk_i32_scale_n_avx2(const int32_t *acc, float *dst, size_t n, size_t ncols,
                         const float *scale, int scale_per_col, const float *bias)
{
    const __m256 s0 = _mm256_set1_ps(scale[0]);
    for (size_t i = 0; i < n; i += ncols) {
        size_t j = 0;
        for (; j + 8 <= ncols; j += 8) {
            __m256 v = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(acc + i + j)));
            v = _mm256_mul_ps(v, scale_per_col ? _mm256_loadu_ps(scale + j) : s0);
            if (bias != NULL) /* a NaN product stays (the scalar's pinned NaN choice) */
                v = _mm256_blendv_ps(_mm256_add_ps(v, _mm256_loadu_ps(bias + j)), v,
                                     _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            _mm256_storeu_ps(dst + i + j, v);
        }
        if (j < ncols) /* the row's tail: one row of ncols - j columns */
            gk_i32_scale_n_scalar(acc + i + j, dst + i + j, ncols - j, ncols - j,
                                  scale + (scale_per_col ? j : 0), scale_per_col,
                                  bias != NULL ? bias + j : NULL);
    }
}
