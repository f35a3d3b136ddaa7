/* Packing into the kstep-4, one-byte layout of gk_qgemm_x86_common.h (vpdpbusd
 * families).  The including file defines DPB128(acc, u8, s8): a 128-bit vpdpbusd in its
 * own encoding (EVEX for AVX512VL, VEX for AVX-VNNI), used for the exact row/column sums.
 *
 * "Lines" are the R-dimension (rows of A, columns of B), "depth" is K.  Source element
 * (line l, depth d) is src[l * sl + d * sd] ^ x.  Vectorised for depth-contiguous
 * (sd == 1: row-major A, column-major B) and line-contiguous (sl == 1: column-major A,
 * row-major B) sources (needing R % 4 == 0, resp. R % 8 == 0); anything else, and the
 * tails, go through gk_x86_pack_range. */
#ifndef GEMMKIT_GK_QPACK_QUAD_H
#define GEMMKIT_GK_QPACK_QUAD_H

#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

/* Adds the 4 bytes of each int32 lane of v to sums: exact (|4 * 255| fits any lane). */
static inline __m128i gk_quad_sum(__m128i acc, __m128i v, int sgn)
{
    const __m128i ones = _mm_set1_epi8(1);
    return sgn ? DPB128(acc, ones, v) : DPB128(acc, v, ones);
}

/* kp: the padded depth of each panel, a multiple of 4 and >= kreal (round_up(kreal, 4)
 * for the vpdpbusd families, round_up(kreal, 64) for AMX); depth [kreal, kp) is zero. */
