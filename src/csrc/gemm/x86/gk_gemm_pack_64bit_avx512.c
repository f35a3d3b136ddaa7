/* 64-bit element packers of the AVX-512 float64 and 64-bit integer families (group
 * avx512) for the operand layouts that need a transpose: A' with rows contiguous along k
 * (plain row-major A, cs == 8) and B' with columns contiguous along k (transB, rs == 8).
 * Source lines (rows of A', columns of B') are taken 8 at a time, up to 8 k each,
 * transposed in registers (8 x 8), and each k's 8 values stored into the panel (masked
 * to the panel's width).  Plain row-major B' is copied in vectors
 * (gk_gemm_pack_transpose.inc); every other layout goes to the generic packers
 * (gk_gemm_pack.c).  Values are copied unchanged: the panels are bit-identical to the
 * generic packers'.
 *
 * Loads are masked to the valid k of each line (never past the caller's array); lines
 * beyond the valid rows/columns are zero vectors, so padding lanes are zero. */
#include <immintrin.h>
#include <string.h>

#include "gemmkit/gk_gemm.h"

/* r[0..7] (line i, k = 0..7) -> r[kk] (k = kk, lane i = line i) */
static inline void transpose8(__m512d r[8])
{
    __m512d t[8];
    for (int j = 0; j < 4; j++) {
        /* 128-bit lane L: lines 2j, 2j+1 at k = 2L (t[2j]) and 2L + 1 (t[2j+1]) */
        t[2 * j] = _mm512_unpacklo_pd(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_pd(r[2 * j], r[2 * j + 1]);
    }
    /* k = 2L + c gathers lane L of t[c], t[2 + c], t[4 + c], t[6 + c] */
    for (int c = 0; c < 2; c++) {
        const __m512d x0 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0x88);
        const __m512d x1 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0xDD);
        const __m512d y0 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0x88);
        const __m512d y1 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0xDD);
        r[c] = _mm512_shuffle_f64x2(x0, y0, 0x88);
        r[4 + c] = _mm512_shuffle_f64x2(x0, y0, 0xDD);
        r[2 + c] = _mm512_shuffle_f64x2(x1, y1, 0x88);
        r[6 + c] = _mm512_shuffle_f64x2(x1, y1, 0xDD);
    }
}

/* Lines l < nlines start at src + l*ls bytes, element k at + k*8 bytes.  For k < kc:
 * dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0), width <= 16. */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, double *dst,
                       ptrdiff_t ld, int width)
{
    __m512d r[8];
    for (int g = 0; g < width; g += 8) {
        const int w = width - g < 8 ? width - g : 8;
        const __mmask8 wmask = (__mmask8)((1u << w) - 1u);
        for (int k0 = 0; k0 < kc; k0 += 8) {
            const int nk = kc - k0 < 8 ? kc - k0 : 8;
            const __mmask8 kmask = (__mmask8)((1u << nk) - 1u);
            for (int l = 0; l < 8; l++)
                r[l] = g + l < nlines
                           ? _mm512_maskz_loadu_pd(kmask, src + (g + l) * ls + (ptrdiff_t)k0 * 8)
                           : _mm512_setzero_pd();
            transpose8(r);
            for (int kk = 0; kk < nk; kk++)
                _mm512_mask_storeu_pd(dst + (ptrdiff_t)(k0 + kk) * ld + g, wmask, r[kk]);
        }
    }
}

#define GK_TP_T double
#define GK_TP_ES 8
#define GK_TP_VB 64
#define GK_TP_WIDTH_OK(w) 1
#define GK_TP_FLT f64
#define GK_TP_INT u64
#define GK_TP_ISA avx512
#include "gk_gemm_pack_transpose.inc"
