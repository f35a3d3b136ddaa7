/* The float64 Gemm family for ARM64 AdvSIMD (group neon).
 *
 * Tile 8 x 6 (24 q-register accumulators of 2 doubles, fmla by element: a(i, k) is a
 * lane of the four A vectors of depth k; 31 of the 32 registers), both operands packed
 * in the standard panel layout (generic packers).  Cache blocks: the fallback
 * 64 / 256 / 768: a B micro-panel KC x 6 doubles = 12 KiB in L1, the packed A block
 * 128 KiB in L2, the B block 1.5 MiB in the LLC.
 * fmla rounds each product-sum once: results differ from the scalar oracle within the
 * float accumulation bound, the k order is the same. */
#include <arm_neon.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/arm/gk_gemm_neon.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_f64_neon_8x6
#define GK_T double
#define GK_VT float64x2_t
#define GK_VL 2
#define GK_MR 8
#define GK_NR 6
#define GK_AV(X) X(a0, 0) X(a1, 1) X(a2, 2) X(a3, 3)
#define GK_ROWS(X)                                                                          \
    X(0, a0, 0) X(1, a0, 1) X(2, a1, 0) X(3, a1, 1) X(4, a2, 0) X(5, a2, 1) X(6, a3, 0)     \
    X(7, a3, 1)
#define GK_VZERO() vdupq_n_f64(0.0)
#define GK_VLD(p) vld1q_f64(p)
#define GK_VST(p, v) vst1q_f64(p, v)
#define GK_VLDB(p) vreinterpretq_f64_u8(vld1q_u8((const uint8_t *)(p)))
#define GK_VMLA_LANE(c, b, a, l) vfmaq_laneq_f64(c, b, a, l)
#define GK_WITH_ROUNDED 0
#include "gk_gemm_neon_ukernel.inc"

const gk_gemm_kernel gk_gemm_f64_neon = {
    "neon", GK_DT_F64, GK_ACC_F64, 8, 6, 64, 256, 768,
    gk_gemm_pack_a_f64, gk_gemm_pack_b_f64, gk_gemm_f64_neon_8x6_ukernel,
    gk_gemm_epilogue_f64,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: only the float32 family needs it */
    gk_gemm_f64_neon_8x6_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
