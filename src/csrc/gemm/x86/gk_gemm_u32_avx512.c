/* The 32-bit integer (int32, uint32) Gemm family for AVX-512F (group avx512).
 *
 * Tile 14 x 32: 28 zmm accumulators (16 lanes, two vectors per row), 2 B vectors, a
 * broadcast and a product register -- all 32 zmm, no spill in the k-loop
 * (gk_gemm_imul_ukernel.inc's asm).  Per k: 28 vpmulld + 28 vpaddd for 448 multiply-adds;
 * the loop is bound by the multiplier (Zen 4, measured by bench_peak_x86.c: one zmm
 * vpmulld per cycle, the lanes/s of two ymm ones; its latency is off the accumulator
 * chains, which are one vpaddd each).  This kernel alone, panels in L1: ~72% of that peak
 * (the vpaddd share the vector pipes; embedded {1to16} broadcasts measured no better);
 * the avx2 6x16 family runs at the same speed on Zen 4.  Both operands packed in
 * the standard panel layout of gk_gemm.h (gk_gemm_pack_32bit_<isa>.c's transposing packers: int32 and uint32 share the
 * bits), cache blocks from this CPU's cache sizes at run time (cache_blocks; fallback
 * 168/256/2048).  Sums and products wrap modulo 2**32: every result equals the scalar
 * oracle's bit for bit.  Epilogue: the exact path vectorised (gk_gemm_int_epi_x86.inc),
 * the float path the generic one. */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_u32_avx512_14x32
#define GK_T uint32_t
#define GK_ES 4
#define GK_ES_S "4"
#define GK_MR 14
#define GK_MR_S "14"
#define GK_NR 32
#define GK_VB_S "64"
#define GK_V "zmm"
#define GK_MUL "vpmulld"
#define GK_ADD "vpaddd"
#define GK_BCAST "vpbroadcastd"
#define GK_MOV "vmovdqu32"
#define GK_XOR "vpxord"
#define GK_ZMM 1
#define GK_VEC __m512i
#define GK_VLOAD(p) _mm512_loadu_si512((const void *)(p))
#define GK_VSTORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define GK_VSET1(x) _mm512_set1_epi32((int)(x))
#define GK_VZERO() _mm512_setzero_si512()
#define GK_VMUL(x, b) _mm512_mullo_epi32(x, b)
#define GK_VADD(x, y) _mm512_add_epi32(x, y)
#include "gk_gemm_imul_ukernel.inc"

#define GK_EPI_PFX gk_gemm_u32_avx512
#define GK_EPI_GENERIC_S gk_gemm_epilogue_i32
#define GK_EPI_GENERIC_U gk_gemm_epilogue_u32
#define GK_T uint32_t
#define GK_ES 4
#define GK_VEC __m512i
#define GK_VL 16
#define GK_VLOAD(p) _mm512_loadu_si512((const void *)(p))
#define GK_VSTORE(p, v) _mm512_storeu_si512((void *)(p), v)
/* (int)(x) of a uint32_t above INT_MAX is implementation-defined; gcc/clang/MSVC keep the
 * bits, which is all set1 needs (the lanes are read as bit patterns) */
#define GK_VSET1(x) _mm512_set1_epi32((int)(x))
#define GK_VMUL(x, b) _mm512_mullo_epi32(x, b)
#define GK_VADD(x, y) _mm512_add_epi32(x, y)
#include "gk_gemm_int_epi_x86.inc"

const gk_gemm_kernel gk_gemm_i32_avx512 = {
    "avx512", GK_DT_I32, GK_ACC_U32, 14, 32, 168, 256, 2048,
    gk_gemm_pack_a_u32_avx512, gk_gemm_pack_b_u32_avx512, gk_gemm_u32_avx512_14x32_ukernel,
    gk_gemm_u32_avx512_epilogue_s,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u32_avx512_14x32_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
    .kc_thin_t = GK_GEMM_THIN_T_KC_32_LINES, /* W from memory */
};
const gk_gemm_kernel gk_gemm_u32_avx512 = {
    "avx512", GK_DT_U32, GK_ACC_U32, 14, 32, 168, 256, 2048,
    gk_gemm_pack_a_u32_avx512, gk_gemm_pack_b_u32_avx512, gk_gemm_u32_avx512_14x32_ukernel,
    gk_gemm_u32_avx512_epilogue_u,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u32_avx512_14x32_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
    .kc_thin_t = GK_GEMM_THIN_T_KC_32_LINES, /* W from memory */
};
