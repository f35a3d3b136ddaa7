/* Scalar float64 Gemm micro-kernel: the oracle every SIMD family of these
 * types must match (within the double rounding bounds; summation order is increasing k).
 * Built without auto-vectorisation (setup.py's scalar group).
 *
 * Tile 4 x 4; cache blocks MC=64 (packed A block 64*256*8 B = 128 KiB, sized for
 * L2), KC=256, NC=512 (packed B block 256*512*8 B = 1024 KiB, sized for L3). */
#include "gemmkit/gk_gemm.h"

#define MR 4
#define NR 4

static void ukernel(int kc, const void *a_panel, const void *b_panel, void *tile)
{
    const double *a = (const double *)a_panel;
    const double *b = (const double *)b_panel;
    double *t = (double *)tile;
    double acc[MR][NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        for (int i = 0; i < MR; i++) {
            for (int j = 0; j < NR; j++) {
                acc[i][j] += a[(ptrdiff_t)k * MR + i] * b[(ptrdiff_t)k * NR + j]; /* no FMA: -ffp-contract=off */
            }
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++)
            t[i * NR + j] = acc[i][j];
}

const gk_gemm_kernel gk_gemm_f64_scalar = {
    "scalar", GK_DT_F64, GK_ACC_F64, MR, NR, 64, 256, 512,
    gk_gemm_pack_a_f64, gk_gemm_pack_b_f64, ukernel,
};
