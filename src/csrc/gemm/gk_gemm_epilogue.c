/* Gemm epilogue: Y = alpha*acc + beta*C and the output cast, for one tile of outputs.
 * Built for the baseline with -ffp-contract=off: alpha*acc + beta*c is two roundings of
 * products and one of the sum, exactly NumPy's `o = dot*alpha; o += c*beta`.
 *
 * One function per output type; inside, one simple loop nest per (path, C form) -- no C,
 * C constant along a row (C strides: column 0: shapes (), [1], [M,1]), C contiguous along
 * a row, C strided -- with no branch per element, so the compiler may vectorise them
 * (the 16-bit conversions and the integer float path's cast are calls it may not).  For
 * outputs stored in the accumulator type the tile is rewritten in place (acc IS Y's
 * tile: no second pointer, so no aliasing question for the vectoriser). */
#include <math.h>
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_gemm.h"

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

int gk_gemm_epi_is_identity(const gk_gemm_epi *e, int dtype)
{
    if (e->use_c)
        return 0;
    switch (dtype) {
    case GK_DT_F32:
        /* 1.0f * x == x bit for bit, for every float x a sum can be (NaNs from
         * arithmetic are already quiet) */
        return e->alpha_f == 1.0f;
    case GK_DT_F64:
        return e->alpha_d == 1.0;
    case GK_DT_I32:
    case GK_DT_U32:
        return !e->int_float_path && (uint32_t)e->alpha_u == 1u;
    case GK_DT_I64:
    case GK_DT_U64:
        return !e->int_float_path && e->alpha_u == 1u;
    default: /* 16-bit outputs always need their cast */
        return 0;
    }
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

static inline float load_f32(const char *p) { float c; memcpy(&c, p, 4); return c; }
static inline double load_f64(const char *p) { double c; memcpy(&c, p, 8); return c; }
static inline float load_f16(const char *p) { uint16_t h; memcpy(&h, p, 2); return gk_f16_to_f32(h); }
static inline float load_bf16(const char *p) { uint16_t h; memcpy(&h, p, 2); return gk_bf16_to_f32(h); }
static inline uint32_t load_u32(const char *p) { uint32_t c; memcpy(&c, p, 4); return c; }
static inline uint64_t load_u64(const char *p) { uint64_t c; memcpy(&c, p, 8); return c; }

/* The loop nests of one (output type, path).  Parameters (macros of their arguments):
 *   ACC_T  accumulator type; OUT_T Y's element (== ACC_T's storage when INPLACE)
 *   VAL_T  the type the arithmetic runs in
 *   SCALE(a)     alpha * accumulator, in VAL_T
 *   CTERM(c)     beta * C element (c as loaded by LOADC), in VAL_T
 *   ADD(u, v)    u + v in VAL_T
 *   STORE(v)     VAL_T -> OUT_T (the output cast)
 *   LOADC(p), CSZ  reads C's element at p; its size in bytes
 * The caller declares `alpha` and `beta` (used by SCALE/CTERM) before expanding. */
#define GK_EPI_LOOPS(ACC_T, OUT_T, INPLACE, VAL_T, SCALE, CTERM, ADD, STORE, LOADC, CSZ)     \
    do {                                                                                 \
        ACC_T *acc_ = (ACC_T *)acc;                                                      \
        OUT_T *y_ = INPLACE ? (OUT_T *)acc : (OUT_T *)e->y + m0 * e->ldy + n0;           \
        const ptrdiff_t ldy_ = INPLACE ? ldacc : e->ldy;                                 \
        if (!e->use_c) {                                                                 \
            for (int i = 0; i < rows; i++) {                                             \
                const ACC_T *a_ = acc_ + i * ldacc;                                      \
                OUT_T *yr_ = y_ + i * ldy_;                                              \
                for (int j = 0; j < cols; j++)                                           \
                    yr_[j] = STORE(SCALE(a_[j]));                                        \
            }                                                                            \
        } else {                                                                         \
            const ptrdiff_t crs_ = e->c_rs, ccs_ = e->c_cs;                              \
            /* C is used: m0, n0 are real outputs, so this is an address in C */        \
            const char *c_ = e->c + m0 * crs_ + n0 * ccs_;                               \
            for (int i = 0; i < rows; i++) {                                             \
                const ACC_T *a_ = acc_ + i * ldacc;                                      \
                OUT_T *yr_ = y_ + i * ldy_;                                              \
                const char *cr_ = c_ + i * crs_;                                         \
                if (ccs_ == 0) {                                                         \
                    const VAL_T cb_ = CTERM(LOADC(cr_));                                 \
                    for (int j = 0; j < cols; j++)                                       \
                        yr_[j] = STORE(ADD(SCALE(a_[j]), cb_));                          \
                } else if (ccs_ == CSZ) {                                                \
                    for (int j = 0; j < cols; j++)                                       \
                        yr_[j] = STORE(ADD(SCALE(a_[j]), CTERM(LOADC(cr_ + j * CSZ))));  \
                } else {                                                                 \
                    for (int j = 0; j < cols; j++)                                       \
                        yr_[j] = STORE(ADD(SCALE(a_[j]), CTERM(LOADC(cr_ + j * ccs_)))); \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    } while (0)

#define EPI_SIGNATURE(NAME)                                                              \
    void NAME(const void *ctx, ptrdiff_t m0, ptrdiff_t n0, int rows, int cols, void *acc, \
              ptrdiff_t ldacc)

/* ---- float accumulators ---- */
#define F_SCALE(a) (alpha * (a))
#define F_CTERM(c) (beta * (c))
#define F_ADD(u, v) ((u) + (v))
#define F_KEEP(v) (v)

EPI_SIGNATURE(gk_gemm_epilogue_f32)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    const float alpha = e->alpha_f, beta = e->beta_f;
    GK_EPI_LOOPS(float, float, 1, float, F_SCALE, F_CTERM, F_ADD, F_KEEP, load_f32, 4);
}

EPI_SIGNATURE(gk_gemm_epilogue_f16)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    const float alpha = e->alpha_f, beta = e->beta_f;
    GK_EPI_LOOPS(float, uint16_t, 0, float, F_SCALE, F_CTERM, F_ADD, gk_f32_to_f16, load_f16, 2);
}

EPI_SIGNATURE(gk_gemm_epilogue_bf16)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    const float alpha = e->alpha_f, beta = e->beta_f;
    GK_EPI_LOOPS(float, uint16_t, 0, float, F_SCALE, F_CTERM, F_ADD, gk_f32_to_bf16, load_bf16, 2);
}

EPI_SIGNATURE(gk_gemm_epilogue_f64)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    const double alpha = e->alpha_d, beta = e->beta_d;
    GK_EPI_LOOPS(double, double, 1, double, F_SCALE, F_CTERM, F_ADD, F_KEEP, load_f64, 8);
}

