/* The contrib ops' loops on AVX-512 F/BW/VL/DQ (group avx512; contract in
 * gemmkit/gk_codecs.h): 16 lanes, each lane the scalar family's operation sequence
 * (vdivps, vrndscaleps to nearest even, vaddps, vmaxps/vminps, vmulps are IEEE single
 * operations), so the bits equal gk_quant_scalar.c's; tails through masked loads. */
#include <immintrin.h>

#include "codecs/gk_quant_impl.h"
#include "core/gk_compiler.h"
#include "gemmkit/gk_codecs.h"

static inline __mmask16 tail16(size_t r) { return (__mmask16)((1u << r) - 1u); }

int gk_f32_range_avx512(const float *src, size_t n, float *lo, float *hi)
{
    const __m512 big = _mm512_set1_ps(3.40282347e38f);
    __m512 l = _mm512_set1_ps(src[0]), h = l;
    __mmask16 ok = 0xffff;
    size_t i = 0;
    if (n >= 64) { /* four independent chains: vminps/vmaxps latency, not loads, bound one */
        __m512 l1 = l, l2 = l, l3 = l, h1 = h, h2 = h, h3 = h;
        __mmask16 ok1 = 0xffff, ok2 = 0xffff, ok3 = 0xffff;
        for (; i + 64 <= n; i += 64) {
            __m512 x0 = _mm512_loadu_ps(src + i), x1 = _mm512_loadu_ps(src + i + 16);
            __m512 x2 = _mm512_loadu_ps(src + i + 32), x3 = _mm512_loadu_ps(src + i + 48);
            /* each loaded once (gcc folded each into its three uses: DynamicQuantizeLinear
             * of 4M floats 1.25x slower, Zen 5) */
            GK_KEEP_IN_REG(x0);
            GK_KEEP_IN_REG(x1);
            GK_KEEP_IN_REG(x2);
            GK_KEEP_IN_REG(x3);
            ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(x0), big, _CMP_LE_OQ);
            ok1 &= _mm512_cmp_ps_mask(_mm512_abs_ps(x1), big, _CMP_LE_OQ);
            ok2 &= _mm512_cmp_ps_mask(_mm512_abs_ps(x2), big, _CMP_LE_OQ);
            ok3 &= _mm512_cmp_ps_mask(_mm512_abs_ps(x3), big, _CMP_LE_OQ);
            l = _mm512_min_ps(l, x0);
            l1 = _mm512_min_ps(l1, x1);
            l2 = _mm512_min_ps(l2, x2);
            l3 = _mm512_min_ps(l3, x3);
            h = _mm512_max_ps(h, x0);
            h1 = _mm512_max_ps(h1, x1);
            h2 = _mm512_max_ps(h2, x2);
            h3 = _mm512_max_ps(h3, x3);
        }
        ok &= ok1 & ok2 & ok3;
        l = _mm512_min_ps(_mm512_min_ps(l, l1), _mm512_min_ps(l2, l3));
        h = _mm512_max_ps(_mm512_max_ps(h, h1), _mm512_max_ps(h2, h3));
    }
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_loadu_ps(src + i);
        ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(x), big, _CMP_LE_OQ); /* false: NaN, inf */
        l = _mm512_min_ps(l, x);
        h = _mm512_max_ps(h, x);
    }
    if (i < n) { /* masked-off lanes repeat src[0]: neutral */
        const __mmask16 m = tail16(n - i);
        const __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(src[0]), m, src + i);
        ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(x), big, _CMP_LE_OQ);
        l = _mm512_min_ps(l, x);
        h = _mm512_max_ps(h, x);
    }
    *lo = _mm512_reduce_min_ps(l);
    *hi = _mm512_reduce_max_ps(h);
    if (ok == 0xffff) { /* the scalar's choice among equal zeros (else lo, hi unspecified) */
        if (*lo == 0.0f)
            *lo = gk_f32_first_equal(src, n, *lo);
        if (*hi == 0.0f)
            *hi = gk_f32_first_equal(src, n, *hi);
    }
    return ok == 0xffff;
}

static inline __m128i quantize16(__m512 x, __m512 scale, __m512 zp)
{
    const __m512 r = _mm512_roundscale_ps(_mm512_div_ps(x, scale),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 v = _mm512_add_ps(r, zp);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)); /* integral, in [0, 255] */
}

void gk_quantize_u8_n_avx512(const float *src, uint8_t *dst, size_t n, float scale, float zp)
{
    const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm_storeu_si128((__m128i *)(dst + i), quantize16(_mm512_loadu_ps(src + i), s, z));
    if (i < n) {
        const __mmask16 m = tail16(n - i);
        _mm_mask_storeu_epi8(dst + i, m, quantize16(_mm512_maskz_loadu_ps(m, src + i), s, z));
    }
}

void gk_i32_scale_n_avx512(const int32_t *acc, float *dst, size_t n, size_t ncols,
                           const float *scale, int scale_per_col, const float *bias)
{
    const __m512 s0 = _mm512_set1_ps(scale[0]);
    for (size_t i = 0; i < n; i += ncols)
        for (size_t j = 0; j < ncols; j += 16) {
            const __mmask16 m = ncols - j >= 16 ? (__mmask16)0xffff : tail16(ncols - j);
            __m512 v = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, acc + i + j));
            v = _mm512_mul_ps(v, scale_per_col ? _mm512_maskz_loadu_ps(m, scale + j) : s0);
            if (bias != NULL) /* a NaN product stays (the scalar's pinned NaN choice) */
                v = _mm512_mask_add_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v,
                                       _mm512_maskz_loadu_ps(m, bias + j));
            _mm512_mask_storeu_ps(dst + i + j, m, v);
        }
}
