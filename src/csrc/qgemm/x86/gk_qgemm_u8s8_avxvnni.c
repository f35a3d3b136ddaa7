/* int8 GEMM, AVX-VNNI (VEX-encoded vpdpbusd on ymm, 16 registers): u8 x s8, four
 * products summed exactly in int32, then a wrapping int32 add (never vpdpbusds).
 *
 * Tile MR x NR = 4 x 24: 12 ymm accumulators (> 5-cycle latency x 2 issues/cycle),
 * 3 B registers, 1 broadcast.  kstep 4, one byte per element, the panel layout of
 * gk_qgemm_x86_common.h (same packers as the AVX-512 VNNI family).  Partial tiles go
 * through a stack tile and the scalar epilogue (no byte masks before AVX-512). */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

#define MR 4
#define NV 3
#define GK_UK_KSTEP 4
#define GK_UK_PACK gk_x86_pack_quad
#define GK_UK_MAC(acc, a, b) ((acc) = _mm256_dpbusd_avx_epi32((acc), (a), (b)))
/* Accumulator (row i, vector v) in ymm(4 + 3i + v); B in ymm0-2; A broadcast in ymm3. */
#define GK_VZ(r) "vpxor %%ymm" #r ", %%ymm" #r ", %%ymm" #r "\n\t"
#define GK_VROW(i, c)                                                                       \
    "vpbroadcastd " #i "*4(%[pa]), %%ymm3\n\t"                                              \
    "%{vex%} vpdpbusd %%ymm0, %%ymm3, %%ymm" #c "\n\t"                                        \
    "%{vex%} vpdpbusd %%ymm1, %%ymm3, %%ymm" GK_STR(GK_ADD1_##c) "\n\t"                       \
    "%{vex%} vpdpbusd %%ymm2, %%ymm3, %%ymm" GK_STR(GK_ADD2_##c) "\n\t"
#define GK_STR_(x) #x
#define GK_STR(x) GK_STR_(x)
#define GK_ADD1_4 5
#define GK_ADD2_4 6
#define GK_ADD1_7 8
#define GK_ADD2_7 9
#define GK_ADD1_10 11
#define GK_ADD2_10 12
#define GK_ADD1_13 14
#define GK_ADD2_13 15
#define GK_VST(r) "vmovdqu %%ymm" #r ", (" #r "-4)*32(%[t])\n\t"
#define GK_UK_ASM_LOOP(pa, pb, pe, t)                                                       \
    __asm__ volatile(GK_VZ(4) GK_VZ(5) GK_VZ(6) GK_VZ(7) GK_VZ(8) GK_VZ(9) GK_VZ(10)        \
                     GK_VZ(11) GK_VZ(12) GK_VZ(13) GK_VZ(14) GK_VZ(15)                      \
                     "1:\n\t"                                                               \
                     "vmovdqu (%[pb]), %%ymm0\n\t"                                          \
                     "vmovdqu 32(%[pb]), %%ymm1\n\t"                                        \
                     "vmovdqu 64(%[pb]), %%ymm2\n\t"                                        \
                     GK_VROW(0, 4) GK_VROW(1, 7) GK_VROW(2, 10) GK_VROW(3, 13)              \
                     "add $16, %[pa]\n\t"                                                   \
                     "add $96, %[pb]\n\t"                                                   \
                     "cmp %[pa], %[pe]\n\t"                                                 \
                     "jne 1b\n\t"                                                           \
                     GK_VST(4) GK_VST(5) GK_VST(6) GK_VST(7) GK_VST(8) GK_VST(9)            \
                     GK_VST(10) GK_VST(11) GK_VST(12) GK_VST(13) GK_VST(14) GK_VST(15)      \
                     : [pa] "+r"(pa), [pb] "+r"(pb)                                         \
                     : [pe] "r"(pe), [t] "r"(t)                                             \
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",      \
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",        \
                       "xmm15", "cc", "memory")

#define DPB128(acc, u8, s8) _mm_dpbusd_avx_epi32(acc, u8, s8)
#include "gk_qpack_quad.h"
#include "gk_qukernel_ymm.h"

/* ---------------------------------------------------------------- small M */

#define GK_SMQ_W 32
#define GK_SMQ(op) _mm256_##op
#define GK_SMQ_SI(op) _mm256_##op##_si256
#define gk_smq_v __m256i
#define GK_SMQ_DPBUSD(acc, u8, s8) _mm256_dpbusd_avx_epi32(acc, u8, s8)
#define GK_SMQ_MASKED 0 /* no byte masks before AVX-512: partial blocks are scalar */

static inline __m256i gk_smq_load_row(const uint8_t *s, int cv, __m256i xv)
{
    if (cv >= 32)
        return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)s), xv);
    uint8_t tmp[32] = {0}; /* last columns: never read past the row */
    memcpy(tmp, s, (size_t)cv);
    return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)tmp), xv);
}

static inline __m256i gk_smq_load_i32(const int32_t *p, int nv)
{
    if (nv >= 8)
        return _mm256_loadu_si256((const __m256i *)p);
    int32_t tmp[8] = {0};
    if (nv > 0)
        memcpy(tmp, p, sizeof(int32_t) * (size_t)nv);
    return _mm256_loadu_si256((const __m256i *)tmp);
}

/* q[d] = columns 8 d .. 8 d + 7 in order. */
static inline void gk_smq_unpermute(const __m256i p[4], __m256i q[4])
{
    q[0] = _mm256_permute2x128_si256(p[0], p[1], 0x20);
    q[1] = _mm256_permute2x128_si256(p[2], p[3], 0x20);
    q[2] = _mm256_permute2x128_si256(p[0], p[1], 0x31);
    q[3] = _mm256_permute2x128_si256(p[2], p[3], 0x31);
}

/* Full vectors only (GK_SMQ_MASKED 0). */
static inline void gk_smq_epi(const gk_qepi *e, int m, int n, __m256i dot, __m256i bzp, __m256i cc,
                              int nv)
{
    (void)nv;
    gk_epi_vec8_avx(e, m, n, dot, bzp, cc);
}

#include "gk_qsmallm_quad.h"

static void smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    gk_smq_run(m, n, k, a, a_rs, a_cs, a_xor, b, b_rs, b_xor, e);
}

const gk_qgemm_kernel gk_qgemm_u8s8_avxvnni = {
    "avxvnni", MR, NR, 4, 1, 1, pack_a, pack_b, ukernel, GK_SMQ_MAX, smallm,
};
