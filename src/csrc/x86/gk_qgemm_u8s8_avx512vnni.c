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
#if MR == 8 && NV == 2
    /* Named accumulators and a pointer-bumping loop: with the array form gcc copies the
     * accumulators between registers (and spills two) every iteration. */
    if (ng > 0) {
        __m512i c00 = acc[0][0], c01 = acc[0][1], c10 = acc[1][0], c11 = acc[1][1];
        __m512i c20 = acc[2][0], c21 = acc[2][1], c30 = acc[3][0], c31 = acc[3][1];
        __m512i c40 = acc[4][0], c41 = acc[4][1], c50 = acc[5][0], c51 = acc[5][1];
        __m512i c60 = acc[6][0], c61 = acc[6][1], c70 = acc[7][0], c71 = acc[7][1];
        const int32_t *pa = ap, *pe = ap + (ptrdiff_t)ng * MR;
        const __m512i *pb = bp;
        do {
            __m512i b0 = _mm512_loadu_si512(pb), b1 = _mm512_loadu_si512(pb + 1), x;
#define GK_ROW(i)                                                                           \
    x = _mm512_set1_epi32(pa[i]);                                                           \
    GK_DPBUSD512(c##i##0, x, b0);                                                           \
    GK_DPBUSD512(c##i##1, x, b1);
            GK_ROW(0) GK_ROW(1) GK_ROW(2) GK_ROW(3) GK_ROW(4) GK_ROW(5) GK_ROW(6) GK_ROW(7)
#undef GK_ROW
            pa += MR;
            pb += NV;
        } while (pa != pe);
        acc[0][0] = c00; acc[0][1] = c01; acc[1][0] = c10; acc[1][1] = c11;
        acc[2][0] = c20; acc[2][1] = c21; acc[3][0] = c30; acc[3][1] = c31;
        acc[4][0] = c40; acc[4][1] = c41; acc[5][0] = c50; acc[5][1] = c51;
        acc[6][0] = c60; acc[6][1] = c61; acc[7][0] = c70; acc[7][1] = c71;
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
