/* Small-M int8 GEMM without packing for the vpdpbusd families (AVX-512 VNNI on zmm,
 * AVX-VNNI on ymm): one body, written once for either vector width.  Included once by
 * each family file, which first defines
 *   GK_SMQ_W            columns per block: 4 vectors of GK_SMQ_W / 4 int32 lanes (64 | 32)
 *   GK_SMQ(op)          the width's intrinsic: GK_SMQ(add_epi32) = _mm512_add_epi32 | ...
 *   GK_SMQ_SI(op)       the same for the _si512 | _si256 ops (load, store, xor, setzero)
 *   gk_smq_v            the vector type (__m512i | __m256i)
 *   GK_SMQ_DPBUSD(acc, u8, s8)     vpdpbusd in the width's encoding (never vpdpbusds)
 *   GK_SMQ_MASKED       1 when gk_smq_epi handles partial vectors, else they take the
 *                       scalar reference
 * and the functions
 *   gk_smq_load_row(s, cv, xv)     bytes [0, GK_SMQ_W) of B row s, ^ xv; columns >= cv
 *                                  are 0 and never read
 *   gk_smq_load_i32(p, nv)         p[0, nv) as int32 lanes, 0 beyond; p[nv..] never read
 *   gk_smq_unpermute(p, q)         inverse of gk_smq_interleave4's column order
 *   gk_smq_epi(e, m, n, dot, bzp, cc, nv)   the vector epilogue of columns n .. n + nv - 1
 *
 * Scheme: B streamed once row by row (the rows of each SM_KC-row pass are read in
 * parallel, sequentially), interleaved on the fly into 4-byte depth quads; int32
 * accumulators for up to GK_SMQ_STACK bytes of columns live on the stack, row m of them
 * holding colsum(b') (vpdpbusd against ones: 4 exact products per lane). */
#ifndef GEMMKIT_GK_QSMALLM_QUAD_H
#define GEMMKIT_GK_QSMALLM_QUAD_H

#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

#define GK_SMQ_MAX 16        /* rows */
#define GK_SMQ_KC 16        /* depth rows of B per pass (4 k-groups) */
#define GK_SMQ_STACK 32768  /* bytes of int32 accumulators on the stack */
#define GK_SMQ_L (GK_SMQ_W / 4) /* int32 lanes per vector */

/* GK_SMQ_W columns x 4 depth rows of b' -> u[c], c = 0..3: int32 lane (L, j) of u[c]
 * holds the 4 depth bytes of column 16 L + 4 c + j (vpunpck* work inside 128-bit lanes). */
static inline void gk_smq_interleave4(gk_smq_v r0, gk_smq_v r1, gk_smq_v r2, gk_smq_v r3,
                                      gk_smq_v u[4])
{
    gk_smq_v t0 = GK_SMQ(unpacklo_epi8)(r0, r1), t1 = GK_SMQ(unpackhi_epi8)(r0, r1);
    gk_smq_v t2 = GK_SMQ(unpacklo_epi8)(r2, r3), t3 = GK_SMQ(unpackhi_epi8)(r2, r3);
    u[0] = GK_SMQ(unpacklo_epi16)(t0, t2);
    u[1] = GK_SMQ(unpackhi_epi16)(t0, t2);
    u[2] = GK_SMQ(unpacklo_epi16)(t1, t3);
    u[3] = GK_SMQ(unpackhi_epi16)(t1, t3);
}

