/* int8 GEMM, AMX-INT8: tdpbusd (u8 x s8; each int32 element of C gets the sum of its
 * 64 products (16 k-groups x 4) added exactly in int32, wrapping mod 2^32 like the
 * reference -- no intermediate narrower than int32, no saturation).
 *
 * Tile MR x NR = 32 x 32 = 2 x 2 accumulator tiles (tmm4..7, 16 rows x 16 int32 each);
 * A tiles tmm0..1 (16 rows x 64 depth bytes), B tiles tmm2..3 (16 k-groups x 16 columns x
 * 4 depth bytes).  kstep 64: K is zero-padded to kp = round_up(K, 64) (a zero a' or b'
 * adds nothing).  One byte per element.  Panel layouts (element offsets):
 *   A panel (32 rows):    (d / 64) * 2048 + r * 64 + d % 64
 *        a 64-deep block is 2 KB contiguous: tile A0 = rows 0..15 at +0, A1 = rows
 *        16..31 at +1024, row stride 64.
 *   B panel (32 columns): the vpdpbusd quad layout of gk_qgemm_x86_common.h, R = 32:
 *        (d / 4) * 128 + c * 4 + d % 4; a 64-deep block is 16 k-groups x 128 bytes:
 *        tile B0 = columns 0..15 at +0, B1 = columns 16..31 at +64, row stride 128.
 * Padding rows of A / columns of B are zero, so the ukernel always loads whole tiles
 * (inside the packed panels, which the driver sizes as whole panels) and only the
 * epilogue looks at mr_valid / nr_valid.
 *
 * State: begin() loads the tile configuration (palette 1, every tile 16 x 64 bytes) on
 * the calling thread, end() releases it; ukernel only relies on that configuration and
 * zeroes its own accumulators.  The AVX-512 epilogue, the quad B packer and the small-M
 * path are the same templates the avx512vnni family instantiates.
 *
 * Read top to bottom: the epilogue (gk_qepi_x86.inc at 16 lanes), the tile state, the
 * packers, the tile epilogue and micro-kernel, the small-M path (gk_qsmallm_quad.inc on
 * zmm: vpdpbusd for a handful of rows, from 8 rows with a large B its tile route), the
 * family's table entry. */
#include <immintrin.h>

#include <string.h>

#include "core/gk_alloc.h"
#include "core/gk_amx_tiles.h"
#include "gk_qgemm_x86_common.h"

#define GK_EPI_LANES 16
#include "gk_qepi_x86.inc" /* gk_qepi_zmm_store, gk_qepi_zmm_mask */

#define GK_AMX_MR 32
#define GK_AMX_NR 32
#define GK_AMX_KS 64
#define GK_AMX_ABLK (GK_AMX_MR * GK_AMX_KS) /* bytes of one 64-deep block of an A panel */
#define GK_AMX_BBLK (GK_AMX_NR * GK_AMX_KS) /* ... of a B panel */
/* Depth blocks: GK_AMX_KC keeps the B micro-panel (32 KB) in the 48 KB L1D of the AMX
 * cores; where the int32 partial sums of a depth block would not stay in L2, the driver
 * takes GK_AMX_KC_DEEP instead (kc_deep, gk_qgemm_blocking_of): at tdpbusd's rate,
 * passing them through memory once per block costs more than micro-panels read from L2
 * (Sapphire Rapids, one thread: 2048^3 2.1x, 256 x 2048 x 8192 1.7x faster; M = 128, K =
 * 3072, N = 768, which keeps them in L2, 1.1-1.25x faster with 1024). */
#define GK_AMX_KC 1024
#define GK_AMX_KC_DEEP 4096
/* Bytes between consecutive 32-column B panels beyond the panel: a panel is kp * 32
 * bytes, a multiple of 2 KiB, so the packer's stores of one source row into many panels
 * would share one L1 set (as for avx512vnni, whose packer this is). */
#define GK_AMX_B_PANEL_PAD 128

/* ---------------------------------------------------------------- tile state */

static void gk_qgemm_u8s8_amx_begin(void) { _tile_loadconfig(&gk_amx_cfg_16x64); }

/* sfence: the epilogue's non-temporal stores are weakly ordered; after end() the output
 * is ordinarily visible, as with plain stores. */
static void gk_qgemm_u8s8_amx_end(void)
{
    _mm_sfence();
    _tile_release();
}

/* ---------------------------------------------------------------- packing */

#define GK_QPACK_DPBUSD128(acc, u8, s8) _mm_dpbusd_epi32(acc, u8, s8)
#define GK_QPACK_ZMM 1
/* No prefetch of B's next depth rows: on Sapphire Rapids the packer ran faster without
 * (one process, one thread: 128 x 768 x 3072 1.05x, 128 x 4096^2 1.08x, 128 x 512 x 8192
 * 1.06x, 1024^3 1.01x, 512 x 1024 x 4096 1.00x; the avx512vnni family there 0.99-1.01x,
 * and Zen 4 had measured it faster with). */
#define GK_QPACK_B_PREFETCH 0
#include "gk_qpack_quad.inc" /* gk_x86_pack_b32_quad */

