/* Small-M int8 GEMM without packing for the exact int16 vpmaddwd families (SSE4.1, AVX2):
 * the pieces both share (the driver itself: gk_qsmallm_pair_run.h).  SSE4.1 intrinsics only (VEX-encoded when the including file is
 * built for AVX2).
 *
 * Scheme.  B is streamed once, row by row, GK_SMP_KC depth rows per pass.  Two depth rows
 * k, k+1 of a column block are widened to int16 and interleaved, so int32 lane j holds
 * the int16 pair (B[k, j], B[k+1, j]); vpmaddwd against the broadcast int16 pair
 * (a'[m, k], a'[m, k+1]) gives a'[m,k] B[k,j] + a'[m,k+1] B[k+1,j], two exact products
 * (|.| <= 255 * 255 each, |sum| < 2^17) summed in int32, then a wrapping int32 add.  Never
 * two 8-bit products in a 16-bit lane.  The same pairs against int16 ones give the column
 * sums.
 *
 * B is used as stored, not xor'ed: an int8 B is sign-extended (it IS b'); a uint8 B is
 * zero-extended, i.e. the kernel multiplies by B = b' + 128 and corrects once at the end,
 * modulo 2^32 (a ring homomorphism, so the result equals the direct sum bit for bit):
 *     sum_k a'[m,k] b'[k,n] = sum_k a'[m,k] B[k,n] - 128 * a_rowsum[m]
 *     colsum(b')[n]         = colsum(B)[n]          - 128 * K
 * Depth rows past K are read as B = 0 from gk_smp_zeros and a' is 0 there too, so padding
 * adds nothing to either sum in either domain (odd K: the last pair's second row). */
#ifndef GEMMKIT_GK_QSMALLM_PAIR_H
#define GEMMKIT_GK_QSMALLM_PAIR_H

#include <smmintrin.h>

#include "gk_qgemm_x86_common.h"

#define GK_SMP_KC 16                 /* depth rows of B per pass */
#define GK_SMP_NP (GK_SMP_KC / 2)    /* k-pairs per pass */
#define GK_SMP_STACK 32768           /* bytes of int32 accumulators on the stack */
#define GK_SMP_NC_MAX 4096           /* columns per chunk: bounds the zero row below */

/* Stands in for B rows at depth >= K: every offset a pass reads from it is inside
 * [0, chunk width) and chunk width <= GK_SMP_NC_MAX. */
static const uint8_t gk_smp_zeros[GK_SMP_NC_MAX] __attribute__((aligned(64))) = {0};

/* Columns per chunk for `rows` accumulator rows: the rows x columns int32 buffer fits
 * GK_SMP_STACK, a multiple of 32 (both block widths divide it), at most GK_SMP_NC_MAX. */
static inline int gk_smp_chunk(int rows)
{
    int nc = GK_SMP_STACK / 4 / rows / 32 * 32;
    return nc < GK_SMP_NC_MAX ? nc : GK_SMP_NC_MAX;
}

/* The a' pairs of m rows for depth [k0, k0 + GK_SMP_KC): aq[i * GK_SMP_NP + p] holds
 * (a'[i, k0 + 2p], a'[i, k0 + 2p + 1]) as two int16 (low half first), zero past K.
 * a' <= 255 so zero extension keeps the int16 non-negative and exact. */
static inline void gk_smp_gather_a(int m, int k, int k0, const uint8_t *a, ptrdiff_t rs,
                                   ptrdiff_t cs, uint8_t x, int32_t *aq)
{
    if (cs == 1 && k - k0 >= GK_SMP_KC) { /* the 16 bytes read lie inside row i */
        const __m128i xv = _mm_set1_epi8((char)x);
        for (int i = 0; i < m; i++) {
            __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + (ptrdiff_t)i * rs + k0)), xv);
            _mm_storeu_si128((__m128i *)(aq + i * GK_SMP_NP), _mm_cvtepu8_epi16(v));
            _mm_storeu_si128((__m128i *)(aq + i * GK_SMP_NP + 4), _mm_cvtepu8_epi16(_mm_srli_si128(v, 8)));
        }
        return;
    }
    for (int i = 0; i < m; i++)
        for (int p = 0; p < GK_SMP_NP; p++) {
            uint32_t w = 0;
            for (int h = 0; h < 2; h++) {
                int d = k0 + 2 * p + h;
                if (d < k)
                    w |= (uint32_t)(uint8_t)(a[(ptrdiff_t)i * rs + (ptrdiff_t)d * cs] ^ x) << (16 * h);
            }
            aq[i * GK_SMP_NP + p] = (int32_t)w;
        }
}

/* Row pointers of one pass: rows[d] = B row k0 + d at column c0, or the zero row past K. */
static inline void gk_smp_rows(const uint8_t *b, ptrdiff_t b_rs, int k, int k0, int c0,
                               const uint8_t *rows[GK_SMP_KC])
{
    for (int d = 0; d < GK_SMP_KC; d++)
        rows[d] = k0 + d < k ? b + (ptrdiff_t)(k0 + d) * b_rs + c0 : gk_smp_zeros;
}

/* A partial block (cv < W columns) copied into tmp[d * W + j], so the vector loads never
 * read past the end of a B row.  tmp[d * W + j] for j >= cv must be zero already: the
 * caller zeroes tmp once, and a call only writes the first cv bytes of each row (one
 * run has a single tail width). */
static inline void gk_smp_tail_copy(const uint8_t *const rows[GK_SMP_KC], int off, int cv, int W,
                                    uint8_t *tmp, const uint8_t *trows[GK_SMP_KC])
{
    for (int d = 0; d < GK_SMP_KC; d++) {
        memcpy(tmp + d * W, rows[d] + off, (size_t)cv);
        trows[d] = tmp + d * W;
    }
}

/* The raw dot product of row m (B domain, see above) turned into the b' domain. */
static inline uint32_t gk_smp_dot_shift(const gk_qepi *e, int m, int b_unsigned)
{
    return b_unsigned ? 128u * (uint32_t)e->a_rowsum[m] : 0u;
}

/* b_colcorr[n] = colsum(b')[n] - K zb[n] from colsum(B)[n] (mod 2^32). */
static inline uint32_t gk_smp_colcorr1(const gk_qepi *e, int n, uint32_t colsum_b, int b_unsigned)
{
    uint32_t kk = (uint32_t)e->k;
    return colsum_b - (b_unsigned ? 128u * kk : 0u) - kk * (uint32_t)e->b_zp[n];
}

/* The reference epilogue of row m, columns n0 .. n0 + w - 1, from the B-domain dot
 * products t[j] and colsum(B) cs[j] (cs unread when !need_colsum). */
static inline void gk_smp_store_row(const gk_qepi *e, int m, int n0, int w, const int32_t *t,
                                    const int32_t *cs, int need_colsum, int b_unsigned)
{
    for (int j = 0; j < w; j++)
        gk_x86_store1_cc(e, m, n0 + j, (uint32_t)t[j] - gk_smp_dot_shift(e, m, b_unsigned),
                         need_colsum ? gk_smp_colcorr1(e, n0 + j, (uint32_t)cs[j], b_unsigned) : 0u);
}

#endif
