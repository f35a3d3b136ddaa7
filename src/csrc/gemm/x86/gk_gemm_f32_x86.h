/* The float32 micro-kernels of the x86 float32 families (gk_gemm_f32_sse41.c,
 * gk_gemm_f32_avx2.c, gk_gemm_f32_avx512.c), with external linkage for the float16 /
 * bfloat16 widening families (gk_gemm_{f16,bf16}_{sse41,avx2,avx512}.c): those pack into the same standard float32
 * panels and run these kernels unchanged (contract: gk_gemm_ukernel_fn in gk_gemm.h).
 * Each is defined in its family's file, built with that ISA group's flags; callers must
 * be in the same group (the dispatch only selects them where that group runs). */
#ifndef GEMMKIT_GK_GEMM_F32_X86_H
#define GEMMKIT_GK_GEMM_F32_X86_H

#include <stddef.h>

/* mul, then add: also the rounded kernel (the scalar oracle's sums bit for bit) */
void gk_gemm_f32_sse41_6x8_ukernel_ext(int kc, const void *a_panel, const void *b_panel,
                                       void *c, ptrdiff_t ldc, int mr_valid, int nr_valid,
                                       int first);
void gk_gemm_f32_avx2_6x16_ukernel_ext(int kc, const void *a_panel, const void *b_panel,
                                       void *c, ptrdiff_t ldc, int mr_valid, int nr_valid,
                                       int first);
void gk_gemm_f32_avx2_6x16_ukernel_rounded_ext(int kc, const void *a_panel,
                                               const void *b_panel, void *c, ptrdiff_t ldc,
                                               int mr_valid, int nr_valid, int first);
void gk_gemm_f32_avx512_14x32_ukernel_ext(int kc, const void *a_panel, const void *b_panel,
                                          void *c, ptrdiff_t ldc, int mr_valid,
                                          int nr_valid, int first);
void gk_gemm_f32_avx512_14x32_ukernel_rounded_ext(int kc, const void *a_panel,
                                                  const void *b_panel, void *c,
                                                  ptrdiff_t ldc, int mr_valid, int nr_valid,
                                                  int first);

/* their strips (gk_gemm_ukernel_strip_fn): the widening families run them on packed
 * panels only (run_thin_bt's grouped tiles) */
void gk_gemm_f32_avx2_6x16_ukernel_strip_ext(int kc, const void *a_panel, const void *b,
                                             ptrdiff_t ldb, ptrdiff_t ldt, void *c,
                                             ptrdiff_t ldc, int rows, int ntiles, int first,
                                             int wide);
void gk_gemm_f32_avx512_14x32_ukernel_strip_ext(int kc, const void *a_panel, const void *b,
                                                ptrdiff_t ldb, ptrdiff_t ldt, void *c,
                                                ptrdiff_t ldc, int rows, int ntiles,
                                                int first, int wide);

/* The avx512 bfloat16 widening family's fused epilogue (gk_gemm_half_x86.inc: bit for bit
 * gk_gemm_epilogue_bf16), for the bfloat16 dot-product families (gk_gemm_bf16_avx512bf16.c,
 * gk_gemm_bf16_amxbf16.c): their dispatch entries need every feature of the avx512 group
 * (level avx512, or the AVX512DQ and F16C bits beside level amx). */
void gk_gemm_bf16_avx512_epilogue_ext(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows,
                                      int cols, void *acc, ptrdiff_t ldacc);

#endif
