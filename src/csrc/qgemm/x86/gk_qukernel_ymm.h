/* The packers and MR x (8 NV) micro-kernel of the ymm families without byte masks (avx2,
 * avxvnni): they differ only in the k-step instruction and its packing format.  Included
 * once by each family file, which first defines
 *   MR, NV            tile MR x NR, NR = 8 NV (MR * NV accumulators + NV B registers + 1
 *                     broadcast must fit the 16 ymm registers)
 *   GK_UK_KSTEP       depth values per int32 word of a panel (2: int16 pairs, 4: byte quads)
 *   GK_UK_PACK        gk_x86_pack_pair | gk_x86_pack_quad (the layout of GK_UK_KSTEP)
 *   GK_UK_MAC(acc, a, b)  acc += the exact dot of each int32 word of a and b, wrapping
 *                     mod 2^32 (vpmaddwd + vpaddd | vpdpbusd; never a saturating form)
 *   GK_UK_ASM_LOOP(pa, pb, pe, t)  optional (gcc, x86-64): the same k-loop as one asm
 *                     statement over [pa, pe), storing the MR*NV accumulators to t[i*NV+v]
 * Partial tiles and unusual epilogue strides go through a stack tile and the scalar
 * reference; full tiles through gk_epi_vec8_avx. */
#ifndef GEMMKIT_GK_QUKERNEL_YMM_H
#define GEMMKIT_GK_QUKERNEL_YMM_H

#include <immintrin.h>

#include "gk_qepi_avx2.h"

#define NR (8 * NV)

static void pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs, uint8_t a_xor,
                   void *dst, int32_t *rowsum)
{
    GK_UK_PACK(a, rs, cs, a_xor, 0, MR, mc, k, dst, rowsum);
}

static void pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs, uint8_t b_xor,
                   void *dst, int32_t *colsum)
{
    GK_UK_PACK(b, cs, rs, b_xor, 1, NR, nc, k, dst, colsum);
}

static void ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel, const void *b_panel,
                    const gk_qepi *e, int m0, int n0)
{
    const int32_t *ap = (const int32_t *)a_panel;
    const __m256i *bp = (const __m256i *)b_panel;
    __m256i acc[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = _mm256_setzero_si256();

    /* int32 lanes wrap mod 2^32 (ONNX's overflow); each word's dot is exact. */
    int ng = kp / GK_UK_KSTEP;
#if defined(GK_UK_ASM_LOOP) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    /* gcc 12 routes the accumulators of the intrinsic loop through scratch registers and
     * the stack; the family's asm loop keeps them pinned and stores the tile once. */
    if (ng > 0) {
        __m256i t[MR * NV];
        const int32_t *pa = ap, *pe = ap + (ptrdiff_t)ng * MR;
        const __m256i *pb = bp;
        GK_UK_ASM_LOOP(pa, pb, pe, t);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = t[i * NV + v];
    }
#else
#pragma GCC unroll 2
    for (int g = 0; g < ng; g++) {
        __m256i b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            b[v] = _mm256_loadu_si256(bp + (ptrdiff_t)g * NV + v);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m256i av = _mm256_set1_epi32(ap[(ptrdiff_t)g * MR + i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                GK_UK_MAC(acc[i][v], av, b[v]);
        }
    }
#endif

    if (mr_valid < MR || nr_valid < NR || !gk_x86_epi_vector_ok(e)) {
        int32_t t[MR * NR];
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < NV; v++)
                _mm256_storeu_si256((__m256i *)(t + i * NR + 8 * v), acc[i][v]);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, NR);
        return;
    }
    __m256i bzp[NV], cc[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        bzp[v] = _mm256_loadu_si256((const __m256i *)(e->b_zp + n0 + 8 * v));
        cc[v] = _mm256_loadu_si256((const __m256i *)(e->b_colcorr + n0 + 8 * v));
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            gk_epi_vec8_avx(e, m0 + i, n0 + 8 * v, acc[i][v], bzp[v], cc[v]);
}

#endif
