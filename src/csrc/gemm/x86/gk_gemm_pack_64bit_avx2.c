/* 64-bit element packers of the AVX2 float64 and 64-bit integer families (group avx2)
 * for the operand layouts that need a transpose: A' with rows contiguous along k (plain
 * row-major A, cs == 8) and B' with columns contiguous along k (transB, rs == 8).
 * Source lines (rows of A', columns of B') are taken 4 at a time, up to 4 k each,
 * transposed in registers (4 x 4), and each k's values stored into the panel: 4 lanes,
 * or the low 2 for a group of 2 (the 6-row A panel's second group), so nothing is
 * written past the panel.  Plain row-major B' is copied in vectors
 * (gk_gemm_pack_transpose.inc); every other layout goes to the generic packers
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

#define GK_TP_T double
#define GK_TP_ES 8
#define GK_TP_VB 32
#define GK_TP_WIDTH_OK(w) ((w) % 2 == 0)
#define GK_TP_FLT f64
#define GK_TP_INT u64
#define GK_TP_ISA avx2
#include "gk_gemm_pack_transpose.inc"
