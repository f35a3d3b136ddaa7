/* Packing of the ARM64 int8 families (not a template: plain helpers, baseline AdvSIMD).
 * Layout shared by all three families, parameterised by R (rows of a panel: mr for A, nr
 * for B, "row" meaning a column of B) and G (the k-group, = kstep):
 *     panel p  (rows [p*R, p*R + R))       at dst + p * R * kp
 *     k-block b (k in [b*G, b*G + G))      at panel + b * R * G
 *     row i of the panel                   at k-block + i * G
 *     k % G                                at row + (k % G)
 * i.e. each row contributes G consecutive k values per block:
 *     neon    R=4, G=16: one 16-byte vector per row (k-inner umull/uadalp)
 *     neondot R=8, G=4:  four rows per 16-byte vector (udot by lane)
 *     i8mm    R=8, G=8:  two rows per 16-byte vector = the 2x8 operand of usmmla
 * Padding rows (beyond `rows`) and padding k (beyond `k`, up to kp) are stored as 0; every
 * family keeps A's padding at a' = 0, so padded k contributes nothing whatever B holds
 * there, and padded rows/columns only reach outputs that are never stored.
 *
 * src element (row r, depth kk) is src[r * s_row + kk * s_k] (byte strides, any sign).
 * Stored byte: src ^ store_xor.  sums[r] = sum over the real k of (src ^ sum_xor), read
 * as uint8 (sum_signed == 0, A's row sums of a') or int8 (sum_signed != 0, B's column sums
 * of b'), accumulated modulo 2^32. */
#ifndef GEMMKIT_GK_QPACK_ARM_H
#define GEMMKIT_GK_QPACK_ARM_H

#include "gk_qgemm_arm_common.h"

#define GK_ARM_PACK_MAXR 8

/* Stores the 8 bytes for k in [k8, k8 + 8) (k8 a multiple of 8) of panel row i. */
GK_ALWAYS_INLINE void gk_arm_put8(uint8_t *panel, const int R, const int G, int i, int k8,
                                  uint8x8_t v)
{
    if (G >= 8) {
        vst1_u8(panel + (ptrdiff_t)(k8 - k8 % G) * R + i * G + k8 % G, v);
    } else { /* G == 4: the two halves land in consecutive k-blocks */
        uint8_t t[8];
        vst1_u8(t, v);
        memcpy(panel + (ptrdiff_t)k8 * R + i * 4, t, 4);
        memcpy(panel + (ptrdiff_t)(k8 + 4) * R + i * 4, t + 4, 4);
    }
}

/* 8x8 byte transpose: out[i] = (r[0][i], r[1][i], ..., r[7][i]). */
GK_ALWAYS_INLINE void gk_arm_tr8x8(const uint8x8_t r[8], uint8x8_t out[8])
{
    /* pairs of rows interleaved by byte: x01l = r0[0] r1[0] r0[1] r1[1] .. r1[3] */
    const uint16x4_t x01l = vreinterpret_u16_u8(vzip1_u8(r[0], r[1]));
    const uint16x4_t x01h = vreinterpret_u16_u8(vzip2_u8(r[0], r[1]));
    const uint16x4_t x23l = vreinterpret_u16_u8(vzip1_u8(r[2], r[3]));
    const uint16x4_t x23h = vreinterpret_u16_u8(vzip2_u8(r[2], r[3]));
    const uint16x4_t x45l = vreinterpret_u16_u8(vzip1_u8(r[4], r[5]));
    const uint16x4_t x45h = vreinterpret_u16_u8(vzip2_u8(r[4], r[5]));
    const uint16x4_t x67l = vreinterpret_u16_u8(vzip1_u8(r[6], r[7]));
    const uint16x4_t x67h = vreinterpret_u16_u8(vzip2_u8(r[6], r[7]));
    /* quads: y0 = column 0 rows 0-3, column 1 rows 0-3; y1 columns 2,3; ... */
    const uint32x2_t y0 = vreinterpret_u32_u16(vzip1_u16(x01l, x23l));
    const uint32x2_t y1 = vreinterpret_u32_u16(vzip2_u16(x01l, x23l));
    const uint32x2_t y2 = vreinterpret_u32_u16(vzip1_u16(x01h, x23h));
    const uint32x2_t y3 = vreinterpret_u32_u16(vzip2_u16(x01h, x23h));
    const uint32x2_t z0 = vreinterpret_u32_u16(vzip1_u16(x45l, x67l));
    const uint32x2_t z1 = vreinterpret_u32_u16(vzip2_u16(x45l, x67l));
    const uint32x2_t z2 = vreinterpret_u32_u16(vzip1_u16(x45h, x67h));
    const uint32x2_t z3 = vreinterpret_u32_u16(vzip2_u16(x45h, x67h));
    out[0] = vreinterpret_u8_u32(vzip1_u32(y0, z0));
    out[1] = vreinterpret_u8_u32(vzip2_u32(y0, z0));
    out[2] = vreinterpret_u8_u32(vzip1_u32(y1, z1));
    out[3] = vreinterpret_u8_u32(vzip2_u32(y1, z1));
    out[4] = vreinterpret_u8_u32(vzip1_u32(y2, z2));
    out[5] = vreinterpret_u8_u32(vzip2_u32(y2, z2));
    out[6] = vreinterpret_u8_u32(vzip1_u32(y3, z3));
    out[7] = vreinterpret_u8_u32(vzip2_u32(y3, z3));
}