/* A rows [0, mc) into 32-row panels, layout above.  Row sums: vpsadbw adds 8 bytes of a'
 * into a 64-bit lane, exact; the final truncation to 32 bits is the ONNX int32 wrap. */
static void gk_qgemm_u8s8_amx_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs,
                                     uint8_t a_xor, void *dst, int32_t *rowsum)
{
    const int kp = gk_x86_round_up(k, GK_AMX_KS), nb = kp / GK_AMX_KS, kfull = k / GK_AMX_KS;
    const int mp = gk_x86_round_up(mc, GK_AMX_MR);
    const __m512i zero = _mm512_setzero_si512(), xv = _mm512_set1_epi8((char)a_xor);
    /* the tail block's padding bytes stay zero: the xor mask is restricted to real depth */
    const __mmask64 tm = (k % GK_AMX_KS) ? (((__mmask64)1 << (k % GK_AMX_KS)) - 1) : 0;
    const __m512i xt = _mm512_maskz_mov_epi8(tm, xv);
    uint8_t *o8 = (uint8_t *)dst;
    for (int r = 0; r < mp; r++) {
        uint8_t *o = o8 + (ptrdiff_t)(r / GK_AMX_MR) * GK_AMX_MR * kp + (r % GK_AMX_MR) * GK_AMX_KS;
        if (r >= mc) { /* padding rows of the last panel */
            for (int b = 0; b < nb; b++)
                _mm512_storeu_si512(o + (ptrdiff_t)b * GK_AMX_ABLK, zero);
            continue;
        }
        const uint8_t *s = a + (ptrdiff_t)r * rs;
        if (cs == 1) {
            __m512i acc = zero;
            for (int b = 0; b < kfull; b++) {
                __m512i v = _mm512_xor_si512(_mm512_loadu_si512(s + (ptrdiff_t)b * GK_AMX_KS), xv);
                _mm512_storeu_si512(o + (ptrdiff_t)b * GK_AMX_ABLK, v);
                acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, zero));
            }
            if (tm) { /* masked load: never reads past the row's k bytes */
                __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(tm, s + (ptrdiff_t)kfull * GK_AMX_KS), xt);
                _mm512_storeu_si512(o + (ptrdiff_t)kfull * GK_AMX_ABLK, v);
                acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, zero));
            }
            rowsum[r] = (int32_t)(uint32_t)_mm512_reduce_add_epi64(acc);
        } else {
            uint32_t sum = 0; /* uint32 wrap == int32 wrap */
            for (int b = 0; b < nb; b++) {
                uint8_t blk[GK_AMX_KS];
                for (int d = 0; d < GK_AMX_KS; d++) {
                    int dd = b * GK_AMX_KS + d;
                    blk[d] = dd < k ? (uint8_t)(s[(ptrdiff_t)dd * cs] ^ a_xor) : 0;
                    sum += blk[d];
                }
                memcpy(o + (ptrdiff_t)b * GK_AMX_ABLK, blk, GK_AMX_KS);
            }
            rowsum[r] = (int32_t)sum;
        }
    }
}

static void gk_qgemm_u8s8_amx_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs,
                                     uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_x86_pack_b32_quad(k, gk_x86_round_up(k, GK_AMX_KS), nc, b, rs, cs, b_xor, dst, colsum,
                         GK_AMX_B_PANEL_PAD);
}

/* ---------------------------------------------------------------- micro-kernel */

/* The vector epilogue of a tile whose finished sums sit in t (32 x 32 int32, row stride
 * GK_AMX_NR), rows [0, mv) x columns [0, nv): what every row needs is formed once
 * (gk_amx_epi_init), then rows go in any groups (gk_amx_epi_rows), so a column of tiles
 * can finish one tile while the tile unit computes the next.  Masks keep every read of
 * the epilogue arrays and every write of y inside the valid region.  Correction y = dot -
 * rowsum*zb - za*colcorr, mod 2^32; when zb (za) is one value across the tile's columns
 * (rows) -- per-tensor zero points -- its product is formed once per row (per tile)
 * instead of per lane; the uint32 products are the same low 32 bits as vpmulld's. */
typedef struct gk_amx_epi {
    __m512i bzp[2], cc[2], zacc[2];
    __mmask16 mk[2];
    int zb_uni, za_uni, nt, m0, n0;
    int32_t zb0;
    const int32_t *t;
} gk_amx_epi;

