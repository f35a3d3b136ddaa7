/* The float32 Gemm family for AVX-512F (group avx512: F/BW/VL/DQ + AVX2/FMA/F16C).
 *
 * Tile 14 x 32 (28 zmm accumulators, 16-lane vectors, two per row), both
 * operands packed in the standard panel layout of gk_gemm.h (transposing SIMD packers,
 * gk_gemm_pack_32bit_<isa>.c), cache
 * blocks from this CPU's cache sizes at run time (cache_blocks; fallback 168/256/2048).
 * FMA rounds each product-sum once: results differ from the scalar oracle within the
 * float accumulation bound, the k order is the same. QLinearMatMul's float8 path runs ukernel_rounded (vmul, then vadd:
 * the scalar oracle's sums bit for bit). The micro-kernels are
 * gk_gemm_fma_ukernel.inc's (asm k-loop under GNU asm). */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"
#include "gk_gemm_f32_x86.h"

#define GK_PFX gk_gemm_f32_avx512_14x32
#define GK_T float
#define GK_ES 4
#define GK_ES_S "4"
#define GK_MR 14
#define GK_MR_S "14"
#define GK_NR 32
#define GK_VB_S "64"
#define GK_V "zmm"
#define GK_SFX "ps"
#define GK_BCAST "vbroadcastss"
#define GK_XOR "vpxord"
#define GK_ZMM 1
#define GK_EMB "%{1to16%}"
#define GK_WITH_ROUNDED 1
#define GK_VEC __m512
#define GK_VLOAD(p) _mm512_loadu_ps(p)
#define GK_VSTORE(p, v) _mm512_storeu_ps(p, v)
#define GK_VSET1(x) _mm512_set1_ps(x)
#define GK_VZERO() _mm512_setzero_ps()
#define GK_VFMA(x, b, c) _mm512_fmadd_ps(x, b, c)
#define GK_VMUL(x, b) _mm512_mul_ps(x, b)
#define GK_VADD(x, y) _mm512_add_ps(x, y)
#include "gk_gemm_fma_ukernel.inc"

/* the fused epilogue in vector code (bit-identical to gk_gemm_epilogue_f32) */
#define GK_EPI_NAME gk_gemm_f32_avx512_epilogue
#define GK_ET float
#define GK_EW 16
#define GK_EV __m512
#define GK_ELOAD(p) _mm512_loadu_ps(p)
#define GK_ESTORE(p, v) _mm512_storeu_ps(p, v)
#define GK_EMUL _mm512_mul_ps
#define GK_EADD _mm512_add_ps
#define GK_ESET1 _mm512_set1_ps
#define GK_EALPHA alpha_f
#define GK_EBETA beta_f
#define GK_EGENERIC gk_gemm_epilogue_f32
#include "gk_gemm_float_epi_x86.inc"

const gk_gemm_kernel gk_gemm_f32_avx512 = {
    "avx512", GK_DT_F32, GK_ACC_F32, 14, 32, 168, 256, 2048,
    gk_gemm_pack_a_f32_avx512, gk_gemm_pack_b_f32_avx512, gk_gemm_f32_avx512_14x32_ukernel,
    gk_gemm_f32_avx512_epilogue,
    1, /* cache_blocks */
    gk_gemm_f32_avx512_14x32_ukernel_rounded, /* ukernel_rounded */
    gk_gemm_f32_avx512_14x32_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
    gk_gemm_f32_avx512_14x32_ukernel_strip, /* ukernel_strip: M = 1..3 */
    .kc_thin_t = GK_GEMM_THIN_T_KC_32_LINES, /* W from memory */
    .thin_t_tiles = GK_GEMM_THIN_T_TILES,
};

/* The same micro-kernels with external linkage (gk_gemm_f32_x86.h): the float16/bfloat16
 * widening families of this group run them on their float32 panels. */
void gk_gemm_f32_avx512_14x32_ukernel_ext(int kc, const void *a_panel, const void *b_panel,
                                  void *c, ptrdiff_t ldc, int mr_valid, int nr_valid, int first)
{
    gk_gemm_f32_avx512_14x32_ukernel(kc, a_panel, b_panel, c, ldc, mr_valid, nr_valid, first);
}
void gk_gemm_f32_avx512_14x32_ukernel_rounded_ext(int kc, const void *a_panel, const void *b_panel,
                                          void *c, ptrdiff_t ldc, int mr_valid, int nr_valid,
                                          int first)
{
    gk_gemm_f32_avx512_14x32_ukernel_rounded(kc, a_panel, b_panel, c, ldc, mr_valid, nr_valid,
                                         first);
}
void gk_gemm_f32_avx512_14x32_ukernel_strip_ext(int kc, const void *a_panel, const void *b,
                                                ptrdiff_t ldb, ptrdiff_t ldt, void *c, ptrdiff_t ldc,
                                                int rows, int ntiles, int first, int wide)
{
    gk_gemm_f32_avx512_14x32_ukernel_strip(kc, a_panel, b, ldb, ldt, c, ldc, rows, ntiles, first,
                                           wide);
}
