/* int8 GEMM, AVX-512 VNNI: vpdpbusd (u8 x s8, four products summed exactly in int32,
 * then a wrapping int32 add -- never the saturating vpdpbusds).
 *
 * Tile MR x NR = 8 x 32: 16 zmm accumulators (> 5-cycle latency x 2 issues/cycle).
 * kstep 4, one byte per element; panel layout: see gk_qgemm_x86_common.h
 *   A panel: per k-group g, MR int32 words = 4 depth bytes of each row   (broadcast)
 *   B panel: per k-group g, NR int32 words = 4 depth bytes of each column (2 zmm loads)
 * Uses AVX512F/BW/VL/VNNI only (no DQ): BW for byte masks and byte unpacks, VL for the
 * 128-bit vpdpbusd in the packers.
 *
 * Read top to bottom: the epilogue (gk_qepi_x86.inc at 16 lanes, masked), the packers
 * (gk_qpack_quad.inc in EVEX encoding, with the zmm B packer), the micro-kernel, the
 * small-M path (gk_qsmallm_quad.inc on zmm), the family's table entry. */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

#define GK_EPI_LANES 16
#include "gk_qepi_x86.inc" /* gk_qepi_zmm_dot, gk_qepi_zmm_mask */

/* Tile 8 x 32: the asm k-loop below is written for exactly this shape. */
#define GK_AVX512VNNI_MR 8
#define GK_AVX512VNNI_NV 2
#define GK_AVX512VNNI_NR (16 * GK_AVX512VNNI_NV)
/* Packed B panels 128 bytes apart beyond their 32 kp (gk_qgemm_kernel.b_panel_pad).  The
 * row-major packer writes 128 bytes into each of nc / 32 panels per 4 depth rows; with kp
 * a multiple of 128 (kc = 512, 384, ...) the panels are 4 KiB multiples apart, those
 * stores all map to one L1 set and each one misses.  128 bytes (two lines) puts
 * consecutive panels' lines into different sets.  Zen 4: the packer alone 1.5x (B 4096^2,
 * from L3) to 2.1x (768^2, cached) faster; whole calls, one thread, alternating
 * processes: 64 / 128 x 768 x 768 1.075x / 1.04x, 128 x 768 x 3072 1.02x, 256 x 1024^2
 * 1.02x, QLinearMatMul 128 x 768^2 1.04x, 1024^3 0.99-1.01x, 2048^3 0.99x, 128 x 4096^2
 * 1.00x; two threads 1.02-1.03x. */
#define GK_AVX512VNNI_B_PANEL_PAD 128

/* ---------------------------------------------------------------- packing */

#define GK_QPACK_DPBUSD128(acc, u8, s8) _mm_dpbusd_epi32(acc, u8, s8)
#define GK_QPACK_ZMM 1
#include "gk_qpack_quad.inc" /* gk_x86_pack_quad, gk_x86_pack_b32_quad */

static void gk_qgemm_u8s8_avx512vnni_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs,
                                            ptrdiff_t cs, uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_x86_pack_quad(a, rs, cs, a_xor, 0, GK_AVX512VNNI_MR, mc, k, dst, rowsum);
}

static void gk_qgemm_u8s8_avx512vnni_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs,
                                            ptrdiff_t cs, uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_x86_pack_b32_quad(k, gk_x86_round_up(k, 4), nc, b, rs, cs, b_xor, dst, colsum,
                         GK_AVX512VNNI_B_PANEL_PAD);
}

/* ---------------------------------------------------------------- micro-kernel */

/* acc += dot4(u8 x, s8 y) per int32 lane.  gcc 12 does not tie the accumulator of the
 * vpdpbusd builtin to its output register: in a loop it copies every accumulator
 * (vmovdqa) and spills some each iteration, ~30% of the peak.  A one-instruction asm
 * with a "+v" operand keeps them in place; other compilers get the intrinsic. */
#if GK_GCC
#define GK_DPBUSD512(acc, x, y) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(y))
#else
#define GK_DPBUSD512(acc, x, y) ((acc) = _mm512_dpbusd_epi32((acc), (x), (y)))
#endif

