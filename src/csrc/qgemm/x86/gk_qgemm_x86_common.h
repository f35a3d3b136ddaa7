/* Helpers shared by the x86 int8 kernel files (each includes this header and compiles it
 * with its own ISA flags; everything here is static, plain C or SSE2, the x86-64 base).
 *
 * The x86 int8 files, each family read top to bottom from its own .c file:
 *   gk_qgemm_u8s8_<isa>.c   a family: packers, micro-kernel, small-M path, table entry
 *                           (sse41, avx2, avxvnni, avx512vnni, amx)
 *   gk_qgemm_x86_common.h   this file: panel layout, scalar packing tails, small-M helpers
 *   gk_qepi_x86.inc         template: the fused requantization epilogue at 4/8/16 lanes
 *   gk_qpack_pair.h         packing into int16 pairs (kstep 2: sse41, avx2)
 *   gk_qpack_quad.inc       template: packing into byte quads (kstep 4: the vpdpbusd
 *                           families; amx's B panels)
 *   gk_qukernel_ymm.inc     template: packers + micro-kernel of avx2 and avxvnni
 *   gk_qsmallm_pair.inc     template: small-M path of sse41 (xmm) and avx2 (ymm)
 *   gk_qsmallm_quad.inc     template: small-M path of avxvnni (ymm), avx512vnni, amx (zmm)
 * Templates (.inc) take GK_-prefixed parameters, #error when one is missing and #undef
 * them at the end; they call only what they include.
 *
 * Panel layout used by every x86 family, parametrised by R (mr or nr), KS (kstep) and
 * EB (element bytes): the packed element (r, d) of panel p = r / R lives at element index
 *     p * ps  +  ((d / KS) * R + r % R) * KS  +  d % KS
 * i.e. each k-group of KS consecutive depth values of one row (A) or column (B) is
 * contiguous, and the R rows/columns of a panel follow each other inside the group.
 * ps = R * kp, plus b_panel_pad / EB between the B panels of a family that pads them
 * (gk_qgemm_b_panel_stride).
 *   EB = 1: the xor'ed byte itself (a' uint8 / b' int8), KS = 4   (vpdpbusd)
 *   EB = 2: the xor'ed value widened to int16 (a' zero-, b' sign-extended), KS = 2
 *           (vpmaddwd: two exact int16 products summed in int32). */
#ifndef GEMMKIT_GK_QGEMM_X86_COMMON_H
#define GEMMKIT_GK_QGEMM_X86_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <emmintrin.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_qgemm.h"
#include "core/gk_alloc.h"

static inline int gk_x86_round_up(int x, int m) { return (x + m - 1) / m * m; }

/* Packs the elements (r, d) with r in [r0, r1), d in [d0, d1) of the R x KS panel
 * layout above.  Source element (r, d) is src[r * sr + d * sd] ^ x for r < nreal and
 * d < kreal, zero otherwise (padding).  sums[r] += value for the real elements (uint32
 * wrap-around == ONNX int32 wrap).  sgn: the value is int8 (B) rather than uint8 (A).
 * ps: elements from one panel to the next (R * kp, or more for B panels padded apart:
 * gk_qgemm_kernel.b_panel_pad). */
static inline void gk_x86_pack_range(const uint8_t *src, ptrdiff_t sr, ptrdiff_t sd, uint8_t x,
                                     int sgn, int R, int KS, int EB, ptrdiff_t ps, int nreal,
                                     int kreal, int r0, int r1, int d0, int d1, void *dst,
                                     int32_t *sums)
{
    for (int r = r0; r < r1; r++) {
        uint32_t s = 0;
        ptrdiff_t base = (ptrdiff_t)(r / R) * ps + r % R * KS;
        for (int d = d0; d < d1; d++) {
            int32_t v = 0;
            if (r < nreal && d < kreal) {
                uint8_t u = (uint8_t)(src[(ptrdiff_t)r * sr + (ptrdiff_t)d * sd] ^ x);
                v = sgn ? (int32_t)(int8_t)u : (int32_t)u;
            }
            ptrdiff_t at = base + (ptrdiff_t)(d / KS) * R * KS + d % KS;
            if (EB == 1)
                ((uint8_t *)dst)[at] = (uint8_t)v;
            else
                ((int16_t *)dst)[at] = (int16_t)v;
            s += (uint32_t)v;
        }
        if (r < nreal)
            sums[r] = (int32_t)((uint32_t)sums[r] + s);
    }
}

