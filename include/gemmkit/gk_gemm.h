/* The Gemm contract: Y = alpha * A' @ B' + beta * C for one 2-D problem.
 *
 * Element types and their accumulators (gk_gemm_dtype -> gk_gemm_acc):
 *     float16, bfloat16, float32 -> float   (16-bit inputs widened exactly while packing,
 *                                            Y rounded once, RNE, in the epilogue)
 *     float64                    -> double
 *     int32, uint32              -> uint32_t (sums and products wrap modulo 2**32)
 *     int64, uint64              -> uint64_t (wrap modulo 2**64)
 * Signed and unsigned integers share one accumulator: two's complement wrap-around makes
 * the low 32/64 bits of every sum and product independent of signedness.
 *
 * Blocking is BLIS-like: the driver walks column stripes of NC, K blocks of KC and row
 * blocks of MC; it packs a KC x NC block of B' and an MC x KC block of A' (converting to the
 * accumulator type) and calls the micro-kernel on MR x NR register tiles.  The micro-kernel
 * accumulates into the output tile itself (Y when Y's element is the accumulator type,
 * else a float32 workspace), a first-K-block flag telling it to overwrite; after a tile's
 * last K block the epilogue applies alpha, beta*C and the output cast.  A kernel family
 * bundles micro-kernel, packing format, block sizes and epilogue, chosen together;
 * gk_gemm_kernel_for picks one per element type from the Gemm rows of the one dispatch
 * (src/csrc/core/gk_dispatch.c; today the scalar families, SIMD families plug in there).
 *
 * Strides everywhere are in BYTES and may be negative, zero (broadcast) or not a multiple
 * of the element size (elements are read with memcpy, so unaligned data is fine).
 */
#ifndef GEMMKIT_GK_GEMM_H
#define GEMMKIT_GK_GEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gk_gemm_dtype {
    GK_DT_F16 = 0,
    GK_DT_BF16 = 1,
    GK_DT_F32 = 2,
    GK_DT_F64 = 3,
    GK_DT_I32 = 4,
    GK_DT_U32 = 5,
    GK_DT_I64 = 6,
    GK_DT_U64 = 7,
    GK_DT_COUNT = 8,
};

enum gk_gemm_acc {
    GK_ACC_F32 = 0, /* float */
    GK_ACC_F64 = 1, /* double */
    GK_ACC_U32 = 2, /* uint32_t */
    GK_ACC_U64 = 3, /* uint64_t */
};

/* Return codes of gk_gemm / gk_gemm_run. */
enum gk_gemm_status {
    GK_GEMM_OK = 0,
    GK_GEMM_ENOMEM = 1,  /* a workspace allocation failed (or its size overflows size_t) */
    GK_GEMM_EINVAL = 2,  /* bad dtype / negative size / kernel family of another dtype */
};

/* A strided operand as the packers see it: element (r, c) at p + r*rs + c*cs bytes (for A'
 * r is the row i and c the depth k; for B' r is the depth k and c the column j).
 * ctx is NULL for Gemm (a family with check_packed: the call's gk_gemm_seen); packers of
 * other operators (QLinearMatMul's float path, which dequantizes while packing) point it
 * at their parameters. */
typedef struct gk_gemm_src {
    const char *p;
    ptrdiff_t rs, cs;
    const void *ctx;
} gk_gemm_src;

/* Packing into the standard panel layout.  The float32 family (GK_DT_F32) must use it:
 * QLinearMatMul's float path runs that family's kernel on panels packed by its own
 * dequantizing packers.  Other families may define their own layout (e.g. bf16 pairs
 * interleaved for vdpbf16ps) with their own packers.
 * pack_a packs rows [i0, i0 + mc) x depth [k0, k0 + kc) of A' into ceil(mc/mr) panels of
 * mr rows; panel p holds element (i0 + p*mr + i, k0 + k) at [k*mr + i] (accumulator type),
 * rows beyond mc are zero.  pack_b packs depth [k0, k0 + kc) x columns [j0, j0 + nc) of B'
 * into ceil(nc/nr) panels of nr columns; panel q holds (k0 + k, j0 + q*nr + j) at
 * [k*nr + j], columns beyond nc are zero.  Panels follow each other with no gap (a panel
 * of A is kc*mr elements).  kc >= 1.  Only addresses of real elements are formed. */
typedef void (*gk_gemm_pack_a_fn)(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,
                                  int kc, int mr, void *dst);
typedef void (*gk_gemm_pack_b_fn)(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,
                                  int nc, int nr, void *dst);

