/* The float64 Gemm family for AVX2 + FMA (group avx2).
 *
 * Tile 6 x 8 (12 ymm accumulators, 4-lane vectors, two per row), both
 * operands packed in the standard panel layout of gk_gemm.h (transposing SIMD packers,
 * gk_gemm_pack_64bit_<isa>.c), cache
 * blocks from this CPU's cache sizes at run time (cache_blocks; fallback 96/256/1024).
 * FMA rounds each product-sum once: results differ from the scalar oracle within the
 * float accumulation bound, the k order is the same. The micro-kernels are
 * gk_gemm_fma_ukernel.inc's (asm k-loop under GNU asm). */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_f64_avx2_6x8
#define GK_T double
#define GK_ES 8
#define GK_ES_S "8"
#define GK_MR 6
#define GK_MR_S "6"
#define GK_NR 8
#define GK_VB_S "32"
#define GK_V "ymm"
#define GK_SFX "pd"
#define GK_BCAST "vbroadcastsd"
#define GK_XOR "vpxor"
#define GK_ZMM 0
#define GK_WITH_ROUNDED 0
#define GK_VEC __m256d
#define GK_VLOAD(p) _mm256_loadu_pd(p)
#define GK_VSTORE(p, v) _mm256_storeu_pd(p, v)
#define GK_VSET1(x) _mm256_set1_pd(x)
#define GK_VZERO() _mm256_setzero_pd()
#define GK_VFMA(x, b, c) _mm256_fmadd_pd(x, b, c)
#define GK_VMUL(x, b) _mm256_mul_pd(x, b)
#define GK_VADD(x, y) _mm256_add_pd(x, y)
#include "gk_gemm_fma_ukernel.inc"

/* the fused epilogue in vector code (bit-identical to gk_gemm_epilogue_f64) */
#define GK_EPI_NAME gk_gemm_f64_avx2_epilogue
#define GK_ET double
#define GK_EW 4
#define GK_EV __m256d
#define GK_ELOAD(p) _mm256_loadu_pd((const double *)(const void *)(p))
#define GK_ESTORE(p, v) _mm256_storeu_pd((double *)(void *)(p), v)
#define GK_EMUL _mm256_mul_pd
#define GK_EADD _mm256_add_pd
#define GK_ESET1 _mm256_set1_pd
#define GK_EALPHA alpha_d
#define GK_EBETA beta_d
#define GK_EGENERIC gk_gemm_epilogue_f64
#include "gk_gemm_float_epi_x86.inc"

const gk_gemm_kernel gk_gemm_f64_avx2 = {
    "avx2", GK_DT_F64, GK_ACC_F64, 6, 8, 96, 256, 1024,
    gk_gemm_pack_a_f64_avx2, gk_gemm_pack_b_f64_avx2, gk_gemm_f64_avx2_6x8_ukernel,
    gk_gemm_f64_avx2_epilogue,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded */
    gk_gemm_f64_avx2_6x8_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
    gk_gemm_f64_avx2_6x8_ukernel_strip, /* ukernel_strip: M = 1..3 */
    .thin_t_tiles = GK_GEMM_THIN_T_TILES,
};
