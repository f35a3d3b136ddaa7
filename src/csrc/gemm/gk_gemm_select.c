/* Which Gemm kernel family runs for each element type.
 *
 * Today every type has only its scalar family.  A SIMD family (src/csrc/gemm/x86/gk_gemm_<type>
 * _avx2.c, ...) plugs in by being listed before the scalar one in its type's row, guarded
 * by GK_HAVE_<ISA> and a gk_cpu_features() check, exactly as the int8 table in
 * gk_dispatch.c does; kernel, packing, block sizes and epilogue come together in the
 * family (contract in gk_gemm.h), so nothing else changes.  The table is constant: no
 * state, thread-safe. */
#include "gemmkit/gk_gemm.h"

static const gk_gemm_kernel *const scalar_families[GK_DT_COUNT] = {
    &gk_gemm_f16_scalar, /* GK_DT_F16 */
    &gk_gemm_bf16_scalar, /* GK_DT_BF16 */
    &gk_gemm_f32_scalar, /* GK_DT_F32 */
    &gk_gemm_f64_scalar, /* GK_DT_F64 */
    &gk_gemm_i32_scalar, /* GK_DT_I32 */
    &gk_gemm_u32_scalar, /* GK_DT_U32 */
    &gk_gemm_i64_scalar, /* GK_DT_I64 */
    &gk_gemm_u64_scalar, /* GK_DT_U64 */
};

const gk_gemm_kernel *gk_gemm_kernel_for(int dtype)
{
    if (dtype < 0 || dtype >= GK_DT_COUNT)
        return 0;
    return scalar_families[dtype];
}
