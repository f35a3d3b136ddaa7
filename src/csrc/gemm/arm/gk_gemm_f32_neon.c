/* The float32 Gemm family for ARM64 AdvSIMD (group neon).
 *
 * Tile 8 x 12 (24 q-register accumulators, fmla by element: a(i, k) is a lane of the
 * two A vectors of depth k), both operands packed in the standard panel layout of
 * gk_gemm.h (generic packers: QLinearMatMul's float8 path packs into it too).  Cache
 * blocks: the fallback 128 / 256 / 1536 (ARM64 reports no cache sizes here): a B
 * micro-panel KC x 12 floats = 12 KiB stays in L1, the packed A block MC x KC = 128 KiB
 * in L2, the B block KC x NC = 1.5 MiB in the LLC.
 * fmla rounds each product-sum once: results differ from the scalar oracle within the
 * float accumulation bound, the k order is the same; ukernel_rounded (fmul, then fadd) is
 * the scalar oracle's sums bit for bit. */
#include <arm_neon.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/arm/gk_gemm_neon.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_f32_neon_8x12
#define GK_T float
#define GK_VT float32x4_t
#define GK_VL 4
#define GK_MR 8
#define GK_NR 12
#define GK_AV(X) X(a0, 0) X(a1, 1)
#define GK_ROWS(X)                                                                          \
    X(0, a0, 0) X(1, a0, 1) X(2, a0, 2) X(3, a0, 3) X(4, a1, 0) X(5, a1, 1) X(6, a1, 2)     \
    X(7, a1, 3)
#define GK_VZERO() vdupq_n_f32(0.0f)
#define GK_VLD(p) vld1q_f32(p)
#define GK_VST(p, v) vst1q_f32(p, v)
#define GK_VLDB(p) vreinterpretq_f32_u8(vld1q_u8((const uint8_t *)(p)))
#define GK_VMLA_LANE(c, b, a, l) vfmaq_laneq_f32(c, b, a, l)
#define GK_WITH_ROUNDED 1
#define GK_VMUL_LANE(b, a, l) vmulq_laneq_f32(b, a, l)
#define GK_VADD(x, y) vaddq_f32(x, y)
#include "gk_gemm_neon_ukernel.inc"

const gk_gemm_kernel gk_gemm_f32_neon = {
    "neon", GK_DT_F32, GK_ACC_F32, 8, 12, 128, 256, 1536,
    gk_gemm_pack_a_f32, gk_gemm_pack_b_f32, gk_gemm_f32_neon_8x12_ukernel,
    gk_gemm_epilogue_f32,
    1, /* cache_blocks */
    gk_gemm_f32_neon_8x12_ukernel_rounded,
    gk_gemm_f32_neon_8x12_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
