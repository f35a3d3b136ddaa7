/* The float16 Gemm family for SSE (group sse41: CPUs below AVX2, no F16C): the widening
 * path.
 *
 * The generic packers (gk_gemm_pack_a_f16 / gk_gemm_pack_b_f16: exact widening in C)
 * fill the standard float32 panels of gk_gemm.h; the sums run in this group's float32
 * 6 x 8 micro-kernel (gk_gemm_f32_sse41.c through gk_gemm_f32_x86.h: mul, then add, so
 * float32's sums are the scalar oracle's bit for bit; never a 16-bit sum); the generic
 * epilogue gk_gemm_epilogue_f16 rounds alpha*acc + beta*C once (RNE).  Results equal the
 * scalar float16 family's bit for bit.  Cache blocks from this CPU's caches, as float32's
 * (the panels are float32; fallback 144/256/2048). */
#include "gemmkit/gk_gemm.h"
#include "gk_gemm_f32_x86.h"

const gk_gemm_kernel gk_gemm_f16_sse41 = {
    "sse41", GK_DT_F16, GK_ACC_F32, 6, 8, 144, 256, 2048,
    gk_gemm_pack_a_f16, gk_gemm_pack_b_f16, gk_gemm_f32_sse41_6x8_ukernel_ext,
    gk_gemm_epilogue_f16,
    1,    /* cache_blocks */
    NULL, /* ukernel_rounded: ukernel rounds every product */
    NULL, /* ukernel_ldb: Y is 16-bit, the sums live in a float32 workspace */
    0,       /* pack_esz: panels of accumulators */
};