/* The epilogue of a whole tile (mode NONE or FINISH: acc holds the whole depth's raw dot
 * products), every lane valid; needs gk_x86_epi_vector_ok(e).  Inlined, so that acc stays
 * in registers; e's fields are read into locals first (the build has no strict aliasing:
 * every store to y would otherwise reload them).  Requantized outputs take the general
 * correction: its vpmulld are small next to the conversions, and one inlined copy of the
 * requantization keeps the kernel small. */
GK_ALWAYS_INLINE void gk_avx512vnni_tile_epilogue(const gk_qepi *e, int m0, int n0,
                                                  __m512i acc[GK_AVX512VNNI_MR][GK_AVX512VNNI_NV])
{
    if (e->row_corr && e->kind == GK_QOUT_I32) {
        /* int32 output with the separable correction: two subtractions, whole rows */
        const int32_t *row_corr = e->row_corr + m0;
        const ptrdiff_t ldy = e->ldy;
        int32_t *yp = (int32_t *)e->y + (ptrdiff_t)m0 * ldy + n0;
        __m512i colc[GK_AVX512VNNI_NV], r[GK_AVX512VNNI_MR];
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            colc[v] = _mm512_loadu_si512((const void *)(e->col_corr + n0 + 16 * v));
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++)
            r[i] = _mm512_set1_epi32(row_corr[i]);
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++)
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                _mm512_storeu_si512((void *)(yp + (ptrdiff_t)i * ldy + 16 * v),
                                    _mm512_sub_epi32(_mm512_sub_epi32(acc[i][v], r[i]), colc[v]));
        return;
    }
    if (e->kind != GK_QOUT_I32 && e->mult_rs == 0 && e->yzp_rs == 0) {
        gk_qepi_zmm_tile_requant(e, m0, n0, GK_AVX512VNNI_MR, GK_AVX512VNNI_NV, &acc[0][0]);
        return;
    }
    __m512i bzp[GK_AVX512VNNI_NV], cc[GK_AVX512VNNI_NV];
    GK_UNROLL(4)
    for (int v = 0; v < GK_AVX512VNNI_NV; v++) {
        bzp[v] = _mm512_loadu_si512((const void *)(e->b_zp + n0 + 16 * v));
        cc[v] = _mm512_loadu_si512((const void *)(e->b_colcorr + n0 + 16 * v));
    }
    GK_UNROLL(8)
    for (int i = 0; i < GK_AVX512VNNI_MR; i++)
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            gk_qepi_zmm_dot(e, m0 + i, n0 + 16 * v, acc[i][v], bzp[v], cc[v], (__mmask16)0xFFFF);
}

/* The k-loop of a tile with only `rows` < MR valid rows (M < 8 reading a pre-packed B,
 * and a bottom edge): only those rows' vpdpbusd, so one row costs 2 vpdpbusd per 128-byte
 * k-group of the B panel instead of 16.  With few rows the vpdpbusd latency would bound
 * the loop: `sets` independent accumulator sets take alternate k-groups and are summed at
 * the end (int32 addition wraps and is associative mod 2^32: the same bits).  rows and
 * sets are constants after inlining; rows * sets * NV <= 16 accumulators (sets <= 4).  Rows past
 * `rows` are returned zero. */
GK_ALWAYS_INLINE void gk_avx512vnni_kloop_rows(int rows, int sets, int ng, const int32_t *ap,
                                               const __m512i *bp,
                                               __m512i acc[GK_AVX512VNNI_MR][GK_AVX512VNNI_NV])
{
    __m512i s[4][GK_AVX512VNNI_MR][GK_AVX512VNNI_NV];
    GK_UNROLL(4)
    for (int q = 0; q < sets; q++)
        GK_UNROLL(8)
        for (int i = 0; i < rows; i++)
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                s[q][i][v] = _mm512_setzero_si512();
    int g = 0;
    for (; g + sets <= ng; g += sets) {
        GK_UNROLL(4)
        for (int q = 0; q < sets; q++) {
            __m512i b[GK_AVX512VNNI_NV];
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                b[v] = _mm512_loadu_si512(bp + (ptrdiff_t)(g + q) * GK_AVX512VNNI_NV + v);
            GK_UNROLL(8)
            for (int i = 0; i < rows; i++) {
                const __m512i av = _mm512_set1_epi32(ap[(ptrdiff_t)(g + q) * GK_AVX512VNNI_MR + i]);
                GK_UNROLL(4)
                for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                    GK_DPBUSD512(s[q][i][v], av, b[v]);
            }
        }
    }
    for (; g < ng; g++) {
        __m512i b[GK_AVX512VNNI_NV];
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            b[v] = _mm512_loadu_si512(bp + (ptrdiff_t)g * GK_AVX512VNNI_NV + v);
        GK_UNROLL(8)
        for (int i = 0; i < rows; i++) {
            const __m512i av = _mm512_set1_epi32(ap[(ptrdiff_t)g * GK_AVX512VNNI_MR + i]);
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                GK_DPBUSD512(s[0][i][v], av, b[v]);
        }
    }
    GK_UNROLL(8)
    for (int i = 0; i < GK_AVX512VNNI_MR; i++)
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++) {
            __m512i t = _mm512_setzero_si512();
            if (i < rows) {
                t = s[0][i][v];
                GK_UNROLL(4)
                for (int q = 1; q < sets; q++)
                    t = _mm512_add_epi32(t, s[q][i][v]);
            }
            acc[i][v] = t;
        }
}