/* Sums are accumulated as uint8 values of (src ^ sum_xor ^ sgn), sgn = 0x80 for signed
 * sums: (uint8)(w ^ 0x80) = (int8)w + 128, so the signed sum is that total - 128 k
 * (mod 2^32).  R <= GK_ARM_PACK_MAXR. */
GK_ALWAYS_INLINE void gk_arm_pack_panels(int rows, int k, const uint8_t *src, ptrdiff_t s_row,
                                         ptrdiff_t s_k, uint8_t store_xor, uint8_t sum_xor,
                                         int sum_signed, const int R, const int G,
                                         uint8_t *dst, int32_t *sums)
{
    const int kp = (k + G - 1) / G * G;
    const int k8 = k - k % 8; /* [0, k8) may go through a fast path, in chunks of 8 */
    const uint8_t sx = (uint8_t)(sum_xor ^ (sum_signed ? 0x80 : 0));
    const uint32_t sum_bias = sum_signed ? 128u * (uint32_t)k : 0u;
    const uint8x8_t vstore = vdup_n_u8(store_xor), vsum = vdup_n_u8(sx);
    for (int r0 = 0; r0 < rows; r0 += R) {
        const int rv = GK_ARM_MIN(R, rows - r0);
        uint32_t s[GK_ARM_PACK_MAXR];
        int kdone = 0; /* k in [0, kdone) is packed and summed for rows [0, rv) */
        for (int i = 0; i < R; i++)
            s[i] = 0;
        if (s_k == 1) {
            /* k contiguous (row-major A, column-major B): 8 bytes of one row at a time */
            kdone = k8;
            for (int i = 0; i < rv; i++) {
                const uint8_t *row = src + (ptrdiff_t)(r0 + i) * s_row;
                uint32_t acc = 0;
                for (int kk = 0; kk < kdone; kk += 8) {
                    const uint8x8_t v = vld1_u8(row + kk);
                    gk_arm_put8(dst, R, G, i, kk, veor_u8(v, vstore));
                    acc += vaddlv_u8(veor_u8(v, vsum)); /* <= 8 * 255 */
                }
                s[i] = acc;
            }
        } else if (s_row == 1 && rv == R) {
            /* panel rows contiguous (row-major B): load 8 k-steps of R bytes, transpose */
            uint32x4_t slo = vdupq_n_u32(0), shi = vdupq_n_u32(0);
            kdone = k8;
            for (int kk = 0; kk < kdone; kk += 8) {
                uint8x8_t r[8], t[8];
                uint16x8_t s16 = vdupq_n_u16(0); /* <= 8 * 255 per lane */
                for (int g = 0; g < 8; g++) {
                    const uint8_t *p = src + (r0 + (ptrdiff_t)(kk + g) * s_k);
                    uint8x8_t v;
                    if (R == 8) {
                        v = vld1_u8(p);
                    } else {
                        uint8_t b[8] = {0};
                        memcpy(b, p, (size_t)R);
                        v = vld1_u8(b);
                    }
                    r[g] = veor_u8(v, vstore);
                    s16 = vaddw_u8(s16, veor_u8(v, vsum));
                }
                slo = vaddw_u16(slo, vget_low_u16(s16));
                shi = vaddw_high_u16(shi, s16);
                gk_arm_tr8x8(r, t);
                for (int i = 0; i < R; i++)
                    gk_arm_put8(dst, R, G, i, kk, t[i]);
            }
            {
                uint32_t t[8];
                vst1q_u32(t, slo);
                vst1q_u32(t + 4, shi);
                for (int i = 0; i < R; i++)
                    s[i] = t[i];
            }
        }
        for (int i = 0; i < R; i++) {
            uint8_t *d = dst + (ptrdiff_t)i * G;
            if (i >= rv) {
                for (int kb = 0; kb < kp; kb += G)
                    memset(d + (ptrdiff_t)kb * R, 0, (size_t)G);
                continue;
            }
            const uint8_t *row = src + (ptrdiff_t)(r0 + i) * s_row;
            uint32_t acc = s[i];
            for (int kk = kdone; kk < kp; kk++) {
                uint8_t *dd = d + (ptrdiff_t)(kk - kk % G) * R + kk % G;
                if (kk < k) {
                    const uint8_t v = row[(ptrdiff_t)kk * s_k];
                    *dd = (uint8_t)(v ^ store_xor);
                    acc += (uint8_t)(v ^ sx);
                } else {
                    *dd = 0;
                }
            }
            s[i] = acc;
        }
        for (int i = 0; i < rv; i++)
            sums[r0 + i] = (int32_t)(s[i] - sum_bias);
        dst += (ptrdiff_t)R * kp;
    }
}

#endif
