/* The four ONNX float8 formats: an exact decode table and round-to-nearest-even encoders
 * from float32 and float64, saturating or not.  The bulk float32 loops run the codecs
 * family the dispatch picked (gk_codecs_active()); the float64 loop is scalar. */
#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_dispatch.h"
#include "codecs/gk_codecs_impl.h"

#include <math.h>

/* ---------------------------------------------------------------------------------------
 * Decode table, built from constant expressions (no init call, no generated literal).
 * A code of M mantissa bits, exponent field e and mantissa field m with bias B is worth
 *   e == 0 : m * 2^(1-B-M)                       (subnormal)
 *   e >  0 : (2^M + m) * 2^(e-B-M)
 * Every such value is an integer below 2^4 times a power of two in [2^-17, 2^15], so the
 * float expressions below are exact.  The power 2^(e-B-M) is written as
 * 2^e / 2^(B+M) with both factors exact floats (e <= 31, B+M <= 18). */
#define GK_F8_EXP(c, M) (((unsigned)(c) & 0x7fu) >> (M))
#define GK_F8_MAN(c, M) ((unsigned)(c) & ((1u << (M)) - 1u))
#define GK_F8_MAG(c, M, B)                                                                  \
    (GK_F8_EXP(c, M) == 0u                                                                  \
         ? (float)GK_F8_MAN(c, M) / (float)(1ul << ((B) + (M)-1))                         \
         : (float)((1u << (M)) + GK_F8_MAN(c, M)) * (float)(1ul << GK_F8_EXP(c, M)) /     \
               (float)(1ul << ((B) + (M))))
#define GK_F8_SIGNED(c, v) (((unsigned)(c) & 0x80u) ? -(v) : (v))

/* E4M3FN: S.1111.111 is NaN, no inf. */
#define GK_E4M3FN(c) \
    GK_F8_SIGNED(c, ((((unsigned)(c) & 0x7fu) == 0x7fu) ? NAN : GK_F8_MAG(c, 3, 7)))
/* fnuz formats: 0x80 (the would-be -0) is the only NaN, decoded with its sign bit set. */
#define GK_E4M3FNUZ(c) GK_F8_SIGNED(c, (((unsigned)(c) == 0x80u) ? NAN : GK_F8_MAG(c, 3, 8)))
/* E5M2: exponent field 31 is inf (m == 0) or NaN. */
#define GK_E5M2(c)                                                                          \
    GK_F8_SIGNED(c, (GK_F8_EXP(c, 2) == 31u ? (GK_F8_MAN(c, 2) ? NAN : INFINITY)            \
                                             : GK_F8_MAG(c, 2, 15)))
#define GK_E5M2FNUZ(c) GK_F8_SIGNED(c, (((unsigned)(c) == 0x80u) ? NAN : GK_F8_MAG(c, 2, 16)))

#define GK_R4(F, b) F((b)), F((b) + 1), F((b) + 2), F((b) + 3)
#define GK_R16(F, b) GK_R4(F, b), GK_R4(F, (b) + 4), GK_R4(F, (b) + 8), GK_R4(F, (b) + 12)
#define GK_R64(F, b) GK_R16(F, b), GK_R16(F, (b) + 16), GK_R16(F, (b) + 32), GK_R16(F, (b) + 48)
#define GK_R256(F) GK_R64(F, 0), GK_R64(F, 64), GK_R64(F, 128), GK_R64(F, 192)

const float gk_fp8_decode_table[4][256] = {
    {GK_R256(GK_E4M3FN)},
    {GK_R256(GK_E4M3FNUZ)},
    {GK_R256(GK_E5M2)},
    {GK_R256(GK_E5M2FNUZ)},
};

/* ---------------------------------------------------------------------------------------
 * Encoder.  Works on the source's bit fields, so rounding is from the exact input value. */
static const float gk_fp8_max[GK_FP8_NFORMATS] = {448.0f, 240.0f, 57344.0f, 57344.0f};

float gk_fp8_max_finite(int fmt) { return gk_fp8_max[fmt]; }

/* Round x / 2^s to the nearest integer, ties to even.  1 <= s <= 63. */
static inline uint64_t gk_rne_shift_u64(uint64_t x, unsigned s)
{
    uint64_t q = x >> s, rem = x & ((UINT64_C(1) << s) - 1u), half = UINT64_C(1) << (s - 1u);
    return q + (rem > half || (rem == half && (q & 1u)));
}

/* Encode a binary floating-point value given as its sign (0 or 0x80) and magnitude bits
 * `mag` (exponent field above P mantissa bits, exponent field width EW, bias SB).
 * Requires P - p.mbits >= 1 (true for float32 and float64 sources) and EW <= 11. */
