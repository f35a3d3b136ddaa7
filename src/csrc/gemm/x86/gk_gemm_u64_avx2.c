/* The 64-bit integer (int64, uint64) Gemm family for AVX2 (group avx2).
 *
 * AVX2 has no 64-bit lane multiply.  Modulo 2**64, with a = ah*2**32 + al and
 * b = bh*2**32 + bl (32-bit halves),
 *     a*b = al*bl + ((al*bh + ah*bl) mod 2**32) << 32
 * and the shift is linear modulo 2**64, so the k-loop keeps two sums per output lane:
 *     lo  += al*bl          vpmuludq: the full 64-bit product of the low dwords
 *     mid += [al*bh, ah*bl] vpmulld of a (dwords [al, ah]) with b's dwords swapped
 *                           ([bh, bl], one vpshufd per B vector shared by the rows):
 *                           the low 32 bits of both cross products, one per dword,
 *                           summed with vpaddd (each modulo 2**32)
 * and the tile is lo + ((mid.dword0 + mid.dword1) << 32): the scalar oracle's sum of
 * wrapped products, bit for bit (every step is exact modulo 2**64 or 2**32, and only
 * mid's low 32 bits reach the result).  Per k and output vector: 1 vpmuludq + 1 vpmulld +
 * 2 adds (the textbook emulation takes 3 vpmuludq + 3 adds).
 *
 * Tile 2 x 8: 8 ymm sums (2 rows x 2 vectors x lo/mid), 4 B registers (b and its swap,
 * two vectors), the broadcast and two product registers: 15 ymm, no spill (asm k-loop).
 *
 * Why this and not scalar imul: micro-kernel alone, packed panels in L1 (kc = 256), Zen 4
 * (2 cores shared by 4 jobs; best of 15 interleaved runs):
 *     scalar 4x4 tile, 64-bit imul, baseline build (the scalar family)     1.9 GMAC/s
 *     AVX2, 3 vpmuludq per product (textbook), 2x8                        7.8 GMAC/s
 *     AVX2, vpmuludq + vpmulld (this file), 2x8                          11.5 GMAC/s
 * Whole Gemm int64 512^3 (benchmarks/bench_gemm.py's int rows; medians of CPU time, the
 * machine being shared): this family 13.9 ms (9.6 GMAC/s), the scalar family 48.9 ms
 * (2.75 GMAC/s), NumPy 379 ms.  On Intel vpmulld is 2 uops (vpmuludq 1), so the two AVX2
 * variants tie there; both beat one 64-bit imul per product per cycle.
 * Both operands packed in the standard panel layout of gk_gemm.h (transposing SIMD packers, gk_gemm_pack_64bit_avx2.c),
 * cache blocks from this CPU's cache sizes at run time (cache_blocks; fallback
 * 96/256/1024).  Epilogue: the exact path vectorised with a 3-vpmuludq multiply
 * (gk_gemm_int_epi_x86.inc; once per output, not worth the swap), the float path the
 * generic one. */
#include <immintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define MR 2
#define NR 8

/* x*y modulo 2**64 in each lane: al*bl + ((ah*bl + al*bh) << 32) */
static inline __m256i mul_u64(__m256i x, __m256i y)
{
    const __m256i lo = _mm256_mul_epu32(x, y);
    const __m256i mid = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), y),
                                         _mm256_mul_epu32(x, _mm256_srli_epi64(y, 32)));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(mid, 32));
}

/* One full tile: c (row stride ldc elements) = (first ? 0 : c) + sum_k a(:, k) b(k, :);
 * B' row k at b + k*ldb bytes (NR readable elements), A panel packed (k*MR + i).
 * gcc 12 stores intrinsic sums of this kernel to the stack on every k (checked with
 * objdump), so under GNU asm the tile is one asm block with its registers pinned:
 *   ymm0, ymm1  b (two vectors)      ymm2, ymm3  b with its dword halves swapped
 *   ymm4        a(i, k) broadcast    ymm6, ymm7  products
 *   ymm8..11    lo of (row 0: vectors 0, 1; row 1: vectors 0, 1)   (qword lanes)
 *   ymm12..15   mid, same order                                     (dword lanes) */
