/* Scalar 32-bit integer (int32, uint32) Gemm family: the oracle every SIMD family of these
 * types must match (bit for bit: modular sums are order-independent).
 * Built without auto-vectorisation (setup.py's scalar group).
 *
 * Tile 4 x 4; cache blocks MC=128 (packed A block 128*256*4 B = 128 KiB, sized for
 * L2), KC=256, NC=1024 (packed B block 256*1024*4 B = 1024 KiB, sized for L3). */
#include "gemmkit/gk_gemm.h"

#define GK_UKERNEL_NAME gk_gemm_u32_scalar_4x4_ukernel
#define GK_T uint32_t
/* 0u + x keeps the product unsigned even where int is wider than 32 bits, so it wraps
 * mod 2**32 (never signed overflow); that is also the int32 product mod 2**32. */
#define GK_PRODUCT(x, y) ((uint32_t)((0u + (x)) * (y)))
#define GK_MR 4
#define GK_NR 4
#include "gk_gemm_scalar_ukernel.inc"

const gk_gemm_kernel gk_gemm_i32_scalar = {
    "scalar", GK_DT_I32, GK_ACC_U32, 4, 4, 128, 256, 1024,
    gk_gemm_pack_a_u32, gk_gemm_pack_b_u32, gk_gemm_u32_scalar_4x4_ukernel,
    gk_gemm_epilogue_i32,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
const gk_gemm_kernel gk_gemm_u32_scalar = {
    "scalar", GK_DT_U32, GK_ACC_U32, 4, 4, 128, 256, 1024,
    gk_gemm_pack_a_u32, gk_gemm_pack_b_u32, gk_gemm_u32_scalar_4x4_ukernel,
    gk_gemm_epilogue_u32,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
