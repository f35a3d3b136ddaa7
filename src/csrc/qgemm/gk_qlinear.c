/* QLinearMatMul routing for every type mix (DESIGN.md §2): all-integer -> the int8 driver
 * (batched); integer a, b with a float8 y -> exact int32 sums, then the double
 * requantization and saturating float8 encode here; float8 a or b -> the Gemm engine
 * (gk_qlinear_f8.c).  The float8 routes run matrix by matrix.
 *
 * Every route runs in the default floating-point environment (core/gk_fenv.h): the
 * multiplier, the requantization's rounding half to even and the float8 routes' float32
 * sums are defined exactly, not steered by a mode the caller set.  Under FE_UPWARD /
 * FE_DOWNWARD / FE_TOWARDZERO, 189-199 of 3072 uint8 outputs (64 x 100 x 48) differed from
 * the definition, and the scalar and SIMD paths from each other. */
#include <math.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_qgemm_driver.h"
#include "core/gk_alloc.h"
#include "core/gk_fenv.h"

static int is_f8(int t) { return t >= GK_QT_F8; }

static int int_inputs_f8_output(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p)
{
    const int M = p->m, N = p->n, fmt = p->y_type - GK_QT_F8;
    int32_t *acc = (int32_t *)gk_aligned_alloc((size_t)M * N * sizeof(int32_t));
    if (!acc)
        return -1;
    gk_qgemm_problem q = *p;
    q.out_kind = GK_QOUT_I32;
    q.y = acc;
    q.ldy = N;
    if (gk_qgemm_run(kern, &q, NULL) != 0) {
        gk_aligned_free(acc);
        return -1;
    }
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float m = gk_qmultiplier(p->a_scale[i * p->as_rs], p->b_scale[j * p->bs_cs],
                                     p->y_scale[i * p->ys_rs + j * p->ys_cs]);
            double zp = gk_fp8_decode(p->y_zp[i * p->yzp_rs + j * p->yzp_cs], fmt);
            double x = (double)acc[(size_t)i * N + j] * (double)m + zp;
            ((uint8_t *)p->y)[i * p->ldy + j] = gk_fp8_encode_f64(x, fmt, 1);
        }
    }
    gk_aligned_free(acc);
    return 0;
}

/* float8 a or b: dequantizing packers around the f32 Gemm engine (gk_qlinear_f8.c). */
int gk_qlinear_float_inputs(const gk_qgemm_problem *p);

/* One matrix of a batch that involves float8. */
static int f8_matrix(void *kern, const gk_qgemm_problem *p)
{
    if (!is_f8(p->a_type) && !is_f8(p->b_type))
        return int_inputs_f8_output((const gk_qgemm_kernel *)kern, p);
    return gk_qlinear_float_inputs(p);
}

int gk_qlinear_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const gk_qbatch *batch)
{
    return gk_qlinear_run_packed(kern, p, batch, NULL, 1);
}

int gk_qlinear_run_packed(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                          const gk_qbatch *batch, const void *packed_b, ptrdiff_t nmat)
{
    int rc;
    if (p->m <= 0 || p->n <= 0)
        return 0;
    GK_FENV_DEFAULT_BEGIN
    if (!is_f8(p->a_type) && !is_f8(p->b_type) && !is_f8(p->y_type))
        rc = gk_qgemm_run_packed(kern, p, batch, packed_b, nmat); /* NULL: unpacked */
    else
        rc = gk_qbatch_foreach(p, batch, f8_matrix, (void *)kern);
    GK_FENV_DEFAULT_END
    return rc;
}
