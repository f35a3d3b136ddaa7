/* int8 GEMM, AVX2 without VNNI: exact.  Never vpmaddubsw (it adds two u8 x s8 products
 * in an int16 lane and saturates: 255 * 127 * 2 > 32767).  Instead a' and b' are widened
 * to int16 when packing and vpmaddwd multiplies int16 pairs and adds the two products in
 * int32 (|sum| <= 2 * 255 * 128: exact); vpaddd then wraps mod 2^32 like ONNX.
 *
 * Tile MR x NR = 4 x 16: 8 ymm accumulators (the only loop-carried dependence is the
 * 1-cycle vpaddd), 2 B registers, broadcasts of a' pairs.  kstep 2, two bytes per
 * element, panel layout of gk_qgemm_x86_common.h:
 *   A panel: per k-pair g, MR int32 words = (a'[i, 2g], a'[i, 2g+1]) as int16
 *   B panel: per k-pair g, NR int32 words = (b'[2g, j], b'[2g+1, j]) as int16
 * Partial tiles go through a stack tile and the scalar epilogue. */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"
#include "gk_qepi_avx2.h"
#include "gk_qpack_pair.h"

#define MR 4
#define NV 2
#define NR (8 * NV)

static void pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs, uint8_t a_xor,
                   void *dst, int32_t *rowsum)
{
    gk_x86_pack_pair(a, rs, cs, a_xor, 0, MR, mc, k, dst, rowsum);
}

static void pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs, uint8_t b_xor,
                   void *dst, int32_t *colsum)
{
    gk_x86_pack_pair(b, cs, rs, b_xor, 1, NR, nc, k, dst, colsum);
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

    int ng = kp / 2;
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
                acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(av, b[v]));
        }
    }

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

const gk_qgemm_kernel gk_qgemm_u8s8_avx2 = {
    "avx2", MR, NR, 2, 2, 2, pack_a, pack_b, ukernel, 0, 0,
};