/* ---- integer accumulators: exact modular path ---- */
/* 0u + x: unsigned arithmetic whatever the width of int, wraps mod 2**32 */
#define U32_SCALE(a) ((uint32_t)((0u + alpha) * (a)))
#define U32_CTERM(c) ((uint32_t)((0u + beta) * (c)))
#define U32_ADD(u, v) ((uint32_t)((u) + (v)))
#define U64_SCALE(a) (alpha * (a))
#define U64_CTERM(c) (beta * (c))
#define U64_ADD(u, v) ((u) + (v))

/* ---- integer accumulators: the onnx reference's float path ---- */
#define S32_FSCALE(a) (s32_to_f64(a) * alpha)
#define S32_FCTERM(c) (s32_to_f64(c) * beta)
#define U32_FSCALE(a) ((double)(a) * alpha)
#define U32_FCTERM(c) ((double)(c) * beta)
#define S64_FSCALE(a) (s64_to_f64(a) * alpha)
#define S64_FCTERM(c) (s64_to_f64(c) * beta)
#define TO_U32(v) ((uint32_t)gk_gemm_f64_to_u64_mod(v)) /* the low 32 bits */
#define TO_U64(v) (gk_gemm_f64_to_u64_mod(v))

static void epi_u32_exact(const gk_gemm_epi *e, ptrdiff_t m0, ptrdiff_t n0, int rows,
                          int cols, void *acc, ptrdiff_t ldacc)
{
    const uint32_t alpha = (uint32_t)e->alpha_u, beta = (uint32_t)e->beta_u;
    GK_EPI_LOOPS(uint32_t, uint32_t, 1, uint32_t, U32_SCALE, U32_CTERM, U32_ADD, F_KEEP, load_u32, 4);
}

static void epi_u64_exact(const gk_gemm_epi *e, ptrdiff_t m0, ptrdiff_t n0, int rows,
                          int cols, void *acc, ptrdiff_t ldacc)
{
    const uint64_t alpha = e->alpha_u, beta = e->beta_u;
    GK_EPI_LOOPS(uint64_t, uint64_t, 1, uint64_t, U64_SCALE, U64_CTERM, U64_ADD, F_KEEP, load_u64, 8);
}

/* int32 storage is written as its unsigned variant */
EPI_SIGNATURE(gk_gemm_epilogue_i32)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    if (!e->int_float_path) {
        epi_u32_exact(e, m0, n0, rows, cols, acc, ldacc);
    } else {
        const double alpha = e->alpha_d, beta = e->beta_d;
        GK_EPI_LOOPS(uint32_t, uint32_t, 1, double, S32_FSCALE, S32_FCTERM, F_ADD, TO_U32, load_u32, 4);
    }
}

EPI_SIGNATURE(gk_gemm_epilogue_u32)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    if (!e->int_float_path) {
        epi_u32_exact(e, m0, n0, rows, cols, acc, ldacc);
    } else {
        const double alpha = e->alpha_d, beta = e->beta_d;
        GK_EPI_LOOPS(uint32_t, uint32_t, 1, double, U32_FSCALE, U32_FCTERM, F_ADD, TO_U32, load_u32, 4);
    }
}

EPI_SIGNATURE(gk_gemm_epilogue_i64)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    if (!e->int_float_path) {
        epi_u64_exact(e, m0, n0, rows, cols, acc, ldacc);
    } else {
        const double alpha = e->alpha_d, beta = e->beta_d;
        GK_EPI_LOOPS(uint64_t, uint64_t, 1, double, S64_FSCALE, S64_FCTERM, F_ADD, TO_U64, load_u64, 8);
    }
}

EPI_SIGNATURE(gk_gemm_epilogue_u64)
{
    const gk_gemm_epi *e = (const gk_gemm_epi *)ctx;
    if (!e->int_float_path) {
        epi_u64_exact(e, m0, n0, rows, cols, acc, ldacc);
    } else {
        const double alpha = e->alpha_d, beta = e->beta_d;
        GK_EPI_LOOPS(uint64_t, uint64_t, 1, double, U32_FSCALE, U32_FCTERM, F_ADD, TO_U64, load_u64, 8);
    }
}
