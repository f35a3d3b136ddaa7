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

#include "gk_qgemm_x86_common.h"

#define MR 8
#define NV 2
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
    gk_x86_pack_quad(b, cs, rs, b_xor, 1, NR, nc, k, dst, colsum);
}

/* ---------------------------------------------------------------- epilogue */

/* 8 raw int32 -> requantized, clamped int32 in [lo, hi].  Bit-identical to
 * gk_qepi_store1: double product (both factors exact in double), round half to even,
 * + y_zp, clamp in double (so the conversion never sees an out-of-range value). */
static inline __m256i requant8(__m256i y, __m512d m, __m512d z, __m512d lo, __m512d hi)
{
    __m512d x = _mm512_mul_pd(_mm512_cvtepi32_pd(y), m);
    x = _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm512_min_pd(_mm512_max_pd(_mm512_add_pd(x, z), lo), hi);
    return _mm512_cvtpd_epi32(x); /* integral, in [-128, 255]: exact */
}

/* Epilogue of 16 outputs (m, n .. n+15) under mask mk, from their raw dot products.
 * bzp / cc hold b_zp / b_colcorr of those columns.  Arithmetic is mod 2^32 like
 * gk_qepi_store1 (vpmulld keeps the low 32 bits). */
static inline void epi_vec16(const gk_qepi *e, int m, int n, __m512i dot, __m512i bzp,
                             __m512i cc, __mmask16 mk)
{
    __m512i y = _mm512_sub_epi32(dot, _mm512_mullo_epi32(_mm512_set1_epi32(e->a_rowsum[m]), bzp));
    y = _mm512_sub_epi32(y, _mm512_mullo_epi32(_mm512_set1_epi32(e->a_zp[m]), cc));
    if (e->kind == GK_QOUT_I32) {
        _mm512_mask_storeu_epi32((int32_t *)e->y + (ptrdiff_t)m * e->ldy + n, mk, y);
        return;
    }
    const float *mp = e->mult + (ptrdiff_t)m * e->mult_rs + (ptrdiff_t)n * e->mult_cs;
    const int32_t *zp = e->y_zp + (ptrdiff_t)m * e->yzp_rs + (ptrdiff_t)n * e->yzp_cs;
    __m512d mlo, mhi, zlo, zhi;
    if (e->mult_cs) {
        __m512 f = _mm512_maskz_loadu_ps(mk, mp);
        mlo = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
        mhi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
    } else {
        mlo = mhi = _mm512_set1_pd((double)*mp);
    }
    if (e->yzp_cs) {
        __m512i z = _mm512_maskz_loadu_epi32(mk, zp);
        zlo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(z));
        zhi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(z, 1));
    } else {
        zlo = zhi = _mm512_set1_pd((double)*zp);
    }
    int u8 = e->kind == GK_QOUT_U8;
    __m512d lo = _mm512_set1_pd(u8 ? 0.0 : -128.0), hi = _mm512_set1_pd(u8 ? 255.0 : 127.0);
    __m256i q0 = requant8(_mm512_castsi512_si256(y), mlo, zlo, lo, hi);
    __m256i q1 = requant8(_mm512_extracti64x4_epi64(y, 1), mhi, zhi, lo, hi);
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    /* vpmovdb truncates: the values are already in the output type's range */
    _mm512_mask_cvtepi32_storeu_epi8((int8_t *)e->y + (ptrdiff_t)m * e->ldy + n, mk, q);
}

static inline __mmask16 mask16(int valid)
{
    return valid >= 16 ? (__mmask16)0xFFFF : valid <= 0 ? (__mmask16)0 : (__mmask16)((1u << valid) - 1);
}

/* ---------------------------------------------------------------- micro-kernel */

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
#pragma GCC unroll 2
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
                acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], av, b[v]);
        }
    }

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
        mk[v] = mask16(nr_valid - 16 * v);
        bzp[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_zp + n0 + 16 * v);
        cc[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_colcorr + n0 + 16 * v);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (i < mr_valid) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                if (mk[v])
                    epi_vec16(e, m0 + i, n0 + 16 * v, acc[i][v], bzp[v], cc[v], mk[v]);
        }
    }
}

/* ---------------------------------------------------------------- small M */

#define SM_MAX 8
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
static void smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
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
                mk[d] = mask16(n - nb0 - 16 * d);
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
                            epi_vec16(e, i, nb0 + 16 * d, q[d], bzp[d], cc[d], mk[d]);
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
    "avx512vnni", MR, NR, 4, 1, 1, pack_a, pack_b, ukernel, SM_MAX, smallm,
};
