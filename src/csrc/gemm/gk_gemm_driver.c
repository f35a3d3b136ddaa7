/* The Gemm driver: cache blocking, packing, micro-kernel calls, K-block merging and the
 * epilogue (gk_gemm_epilogue.c).  Loop order (BLIS): jc over N by NC, pc over K by KC
 * (B block packed once per (jc, pc)), ic over M by MC (A block packed), then jr/ir over
 * NR x MR register tiles.
 *
 * K blocks: the micro-kernel always overwrites a private stack tile; the driver merges
 * it into the partial sums of earlier K blocks.  Partial sums live in Y itself when Y's
 * element has the accumulator's size (float32, float64, all integers: Y's storage is the
 * accumulator type or its signed variant), otherwise (float16/bfloat16) in a float
 * workspace of M x min(N, NC).  The last K block finishes each tile straight from the
 * stack tile through the epilogue, so with K <= KC Y is written exactly once and nothing
 * else is touched.
 *
 * All state is in the per-call workspace: thread-safe.  One allocation per call. */
#include <stdlib.h>
#include <string.h>

#include "gk_gemm_internal.h"

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

/* tile[i*ld + j] += st[i*ldst + j] for the valid part, in the accumulator type. */
static void merge_add(int acc, void *tile, int ld, const char *st, ptrdiff_t ldst, int rows,
                      int cols)
{
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            ptrdiff_t t = (ptrdiff_t)i * ld + j, s = (ptrdiff_t)i * ldst + j;
            switch (acc) {
            case GK_ACC_F32: ((float *)tile)[t] += ((const float *)st)[s]; break;
            case GK_ACC_F64: ((double *)tile)[t] += ((const double *)st)[s]; break;
            case GK_ACC_U32: ((uint32_t *)tile)[t] += ((const uint32_t *)st)[s]; break;
            default: ((uint64_t *)tile)[t] += ((const uint64_t *)st)[s]; break;
            }
        }
    }
}

/* st[i*ldst + j] = tile[i*ld + j] for the valid part (raw copy of accumulator values). */
static void merge_store(size_t esz, const void *tile, int ld, char *st, ptrdiff_t ldst,
                        int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        memcpy(st + (ptrdiff_t)i * ldst * (ptrdiff_t)esz,
               (const char *)tile + (size_t)i * (size_t)ld * esz, (size_t)cols * esz);
}

int gk_gemm_run(const gk_gemm_kernel *kern, const gk_gemm_args *g)
{
    gk_gemm_epi epi;
    const ptrdiff_t M = g->m, N = g->n, K = g->k;
    const char *A = (const char *)g->a, *B = (const char *)g->b;
    union {
        float f32[GK_GEMM_MAX_TILE];
        double f64[GK_GEMM_MAX_TILE];
        uint32_t u32[GK_GEMM_MAX_TILE];
        uint64_t u64[GK_GEMM_MAX_TILE];
    } tile;
    size_t esz, a_bytes, b_bytes, ws_bytes = 0, total;
    ptrdiff_t mr, nr, MC, KC, NC, ld_st;
    int split_k, use_ws;
    char *raw, *ap, *bp, *ws, *st_base;

    if (kern == NULL || g->dtype < 0 || g->dtype >= GK_DT_COUNT || kern->dtype != g->dtype ||
        M < 0 || N < 0 || K < 0 || kern->mr * kern->nr > GK_GEMM_MAX_TILE)
        return GK_GEMM_EINVAL;
    if (M == 0 || N == 0)
        return GK_GEMM_OK;

    gk_gemm_epi_init(&epi, g);
    esz = acc_size(kern->acc);
    mr = kern->mr;
    nr = kern->nr;
    /* Blocks never exceed the problem (rounded to the tile), so small calls allocate
     * little.  KC is at least 1 so that K == 0 still runs one (empty) K block, whose zero
     * tiles carry beta*C through the epilogue. */
    MC = min_pd(kern->mc, round_up(M, mr));
    NC = min_pd(kern->nc, round_up(N, nr));
    KC = K == 0 ? 1 : min_pd(kern->kc, K);
    split_k = K > KC;
    use_ws = split_k && out_size(g->dtype) != esz;

    /* Fit in size_t: MC, NC, KC are bounded by the family's block sizes (small ints). */
    a_bytes = (size_t)MC * (size_t)KC * esz;
    b_bytes = (size_t)NC * (size_t)KC * esz;
    ld_st = use_ws ? NC : g->ldy;
    if (use_ws) {
        /* M x NC floats: the partial sums of one column stripe, all rows */
        if ((size_t)M > ((size_t)PTRDIFF_MAX - a_bytes - b_bytes - 256) / ((size_t)NC * esz))
            return GK_GEMM_ENOMEM;
        ws_bytes = (size_t)M * (size_t)NC * esz;
    }
    total = a_bytes + b_bytes + ws_bytes + 3 * 64;
    raw = (char *)malloc(total);
    if (raw == NULL)
        return GK_GEMM_ENOMEM;
    /* 64-byte aligned sub-buffers (cache lines; SIMD families may rely on it) */
    ap = raw + (64 - (uintptr_t)raw % 64) % 64;
    bp = ap + (a_bytes + 63) / 64 * 64;
    ws = bp + (b_bytes + 63) / 64 * 64;
    st_base = use_ws ? ws : (char *)g->y;

    for (ptrdiff_t jc = 0; jc < N; jc += NC) {
        const int nc = (int)min_pd(NC, N - jc);
        ptrdiff_t pc = 0;
        do {
            const int kc = (int)min_pd(KC, K - pc); /* 0 only when K == 0 */
            const int first = pc == 0, last = pc + kc >= K;
            if (kc > 0)
                kern->pack_b((int)nr, kc, nc, B + pc * g->b_rs + jc * g->b_cs, g->b_rs,
                             g->b_cs, bp);
            for (ptrdiff_t ic = 0; ic < M; ic += MC) {
                const int mc = (int)min_pd(MC, M - ic);
                if (kc > 0)
                    kern->pack_a((int)mr, mc, kc, A + ic * g->a_rs + pc * g->a_cs, g->a_rs,
                                 g->a_cs, ap);
                for (int jr = 0; jr < nc; jr += (int)nr) {
                    const int cols = (int)min_pd(nr, nc - jr);
                    for (int ir = 0; ir < mc; ir += (int)mr) {
                        const int rows = (int)min_pd(mr, mc - ir);
                        const ptrdiff_t m0 = ic + ir, n0 = jc + jr;
                        /* partial sums of (m0, n0): Y uses global columns, the
                         * workspace columns relative to the stripe */
                        char *st = st_base +
                                   (m0 * ld_st + (use_ws ? jr : n0)) * (ptrdiff_t)esz;
                        kern->ukernel(kc, ap + (size_t)ir * (size_t)kc * esz,
                                      bp + (size_t)jr * (size_t)kc * esz, &tile);
                        if (!first)
                            merge_add(kern->acc, &tile, (int)nr, st, ld_st, rows, cols);
                        if (last)
                            gk_gemm_epilogue(&epi, rows, cols, &tile, nr, m0, n0);
                        else
                            merge_store(esz, &tile, (int)nr, st, ld_st, rows, cols);
                    }
                }
            }
            pc += kc;
        } while (pc < K);
    }
    free(raw);
    return GK_GEMM_OK;
}

int gk_gemm(const gk_gemm_args *args)
{
    return gk_gemm_run(gk_gemm_kernel_for(args->dtype), args);
}
