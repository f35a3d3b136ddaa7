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

static inline void gk_x86_pack_quad(const uint8_t *src, ptrdiff_t sl, ptrdiff_t sd, uint8_t x,
                                    int sgn, int R, int nreal, int kreal, void *dst,
                                    int32_t *sums)
{
    const int kp = gk_x86_round_up(kreal, 4), ltot = gk_x86_round_up(nreal, R);
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
                __m128i t0 = _mm_unpacklo_epi32(v0, v1), t1 = _mm_unpackhi_epi32(v0, v1);
                __m128i t2 = _mm_unpacklo_epi32(v2, v3), t3 = _mm_unpackhi_epi32(v2, v3);
                __m128i g0 = _mm_unpacklo_epi64(t0, t2), g1 = _mm_unpackhi_epi64(t0, t2);
                __m128i g2 = _mm_unpacklo_epi64(t1, t3), g3 = _mm_unpackhi_epi64(t1, t3);
                uint8_t *od = o + (ptrdiff_t)(d / 4) * R * 4;
                _mm_storeu_si128((__m128i *)od, g0);
                _mm_storeu_si128((__m128i *)(od + R * 4), g1);
                _mm_storeu_si128((__m128i *)(od + 2 * R * 4), g2);
                _mm_storeu_si128((__m128i *)(od + 3 * R * 4), g3);
                acc = gk_quad_sum(gk_quad_sum(acc, g0, sgn), g1, sgn);
                acc = gk_quad_sum(gk_quad_sum(acc, g2, sgn), g3, sgn);
            }
            _mm_storeu_si128((__m128i *)(sums + l), acc);
        }
    } else if (sl == 1 && R % 8 == 0 && nreal >= 8 && kreal >= 4) {
        /* 4 depth rows x W lines -> one k-group of W lines: byte interleave */
        const int W = (R % 16 == 0 && nreal >= 16) ? 16 : 8;
        lv = nreal / W * W;
        dv = kreal / 4 * 4;
        for (int l = 0; l < lv; l += W) {
            const uint8_t *s = src + l;
            uint8_t *o = o8 + (ptrdiff_t)(l / R) * R * kp + (l % R) * 4;
            __m128i acc0 = _mm_setzero_si128(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
            for (int d = 0; d < dv; d += 4) {
                const uint8_t *sd0 = s + (ptrdiff_t)d * sd;
                uint8_t *od = o + (ptrdiff_t)(d / 4) * R * 4;
                if (W == 16) {
                    __m128i r0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)sd0), xv);
                    __m128i r1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(sd0 + sd)), xv);
                    __m128i r2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(sd0 + 2 * sd)), xv);
                    __m128i r3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(sd0 + 3 * sd)), xv);
                    __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
                    __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
                    __m128i q0 = _mm_unpacklo_epi16(t0, t2), q1 = _mm_unpackhi_epi16(t0, t2);
                    __m128i q2 = _mm_unpacklo_epi16(t1, t3), q3 = _mm_unpackhi_epi16(t1, t3);
                    _mm_storeu_si128((__m128i *)od, q0);
                    _mm_storeu_si128((__m128i *)(od + 16), q1);
                    _mm_storeu_si128((__m128i *)(od + 32), q2);
                    _mm_storeu_si128((__m128i *)(od + 48), q3);
                    acc0 = gk_quad_sum(acc0, q0, sgn);
                    acc1 = gk_quad_sum(acc1, q1, sgn);
                    acc2 = gk_quad_sum(acc2, q2, sgn);
                    acc3 = gk_quad_sum(acc3, q3, sgn);
                } else {
                    __m128i r0 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)sd0), xv);
                    __m128i r1 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(sd0 + sd)), xv);
                    __m128i r2 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(sd0 + 2 * sd)), xv);
                    __m128i r3 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(sd0 + 3 * sd)), xv);
                    __m128i t0 = _mm_unpacklo_epi8(r0, r1), t2 = _mm_unpacklo_epi8(r2, r3);
                    __m128i q0 = _mm_unpacklo_epi16(t0, t2), q1 = _mm_unpackhi_epi16(t0, t2);
                    _mm_storeu_si128((__m128i *)od, q0);
                    _mm_storeu_si128((__m128i *)(od + 16), q1);
                    acc0 = gk_quad_sum(acc0, q0, sgn);
                    acc1 = gk_quad_sum(acc1, q1, sgn);
                }
            }
            _mm_storeu_si128((__m128i *)(sums + l), acc0);
            _mm_storeu_si128((__m128i *)(sums + l + 4), acc1);
            if (W == 16) {
                _mm_storeu_si128((__m128i *)(sums + l + 8), acc2);
                _mm_storeu_si128((__m128i *)(sums + l + 12), acc3);
            }
        }
    }
    if (lv > 0 && dv < kp)
        gk_x86_pack_range(src, sl, sd, x, sgn, R, 4, 1, kp, nreal, kreal, 0, lv, dv, kp, dst, sums);
    gk_x86_pack_range(src, sl, sd, x, sgn, R, 4, 1, kp, nreal, kreal, lv, ltot, 0, kp, dst, sums);
}

#endif
