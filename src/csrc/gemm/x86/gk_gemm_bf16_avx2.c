/* The bfloat16 Gemm family for AVX2 + FMA + F16C (group avx2):
 * the widening path.
 *
 * Inputs widen to float32 while packing, by a 16-bit shift (exact: gk_bf16_to_f32 bit for
 * bit), into the standard float32 panels of gk_gemm.h; the sums run in this group's
 * float32 6 x 16 micro-kernel (gk_gemm_f32_avx2.c through gk_gemm_f32_x86.h: the same FMA
 * k-loop, hence float32's accumulation bound; never a 16-bit sum); the fused epilogue
 * rounds alpha*acc + beta*C once to bfloat16 by the integer RNE of gk_f32_to_bf16 (NaN
 * stays NaN, quiet), bit for bit the generic gk_gemm_epilogue_bf16. Packers and epilogue:
 * gk_gemm_half_x86.inc at 8 lanes. Cache blocks from this CPU's caches at run time, as
 * float32's (the panels are float32; fallback 144/256/2048). */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_gemm.h"
#include "gk_gemm_f32_x86.h"

#define GK_PFX gk_gemm_bf16_avx2
#define GK_BF16 1
#define GK_W 8
#define GK_MR 6
#define GK_NR 16
#define GK_GENERIC_PACK_A gk_gemm_pack_a_bf16
#define GK_GENERIC_PACK_B gk_gemm_pack_b_bf16
#define GK_GENERIC_EPI gk_gemm_epilogue_bf16
#include "gk_gemm_half_x86.inc"

const gk_gemm_kernel gk_gemm_bf16_avx2 = {
    "avx2", GK_DT_BF16, GK_ACC_F32, 6, 16, 144, 256, 2048,
    gk_gemm_bf16_avx2_pack_a, gk_gemm_bf16_avx2_pack_b,
    gk_gemm_f32_avx2_6x16_ukernel_ext,
    gk_gemm_bf16_avx2_epilogue,
    1, /* cache_blocks */
    gk_gemm_f32_avx2_6x16_ukernel_rounded_ext, /* ukernel_rounded */
    NULL, /* ukernel_ldb: Y is 16-bit, the sums live in a float32 workspace */
    0,       /* pack_esz: panels of accumulators */
    gk_gemm_f32_avx2_6x16_ukernel_strip_ext, /* ukernel_strip: packed panels only */
    .thin_t_tiles = GK_GEMM_THIN_T_TILES,
    .ukernel_strip_h = gk_gemm_bf16_avx2_ukernel_strip_h, /* thin A, B' in place */
};
