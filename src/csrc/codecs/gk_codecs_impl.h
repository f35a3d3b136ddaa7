/* Private to the codecs engine: the float8 format parameters, the scalar float32 -> float8
 * encoder every codecs family uses (the scalar family for all elements, the SIMD families
 * for their tails), and the SIMD families' float8 entry points.  Not a contract: only
 * src/csrc/codecs/ includes it. */
#ifndef GEMMKIT_GK_CODECS_IMPL_H
#define GEMMKIT_GK_CODECS_IMPL_H

#include "core/gk_compiler.h"
#include "gemmkit/gk_codecs.h"

typedef struct {
    unsigned mbits;   /* stored mantissa bits: 3 or 2 */
    int bias;         /* exponent bias */
    unsigned max_mag; /* magnitude code (sign cleared) of the largest finite value */
    unsigned nan;     /* NaN code for a positive input; sign is OR-ed in unless fnuz */
    unsigned ovf;     /* non-saturating overflow / inf result, sign OR-ed in unless fnuz */
    int fnuz;         /* 0x80 is NaN: no -0, NaN and overflow carry no sign */
} gk_fp8_params;

/* By value from a switch, so that a constant `fmt` folds every field into the caller. */
GK_ALWAYS_INLINE gk_fp8_params gk_fp8_params_of(int fmt)
{
    gk_fp8_params p;
    switch (fmt) {
    case GK_F8E4M3FN: p.mbits = 3; p.bias = 7; p.max_mag = 0x7eu; p.nan = 0x7fu; p.ovf = 0x7fu; p.fnuz = 0; break;
    case GK_F8E4M3FNUZ: p.mbits = 3; p.bias = 8; p.max_mag = 0x7fu; p.nan = 0x80u; p.ovf = 0x80u; p.fnuz = 1; break;
    case GK_F8E5M2: p.mbits = 2; p.bias = 15; p.max_mag = 0x7bu; p.nan = 0x7eu; p.ovf = 0x7cu; p.fnuz = 0; break;
    default: p.mbits = 2; p.bias = 16; p.max_mag = 0x7fu; p.nan = 0x80u; p.ovf = 0x80u; p.fnuz = 1; break;
    }
    return p;
}

/* float32 -> float8 with selects instead of branches on the value's range (bulk data has
 * an unpredictable range).  Results as documented at gk_fp8_encode_f32 in gk_codecs.h. */
GK_ALWAYS_INLINE uint8_t gk_fp8_encode_f32_p(float x, gk_fp8_params p, int saturate)
{
    const uint32_t u = gk_f32_to_bits(x);
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t s = 23u - p.mbits;                           /* dropped bits: 20 or 21 */
    const uint32_t min_normal = (uint32_t)(128 - p.bias) << 23; /* 2^(1-bias) as f32 bits */
    uint32_t r, normal, full, sh, q, rem, sub, code;

    /* a >= min_normal: rebias the exponent (127 -> bias) in place and round the low s bits;
     * a rounding carry moves into the exponent (RNE with unbounded exponent).  a < 2^31 and
     * the rebias subtracts >= 2^23, so no wrap.  (Computed for every a; unsigned wrap when
     * a < min_normal is harmless, the value is not selected.) */
    r = a - ((uint32_t)(127 - p.bias) << 23);
    normal = (r + ((1u << (s - 1u)) - 1u) + ((r >> s) & 1u)) >> s;

    /* a < min_normal: the 24-bit significand over 2^sh, sh = s + (e_min - e) >= s + 1; from
     * sh >= 25 the quotient is < 1/2 and rounds to 0, so clamping sh at 31 changes nothing.
     * float32 zeros/subnormals land here with sh clamped: result 0. */
    full = (a & 0x7fffffu) | 0x800000u;
    sh = s + (min_normal >> 23) - (a >> 23);
    sh = (a < min_normal && sh < 31u) ? sh : 31u;
    q = full >> sh;
    rem = full & ((1u << sh) - 1u);
    sub = q + (rem > (1u << (sh - 1u)) || (rem == (1u << (sh - 1u)) && (q & 1u)));

    code = a < min_normal ? sub : normal;
    /* overflow, inf or NaN (rare).  inf/NaN need no test of their own: their exponent field
     * 255 rebiased is >= 135, so `normal` exceeds every max_mag. */
    if (code > p.max_mag) {
        const unsigned sgn_nan = p.fnuz ? 0u : sign;
        if (a > 0x7f800000u)
            return (uint8_t)(p.nan | sgn_nan);
        return (uint8_t)(saturate ? (sign | p.max_mag) : (p.ovf | sgn_nan));
    }
    if (code == 0u && p.fnuz)
        return 0u;
    return (uint8_t)(sign | code);
}

/* The SIMD families' float8 loops (x86/gk_fp8_<isa>.c), bit-identical to the scalar ones. */
void gk_fp8_to_f32_n_avx2(const uint8_t *src, float *dst, size_t n, int fmt);
void gk_f32_to_fp8_n_avx2(const float *src, uint8_t *dst, size_t n, int fmt, int saturate);
void gk_fp8_to_f32_n_avx512(const uint8_t *src, float *dst, size_t n, int fmt);
void gk_f32_to_fp8_n_avx512(const float *src, uint8_t *dst, size_t n, int fmt, int saturate);
void gk_fp8_to_f32_n_neon(const uint8_t *src, float *dst, size_t n, int fmt);
void gk_f32_to_fp8_n_neon(const float *src, uint8_t *dst, size_t n, int fmt, int saturate);

/* The SIMD families' float64 <-> float32 loops (x86/gk_f64_<isa>.c, arm/gk_f64_neon.c), as
 * documented at
 * gk_codecs_kernel.f64_to_f32_n / f32_to_f64_n. */
int gk_f64_to_f32_n_avx2(const double *src, float *dst, size_t n, int odd);
int gk_f32_to_f64_n_avx2(const float *src, double *dst, size_t n);
int gk_f64_to_f32_n_avx512(const double *src, float *dst, size_t n, int odd);
int gk_f32_to_f64_n_avx512(const float *src, double *dst, size_t n);
int gk_f64_to_f32_n_neon(const double *src, float *dst, size_t n, int odd);
int gk_f32_to_f64_n_neon(const float *src, double *dst, size_t n);

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include <xmmintrin.h>
/* This thread's MXCSR rounds to nearest with FTZ and DAZ off (bits 13-15 and 6 clear):
 * there cvtpd2ps, cvtps2pd and the compares are the IEEE operations on every operand,
 * subnormals included.  (A process may change it: fesetround, -ffast-math's startup code,
 * a library that sets FTZ/DAZ.) */
static inline int gk_mxcsr_is_default(void) { return (_mm_getcsr() & 0xE040u) == 0u; }
#endif

#if defined(__aarch64__) || defined(_M_ARM64)
#include "core/gk_fenv.h"
/* This thread's FPCR has every mode bit at its reset value (gk_fenv_is_default: round to
 * nearest, FZ, FZ16, DN and AHP off, FEAT_AFP's FIZ/AH/NEP off, no exception trap
 * enabled).  There (and only there) FCVTL/FCVTN/FCVTXN are the IEEE conversions of every
 * operand, subnormals included, with NaN quieted keeping its sign and top payload bits --
 * what the scalar family computes with integers.  A process may change FPCR: fesetround,
 * -ffast-math's startup code (FZ), a library that sets FZ or DN. */
static inline int gk_fpcr_is_default(void) { return gk_fenv_is_default(); }
#endif

#endif
