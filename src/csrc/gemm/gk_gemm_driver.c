/* The Gemm driver: cache blocking, packing, micro-kernel calls and the epilogue.
 * Loop order (BLIS): jc over N by NC, pc over K by KC (B block packed once per (jc, pc)),
 * ic over M by MC (A block packed), then jr/ir over NR x MR register tiles.
 *
 * K blocks: the micro-kernel accumulates into the tile's running sums itself (first K
 * block: overwrite; later blocks: add), so no K block pays a merge and each output's sum
 * runs in increasing k from +0 to the end.  The running sums live in Y when Y's element
 * is the accumulator type (float32, float64, all integers), otherwise (float16/bfloat16,
 * QLinearMatMul's 8-bit outputs) in a float workspace: one mr x nr tile when K fits one
 * block (the epilogue follows each kernel call at once), else the M x min(N, NC) sums of
 * one column stripe.  After a tile's last K block the epilogue finishes it (alpha, beta*C,
 * output cast; in place in Y for accumulator-typed outputs).
 *
 * All state is in the per-call workspace: thread-safe.  One allocation per call. */
#include <stdlib.h>
#include <string.h>

#include "gemmkit/gk_gemm.h"
#include "core/gk_alloc.h"

static size_t acc_size(int acc) { return (acc == GK_ACC_F32 || acc == GK_ACC_U32) ? 4 : 8; }

static size_t out_size(int dtype)
{
    switch (dtype) {
    case GK_DT_F16:
    case GK_DT_BF16:
        return 2;
    case GK_DT_F32:
    case GK_DT_I32:
    case GK_DT_U32:
        return 4;
    default:
        return 8;
    }
}

static ptrdiff_t min_pd(ptrdiff_t a, ptrdiff_t b) { return a < b ? a : b; }
static ptrdiff_t round_up(ptrdiff_t x, ptrdiff_t r) { return (x + r - 1) / r * r; }

