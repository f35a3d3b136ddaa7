/* 32-bit element packers of the AVX2 float32 and 32-bit integer families (group avx2)
 * for the operand layouts that need a transpose: A' with rows contiguous along k (plain
 * row-major A, cs == 4) and B' with columns contiguous along k (transB, rs == 4).  Both
 * become 8 x 8 register transposes: 8 source lines (rows of A', columns of B') of up to
 * 8 k each are loaded, transposed, and each k's values stored into the panel.  Plain
 * row-major B' is copied in vectors (gk_gemm_pack_transpose.inc); every other layout
 * goes to the generic packers (gk_gemm_pack.c).  Values are copied unchanged: the panels
 * are bit-identical to the generic packers'.
 *
 * Loads are masked (vmaskmovps: no fault on masked lanes) to the valid k of each line;
 * lines beyond the valid rows/columns are zero vectors, so padding lanes are zero.
 * Stores: a panel row narrower than 8 lanes (A: mr = 6) is written with full 8-lane
 * stores in increasing k, each one's 2 extra lanes overwritten by the next k's store
 * (masked stores are slow on AMD); the last k of a panel is stored masked, so nothing is
 * written past the panel.  The pack_a/pack_b loops are gk_gemm_pack_transpose.inc's. */
#include <immintrin.h>
#include <string.h>

#include "gemmkit/gk_gemm.h"

/* r[0..7] (line i, k = 0..7) -> r[kk] (k = kk, lane i = line i) */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int j = 0; j < 4; j++) {
        t[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
    /* u[4g + c], 128-bit lane L: lines 4g..4g+3 at k = 4L + c */
    for (int g = 0; g < 2; g++) {
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* 8 lines of 8 k each, line l at p[l / 4] + (l % 4) * ls bytes, transposed with the
 * 128-bit blocks moved while loading (one 16-byte load and one vinsertf128 from memory
 * per vector, no cross-lane shuffle), then two in-lane stages: r[kk] holds k = kk of
 * lines 0..7. */
static inline void load_transpose8(const char *const p[2], ptrdiff_t ls, __m256 r[8])
{
    for (int c = 0; c < 2; c++) {
        __m256 z[4], t[4];
        /* z[i]: line i (low lane) and line 4 + i (high lane) at k = 4c .. 4c + 3 */
        for (int i = 0; i < 4; i++)
            z[i] = _mm256_insertf128_ps(
                _mm256_castps128_ps256(_mm_loadu_ps((const float *)(p[0] + i * ls) + 4 * c)),
                _mm_loadu_ps((const float *)(p[1] + i * ls) + 4 * c), 1);
        t[0] = _mm256_unpacklo_ps(z[0], z[1]);
        t[1] = _mm256_unpackhi_ps(z[0], z[1]);
        t[2] = _mm256_unpacklo_ps(z[2], z[3]);
        t[3] = _mm256_unpackhi_ps(z[2], z[3]);
        r[4 * c + 0] = _mm256_shuffle_ps(t[0], t[2], 0x44);
        r[4 * c + 1] = _mm256_shuffle_ps(t[0], t[2], 0xEE);
        r[4 * c + 2] = _mm256_shuffle_ps(t[1], t[3], 0x44);
        r[4 * c + 3] = _mm256_shuffle_ps(t[1], t[3], 0xEE);
    }
}

/* Lines l < nlines start at src + l*ls bytes, element k at + k*4 bytes.  For k < kc:
 * dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0), in groups of 8
 * lines.  Writes only dst[k*ld .. k*ld + width).  A group of 8 real lines takes its whole
 * 8-deep steps through load_transpose8; a partial group and the last kc % 8 use masked
 * loads and transpose8. */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, float *dst,
                       ptrdiff_t ld, int width)
{
    static const int32_t lane_on[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    __m256 r[8];
    for (int g = 0; g < width; g += 8) {
        const int w = width - g < 8 ? width - g : 8;
        const __m256i wmask = _mm256_loadu_si256((const __m256i *)(const void *)(lane_on + 8 - w));
        const int full = g + 8 <= nlines;
        const char *p[2];
        p[0] = src + (ptrdiff_t)g * ls;
        p[1] = p[0] + 4 * ls;
        for (int k0 = 0; k0 < kc; k0 += 8) {
            const int nk = kc - k0 < 8 ? kc - k0 : 8;
            if (full && nk == 8) {
                load_transpose8(p, ls, r);
                p[0] += 32;
                p[1] += 32;
            } else {
                const __m256i kmask =
                    _mm256_loadu_si256((const __m256i *)(const void *)(lane_on + 8 - nk));
                for (int l = 0; l < 8; l++)
                    r[l] = g + l < nlines
                               ? _mm256_maskload_ps((const float *)(const void *)(
                                                        src + (g + l) * ls + (ptrdiff_t)k0 * 4),
                                                    kmask)
                               : _mm256_setzero_ps();
                transpose8(r);
            }
            for (int kk = 0; kk < nk; kk++) {
                float *o = dst + (ptrdiff_t)(k0 + kk) * ld + g;
                /* a one-group panel (A: mr = 6) stores 8 lanes, the extra ones landing
                 * on the next k's first lanes, rewritten next; its last k is stored
                 * exactly, as is any narrow group of a wider panel */
                if (w == 8 || (w == width && k0 + kk + 1 < kc))
                    _mm256_storeu_ps(o, r[kk]);
                else
                    _mm256_maskstore_ps(o, wmask, r[kk]);
            }
        }
    }
}

#define GK_TP_T float
#define GK_TP_ES 4
#define GK_TP_VB 32
#define GK_TP_WIDTH_OK(w) 1
#define GK_TP_FLT f32
#define GK_TP_INT u32
#define GK_TP_ISA avx2
#include "gk_gemm_pack_transpose.inc"
