/* float8 <-> float32 with AVX-512.  The code needs only AVX-512 F, BW and VL; it is built in
 * the avx512 group and runs in the gk_codecs_avx512 family (gk_f16_avx512.c), from the
 * avx512 level of the dispatch up.
 *
 * The same computations as gk_fp8_avx2.c (see there for the bounds and why MXCSR cannot
 * change a result), 16 lanes wide with mask registers; tails run the vector code under a
 * lane mask (masked loads do not fault on the lanes left out), so every element goes
 * through the same instructions. */
#include <immintrin.h>

#include "codecs/gk_codecs_impl.h"

/* 16 floats (as bits) -> 16 codes in the low byte of each 32-bit lane. */
GK_ALWAYS_INLINE __m512i gk_f32_to_fp8_x16_avx512(__m512i u, gk_fp8_params p, int saturate)
{
    const int s = 23 - (int)p.mbits;
    const int emin = 128 - p.bias;
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
    const __mmask16 is_sub = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(emin << 23));
    const __m512i r = _mm512_sub_epi32(a, _mm512_set1_epi32((127 - p.bias) << 23));
    const __m512i full = _mm512_or_si512(_mm512_and_si512(a, _mm512_set1_epi32(0x7fffff)),
                                         _mm512_set1_epi32(0x800000));
    const __m512i shv = _mm512_min_epu32(
        _mm512_sub_epi32(_mm512_set1_epi32(s + emin), _mm512_srli_epi32(a, 23)),
        _mm512_set1_epi32(31));
    const __m512i x = _mm512_mask_blend_epi32(is_sub, r, full);
    const __m512i sh = _mm512_mask_blend_epi32(is_sub, _mm512_set1_epi32(s), shv);
    const __m512i half_m1 =
        _mm512_sub_epi32(_mm512_sllv_epi32(one, _mm512_sub_epi32(sh, one)), one);
    const __m512i lsb = _mm512_and_si512(_mm512_srlv_epi32(x, sh), one);
    const __m512i code =
        _mm512_srlv_epi32(_mm512_add_epi32(_mm512_add_epi32(x, half_m1), lsb), sh);
    const __mmask16 ovf = _mm512_cmpgt_epu32_mask(code, _mm512_set1_epi32((int)p.max_mag));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7f800000));
    const __m512i sgn_nan = p.fnuz ? _mm512_setzero_si512() : sign;
    __m512i res, ovf_val;
    if (p.fnuz) /* no -0: a zero code drops the sign */
        res = _mm512_mask_or_epi32(code, _mm512_test_epi32_mask(code, code), code, sign);
    else
        res = _mm512_or_si512(code, sign);
    ovf_val = saturate ? _mm512_or_si512(sign, _mm512_set1_epi32((int)p.max_mag))
                       : _mm512_or_si512(sgn_nan, _mm512_set1_epi32((int)p.ovf));
    res = _mm512_mask_mov_epi32(res, ovf, ovf_val);
    return _mm512_mask_mov_epi32(res, nan, _mm512_or_si512(sgn_nan, _mm512_set1_epi32((int)p.nan)));
}

GK_ALWAYS_INLINE void gk_f32_to_fp8_loop_avx512(const float *src, uint8_t *dst, size_t n,
                                                gk_fp8_params p, int saturate)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i c0 = gk_f32_to_fp8_x16_avx512(_mm512_loadu_si512(src + i), p, saturate);
        __m512i c1 = gk_f32_to_fp8_x16_avx512(_mm512_loadu_si512(src + i + 16), p, saturate);
        _mm_storeu_si128((__m128i *)(dst + i), _mm512_cvtepi32_epi8(c0));
        _mm_storeu_si128((__m128i *)(dst + i + 16), _mm512_cvtepi32_epi8(c1));
    }
    for (; i < n; i += 16) {
        const size_t left = n - i;
        const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
        __m512i c = gk_f32_to_fp8_x16_avx512(_mm512_maskz_loadu_epi32(m, src + i), p, saturate);
        _mm512_mask_cvtepi32_storeu_epi8(dst + i, m, c);
    }
}