static inline uint8_t gk_fp8_encode_bits(unsigned sign, uint64_t mag, unsigned P, unsigned EW,
                                         int SB, gk_fp8_params p, int saturate)
{
    const uint64_t man = mag & ((UINT64_C(1) << P) - 1u);
    const unsigned efield = (unsigned)(mag >> P); /* < 2^EW */
    const unsigned sgn_nan = p.fnuz ? 0u : sign;
    const unsigned max_efield = 0x7fu >> p.mbits; /* all-ones exponent field of the fp8 */
    uint64_t code;
    int e8;

    if (efield == (1u << EW) - 1u) {
        if (man)
            return (uint8_t)(p.nan | sgn_nan);
        return (uint8_t)(saturate ? (sign | p.max_mag) : (p.ovf | sgn_nan));
    }
    /* Zero and source subnormals (< 2^-126 for float32) lie far below half the smallest fp8
     * subnormal (>= 2^-18), so they round to zero. */
    if (efield == 0u)
        return (uint8_t)(p.fnuz ? 0u : sign);

    /* fp8 biased exponent of x when it is normal there; |e8| <= 2^11 so no int overflow. */
    e8 = (int)efield - SB + p.bias;
    if (e8 > (int)max_efield) {
        code = 0x80u; /* exponent beyond every fp8 code: any value > 0x7f means overflow */
    } else if (e8 >= 1) {
        /* (e8 << P | man) rounded at bit P - mbits: the rounding carry runs from the mantissa
         * into the exponent, which is exactly RNE with an unbounded exponent. Fits: e8 <= 31,
         * P <= 52. */
        code = gk_rne_shift_u64(((uint64_t)e8 << P) | man, P - p.mbits);
    } else {
        /* fp8 subnormal: the full significand (implicit bit restored, < 2^(P+1)) is shifted
         * by the extra 1 - e8 places.  With shift >= P + 2 the quotient is < 1/2: zero.  A
         * carry out of the subnormal range yields the smallest normal code, as it should. */
        unsigned shift = P - p.mbits + (unsigned)(1 - e8);
        if (shift > P + 1u)
            code = 0u;
        else
            code = gk_rne_shift_u64(man | (UINT64_C(1) << P), shift);
    }
    if (code > p.max_mag)
        return (uint8_t)(saturate ? (sign | p.max_mag) : (p.ovf | sgn_nan));
    if (code == 0u && p.fnuz)
        return 0u;
    return (uint8_t)(sign | (unsigned)code);
}

static inline uint8_t gk_fp8_encode_f64_p(double x, gk_fp8_params p, int saturate)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return gk_fp8_encode_bits((unsigned)(u >> 56) & 0x80u, u & UINT64_C(0x7fffffffffffffff), 52,
                              11, 1023, p, saturate);
}

uint8_t gk_fp8_encode_f32(float x, int fmt, int saturate)
{
    return gk_fp8_encode_f32_p(x, gk_fp8_params_of(fmt), saturate);
}

uint8_t gk_fp8_encode_f64(double x, int fmt, int saturate)
{
    return gk_fp8_encode_f64_p(x, gk_fp8_params_of(fmt), saturate);
}

void gk_fp8_decode_n(const uint8_t *src, float *dst, size_t n, int fmt)
{
    gk_codecs_active()->fp8_to_f32_n(src, dst, n, fmt);
}

void gk_fp8_encode_f32_n(const float *src, uint8_t *dst, size_t n, int fmt, int saturate)
{
    gk_codecs_active()->f32_to_fp8_n(src, dst, n, fmt, saturate);
}

/* One loop per format so that the format's parameters are compile-time constants. */
#define GK_FP8_ENCODE64_LOOP(F)                                                             \
    for (i = 0; i < n; i++)                                                                 \
        dst[i] = gk_fp8_encode_f64_p(src[i], gk_fp8_params_of(F), saturate);

void gk_fp8_encode_f64_n(const double *src, uint8_t *dst, size_t n, int fmt, int saturate)
{
    size_t i;
    switch (fmt) {
    case GK_F8E4M3FN: GK_FP8_ENCODE64_LOOP(GK_F8E4M3FN) break;
    case GK_F8E4M3FNUZ: GK_FP8_ENCODE64_LOOP(GK_F8E4M3FNUZ) break;
    case GK_F8E5M2: GK_FP8_ENCODE64_LOOP(GK_F8E5M2) break;
    default: GK_FP8_ENCODE64_LOOP(GK_F8E5M2FNUZ) break;
    }
}