static inline void gk_amx_epi_init(const gk_qepi *e, int m0, int n0, int mv, int nv,
                                   const int32_t *t, gk_amx_epi *s)
{
    s->m0 = m0;
    s->n0 = n0;
    s->t = t;
    s->zb0 = e->b_zp[n0];
    const int32_t za0 = e->a_zp[m0];
    __mmask16 diff = 0;
    for (int v = 0; v < 2; v++) {
        s->mk[v] = gk_qepi_zmm_mask(nv - 16 * v);
        s->bzp[v] = _mm512_maskz_loadu_epi32(s->mk[v], e->b_zp + n0 + 16 * v);
        s->cc[v] = _mm512_maskz_loadu_epi32(s->mk[v], e->b_colcorr + n0 + 16 * v);
        diff |= _mm512_mask_cmpneq_epi32_mask(s->mk[v], s->bzp[v], _mm512_set1_epi32(s->zb0));
    }
    s->zb_uni = diff == 0;
    diff = 0;
    for (int v = 0; v < 2; v++) {
        const __mmask16 rm = gk_qepi_zmm_mask(mv - 16 * v);
        diff |= _mm512_mask_cmpneq_epi32_mask(rm, _mm512_maskz_loadu_epi32(rm, e->a_zp + m0 + 16 * v),
                                              _mm512_set1_epi32(za0));
    }
    s->za_uni = diff == 0;
    for (int v = 0; v < 2; v++)
        s->zacc[v] = _mm512_mullo_epi32(_mm512_set1_epi32(za0), s->cc[v]);
    /* An int32 output that will not stay in the caches (e->y_stream: the whole call's
     * output, every matrix of a batch, is more than half of L2), written once and not
     * read back here: full 64-byte-aligned vectors bypass the cache (no read-for-
     * ownership: 4 MB less DRAM traffic at 1024^3, -35% time; a batch of 8 384 x 64 x 384
     * products, whose rows a rule on the row length left to ordinary stores, 1.37x).
     * Only whole, aligned 16-lane vectors inside the valid region (mk == 0xFFFF); end()
     * fences. */
    s->nt = e->kind == GK_QOUT_I32 && e->y_stream && s->mk[1] == 0xFFFF &&
            (((uintptr_t)((int32_t *)e->y + (ptrdiff_t)m0 * e->ldy + n0) |
              (uintptr_t)(e->ldy * 4)) & 63) == 0;
}

/* Rows [r0, r1) of s's tile, r1 <= the mv it was formed for. */
static inline void gk_amx_epi_rows(const gk_qepi *e, const gk_amx_epi *s, int r0, int r1)
{
    for (int i = r0; i < r1; i++) {
        const int m = s->m0 + i;
        const uint32_t rz = (uint32_t)e->a_rowsum[m] * (uint32_t)s->zb0;
        for (int v = 0; v < 2; v++) {
            if (!s->mk[v])
                break;
            __m512i y = _mm512_load_si512((const void *)(s->t + i * GK_AMX_NR + 16 * v));
            if (s->zb_uni)
                y = _mm512_sub_epi32(y, _mm512_set1_epi32((int32_t)rz));
            else
                y = _mm512_sub_epi32(y, _mm512_mullo_epi32(_mm512_set1_epi32(e->a_rowsum[m]), s->bzp[v]));
            if (s->za_uni)
                y = _mm512_sub_epi32(y, s->zacc[v]);
            else
                y = _mm512_sub_epi32(y, _mm512_mullo_epi32(_mm512_set1_epi32(e->a_zp[m]), s->cc[v]));
            if (s->nt)
                _mm512_stream_si512((void *)((int32_t *)e->y + (ptrdiff_t)m * e->ldy + s->n0 + 16 * v), y);
            else
                gk_qepi_zmm_store(e, m, s->n0 + 16 * v, y, s->mk[v]);
        }
    }
}

/* Epilogue of the tile t (32 x 32 raw int32 dot products) for rows [0, mv) and columns
 * [0, nv).  in_t: the partial-sum step is done (the micro-kernel accumulated onto the
 * earlier blocks' sums in the tile registers; t holds the whole depth's sums). */
static void gk_qgemm_u8s8_amx_tile_epilogue(const gk_qepi *e, int m0, int n0, int mv, int nv,
                                            int32_t *t, int in_t)
{
    /* gk_qepi_block1 takes the partial-sum step itself: the scalar route of a finishing
     * tile must see the raw dot products of this depth block, not the finished sums */
    const int finishes = e->part_mode == GK_QPART_NONE || e->part_mode == GK_QPART_FINISH;
    if (finishes && !gk_x86_epi_vector_ok(e)) {
        gk_x86_tile_store_scalar(e, m0, n0, mv, nv, t, GK_AMX_NR);
        return;
    }
    if (e->part_mode != GK_QPART_NONE && !in_t) {
        /* the partial-sum step of a depth block: FINISH leaves the sums in t */
        for (int i = 0; i < mv; i++)
            for (int v = 0; v < 2; v++) {
                const __mmask16 mk = gk_qepi_zmm_mask(nv - 16 * v);
                if (!mk)
                    break;
                __m512i y = _mm512_load_si512((const void *)(t + i * GK_AMX_NR + 16 * v));
                if (gk_qepi_zmm_part(e, m0 + i, n0 + 16 * v, &y, mk))
                    _mm512_store_si512((void *)(t + i * GK_AMX_NR + 16 * v), y);
            }
        if (!finishes)
            return;
    }
    gk_amx_epi s;
    gk_amx_epi_init(e, m0, n0, mv, nv, t, &s);
    gk_amx_epi_rows(e, &s, 0, mv);
}

