/* Scalar float32-accumulating (float16, bfloat16, float32) Gemm family: the oracle every
 * SIMD family of these types must match (within the float rounding bounds; summation
 * order is increasing k).  Built without auto-vectorisation (setup.py's scalar group).
 *
 * Tile 4 x 4; cache blocks MC=128 (packed A block 128*256*4 B = 128 KiB, sized for
 * L2), KC=256, NC=1024 (packed B block 256*1024*4 B = 1024 KiB, sized for L3). */
#include "gemmkit/gk_gemm.h"

#define GK_UKERNEL_NAME gk_gemm_f32_scalar_4x4_ukernel
#define GK_T float
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 4
#define GK_NR 4
#include "gk_gemm_scalar_ukernel.inc"

const gk_gemm_kernel gk_gemm_f16_scalar = {
    "scalar", GK_DT_F16, GK_ACC_F32, 4, 4, 128, 256, 1024,
    gk_gemm_pack_a_f16, gk_gemm_pack_b_f16, gk_gemm_f32_scalar_4x4_ukernel,
    gk_gemm_epilogue_f16,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
const gk_gemm_kernel gk_gemm_bf16_scalar = {
    "scalar", GK_DT_BF16, GK_ACC_F32, 4, 4, 128, 256, 1024,
    gk_gemm_pack_a_bf16, gk_gemm_pack_b_bf16, gk_gemm_f32_scalar_4x4_ukernel,
    gk_gemm_epilogue_bf16,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
const gk_gemm_kernel gk_gemm_f32_scalar = {
    "scalar", GK_DT_F32, GK_ACC_F32, 4, 4, 128, 256, 1024,
    gk_gemm_pack_a_f32, gk_gemm_pack_b_f32, gk_gemm_f32_scalar_4x4_ukernel,
    gk_gemm_epilogue_f32,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
