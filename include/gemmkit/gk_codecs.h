/* Software codecs: float16 and bfloat16 <-> float32 (exact widening, round-to-nearest-even
 * narrowing) and the four ONNX float8 formats.  Scalar forms are inline so any driver can
 * convert while packing; bulk forms live in src/csrc/codecs/gk_f16.c, float8 in gk_fp8.c. */
#ifndef GEMMKIT_GK_CODECS_H
#define GEMMKIT_GK_CODECS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline float gk_bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t gk_f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* bfloat16 -> float32: exact (bf16 is the top half of an f32). */
static inline float gk_bf16_to_f32(uint16_t h) { return gk_bits_to_f32((uint32_t)h << 16); }

/* float32 -> bfloat16, round to nearest even; NaN -> quiet NaN with the sign and the top 6
 * payload bits (setting the quiet bit also keeps a NaN whose payload sits in the dropped
 * low half from becoming inf). */
static inline uint16_t gk_f32_to_bf16(float f)
{
    uint32_t u = gk_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* cannot carry past the sign: +inf stays +inf */
    return (uint16_t)(u >> 16);
}

/* float16 -> float32: exact for every non-NaN code, subnormals included.
 * NaN keeps its sign and payload but is quieted (bit 9 of the half -> bit 22 of the float),
 * as F16C's vcvtph2ps and ARM's fcvt do, so the bulk SIMD path is bit-identical. */
static inline float gk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f)
        return gk_bits_to_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0u));
    if (exp == 0) {
        /* subnormal: man * 2^-24, exact in float32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return gk_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* float32 -> float16, round to nearest even; |x| >= 65520 -> inf.  NaN -> quiet NaN with the
 * sign and the top 9 payload bits (what vcvtps2ph gives). */
static inline uint16_t gk_f32_to_f16(float f)
{
    uint32_t u = gk_f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520: rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        /* result is subnormal or zero: value = a_f * 2^24 rounded to integer (RNE) */
        if (a < 0x33000000u) /* < 2^-25: rounds to zero (2^-25 itself ties to even 0) */
            return sign;
        {
            uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
            uint32_t shift = 126u - e; /* in [14, 24] for e in [102, 112] */
            uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
            if (rem > half || (rem == half && (q & 1u)))
                q++;
            return (uint16_t)(sign | q);
        }
    }
    a += 0xfffu + ((a >> 13) & 1u) - 0x38000000u; /* rebias 127 -> 15 with RNE on 13 bits */
    return (uint16_t)(sign | (a >> 13));
}

/* ---- float8 (src/csrc/codecs/gk_fp8.c) ---- */
enum gk_fp8_format {
    GK_F8E4M3FN = 0,   /* bias 7, no inf, NaN = S.1111.111, max 448 */
    GK_F8E4M3FNUZ = 1, /* bias 8, no inf, no -0, NaN = 0x80, max 240 */
    GK_F8E5M2 = 2,     /* bias 15, IEEE-like: inf, NaN, max 57344 */
    GK_F8E5M2FNUZ = 3, /* bias 16, no inf, no -0, NaN = 0x80, max 57344 */
};

#define GK_FP8_NFORMATS 4

/* Exact decode of all 256 codes of each format: a constant table, no init call needed.
 * NaN codes decode to the default quiet NaN carrying the code's sign bit (so fnuz 0x80 gives
 * -NaN, as ml_dtypes does).  fmt must be one of gk_fp8_format. */
extern const float gk_fp8_decode_table[4][256];
static inline float gk_fp8_decode(uint8_t v, int fmt) { return gk_fp8_decode_table[fmt][v]; }

/* Encode with round to nearest even from the exact input value (the f64 form never rounds
 * through float32).  "Overflow" means: x rounded to nearest even at the format's precision,
 * with an unbounded exponent, is larger in magnitude than the largest finite value (E4M3FN:
 * 464 ties to even 448 and does not overflow; 465 rounds to 480 and does).
 * saturate=1 (ONNX QuantizeLinear/Cast saturate=1): overflow and +-inf give +-max finite.
 * saturate=0 (ONNX saturate=0, bit-identical to ml_dtypes' cast): overflow and +-inf give
 *   +-inf in E5M2, NaN in the other formats.
 * NaN (either mode) gives S.1111.111 (E4M3FN), S.11111.10 (E5M2), 0x80 (fnuz), S the input's
 * sign.  A result of zero keeps the input's sign, except fnuz formats (no -0): always 0x00.
 * fmt must be one of gk_fp8_format. */
