/* float8 <-> float32 with ARM64 AdvSIMD (group neon; the gk_codecs_neon family,
 * gk_f16_neon.c).
 *
 * Bit-identical to the scalar family for every input: the encoder is gk_fp8_encode_f32_p
 * (codecs/gk_codecs_impl.h) done in 32-bit integer lanes, the decoder computes the exact
 * table value.  Neither depends on FPCR: the encoder is integer only; the decoder's float
 * operations are UCVTF of an integer below 2^3 (exact) and its product by a normal power
 * of two, which is a normal float32, so no rounding mode, FZ or DN setting can change it.
 * Tails (fewer than 16 elements) use the scalar forms; nothing is read or written past n. */
#include <arm_neon.h>

#include "codecs/gk_codecs_impl.h"

/* 4 floats (as bits) -> 4 float8 codes, one per 32-bit lane (the rest of the lane zero).
 * Every lane computes gk_fp8_encode_f32_p's two candidates in one form:
 *   normal lanes (a >= 2^(1-bias)): x = a rebiased, sh = s (20 or 21);
 *   subnormal lanes: x = the 24-bit significand, sh = s + e_min - e in [s+1, 31] (clamped:
 *   from 25 on the result is 0 either way);
 * code = (x + 2^(sh-1) - 1 + bit sh of x) >> sh is x / 2^sh rounded to nearest even.
 * Bounds: a < 2^31, so x + 2^30 < 2^32 does not wrap; USHL by -sh is a right shift by sh
 * (1 <= sh <= 31, all shift counts in range). */
GK_ALWAYS_INLINE uint32x4_t gk_f32_to_fp8_x4_neon(uint32x4_t u, gk_fp8_params p, int saturate)
{
    const uint32_t s = 23u - p.mbits;
    const uint32_t emin = (uint32_t)(128 - p.bias); /* f32 exponent field of the fp8 min normal */
    const uint32x4_t one = vdupq_n_u32(1);
    const uint32x4_t a = vandq_u32(u, vdupq_n_u32(0x7fffffffu));
    const uint32x4_t sign = vandq_u32(vshrq_n_u32(u, 24), vdupq_n_u32(0x80));
    const uint32x4_t is_sub = vcltq_u32(a, vdupq_n_u32(emin << 23));
    /* no wrap where selected: non-subnormal lanes have a >= emin << 23 > the rebias */
    const uint32x4_t r = vsubq_u32(a, vdupq_n_u32((uint32_t)(127 - p.bias) << 23));
    const uint32x4_t full = vorrq_u32(vandq_u32(a, vdupq_n_u32(0x7fffffu)), vdupq_n_u32(0x800000u));
    /* >= s + 1 in subnormal lanes (e <= emin - 1); other lanes may wrap, not selected */
    const uint32x4_t shv = vminq_u32(vsubq_u32(vdupq_n_u32(s + emin), vshrq_n_u32(a, 23)),
                                     vdupq_n_u32(31));
    const uint32x4_t x = vbslq_u32(is_sub, full, r);
    const uint32x4_t sh = vbslq_u32(is_sub, shv, vdupq_n_u32(s));
    const int32x4_t neg_sh = vnegq_s32(vreinterpretq_s32_u32(sh));
    const uint32x4_t half_m1 =
        vsubq_u32(vshlq_u32(one, vreinterpretq_s32_u32(vsubq_u32(sh, one))), one);
    const uint32x4_t lsb = vandq_u32(vshlq_u32(x, neg_sh), one);
    const uint32x4_t code = vshlq_u32(vaddq_u32(vaddq_u32(x, half_m1), lsb), neg_sh);
    /* inf/NaN rebiased exceed every max_mag, so `ovf` covers them; NaN is then refined */
    const uint32x4_t ovf = vcgtq_u32(code, vdupq_n_u32(p.max_mag));
    const uint32x4_t nan = vcgtq_u32(a, vdupq_n_u32(0x7f800000u));
    const uint32x4_t sgn_nan = p.fnuz ? vdupq_n_u32(0) : sign;
    uint32x4_t res, ovf_val;
    if (p.fnuz) /* no -0: a zero code drops the sign */
        res = vorrq_u32(code, vbicq_u32(sign, vceqq_u32(code, vdupq_n_u32(0))));
    else
        res = vorrq_u32(code, sign);
    ovf_val = saturate ? vorrq_u32(sign, vdupq_n_u32(p.max_mag))
                       : vorrq_u32(sgn_nan, vdupq_n_u32(p.ovf));
    res = vbslq_u32(ovf, ovf_val, res);
    return vbslq_u32(nan, vorrq_u32(sgn_nan, vdupq_n_u32(p.nan)), res);
}

GK_ALWAYS_INLINE void gk_f32_to_fp8_loop_neon(const float *src, uint8_t *dst, size_t n,
                                              gk_fp8_params p, int saturate)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint32_t *s = (const uint32_t *)(src + i);
        /* lanes hold codes <= 0xff: both narrowing moves are exact */
        const uint16x8_t lo = vcombine_u16(vmovn_u32(gk_f32_to_fp8_x4_neon(vld1q_u32(s), p, saturate)),
                                           vmovn_u32(gk_f32_to_fp8_x4_neon(vld1q_u32(s + 4), p, saturate)));
        const uint16x8_t hi = vcombine_u16(vmovn_u32(gk_f32_to_fp8_x4_neon(vld1q_u32(s + 8), p, saturate)),
                                           vmovn_u32(gk_f32_to_fp8_x4_neon(vld1q_u32(s + 12), p, saturate)));
        vst1q_u8(dst + i, vcombine_u8(vmovn_u16(lo), vmovn_u16(hi)));
    }
    for (; i < n; i++)
        dst[i] = gk_fp8_encode_f32_p(src[i], p, saturate);
}

