/* Entry points of the int8 driver (MatMulInteger and QLinearMatMul) for a whole batched
 * product: a 2-D problem (gk_qgemm_problem, the first matrix of the batch) plus the batch
 * dims (gk_qbatch) that say how far every operand moves from one matrix to the next.
 *
 * Element (i, j) of a strided operand X lives at X + i*rs + j*cs (strides in elements
 * of that operand's type, possibly negative or zero).  Zero points and scales are given
 * as a base pointer plus a row stride (a side), a column stride (b side) or both (y
 * side): per-tensor is stride 0. */
#ifndef GEMMKIT_GK_QGEMM_DRIVER_H
#define GEMMKIT_GK_QGEMM_DRIVER_H

#include "gk_qgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of QLinearMatMul operands (a, b, y and their zero points). */
enum gk_qtype {
    GK_QT_U8 = 0,
    GK_QT_S8 = 1,
    GK_QT_F8 = 2, /* GK_QT_F8 + enum gk_fp8_format (gk_codecs.h): 2..5 */
};

typedef struct gk_qgemm_problem {
    int m, n, k;
    int a_type, b_type, y_type;               /* enum gk_qtype; used by gk_qlinear_run */
    const uint8_t *a; ptrdiff_t a_rs, a_cs; int a_signed; /* int8 when a_signed */
    const uint8_t *b; ptrdiff_t b_rs, b_cs; int b_signed;
    const uint8_t *a_zp; ptrdiff_t a_zp_rs;   /* same type as A; NULL means 0 */
    const uint8_t *b_zp; ptrdiff_t b_zp_cs;   /* same type as B; NULL means 0 */
    int32_t out_kind;                         /* enum gk_qout */
    /* requantization (out_kind U8/S8 only): float32 scales */
    const float *a_scale; ptrdiff_t as_rs;
    const float *b_scale; ptrdiff_t bs_cs;
    const float *y_scale; ptrdiff_t ys_rs, ys_cs;
    const uint8_t *y_zp; ptrdiff_t yzp_rs, yzp_cs; /* uint8 for U8, int8 for S8 */
    void *y; ptrdiff_t ldy;                   /* output, row stride in elements */
    /* Bytes of the whole call's output, every matrix of its batch: the driver's entry
     * points (gk_qgemm_run, gk_qgemm_run_packed) set it from the batch; callers need not. */
    double y_call_bytes;
} gk_qgemm_problem;

/* Operands that move with the batch index (gk_qbatch.stride's first index). */
enum gk_qbatch_operand {
    GK_QB_A = 0, GK_QB_B, GK_QB_AZP, GK_QB_BZP, /* a, b and their zero points */
    GK_QB_AS, GK_QB_BS, GK_QB_YS, GK_QB_YZP,    /* scales, output zero point */
    GK_QB_Y,                                    /* the output */
    GK_QB_NOPS
};

#define GK_QBATCH_MAXD 64 /* NumPy's NPY_MAXDIMS */

/* Batch dims of a product, outermost first (numpy.matmul's broadcast batch shape).
 * Matrix (i_0, ..., i_{ndim-1}) is the 2-D problem with every pointer X advanced by
 * sum_d i_d * stride[X][d] BYTES; 0 where X is broadcast along d (a NULL pointer of the
 * problem never moves).  Only the first ndim entries of each row are read.  Any ndim,
 * shape (0 or 1 included) and sign of strides is valid. */
typedef struct gk_qbatch {
    int ndim;                                       /* 0 .. GK_QBATCH_MAXD */
    ptrdiff_t shape[GK_QBATCH_MAXD];
    ptrdiff_t stride[GK_QB_NOPS][GK_QBATCH_MAXD];
} gk_qbatch;

/* Depth beyond GK_QGEMM_KCHUNK runs as a sum of products over consecutive depth chunks.
 * Exact: sum_c (A_c - za)(B_c - zb) = (A - za)(B - zb) modulo 2**32, zero points
 * included, and requantization is applied once to the total.  It bounds what a kernel
 * ever sees (depth indices, padded depth, packed panels of KCHUNK-deep micro-panels: a
 * few MB) for every K up to INT_MAX; the extra work, one int32 add per output per
 * chunk, is negligible next to KCHUNK multiply-adds per output. */
#define GK_QGEMM_KCHUNK (1 << 18)

/* Depth blocks (BLIS's kc).  Inside a chunk, a product deeper than gk_qgemm_kc(kern)
 * runs in nearly equal blocks of at most that depth, each a multiple of the family's
 * kstep but the last: every micro-kernel call sees one block, so its B micro-panel
 * (kc * nr bytes) stays in L1 however deep K is.  The int32 sums of the earlier blocks
 * wait in a scratch (every output kind) until the last block's call finishes them
 * (gk_qepi.part_mode); exact, as for chunks.  A product no deeper than kc runs in one
 * block, as without blocking.
 * gk_qgemm_kc: the family's own kc when it sets one, else the depth whose B micro-panel
 * fills half of this CPU's L1 data cache (32 KB when unknown), rounded down to kstep. */
int gk_qgemm_kc(const gk_qgemm_kernel *kern);

