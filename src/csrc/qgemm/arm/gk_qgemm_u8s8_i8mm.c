/* ARM64 int8 matrix-multiply kernel family "i8mm" (FEAT_I8MM, compiled with
 * -march=armv8.2-a+dotprod+i8mm, run only when detection reports it): 8x8 tiles, kstep 8.
 *
 * Exactness: USMMLA multiplies the canonical operands directly, a' (uint8) by b' (int8):
 * each product lies in [-32640, 32385] and eight of them are added into an int32 lane
 * (|sum| <= 261120 per instruction), wrapping modulo 2^32 across instructions like the
 * oracle.  No bias, no correction beyond the contract's epilogue.
 *
 * Packing (gk_arm_pack_panels with R = 8, G = 8): per k-block of 8, the 8 k bytes of row
 * 0, row 1, ..., row 7 (64 bytes).  Vector p (bytes 16p..16p+15) is then rows 2p and
 * 2p+1, exactly the 2x8 operand USMMLA takes; B is packed the same way by columns.
 * acc[p][q] is the 2x2 block {rows 2p, 2p+1} x {cols 2q, 2q+1}, row-major in its lanes;
 * ZIP1/ZIP2 on 64-bit lanes of acc[p][2h], acc[p][2h+1] give rows 2p and 2p+1 over
 * columns 4h..4h+3. */
#include "gk_arm_qcommon.h"
#include "gk_arm_qdot_smallm.h"

#define MR 8
#define NR 8
#define KS 8

#define GK_ARM_B_STORE_BIAS 0
#include "gk_arm_qpack_fns.h"

#define GK_MM(p, q) acc[p][q] = vusmmlaq_s32(acc[p][q], a##p, b##q)

static void ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel,
                    const void *b_panel, const gk_qepi *epi, int m0, int n0)
{
    const uint8_t *a = (const uint8_t *)a_panel;
    const int8_t *b = (const int8_t *)b_panel;
    int32x4_t acc[MR / 2][NR / 2];
    for (int p = 0; p < MR / 2; p++)
        for (int q = 0; q < NR / 2; q++)
            acc[p][q] = vdupq_n_s32(0);

    for (int kb = 0; kb < kp; kb += KS) {
        const uint8x16_t a0 = vld1q_u8(a), a1 = vld1q_u8(a + 16), a2 = vld1q_u8(a + 32),
                         a3 = vld1q_u8(a + 48);
        const int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16), b2 = vld1q_s8(b + 32),
                        b3 = vld1q_s8(b + 48);
        GK_MM(0, 0); GK_MM(0, 1); GK_MM(0, 2); GK_MM(0, 3);
        GK_MM(1, 0); GK_MM(1, 1); GK_MM(1, 2); GK_MM(1, 3);
        GK_MM(2, 0); GK_MM(2, 1); GK_MM(2, 2); GK_MM(2, 3);
        GK_MM(3, 0); GK_MM(3, 1); GK_MM(3, 2); GK_MM(3, 3);
        a += MR * KS;
        b += NR * KS;
    }

    for (int h = 0; h < 2; h++) {
        const int nv = GK_ARM_MIN(nr_valid - 4 * h, 4);
        if (nv <= 0)
            break;
        const int n = n0 + 4 * h;
        const int32x4_t bzp = gk_arm_load_s32(epi->b_zp + n, nv);
        const int32x4_t ccorr = gk_arm_load_s32(epi->b_colcorr + n, nv);
        for (int p = 0; p < MR / 2; p++) {
            const int64x2_t lo = vreinterpretq_s64_s32(acc[p][2 * h]);
            const int64x2_t hi = vreinterpretq_s64_s32(acc[p][2 * h + 1]);
            for (int r = 0; r < 2; r++) {
                const int i = 2 * p + r;
                if (i >= mr_valid)
                    break;
                const int m = m0 + i;
                int32x4_t dot = vreinterpretq_s32_s64(r == 0 ? vzip1q_s64(lo, hi)
                                                             : vzip2q_s64(lo, hi));
                int32x4_t y = gk_arm_correct(dot, epi->a_rowsum[m], epi->a_zp[m], bzp, ccorr);
                gk_arm_store_row4(epi, m, n, y, nv);
            }
        }
    }
}

const gk_qgemm_kernel gk_qgemm_u8s8_i8mm = {
    "i8mm", MR, NR, KS, 1, 1, pack_a, pack_b, ukernel,
    GK_ARM_SMALLM_MAX, gk_arm_dot_smallm,
};
