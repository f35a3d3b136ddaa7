/* The float64 Gemm family for AVX-512F (group avx512: F/BW/VL/DQ + AVX2/FMA/F16C).
 *
 * Tile 14 x 16 (28 zmm accumulators, 8-lane vectors, two per row), both
 * operands packed in the standard panel layout of gk_gemm.h (transposing SIMD packers,
 * gk_gemm_pack_64bit_<isa>.c), cache
 * blocks from this CPU's cache sizes at run time (cache_blocks; fallback 112/256/1024).
 * FMA rounds each product-sum once: results differ from the scalar oracle within the
 * float accumulation bound, the k order is the same. The micro-kernels are
 * gk_gemm_fma_ukernel.inc's (asm k-loop under GNU asm). */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_f64_avx512_14x16
#define GK_T double
#define GK_ES 8
#define GK_ES_S "8"
#define GK_MR 14
#define GK_MR_S "14"
#define GK_NR 16
#define GK_VB_S "64"
#define GK_V "zmm"
#define GK_SFX "pd"
#define GK_BCAST "vbroadcastsd"
#define GK_XOR "vpxord"
#define GK_ZMM 1
#define GK_WITH_ROUNDED 0
#define GK_VEC __m512d
#define GK_VLOAD(p) _mm512_loadu_pd(p)
#define GK_VSTORE(p, v) _mm512_storeu_pd(p, v)
#define GK_VSET1(x) _mm512_set1_pd(x)
#define GK_VZERO() _mm512_setzero_pd()
#define GK_VFMA(x, b, c) _mm512_fmadd_pd(x, b, c)
#define GK_VMUL(x, b) _mm512_mul_pd(x, b)
#define GK_VADD(x, y) _mm512_add_pd(x, y)
#include "gk_gemm_fma_ukernel.inc"

/* the fused epilogue in vector code (bit-identical to gk_gemm_epilogue_f64) */
#define GK_EPI_NAME gk_gemm_f64_avx512_epilogue
#define GK_ET double
#define GK_EW 8
#define GK_EV __m512d
#define GK_ELOAD(p) _mm512_loadu_pd(p)
#define GK_ESTORE(p, v) _mm512_storeu_pd(p, v)
#define GK_EMUL _mm512_mul_pd
#define GK_EADD _mm512_add_pd
#define GK_ESET1 _mm512_set1_pd
#define GK_EALPHA alpha_d
#define GK_EBETA beta_d
#define GK_EGENERIC gk_gemm_epilogue_f64
#include "gk_gemm_float_epi_x86.inc"

const gk_gemm_kernel gk_gemm_f64_avx512 = {
    "avx512", GK_DT_F64, GK_ACC_F64, 14, 16, 112, 256, 1024,
    gk_gemm_pack_a_f64_avx512, gk_gemm_pack_b_f64_avx512, gk_gemm_f64_avx512_14x16_ukernel,
    gk_gemm_f64_avx512_epilogue,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded */
    gk_gemm_f64_avx512_14x16_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
    gk_gemm_f64_avx512_14x16_ukernel_strip, /* ukernel_strip: M = 1..3 */
};
