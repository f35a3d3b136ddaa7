/* The int8 GEMM contract: micro-kernel signature, packing format, fused epilogue.
 *
 * Every sign combination of MatMulInteger / QLinearMatMul is mapped onto ONE canonical
 * problem before any kernel runs:
 *     a' = A ^ a_xor  (uint8)    a_xor = 0x80 when A is int8  (a' = A + 128), else 0
 *     b' = B ^ b_xor  (int8)     b_xor = 0x80 when B is uint8 (b' = B - 128), else 0
 * and the sign shift is folded into effective zero points (int32):
 *     za = a_zero_point + (a_xor ? 128 : 0)      zb = b_zero_point - (b_xor ? 128 : 0)
 * so that (A - a_zp)(B - b_zp) == (a' - za)(b' - zb) exactly.  Then, modulo 2**32,
 *     Y[m,n] = sum_k a'[m,k] b'[k,n]  -  a_rowsum[m] * zb[n]  -  za[m] * b_colcorr[n]
 *     a_rowsum[m]  = sum_k a'[m,k]
 *     b_colcorr[n] = sum_k b'[k,n] - K * zb[n]
 * Every product a'*b' lies in [-32640, 32385], so any exact int32 accumulation order is
 * bit-identical; only the final int32 sums wrap (the one overflow ONNX allows).
 * Kernels must never add two 8-bit products in a 16-bit lane (vpmaddubsw, smlal to int16).
 *
 * All int32 arithmetic on sums is done in uint32_t in C (defined wrap-around).
 */
#ifndef GEMMKIT_GK_QGEMM_H
#define GEMMKIT_GK_QGEMM_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Output kinds of the fused epilogue. */
enum gk_qout {
    GK_QOUT_I32 = 0, /* MatMulInteger: store Y (int32) */
    GK_QOUT_U8 = 1,  /* QLinearMatMul: requantize to uint8 */
    GK_QOUT_S8 = 2,  /* QLinearMatMul: requantize to int8 */
};

/* Everything a kernel needs to finish an output tile without an int32 round trip.
 * Arrays are indexed by the output row m in [0, M) / column n in [0, N) of the current
 * 2-D matrix (one batch); per-tensor values are expanded to full arrays by the driver.
 *
 * Requantization (kind != I32), bit-exact and identical on every path:
 *     mult = mult[m * mult_rs + n * mult_cs]          (float32, finite: the driver clamps
 *                                                      +-inf to +-FLT_MAX, NaN is rejected)
 *     x    = (double)Y[m,n] * (double)mult             (exact product rounding of double)
 *     r    = nearbyint(x)                              (round half to even)
 *     y    = clamp(r + y_zp[m * yzp_rs + n * yzp_cs], qmin, qmax)
 * x is always finite (|Y| <= 2^31, |mult| <= FLT_MAX), so the clamp may be done in double.
 * Strides are in elements and may be 0 (broadcast). */