/* Micro-kernel (BLIS style: it accumulates into the output tile).  For i < mr_valid,
 * j < nr_valid, in the accumulator type:
 *     c[i*ldc + j] = (first ? 0 : c[i*ldc + j]) + a_panel[0*mr + i] * b_panel[0*nr + j]
 *                                               + a_panel[1*mr + i] * b_panel[1*nr + j]
 *                                               + ...   (k = 0 .. kc-1, left to right)
 * i.e. the running sum of each output continues K block after K block in increasing k,
 * starting from +0 (a sum of -0 products is +0); float products are rounded (no FMA in
 * the scalar oracle; a SIMD family's FMA changes the rounding within the documented bounds,
 * never the order -- but QLinearMatMul's float8 path, which runs the float32 family, is
 * bit-identical to its definition only with separately rounded products).  first != 0: c is only written (never read: it may hold garbage,
 * e.g. an uninitialised Y).  Elements of c outside mr_valid x nr_valid are neither read
 * nor written: they may lie beyond Y (edge tiles: 1 <= mr_valid <= mr, 1 <= nr_valid <= nr;
 * a kernel may compute the whole tile in registers and store only the valid part, with
 * masked stores or through a local tile).  ldc is in elements; c is aligned for the
 * accumulator type.  kc == 0 happens only with first (K == 0): the tile is set to zeros;
 * the panels are then not read.  c is Y itself when Y's element has the accumulator's
 * type (float32, float64, all integers: int32/int64 storage is written as its unsigned
 * variant), else a float32 workspace (float16/bfloat16, QLinearMatMul's 8-bit outputs). */
typedef void (*gk_gemm_ukernel_fn)(int kc, const void *a_panel, const void *b_panel, void *c,
                                   ptrdiff_t ldc, int mr_valid, int nr_valid, int first);

/* Epilogue: runs once per output tile, right after its last K block, on outputs
 * (m0 + i, n0 + j), i < rows, j < cols, whose finished sums are acc[i*ldacc + j]
 * (accumulator type).  When Y's element is the accumulator type, acc IS Y's tile
 * (ldacc = Y's row stride) and the epilogue rewrites it in place; otherwise acc is the
 * float32 workspace and the epilogue writes Y.  ctx is the operator's (a gk_gemm_epi for
 * Gemm).  A NULL epilogue means the sums are the result (Gemm with alpha == 1, no C). */
typedef void (*gk_gemm_epilogue_fn)(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows,
                                    int cols, void *acc, ptrdiff_t ldacc);

/* A micro-kernel reading B' in place (the small-call path, see gk_gemm_kernel): as
 * gk_gemm_ukernel_fn, but B' row k of the tile is at (const char *)b + k*ldb bytes, nr
 * elements of the accumulator type, all readable (the driver passes only full-width
 * column tiles; ldb may be negative or unaligned). */
typedef void (*gk_gemm_ukernel_ldb_fn)(int kc, const void *a_panel, const void *b,
                                       ptrdiff_t ldb, void *c, ptrdiff_t ldc, int mr_valid,
                                       int nr_valid, int first);

/* The first `rows` rows of A (1 <= rows <= GK_GEMM_STRIP_ROWS) against ntiles
 * full-width tiles of B': for i < rows, j < ntiles * nr,
 * c[i*ldc + j] = (first ? +0 : c[i*ldc + j]) + sum_k a(i, k) b(k, j), a(i, k) at
 * element k*mr + i of the packed A panel; tile t's row k (nr elements of the accumulator
 * type, all readable) at (const char *)b + t*ldt + k*ldb bytes: B' in place (ldt = nr
 * elements) or a pre-packing's panels (ldb = nr elements, ldt = a panel).  Per output it
 * performs ukernel_ldb's operations with mr_valid == rows in the same order: the same
 * bits.  wide: 0, or where one tile at a time leaves too few sums in flight, so that
 * the kernel may run several tiles side by side (every output's bits are the same):
 * GK_GEMM_STRIP_FROM_MEMORY, B' in place but larger than the last-level cache (its
 * loads dominate), or GK_GEMM_STRIP_PACKED, packed panels (loads hit, the FMA chains are
 * the limit: a kernel whose wide steps would spill registers keeps to one tile). */
typedef void (*gk_gemm_ukernel_strip_fn)(int kc, const void *a_panel, const void *b,
                                         ptrdiff_t ldb, ptrdiff_t ldt, void *c, ptrdiff_t ldc,
                                         int rows, int ntiles, int first, int wide);
#define GK_GEMM_STRIP_ROWS 3
#define GK_GEMM_STRIP_FROM_MEMORY 1
#define GK_GEMM_STRIP_PACKED 2

