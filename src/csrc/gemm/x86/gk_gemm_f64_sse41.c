/* The float64 Gemm family for SSE2/SSE3 (group sse41: CPUs below AVX2, e.g. Nehalem).
 *
 * Tile 6 x 4 (12 xmm accumulators, 2-lane vectors, two per row: gk_gemm_sse_ukernel.inc;
 * a(i, k) broadcast by movddup), both operands packed by the generic packers in the
 * standard panel layout of gk_gemm.h; B' read in place for small and thin calls
 * (ukernel_ldb).  No FMA in SSE: each product is rounded, then added in increasing k, so
 * every sum is the scalar oracle's bit for bit (ukernel_rounded = NULL).  Cache blocks
 * from this CPU's caches at run time (cache_blocks; fallback MC = 72, KC = 256,
 * NC = 1024: packed A 144 KiB, B 2 MiB). */
#include <smmintrin.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_gemm.h"

#define GK_PFX gk_gemm_f64_sse41_6x4
#define GK_T double
#define GK_ES 8
#define GK_MR 6
#define GK_W 2
#define GK_VEC __m128d
#define GK_VLOAD(p) _mm_loadu_pd(p)
#define GK_VSTORE(p, v) _mm_storeu_pd(p, v)
#define GK_VZERO() _mm_setzero_pd()
#define GK_VBCAST(p) _mm_loaddup_pd(p)
#define GK_VMUL(x, y) _mm_mul_pd(x, y)
#define GK_VADD(x, y) _mm_add_pd(x, y)
#include "gk_gemm_sse_ukernel.inc"

const gk_gemm_kernel gk_gemm_f64_sse41 = {
    "sse41", GK_DT_F64, GK_ACC_F64, 6, 4, 72, 256, 1024,
    gk_gemm_pack_a_f64, gk_gemm_pack_b_f64, gk_gemm_f64_sse41_6x4_ukernel,
    gk_gemm_epilogue_f64,
    1,    /* cache_blocks */
    NULL, /* ukernel_rounded: ukernel rounds every product */
    gk_gemm_f64_sse41_6x4_ukernel_ldb,
    0,       /* pack_esz: panels of accumulators */
};
