/* Packing into the kstep-2, int16 layout of gk_qgemm_x86_common.h (vpmaddwd families:
 * SSE4.1, AVX2).  Each element is the xor'ed byte widened to int16 (a' zero-extended,
 * b' sign-extended), so the kernel's vpmaddwd sums two exact products in int32.
 * SSE4.1 intrinsics only (VEX-encoded when the including file is built for AVX2).
 *
 * "Lines" are the R-dimension (rows of A, columns of B), "depth" is K.  Source element
 * (line l, depth d) is src[l * sl + d * sd] ^ x.  Vectorised for depth-contiguous
 * (sd == 1) and line-contiguous (sl == 1) sources with R % 4 == 0; anything else, and
 * the tails, go through gk_x86_pack_range. */
#ifndef GEMMKIT_GK_QPACK_PAIR_H
#define GEMMKIT_GK_QPACK_PAIR_H

#include <smmintrin.h>

#include "gk_qgemm_x86_common.h"

static inline __m128i gk_pair_widen(__m128i v, int sgn)
{
    return sgn ? _mm_cvtepi8_epi16(v) : _mm_cvtepu8_epi16(v);
}

static inline void gk_x86_pack_pair(const uint8_t *src, ptrdiff_t sl, ptrdiff_t sd, uint8_t x,
                                    int sgn, int R, int nreal, int kreal, void *dst,
                                    int32_t *sums)
{
    const int kp = gk_x86_round_up(kreal, 2), ltot = gk_x86_round_up(nreal, R);
    const __m128i xv = _mm_set1_epi8((char)x), ones = _mm_set1_epi16(1);
    int16_t *o16 = (int16_t *)dst;
    int lv = 0, dv = 0; /* [0, lv) x [0, dv) packed by the vector code */
    memset(sums, 0, sizeof(int32_t) * (size_t)(nreal > 0 ? nreal : 0));

    if (sd == 1 && R % 4 == 0 && nreal >= 4 && kreal >= 8) {
        /* 4 lines x 8 depth values -> 4 k-pairs of 4 lines: a 4 x 4 transpose of int32 */
        lv = nreal / 4 * 4;
        dv = kreal / 8 * 8;
        for (int l = 0; l < lv; l += 4) {
            const uint8_t *s = src + (ptrdiff_t)l * sl;
            int16_t *o = o16 + (ptrdiff_t)(l / R) * R * kp + (l % R) * 2;
            __m128i acc = _mm_setzero_si128();
            for (int d = 0; d < dv; d += 8) {
                __m128i v0 = gk_pair_widen(_mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + d)), xv), sgn);
                __m128i v1 = gk_pair_widen(_mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + sl + d)), xv), sgn);
                __m128i v2 = gk_pair_widen(_mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + 2 * sl + d)), xv), sgn);
                __m128i v3 = gk_pair_widen(_mm_xor_si128(_mm_loadl_epi64((const __m128i *)(s + 3 * sl + d)), xv), sgn);
                __m128i g[4];
                gk_x86_tr4x4_store(v0, v1, v2, v3, o + (ptrdiff_t)(d / 2) * R * 2, (ptrdiff_t)R * 4, g);
                /* pair sums: |2 * 255| fits int32 trivially */
                acc = _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(g[0], ones), _mm_madd_epi16(g[1], ones)));
                acc = _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(g[2], ones), _mm_madd_epi16(g[3], ones)));
            }
            _mm_storeu_si128((__m128i *)(sums + l), acc);
        }
    } else if (sl == 1 && R % 4 == 0 && nreal >= 4 && kreal >= 2) {
        /* 2 depth rows x W lines -> one k-pair of W lines: int16 interleave.  Depth is
         * the outer loop so each source row is read once, front to back (a strip order
         * touches every page of a deep row-major B once per strip: TLB-bound); the line
         * sums live in `sums` between k-pairs. */
        const int W = (R % 8 == 0 && nreal >= 8) ? 8 : 4;
        lv = nreal / W * W;
        dv = kreal / 2 * 2;
        for (int d = 0; d < dv; d += 2) {
            const uint8_t *sd0 = src + (ptrdiff_t)d * sd;
            int16_t *ok = o16 + (ptrdiff_t)(d / 2) * R * 2;
            for (int l = 0; l < lv; l += W) {
                const uint8_t *s = sd0 + l;
                int16_t *od = ok + (ptrdiff_t)(l / R) * R * kp + (l % R) * 2;
                __m128i *acc = (__m128i *)(sums + l);
                __m128i r0, r1;
                if (W == 8) {
                    r0 = _mm_loadl_epi64((const __m128i *)s);
                    r1 = _mm_loadl_epi64((const __m128i *)(s + sd));
                } else {
                    int32_t w0, w1;
                    memcpy(&w0, s, 4);
                    memcpy(&w1, s + sd, 4);
                    r0 = _mm_cvtsi32_si128(w0);
                    r1 = _mm_cvtsi32_si128(w1);
                }
                r0 = gk_pair_widen(_mm_xor_si128(r0, xv), sgn);
                r1 = gk_pair_widen(_mm_xor_si128(r1, xv), sgn);
                __m128i q0 = _mm_unpacklo_epi16(r0, r1);
                _mm_storeu_si128((__m128i *)od, q0);
                _mm_storeu_si128(acc, _mm_add_epi32(_mm_loadu_si128(acc), _mm_madd_epi16(q0, ones)));
                if (W == 8) {
                    __m128i q1 = _mm_unpackhi_epi16(r0, r1);
                    _mm_storeu_si128((__m128i *)(od + 8), q1);
                    _mm_storeu_si128(acc + 1, _mm_add_epi32(_mm_loadu_si128(acc + 1),
                                                            _mm_madd_epi16(q1, ones)));
                }
            }
        }
    }
    if (lv > 0 && dv < kp)
        gk_x86_pack_range(src, sl, sd, x, sgn, R, 2, 2, kp, nreal, kreal, 0, lv, dv, kp, dst, sums);
    gk_x86_pack_range(src, sl, sd, x, sgn, R, 2, 2, kp, nreal, kreal, lv, ltot, 0, kp, dst, sums);
}

#endif
