/* The contrib ops' loops of every codecs family (contract: gemmkit/gk_codecs.h):
 * codecs/scalar/gk_quant_scalar.c (the oracle; the SIMD families call it for their
 * tails), codecs/x86/gk_quant_avx2.c, gk_quant_avx512.c and codecs/arm/gk_quant_neon.c,
 * bit-identical to it. */
#ifndef GEMMKIT_GK_QUANT_IMPL_H
#define GEMMKIT_GK_QUANT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#define GK_QUANT_DECLARE(SFX)                                                               \
    int gk_f32_range_##SFX(const float *src, size_t n, float *lo, float *hi);               \
    void gk_quantize_u8_n_##SFX(const float *src, uint8_t *dst, size_t n, float scale,     \
                                float zp);                                                  \
    void gk_i32_scale_n_##SFX(const int32_t *acc, float *dst, size_t n, size_t ncols,      \
                              const float *scale, int scale_per_col, const float *bias);
GK_QUANT_DECLARE(scalar)
GK_QUANT_DECLARE(avx2)
GK_QUANT_DECLARE(avx512)
GK_QUANT_DECLARE(neon)
#undef GK_QUANT_DECLARE

/* The scalar gk_f32_range's lo (hi) is the FIRST element comparing equal to the minimum
 * (maximum): it replaces only on a strict compare.  Elements that compare equal differ in
 * bits only when zero (+0, -0; with DAZ / FZ also the subnormals), where a SIMD min/max
 * and its lane-wise reduction pick some other one.  The SIMD families, having found a
 * zero extreme v of a finite array, return this instead: the first element comparing
 * equal to v.  One exists (v is attained, or compares equal to an attained subnormal), so
 * the search stops inside [0, n); it is usually short (the first zero). */
static inline float gk_f32_first_equal(const float *src, size_t n, float v)
{
    size_t i = 0;
    while (i + 1 < n && !(src[i] == v))
        i++;
    return src[i];
}

#endif