/* Line i's four int32 words in v_i -> word j of lines 0..3 stored at od + j * stride
 * (bytes): the 4 x 4 int32 transpose that turns 4 depth-contiguous source lines into 4
 * k-groups of a panel (stride = R * 4 bytes for both element sizes); g[j] = what went to
 * od + j * stride. */
static inline void gk_x86_tr4x4_store(__m128i v0, __m128i v1, __m128i v2, __m128i v3,
                                      void *od, ptrdiff_t stride, __m128i g[4])
{
    __m128i t0 = _mm_unpacklo_epi32(v0, v1), t1 = _mm_unpackhi_epi32(v0, v1);
    __m128i t2 = _mm_unpacklo_epi32(v2, v3), t3 = _mm_unpackhi_epi32(v2, v3);
    g[0] = _mm_unpacklo_epi64(t0, t2);
    g[1] = _mm_unpackhi_epi64(t0, t2);
    g[2] = _mm_unpacklo_epi64(t1, t3);
    g[3] = _mm_unpackhi_epi64(t1, t3);
    for (int j = 0; j < 4; j++)
        _mm_storeu_si128((__m128i *)((uint8_t *)od + j * stride), g[j]);
}

/* The epilogue of a tile whose raw dot products (before zero-point correction) are in
 * t[i * ldt + j]: the scalar reference gk_qepi_block1 (the partial-sum step of the
 * call's depth block, then gk_qepi_store1) on each, for partial tiles and unusual
 * strides. */
static inline void gk_x86_tile_store_scalar(const gk_qepi *e, int m0, int n0, int mv, int nv,
                                            const int32_t *t, int ldt)
{
    for (int i = 0; i < mv; i++)
        for (int j = 0; j < nv; j++)
            gk_qepi_block1(e, m0 + i, n0 + j, (uint32_t)t[i * ldt + j]);
}

/* Whether the vector epilogue handles these multiplier / output-zero-point strides:
 * along a row they must be broadcast (0) or contiguous (1); any row stride works. */
static inline int gk_x86_epi_vector_ok(const gk_qepi *e)
{
    if (e->kind == GK_QOUT_I32)
        return 1;
    return (e->mult_cs == 0 || e->mult_cs == 1) && (e->yzp_cs == 0 || e->yzp_cs == 1);
}

/* What every tall route (gk_qgemm_tall_fn) runs its rows with: the epilogue e (e0's, with
 * part_mode NONE, no separable correction, the route's own row sums and column
 * corrections colcorr[j] = colsum[j] - k * zb[j], mod 2^32; colsum may be colcorr itself)
 * and the flags of its shortcuts: need_rs (some zb != 0: the row sums are read), zb_uni
 * (one zb over the columns, zb0), za_uni (one za over the rows; only with want_za, else 0:
 * a pass over the rows a route without that shortcut does not pay), vec_ok
 * (gk_x86_epi_vector_ok).  m, n >= 1. */
typedef struct gk_x86_tall_epi {
    gk_qepi e;
    int need_rs, zb_uni, za_uni, vec_ok;
    int32_t zb0;
} gk_x86_tall_epi;

