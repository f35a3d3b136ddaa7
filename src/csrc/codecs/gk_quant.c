/* The contrib ops' loops (contract: gemmkit/gk_codecs.h) through the codecs family the
 * dispatch picked (gk_codecs_active()). */
#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_dispatch.h"

int gk_f32_range(const float *src, size_t n, float *lo, float *hi)
{
    return gk_codecs_active()->f32_range(src, n, lo, hi);
}

void gk_quantize_u8_n(const float *src, uint8_t *dst, size_t n, float scale, float zp)
{
    gk_codecs_active()->quantize_u8_n(src, dst, n, scale, zp);
}

void gk_i32_scale_n(const int32_t *acc, float *dst, size_t n, size_t ncols, const float *scale,
                    int scale_per_col, const float *bias)
{
    gk_codecs_active()->i32_scale_n(acc, dst, n, ncols, scale, scale_per_col, bias);
}
