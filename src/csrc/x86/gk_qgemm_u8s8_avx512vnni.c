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

#define SM_MAX GK_QGEMM_AVX512VNNI_SMALLM_MAX
#define SM_KC 16            /* depth rows of B per pass (4 k-groups) */
#define SM_STACK 32768      /* bytes of int32 accumulators on the stack */

/* 64 columns x 4 depth rows of b' -> u[c], c = 0..3: int32 lane (L, j) of u[c] holds the
 * 4 depth bytes of column 16 L + 4 c + j (vpunpck* work inside 128-bit lanes). */
static inline void interleave4x64(__m512i r0, __m512i r1, __m512i r2, __m512i r3, __m512i u[4])
{
    __m512i t0 = _mm512_unpacklo_epi8(r0, r1), t1 = _mm512_unpackhi_epi8(r0, r1);
    __m512i t2 = _mm512_unpacklo_epi8(r2, r3), t3 = _mm512_unpackhi_epi8(r2, r3);
    u[0] = _mm512_unpacklo_epi16(t0, t2);
    u[1] = _mm512_unpackhi_epi16(t0, t2);
    u[2] = _mm512_unpacklo_epi16(t1, t3);
    u[3] = _mm512_unpackhi_epi16(t1, t3);
}

/* Inverse of the column order above: p[c] (lane block L = columns 16 L + 4 c ..) ->
 * q[d] = columns 16 d .. 16 d + 15 in order (a 4 x 4 transpose of 128-bit blocks). */
static inline void unpermute64(const __m512i p[4], __m512i q[4])
{
    __m512i t0 = _mm512_shuffle_i32x4(p[0], p[1], 0x44), t1 = _mm512_shuffle_i32x4(p[0], p[1], 0xEE);
    __m512i t2 = _mm512_shuffle_i32x4(p[2], p[3], 0x44), t3 = _mm512_shuffle_i32x4(p[2], p[3], 0xEE);
    q[0] = _mm512_shuffle_i32x4(t0, t2, 0x88);
    q[1] = _mm512_shuffle_i32x4(t0, t2, 0xDD);
    q[2] = _mm512_shuffle_i32x4(t1, t3, 0x88);
    q[3] = _mm512_shuffle_i32x4(t1, t3, 0xDD);
}

/* M <= 8 rows, B streamed once row by row (the rows of each 16-row pass are read in
 * parallel, sequentially), interleaved on the fly; int32 accumulators for up to
 * SM_STACK bytes of columns live on the stack, row m of them holding colsum(b'). */
void gk_qgemm_u8s8_avx512vnni_smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs,
                                     ptrdiff_t a_cs, uint8_t a_xor, const uint8_t *b,
                                     ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    int32_t buf[SM_STACK / 4] __attribute__((aligned(64)));
    int32_t aq[SM_MAX * SM_KC / 4];
    int need_colsum = 0;
    for (int i = 0; i < m; i++)
        need_colsum |= e->a_zp[i] != 0; /* za == 0 everywhere: colcorr is multiplied by 0 */
    int rows = m + need_colsum;
    int nc_max = SM_STACK / 4 / (m + 1) / 64 * 64;
    const __m512i xv = _mm512_set1_epi8((char)b_xor), ones = _mm512_set1_epi8(1);
    const int vec_ok = gk_x86_epi_vector_ok(e);

    for (int nc0 = 0; nc0 < n; nc0 += nc_max) {
        int ncw = n - nc0 < nc_max ? n - nc0 : nc_max;
        int nb = (ncw + 63) / 64, ldb = nb * 64;
        memset(buf, 0, sizeof(int32_t) * (size_t)rows * (size_t)ldb);
        for (int k0 = 0; k0 < k; k0 += SM_KC) {
            int kv = k - k0 < SM_KC ? k - k0 : SM_KC;
            if (a_cs == 1 && kv == SM_KC) {
                const __m128i ax = _mm_set1_epi8((char)a_xor);
                for (int i = 0; i < m; i++)
                    _mm_storeu_si128((__m128i *)(aq + 4 * i),
                                     _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i * a_rs + k0)), ax));
            } else {
                gk_x86_smallm_gather_a(m, k, k0, SM_KC, a, a_rs, a_cs, a_xor, (uint8_t *)aq);
            }
            const uint8_t *rp = b + (ptrdiff_t)k0 * b_rs + nc0;
            for (int blk = 0; blk < nb; blk++) {
                int cv = ncw - blk * 64;
                __mmask64 lm = cv >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << cv) - 1);
                __m512i u[4][4];
