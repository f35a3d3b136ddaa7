/* The int8 GEMM driver: sign mapping, cache blocking, packing, kernel calls.
 *
 * Loop order (BLIS-style): N blocks of nc columns (packed B block, ~GK_QGEMM_NC_BYTES)
 * -> M blocks of mc rows (packed A block, ~GK_QGEMM_MC_BYTES) -> nr-wide B micro-panels
 * (stay in L1) -> mr-high A micro-panels.  Up to GK_QGEMM_KCHUNK, K is never split: each
 * micro-kernel call sees the whole depth, so it can finish its tile (zero-point
 * correction, requantization) in registers and no int32 [M, N] intermediate exists.
 * Deeper products run chunk by chunk (run_k_chunked). */
#include <float.h>
#include <string.h>

#include "gemmkit/gk_qgemm_driver.h"
#include "core/gk_alloc.h"

#define GK_QGEMM_MC_BYTES (256 * 1024)
#define GK_QGEMM_NC_BYTES (1024 * 1024)

float gk_qmultiplier(float a_scale, float b_scale, float y_scale)
{
    /* float32 throughout, one rounding per operation (no contraction: -ffp-contract=off) */
    float ab = a_scale * b_scale;
    float m = ab / y_scale;
    if (m > FLT_MAX)
        m = FLT_MAX;
    else if (m < -FLT_MAX)
        m = -FLT_MAX;
    return m;
}