void gk_f32_to_fp8_n_avx512(const float *src, uint8_t *dst, size_t n, int fmt, int saturate)
{
    switch (fmt) {
    case GK_F8E4M3FN: gk_f32_to_fp8_loop_avx512(src, dst, n, gk_fp8_params_of(GK_F8E4M3FN), saturate); break;
    case GK_F8E4M3FNUZ: gk_f32_to_fp8_loop_avx512(src, dst, n, gk_fp8_params_of(GK_F8E4M3FNUZ), saturate); break;
    case GK_F8E5M2: gk_f32_to_fp8_loop_avx512(src, dst, n, gk_fp8_params_of(GK_F8E5M2), saturate); break;
    default: gk_f32_to_fp8_loop_avx512(src, dst, n, gk_fp8_params_of(GK_F8E5M2FNUZ), saturate); break;
    }
}

/* 16 codes (zero-extended to 32-bit lanes) -> 16 floats, the gk_fp8_decode_table values. */
GK_ALWAYS_INLINE __m512 gk_fp8_to_f32_x16_avx512(__m512i c, int fmt)
{
    const gk_fp8_params p = gk_fp8_params_of(fmt);
    const int M = (int)p.mbits;
    const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi32(0x7f));
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 24);
    const __m512i normal = _mm512_add_epi32(_mm512_slli_epi32(mag, 23 - M),
                                            _mm512_set1_epi32((127 - p.bias) << 23));
    const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(mag),
                                     _mm512_set1_ps(gk_bits_to_f32((uint32_t)(128 - p.bias - M) << 23)));
    const __mmask16 is_sub = _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(1 << M));
    const __m512i qnan = _mm512_set1_epi32(0x7fc00000);
    __m512i v = _mm512_mask_blend_epi32(is_sub, normal, _mm512_castps_si512(sub));
    if (fmt == GK_F8E4M3FN) {
        v = _mm512_mask_mov_epi32(v, _mm512_cmpeq_epu32_mask(mag, _mm512_set1_epi32(0x7f)), qnan);
    } else if (fmt == GK_F8E5M2) {
        v = _mm512_mask_mov_epi32(v, _mm512_cmpeq_epu32_mask(mag, _mm512_set1_epi32(0x7c)),
                                  _mm512_set1_epi32(0x7f800000));
        v = _mm512_mask_mov_epi32(v, _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7c)), qnan);
    } else { /* fnuz: only 0x80 */
        v = _mm512_mask_mov_epi32(v, _mm512_cmpeq_epu32_mask(c, _mm512_set1_epi32(0x80)), qnan);
    }
    return _mm512_castsi512_ps(_mm512_or_si512(v, sign));
}

GK_ALWAYS_INLINE void gk_fp8_to_f32_loop_avx512(const uint8_t *src, float *dst, size_t n, int fmt)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i c0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        __m512i c1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(src + i + 16)));
        _mm512_storeu_ps(dst + i, gk_fp8_to_f32_x16_avx512(c0, fmt));
        _mm512_storeu_ps(dst + i + 16, gk_fp8_to_f32_x16_avx512(c1, fmt));
    }
    for (; i < n; i += 16) {
        const size_t left = n - i;
        const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
        __m512i c = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, src + i));
        _mm512_mask_storeu_ps(dst + i, m, gk_fp8_to_f32_x16_avx512(c, fmt));
    }
}

void gk_fp8_to_f32_n_avx512(const uint8_t *src, float *dst, size_t n, int fmt)
{
    switch (fmt) {
    case GK_F8E4M3FN: gk_fp8_to_f32_loop_avx512(src, dst, n, GK_F8E4M3FN); break;
    case GK_F8E4M3FNUZ: gk_fp8_to_f32_loop_avx512(src, dst, n, GK_F8E4M3FNUZ); break;
    case GK_F8E5M2: gk_fp8_to_f32_loop_avx512(src, dst, n, GK_F8E5M2); break;
    default: gk_fp8_to_f32_loop_avx512(src, dst, n, GK_F8E5M2FNUZ); break;
    }
}
