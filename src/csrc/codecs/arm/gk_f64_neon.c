/* float64 <-> float32 for gemmkit.cast with ARM64 AdvSIMD (group neon; the gk_codecs_neon
 * family, gk_f16_neon.c): FCVTN / FCVTXN / FCVTL, only under the default FPCR
 * (gk_fpcr_is_default; else 0 is returned and nothing written), where they are the IEEE
 * conversions bit for bit:
 *   FCVTN   round to nearest even; beyond the float32 range inf; subnormal results
 *           rounded, not flushed.
 *   FCVTXN  round to odd (the Armv8.0 instruction: toward zero, then the last bit set
 *           where inexact); overflow gives FLT_MAX, not inf (FPRoundBase: no overflow to
 *           infinity for FPRounding_ODD), +-inf stays +-inf -- gk_codecs_kernel's round to
 *           odd exactly.
 *   FCVTL   exact.
 * NaN in all three: FPConvertNaN quiets it and keeps its sign and the top payload bits
 * that fit (DN off), what gk_f64_to_f32_bits and the scalar widening compute.
 * Tails (n % 4) use the scalar instructions of the same operations (FCVT, FCVTXN scalar):
 * nothing is read or written past n. */
#include <arm_neon.h>

#include "codecs/gk_codecs_impl.h"

int gk_f64_to_f32_n_neon(const double *src, float *dst, size_t n, int odd)
{
    size_t i = 0;
    if (!gk_fpcr_is_default())
        return 0;
    if (odd) {
        for (; i + 4 <= n; i += 4) {
            const float32x2_t a = vcvtx_f32_f64(vld1q_f64(src + i));
            vst1q_f32(dst + i, vcvtx_high_f32_f64(a, vld1q_f64(src + i + 2)));
        }
        for (; i < n; i++)
            dst[i] = vcvtxd_f32_f64(src[i]);
    } else {
        for (; i + 4 <= n; i += 4) {
            const float32x2_t a = vcvt_f32_f64(vld1q_f64(src + i));
            vst1q_f32(dst + i, vcvt_high_f32_f64(a, vld1q_f64(src + i + 2)));
        }
        for (; i < n; i++)
            dst[i] = (float)src[i]; /* FCVT: the same rounding, one element */
    }
    return 1;
}

int gk_f32_to_f64_n_neon(const float *src, double *dst, size_t n)
{
    size_t i = 0;
    if (!gk_fpcr_is_default())
        return 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vld1q_f32(src + i);
        vst1q_f64(dst + i, vcvt_f64_f32(vget_low_f32(x)));
        vst1q_f64(dst + i + 2, vcvt_high_f64_f32(x));
    }
    for (; i < n; i++)
        dst[i] = (double)src[i]; /* FCVT: exact, NaN as FCVTL */
    return 1;
}