/* The whole 32 x 32 tile runs gk_amx_tiles.h's software-pipelined 2 x 2 k-loop; the
 * partial-tile variants, which leave tiles free, alternate between two sets of input
 * tiles (X / Y) block by block instead (tile registers are not renamed).  A panels are
 * streamed (tileloaddt1), B panels loaded (see gk_amx_tiles.h).  nb = kp / 64 >= 0
 * blocks; nb == 0 (K == 0) loads nothing and leaves zero accumulators. */
#define LA0(t, p) GK_TILE_STREAM_LOADD(t, (p), GK_AMX_KS)
#define LA1(t, p) GK_TILE_STREAM_LOADD(t, (p) + 16 * GK_AMX_KS, GK_AMX_KS)
#define LB0(t, p) GK_TILE_LOADD(t, (p), 2 * GK_AMX_KS)
#define LB1(t, p) GK_TILE_LOADD(t, (p) + GK_AMX_KS, 2 * GK_AMX_KS)

static void gk_qgemm_u8s8_amx_32x32_ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel,
                                            const void *b_panel, const gk_qepi *e, int m0, int n0)
{
    GK_ALIGNED(64) int32_t t[GK_AMX_MR * GK_AMX_NR]; /* 4 KB: stays in L1 */
    const uint8_t *pa = (const uint8_t *)a_panel, *pb = (const uint8_t *)b_panel;
    const int nb = kp / GK_AMX_KS, two_m = mr_valid > 16, two_n = nr_valid > 16;
    /* A whole tile of a depth block accumulates onto the earlier blocks' partial sums in
     * the tiles themselves: loaded into the accumulators (ACC, FINISH), stored back from
     * them (STORE, ACC), instead of a vector pass over t (M = 128, K = N = 4096 on
     * Sapphire Rapids: that pass was ~15% of the micro-kernel).  Only where all 32 x 32
     * elements are valid (tile rows reach no further), and not for a FINISH on the scalar
     * route, whose gk_qepi_block1 takes the step itself. */
    const int mode = e->part_mode;
    int32_t *pp = NULL;
    if (mode != GK_QPART_NONE && mr_valid == GK_AMX_MR && nr_valid == GK_AMX_NR &&
        (mode != GK_QPART_FINISH || gk_x86_epi_vector_ok(e)))
        pp = gk_qepi_part_at(e, m0, n0);
    const ptrdiff_t pld = e->part_ld;
    if (two_m && two_n) {
        if (pp && mode != GK_QPART_STORE)
            GK_AMX_ACC_LOAD(pp, pld);
        else
            GK_AMX_ACC_ZERO();
        if (nb > 0)
            GK_AMX_2X2_KLOOP(_tile_dpbusd, pa, pb, nb);
        if (pp && mode != GK_QPART_FINISH) {
            GK_AMX_ACC_STORE(pp, pld);
            return;
        }
        GK_AMX_ACC_STORE(t, GK_AMX_NR);
    } else if (two_n) { /* rows 16..31 are padding: C 4, 5; X = {A 0, B 2, 3}, Y = {1, 6, 7} */
        _tile_zero(4);
        _tile_zero(5);
        int b = 0;
        for (; b + 2 <= nb; b += 2, pa += 2 * GK_AMX_ABLK, pb += 2 * GK_AMX_BBLK) {
            LA0(0, pa); LB0(2, pb); LB1(3, pb);
            LA0(1, pa + GK_AMX_ABLK); LB0(6, pb + GK_AMX_BBLK); LB1(7, pb + GK_AMX_BBLK);
            _tile_dpbusd(4, 0, 2);
            _tile_dpbusd(5, 0, 3);
            _tile_dpbusd(4, 1, 6);
            _tile_dpbusd(5, 1, 7);
        }
        if (b < nb) {
            LA0(0, pa); LB0(2, pb); LB1(3, pb);
            _tile_dpbusd(4, 0, 2);
            _tile_dpbusd(5, 0, 3);
        }
        GK_TILE_STORED(4, t, GK_AMX_NR * 4);
        GK_TILE_STORED(5, t + 16, GK_AMX_NR * 4);
    } else if (two_m) { /* columns 16..31 are padding: C 4, 6; X = {A 0, 1, B 2}, Y = {3, 5, 7} */
        _tile_zero(4);
        _tile_zero(6);
        int b = 0;
        for (; b + 2 <= nb; b += 2, pa += 2 * GK_AMX_ABLK, pb += 2 * GK_AMX_BBLK) {
            LA0(0, pa); LA1(1, pa); LB0(2, pb);
            LA0(3, pa + GK_AMX_ABLK); LA1(5, pa + GK_AMX_ABLK); LB0(7, pb + GK_AMX_BBLK);
            _tile_dpbusd(4, 0, 2);
            _tile_dpbusd(6, 1, 2);
            _tile_dpbusd(4, 3, 7);
            _tile_dpbusd(6, 5, 7);
        }
        if (b < nb) {
            LA0(0, pa); LA1(1, pa); LB0(2, pb);
            _tile_dpbusd(4, 0, 2);
            _tile_dpbusd(6, 1, 2);
        }
        GK_TILE_STORED(4, t, GK_AMX_NR * 4);
        GK_TILE_STORED(6, t + 16 * GK_AMX_NR, GK_AMX_NR * 4);
    } else { /* C 4; X = {A 0, B 2}, Y = {1, 3} */
        _tile_zero(4);
        int b = 0;
        for (; b + 2 <= nb; b += 2, pa += 2 * GK_AMX_ABLK, pb += 2 * GK_AMX_BBLK) {
            LA0(0, pa); LB0(2, pb);
            LA0(1, pa + GK_AMX_ABLK); LB0(3, pb + GK_AMX_BBLK);
            _tile_dpbusd(4, 0, 2);
            _tile_dpbusd(4, 1, 3);
        }
        if (b < nb) {
            LA0(0, pa); LB0(2, pb);
            _tile_dpbusd(4, 0, 2);
        }
        GK_TILE_STORED(4, t, GK_AMX_NR * 4);
    }
    gk_qgemm_u8s8_amx_tile_epilogue(e, m0, n0, mr_valid, nr_valid, t, pp != NULL);
}

