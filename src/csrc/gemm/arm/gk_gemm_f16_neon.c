/* The float16 and bfloat16 Gemm families for ARM64 AdvSIMD (group neon): both operands
 * widened exactly to float32 while packing (float16: fcvtl; bfloat16: a 16-bit left shift
 * of its bits), then the float32 family's 8 x 12 kernel (gk_gemm_f32_neon.c) and the
 * generic epilogue, which rounds Y once (RNE) to the 16-bit type.  No arithmetic happens
 * in 16 bits: the sums are float32 sums of exact products' roundings, as in the scalar
 * oracle (within the fused-multiply-add bound).  Cache blocks as the float32 family's
 * (the panels are float32). */
#include <arm_neon.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/arm/gk_gemm_neon.h"
#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_gemm.h"

/* 4 consecutive 16-bit elements at p (any alignment: a byte load) widened to float32;
 * both conversions are exact (every float16 / bfloat16 value is a float32 value). */
GK_ALWAYS_INLINE float32x4_t widen4_f16(const char *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8((const uint8_t *)p)));
}
GK_ALWAYS_INLINE float32x4_t widen4_bf16(const char *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8((const uint8_t *)p)), 16));
}
GK_ALWAYS_INLINE float widen1_f16(const char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return gk_f16_to_f32(h);
}
GK_ALWAYS_INLINE float widen1_bf16(const char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return gk_bf16_to_f32(h);
}

/* One panel: d[k*w + j] = element (k, j) widened, for k < kc, j < n (n <= w), and 0 for
 * n <= j < w; element (k, j) at p + k*ks + j*js bytes.  Vectorised along whichever
 * direction is contiguous (j: B' row-major / A' column-major; k: A' row-major / B'
 * column-major).  Only addresses of real elements are formed. */
#define GK_DEFINE_PACK_PANEL(NAME, WIDEN4, WIDEN1)                                          \
    static void NAME(const char *p, ptrdiff_t ks, ptrdiff_t js, int kc, int n, int w,       \
                     float *d)                                                              \
    {                                                                                       \
        if (js == 2) {                                                                      \
            for (int k = 0; k < kc; k++) {                                                  \
                const char *s = p + (ptrdiff_t)k * ks;                                      \
                float *dk = d + (ptrdiff_t)k * w;                                           \
                int j = 0;                                                                  \
                for (; j + 4 <= n; j += 4)                                                  \
                    vst1q_f32(dk + j, WIDEN4(s + 2 * j));                                   \
                for (; j < n; j++)                                                          \
                    dk[j] = WIDEN1(s + 2 * j);                                              \
                for (; j < w; j++)                                                          \
                    dk[j] = 0.0f;                                                           \
            }                                                                               \
            return;                                                                         \
        }                                                                                   \
        for (int j = 0; j < n; j++) {                                                       \
            const char *s = p + (ptrdiff_t)j * js;                                          \
            int k = 0;                                                                      \
            if (ks == 2)                                                                    \
                for (; k + 4 <= kc; k += 4) {                                               \
                    const float32x4_t v = WIDEN4(s + 2 * k);                                \
                    float *dk = d + (ptrdiff_t)k * w + j;                                   \
                    vst1q_lane_f32(dk, v, 0);                                               \
                    vst1q_lane_f32(dk + w, v, 1);                                           \
                    vst1q_lane_f32(dk + 2 * w, v, 2);                                       \
                    vst1q_lane_f32(dk + 3 * w, v, 3);                                       \
                }                                                                           \
            for (; k < kc; k++)                                                             \
                d[(ptrdiff_t)k * w + j] = WIDEN1(s + (ptrdiff_t)k * ks);                    \
        }                                                                                   \
        for (int k = 0; n < w && k < kc; k++)                                               \
            for (int j = n; j < w; j++)                                                     \
                d[(ptrdiff_t)k * w + j] = 0.0f;                                             \
    }

/* The standard panel layout (gk_gemm.h): A panels of mr rows (k*mr + i), B panels of nr
 * columns (k*nr + j), float32. */
#define GK_DEFINE_PACKERS(T)                                                                \
    GK_DEFINE_PACK_PANEL(pack_panel_##T, widen4_##T, widen1_##T)                            \
    static void pack_a_##T(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,        \
                           int kc, int mr, void *dst)                                       \
    {                                                                                       \
        float *d = (float *)dst;                                                            \
        for (int p0 = 0; p0 < mc; p0 += mr, d += (ptrdiff_t)kc * mr)                        \
            pack_panel_##T(a->p + (i0 + p0) * a->rs + k0 * a->cs, a->cs, a->rs, kc,         \
                           mc - p0 < mr ? mc - p0 : mr, mr, d);                             \
    }                                                                                       \
    static void pack_b_##T(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,        \
                           int nc, int nr, void *dst)                                       \
    {                                                                                       \
        float *d = (float *)dst;                                                            \
        for (int q0 = 0; q0 < nc; q0 += nr, d += (ptrdiff_t)kc * nr)                        \
            pack_panel_##T(b->p + k0 * b->rs + (j0 + q0) * b->cs, b->rs, b->cs, kc,         \
                           nc - q0 < nr ? nc - q0 : nr, nr, d);                             \
    }
GK_DEFINE_PACKERS(f16)
GK_DEFINE_PACKERS(bf16)

const gk_gemm_kernel gk_gemm_f16_neon = {
    "neon", GK_DT_F16, GK_ACC_F32, 8, 12, 128, 256, 1536,
    pack_a_f16, pack_b_f16, gk_gemm_f32_neon_8x12_ukernel,
    gk_gemm_epilogue_f16,
    1, /* cache_blocks */
    gk_gemm_f32_neon_8x12_ukernel_rounded,
    NULL, /* ukernel_ldb: B' is 16-bit, always packed */
    0,       /* pack_esz: panels of accumulators */
};
const gk_gemm_kernel gk_gemm_bf16_neon = {
    "neon", GK_DT_BF16, GK_ACC_F32, 8, 12, 128, 256, 1536,
    pack_a_bf16, pack_b_bf16, gk_gemm_f32_neon_8x12_ukernel,
    gk_gemm_epilogue_bf16,
    1, /* cache_blocks */
    gk_gemm_f32_neon_8x12_ukernel_rounded,
    NULL, /* ukernel_ldb: B' is 16-bit, always packed */
    0,       /* pack_esz: panels of accumulators */
};
