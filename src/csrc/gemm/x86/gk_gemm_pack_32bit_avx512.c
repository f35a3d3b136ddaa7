/* 32-bit element packers of the AVX-512 float32 and 32-bit integer families (group
 * avx512) for the operand layouts that need a transpose: A' with rows contiguous along k
 * (plain row-major A, cs == 4) and B' with columns contiguous along k (transB, rs == 4).
 * Both become 16 x 16 register transposes: 16 source lines (rows of A', columns of B')
 * of up to 16 k each are loaded, transposed, and each k's 16 values stored as one
 * (masked) vector of the panel.  Plain row-major B' is copied in vectors
 * (gk_gemm_pack_transpose.inc); every other layout goes to the generic packers
 * (gk_gemm_pack.c).  The values are copied unchanged, so the panels are bit-identical
 * to the generic packers'.
 *
 * Loads are masked to the valid k of each line (never past the caller's array); lines
 * beyond the valid rows/columns are zero vectors, so the panel's padding lanes are zero
 * as the layout requires.  Stores are masked to the panel's width (mr or 16 lanes). */
#include <immintrin.h>
#include <string.h>

#include "gemmkit/gk_gemm.h"

/* r[0..15] (line i, k = 0..15) -> r[kk] (k = kk, lane i = line i) */
static inline void transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int j = 0; j < 8; j++) {
        t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
    /* u[4g + c], 128-bit lane L: lines 4g..4g+3 at k = 4L + c */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    /* k = 4L + c gathers lane L of u[c], u[4 + c], u[8 + c], u[12 + c] */
    for (int c = 0; c < 4; c++) {
        const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        const __m512 x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        const __m512 y0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        r[c] = _mm512_shuffle_f32x4(x0, y0, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(x1, y1, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
    }
}

/* 16 lines of 16 k each, line l at p[l / 4] + (l % 4) * ls bytes, transposed with half
 * the shuffle-port work of transpose16: the 128-bit blocks move while loading (each
 * vector is one 16-byte load and three vinsertf32x4 from memory, which run on either of
 * two ports), leaving two in-lane stages.  r[kk]: k = kk of lines 0..15 in lanes 0..15.
 * Stores k = kk at d + kk * ld, masked to wmask.  (transpose16 kept the shuffle port
 * busy 64 cycles per block: at M = 1 packing a transposed B took as long as reading it.) */
static inline void load_transpose16_store(const char *const p[4], ptrdiff_t ls, float *d,
                                          ptrdiff_t ld, __mmask16 wmask)
{
    for (int c = 0; c < 4; c++) {
        __m512 z[4], t[4], r;
        /* z[i], 128-bit lane q: line 4q + i at k = 4c .. 4c + 3 */
        for (int i = 0; i < 4; i++) {
            __m512 v = _mm512_castps128_ps512(_mm_loadu_ps((const float *)(p[0] + i * ls) + 4 * c));
            v = _mm512_insertf32x4(v, _mm_loadu_ps((const float *)(p[1] + i * ls) + 4 * c), 1);
            v = _mm512_insertf32x4(v, _mm_loadu_ps((const float *)(p[2] + i * ls) + 4 * c), 2);
            z[i] = _mm512_insertf32x4(v, _mm_loadu_ps((const float *)(p[3] + i * ls) + 4 * c), 3);
        }
        t[0] = _mm512_unpacklo_ps(z[0], z[1]);
        t[1] = _mm512_unpackhi_ps(z[0], z[1]);
        t[2] = _mm512_unpacklo_ps(z[2], z[3]);
        t[3] = _mm512_unpackhi_ps(z[2], z[3]);
        for (int h = 0; h < 4; h++) {
            const __m512d x = _mm512_castps_pd(t[h >> 1]), y = _mm512_castps_pd(t[2 + (h >> 1)]);
            r = _mm512_castpd_ps((h & 1) ? _mm512_unpackhi_pd(x, y) : _mm512_unpacklo_pd(x, y));
            _mm512_mask_storeu_ps(d, wmask, r);
            d += ld;
        }
    }
}

/* Lines l < nlines start at src + l*ls bytes, element k at + k*4 bytes.  For k < kc:
 * dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0), in groups of
 * 16 lines, stores masked to the group's width.  A group of 16 real lines takes its
 * whole 16-deep steps through load_transpose16_store; a partial group and the last
 * kc % 16 use masked loads (nothing past a line's kc elements is read) and transpose16. */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, float *dst,
                       ptrdiff_t ld, int width)
{
    __m512 r[16];
    for (int g = 0; g < width; g += 16) {
        const int w = width - g < 16 ? width - g : 16;
        const __mmask16 wmask = (__mmask16)((1u << w) - 1u);
        int k0 = 0;
        if (g + 16 <= nlines) {
            const char *p[4];
            float *d = dst + g;
            for (int q = 0; q < 4; q++)
                p[q] = src + (ptrdiff_t)(g + 4 * q) * ls;
            for (; k0 + 16 <= kc; k0 += 16) {
                load_transpose16_store(p, ls, d, ld, wmask);
                d += 16 * ld;
                for (int q = 0; q < 4; q++)
                    p[q] += 64;
            }
        }
        if (k0 < kc)
            for (; k0 < kc; k0 += 16) {
                const int nk = kc - k0 < 16 ? kc - k0 : 16;
                const __mmask16 kmask = (__mmask16)((1u << nk) - 1u);
                for (int l = 0; l < 16; l++)
                    r[l] = g + l < nlines
                               ? _mm512_maskz_loadu_ps(kmask, src + (g + l) * ls + (ptrdiff_t)k0 * 4)
                               : _mm512_setzero_ps();
                transpose16(r);
                for (int kk = 0; kk < nk; kk++)
                    _mm512_mask_storeu_ps(dst + (ptrdiff_t)(k0 + kk) * ld + g, wmask, r[kk]);
            }
    }
}

#define GK_TP_T float
#define GK_TP_ES 4
#define GK_TP_VB 64
#define GK_TP_WIDTH_OK(w) 1
#define GK_TP_FLT f32
#define GK_TP_INT u32
#define GK_TP_ISA avx512
#include "gk_gemm_pack_transpose.inc"
