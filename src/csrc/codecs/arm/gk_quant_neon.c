/* The contrib ops' loops on ARM64 AdvSIMD (group neon; contract in gemmkit/gk_codecs.h):
 * 4 lanes, each lane the scalar family's operation sequence, so the bits equal
 * gk_quant_scalar.c's.  AArch64 AdvSIMD arithmetic obeys FPCR exactly as the scalar
 * instructions do (rounding mode, FZ, DN), and every operation here is the vector form of
 * the one the scalar loop compiles to: FDIV, FRINTX (rintf: the current rounding mode),
 * FADD, FMUL, SCVTF, compares.  So the results equal the scalar family's under any FPCR,
 * not only the default one.  No fused multiply-add (vfmaq): the contract rounds the
 * product and the sum separately.  Tails through the scalar loops. */
#include <arm_neon.h>

#include "codecs/gk_quant_impl.h"
#include "core/gk_compiler.h"
#include "gemmkit/gk_codecs.h"

/* gk_f32_first_equal (gk_quant_impl.h) with the stretch before the match skipped 4 at a
 * time: the result is the first element comparing equal to v, which exists in [0, n). */
static float gk_first_equal_neon(const float *src, size_t n, float v)
{
    const float32x4_t vv = vdupq_n_f32(v);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        if (vmaxvq_u32(vceqq_f32(vld1q_f32(src + i), vv)) != 0u)
            break;
    return gk_f32_first_equal(src + i, n - i, v);
}

int gk_f32_range_neon(const float *src, size_t n, float *lo, float *hi)
{
    const float32x4_t big = vdupq_n_f32(3.40282347e38f);
    float32x4_t l0 = vdupq_n_f32(src[0]), l1 = l0, l2 = l0, l3 = l0;
    float32x4_t h0 = l0, h1 = l0, h2 = l0, h3 = l0;
    uint32x4_t ok = vdupq_n_u32(0xffffffffu);
    size_t i = 0;
    int good;
    float lv, hv;
    /* four independent chains: FMIN/FMAX latency, not loads, would bound one */
    for (; i + 16 <= n; i += 16) {
        const float32x4_t x0 = vld1q_f32(src + i), x1 = vld1q_f32(src + i + 4);
        const float32x4_t x2 = vld1q_f32(src + i + 8), x3 = vld1q_f32(src + i + 12);
        /* |x| <= FLT_MAX: false for NaN and +-inf */
        ok = vandq_u32(ok, vandq_u32(vandq_u32(vcaleq_f32(x0, big), vcaleq_f32(x1, big)),
                                     vandq_u32(vcaleq_f32(x2, big), vcaleq_f32(x3, big))));
        l0 = vminq_f32(l0, x0);
        l1 = vminq_f32(l1, x1);
        l2 = vminq_f32(l2, x2);
        l3 = vminq_f32(l3, x3);
        h0 = vmaxq_f32(h0, x0);
        h1 = vmaxq_f32(h1, x1);
        h2 = vmaxq_f32(h2, x2);
        h3 = vmaxq_f32(h3, x3);
    }
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vld1q_f32(src + i);
        ok = vandq_u32(ok, vcaleq_f32(x, big));
        l0 = vminq_f32(l0, x);
        h0 = vmaxq_f32(h0, x);
    }
    good = vminvq_u32(ok) != 0u;
    lv = vminvq_f32(vminq_f32(vminq_f32(l0, l1), vminq_f32(l2, l3)));
    hv = vmaxvq_f32(vmaxq_f32(vmaxq_f32(h0, h1), vmaxq_f32(h2, h3)));
    if (i < n) {
        float lt, ht;
        good &= gk_f32_range_scalar(src + i, n - i, &lt, &ht);
        lv = lt < lv ? lt : lv;
        hv = ht > hv ? ht : hv;
    }
    if (good) { /* the scalar's choice among equal zeros (else lo, hi unspecified) */
        if (lv == 0.0f)
            lv = gk_first_equal_neon(src, n, lv);
        if (hv == 0.0f)
            hv = gk_first_equal_neon(src, n, hv);
    }
    *lo = lv;
    *hi = hv;
    return good;
}

/* dst = clamp(rint(x / scale) + zp, 0, 255): FDIV, FRINTX, FADD as the scalar's; x finite
 * and scale > 0 make v a non-NaN (possibly infinite) value, so FMAX/FMIN clamp as the
 * scalar's compares do (a -0 result converts to 0 either way), and FCVTZU of the integral
 * v in [0, 255] is exact. */
GK_ALWAYS_INLINE uint32x4_t gk_quantize_x4_neon(float32x4_t x, float32x4_t scale, float32x4_t zp)
{
    float32x4_t v = vaddq_f32(vrndxq_f32(vdivq_f32(x, scale)), zp);
    v = vminq_f32(vmaxq_f32(v, vdupq_n_f32(0.0f)), vdupq_n_f32(255.0f));
    return vcvtq_u32_f32(v);
}

void gk_quantize_u8_n_neon(const float *src, uint8_t *dst, size_t n, float scale, float zp)
{
    const float32x4_t s = vdupq_n_f32(scale), z = vdupq_n_f32(zp);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        /* lanes hold values <= 255: both narrowing moves are exact */
        const uint16x8_t w = vcombine_u16(vmovn_u32(gk_quantize_x4_neon(vld1q_f32(src + i), s, z)),
                                          vmovn_u32(gk_quantize_x4_neon(vld1q_f32(src + i + 4), s, z)));
        vst1_u8(dst + i, vmovn_u16(w));
    }
    gk_quantize_u8_n_scalar(src + i, dst + i, n - i, scale, zp);
}

void gk_i32_scale_n_neon(const int32_t *acc, float *dst, size_t n, size_t ncols,
                         const float *scale, int scale_per_col, const float *bias)
{
    const float32x4_t s0 = vdupq_n_f32(scale[0]);
    for (size_t i = 0; i < n; i += ncols) {
        size_t j = 0;
        for (; j + 4 <= ncols; j += 4) {
            float32x4_t v = vcvtq_f32_s32(vld1q_s32(acc + i + j));
            v = vmulq_f32(v, scale_per_col ? vld1q_f32(scale + j) : s0);
            if (bias != NULL) /* a NaN product stays (the scalar's pinned NaN choice) */
                v = vbslq_f32(vceqq_f32(v, v), vaddq_f32(v, vld1q_f32(bias + j)), v);
            vst1q_f32(dst + i + j, v);
        }
        if (j < ncols) /* the row's tail: one row of ncols - j columns */
            gk_i32_scale_n_scalar(acc + i + j, dst + i + j, ncols - j, ncols - j,
                                  scale + (scale_per_col ? j : 0), scale_per_col,
                                  bias != NULL ? bias + j : NULL);
    }
}
