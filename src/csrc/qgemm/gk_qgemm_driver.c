/* The int8 GEMM driver: batches, sign mapping, cache blocking, packing, kernel calls.
 *
 * Batches (gk_qgemm_run): the batch dims are first coalesced (size-1 dims dropped,
 * neighbours merged where every operand steps uniformly).  A batch left with one dim
 * whose B side is shared and whose A and output rows continue from matrix to matrix is
 * folded into ONE product of batch * M rows (fold_batch): the kernels see a tall M and B
 * is packed once; A's matrices are first gathered into one block when their rows do not
 * continue and they are small (gather_a).  Any other batch runs matrix by matrix
 * (run_one); where consecutive matrices share B it is packed once, whole, into a cache
 * they all read (bcache).
 *
 * Loop order of one product (BLIS-style, gk_qgemm_blocking_of): N blocks of nc columns
 * (packed B block, the size of L2) -> depth blocks of at most kc (gk_qgemm_kc: the B
 * micro-panel fills half of L1) -> M blocks of mc rows (packed A block, half of L2)
 * -> nr-wide B micro-panels (stay in L1) -> mr-high A micro-panels.  A product no
 * deeper than kc runs in one depth block: each micro-kernel call sees the whole depth
 * and finishes its tile (zero-point correction, requantization) in registers.  Deeper
 * ones keep the int32 sums of the earlier blocks in a scratch, and the last block's call
 * finishes the tile (gk_qepi.part_mode): exact, int32 addition wraps mod 2^32.  Beyond
 * GK_QGEMM_KCHUNK products run chunk by chunk (run_k_chunked), each chunk blocked the
 * same way. */
#include <float.h>
#include <limits.h>
#include <string.h>

#include "gemmkit/gk_qgemm_driver.h"
#include "gemmkit/gk_dispatch.h"
#include "core/gk_alloc.h"
#include "gemmkit/gk_parallel.h"

/* gk_qgemm_blocking_of: the L2 sizes believed (else the default) for the packed blocks. */
#define GK_QGEMM_L2_MIN ((size_t)128 << 10)
#define GK_QGEMM_L2_MAX ((size_t)64 << 20)
#define GK_QGEMM_L2_DEFAULT ((size_t)1 << 20)
/* gk_qgemm_kc: the L1 data cache sizes believed (else the default), and the least kc
 * (below it a call's fixed costs, the partial sums and the epilogue, would dominate). */
#define GK_QGEMM_L1_MIN (16 * 1024)
#define GK_QGEMM_L1_MAX (256 * 1024)
#define GK_QGEMM_L1_DEFAULT (32 * 1024)
#define GK_QGEMM_KC_MIN 256
/* A product of at most GK_QGEMM_FEW_ROWS rows packs each B block for one pass of A
 * (one A block), and that block holds at most GK_QGEMM_FEW_ROWS_B_BYTES (or L2, if
 * smaller).  Packed depth-first, a block as large as a 2 MB L2 has its first panels
 * evicted before the tiles read them back, so they come from L3.  Sapphire Rapids, one
 * thread, in one process, 1 MB against 2 MB blocks: amx M = 48 / 96 / 128, K = 768, N =
 * 3072 1.16x / 1.16x / 1.19-1.20x (QLinearMatMul too), 128 x 512 x 8192 1.14x, 128 x
 * 4096^2 1.10x, 128 x 1024 x 4096 1.04-1.05x; avx512vnni 1.10-1.18x; avx2 1.01-1.04x; M
 * = 256 and 384 1.00x and 512 x 1024 x 4096 0.96x, hence the bound on M.  Zen 4 (1 MB
 * L2) had measured its whole L2 best against a half (128 x 4096^2, +1..4%): its blocks,
 * and Zen 2's, are unchanged. */
#define GK_QGEMM_FEW_ROWS 128
#define GK_QGEMM_FEW_ROWS_B_BYTES ((size_t)1 << 20)
/* Largest partial-sum scratch (ms x nc int32): past it the rows run in groups of ms, each
 * repacking B's blocks (a B block serves ms rows then).  Every output kind keeps its
 * partial sums there, an int32 output too: in Y itself they sat ldy apart, a 4 KB
 * multiple as often as not, and the amx tiles' 16-row loads and stores of them missed
 * L1 (Sapphire Rapids, one thread, int32 output: M = 128, K = N = 4096 1.23x faster
 * with the scratch, N = 4000 1.26x, 2048 x 8192 x 2048 1.25x; the avx512vnni and avx2
 * families within 2% either way). */
#define GK_QGEMM_PART_BYTES ((size_t)8 << 20)
/* int32 elements after each row of that scratch: nc is often a power of two, and a
 * tile's 8 rows 4 KB apart would share one L1 set */
#define GK_QGEMM_PART_PAD 16

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

/* Where row r of the product run_one computes takes its row-side parameters (a zero
 * point, a scale, the rows of y's scale and zero point): row r % mi of matrix r / mi of
 * a folded batch, whose parameters sit (r / mi) * <stride> BYTES after matrix 0's.  For a
 * plain 2-D product mi = M and the strides are never used.  With a_seg, A's rows are
 * found the same way (matrix t at p->a + t * a): packed matrix by matrix, which needs
 * mi to be a multiple of the kernel's mr (each matrix starts a panel) and no small-M
 * run. */
typedef struct rowmap {
    int mi;
    ptrdiff_t azp, as, ys, yzp;
    int a_seg;
    ptrdiff_t a;
} rowmap;

/* B packed whole (every column, one kernel's format at one depth): for the consecutive
 * matrices of a batch that share it, for the row parts of a split product, or packed
 * once by gemmkit.pack_b.  Packed panels of n_all columns, then colsum[n_all].  A
 * product reads it from column n_off on (a column part of a split product: n_off a
 * multiple of nr), its B being the cache's B moved n_off columns. */
typedef struct bcache {
    unsigned char *mem;
    int32_t *colsum;
    const uint8_t *b; /* column 0 of the B packed in mem; NULL before the first */
    int n_all, n_off;
} bcache;

/* What run_one does with a cache: read it (it holds p's B), fill it first (a batch's
 * cache, all of B's columns), or ignore it. */
enum { BC_NONE = 0, BC_READ, BC_FILL };
static int bcache_use(const bcache *bc, const gk_qgemm_problem *p)
{
    if (bc == NULL)
        return BC_NONE;
    if (bc->b != NULL && bc->b + (ptrdiff_t)bc->n_off * p->b_cs == p->b &&
        bc->n_off + p->n <= bc->n_all)
        return BC_READ;
    return bc->n_off == 0 && bc->n_all == p->n ? BC_FILL : BC_NONE;
}

/* A grid larger than this many entries (multipliers or output zero points varying by
 * both row and column) is not built for a folded batch: matrix by matrix, each needs
 * only its own M x N. */
#define GK_QFOLD_GRID_MAX ((size_t)1 << 22)
/* Bytes of A beyond which a batch whose A rows do not continue is not gathered for a
 * fold (then each matrix is large enough to run well on its own). */
#define GK_QFOLD_GATHER_MAX_BYTES ((size_t)8 << 20)
/* Packed bytes beyond which batches sharing B repack it per matrix instead of holding
 * all of it (then K * N is so large that packing is a small part of each matrix). */
#define GK_QBCACHE_MAX_BYTES ((size_t)64 << 20)
/* Packed bytes up to which a split product packs B' once for all its threads
 * (gk_parallel_share_b): glibc serves blocks up to its largest mmap threshold (32 MB)
 * from its heap, so the buffer is not faulted in again on every call; a larger B keeps
 * per-part packing, whose blocks stay in cache. */
#define GK_QSHARED_B_MAX ((size_t)31 << 20) /* with the column sums, under 32 MB */

static const float *f32_at(const float *base, ptrdiff_t bytes, ptrdiff_t elems)
{
    return (const float *)((const char *)base + bytes) + elems;
}

/* Column-major B (b_rs == 1) at up to GK_QCOLB_ROWS rows: column blocks of this many
 * panels (run_one).  Sapphire Rapids, one thread, against L2-sized blocks, amx /
 * avx512vnni / avx2: M = 1, K = N = 4096 1.9x / 2.0x / 1.3x faster; M = 4, K = 768, N =
 * 3072 2.0x / 2.0x / 1.3x; M = 64, K = N = 1024 1.37x / 1.14x / 1.08x; M = 256 1.15x /
 * 1.07x / 1.02x; at 1024^3 amx and avx512vnni still gained 1.03-1.08x but avx2, whose
 * A packing costs more, lost 1.04-1.2x: hence the row limit.  Blocks of 2 and 8 panels
 * were within 10% either way. */
