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
#if defined(_MSC_VER) && !defined(__clang__)
/* MSVC has no -march=...+i8mm: such builds do not get this family (an empty translation
 * unit; the dispatcher lists the family only where GK_HAVE_I8MM is defined). */
typedef int gk_qgemm_u8s8_i8mm_not_built;
#else
#if !defined(__ARM_FEATURE_DOTPROD) || !defined(__ARM_FEATURE_MATMUL_INT8)
#error "gk_qgemm_u8s8_i8mm.c needs FEAT_DotProd and FEAT_I8MM (-march=armv8.2-a+dotprod+i8mm)"
#endif

#include "gk_qgemm_arm_common.h"
#include "gk_qepi_neon.h"
#include "gk_qpack_arm.h"

#define GK_I8MM_MR 8
#define GK_I8MM_NR 8
#define GK_I8MM_KS 8

/* ---------------------------------------------------------------- packing */

static void gk_qgemm_u8s8_i8mm_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs,
                                      ptrdiff_t cs, uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_arm_pack_panels(mc, k, a, rs, cs, a_xor, a_xor, 0, GK_I8MM_MR, GK_I8MM_KS, (uint8_t *)dst,
                       rowsum);
}

/* B stored as b' itself; the column sums are of b'. */
static void gk_qgemm_u8s8_i8mm_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs,
                                      ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_arm_pack_panels(nc, k, b, cs, rs, b_xor, b_xor, 1, GK_I8MM_NR, GK_I8MM_KS,
                       (uint8_t *)dst, colsum);
}

/* ---------------------------------------------------------------- micro-kernel */

#define GK_MM(p, q) acc[p][q] = vusmmlaq_s32(acc[p][q], a##p, b##q)

static void gk_qgemm_u8s8_i8mm_8x8_ukernel(int mr_valid, int nr_valid, int kp,
                                           const void *a_panel, const void *b_panel,
                                           const gk_qepi *epi, int m0, int n0)
{
    const uint8_t *a = (const uint8_t *)a_panel;
    const int8_t *b = (const int8_t *)b_panel;
    int32x4_t acc[GK_I8MM_MR / 2][GK_I8MM_NR / 2];
    for (int p = 0; p < GK_I8MM_MR / 2; p++)
        for (int q = 0; q < GK_I8MM_NR / 2; q++)
            acc[p][q] = vdupq_n_s32(0);

    for (int kb = 0; kb < kp; kb += GK_I8MM_KS) {
        const uint8x16_t a0 = vld1q_u8(a), a1 = vld1q_u8(a + 16), a2 = vld1q_u8(a + 32),
                         a3 = vld1q_u8(a + 48);
        const int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16), b2 = vld1q_s8(b + 32),
                        b3 = vld1q_s8(b + 48);
        GK_MM(0, 0); GK_MM(0, 1); GK_MM(0, 2); GK_MM(0, 3);
        GK_MM(1, 0); GK_MM(1, 1); GK_MM(1, 2); GK_MM(1, 3);
        GK_MM(2, 0); GK_MM(2, 1); GK_MM(2, 2); GK_MM(2, 3);
        GK_MM(3, 0); GK_MM(3, 1); GK_MM(3, 2); GK_MM(3, 3);
        a += GK_I8MM_MR * GK_I8MM_KS;
        b += GK_I8MM_NR * GK_I8MM_KS;
    }

    for (int h = 0; h < 2; h++) {
        const int nv = GK_ARM_MIN(nr_valid - 4 * h, 4);
        if (nv <= 0)
            break;
        const int n = n0 + 4 * h;
        const int32x4_t bzp = gk_arm_load_s32(epi->b_zp + n, nv);
        const int32x4_t ccorr = gk_arm_load_s32(epi->b_colcorr + n, nv);
        for (int p = 0; p < GK_I8MM_MR / 2; p++) {
            const int64x2_t lo = vreinterpretq_s64_s32(acc[p][2 * h]);
            const int64x2_t hi = vreinterpretq_s64_s32(acc[p][2 * h + 1]);
            for (int r = 0; r < 2; r++) {
                const int i = 2 * p + r;
                if (i >= mr_valid)
                    break;
                const int m = m0 + i;
                int32x4_t dot = vreinterpretq_s32_s64(r == 0 ? vzip1q_s64(lo, hi)
                                                             : vzip2q_s64(lo, hi));
                if (!gk_arm_part_row4(epi, m, n, &dot, nv))
                    continue; /* a depth block's partial sums, stored */
                int32x4_t y = gk_arm_correct(dot, epi->a_rowsum[m], epi->a_zp[m], bzp, ccorr);
                gk_arm_store_row4(epi, m, n, y, nv);
            }
        }
    }
}
#undef GK_MM

/* ---------------------------------------------------------------- small M */

#define GK_SMA_UDOT 1
#define GK_SMA_NAME gk_qgemm_u8s8_i8mm_smallm
#include "gk_qsmallm_arm.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_i8mm = {
    "i8mm", GK_I8MM_MR, GK_I8MM_NR, GK_I8MM_KS, 1, 1,
    gk_qgemm_u8s8_i8mm_pack_a, gk_qgemm_u8s8_i8mm_pack_b, gk_qgemm_u8s8_i8mm_8x8_ukernel,
    GK_ARM_SMALLM_MAX, gk_qgemm_u8s8_i8mm_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
};

#endif /* MSVC */
