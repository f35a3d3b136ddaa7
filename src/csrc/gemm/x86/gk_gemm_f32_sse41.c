/* The float32 Gemm family for SSE (group sse41: CPUs below AVX2, e.g. Nehalem).
 *
 * Tile 6 x 8 (12 xmm accumulators, 4-lane vectors, two per row: gk_gemm_sse_ukernel.inc),
 * both operands packed by the generic packers in the standard panel layout of gk_gemm.h;
 * B' read in place for small and thin calls (ukernel_ldb).  No FMA in SSE: each product
 * is rounded, then added in increasing k, so every sum is the scalar oracle's bit for bit
 * and ukernel is also the rounded kernel QLinearMatMul's float8 path wants
 * (ukernel_rounded = NULL).  Cache blocks from this CPU's caches at run time
 * (cache_blocks; fallback MC = 144, KC = 256, NC = 2048: packed A 144 KiB, B 2 MiB). */
#include <smmintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"
#include "gk_gemm_f32_x86.h"

#define GK_PFX gk_gemm_f32_sse41_6x8
#define GK_T float
#define GK_ES 4
#define GK_MR 6
#define GK_W 4
#define GK_VEC __m128
#define GK_VLOAD(p) _mm_loadu_ps(p)
#define GK_VSTORE(p, v) _mm_storeu_ps(p, v)
#define GK_VZERO() _mm_setzero_ps()
#define GK_VBCAST(p) _mm_set1_ps(*(p))
#define GK_VMUL(x, y) _mm_mul_ps(x, y)
#define GK_VADD(x, y) _mm_add_ps(x, y)
#include "gk_gemm_sse_ukernel.inc"

const gk_gemm_kernel gk_gemm_f32_sse41 = {
    "sse41", GK_DT_F32, GK_ACC_F32, 6, 8, 144, 256, 2048,
    gk_gemm_pack_a_f32, gk_gemm_pack_b_f32, gk_gemm_f32_sse41_6x8_ukernel,
    gk_gemm_epilogue_f32,
    1,    /* cache_blocks */
    NULL, /* ukernel_rounded: ukernel rounds every product */
    gk_gemm_f32_sse41_6x8_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};

/* The same micro-kernel with external linkage (gk_gemm_f32_x86.h): the float16/bfloat16
 * families of this group run it on their widened float32 panels. */
void gk_gemm_f32_sse41_6x8_ukernel_ext(int kc, const void *a_panel, const void *b_panel,
                                       void *c, ptrdiff_t ldc, int mr_valid, int nr_valid,
                                       int first)
{
    gk_gemm_f32_sse41_6x8_ukernel(kc, a_panel, b_panel, c, ldc, mr_valid, nr_valid, first);
}