#if GK_GNU_ASM
#define GK_ROW(off, L0, L1, M0, M1)                                                         \
    "vpbroadcastq " off "(%[pa]), %%ymm4\n\t"                                              \
    "vpmuludq %%ymm0, %%ymm4, %%ymm6\n\t"                                                   \
    "vpmuludq %%ymm1, %%ymm4, %%ymm7\n\t"                                                   \
    "vpaddq %%ymm6, %%ymm" L0 ", %%ymm" L0 "\n\t"                                           \
    "vpaddq %%ymm7, %%ymm" L1 ", %%ymm" L1 "\n\t"                                           \
    "vpmulld %%ymm2, %%ymm4, %%ymm6\n\t"                                                    \
    "vpmulld %%ymm3, %%ymm4, %%ymm7\n\t"                                                    \
    "vpaddd %%ymm6, %%ymm" M0 ", %%ymm" M0 "\n\t"                                           \
    "vpaddd %%ymm7, %%ymm" M1 ", %%ymm" M1 "\n\t"
/* lane value lo + ((mid.dword0 + mid.dword1) << 32): (mid + (mid >> 32)) has the dword sum
 * in its low dword (what its high dword gets is shifted out) */
#define GK_FIN(L, M, dst)                                                                   \
    "vpsrlq $32, %%ymm" M ", %%ymm6\n\t"                                                    \
    "vpaddq %%ymm6, %%ymm" M ", %%ymm" M "\n\t"                                             \
    "vpsllq $32, %%ymm" M ", %%ymm" M "\n\t"                                                \
    "vpaddq %%ymm" M ", %%ymm" L ", %%ymm" L "\n\t"                                         \
    "vmovdqu %%ymm" L ", " dst "\n\t"

static void core_2x8(int kc, const uint64_t *pa, const char *pb, ptrdiff_t ldb, uint64_t *c,
                     ptrdiff_t ldc, int first)
{
    uint64_t *c1 = c + ldc;
    __asm__ volatile("vpxor %%ymm12, %%ymm12, %%ymm12\n\t"
                     "vpxor %%ymm13, %%ymm13, %%ymm13\n\t"
                     "vpxor %%ymm14, %%ymm14, %%ymm14\n\t"
                     "vpxor %%ymm15, %%ymm15, %%ymm15\n\t"
                     "test %[first], %[first]\n\t"
                     "jnz 5f\n\t"
                     "vmovdqu (%[c0]), %%ymm8\n\t"
                     "vmovdqu 32(%[c0]), %%ymm9\n\t"
                     "vmovdqu (%[c1]), %%ymm10\n\t"
                     "vmovdqu 32(%[c1]), %%ymm11\n\t"
                     "jmp 6f\n\t"
                     "5:\n\t"
                     "vpxor %%ymm8, %%ymm8, %%ymm8\n\t"
                     "vpxor %%ymm9, %%ymm9, %%ymm9\n\t"
                     "vpxor %%ymm10, %%ymm10, %%ymm10\n\t"
                     "vpxor %%ymm11, %%ymm11, %%ymm11\n\t"
                     "6:\n\t"
                     "test %[kc], %[kc]\n\t"
                     "jz 2f\n\t"
                     ".p2align 6\n\t"
                     "1:\n\t"
                     "vmovdqu (%[pb]), %%ymm0\n\t"
                     "vmovdqu 32(%[pb]), %%ymm1\n\t"
                     "vpshufd $0xb1, %%ymm0, %%ymm2\n\t"
                     "vpshufd $0xb1, %%ymm1, %%ymm3\n\t"
                     GK_ROW("0", "8", "9", "12", "13")
                     GK_ROW("8", "10", "11", "14", "15")
                     "add $16, %[pa]\n\t"
                     "add %[ldb], %[pb]\n\t"
                     "dec %[kc]\n\t"
                     "jnz 1b\n\t"
                     "2:\n\t"
                     GK_FIN("8", "12", "(%[c0])") GK_FIN("9", "13", "32(%[c0])")
                     GK_FIN("10", "14", "(%[c1])") GK_FIN("11", "15", "32(%[c1])")
                     : [pa] "+r"(pa), [pb] "+r"(pb), [kc] "+r"(kc)
                     : [first] "r"(first), [ldb] "r"(ldb), [c0] "r"(c), [c1] "r"(c1)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc",
                       "memory");
}
#undef GK_ROW
#undef GK_FIN

#else /* portable intrinsics (MSVC, 32-bit): the same arithmetic, registers left to the
       * compiler */

/* lane value lo + ((mid.dword0 + mid.dword1) << 32) */
static inline __m256i fin(__m256i lo, __m256i mid)
{
    mid = _mm256_add_epi64(mid, _mm256_srli_epi64(mid, 32));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(mid, 32));
}

