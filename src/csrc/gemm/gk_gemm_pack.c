/* Generic Gemm packers: strided source -> contiguous panels in the accumulator type
 * (layout in gk_gemm.h).  Conversion happens here, once per packed element:
 * float16/bfloat16 widen exactly to float; everything else is copied unchanged.
 *
 * Sources are read with memcpy: NumPy byte strides need not be multiples of the element
 * size, and memcpy of a fixed small size compiles to a plain load. */
#include <string.h>

#include "gemmkit/gk_codecs.h"
#include "gemmkit/gk_gemm.h"

static inline float load_f16(const char *p) { uint16_t h; memcpy(&h, p, 2); return gk_f16_to_f32(h); }
static inline float load_bf16(const char *p) { uint16_t h; memcpy(&h, p, 2); return gk_bf16_to_f32(h); }
static inline float load_f32(const char *p) { float v; memcpy(&v, p, 4); return v; }
static inline double load_f64(const char *p) { double v; memcpy(&v, p, 8); return v; }
static inline uint32_t load_32(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t load_64(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Only addresses of real elements (row < mc, k < kc) are formed, so no pointer ever
 * leaves the caller's array even with negative strides. */
/* COPY: the source element is the destination's bits (float32, float64, 32/64-bit
 * integers): rows of A' / B' contiguous in memory (stride == element size) are copied
 * with memcpy, a vector copy (A' column-major, e.g. transA; B' row-major, the usual). */
#define GK_DEFINE_PACK_A(NAME, DST_T, LOAD, COPY)                                           \
    void NAME(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc, int kc, int mr,     \
              void *dst)                                                                    \
    {                                                                                       \
        DST_T *d = (DST_T *)dst;                                                            \
        const ptrdiff_t rs = a->rs, cs = a->cs;                                             \
        const char *base = a->p + i0 * rs + k0 * cs;                                        \
        for (int p0 = 0; p0 < mc; p0 += mr) {                                               \
            int rows = mc - p0 < mr ? mc - p0 : mr;                                         \
            if (COPY && rs == (ptrdiff_t)sizeof(DST_T)) {                                   \
                const char *src = base + (ptrdiff_t)p0 * rs;                                \
                for (int k = 0; k < kc; k++) {                                              \
                    memcpy(d + (ptrdiff_t)k * mr, src + (ptrdiff_t)k * cs,                  \
                           (size_t)rows * sizeof(DST_T));                                   \
                    for (int i = rows; i < mr; i++)                                         \
                        d[(ptrdiff_t)k * mr + i] = 0;                                       \
                }                                                                           \
                d += (ptrdiff_t)kc * mr;                                                    \
                continue;                                                                   \
            }                                                                               \
            for (int i = 0; i < rows; i++) {                                                \
                const char *src = base + (ptrdiff_t)(p0 + i) * rs;                          \
                for (int k = 0; k < kc; k++)                                                \
                    d[(ptrdiff_t)k * mr + i] = LOAD(src + (ptrdiff_t)k * cs);               \
            }                                                                               \
            for (int i = rows; i < mr; i++)                                                 \
                for (int k = 0; k < kc; k++)                                                \
                    d[(ptrdiff_t)k * mr + i] = 0;                                           \
            d += (ptrdiff_t)kc * mr;                                                        \
        }                                                                                   \
    }

#define GK_DEFINE_PACK_B(NAME, DST_T, LOAD, COPY)                                           \
    void NAME(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc, int nc, int nr,     \
              void *dst)                                                                    \
    {                                                                                       \
        DST_T *d = (DST_T *)dst;                                                            \
        const ptrdiff_t rs = b->rs, cs = b->cs;                                             \
        const char *base = b->p + k0 * rs + j0 * cs;                                        \
        for (int q0 = 0; q0 < nc; q0 += nr) {                                               \
            int cols = nc - q0 < nr ? nc - q0 : nr;                                         \
            for (int k = 0; k < kc; k++) {                                                  \
                const char *src = base + (ptrdiff_t)k * rs + (ptrdiff_t)q0 * cs;            \
                DST_T *row = d + (ptrdiff_t)k * nr;                                         \
                if (COPY && cs == (ptrdiff_t)sizeof(DST_T))                                 \
                    memcpy(row, src, (size_t)cols * sizeof(DST_T));                         \
                else                                                                        \
                    for (int j = 0; j < cols; j++)                                          \
                        row[j] = LOAD(src + (ptrdiff_t)j * cs);                             \
                for (int j = cols; j < nr; j++)                                             \
                    row[j] = 0;                                                             \
            }                                                                               \
            d += (ptrdiff_t)kc * nr;                                                        \
        }                                                                                   \
    }

GK_DEFINE_PACK_A(gk_gemm_pack_a_f16, float, load_f16, 0)
GK_DEFINE_PACK_B(gk_gemm_pack_b_f16, float, load_f16, 0)
GK_DEFINE_PACK_A(gk_gemm_pack_a_bf16, float, load_bf16, 0)
GK_DEFINE_PACK_B(gk_gemm_pack_b_bf16, float, load_bf16, 0)
/* Floats are packed as floats (not as raw words) so that every panel is written and read
 * through its own type: no aliasing questions for the micro-kernels. */
GK_DEFINE_PACK_A(gk_gemm_pack_a_f32, float, load_f32, 1)
GK_DEFINE_PACK_B(gk_gemm_pack_b_f32, float, load_f32, 1)
GK_DEFINE_PACK_A(gk_gemm_pack_a_f64, double, load_f64, 1)
GK_DEFINE_PACK_B(gk_gemm_pack_b_f64, double, load_f64, 1)
/* int32/uint32 (int64/uint64) bits are exactly their uint32_t (uint64_t) accumulator value. */
GK_DEFINE_PACK_A(gk_gemm_pack_a_u32, uint32_t, load_32, 1)
GK_DEFINE_PACK_B(gk_gemm_pack_b_u32, uint32_t, load_32, 1)
GK_DEFINE_PACK_A(gk_gemm_pack_a_u64, uint64_t, load_64, 1)
GK_DEFINE_PACK_B(gk_gemm_pack_b_u64, uint64_t, load_64, 1)
