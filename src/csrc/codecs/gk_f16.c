/* Bulk float16/bfloat16 <-> float32: the public entry points run the codecs family the
 * dispatch picked (gk_codecs_active(): F16C/AVX2 where built, usable and allowed by the
 * selected level; else the scalar family). */
#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_dispatch.h"

void gk_f16_to_f32_n(const uint16_t *src, float *dst, size_t n)
{
    gk_codecs_active()->f16_to_f32_n(src, dst, n);
}

void gk_f32_to_f16_n(const float *src, uint16_t *dst, size_t n)
{
    gk_codecs_active()->f32_to_f16_n(src, dst, n);
}

void gk_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n)
{
    gk_codecs_active()->bf16_to_f32_n(src, dst, n);
}

void gk_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n)
{
    gk_codecs_active()->f32_to_bf16_n(src, dst, n);
}