#pragma GCC unroll 4
                for (int g = 0; g < 4; g++) {
                    __m512i r[4];
#pragma GCC unroll 4
                    for (int t = 0; t < 4; t++) {
                        int d = 4 * g + t;
                        /* rows past K must be b' = 0 exactly: they feed valid columns */
                        r[t] = d < kv ? _mm512_xor_si512(
                                            _mm512_maskz_loadu_epi8(lm, rp + d * b_rs + blk * 64), xv)
                                      : _mm512_setzero_si512();
                    }
                    interleave4x64(r[0], r[1], r[2], r[3], u[g]);
                }
                for (int i = 0; i < m; i++) {
                    int32_t *acc = buf + (ptrdiff_t)i * ldb + blk * 64;
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++) {
                        __m512i s = _mm512_load_si512((const void *)(acc + 16 * c));
#pragma GCC unroll 4
                        for (int g = 0; g < 4; g++)
                            s = _mm512_dpbusd_epi32(s, _mm512_set1_epi32(aq[4 * i + g]), u[g][c]);
                        _mm512_store_si512((void *)(acc + 16 * c), s);
                    }
                }
                if (need_colsum) {
                    int32_t *acc = buf + (ptrdiff_t)m * ldb + blk * 64;
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++) {
                        __m512i s = _mm512_load_si512((const void *)(acc + 16 * c));
#pragma GCC unroll 4
                        for (int g = 0; g < 4; g++)
                            s = _mm512_dpbusd_epi32(s, ones, u[g][c]);
                        _mm512_store_si512((void *)(acc + 16 * c), s);
                    }
                }
            }
        }
        /* epilogue: colcorr = colsum(b') - K zb  (mod 2^32) */
        for (int blk = 0; blk < nb; blk++) {
            int nb0 = nc0 + blk * 64;
            __m512i p[4], q[4], bzp[4], cc[4];
            __mmask16 mk[4];
            for (int d = 0; d < 4; d++) {
                mk[d] = gk_mask16(n - nb0 - 16 * d);
                bzp[d] = _mm512_maskz_loadu_epi32(mk[d], e->b_zp + nb0 + 16 * d);
            }
            if (need_colsum) {
                for (int c = 0; c < 4; c++)
                    p[c] = _mm512_load_si512((const void *)(buf + (ptrdiff_t)m * ldb + blk * 64 + 16 * c));
                unpermute64(p, q);
                for (int d = 0; d < 4; d++)
                    cc[d] = _mm512_sub_epi32(q[d], _mm512_mullo_epi32(_mm512_set1_epi32(k), bzp[d]));
            } else {
                for (int d = 0; d < 4; d++)
                    cc[d] = _mm512_setzero_si512();
            }
            for (int i = 0; i < m; i++) {
                for (int c = 0; c < 4; c++)
                    p[c] = _mm512_load_si512((const void *)(buf + (ptrdiff_t)i * ldb + blk * 64 + 16 * c));
                unpermute64(p, q);
                if (vec_ok) {
                    for (int d = 0; d < 4; d++)
                        if (mk[d])
                            gk_epi_vec16_avx512(e, i, nb0 + 16 * d, q[d], bzp[d], cc[d], mk[d]);
                } else {
                    /* unusual mult / y_zp strides: the scalar reference, on a view of the
                     * epilogue shifted to column nb0 with this block's colcorr */
                    int32_t t[64], cct[64];
                    gk_qepi e2 = *e;
                    size_t es = e->kind == GK_QOUT_I32 ? 4 : 1;
                    for (int d = 0; d < 4; d++) {
                        _mm512_storeu_si512((void *)(t + 16 * d), q[d]);
                        _mm512_storeu_si512((void *)(cct + 16 * d), cc[d]);
                    }
                    e2.b_zp = e->b_zp + nb0;
                    e2.b_colcorr = cct;
                    e2.mult = e->mult + (ptrdiff_t)nb0 * e->mult_cs;
                    e2.y_zp = e->y_zp + (ptrdiff_t)nb0 * e->yzp_cs;
                    e2.y = (char *)e->y + (size_t)nb0 * es;
                    int w = n - nb0 < 64 ? n - nb0 : 64;
                    for (int j = 0; j < w; j++)
                        gk_qepi_store1(&e2, i, j, (uint32_t)t[j]);
                }
            }
        }
    }
}

const gk_qgemm_kernel gk_qgemm_u8s8_avx512vnni = {
    "avx512vnni", MR, NR, 4, 1, 1, pack_a, pack_b, ukernel, SM_MAX,
    gk_qgemm_u8s8_avx512vnni_smallm,
};
