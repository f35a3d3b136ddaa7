/* The NEON Gemm micro-kernels shared between family files of the neon group (defined by
 * gk_gemm_neon_ukernel.inc): the float16 / bfloat16 families widen into float32 panels
 * and run the float32 kernel. */
#ifndef GEMMKIT_GK_GEMM_NEON_H
#define GEMMKIT_GK_GEMM_NEON_H

#include <stddef.h>

#include "gemmkit/gk_gemm.h"

#define GK_GEMM_NEON_DECLARE(PFX)                                                           \
    void PFX##_ukernel(int kc, const void *a_panel, const void *b_panel, void *c,          \
                       ptrdiff_t ldc, int mr_valid, int nr_valid, int first);              \
    void PFX##_ukernel_ldb(int kc, const void *a_panel, const void *b, ptrdiff_t ldb,      \
                           void *c, ptrdiff_t ldc, int mr_valid, int nr_valid, int first);
GK_GEMM_NEON_DECLARE(gk_gemm_f32_neon_8x12)
GK_GEMM_NEON_DECLARE(gk_gemm_f64_neon_8x6)
GK_GEMM_NEON_DECLARE(gk_gemm_u32_neon_8x12)
#undef GK_GEMM_NEON_DECLARE
void gk_gemm_f32_neon_8x12_ukernel_rounded(int kc, const void *a_panel, const void *b_panel,
                                           void *c, ptrdiff_t ldc, int mr_valid, int nr_valid,
                                           int first);
void gk_gemm_f32_neon_8x12_ukernel_rounded_ldb(int kc, const void *a_panel, const void *b,
                                               ptrdiff_t ldb, void *c, ptrdiff_t ldc,
                                               int mr_valid, int nr_valid, int first);

#endif