static inline void gk_x86_tall_epi_init(const gk_qepi *e0, int m, int n, int k, int want_za,
                                        int32_t *rowsum, const int32_t *colsum, int32_t *colcorr,
                                        gk_x86_tall_epi *t)
{
    t->e = *e0;
    t->e.part_mode = GK_QPART_NONE;
    t->e.row_corr = t->e.col_corr = NULL;
    t->e.a_rowsum = rowsum;
    t->e.b_colcorr = colcorr;
    t->zb0 = e0->b_zp[0];
    t->need_rs = 0;
    t->zb_uni = 1;
    for (int j = 0; j < n; j++) {
        colcorr[j] = (int32_t)((uint32_t)colsum[j] - (uint32_t)k * (uint32_t)e0->b_zp[j]);
        t->need_rs |= e0->b_zp[j] != 0;
        t->zb_uni &= e0->b_zp[j] == t->zb0;
    }
    t->za_uni = want_za;
    for (int i = 1; t->za_uni && i < m; i++)
        t->za_uni = e0->a_zp[i] == e0->a_zp[0];
    t->vec_ok = gk_x86_epi_vector_ok(&t->e);
}

/* Rows of the x86 small-M paths (gk_qsmallm_pair.inc, gk_qsmallm_quad.inc), every
 * family's smallm_max: up to 16 rows streaming B once beats packing (measured, K = N =
 * 256..4096: M = 16 in about half the packed time). */
#define GK_X86_SMALLM_MAX 16
/* ... and of the zmm vpdpbusd families' staged small-M path (gk_qsmallm_quad.inc), their
 * smallm_wide_max: with K * N >= GK_QGEMM_SMALLM_WIDE_KN it beats packing up to 32 rows
 * (measured on Zen 4, K = N = 4096: M = 17 1.36x, 24 1.16x, 32 1.15x; K = N = 1024: M = 24
 * 1.10x, 32 1.07x; but M = 24 at K = N = 256 0.84x). */
#define GK_X86_SMALLM_WIDE_MAX 32

/* Where the tall route (gk_qtall_zmm.inc) beats the packed path on avx512vnni: from 128
 * rows, up to 1024 deep and 128 columns.  Sapphire Rapids, one thread, in one process
 * (packed / tall): 12544 x 32 x 16 2.2x, 12544 x 27 x 32 2.6x, 3136 x 144 x 24 1.56x, 784
 * x 192 x 64 1.17x, 784 x 1024 x 64 1.26x, 3136 x 512 x 32 1.55x, 128 x 512 x 128 1.0x;
 * outside: 64^3 0.90x, 64 x 256 x 256 0.86x, 1024 x 1024 x 256 0.90x. */
static inline int gk_x86_tall_takes_vnni(int m, int k, int n)
{
    return m >= 128 && k <= 1024 && n <= 128;
}

/* ... and on avx2 (gk_qtall_pair.inc), whose route pays a mask and a shift per row and
 * depth group to widen A in place: from 256 rows, up to 1024 deep, where the packed path's
 * 16-column tiles run partly empty (N <= 16, or not a multiple of 16 up to 96) or a K
 * that is not a multiple of 4 pads every packed row (N <= 32).  The avx2 path forced on
 * Sapphire Rapids, one thread, in one process (packed / tall): 12544 x 32 x 8 3.3x, 300 x
 * 1000 x 8 1.75x, 3136 x 64 x 24 1.68x, 12544 x 27 x 16 1.59x, 3136 x 144 x 24 1.53x,
 * 12544 x 27 x 32 1.39x, 784 x 1024 x 24 1.31x, 3136 x 144 x 40 1.19x, 3136 x 32 x 72
 * 1.16x, 12544 x 32 x 16 1.09x; outside: 3136 x 32 x 32 0.96x, 3136 x 64 x 48 0.98x, 784 x
 * 192 x 64 0.93x, 3136 x 144 x 96 0.92x, 128 x 256 x 32 0.99x. */
static inline int gk_x86_tall_takes_avx2(int m, int k, int n)
{
    return m >= 256 && k <= 1024 &&
           (n <= 16 || (n <= 96 && n % 16 != 0) || (n <= 32 && k % 4 != 0));
}

