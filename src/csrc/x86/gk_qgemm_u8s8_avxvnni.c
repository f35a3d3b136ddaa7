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
#define NR (8 * NV)

/* ---------------------------------------------------------------- packing */

#define DPB128(acc, u8, s8) _mm_dpbusd_avx_epi32(acc, u8, s8)
#include "gk_qpack_quad.h"
#include "gk_qepi_avx2.h"

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

/* ---------------------------------------------------------------- micro-kernel */

static void ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel, const void *b_panel,
                    const gk_qepi *e, int m0, int n0)
{
    const int32_t *ap = (const int32_t *)a_panel;
    const __m256i *bp = (const __m256i *)b_panel;
    __m256i acc[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = _mm256_setzero_si256();

    /* int32 lanes wrap mod 2^32 (ONNX's overflow); each 4-product group is exact. */
    int ng = kp / 4;
#pragma GCC unroll 2
    for (int g = 0; g < ng; g++) {
        __m256i b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            b[v] = _mm256_loadu_si256(bp + (ptrdiff_t)g * NV + v);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m256i av = _mm256_set1_epi32(ap[(ptrdiff_t)g * MR + i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = _mm256_dpbusd_avx_epi32(acc[i][v], av, b[v]);
        }
    }

    if (mr_valid < MR || nr_valid < NR || !gk_x86_epi_vector_ok(e)) {
        int32_t t[MR * NR];
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < NV; v++)
                _mm256_storeu_si256((__m256i *)(t + i * NR + 8 * v), acc[i][v]);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, NR);
        return;
    }
    __m256i bzp[NV], cc[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        bzp[v] = _mm256_loadu_si256((const __m256i *)(e->b_zp + n0 + 8 * v));
        cc[v] = _mm256_loadu_si256((const __m256i *)(e->b_colcorr + n0 + 8 * v));
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            gk_epi_vec8_avx(e, m0 + i, n0 + 8 * v, acc[i][v], bzp[v], cc[v]);
}

/* ---------------------------------------------------------------- small M */

#define SM_MAX 8
#define SM_KC 16            /* depth rows of B per pass (4 k-groups) */
#define SM_STACK 32768      /* bytes of int32 accumulators on the stack */

/* 32 columns x 4 depth rows of b' -> u[c], c = 0..3: int32 lane (L, j) of u[c] holds the
 * 4 depth bytes of column 16 L + 4 c + j (vpunpck* work inside 128-bit lanes). */
static inline void interleave4x32(__m256i r0, __m256i r1, __m256i r2, __m256i r3, __m256i u[4])
{
    __m256i t0 = _mm256_unpacklo_epi8(r0, r1), t1 = _mm256_unpackhi_epi8(r0, r1);
    __m256i t2 = _mm256_unpacklo_epi8(r2, r3), t3 = _mm256_unpackhi_epi8(r2, r3);
    u[0] = _mm256_unpacklo_epi16(t0, t2);
    u[1] = _mm256_unpackhi_epi16(t0, t2);
    u[2] = _mm256_unpacklo_epi16(t1, t3);
    u[3] = _mm256_unpackhi_epi16(t1, t3);
}

/* Inverse of that order: q[d] = columns 8 d .. 8 d + 7 in order. */
static inline void unpermute32(const __m256i p[4], __m256i q[4])
{
    q[0] = _mm256_permute2x128_si256(p[0], p[1], 0x20);
    q[1] = _mm256_permute2x128_si256(p[2], p[3], 0x20);
    q[2] = _mm256_permute2x128_si256(p[0], p[1], 0x31);
    q[3] = _mm256_permute2x128_si256(p[2], p[3], 0x31);
}

/* M <= 8 rows, B streamed once row by row (the rows of each 16-row pass are read in
 * parallel, sequentially), interleaved on the fly; int32 accumulators for up to
 * SM_STACK bytes of columns live on the stack, row m of them holding colsum(b'). */
static void smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    int32_t buf[SM_STACK / 4] __attribute__((aligned(32)));
    int32_t aq[SM_MAX * SM_KC / 4];
    int need_colsum = 0;
    for (int i = 0; i < m; i++)
        need_colsum |= e->a_zp[i] != 0; /* za == 0 everywhere: colcorr is multiplied by 0 */
    int rows = m + need_colsum;
    int nc_max = SM_STACK / 4 / (m + 1) / 32 * 32;
    const __m256i xv = _mm256_set1_epi8((char)b_xor), ones = _mm256_set1_epi8(1);
    const int vec_ok = gk_x86_epi_vector_ok(e);

    for (int nc0 = 0; nc0 < n; nc0 += nc_max) {
        int ncw = n - nc0 < nc_max ? n - nc0 : nc_max;
        int nb = (ncw + 31) / 32, ldb = nb * 32;
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
                int cv = ncw - blk * 32;
                __m256i u[4][4];
#pragma GCC unroll 4
                for (int g = 0; g < 4; g++) {
                    __m256i r[4];
#pragma GCC unroll 4
                    for (int t = 0; t < 4; t++) {
                        int d = 4 * g + t;
                        const uint8_t *s = rp + d * b_rs + blk * 32;
                        /* rows past K must be b' = 0 exactly: they feed valid columns */
                        if (d >= kv) {
                            r[t] = _mm256_setzero_si256();
                        } else if (cv >= 32) {
                            r[t] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)s), xv);
                        } else { /* last columns: never read past the row */
                            uint8_t tmp[32] = {0};
                            memcpy(tmp, s, (size_t)cv);
                            r[t] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)tmp), xv);
                        }
                    }
                    interleave4x32(r[0], r[1], r[2], r[3], u[g]);
                }
                for (int i = 0; i < m; i++) {
                    int32_t *acc = buf + (ptrdiff_t)i * ldb + blk * 32;
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++) {
                        __m256i s = _mm256_load_si256((const __m256i *)(acc + 8 * c));
#pragma GCC unroll 4
                        for (int g = 0; g < 4; g++)
                            s = _mm256_dpbusd_avx_epi32(s, _mm256_set1_epi32(aq[4 * i + g]), u[g][c]);
                        _mm256_store_si256((__m256i *)(acc + 8 * c), s);
                    }
                }
                if (need_colsum) {
                    int32_t *acc = buf + (ptrdiff_t)m * ldb + blk * 32;
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++) {
                        __m256i s = _mm256_load_si256((const __m256i *)(acc + 8 * c));
#pragma GCC unroll 4
                        for (int g = 0; g < 4; g++)
                            s = _mm256_dpbusd_avx_epi32(s, ones, u[g][c]);
                        _mm256_store_si256((__m256i *)(acc + 8 * c), s);
                    }
                }
            }
        }
        /* epilogue: colcorr = colsum(b') - K zb  (mod 2^32) */
        for (int blk = 0; blk < nb; blk++) {
            int nb0 = nc0 + blk * 32, w = n - nb0 < 32 ? n - nb0 : 32;
            __m256i p[4], q[4], bzp[4], cc[4];
            int32_t bzt[32] = {0};
            memcpy(bzt, e->b_zp + nb0, sizeof(int32_t) * (size_t)w);
            for (int d = 0; d < 4; d++)
                bzp[d] = _mm256_loadu_si256((const __m256i *)(bzt + 8 * d));
            if (need_colsum) {
                for (int c = 0; c < 4; c++)
                    p[c] = _mm256_load_si256((const __m256i *)(buf + (ptrdiff_t)m * ldb + blk * 32 + 8 * c));
                unpermute32(p, q);
                for (int d = 0; d < 4; d++)
                    cc[d] = _mm256_sub_epi32(q[d], _mm256_mullo_epi32(_mm256_set1_epi32(k), bzp[d]));
            } else {
                for (int d = 0; d < 4; d++)
                    cc[d] = _mm256_setzero_si256();
            }
            for (int i = 0; i < m; i++) {
                for (int c = 0; c < 4; c++)
                    p[c] = _mm256_load_si256((const __m256i *)(buf + (ptrdiff_t)i * ldb + blk * 32 + 8 * c));
                unpermute32(p, q);
                if (vec_ok && w == 32) {
                    for (int d = 0; d < 4; d++)
                        gk_epi_vec8_avx(e, i, nb0 + 8 * d, q[d], bzp[d], cc[d]);
                } else {
                    /* partial block or unusual mult / y_zp strides: the scalar reference,
                     * on a view of the epilogue shifted to column nb0 with this block's
                     * colcorr */
                    int32_t t[32], cct[32];
                    gk_qepi e2 = *e;
                    size_t es = e->kind == GK_QOUT_I32 ? 4 : 1;
                    for (int d = 0; d < 4; d++) {
                        _mm256_storeu_si256((__m256i *)(t + 8 * d), q[d]);
                        _mm256_storeu_si256((__m256i *)(cct + 8 * d), cc[d]);
                    }
                    e2.b_zp = e->b_zp + nb0;
                    e2.b_colcorr = cct;
                    if (e->kind != GK_QOUT_I32) {
                        e2.mult = e->mult + (ptrdiff_t)nb0 * e->mult_cs;
                        e2.y_zp = e->y_zp + (ptrdiff_t)nb0 * e->yzp_cs;
                    }
                    e2.y = (char *)e->y + (size_t)nb0 * es;
                    for (int j = 0; j < w; j++)
                        gk_qepi_store1(&e2, i, j, (uint32_t)t[j]);
                }
            }
        }
    }
}

const gk_qgemm_kernel gk_qgemm_u8s8_avxvnni = {
    "avxvnni", MR, NR, 4, 1, 1, pack_a, pack_b, ukernel, SM_MAX, smallm,
};
