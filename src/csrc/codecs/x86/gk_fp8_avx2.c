/* float8 <-> float32 with AVX2 (built with the avx2 group's flags; run only where the
 * dispatch found AVX2: the gk_codecs_avx2 family, gk_f16_avx2.c).
 *
 * Bit-identical to the scalar family for every input: the encoder is gk_fp8_encode_f32_p
 * (codecs/gk_codecs_impl.h) done in integer lanes, the decoder computes the exact table
 * value.  Neither depends on MXCSR: the encoder is integer only; the decoder's one float
 * operation multiplies an integer below 2^3 (converted exactly) by a normal power of two and
 * gives a normal result, so no rounding mode, DAZ or FTZ setting can change it.
 * Tails (fewer than a vector) use the scalar forms. */
#include <immintrin.h>

#include "codecs/gk_codecs_impl.h"

/* 8 floats (as bits) -> 8 float8 codes in the low byte of each 32-bit lane (rest zero).
 * Every lane computes gk_fp8_encode_f32_p's two candidates in one form:
 *   normal lanes (a >= 2^(1-bias)): x = a rebiased, sh = s (20 or 21);
 *   subnormal lanes: x = the 24-bit significand, sh = s + e_min - e in [s+1, 31] (clamped:
 *   from 25 on the result is 0 either way);
 * code = (x + 2^(sh-1) - 1 + bit sh of x) >> sh is x / 2^sh rounded to nearest even.
 * Bounds: a < 2^31, so x + 2^30 < 2^32 and every compare below may be signed. */
GK_ALWAYS_INLINE __m256i gk_f32_to_fp8_x8_avx2(__m256i u, gk_fp8_params p, int saturate)
{
    const int s = 23 - (int)p.mbits;
    const int emin = 128 - p.bias; /* float32 exponent field of the smallest fp8 normal */
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
    const __m256i is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(emin << 23), a);
    const __m256i r = _mm256_sub_epi32(a, _mm256_set1_epi32((127 - p.bias) << 23));
    const __m256i full = _mm256_or_si256(_mm256_and_si256(a, _mm256_set1_epi32(0x7fffff)),
                                         _mm256_set1_epi32(0x800000));
    /* for subnormal lanes e <= emin - 1, so this is >= s + 1; other lanes wrap or not, and
     * are not selected */
    const __m256i shv = _mm256_min_epu32(
        _mm256_sub_epi32(_mm256_set1_epi32(s + emin), _mm256_srli_epi32(a, 23)),
        _mm256_set1_epi32(31));
    const __m256i x = _mm256_blendv_epi8(r, full, is_sub);
    const __m256i sh = _mm256_blendv_epi8(_mm256_set1_epi32(s), shv, is_sub);
    const __m256i half_m1 =
        _mm256_sub_epi32(_mm256_sllv_epi32(one, _mm256_sub_epi32(sh, one)), one);
    const __m256i lsb = _mm256_and_si256(_mm256_srlv_epi32(x, sh), one);
    const __m256i code =
        _mm256_srlv_epi32(_mm256_add_epi32(_mm256_add_epi32(x, half_m1), lsb), sh);
    /* inf/NaN rebiased exceed every max_mag, so `ovf` covers them; NaN is then refined */
    const __m256i ovf = _mm256_cmpgt_epi32(code, _mm256_set1_epi32((int)p.max_mag));
    const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
    const __m256i sgn_nan = p.fnuz ? _mm256_setzero_si256() : sign;
    __m256i res, ovf_val;
    if (p.fnuz) /* no -0: a zero code drops the sign */
        res = _mm256_or_si256(code, _mm256_andnot_si256(
                                        _mm256_cmpeq_epi32(code, _mm256_setzero_si256()), sign));
    else
        res = _mm256_or_si256(code, sign);
    ovf_val = saturate ? _mm256_or_si256(sign, _mm256_set1_epi32((int)p.max_mag))
                       : _mm256_or_si256(sgn_nan, _mm256_set1_epi32((int)p.ovf));
    res = _mm256_blendv_epi8(res, ovf_val, ovf);
    return _mm256_blendv_epi8(res, _mm256_or_si256(sgn_nan, _mm256_set1_epi32((int)p.nan)), nan);
}