static inline void gk_x86_pack_quad_kp(const uint8_t *src, ptrdiff_t sl, ptrdiff_t sd, uint8_t x,
                                       int sgn, int R, int nreal, int kreal, int kp, void *dst,
                                       int32_t *sums)
{
    const int ltot = gk_x86_round_up(nreal, R);
    const __m128i xv = _mm_set1_epi8((char)x);
    uint8_t *o8 = (uint8_t *)dst;
    int lv = 0, dv = 0; /* [0, lv) x [0, dv) packed by the vector code */
    memset(sums, 0, sizeof(int32_t) * (size_t)(nreal > 0 ? nreal : 0));

    if (sd == 1 && R % 4 == 0 && nreal >= 4 && kreal >= 16) {
        /* 4 lines x 16 depth bytes -> 4 k-groups of 4 lines: a 4 x 4 transpose of int32 */
        lv = nreal / 4 * 4;
        dv = kreal / 16 * 16;
        for (int l = 0; l < lv; l += 4) {
            const uint8_t *s = src + (ptrdiff_t)l * sl;
            uint8_t *o = o8 + (ptrdiff_t)(l / R) * R * kp + (l % R) * 4;
            __m128i acc = _mm_setzero_si128();
            for (int d = 0; d < dv; d += 16) {
                __m128i v0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + d)), xv);
                __m128i v1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + sl + d)), xv);
                __m128i v2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + 2 * sl + d)), xv);
                __m128i v3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + 3 * sl + d)), xv);
                __m128i g[4];
                gk_x86_tr4x4_store(v0, v1, v2, v3, o + (ptrdiff_t)(d / 4) * R * 4, (ptrdiff_t)R * 4, g);
                acc = gk_quad_sum(gk_quad_sum(acc, g[0], sgn), g[1], sgn);
                acc = gk_quad_sum(gk_quad_sum(acc, g[2], sgn), g[3], sgn);
            }
            _mm_storeu_si128((__m128i *)(sums + l), acc);
        }
    } else if (sl == 1 && R % 8 == 0 && nreal >= 8 && kreal >= 4) {
        /* 4 depth rows x W lines -> one k-group of W lines: byte interleave.  Depth is
         * the OUTER loop: each source row is read once, front to back, so a deep-K pack
         * of a wide row-major B touches each page once instead of once per W-line strip
         * (the strip order was TLB-bound: 16x slower at K = N = 4096).  The line sums
         * live in `sums` (nreal int32, L1-resident) between k-groups. */
        const int W = (R % 16 == 0 && nreal >= 16) ? 16 : 8;
        lv = nreal / W * W;
        dv = kreal / 4 * 4;
        for (int d = 0; d < dv; d += 4) {
            const uint8_t *sd0 = src + (ptrdiff_t)d * sd;
            uint8_t *ok = o8 + (ptrdiff_t)(d / 4) * R * 4;
            for (int l = 0; l < lv; l += W) {
                const uint8_t *s = sd0 + l;
                uint8_t *od = ok + (ptrdiff_t)(l / R) * R * kp + (l % R) * 4;
                __m128i *acc = (__m128i *)(sums + l);
                if (W == 16) {
                    __m128i r0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)s), xv);
                    __m128i r1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + sd)), xv);
                    __m128i r2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + 2 * sd)), xv);
                    __m128i r3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + 3 * sd)), xv);
                    __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
                    __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
                    __m128i q0 = _mm_unpacklo_epi16(t0, t2), q1 = _mm_unpackhi_epi16(t0, t2);
                    __m128i q2 = _mm_unpacklo_epi16(t1, t3), q3 = _mm_unpackhi_epi16(t1, t3);
                    _mm_storeu_si128((__m128i *)od, q0);
                    _mm_storeu_si128((__m128i *)(od + 16), q1);
                    _mm_storeu_si128((__m128i *)(od + 32), q2);
                    _mm_storeu_si128((__m128i *)(od + 48), q3);
                    _mm_storeu_si128(acc, gk_quad_sum(_mm_loadu_si128(acc), q0, sgn));
                    _mm_storeu_si128(acc + 1, gk_quad_sum(_mm_loadu_si128(acc + 1), q1, sgn));
                    _mm_storeu_si128(acc + 2, gk_quad_sum(_mm_loadu_si128(acc + 2), q2, sgn));
                    _mm_storeu_si128(acc + 3, gk_quad_sum(_mm_loadu_si128(acc + 3), q3, sgn));
                } else {
                    __m128i r0 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)s), xv);
                    __m128i r1 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + sd)), xv);
                    __m128i r2 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + 2 * sd)), xv);
                    __m128i r3 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + 3 * sd)), xv);
                    __m128i t0 = _mm_unpacklo_epi8(r0, r1), t2 = _mm_unpacklo_epi8(r2, r3);
                    __m128i q0 = _mm_unpacklo_epi16(t0, t2), q1 = _mm_unpackhi_epi16(t0, t2);
                    _mm_storeu_si128((__m128i *)od, q0);
                    _mm_storeu_si128((__m128i *)(od + 16), q1);
                    _mm_storeu_si128(acc, gk_quad_sum(_mm_loadu_si128(acc), q0, sgn));
                    _mm_storeu_si128(acc + 1, gk_quad_sum(_mm_loadu_si128(acc + 1), q1, sgn));
                }
            }
        }
    }
    if (lv > 0 && dv < kp)
        gk_x86_pack_range(src, sl, sd, x, sgn, R, 4, 1, kp, nreal, kreal, 0, lv, dv, kp, dst, sums);
    gk_x86_pack_range(src, sl, sd, x, sgn, R, 4, 1, kp, nreal, kreal, lv, ltot, 0, kp, dst, sums);
}

