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

/* The W (4, 8 or 16) bytes at s and at s + sd, each ^ xv, in the low bytes of r0, r1. */
static inline void gk_pair_rows_load(const uint8_t *s, ptrdiff_t sd, __m128i xv, int W,
                                     __m128i *r0, __m128i *r1)
{
    if (W == 16) {
        *r0 = _mm_loadu_si128((const __m128i *)s);
        *r1 = _mm_loadu_si128((const __m128i *)(s + sd));
    } else if (W == 8) {
        *r0 = _mm_loadl_epi64((const __m128i *)s);
        *r1 = _mm_loadl_epi64((const __m128i *)(s + sd));
    } else {
        int32_t w0, w1;
        memcpy(&w0, s, 4);
        memcpy(&w1, s + sd, 4);
        *r0 = _mm_cvtsi32_si128(w0);
        *r1 = _mm_cvtsi32_si128(w1);
    }
    *r0 = _mm_xor_si128(*r0, xv);
    *r1 = _mm_xor_si128(*r1, xv);
}

/* One block of a line-contiguous source (sl == 1): W lines (4, 8 or 16, from line l of
 * the block's first depth row s) x np k-pairs (2 depth rows each, rows sd apart).  Per
 * k-pair: the two rows' bytes interleaved, then widened, give the pairs of W lines; the
 * 4-line groups go to o[0..W/4) (each already at the block's first k-pair; a k-pair is
 * R * 2 elements further).  The lines' sums over the block are added to sums[0..W). */
static inline void gk_pair_rows_block(const uint8_t *s, ptrdiff_t sd, __m128i xv, int sgn,
                                      int W, int np, int R, int16_t *const o[4], int32_t *sums)
{
    const ptrdiff_t ks = (ptrdiff_t)R * 2; /* elements from one k-pair to the next */
#if defined(__AVX2__)
    if (R % 8 == 0 && W >= 8) { /* 8 lines' pairs are 32 contiguous bytes of one panel */
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
        for (int p = 0; p < np; p++, s += 2 * sd) {
            __m128i r0, r1;
            gk_pair_rows_load(s, sd, xv, W, &r0, &r1);
            const __m128i u = _mm_unpacklo_epi8(r0, r1);
            const __m256i w0 = sgn ? _mm256_cvtepi8_epi16(u) : _mm256_cvtepu8_epi16(u);
            _mm256_storeu_si256((__m256i *)(o[0] + p * ks), w0);
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(w0, ones));
            if (W == 16) {
                const __m128i v = _mm_unpackhi_epi8(r0, r1);
                const __m256i w1 = sgn ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
                _mm256_storeu_si256((__m256i *)(o[2] + p * ks), w1);
                acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(w1, ones));
            }
        }
        __m256i *sv = (__m256i *)sums;
        _mm256_storeu_si256(sv, _mm256_add_epi32(_mm256_loadu_si256(sv), acc0));
        if (W == 16)
            _mm256_storeu_si256(sv + 1, _mm256_add_epi32(_mm256_loadu_si256(sv + 1), acc1));
        return;
    }
#endif
    const __m128i ones = _mm_set1_epi16(1);
    __m128i acc[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                      _mm_setzero_si128()};
    for (int p = 0; p < np; p++, s += 2 * sd) {
        __m128i r0, r1, w[4];
        gk_pair_rows_load(s, sd, xv, W, &r0, &r1);
        const __m128i u = _mm_unpacklo_epi8(r0, r1), v = _mm_unpackhi_epi8(r0, r1);
        w[0] = gk_pair_widen(u, sgn);
        w[1] = gk_pair_widen(_mm_srli_si128(u, 8), sgn);
        w[2] = gk_pair_widen(v, sgn);
        w[3] = gk_pair_widen(_mm_srli_si128(v, 8), sgn);
        for (int g = 0; g < W / 4; g++) {
            _mm_storeu_si128((__m128i *)(o[g] + p * ks), w[g]);
            acc[g] = _mm_add_epi32(acc[g], _mm_madd_epi16(w[g], ones));
        }
    }
    for (int g = 0; g < W / 4; g++) {
        __m128i *sv = (__m128i *)(sums + 4 * g);
        _mm_storeu_si128(sv, _mm_add_epi32(_mm_loadu_si128(sv), acc[g]));
    }
}