/* How the packed path blocks an m x n x k product (tests and benchmarks read it; small-M
 * products never pack): nblk depth blocks of kcb (the last one shorter), A blocks of mc
 * rows (half of L2 at kcb), B blocks of nc columns (the size of L2; both a fraction of L2
 * on a CPU with a slow L3, for the families that say so), and the rows ms of
 * the partial-sum scratch (all m, but groups of ms past 8 MB).  may_deepen (B packed by
 * this call, not read from a cache laid out by gk_qgemm_kc): a family with kc_deep takes
 * depth blocks of kc_deep instead when the partial sums one depth block passes over (ms
 * rows x nc int32) exceed half of L2. */
typedef struct gk_qgemm_blocking {
    int kcb, nblk, mc, nc, ms;
} gk_qgemm_blocking;
void gk_qgemm_blocking_of(const gk_qgemm_kernel *kern, int m, int n, int k, int may_deepen,
                          gk_qgemm_blocking *bl);

/* MatMulInteger and integer QLinearMatMul, every matrix of the batch (batch NULL or
 * ndim 0: the one 2-D product p).  A batch whose B, b zero point and b scale are shared
 * (batch stride 0) and whose output rows continue from one matrix to the next runs as
 * ONE product of batch * M rows (A's matrices packed one by one into its panels, or
 * gathered, where their rows do not continue); other batches that share B pack it once
 * for the consecutive matrices that share it.
 * Returns 0, or -1 when memory for packing could not be allocated (the output may be
 * partly written). */
int gk_qgemm_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                 const gk_qbatch *batch);

/* Where the driver takes a family's tall route (gk_qgemm_kernel.tall): 0 never, 1 by
 * the family's limits (the default), 2 wherever it can (A's rows contiguous, B not
 * pre-packed), at any size.  Returns the previous mode.  For tests, which run both routes
 * on every shape; between calls only. */
int gk_qgemm_set_tall_mode(int mode);

/* Whether gk_qgemm_blocking_of takes the blocks of a CPU with a slow L3 for families that
 * have them (gk_qgemm_kernel.slow_l3_block_div): -1 as the CPU says (the default), 0
 * never, 1 always.  Returns the previous mode.  For tests, which run both blockings on
 * any CPU; between calls only. */
int gk_qgemm_set_slow_l3_mode(int mode);

/* Where QLinearMatMul's float path (float8 a or b) runs the f32 family's FMA micro-kernel
 * instead of its separately rounded one: 1 where every product is exact, so both give the
 * same bits (the default), 0 never, 2 always (not the definition's result: for tests,
 * to show that their inputs tell the two apart).  Returns the previous mode.  For tests;
 * between calls only. */
int gk_qlinear_f8_set_fma_mode(int mode);

/* Pre-packed B (gemmkit.pack_b): all of a k x n B, packed once for family kern in the
 * layout its packed path reads (depth blocks of nr-column panels, then the n column
 * sums).  gk_qgemm_packed_b_size: bytes of that block (64-byte aligned), 0 where no
 * packing is kept (k or n <= 0, k > GK_QGEMM_KCHUNK).  gk_qgemm_pack_b_whole packs p's B
 * (p->k, n, b, b_rs, b_cs, b_signed) into mem (that size, 64-byte aligned); 0 or -1.
 * gk_qgemm_run_packed is gk_qgemm_run reading packings of p's B made by the same family:
 *   nmat == 1  packed_b is one block, packed from p's B itself (same pointer, strides, k,
 *              n, sign), which every matrix of the batch shares;
 *   nmat > 1   packed_b is nmat consecutive blocks, block t packed from the row-major
 *              k x n matrix at p->b + t * k * n (a C-contiguous batch of B): every matrix
 *              of the batch has its B among them and reads its own block.
 * The small-M path reads B itself.  Read only: calls may share the packing. */
size_t gk_qgemm_packed_b_size(const gk_qgemm_kernel *kern, int k, int n);
int gk_qgemm_pack_b_whole(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, void *mem);
int gk_qgemm_run_packed(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                        const gk_qbatch *batch, const void *packed_b, ptrdiff_t nmat);
/* QLinearMatMul (gk_qlinear_run) with a pre-packed integer B; float8 operands ignore it. */
int gk_qlinear_run_packed(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                          const gk_qbatch *batch, const void *packed_b, ptrdiff_t nmat);

/* Calls fn(ctx, q) once for every matrix q of the batch (p itself when batch is NULL), as
 * independent gk_parallel tasks (any order, possibly concurrently: fn must own its
 * buffers).  Returns 0, or -1 when some call returned nonzero (the others still ran). */
int gk_qbatch_foreach(const gk_qgemm_problem *p, const gk_qbatch *batch,
                      int (*fn)(void *ctx, const gk_qgemm_problem *q), void *ctx);

/* QLinearMatMul with any mix of uint8/int8/float8 a, b, y (DESIGN.md §2), every matrix
 * of the batch (NULL: one 2-D product):
 * all integer -> gk_qgemm_run; integer a, b with float8 y -> exact int32 accumulation,
 * x = acc*mult + y_zp in double, saturating float8 cast; float8 a or b -> dequantize in
 * float32, float32 accumulation (k ascending), x = acc / y_scale, output cast.
 * Returns 0, or -1 when out of memory (nothing written). */
int gk_qlinear_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                   const gk_qbatch *batch);

/* The float32 requantization multiplier of DESIGN.md §2, +-inf clamped to +-FLT_MAX. */
float gk_qmultiplier(float a_scale, float b_scale, float y_scale);

#ifdef __cplusplus
}
#endif
#endif