static inline void gk_x86_pack_quad(const uint8_t *src, ptrdiff_t sl, ptrdiff_t sd, uint8_t x,
                                    int sgn, int R, int nreal, int kreal, void *dst,
                                    int32_t *sums)
{
    gk_x86_pack_quad_kp(src, sl, sd, x, sgn, R, nreal, kreal, gk_x86_round_up(kreal, 4), dst, sums);
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
/* B into 32-column quad panels (R = 32), kp deep.  Row-major B (cs == 1), 64 columns x
 * 4 depth rows per step, depth outermost so each source row is streamed once.  Per step:
 * four 64-byte row loads; byte/word unpacks give, in each 128-bit lane j, the quads of
 * columns 16j..16j+15 spread over Q0..Q3; a 4x4 transpose of 128-bit lanes puts columns
 * in order: O0 = 0..15, O1 = 16..31 (panel p), O2 = 32..47, O3 = 48..63 (panel p+1).
 * Column sums: vpdpbusd(ones, quad) sums the 4 signed bytes of each column exactly.
 * Packs columns [0, lv), lv = nc / 64 * 64 (returned), every depth in [0, kp). */
static inline int gk_x86_pack_b32_rowmajor64(int k, int kp, int nc, const uint8_t *b,
                                             ptrdiff_t rs, uint8_t b_xor, uint8_t *dst,
                                             int32_t *colsum)
{
    enum { NR32 = 32 };
    const int lv = nc / 64 * 64, dv = k / 4 * 4;
    const __m512i xv = _mm512_set1_epi8((char)b_xor), ones = _mm512_set1_epi8(1);
    memset(colsum, 0, sizeof(int32_t) * (size_t)lv);
    for (int d = 0; d < dv; d += 4) {
        const uint8_t *r = b + (ptrdiff_t)d * rs;
        uint8_t *ok = dst + (ptrdiff_t)(d / 4) * NR32 * 4;
        for (int l = 0; l < lv; l += 64) {
            __m512i r0 = _mm512_xor_si512(_mm512_loadu_si512(r + l), xv);
            __m512i r1 = _mm512_xor_si512(_mm512_loadu_si512(r + rs + l), xv);
            __m512i r2 = _mm512_xor_si512(_mm512_loadu_si512(r + 2 * rs + l), xv);
            __m512i r3 = _mm512_xor_si512(_mm512_loadu_si512(r + 3 * rs + l), xv);
            __m512i t0 = _mm512_unpacklo_epi8(r0, r1), t1 = _mm512_unpackhi_epi8(r0, r1);
            __m512i t2 = _mm512_unpacklo_epi8(r2, r3), t3 = _mm512_unpackhi_epi8(r2, r3);
            __m512i q0 = _mm512_unpacklo_epi16(t0, t2), q1 = _mm512_unpackhi_epi16(t0, t2);
            __m512i q2 = _mm512_unpacklo_epi16(t1, t3), q3 = _mm512_unpackhi_epi16(t1, t3);
            __m512i x0 = _mm512_shuffle_i64x2(q0, q1, 0x44), x1 = _mm512_shuffle_i64x2(q2, q3, 0x44);
            __m512i x2 = _mm512_shuffle_i64x2(q0, q1, 0xEE), x3 = _mm512_shuffle_i64x2(q2, q3, 0xEE);
            __m512i o0 = _mm512_shuffle_i64x2(x0, x1, 0x88), o1 = _mm512_shuffle_i64x2(x0, x1, 0xDD);
            __m512i o2 = _mm512_shuffle_i64x2(x2, x3, 0x88), o3 = _mm512_shuffle_i64x2(x2, x3, 0xDD);
            uint8_t *op = ok + (ptrdiff_t)(l / NR32) * NR32 * kp;
            _mm512_storeu_si512(op, o0);
            _mm512_storeu_si512(op + 64, o1);
            _mm512_storeu_si512(op + (ptrdiff_t)NR32 * kp, o2);
            _mm512_storeu_si512(op + (ptrdiff_t)NR32 * kp + 64, o3);
            int32_t *cs = colsum + l;
            _mm512_storeu_si512(cs, _mm512_dpbusd_epi32(_mm512_loadu_si512(cs), ones, o0));
            _mm512_storeu_si512(cs + 16, _mm512_dpbusd_epi32(_mm512_loadu_si512(cs + 16), ones, o1));
            _mm512_storeu_si512(cs + 32, _mm512_dpbusd_epi32(_mm512_loadu_si512(cs + 32), ones, o2));
            _mm512_storeu_si512(cs + 48, _mm512_dpbusd_epi32(_mm512_loadu_si512(cs + 48), ones, o3));
        }
    }
    if (dv < kp) /* depth tail (and zero padding) of the vector columns */
        gk_x86_pack_range(b, 1, rs, b_xor, 1, NR32, 4, 1, kp, nc, k, 0, lv, dv, kp, dst, colsum);
    return lv;
}

/* pack_b of a 32-column quad family, kp deep (see gk_x86_pack_quad_kp). */
static inline void gk_x86_pack_b32_quad(int k, int kp, int nc, const uint8_t *b, ptrdiff_t rs,
                                        ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    int done = 0;
    if (cs == 1 && nc >= 64 && k >= 4)
        done = gk_x86_pack_b32_rowmajor64(k, kp, nc, b, rs, b_xor, (uint8_t *)dst, colsum);
    /* the rest starts on a panel boundary (done is a multiple of 32) */
    if (done < nc)
        gk_x86_pack_quad_kp(b + done, cs, rs, b_xor, 1, 32, nc - done, k, kp,
                            (uint8_t *)dst + (ptrdiff_t)done * kp, colsum + done);
}
#endif

#endif
