/* 32-bit element packers of the AVX-512 float32 and 32-bit integer families (group
 * avx512) for the operand layouts that need a transpose: A' with rows contiguous along k
 * (plain row-major A, cs == 4) and B' with columns contiguous along k (transB, rs == 4).
 * Both become 16 x 16 register transposes: 16 source lines (rows of A', columns of B')
 * of up to 16 k each are loaded, transposed, and each k's 16 values stored as one
 * (masked) vector of the panel.  Every other layout goes to the generic packers
 * (gk_gemm_pack.c), which copy rows with memcpy where the panel order already is the
 * memory order.  The values are copied unchanged, so the panels are bit-identical to the
 * generic packers'.
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

/* Lines l < nlines (l < 16) start at src + l*ls bytes, element k at + k*4 bytes.  For
 * k < kc: dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0). */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, float *dst,
                       ptrdiff_t ld, int width)
{
    const __mmask16 wmask = (__mmask16)((1u << width) - 1u);
    __m512 r[16];
    for (int k0 = 0; k0 < kc; k0 += 16) {
        const int nk = kc - k0 < 16 ? kc - k0 : 16;
        const __mmask16 kmask = (__mmask16)((1u << nk) - 1u);
        for (int l = 0; l < 16; l++)
            r[l] = l < nlines ? _mm512_maskz_loadu_ps(kmask, src + l * ls + (ptrdiff_t)k0 * 4)
                              : _mm512_setzero_ps();
        transpose16(r);
        for (int kk = 0; kk < nk; kk++)
            _mm512_mask_storeu_ps(dst + (ptrdiff_t)(k0 + kk) * ld, wmask, r[kk]);
    }
}

static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst, gk_gemm_pack_a_fn generic)
{
    const char *base;
    float *d = (float *)dst;
    if (a->cs != 4 || mr > 16) {
        generic(a, i0, k0, mc, kc, mr, dst);
        return;
    }
    base = a->p + i0 * a->rs + k0 * 4;
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
    float *d = (float *)dst;
    if (b->rs != 4 || nr % 16 != 0 || b->cs == 4) {
        generic(b, k0, j0, kc, nc, nr, dst);
        return;
    }
    base = b->p + k0 * 4 + j0 * b->cs;
    for (int q0 = 0; q0 < nc; q0 += nr) {
        const int cols = nc - q0 < nr ? nc - q0 : nr;
        for (int s = 0; s < nr; s += 16) {
            const int lines = cols - s < 0 ? 0 : (cols - s < 16 ? cols - s : 16);
            pack_lines(base + (ptrdiff_t)(q0 + s) * b->cs, b->cs, lines, kc, d + s, nr, 16);
        }
        d += (ptrdiff_t)kc * nr;
    }
}

/* The bits are copied, never interpreted: one transposing packer serves the float and the
 * integer family of this element size, each with its own generic fallback. */
void gk_gemm_pack_a_f32_avx512(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_f32);
}
void gk_gemm_pack_b_f32_avx512(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_f32);
}
void gk_gemm_pack_a_u32_avx512(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_u32);
}
void gk_gemm_pack_b_u32_avx512(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_u32);
}