typedef struct gk_qepi {
    int32_t kind;              /* enum gk_qout */
    const int32_t *a_rowsum;   /* [M] */
    const int32_t *a_zp;       /* [M] effective za */
    const int32_t *b_zp;       /* [N] effective zb */
    const int32_t *b_colcorr;  /* [N] colsum(b') - K*zb; NULL for small-M kernels (they
                                  compute column sums of b' themselves while streaming B) */
    const float *mult;         /* requant multipliers, see above (unused for I32) */
    ptrdiff_t mult_rs, mult_cs;
    const int32_t *y_zp;       /* output zero point (int32 value of the uint8/int8 zp) */
    ptrdiff_t yzp_rs, yzp_cs;
    void *y;                   /* output base of this 2-D matrix: int32_t*, uint8_t* or int8_t* */
    ptrdiff_t ldy;             /* row stride of y in elements (column stride is 1) */
    int32_t k;                 /* true K (not padded) */
    /* Depth blocks (the driver splits K into blocks of at most its kc, see
     * gk_qgemm_driver.h): what a packed micro-kernel does with the raw dot products of
     * its block, element (m, n) of the partial sums living at gk_qepi_part_at(e, m, n).
     *   GK_QPART_NONE    the whole depth in one call: the epilogue as described above
     *   GK_QPART_STORE   first block: part = dot                       (y not written)
     *   GK_QPART_ACC     middle block: part += dot                     (y not written)
     *   GK_QPART_FINISH  last block: dot += part, then the epilogue on that sum
     * "dot" is the kernel's raw dot product (before zero-point correction; for the
     * biased-B ARM families, the biased one of gk_qgemm_arm_common.h: every block is
     * biased alike, so the sum is the whole depth's).  Exact: int32 addition wraps
     * mod 2**32 and is associative there, so any split of K gives the same bits.
     * part is the driver's scratch (a test may pass y itself: FINISH reads each element
     * before it overwrites it); it is only touched for valid (m, n) of a tile.
     * a_rowsum and b_colcorr always cover the whole depth (the driver sums the blocks'
     * row / column sums); they are only read in NONE and FINISH. */
    int32_t part_mode;         /* enum gk_qpart; 0 (NONE) in a zero-initialised gk_qepi */
    int32_t *part;             /* partial sums, see gk_qepi_part_at */
    ptrdiff_t part_ld;         /* row stride of part in elements (column stride is 1) */
    int32_t part_m0, part_n0;  /* the (m, n) of part[0] */
    /* Optional (the blocked driver gives them), the zero-point correction when
     * it separates (za one value over all rows, zb one over all columns, as for
     * per-tensor zero points):
     *     rowsum[m] * zb[n] + za[m] * colcorr[n] == row_corr[m] + col_corr[n]  (mod 2**32)
     * row_corr[m] = rowsum[m] * zb, col_corr[n] = za * colcorr[n].  NULL when it does
     * not separate; kernels may ignore them (the general arrays stay valid).  Like
     * a_rowsum / b_colcorr, only read in NONE and FINISH. */
    const int32_t *row_corr;   /* [M] or NULL */
    const int32_t *col_corr;   /* [N] or NULL (both or neither) */
    /* 1: the whole call's output (every matrix of its batch) is larger than half of L2,
     * so it will not stay in the caches: a family may write whole lines of y past them
     * (non-temporal stores, as AMX does for int32 outputs).  0 in a zero-initialised
     * gk_qepi. */
    int32_t y_stream;
} gk_qepi;

/* Partial-sum modes of a micro-kernel call (gk_qepi.part_mode). */
enum gk_qpart {
    GK_QPART_NONE = 0,
    GK_QPART_STORE = 1,
    GK_QPART_ACC = 2,
    GK_QPART_FINISH = 3,
};

/* Where the partial sum of output (m, n) lives (part_mode != NONE). */
static inline int32_t *gk_qepi_part_at(const gk_qepi *e, int m, int n)
{
    return e->part + (ptrdiff_t)(m - e->part_m0) * e->part_ld + (n - e->part_n0);
}

/* The epilogue of rows [r0, ..) of e's output as rows [0, ..) of its own (every per-row
 * array and the output advanced r0 rows; columns, K and any partial sums unchanged, so
 * only for part_mode NONE).  For kernels that run a product's rows in groups. */
static inline gk_qepi gk_qepi_rows_from(const gk_qepi *e, int r0)
{
    gk_qepi s = *e;
    const size_t esz = e->kind == GK_QOUT_I32 ? sizeof(int32_t) : 1;
    s.a_rowsum = e->a_rowsum + r0;
    s.a_zp = e->a_zp + r0;
    if (e->mult)
        s.mult = e->mult + (ptrdiff_t)r0 * e->mult_rs;
    if (e->y_zp)
        s.y_zp = e->y_zp + (ptrdiff_t)r0 * e->yzp_rs;
    s.y = (char *)e->y + (ptrdiff_t)r0 * e->ldy * (ptrdiff_t)esz;
    return s;
}

/* Packing functions.  Strides are in BYTES and may be negative or zero.
 * pack_a: rows [0, mc) x cols [0, k) of A (first element at `a`), xor'ed with a_xor, into
 *   ceil(mc/mr) panels of mr rows, each panel kp = round_up(k, kstep) deep; padding rows
 *   and padding k are zero (a zero a' contributes nothing).  rowsum[i] = sum_k a'[i,k]
 *   for the mc real rows.
 * pack_b: rows [0, k) x cols [0, nc) of B into ceil(nc/nr) panels of nr columns,
 *   kp deep, zero padded; colsum[j] = sum_k b'[k,j] for the nc real columns.
 * The layout inside a panel is private to the kernel that declares it. */