#define GK_QCOLB_ROWS 256
#define GK_QCOLB_PANELS 4

/* Rows from which a product reads a pre-packed B rather than run the small-M path, for a
 * family that does not set its own (gk_qgemm_kernel.packed_min_m). */
#define GK_QPACKED_MIN_M 8

static int smallm_runs(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p)
{
    return kern->smallm != 0 && gk_qgemm_smallm_rows_ok(kern, p->m, p->k, p->n) &&
           (p->b_cs == 1 || p->n == 1);
}

/* The small-M path runs p unless a packed B (bc, when it holds p's B) serves better: from
 * the family's packed_min_m rows, else GK_QPACKED_MIN_M (families whose micro-kernel
 * computes all MR rows of a partial tile, measured on Zen 4 at K = N = 4096 / 1024 before
 * avx512vnni had row-count kernels: M = 16 1.3-1.7x faster packed, M = 4 0.8-1.0x, M = 1
 * 0.5-0.9x). */
static int uses_smallm(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const bcache *bc)
{
    const int min_m = kern->packed_min_m > 0 ? kern->packed_min_m : GK_QPACKED_MIN_M;
    return smallm_runs(kern, p) && (p->m < min_m || bcache_use(bc, p) != BC_READ);
}

static int run_k_chunked(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p);

/* gk_qgemm_set_tall_mode's setting: 1 (the families' limits) unless a test changes it. */
static volatile int tall_mode = 1;

int gk_qgemm_set_tall_mode(int mode)
{
    const int old = tall_mode;
    tall_mode = mode;
    return old;
}

/* Whether run_one takes kern's tall route for p (gk_qgemm_tall_fn): many rows against a
 * small B, A's rows contiguous and all of A one strided matrix, B not pre-packed (the
 * route packs its small B itself, so a batch's or pack_b's cache is not filled or read
 * there). */
static int uses_tall(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const rowmap *rm,
                     const bcache *bc)
{
    const int mode = tall_mode;
    if (kern->tall == NULL || mode == 0 || p->a_cs != 1 || (rm != NULL && rm->a_seg) ||
        bcache_use(bc, p) != BC_NONE)
        return 0;
    return mode == 2 || (kern->tall_takes != NULL && kern->tall_takes(p->m, p->k, p->n));
}

/* 1 when the n >= 1 values are one value (a per-tensor zero point, expanded). */
static int all_equal(const int32_t *v, int n)
{
    for (int i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return 1;
}

static int split_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const rowmap *rm,
                     bcache *bc, int *rc);

/* ---- blocking ----------------------------------------------------------------------- */

int gk_qgemm_kc(const gk_qgemm_kernel *kern)
{
    if (kern->kc > 0)
        return kern->kc;
    size_t l1 = gk_cpu_caches()->l1d;
    if (l1 < GK_QGEMM_L1_MIN || l1 > GK_QGEMM_L1_MAX)
        l1 = GK_QGEMM_L1_DEFAULT; /* not reported (or implausible): a common size */
    size_t kc = l1 / 2 / ((size_t)kern->nr * (size_t)kern->b_elem_bytes);
    kc = kc / (size_t)kern->kstep * (size_t)kern->kstep;
    if (kc < GK_QGEMM_KC_MIN)
        kc = round_up(GK_QGEMM_KC_MIN, (size_t)kern->kstep);
    return (int)kc; /* <= L1_MAX / 2: fits */
}

/* K in nblk blocks of kcb depth, the last one [1, kcb] deep: kcb is a multiple of kstep
 * (every block but the last packs without padding and starts a k-group) and at most kc
 * (gk_qgemm_kc, or the family's kc_deep); K <= kc (K == 0 included) is one block of K,
 * and so is K <= 3/2 kc: a second block would cost a pass over the partial sums for
 * little depth (Zen 4, avx512vnni, K = 768 in one block against two of 384:
 * 1.016-1.027x at M = 128 and 512, N = 768 and 3072; blocks of 768 at larger K measured
 * 0.97x at K = 4096, so those keep kc). */
static void k_blocks_of(const gk_qgemm_kernel *kern, int kc, int K, int *kcb, int *nblk)
{
    if (K <= kc + kc / 2) {
        *kcb = K;
        *nblk = 1;
        return;
    }
    /* n blocks of ceil(K / n) <= kc, rounded up to kstep: still <= kc (a multiple of
     * kstep), and ceil(K / kcb) <= n of them cover K.  K <= KCHUNK: no overflow. */
    const int n = (K + kc - 1) / kc;
    const int b = (int)round_up((size_t)((K + n - 1) / n), (size_t)kern->kstep);
    *kcb = b;
    *nblk = (K + b - 1) / b;
}

static void k_blocks(const gk_qgemm_kernel *kern, int K, int *kcb, int *nblk)
{
    k_blocks_of(kern, gk_qgemm_kc(kern), K, kcb, nblk);
}

static size_t gk_qgemm_l2(void)
{
    size_t l2 = gk_cpu_caches()->l2;
    if (l2 < GK_QGEMM_L2_MIN || l2 > GK_QGEMM_L2_MAX)
        l2 = GK_QGEMM_L2_DEFAULT;
    return l2;
}

/* gk_qgemm_set_slow_l3_mode's setting: -1 (the CPU's l3_slow) unless a test changes it. */
static volatile int slow_l3_mode = -1;

int gk_qgemm_set_slow_l3_mode(int mode)
{
    const int old = slow_l3_mode;
    slow_l3_mode = mode;
    return old;
}

/* The divisor of L2 that kern's A and B blocks each stay within on this CPU
 * (gk_qgemm_kernel.slow_l3_block_div), or 0: the default blocks. */
static size_t slow_l3_div(const gk_qgemm_kernel *kern)
{
    const int mode = slow_l3_mode;
    const int slow = mode < 0 ? gk_cpu_caches()->l3_slow : mode;
    return slow && kern->slow_l3_block_div > 0 ? (size_t)kern->slow_l3_block_div : 0;
}

static void gk_qgemm_blocking_at(const gk_qgemm_kernel *kern, int m, int n, int k, int kc,
                                 gk_qgemm_blocking *bl)
{
    const size_t l2 = gk_qgemm_l2(), div = slow_l3_div(kern);
    k_blocks_of(kern, kc, k, &bl->kcb, &bl->nblk);
    const size_t kbp = round_up((size_t)bl->kcb, (size_t)kern->kstep);
    size_t nc = n > 0 ? (size_t)n : 1, mc = m > 0 ? (size_t)m : 1, ms = mc;
    if (kbp > 0) {
        /* A block mc x kbp: half of L2 (read again for every B micro-panel); B block
         * kbp x nc: as large as L2 (each micro-panel streams through L1 once per A block,
         * and a larger block packs A less often), at most 1 MB for few rows
         * (GK_QGEMM_FEW_ROWS).  Measured on Zen 4 (1 MB L2) against a quarter / a half:
         * +1..4% at 1024^3, 2048^3, 128 x 4096^2, both families.
         * Where L3 is slow (slow_l3_div), each block at most L2 / div.  The A block, the B
         * micro-panel, the output tiles and the partial sums of a pass then fit L2 with
         * room to spare; a miss costs 5x as much as on Zen.  Cascade Lake (1 MB L2, L3
         * read 22.6 GB/s), avx512vnni, one thread, in one process, 11 interleaved runs,
         * quarters against the blocks above: 1024^3 1.09x, 2048^3 1.16x, 512 x 4096^2
         * 1.06x, 128 x 4096^2 1.04x, 128 x 768 x 3072 1.07x, 200 x 1000 x 3000 1.07x,
         * 256 x 4096^2, 384 x 768 x 3072 and 4096 x 1024^2 1.00-1.01x.  The avx2 family
         * (kc 1024, a quarter of the vpdpbusd rate) measured 0.83-0.93x with them. */
        const size_t bmax = div ? l2 / div
                            : m <= GK_QGEMM_FEW_ROWS && l2 > GK_QGEMM_FEW_ROWS_B_BYTES
                                ? GK_QGEMM_FEW_ROWS_B_BYTES
                                : l2;
        size_t ncap = bmax / (kbp * (size_t)kern->b_elem_bytes) / kern->nr * kern->nr;
        size_t mcap = l2 / (div ? div : 2) / (kbp * (size_t)kern->a_elem_bytes) / kern->mr *
                      kern->mr;
        if (ncap < (size_t)kern->nr)
            ncap = kern->nr;
        if (mcap < (size_t)kern->mr)
            mcap = kern->mr;
        if (nc > ncap)
            nc = ncap;
        if (mc > mcap)
            mc = mcap;
        /* the partial-sum scratch: ms x nc int32, ms a multiple of mc (so each is-block
         * starts an mc block, and a panel) */
        ms = m > 0 ? (size_t)m : 1;
        if (bl->nblk > 1 && ms * (nc + GK_QGEMM_PART_PAD) * 4 > GK_QGEMM_PART_BYTES) {
            ms = GK_QGEMM_PART_BYTES / ((nc + GK_QGEMM_PART_PAD) * 4) / mc * mc;
            if (ms < mc)
                ms = mc;
        }
    }
    bl->mc = (int)mc; /* each <= m or n (or a tile edge): fits */
    bl->nc = (int)nc;
    bl->ms = (int)ms;
}

