/* int8 GEMM, AVX-512 VNNI: vpdpbusd (u8 x s8, four products summed exactly in int32,
 * then a wrapping int32 add -- never the saturating vpdpbusds).
 *
 * Tile MR x NR = 8 x 32: 16 zmm accumulators (> 5-cycle latency x 2 issues/cycle).
 * kstep 4, one byte per element; panel layout: see gk_qgemm_x86_common.h
 *   A panel: per k-group g, MR int32 words = 4 depth bytes of each row   (broadcast)
 *   B panel: per k-group g, NR int32 words = 4 depth bytes of each column (2 zmm loads)
 * Uses AVX512F/BW/VL/VNNI only (no DQ): BW for byte masks and byte unpacks, VL for the
 * 128-bit vpdpbusd in the packers.
 *
 * Read top to bottom: the epilogue (gk_qepi_x86.inc at 16 lanes, masked), the packers
 * (gk_qpack_quad.inc in EVEX encoding, with the zmm B packer), the micro-kernel, the
 * small-M path (gk_qsmallm_quad.inc on zmm), the family's table entry. */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

#define GK_EPI_LANES 16
#include "gk_qepi_x86.inc" /* gk_qepi_zmm_dot, gk_qepi_zmm_mask */

/* Tile 8 x 32: the asm k-loop below is written for exactly this shape. */
#define GK_AVX512VNNI_MR 8
#define GK_AVX512VNNI_NV 2
#define GK_AVX512VNNI_NR (16 * GK_AVX512VNNI_NV)

/* ---------------------------------------------------------------- packing */

#define GK_QPACK_DPBUSD128(acc, u8, s8) _mm_dpbusd_epi32(acc, u8, s8)
#define GK_QPACK_ZMM 1
#include "gk_qpack_quad.inc" /* gk_x86_pack_quad, gk_x86_pack_b32_quad */

static void gk_qgemm_u8s8_avx512vnni_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs,
                                            ptrdiff_t cs, uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_x86_pack_quad(a, rs, cs, a_xor, 0, GK_AVX512VNNI_MR, mc, k, dst, rowsum);
}

static void gk_qgemm_u8s8_avx512vnni_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs,
                                            ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_x86_pack_b32_quad(k, gk_x86_round_up(k, 4), nc, b, rs, cs, b_xor, dst, colsum);
}

/* ---------------------------------------------------------------- micro-kernel */

/* acc += dot4(u8 x, s8 y) per int32 lane.  gcc 12 does not tie the accumulator of the
 * vpdpbusd builtin to its output register: in a loop it copies every accumulator
 * (vmovdqa) and spills some each iteration, ~30% of the peak.  A one-instruction asm
 * with a "+v" operand keeps them in place; other compilers get the intrinsic. */
#if GK_GCC
#define GK_DPBUSD512(acc, x, y) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(y))
#else
#define GK_DPBUSD512(acc, x, y) ((acc) = _mm512_dpbusd_epi32((acc), (x), (y)))
#endif

static void gk_qgemm_u8s8_avx512vnni_8x32_ukernel(int mr_valid, int nr_valid, int kp,
                                                  const void *a_panel, const void *b_panel,
                                                  const gk_qepi *e, int m0, int n0)
{
    const int32_t *ap = (const int32_t *)a_panel;
    const __m512i *bp = (const __m512i *)b_panel;
    __m512i acc[GK_AVX512VNNI_MR][GK_AVX512VNNI_NV];
    GK_UNROLL(8)
    for (int i = 0; i < GK_AVX512VNNI_MR; i++)
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            acc[i][v] = _mm512_setzero_si512();

    /* int32 lanes wrap mod 2^32 (ONNX's overflow); each 4-product group is exact. */
    int ng = kp / 4;
#if GK_GCC && GK_GNU_ASM
    /* The whole k-loop in one asm block with the 16 accumulators in zmm16..zmm31 (row i,
     * half v in zmm16+2i+v), stored once to an L1 tile at the end: with intrinsics, or
     * one asm statement per vpdpbusd, gcc 12 routes every accumulator through a scratch
     * register (two vmovdqa64 per vpdpbusd), which made the loop front-end bound at ~45%
     * of the vpdpbusd peak.  Per k-group: two B loads (zmm0-1), eight A broadcasts
     * (zmm2-3 alternating), 16 vpdpbusd (u8 broadcast x s8 B; the non-saturating form,
     * so each int32 lane wraps exactly like the scalar oracle). */
    if (ng > 0) {
        __m512i t[GK_AVX512VNNI_MR * GK_AVX512VNNI_NV];
        const int32_t *pa = ap, *pe = ap + (ptrdiff_t)ng * GK_AVX512VNNI_MR;
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
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++)
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                acc[i][v] = t[i * GK_AVX512VNNI_NV + v];
    }
#else
    for (int g = 0; g < ng; g++) {
        __m512i b[GK_AVX512VNNI_NV];
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            b[v] = _mm512_loadu_si512(bp + (ptrdiff_t)g * GK_AVX512VNNI_NV + v);
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++) {
            __m512i av = _mm512_set1_epi32(ap[(ptrdiff_t)g * GK_AVX512VNNI_MR + i]);
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                GK_DPBUSD512(acc[i][v], av, b[v]);
        }
    }
#endif

    if (!gk_x86_epi_vector_ok(e)) {
        int32_t t[GK_AVX512VNNI_MR * GK_AVX512VNNI_NR];
        for (int i = 0; i < GK_AVX512VNNI_MR; i++)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                _mm512_storeu_si512((void *)(t + i * GK_AVX512VNNI_NR + 16 * v), acc[i][v]);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, GK_AVX512VNNI_NR);
        return;
    }
    __mmask16 mk[GK_AVX512VNNI_NV];
    __m512i bzp[GK_AVX512VNNI_NV], cc[GK_AVX512VNNI_NV];
    GK_UNROLL(4)
    for (int v = 0; v < GK_AVX512VNNI_NV; v++) {
        mk[v] = gk_qepi_zmm_mask(nr_valid - 16 * v);
        bzp[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_zp + n0 + 16 * v);
        cc[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_colcorr + n0 + 16 * v);
    }
    GK_UNROLL(8)
    for (int i = 0; i < GK_AVX512VNNI_MR; i++) {
        if (i < mr_valid) {
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                if (mk[v])
                    gk_qepi_zmm_dot(e, m0 + i, n0 + 16 * v, acc[i][v], bzp[v], cc[v], mk[v]);
        }
    }
}

#undef GK_DPBUSD512

/* ---------------------------------------------------------------- small M */

#define GK_SMQ_W 64
#define GK_SMQ_DPBUSD(acc, u8, s8) _mm512_dpbusd_epi32(acc, u8, s8)
#if GK_GCC && GK_GNU_ASM /* gcc 12 copies intrinsic accumulators (see the micro-kernel) */
#define GK_SMQ_DPBUSD_TO(acc, x, y) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(y))
#endif
#define GK_SMQ_NAME gk_qgemm_u8s8_avx512vnni_smallm
#include "gk_qsmallm_quad.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_avx512vnni = {
    "avx512vnni", GK_AVX512VNNI_MR, GK_AVX512VNNI_NR, 4, 1, 1,
    gk_qgemm_u8s8_avx512vnni_pack_a, gk_qgemm_u8s8_avx512vnni_pack_b,
    gk_qgemm_u8s8_avx512vnni_8x32_ukernel, GK_X86_SMALLM_MAX, gk_qgemm_u8s8_avx512vnni_smallm,
    NULL, NULL, /* begin, end: none */
};