/* A kernel family for one element type: micro-kernel, packing format, block sizes and
 * epilogue, chosen together.  Invariants: mc % mr == 0, nc % nr == 0, all block sizes > 0
 * and small enough that a packed block (mc*kc or kc*nc elements of 8 bytes) fits
 * comfortably in int.  There is no cap on the tile (mr x nr): the driver never keeps a
 * tile of its own (AVX-512 14x32 / 6x64 and AMX 32x32 / 16x64 tiles are fine).
 *
 * Block sizes at run time: a family with cache_blocks != 0 has its mc/kc/nc computed by
 * gk_gemm_blocking() from the caches this CPU reports (gk_cpu_caches(): KC so that a B
 * micro-panel fills up to twice L1, at most 512 deep -- four times L1 and 1024 deep where
 * L2 is 2 MB or more --, MC x KC in about half of L2, KC x NC in a quarter of the
 * LLC); its struct's mc/kc/nc are then the fallback for a cache size the CPU does not
 * report (0: ARM64, unknown CPUs).  cache_blocks == 2: only mc and nc come from the
 * caches, kc is the struct's (a family whose best depth is not set by L1: bfloat16 on
 * vdpbf16ps streams its micro-panels from L2 and pays a pass over the float32 workspace
 * per K block).  The driver and every reporter (_gemm_family_info) read the sizes
 * through gk_gemm_blocking(), never from the struct directly.
 *
 * Optional members (zero / NULL in families that do not have them; positional
 * initializers may stop before them):
 *   ukernel_rounded  the micro-kernel with each product rounded before its add (mul,
 *                    then add, same k order): its sums are the scalar oracle's bit for
 *                    bit.  QLinearMatMul's float8 path runs it (its dequantized values
 *                    are not exact products under FMA).  NULL: ukernel already is.
 *   ukernel_ldb      the same micro-kernel as ukernel reading B' in place; with it, and
 *                    B' contiguous along its columns in the accumulator type, gk_gemm_run
 *                    skips packing B for small problems (GK_GEMM_SMALL_FLOPS) and packs
 *                    only one A micro-panel at a time.
 *   pack_esz         bytes a packed element occupies, for gk_gemm_blocking's cache
 *                    formulas (0: the accumulator's size).  The driver still places
 *                    panels kc*mr / kc*nr accumulator-sized elements apart, so a family
 *                    with denser panels (bfloat16 pairs: 2 bytes per element, odd kc
 *                    padded to a pair) leaves the rest of each panel's slot untouched.
 *   ukernel_strip    NULL, or ukernel_ldb for 1..GK_GEMM_STRIP_ROWS rows over a whole
 *                    strip of tiles (gk_gemm_ukernel_strip_fn): the in-place path runs
 *                    a product of that few rows (M = 1: a GEMV) through it, one call
 *                    per K block instead of one per tile, and so does the blocked path
 *                    over packed panels (a pre-packed B') where the family also has
 *                    ukernel_ldb: it stands in for ukernel there, so a copy of a family
 *                    that swaps ukernel (for ukernel_rounded) clears both.  A family
 *                    without ukernel_ldb (the float16/bfloat16 widening ones) has it
 *                    for packed panels only: run_thin_bt's grouped tiles (thin_t_tiles).
 *   begin, end       NULL, or called by the blocked path on the thread that runs a part
 *                    of a call, before its first and after its last micro-kernel call
 *                    (an AMX family loads its tile configuration and releases the tiles:
 *                    the state is per thread).  A family with them has no ukernel_ldb
 *                    or ukernel_strip (the in-place paths do not call them).
 *   kc_sub           0, or the depth of the sub-blocks a K block of at least twice this
 *                    depth runs in, one column tile at a time: every row tile's first
 *                    sub-block, then every row tile's next one, ..., the last sub-block
 *                    taking the rest (kc_sub to 2 kc_sub - 1 deep).  The sub-block's
 *                    part of the B micro-panel stays in L1 while the column strip's
 *                    running sums (MC x nr) wait in L2, so the family's KC can be deep
 *                    (few passes over the sums) without streaming B from L2.  The
 *                    micro-kernel gets panels ks*mr*pack_esz / ks*nr*pack_esz bytes into
 *                    the packed ones (ks: the sub-block's start, a multiple of kc_sub):
 *                    the family's layout must put depth ks there, and read a sub-block of
 *                    depth kcs as it would a K block of that depth.
 *   kc_thin          0, or the K block of the thin path for this family (gk_gemm_plan.
 *                    kc_thin; 0: GK_GEMM_THIN_KC_PACKED): a family whose one step is
 *                    deeper than that (AMX tiles: 32) sets a multiple of its step.
 *   min_rows,        0, or the size rule: gk_gemm_run hands a call with fewer rows (M),
 *   min_depth,       a shallower K, or fewer multiply-adds (M*N*K) to the next family of
 *   min_macs         the row (gk_gemm_kernel_after) instead (a family whose setup does not
 *                    pay on small calls); min_rows not where B' comes packed for the
 *                    family (gemmkit.pack_b: the next family would pack B per call).
 *                    Performance only: tests switch the rules off
 *                    (gk_gemm_set_size_rules) to run the family on every shape.
 *   check_packed     NULL, or the second half of a guard whose scan the packers do while
 *                    packing: gk_gemm_run points gk_gemm_src.ctx of A' and B' at the
 *                    call's gk_gemm_seen (writable; gk_gemm_pack_b_whole at one it keeps
 *                    with the packing) and calls check_packed after the call; 0 = the
 *                    result may leave the documented bound, and the call runs again on
 *                    the next family of the row, which rewrites all of Y (Y never
 *                    aliases A', B' or C).  A family with it has no ukernel_ldb (B' is
 *                    packed, so seen).
 *   kc_thin_t        0, or the family's own K block of thin A with B' columns contiguous
 *                    along k (run_thin_bt) where B' is larger than the last-level cache
 *                    (otherwise, and for 0: GK_GEMM_THIN_T_KC); a multiple of 32.
 *   thin_t_tiles     0, or the full column tiles run_thin_bt packs together and runs
 *                    as one ukernel_strip call (GK_GEMM_STRIP_PACKED) for 1..
 *                    GK_GEMM_STRIP_ROWS rows where B' fits half the last-level cache
 *                    (needs ukernel_strip; the same bits as tile by tile).
 *   ukernel_strip_h  NULL, or (a float16 / bfloat16 widening family) ukernel_strip reading
 *                    B' in place as its 16-bit codes, each widened exactly as the
 *                    family's pack_b widens it: B' row k of tile t at b + t*ldt + k*ldb
 *                    bytes, nr codes, all readable; c is the float32 workspace.  The same
 *                    operations as ukernel on B' packed by pack_b: the same bits.  With
 *                    it, a product of 1..GK_GEMM_STRIP_ROWS rows and B' rows contiguous
 *                    (Gemm's B, transB = 0) reads B' in place instead of packing it: the
 *                    in-place path with its sums in a float32 workspace.  A family
 *                    without it hands such a call (B' not packed for it) to the first
 *                    of its row that has it (gk_gemm_thin_16bit_family; a size rule). */
