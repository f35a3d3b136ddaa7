/* The bfloat16 Gemm family on AMX-BF16 tiles (group amxbf16: the amx group's flags +
 * AMX-BF16; dispatch entry: level amx + GK_CPU_AMXBF16).
 *
 * What tdpbf16ps computes, per float32 element (m, n) of the accumulator tile: the Intel
 * SDM writes it as, for each of the 16 k pairs of the step, in increasing pair order,
 *     acc += a(m, 2p) * b(2p, n);  acc += a(m, 2p+1) * b(2p+1, n)
 * with exact products (8-bit significands), float32 sums rounded to nearest even, input
 * denormals read as zero (DAZ), denormal results flushed to zero (FTZ), MXCSR neither
 * read nor written.  Measured on Sapphire Rapids, a step's products are combined with
 * fewer roundings than that (1 + 16 * 2**-24 - 1 over one step gives 8 * 2**-24; the
 * sequential float32 sums give 0): where no denormal appears the sums stay inside the
 * float32 accumulation bound every bfloat16 path keeps (gamma_K * sum |a||b|), which the
 * C harness and tests/test_gemm_bf16dot.py check.  Y is rounded once to bfloat16 at the
 * end by the avx512 group's fused epilogue (bit for bit gk_gemm_epilogue_bf16).
 *
 * The guard is the vdpbf16ps family's, for the same flushes (gk_bf16dot_no_flush): a call
 * with a bfloat16 denormal in A' or B', or whose smallest exponents could make a product
 * or partial sum denormal, gets the result of the next family of the bfloat16 row (the
 * widening float32 one), bit for bit.  The scan is folded into packing (gk_bf16_seen)
 * and judged after the call (check_packed): such a call runs again on that family, which
 * rewrites Y -- one read of A and B less per call than a scan first (2-8% of a call; more
 * where B comes from memory), at the price of a wasted run on hostile inputs.  Calls too
 * small for tiles to pay go to that family directly (the size rule,
 * GK_AMXBF16_MIN_ROWS / _DEPTH / _MACS).
 *
 * Tile: MR x NR = 32 x 32 = 2 x 2 float32 accumulator tiles (tmm4..7); A tiles tmm0..1
 * (16 rows x 16 pairs), B tiles tmm2..3 (16 pairs x 16 columns); one step is 32 deep.
 * Panels (the driver places them kc*32 floats apart, 128 bytes per k; these use at most
 * that much), words of 32 bits holding a pair (low half the even k, high half the odd k):
 *   kc >= 16, tiled: the depth padded with zero pairs to whole 32-deep blocks of 2 KB.
 *     A panel: pair p of row i at (p / 16) * 2048 + i * 64 + (p % 16) * 4 bytes:
 *              block b is the two A tiles (rows 0..15 at +0, rows 16..31 at +1024, row
 *              stride 64);
 *     B panel: pair p of column j at p * 128 + j * 4 bytes: block b is the two B tiles
 *              (columns 0..15 at +0, 16..31 at +64, row stride 128) -- the vdpbf16ps
 *              family's B layout.
 *     ceil(kc / 32) blocks of 2 KB fit the slot of kc * 128 bytes from kc = 16 on.
 *   kc < 16, short (only a product's last K block, or K < 16): kp = ceil(kc / 2) pairs,
 *     A row i at i * kp * 4 bytes, B as above with kp pair rows; the micro-kernel copies
 *     them into zero-padded blocks of its own.
 *   An odd kc pads its last pair's high half with +0; rows / columns beyond the valid ones
 *   and pad pairs are +0.  A valid output meets only depth pads, +0 on both sides: +0
 *   products, which leave its running sum unchanged (it starts at +0, so it is never -0);
 *   padded rows and columns (which may meet an infinity: NaN) are never stored.
 * Blocking: KC = 2048 in sub-blocks of KC_SUB = 512 (gk_gemm_kernel.kc_sub): a B sub-panel
 * (32 KB) stays in L1 while the ir loop streams the A sub-panels from L2, and the float32
 * sums of one column strip wait in L2 between sub-blocks; a product with K <= 2048
 * finishes each tile in one K block, its epilogue right after the last sub-block (with
 * KC 512 the sums of 1024^3 passed through memory: a third of the call).  MC and NC from
 * the caches with 2-byte packed elements.
 * State: begin() loads the tile configuration on the calling thread, end() releases it
 * (the driver calls them around each part of a call, gk_gemm_kernel). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/gk_amx_tiles.h"
#include "core/gk_compiler.h"
#include "gemm/gk_gemm_bf16dot_guard.h"
#include "gemm/x86/gk_gemm_bf16_pairs_x86.h"
#include "gemmkit/gk_gemm.h"
#include "gk_gemm_f32_x86.h"

#define MR 32
#define NR 32
#define BLK 2048    /* bytes of a 32-deep block of a panel: two tiles */
#define SHORT_KC 16 /* below: the short layout */
#define KC 2048
#define KC_SUB 512
#define KC_THIN 128
/* The B packer's order (rows of B' contiguous): PCH pairs (2 * PCH rows) at a time across
 * PANELS panels side by side, all columns, then the next PCH pairs: each row is read in
 * runs of 64 * PANELS bytes, front to back, a few dozen rows at a time (one pass down a
 * panel's KC rows touches KC pages of a wide B: TLB- and latency-bound).  Sapphire
 * Rapids, M = 128, K = N = 4096: 1.25x faster than one panel at a time. */
