/* Bulk float16/bfloat16 <-> float32 with F16C and AVX2 (built with -mavx2 -mfma -mf16c; called
 * only where the dispatch found AVX2 and F16C: the gk_codecs_avx2 family).
 *
 * Each function is bit-identical to the scalar inline conversion in gk_codecs.h for every
 * input, NaN included:
 *   f16 -> f32  vcvtph2ps: exact; NaN keeps sign and payload and is quieted.
 *   f32 -> f16  vcvtps2ph, imm = round to nearest even (MXCSR not consulted): NaN keeps sign
 *               and the top 9 payload bits, quiet bit set.  MXCSR.DAZ, if someone set it,
 *               only affects float32 subnormal inputs, which round to +-0 either way.
 *   bf16 -> f32 a 16-bit shift (exact, NaN bits unchanged).
 *   f32 -> bf16 integer RNE on the top half; NaN -> top half with the quiet bit set.
 * Tails (n % 8 elements) use the scalar inline forms. */
#include "codecs/gk_codecs_impl.h"
#include "codecs/gk_quant_impl.h"

#include <immintrin.h>

static void gk_f16_to_f32_n_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++)
        dst[i] = gk_f16_to_f32(src[i]);
}

static void gk_f32_to_f16_n_avx2(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 f = _mm256_loadu_ps(src + i);
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++)
        dst[i] = gk_f32_to_f16(src[i]);
}

static void gk_bf16_to_f32_n_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(w, 16));
    }
    for (; i < n; i++)
        dst[i] = gk_bf16_to_f32(src[i]);
}

/* 8 floats -> 8 bfloat16 codes, each in the low half of a 32-bit lane (high half zero).
 * Non-NaN: (u + 0x7fff + lsb) >> 16 with lsb = bit 16 of u; the sum stays below 2^32
 * (u <= 0xff800000 for non-NaN), so the 32-bit add does not wrap. */
static inline __m256i gk_f32_to_bf16_x8_avx2(__m256i u)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf_bits = _mm256_set1_epi32(0x7f800000);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i bias = _mm256_set1_epi32(0x7fff);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    /* |u| as an int32 is non-negative, so the signed compare is the unsigned one */
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf_bits);
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i lsb = _mm256_and_si256(hi, one);
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
    __m256i nan = _mm256_or_si256(hi, quiet);
    return _mm256_blendv_epi8(rounded, nan, is_nan);
}

static void gk_f32_to_bf16_n_avx2(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = gk_f32_to_bf16_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m256i b = gk_f32_to_bf16_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i + 8)));
        /* lanes hold values <= 0xffff, so the unsigned-saturating pack is exact; it
         * interleaves 128-bit halves (a0 b0 a1 b1), the permute restores a0 a1 b0 b1 */
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
        _mm256_storeu_si256((__m256i *)(dst + i), packed);
    }
    if (i + 8 <= n) {
        __m256i a = gk_f32_to_bf16_x8_avx2(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(a),
                                          _mm256_extracti128_si256(a, 1));
        _mm_storeu_si128((__m128i *)(dst + i), packed);
        i += 8;
    }
    for (; i < n; i++)
        dst[i] = gk_f32_to_bf16(src[i]);
}

const gk_codecs_kernel gk_codecs_avx2 = {
    "avx2",
    gk_f16_to_f32_n_avx2,
    gk_f32_to_f16_n_avx2,
    gk_bf16_to_f32_n_avx2,
    gk_f32_to_bf16_n_avx2,
    gk_fp8_to_f32_n_avx2, /* gk_fp8_avx2.c */
    gk_f32_to_fp8_n_avx2,
    gk_f32_range_avx2, /* gk_quant_avx2.c */
    gk_quantize_u8_n_avx2,
    gk_i32_scale_n_avx2,
    gk_f64_to_f32_n_avx2, /* gk_f64_avx2.c */
    gk_f32_to_f64_n_avx2,
};