#if defined(__AVX2__)
/* A depth-contiguous source (sd == 1: column-major B) on AVX2, R % 8 == 0: lines [0, lv)
 * (lv a multiple of 8) x depth [0, dv) (a multiple of 16), 8 lines x 16 depth bytes per
 * step: each line's 16 bytes widened to 8 pairs (one int32 word each), an 8 x 8 word
 * transpose, each k-pair's 8 lines one 32-byte store (contiguous in a panel), its pair
 * sums added into that line's lane (four sums against the add latency).  Twice the bytes
 * per instruction of the 4-line xmm route: column-major B at M = 1..16 on avx2 1.09-1.26x
 * faster (Sapphire Rapids), where packing B was half of the call. */
static inline void gk_pair_depth8_avx2(const uint8_t *src, ptrdiff_t sl, __m128i xv, int sgn,
                                       int R, ptrdiff_t ps, int lv, int dv, int16_t *o16,
                                       int32_t *sums)
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int l = 0; l < lv; l += 8) {
        const uint8_t *s = src + (ptrdiff_t)l * sl;
        int16_t *o = o16 + (ptrdiff_t)(l / R) * ps + (l % R) * 2;
        __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(),
                          _mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int d = 0; d < dv; d += 16) {
            __m256i v[8], t[8], u[8];
            for (int i = 0; i < 8; i++) {
                const __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + i * sl + d)), xv);
                v[i] = sgn ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b);
            }
            for (int j = 0; j < 4; j++) {
                t[2 * j] = _mm256_unpacklo_epi32(v[2 * j], v[2 * j + 1]);
                t[2 * j + 1] = _mm256_unpackhi_epi32(v[2 * j], v[2 * j + 1]);
            }
            /* u[4g + c], 128-bit lane L: lines 4g..4g+3, pair 4L + c */
            for (int g = 0; g < 2; g++) {
                u[4 * g + 0] = _mm256_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
                u[4 * g + 1] = _mm256_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
                u[4 * g + 2] = _mm256_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
                u[4 * g + 3] = _mm256_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
            }
            for (int c = 0; c < 4; c++) {
                const __m256i lo = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20); /* pair c */
                const __m256i hi = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31); /* pair 4 + c */
                _mm256_storeu_si256((__m256i *)(o + (ptrdiff_t)(d / 2 + c) * R * 2), lo);
                _mm256_storeu_si256((__m256i *)(o + (ptrdiff_t)(d / 2 + 4 + c) * R * 2), hi);
                acc[c] = _mm256_add_epi32(acc[c], _mm256_add_epi32(_mm256_madd_epi16(lo, ones),
                                                                   _mm256_madd_epi16(hi, ones)));
            }
        }
        _mm256_storeu_si256((__m256i *)(sums + l),
                            _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]),
                                             _mm256_add_epi32(acc[2], acc[3])));
    }
}
#endif

/* pad: bytes between consecutive panels beyond their R * kp elements (B panels of a
 * family with gk_qgemm_kernel.b_panel_pad; 0 for A). */
