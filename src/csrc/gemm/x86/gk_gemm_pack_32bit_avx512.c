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

/* Lines l < nlines start at src + l*ls bytes, element k at + k*4 bytes.  For k < kc:
 * dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0), in groups of
 * 16 lines, stores masked to the group's width. */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, float *dst,
                       ptrdiff_t ld, int width)
{
    __m512 r[16];
    for (int g = 0; g < width; g += 16) {
        const int w = width - g < 16 ? width - g : 16;
        const __mmask16 wmask = (__mmask16)((1u << w) - 1u);
        for (int k0 = 0; k0 < kc; k0 += 16) {
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
