/* Helpers of the x86 bfloat16 pair families (vdpbf16ps: gk_gemm_bf16_avx512bf16.c; AMX
 * tiles: gk_gemm_bf16_amxbf16.c), which both pack bfloat16 k pairs as 32-bit words (low
 * half the even k, high half the odd k) and fold their guard's scan into packing.  AVX-512 F/BW code: include only from files
 * whose group enables both. */
#ifndef GK_GEMM_BF16_PAIRS_X86_H
#define GK_GEMM_BF16_PAIRS_X86_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemm/gk_gemm_bf16dot_guard.h"
#include "gemmkit/gk_gemm.h"

static inline uint32_t gk_bf16_ld16(const char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

static inline uint32_t gk_bf16_ld32(const char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* The pair word of elements 2p (low half) and 2p + 1 (high half) of a line whose
 * elements lie step bytes apart and which has n of them: a half past n is +0. */
static inline uint32_t gk_bf16_pair_word(const char *line, ptrdiff_t step, int p, int n)
{
    if (2 * p >= n)
        return 0;
    const uint32_t lo = gk_bf16_ld16(line + (ptrdiff_t)(2 * p) * step);
    return 2 * p + 1 < n ? lo | gk_bf16_ld16(line + (ptrdiff_t)(2 * p + 1) * step) << 16 : lo;
}

/* The first n of 32 16-bit lanes (all for n >= 32, none for n <= 0). */
static inline __mmask32 gk_bf16_lanes(ptrdiff_t n)
{
    return n >= 32 ? 0xffffffffu : n <= 0 ? 0u : ((1u << n) - 1u);
}

/* Index vector for _mm512_permutex2var_epi16(lo, ix, hi): word i of the result pairs
 * lo[16*half + i] (low half) with hi[16*half + i] (high half), i < 16. */
static inline __m512i gk_bf16_pair_index(int half)
{
    GK_ALIGNED(64) uint16_t ix[32];
    for (int i = 0; i < 32; i++)
        ix[i] = (uint16_t)((i & 1 ? 32 : 0) + half * 16 + i / 2);
    return _mm512_load_si512((const void *)ix);
}

/* 16 vectors of 16 32-bit words (r[i], word p) -> out[p] = (r[0][p], ..., r[15][p]):
 * 4 stages of 16 shuffles (32-bit, 64-bit within 128-bit lanes, then lanes). */
static inline void gk_bf16_transpose16(const __m512i r[16], __m512i out[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* u[4g + c], lane L: rows 4g..4g+3 of word 4L + c */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i v = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
        const __m512i w = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i x = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        const __m512i y = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        out[c] = _mm512_shuffle_i32x4(v, x, 0x88);      /* word c      */
        out[8 + c] = _mm512_shuffle_i32x4(v, x, 0xdd);  /* word 8 + c  */
        out[4 + c] = _mm512_shuffle_i32x4(w, y, 0x88);  /* word 4 + c  */
        out[12 + c] = _mm512_shuffle_i32x4(w, y, 0xdd); /* word 12 + c */
    }
}

/* The guard's scan folded into packing (gk_gemm_kernel.check_packed): every 64-byte vector
 * or 32-bit pair word a packer stores holds real elements or +0 pads (neutral), so the
 * minimum of gk_bf16_span.lo over what it stores is the one over the block it packed.  A
 * packer folds each stored vector / word into a gk_bf16_seen, then publishes it into the
 * gk_gemm_seen at src->ctx (a call's, or a whole-B' pre-packing's) with
 * gk_bf16_span_publish. */
typedef struct gk_bf16_seen {
    __m512i v;
    unsigned s;
} gk_bf16_seen;

GK_ALWAYS_INLINE gk_bf16_seen gk_bf16_seen_init(void)
{
    gk_bf16_seen sn;
    sn.v = _mm512_set1_epi16(-1);
    sn.s = 0xffffu;
    return sn;
}

GK_ALWAYS_INLINE void gk_bf16_seen_vec(gk_bf16_seen *sn, __m512i x)
{
    const __m512i lo = _mm512_sub_epi16(_mm512_and_si512(x, _mm512_set1_epi16(0x7fff)),
                                        _mm512_set1_epi16(1));
    sn->v = _mm512_min_epu16(sn->v, lo);
}

GK_ALWAYS_INLINE void gk_bf16_seen_word(gk_bf16_seen *sn, uint32_t w)
{
    const unsigned lo = ((w & 0x7fffu) - 1u) & 0xffffu;
    const unsigned hi = (((w >> 16) & 0x7fffu) - 1u) & 0xffffu;
    sn->s = lo < sn->s ? lo : sn->s;
    sn->s = hi < sn->s ? hi : sn->s;
}

/* A transposed B' (transB: columns contiguous along k, a Linear layer's weight [N, K]):
 * columns [0, cols) (column j at src + j*cs), kc deep, into a 32-column panel of pair
 * words, d[p*32 + j] = column j's elements 2p, 2p+1 for p < npairs; elements at or past kc
 * and columns at or past cols are +0 (neutral to the guard).  16 pairs of 16 columns per
 * 16 x 16 word transpose; masked loads read only each real column's kc elements, and
 * every loaded vector folds into *sn.  Word by word this packing ran at 13 GB/s and was
 * 80% of a 1 x 768 x 3072 call (Zen 5). */
static inline void gk_bf16_pack_cols32(const char *src, ptrdiff_t cs, int kc, int cols,
                                       int npairs, uint32_t *d, gk_bf16_seen *sn)
{
    for (int p0 = 0; p0 < npairs; p0 += 16) {
        const __mmask32 m = gk_bf16_lanes(kc - 2 * p0);
        const int np = npairs - p0 < 16 ? npairs - p0 : 16;
        for (int h = 0; h < 2; h++) {
            __m512i r[16], o[16];
            for (int j = 0; j < 16; j++)
                r[j] = 16 * h + j < cols
                           ? _mm512_maskz_loadu_epi16(
                                 m, src + (ptrdiff_t)(16 * h + j) * cs + 4 * (ptrdiff_t)p0)
                           : _mm512_setzero_si512();
            for (int j = 0; j < 16; j++)
                gk_bf16_seen_vec(sn, r[j]);
            gk_bf16_transpose16(r, o);
            for (int p = 0; p < np; p++)
                _mm512_storeu_si512((void *)(d + (ptrdiff_t)(p0 + p) * 32 + 16 * h), o[p]);
        }
    }
}

static inline void gk_bf16_seen_publish(const gk_gemm_src *src, int is_b, const gk_bf16_seen *sn)
{
    GK_ALIGNED(64) uint16_t lane[32];
    gk_gemm_seen *call = (gk_gemm_seen *)(uintptr_t)src->ctx;
    gk_bf16_span sp = {sn->s, 0u};
    if (call == NULL)
        return;
    _mm512_store_si512((void *)lane, sn->v);
    for (int i = 0; i < 32; i++)
        sp.lo = lane[i] < sp.lo ? lane[i] : sp.lo;
    gk_bf16_span_publish(is_b ? &call->b_min : &call->a_min, NULL, sp); /* no maximum needed */
}

/* gk_gemm_kernel.check_packed of the x86 bfloat16 dot families: the guard
 * (gk_bf16dot_no_flush) on what the packers saw (of B', when the call reads a
 * pre-packing: what packing it saw, kept with it). */
static inline int gk_bf16_check_packed(const gk_gemm_seen *seen, const struct gk_gemm_args *g)
{
    (void)g;
    return gk_bf16dot_no_flush(seen->a_min, seen->b_min);
}

#endif
