/* The 64-bit integer (int64, uint64) Gemm family for AVX-512 F + DQ (group avx512:
 * vpmullq is AVX512DQ, which the group's flags and its dispatch level require).
 *
 * Tile 14 x 16: 28 zmm accumulators (8 lanes, two vectors per row), 2 B vectors, a
 * broadcast and a product register -- all 32 zmm, no spill in the k-loop
 * (gk_gemm_imul_ukernel.inc's asm).  Per k: 28 vpmullq + 28 vpaddq for 224 multiply-adds;
 * the loop is bound by vpmullq's throughput (the multiplies are off the accumulator
 * chains, which are one vpaddq each).  Both operands packed in the standard panel layout
 * of gk_gemm.h (gk_gemm_pack_64bit_<isa>.c's transposing packers: int64 and uint64 share the bits), cache blocks from
 * this CPU's cache sizes at run time (cache_blocks; fallback 168/256/1024).  Sums and
 * products wrap modulo 2**64: every result equals the scalar oracle's bit for bit.
 * Epilogue: the exact path vectorised (gk_gemm_int_epi_x86.inc), the float path the
 * generic one. */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_u64_avx512_14x16
#define GK_T uint64_t
#define GK_ES 8
#define GK_ES_S "8"
#define GK_MR 14
#define GK_MR_S "14"
#define GK_NR 16
#define GK_VB_S "64"
#define GK_V "zmm"
#define GK_MUL "vpmullq"
#define GK_ADD "vpaddq"
#define GK_BCAST "vpbroadcastq"
#define GK_MOV "vmovdqu64"
#define GK_XOR "vpxord"
#define GK_ZMM 1
#define GK_VEC __m512i
#define GK_VLOAD(p) _mm512_loadu_si512((const void *)(p))
#define GK_VSTORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define GK_VSET1(x) _mm512_set1_epi64((long long)(x))
#define GK_VZERO() _mm512_setzero_si512()
#define GK_VMUL(x, b) _mm512_mullo_epi64(x, b)
#define GK_VADD(x, y) _mm512_add_epi64(x, y)
#include "gk_gemm_imul_ukernel.inc"

#define GK_EPI_PFX gk_gemm_u64_avx512
#define GK_EPI_GENERIC_S gk_gemm_epilogue_i64
#define GK_EPI_GENERIC_U gk_gemm_epilogue_u64
#define GK_T uint64_t
#define GK_ES 8
#define GK_VEC __m512i
#define GK_VL 8
#define GK_VLOAD(p) _mm512_loadu_si512((const void *)(p))
#define GK_VSTORE(p, v) _mm512_storeu_si512((void *)(p), v)
/* (long long)(x) of a uint64_t above LLONG_MAX is implementation-defined; gcc/clang/MSVC
 * keep the bits, which is all set1 needs (the lanes are read as bit patterns) */
#define GK_VSET1(x) _mm512_set1_epi64((long long)(x))
#define GK_VMUL(x, b) _mm512_mullo_epi64(x, b)
#define GK_VADD(x, y) _mm512_add_epi64(x, y)
#include "gk_gemm_int_epi_x86.inc"

const gk_gemm_kernel gk_gemm_i64_avx512 = {
    "avx512", GK_DT_I64, GK_ACC_U64, 14, 16, 168, 256, 1024,
    gk_gemm_pack_a_u64_avx512, gk_gemm_pack_b_u64_avx512, gk_gemm_u64_avx512_14x16_ukernel,
    gk_gemm_u64_avx512_epilogue_s,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u64_avx512_14x16_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
const gk_gemm_kernel gk_gemm_u64_avx512 = {
    "avx512", GK_DT_U64, GK_ACC_U64, 14, 16, 168, 256, 1024,
    gk_gemm_pack_a_u64_avx512, gk_gemm_pack_b_u64_avx512, gk_gemm_u64_avx512_14x16_ukernel,
    gk_gemm_u64_avx512_epilogue_u,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u64_avx512_14x16_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
