/* Private to the Gemm driver: the epilogue that turns accumulators into Y. */
#ifndef GEMMKIT_GK_GEMM_INTERNAL_H
#define GEMMKIT_GK_GEMM_INTERNAL_H

#include "gemmkit/gk_gemm.h"

/* Everything the epilogue needs, resolved once per call from gk_gemm_args.
 *   float types:      y = alpha*acc (+ beta*C if use_c), in the accumulator type
 *                     (float for 16-bit types, rounded once, RNE, on store)
 *   integers, exact:  y = alpha_u*acc (+ beta_u*C) modulo 2**bits
 *   integers, float:  y = gk_gemm_f64_to_u64_mod(double(acc)*alpha (+ double(C)*beta))
 * use_c is false when C is absent or beta == 0: C is then never dereferenced. */
typedef struct gk_gemm_epi {
    int dtype;
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

/* Resolves alpha/beta/C handling for args (see gk_gemm.h for the rules). */
void gk_gemm_epi_init(gk_gemm_epi *e, const gk_gemm_args *args);

/* Finishes outputs (m0 + i, n0 + j), i < rows, j < cols, from acc[i*ldacc + j]
 * (accumulator type of e->dtype). */
void gk_gemm_epilogue(const gk_gemm_epi *e, int rows, int cols, const void *acc,
                      ptrdiff_t ldacc, ptrdiff_t m0, ptrdiff_t n0);

#endif