/* The driver's ir loop (gk_qgemm_kernel.ucolumn).  Whole 32 x 32 tiles whose epilogue
 * is the vector one (a finishing depth block, 32 valid columns) run as a pipeline:
 *  - Tile i stores its sums into one of two buffers; its epilogue runs once tile i + 1's
 *    k-loop has issued, so the core stores the output while the tile unit computes.  One
 *    tile after another left the tile unit idle during each epilogue.
 *  - In a column of at least GK_AMX_SPREAD_TILES tiles the epilogue runs a few rows per
 *    k-block instead, inside the k-loop: a burst of 64 non-temporal stores held up the A
 *    tile loads.  Measured in one process, Sapphire Rapids, against one burst per tile:
 *    M = 768 / 1024, K = N = 1024: 1.065x / 1.01-1.11x; QLinearMatMul 512 x 768 x 3072
 *    1.09x; but M = 96..256 0.96-0.97x, hence the threshold.
 *  - A depth past GK_AMX_KSUB runs in sub-blocks of that depth, each over every tile of
 *    the column, the sums of the earlier ones waiting in a scratch (mc x 32 int32, in
 *    L2): the B sub-panel (32 KB) stays in L1 for all of them, where a whole-depth tile
 *    read its B micro-panel from L2 together with A (2048^3: 1.24-1.27x).
 * Everything else, and the last partial tile, goes through the micro-kernel one tile at
 * a time (as for fewer than two whole tiles). */
#define GK_AMX_KSUB 1024 /* depth bytes of a sub-block: a 32 KB B sub-panel */
#define GK_AMX_SPREAD_TILES 12
static void gk_qgemm_u8s8_amx_column(int mc, int nr_valid, int kp, const void *a_block,
                                     const void *b_panel, const gk_qepi *e, int m0, int n0)
{
    const size_t aps = (size_t)GK_AMX_MR * (size_t)kp; /* bytes from one A panel to the next */
    const int mode = e->part_mode, tiles = mc / GK_AMX_MR;
    int ir = 0;
    if (nr_valid == GK_AMX_NR && (mode == GK_QPART_NONE || mode == GK_QPART_FINISH) &&
        gk_x86_epi_vector_ok(e) && tiles >= 2) {
        GK_ALIGNED(64) int32_t t[2][GK_AMX_MR * GK_AMX_NR]; /* 8 KB: stays in L1 */
        int32_t *sums = NULL; /* the sub-blocks' sums, tile after tile */
        int sub = kp > GK_AMX_KSUB ? GK_AMX_KSUB : kp;
        if (sub < kp && (sums = (int32_t *)gk_scratch_alloc((size_t)tiles * sizeof t[0])) == NULL)
            sub = kp; /* no memory: the whole depth per tile, as correct */
        for (int k0 = 0; k0 < kp; k0 += sub) {
            const int nb = (kp - k0 < sub ? kp - k0 : sub) / GK_AMX_KS;
            const int first = k0 == 0, last = k0 + sub >= kp;
            /* rows of the previous tile's epilogue per k-block: all 32 over the nb - 1 hooks,
             * or none (all after the k-loop) in a short column; only the last sub-block has
             * epilogues (prev: tile i - 1's, from tile 1 on) */
            const int per = !last || tiles < GK_AMX_SPREAD_TILES ? 0
                            : nb > 1 ? (GK_AMX_MR + nb - 2) / (nb - 1) : GK_AMX_MR;
            gk_amx_epi prev;
            memset(&prev, 0, sizeof prev); /* read only from tile 1 on */
            for (int i = 0; i < tiles; i++) {
                const uint8_t *pa = (const uint8_t *)a_block + (size_t)i * aps + (size_t)k0 * GK_AMX_MR;
                const uint8_t *pb = (const uint8_t *)b_panel + (size_t)k0 * GK_AMX_NR;
                int32_t *ts = sums ? sums + (size_t)i * GK_AMX_MR * GK_AMX_NR : NULL; /* !first, !last */
                if (!first)
                    GK_AMX_ACC_LOAD(ts, GK_AMX_NR);
                else if (mode == GK_QPART_FINISH)
                    GK_AMX_ACC_LOAD(gk_qepi_part_at(e, m0 + i * GK_AMX_MR, n0), e->part_ld);
                else
                    GK_AMX_ACC_ZERO();
                int row = 0;
                if (nb > 0)
                    GK_AMX_2X2_KLOOP_HOOK(_tile_dpbusd, pa, pb, nb, {
                        if (per > 0 && i > 0 && row < GK_AMX_MR) {
                            const int r1 = row + per < GK_AMX_MR ? row + per : GK_AMX_MR;
                            gk_amx_epi_rows(e, &prev, row, r1);
                            row = r1;
                        }
                    });
                if (!last) {
                    GK_AMX_ACC_STORE(ts, GK_AMX_NR);
                    continue;
                }
                if (i > 0 && row < GK_AMX_MR)
                    gk_amx_epi_rows(e, &prev, row, GK_AMX_MR);
                GK_AMX_ACC_STORE(t[i & 1], GK_AMX_NR);
                gk_amx_epi_init(e, m0 + i * GK_AMX_MR, n0, GK_AMX_MR, GK_AMX_NR, t[i & 1], &prev);
            }
            if (last) /* the last tile's epilogue (tiles >= 2) */
                gk_amx_epi_rows(e, &prev, 0, GK_AMX_MR);
        }
        gk_scratch_free(sums);
        ir = tiles * GK_AMX_MR;
    }
    for (; ir < mc; ir += GK_AMX_MR)
        gk_qgemm_u8s8_amx_32x32_ukernel(mc - ir < GK_AMX_MR ? mc - ir : GK_AMX_MR, nr_valid, kp,
                                        (const uint8_t *)a_block + (size_t)(ir / GK_AMX_MR) * aps,
                                        b_panel, e, m0 + ir, n0);
}

