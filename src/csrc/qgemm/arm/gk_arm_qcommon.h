/* Helpers shared by the ARM64 int8 kernel families (gk_qgemm_u8s8_{neon,neondot,i8mm}.c).
 *
 * Everything here is static inline and uses only baseline AdvSIMD, so each family's
 * translation unit instantiates its own copy under its own -march flags; nothing here may
 * need dotprod or i8mm.
 *
 * Conventions (see include/gemmkit/gk_qgemm.h for the canonical problem):
 *  - a' = A ^ a_xor (uint8), b' = B ^ b_xor (int8).
 *  - "Biased B" families (neon, neondot) store b'' = b' ^ 0x80 = b' + 128 as uint8 so that
 *    unsigned u8 x u8 products can be used.  Then sum_k a' b'' = sum_k a' b' + 128 rowsum(a')
 *    and the bias is removed in the epilogue by using zb + 128 in place of zb:
 *        dot - rowsum*(zb + 128) == sum a'b' - rowsum*zb      (mod 2^32).
 *  - All int32 sums wrap modulo 2^32 (AdvSIMD integer adds/multiplies are modular, and the
 *    C side uses uint32_t), which is exactly ONNX's int32 overflow.
 */
#ifndef GEMMKIT_GK_ARM_QCOMMON_H
#define GEMMKIT_GK_ARM_QCOMMON_H

#include <arm_neon.h>
#include <string.h>

#include "gemmkit/gk_qgemm.h"

#if defined(__GNUC__) || defined(__clang__)
#define GK_ARM_INLINE static inline __attribute__((always_inline))
#else
#define GK_ARM_INLINE static inline
#endif

#define GK_ARM_MIN(x, y) ((x) < (y) ? (x) : (y))

/* ---------------------------------------------------------------------------------------
 * Packing.
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
 * of b'), accumulated modulo 2^32.
 * ------------------------------------------------------------------------------------- */
#define GK_ARM_PACK_MAXR 8

