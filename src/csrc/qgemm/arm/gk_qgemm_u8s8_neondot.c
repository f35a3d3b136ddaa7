/* ARM64 dot-product int8 kernel family "neondot" (FEAT_DotProd, compiled with
 * -march=armv8.2-a+dotprod, run only when detection reports it): 8x8 tiles, kstep 4.
 *
 * Exactness: A is packed as a' in [0, 255], B biased as b'' = b' + 128 in [0, 255], and
 * UDOT adds four exact products (each <= 65025, together <= 260100) into a uint32 lane,
 * wrapping modulo 2^32 like the oracle.  The dot is sum a'b' + 128 rowsum(a'); the
 * epilogue removes the bias with zb + 128 in place of zb (see gk_qgemm_arm_common.h).
 *
 * Packing (gk_arm_pack_panels with R = 8, G = 4): per k-block of 4, the 4 k bytes of row
 * 0, row 1, ..., row 7 (32 bytes = two vectors holding rows 0-3 and 4-7); same for B with
 * columns.  UDOT by element: acc[i][h] lane j += dot(B col 4h+j, A row i), so each
 * accumulator is four consecutive output columns of one row, ready for the epilogue. */
#if defined(_MSC_VER) && !defined(__clang__)
/* MSVC has no -march=...+dotprod: such builds do not get this family (an empty translation
 * unit; the dispatcher lists the family only where GK_HAVE_NEONDOT is defined). */
typedef int gk_qgemm_u8s8_neondot_not_built;
#else
#if !defined(__ARM_FEATURE_DOTPROD)
#error "gk_qgemm_u8s8_neondot.c needs FEAT_DotProd (-march=armv8.2-a+dotprod)"
#endif

#include "gk_qgemm_arm_common.h"
#include "gk_qepi_neon.h"
#include "gk_qpack_arm.h"

#define GK_NEONDOT_MR 8
#define GK_NEONDOT_NR 8
#define GK_NEONDOT_KS 4

/* ---------------------------------------------------------------- packing */

static void gk_qgemm_u8s8_neondot_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs,
                                         ptrdiff_t cs, uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_arm_pack_panels(mc, k, a, rs, cs, a_xor, a_xor, 0, GK_NEONDOT_MR, GK_NEONDOT_KS, (uint8_t *)dst,
                       rowsum);
}

/* B biased, b'' = b' + 128 stored as uint8; the column sums are of b'. */
static void gk_qgemm_u8s8_neondot_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs,
                                         ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_arm_pack_panels(nc, k, b, cs, rs, (uint8_t)(b_xor ^ 0x80), b_xor, 1, GK_NEONDOT_NR, GK_NEONDOT_KS,
                       (uint8_t *)dst, colsum);
}

/* ---------------------------------------------------------------- micro-kernel */

/* rows 4q..4q+3 come from vector aq, lane = row % 4 (lane must be a constant) */
#define GK_ROW(i, aq, lane)                                            \
    do {                                                               \
        acc[i][0] = vdotq_laneq_u32(acc[i][0], b0, aq, lane);          \
        acc[i][1] = vdotq_laneq_u32(acc[i][1], b1, aq, lane);          \
    } while (0)

static void gk_qgemm_u8s8_neondot_8x8_ukernel(int mr_valid, int nr_valid, int kp,
                                              const void *a_panel, const void *b_panel,
                                              const gk_qepi *epi, int m0, int n0)
{
    const uint8_t *a = (const uint8_t *)a_panel;
    const uint8_t *b = (const uint8_t *)b_panel;
    uint32x4_t acc[GK_NEONDOT_MR][2];
    for (int i = 0; i < GK_NEONDOT_MR; i++) {
        acc[i][0] = vdupq_n_u32(0);
        acc[i][1] = vdupq_n_u32(0);
    }

    for (int kb = 0; kb < kp; kb += GK_NEONDOT_KS) {
        const uint8x16_t a0 = vld1q_u8(a), a1 = vld1q_u8(a + 16);
        const uint8x16_t b0 = vld1q_u8(b), b1 = vld1q_u8(b + 16);
        GK_ROW(0, a0, 0); GK_ROW(1, a0, 1); GK_ROW(2, a0, 2); GK_ROW(3, a0, 3);
        GK_ROW(4, a1, 0); GK_ROW(5, a1, 1); GK_ROW(6, a1, 2); GK_ROW(7, a1, 3);
        a += GK_NEONDOT_MR * GK_NEONDOT_KS;
        b += GK_NEONDOT_NR * GK_NEONDOT_KS;
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
            int32x4_t dot = vreinterpretq_s32_u32(acc[i][h]);
            if (!gk_arm_part_row4(epi, m, n, &dot, nv))
                continue; /* a depth block's partial sums, stored */
            int32x4_t y = gk_arm_correct(dot, epi->a_rowsum[m], epi->a_zp[m], bzp, ccorr);
            gk_arm_store_row4(epi, m, n, y, nv);
        }
    }
}
#undef GK_ROW

/* ---------------------------------------------------------------- small M */

#define GK_SMA_UDOT 1
#define GK_SMA_NAME gk_qgemm_u8s8_neondot_smallm
#include "gk_qsmallm_arm.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_neondot = {
    "neondot", GK_NEONDOT_MR, GK_NEONDOT_NR, GK_NEONDOT_KS, 1, 1,
    gk_qgemm_u8s8_neondot_pack_a, gk_qgemm_u8s8_neondot_pack_b, gk_qgemm_u8s8_neondot_8x8_ukernel,
    GK_ARM_SMALLM_MAX, gk_qgemm_u8s8_neondot_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
};

#endif /* MSVC */