/* Rows 1..7 of a partial tile, each with its own instance of the loop above. */
static void gk_avx512vnni_kloop_partial(int rows, int ng, const int32_t *ap, const __m512i *bp,
                                        __m512i acc[GK_AVX512VNNI_MR][GK_AVX512VNNI_NV])
{
    switch (rows) {
    case 1: gk_avx512vnni_kloop_rows(1, 4, ng, ap, bp, acc); break;
    case 2: gk_avx512vnni_kloop_rows(2, 4, ng, ap, bp, acc); break;
    case 3: gk_avx512vnni_kloop_rows(3, 2, ng, ap, bp, acc); break;
    case 4: gk_avx512vnni_kloop_rows(4, 2, ng, ap, bp, acc); break;
    case 5: gk_avx512vnni_kloop_rows(5, 1, ng, ap, bp, acc); break;
    case 6: gk_avx512vnni_kloop_rows(6, 1, ng, ap, bp, acc); break;
    default: gk_avx512vnni_kloop_rows(7, 1, ng, ap, bp, acc); break;
    }
}

static void gk_qgemm_u8s8_avx512vnni_8x32_ukernel(int mr_valid, int nr_valid, int kp,
                                                  const void *a_panel, const void *b_panel,
                                                  const gk_qepi *e, int m0, int n0)
{
    const int32_t *ap = (const int32_t *)a_panel;
    const __m512i *bp = (const __m512i *)b_panel;
    const int mode = e->part_mode;
    /* STORE / ACC blocks never requantize: any multiplier strides will do */
    const int finishes = mode == GK_QPART_NONE || mode == GK_QPART_FINISH;
    int32_t *pp = NULL;
    if (mode != GK_QPART_NONE) {
        /* the tile's partial sums are read / written after the k-loop: fetch them now */
        pp = gk_qepi_part_at(e, m0, n0);
        for (int i = 0; i < mr_valid; i++) {
            _mm_prefetch((const char *)(pp + (ptrdiff_t)i * e->part_ld), _MM_HINT_T0);
            _mm_prefetch((const char *)(pp + (ptrdiff_t)i * e->part_ld + 16), _MM_HINT_T0);
        }
    }
    /* int32 lanes wrap mod 2^32 (ONNX's overflow); each 4-product group is exact. */
    const int ng = kp / 4;
    __m512i acc[GK_AVX512VNNI_MR][GK_AVX512VNNI_NV];

#if GK_GCC && GK_GNU_ASM
    /* The k-loop as one asm block with the 16 accumulators pinned in zmm16..zmm31 (row i,
     * half v in zmm16+2i+v): with intrinsics, or one asm statement per vpdpbusd, gcc 12
     * routes every accumulator through a scratch register (two vmovdqa64 per vpdpbusd),
     * which made the loop front-end bound at ~45% of the vpdpbusd peak.  Per k-group:
     * two B loads (zmm0-1), eight A broadcasts (zmm2-3 alternating), 16 vpdpbusd (u8
     * broadcast x s8 B; the non-saturating form, so each int32 lane wraps exactly like
     * the scalar oracle).  After the loop, still in the same block: the partial sums of
     * the depth block are added from `addp` (ACC, FINISH) and the tile stored to `outp`
     * (STORE, ACC), rows `ld` bytes apart; a whole tile and a FINISH / NONE epilogue the
     * vector code takes then read the accumulators straight from zmm16..31. */
#define GK_Z(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define GK_ROW(i, r, c0, c1)                                                                \
    "vpbroadcastd " #i "*4(%[pa]), %%zmm" #r "\n\t"                                         \
    "vpdpbusd %%zmm0, %%zmm" #r ", %%zmm" #c0 "\n\t"                                        \
    "vpdpbusd %%zmm1, %%zmm" #r ", %%zmm" #c1 "\n\t"
/* The k-loop of both tile variants below: zero the 16 accumulators (zmm16..31, row i,
 * half v in zmm16+2i+v), then per k-group two B loads and eight A broadcasts feeding 16
 * vpdpbusd; falls through at label 2 with the sums in zmm16..31. */
#define GK_KLOOP                                                                            \
    GK_Z(16) GK_Z(17) GK_Z(18) GK_Z(19) GK_Z(20) GK_Z(21) GK_Z(22) GK_Z(23) GK_Z(24) GK_Z(25) \
    GK_Z(26) GK_Z(27) GK_Z(28) GK_Z(29) GK_Z(30) GK_Z(31)                                   \
    "cmp %[pa], %[pe]\n\t"                                                                   \
    "je 2f\n\t"                                                                              \
    ".p2align 6\n\t"                                                                         \
    "1:\n\t"                                                                                 \
    "vmovdqu64 (%[pb]), %%zmm0\n\t"                                                          \
    "vmovdqu64 64(%[pb]), %%zmm1\n\t"                                                        \
    GK_ROW(0, 2, 16, 17) GK_ROW(1, 3, 18, 19) GK_ROW(2, 2, 20, 21) GK_ROW(3, 3, 22, 23)     \
    GK_ROW(4, 2, 24, 25) GK_ROW(5, 3, 26, 27) GK_ROW(6, 2, 28, 29) GK_ROW(7, 3, 30, 31)     \
    "add $32, %[pa]\n\t"                                                                     \
    "add $128, %[pb]\n\t"                                                                    \
    "cmp %[pa], %[pe]\n\t"                                                                   \
    "jne 1b\n\t"                                                                             \
    "2:\n\t"
#define GK_ADDROW(c0, c1)                                                                   \
    "vpaddd (%[addp]), %%zmm" #c0 ", %%zmm" #c0 "\n\t"                                      \
    "vpaddd 64(%[addp]), %%zmm" #c1 ", %%zmm" #c1 "\n\t"                                    \
    "add %[ld], %[addp]\n\t"
#define GK_OUTROW(c0, c1)                                                                   \
    "vmovdqu64 %%zmm" #c0 ", (%[outp])\n\t"                                                 \
    "vmovdqu64 %%zmm" #c1 ", 64(%[outp])\n\t"                                               \
    "add %[ld], %[outp]\n\t"
#define GK_ST(i) "vmovdqu64 %%zmm" #i ", (" #i "-16)*64(%[outp])\n\t"
    if (mr_valid == GK_AVX512VNNI_MR && nr_valid == GK_AVX512VNNI_NR &&
        (!finishes || gk_x86_epi_vector_ok(e))) {
        const int32_t *pa = ap, *pe = ap + (ptrdiff_t)ng * GK_AVX512VNNI_MR;
        const __m512i *pb = bp;
        const int32_t *addp = mode == GK_QPART_ACC || mode == GK_QPART_FINISH ? pp : NULL;
        int32_t *outp = finishes ? NULL : pp;
        const ptrdiff_t ld = mode != GK_QPART_NONE ? e->part_ld * 4 : 0;
        register __m512i c0 __asm__("xmm16"), c1 __asm__("xmm17"), c2 __asm__("xmm18"),
            c3 __asm__("xmm19"), c4 __asm__("xmm20"), c5 __asm__("xmm21"), c6 __asm__("xmm22"),
            c7 __asm__("xmm23"), c8 __asm__("xmm24"), c9 __asm__("xmm25"), c10 __asm__("xmm26"),
            c11 __asm__("xmm27"), c12 __asm__("xmm28"), c13 __asm__("xmm29"),
            c14 __asm__("xmm30"), c15 __asm__("xmm31");
        __asm__ volatile(GK_KLOOP
                         "test %[addp], %[addp]\n\t"
                         "jz 3f\n\t"
                         GK_ADDROW(16, 17) GK_ADDROW(18, 19) GK_ADDROW(20, 21) GK_ADDROW(22, 23)
                         GK_ADDROW(24, 25) GK_ADDROW(26, 27) GK_ADDROW(28, 29) GK_ADDROW(30, 31)
                         "3:\n\t"
                         "test %[outp], %[outp]\n\t"
                         "jz 4f\n\t"
                         GK_OUTROW(16, 17) GK_OUTROW(18, 19) GK_OUTROW(20, 21) GK_OUTROW(22, 23)
                         GK_OUTROW(24, 25) GK_OUTROW(26, 27) GK_OUTROW(28, 29) GK_OUTROW(30, 31)
                         "4:\n\t"
                         : "=v"(c0), "=v"(c1), "=v"(c2), "=v"(c3), "=v"(c4), "=v"(c5), "=v"(c6),
                           "=v"(c7), "=v"(c8), "=v"(c9), "=v"(c10), "=v"(c11), "=v"(c12),
                           "=v"(c13), "=v"(c14), "=v"(c15), [pa] "+r"(pa), [pb] "+r"(pb),
                           [addp] "+r"(addp), [outp] "+r"(outp)
                         : [pe] "r"(pe), [ld] "r"(ld)
                         : "xmm0", "xmm1", "xmm2", "xmm3", "cc", "memory");
        if (!finishes)
            return;
        acc[0][0] = c0; acc[0][1] = c1; acc[1][0] = c2; acc[1][1] = c3;
        acc[2][0] = c4; acc[2][1] = c5; acc[3][0] = c6; acc[3][1] = c7;
        acc[4][0] = c8; acc[4][1] = c9; acc[5][0] = c10; acc[5][1] = c11;
        acc[6][0] = c12; acc[6][1] = c13; acc[7][0] = c14; acc[7][1] = c15;
        gk_avx512vnni_tile_epilogue(e, m0, n0, acc);
        return;
    }
    if (mr_valid < GK_AVX512VNNI_MR) {
        gk_avx512vnni_kloop_partial(mr_valid, ng, ap, bp, acc);
    } else {
        /* a partial tile (columns), or a FINISH / NONE epilogue only the scalar reference
         * handles: the same k-loop, the tile stored to t for the code below */
        GK_ALIGNED(64) __m512i t[GK_AVX512VNNI_MR * GK_AVX512VNNI_NV];
        const int32_t *pa = ap, *pe = ap + (ptrdiff_t)ng * GK_AVX512VNNI_MR;
        const __m512i *pb = bp;
        __m512i *outp = t;
        __asm__ volatile(GK_KLOOP
                         GK_ST(16) GK_ST(17) GK_ST(18) GK_ST(19) GK_ST(20) GK_ST(21)
                         GK_ST(22) GK_ST(23) GK_ST(24) GK_ST(25) GK_ST(26) GK_ST(27)
                         GK_ST(28) GK_ST(29) GK_ST(30) GK_ST(31)
                         : [pa] "+r"(pa), [pb] "+r"(pb)
                         : [pe] "r"(pe), [outp] "r"(outp)
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm16", "xmm17", "xmm18", "xmm19",
                           "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
                           "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc", "memory");
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++)
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                acc[i][v] = t[i * GK_AVX512VNNI_NV + v];
    }