static int32_t load_q(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

static int run_k_chunked(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p);

int gk_qgemm_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p)
{
    const int M = p->m, N = p->n, K = p->k;
    if (K > GK_QGEMM_KCHUNK && M > 0 && N > 0)
        return run_k_chunked(kern, p);
    /* Canonical u8 x s8 form, see gk_qgemm.h. */
    const uint8_t a_xor = p->a_signed ? 0x80 : 0, b_xor = p->b_signed ? 0 : 0x80;
    const int32_t a_shift = p->a_signed ? 128 : 0, b_shift = p->b_signed ? 0 : 128;
    const int requant = p->out_kind != GK_QOUT_I32;
    const int use_smallm = kern->smallm != 0 && M <= kern->smallm_max && (p->b_cs == 1 || N == 1);

    if (M <= 0 || N <= 0)
        return 0;

    /* Multiplier / output zero point grids: one entry per row only where some input
     * varies by row, one per column only where some varies by column. */
    const int mult_rows = requant && (p->as_rs != 0 || p->ys_rs != 0) ? M : 1;
    const int mult_cols = requant && (p->bs_cs != 0 || p->ys_cs != 0) ? N : 1;
    const int yzp_rows = requant && p->yzp_rs != 0 ? M : 1;
    const int yzp_cols = requant && p->yzp_cs != 0 ? N : 1;

    const size_t kp = round_up((size_t)K, (size_t)kern->kstep);
    size_t nc = N, mc = M;
    if (!use_smallm && kp > 0) {
        size_t ncap = GK_QGEMM_NC_BYTES / (kp * (size_t)kern->b_elem_bytes) / kern->nr * kern->nr;
        size_t mcap = GK_QGEMM_MC_BYTES / (kp * (size_t)kern->a_elem_bytes) / kern->mr * kern->mr;
        if (ncap < (size_t)kern->nr)
            ncap = kern->nr;
        if (mcap < (size_t)kern->mr)
            mcap = kern->mr;
        if (nc > ncap)
            nc = ncap;
        if (mc > mcap)
            mc = mcap;
    }
    const size_t apack = use_smallm ? 0 : round_up(mc, kern->mr) * kp * kern->a_elem_bytes;
    const size_t bpack = use_smallm ? 0 : round_up(nc, kern->nr) * kp * kern->b_elem_bytes;

    /* One allocation for every per-call buffer, each 64-byte aligned. */
    size_t off[9], total = 0;
    const size_t sizes[9] = {
        (size_t)M * 4, (size_t)M * 4, (size_t)N * 4, (size_t)N * 4,            /* za, rowsum, zb, colcorr */
        (size_t)mult_rows * mult_cols * 4, (size_t)yzp_rows * yzp_cols * 4,    /* mult, yzp */
        apack, bpack, (size_t)nc * 4,                                          /* packs, colsum */
    };
    for (int i = 0; i < 9; i++) {
        off[i] = total;
        total += gk_round64(sizes[i]);
    }
    unsigned char *mem = (unsigned char *)gk_aligned_alloc(total);
    if (!mem)
        return -1;
    int32_t *za = (int32_t *)(mem + off[0]);
    int32_t *rowsum = (int32_t *)(mem + off[1]);
    int32_t *zb = (int32_t *)(mem + off[2]);
    int32_t *colcorr = (int32_t *)(mem + off[3]);
    float *mult = (float *)(mem + off[4]);
    int32_t *yzp = (int32_t *)(mem + off[5]);
    void *ap = mem + off[6];
    void *bp = mem + off[7];
    int32_t *colsum = (int32_t *)(mem + off[8]);

    for (int i = 0; i < M; i++)
        za[i] = (p->a_zp ? load_q(p->a_zp + i * p->a_zp_rs, p->a_signed) : 0) + a_shift;
    for (int j = 0; j < N; j++)
        zb[j] = (p->b_zp ? load_q(p->b_zp + j * p->b_zp_cs, p->b_signed) : 0) - b_shift;

    gk_qepi epi;
    memset(&epi, 0, sizeof epi);
    epi.kind = p->out_kind;
    epi.a_rowsum = rowsum;
    epi.a_zp = za;
    epi.b_zp = zb;
    epi.y = p->y;
    epi.ldy = p->ldy;
    epi.k = K;
    if (requant) {
        for (int i = 0; i < mult_rows; i++)
            for (int j = 0; j < mult_cols; j++)
                mult[i * mult_cols + j] = gk_qmultiplier(
                    p->a_scale[i * p->as_rs], p->b_scale[j * p->bs_cs],
                    p->y_scale[i * p->ys_rs + j * p->ys_cs]);
        for (int i = 0; i < yzp_rows; i++)
            for (int j = 0; j < yzp_cols; j++)
                yzp[i * yzp_cols + j] =
                    load_q(p->y_zp + i * p->yzp_rs + j * p->yzp_cs, p->out_kind == GK_QOUT_S8);
        epi.mult = mult;
        epi.mult_rs = mult_rows > 1 ? mult_cols : 0;
        epi.mult_cs = mult_cols > 1 ? 1 : 0;
        epi.y_zp = yzp;
        epi.yzp_rs = yzp_rows > 1 ? yzp_cols : 0;
        epi.yzp_cs = yzp_cols > 1 ? 1 : 0;
    }

    if (use_smallm) {
        for (int i = 0; i < M; i++) {
            uint32_t s = 0; /* wraps only past K = 2^24, exactly like the int32 result */
            const uint8_t *row = p->a + i * p->a_rs;
            for (int kk = 0; kk < K; kk++)
                s += (uint8_t)(row[kk * p->a_cs] ^ a_xor);
            rowsum[i] = (int32_t)s;
        }
        epi.b_colcorr = 0;
        kern->smallm(M, N, K, p->a, p->a_rs, p->a_cs, a_xor, p->b, p->b_rs, b_xor, &epi);
        gk_aligned_free(mem);
        return 0;
    }

    epi.b_colcorr = colcorr;
    if (kern->begin)
        kern->begin();
    for (size_t jc = 0; jc < (size_t)N; jc += nc) {
        const int ncur = (int)((size_t)N - jc < nc ? (size_t)N - jc : nc);
        kern->pack_b(K, ncur, p->b + (ptrdiff_t)jc * p->b_cs, p->b_rs, p->b_cs, b_xor, bp, colsum);
        for (int j = 0; j < ncur; j++)
            colcorr[jc + j] = (int32_t)((uint32_t)colsum[j] - (uint32_t)K * (uint32_t)zb[jc + j]);
        for (size_t ic = 0; ic < (size_t)M; ic += mc) {
            const int mcur = (int)((size_t)M - ic < mc ? (size_t)M - ic : mc);
            kern->pack_a(mcur, K, p->a + (ptrdiff_t)ic * p->a_rs, p->a_rs, p->a_cs, a_xor, ap,
                         rowsum + ic);
            for (int jr = 0; jr < ncur; jr += kern->nr) {
                const unsigned char *bpanel =
                    (const unsigned char *)bp + (size_t)jr * kp * kern->b_elem_bytes;
                const int nrv = ncur - jr < kern->nr ? ncur - jr : kern->nr;
                for (int ir = 0; ir < mcur; ir += kern->mr) {
                    const unsigned char *apanel =
                        (const unsigned char *)ap + (size_t)ir * kp * kern->a_elem_bytes;
                    const int mrv = mcur - ir < kern->mr ? mcur - ir : kern->mr;
                    kern->ukernel(mrv, nrv, (int)kp, apanel, bpanel, &epi, (int)ic + ir,
                                  (int)jc + jr);
                }
            }
        }
    }
    if (kern->end)
        kern->end();
    gk_aligned_free(mem);
    return 0;
}