/* m <= GK_SMQ_MAX rows; any a_rs / a_cs, b_cs == 1. */
static inline __attribute__((always_inline)) void gk_smq_run(
    int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs, uint8_t a_xor,
    const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    int32_t buf[GK_SMQ_STACK / 4] __attribute__((aligned(64)));
    int32_t aq[GK_SMQ_MAX * GK_SMQ_KC / 4];
    const int need_colsum = gk_x86_smallm_need_colsum(e, m);
    const int rows = m + need_colsum;
    /* rows * ldb <= GK_SMQ_STACK / 4 since ldb <= nc_max */
    const int nc_max = GK_SMQ_STACK / 4 / (m + 1) / GK_SMQ_W * GK_SMQ_W;
    const gk_smq_v xv = GK_SMQ(set1_epi8)((char)b_xor), ones = GK_SMQ(set1_epi8)(1);
    const int vec_ok = gk_x86_epi_vector_ok(e);

    for (int nc0 = 0; nc0 < n; nc0 += nc_max) {
        int ncw = n - nc0 < nc_max ? n - nc0 : nc_max;
        int nb = (ncw + GK_SMQ_W - 1) / GK_SMQ_W, ldb = nb * GK_SMQ_W;
        memset(buf, 0, sizeof(int32_t) * (size_t)rows * (size_t)ldb);
        for (int k0 = 0; k0 < k; k0 += GK_SMQ_KC) {
            int kv = k - k0 < GK_SMQ_KC ? k - k0 : GK_SMQ_KC;
            if (a_cs == 1 && kv == GK_SMQ_KC) { /* the 16 bytes read lie inside row i */
                const __m128i ax = _mm_set1_epi8((char)a_xor);
                for (int i = 0; i < m; i++)
                    _mm_storeu_si128((__m128i *)(aq + 4 * i),
                                     _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i * a_rs + k0)), ax));
            } else {
                gk_x86_smallm_gather_a(m, k, k0, GK_SMQ_KC, a, a_rs, a_cs, a_xor, (uint8_t *)aq);
            }
            const uint8_t *rp = b + (ptrdiff_t)k0 * b_rs + nc0;
            for (int blk = 0; blk < nb; blk++) {
                int cv = ncw - blk * GK_SMQ_W;
                gk_smq_v u[4][4];
#pragma GCC unroll 4
                for (int g = 0; g < 4; g++) {
                    gk_smq_v r[4];
#pragma GCC unroll 4
                    for (int t = 0; t < 4; t++) {
                        int d = 4 * g + t;
                        /* rows past K must be b' = 0 exactly: they feed valid columns */
                        r[t] = d < kv ? gk_smq_load_row(rp + d * b_rs + blk * GK_SMQ_W, cv, xv)
                                      : GK_SMQ_SI(setzero)();
                    }
                    gk_smq_interleave4(r[0], r[1], r[2], r[3], u[g]);
                }
                for (int i = 0; i < m; i++) {
                    int32_t *acc = buf + (ptrdiff_t)i * ldb + blk * GK_SMQ_W;
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++) {
                        gk_smq_v s = GK_SMQ_SI(load)((const gk_smq_v *)(acc + GK_SMQ_L * c));
#pragma GCC unroll 4
                        for (int g = 0; g < 4; g++)
                            s = GK_SMQ_DPBUSD(s, GK_SMQ(set1_epi32)(aq[4 * i + g]), u[g][c]);
                        GK_SMQ_SI(store)((gk_smq_v *)(acc + GK_SMQ_L * c), s);
                    }
                }
                if (need_colsum) {
                    int32_t *acc = buf + (ptrdiff_t)m * ldb + blk * GK_SMQ_W;
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++) {
                        gk_smq_v s = GK_SMQ_SI(load)((const gk_smq_v *)(acc + GK_SMQ_L * c));
#pragma GCC unroll 4
                        for (int g = 0; g < 4; g++)
                            s = GK_SMQ_DPBUSD(s, ones, u[g][c]);
                        GK_SMQ_SI(store)((gk_smq_v *)(acc + GK_SMQ_L * c), s);
                    }
                }
            }
        }
        /* epilogue: colcorr = colsum(b') - K zb  (mod 2^32) */
        for (int blk = 0; blk < nb; blk++) {
            const int nb0 = nc0 + blk * GK_SMQ_W, w = n - nb0 < GK_SMQ_W ? n - nb0 : GK_SMQ_W;
            gk_smq_v p[4], q[4], bzp[4], cc[4];
            for (int d = 0; d < 4; d++)
                bzp[d] = gk_smq_load_i32(e->b_zp + nb0 + GK_SMQ_L * d, w - GK_SMQ_L * d);
            if (need_colsum) {
                for (int c = 0; c < 4; c++)
                    p[c] = GK_SMQ_SI(load)((const gk_smq_v *)(buf + (ptrdiff_t)m * ldb + blk * GK_SMQ_W + GK_SMQ_L * c));
                gk_smq_unpermute(p, q);
                for (int d = 0; d < 4; d++)
                    cc[d] = GK_SMQ(sub_epi32)(q[d], GK_SMQ(mullo_epi32)(GK_SMQ(set1_epi32)(k), bzp[d]));
            } else {
                for (int d = 0; d < 4; d++)
                    cc[d] = GK_SMQ_SI(setzero)();
            }
            for (int i = 0; i < m; i++) {
                for (int c = 0; c < 4; c++)
                    p[c] = GK_SMQ_SI(load)((const gk_smq_v *)(buf + (ptrdiff_t)i * ldb + blk * GK_SMQ_W + GK_SMQ_L * c));
                gk_smq_unpermute(p, q);
                if (vec_ok && (GK_SMQ_MASKED || w == GK_SMQ_W)) {
                    for (int d = 0; d < 4; d++)
                        if (w > GK_SMQ_L * d)
                            gk_smq_epi(e, i, nb0 + GK_SMQ_L * d, q[d], bzp[d], cc[d], w - GK_SMQ_L * d);
                } else { /* partial block or unusual mult / y_zp strides */
                    int32_t t[GK_SMQ_W], cct[GK_SMQ_W];
                    for (int d = 0; d < 4; d++) {
                        GK_SMQ_SI(storeu)((gk_smq_v *)(t + GK_SMQ_L * d), q[d]);
                        GK_SMQ_SI(storeu)((gk_smq_v *)(cct + GK_SMQ_L * d), cc[d]);
                    }
                    for (int j = 0; j < w; j++)
                        gk_x86_store1_cc(e, i, nb0 + j, (uint32_t)t[j], (uint32_t)cct[j]);
                }
            }
        }
    }
}

#endif
