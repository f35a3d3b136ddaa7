/* int8 GEMM, AVX-512 VNNI: vpdpbusd (u8 x s8, four products summed exactly in int32,
 * then a wrapping int32 add -- never the saturating vpdpbusds).
 *
 * Tile MR x NR = 8 x 32: 16 zmm accumulators (> 5-cycle latency x 2 issues/cycle).
 * kstep 4, one byte per element; panel layout: see gk_qgemm_x86_common.h
 *   A panel: per k-group g, MR int32 words = 4 depth bytes of each row   (broadcast)
 *   B panel: per k-group g, NR int32 words = 4 depth bytes of each column (2 zmm loads)
 * Uses AVX512F/BW/VL/VNNI only (no DQ): BW for byte masks and byte unpacks, VL for the
 * 128-bit vpdpbusd in the packers. */
#include <immintrin.h>

#include "gk_qepi_avx512.h"

#ifndef MR /* overridable for tuning builds only */
#define MR 8
#define NV 2
#endif
#define NR (16 * NV)

/* ---------------------------------------------------------------- packing */

#define DPB128(acc, u8, s8) _mm_dpbusd_epi32(acc, u8, s8)
#include "gk_qpack_quad.h"

static void pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs, uint8_t a_xor,
                   void *dst, int32_t *rowsum)
{
    gk_x86_pack_quad(a, rs, cs, a_xor, 0, MR, mc, k, dst, rowsum);
}

static void pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs, uint8_t b_xor,
                   void *dst, int32_t *colsum)
{
#if NR == 32
    gk_x86_pack_b32_quad(k, gk_x86_round_up(k, 4), nc, b, rs, cs, b_xor, dst, colsum);
#else
    gk_x86_pack_quad(b, cs, rs, b_xor, 1, NR, nc, k, dst, colsum);
#endif
}

/* ---------------------------------------------------------------- micro-kernel */

/* acc += dot4(u8 x, s8 y) per int32 lane.  gcc 12 does not tie the accumulator of the
 * vpdpbusd builtin to its output register: in a loop it copies every accumulator
 * (vmovdqa) and spills some each iteration, ~30% of the peak.  A one-instruction asm
 * with a "+v" operand keeps them in place; other compilers get the intrinsic. */
#if defined(__GNUC__) && !defined(__clang__)
#define GK_DPBUSD512(acc, x, y) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(y))
#else
#define GK_DPBUSD512(acc, x, y) ((acc) = _mm512_dpbusd_epi32((acc), (x), (y)))
#endif

static void ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel, const void *b_panel,
                    const gk_qepi *e, int m0, int n0)
{
    const int32_t *ap = (const int32_t *)a_panel;
    const __m512i *bp = (const __m512i *)b_panel;
    __m512i acc[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = _mm512_setzero_si512();

    /* int32 lanes wrap mod 2^32 (ONNX's overflow); each 4-product group is exact. */
    int ng = kp / 4;
#if MR == 8 && NV == 2 && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    /* The whole k-loop in one asm block with the 16 accumulators in zmm16..zmm31 (row i,
     * half v in zmm16+2i+v), stored once to an L1 tile at the end: with intrinsics, or
     * one asm statement per vpdpbusd, gcc 12 routes every accumulator through a scratch
     * register (two vmovdqa64 per vpdpbusd), which made the loop front-end bound at ~45%
     * of the vpdpbusd peak.  Per k-group: two B loads (zmm0-1), eight A broadcasts
     * (zmm2-3 alternating), 16 vpdpbusd (u8 broadcast x s8 B; the non-saturating form,
     * so each int32 lane wraps exactly like the scalar oracle). */
    if (ng > 0) {
        __m512i t[MR * NV];
        const int32_t *pa = ap, *pe = ap + (ptrdiff_t)ng * MR;
        const __m512i *pb = bp;
#define GK_Z(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define GK_ROW(i, r, c0, c1)                                                                \
    "vpbroadcastd " #i "*4(%[pa]), %%zmm" #r "\n\t"                                         \
    "vpdpbusd %%zmm0, %%zmm" #r ", %%zmm" #c0 "\n\t"                                        \
    "vpdpbusd %%zmm1, %%zmm" #r ", %%zmm" #c1 "\n\t"
#define GK_ST(i) "vmovdqu64 %%zmm" #i ", (" #i "-16)*64(%[t])\n\t"
        __asm__ volatile(GK_Z(16) GK_Z(17) GK_Z(18) GK_Z(19) GK_Z(20) GK_Z(21) GK_Z(22)
                         GK_Z(23) GK_Z(24) GK_Z(25) GK_Z(26) GK_Z(27) GK_Z(28) GK_Z(29)
                         GK_Z(30) GK_Z(31)
                         "1:\n\t"
                         "vmovdqu64 (%[pb]), %%zmm0\n\t"
                         "vmovdqu64 64(%[pb]), %%zmm1\n\t"
                         GK_ROW(0, 2, 16, 17) GK_ROW(1, 3, 18, 19)
                         GK_ROW(2, 2, 20, 21) GK_ROW(3, 3, 22, 23)
                         GK_ROW(4, 2, 24, 25) GK_ROW(5, 3, 26, 27)
                         GK_ROW(6, 2, 28, 29) GK_ROW(7, 3, 30, 31)
                         "add $32, %[pa]\n\t"
                         "add $128, %[pb]\n\t"
                         "cmp %[pa], %[pe]\n\t"
                         "jne 1b\n\t"
                         GK_ST(16) GK_ST(17) GK_ST(18) GK_ST(19) GK_ST(20) GK_ST(21)
                         GK_ST(22) GK_ST(23) GK_ST(24) GK_ST(25) GK_ST(26) GK_ST(27)
                         GK_ST(28) GK_ST(29) GK_ST(30) GK_ST(31)
                         : [pa] "+r"(pa), [pb] "+r"(pb)
                         : [pe] "r"(pe), [t] "r"(t)
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm16", "xmm17", "xmm18", "xmm19",
                           "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
                           "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc", "memory");
#undef GK_Z
#undef GK_ROW
#undef GK_ST
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = t[i * NV + v];
    }
#else
    for (int g = 0; g < ng; g++) {
        __m512i b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            b[v] = _mm512_loadu_si512(bp + (ptrdiff_t)g * NV + v);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m512i av = _mm512_set1_epi32(ap[(ptrdiff_t)g * MR + i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                GK_DPBUSD512(acc[i][v], av, b[v]);
        }
    }
#endif

    if (!gk_x86_epi_vector_ok(e)) {
        int32_t t[MR * NR];
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < NV; v++)
                _mm512_storeu_si512((void *)(t + i * NR + 16 * v), acc[i][v]);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, NR);
        return;
    }
    __mmask16 mk[NV];
    __m512i bzp[NV], cc[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        mk[v] = gk_mask16(nr_valid - 16 * v);
        bzp[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_zp + n0 + 16 * v);
        cc[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_colcorr + n0 + 16 * v);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (i < mr_valid) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                if (mk[v])
                    gk_epi_vec16_avx512(e, m0 + i, n0 + 16 * v, acc[i][v], bzp[v], cc[v], mk[v]);
        }
    }
}

