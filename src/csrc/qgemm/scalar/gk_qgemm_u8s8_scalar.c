/* The scalar int8 oracle: every SIMD path must equal it bit for bit.
 * Built without auto-vectorisation (setup.py's "scalar" group).
 *
 * Packing format (kstep 1, one byte per element):
 *   A panel: kp x MR bytes, element (i, k) at [k * MR + i]
 *   B panel: kp x NR bytes, element (k, j) at [k * NR + j]
 * Sums are kept in uint32_t: wrap-around modulo 2**32 is exactly ONNX's int32 overflow. */
#include "gemmkit/gk_qgemm.h"

#define GK_SCALAR_MR 4
#define GK_SCALAR_NR 4

static void gk_qgemm_u8s8_scalar_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs,
                                        ptrdiff_t cs, uint8_t a_xor, void *dst, int32_t *rowsum)
{
    uint8_t *d = (uint8_t *)dst;
    for (int i0 = 0; i0 < mc; i0 += GK_SCALAR_MR) {
        for (int kk = 0; kk < k; kk++) {
            for (int i = 0; i < GK_SCALAR_MR; i++) {
                int row = i0 + i;
                d[(ptrdiff_t)kk * GK_SCALAR_MR + i] =
                    row < mc ? (uint8_t)(a[row * rs + kk * cs] ^ a_xor) : 0;
            }
        }
        d += (ptrdiff_t)k * GK_SCALAR_MR;
    }
    for (int i = 0; i < mc; i++) {
        uint32_t s = 0;
        for (int kk = 0; kk < k; kk++)
            s += (uint8_t)(a[i * rs + kk * cs] ^ a_xor);
        rowsum[i] = (int32_t)s;
    }
}

static void gk_qgemm_u8s8_scalar_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs,
                                        ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    int8_t *d = (int8_t *)dst;
    for (int j0 = 0; j0 < nc; j0 += GK_SCALAR_NR) {
        for (int kk = 0; kk < k; kk++) {
            for (int j = 0; j < GK_SCALAR_NR; j++) {
                int col = j0 + j;
                d[(ptrdiff_t)kk * GK_SCALAR_NR + j] =
                    col < nc ? (int8_t)(b[kk * rs + col * cs] ^ b_xor) : 0;
            }
        }
        d += (ptrdiff_t)k * GK_SCALAR_NR;
    }
    for (int j = 0; j < nc; j++) {
        uint32_t s = 0;
        for (int kk = 0; kk < k; kk++)
            s += (uint32_t)(int32_t)(int8_t)(b[kk * rs + j * cs] ^ b_xor);
        colsum[j] = (int32_t)s;
    }
}

static void gk_qgemm_u8s8_scalar_4x4_ukernel(int mr_valid, int nr_valid, int kp,
                                             const void *a_panel, const void *b_panel,
                                             const gk_qepi *epi, int m0, int n0)
{
    const uint8_t *a = (const uint8_t *)a_panel;
    const int8_t *b = (const int8_t *)b_panel;
    uint32_t acc[GK_SCALAR_MR][GK_SCALAR_NR] = {{0}};
    for (int kk = 0; kk < kp; kk++) {
        for (int i = 0; i < GK_SCALAR_MR; i++) {
            for (int j = 0; j < GK_SCALAR_NR; j++) {
                /* |a*b| <= 255*128: one exact product, added in 32 bits */
                acc[i][j] += (uint32_t)((int32_t)a[kk * GK_SCALAR_MR + i] *
                                        (int32_t)b[kk * GK_SCALAR_NR + j]);
            }
        }
    }
    for (int i = 0; i < mr_valid; i++)
        for (int j = 0; j < nr_valid; j++)
            gk_qepi_block1(epi, m0 + i, n0 + j, acc[i][j]);
}

/* Small-M path (m <= MR): B streamed once, row by row, no packing; one multiply-add per
 * real product instead of a padded MR x NR tile, so skinny and very deep products
 * (matrix-vector, K near the driver's depth chunk) cost O(m n k), not O(MR NR k).
 * Column chunks of GK_SCALAR_SMALLM_NC keep the accumulators on the stack. */
#define GK_SCALAR_SMALLM_NC 256

static void gk_qgemm_u8s8_scalar_smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs,
                                        ptrdiff_t a_cs, uint8_t a_xor, const uint8_t *b,
                                        ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *epi)
{
    uint32_t acc[GK_SCALAR_MR][GK_SCALAR_SMALLM_NC], colsum[GK_SCALAR_SMALLM_NC];
    for (int n0 = 0; n0 < n; n0 += GK_SCALAR_SMALLM_NC) {
        const int w = n - n0 < GK_SCALAR_SMALLM_NC ? n - n0 : GK_SCALAR_SMALLM_NC;
        for (int j = 0; j < w; j++) {
            colsum[j] = 0;
            for (int i = 0; i < m; i++)
                acc[i][j] = 0;
        }
        for (int kk = 0; kk < k; kk++) {
            const uint8_t *brow = b + (ptrdiff_t)kk * b_rs + n0; /* b_cs == 1 */
            for (int j = 0; j < w; j++)
                colsum[j] += (uint32_t)(int32_t)(int8_t)(brow[j] ^ b_xor);
            for (int i = 0; i < m; i++) {
                const int32_t av = (uint8_t)(a[i * a_rs + (ptrdiff_t)kk * a_cs] ^ a_xor);
                for (int j = 0; j < w; j++)
                    acc[i][j] += (uint32_t)(av * (int32_t)(int8_t)(brow[j] ^ b_xor));
            }
        }
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < w; j++) {
                const uint32_t colcorr = colsum[j] - (uint32_t)k * (uint32_t)epi->b_zp[n0 + j];
                gk_qepi_store1_cc(epi, i, n0 + j, acc[i][j], colcorr);
            }
        }
    }
}

const gk_qgemm_kernel gk_qgemm_u8s8_scalar = {
    "scalar", GK_SCALAR_MR, GK_SCALAR_NR, 1, 1, 1,
    gk_qgemm_u8s8_scalar_pack_a, gk_qgemm_u8s8_scalar_pack_b, gk_qgemm_u8s8_scalar_4x4_ukernel,
    GK_SCALAR_MR, gk_qgemm_u8s8_scalar_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
};
