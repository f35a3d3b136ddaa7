/* The scalar codecs family: the inline conversions of gk_codecs.h in loops, built without
 * auto-vectorisation.  The oracle every other codecs family equals bit for bit. */
#include "gemmkit/gk_codecs.h"

static void gk_f16_to_f32_n_scalar(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = gk_f16_to_f32(src[i]);
}

static void gk_f32_to_f16_n_scalar(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = gk_f32_to_f16(src[i]);
}

static void gk_bf16_to_f32_n_scalar(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = gk_bf16_to_f32(src[i]);
}

static void gk_f32_to_bf16_n_scalar(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = gk_f32_to_bf16(src[i]);
}

const gk_codecs_kernel gk_codecs_scalar = {
    "scalar", gk_f16_to_f32_n_scalar, gk_f32_to_f16_n_scalar, gk_bf16_to_f32_n_scalar,
    gk_f32_to_bf16_n_scalar,
};
