/* 64-bit element packers of the AVX-512 float64 and 64-bit integer families (group
 * avx512) for the operand layouts that need a transpose: A' with rows contiguous along k
 * (plain row-major A, cs == 8) and B' with columns contiguous along k (transB, rs == 8).
 * Source lines (rows of A', columns of B') are taken 8 at a time, up to 8 k each,
 * transposed in registers (8 x 8), and each k's 8 values stored into the panel (masked
 * to the panel's width).  Every other layout goes to the generic packers
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

static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst, gk_gemm_pack_a_fn generic)
{
    const char *base;
    double *d = (double *)dst;
    if (a->cs != 8 || mr > 16) {
        generic(a, i0, k0, mc, kc, mr, dst);
        return;
    }
    base = a->p + i0 * a->rs + k0 * 8;
    for (int p0 = 0; p0 < mc; p0 += mr) {
        const int rows = mc - p0 < mr ? mc - p0 : mr;
        pack_lines(base + (ptrdiff_t)p0 * a->rs, a->rs, rows, kc, d, mr, mr);
        d += (ptrdiff_t)kc * mr;
    }
}

static void pack_b(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst, gk_gemm_pack_b_fn generic)
{
    const char *base;
    double *d = (double *)dst;
    if (b->rs != 8 || nr > 16 || b->cs == 8) {
        generic(b, k0, j0, kc, nc, nr, dst);
        return;
    }
    base = b->p + k0 * 8 + j0 * b->cs;
    for (int q0 = 0; q0 < nc; q0 += nr) {
        const int cols = nc - q0 < nr ? nc - q0 : nr;
        pack_lines(base + (ptrdiff_t)q0 * b->cs, b->cs, cols, kc, d, nr, nr);
        d += (ptrdiff_t)kc * nr;
    }
}

/* The bits are copied, never interpreted: one transposing packer serves the float and the
 * integer family of this element size, each with its own generic fallback. */
void gk_gemm_pack_a_f64_avx512(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_f64);
}
void gk_gemm_pack_b_f64_avx512(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_f64);
}
void gk_gemm_pack_a_u64_avx512(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_u64);
}
void gk_gemm_pack_b_u64_avx512(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_u64);
}