#undef LA0
#undef LA1
#undef LB0
#undef LB1

/* ---------------------------------------------------------------- small M */

#define GK_SMQ_W 64
#define GK_SMQ_DPBUSD(acc, u8, s8) _mm512_dpbusd_epi32(acc, u8, s8)
#if GK_GCC && GK_GNU_ASM /* gcc 12 copies intrinsic accumulators (see the micro-kernel) */
#define GK_SMQ_DPBUSD_TO(acc, x, y) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(y))
#endif
#define GK_SMQ_TILES 1 /* rows past a handful multiply on the tile unit */
/* The family's smallm_max: past 8 rows the packed tiles beat the small-M path's
 * vpdpbusd on a B below GK_QGEMM_SMALLM_WIDE_KN (a larger B takes the small-M path's
 * tile route up to smallm_wide_max).  Sapphire Rapids, one thread, against 16: M = 12 /
 * 16, K = 768, N = 1024 1.66x / 2.15x; 256^2 1.31x / 1.59x; 512^2 1.12x / 1.46x; M = 9
 * 0.95-1.22x.  From 4, M = 5 and 6 ran 0.6-0.9x. */
#define GK_AMX_SMALLM_MAX 8
#define GK_SMQ_NAME gk_qgemm_u8s8_amx_smallm
#include "gk_qsmallm_quad.inc"

/* ---------------------------------------------------------------- tall */

/* The tall route's vpdpbusd variant runs up to this depth (the tiles' 64-deep steps
 * would be mostly padding), its tile variant beyond. */
#define GK_AMX_TALL_VNNI_K 48

#define GK_QT_NAME gk_qgemm_u8s8_amx_tall_vnni
#include "gk_qtall_zmm.inc"

/* The tall tile route's end of one panel: the tile's sums in t (rows [0, mv), columns
 * [0, nv) of the output block at (i0, n0)), corrected for an s8 A run as it is
 * (dot(a', b') = dot(a, b') + 128 colsum(b')), then the tile epilogue. */
static inline void gk_amx_tall_tiles_finish(const gk_qepi *e, int i0, int n0, int mv, int nv,
                                            uint8_t a_xor, const int32_t *colsum, int32_t *t)
{
    if (a_xor) {
        const __mmask16 k0 = gk_qepi_zmm_mask(nv), k1 = gk_qepi_zmm_mask(nv - 16);
        const __m512i f0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(k0, colsum + n0), 7);
        const __m512i f1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(k1, colsum + n0 + 16), 7);
        for (int r = 0; r < mv; r++) {
            __m512i *tr = (__m512i *)(t + r * GK_AMX_NR);
            tr[0] = _mm512_add_epi32(tr[0], f0);
            tr[1] = _mm512_add_epi32(tr[1], f1);
        }
    }
    gk_qgemm_u8s8_amx_tile_epilogue(e, i0, n0, mv, nv, t, 0);
}

