/* 64-bit element packers of the AVX2 float64 and 64-bit integer families (group avx2)
 * for the operand layouts that need a transpose: A' with rows contiguous along k (plain
 * row-major A, cs == 8) and B' with columns contiguous along k (transB, rs == 8).
 * Source lines (rows of A', columns of B') are taken 4 at a time, up to 4 k each,
 * transposed in registers (4 x 4), and each k's values stored into the panel: 4 lanes,
 * or the low 2 for a group of 2 (the 6-row A panel's second group), so nothing is
 * written past the panel.  Every other layout goes to the generic packers
 * (gk_gemm_pack.c).  Values are copied unchanged: the panels are bit-identical to the
 * generic packers'.
 *
 * Loads are masked (vmaskmovpd: no fault on masked lanes) to the valid k of each line;
 * lines beyond the valid rows/columns are zero vectors, so padding lanes are zero. */
#include <immintrin.h>
#include <string.h>

#include "gemmkit/gk_gemm.h"

/* r[0..3] (line i, k = 0..3) -> r[kk] (k = kk, lane i = line i) */
static inline void transpose4(__m256d r[4])
{
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

/* Lines l < nlines start at src + l*ls bytes, element k at + k*8 bytes.  For k < kc:
 * dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0); width is a
 * multiple of 2. */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, double *dst,
                       ptrdiff_t ld, int width)
{
    static const int64_t lane_on[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
    __m256d r[4];
    for (int g = 0; g < width; g += 4) {
        const int w = width - g < 4 ? width - g : 4;
        for (int k0 = 0; k0 < kc; k0 += 4) {
            const int nk = kc - k0 < 4 ? kc - k0 : 4;
            const __m256i kmask = _mm256_loadu_si256((const __m256i *)(const void *)(lane_on + 4 - nk));
            for (int l = 0; l < 4; l++)
                r[l] = g + l < nlines
                           ? _mm256_maskload_pd((const double *)(const void *)(src + (g + l) * ls +
                                                                               (ptrdiff_t)k0 * 8),
                                                kmask)
                           : _mm256_setzero_pd();
            transpose4(r);
            for (int kk = 0; kk < nk; kk++) {
                double *o = dst + (ptrdiff_t)(k0 + kk) * ld + g;
                if (w == 4)
                    _mm256_storeu_pd(o, r[kk]);
                else
                    _mm_storeu_pd(o, _mm256_castpd256_pd128(r[kk]));
            }
        }
    }
}

static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                             int kc, int mr, void *dst, gk_gemm_pack_a_fn generic)
{
    const char *base;
    double *d = (double *)dst;
    if (a->cs != 8 || mr % 2 != 0) {
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
    if (b->rs != 8 || nr % 2 != 0 || b->cs == 8) {
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
void gk_gemm_pack_a_f64_avx2(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_f64);
}
void gk_gemm_pack_b_f64_avx2(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_f64);
}
void gk_gemm_pack_a_u64_avx2(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_u64);
}
void gk_gemm_pack_b_u64_avx2(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_u64);
}
