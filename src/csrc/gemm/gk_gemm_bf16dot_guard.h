/* The guard of the bfloat16 dot-product families (x86 vdpbf16ps, ARM BFMMLA): when their
 * instructions' fixed floating-point behaviour could leave the float32-accumulation bound,
 * the call gets the result of the next family of the bfloat16 row (the widening float32
 * one): the family's packers note what they pack (gk_bf16_span_publish) and its
 * gk_gemm_kernel.check_packed judges it after the call, which then runs again there.
 *
 * Both instructions read bfloat16 denormals as zero and flush denormal results; ARM's
 * (without FEAT_EBF16's FPCR.EBF) also rounds to odd, where a finite sum too large for
 * float32 may become the largest finite value instead of infinity.  So:
 *
 *   no flush   (both): no bfloat16 denormal in A' or B', and eA + eB >= -112, where eA
 *              (eB) is the smallest unbiased exponent of a nonzero finite element of A'
 *              (B').  A nonzero bfloat16 x is an integer multiple of 2**(e(x) - 7), so
 *              every product is a multiple of g = 2**(eA + eB - 14), and so is every sum
 *              of products; rounding to float32 (to nearest or to odd) keeps a multiple
 *              of g (it only ever rounds to a coarser grid, or not at all where the
 *              grid is finer than g).  Every nonzero product and partial sum is thus at
 *              least g >= 2**-126 in magnitude: normal, never flushed.
 *   no overflow (ARM's): no infinity or NaN in A' or B' (their propagation then needs no
 *              argument), and every partial sum stays below 2**128 whatever the
 *              rounding: |a| < 2**(EA - 126) for the largest exponent field EA, so
 *              sum_k |a b| < K 2**(EA + EB - 252); each of the K adds grows a partial sum
 *              by at most (1 + 2**-23), a factor below 2**(1 + K / 2**22) over K adds.
 *              Required: ceil(log2 K) + EA + EB - 252 + 1 + ceil(K / 2**22) <= 127.
 *
 * Typical data (weights, activations: exponents in [-40, 40]) always passes.  A family
 * scans A' and B' once (O(MK + KN) against the product's O(MNK)), with its own vector
 * code for contiguous rows and gk_bf16_span_scan below for anything else. */
#ifndef GK_GEMM_BF16DOT_GUARD_H
#define GK_GEMM_BF16DOT_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What a scan keeps of a bfloat16 matrix, from its bits x:
 *   lo = min of ((x & 0x7fff) - 1) mod 2**16: zeros map to 0xffff (ignored), a denormal
 *        to < 0x7f, a finite normal with exponent field E to [E*128 - 1, E*128 + 126];
 *   hi = max of (x & 0x7fff): >= 0x7f80 for an infinity or NaN, else E*128 + mantissa. */
typedef struct gk_bf16_span {
    unsigned lo, hi;
} gk_bf16_span;

#define GK_BF16_SPAN_EMPTY {0xffffu, 0u}

static inline void gk_bf16_span_add(gk_bf16_span *s, unsigned x)
{
    const unsigned mag = x & 0x7fffu, lo = (mag - 1u) & 0xffffu;
    s->lo = lo < s->lo ? lo : s->lo;
    s->hi = mag > s->hi ? mag : s->hi;
}

/* Element by element: rows x cols, element (r, c) at p + r*rs + c*cs bytes. */
static inline void gk_bf16_span_scan(gk_bf16_span *s, const char *p, ptrdiff_t rs, ptrdiff_t cs,
                                     ptrdiff_t rows, ptrdiff_t cols)
{
    for (ptrdiff_t r = 0; r < rows; r++)
        for (ptrdiff_t c = 0; c < cols; c++) {
            uint16_t h;
            memcpy(&h, p + r * rs + c * cs, 2);
            gk_bf16_span_add(s, h);
        }
}

/* Merges span s into a guard record's minimum *lo_p and maximum *hi_p (a gk_gemm_seen's
 * a_min / a_max or b_min / b_max; hi_p NULL: a guard that needs no maximum) for
 * gk_gemm_kernel.check_packed: the parts of one call pack on several threads, so both
 * are updated atomically (GNU __atomic builtins: the groups including this header are
 * built by gcc and clang only, see setup.py). */
static inline void gk_bf16_span_publish(unsigned *lo_p, unsigned *hi_p, gk_bf16_span s)
{
    unsigned cur = __atomic_load_n(lo_p, __ATOMIC_RELAXED);
    while (s.lo < cur &&
           !__atomic_compare_exchange_n(lo_p, &cur, s.lo, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (hi_p == NULL)
        return;
    cur = __atomic_load_n(hi_p, __ATOMIC_RELAXED);
    while (s.hi > cur &&
           !__atomic_compare_exchange_n(hi_p, &cur, s.hi, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* Orients a rows x cols matrix (element (r, c) at *p + r * *rs + c * *cs bytes) so that
 * its rows are the contiguous direction where either one is (2-byte elements): swaps the
 * roles of rows and columns when only the columns are contiguous.  The span does not
 * depend on the orientation.  Returns 1 when the rows are contiguous (*cs == 2): the
 * families' vector scans run along them; else gk_bf16_span_scan. */
static inline int gk_bf16_rows_contiguous(ptrdiff_t *rs, ptrdiff_t *cs, ptrdiff_t *rows,
                                          ptrdiff_t *cols)
{
    if (*cs != 2 && *rs == 2) {
        ptrdiff_t t = *rs;
        *rs = *cs;
        *cs = t;
        t = *rows;
        *rows = *cols;
        *cols = t;
    }
    return *cs == 2;
}

/* Sum of the two smallest exponent FIELDS (biased, 1..254) below which a product or sum
 * could be flushed: eA + eB >= -112 unbiased  <=>  EA + EB >= 2*127 - 112 = 142. */
#define GK_BF16DOT_MIN_EXP_SUM 142

/* 1: no denormal input and no denormal product or partial sum (see above). */
static inline int gk_bf16dot_no_flush(unsigned lo_a, unsigned lo_b)
{
    if (lo_a < 0x7f || lo_b < 0x7f)
        return 0; /* a denormal in A' or B' */
    /* (lo + 1) >> 7: the smallest exponent field of a nonzero element; 512 when all are
     * zero (no nonzero product: nothing to flush) */
    return ((lo_a + 1) >> 7) + ((lo_b + 1) >> 7) >= GK_BF16DOT_MIN_EXP_SUM;
}

/* 1: no infinity or NaN input and no partial sum of depth k can reach 2**128 (see
 * above). */
static inline int gk_bf16dot_no_overflow(unsigned hi_a, unsigned hi_b, ptrdiff_t k)
{
    int log2k = 0, growth;
    if (hi_a >= 0x7f80u || hi_b >= 0x7f80u)
        return 0;
    while (((ptrdiff_t)1 << log2k) < k && log2k < 62)
        log2k++;
    growth = 1 + (int)((k + ((ptrdiff_t)1 << 22) - 1) >> 22);
    return log2k + (int)(hi_a >> 7) + (int)(hi_b >> 7) - 252 + growth <= 127;
}

#endif