#define PCH 8
#define PANELS 8

/* The size rule (gk_gemm_kernel.min_rows / min_depth / min_macs): calls with fewer rows,
 * a shallower K or fewer multiply-adds run on the next family of the row.  Sapphire
 * Rapids, one thread, against the widening avx512 family: M = 4, K = N = 1024 0.98x, M = 8
 * 1.28x, M = 1 0.8x; K = 8 (256 x 8 x 256, a half-empty tile step) 0.9x, K = 16 1.7x;
 * 32^3 1.26x, 16 x 64 x 64 1.6x. */
#define GK_AMXBF16_MIN_ROWS 8
#define GK_AMXBF16_MIN_DEPTH 16
#define GK_AMXBF16_MIN_MACS ((ptrdiff_t)32 * 32 * 16)

/* ---- tile state ------------------------------------------------------------------------ */

static void begin(void) { _tile_loadconfig(&gk_amx_cfg_16x64); }
static void end(void) { _tile_release(); }

/* ---- packers ----------------------------------------------------------------------------- */

/* byte offset of pair p of row i in an A panel of kp pairs (layout above) */
static inline ptrdiff_t a_off(int tiled, int kp, int i, int p)
{
    return tiled ? (ptrdiff_t)(p / 16) * BLK + i * 64 + (p % 16) * 4
                 : (ptrdiff_t)i * kp * 4 + p * 4;
}

/* rows [i0, i0+mc) x depth [k0, k0+kc) of A' -> ceil(mc/32) panels, kc*32 floats apart */
static void pack_a(const gk_gemm_src *a, ptrdiff_t i0, ptrdiff_t k0, int mc, int kc, int mr,
                   void *dst)
{
    const ptrdiff_t rs = a->rs, cs = a->cs;
    const char *base = a->p + i0 * rs + k0 * cs;
    const int tiled = kc >= SHORT_KC, kp = (kc + 1) / 2;
    const int kpp = tiled ? (kp + 15) / 16 * 16 : kp; /* pairs with padding */
    gk_bf16_seen seen = gk_bf16_seen_init();
    (void)mr; /* always MR: this family's own packer */
    for (int p0 = 0; p0 < mc; p0 += MR) {
        char *d = (char *)dst + (ptrdiff_t)(p0 / MR) * kc * MR * 4;
        const int rows = mc - p0 < MR ? mc - p0 : MR;
        const char *src = base + (ptrdiff_t)p0 * rs;
        if (cs == 2) {
            /* rows contiguous (the usual A): a row's pairs are its elements as they lie;
             * masked loads read only the kc real ones and zero the rest */
            if (!tiled) {
                for (int i = 0; i < MR; i++) {
                    const __m512i v =
                        i < rows ? _mm512_maskz_loadu_epi16(gk_bf16_lanes(kc), src + (ptrdiff_t)i * rs)
                                 : _mm512_setzero_si512();
                    gk_bf16_seen_vec(&seen, v);
                    _mm512_mask_storeu_epi16(d + a_off(0, kp, i, 0), gk_bf16_lanes(2 * kp), v);
                }
                continue;
            }
            /* block by block: the stores run through each 2 KB block in order (row by row,
             * blocks 2 KB apart, would share a few L1 sets) */
            for (int b = 0; b < kpp / 16; b++) {
                const __mmask32 m = gk_bf16_lanes(kc - 32 * b);
                for (int i = 0; i < MR; i++) {
                    const __m512i v =
                        i < rows ? _mm512_maskz_loadu_epi16(m, src + (ptrdiff_t)i * rs + (ptrdiff_t)64 * b)
                                 : _mm512_setzero_si512();
                    gk_bf16_seen_vec(&seen, v);
                    _mm512_storeu_si512((void *)(d + a_off(1, kp, i, 16 * b)), v);
                }
            }
            continue;
        }
        if (rs == 2 && tiled) {
            /* columns contiguous (transA): pair words of 32 rows per pair from two
             * columns, then 16 x 16 word transposes into rows */
            const __m512i ix0 = gk_bf16_pair_index(0), ix1 = gk_bf16_pair_index(1);
            const __mmask32 m = gk_bf16_lanes(rows);
            for (int b = 0; b < kpp / 16; b++) {
                __m512i w0[16], w1[16], o[16];
                for (int q = 0; q < 16; q++) {
                    const int k = 32 * b + 2 * q;
                    const __m512i lo = k < kc ? _mm512_maskz_loadu_epi16(m, src + (ptrdiff_t)k * cs)
                                              : _mm512_setzero_si512();
                    const __m512i hi = k + 1 < kc
                                           ? _mm512_maskz_loadu_epi16(m, src + (ptrdiff_t)(k + 1) * cs)
                                           : _mm512_setzero_si512();
                    gk_bf16_seen_vec(&seen, lo);
                    gk_bf16_seen_vec(&seen, hi);
                    w0[q] = _mm512_permutex2var_epi16(lo, ix0, hi); /* rows 0..15 */
                    w1[q] = _mm512_permutex2var_epi16(lo, ix1, hi); /* rows 16..31 */
                }
                gk_bf16_transpose16(w0, o);
                for (int i = 0; i < 16; i++)
                    _mm512_storeu_si512((void *)(d + a_off(1, kp, i, 16 * b)), o[i]);
                gk_bf16_transpose16(w1, o);
                for (int i = 0; i < 16; i++)
                    _mm512_storeu_si512((void *)(d + a_off(1, kp, 16 + i, 16 * b)), o[i]);
            }
            continue;
        }
        /* any strides (and the short layout of transA): element by element */
        for (int i = 0; i < MR; i++) {
            const char *r = src + (ptrdiff_t)i * rs;
            for (int p = 0; p < kpp; p++) {
                const uint32_t w = i < rows ? gk_bf16_pair_word(r, cs, p, kc) : 0;
                gk_bf16_seen_word(&seen, w);
                memcpy(d + a_off(tiled, kp, i, p), &w, 4);
            }
        }
    }
    gk_bf16_seen_publish(a, 0, &seen);
}