struct gk_gemm_args;
/* What the packers of a family with check_packed saw of one call's operands (see
 * gk_gemm_kernel): a family-defined minimum and maximum per operand (the bfloat16 dot
 * families: gk_bf16_span.lo and .hi; 0xffff and 0 for nothing seen), which packers of
 * every thread lower / raise atomically through gk_gemm_src.ctx (a family whose guard
 * needs no maximum leaves it).  A call reading a pre-packing of B' takes b_min and b_max
 * from what gk_gemm_pack_b_whole's packers saw, kept with the packing. */
typedef struct gk_gemm_seen {
    unsigned a_min, b_min, a_max, b_max;
} gk_gemm_seen;
#define GK_GEMM_SEEN_NOTHING {0xffffu, 0xffffu, 0u, 0u}
typedef struct gk_gemm_kernel {
    const char *isa;      /* "scalar", "avx2", ... */
    int dtype;            /* enum gk_gemm_dtype this family serves */
    int acc;              /* enum gk_gemm_acc */
    int mr, nr;           /* register tile */
    int mc, kc, nc;       /* cache blocks (the fallback when cache_blocks, see above) */
    gk_gemm_pack_a_fn pack_a;
    gk_gemm_pack_b_fn pack_b;
    gk_gemm_ukernel_fn ukernel;
    gk_gemm_epilogue_fn epilogue; /* Gemm's epilogue for this dtype (ctx: gk_gemm_epi) */
    int cache_blocks;     /* 1: mc/kc/nc from the cache sizes (gk_gemm_blocking); 2: mc/nc */
    gk_gemm_ukernel_fn ukernel_rounded;
    gk_gemm_ukernel_ldb_fn ukernel_ldb;
    int pack_esz;
    gk_gemm_ukernel_strip_fn ukernel_strip;
    void (*begin)(void);
    void (*end)(void);
    int kc_sub;
    int kc_thin;
    int min_rows, min_depth;
    ptrdiff_t min_macs;
    int (*check_packed)(const gk_gemm_seen *seen, const struct gk_gemm_args *args);
    int kc_thin_t;
    int thin_t_tiles;
    gk_gemm_ukernel_strip_fn ukernel_strip_h;
} gk_gemm_kernel;

/* Switches the families' size rules (gk_gemm_kernel.min_rows / ...) on (1, the
 * default) or off (0: tests run a family on shapes it would hand on); returns the previous
 * setting.  Between calls only, like gk_select_isa. */
int gk_gemm_set_size_rules(int on);
/* For tests: B' bytes above which the thin paths treat B' as read from memory (the strip
 * kernels' wide steps in place, gk_gemm_kernel.kc_thin_t); 0 (the default): the last-level
 * cache's size.  Returns the previous value.  Performance only: the results are the same
 * bits either way. */
size_t gk_gemm_set_memory_bytes(size_t bytes);

/* The cache blocks a family runs with (see gk_gemm_kernel): *mc % mr == 0, *nc % nr == 0,
 * all > 0.  Pure function of the family and the CPU. */
void gk_gemm_blocking(const gk_gemm_kernel *kern, int *mc, int *kc, int *nc);

/* Small calls: below this many multiply-adds (M*N*K), a family with ukernel_ldb reads B'
 * in place instead of packing it (packing would cost about as much as the product). */
#define GK_GEMM_SMALL_FLOPS ((ptrdiff_t)128 * 128 * 128)
/* ... unless A is thin and B' is larger than this (then B' streams: the thin path). */
#define GK_GEMM_SMALL_B_BYTES ((ptrdiff_t)256 * 1024)
/* Thin A: with at most this many rows a family with ukernel_ldb reads B' in place at any
 * size (each B element is read once per row panel; packing it would read it and write
 * it once), in K blocks of GK_GEMM_THIN_KC rows (one row panel) or twice that. */
