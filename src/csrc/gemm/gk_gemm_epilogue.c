/* Gemm epilogue: Y = alpha*acc + beta*C and the output cast, for one block of outputs.
 * Built for the baseline with -ffp-contract=off: alpha*acc + beta*c is two roundings of
 * products and one of the sum, exactly NumPy's `o = dot*alpha; o += c*beta`. */
#include <math.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gk_gemm_internal.h"

#define TWO63 9223372036854775808.0
#define TWO64 18446744073709551616.0

uint64_t gk_gemm_f64_to_u64_mod(double x)
{
    double r, m;
    uint64_t u;
    if (!(x - x == 0.0)) /* NaN or +-inf */
        return 0;
    /* fmod is exact; r is an integer with |r| < 2**64 and the sign of x */
    r = fmod(trunc(x), TWO64);
    m = r < 0.0 ? -r : r;
    /* m < 2**64; for m >= 2**63, m - 2**63 is exact (Sterbenz) and < 2**63, so each
     * conversion below is of an in-range value */
    u = m >= TWO63 ? (uint64_t)(m - TWO63) + ((uint64_t)1 << 63) : (uint64_t)m;
    return r < 0.0 ? (uint64_t)0 - u : u;
}

static int is_integral(double x) { return x - x == 0.0 && trunc(x) == x; }

void gk_gemm_epi_init(gk_gemm_epi *e, const gk_gemm_args *g)
{
    int dt = g->dtype;
    memset(e, 0, sizeof(*e));
    e->dtype = dt;
    e->alpha_f = (float)g->alpha;
    e->beta_f = (float)g->beta;
    e->alpha_d = g->alpha;
    e->beta_d = g->beta;
    if (dt == GK_DT_F16 || dt == GK_DT_BF16 || dt == GK_DT_F32)
        e->use_c = g->c != NULL && e->beta_f != 0.0f; /* "beta == 0" in the compute type */
    else
        e->use_c = g->c != NULL && g->beta != 0.0;
    if (dt >= GK_DT_I32) {
        /* an exact integer's double is integral too; testing the flag first says so */
        const int alpha_integral = g->alpha_exact || is_integral(g->alpha);
        const int beta_integral = g->beta_exact || is_integral(g->beta);
        e->int_float_path = !alpha_integral || (e->use_c && !beta_integral);
        if (!e->int_float_path) {
            /* both exact: the caller's integer modulo 2**64, or an integral double's
             * exact value modulo 2**64 */
            e->alpha_u = g->alpha_exact ? g->alpha_u64 : gk_gemm_f64_to_u64_mod(g->alpha);
            e->beta_u = !e->use_c ? 0
                        : g->beta_exact ? g->beta_u64 : gk_gemm_f64_to_u64_mod(g->beta);
        }
    }
    e->c = (const char *)g->c;
    e->c_rs = g->c_rs;
    e->c_cs = g->c_cs;
    e->y = (char *)g->y;
    e->ldy = g->ldy;
}

/* Exact reads of two's complement bit patterns as doubles (no implementation-defined
 * unsigned -> signed conversion): 2**32 and 2**64 offsets are exact in double, and
 * negating the magnitude rounds like rounding the negative value. */
static inline double s32_to_f64(uint32_t u)
{
    return u < 0x80000000u ? (double)u : (double)u - 4294967296.0;
}
static inline double s64_to_f64(uint64_t u)
{
    return u < ((uint64_t)1 << 63) ? (double)u : -(double)((uint64_t)0 - u);
}

/* Inside the loop: m, n = output indices; crow = C's row m (only formed when C is used,
 * so a NULL C never takes part in pointer arithmetic); c_at(e, m, n) = C(m, n). */
#define ROWS_COLS_LOOP(BODY)                                                   \
    for (int i = 0; i < rows; i++) {                                           \
        const ptrdiff_t m = m0 + i;                                            \
        const char *crow = e->use_c ? e->c + m * e->c_rs : NULL;               \
        (void)crow;                                                            \
        for (int j = 0; j < cols; j++) {                                       \
            const ptrdiff_t n = n0 + j;                                        \
            BODY                                                               \
        }                                                                      \
    }
#define c_at(e, m, n) (crow + (n) * (e)->c_cs)

static inline float load_c_f32(const char *p) { float c; memcpy(&c, p, 4); return c; }
static inline float load_c_f16(const char *p) { uint16_t h; memcpy(&h, p, 2); return gk_f16_to_f32(h); }
static inline float load_c_bf16(const char *p) { uint16_t h; memcpy(&h, p, 2); return gk_bf16_to_f32(h); }
static inline float as_f32(float v) { return v; }

/* One loop per (output type, C used): branch-free inner loops, cheap for small tiles. */
#define EPI_F32ACC(OUT_T, STORE, LOADC)                                                    \
    do {                                                                                   \
        OUT_T *y = (OUT_T *)e->y;                                                          \
        if (e->use_c) {                                                                    \
            ROWS_COLS_LOOP({                                                               \
                float v = alpha * acc[(ptrdiff_t)i * ldacc + j];                           \
                y[m * e->ldy + n] = STORE(v + beta * LOADC(c_at(e, m, n)));                \
            })                                                                             \
        } else {                                                                           \
            ROWS_COLS_LOOP({ y[m * e->ldy + n] = STORE(alpha * acc[(ptrdiff_t)i * ldacc + j]); }) \
        }                                                                                  \
    } while (0)