uint8_t gk_fp8_encode_f32(float x, int fmt, int saturate);
uint8_t gk_fp8_encode_f64(double x, int fmt, int saturate);

void gk_fp8_decode_n(const uint8_t *src, float *dst, size_t n, int fmt);
void gk_fp8_encode_f32_n(const float *src, uint8_t *dst, size_t n, int fmt, int saturate);
void gk_fp8_encode_f64_n(const double *src, uint8_t *dst, size_t n, int fmt, int saturate);

/* Largest finite value of a format (448, 240, 57344, 57344). */
float gk_fp8_max_finite(int fmt);

/* Bulk conversions (dispatch to the F16C/AVX2, AVX-512 or AdvSIMD family where the CPU has
 * it). */
void gk_f16_to_f32_n(const uint16_t *src, float *dst, size_t n);
void gk_f32_to_f16_n(const float *src, uint16_t *dst, size_t n);
void gk_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n);
void gk_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n);

/* The loops of the contrib ops around the int8 products (gemmkit.contrib), each the exact
 * sequence of IEEE float32 operations (to nearest even) that the NumPy definition runs:
 *   gk_f32_range     lo = min, hi = max of src[0, n), n >= 1; returns 1, or 0 (lo, hi
 *                    unspecified) when some element is NaN or infinite;
 *   gk_quantize_u8_n dst[i] = clamp(rint(src[i] / scale) + zp, 0, 255) (DynamicQuantize-
 *                    Linear: np.clip(np.rint(np.divide(x, scale)) + zp, 0, 255) as uint8);
 *                    src finite, scale > 0 (denormal allowed), zp an integer in [0, 255];
 *   gk_i32_scale_n   dst[i] = (float)acc[i] * scale[j] (+ bias[j]), j = i % ncols, one
 *                    rounding per operation (MatMulIntegerToFloat); scale[0] for every j
 *                    when !scale_per_col, no addition when bias is NULL; n % ncols == 0;
 *                    a NaN product is the result as it is (a NaN bias does not replace
 *                    its payload: the NaN choice is not left to operand order). */
int gk_f32_range(const float *src, size_t n, float *lo, float *hi);
void gk_quantize_u8_n(const float *src, uint8_t *dst, size_t n, float scale, float zp);
void gk_i32_scale_n(const int32_t *acc, float *dst, size_t n, size_t ncols, const float *scale,
                    int scale_per_col, const float *bias);

/* The bulk conversions above run the codecs family the dispatch picked
 * (gk_codecs_active(), gk_dispatch.h).  A family: */
typedef struct gk_codecs_kernel {
    const char *isa;
    void (*f16_to_f32_n)(const uint16_t *src, float *dst, size_t n);
    void (*f32_to_f16_n)(const float *src, uint16_t *dst, size_t n);
    void (*bf16_to_f32_n)(const uint16_t *src, float *dst, size_t n);
    void (*f32_to_bf16_n)(const float *src, uint16_t *dst, size_t n);
    /* float8 (fmt: enum gk_fp8_format) <-> float32, as gk_fp8_decode / gk_fp8_encode_f32 */
    void (*fp8_to_f32_n)(const uint8_t *src, float *dst, size_t n, int fmt);
    void (*f32_to_fp8_n)(const float *src, uint8_t *dst, size_t n, int fmt, int saturate);
    /* the contrib loops, as gk_f32_range / gk_quantize_u8_n / gk_i32_scale_n */
    int (*f32_range)(const float *src, size_t n, float *lo, float *hi);
    void (*quantize_u8_n)(const float *src, uint8_t *dst, size_t n, float scale, float zp);
    void (*i32_scale_n)(const int32_t *acc, float *dst, size_t n, size_t ncols,
                        const float *scale, int scale_per_col, const float *bias);
    /* float64 <-> float32 for gemmkit.cast by the hardware conversions (NULL: the scalar
     * family; gk_cast.c then runs its integer routes).  Each returns 0, having written
     * nothing, when this thread's MXCSR (x86) or FPCR (ARM64) is not the default one
     * (round to nearest; FTZ and DAZ off, or FZ, FZ16, DN and AHP off), under which alone
     * those instructions are the IEEE operations; else 1.
     *   f64_to_f32_n  odd = 0: round to nearest even (gk_f64_to_f32_bits);
     *                 odd = 1: round to odd (toward zero, then the last bit set if that
     *                 was inexact; beyond FLT_MAX: FLT_MAX).  float32 keeps 2 bits more
     *                 than float16, bfloat16 and float8 at every magnitude they reach, so
     *                 rounding that to nearest even gives the float64's own rounding
     *                 (Boldo & Melquiond): float64 sources never round twice.
     *   f32_to_f64_n  exact widening, NaN quieted with its payload (as the scalar). */
    int (*f64_to_f32_n)(const double *src, float *dst, size_t n, int odd);
    int (*f32_to_f64_n)(const float *src, double *dst, size_t n);
} gk_codecs_kernel;