/* depth [k0, k0+kc) x columns [j0, j0+nc) of B' -> ceil(nc/32) panels, kc*32 floats apart */
static void pack_b(const gk_gemm_src *b, ptrdiff_t k0, ptrdiff_t j0, int kc, int nc, int nr,
                   void *dst)
{
    const ptrdiff_t rs = b->rs, cs = b->cs;
    const char *base = b->p + k0 * rs + j0 * cs;
    const int kp = (kc + 1) / 2;
    const int kpp = kc >= SHORT_KC ? (kp + 15) / 16 * 16 : kp; /* pairs with padding */
    gk_bf16_seen seen = gk_bf16_seen_init();
    (void)nr; /* always NR */
    if (cs == 2) {
        /* rows of B' contiguous (the usual B): interleave rows 2p and 2p+1, in the order
         * of PCH / PANELS above; masked lanes are neither read nor faulted on */
        const __m512i ix0 = gk_bf16_pair_index(0), ix1 = gk_bf16_pair_index(1);
        for (int c0 = 0; c0 < kpp; c0 += PCH) {
            const int c1 = kpp - c0 < PCH ? kpp : c0 + PCH;
            for (int q0 = 0; q0 < nc; q0 += PANELS * NR) {
                uint32_t *d0 = (uint32_t *)((char *)dst + (ptrdiff_t)(q0 / NR) * kc * NR * 4);
                const char *src = base + (ptrdiff_t)q0 * cs;
                const int np = nc - q0 < PANELS * NR ? (nc - q0 + NR - 1) / NR : PANELS;
                __mmask32 m[PANELS];
                for (int g = 0; g < np; g++)
                    m[g] = gk_bf16_lanes(nc - q0 - NR * g);
                for (int p = c0; p < c1; p++) {
                    const int has_lo = 2 * p < kc, has_hi = 2 * p + 1 < kc;
                    const char *r0 = has_lo ? src + (ptrdiff_t)(2 * p) * rs : src;
                    for (int g = 0; g < np; g++) {
                        uint32_t *d = d0 + (ptrdiff_t)g * kc * NR + (ptrdiff_t)p * NR;
                        const __m512i lo = has_lo ? _mm512_maskz_loadu_epi16(m[g], r0 + 64 * g)
                                                  : _mm512_setzero_si512();
                        const __m512i hi = has_hi
                                               ? _mm512_maskz_loadu_epi16(m[g], r0 + rs + 64 * g)
                                               : _mm512_setzero_si512();
                        gk_bf16_seen_vec(&seen, lo);
                        gk_bf16_seen_vec(&seen, hi);
                        _mm512_storeu_si512((void *)d, _mm512_permutex2var_epi16(lo, ix0, hi));
                        _mm512_storeu_si512((void *)(d + 16),
                                            _mm512_permutex2var_epi16(lo, ix1, hi));
                    }
                }
            }
        }
        gk_bf16_seen_publish(b, 1, &seen);
        return;
    }
    for (int q0 = 0; q0 < nc; q0 += NR) {
        uint32_t *d = (uint32_t *)((char *)dst + (ptrdiff_t)(q0 / NR) * kc * NR * 4);
        const int cols = nc - q0 < NR ? nc - q0 : NR;
        const char *src = base + (ptrdiff_t)q0 * cs;
        if (rs == 2) { /* columns of B' contiguous (transB, e.g. a Linear layer's weight) */
            gk_bf16_pack_cols32(src, cs, kc, cols, kpp, d, &seen);
            continue;
        }
        for (int j = 0; j < NR; j++) {
            const char *c = src + (ptrdiff_t)j * cs;
            for (int p = 0; p < kpp; p++) {
                const uint32_t w = j < cols ? gk_bf16_pair_word(c, rs, p, kc) : 0;
                gk_bf16_seen_word(&seen, w);
                d[(ptrdiff_t)p * NR + j] = w;
            }
        }
    }
    gk_bf16_seen_publish(b, 1, &seen);
}