/* The tall route's tile variant, for depths past GK_AMX_TALL_VNNI_K: A's tiles are loaded
 * straight from A (16 rows x 64 depth bytes, A's own row stride) against B packed once
 * in the family's panels (32 columns, kp deep: one panel is at most 32 KB, in L1), 2 x 2
 * accumulator tiles per 32-row block and 32-column panel.  Nothing past a row's k bytes
 * or past A's last row is loaded: the last, partial 64-deep chunk of a block (K % 64) and
 * the last, partial block of rows (M % 32) come from a zero-padded copy (tb, ta), whose
 * padding meets B's zero padding or lands in rows nobody stores.  u8 A runs tdpbusd;
 * s8 A (a_xor 0x80: the canonical a' = a + 128) runs tdpbssd on A as it is and adds the
 * 128 * colsum(b') the offset owes to every sum before the epilogue.  Packing A was
 * 56% of 3136 x 512 x 32 on the packed path (A read once from L3 by the packer, written,
 * read again by the tiles). */
static int gk_amx_tall_tiles(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, uint8_t a_xor,
                             const uint8_t *b, ptrdiff_t b_rs, ptrdiff_t b_cs, uint8_t b_xor,
                             int32_t *rowsum, const gk_qepi *e0)
{
    const int kp = gk_x86_round_up(k, GK_AMX_KS), nkf = k / GK_AMX_KS, kt = k % GK_AMX_KS;
    const int np = (n + GK_AMX_NR - 1) / GK_AMX_NR, mf = m / GK_AMX_MR * GK_AMX_MR;
    const size_t pstride = (size_t)GK_AMX_NR * (size_t)kp + GK_AMX_B_PANEL_PAD;
    const size_t bbytes = gk_round64((size_t)np * pstride), cbytes = gk_round64((size_t)np * GK_AMX_NR * 4);
    /* ta: the last rows (m - mf of them, zero rows after) x kp; tb: one block's tail chunk */
    const size_t tabytes = mf < m ? (size_t)GK_AMX_MR * (size_t)kp : 0;
    unsigned char *mem = (unsigned char *)gk_scratch_alloc(bbytes + 2 * cbytes + tabytes);
    if (!mem)
        return -1;
    uint8_t *bp = mem;
    int32_t *colsum = (int32_t *)(mem + bbytes), *colcorr = (int32_t *)(mem + bbytes + cbytes);
    uint8_t *ta = mem + bbytes + 2 * cbytes;
    gk_qgemm_u8s8_amx_pack_b(k, n, b, b_rs, b_cs, b_xor, bp, colsum);

    gk_x86_tall_epi te;
    gk_x86_tall_epi_init(e0, m, n, k, 0, rowsum, colsum, colcorr, &te);
    const gk_qepi e = te.e;
    if (te.need_rs || !te.vec_ok)
        gk_qt_rowsums(m, k, a, a_rs, a_xor, rowsum);
    else
        memset(rowsum, 0, (size_t)m * sizeof *rowsum); /* read, times zb == 0 */
    if (mf < m) { /* the last rows, zero-padded to a whole block and to kp */
        memset(ta, 0, tabytes);
        for (int i = mf; i < m; i++)
            memcpy(ta + (size_t)(i - mf) * kp, a + (ptrdiff_t)i * a_rs, (size_t)k);
    }

    /* Panel j's sums go to t[j & 1]; its epilogue runs after panel j + 1's tiles and
     * tile stores are issued, on the core while the tile unit computes (as the packed
     * column does).  Stored and finished one panel at a time, the tile stores and the
     * epilogue were 70% of a 64^3 call's route (rdtsc); now, MatMulInteger without /
     * with zero points, alternating processes: 64^3 1.13x / 1.09x, 128^3 1.05-1.2x,
     * 784 x 192 x 64 1.26x / 1.12x, 3136 x 512 x 32 1.3x, QLinearMatMul 1.0-1.1x. */
    GK_ALIGNED(64) int32_t t[2][GK_AMX_MR * GK_AMX_NR];
    GK_ALIGNED(64) uint8_t tb[GK_AMX_MR * GK_AMX_KS]; /* a block's tail chunk, 64-byte rows */
    int pend = -1, pend_i0 = 0, pend_n0 = 0, pend_mv = 0, pend_nv = 0; /* t[pend & 1] */
    _tile_loadconfig(&gk_amx_cfg_16x64);
    for (int i0 = 0, j = 0; i0 < m; i0 += GK_AMX_MR) {
        const int full = i0 < mf, mv = full ? GK_AMX_MR : m - mf;
        const uint8_t *ab = full ? a + (ptrdiff_t)i0 * a_rs : ta;
        const ptrdiff_t ars = full ? a_rs : kp;
        if (kt) { /* the tail chunk of this block's rows (those past mv stay zero) */
            const __mmask64 tm = ((__mmask64)1 << kt) - 1;
            for (int r = 0; r < GK_AMX_MR; r++) {
                const __m512i v = r < mv ? _mm512_maskz_loadu_epi8(tm, ab + (ptrdiff_t)r * ars + (ptrdiff_t)nkf * GK_AMX_KS)
                                         : _mm512_setzero_si512();
                _mm512_store_si512((void *)(tb + r * GK_AMX_KS), v);
            }
        }
        for (int pnl = 0; pnl < np; pnl++, j++) {
            const uint8_t *pb = bp + (size_t)pnl * pstride;
            const int n0 = pnl * GK_AMX_NR, nv = n - n0 < GK_AMX_NR ? n - n0 : GK_AMX_NR;
            GK_AMX_ACC_ZERO();
            for (int c = 0; c < nkf + (kt > 0); c++, pb += GK_AMX_BBLK) {
                /* whole chunks straight from A, the partial last one from tb */
                const uint8_t *a0 = c < nkf ? ab + (ptrdiff_t)c * GK_AMX_KS : tb;
                const ptrdiff_t s = c < nkf ? ars : GK_AMX_KS;
                GK_TILE_LOADD(0, a0, s);
                GK_TILE_LOADD(1, a0 + 16 * s, s);
                GK_TILE_LOADD(2, pb, 2 * GK_AMX_KS);
                GK_TILE_LOADD(3, pb + GK_AMX_KS, 2 * GK_AMX_KS);
                if (a_xor) {
                    _tile_dpbssd(4, 0, 2);
                    _tile_dpbssd(5, 0, 3);
                    _tile_dpbssd(6, 1, 2);
                    _tile_dpbssd(7, 1, 3);
                } else {
                    _tile_dpbusd(4, 0, 2);
                    _tile_dpbusd(5, 0, 3);
                    _tile_dpbusd(6, 1, 2);
                    _tile_dpbusd(7, 1, 3);
                }
            }
            GK_AMX_ACC_STORE(t[j & 1], GK_AMX_NR);
            if (pend >= 0)
                gk_amx_tall_tiles_finish(&e, pend_i0, pend_n0, pend_mv, pend_nv, a_xor, colsum,
                                         t[pend & 1]);
            pend = j;
            pend_i0 = i0;
            pend_n0 = n0;
            pend_mv = mv;
            pend_nv = nv;
        }
    }
    _tile_release();
    if (pend >= 0)
        gk_amx_tall_tiles_finish(&e, pend_i0, pend_n0, pend_mv, pend_nv, a_xor, colsum, t[pend & 1]);
    _mm_sfence(); /* the epilogue's non-temporal stores */
    gk_scratch_free(mem);
    return 0;
}