/* The scalar family: the inline conversions above in loops (src/csrc/codecs/scalar/);
 * every other family is bit-identical to it, NaN payloads included. */
extern const gk_codecs_kernel gk_codecs_scalar;
/* F16C/AVX2 (src/csrc/codecs/x86/gk_f16_avx2.c, gk_fp8_avx2.c), where GK_HAVE_AVX2. */
extern const gk_codecs_kernel gk_codecs_avx2;
/* AVX-512 F/BW/VL/DQ (src/csrc/codecs/x86/gk_f16_avx512.c, gk_fp8_avx512.c), built in the
 * avx512 group, where GK_HAVE_AVX512. */
extern const gk_codecs_kernel gk_codecs_avx512;
/* ARM64 AdvSIMD (src/csrc/codecs/arm/gk_{f16,fp8,quant,f64}_neon.c), built in the neon
 * group, where GK_HAVE_NEON. */
extern const gk_codecs_kernel gk_codecs_neon;

/* ---- gemmkit.cast: any strided array of one float type into another (gk_cast.c) ---- */
enum gk_cast_type {
    GK_CT_F32 = 0,
    GK_CT_F64 = 1,
    GK_CT_F16 = 2,
    GK_CT_BF16 = 3,
    GK_CT_F8 = 4, /* GK_CT_F8 + enum gk_fp8_format: 4..7 */
    GK_CT_COUNT = 8
};
#define GK_CAST_MAXD 64 /* NumPy's NPY_MAXDIMS (64 since NumPy 2) */

typedef struct gk_cast_args {
    int src_type, dst_type; /* enum gk_cast_type */
    int saturate;           /* float8 destinations only (ONNX Cast's saturate) */
    int ndim;               /* 0..GK_CAST_MAXD; shape[i] >= 0 */
    ptrdiff_t shape[GK_CAST_MAXD];
    ptrdiff_t src_stride[GK_CAST_MAXD], dst_stride[GK_CAST_MAXD]; /* bytes, any sign */
    const void *src;
    void *dst; /* must not overlap src unless it is the very same elements (same strides) */
} gk_cast_args;

/* Converts every element with one rounding from the exact source value: RNE; float8
 * destinations as gk_fp8_encode_f32/f64 (saturate or not); float16/bfloat16/float32
 * destinations overflow to inf; NaN stays NaN with its sign (payload: the top bits that
 * fit, quiet bit set).  float64 sources round directly (never through float32).
 * Runs the given codecs family; no allocation (a stack buffer of a few KB). */
void gk_cast_run(const gk_codecs_kernel *kern, const gk_cast_args *args);

/* float64 -> float32 / float16 / bfloat16 bits, RNE from the exact value, overflow to inf,
 * NaN quiet with sign and top payload bits.  Integer arithmetic only (MXCSR ignored). */
uint32_t gk_f64_to_f32_bits(double x);
uint16_t gk_f64_to_f16(double x);
uint16_t gk_f64_to_bf16(double x);

#ifdef __cplusplus
}
#endif
#endif