#define GK_GEMM_THIN_ROWS 32
/* ... and in at most this many row panels (B' is read once per panel: a 2-row family,
 * e.g. int64 on AVX2, packs B from 13 rows on). */
#define GK_GEMM_THIN_MAX_PANELS 6
/* The K block of the thin-A path (B' rows read side by side; see gk_gemm_driver.c). */
#define GK_GEMM_THIN_KC 8
/* The K block of thin A with a 16-bit output, packed (gk_gemm_plan.kc_thin), unless the
 * family sets its own (gk_gemm_kernel.kc_thin): even, so the bfloat16 pair families keep
 * their pairs. */
#define GK_GEMM_THIN_KC_PACKED 16

/* The K block of thin A with B' columns contiguous along k (transB; gk_gemm_driver.c's
 * run_thin_bt): one micro-panel of B' this deep (the last of an A block up to twice
 * that) is packed at a time and stays in L1.  A multiple of 32: every family's panel
 * layout puts a depth that is a multiple of it at ks*mr*pack_esz bytes into a panel (the
 * deepest step, an AMX tile, is 32).  Sapphire Rapids, one thread, against 128 and 256:
 * float32/float64/float16/int32 mostly within 5% of the best (float32 1 x 4096 x 4096
 * once 1.15x faster at 128, noise-level elsewhere), bfloat16 on AMX tiles 1.3-1.9x faster
 * than at 128 for M = 8..32.  Software prefetch of the next block gained 4-10% where B'
 * came from memory (64 MB) and lost 5-17% where it sat in the LLC: not used.  A family may
 * set its own (gk_gemm_kernel.kc_thin_t): the avx512 32-bit families read 32 lines of W
 * per panel, and 32 concurrent streams of 256 bytes each ran far below the memory's rate
 * (a plain read of 32 such streams from DRAM: 24.6 GB/s against 45 for 4 to 8, Zen 5);
 * 256 deep (1 KB runs; the panel, 32 KB, still in L1) measured float32 M = 1 / 4 / 16 /
 * 32, K = N = 4096 (64 MB) 1.2-1.24x / 1.24x / 1.14x / 1.12x, int32 M = 1 1.08-1.16x
 * faster (Zen 5); 128 gained 1.06x and 512 (out of L1) nothing.  With W in the LLC it
 * lost (1 x 768 x 3072 0.9x, 1 x 2048 x 2048 0.92x), so it applies to a B' larger than
 * the LLC only; avx2 (16 lines per panel) and float64 avx512 were 0.83x / neutral at 256
 * and keep 64. */
#define GK_GEMM_THIN_T_KC 64
/* The thin_t_tiles of the FMA families on float32 panels (float32, and the float16 /
 * bfloat16 widening families; avx2 and avx512) and of avx2 float64: 4 tiles per group.
 * Zen 5, one thread, W in cache, against tile by tile: float32 avx512 M = 1 1x768x768 /
 * 768x3072 / 1024x4096 1.2-1.4x / 1.15x / 1.05x, M = 2 1.1x, M = 3 1.08x; avx2 float32
 * 1.2-1.35x (M = 1, 2), 1.05x (M = 3); float16 avx512 1.1-1.28x (M = 1..3), avx2 float16 /
 * bfloat16 1.3-1.45x (M = 1), 1.2-1.25x (M = 2); avx2 float64 1x768x768 1.28x; float64
 * avx512 0.97-0.98x: not used there. */
#define GK_GEMM_THIN_T_TILES 4
/* The kc_thin_t of families with 32 lines of W per panel (avx512 float32 / int32 /
 * uint32; see above): runs of 1 KB per line. */
#define GK_GEMM_THIN_T_KC_32_LINES 256

/* One Gemm problem.  Y' = alpha * A' @ B' + beta * C, shapes M x K, K x N, M x N.
 *   a: A'(i, k) at a + i*a_rs + k*a_cs  (the caller folds transA into the strides)
 *   b: B'(k, j) at b + k*b_rs + j*b_cs
 *   c: C(i, j) at c + i*c_rs + j*c_cs, strides 0 on broadcast axes; NULL = no C.
 *      C is never read when beta == 0 (BLAS convention).
 *   y: output, row-major, row stride ldy ELEMENTS, aligned for its type, not aliasing
 *      a, b, c.
 * alpha, beta:
 *   float16/bfloat16/float32: used as (float)alpha, (float)beta;  float64: as given.
 *   integer types: if alpha is integral and (C unused or beta integral), both are reduced
 *   exactly modulo 2**bits and the result is exact modular arithmetic (like NumPy's
 *   integer ops).  An integral value is either alpha_exact (alpha_u64 holds it modulo
 *   2**64, so integers beyond 2**53 -- e.g. 2**64 - 1 -- lose nothing) or an integral
 *   double alpha (its exact value modulo 2**bits).  Otherwise (the onnx reference's float
 *   path):
 *       Y = cast(double(dot) * alpha + double(C) * beta)     [the "+ C" term only if C used]
 *   where dot is the wrapped integer dot product read as the element type, and
 *   cast = gk_gemm_f64_to_int: truncate toward zero, then wrap modulo 2**bits; NaN and
 *   +-inf give 0.  (In range this is exactly NumPy's astype; out of range NumPy's result
 *   is platform- and loop-dependent, ours is defined.)
 *   The double alpha/beta must always be set: it is what the float types and the float
 *   path use, and "beta == 0" (C never read) is decided on it.
 * alpha_exact, beta_exact (integer types only; float types ignore them): nonzero when the
 *   caller had an integer value (a Python or NumPy int); alpha_u64/beta_u64 is then that
 *   integer modulo 2**64 (32-bit types use the low 32 bits) and alpha/beta must be its
 *   double rounding (zero exactly when the integer is zero). */
