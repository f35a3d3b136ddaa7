/* Scalar 64-bit integer (int64, uint64) Gemm family: the oracle every SIMD family of these
 * types must match (bit for bit: modular sums are order-independent).
 * Built without auto-vectorisation (setup.py's scalar group).
 *
 * Tile 4 x 4; cache blocks MC=64 (packed A block 64*256*8 B = 128 KiB, sized for
 * L2), KC=256, NC=512 (packed B block 256*512*8 B = 1024 KiB, sized for L3). */
#include "gemmkit/gk_gemm.h"

#define GK_UKERNEL_NAME gk_gemm_u64_scalar_4x4_ukernel
#define GK_T uint64_t
/* unsigned: wraps mod 2**64, also the int64 product mod 2**64 */
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 4
#define GK_NR 4
#include "gk_gemm_scalar_ukernel.inc"

const gk_gemm_kernel gk_gemm_i64_scalar = {
    "scalar", GK_DT_I64, GK_ACC_U64, 4, 4, 64, 256, 512,
    gk_gemm_pack_a_u64, gk_gemm_pack_b_u64, gk_gemm_u64_scalar_4x4_ukernel,
    gk_gemm_epilogue_i64,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
const gk_gemm_kernel gk_gemm_u64_scalar = {
    "scalar", GK_DT_U64, GK_ACC_U64, 4, 4, 64, 256, 512,
    gk_gemm_pack_a_u64, gk_gemm_pack_b_u64, gk_gemm_u64_scalar_4x4_ukernel,
    gk_gemm_epilogue_u64,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