typedef void (*gk_qpack_a_fn)(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs,
                              uint8_t a_xor, void *dst, int32_t *rowsum);
typedef void (*gk_qpack_b_fn)(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs,
                              uint8_t b_xor, void *dst, int32_t *colsum);

/* Micro-kernel: one tile of mr_valid <= mr rows and nr_valid <= nr columns whose top-left
 * output element is (m0, n0).  a_panel / b_panel point at the tile's packed panels, kp
 * deep (a multiple of kstep; one depth block of the product, see gk_qepi.part_mode).
 * Computes the int32 dot products and applies `epi` for the valid part of the tile:
 * the partial-sum step of epi->part_mode, then (NONE, FINISH) the epilogue, writing
 * straight to epi->y. */
typedef void (*gk_qgemm_ukernel_fn)(int mr_valid, int nr_valid, int kp,
                                    const void *a_panel, const void *b_panel,
                                    const gk_qepi *epi, int m0, int n0);

/* A column of micro-kernel tiles (optional): rows [0, mc) of a packed A block (its
 * panels mr * kp * a_elem_bytes apart) against one B micro-panel, nr_valid <= nr columns,
 * output rows from m0 and columns from n0 -- what ceil(mc / mr) ukernel calls would do, in
 * any order.  For a family that overlaps one tile's epilogue with the next tile's dot
 * products (AMX: the tile unit computes while the core finishes the previous tile). */
typedef void (*gk_qgemm_ucolumn_fn)(int mc, int nr_valid, int kp, const void *a_block,
                                    const void *b_panel, const gk_qepi *epi, int m0, int n0);

/* Small-M path (M <= smallm_max), no packing: streams B once straight from memory.
 * Requires B rows to be contiguous (b_cs == 1); A is any strided.  Computes the column
 * sums of b' itself (epi->b_colcorr is NULL) and applies the full epilogue for all
 * m in [0, m), n in [0, n).  epi->a_rowsum is provided by the caller. */
typedef void (*gk_qgemm_smallm_fn)(int m, int n, int k,
                                   const uint8_t *a, ptrdiff_t a_rs, ptrdiff_t a_cs, uint8_t a_xor,
                                   const uint8_t *b, ptrdiff_t b_rs, uint8_t b_xor,
                                   const gk_qepi *epi);

/* Tall route (optional): many rows of A against a small B (conv-as-GEMM shapes such as
 * 12544 x 32 x 16), no packing of A.  B (k x n, any strides) is packed whole by the
 * route itself into a buffer that stays in L1 per column strip, and A's rows (a_cs == 1,
 * rows a_rs bytes apart) are read in place.  Computes the column sums of b' itself (epi->
 * b_colcorr is ignored), the row sums of a' into rowsum[0, m) where the correction needs
 * them (epi->a_rowsum is ignored), and applies the full epilogue (part_mode NONE) for
 * all m in [0, m), n in [0, n).  Returns 0, or -1 (no memory for B's few KB; the
 * output is not touched). */
typedef int (*gk_qgemm_tall_fn)(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, uint8_t a_xor,
                                const uint8_t *b, ptrdiff_t b_rs, ptrdiff_t b_cs, uint8_t b_xor,
                                int32_t *rowsum, const gk_qepi *epi);

/* A kernel family: the micro-kernel, its packing format and its tile sizes, chosen
 * together.  Packed panel sizes in bytes:
 *     A: ceil(mc/mr)*mr * kp * a_elem_bytes      B: ceil(nc/nr)*nr * kp * b_elem_bytes */