GK_ALWAYS_INLINE void gk_f32_to_fp8_loop_avx2(const float *src, uint8_t *dst, size_t n,
                                              gk_fp8_params p, int saturate)
{
    /* the byte order of packus (per 128-bit half) put back: dwords 0 4 1 5 2 6 3 7 */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i c0 = gk_f32_to_fp8_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i)), p, saturate);
        __m256i c1 = gk_f32_to_fp8_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i + 8)), p, saturate);
        __m256i c2 = gk_f32_to_fp8_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i + 16)), p, saturate);
        __m256i c3 = gk_f32_to_fp8_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i + 24)), p, saturate);
        /* lanes hold codes <= 0xff: both unsigned-saturating packs are exact */
        __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_permutevar8x32_epi32(b, order));
    }
    for (; i + 8 <= n; i += 8) {
        __m256i c = gk_f32_to_fp8_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i)), p, saturate);
        __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
        _mm_storel_epi64((__m128i *)(dst + i), _mm_packus_epi16(w, w));
    }
    for (; i < n; i++)
        dst[i] = gk_fp8_encode_f32_p(src[i], p, saturate);
}

void gk_f32_to_fp8_n_avx2(const float *src, uint8_t *dst, size_t n, int fmt, int saturate)
{
    switch (fmt) {
    case GK_F8E4M3FN: gk_f32_to_fp8_loop_avx2(src, dst, n, gk_fp8_params_of(GK_F8E4M3FN), saturate); break;
    case GK_F8E4M3FNUZ: gk_f32_to_fp8_loop_avx2(src, dst, n, gk_fp8_params_of(GK_F8E4M3FNUZ), saturate); break;
    case GK_F8E5M2: gk_f32_to_fp8_loop_avx2(src, dst, n, gk_fp8_params_of(GK_F8E5M2), saturate); break;
    default: gk_f32_to_fp8_loop_avx2(src, dst, n, gk_fp8_params_of(GK_F8E5M2FNUZ), saturate); break;
    }
}

/* 8 codes (zero-extended to 32-bit lanes) -> 8 floats, the gk_fp8_decode_table values:
 *   exponent field e > 0: the code's e.m bits moved to float32's position and rebiased;
 *   e == 0: m * 2^(1-bias-M), m < 8 converted exactly, the product a normal float32;
 *   NaN codes: 0x7fc00000 (the C NAN) with the code's sign; E5M2's inf codes: inf. */
GK_ALWAYS_INLINE __m256 gk_fp8_to_f32_x8_avx2(__m256i c, int fmt)
{
    const gk_fp8_params p = gk_fp8_params_of(fmt);
    const int M = (int)p.mbits;
    const __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32(0x7f));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
    const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(mag, 23 - M),
                                            _mm256_set1_epi32((127 - p.bias) << 23));
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(mag),
                                     _mm256_set1_ps(gk_bits_to_f32((uint32_t)(128 - p.bias - M) << 23)));
    const __m256i is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(1 << M), mag);
    const __m256i qnan = _mm256_set1_epi32(0x7fc00000);
    __m256i v = _mm256_blendv_epi8(normal, _mm256_castps_si256(sub), is_sub);
    if (fmt == GK_F8E4M3FN) {
        v = _mm256_blendv_epi8(v, qnan, _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    } else if (fmt == GK_F8E5M2) {
        v = _mm256_blendv_epi8(v, _mm256_set1_epi32(0x7f800000),
                               _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7c)));
        v = _mm256_blendv_epi8(v, qnan, _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7c)));
    } else { /* fnuz: only 0x80 */
        v = _mm256_blendv_epi8(v, qnan, _mm256_cmpeq_epi32(c, _mm256_set1_epi32(0x80)));
    }
    return _mm256_castsi256_ps(_mm256_or_si256(v, sign));
}

GK_ALWAYS_INLINE void gk_fp8_to_f32_loop_avx2(const uint8_t *src, float *dst, size_t n, int fmt)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i));
        _mm256_storeu_ps(dst + i, gk_fp8_to_f32_x8_avx2(_mm256_cvtepu8_epi32(b), fmt));
        _mm256_storeu_ps(dst + i + 8,
                         gk_fp8_to_f32_x8_avx2(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)), fmt));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, gk_fp8_to_f32_x8_avx2(
                                      _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(src + i))), fmt));
    for (; i < n; i++)
        dst[i] = gk_fp8_decode_table[fmt][src[i]];
}

void gk_fp8_to_f32_n_avx2(const uint8_t *src, float *dst, size_t n, int fmt)
{
    switch (fmt) {
    case GK_F8E4M3FN: gk_fp8_to_f32_loop_avx2(src, dst, n, GK_F8E4M3FN); break;
    case GK_F8E4M3FNUZ: gk_fp8_to_f32_loop_avx2(src, dst, n, GK_F8E4M3FNUZ); break;
    case GK_F8E5M2: gk_fp8_to_f32_loop_avx2(src, dst, n, GK_F8E5M2); break;
    default: gk_fp8_to_f32_loop_avx2(src, dst, n, GK_F8E5M2FNUZ); break;
    }
}
