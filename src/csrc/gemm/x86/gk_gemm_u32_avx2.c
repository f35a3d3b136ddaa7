/* The 32-bit integer (int32, uint32) Gemm family for AVX2 (group avx2).
 *
 * Tile 6 x 16: 12 ymm accumulators (8 lanes, two vectors per row), 2 B vectors, a
 * broadcast and a product register -- all 16 ymm, no spill in the k-loop
 * (gk_gemm_imul_ukernel.inc's asm).  Per k: 12 vpmulld + 12 vpaddd for 96 multiply-adds;
 * the loop is bound by vpmulld's throughput (Zen 4: two ymm per cycle, measured; Intel: 2
 * uops, one per cycle) -- the multiplies are off the accumulator chains (one vpaddd each), 12
 * independent products per k keep the multiplier busy.  Both operands packed in the
 * standard panel layout of gk_gemm.h (gk_gemm_pack_32bit_<isa>.c's transposing packers: int32 and uint32 share the
 * bits), cache blocks from this CPU's cache sizes at run time (cache_blocks; fallback
 * 144/256/2048).  Sums and products wrap modulo 2**32: every result equals the scalar
 * oracle's bit for bit.  Epilogue: the exact path vectorised (gk_gemm_int_epi_x86.inc),
 * the float path the generic one. */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_u32_avx2_6x16
#define GK_T uint32_t
#define GK_ES 4
#define GK_ES_S "4"
#define GK_MR 6
#define GK_MR_S "6"
#define GK_NR 16
#define GK_VB_S "32"
#define GK_V "ymm"
#define GK_MUL "vpmulld"
#define GK_ADD "vpaddd"
#define GK_BCAST "vpbroadcastd"
#define GK_MOV "vmovdqu"
#define GK_XOR "vpxor"
#define GK_ZMM 0
#define GK_VEC __m256i
#define GK_VLOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define GK_VSTORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
#define GK_VSET1(x) _mm256_set1_epi32((int)(x))
#define GK_VZERO() _mm256_setzero_si256()
#define GK_VMUL(x, b) _mm256_mullo_epi32(x, b)
#define GK_VADD(x, y) _mm256_add_epi32(x, y)
#include "gk_gemm_imul_ukernel.inc"

#define GK_EPI_PFX gk_gemm_u32_avx2
#define GK_EPI_GENERIC_S gk_gemm_epilogue_i32
#define GK_EPI_GENERIC_U gk_gemm_epilogue_u32
#define GK_T uint32_t
#define GK_ES 4
#define GK_VEC __m256i
#define GK_VL 8
#define GK_VLOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define GK_VSTORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
/* (int)(x) of a uint32_t above INT_MAX is implementation-defined; gcc/clang/MSVC keep the
 * bits, which is all set1 needs (the lanes are read as bit patterns) */
#define GK_VSET1(x) _mm256_set1_epi32((int)(x))
#define GK_VMUL(x, b) _mm256_mullo_epi32(x, b)
#define GK_VADD(x, y) _mm256_add_epi32(x, y)
#include "gk_gemm_int_epi_x86.inc"

const gk_gemm_kernel gk_gemm_i32_avx2 = {
    "avx2", GK_DT_I32, GK_ACC_U32, 6, 16, 144, 256, 2048,
    gk_gemm_pack_a_u32_avx2, gk_gemm_pack_b_u32_avx2, gk_gemm_u32_avx2_6x16_ukernel,
    gk_gemm_u32_avx2_epilogue_s,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u32_avx2_6x16_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
const gk_gemm_kernel gk_gemm_u32_avx2 = {
    "avx2", GK_DT_U32, GK_ACC_U32, 6, 16, 144, 256, 2048,
    gk_gemm_pack_a_u32_avx2, gk_gemm_pack_b_u32_avx2, gk_gemm_u32_avx2_6x16_ukernel,
    gk_gemm_u32_avx2_epilogue_u,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u32_avx2_6x16_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