#undef GK_Z
#undef GK_ROW
#undef GK_KLOOP
#undef GK_ADDROW
#undef GK_OUTROW
#undef GK_ST
#else
    GK_UNROLL(8)
    for (int i = 0; i < GK_AVX512VNNI_MR; i++)
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            acc[i][v] = _mm512_setzero_si512();
    for (int g = 0; g < ng; g++) {
        __m512i b[GK_AVX512VNNI_NV];
        GK_UNROLL(4)
        for (int v = 0; v < GK_AVX512VNNI_NV; v++)
            b[v] = _mm512_loadu_si512(bp + (ptrdiff_t)g * GK_AVX512VNNI_NV + v);
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++) {
            __m512i av = _mm512_set1_epi32(ap[(ptrdiff_t)g * GK_AVX512VNNI_MR + i]);
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                GK_DPBUSD512(acc[i][v], av, b[v]);
        }
    }
#endif

    if (finishes && !gk_x86_epi_vector_ok(e)) {
        int32_t t[GK_AVX512VNNI_MR * GK_AVX512VNNI_NR];
        for (int i = 0; i < GK_AVX512VNNI_MR; i++)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                _mm512_storeu_si512((void *)(t + i * GK_AVX512VNNI_NR + 16 * v), acc[i][v]);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, GK_AVX512VNNI_NR);
        return;
    }
    __mmask16 mk[GK_AVX512VNNI_NV];
    GK_UNROLL(4)
    for (int v = 0; v < GK_AVX512VNNI_NV; v++)
        mk[v] = gk_qepi_zmm_mask(nr_valid - 16 * v);
    if (mode != GK_QPART_NONE) {
        GK_UNROLL(8)
        for (int i = 0; i < GK_AVX512VNNI_MR; i++) {
            if (i < mr_valid) {
                GK_UNROLL(4)
                for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                    if (mk[v])
                        (void)gk_qepi_zmm_part(e, m0 + i, n0 + 16 * v, &acc[i][v], mk[v]);
            }
        }
        if (!finishes)
            return;
    }
    if (mr_valid == GK_AVX512VNNI_MR && nr_valid == GK_AVX512VNNI_NR) {
        gk_avx512vnni_tile_epilogue(e, m0, n0, acc);
        return;
    }
    __m512i cc[GK_AVX512VNNI_NV], bzp[GK_AVX512VNNI_NV];
    GK_UNROLL(4)
    for (int v = 0; v < GK_AVX512VNNI_NV; v++) {
        bzp[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_zp + n0 + 16 * v);
        cc[v] = _mm512_maskz_loadu_epi32(mk[v], e->b_colcorr + n0 + 16 * v);
    }
    GK_UNROLL(8)
    for (int i = 0; i < GK_AVX512VNNI_MR; i++) {
        if (i < mr_valid) {
            GK_UNROLL(4)
            for (int v = 0; v < GK_AVX512VNNI_NV; v++)
                if (mk[v])
                    gk_qepi_zmm_dot(e, m0 + i, n0 + 16 * v, acc[i][v], bzp[v], cc[v], mk[v]);
        }
    }
}