/* Stores the 8 bytes for k in [k8, k8 + 8) (k8 a multiple of 8) of panel row i. */
GK_ARM_INLINE void gk_arm_put8(uint8_t *panel, const int R, const int G, int i, int k8,
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
GK_ARM_INLINE void gk_arm_tr8x8(const uint8x8_t r[8], uint8x8_t out[8])
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
GK_ARM_INLINE void gk_arm_pack_panels(int rows, int k, const uint8_t *src, ptrdiff_t s_row,
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

/* ---------------------------------------------------------------------------------------
 * Epilogue: four consecutive output columns n..n+3 of row m, nv (1..4) of them valid.
 * Must equal gk_qepi_store1 bit for bit.
 * ------------------------------------------------------------------------------------- */

/* Loads nv (1..4) int32 values, zero-filling the rest; never reads past p[nv-1]. */
GK_ARM_INLINE int32x4_t gk_arm_load_s32(const int32_t *p, int nv)
{
    if (nv >= 4)
        return vld1q_s32(p);
    int32_t t[4] = {0, 0, 0, 0};
    for (int i = 0; i < nv; i++)
        t[i] = p[i];
    return vld1q_s32(t);
}

/* y = dot - rowsum * bzp - azp * ccorr, lane-wise modulo 2^32 (same value as the uint32_t
 * arithmetic of gk_qepi_store1). */
GK_ARM_INLINE int32x4_t gk_arm_correct(int32x4_t dot, int32_t rowsum, int32_t azp,
                                       int32x4_t bzp, int32x4_t ccorr)
{
    dot = vmlsq_n_s32(dot, bzp, rowsum);
    return vmlsq_n_s32(dot, ccorr, azp);
}

/* Requantizes two lanes with the same IEEE double operations, in the same order, as
 * gk_qepi_store1: int32 -> double and float -> double are exact; one double multiply (the
 * build uses -ffp-contract=off and nothing is fused here); FRINTN = round half to even,
 * which is nearbyint in the default rounding mode; one double add of the zero point; the
 * clamp (no NaN can occur: |x| <= 2^31 * FLT_MAX is finite; FMAX(-0.0, 0.0) = +0.0 converts
 * to the same integer 0).  The clamped value is an integer in [lo, hi], so FCVTZS is exact. */
GK_ARM_INLINE int64x2_t gk_arm_requant2(int32x2_t y, float32x2_t mult, int32x2_t yzp,
                                        float64x2_t lo, float64x2_t hi)
{
    float64x2_t x = vmulq_f64(vcvtq_f64_s64(vmovl_s32(y)), vcvt_f64_f32(mult));
    float64x2_t r = vaddq_f64(vrndnq_f64(x), vcvtq_f64_s64(vmovl_s32(yzp)));
    r = vminq_f64(vmaxq_f64(r, lo), hi);
    return vcvtq_s64_f64(r);
}

/* Stores the corrected values y of row m, columns n..n+nv-1 (nv in 1..4). */
GK_ARM_INLINE void gk_arm_store_row4(const gk_qepi *e, int m, int n, int32x4_t y, int nv)
{
    if (e->kind == GK_QOUT_I32) {
        int32_t *d = (int32_t *)e->y + ((ptrdiff_t)m * e->ldy + n);
        if (nv >= 4) {
            vst1q_s32(d, y);
        } else {
            int32_t t[4];
            vst1q_s32(t, y);
            for (int i = 0; i < nv; i++)
                d[i] = t[i];
        }
        return;
    }
    {
        const float *mp = e->mult + (m * e->mult_rs + n * e->mult_cs);
        const int32_t *zp = e->y_zp + (m * e->yzp_rs + n * e->yzp_cs);
        float32x4_t mult;
        int32x4_t yzp;
        if (e->mult_cs == 0) {
            mult = vdupq_n_f32(*mp);
        } else if (e->mult_cs == 1 && nv >= 4) {
            mult = vld1q_f32(mp);
        } else {
            float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int i = 0; i < nv; i++)
                t[i] = mp[i * e->mult_cs];
            mult = vld1q_f32(t);
        }
        if (e->yzp_cs == 0) {
            yzp = vdupq_n_s32(*zp);
        } else if (e->yzp_cs == 1 && nv >= 4) {
            yzp = vld1q_s32(zp);
        } else {
            int32_t t[4] = {0, 0, 0, 0};
            for (int i = 0; i < nv; i++)
                t[i] = zp[i * e->yzp_cs];
            yzp = vld1q_s32(t);
        }
        const int u8 = e->kind == GK_QOUT_U8;
        const float64x2_t lo = vdupq_n_f64(u8 ? 0.0 : -128.0);
        const float64x2_t hi = vdupq_n_f64(u8 ? 255.0 : 127.0);
        int64x2_t q0 = gk_arm_requant2(vget_low_s32(y), vget_low_f32(mult),
                                       vget_low_s32(yzp), lo, hi);
        int64x2_t q1 = gk_arm_requant2(vget_high_s32(y), vget_high_f32(mult),
                                       vget_high_s32(yzp), lo, hi);
        /* values lie in [-128, 255]: narrowing keeps the low 8 bits, which is the uint8 or
         * int8 representation of the value */
        int16x4_t h = vmovn_s32(vcombine_s32(vmovn_s64(q0), vmovn_s64(q1)));
        uint8x8_t bytes = vreinterpret_u8_s8(vmovn_s16(vcombine_s16(h, h)));
        uint8_t t[8];
        vst1_u8(t, bytes);
        memcpy((uint8_t *)e->y + ((ptrdiff_t)m * e->ldy + n), t, (size_t)(nv >= 4 ? 4 : nv));
    }
}

/* ---------------------------------------------------------------------------------------
 * Small-M path (baseline AdvSIMD, shared by all families).
 * Streams B (row-major, b_cs == 1) once in strips of 16 columns; per k, the 16 bytes of
 * B row k are biased to b'' = b' + 128 (uint8) and multiplied by the broadcast a'[m,k]:
 * each umull lane holds ONE product <= 255*255 = 65025 < 2^16, widened into uint32 by
 * uaddw before any addition.  Column sums of b'' are kept in uint16 lanes for at most
 * 256 rows (256*255 = 65280 < 2^16) and then flushed to uint32.
 *   colcorr = colsum(b') - K zb = colsum(b'') - K (zb + 128)        (mod 2^32)
 * and the bias of the dot is removed with zb + 128 as in the packed path.
 * ------------------------------------------------------------------------------------- */
#define GK_ARM_SMALLM_MAX 4

/* Epilogue of a small-M strip of nv (<= 16) columns from n0: acc[i][j] = sum_k a' b''
 * of row mbase + i, columns n0 + 4j .. n0 + 4j + 3; cs[j] = sum_k b'' of those columns
 * (b'' = b' + 128, both modulo 2^32). */
GK_ARM_INLINE void gk_arm_smallm_finish(const int M, int mbase, int n0, int nv, int k,
                                        uint32x4_t acc[][4], const uint32x4_t cs[4],
                                        const gk_qepi *e)
{
    for (int j = 0; j < 4; j++) {
        const int nvj = nv - 4 * j;
        if (nvj <= 0)
            break;
        const int n = n0 + 4 * j;
        const int32x4_t bzp = vaddq_s32(gk_arm_load_s32(e->b_zp + n, nvj), vdupq_n_s32(128));
        const int32x4_t ccorr = vmlsq_n_s32(vreinterpretq_s32_u32(cs[j]), bzp, k);
        for (int i = 0; i < M; i++) {
            const int m = mbase + i;
            int32x4_t y = gk_arm_correct(vreinterpretq_s32_u32(acc[i][j]), e->a_rowsum[m],
                                         e->a_zp[m], bzp, ccorr);
            gk_arm_store_row4(e, m, n, y, GK_ARM_MIN(nvj, 4));
        }
    }
}

/* The 16 bytes of B row bp for a strip of nv columns, zero past nv (never read). */
GK_ARM_INLINE uint8x16_t gk_arm_load_b16(const uint8_t *bp, int nv)
{
    if (nv >= 16)
        return vld1q_u8(bp);
    uint8_t t[16] = {0};
    memcpy(t, bp, (size_t)nv);
    return vld1q_u8(t);
}

GK_ARM_INLINE void gk_arm_smallm_zero(const int M, uint32x4_t acc[][4], uint32x4_t cs[4])
{
    for (int j = 0; j < 4; j++) {
        cs[j] = vdupq_n_u32(0);
        for (int i = 0; i < M; i++)
            acc[i][j] = vdupq_n_u32(0);
    }
}

/* The body of a gk_qgemm_smallm_fn (parameters m, n, k, a, a_rs, a_cs, a_xor, b, b_rs,
 * b_xor, e in scope): strip(M, m0, n0, nv, ...) over groups of M <= GK_ARM_SMALLM_MAX rows
 * and strips of nv <= 16 columns, M a compile-time constant in each call.  Any m works,
 * but B is re-streamed per group of rows, so families advertise GK_ARM_SMALLM_MAX. */
#define GK_ARM_SMALLM_BODY(strip)                                                                \
    for (int m0 = 0; m0 < m; m0 += GK_ARM_SMALLM_MAX) {                                          \
        const int mv = GK_ARM_MIN(GK_ARM_SMALLM_MAX, m - m0);                                    \
        for (int n0 = 0; n0 < n; n0 += 16) {                                                     \
            const int nv = GK_ARM_MIN(16, n - n0);                                               \
            switch (mv) {                                                                        \
            case 1: strip(1, m0, n0, nv, k, a, a_rs, a_cs, a_xor, b, b_rs, b_xor, e); break;     \
            case 2: strip(2, m0, n0, nv, k, a, a_rs, a_cs, a_xor, b, b_rs, b_xor, e); break;     \
            case 3: strip(3, m0, n0, nv, k, a, a_rs, a_cs, a_xor, b, b_rs, b_xor, e); break;     \
            default: strip(4, m0, n0, nv, k, a, a_rs, a_cs, a_xor, b, b_rs, b_xor, e); break;    \
            }                                                                                    \
        }                                                                                        \
    }

GK_ARM_INLINE void gk_arm_smallm_strip(const int M, int mbase, int n0, int nv, int k,
                                       const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                                       uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs,
                                       uint8_t b_xor, const gk_qepi *e)
{
    uint32x4_t acc[GK_ARM_SMALLM_MAX][4];
    uint32x4_t cs[4];
    const uint8x16_t bias = vdupq_n_u8((uint8_t)(b_xor ^ 0x80));
    gk_arm_smallm_zero(M, acc, cs);
    for (int k0 = 0; k0 < k; k0 += 256) {
        const int k1 = GK_ARM_MIN(k, k0 + 256);
        uint16x8_t cs16_0 = vdupq_n_u16(0), cs16_1 = vdupq_n_u16(0);
        for (int kk = k0; kk < k1; kk++) {
            const uint8x16_t v = veorq_u8(gk_arm_load_b16(b + ((ptrdiff_t)kk * b_rs + n0), nv), bias);
            cs16_0 = vaddw_u8(cs16_0, vget_low_u8(v));
            cs16_1 = vaddw_high_u8(cs16_1, v);
            for (int i = 0; i < M; i++) {
                const uint8_t av =
                    (uint8_t)(a[(ptrdiff_t)(mbase + i) * a_rs + (ptrdiff_t)kk * a_cs] ^ a_xor);
                uint16x8_t p0 = vmull_u8(vget_low_u8(v), vdup_n_u8(av));
                uint16x8_t p1 = vmull_high_u8(v, vdupq_n_u8(av));
                acc[i][0] = vaddw_u16(acc[i][0], vget_low_u16(p0));
                acc[i][1] = vaddw_high_u16(acc[i][1], p0);
                acc[i][2] = vaddw_u16(acc[i][2], vget_low_u16(p1));
                acc[i][3] = vaddw_high_u16(acc[i][3], p1);
            }
        }
        cs[0] = vaddw_u16(cs[0], vget_low_u16(cs16_0));
        cs[1] = vaddw_high_u16(cs[1], cs16_0);
        cs[2] = vaddw_u16(cs[2], vget_low_u16(cs16_1));
        cs[3] = vaddw_high_u16(cs[3], cs16_1);
    }
    gk_arm_smallm_finish(M, mbase, n0, nv, k, acc, cs, e);
}

/* The gk_qgemm_smallm_fn of the families without FEAT_DotProd. */
static inline void gk_arm_smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs,
                                 ptrdiff_t a_cs, uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs,
                                 uint8_t b_xor, const gk_qepi *e)
{
    GK_ARM_SMALLM_BODY(gk_arm_smallm_strip)
}

#endif