/* kc_deep (AMX, measured on Sapphire Rapids, one thread): the int32 output's partial sums
 * at kc = 1024 made 2048^3 2.1x slower and 256 x 2048 x 8192 1.7x slower than blocks of
 * 4096, whose B micro-panels come from L2; where the partial sums stay in L2 (M = 128, K =
 * 3072, N = 768; M = 32, K = N = 8192) blocks of 1024 were 1.1-1.25x faster. */
void gk_qgemm_blocking_of(const gk_qgemm_kernel *kern, int m, int n, int k, int may_deepen,
                          gk_qgemm_blocking *bl)
{
    gk_qgemm_blocking_at(kern, m, n, k, gk_qgemm_kc(kern), bl);
    if (!may_deepen || bl->nblk == 1 || kern->kc_deep <= gk_qgemm_kc(kern))
        return;
    if ((size_t)bl->ms * (size_t)bl->nc * 4 > gk_qgemm_l2() / 2)
        gk_qgemm_blocking_at(kern, m, n, k, kern->kc_deep, bl);
}

/* Row and column (real) sums of one depth block added into the whole depth's, mod 2^32
 * (uint32: the ONNX int32 wrap). */
static void add_sums(int32_t *tot, const int32_t *blk, int n)
{
    for (int i = 0; i < n; i++)
        tot[i] = (int32_t)((uint32_t)tot[i] + (uint32_t)blk[i]);
}

/* Bytes of one packed depth block of B kp deep over n columns (its panels, padded). */
static size_t b_block_bytes(const gk_qgemm_kernel *kern, size_t n, size_t kp)
{
    return round_up(n, (size_t)kern->nr) / (size_t)kern->nr * gk_qgemm_b_panel_stride(kern, kp);
}

/* B packed whole into bc: depth block after depth block, each in nr-column panels;
 * block b (every earlier one kcb deep) starts at b * b_block_bytes(n_all, kcb), and its
 * block jc (a multiple of nr) at panel jc / nr, where packing block by block puts it.
 * The column sums of every block are added up in bc->colsum.  On `threads` threads
 * (bcache_fill_job below).  Returns 0, or -1 without memory. */
static int bcache_fill(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, bcache *bc,
                       int threads);

/* Bytes of the packed panels of all of a k x n B (64-byte rounded: the column sums
 * follow them): its depth blocks as bcache_fill lays them out. */
static size_t bcache_panel_bytes(const gk_qgemm_kernel *kern, int k, int n)
{
    int kcb, nblk;
    k_blocks(kern, k, &kcb, &nblk);
    const size_t last = round_up((size_t)(k - (nblk - 1) * kcb), (size_t)kern->kstep);
    return gk_round64((size_t)(nblk - 1) * b_block_bytes(kern, (size_t)n, (size_t)kcb) +
                      b_block_bytes(kern, (size_t)n, last));
}

/* An empty cache for p's B in mem (bcache_panel_bytes, then n column sums). */
static bcache bcache_at(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, void *mem)
{
    bcache bc;
    bc.mem = (unsigned char *)mem;
    bc.colsum = (int32_t *)((unsigned char *)mem + bcache_panel_bytes(kern, p->k, p->n));
    bc.b = NULL;
    bc.n_all = p->n;
    bc.n_off = 0;
    return bc;
}

/* A new, empty cache for p's B: 0; 1 when it would pass GK_QBCACHE_MAX_BYTES (then B is
 * packed block by block); -1 without memory.  The caller frees bc->mem. */
static int bcache_new(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, bcache *bc)
{
    const size_t panels = bcache_panel_bytes(kern, p->k, p->n);
    void *mem;
    if (panels > GK_QBCACHE_MAX_BYTES)
        return 1;
    mem = gk_aligned_alloc(panels + gk_round64((size_t)p->n * 4));
    if (mem == NULL)
        return -1;
    *bc = bcache_at(kern, p, mem);
    return 0;
}

/* rows x cols bytes of s (strides rs, cs) into d, row-major.  Read along the smaller
 * stride (row by row when |cs| <= |rs|, whole cache lines for a small column stride;
 * else down the columns, writing a small block), contiguous rows by memcpy. */
static void gather_rowmajor(const uint8_t *s, ptrdiff_t rs, ptrdiff_t cs, int rows, int cols,
                            uint8_t *d)
{
    if (cs == 1) {
        for (int r = 0; r < rows; r++)
            memcpy(d + (size_t)r * cols, s + (ptrdiff_t)r * rs, (size_t)cols);
    } else if ((rs < 0 ? -rs : rs) >= (cs < 0 ? -cs : cs)) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                d[(size_t)r * cols + c] = s[(ptrdiff_t)r * rs + (ptrdiff_t)c * cs];
    } else {
        for (int c = 0; c < cols; c++)
            for (int r = 0; r < rows; r++)
                d[(size_t)r * cols + c] = s[(ptrdiff_t)r * rs + (ptrdiff_t)c * cs];
    }
}

static int run_one(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const rowmap *rm,
                   bcache *bc, int may_split);

/* An operand with no unit stride in its last two dims (a view such as B[:, ::2]) has no
 * vector route in any packer (they read rows or columns contiguously) and keeps B from
 * the small-M path: it is gathered row-major into a temporary first (A only where its
 * rows are not a folded batch's).  The packers' element-by-element route walked such a B
 * column by column, one row apart per byte: M = 4, K = N = 4096 ran 169x slower than a
 * contiguous B.  No memory for the copy: the strided route, as correct.  Returns 1 and
 * sets *rc when it ran p. */
static int run_gathered(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                        const rowmap *rm, bcache *bc, int may_split, int *rc)
{
    const int gb = p->b_cs != 1 && p->b_rs != 1 && p->n > 1 && p->k > 1 &&
                   bcache_use(bc, p) != BC_READ;
    const int ga = p->a_cs != 1 && p->a_rs != 1 && p->m > 1 && p->k > 1 && rm == NULL;
    if (!gb && !ga)
        return 0;
    const size_t bb = gb ? (size_t)p->k * (size_t)p->n : 0, ab = ga ? (size_t)p->m * (size_t)p->k : 0;
    uint8_t *mem = (uint8_t *)gk_aligned_alloc(gk_round64(bb) + ab);
    if (!mem)
        return 0;
    gk_qgemm_problem q = *p;
    if (gb) {
        gather_rowmajor(p->b, p->b_rs, p->b_cs, p->k, p->n, mem);
        q.b = mem;
        q.b_rs = p->n;
        q.b_cs = 1;
        bc = NULL; /* a cache (being filled) describes the strided B */
    }
    if (ga) {
        uint8_t *a = mem + gk_round64(bb);
        gather_rowmajor(p->a, p->a_rs, p->a_cs, p->m, p->k, a);
        q.a = a;
        q.a_rs = p->k;
        q.a_cs = 1;
    }
    *rc = run_one(kern, &q, rm, bc, may_split);
    gk_aligned_free(mem);
    return 1;
}