void gk_f32_to_fp8_n_neon(const float *src, uint8_t *dst, size_t n, int fmt, int saturate)
{
    switch (fmt) {
    case GK_F8E4M3FN: gk_f32_to_fp8_loop_neon(src, dst, n, gk_fp8_params_of(GK_F8E4M3FN), saturate); break;
    case GK_F8E4M3FNUZ: gk_f32_to_fp8_loop_neon(src, dst, n, gk_fp8_params_of(GK_F8E4M3FNUZ), saturate); break;
    case GK_F8E5M2: gk_f32_to_fp8_loop_neon(src, dst, n, gk_fp8_params_of(GK_F8E5M2), saturate); break;
    default: gk_f32_to_fp8_loop_neon(src, dst, n, gk_fp8_params_of(GK_F8E5M2FNUZ), saturate); break;
    }
}

/* 4 codes (zero-extended to 32-bit lanes) -> 4 floats, the gk_fp8_decode_table values:
 *   exponent field e > 0: the code's e.m bits moved to float32's position and rebiased;
 *   e == 0: m * 2^(1-bias-M), m < 8 converted exactly, the product a normal float32
 *   (>= 2^-17 for m >= 1; +0 for m == 0);
 *   NaN codes: 0x7fc00000 (the C NAN) with the code's sign; E5M2's inf codes: inf. */
GK_ALWAYS_INLINE float32x4_t gk_fp8_to_f32_x4_neon(uint32x4_t c, int fmt)
{
    const gk_fp8_params p = gk_fp8_params_of(fmt);
    const int M = (int)p.mbits;
    const uint32x4_t mag = vandq_u32(c, vdupq_n_u32(0x7f));
    const uint32x4_t sign = vshlq_n_u32(vandq_u32(c, vdupq_n_u32(0x80)), 24);
    const uint32x4_t normal = vaddq_u32(vshlq_u32(mag, vdupq_n_s32(23 - M)),
                                        vdupq_n_u32((uint32_t)(127 - p.bias) << 23));
    const float32x4_t sub = vmulq_f32(vcvtq_f32_u32(mag),
                                      vdupq_n_f32(gk_bits_to_f32((uint32_t)(128 - p.bias - M) << 23)));
    const uint32x4_t is_sub = vcltq_u32(mag, vdupq_n_u32(1u << M));
    const uint32x4_t qnan = vdupq_n_u32(0x7fc00000u);
    uint32x4_t v = vbslq_u32(is_sub, vreinterpretq_u32_f32(sub), normal);
    if (fmt == GK_F8E4M3FN) {
        v = vbslq_u32(vceqq_u32(mag, vdupq_n_u32(0x7f)), qnan, v);
    } else if (fmt == GK_F8E5M2) {
        v = vbslq_u32(vceqq_u32(mag, vdupq_n_u32(0x7c)), vdupq_n_u32(0x7f800000u), v);
        v = vbslq_u32(vcgtq_u32(mag, vdupq_n_u32(0x7c)), qnan, v);
    } else { /* fnuz: only 0x80 */
        v = vbslq_u32(vceqq_u32(c, vdupq_n_u32(0x80)), qnan, v);
    }
    return vreinterpretq_f32_u32(vorrq_u32(v, sign));
}

GK_ALWAYS_INLINE void gk_fp8_to_f32_loop_neon(const uint8_t *src, float *dst, size_t n, int fmt)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint8x16_t b = vld1q_u8(src + i);
        const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_high_u8(b);
        vst1q_f32(dst + i, gk_fp8_to_f32_x4_neon(vmovl_u16(vget_low_u16(lo)), fmt));
        vst1q_f32(dst + i + 4, gk_fp8_to_f32_x4_neon(vmovl_high_u16(lo), fmt));
        vst1q_f32(dst + i + 8, gk_fp8_to_f32_x4_neon(vmovl_u16(vget_low_u16(hi)), fmt));
        vst1q_f32(dst + i + 12, gk_fp8_to_f32_x4_neon(vmovl_high_u16(hi), fmt));
    }
    for (; i < n; i++)
        dst[i] = gk_fp8_decode_table[fmt][src[i]];
}

void gk_fp8_to_f32_n_neon(const uint8_t *src, float *dst, size_t n, int fmt)
{
    switch (fmt) {
    case GK_F8E4M3FN: gk_fp8_to_f32_loop_neon(src, dst, n, GK_F8E4M3FN); break;
    case GK_F8E4M3FNUZ: gk_fp8_to_f32_loop_neon(src, dst, n, GK_F8E4M3FNUZ); break;
    case GK_F8E5M2: gk_fp8_to_f32_loop_neon(src, dst, n, GK_F8E5M2); break;
    default: gk_fp8_to_f32_loop_neon(src, dst, n, GK_F8E5M2FNUZ); break;
    }
}