#undef GK_DPBUSD512

/* ---------------------------------------------------------------- small M */

#define GK_SMQ_W 64
#define GK_SMQ_DPBUSD(acc, u8, s8) _mm512_dpbusd_epi32(acc, u8, s8)
#if GK_GCC && GK_GNU_ASM /* gcc 12 copies intrinsic accumulators (see the micro-kernel) */
#define GK_SMQ_DPBUSD_TO(acc, x, y) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(y))
#endif
#define GK_SMQ_NAME gk_qgemm_u8s8_avx512vnni_smallm
#include "gk_qsmallm_quad.inc"

/* ---------------------------------------------------------------- tall */

#define GK_QT_NAME gk_qgemm_u8s8_avx512vnni_tall
#include "gk_qtall_zmm.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_avx512vnni = {
    "avx512vnni", GK_AVX512VNNI_MR, GK_AVX512VNNI_NR, 4, 1, 1,
    gk_qgemm_u8s8_avx512vnni_pack_a, gk_qgemm_u8s8_avx512vnni_pack_b,
    gk_qgemm_u8s8_avx512vnni_8x32_ukernel, GK_X86_SMALLM_MAX, gk_qgemm_u8s8_avx512vnni_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
    1,          /* packed_min_m: partial tiles compute only their rows */
    GK_X86_SMALLM_WIDE_MAX, /* smallm_wide_max: the staged small-M path */
    GK_AVX512VNNI_B_PANEL_PAD, /* b_panel_pad: see its definition */
    0,    /* kc_deep: kc throughout */
    NULL, /* ucolumn: one ukernel call per tile */
    gk_qgemm_u8s8_avx512vnni_tall, gk_x86_tall_takes_vnni,
    4,    /* slow_l3_block_div: quarter-L2 blocks on a slow L3 (gk_qgemm_blocking_of) */
};