static void core_2x8(int kc, const uint64_t *pa, const char *pb, ptrdiff_t ldb, uint64_t *c,
                     ptrdiff_t ldc, int first)
{
    __m256i lo[MR][2], md[MR][2];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++) {
            lo[i][v] = first ? _mm256_setzero_si256()
                             : _mm256_loadu_si256((const __m256i *)(const void *)(c + i * ldc + 4 * v));
            md[i][v] = _mm256_setzero_si256();
        }
    for (int k = 0; k < kc; k++) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)pb);
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(pb + 32));
        const __m256i s0 = _mm256_shuffle_epi32(b0, 0xb1), s1 = _mm256_shuffle_epi32(b1, 0xb1);
        for (int i = 0; i < MR; i++) {
            const __m256i x = _mm256_set1_epi64x((long long)pa[i]);
            lo[i][0] = _mm256_add_epi64(lo[i][0], _mm256_mul_epu32(x, b0));
            lo[i][1] = _mm256_add_epi64(lo[i][1], _mm256_mul_epu32(x, b1));
            md[i][0] = _mm256_add_epi32(md[i][0], _mm256_mullo_epi32(x, s0));
            md[i][1] = _mm256_add_epi32(md[i][1], _mm256_mullo_epi32(x, s1));
        }
        pa += MR;
        pb += ldb;
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++)
            _mm256_storeu_si256((__m256i *)(void *)(c + i * ldc + 4 * v), fin(lo[i][v], md[i][v]));
}

#endif

/* B' read in place (row k at b + k*ldb bytes, NR readable elements each): the driver's
 * small-call path; the packed form below passes ldb = NR elements.  Edge tiles go through
 * a local full tile: only the valid part of c is read or written. */
static void gk_gemm_u64_avx2_2x8_ukernel_ldb(int kc, const void *a_panel, const void *b,
                                             ptrdiff_t ldb, void *c, ptrdiff_t ldc,
                                             int mr_valid, int nr_valid, int first)
{
    GK_ALIGNED(32) uint64_t t[MR * NR];
    uint64_t *y = (uint64_t *)c;
    if (mr_valid == MR && nr_valid == NR) {
        core_2x8(kc, (const uint64_t *)a_panel, (const char *)b, ldb, y, ldc, first);
        return;
    }
    if (!first)
        for (int i = 0; i < mr_valid; i++)
            memcpy(t + i * NR, y + i * ldc, (size_t)nr_valid * 8);
    core_2x8(kc, (const uint64_t *)a_panel, (const char *)b, ldb, t, NR, first);
    for (int i = 0; i < mr_valid; i++)
        memcpy(y + i * ldc, t + i * NR, (size_t)nr_valid * 8);
}

static void gk_gemm_u64_avx2_2x8_ukernel(int kc, const void *a_panel, const void *b_panel,
                                         void *c, ptrdiff_t ldc, int mr_valid, int nr_valid,
                                         int first)
{
    gk_gemm_u64_avx2_2x8_ukernel_ldb(kc, a_panel, b_panel, NR * 8, c, ldc, mr_valid,
                                     nr_valid, first);
}

#define GK_EPI_PFX gk_gemm_u64_avx2
#define GK_EPI_GENERIC_S gk_gemm_epilogue_i64
#define GK_EPI_GENERIC_U gk_gemm_epilogue_u64
#define GK_T uint64_t
#define GK_ES 8
#define GK_VEC __m256i
#define GK_VL 4
#define GK_VLOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define GK_VSTORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
/* (long long)(x) of a uint64_t above LLONG_MAX is implementation-defined; gcc/clang/MSVC
 * keep the bits, which is all set1 needs (the lanes are read as bit patterns) */
#define GK_VSET1(x) _mm256_set1_epi64x((long long)(x))
#define GK_VMUL(x, b) mul_u64(x, b)
#define GK_VADD(x, y) _mm256_add_epi64(x, y)
#include "gk_gemm_int_epi_x86.inc"

const gk_gemm_kernel gk_gemm_i64_avx2 = {
    "avx2", GK_DT_I64, GK_ACC_U64, MR, NR, 96, 256, 1024,
    gk_gemm_pack_a_u64_avx2, gk_gemm_pack_b_u64_avx2, gk_gemm_u64_avx2_2x8_ukernel,
    gk_gemm_u64_avx2_epilogue_s,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u64_avx2_2x8_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
const gk_gemm_kernel gk_gemm_u64_avx2 = {
    "avx2", GK_DT_U64, GK_ACC_U64, MR, NR, 96, 256, 1024,
    gk_gemm_pack_a_u64_avx2, gk_gemm_pack_b_u64_avx2, gk_gemm_u64_avx2_2x8_ukernel,
    gk_gemm_u64_avx2_epilogue_u,
    1, /* cache_blocks */
    NULL, /* ukernel_rounded: integer products are exact */
    gk_gemm_u64_avx2_2x8_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