static int run_k_chunked(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p)
{
    const int M = p->m, N = p->n, K = p->k, to_i32 = p->out_kind == GK_QOUT_I32;
    /* acc: the int32 total (the output itself for MatMulInteger); part: one chunk */
    const size_t mn = (size_t)M * (size_t)N;
    uint32_t *mem = (uint32_t *)gk_aligned_alloc((to_i32 ? 1 : 2) * mn * sizeof(uint32_t));
    if (!mem)
        return -1;
    uint32_t *part = mem, *acc = to_i32 ? (uint32_t *)p->y : mem + mn;
    const ptrdiff_t lda = to_i32 ? p->ldy : N;
    /* the loop leaves through the break with k0 > K - KCHUNK, so k0 + KCHUNK never
     * passes INT_MAX */
    for (int k0 = 0;; k0 += GK_QGEMM_KCHUNK) {
        gk_qgemm_problem q = *p;
        q.k = K - k0 < GK_QGEMM_KCHUNK ? K - k0 : GK_QGEMM_KCHUNK;
        q.a = p->a + (ptrdiff_t)k0 * p->a_cs;
        q.b = p->b + (ptrdiff_t)k0 * p->b_rs;
        q.out_kind = GK_QOUT_I32;
        q.y = k0 == 0 ? (void *)acc : (void *)part;
        q.ldy = k0 == 0 ? lda : N;
        if (gk_qgemm_run(kern, &q) != 0) {
            gk_aligned_free(mem);
            return -1;
        }
        if (k0 > 0)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++)
                    acc[i * lda + j] += part[(size_t)i * N + j]; /* wraps mod 2**32 */
        if (K - k0 <= GK_QGEMM_KCHUNK)
            break;
    }
    if (!to_i32) {
        /* the reference epilogue, one multiplier / output zero point at a time */
        float mult;
        int32_t yzp;
        gk_qepi e;
        memset(&e, 0, sizeof e);
        e.kind = p->out_kind;
        e.mult = &mult;
        e.y_zp = &yzp;
        e.y = p->y;
        e.ldy = p->ldy;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                mult = gk_qmultiplier(p->a_scale[i * p->as_rs], p->b_scale[j * p->bs_cs],
                                      p->y_scale[i * p->ys_rs + j * p->ys_cs]);
                yzp = load_q(p->y_zp + i * p->yzp_rs + j * p->yzp_cs, p->out_kind == GK_QOUT_S8);
                gk_qepi_store_y(&e, i, j, acc[(size_t)i * N + j]);
            }
    }
    gk_aligned_free(mem);
    return 0;
}
