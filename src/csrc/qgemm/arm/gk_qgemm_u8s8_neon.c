/* ARM64 baseline (AdvSIMD only) int8 kernel family "neon": 4x4 tiles, kstep 16.
 *
 * Exactness: B is packed biased, b'' = b' + 128 in [0, 255] (uint8), A as a' in [0, 255].
 * UMULL/UMULL2 put ONE product per uint16 lane (<= 255 * 255 = 65025 < 2^16) and UADALP
 * adds adjacent pairs straight into uint32 lanes, so no two products ever meet in a
 * 16-bit lane.  The uint32 sums wrap modulo 2^32 like the oracle's.  The dot so obtained
 * is sum a'b' + 128 rowsum(a'); the epilogue removes the bias with zb + 128 in place of
 * zb (see gk_qgemm_arm_common.h).
 *
 * Packing (gk_arm_pack_panels with R = 4, G = 16): per k-block of 16, the 16 k bytes of
 * row 0, then row 1, ..., row 3 (64 bytes); same for B with columns.  Each accumulator
 * acc[i][j] (uint32x4) holds four partial sums of output (i, j) along k ("k-inner"); the
 * tile is reduced with three ADDP per row into one vector of four columns. */
#include "gk_qgemm_arm_common.h"
#include "gk_qepi_neon.h"
#include "gk_qpack_arm.h"

#define GK_NEON_MR 4
#define GK_NEON_NR 4
#define GK_NEON_KS 16

/* ---------------------------------------------------------------- packing */

static void gk_qgemm_u8s8_neon_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs,
                                      ptrdiff_t cs, uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_arm_pack_panels(mc, k, a, rs, cs, a_xor, a_xor, 0, GK_NEON_MR, GK_NEON_KS, (uint8_t *)dst,
                       rowsum);
}

/* B biased, b'' = b' + 128 stored as uint8; the column sums are of b'. */
static void gk_qgemm_u8s8_neon_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs,
                                      ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_arm_pack_panels(nc, k, b, cs, rs, (uint8_t)(b_xor ^ 0x80), b_xor, 1, GK_NEON_NR, GK_NEON_KS,
                       (uint8_t *)dst, colsum);
}

/* ---------------------------------------------------------------- micro-kernel */

#define GK_MAC(i, j)                                                                     \
    do {                                                                                 \
        acc[i][j] = vpadalq_u16(acc[i][j], vmull_u8(vget_low_u8(a##i), vget_low_u8(b##j))); \
        acc[i][j] = vpadalq_u16(acc[i][j], vmull_high_u8(a##i, b##j));                   \
    } while (0)

static void gk_qgemm_u8s8_neon_4x4_ukernel(int mr_valid, int nr_valid, int kp,
                                           const void *a_panel, const void *b_panel,
                                           const gk_qepi *epi, int m0, int n0)
{
    const uint8_t *a = (const uint8_t *)a_panel;
    const uint8_t *b = (const uint8_t *)b_panel;
    uint32x4_t acc[GK_NEON_MR][GK_NEON_NR];
    for (int i = 0; i < GK_NEON_MR; i++)
        for (int j = 0; j < GK_NEON_NR; j++)
            acc[i][j] = vdupq_n_u32(0);

    for (int kb = 0; kb < kp; kb += GK_NEON_KS) {
        const uint8x16_t a0 = vld1q_u8(a), a1 = vld1q_u8(a + 16), a2 = vld1q_u8(a + 32),
                         a3 = vld1q_u8(a + 48);
        const uint8x16_t b0 = vld1q_u8(b), b1 = vld1q_u8(b + 16), b2 = vld1q_u8(b + 32),
                         b3 = vld1q_u8(b + 48);
        GK_MAC(0, 0); GK_MAC(0, 1); GK_MAC(0, 2); GK_MAC(0, 3);
        GK_MAC(1, 0); GK_MAC(1, 1); GK_MAC(1, 2); GK_MAC(1, 3);
        GK_MAC(2, 0); GK_MAC(2, 1); GK_MAC(2, 2); GK_MAC(2, 3);
        GK_MAC(3, 0); GK_MAC(3, 1); GK_MAC(3, 2); GK_MAC(3, 3);
        a += GK_NEON_MR * GK_NEON_KS;
        b += GK_NEON_NR * GK_NEON_KS;
    }

    {
        const int nv = GK_ARM_MIN(nr_valid, GK_NEON_NR);
        const int32x4_t bzp =
            vaddq_s32(gk_arm_load_s32(epi->b_zp + n0, nv), vdupq_n_s32(128));
        const int32x4_t ccorr = gk_arm_load_s32(epi->b_colcorr + n0, nv);
        for (int i = 0; i < mr_valid; i++) {
            const int m = m0 + i;
            /* [sum(i,0), sum(i,1), sum(i,2), sum(i,3)] */
            uint32x4_t s = vpaddq_u32(vpaddq_u32(acc[i][0], acc[i][1]),
                                      vpaddq_u32(acc[i][2], acc[i][3]));
            int32x4_t dot = vreinterpretq_s32_u32(s);
            if (!gk_arm_part_row4(epi, m, n0, &dot, nv))
                continue; /* a depth block's partial sums, stored */
            int32x4_t y = gk_arm_correct(dot, epi->a_rowsum[m], epi->a_zp[m], bzp, ccorr);
            gk_arm_store_row4(epi, m, n0, y, nv);
        }
    }
}
#undef GK_MAC

/* ---------------------------------------------------------------- small M */

#define GK_SMA_UDOT 0
#define GK_SMA_NAME gk_qgemm_u8s8_neon_smallm
#include "gk_qsmallm_arm.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_neon = {
    "neon", GK_NEON_MR, GK_NEON_NR, GK_NEON_KS, 1, 1,
    gk_qgemm_u8s8_neon_pack_a, gk_qgemm_u8s8_neon_pack_b, gk_qgemm_u8s8_neon_4x4_ukernel,
    GK_ARM_SMALLM_MAX, gk_qgemm_u8s8_neon_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
};
