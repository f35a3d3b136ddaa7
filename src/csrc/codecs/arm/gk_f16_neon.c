/* Bulk float16/bfloat16 <-> float32 with ARM64 AdvSIMD (group neon, baseline on AArch64: the
 * gk_codecs_neon family, defined here).
 *
 * Each function is bit-identical to the scalar inline conversion in gk_codecs.h for every
 * input, NaN included:
 *   f16 -> f32  FCVTL: exact; NaN keeps sign and payload and is quieted (FPConvertNaN puts
 *               the half's 9 payload bits below a set quiet bit), as gk_f16_to_f32.
 *   f32 -> f16  FCVTN, round to nearest even; NaN keeps sign and the top 9 payload bits
 *               with the quiet bit set, as gk_f32_to_f16.
 *   Both only under the default FPCR (gk_fpcr_is_default, checked once per call): a
 *   rounding mode, FZ/FZ16 (subnormals flushed), DN (NaN payload dropped) or AHP
 *   (alternative half format) would change the result, so such a call runs the scalar
 *   loop instead.
 *   bf16 -> f32 a 16-bit widening shift (exact, NaN bits unchanged).
 *   f32 -> bf16 integer RNE on the top half; NaN -> top half with the quiet bit set.
 * The bfloat16 forms are integer only: FPCR changes nothing.
 * Tails (n % 8 elements) use the scalar inline forms; nothing is read or written past n. */
#include <arm_neon.h>

#include "codecs/gk_codecs_impl.h"
#include "codecs/gk_quant_impl.h"

static void gk_f16_to_f32_n_neon(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    if (gk_fpcr_is_default()) {
        for (; i + 8 <= n; i += 8) {
            const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(src + i));
            vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
            vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
        }
    }
    for (; i < n; i++)
        dst[i] = gk_f16_to_f32(src[i]);
}

static void gk_f32_to_f16_n_neon(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    if (gk_fpcr_is_default()) {
        for (; i + 8 <= n; i += 8) {
            const float16x4_t lo = vcvt_f16_f32(vld1q_f32(src + i));
            const float16x8_t h = vcvt_high_f16_f32(lo, vld1q_f32(src + i + 4));
            vst1q_u16(dst + i, vreinterpretq_u16_f16(h));
        }
    }
    for (; i < n; i++)
        dst[i] = gk_f32_to_f16(src[i]);
}

static void gk_bf16_to_f32_n_neon(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x8_t h = vld1q_u16(src + i);
        vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)));
        vst1q_f32(dst + i + 4, vreinterpretq_f32_u32(vshll_high_n_u16(h, 16)));
    }
    for (; i < n; i++)
        dst[i] = gk_bf16_to_f32(src[i]);
}

/* 4 floats (as bits) -> 4 bfloat16 codes.  Non-NaN: (u + 0x7fff + lsb) >> 16 with lsb =
 * bit 16 of u; u <= 0xff800000 for non-NaN, so the 32-bit sum does not wrap and its high
 * half is the rounded code (+inf stays +inf, the largest finite values round to inf). */
GK_ALWAYS_INLINE uint16x4_t gk_f32_to_bf16_x4_neon(uint32x4_t u)
{
    const uint32x4_t is_nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)),
                                        vdupq_n_u32(0x7f800000u));
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    const uint16x4_t rounded = vaddhn_u32(u, vaddq_u32(lsb, vdupq_n_u32(0x7fffu)));
    const uint16x4_t nan = vorr_u16(vshrn_n_u32(u, 16), vdup_n_u16(0x40));
    return vbsl_u16(vmovn_u32(is_nan), nan, rounded);
}

static void gk_f32_to_bf16_n_neon(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x4_t a = gk_f32_to_bf16_x4_neon(vld1q_u32((const uint32_t *)(src + i)));
        const uint16x4_t b = gk_f32_to_bf16_x4_neon(vld1q_u32((const uint32_t *)(src + i + 4)));
        vst1q_u16(dst + i, vcombine_u16(a, b));
    }
    for (; i < n; i++)
        dst[i] = gk_f32_to_bf16(src[i]);
}

const gk_codecs_kernel gk_codecs_neon = {
    "neon",
    gk_f16_to_f32_n_neon,
    gk_f32_to_f16_n_neon,
    gk_bf16_to_f32_n_neon,
    gk_f32_to_bf16_n_neon,
    gk_fp8_to_f32_n_neon, /* gk_fp8_neon.c */
    gk_f32_to_fp8_n_neon,
    gk_f32_range_neon, /* gk_quant_neon.c */
    gk_quantize_u8_n_neon,
    gk_i32_scale_n_neon,
    gk_f64_to_f32_n_neon, /* gk_f64_neon.c */
    gk_f32_to_f64_n_neon,
};
