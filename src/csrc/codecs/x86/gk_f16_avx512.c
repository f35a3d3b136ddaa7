/* Bulk float16/bfloat16 <-> float32 with AVX-512, and the gk_codecs_avx512 family.  The
 * code needs only AVX-512 F, BW and VL (F16C's conversions exist at 512 bits in AVX-512F);
 * it is built in the avx512 group and runs from that level up.
 *
 * Bit-identical to the scalar family for every input, for the reasons given in
 * gk_f16_avx2.c (vcvtph2ps / vcvtps2ph with an explicit RNE immediate; bfloat16 in integer
 * lanes).  Tails run the vector code under a lane mask. */
#include <immintrin.h>

#include "codecs/gk_codecs_impl.h"
#include "codecs/gk_quant_impl.h"

GK_ALWAYS_INLINE __mmask16 gk_tail_mask16(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

static void gk_f16_to_f32_n_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
        _mm512_storeu_ps(dst + i + 16,
                         _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i + 16))));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = gk_tail_mask16(n - i);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

static void gk_f32_to_f16_n_avx512(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
        _mm256_storeu_si256((__m256i *)(dst + i + 16),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i + 16), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = gk_tail_mask16(n - i);
        _mm256_mask_storeu_epi16(dst + i, m,
                                 _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT));
    }
}

static void gk_bf16_to_f32_n_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i a = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m512i b = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i + 16)));
        _mm512_storeu_si512(dst + i, _mm512_slli_epi32(a, 16));
        _mm512_storeu_si512(dst + i + 16, _mm512_slli_epi32(b, 16));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = gk_tail_mask16(n - i);
        __m512i a = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + i));
        _mm512_mask_storeu_epi32(dst + i, m, _mm512_slli_epi32(a, 16));
    }
}

/* 16 floats -> 16 bfloat16 codes in the low halves of 32-bit lanes: as gk_f32_to_bf16_x8_avx2
 * (non-NaN: (u + 0x7fff + lsb) >> 16 cannot wrap, u <= 0xff800000 there). */
GK_ALWAYS_INLINE __m512i gk_f32_to_bf16_x16_avx512(__m512i u)
{
    const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    return _mm512_mask_or_epi32(rounded, is_nan, hi, _mm512_set1_epi32(0x40));
}

static void gk_f32_to_bf16_n_avx512(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        /* each source vector loaded once: gcc folded it into three instructions, and
         * with 4M elements (24 MB moved) that ran at 0.65x the rate (Zen 5) */
        __m512i ua = _mm512_loadu_si512(src + i), ub = _mm512_loadu_si512(src + i + 16);
        GK_KEEP_IN_REG(ua);
        GK_KEEP_IN_REG(ub);
        __m512i a = gk_f32_to_bf16_x16_avx512(ua);
        __m512i b = gk_f32_to_bf16_x16_avx512(ub);
        _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtepi32_epi16(a));
        _mm256_storeu_si256((__m256i *)(dst + i + 16), _mm512_cvtepi32_epi16(b));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = gk_tail_mask16(n - i);
        __m512i a = gk_f32_to_bf16_x16_avx512(_mm512_maskz_loadu_epi32(m, src + i));
        _mm512_mask_cvtepi32_storeu_epi16(dst + i, m, a);
    }
}

const gk_codecs_kernel gk_codecs_avx512 = {
    "avx512",
    gk_f16_to_f32_n_avx512,
    gk_f32_to_f16_n_avx512,
    gk_bf16_to_f32_n_avx512,
    gk_f32_to_bf16_n_avx512,
    gk_fp8_to_f32_n_avx512, /* gk_fp8_avx512.c */
    gk_f32_to_fp8_n_avx512,
    gk_f32_range_avx512, /* gk_quant_avx512.c */
    gk_quantize_u8_n_avx512,
    gk_i32_scale_n_avx512,
    gk_f64_to_f32_n_avx512, /* gk_f64_avx512.c */
    gk_f32_to_f64_n_avx512,
};
