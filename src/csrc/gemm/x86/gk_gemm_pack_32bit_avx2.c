/* 32-bit element packers of the AVX2 float32 and 32-bit integer families (group avx2)
 * for the operand layouts that need a transpose: A' with rows contiguous along k (plain
 * row-major A, cs == 4) and B' with columns contiguous along k (transB, rs == 4).  Both
 * become 8 x 8 register transposes: 8 source lines (rows of A', columns of B') of up to
 * 8 k each are loaded, transposed, and each k's values stored into the panel.  Every
 * other layout goes to the generic packers (gk_gemm_pack.c).  Values are copied
 * unchanged: the panels are bit-identical to the generic packers'.
 *
 * Loads are masked (vmaskmovps: no fault on masked lanes) to the valid k of each line;
 * lines beyond the valid rows/columns are zero vectors, so padding lanes are zero.
 * Stores: a panel row narrower than 8 lanes (A: mr = 6) is written with full 8-lane
 * stores in increasing k, each one's 2 extra lanes overwritten by the next k's store;
 * the last k of a panel is stored exactly (4 + 2 lanes), so nothing is written past the
 * panel (masked stores are slow on AMD). */
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

/* Lines l < nlines (l < 8) start at src + l*ls bytes, element k at + k*4 bytes.  For
 * k < kc: dst[k*ld + l] = line l's element k, for l < width (lines >= nlines: 0);
 * width is 6 or 8.  Writes only dst[0 .. (kc-1)*ld + width). */
static void pack_lines(const char *src, ptrdiff_t ls, int nlines, int kc, float *dst,
                       ptrdiff_t ld, int width)
{
    static const int32_t lane_on[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    __m256 r[8];
    for (int k0 = 0; k0 < kc; k0 += 8) {
        const int nk = kc - k0 < 8 ? kc - k0 : 8;
        const __m256i kmask = _mm256_loadu_si256((const __m256i *)(lane_on + 8 - nk));
        for (int l = 0; l < 8; l++)
            r[l] = l < nlines ? _mm256_maskload_ps(
                                    (const float *)(const void *)(src + l * ls + (ptrdiff_t)k0 * 4), kmask)
                              : _mm256_setzero_ps();
        transpose8(r);
        for (int kk = 0; kk < nk; kk++) {
            float *o = dst + (ptrdiff_t)(k0 + kk) * ld;
            if (width == 8 || k0 + kk + 1 < kc) {
                _mm256_storeu_ps(o, r[kk]);
            } else { /* the panel's last k: exactly `width` (6) lanes */
                _mm_storeu_ps(o, _mm256_castps256_ps128(r[kk]));
                _mm_storel_pi((__m64 *)(void *)(o + 4), _mm256_extractf128_ps(r[kk], 1));
            }
        }
    }
}

static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                             int kc, int mr, void *dst, gk_gemm_pack_a_fn generic)
{
    const char *base;
    float *d = (float *)dst;
    if (a->cs != 4 || (mr != 6 && mr != 8)) {
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
    if (b->rs != 4 || nr % 8 != 0 || b->cs == 4) {
        generic(b, k0, j0, kc, nc, nr, dst);
        return;
    }
    base = b->p + k0 * 4 + j0 * b->cs;
    for (int q0 = 0; q0 < nc; q0 += nr) {
        const int cols = nc - q0 < nr ? nc - q0 : nr;
        for (int s = 0; s < nr; s += 8) {
            const int lines = cols - s < 0 ? 0 : (cols - s < 8 ? cols - s : 8);
            pack_lines(base + (ptrdiff_t)(q0 + s) * b->cs, b->cs, lines, kc, d + s, nr, 8);
        }
        d += (ptrdiff_t)kc * nr;
    }
}

/* The bits are copied, never interpreted: one transposing packer serves the float and the
 * integer family of this element size, each with its own generic fallback. */
void gk_gemm_pack_a_f32_avx2(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_f32);
}
void gk_gemm_pack_b_f32_avx2(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_f32);
}
void gk_gemm_pack_a_u32_avx2(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                               int kc, int mr, void *dst)
{
    pack_a(a, i0, k0, mc, kc, mr, dst, gk_gemm_pack_a_u32);
}
void gk_gemm_pack_b_u32_avx2(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                               int nc, int nr, void *dst)
{
    pack_b(b, k0, j0, kc, nc, nr, dst, gk_gemm_pack_b_u32);
}
