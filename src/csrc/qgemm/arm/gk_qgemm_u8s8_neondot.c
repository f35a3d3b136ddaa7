/* ARM64 dot-product int8 kernel family "neondot" (FEAT_DotProd, compiled with
 * -march=armv8.2-a+dotprod, run only when detection reports it): 8x8 tiles, kstep 4.
 *
 * Exactness: A is packed as a' in [0, 255], B biased as b'' = b' + 128 in [0, 255], and
 * UDOT adds four exact products (each <= 65025, together <= 260100) into a uint32 lane,
 * wrapping modulo 2^32 like the oracle.  The dot is sum a'b' + 128 rowsum(a'); the
 * epilogue removes the bias with zb + 128 in place of zb (see gk_arm_qcommon.h).
 *
 * Packing (gk_arm_pack_panels with R = 8, G = 4): per k-block of 4, the 4 k bytes of row
 * 0, row 1, ..., row 7 (32 bytes = two vectors holding rows 0-3 and 4-7); same for B with
 * columns.  UDOT by element: acc[i][h] lane j += dot(B col 4h+j, A row i), so each
 * accumulator is four consecutive output columns of one row, ready for the epilogue. */
#include "gk_arm_qcommon.h"
#include "gk_arm_qdot_smallm.h"

#define MR 8
#define NR 8
#define KS 4

#define GK_ARM_B_STORE_BIAS 0x80
#include "gk_arm_qpack_fns.h"

/* rows 4q..4q+3 come from vector aq, lane = row % 4 (lane must be a constant) */
#define GK_ROW(i, aq, lane)                                            \
    do {                                                               \
        acc[i][0] = vdotq_laneq_u32(acc[i][0], b0, aq, lane);          \
        acc[i][1] = vdotq_laneq_u32(acc[i][1], b1, aq, lane);          \
    } while (0)

static void ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel,
                    const void *b_panel, const gk_qepi *epi, int m0, int n0)
{
    const uint8_t *a = (const uint8_t *)a_panel;
    const uint8_t *b = (const uint8_t *)b_panel;
    uint32x4_t acc[MR][2];
    for (int i = 0; i < MR; i++) {
        acc[i][0] = vdupq_n_u32(0);
        acc[i][1] = vdupq_n_u32(0);
    }

    for (int kb = 0; kb < kp; kb += KS) {
        const uint8x16_t a0 = vld1q_u8(a), a1 = vld1q_u8(a + 16);
        const uint8x16_t b0 = vld1q_u8(b), b1 = vld1q_u8(b + 16);
        GK_ROW(0, a0, 0); GK_ROW(1, a0, 1); GK_ROW(2, a0, 2); GK_ROW(3, a0, 3);
        GK_ROW(4, a1, 0); GK_ROW(5, a1, 1); GK_ROW(6, a1, 2); GK_ROW(7, a1, 3);
        a += MR * KS;
        b += NR * KS;
    }

    for (int h = 0; h < 2; h++) {
        const int nv = GK_ARM_MIN(nr_valid - 4 * h, 4);
        if (nv <= 0)
            break;
        const int n = n0 + 4 * h;
        const int32x4_t bzp =
            vaddq_s32(gk_arm_load_s32(epi->b_zp + n, nv), vdupq_n_s32(128));
        const int32x4_t ccorr = gk_arm_load_s32(epi->b_colcorr + n, nv);
        for (int i = 0; i < mr_valid; i++) {
            const int m = m0 + i;
            int32x4_t y = gk_arm_correct(vreinterpretq_s32_u32(acc[i][h]), epi->a_rowsum[m],
                                         epi->a_zp[m], bzp, ccorr);
            gk_arm_store_row4(epi, m, n, y, nv);
        }
    }
}

const gk_qgemm_kernel gk_qgemm_u8s8_neondot = {
    "neondot", MR, NR, KS, 1, 1, pack_a, pack_b, ukernel,
    GK_ARM_SMALLM_MAX, gk_arm_dot_smallm,
};