/* ---- micro-kernel ------------------------------------------------------------------------- */

/* The 32 x 32 tile at c (row stride ld elements) = (first ? 0 : c) + nb >= 1 blocks of
 * products (gk_amx_tiles.h's 2 x 2 k-loop on tdpbf16ps). */
static void core(int nb, const char *pa, const char *pb, float *c, ptrdiff_t ld, int first)
{
    if (first)
        GK_AMX_ACC_ZERO();
    else
        GK_AMX_ACC_LOAD(c, ld);
    GK_AMX_2X2_KLOOP(_tile_dpbf16ps, pa, pb, nb);
    GK_AMX_ACC_STORE(c, ld);
}

/* gk_gemm_ukernel_fn: full tiles on c itself, edge tiles through a local tile (only the
 * valid part of c is read or written); a short block (kc < 16) through local zero-padded
 * blocks; kc == 0 (K == 0, first) zeroes. */
static void ukernel(int kc, const void *a_panel, const void *b_panel, void *c, ptrdiff_t ldc,
                    int mr_valid, int nr_valid, int first)
{
    GK_ALIGNED(64) float t[MR * NR];
    GK_ALIGNED(64) char la[BLK], lb[BLK];
    float *y = (float *)c;
    const char *pa = (const char *)a_panel, *pb = (const char *)b_panel;
    const int full = mr_valid == MR && nr_valid == NR;
    if (kc == 0) {
        for (int i = 0; i < mr_valid; i++)
            memset(y + i * ldc, 0, (size_t)nr_valid * 4);
        return;
    }
    if (kc < SHORT_KC) {
        const int kp = (kc + 1) / 2;
        memset(la, 0, BLK);
        memset(lb, 0, BLK);
        for (int i = 0; i < MR; i++)
            memcpy(la + i * 64, pa + (ptrdiff_t)i * kp * 4, (size_t)kp * 4);
        memcpy(lb, pb, (size_t)kp * NR * 4);
        pa = la;
        pb = lb;
    }
    const int nb = (kc + 31) / 32;
    if (full) {
        core(nb, pa, pb, y, ldc, first);
        return;
    }
    if (!first)
        for (int i = 0; i < mr_valid; i++)
            memcpy(t + i * NR, y + i * ldc, (size_t)nr_valid * 4);
    core(nb, pa, pb, t, NR, first);
    for (int i = 0; i < mr_valid; i++)
        memcpy(y + i * ldc, t + i * NR, (size_t)nr_valid * 4);
}

const gk_gemm_kernel gk_gemm_bf16_amxbf16 = {
    "amxbf16", GK_DT_BF16, GK_ACC_F32, MR, NR, 1024, KC, 2048,
    pack_a, pack_b, ukernel, gk_gemm_bf16_avx512_epilogue_ext,
    2,       /* cache_blocks: mc, nc from the caches; kc KC (see the header) */
    NULL,    /* ukernel_rounded: not used (QLinearMatMul runs the float32 family) */
    NULL,    /* ukernel_ldb: bfloat16 output needs the float32 workspace anyway */
    2,       /* pack_esz: bfloat16 halves of the pair words */
    NULL,    /* ukernel_strip */
    begin, end,
    KC_SUB,  /* kc_sub: see the header */
    KC_THIN, /* kc_thin: four tile steps (the default 16 would fill half of one) */
    GK_AMXBF16_MIN_ROWS, GK_AMXBF16_MIN_DEPTH, GK_AMXBF16_MIN_MACS, /* the size rule */
    gk_bf16_check_packed, /* the DAZ/FTZ guard (gk_gemm_bf16_pairs_x86.h) */
};