/* The int32 accumulator rows of the small-M paths: rows x nc_max columns, nc_max a
 * multiple of w.  Wide enough that B is read in long runs per row: a chunk of a few
 * hundred columns makes every pass a column strip over all K rows (one 4 KB page per
 * row and step), which measured 1.4x slower at M = 16, K = N = 4096 than full rows.
 * Up to GK_X86_SMALLM_ACC_BYTES (inside a 512 KB L2 next to the B lines in flight);
 * taken from the caller's stack buffer when it fits there, else from the scratch blocks
 * (*heap, to be freed with gk_scratch_free), else, if that fails, the stack buffer with fewer
 * columns (same results, slower).  nc_cap bounds the chunk (0: none). */
#define GK_X86_SMALLM_ACC_BYTES (384 * 1024)
static inline int32_t *gk_x86_smallm_accbuf(int rows, int n, int w, int nc_cap, int32_t *stk,
                                            size_t stk_bytes, int32_t **heap, int *nc_max)
{
    int nc = GK_X86_SMALLM_ACC_BYTES / 4 / rows / w * w;
    int nw = (n + w - 1) / w * w;
    if (nc_cap > 0 && nc > nc_cap)
        nc = nc_cap;
    if (nc > nw)
        nc = nw;
    *heap = NULL;
    if ((size_t)rows * (size_t)nc * 4 > stk_bytes)
        *heap = (int32_t *)gk_scratch_alloc((size_t)rows * (size_t)nc * 4);
    if (!*heap) {
        int ns = (int)(stk_bytes / 4 / (size_t)rows) / w * w;
        nc = nc < ns ? nc : ns;
    }
    *nc_max = nc;
    return *heap ? *heap : stk;
}

/* Small-M helpers.  Whether the column sums of b' are needed at all: za == 0 on every
 * row multiplies them by zero. */
static inline int gk_x86_smallm_need_colsum(const gk_qepi *e, int m)
{
    int need = 0;
    for (int i = 0; i < m; i++)
        need |= e->a_zp[i] != 0;
    return need;
}

/* The m rows of A for depth [k0, k0 + nd) as xor'ed bytes (a' = 0 from kreal on), row i
 * at q[i * nd], any strides. */
static inline void gk_x86_smallm_gather_a(int m, int kreal, int k0, int nd, const uint8_t *a,
                                          ptrdiff_t rs, ptrdiff_t cs, uint8_t x, uint8_t *q)
{
    for (int i = 0; i < m; i++)
        for (int d = 0; d < nd; d++)
            q[i * nd + d] =
                k0 + d < kreal ? (uint8_t)(a[(ptrdiff_t)i * rs + (ptrdiff_t)(k0 + d) * cs] ^ x) : 0;
}

/* gk_x86_smallm_gather_a for rows of contiguous bytes (cs == 1), nd a multiple of 16: whole
 * 16-byte runs where they lie inside the row's kreal bytes, bytes after that. */
static inline void gk_x86_smallm_copy_a(int m, int kreal, int k0, int nd, const uint8_t *a,
                                        ptrdiff_t rs, uint8_t x, uint8_t *q)
{
    const __m128i xv = _mm_set1_epi8((char)x);
    const int kv = kreal - k0 < nd ? kreal - k0 : nd, kf = kv / 16 * 16;
    for (int i = 0; i < m; i++) {
        const uint8_t *ai = a + (ptrdiff_t)i * rs + k0;
        uint8_t *qi = q + (ptrdiff_t)i * nd;
        for (int d = 0; d < kf; d += 16)
            _mm_storeu_si128((__m128i *)(qi + d),
                             _mm_xor_si128(_mm_loadu_si128((const __m128i *)(ai + d)), xv));
        for (int d = kf; d < nd; d++)
            qi[d] = d < kv ? (uint8_t)(ai[d] ^ x) : 0;
    }
}

#endif
