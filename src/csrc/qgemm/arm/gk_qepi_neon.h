/* The fused epilogue of the ARM64 int8 families on 4 int32 lanes (AdvSIMD; not a
 * template: one width): four consecutive output columns n..n+3 of row m, nv (1..4) of them
 * valid.  Must equal the scalar reference gk_qepi_store1 (gk_qgemm.h) bit for bit.  Any
 * multiplier / y_zp strides (gathered lane by lane when not broadcast or contiguous). */
#ifndef GEMMKIT_GK_QEPI_NEON_H
#define GEMMKIT_GK_QEPI_NEON_H

#include "gk_qgemm_arm_common.h"

/* Loads nv (1..4) int32 values, zero-filling the rest; never reads past p[nv-1]. */
GK_ALWAYS_INLINE int32x4_t gk_arm_load_s32(const int32_t *p, int nv)
{
    if (nv >= 4)
        return vld1q_s32(p);
    int32_t t[4] = {0, 0, 0, 0};
    for (int i = 0; i < nv; i++)
        t[i] = p[i];
    return vld1q_s32(t);
}

/* Stores the first nv (1..4) lanes of v; never writes past p[nv-1]. */
GK_ALWAYS_INLINE void gk_arm_store_s32(int32_t *p, int32x4_t v, int nv)
{
    if (nv >= 4) {
        vst1q_s32(p, v);
        return;
    }
    int32_t t[4];
    vst1q_s32(t, v);
    for (int i = 0; i < nv; i++)
        p[i] = t[i];
}

/* The partial-sum step of a depth block (gk_qepi.part_mode) on the raw dot products of
 * row m, columns n..n+nv-1 (nv in 1..4): 0 after STORE / ACC (done), 1 for NONE / FINISH
 * with *dot the sum to finish.  vaddq_s32 wraps mod 2^32 like the reference. */
GK_ALWAYS_INLINE int gk_arm_part_row4(const gk_qepi *e, int m, int n, int32x4_t *dot, int nv)
{
    if (e->part_mode == GK_QPART_NONE)
        return 1;
    int32_t *p = gk_qepi_part_at(e, m, n);
    int32x4_t s = *dot;
    if (e->part_mode != GK_QPART_STORE)
        s = vaddq_s32(s, gk_arm_load_s32(p, nv));
    if (e->part_mode == GK_QPART_FINISH) {
        *dot = s;
        return 1;
    }
    gk_arm_store_s32(p, s, nv);
    return 0;
}

/* y = dot - rowsum * bzp - azp * ccorr, lane-wise modulo 2^32 (same value as the uint32_t
 * arithmetic of gk_qepi_store1). */
GK_ALWAYS_INLINE int32x4_t gk_arm_correct(int32x4_t dot, int32_t rowsum, int32_t azp,
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
GK_ALWAYS_INLINE int64x2_t gk_arm_requant2(int32x2_t y, float32x2_t mult, int32x2_t yzp,
                                           float64x2_t lo, float64x2_t hi)
{
    float64x2_t x = vmulq_f64(vcvtq_f64_s64(vmovl_s32(y)), vcvt_f64_f32(mult));
    float64x2_t r = vaddq_f64(vrndnq_f64(x), vcvtq_f64_s64(vmovl_s32(yzp)));
    r = vminq_f64(vmaxq_f64(r, lo), hi);
    return vcvtq_s64_f64(r);
}

/* Stores the corrected values y of row m, columns n..n+nv-1 (nv in 1..4). */
GK_ALWAYS_INLINE void gk_arm_store_row4(const gk_qepi *e, int m, int n, int32x4_t y, int nv)
{
    if (e->kind == GK_QOUT_I32) {
        gk_arm_store_s32((int32_t *)e->y + ((ptrdiff_t)m * e->ldy + n), y, nv);
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

#endif