int gk_gemm_drive(const gk_gemm_kernel *kern, const gk_gemm_plan *g)
{
    const ptrdiff_t M = g->m, N = g->n, K = g->k;
    size_t esz, a_bytes, b_bytes, ws_bytes, total;
    ptrdiff_t mr, nr, MC, KC, NC;
    int split_k;
    char *raw, *ap, *bp, *ws;

    if (kern == NULL || M < 0 || N < 0 || K < 0 || kern->mr < 1 || kern->nr < 1)
        return GK_GEMM_EINVAL;
    if (M == 0 || N == 0)
        return GK_GEMM_OK;

    esz = acc_size(kern->acc);
    mr = kern->mr;
    nr = kern->nr;
    /* Blocks never exceed the problem (rounded to the tile), so small calls allocate
     * little.  KC is at least 1 so that K == 0 still runs one (empty) K block: the
     * kernel's first-block flag zeroes the tile and the epilogue carries beta*C. */
    MC = min_pd(kern->mc, round_up(M, mr));
    NC = min_pd(kern->nc, round_up(N, nr));
    KC = K == 0 ? 1 : min_pd(kern->kc, K);
    split_k = K > KC;

    /* Fit in size_t: MC, NC, KC, mr, nr are bounded by the family's block sizes (small
     * ints). */
    a_bytes = (size_t)MC * (size_t)KC * esz;
    b_bytes = (size_t)NC * (size_t)KC * esz;
    ws_bytes = 0;
    if (g->acc_y == NULL) {
        if (!split_k) {
            ws_bytes = (size_t)mr * (size_t)nr * esz;
        } else {
            /* M x NC sums: one column stripe, all rows */
            if ((size_t)M > ((size_t)PTRDIFF_MAX - a_bytes - b_bytes - 256) / ((size_t)NC * esz))
                return GK_GEMM_ENOMEM;
            ws_bytes = (size_t)M * (size_t)NC * esz;
        }
    }
    total = gk_round64(a_bytes) + gk_round64(b_bytes) + gk_round64(ws_bytes);
    raw = (char *)gk_aligned_alloc(total);
    if (raw == NULL)
        return GK_GEMM_ENOMEM;
    /* 64-byte aligned sub-buffers (cache lines; SIMD families may rely on it) */
    ap = raw;
    bp = ap + gk_round64(a_bytes);
    ws = bp + gk_round64(b_bytes);

    for (ptrdiff_t jc = 0; jc < N; jc += NC) {
        const int nc = (int)min_pd(NC, N - jc);
        ptrdiff_t pc = 0;
        do {
            const int kc = (int)min_pd(KC, K - pc); /* 0 only when K == 0 */
            const int first = pc == 0, last = pc + kc >= K;
            if (kc > 0)
                g->pack_b(&g->b, pc, jc, kc, nc, (int)nr, bp);
            for (ptrdiff_t ic = 0; ic < M; ic += MC) {
                const int mc = (int)min_pd(MC, M - ic);
                if (kc > 0)
                    g->pack_a(&g->a, ic, pc, mc, kc, (int)mr, ap);
                for (int jr = 0; jr < nc; jr += (int)nr) {
                    const int cols = (int)min_pd(nr, nc - jr);
                    for (int ir = 0; ir < mc; ir += (int)mr) {
                        const int rows = (int)min_pd(mr, mc - ir);
                        const ptrdiff_t m0 = ic + ir, n0 = jc + jr;
                        /* the tile's running sums: in Y (global columns), in the
                         * stripe workspace (columns relative to the stripe), or in the
                         * one-tile workspace */
                        char *c;
                        ptrdiff_t ldc;
                        if (g->acc_y != NULL) {
                            ldc = g->ld_acc_y;
                            c = (char *)g->acc_y + (m0 * ldc + n0) * (ptrdiff_t)esz;
                        } else if (split_k) {
                            ldc = NC;
                            c = ws + (m0 * ldc + jr) * (ptrdiff_t)esz;
                        } else {
                            ldc = nr;
                            c = ws;
                        }
                        kern->ukernel(kc, ap + (size_t)ir * (size_t)kc * esz,
                                      bp + (size_t)jr * (size_t)kc * esz, c, ldc, rows, cols,
                                      first);
                        if (last && g->epilogue != NULL)
                            g->epilogue(g->epi_ctx, m0, n0, rows, cols, c, ldc);
                    }
                }
            }
            pc += kc;
        } while (pc < K);
    }
    gk_aligned_free(raw);
    return GK_GEMM_OK;
}

int gk_gemm_run(const gk_gemm_kernel *kern, const gk_gemm_args *g)
{
    gk_gemm_epi epi;
    gk_gemm_plan plan;

    if (kern == NULL || g->dtype < 0 || g->dtype >= GK_DT_COUNT || kern->dtype != g->dtype)
        return GK_GEMM_EINVAL;
    gk_gemm_epi_init(&epi, g);
    plan.m = g->m;
    plan.n = g->n;
    plan.k = g->k;
    plan.a.p = (const char *)g->a;
    plan.a.rs = g->a_rs;
    plan.a.cs = g->a_cs;
    plan.a.ctx = NULL;
    plan.b.p = (const char *)g->b;
    plan.b.rs = g->b_rs;
    plan.b.cs = g->b_cs;
    plan.b.ctx = NULL;
    plan.pack_a = kern->pack_a;
    plan.pack_b = kern->pack_b;
    plan.epilogue = gk_gemm_epi_is_identity(&epi, g->dtype) ? NULL : kern->epilogue;
    plan.epi_ctx = &epi;
    /* Y's storage is the accumulator type (or its signed variant) exactly when the sizes
     * agree: float32/float64/int32/uint32/int64/uint64 */
    if (out_size(g->dtype) == acc_size(kern->acc)) {
        plan.acc_y = g->y;
        plan.ld_acc_y = g->ldy;
    } else {
        plan.acc_y = NULL;
        plan.ld_acc_y = 0;
    }
    return gk_gemm_drive(kern, &plan);
}

int gk_gemm(const gk_gemm_args *args)
{
    return gk_gemm_run(gk_gemm_kernel_for(args->dtype), args);
}