/* Where the tall route beats the packed tiles (Sapphire Rapids, one thread, in one
 * process, packed / tall):
 *   vpdpbusd variant, K <= 48: 12544 x 32 x 16 2.0x, 12544 x 27 x 32 1.54x, 12544 x 3 x 16
 *     2.8x, 3136 x 32 x 512 1.21x, 3136 x 48 x 256 1.06x, 32 x 27 x 32 1.7x;
 *   tile variant: 3136 x 512 x 32 1.57x, 3136 x 2048 x 32 2.1x, 4096 x 4096 x 64 1.67x,
 *     3136 x 144 x 24 1.42x, 784 x 192 x 64 1.27x, 64^3 1.24x, 3136 x 128 x 128 1.17x;
 *     but with more columns A is read again per 32-column panel: 3136 x 512 x 128
 *     0.98x, 1024 x 1024 x 128 0.89x, 128 x 768 x 768 0.73x. */
static int gk_qgemm_u8s8_amx_tall_takes(int m, int k, int n)
{
    if (m < 16)
        return 0;
    return k <= GK_AMX_TALL_VNNI_K ? n <= 512 : n <= 64 || (n <= 128 && k <= 256);
}

/* The family's tall route: vpdpbusd with A broadcast in place up to GK_AMX_TALL_VNNI_K
 * deep (there 64-deep tile steps are mostly padding), A's tiles loaded in place beyond. */
static int gk_qgemm_u8s8_amx_tall(int m, int n, int k, const uint8_t *a, ptrdiff_t a_rs, uint8_t a_xor,
                                  const uint8_t *b, ptrdiff_t b_rs, ptrdiff_t b_cs, uint8_t b_xor,
                                  int32_t *rowsum, const gk_qepi *e)
{
    if (k <= GK_AMX_TALL_VNNI_K)
        return gk_qgemm_u8s8_amx_tall_vnni(m, n, k, a, a_rs, a_xor, b, b_rs, b_cs, b_xor, rowsum, e);
    return gk_amx_tall_tiles(m, n, k, a, a_rs, a_xor, b, b_rs, b_cs, b_xor, rowsum, e);
}

const gk_qgemm_kernel gk_qgemm_u8s8_amx = {
    "amx", GK_AMX_MR, GK_AMX_NR, GK_AMX_KS, 1, 1,
    gk_qgemm_u8s8_amx_pack_a, gk_qgemm_u8s8_amx_pack_b, gk_qgemm_u8s8_amx_32x32_ukernel,
    GK_AMX_SMALLM_MAX, gk_qgemm_u8s8_amx_smallm, gk_qgemm_u8s8_amx_begin, gk_qgemm_u8s8_amx_end,
    GK_AMX_KC,
    0, /* packed_min_m: the default */
    GK_X86_SMALLM_WIDE_MAX, /* smallm_wide_max: the tile route of the small-M path */
    GK_AMX_B_PANEL_PAD, /* b_panel_pad: see its definition */
    GK_AMX_KC_DEEP,
    gk_qgemm_u8s8_amx_column,
    gk_qgemm_u8s8_amx_tall, gk_qgemm_u8s8_amx_tall_takes,
};