static void epi_f32acc(const gk_gemm_epi *e, int rows, int cols, const float *acc,
                       ptrdiff_t ldacc, ptrdiff_t m0, ptrdiff_t n0)
{
    const float alpha = e->alpha_f, beta = e->beta_f;
    if (e->dtype == GK_DT_F32)
        EPI_F32ACC(float, as_f32, load_c_f32);
    else if (e->dtype == GK_DT_F16)
        EPI_F32ACC(uint16_t, gk_f32_to_f16, load_c_f16);
    else
        EPI_F32ACC(uint16_t, gk_f32_to_bf16, load_c_bf16);
}

static void epi_f64acc(const gk_gemm_epi *e, int rows, int cols, const double *acc,
                       ptrdiff_t ldacc, ptrdiff_t m0, ptrdiff_t n0)
{
    const double alpha = e->alpha_d, beta = e->beta_d;
    ROWS_COLS_LOOP({
        double v = alpha * acc[(ptrdiff_t)i * ldacc + j];
        if (e->use_c) {
            double c;
            memcpy(&c, c_at(e, m, n), 8);
            v = v + beta * c;
        }
        ((double *)e->y)[m * e->ldy + n] = v;
    })
}

static void epi_u32acc(const gk_gemm_epi *e, int rows, int cols, const uint32_t *acc,
                       ptrdiff_t ldacc, ptrdiff_t m0, ptrdiff_t n0)
{
    const int is_signed = e->dtype == GK_DT_I32;
    uint32_t *y = (uint32_t *)e->y; /* int32 storage written as its unsigned variant */
    if (!e->int_float_path) {
        const uint32_t alpha = (uint32_t)e->alpha_u, beta = (uint32_t)e->beta_u;
        ROWS_COLS_LOOP({
            /* 0u + x: unsigned arithmetic whatever the width of int, wraps mod 2**32 */
            uint32_t v = (uint32_t)((0u + alpha) * acc[(ptrdiff_t)i * ldacc + j]);
            if (e->use_c) {
                uint32_t c;
                memcpy(&c, c_at(e, m, n), 4);
                v = (uint32_t)(v + (0u + beta) * c);
            }
            y[m * e->ldy + n] = v;
        })
    } else {
        ROWS_COLS_LOOP({
            uint32_t a = acc[(ptrdiff_t)i * ldacc + j];
            double v = (is_signed ? s32_to_f64(a) : (double)a) * e->alpha_d;
            if (e->use_c) {
                uint32_t c;
                memcpy(&c, c_at(e, m, n), 4);
                v = v + (is_signed ? s32_to_f64(c) : (double)c) * e->beta_d;
            }
            y[m * e->ldy + n] = (uint32_t)gk_gemm_f64_to_u64_mod(v); /* low 32 bits */
        })
    }
}

static void epi_u64acc(const gk_gemm_epi *e, int rows, int cols, const uint64_t *acc,
                       ptrdiff_t ldacc, ptrdiff_t m0, ptrdiff_t n0)
{
    const int is_signed = e->dtype == GK_DT_I64;
    uint64_t *y = (uint64_t *)e->y;
    if (!e->int_float_path) {
        const uint64_t alpha = e->alpha_u, beta = e->beta_u;
        ROWS_COLS_LOOP({
            uint64_t v = alpha * acc[(ptrdiff_t)i * ldacc + j];
            if (e->use_c) {
                uint64_t c;
                memcpy(&c, c_at(e, m, n), 8);
                v += beta * c;
            }
            y[m * e->ldy + n] = v;
        })
    } else {
        ROWS_COLS_LOOP({
            uint64_t a = acc[(ptrdiff_t)i * ldacc + j];
            double v = (is_signed ? s64_to_f64(a) : (double)a) * e->alpha_d;
            if (e->use_c) {
                uint64_t c;
                memcpy(&c, c_at(e, m, n), 8);
                v = v + (is_signed ? s64_to_f64(c) : (double)c) * e->beta_d;
            }
            y[m * e->ldy + n] = gk_gemm_f64_to_u64_mod(v);
        })
    }
}

void gk_gemm_epilogue(const gk_gemm_epi *e, int rows, int cols, const void *acc,
                      ptrdiff_t ldacc, ptrdiff_t m0, ptrdiff_t n0)
{
    switch (e->dtype) {
    case GK_DT_F16:
    case GK_DT_BF16:
    case GK_DT_F32:
        epi_f32acc(e, rows, cols, (const float *)acc, ldacc, m0, n0);
        break;
    case GK_DT_F64:
        epi_f64acc(e, rows, cols, (const double *)acc, ldacc, m0, n0);
        break;
    case GK_DT_I32:
    case GK_DT_U32:
        epi_u32acc(e, rows, cols, (const uint32_t *)acc, ldacc, m0, n0);
        break;
    default:
        epi_u64acc(e, rows, cols, (const uint64_t *)acc, ldacc, m0, n0);
        break;
    }
}
