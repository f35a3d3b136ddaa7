/* The small-M driver of the pair families (SSE4.1, AVX2), scheme in gk_qsmallm_pair.h.
 * Included once by each family file, after gk_qsmallm_pair.h and these definitions:
 *   GK_SMP_W          columns per block (16 | 8); divides 32, the chunk granularity
 *   GK_SMP_AQ_T       element type of the a' pairs as the block consumes them
 *   gk_smp_prep_a(aq, aqx, n) -> const GK_SMP_AQ_T *: the n pairs aq[] in that form
 *                     (aqx: storage for n of them, used or not)
 *   gk_smp_block(m, colsum, b_signed, rows, off, aqp, acc, ldb)
 *                     one pass over one block of GK_SMP_W columns: acc[i * ldb + ..] +=
 *                     sum_k a'[i, k] B[k, ..] (layout its own), row m += colsum(B) when
 *                     colsum; rows[d] + off .. + GK_SMP_W - 1 readable
 *   gk_smp_epilogue(e, m, n0, w, acc, ldb, k, need_colsum, vec_ok, bu)
 *                     outputs of rows [0, m), columns n0 .. n0 + w - 1 (w <= GK_SMP_W) from
 *                     one block's accumulators (B domain; bu: B is uint8)
 * and defines the family's gk_qgemm_smallm_fn `smallm`. */
#ifndef GEMMKIT_GK_QSMALLM_PAIR_RUN_H
#define GEMMKIT_GK_QSMALLM_PAIR_RUN_H

/* Up to 16 rows the small-M path beats packing (measured, K = N = 256..4096: M = 16 in
 * about half the packed time, whose cost is dominated by widening B to int16 panels). */
#define GK_SMP_MAX 16

/* M <= GK_SMP_MAX rows; B read once, GK_SMP_KC rows at a time, each row front to back
 * within a chunk of columns whose (m + 1) rows of int32 accumulators fit GK_SMP_STACK.
 * b_signed is a compile-time constant at both call sites (int8 B: sign-extend; uint8 B:
 * zero-extend and correct, see gk_qsmallm_pair.h). */
static inline __attribute__((always_inline)) void gk_smp_run(
    int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs, uint8_t a_xor,
    const uint8_t *b, ptrdiff_t b_rs, const gk_qepi *e, int b_signed)
{
    int32_t buf[GK_SMP_STACK / 4] __attribute__((aligned(64)));
    int32_t aq[GK_SMP_MAX * GK_SMP_NP];
    GK_SMP_AQ_T aqx[GK_SMP_MAX * GK_SMP_NP];
    uint8_t tmp[GK_SMP_KC * GK_SMP_W];
    const uint8_t *rp[GK_SMP_KC], *tp[GK_SMP_KC];
    const int need_colsum = gk_x86_smallm_need_colsum(e, m);
    const int nc_max = gk_smp_chunk(m + 1);
    const int vec_ok = gk_x86_epi_vector_ok(e);
    const int bu = !b_signed;

    memset(tmp, 0, sizeof tmp); /* gk_smp_tail_copy's zero padding */
    for (int nc0 = 0; nc0 < n; nc0 += nc_max) {
        const int ncw = n - nc0 < nc_max ? n - nc0 : nc_max;
        const int nfull = ncw / GK_SMP_W, ldb = (ncw + GK_SMP_W - 1) / GK_SMP_W * GK_SMP_W;
        /* (m + 1) * ldb <= GK_SMP_STACK / 4 since ldb <= nc_max (a multiple of GK_SMP_W) */
        memset(buf, 0, sizeof(int32_t) * (size_t)(m + 1) * (size_t)ldb);
        for (int k0 = 0; k0 < k; k0 += GK_SMP_KC) {
            gk_smp_gather_a(m, k, k0, a, a_rs, a_cs, a_xor, aq);
            const GK_SMP_AQ_T *aqp = gk_smp_prep_a(aq, aqx, m * GK_SMP_NP);
            gk_smp_rows(b, b_rs, k, k0, nc0, rp);
            for (int blk = 0; blk < nfull; blk++)
                gk_smp_block(m, need_colsum, b_signed, rp, (ptrdiff_t)blk * GK_SMP_W, aqp,
                             buf + blk * GK_SMP_W, ldb);
            if (nfull * GK_SMP_W < ncw) {
                gk_smp_tail_copy(rp, nfull * GK_SMP_W, ncw - nfull * GK_SMP_W, GK_SMP_W, tmp, tp);
                gk_smp_block(m, need_colsum, b_signed, tp, 0, aqp, buf + nfull * GK_SMP_W, ldb);
            }
        }
        for (int j0 = 0; j0 < ncw; j0 += GK_SMP_W)
            gk_smp_epilogue(e, m, nc0 + j0, ncw - j0 < GK_SMP_W ? ncw - j0 : GK_SMP_W, buf + j0,
                            ldb, k, need_colsum, vec_ok, bu);
    }
}

static void smallm(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   uint8_t a_xor, const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor, const gk_qepi *e)
{
    if (b_xor == 0)
        gk_smp_run(m, n, k, a, a_rs, a_cs, a_xor, b, b_rs, e, 1);
    else /* b_xor == 0x80: B is uint8, b' = B - 128 */
        gk_smp_run(m, n, k, a, a_rs, a_cs, a_xor, b, b_rs, e, 0);
}

#endif