typedef struct gk_gemm_args {
    int dtype;
    ptrdiff_t m, n, k;
    const void *a;
    ptrdiff_t a_rs, a_cs;
    const void *b;
    ptrdiff_t b_rs, b_cs;
    const void *c;
    ptrdiff_t c_rs, c_cs;
    void *y;
    ptrdiff_t ldy;
    double alpha, beta;
    uint64_t alpha_u64, beta_u64;
    int alpha_exact, beta_exact;
} gk_gemm_args;

/* Gemm's epilogue parameters, resolved once per call from gk_gemm_args (gk_gemm_epi_init):
 *   float types:      y = alpha*acc (+ beta*C if use_c), in the accumulator type
 *                     (float for 16-bit types, rounded once, RNE, on store)
 *   integers, exact:  y = alpha_u*acc (+ beta_u*C) modulo 2**bits
 *   integers, float:  y = gk_gemm_f64_to_u64_mod(double(acc)*alpha (+ double(C)*beta))
 * use_c is false when C is absent or beta == 0: C is then never dereferenced.
 * C(m, n) is at c + m*c_rs + n*c_cs bytes, strides 0 on broadcast axes (every broadcast
 * form of ONNX Gemm: (), [1], [N], [1,N], [M,1], [M,N]). */
typedef struct gk_gemm_epi {
    int use_c;
    int int_float_path;       /* integer dtypes only */
    float alpha_f, beta_f;    /* float16/bfloat16/float32 */
    double alpha_d, beta_d;   /* float64, and the integer float path */
    uint64_t alpha_u, beta_u; /* integer exact path, reduced modulo 2**64 (the caller's
                               * integer, or an integral double's exact value) */
    const char *c;
    ptrdiff_t c_rs, c_cs;     /* bytes */
    char *y;
    ptrdiff_t ldy;            /* elements */
} gk_gemm_epi;

/* Resolves alpha/beta/C handling for args (see gk_gemm_args for the rules). */
void gk_gemm_epi_init(gk_gemm_epi *e, const gk_gemm_args *args);
/* Nonzero when, for args->dtype, the epilogue would leave every accumulator unchanged
 * (Y stored in the accumulator type, no C read, alpha == 1 in the compute type): the
 * driver then skips it. */
int gk_gemm_epi_is_identity(const gk_gemm_epi *e, int dtype);

/* Gemm's generic epilogues (src/csrc/gemm/gk_gemm_epilogue.c), one per output type (ctx is
 * a gk_gemm_epi): simple strided loops, one per (output type, C form), no per-element
 * branching, built for the baseline so the compiler may vectorise them.  A SIMD family may
 * list its own instead; results must be bit-identical. */
