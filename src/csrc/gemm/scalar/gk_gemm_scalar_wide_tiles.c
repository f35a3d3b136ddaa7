/* Scalar Gemm families at the tile shapes of AVX-512 and AMX kernels (14x32, 6x64, 16x64,
 * 32x32), never selected by the dispatch: the tests run the driver with them
 * (_core._gemm_with_wide_tile) to show that nothing in the engine caps or assumes a tile
 * size, edge tiles included.  Same oracle kernel template, so results are bit-identical to
 * the 4x4 families'.  Built without auto-vectorisation (setup.py's scalar group). */
#include "gemmkit/gk_gemm.h"

#define GK_UKERNEL_NAME gk_gemm_f32_scalar_14x32_ukernel
#define GK_T float
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 14
#define GK_NR 32
#include "gk_gemm_scalar_ukernel.inc"

#define GK_UKERNEL_NAME gk_gemm_f32_scalar_6x64_ukernel
#define GK_T float
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 6
#define GK_NR 64
#include "gk_gemm_scalar_ukernel.inc"

#define GK_UKERNEL_NAME gk_gemm_f32_scalar_16x64_ukernel
#define GK_T float
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 16
#define GK_NR 64
#include "gk_gemm_scalar_ukernel.inc"

#define GK_UKERNEL_NAME gk_gemm_f64_scalar_32x32_ukernel
#define GK_T double
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 32
#define GK_NR 32
#include "gk_gemm_scalar_ukernel.inc"

#define GK_UKERNEL_NAME gk_gemm_u32_scalar_32x32_ukernel
#define GK_T uint32_t
#define GK_PRODUCT(x, y) ((uint32_t)((0u + (x)) * (y)))
#define GK_MR 32
#define GK_NR 32
#include "gk_gemm_scalar_ukernel.inc"

#define GK_UKERNEL_NAME gk_gemm_u64_scalar_16x64_ukernel
#define GK_T uint64_t
#define GK_PRODUCT(x, y) ((x) * (y))
#define GK_MR 16
#define GK_NR 64
#include "gk_gemm_scalar_ukernel.inc"

static const gk_gemm_kernel wide_f32_14x32 = {
    "scalar-14x32", GK_DT_F32, GK_ACC_F32, 14, 32, 140, 256, 1024,
    gk_gemm_pack_a_f32, gk_gemm_pack_b_f32, gk_gemm_f32_scalar_14x32_ukernel,
    gk_gemm_epilogue_f32,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
static const gk_gemm_kernel wide_f16_6x64 = {
    "scalar-6x64", GK_DT_F16, GK_ACC_F32, 6, 64, 120, 256, 1024,
    gk_gemm_pack_a_f16, gk_gemm_pack_b_f16, gk_gemm_f32_scalar_6x64_ukernel,
    gk_gemm_epilogue_f16,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
static const gk_gemm_kernel wide_bf16_16x64 = {
    "scalar-16x64", GK_DT_BF16, GK_ACC_F32, 16, 64, 128, 256, 1024,
    gk_gemm_pack_a_bf16, gk_gemm_pack_b_bf16, gk_gemm_f32_scalar_16x64_ukernel,
    gk_gemm_epilogue_bf16,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
static const gk_gemm_kernel wide_f64_32x32 = {
    "scalar-32x32", GK_DT_F64, GK_ACC_F64, 32, 32, 64, 256, 512,
    gk_gemm_pack_a_f64, gk_gemm_pack_b_f64, gk_gemm_f64_scalar_32x32_ukernel,
    gk_gemm_epilogue_f64,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
static const gk_gemm_kernel wide_i32_32x32 = {
    "scalar-32x32", GK_DT_I32, GK_ACC_U32, 32, 32, 128, 256, 1024,
    gk_gemm_pack_a_u32, gk_gemm_pack_b_u32, gk_gemm_u32_scalar_32x32_ukernel,
    gk_gemm_epilogue_i32,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};
static const gk_gemm_kernel wide_u64_16x64 = {
    "scalar-16x64", GK_DT_U64, GK_ACC_U64, 16, 64, 64, 256, 512,
    gk_gemm_pack_a_u64, gk_gemm_pack_b_u64, gk_gemm_u64_scalar_16x64_ukernel,
    gk_gemm_epilogue_u64,
    0, NULL, NULL, /* fixed cache blocks; ukernel rounds each product; B always packed */
    0,             /* panels of accumulators */
};

const gk_gemm_kernel *const gk_gemm_wide_tile_families[] = {
    &wide_f32_14x32, &wide_f16_6x64, &wide_bf16_16x64, &wide_f64_32x32, &wide_i32_32x32,
    &wide_u64_16x64, 0,
};