/* One product: p->m rows, whose row-side parameters rm maps (NULL: a 2-D product); B
 * packed into bc when given (and not there yet), else block by block.
 *
 * Loops (BLIS): jc (nc columns) -> is (ms rows sharing one partial-sum scratch; all M
 * but for a huge M) -> pc (depth blocks, k_blocks) -> ic (mc rows, a packed A block
 * mc x kcb, L2) -> jr (a B micro-panel kcb x nr, L1) -> ir.  The
 * B block of (jc, pc) is packed once per is (or read from bc); the first depth block
 * of a tile stores its int32 sums, the middle ones add to them, the last one adds
 * them and finishes the tile (gk_qepi.part_mode).  The row sums (pack_a) and column
 * sums (pack_b) of the blocks are added up, so the last block's epilogue sees the
 * whole depth's. */
static int run_one(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const rowmap *rm,
                   bcache *bc, int may_split)
{
    const int M = p->m, N = p->n, K = p->k;
    int split_rc;
    if (M <= 0 || N <= 0)
        return 0;
    if (K > GK_QGEMM_KCHUNK)
        return run_k_chunked(kern, p); /* rm is NULL: deep batches are never folded */
    if (run_gathered(kern, p, rm, bc, may_split, &split_rc))
        return split_rc;
    if (may_split && split_run(kern, p, rm, bc, &split_rc))
        return split_rc;
    const rowmap one = {M, 0, 0, 0, 0, 0, 0};
    if (!rm)
        rm = &one;
    /* Canonical u8 x s8 form, see gk_qgemm.h. */
    const uint8_t a_xor = p->a_signed ? 0x80 : 0, b_xor = p->b_signed ? 0 : 0x80;
    const int32_t a_shift = p->a_signed ? 128 : 0, b_shift = p->b_signed ? 0 : 128;
    const int requant = p->out_kind != GK_QOUT_I32;
    /* A in segments (a folded batch whose matrices are packed one by one) only on the
     * packed path: the small-M path reads A as one strided matrix */
    const int use_smallm = !rm->a_seg && uses_smallm(kern, p, bc);
    /* the tall route packs neither A nor B into the call's buffers */
    const int use_tall = !use_smallm && uses_tall(kern, p, rm, bc);
    const int unpacked = use_smallm || use_tall;
    const int bc_use = use_smallm ? BC_NONE : bcache_use(bc, p);
    const int cached = bc_use != BC_NONE;

    /* Multiplier / output zero point grids: one entry per row only where some input
     * varies by row (or by matrix of a folded batch), one per column only where some
     * varies by column. */
    const int mult_rows =
        requant && (p->as_rs != 0 || p->ys_rs != 0 || rm->as != 0 || rm->ys != 0) ? M : 1;
    const int mult_cols = requant && (p->bs_cs != 0 || p->ys_cs != 0) ? N : 1;
    const int yzp_rows = requant && (p->yzp_rs != 0 || rm->yzp != 0) ? M : 1;
    const int yzp_cols = requant && p->yzp_cs != 0 ? N : 1;

    gk_qgemm_blocking bl = {K, 1, M, N, M};
    if (!unpacked) {
        gk_qgemm_blocking_of(kern, M, N, K, !cached, &bl);
        /* B column-major (each column's depth contiguous: B = W.T of a weight W stored
         * [N, K]) with few rows: column blocks of GK_QCOLB_PANELS panels.  An L2-sized
         * block reads as many columns side by side (thousands of streams, one page each)
         * and writes a packed block that fills L2 before the few rows read it back: at M
         * = 1..16, K = N = 4096 it took 2-3x the row-major B's time (see GK_QCOLB_ROWS). */
        if (!cached && p->b_rs == 1 && p->b_cs != 1 && M <= GK_QCOLB_ROWS &&
            bl.nc > GK_QCOLB_PANELS * kern->nr)
            bl.nc = GK_QCOLB_PANELS * kern->nr;
    }
    const int kcb = bl.kcb, nblk = bl.nblk;
    const size_t mc = (size_t)bl.mc, nc = (size_t)bl.nc, ms = (size_t)bl.ms;
    const size_t kbp = round_up((size_t)kcb, (size_t)kern->kstep); /* one block (<= kp) */
    const size_t blk_bytes = cached ? b_block_bytes(kern, (size_t)bc->n_all, kbp) : 0;
    const size_t apack = unpacked ? 0 : round_up(mc, kern->mr) * kbp * kern->a_elem_bytes;
    /* All of A in one row block: its packed depth blocks (and row sums) are the same for
     * every column block, so they are packed for the first one only, side by side when
     * there are several (up to half of L2).  M = 128, K = 4096 on amx (one depth block):
     * 16 column blocks packed A 16 times; M = 1, K = N = 4096 with column-major B on avx2
     * (column blocks of GK_QCOLB_PANELS panels, 6 depth blocks): packing A 64 times was
     * 17% of the call. */
    const int a_keep = !unpacked && (size_t)M <= mc && ms >= (size_t)M &&
                       (nblk == 1 || (size_t)nblk * apack <= gk_qgemm_l2() / 2);
    const size_t a_bytes = a_keep ? (size_t)nblk * apack : apack;
    const size_t bpack = unpacked || cached ? 0 : b_block_bytes(kern, nc, kbp);
    /* column sums: the block being packed + the running total (nc each) */
    const size_t colsums = unpacked || cached ? 0 : 2 * nc;

    /* One allocation for every per-call buffer, each 64-byte aligned. */
    enum { NBUF = 11 };
    size_t off[NBUF], total = 0;
    const size_t sizes[NBUF] = {
        (size_t)M * 4, (size_t)M * 4, (size_t)N * 4, (size_t)N * 4,            /* za, rowsum, zb, colcorr */
        (size_t)mult_rows * mult_cols * 4, (size_t)yzp_rows * yzp_cols * 4,    /* mult, yzp */
        a_bytes, bpack, colsums * 4,                                           /* packs, colsums */
        nblk > 1 ? mc * 4 : 0,                                                 /* one block's row sums */
        nblk > 1 ? ms * (nc + GK_QGEMM_PART_PAD) * 4 : 0,                      /* partial sums */
    };
    for (int i = 0; i < NBUF; i++) {
        off[i] = total;
        total += gk_round64(sizes[i]);
    }
    /* the separable zero-point correction (gk_qepi.row_corr / col_corr): M + N more */
    const size_t corr_off = total;
    total += gk_round64((size_t)M * 4) + gk_round64((size_t)N * 4);
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
    int32_t *colsum_blk = (int32_t *)(mem + off[8]);
    int32_t *colsum = colsum_blk + (cached ? 0 : nc); /* running total (uncached) */
    int32_t *rowsum_blk = (int32_t *)(mem + off[9]);
    int32_t *part = (int32_t *)(mem + off[10]);
    int32_t *row_corr = (int32_t *)(mem + corr_off);
    int32_t *col_corr = (int32_t *)(mem + corr_off + gk_round64((size_t)M * 4));

    /* one a zero point for every row (none, or per tensor and per matrix alike): a plain
     * fill, which vectorizes (tall products of 12544 rows spent 7% of the call in the
     * per-row loads) */
    if (!p->a_zp || (p->a_zp_rs == 0 && (rm->azp == 0 || rm->mi == M))) {
        const int32_t z0 = (p->a_zp ? load_q(p->a_zp, p->a_signed) : 0) + a_shift;
        for (int i = 0; i < M; i++)
            za[i] = z0;
    } else {
        for (int i0 = 0, t = 0; i0 < M; i0 += rm->mi, t++)
            for (int i = 0; i < rm->mi; i++)
                za[i0 + i] = load_q(p->a_zp + t * rm->azp + i * p->a_zp_rs, p->a_signed) + a_shift;
    }
    for (int j = 0; j < N; j++)
        zb[j] = (p->b_zp ? load_q(p->b_zp + j * p->b_zp_cs, p->b_signed) : 0) - b_shift;
    /* za one value over the rows and zb one over the columns: the correction separates
     * (two subtractions per vector instead of two vpmulld: the x86 families' int32
     * outputs and their requantizing tile epilogue, gk_qepi_x86.inc) */
    const int separable = all_equal(za, M) && all_equal(zb, N);

    gk_qepi epi;
    memset(&epi, 0, sizeof epi);
    epi.kind = p->out_kind;
    epi.a_rowsum = rowsum;
    epi.a_zp = za;
    epi.b_zp = zb;
    epi.y = p->y;
    epi.ldy = p->ldy;
    epi.k = K;
    epi.y_stream = p->y_call_bytes > (double)(gk_qgemm_l2() / 2);
    if (requant) {
        for (int r = 0; r < mult_rows; r++) {
            const int t = r / rm->mi, i = r - t * rm->mi;
            const float as = *f32_at(p->a_scale, t * rm->as, i * p->as_rs);
            const float *ys = f32_at(p->y_scale, t * rm->ys, i * p->ys_rs);
            for (int j = 0; j < mult_cols; j++)
                mult[(size_t)r * mult_cols + j] =
                    gk_qmultiplier(as, p->b_scale[j * p->bs_cs], ys[j * p->ys_cs]);
        }
        for (int r = 0; r < yzp_rows; r++) {
            const int t = r / rm->mi, i = r - t * rm->mi;
            const uint8_t *z = p->y_zp + t * rm->yzp + i * p->yzp_rs;
            for (int j = 0; j < yzp_cols; j++)
                yzp[(size_t)r * yzp_cols + j] = load_q(z + j * p->yzp_cs, p->out_kind == GK_QOUT_S8);
        }
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

    if (use_tall) {
        const int rc = kern->tall(M, N, K, p->a, p->a_rs, a_xor, p->b, p->b_rs, p->b_cs, b_xor,
                                  rowsum, &epi);
        gk_aligned_free(mem);
        return rc;
    }
    epi.b_colcorr = colcorr;
    if (separable) {
        epi.row_corr = row_corr;
        epi.col_corr = col_corr;
    }
    if (nblk > 1) {
        epi.part = part;
        epi.part_ld = (ptrdiff_t)(nc + GK_QGEMM_PART_PAD);
    }
    if (bc_use == BC_FILL && bcache_fill(kern, p, bc, 1) != 0) {
        gk_aligned_free(mem);
        return -1;
    }
    if (kern->begin)
        kern->begin();
    for (size_t jc = 0; jc < (size_t)N; jc += nc) {
        const int ncur = (int)((size_t)N - jc < nc ? (size_t)N - jc : nc);
        for (size_t is = 0; is < (size_t)M; is += ms) {
            const size_t iend = (size_t)M - is < ms ? (size_t)M : is + ms;
            for (int b = 0, pc = 0; b < nblk; b++, pc += kcb) {
                const int kcur = K - pc < kcb ? K - pc : kcb, last = b == nblk - 1;
                const size_t kcp = round_up((size_t)kcur, (size_t)kern->kstep);
                const int32_t *cs = colsum;
                if (cached) {
                    bp = bc->mem + (size_t)b * blk_bytes +
                         ((size_t)bc->n_off + jc) / (size_t)kern->nr * gk_qgemm_b_panel_stride(kern, kcp);
                    cs = bc->colsum + bc->n_off + jc;
                } else {
                    kern->pack_b(kcur, ncur, p->b + (ptrdiff_t)pc * p->b_rs + (ptrdiff_t)jc * p->b_cs,
                                 p->b_rs, p->b_cs, b_xor, bp, b == 0 ? colsum : colsum_blk);
                    if (b > 0)
                        add_sums(colsum, colsum_blk, ncur);
                }
                if (last) {
                    for (int j = 0; j < ncur; j++)
                        colcorr[jc + j] = (int32_t)((uint32_t)cs[j] - (uint32_t)K * (uint32_t)zb[jc + j]);
                    if (separable)
                        for (int j = 0; j < ncur; j++)
                            col_corr[jc + j] = (int32_t)((uint32_t)za[0] * (uint32_t)colcorr[jc + j]);
                }
                epi.part_mode = nblk == 1 ? GK_QPART_NONE
                                : b == 0  ? GK_QPART_STORE
                                : last    ? GK_QPART_FINISH
                                          : GK_QPART_ACC;
                if (nblk > 1) {
                    epi.part_m0 = (int)is;
                    epi.part_n0 = (int)jc;
                }
                for (size_t ic = is; ic < iend; ic += mc) {
                    const int mcur = (int)(iend - ic < mc ? iend - ic : mc);
                    /* this block's row sums: straight into rowsum for the first block */
                    int32_t *rsb = b == 0 ? rowsum + ic : rowsum_blk;
                    /* depth block b of A: its own slot when A is kept (a_keep) */
                    unsigned char *apb = (unsigned char *)ap + (a_keep ? (size_t)b * apack : 0);
                    const int repack = !a_keep || jc == 0;
                    if (!repack) {
                        /* A and its row sums as packed for the first column block */
                    } else if (!rm->a_seg) {
                        kern->pack_a(mcur, kcur, p->a + (ptrdiff_t)ic * p->a_rs + (ptrdiff_t)pc * p->a_cs,
                                     p->a_rs, p->a_cs, a_xor, apb, rsb);
                    } else {
                        /* pieces start at ic or at a matrix boundary: multiples of mr, so
                         * each starts a panel, where packing the block whole would put it */
                        for (int r0 = (int)ic, end = (int)ic + mcur; r0 < end;) {
                            const int t = r0 / rm->mi, i = r0 - t * rm->mi;
                            const int n = rm->mi - i < end - r0 ? rm->mi - i : end - r0;
                            kern->pack_a(n, kcur, p->a + t * rm->a + i * p->a_rs + (ptrdiff_t)pc * p->a_cs,
                                         p->a_rs, p->a_cs, a_xor,
                                         apb + (size_t)(r0 - (int)ic) * kcp * kern->a_elem_bytes,
                                         rsb + (r0 - (int)ic));
                            r0 += n;
                        }
                    }
                    if (b > 0 && repack)
                        add_sums(rowsum + ic, rowsum_blk, mcur);
                    if (last && separable)
                        for (int i = 0; i < mcur; i++)
                            row_corr[ic + i] = (int32_t)((uint32_t)rowsum[ic + i] * (uint32_t)zb[0]);
                    for (int jr = 0; jr < ncur; jr += kern->nr) {
                        const unsigned char *bpanel =
                            (const unsigned char *)bp +
                            (size_t)jr / (size_t)kern->nr * gk_qgemm_b_panel_stride(kern, kcp);
                        const int nrv = ncur - jr < kern->nr ? ncur - jr : kern->nr;
                        if (kern->ucolumn) {
                            kern->ucolumn(mcur, nrv, (int)kcp, apb, bpanel, &epi, (int)ic, (int)jc + jr);
                            continue;
                        }
                        for (int ir = 0; ir < mcur; ir += kern->mr) {
                            const unsigned char *apanel =
                                apb + (size_t)ir * kcp * kern->a_elem_bytes;
                            const int mrv = mcur - ir < kern->mr ? mcur - ir : kern->mr;
                            kern->ukernel(mrv, nrv, (int)kcp, apanel, bpanel, &epi, (int)ic + ir,
                                          (int)jc + jr);
                        }
                    }
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
        if (run_one(kern, &q, NULL, NULL, 1) != 0) {
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

/* bcache_fill's tasks: whole nr-column panels, each through every depth block (so a
 * column's sums stay with one task); about 2 per thread, one on one thread. */
typedef struct bfill_job {
    const gk_qgemm_kernel *kern;
    const gk_qgemm_problem *p;
    bcache *bc;
    int chunk; /* columns per task, a multiple of nr */
    volatile int failed;
} bfill_job;

static void bfill_task(void *ctx, ptrdiff_t t, int worker)
{
    bfill_job *j = (bfill_job *)ctx;
    const gk_qgemm_kernel *kern = j->kern;
    const gk_qgemm_problem *p = j->p;
    const int K = p->k, n0 = (int)t * j->chunk;
    const int nc = p->n - n0 < j->chunk ? p->n - n0 : j->chunk;
    const uint8_t b_xor = p->b_signed ? 0 : 0x80;
    int kcb, nblk;
    int32_t *blk = NULL;
    (void)worker;
    k_blocks(kern, K, &kcb, &nblk);
    const size_t blk_bytes = b_block_bytes(kern, (size_t)p->n, (size_t)kcb);
    if (nblk > 1 && (blk = (int32_t *)gk_aligned_alloc((size_t)nc * 4)) == NULL) {
        j->failed = 1;
        return;
    }
    for (int b = 0, pc = 0; b < nblk; b++, pc += kcb) {
        const int kcur = K - pc < kcb ? K - pc : kcb;
        const size_t kcp = round_up((size_t)kcur, (size_t)kern->kstep);
        kern->pack_b(kcur, nc, p->b + (ptrdiff_t)pc * p->b_rs + (ptrdiff_t)n0 * p->b_cs, p->b_rs,
                     p->b_cs, b_xor,
                     j->bc->mem + (size_t)b * blk_bytes +
                         (size_t)n0 / (size_t)kern->nr * gk_qgemm_b_panel_stride(kern, kcp),
                     b == 0 ? j->bc->colsum + n0 : blk);
        if (b > 0)
            add_sums(j->bc->colsum + n0, blk, nc);
    }
    gk_aligned_free(blk);
}

static int bcache_fill(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, bcache *bc,
                       int threads)
{
    bfill_job j;
    const int per = threads > 1 ? (p->n + 2 * threads - 1) / (2 * threads) : p->n;
    j.kern = kern;
    j.p = p;
    j.bc = bc;
    j.chunk = (int)round_up((size_t)(per > 0 ? per : 1), (size_t)kern->nr);
    j.failed = 0;
    gk_parallel_run((p->n + j.chunk - 1) / j.chunk, threads, bfill_task, &j);
    if (j.failed)
        return -1;
    bc->b = p->b;
    bc->n_all = p->n;
    bc->n_off = 0;
    return 0;
}

/* ---- threads ----------------------------------------------------------------------------
 * A product splits its output into a grid of tm x tn parts (gk_parallel_grid: edges on
 * whole mr x nr tiles, never K), each run by one task as a product of its own
 * (sub_problem: every pointer moved to the part's first row and column).  Integer sums
 * are exact, so results do not depend on the split.  Parts that split rows share one
 * packing of B (bcache, packed before the parts start by all threads, bcache_fill,
 * when it fits; then the grid is made for parts_per_thread parts per thread, taken as
 * threads finish); parts that split columns only pack their own columns of B.  A folded
 * batch (rm) and the small-M path split columns only. */

/* Multiply-adds per thread below which a product stays on fewer threads: a part must
 * pay for handing it to a worker (a few us when it spins, 0.1-0.2 ms when it sleeps).
 * Measured on Zen 4, 2 threads in a loop of calls: u8s8 192^3 (7M) stays serial, 256^3
 * 1.75-2.06x, 512^3 1.86-1.93x. */
#define GK_QPAR_MIN_MACS ((double)(1 << 22))
/* Below GK_QPAR_THIN_ROWS rows a product with B' already packed (gemmkit.pack_b) streams
 * it (each element serves m rows), so each multiply-add costs more time and fewer of them
 * pay for a thread: the threshold is m / GK_QPAR_THIN_ROWS of GK_QPAR_MIN_MACS, at least
 * GK_QPAR_THIN_MIN_MACS: a part streams at least 1 MB of B'.  Zen 5, 2 threads vs 1, u8s8
 * with pack_b: 1 x 2048 x 2048 (2 MB a part) 1.9-2.0x, 1 x 4096 x 4096 2.0x; parts of
 * 0.5 MB (3 and 4 x 1024 x 1024, 2 x 512 x 2048) measured 0.96x or 1.9-2.0x from run to
 * run (a part of ~5 us is done before a spinning worker picks it up), so they stay
 * serial.  B packed per call keeps GK_QPAR_MIN_MACS: there the small-M path's column
 * parts measured 0.84x at 2 and 4 x 1024 x 1024. */
#define GK_QPAR_THIN_ROWS 4
#define GK_QPAR_THIN_MIN_MACS ((double)(1 << 20))

static double qpar_min_macs(int m)
{
    const double thin = GK_QPAR_MIN_MACS * (double)m / GK_QPAR_THIN_ROWS;
    if (m >= GK_QPAR_THIN_ROWS)
        return GK_QPAR_MIN_MACS;
    return thin < GK_QPAR_THIN_MIN_MACS ? GK_QPAR_THIN_MIN_MACS : thin;
}

static gk_qgemm_problem sub_problem(const gk_qgemm_problem *p, ptrdiff_t m0, ptrdiff_t m1,
                                    ptrdiff_t n0, ptrdiff_t n1)
{
    gk_qgemm_problem q = *p;
    const ptrdiff_t ysz = p->out_kind == GK_QOUT_I32 ? 4 : 1;
    q.m = (int)(m1 - m0);
    q.n = (int)(n1 - n0);
    q.a = p->a + m0 * p->a_rs;
    q.b = p->b + n0 * p->b_cs;
    if (p->a_zp)
        q.a_zp = p->a_zp + m0 * p->a_zp_rs;
    if (p->b_zp)
        q.b_zp = p->b_zp + n0 * p->b_zp_cs;
    if (p->a_scale)
        q.a_scale = p->a_scale + m0 * p->as_rs;
    if (p->b_scale)
        q.b_scale = p->b_scale + n0 * p->bs_cs;
    if (p->y_scale)
        q.y_scale = p->y_scale + m0 * p->ys_rs + n0 * p->ys_cs;
    if (p->y_zp)
        q.y_zp = p->y_zp + m0 * p->yzp_rs + n0 * p->yzp_cs;
    q.y = (char *)p->y + (m0 * p->ldy + n0) * ysz;
    return q;
}

typedef struct qpar_job {
    const gk_qgemm_kernel *kern;
    const gk_qgemm_problem *p;
    const rowmap *rm;
    const bcache *bc; /* holds p's B (n_off 0): every part reads it; NULL: each packs its own */
    int tm, tn;
    volatile int failed;
} qpar_job;

static void qpar_task(void *ctx, ptrdiff_t t, int worker)
{
    qpar_job *j = (qpar_job *)ctx;
    ptrdiff_t m0, m1, n0, n1;
    gk_qgemm_problem q;
    (void)worker;
    gk_parallel_grid_part(j->p->m, j->p->n, j->kern->mr, j->kern->nr, j->tm, j->tn, t,
                          &m0, &m1, &n0, &n1);
    q = sub_problem(j->p, m0, m1, n0, n1);
    if (j->bc != NULL) {
        bcache part = *j->bc; /* read only: the part's columns of the shared packing */
        part.n_off += (int)n0;
        if (run_one(j->kern, &q, j->rm, &part, 0) != 0)
            j->failed = 1;
    } else if (run_one(j->kern, &q, j->rm, NULL, 0) != 0) {
        j->failed = 1;
    }
}

/* Runs p split over the threads when that pays: returns 1 with the status in *rc, or 0
 * (run it on this thread). */
static int split_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const rowmap *rm,
                     bcache *bc, int *rc)
{
    int smallm = uses_smallm(kern, p, bc);
    const int tall = uses_tall(kern, p, rm, bc); /* each part packs its small B itself */
    qpar_job j;
    bcache own = {NULL, NULL, NULL, 0, 0};
    int threads = gk_parallel_threads(), parts, flags, use = BC_NONE;
    /* b_ready: B' already packed (pack_b, or a batch's earlier matrix); share: B' read by
     * every part, packed here once by all threads if not ready (gk_parallel_share_b) */
    int b_ready = 0, share = 0;
    if (threads <= 1)
        return 0;
    /* past smallm_max the small-M path needs a wide B in each column part: else split as
     * a packed product (row parts share one packing of B) */
    if (smallm && !gk_qgemm_smallm_rows_ok(kern, p->m, p->k, p->n / threads))
        smallm = 0;
    /* Not packed here for a family with deeper blocks for large products (kc_deep, AMX):
     * a part reading a shared B' has the depth blocks it was packed in (kc), and on
     * Sapphire Rapids 16 threads ran 2048^3 1.1-1.2x slower that way than with per-part
     * packing in blocks of kc_deep */
    if (!smallm && !tall) {
        use = bcache_use(bc, p);
        b_ready = use == BC_READ && bc->n_off == 0;
        share = gk_parallel_share_b() &&
                (b_ready || (bcache_panel_bytes(kern, p->k, p->n) <= GK_QSHARED_B_MAX &&
                             kern->kc_deep <= gk_qgemm_kc(kern)));
    }
    flags = (rm == NULL && !smallm ? GK_GRID_ROWS : 0) | (share ? GK_GRID_B_SHARED : 0);
    parts = gk_parallel_grid(p->m, p->n, p->k, kern->mr, kern->nr,
                             b_ready ? qpar_min_macs(p->m) : GK_QPAR_MIN_MACS,
                             share ? threads * gk_parallel_parts_per_thread() : threads, flags,
                             &j.tm, &j.tn);
    if (parts <= 1)
        return 0;
    j.kern = kern;
    j.p = p;
    j.rm = rm;
    j.bc = NULL;
    j.failed = 0;
    if (b_ready) {
        j.bc = bc;
    } else if (!smallm && !tall && (share ? j.tm > 1 : j.tn == 1)) {
        /* row parts would each pack B: pack it once, all threads */
        if (use != BC_FILL)
            bc = bcache_new(kern, p, &own) == 0 ? &own : NULL;
        if (bc != NULL && bcache_fill(kern, p, bc, threads) == 0)
            j.bc = bc;
        else if (share) /* no memory for it: each part packs its own, a grid for that */
            (void)gk_parallel_grid(p->m, p->n, p->k, kern->mr, kern->nr, GK_QPAR_MIN_MACS,
                                   threads, flags & GK_GRID_ROWS, &j.tm, &j.tn);
    }
    gk_parallel_run((ptrdiff_t)j.tm * j.tn, threads, qpar_task, &j);
    gk_aligned_free(own.mem);
    *rc = j.failed ? -1 : 0;
    return 1;
}

/* ---- batches ---------------------------------------------------------------------- */

/* out = in with size-1 dims dropped and neighbours merged where every operand steps
 * uniformly across both (outer stride == inner stride * inner size), so a contiguous
 * batch of any rank becomes one dim.  Returns 0 when the batch is empty. */
static int coalesce(const gk_qbatch *in, gk_qbatch *out)
{
    int nd = 0;
    for (int d = 0; d < in->ndim; d++) {
        const ptrdiff_t n = in->shape[d];
        if (n <= 0)
            return 0;
        if (n == 1)
            continue;
        int merge = nd > 0;
        for (int x = 0; x < GK_QB_NOPS && merge; x++)
            merge = out->stride[x][nd - 1] == in->stride[x][d] * n;
        if (merge) {
            out->shape[nd - 1] *= n; /* <= the output's element count: no overflow */
        } else {
            out->shape[nd] = n;
            nd++;
        }
        for (int x = 0; x < GK_QB_NOPS; x++)
            out->stride[x][nd - 1] = in->stride[x][d];
    }
    out->ndim = nd;
    return 1;
}

/* Matrix of p at the byte offsets off[]. */
static void at_offsets(const gk_qgemm_problem *p, const ptrdiff_t *off, gk_qgemm_problem *q)
{
    *q = *p;
    q->a = p->a + off[GK_QB_A];
    q->b = p->b + off[GK_QB_B];
    if (p->a_zp)
        q->a_zp = p->a_zp + off[GK_QB_AZP];
    if (p->b_zp)
        q->b_zp = p->b_zp + off[GK_QB_BZP];
    if (p->a_scale)
        q->a_scale = f32_at(p->a_scale, off[GK_QB_AS], 0);
    if (p->b_scale)
        q->b_scale = f32_at(p->b_scale, off[GK_QB_BS], 0);
    if (p->y_scale)
        q->y_scale = f32_at(p->y_scale, off[GK_QB_YS], 0);
    if (p->y_zp)
        q->y_zp = p->y_zp + off[GK_QB_YZP];
    q->y = (char *)p->y + off[GK_QB_Y];
}

/* fn on every matrix of a coalesced, non-empty batch c, row-major in the batch index. */
static int each_matrix(const gk_qgemm_problem *p, const gk_qbatch *c,
                       int (*fn)(void *ctx, const gk_qgemm_problem *q), void *ctx)
{
    ptrdiff_t idx[GK_QBATCH_MAXD], off[GK_QB_NOPS];
    for (int d = 0; d < c->ndim; d++)
        idx[d] = 0;
    for (int x = 0; x < GK_QB_NOPS; x++)
        off[x] = 0;
    for (;;) {
        gk_qgemm_problem q;
        at_offsets(p, off, &q);
        const int rc = fn(ctx, &q);
        if (rc != 0)
            return rc;
        int d = c->ndim - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < c->shape[d]) {
                for (int x = 0; x < GK_QB_NOPS; x++)
                    off[x] += c->stride[x][d];
                break;
            }
            for (int x = 0; x < GK_QB_NOPS; x++)
                off[x] -= c->stride[x][d] * (c->shape[d] - 1);
            idx[d] = 0;
        }
        if (d < 0)
            return 0;
    }
}

/* gk_qbatch_foreach's matrices as gk_parallel tasks: task t is the matrix whose batch
 * index unravels from t (row-major over c.shape); each call owns its buffers. */
typedef struct {
    const gk_qgemm_problem *p;
    gk_qbatch c;
    int (*fn)(void *ctx, const gk_qgemm_problem *q);
    void *ctx;
    volatile int failed; /* set, never cleared: any failing matrix fails the call */
} foreach_job;

static void foreach_task(void *arg, ptrdiff_t t, int worker)
{
    foreach_job *j = (foreach_job *)arg;
    ptrdiff_t off[GK_QB_NOPS] = {0};
    gk_qgemm_problem q;
    (void)worker;
    for (int d = j->c.ndim - 1; d >= 0; d--) {
        const ptrdiff_t i = t % j->c.shape[d];
        t /= j->c.shape[d];
        for (int x = 0; x < GK_QB_NOPS; x++)
            off[x] += i * j->c.stride[x][d];
    }
    at_offsets(j->p, off, &q);
    if (j->fn(j->ctx, &q) != 0)
        j->failed = 1;
}

int gk_qbatch_foreach(const gk_qgemm_problem *p, const gk_qbatch *batch,
                      int (*fn)(void *ctx, const gk_qgemm_problem *q), void *ctx)
{
    foreach_job j;
    ptrdiff_t n = 1;
    if (!batch || batch->ndim == 0)
        return fn(ctx, p);
    if (!coalesce(batch, &j.c))
        return 0;
    for (int d = 0; d < j.c.ndim; d++)
        n *= j.c.shape[d]; /* <= the output's element count: fits */
    j.p = p;
    j.fn = fn;
    j.ctx = ctx;
    j.failed = 0;
    gk_parallel_for(n, foreach_task, &j);
    return j.failed ? -1 : 0;
}

/* fold_batch's answers: the batch cannot fold, folds as it is, or folds once A's
 * matrices are gathered into one (batch * M, K) block. */
enum { FOLD_NO = 0, FOLD_AS_IS, FOLD_GATHER_A };

/* The batch c (one dim) as one product of batch * M rows in f / rm, when B, its zero
 * point and scale are shared and the output's rows continue from each matrix to the
 * next; FOLD_GATHER_A when A's rows do not (f then still reads A as p does). */
static int fold_batch(const gk_qgemm_problem *p, const gk_qbatch *c, gk_qgemm_problem *f,
                      rowmap *rm)
{
    const ptrdiff_t nb = c->shape[0], M = p->m;
    const ptrdiff_t ysz = p->out_kind == GK_QOUT_I32 ? 4 : 1;
    const ptrdiff_t st_a = c->stride[GK_QB_A][0], st_y = c->stride[GK_QB_Y][0];
    if (c->ndim != 1 || c->stride[GK_QB_B][0] != 0 || c->stride[GK_QB_BZP][0] != 0 ||
        c->stride[GK_QB_BS][0] != 0 || p->k > GK_QGEMM_KCHUNK || nb > INT_MAX / M)
        return FOLD_NO;
    if (M == 1 ? st_y % ysz != 0 : st_y != M * p->ldy * ysz)
        return FOLD_NO;
    if (p->out_kind != GK_QOUT_I32) {
        const int rows_vary = p->as_rs != 0 || p->ys_rs != 0 || c->stride[GK_QB_AS][0] != 0 ||
                              c->stride[GK_QB_YS][0] != 0;
        const int yzp_rows_vary = p->yzp_rs != 0 || c->stride[GK_QB_YZP][0] != 0;
        const size_t mn = (size_t)(nb * M) * (size_t)p->n;
        if ((rows_vary && (p->bs_cs != 0 || p->ys_cs != 0) && mn > GK_QFOLD_GRID_MAX) ||
            (yzp_rows_vary && p->yzp_cs != 0 && mn > GK_QFOLD_GRID_MAX))
            return FOLD_NO;
    }
    *f = *p;
    f->m = (int)(nb * M);
    if (M == 1) {
        f->a_rs = st_a; /* one row per matrix: the batch stride is the row stride */
        f->ldy = st_y / ysz;
    }
    rm->mi = (int)M;
    rm->azp = c->stride[GK_QB_AZP][0];
    rm->as = c->stride[GK_QB_AS][0];
    rm->ys = c->stride[GK_QB_YS][0];
    rm->yzp = c->stride[GK_QB_YZP][0];
    rm->a_seg = 0;
    rm->a = st_a;
    /* A is int8: its strides in elements are bytes */
    return M == 1 || st_a == M * p->a_rs ? FOLD_AS_IS : FOLD_GATHER_A;
}

/* A's batch c->shape[0] matrices copied, row after row, into dst (batch * M rows of K):
 * the folded product then reads them as one (batch * M, K) matrix. */
static void gather_a(const gk_qgemm_problem *p, const gk_qbatch *c, uint8_t *dst)
{
    for (ptrdiff_t t = 0; t < c->shape[0]; t++, dst += (size_t)p->m * p->k)
        gather_rowmajor(p->a + t * c->stride[GK_QB_A][0], p->a_rs, p->a_cs, p->m, p->k, dst);
}

/* A batch of B matrices packed one by one (gemmkit.pack_b of a batched B): nmat blocks
 * of `bytes` each at mem, block t packed from the k x n matrix at b0 + t * k * n. */
typedef struct bset {
    const unsigned char *mem;
    size_t bytes;
    const uint8_t *b0;
    ptrdiff_t nmat;
} bset;

typedef struct batch_run {
    const gk_qgemm_kernel *kern;
    bcache *bc;
    const bset *set; /* or NULL */
    int may_split;
} batch_run;

static int run_matrix(void *ctx, const gk_qgemm_problem *q)
{
    const batch_run *r = (const batch_run *)ctx;
    if (r->set) {
        /* q's B is one of the set's matrices (the caller's promise); its own packing */
        const ptrdiff_t kn = (ptrdiff_t)q->k * q->n, off = q->b - r->set->b0;
        if (kn > 0 && off >= 0 && off % kn == 0 && off / kn < r->set->nmat) {
            bcache bc = bcache_at(r->kern, q, (void *)(r->set->mem + (size_t)(off / kn) * r->set->bytes));
            bc.b = q->b;
            return run_one(r->kern, q, NULL, &bc, r->may_split);
        }
    }
    return run_one(r->kern, q, NULL, r->bc, r->may_split);
}

/* pre: B packed whole by gk_qgemm_pack_b_whole (B shared by every matrix), or NULL;
 * set: each matrix's B packed (pre is NULL), or NULL. */
static int qgemm_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p_in,
                     const gk_qbatch *batch, bcache *pre, const bset *set)
{
    /* the call's output size (gk_qgemm_problem.y_call_bytes), which every part and
     * matrix below inherits from this copy */
    gk_qgemm_problem pe = *p_in;
    const gk_qgemm_problem *p = &pe;
    pe.y_call_bytes = (double)(p->m > 0 ? p->m : 0) * (double)(p->n > 0 ? p->n : 0) *
                      (p->out_kind == GK_QOUT_I32 ? 4.0 : 1.0);
    for (int d = 0; batch && d < batch->ndim; d++)
        pe.y_call_bytes *= (double)batch->shape[d];
    gk_qbatch c;
    gk_qgemm_problem f;
    rowmap rm;
    if (!batch || batch->ndim == 0)
        return run_one(kern, p, NULL, pre, 1);
    if (p->m <= 0 || p->n <= 0 || !coalesce(batch, &c))
        return 0;
    if (c.ndim == 0)
        return run_one(kern, p, NULL, pre, 1);
    const int fold = fold_batch(p, &c, &f, &rm);
    if (fold == FOLD_AS_IS)
        return run_one(kern, &f, &rm, pre, 1);
    /* Matrices whose rows do not continue (column-major, reversed, apart) are packed
     * matrix by matrix into the folded product's panels where each starts a panel, else
     * gathered first when that is cheap next to the product (K * M * batch bytes against
     * N times as many multiply-adds): small matrices gain the most from folding. */
    if (fold == FOLD_GATHER_A && p->m % kern->mr == 0 && !smallm_runs(kern, &f)) {
        rm.a_seg = 1;
        return run_one(kern, &f, &rm, pre, 1);
    }
    if (fold == FOLD_GATHER_A && (size_t)f.m * (size_t)p->k <= GK_QFOLD_GATHER_MAX_BYTES) {
        uint8_t *ga = (uint8_t *)gk_aligned_alloc((size_t)f.m * (size_t)p->k);
        if (!ga)
            return -1;
        gather_a(p, &c, ga);
        f.a = ga;
        f.a_rs = p->k;
        f.a_cs = 1;
        const int rc = run_one(kern, &f, &rm, pre, 1);
        gk_aligned_free(ga);
        return rc;
    }

    /* Matrix by matrix.  Matrices too small to split over the threads run as parallel
     * tasks, one matrix each.  Otherwise they run in turn, each split over the threads,
     * and when the innermost batch dim shares B consecutive matrices read one packing of
     * it (the cache is repacked whenever B moves). */
    bcache bc = {NULL, NULL, NULL, p->n, 0};
    batch_run r = {kern, pre, set, 1};
    {
        ptrdiff_t nmat = 1;
        for (int d = 0; d < c.ndim; d++)
            nmat *= c.shape[d];
        const int threads = gk_parallel_threads();
        if (threads > 1 && nmat > 1 &&
            (double)p->m * (double)p->n * (double)p->k <
                GK_QPAR_MIN_MACS * gk_parallel_work_scale() * threads) {
            r.may_split = 0; /* pre (read only, or NULL) is safe to share */
            return gk_qbatch_foreach(p, &c, run_matrix, &r);
        }
    }
    if (pre == NULL && set == NULL && c.stride[GK_QB_B][c.ndim - 1] == 0 &&
        p->k <= GK_QGEMM_KCHUNK && !smallm_runs(kern, p)) {
        const int made = bcache_new(kern, p, &bc);
        if (made < 0)
            return -1;
        if (made == 0)
            r.bc = &bc;
    }
    const int rc = each_matrix(p, &c, run_matrix, &r);
    if (bc.mem)
        gk_aligned_free(bc.mem);
    return rc;
}

int gk_qgemm_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const gk_qbatch *batch)
{
    return qgemm_run(kern, p, batch, NULL, NULL);
}

/* ---- pre-packed B (gemmkit.pack_b) -------------------------------------------------- */

size_t gk_qgemm_packed_b_size(const gk_qgemm_kernel *kern, int k, int n)
{
    if (k <= 0 || n <= 0 || k > GK_QGEMM_KCHUNK)
        return 0;
    return bcache_panel_bytes(kern, k, n) + gk_round64((size_t)n * 4);
}

int gk_qgemm_pack_b_whole(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, void *mem)
{
    bcache bc;
    if (gk_qgemm_packed_b_size(kern, p->k, p->n) == 0)
        return -1;
    bc = bcache_at(kern, p, mem);
    return bcache_fill(kern, p, &bc, gk_parallel_threads());
}

int gk_qgemm_run_packed(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                        const gk_qbatch *batch, const void *packed_b, ptrdiff_t nmat)
{
    bcache bc;
    const size_t bytes = gk_qgemm_packed_b_size(kern, p->k, p->n);
    if (packed_b == NULL || bytes == 0 || nmat < 1)
        return qgemm_run(kern, p, batch, NULL, NULL);
    if (nmat > 1) {
        const bset set = {(const unsigned char *)packed_b, bytes, p->b, nmat};
        return qgemm_run(kern, p, batch, NULL, &set);
    }
    bc = bcache_at(kern, p, (void *)packed_b);
    bc.b = p->b; /* packed from this very B (the caller's promise) */
    return qgemm_run(kern, p, batch, &bc, NULL);
}