/* ---------------------------------------------------------------- small M */

#define GK_SMQ_W 64
#define GK_SMQ(op) _mm512_##op
#define GK_SMQ_SI(op) _mm512_##op##_si512
#define gk_smq_v __m512i
#define GK_SMQ_DPBUSD(acc, u8, s8) _mm512_dpbusd_epi32(acc, u8, s8)
#define GK_SMQ_MASKED 1

static inline __m512i gk_smq_load_row(const uint8_t *s, int cv, __m512i xv)
{
    __mmask64 lm = cv >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << cv) - 1);
    return _mm512_xor_si512(_mm512_maskz_loadu_epi8(lm, s), xv);
}

static inline __m512i gk_smq_load_i32(const int32_t *p, int nv)
{
    return _mm512_maskz_loadu_epi32(gk_mask16(nv), p);
}

/* p[c] (lane block L = columns 16 L + 4 c ..) -> q[d] = columns 16 d .. 16 d + 15 in
 * order (a 4 x 4 transpose of 128-bit blocks). */
static inline void gk_smq_unpermute(const __m512i p[4], __m512i q[4])
{
    __m512i t0 = _mm512_shuffle_i32x4(p[0], p[1], 0x44), t1 = _mm512_shuffle_i32x4(p[0], p[1], 0xEE);
    __m512i t2 = _mm512_shuffle_i32x4(p[2], p[3], 0x44), t3 = _mm512_shuffle_i32x4(p[2], p[3], 0xEE);
    q[0] = _mm512_shuffle_i32x4(t0, t2, 0x88);
    q[1] = _mm512_shuffle_i32x4(t0, t2, 0xDD);
    q[2] = _mm512_shuffle_i32x4(t1, t3, 0x88);
    q[3] = _mm512_shuffle_i32x4(t1, t3, 0xDD);
}

static inline void gk_smq_epi(const gk_qepi *e, int m, int n, __m512i dot, __m512i bzp, __m512i cc,
                              int nv)
{
    gk_epi_vec16_avx512(e, m, n, dot, bzp, cc, gk_mask16(nv));
}

#include "gk_qsmallm_quad.h"

#if GK_SMQ_MAX != GK_QGEMM_AVX512VNNI_SMALLM_MAX
#error "the amx family advertises GK_QGEMM_AVX512VNNI_SMALLM_MAX rows for this path"
#endif

void gk_qgemm_u8s8_avx512vnni_smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs,
                                     ptrdiff_t a_cs, uint8_t a_xor, const uint8_t *b,
                                     ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    gk_smq_run(m, n, k, a, a_rs, a_cs, a_xor, b, b_rs, b_xor, e);
}

const gk_qgemm_kernel gk_qgemm_u8s8_avx512vnni = {
    "avx512vnni", MR, NR, 4, 1, 1, pack_a, pack_b, ukernel, GK_SMQ_MAX,
    gk_qgemm_u8s8_avx512vnni_smallm,
};