static inline void gk_x86_pack_pair(const uint8_t *src, ptrdiff_t sl, ptrdiff_t sd, uint8_t x,
                                    int sgn, int R, int nreal, int kreal, void *dst,
                                    int32_t *sums, int pad)
{
    const int kp = gk_x86_round_up(kreal, 2), ltot = gk_x86_round_up(nreal, R);
    const ptrdiff_t ps = (ptrdiff_t)R * kp + pad / 2; /* elements from panel to panel */
    const __m128i xv = _mm_set1_epi8((char)x);
    int16_t *o16 = (int16_t *)dst;
    int lv = 0, dv = 0; /* [0, lv) x [0, dv) packed by the vector code */
    memset(sums, 0, sizeof(int32_t) * (size_t)(nreal > 0 ? nreal : 0));

#if defined(__AVX2__)
    if (sd == 1 && R % 8 == 0 && nreal >= 8 && kreal >= 16) {
        lv = nreal / 8 * 8;
        dv = kreal / 16 * 16;
        gk_pair_depth8_avx2(src, sl, xv, sgn, R, ps, lv, dv, o16, sums);
    } else
#endif
    if (sd == 1 && R % 4 == 0 && nreal >= 4 && kreal >= 8) {
        /* 4 lines x 8 depth values -> 4 k-pairs of 4 lines: a 4 x 4 transpose of int32 */
        const __m128i ones = _mm_set1_epi16(1);
        lv = nreal / 4 * 4;
        dv = kreal / 8 * 8;
        for (int l = 0; l < lv; l += 4) {
            const uint8_t *s = src + (ptrdiff_t)l * sl;
            int16_t *o = o16 + (ptrdiff_t)(l / R) * ps + (l % R) * 2;
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
        /* Line-contiguous source (row-major B): depth outermost in groups of 8 rows (4
         * k-pairs), lines in blocks of 16 (then 8, 4) within a group.  Each source row is
         * read once, front to back, 8 rows streaming at a time (a strip order touches
         * every page of a deep row-major B once per strip: TLB-bound), and each block's
         * line sums over its 4 k-pairs meet `sums` once; the next group's rows are
         * prefetched into L2 (a block's rows are too short a stream for the hardware
         * prefetchers).  Zen 4, avx2, B in the driver's 512 x 1024 blocks, source bytes
         * per second: from L3 (B 4096 x 4096) 4.1 -> 17 GB/s, from DRAM (16384 x 4096)
         * 3.8 -> 8.7 GB/s, together with the padded panels (GK_AVX2_B_PANEL_PAD); the
         * byte-pair loop it replaces updated `sums` every k-pair, 8 lines at a time. */
        lv = nreal / 4 * 4;
        dv = kreal / 2 * 2;
        const int l16 = nreal / 16 * 16;
        for (int d = 0; d < dv; d += 8) {
            const int np = (dv - d) / 2 < 4 ? (dv - d) / 2 : 4;
            const uint8_t *sd0 = src + (ptrdiff_t)d * sd;
            int16_t *ok = o16 + (ptrdiff_t)(d / 2) * R * 2;
            for (int l = 0; l < lv;) {
                if ((l & 63) == 0 && d + 8 < dv) /* the next group's rows, into L2 */
                    for (int r = 8; r < 16 && d + r < dv; r++)
                        _mm_prefetch((const char *)(sd0 + (ptrdiff_t)r * sd + l), _MM_HINT_T1);
                const int W = l < l16 ? 16 : lv - l >= 8 ? 8 : 4;
                int16_t *o[4];
                for (int g = 0; g < W / 4; g++)
                    o[g] = ok + (ptrdiff_t)((l + 4 * g) / R) * ps + ((l + 4 * g) % R) * 2;
                if (W == 16)
                    gk_pair_rows_block(sd0 + l, sd, xv, sgn, 16, np, R, o, sums + l);
                else if (W == 8)
                    gk_pair_rows_block(sd0 + l, sd, xv, sgn, 8, np, R, o, sums + l);
                else
                    gk_pair_rows_block(sd0 + l, sd, xv, sgn, 4, np, R, o, sums + l);
                l += W;
            }
        }
    }
    if (lv > 0 && dv < kp)
        gk_x86_pack_range(src, sl, sd, x, sgn, R, 2, 2, ps, nreal, kreal, 0, lv, dv, kp, dst, sums);
    gk_x86_pack_range(src, sl, sd, x, sgn, R, 2, 2, ps, nreal, kreal, lv, ltot, 0, kp, dst, sums);
}

#endif