typedef struct gk_qgemm_kernel {
    const char *isa;           /* "scalar", "sse41", "avx2", "avx512vnni", "avxvnni", "neon", ... */
    int mr, nr, kstep;
    int a_elem_bytes, b_elem_bytes;
    gk_qpack_a_fn pack_a;
    gk_qpack_b_fn pack_b;
    gk_qgemm_ukernel_fn ukernel;
    int smallm_max;            /* 0 = no small-M path */
    gk_qgemm_smallm_fn smallm;
    /* Optional, called by the driver on its own thread around a run of ukernel calls
     * (AMX: load / release the tile configuration once instead of per tile). */
    void (*begin)(void);
    void (*end)(void);
    /* Depth block: at most this much depth per micro-kernel call when the driver splits
     * K (a multiple of kstep); 0, as in a table entry that leaves it out: derived from the
     * tile and the L1 data cache (gk_qgemm_kc in gk_qgemm_driver.h). */
    int kc;
    /* Rows from which the driver reads a pre-packed B (gemmkit.pack_b) rather than run the
     * small-M path; 0, as in a table entry that leaves it out: 8.  A family whose
     * micro-kernel computes only the valid rows of a partial tile sets 1 (its packed
     * panels then serve every M better than streaming B through the small-M path). */
    int packed_min_m;
    /* Rows up to which the small-M path also runs when B is large, K * N >=
     * GK_QGEMM_SMALLM_WIDE_KN (the product, or each thread's part of it); 0, as in a table
     * entry that leaves it out: none past smallm_max.  For families whose small-M path
     * then beats packing (the zmm vpdpbusd staged path). */
    int smallm_wide_max;
    /* Bytes between consecutive nr-column panels of packed B beyond the panel itself
     * (gk_qgemm_b_panel_stride); 0, as in a table entry that leaves it out: none.  With a
     * depth kp that is a multiple of 128 a panel is a multiple of 4 KiB, so the packer's
     * stores into many panels at once all fall into one L1 set; a family whose pack_b
     * writes many panels per source row pads them apart (and writes its panels there). */
    int b_panel_pad;
    /* Depth block of a product whose partial sums would not stay in L2 (gk_qgemm_blocking_of
     * with may_deepen); 0, as in a table entry that leaves it out: kc throughout.  For a
     * family so fast that re-reading and re-writing the int32 partial sums from memory once
     * per depth block costs more than a B micro-panel deeper than L1 (AMX). */
    int kc_deep;
    /* The driver's whole ir loop in one call (gk_qgemm_ucolumn_fn); NULL, as in a table
     * entry that leaves it out: one ukernel call per tile. */
    gk_qgemm_ucolumn_fn ucolumn;
    /* The tall route (gk_qgemm_tall_fn; NULL, as in a table entry that leaves it out:
     * none) and the family's rule for it (1: the route beats packing an m x k x n
     * product).  The driver takes it where tall_takes says so, A's rows are contiguous
     * (a_cs == 1) and B is not pre-packed (gk_qgemm_set_tall_mode overrides the rule). */
    gk_qgemm_tall_fn tall;
    int (*tall_takes)(int m, int k, int n);
    /* On a CPU with a slow L3 (gk_cpu_cache_sizes.l3_slow; gk_qgemm_set_slow_l3_mode
     * overrides it): the packed A and B blocks each take at most L2 / this, instead of
     * half of L2 and all of it; 0, as in a table entry that leaves it out: the same blocks
     * on every CPU.  For a family fast enough that L2 misses of its blocks, from such an
     * L3, are what bounds it (gk_qgemm_blocking_of). */
    int slow_l3_block_div;
} gk_qgemm_kernel;

/* Bytes from one packed B panel (kp deep, a multiple of kstep) to the next. */
static inline size_t gk_qgemm_b_panel_stride(const gk_qgemm_kernel *kern, size_t kp)
{
    return (size_t)kern->nr * kp * (size_t)kern->b_elem_bytes + (size_t)kern->b_panel_pad;
}

/* K * N from which smallm_wide_max applies (1 MiB of int8 B: below it B sits in L2 and
 * the packed path wins). */
#define GK_QGEMM_SMALLM_WIDE_KN ((double)(1 << 20))

/* Whether family kern's small-M path takes m rows of a product of depth kd and n columns
 * (B's layout aside): up to smallm_max rows, or up to smallm_wide_max with a large B. */
static inline int gk_qgemm_smallm_rows_ok(const gk_qgemm_kernel *kern, int m, int kd, int n)
{
    return m <= kern->smallm_max ||
           (m <= kern->smallm_wide_max && (double)kd * n >= GK_QGEMM_SMALLM_WIDE_KN);
}