void gk_gemm_epilogue_f16(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_bf16(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_f32(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_f64(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_i32(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_u32(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_i64(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);
void gk_gemm_epilogue_u64(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, ptrdiff_t ldacc);

/* The x86 SIMD families (src/csrc/gemm/x86/gk_gemm_<type>_<isa>.c), present when their
 * ISA group was built (GK_HAVE_SSE41, GK_HAVE_AVX2, GK_HAVE_AVX512). */
/* SSE (no FMA: mul, then add): float32/float64 sums equal the scalar oracle's bit for
 * bit; float16/bfloat16 widen in the generic packers into the float32 kernel's panels. */
extern const gk_gemm_kernel gk_gemm_f16_sse41;
extern const gk_gemm_kernel gk_gemm_bf16_sse41;
extern const gk_gemm_kernel gk_gemm_f32_sse41;
extern const gk_gemm_kernel gk_gemm_f64_sse41;
extern const gk_gemm_kernel gk_gemm_f32_avx2;
extern const gk_gemm_kernel gk_gemm_f64_avx2;
extern const gk_gemm_kernel gk_gemm_f32_avx512;
extern const gk_gemm_kernel gk_gemm_f64_avx512;
/* The x86 integer families (one file per width and ISA serves the signed and the unsigned
 * type: gk_gemm_u32_<isa>.c defines gk_gemm_i32_<isa> and gk_gemm_u32_<isa>, likewise
 * gk_gemm_u64_<isa>.c); the same groups. */
extern const gk_gemm_kernel gk_gemm_i32_avx2;
extern const gk_gemm_kernel gk_gemm_u32_avx2;
extern const gk_gemm_kernel gk_gemm_i64_avx2;
extern const gk_gemm_kernel gk_gemm_u64_avx2;
extern const gk_gemm_kernel gk_gemm_i32_avx512;
extern const gk_gemm_kernel gk_gemm_u32_avx512;
extern const gk_gemm_kernel gk_gemm_i64_avx512;
extern const gk_gemm_kernel gk_gemm_u64_avx512;

/* The ARM64 AdvSIMD families (src/csrc/gemm/arm/gk_gemm_<type>_neon.c), present when the
 * neon group was built (GK_HAVE_NEON): float16/bfloat16 widen into the float32 kernel's
 * panels while packing. */
extern const gk_gemm_kernel gk_gemm_f16_neon;
extern const gk_gemm_kernel gk_gemm_bf16_neon;
extern const gk_gemm_kernel gk_gemm_bf16_neonbf16; /* group neonbf16 */
extern const gk_gemm_kernel gk_gemm_f32_neon;
extern const gk_gemm_kernel gk_gemm_f64_neon;
extern const gk_gemm_kernel gk_gemm_i32_neon;
extern const gk_gemm_kernel gk_gemm_u32_neon;
/* bfloat16 on vdpbf16ps (GK_HAVE_AVX512BF16; the CPU bit GK_CPU_AVX512BF16 besides the
 * avx512 level): pair-interleaved panels, declines calls its guard rejects (see its file) */
extern const gk_gemm_kernel gk_gemm_bf16_avx512bf16;
/* bfloat16 on AMX-BF16 tiles (GK_HAVE_AMXBF16; level amx + the CPU bit GK_CPU_AMXBF16) */
extern const gk_gemm_kernel gk_gemm_bf16_amxbf16;
/* float16 / bfloat16 widening families: packers widen into float32 panels, the f32
 * family's micro-kernel of the same group, one RNE rounding in the epilogue. */
extern const gk_gemm_kernel gk_gemm_f16_avx2;
extern const gk_gemm_kernel gk_gemm_bf16_avx2;
extern const gk_gemm_kernel gk_gemm_f16_avx512;
extern const gk_gemm_kernel gk_gemm_bf16_avx512;

/* The scalar families (src/csrc/gemm/scalar/gk_gemm_*_scalar.c), always present. */
extern const gk_gemm_kernel gk_gemm_f16_scalar;
extern const gk_gemm_kernel gk_gemm_bf16_scalar;
extern const gk_gemm_kernel gk_gemm_f32_scalar;
extern const gk_gemm_kernel gk_gemm_f64_scalar;
extern const gk_gemm_kernel gk_gemm_i32_scalar;
extern const gk_gemm_kernel gk_gemm_u32_scalar;
extern const gk_gemm_kernel gk_gemm_i64_scalar;
extern const gk_gemm_kernel gk_gemm_u64_scalar;

/* Scalar families at AVX-512 / AMX tile shapes (14x32, 6x64, 16x64, 32x32), NULL-terminated;
 * never selected by the dispatch, only run by the tests to show the engine has no tile cap. */
extern const gk_gemm_kernel *const gk_gemm_wide_tile_families[];

/* Generic packers for the standard panel layout (src/csrc/gemm/gk_gemm_pack.c), one per
 * source element type; the destination is the accumulator type.  Any family using that
 * layout may reuse them. */
#define GK_GEMM_DECLARE_PACKERS(T)                                                          \
    void gk_gemm_pack_a_##T(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc,      \
                            int kc, int mr, void *dst);                                     \
    void gk_gemm_pack_b_##T(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc,      \
                            int nc, int nr, void *dst);
GK_GEMM_DECLARE_PACKERS(f16)
GK_GEMM_DECLARE_PACKERS(bf16)
GK_GEMM_DECLARE_PACKERS(f32)
GK_GEMM_DECLARE_PACKERS(f64)
GK_GEMM_DECLARE_PACKERS(u32)
GK_GEMM_DECLARE_PACKERS(u64)
/* SIMD packers of the x86 float and integer families (src/csrc/gemm/x86/
 * gk_gemm_pack_{32,64}bit_<isa>.c): register transposes for A' rows / B' columns contiguous
 * along k, the generic packers for every other layout; same panels bit for bit. */
GK_GEMM_DECLARE_PACKERS(f32_avx2)
GK_GEMM_DECLARE_PACKERS(f32_avx512)
GK_GEMM_DECLARE_PACKERS(f64_avx2)
GK_GEMM_DECLARE_PACKERS(f64_avx512)
GK_GEMM_DECLARE_PACKERS(u32_avx2)
GK_GEMM_DECLARE_PACKERS(u32_avx512)
GK_GEMM_DECLARE_PACKERS(u64_avx2)
GK_GEMM_DECLARE_PACKERS(u64_avx512)
#undef GK_GEMM_DECLARE_PACKERS

/* The family used for `dtype`: its dispatch row's most specific family at or below the
 * selected ISA level (gk_dispatch.h).  NULL for an unknown dtype. */
const gk_gemm_kernel *gk_gemm_kernel_for(int dtype);
/* The family that runs a call `kern` hands on (its size rule, or check_packed): the next entry of
 * kern's dispatch row that runs at the selected level on this CPU; for a family outside
 * the table, the row's scalar family.  Never NULL for a valid dtype. */
const gk_gemm_kernel *gk_gemm_kernel_after(const gk_gemm_kernel *kern);
/* The family of kern's row that runs a 16-bit product of 1..GK_GEMM_STRIP_ROWS rows with
 * B' rows contiguous, B' read in place (ukernel_strip_h): kern itself, or the first after
 * it that has one; NULL where none does. */
const gk_gemm_kernel *gk_gemm_thin_16bit_family(const gk_gemm_kernel *kern);

/* Runs one problem with a given family (its dtype must equal args->dtype).  Thread-safe:
 * all state lives in a per-call workspace.  Returns enum gk_gemm_status. */
int gk_gemm_run(const gk_gemm_kernel *kern, const gk_gemm_args *args);
/* gk_gemm_run(gk_gemm_kernel_for(args->dtype), args). */
int gk_gemm(const gk_gemm_args *args);

/* The engine below gk_gemm_run, for operators that bring their own packers and epilogue
 * around a family's micro-kernel and blocking (QLinearMatMul's float path: packers that
 * dequantize float8/int8 into float32 panels, an epilogue that requantizes).
 *   kern:     micro-kernel, mr/nr/mc/kc/nc and accumulator type (its packers and epilogue
 *             are NOT used: the plan's are)
 *   a, b:     the operands, handed to pack_a / pack_b (standard panel layout)
 *   epilogue: called per tile after its last K block with epi_ctx; NULL = none
 *   acc_y:    non-NULL when Y's element is the accumulator type: partial sums live in Y
 *             (row stride ld_acc_y elements) and the epilogue finishes them in place;
 *             NULL: partial sums live in a workspace (an mr x nr tile when K <= KC, else
 *             M x min(N, NC) accumulators of one column stripe) and the epilogue writes Y.
 * Returns enum gk_gemm_status. */
typedef struct gk_gemm_plan {
    ptrdiff_t m, n, k;
    gk_gemm_src a, b;
    gk_gemm_pack_a_fn pack_a;
    gk_gemm_pack_b_fn pack_b;
    gk_gemm_epilogue_fn epilogue;
    const void *epi_ctx;
    void *acc_y;
    ptrdiff_t ld_acc_y;
    /* NULL, or all of B' packed once for kern (gk_gemm_pack_b_whole): read in place of
     * pack_b */
    const char *b_packed;
    /* 0, or the K block of a thin product whose sums live in the float32 workspace
     * (16-bit outputs, which have no in-place path): blocks of kc_thin rows of B' by all
     * of a part's columns, so packing B reads a few row streams front to back instead of
     * KC of them (the TLB-bound pattern), into panels that stay in L2.  The sums still
     * continue from block to block in increasing k in float32: the same bits as the
     * family's own blocking. */
    ptrdiff_t kc_thin;
} gk_gemm_plan;
int gk_gemm_drive(const gk_gemm_kernel *kern, const gk_gemm_plan *plan);

/* Pre-packed B' (gemmkit.pack_b): all of a k x n B', packed once for family kern in the
 * panels its blocked path reads (per K block of the family's KC, all n columns in nr-wide
 * panels, the block at pc starting round_up(n, nr) * pc elements in; for a family with
 * check_packed, then, 64-byte aligned, the gk_gemm_seen its packers filled: a call reading
 * the packing runs the guard on it instead of scanning B' again).
 * gk_gemm_packed_b_size: bytes (0 when k or n <= 0).  gk_gemm_pack_b_whole packs args'
 * B' (b, b_rs, b_cs, k, n) into mem (that size, 64-byte aligned); returns
 * enum gk_gemm_status.  gk_gemm_run_packed is gk_gemm_run reading that packing for args'
 * B', which must be the B' it was packed from, for this same family (a family whose size
 * rule or check_packed hands the call on does so without the packing; a family with
 * ukernel_strip_h reads B' itself for 1..GK_GEMM_STRIP_ROWS rows, B' rows contiguous: half
 * the bytes of its panels, the same bits).  Read only: calls may share it. */
size_t gk_gemm_packed_b_size(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n);
int gk_gemm_pack_b_whole(const gk_gemm_kernel *kern, const gk_gemm_args *args, void *mem);
int gk_gemm_run_packed(const gk_gemm_kernel *kern, const gk_gemm_args *args,
                       const void *b_packed);

/* The float->integer cast of the non-integral path: trunc toward zero, then modulo 2**64
 * (callers keep the low 32 bits for 32-bit types); NaN and +-inf give 0.  Exact. */
uint64_t gk_gemm_f64_to_u64_mod(double x);

#ifdef __cplusplus
}
#endif
#endif
