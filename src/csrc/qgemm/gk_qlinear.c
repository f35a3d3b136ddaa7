/* QLinearMatMul paths that involve float8 (opset 21).  Not a speed path: the point is
 * exact adherence to the definition in DESIGN.md §2. */
#include <math.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_qgemm_driver.h"
#include "core/gk_alloc.h"

/* Real value of one stored element (before zero point and scale). */
static float qvalue(const uint8_t *p, int type)
{
    if (type == GK_QT_U8)
        return (float)*p;
    if (type == GK_QT_S8)
        return (float)(int8_t)*p;
    return gk_fp8_decode(*p, type - GK_QT_F8);
}

static void store_int(void *y, ptrdiff_t idx, int type, double x, double zp)
{
    /* x is +-inf on overflow (saturates); NaN (only from NaN float8 inputs) has no
     * integer value: it is treated as 0, giving the zero point. */
    double r = (x != x) ? zp : nearbyint(x) + zp;
    if (type == GK_QT_U8) {
        r = r < 0.0 ? 0.0 : (r > 255.0 ? 255.0 : r);
        ((uint8_t *)y)[idx] = (uint8_t)(int)r;
    } else {
        r = r < -128.0 ? -128.0 : (r > 127.0 ? 127.0 : r);
        ((int8_t *)y)[idx] = (int8_t)(int)r;
    }
}

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

/* Depth rows dequantized per pass: bounds the buffers to (M + N) * FLOAT_KC floats beside
 * the M x N accumulators, whatever K is. */
#define FLOAT_KC 4096

static int float_inputs(const gk_qgemm_problem *p)
{
    const int M = p->m, N = p->n, K = p->k;
    const size_t mn = (size_t)M * N, ra_n = (size_t)M * FLOAT_KC, rb_n = (size_t)FLOAT_KC * N;
    float *buf = (float *)gk_aligned_alloc((mn + ra_n + rb_n + (size_t)M + N) * sizeof(float));
    if (!buf)
        return -1;
    float *acc = buf, *ra = acc + mn, *rb = ra + ra_n, *azp = rb + rb_n, *bzp = azp + M;
    for (int i = 0; i < M; i++)
        azp[i] = p->a_zp ? qvalue(p->a_zp + i * p->a_zp_rs, p->a_type) : 0.0f;
    for (int j = 0; j < N; j++)
        bzp[j] = p->b_zp ? qvalue(p->b_zp + j * p->b_zp_cs, p->b_type) : 0.0f;
    memset(acc, 0, mn * sizeof(float));
    /* Every output accumulates its products one at a time in ascending k across the
     * passes (float32, no contraction), so the result does not depend on FLOAT_KC. */
    /* leaves through the break with k0 > K - FLOAT_KC: k0 + FLOAT_KC never passes INT_MAX */
    for (int k0 = 0;; k0 += FLOAT_KC) {
        const int kc = K - k0 < FLOAT_KC ? K - k0 : FLOAT_KC;
        /* real = (float(q) - float(zp)) * scale, each step one float32 rounding */
        for (int i = 0; i < M; i++) {
            const float s = p->a_scale[i * p->as_rs];
            const uint8_t *row = p->a + i * p->a_rs + (ptrdiff_t)k0 * p->a_cs;
            for (int kk = 0; kk < kc; kk++)
                ra[(size_t)i * kc + kk] = (qvalue(row + kk * p->a_cs, p->a_type) - azp[i]) * s;
        }
        for (int kk = 0; kk < kc; kk++) {
            const uint8_t *row = p->b + (ptrdiff_t)(k0 + kk) * p->b_rs;
            for (int j = 0; j < N; j++)
                rb[(size_t)kk * N + j] =
                    (qvalue(row + j * p->b_cs, p->b_type) - bzp[j]) * p->b_scale[j * p->bs_cs];
        }
        for (int i = 0; i < M; i++) {
            float *arow = acc + (size_t)i * N;
            for (int kk = 0; kk < kc; kk++) {
                const float av = ra[(size_t)i * kc + kk];
                const float *brow = rb + (size_t)kk * N;
                for (int j = 0; j < N; j++)
                    arow[j] += av * brow[j];
            }
        }
        if (K - k0 <= FLOAT_KC)
            break;
    }
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float x = acc[(size_t)i * N + j] / p->y_scale[i * p->ys_rs + j * p->ys_cs];
            const uint8_t *zp = p->y_zp + i * p->yzp_rs + j * p->yzp_cs;
            ptrdiff_t idx = i * p->ldy + j;
            if (is_f8(p->y_type)) {
                int fmt = p->y_type - GK_QT_F8;
                ((uint8_t *)p->y)[idx] = gk_fp8_encode_f32(x + gk_fp8_decode(*zp, fmt), fmt, 1);
            } else {
                store_int(p->y, idx, p->y_type, (double)x, (double)qvalue(zp, p->y_type));
            }
        }
    }
    gk_aligned_free(buf);
    return 0;
}

/* One matrix of a batch that involves float8. */
static int f8_matrix(void *kern, const gk_qgemm_problem *p)
{
    if (!is_f8(p->a_type) && !is_f8(p->b_type))
        return int_inputs_f8_output((const gk_qgemm_kernel *)kern, p);
    return float_inputs(p);
}

int gk_qlinear_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, const gk_qbatch *batch)
{
    if (p->m <= 0 || p->n <= 0)
        return 0;
    if (!is_f8(p->a_type) && !is_f8(p->b_type) && !is_f8(p->y_type))
        return gk_qgemm_run(kern, p, batch);
    return gk_qbatch_foreach(p, batch, f8_matrix, (void *)kern);
}
