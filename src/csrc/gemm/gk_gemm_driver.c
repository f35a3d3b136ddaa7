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
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_gemm.h"
#include "gemmkit/gk_parallel.h"
#include "core/gk_alloc.h"
#include "core/gk_compiler.h"

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

/* Bytes a packed element occupies (gk_gemm_kernel.pack_esz; 0 there: the accumulator's). */
static size_t packed_size(const gk_gemm_kernel *k)
{
    return k->pack_esz > 0 ? (size_t)k->pack_esz : acc_size(k->acc);
}

static ptrdiff_t min_pd(ptrdiff_t a, ptrdiff_t b) { return a < b ? a : b; }
static ptrdiff_t round_up(ptrdiff_t x, ptrdiff_t r) { return (x + r - 1) / r * r; }
static size_t clamp_sz(size_t x, size_t lo, size_t hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* Runtime cache blocks (contract in gk_gemm.h).  The loops below keep one B micro-panel
 * (kc x nr) in L1 while the ir loop streams the A micro-panels (kc x mr) of the packed A
 * block through it from L2, so:
 *   KC: the B micro-panel up to twice L1, at most 512 deep, a multiple of 16 in
 *       [64, 512]: a deeper block means fewer passes over the tile's sums, and the B
 *       micro-panel streams from L2 well enough; measured on Zen 4 at 1024^3 against
 *       KC = L1 / panel row (256 for 14x32 float32): float32 avx512 0.98x -> 1.07x
 *       NumPy, float64 avx512 0.97x -> 1.00x, the avx2 families (already 512) best at
 *       512, and 768/1024 no better anywhere.  Where L2 is GK_GEMM_BIG_L2 or more
 *       (Sapphire Rapids: 2 MB, 48 KB L1, two full-width FMA pipes, so the tile's sums
 *       cost twice as much of a block's time), up to four times L1 and 1024 deep: one
 *       thread, in one process against 512, float32 avx512 1024^3 1.06x, 2048^3 1.11x,
 *       avx2 1.05x, float16 1.07x, float64 1.01-1.02x, 64^3 to 256^3 and M = 16 / 128
 *       with K = N = 4096 unchanged or faster;
 *   MC: the packed A block (MC x KC) in half of L2, a multiple of mr, at most 4096;
 *   NC: the packed B block (KC x NC) in a quarter of the LLC (shared by the cores), a
 *       multiple of nr, at most 8192.
 * Sizes in bytes count a packed element as pack_esz bytes (2 for bfloat16 pairs) when the
 * family sets it, else as its accumulator.
 * A size the CPU does not report (0) keeps the family's fallback for that block. */
#define GK_GEMM_BIG_L2 ((size_t)2 << 20)
void gk_gemm_blocking(const gk_gemm_kernel *k, int *mc, int *kc, int *nc)
{
    const gk_cpu_cache_sizes *cs;
    size_t esz, KC, MC, NC;
    *mc = k->mc;
    *kc = k->kc;
    *nc = k->nc;
    if (!k->cache_blocks)
        return;
    cs = gk_cpu_caches();
    esz = packed_size(k);
    KC = (size_t)k->kc;
    if (cs->l1d && k->cache_blocks != 2) { /* 2: the family's own kc (gk_gemm.h) */
        const int big_l2 = cs->l2 >= GK_GEMM_BIG_L2;
        KC = clamp_sz((big_l2 ? 4 : 2) * cs->l1d / (esz * (size_t)k->nr) / 16 * 16, 64,
                      big_l2 ? 1024 : 512);
    }
    *kc = (int)KC;
    if (cs->l2) {
        MC = clamp_sz(cs->l2 / 2 / (KC * esz), (size_t)k->mr, 4096);
        *mc = (int)(MC / (size_t)k->mr * (size_t)k->mr);
    }
    if (cs->l3) {
        NC = clamp_sz(cs->l3 / 4 / (KC * esz), (size_t)k->nr, 8192);
        *nc = (int)(NC / (size_t)k->nr * (size_t)k->nr);
    }
}

/* The depth of the blocked path's K blocks for a product of depth K: the family's KC,
 * at most K, at least 1 (K == 0 still runs one empty block: the kernel's first-block
 * flag zeroes the tile and the epilogue carries beta*C).  It depends on K and the family
 * only, so every part of a split call (every thread count) and a whole-B packing
 * (gk_gemm_pack_b_whole) block K alike. */
static ptrdiff_t k_block(ptrdiff_t kc_family, ptrdiff_t K)
{
    return K == 0 ? 1 : min_pd(kc_family, K);
}

/* The rows [m0, m1) and columns [n0, n1) of the plan's output: one thread's part (the
 * whole output on one thread).  Every index the packers, the epilogue and Y see is the
 * plan's own; only the stripe workspace is indexed from (m0, n0). */
typedef struct gk_range {
    ptrdiff_t m0, m1, n0, n1;
} gk_range;

/* One column tile of a K block in sub-blocks (gk_gemm_kernel.kc_sub): for each sub-block,
 * every row tile of the A block, so that the sub-block's part of the B micro-panel (bp)
 * stays in L1 while the strip's running sums wait in L2.  Each output's sum still runs in
 * increasing k.  ws / ldw: where Y is not the accumulator, the sums of row ic of the
 * strip (in the stripe workspace, or the strip workspace), row stride ldw elements. */
static void drive_strip(const gk_gemm_kernel *kern, const gk_gemm_plan *g,
                        int kc, int ksub, size_t pesz, int first, int last, ptrdiff_t ic,
                        int mc, ptrdiff_t n0, int cols, const char *ap, const char *bp,
                        char *ws, ptrdiff_t ldw)
{
    const size_t esz = acc_size(kern->acc);
    const int mr = kern->mr, nr = kern->nr, nsub = kc / ksub;
    for (int s = 0; s < nsub; s++) {
        const int ks = s * ksub, kcs = s == nsub - 1 ? kc - ks : ksub;
        for (int ir = 0; ir < mc; ir += mr) {
            const int rows = (int)min_pd(mr, mc - ir);
            const ptrdiff_t m0 = ic + ir;
            char *c;
            ptrdiff_t ldc;
            if (g->acc_y != NULL) {
                ldc = g->ld_acc_y;
                c = (char *)g->acc_y + (m0 * ldc + n0) * (ptrdiff_t)esz;
            } else {
                ldc = ldw;
                c = ws + ir * ldw * (ptrdiff_t)esz;
            }
            kern->ukernel(kcs, ap + (size_t)ir * (size_t)kc * esz + (size_t)ks * (size_t)mr * pesz,
                          bp + (size_t)ks * (size_t)nr * pesz, c, ldc, rows, cols,
                          first && s == 0);
            if (last && s == nsub - 1 && g->epilogue != NULL)
                g->epilogue(g->epi_ctx, m0, n0, rows, cols, c, ldc);
        }
    }
}

static int drive_range(const gk_gemm_kernel *kern, const gk_gemm_plan *g, const gk_range *r)
{
    const ptrdiff_t M = r->m1 - r->m0, N = r->n1 - r->n0, K = g->k;
    size_t esz, a_bytes, b_bytes, ws_bytes, total;
    ptrdiff_t mr, nr, MC, KC, NC;
    int split_k, ksub, strip;
    size_t pesz;
    char *raw, *ap, *bp, *ws;

    if (M <= 0 || N <= 0)
        return GK_GEMM_OK;
    esz = acc_size(kern->acc);
    mr = kern->mr;
    nr = kern->nr;
    {
        int mc0, kc0, nc0;
        gk_gemm_blocking(kern, &mc0, &kc0, &nc0);
        MC = mc0;
        KC = kc0;
        NC = nc0;
    }
    /* Blocks never exceed the problem (rounded to the tile), so small calls allocate
     * little. */
    MC = min_pd(MC, round_up(M, mr));
    NC = min_pd(NC, round_up(N, nr));
    KC = k_block(KC, K);
    if (g->kc_thin > 0 && g->b_packed == NULL) { /* see gk_gemm_plan.kc_thin */
        MC = round_up(M, mr);
        NC = round_up(N, nr);
        KC = k_block(g->kc_thin, K);
    }
    split_k = K > KC;
    /* sub-blocks of a K block (gk_gemm_kernel.kc_sub): the last one takes the rest,
     * kc_sub to 2 kc_sub - 1 deep */
    ksub = kern->kc_sub > 0 && KC >= 2 * (ptrdiff_t)kern->kc_sub ? kern->kc_sub : 0;
    pesz = packed_size(kern);

    /* Fit in size_t: MC, NC, KC, mr, nr are bounded by the family's block sizes (small
     * ints). */
    a_bytes = (size_t)MC * (size_t)KC * esz;
    b_bytes = g->b_packed != NULL ? 0 : (size_t)NC * (size_t)KC * esz;
    ws_bytes = 0;
    if (g->acc_y == NULL) {
        if (!split_k) {
            /* one tile, or with sub-blocks the tiles of one column strip */
            ws_bytes = (size_t)(ksub ? MC : mr) * (size_t)nr * esz;
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
    if (kern->begin != NULL)
        kern->begin();
    /* 1..GK_GEMM_STRIP_ROWS rows (in practice a pre-packed B', gemmkit.pack_b: other
     * thin products take the in-place or run_thin_bt paths): the family's ukernel_strip,
     * wide, over each block's full column tiles.  M = 1, K = N = 1024, float32, Zen 5:
     * 51 -> 38 us (the per-call path without the packing: 43-46 us). */
    strip = kern->ukernel_strip != NULL && kern->ukernel_ldb != NULL && g->acc_y != NULL &&
            !ksub && pesz == esz;

    for (ptrdiff_t jc = r->n0; jc < r->n1; jc += NC) {
        const int nc = (int)min_pd(NC, r->n1 - jc);
        ptrdiff_t pc = 0;
        do {
            const int kc = (int)min_pd(KC, K - pc); /* 0 only when K == 0 */
            const int first = pc == 0, last = pc + kc >= K;
            if (g->b_packed != NULL) /* block pc of the whole packing, panel jc on */
                bp = (char *)g->b_packed +
                     (round_up(g->n, nr) * pc + jc * (ptrdiff_t)kc) * (ptrdiff_t)esz;
            else if (kc > 0)
                g->pack_b(&g->b, pc, jc, kc, nc, (int)nr, bp);
            for (ptrdiff_t ic = r->m0; ic < r->m1; ic += MC) {
                const int mc = (int)min_pd(MC, r->m1 - ic);
                int jr0 = 0;
                if (kc > 0)
                    g->pack_a(&g->a, ic, pc, mc, kc, (int)mr, ap);
                if (strip && mc <= GK_GEMM_STRIP_ROWS && mc <= mr && nc >= nr) {
                    const int nt = nc / (int)nr;
                    char *c = (char *)g->acc_y + (ic * g->ld_acc_y + jc) * (ptrdiff_t)esz;
                    kern->ukernel_strip(kc, ap, bp, nr * (ptrdiff_t)esz,
                                        (ptrdiff_t)kc * nr * (ptrdiff_t)esz, c, g->ld_acc_y, mc,
                                        nt, first, GK_GEMM_STRIP_PACKED);
                    if (last && g->epilogue != NULL)
                        g->epilogue(g->epi_ctx, ic, jc, mc, nt * (int)nr, c, g->ld_acc_y);
                    jr0 = nt * (int)nr;
                }
                for (int jr = jr0; jr < nc; jr += (int)nr) {
                    const int cols = (int)min_pd(nr, nc - jr);
                    if (ksub && kc >= 2 * ksub) {
                        drive_strip(kern, g, kc, ksub, pesz, first, last, ic, mc, jc + jr,
                                    cols, ap, bp + (size_t)jr * (size_t)kc * esz,
                                    split_k ? ws + ((ic - r->m0) * NC + jr) * (ptrdiff_t)esz
                                            : ws,
                                    split_k ? NC : nr);
                        continue;
                    }
                    for (int ir = 0; ir < mc; ir += (int)mr) {
                        const int rows = (int)min_pd(mr, mc - ir);
                        const ptrdiff_t m0 = ic + ir, n0 = jc + jr;
                        /* the tile's running sums: in Y (global columns), in the
                         * stripe workspace (rows and columns relative to the part and
                         * stripe), or in the one-tile workspace */
                        char *c;
                        ptrdiff_t ldc;
                        if (g->acc_y != NULL) {
                            ldc = g->ld_acc_y;
                            c = (char *)g->acc_y + (m0 * ldc + n0) * (ptrdiff_t)esz;
                        } else if (split_k) {
                            ldc = NC;
                            c = ws + ((m0 - r->m0) * ldc + jr) * (ptrdiff_t)esz;
                        } else {
                            ldc = nr;
                            c = ws;
                        }
                        /* the next tile's sums (below this one, same columns) are
                         * read or written right after this kernel: start their lines
                         * now (Y rows are far apart, a stream the hardware does not
                         * follow) */
                        if (ir + mr < mc && (g->acc_y != NULL || split_k)) {
                            const int nrows = (int)min_pd(mr, mc - ir - mr);
                            const char *cn = c + mr * ldc * (ptrdiff_t)esz;
                            for (int rr = 0; rr < nrows; rr++)
                                for (ptrdiff_t o = 0; o < cols * (ptrdiff_t)esz; o += 64)
                                    GK_PREFETCH_W(cn + rr * ldc * (ptrdiff_t)esz + o);
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
    if (kern->end != NULL)
        kern->end();
    gk_aligned_free(raw);
    return GK_GEMM_OK;
}

/* B' bytes above which the thin paths read B' as streaming from memory (the in-place
 * strip's wide steps, gk_gemm_ukernel_strip_fn; run_thin_bt's K block, gk_gemm_kernel.
 * kc_thin_t); 0: the last-level cache's size (32 MB where unknown).  All of B' counts,
 * not a thread's columns: the threads' parts share the cache. */
static volatile size_t b_memory_bytes = 0;

size_t gk_gemm_set_memory_bytes(size_t bytes)
{
    const size_t old = b_memory_bytes;
    b_memory_bytes = bytes;
    return old;
}

static int b_from_memory(ptrdiff_t k, ptrdiff_t n, ptrdiff_t esz)
{
    size_t lim = b_memory_bytes;
    if (lim == 0)
        lim = gk_cpu_llc_bytes();
    return (double)k * (double)n * (double)esz > (double)lim;
}

/* B' read in place (gk_gemm_kernel.ukernel_ldb): for small calls (packing B would cost
 * about what the product costs) and for thin A (few rows: each B element is used by so
 * few rows that packing it, a read and a write, costs more than reading it in place once
 * per row panel; at M = 32, K = N = 4096 float32, 6 panels of 6 rows (avx2) in place
 * measured 1.4x faster than packing).  Only full-width column tiles read B' (every
 * element a tile reads is B's); per K block, the column tail is packed into one panel
 * and A into its row panels (M is small here).  Loops: K blocks of the family's KC (the
 * B tile of one block stays in L1 while every row panel uses it), then column tiles,
 * then row panels; each tile's sums continue in Y from block to block in increasing k,
 * exactly the blocked path's sums.  The epilogue finishes a tile after its last K block.
 * Block depth: the family's KC for small calls (B is in cache); for thin A, where B
 * streams from memory, GK_GEMM_THIN_KC rows (one row panel) or twice that (more panels:
 * more work per B row read): the tiles of one K block read that many B' rows side by
 * side, each row front to back, so the few streams stay prefetchable and within the TLB
 * (a KC-row block of B' in place touches KC pages at once: measured 3-5x slower at M =
 * 1, K = N = 4096; at M = 16, 16 rows measured 1.1-1.25x faster than 8).  At most
 * GK_GEMM_STRIP_ROWS rows with a family's ukernel_strip: the full tiles as one strip per
 * K block (the same bits as tile by tile; see gk_gemm_ukernel_strip_fn).
 * Needs K > 0 and Y in the accumulator type, or (a float16 / bfloat16 family's
 * ukernel_strip_h, 1..GK_GEMM_STRIP_ROWS rows, B' rows contiguous 16-bit codes) a 16-bit
 * Y: the sums then run in a float32 workspace of the part's M x N, and the epilogue
 * writes Y from it after the last K block. */
static int run_inplace(const gk_gemm_kernel *kern, const gk_gemm_plan *g, const gk_range *r,
                       int kc_max, int prefetch_b)
{
    const ptrdiff_t M = r->m1 - r->m0, N = r->n1 - r->n0, K = g->k;
    const ptrdiff_t esz = (ptrdiff_t)acc_size(kern->acc);
    const int mr = kern->mr, nr = kern->nr;
    const ptrdiff_t ntail = N % nr, nfull = r->n1 - ntail, panels = (M + mr - 1) / mr;
    const ptrdiff_t KC = min_pd(kc_max, K);
    /* a 16-bit Y: B' is 16-bit codes read by ukernel_strip_h, the sums wait in ws */
    const int half = g->acc_y == NULL;
    const gk_gemm_ukernel_strip_fn strip_fn = half ? kern->ukernel_strip_h : kern->ukernel_strip;
    const ptrdiff_t bsz = half ? 2 : esz; /* B' element bytes */
    /* 1..GK_GEMM_STRIP_ROWS rows: the full tiles [n0, nfull) in one strip call per K
     * block */
    const int strip = strip_fn != NULL && M <= GK_GEMM_STRIP_ROWS && M <= mr &&
                      nfull > r->n0 && nfull - r->n0 <= INT_MAX;
    /* a 16-bit B' streams from half the last-level cache on (its strip prefetches then:
     * 32 MB against a 32 MB LLC measured as from memory, the data beside it evicting it) */
    const int wide = strip && b_from_memory(half ? 2 * K : K, g->n, bsz)
                         ? GK_GEMM_STRIP_FROM_MEMORY
                         : 0;
    /* panels <= M (small here: M*N*K or M bounded by the callers), KC <= 1024 */
    const size_t a_bytes = (size_t)panels * (size_t)mr * (size_t)KC * (size_t)esz;
    const size_t t_bytes = ntail ? (size_t)nr * (size_t)KC * (size_t)esz : 0;
    const size_t w_bytes = half ? (size_t)M * (size_t)N * (size_t)esz : 0;
    char *raw, *ap, *bt, *y;
    ptrdiff_t ldy, ym0, yn0; /* output (i, j)'s sum at y + ((i - ym0) ldy + j - yn0) esz */
    if (M <= 0 || N <= 0)
        return GK_GEMM_OK;
    /* run_plan sends a 16-bit Y only with ukernel_strip_h and M <= GK_GEMM_STRIP_ROWS: every
     * full tile goes through the strip (a part narrower than a tile has none) */
    if (half && (strip_fn == NULL || M > GK_GEMM_STRIP_ROWS || (!strip && nfull > r->n0)))
        return GK_GEMM_EINVAL;
    raw = (char *)gk_aligned_alloc(gk_round64(a_bytes) + gk_round64(t_bytes) + w_bytes);
    if (raw == NULL)
        return GK_GEMM_ENOMEM;
    ap = raw;
    bt = raw + gk_round64(a_bytes);
    if (half) {
        y = bt + gk_round64(t_bytes);
        ldy = N;
        ym0 = r->m0;
        yn0 = r->n0;
    } else {
        y = (char *)g->acc_y;
        ldy = g->ld_acc_y;
        ym0 = 0;
        yn0 = 0;
    }
    for (ptrdiff_t pc = 0; pc < K; pc += KC) {
        const int kc = (int)min_pd(KC, K - pc), first = pc == 0, last = pc + kc >= K;
        g->pack_a(&g->a, r->m0, pc, (int)M, kc, mr, ap);
        if (ntail)
            g->pack_b(&g->b, pc, nfull, kc, (int)ntail, nr, bt);
        ptrdiff_t j0 = r->n0;
        if (strip) {
            char *c = y + ((r->m0 - ym0) * ldy + r->n0 - yn0) * esz;
            strip_fn(kc, ap, g->b.p + pc * g->b.rs + r->n0 * g->b.cs, g->b.rs,
                     (ptrdiff_t)nr * bsz, c, ldy, (int)M, (int)((nfull - r->n0) / nr), first,
                     wide);
            if (last && g->epilogue != NULL)
                g->epilogue(g->epi_ctx, r->m0, r->n0, (int)M, (int)(nfull - r->n0), c, ldy);
            j0 = nfull;
        }
        for (ptrdiff_t jr = j0; jr < r->n1; jr += nr) {
            const int cols = (int)min_pd(nr, r->n1 - jr);
            /* the tile's B: B' itself, or the packed tail panel (row stride nr; the only
             * one of a 16-bit B', whose full tiles all went through the strip) */
            const char *bsrc = jr < nfull ? g->b.p + pc * g->b.rs + jr * g->b.cs
                                          : bt;
            const ptrdiff_t ldb = jr < nfull ? g->b.rs : nr * esz;
            /* B streaming from memory under several row panels: start the rows of the
             * tile two ahead while this one computes (measured at M = 16, K = N = 4096:
             * float32 1.0x -> 1.2x NumPy, float64 0.67x -> 0.88x; with one panel the
             * hardware prefetchers do better alone) */
            if (prefetch_b && jr + 3 * (ptrdiff_t)nr <= nfull)
                for (int k = 0; k < kc; k++)
                    for (ptrdiff_t o = 0; o < nr * esz; o += 64)
                        GK_PREFETCH_R(bsrc + k * ldb + 2 * nr * esz + o);
            for (ptrdiff_t p = 0; p < panels; p++) {
                const ptrdiff_t ir = r->m0 + p * mr;
                const int rows = (int)min_pd(mr, r->m1 - ir);
                char *c = y + ((ir - ym0) * ldy + jr - yn0) * esz;
                if (half) /* the packed tail panel: ukernel_ldb's row stride */
                    kern->ukernel(kc, ap + p * mr * kc * esz, bsrc, c, ldy, rows, cols, first);
                else
                    kern->ukernel_ldb(kc, ap + p * mr * kc * esz, bsrc, ldb, c, ldy,
                                      rows, cols, first);
                if (last && g->epilogue != NULL)
                    g->epilogue(g->epi_ctx, ir, jr, rows, cols, c, ldy);
            }
        }
    }
    gk_aligned_free(raw);
    return GK_GEMM_OK;
}

/* Thin A with B' columns contiguous along k (transB: a weight matrix W stored N x K,
 * B' = W.T), which no in-place kernel reads.  Packing all of B' (a transposing copy of
 * the whole weight, written out and read back) cost 3-4x the product at M = 1.  Here
 * each micro-panel of B' (KT deep: GK_GEMM_THIN_T_KC, or the family's kc_thin_t where B'
 * streams from memory; nr columns) is packed by the family's own packer into one buffer
 * that stays in L1 and is used at once by every row panel of A: B' is read once, front
 * to back along each of the tile's nr columns, and never written out.  A is packed in
 * blocks of kb depth (all of K when it fits half of L2).  Loops: A blocks, column tiles,
 * K blocks of the tile, row panels.  K blocks: KT deep from the A block's start, the
 * last one taking the rest (KT to twice that minus one; all of a shallower A block), so
 * a block shallower than a family's shortest layout is only ever a whole A block, packed
 * alike on both sides; a block starting ks into the A block reads its A panels
 * ks*mr*pack_esz bytes in (ks a multiple of KT, a multiple of 32, where every family's
 * layout puts that depth).  Each output's sum runs in increasing k, continuing in Y (or
 * in the float workspace: one tile's sums, or every column's when A takes several
 * blocks) from block to block: the blocked path's sums bit for bit.  Grouped tiles: for
 * 1..GK_GEMM_STRIP_ROWS rows, a family with thin_t_tiles and a B' within half the
 * last-level cache, thin_t_tiles full tiles at a time are packed together (panels one
 * after another) and run as one strip (ukernel_strip on packed panels: the same bits),
 * so that several tiles' FMA chains are in flight instead of one tile's two; past half
 * the LLC the group's thin_t_tiles * nr concurrent lines of W read from memory measured
 * 0.4-0.8x. */
/* Where run_thin_bt keeps the running sums of the tile (or group of tiles) at row ir, in
 * row panel p of the part r, column jr: in Y, or in the float workspace ws (ldw columns:
 * one group's when A is one block, else every column's of the part). */
static char *thin_bt_sums(const gk_gemm_plan *g, const gk_range *r, char *ws, ptrdiff_t ldw,
                          int one_block, ptrdiff_t p, int mr, ptrdiff_t ir, ptrdiff_t jr,
                          ptrdiff_t esz, ptrdiff_t *ldc)
{
    if (g->acc_y != NULL) {
        *ldc = g->ld_acc_y;
        return (char *)g->acc_y + (ir * g->ld_acc_y + jr) * esz;
    }
    *ldc = ldw;
    return ws + (p * mr * ldw + (one_block ? 0 : jr - r->n0)) * esz;
}

static int run_thin_bt(const gk_gemm_kernel *kern, const gk_gemm_plan *g, const gk_range *r)
{
    const ptrdiff_t M = r->m1 - r->m0, N = r->n1 - r->n0, K = g->k;
    const ptrdiff_t esz = (ptrdiff_t)acc_size(kern->acc), pesz = (ptrdiff_t)packed_size(kern);
    const int mr = kern->mr, nr = kern->nr;
    const ptrdiff_t panels = (M + mr - 1) / mr;
    const ptrdiff_t KT = kern->kc_thin_t > 0 && b_from_memory(K, g->n, esz)
                             ? kern->kc_thin_t
                             : GK_GEMM_THIN_T_KC;
    const size_t l2 = gk_cpu_caches()->l2 ? gk_cpu_caches()->l2 : (size_t)1 << 20;
    /* tiles per group (1: tile by tile); W's elements are b.rs bytes */
    const int TT = kern->thin_t_tiles > 1 && kern->ukernel_strip != NULL &&
                           M <= GK_GEMM_STRIP_ROWS && M <= mr &&
                           !b_from_memory(2 * K, g->n, g->b.rs)
                       ? kern->thin_t_tiles
                       : 1;
    /* A's block: about half of L2 in whole K blocks, all of K when it fits */
    ptrdiff_t KB = (ptrdiff_t)(l2 / 2 / ((size_t)panels * (size_t)mr * (size_t)esz)) / KT * KT;
    ptrdiff_t ldw = 0;
    size_t a_bytes, b_bytes, ws_bytes = 0;
    char *raw, *ap, *bt, *ws = NULL;
    if (M <= 0 || N <= 0)
        return GK_GEMM_OK;
    KB = KB < KT ? KT : KB;
    if (K < KB + KT) /* one A block when K barely exceeds it */
        KB = K;
    /* panels <= GK_GEMM_THIN_MAX_PANELS, mr and KB bounded: no overflow */
    a_bytes = (size_t)panels * (size_t)mr * (size_t)KB * (size_t)esz;
    b_bytes = (size_t)(2 * KT) * (size_t)TT * (size_t)nr * (size_t)esz;
    if (g->acc_y == NULL) {
        /* one group's sums when A is one block, else every column's of the part */
        ldw = KB >= K ? (ptrdiff_t)TT * nr : round_up(N, nr);
        if ((size_t)ldw > ((size_t)PTRDIFF_MAX / 2 - a_bytes - b_bytes) /
                              ((size_t)panels * (size_t)mr * (size_t)esz))
            return GK_GEMM_ENOMEM;
        ws_bytes = (size_t)panels * (size_t)mr * (size_t)ldw * (size_t)esz;
    }
    raw = (char *)gk_aligned_alloc(gk_round64(a_bytes) + gk_round64(b_bytes) +
                                   gk_round64(ws_bytes));
    if (raw == NULL)
        return GK_GEMM_ENOMEM;
    ap = raw;
    bt = ap + gk_round64(a_bytes);
    if (ws_bytes)
        ws = bt + gk_round64(b_bytes);
    if (kern->begin != NULL)
        kern->begin();
    for (ptrdiff_t kb0 = 0; kb0 < K; kb0 += KB) {
        const ptrdiff_t kb = min_pd(KB, K - kb0), kend = kb0 + kb;
        g->pack_a(&g->a, r->m0, kb0, (int)M, (int)kb, mr, ap);
        for (ptrdiff_t jr = r->n0, step; jr < r->n1; jr += step) {
            /* nt > 0: a group of nt full tiles (TT > 1 only: then M is one row panel) */
            const int nt = TT > 1 ? (int)min_pd(TT, (r->n1 - jr) / nr) : 0;
            const int cols = nt > 0 ? nt * nr : (int)min_pd(nr, r->n1 - jr);
            step = cols;
            for (ptrdiff_t pc = kb0; pc < kend;) {
                const int kc = (int)(kend - pc < 2 * KT ? kend - pc : KT);
                const int first = pc == 0, last = pc + kc >= K;
                g->pack_b(&g->b, pc, jr, kc, cols, nr, bt);
                if (nt > 0) {
                    ptrdiff_t ldc;
                    char *c = thin_bt_sums(g, r, ws, ldw, KB >= K, 0, mr, r->m0, jr, esz, &ldc);
                    kern->ukernel_strip(kc, ap + (pc - kb0) * mr * pesz, bt, nr * esz,
                                        (ptrdiff_t)kc * nr * esz, c, ldc, (int)M, nt, first,
                                        GK_GEMM_STRIP_PACKED);
                    if (last && g->epilogue != NULL)
                        g->epilogue(g->epi_ctx, r->m0, jr, (int)M, cols, c, ldc);
                    pc += kc;
                    continue;
                }
                for (ptrdiff_t p = 0; p < panels; p++) {
                    const ptrdiff_t ir = r->m0 + p * mr;
                    const int rows = (int)min_pd(mr, r->m1 - ir);
                    ptrdiff_t ldc;
                    char *c = thin_bt_sums(g, r, ws, ldw, KB >= K, p, mr, ir, jr, esz, &ldc);
                    kern->ukernel(kc, ap + p * kb * mr * esz + (pc - kb0) * mr * pesz, bt, c,
                                  ldc, rows, cols, first);
                    if (last && g->epilogue != NULL)
                        g->epilogue(g->epi_ctx, ir, jr, rows, cols, c, ldc);
                }
                pc += kc;
            }
        }
    }
    if (kern->end != NULL)
        kern->end();
    gk_aligned_free(raw);
    return GK_GEMM_OK;
}

/* ---- threads ---------------------------------------------------------------------------
 * A call splits its output into a grid of tm x tn parts (gk_parallel_grid: edges on
 * whole mr x nr tiles, never K), each run by one task with the serial loops above; every
 * output's sums are the same for any grid, so results do not depend on the thread
 * count.  Each part packs its own blocks of A; of B too, unless B' is shared (a
 * gemmkit.pack_b packing, or one packed by all threads for the blocked path's row parts:
 * see run_split). */
enum { RUN_DRIVE = 0, RUN_INPLACE, RUN_THIN_BT };

typedef struct par_job {
    const gk_gemm_kernel *kern;
    const gk_gemm_plan *g;
    int how, kc_max, prefetch_b;
    int tm, tn;
    volatile int status; /* first failure wins; GK_GEMM_OK otherwise */
} par_job;

static int run_part(const par_job *j, const gk_range *r)
{
    if (j->how == RUN_INPLACE)
        return run_inplace(j->kern, j->g, r, j->kc_max, j->prefetch_b);
    return j->how == RUN_THIN_BT ? run_thin_bt(j->kern, j->g, r) : drive_range(j->kern, j->g, r);
}

static void par_task(void *ctx, ptrdiff_t t, int worker)
{
    par_job *j = (par_job *)ctx;
    gk_range r;
    int rc;
    (void)worker;
    gk_parallel_grid_part(j->g->m, j->g->n, j->kern->mr, j->kern->nr, j->tm, j->tn, t,
                          &r.m0, &r.m1, &r.n0, &r.n1);
    rc = run_part(j, &r);
    if (rc != GK_GEMM_OK)
        j->status = rc;
}

/* Multiply-adds per thread below which a call stays on fewer threads: a thread's share
 * must pay for handing it over (a few us to a spinning worker, 0.1-0.2 ms to a sleeping
 * one under KVM).  Measured on Zen 4, 2 threads in a loop of calls: float32 96^3 (0.9M)
 * stays serial, 128^3 (2M) 1.8x, 256^3 1.9x; float64 128^3 1.8x.  A product of fewer than
 * GK_GEMM_THIN_SPLIT_ROWS rows reads a new element of B for every few multiply-adds, so
 * each costs more: the threshold scales with M / GK_GEMM_THIN_SPLIT_ROWS, down to 256K
 * (Zen 5, 2 threads vs 1: float32 1 x 1024 x 1024 1.6x, 2.0x with pack_b, 2 x 768 x 768
 * 1.6x / 2.0x, float64 1 x 1024 x 1024 1.7x; 1 x 512 x 512 stays serial: float64 there
 * measured 0.91-1.55x). */
#define GK_GEMM_THIN_SPLIT_ROWS 4
static double min_macs_per_thread(int acc, ptrdiff_t m)
{
    const double base =
        acc == GK_ACC_F64 || acc == GK_ACC_U64 ? (double)(1 << 19) : (double)(1 << 20);
    const double thin = base * (double)m / GK_GEMM_THIN_SPLIT_ROWS;
    if (m >= GK_GEMM_THIN_SPLIT_ROWS)
        return base;
    return thin < (double)(1 << 18) ? (double)(1 << 18) : thin;
}

/* Shared B' (gk_parallel_share_b): the blocked path's parts would each pack their own
 * columns of B, so B' is packed once, in the whole-B' layout of gk_gemm_pack_b_whole
 * (K blocks of the family's KC; in each, panels of nr columns), by every thread at once
 * (tasks: one K block of a chunk of whole panels), and the parts read it as they read a
 * gemmkit.pack_b packing.  Only up to GK_GEMM_SHARED_B_MAX bytes: glibc serves blocks up
 * to its largest mmap threshold (32 MB) from its heap, so the buffer is not faulted in
 * again on every call; a larger B keeps per-part packing, whose blocks stay in cache. */
#define GK_GEMM_SHARED_B_MAX ((size_t)31 << 20) /* with its headers, under 32 MB */

static size_t packed_b_panels(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n);

typedef struct bshare_job {
    const gk_gemm_kernel *kern;
    gk_gemm_pack_b_fn pack; /* the plan's (float8 QLinearMatMul's decode B), or kern's */
    const gk_gemm_src *b;
    ptrdiff_t k, n;
    char *mem;
    ptrdiff_t kc_block, chunk, nchunks;
} bshare_job;

static void bshare_task(void *ctx, ptrdiff_t t, int worker)
{
    const bshare_job *j = (const bshare_job *)ctx;
    const ptrdiff_t pc = t / j->nchunks * j->kc_block, jc = t % j->nchunks * j->chunk;
    const int kc = (int)min_pd(j->kc_block, j->k - pc), nc = (int)min_pd(j->chunk, j->n - jc);
    const ptrdiff_t np = round_up(j->n, j->kern->nr);
    (void)worker;
    j->pack(j->b, pc, jc, kc, nc, j->kern->nr,
            j->mem + (np * pc + jc * (ptrdiff_t)kc) * (ptrdiff_t)acc_size(j->kern->acc));
}

/* All of B' (k > 0 x n, from b, packed by pack) in the whole-B' layout at mem, on
 * `threads` threads: tasks of one K block of a chunk of whole panels, about 2 per thread
 * and K block (one K block at a time on one thread). */
static void pack_b_whole_on(const gk_gemm_kernel *kern, gk_gemm_pack_b_fn pack,
                            const gk_gemm_src *b, ptrdiff_t k, ptrdiff_t n, char *mem, int threads)
{
    int mc0, kc0, nc0;
    bshare_job bj;
    gk_gemm_blocking(kern, &mc0, &kc0, &nc0);
    bj.kern = kern;
    bj.pack = pack;
    bj.b = b;
    bj.k = k;
    bj.n = n;
    bj.mem = mem;
    bj.kc_block = k_block(kc0, k);
    bj.chunk = threads > 1 ? round_up((n + 2 * (ptrdiff_t)threads - 1) / (2 * (ptrdiff_t)threads),
                                      kern->nr)
                           : n;
    bj.nchunks = (n + bj.chunk - 1) / bj.chunk;
    gk_parallel_run((k + bj.kc_block - 1) / bj.kc_block * bj.nchunks, threads, bshare_task, &bj);
}

/* B' bytes of the whole-B' layout for g, or 0 when it is not to be shared. */
static size_t shared_b_bytes(const gk_gemm_kernel *kern, const gk_gemm_plan *g)
{
    const size_t bytes = packed_b_panels(kern, g->k, g->n);
    return bytes <= GK_GEMM_SHARED_B_MAX && g->n <= INT_MAX ? bytes : 0;
}

static int run_split(const gk_gemm_kernel *kern, const gk_gemm_plan *g, int how, int kc_max,
                     int prefetch_b, int rows_too)
{
    par_job j;
    gk_gemm_plan shared;
    char *mem = NULL;
    const int T = gk_parallel_threads();
    int parts, flags = rows_too ? GK_GRID_ROWS : 0;
    /* B' read by every part: a pack_b packing, or one packed here for them all */
    const int b_given = how == RUN_DRIVE && g->b_packed != NULL;
    const int b_share = how == RUN_DRIVE && g->b_packed == NULL && g->kc_thin == 0 && rows_too &&
                        T > 1 && g->k > 0 && gk_parallel_share_b() && shared_b_bytes(kern, g) > 0;
    j.kern = kern;
    j.g = g;
    j.how = how;
    j.kc_max = kc_max;
    j.prefetch_b = prefetch_b;
    j.status = GK_GEMM_OK;
    if (b_given || b_share)
        flags |= GK_GRID_B_SHARED;
    parts = gk_parallel_grid(g->m, g->n, g->k, kern->mr, kern->nr,
                             min_macs_per_thread(kern->acc, g->m),
                             (b_given || b_share) ? T * gk_parallel_parts_per_thread() : T, flags,
                             &j.tm, &j.tn);
    if (parts <= 1) {
        const gk_range all = {0, g->m, 0, g->n};
        return run_part(&j, &all);
    }
    if (b_share && j.tm > 1) {
        mem = (char *)gk_aligned_alloc(shared_b_bytes(kern, g));
        if (mem != NULL) {
            pack_b_whole_on(kern, g->pack_b, &g->b, g->k, g->n, mem, T);
            shared = *g;
            shared.b_packed = mem;
            j.g = &shared;
        } else {
            /* no memory for B': each part packs its own (a grid for T parts) */
            (void)gk_parallel_grid(g->m, g->n, g->k, kern->mr, kern->nr,
                                   min_macs_per_thread(kern->acc, g->m), T, GK_GRID_ROWS, &j.tm,
                                   &j.tn);
        }
    }
    gk_parallel_run((ptrdiff_t)j.tm * j.tn, T, par_task, &j);
    gk_aligned_free(mem);
    return j.status;
}

int gk_gemm_drive(const gk_gemm_kernel *kern, const gk_gemm_plan *g)
{
    if (kern == NULL || g->m < 0 || g->n < 0 || g->k < 0 || kern->mr < 1 || kern->nr < 1)
        return GK_GEMM_EINVAL;
    if (g->m == 0 || g->n == 0)
        return GK_GEMM_OK;
    return run_split(kern, g, RUN_DRIVE, 0, 0, 1);
}

static volatile int size_rules = 1;

int gk_gemm_set_size_rules(int on)
{
    const int old = size_rules;
    size_rules = on != 0;
    return old;
}

/* kern's size rule hands this call on (gk_gemm_kernel.min_rows / min_depth / min_macs).
 * Not for its rows when B' comes packed for kern (gemmkit.pack_b): the next family would
 * pack B again on every call, the cost pack_b is there to save (Sapphire Rapids, bfloat16,
 * K = N = 4096, one thread: M = 1 with pack_b ran 3.31 ms on the widening family against
 * 3.25 ms per call, while amxbf16 streams its packing for M = 16 in 1.66 ms; its tile
 * steps cost the same for 1 row as for 16). */
static int too_small(const gk_gemm_kernel *kern, const gk_gemm_args *g, int b_packed)
{
    if (!size_rules)
        return 0;
    return (!b_packed && g->m < kern->min_rows) || g->k < kern->min_depth ||
           (double)g->m * (double)g->n * (double)g->k < (double)kern->min_macs;
}

const gk_gemm_kernel *gk_gemm_thin_16bit_family(const gk_gemm_kernel *kern)
{
    while (kern != NULL && kern->ukernel_strip_h == NULL)
        kern = gk_gemm_kernel_after(kern);
    return kern;
}

/* g is a product kern's ukernel_strip_h takes in place: a 16-bit one of 1..
 * GK_GEMM_STRIP_ROWS rows (within one row panel), at least one full column tile, B' rows
 * contiguous. */
static int thin_16bit_fits(const gk_gemm_kernel *kern, const gk_gemm_args *g)
{
    return out_size(g->dtype) == 2 && g->m >= 1 && g->m <= GK_GEMM_STRIP_ROWS &&
           g->m <= kern->mr && g->n >= kern->nr && g->k >= 1 && g->b_cs == 2 &&
           g->k <= INT_MAX && g->n <= INT_MAX;
}

/* A family without ukernel_strip_h hands such a product, B' rows contiguous and not packed
 * for it, to the one of its row that reads that B' in place (a size rule: the packing
 * costs more than the product; bfloat16 vdpbf16ps, M = 1, K = N = 4096, Zen 5: 1.74 ms
 * packing per call, 1.39 ms in place on the widening family).  Not with B' transposed:
 * there the dot family's packer is the faster (4.4 ms on the widening family against 2.1). */
static int hands_thin_16bit_on(const gk_gemm_kernel *kern, const gk_gemm_args *g, int b_packed)
{
    const gk_gemm_kernel *to;
    if (!size_rules || b_packed || kern->ukernel_strip_h != NULL)
        return 0;
    to = gk_gemm_thin_16bit_family(kern);
    return to != NULL && thin_16bit_fits(to, g);
}

static int run_plan(const gk_gemm_kernel *kern, const gk_gemm_args *g, const void *b_packed,
                    gk_gemm_seen *seen);
static const gk_gemm_seen *packed_b_seen(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n,
                                         const void *mem);

int gk_gemm_run_packed(const gk_gemm_kernel *kern, const gk_gemm_args *g, const void *b_packed)
{
    gk_gemm_seen seen = GK_GEMM_SEEN_NOTHING;
    int rc;

    if (kern == NULL || g->dtype < 0 || g->dtype >= GK_DT_COUNT || kern->dtype != g->dtype)
        return GK_GEMM_EINVAL;
    /* a family's size rule may hand a call on: the next one of its row runs it (without
     * the packing, which is the declining family's); rows end with a scalar family, which
     * has no size rule */
    while (too_small(kern, g, b_packed != NULL) || hands_thin_16bit_on(kern, g, b_packed != NULL)) {
        kern = gk_gemm_kernel_after(kern);
        b_packed = NULL;
        if (kern == NULL)
            return GK_GEMM_EINVAL;
    }
    if (g->k <= 0)
        b_packed = NULL;
    if (b_packed != NULL && kern->check_packed != NULL) { /* what packing B' saw */
        const gk_gemm_seen *ps = packed_b_seen(kern, g->k, g->n, b_packed);
        seen.b_min = ps->b_min;
        seen.b_max = ps->b_max;
    }
    rc = run_plan(kern, g, b_packed, kern->check_packed != NULL ? &seen : NULL);
    /* the second half of a guard (gk_gemm_kernel.check_packed): the next family runs the
     * call again, rewriting all of Y */
    if (rc == GK_GEMM_OK && kern->check_packed != NULL && !kern->check_packed(&seen, g))
        return gk_gemm_run_packed(gk_gemm_kernel_after(kern), g, NULL);
    return rc;
}

/* One call on kern (which takes it): the plan, then the path.  seen: NULL, or what the
 * packers saw (gk_gemm_kernel.check_packed). */
static int run_plan(const gk_gemm_kernel *kern, const gk_gemm_args *g, const void *b_packed,
                    gk_gemm_seen *seen)
{
    gk_gemm_epi epi;
    gk_gemm_plan plan;

    gk_gemm_epi_init(&epi, g);
    plan.m = g->m;
    plan.n = g->n;
    plan.k = g->k;
    plan.a.p = (const char *)g->a;
    plan.a.rs = g->a_rs;
    plan.a.cs = g->a_cs;
    plan.a.ctx = seen;
    plan.b.p = (const char *)g->b;
    plan.b.rs = g->b_rs;
    plan.b.cs = g->b_cs;
    plan.b.ctx = seen;
    plan.pack_a = kern->pack_a;
    plan.pack_b = kern->pack_b;
    plan.epilogue = gk_gemm_epi_is_identity(&epi, g->dtype) ? NULL : kern->epilogue;
    plan.epi_ctx = &epi;
    plan.b_packed = (const char *)b_packed;
    plan.kc_thin = 0;
    /* Y's storage is the accumulator type (or its signed variant) exactly when the sizes
     * agree: float32/float64/int32/uint32/int64/uint64 */
    if (out_size(g->dtype) == acc_size(kern->acc)) {
        plan.acc_y = g->y;
        plan.ld_acc_y = g->ldy;
    } else {
        plan.acc_y = NULL;
        plan.ld_acc_y = 0;
    }
    /* B' read in place when its columns are contiguous accumulator-typed elements
     * (float32 / float64 families serve only their own type): small calls, and thin A
     * (at most GK_GEMM_THIN_ROWS rows in at most GK_GEMM_THIN_MAX_PANELS row panels) */
    if (b_packed == NULL && kern->ukernel_ldb != NULL && plan.acc_y != NULL && g->k > 0 && g->m > 0 &&
        g->n >= kern->nr && g->b_cs == (ptrdiff_t)acc_size(kern->acc) &&
        g->k <= INT_MAX && g->m <= INT_MAX) {
        const int small = g->m <= GK_GEMM_SMALL_FLOPS / g->n &&
                          g->k <= GK_GEMM_SMALL_FLOPS / (g->m * g->n);
        const int thin = g->m <= GK_GEMM_THIN_ROWS &&
                         (g->m + kern->mr - 1) / kern->mr <= GK_GEMM_THIN_MAX_PANELS;
        /* a small call's KC-deep blocks of B' in place assume B' is cached; a thin one
         * with a larger B' streams it (M = 1, K = N = 1024 float32: 4 MB, the small
         * blocking measured 4.5x slower than the thin one) */
        const int b_cached = (double)g->k * (double)g->n * (double)acc_size(kern->acc) <=
                             (double)GK_GEMM_SMALL_B_BYTES;
        if (small && (b_cached || !thin)) {
            int mc0, kc0, nc0;
            gk_gemm_blocking(kern, &mc0, &kc0, &nc0);
            return run_split(kern, &plan, RUN_INPLACE, kc0, 0, 1);
        }
        if (thin) /* columns only: every part reads all (few) rows */
            return run_split(kern, &plan, RUN_INPLACE,
                             g->m <= kern->mr ? GK_GEMM_THIN_KC : 2 * GK_GEMM_THIN_KC,
                             g->m > kern->mr, 0);
    }
    /* 1..GK_GEMM_STRIP_ROWS rows of a 16-bit product with B' rows contiguous: B' read in
     * place by the family's ukernel_strip_h (widening as its packers do), columns only.
     * Also where B' comes packed (gemmkit.pack_b keeps B' beside its float32 panels): the
     * codes are half the bytes, and the bits the same (Zen 5, float16 M = 1, K = N = 4096:
     * 1.79 ms on the panels, 1.41 ms in place; 1 x 768 x 3072 123 / 78 us). */
    if (plan.acc_y == NULL && kern->ukernel_strip_h != NULL && thin_16bit_fits(kern, g))
        return run_split(kern, &plan, RUN_INPLACE, GK_GEMM_THIN_KC, 0, 0);
    /* Thin A with B' columns contiguous along k (transB), which no in-place kernel reads:
     * B' packed one micro-panel at a time, columns only (run_thin_bt) */
    if (b_packed == NULL && g->m > 0 && g->k > 0 && g->b_rs == (ptrdiff_t)out_size(g->dtype) &&
        g->m <= GK_GEMM_THIN_ROWS && (g->m + kern->mr - 1) / kern->mr <= GK_GEMM_THIN_MAX_PANELS &&
        g->k <= INT_MAX && g->m <= INT_MAX && g->n <= INT_MAX)
        return run_split(kern, &plan, RUN_THIN_BT, 0, 0, 0);
    /* Thin A with a 16-bit output (no in-place path): the blocked path in thin K blocks,
     * columns only (gk_gemm_plan.kc_thin) */
    if (b_packed == NULL && plan.acc_y == NULL && g->m > 0 && g->k > GK_GEMM_THIN_KC_PACKED &&
        g->m <= GK_GEMM_THIN_ROWS && (g->m + kern->mr - 1) / kern->mr <= GK_GEMM_THIN_MAX_PANELS &&
        g->n >= kern->nr && g->k <= INT_MAX && g->m <= INT_MAX) {
        plan.kc_thin = kern->kc_thin > 0 ? kern->kc_thin : GK_GEMM_THIN_KC_PACKED;
        return run_split(kern, &plan, RUN_DRIVE, 0, 0, 0);
    }
    return gk_gemm_drive(kern, &plan);
}

int gk_gemm_run(const gk_gemm_kernel *kern, const gk_gemm_args *g)
{
    return gk_gemm_run_packed(kern, g, NULL);
}

/* ---- pre-packed B' (gemmkit.pack_b) ---------------------------------------------------- */

/* The panels' bytes.  A family with check_packed also keeps, at the next multiple of 64
 * bytes after them, the gk_gemm_seen its packers filled while packing B' (b_min, b_max), so
 * that a call reading the packing runs its guard without a pass over B' (that pass was
 * 42% of a bfloat16 call at M = 1, K = N = 4096, and kept two threads from gaining). */
static size_t packed_b_panels(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n)
{
    const size_t esz = acc_size(kern->acc);
    if (k <= 0 || n <= 0)
        return 0;
    if ((size_t)round_up(n, kern->nr) > ((size_t)PTRDIFF_MAX - 128) / esz / (size_t)k)
        return 0;
    return (size_t)round_up(n, kern->nr) * (size_t)k * esz;
}

static const gk_gemm_seen *packed_b_seen(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n,
                                         const void *mem)
{
    return (const gk_gemm_seen *)((const char *)mem + gk_round64(packed_b_panels(kern, k, n)));
}

size_t gk_gemm_packed_b_size(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n)
{
    const size_t panels = packed_b_panels(kern, k, n);
    return panels == 0 || kern->check_packed == NULL ? panels : gk_round64(panels) + 64;
}

int gk_gemm_pack_b_whole(const gk_gemm_kernel *kern, const gk_gemm_args *g, void *mem)
{
    gk_gemm_src b;
    gk_gemm_seen seen = GK_GEMM_SEEN_NOTHING;
    if (gk_gemm_packed_b_size(kern, g->k, g->n) == 0 || g->n > INT_MAX)
        return GK_GEMM_EINVAL;
    b.p = (const char *)g->b;
    b.rs = g->b_rs;
    b.cs = g->b_cs;
    b.ctx = kern->check_packed != NULL ? &seen : NULL;
    pack_b_whole_on(kern, kern->pack_b, &b, g->k, g->n, (char *)mem,
                    gk_parallel_threads()); /* K > 0 */
    if (kern->check_packed != NULL)
        memcpy((char *)mem + gk_round64(packed_b_panels(kern, g->k, g->n)), &seen, sizeof seen);
    return GK_GEMM_OK;
}

int gk_gemm(const gk_gemm_args *args)
{
    return gk_gemm_run(gk_gemm_kernel_for(args->dtype), args);
}
