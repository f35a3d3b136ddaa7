/* The scalar codecs family: the inline conversions of gk_codecs.h and codecs/gk_codecs_impl.h
 * in loops, built without auto-vectorisation.  The oracle every other codecs family equals
 * bit for bit. */
#include "gemmkit/gk_codecs.h"
#include "codecs/gk_codecs_impl.h"
#include "codecs/gk_quant_impl.h"

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

/* The exact table (gk_fp8.c). */
static void gk_fp8_to_f32_n_scalar(const uint8_t *src, float *dst, size_t n, int fmt)
{
    const float *t = gk_fp8_decode_table[fmt];
    for (size_t i = 0; i < n; i++)
        dst[i] = t[src[i]];
}

/* One loop per format so that the format's parameters are compile-time constants. */
#define GK_FP8_ENCODE_LOOP(F)                                                               \
    for (size_t i = 0; i < n; i++)                                                          \
        dst[i] = gk_fp8_encode_f32_p(src[i], gk_fp8_params_of(F), saturate);

static void gk_f32_to_fp8_n_scalar(const float *src, uint8_t *dst, size_t n, int fmt, int saturate)
{
    switch (fmt) {
    case GK_F8E4M3FN: GK_FP8_ENCODE_LOOP(GK_F8E4M3FN) break;
    case GK_F8E4M3FNUZ: GK_FP8_ENCODE_LOOP(GK_F8E4M3FNUZ) break;
    case GK_F8E5M2: GK_FP8_ENCODE_LOOP(GK_F8E5M2) break;
    default: GK_FP8_ENCODE_LOOP(GK_F8E5M2FNUZ) break;
    }
}

const gk_codecs_kernel gk_codecs_scalar = {
    "scalar",
    gk_f16_to_f32_n_scalar,
    gk_f32_to_f16_n_scalar,
    gk_bf16_to_f32_n_scalar,
    gk_f32_to_bf16_n_scalar,
    gk_fp8_to_f32_n_scalar,
    gk_f32_to_fp8_n_scalar,
    gk_f32_range_scalar, /* gk_quant_scalar.c */
    gk_quantize_u8_n_scalar,
    gk_i32_scale_n_scalar,
    NULL, /* float64 <-> float32: gk_cast.c's integer routes */
    NULL,
};