/* The scalar oracle (src/csrc/qgemm/scalar/gk_qgemm_u8s8_scalar.c), always present. */
extern const gk_qgemm_kernel gk_qgemm_u8s8_scalar;

/* The reference epilogue, THE scalar definition of the output of every path (DESIGN.md
 * section 2).  SIMD epilogues (src/csrc/qgemm/x86/gk_qepi_x86.inc, arm/gk_qepi_neon.h)
 * must equal it bit for bit; their partial tiles and unusual strides call it directly.
 * Three entry points, by how much of the zero-point correction the caller has done:
 *   gk_qepi_store_y    y = the corrected int32 Y[m, n]
 *   gk_qepi_store1_cc  the raw dot product plus this column's colcorr (small-M paths,
 *                      where epi->b_colcorr is NULL and the kernel computes colcorr)
 *   gk_qepi_store1     the raw dot product (packed paths: colcorr from epi->b_colcorr) */
static inline void gk_qepi_store_y(const gk_qepi *e, int m, int n, uint32_t y)
{
    if (e->kind == GK_QOUT_I32) {
        ((int32_t *)e->y)[(ptrdiff_t)m * e->ldy + n] = (int32_t)y;
        return;
    }
    {
        double x = (double)(int32_t)y * (double)e->mult[m * e->mult_rs + n * e->mult_cs];
        double r = nearbyint(x) + (double)e->y_zp[m * e->yzp_rs + n * e->yzp_cs];
        if (e->kind == GK_QOUT_U8) {
            r = r < 0.0 ? 0.0 : (r > 255.0 ? 255.0 : r);
            ((uint8_t *)e->y)[(ptrdiff_t)m * e->ldy + n] = (uint8_t)(int)r;
        } else {
            r = r < -128.0 ? -128.0 : (r > 127.0 ? 127.0 : r);
            ((int8_t *)e->y)[(ptrdiff_t)m * e->ldy + n] = (int8_t)(int)r;
        }
    }
}

/* Zero-point correction of one raw dot product (mod 2**32) with column n's colcorr
 * (colsum(b')[n] - K zb[n]) given, then gk_qepi_store_y. */
static inline void gk_qepi_store1_cc(const gk_qepi *e, int m, int n, uint32_t dot, uint32_t cc)
{
    gk_qepi_store_y(e, m, n,
                    dot - (uint32_t)e->a_rowsum[m] * (uint32_t)e->b_zp[n]
                        - (uint32_t)e->a_zp[m] * cc);
}

/* Zero-point correction of one raw dot product (mod 2**32), then gk_qepi_store_y. */
static inline void gk_qepi_store1(const gk_qepi *e, int m, int n, uint32_t dot)
{
    gk_qepi_store1_cc(e, m, n, dot, (uint32_t)e->b_colcorr[n]);
}

/* The partial-sum step of one raw dot product of a depth block (gk_qepi.part_mode):
 * STORE / ACC update the partial sum and return 0 (nothing more to do); NONE returns 1
 * with *dot unchanged, FINISH returns 1 with the partial sum added: the caller then
 * applies the epilogue to *dot. */
static inline int gk_qepi_part1(const gk_qepi *e, int m, int n, uint32_t *dot)
{
    uint32_t *p;
    if (e->part_mode == GK_QPART_NONE)
        return 1;
    p = (uint32_t *)gk_qepi_part_at(e, m, n);
    switch (e->part_mode) {
    case GK_QPART_STORE: *p = *dot; return 0;
    case GK_QPART_ACC: *p += *dot; return 0;
    default: *dot += *p; return 1;
    }
}

/* gk_qepi_part1, then (NONE, FINISH) gk_qepi_store1: the whole scalar epilogue of one
 * raw dot product of a packed micro-kernel. */
static inline void gk_qepi_block1(const gk_qepi *e, int m, int n, uint32_t dot)
{
    if (gk_qepi_part1(e, m, n, &dot))
        gk_qepi_store1(e, m, n, dot);
}

#ifdef __cplusplus
}
#endif
#endif
