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
 * accumulator type) and calls the micro-kernel on MR x NR register tiles.  A kernel family
 * bundles micro-kernel, packing format and block sizes, chosen together; gk_gemm_kernel_for
 * picks one per element type (today the scalar family; SIMD families plug in there).
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

/* Packing.  pack_a copies rows [0, mc) x cols [0, kc) of A' (element (i, k) at
 * a + i*rs + k*cs bytes) into ceil(mc/mr) panels of mr rows; panel p holds element
 * (p*mr + i, k) at [k*mr + i] (accumulator type), rows beyond mc are zero.
 * pack_b copies rows [0, kc) x cols [0, nc) of B' (element (k, j) at b + k*rs + j*cs)
 * into ceil(nc/nr) panels of nr columns; panel q holds (k, q*nr + j) at [k*nr + j],
 * columns beyond nc are zero.  Panels follow each other with no gap (a panel of A is
 * kc*mr elements).  kc may be 0 (nothing is written or read). */
typedef void (*gk_gemm_pack_a_fn)(int mr, int mc, int kc, const void *a, ptrdiff_t rs,
                                  ptrdiff_t cs, void *dst);
typedef void (*gk_gemm_pack_b_fn)(int nr, int kc, int nc, const void *b, ptrdiff_t rs,
                                  ptrdiff_t cs, void *dst);

/* Micro-kernel: tile[i*nr + j] = sum_{k<kc} a_panel[k*mr + i] * b_panel[k*nr + j] for the
 * whole mr x nr tile (padding included), in the accumulator type, in increasing k order.
 * The tile is overwritten (kc == 0 writes zeros); the driver merges K blocks. */
typedef void (*gk_gemm_ukernel_fn)(int kc, const void *a_panel, const void *b_panel,
                                   void *tile);

/* A kernel family for one element type.  Invariants: mc % mr == 0, nc % nr == 0,
 * mr*nr <= GK_GEMM_MAX_TILE, all block sizes > 0 and small enough that a packed
 * block (mc*kc or kc*nc elements of 8 bytes) fits comfortably in int. */
typedef struct gk_gemm_kernel {
    const char *isa;      /* "scalar", "avx2", ... */
    int dtype;            /* enum gk_gemm_dtype this family serves */
    int acc;              /* enum gk_gemm_acc */
    int mr, nr;           /* register tile */
    int mc, kc, nc;       /* cache blocks */
    gk_gemm_pack_a_fn pack_a;
    gk_gemm_pack_b_fn pack_b;
    gk_gemm_ukernel_fn ukernel;
} gk_gemm_kernel;

#define GK_GEMM_MAX_TILE 256 /* elements: the driver's stack tile is 256*8 = 2 KiB */

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

/* The scalar families (src/csrc/gemm/scalar/gk_gemm_*_scalar.c), always present. */
extern const gk_gemm_kernel gk_gemm_f16_scalar;
extern const gk_gemm_kernel gk_gemm_bf16_scalar;
extern const gk_gemm_kernel gk_gemm_f32_scalar;
extern const gk_gemm_kernel gk_gemm_f64_scalar;
extern const gk_gemm_kernel gk_gemm_i32_scalar;
extern const gk_gemm_kernel gk_gemm_u32_scalar;
extern const gk_gemm_kernel gk_gemm_i64_scalar;
extern const gk_gemm_kernel gk_gemm_u64_scalar;

/* Generic packers for the panel format above (src/csrc/gemm/gk_gemm_pack.c), one per source
 * element type; the destination is the accumulator type.  Any family using that layout
 * may reuse them. */
void gk_gemm_pack_a_f16(int mr, int mc, int kc, const void *a, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_b_f16(int nr, int kc, int nc, const void *b, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_a_bf16(int mr, int mc, int kc, const void *a, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_b_bf16(int nr, int kc, int nc, const void *b, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_a_f32(int mr, int mc, int kc, const void *a, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_b_f32(int nr, int kc, int nc, const void *b, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_a_f64(int mr, int mc, int kc, const void *a, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_b_f64(int nr, int kc, int nc, const void *b, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_a_u32(int mr, int mc, int kc, const void *a, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_b_u32(int nr, int kc, int nc, const void *b, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_a_u64(int mr, int mc, int kc, const void *a, ptrdiff_t rs, ptrdiff_t cs, void *dst);
void gk_gemm_pack_b_u64(int nr, int kc, int nc, const void *b, ptrdiff_t rs, ptrdiff_t cs, void *dst);

/* The family used for `dtype` (most specific usable first; today the scalar one).
 * NULL for an unknown dtype. */
const gk_gemm_kernel *gk_gemm_kernel_for(int dtype);

/* Runs one problem with a given family (its dtype must equal args->dtype).  Thread-safe:
 * all state lives in a per-call workspace.  Returns enum gk_gemm_status. */
int gk_gemm_run(const gk_gemm_kernel *kern, const gk_gemm_args *args);
/* gk_gemm_run(gk_gemm_kernel_for(args->dtype), args). */
int gk_gemm(const gk_gemm_args *args);

/* The float->integer cast of the non-integral path: trunc toward zero, then modulo 2**64
 * (callers keep the low 32 bits for 32-bit types); NaN and +-inf give 0.  Exact. */
uint64_t gk_gemm_f64_to_u64_mod(double x);

#ifdef __cplusplus
}
#endif
#endif
