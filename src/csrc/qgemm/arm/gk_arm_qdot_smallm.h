/* Small-M path on UDOT, shared by the families compiled with +dotprod (neondot, i8mm).
 * Include only from translation units built with FEAT_DotProd enabled.
 *
 * Streams row-major B (b_cs == 1) once, in strips of 16 columns and steps of 4 rows.
 * The 4 x 16 bytes are biased to b'' = b' + 128 (uint8) and transposed by two ZIP levels
 * into four vectors of (4 columns x 4 k); UDOT by a broadcast 4-byte group of a'[m, k..k+3]
 * then adds four exact products (<= 4 * 65025 < 2^32) into each uint32 lane, and UDOT by
 * a vector of ones accumulates the column sums of b''.  K % 4 leftover rows are zero in
 * both operands, so they add nothing.  Bias removal as in gk_arm_smallm_finish. */
#ifndef GEMMKIT_GK_ARM_QDOT_SMALLM_H
#define GEMMKIT_GK_ARM_QDOT_SMALLM_H

#if !defined(__ARM_FEATURE_DOTPROD)
#error "gk_arm_qdot_smallm.h needs FEAT_DotProd (-march=armv8.2-a+dotprod)"
#endif

#include "gk_arm_qcommon.h"

/* a'[m, kk .. kk + cnt - 1] (cnt <= 4, the rest zero) as one little-endian 32-bit word,
 * the byte order vdotq_laneq/vdupq of a 4-byte group expects. */
GK_ARM_INLINE uint32_t gk_arm_a4(const uint8_t *arow, ptrdiff_t a_cs, int kk, int cnt,
                                 uint8_t a_xor)
{
    uint8_t t[4] = {0, 0, 0, 0};
    if (a_cs == 1 && cnt == 4) {
        memcpy(t, arow + kk, 4);
        for (int g = 0; g < 4; g++)
            t[g] ^= a_xor;
    } else {
        for (int g = 0; g < cnt; g++)
            t[g] = (uint8_t)(arow[(ptrdiff_t)(kk + g) * a_cs] ^ a_xor);
    }
    return (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
}

GK_ARM_INLINE void gk_arm_dot_smallm_strip(const int M, int mbase, int n0, int nv, int k,
                                           const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                                           uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs,
                                           uint8_t b_xor, const gk_qepi *e)
{
    uint32x4_t acc[GK_ARM_SMALLM_MAX][4];
    uint32x4_t cs[4];
    const uint8x16_t bias = vdupq_n_u8((uint8_t)(b_xor ^ 0x80));
    const uint8x16_t ones = vdupq_n_u8(1);
    gk_arm_smallm_zero(M, acc, cs);
    for (int kk = 0; kk < k; kk += 4) {
        const int cnt = GK_ARM_MIN(4, k - kk);
        uint8x16_t r[4];
        for (int g = 0; g < 4; g++) {
            if (g >= cnt) {
                r[g] = vdupq_n_u8(0); /* b'' = 0 beyond K */
                continue;
            }
            r[g] = veorq_u8(gk_arm_load_b16(b + ((ptrdiff_t)(kk + g) * b_rs + n0), nv), bias);
        }
        /* t[j] = columns 4j..4j+3, each as its 4 k bytes */
        const uint16x8_t z01l = vreinterpretq_u16_u8(vzip1q_u8(r[0], r[1]));
        const uint16x8_t z01h = vreinterpretq_u16_u8(vzip2q_u8(r[0], r[1]));
        const uint16x8_t z23l = vreinterpretq_u16_u8(vzip1q_u8(r[2], r[3]));
        const uint16x8_t z23h = vreinterpretq_u16_u8(vzip2q_u8(r[2], r[3]));
        uint8x16_t t[4];
        t[0] = vreinterpretq_u8_u16(vzip1q_u16(z01l, z23l));
        t[1] = vreinterpretq_u8_u16(vzip2q_u16(z01l, z23l));
        t[2] = vreinterpretq_u8_u16(vzip1q_u16(z01h, z23h));
        t[3] = vreinterpretq_u8_u16(vzip2q_u16(z01h, z23h));
        for (int j = 0; j < 4; j++)
            cs[j] = vdotq_u32(cs[j], t[j], ones);
        for (int i = 0; i < M; i++) {
            const uint8_t *arow = a + (ptrdiff_t)(mbase + i) * a_rs;
            const uint8x16_t av =
                vreinterpretq_u8_u32(vdupq_n_u32(gk_arm_a4(arow, a_cs, kk, cnt, a_xor)));
            for (int j = 0; j < 4; j++)
                acc[i][j] = vdotq_u32(acc[i][j], t[j], av);
        }
    }
    gk_arm_smallm_finish(M, mbase, n0, nv, k, acc, cs, e);
}

/* The gk_qgemm_smallm_fn of the families with FEAT_DotProd. */
static inline void gk_arm_dot_smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs,
                                     ptrdiff_t a_cs, uint8_t a_xor, const uint8_t *b,
                                     ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    GK_ARM_SMALLM_BODY(gk_arm_dot_smallm_strip)
}

#endif
