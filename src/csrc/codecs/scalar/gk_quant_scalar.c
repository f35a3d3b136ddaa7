/* The contrib ops' loops, scalar (the oracle the SIMD families equal bit for bit; contract
 * in gemmkit/gk_codecs.h).  Built without auto-vectorisation, -ffp-contract=off: every
 * operation is one IEEE float32 operation rounded to nearest even. */
#include <math.h>

#include "gemmkit/gk_codecs.h"
#include "codecs/gk_quant_impl.h"

int gk_f32_range_scalar(const float *src, size_t n, float *lo, float *hi)
{
    float l = src[0], h = src[0];
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        const float x = src[i];
        ok &= fabsf(x) <= 3.40282347e38f; /* false for NaN and +-inf */
        l = x < l ? x : l;
        h = x > h ? x : h;
    }
    *lo = l;
    *hi = h;
    return ok;
}

void gk_quantize_u8_n_scalar(const float *src, uint8_t *dst, size_t n, float scale, float zp)
{
    for (size_t i = 0; i < n; i++) {
        float v = rintf(src[i] / scale) + zp;
        v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
        dst[i] = (uint8_t)v;
    }
}

void gk_i32_scale_n_scalar(const int32_t *acc, float *dst, size_t n, size_t ncols,
                           const float *scale, int scale_per_col, const float *bias)
{
    for (size_t i = 0; i < n; i += ncols)
        for (size_t j = 0; j < ncols; j++) {
            float v = (float)acc[i + j] * scale[scale_per_col ? j : 0];
            /* A NaN product (NaN scale, inf * 0) is the result even when the bias is NaN
             * too: which of two NaN operands an add returns depends on their order in the
             * instruction (ARM: the first quiet one; x86: the first source), and a
             * compiler may swap the operands of a commutative add, so the choice is made
             * here, not left to it.  The SIMD families do the same select. */
            if (bias != NULL)
                v = v != v ? v : v + bias[j];
            dst[i + j] = v;
        }
}
