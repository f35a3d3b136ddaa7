/* The 32-bit integer (int32, uint32) Gemm families for ARM64 AdvSIMD (group neon).
 *
 * Tile 8 x 12 (24 q-register accumulators, mla by element: a(i, k) is a lane of the two
 * A vectors of depth k).  mla keeps the low 32 bits of each product and sum, i.e. exact
 * arithmetic modulo 2**32, the same for int32 and uint32 (two's complement): results equal
 * the scalar oracle bit for bit, whatever the order.  Both operands packed in the
 * standard panel layout (generic packers); cache blocks as the float32 family's
 * (fallback 128 / 256 / 1536). */
#include <arm_neon.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/arm/gk_gemm_neon.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_u32_neon_8x12
#define GK_T uint32_t
#define GK_VT uint32x4_t
#define GK_VL 4
#define GK_MR 8
#define GK_NR 12
#define GK_AV(X) X(a0, 0) X(a1, 1)
#define GK_ROWS(X)                                                                          \
    X(0, a0, 0) X(1, a0, 1) X(2, a0, 2) X(3, a0, 3) X(4, a1, 0) X(5, a1, 1) X(6, a1, 2)     \
    X(7, a1, 3)
#define GK_VZERO() vdupq_n_u32(0u)
#define GK_VLD(p) vld1q_u32(p)
#define GK_VST(p, v) vst1q_u32(p, v)
#define GK_VLDB(p) vreinterpretq_u32_u8(vld1q_u8((const uint8_t *)(p)))
#define GK_VMLA_LANE(c, b, a, l) vmlaq_laneq_u32(c, b, a, l)
#define GK_WITH_ROUNDED 0
#include "gk_gemm_neon_ukernel.inc"

const gk_gemm_kernel gk_gemm_i32_neon = {
    "neon", GK_DT_I32, GK_ACC_U32, 8, 12, 128, 256, 1536,
    gk_gemm_pack_a_u32, gk_gemm_pack_b_u32, gk_gemm_u32_neon_8x12_ukernel,
    gk_gemm_epilogue_i32,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer sums are exact */
    gk_gemm_u32_neon_8x12_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
const gk_gemm_kernel gk_gemm_u32_neon = {
    "neon", GK_DT_U32, GK_ACC_U32, 8, 12, 128, 256, 1536,
    gk_gemm_pack_a_u32, gk_gemm_pack_b_u32, gk_gemm_u32_neon_8x12_ukernel,
    gk_gemm_epilogue_u32,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer sums are exact */
    gk_gemm_u32_neon_8x12_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
