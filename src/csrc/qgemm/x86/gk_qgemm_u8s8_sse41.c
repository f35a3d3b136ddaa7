/* int8 GEMM, SSE4.1: exact.  Never pmaddubsw (saturating int16 pair sums); a' and b' are
 * widened to int16 when packing and pmaddwd adds two exact int16 products in int32
 * (|sum| <= 2 * 255 * 128); paddd then wraps mod 2^32 like ONNX.
 *
 * Tile MR x NR = 4 x 8: 8 xmm accumulators, 2 B registers, the 4 rows' a' pairs of a
 * k-pair loaded as one xmm and broadcast with pshufd (SSE has no broadcast load).
 * kstep 2, two bytes per element, the same panel layout as the AVX2 family (MR = 4).
 * Partial tiles go through a stack tile and the scalar epilogue.
 *
 * Read top to bottom: the epilogue (gk_qepi_x86.inc at 4 lanes), the packers
 * (gk_qpack_pair.h), the micro-kernel, the small-M path (gk_qsmallm_pair.inc), the
 * family's table entry. */
#include <smmintrin.h>

#include "gk_qgemm_x86_common.h"
#include "gk_qpack_pair.h"

#define GK_EPI_LANES 4
#include "gk_qepi_x86.inc" /* gk_qepi_xmm_dot, gk_qepi_xmm_tile_requant */

#define GK_SSE41_MR 4
#define GK_SSE41_NR 8
/* Packed B panels 128 bytes apart beyond their 8 kp int16 pairs (gk_qgemm_kernel.
 * b_panel_pad): with kp a multiple of 256 a panel is a multiple of 4 KiB, and the
 * row-major packer's stores into nc / 8 panels per k-pair would share one L1 set. */
#define GK_SSE41_B_PANEL_PAD 128

static void gk_qgemm_u8s8_sse41_pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs,
                                       uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_x86_pack_pair(a, rs, cs, a_xor, 0, GK_SSE41_MR, mc, k, dst, rowsum, 0);
}

static void gk_qgemm_u8s8_sse41_pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs,
                                       uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_x86_pack_pair(b, cs, rs, b_xor, 1, GK_SSE41_NR, nc, k, dst, colsum, GK_SSE41_B_PANEL_PAD);
}

static void gk_qgemm_u8s8_sse41_4x8_ukernel(int mr_valid, int nr_valid, int kp, const void *a_panel,
                                             const void *b_panel, const gk_qepi *e, int m0, int n0)
{
    const __m128i *ap = (const __m128i *)a_panel;
    const __m128i *bp = (const __m128i *)b_panel;
    __m128i c00 = _mm_setzero_si128(), c01 = c00, c10 = c00, c11 = c00;
    __m128i c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    int ng = kp / 2;
    for (int g = 0; g < ng; g++) {
        __m128i a = _mm_loadu_si128(ap + g);
        __m128i b0 = _mm_loadu_si128(bp + 2 * (ptrdiff_t)g), b1 = _mm_loadu_si128(bp + 2 * (ptrdiff_t)g + 1);
        __m128i a0 = _mm_shuffle_epi32(a, 0x00), a1 = _mm_shuffle_epi32(a, 0x55);
        __m128i a2 = _mm_shuffle_epi32(a, 0xAA), a3 = _mm_shuffle_epi32(a, 0xFF);
        c00 = _mm_add_epi32(c00, _mm_madd_epi16(a0, b0));
        c01 = _mm_add_epi32(c01, _mm_madd_epi16(a0, b1));
        c10 = _mm_add_epi32(c10, _mm_madd_epi16(a1, b0));
        c11 = _mm_add_epi32(c11, _mm_madd_epi16(a1, b1));
        c20 = _mm_add_epi32(c20, _mm_madd_epi16(a2, b0));
        c21 = _mm_add_epi32(c21, _mm_madd_epi16(a2, b1));
        c30 = _mm_add_epi32(c30, _mm_madd_epi16(a3, b0));
        c31 = _mm_add_epi32(c31, _mm_madd_epi16(a3, b1));
    }
    /* STORE / ACC blocks never requantize: any multiplier strides will do */
    const int finishes = e->part_mode == GK_QPART_NONE || e->part_mode == GK_QPART_FINISH;
    if (mr_valid < GK_SSE41_MR || nr_valid < GK_SSE41_NR || (finishes && !gk_x86_epi_vector_ok(e))) {
        int32_t t[GK_SSE41_MR * GK_SSE41_NR];
        _mm_storeu_si128((__m128i *)(t + 0), c00);
        _mm_storeu_si128((__m128i *)(t + 4), c01);
        _mm_storeu_si128((__m128i *)(t + 8), c10);
        _mm_storeu_si128((__m128i *)(t + 12), c11);
        _mm_storeu_si128((__m128i *)(t + 16), c20);
        _mm_storeu_si128((__m128i *)(t + 20), c21);
        _mm_storeu_si128((__m128i *)(t + 24), c30);
        _mm_storeu_si128((__m128i *)(t + 28), c31);
        gk_x86_tile_store_scalar(e, m0, n0, mr_valid, nr_valid, t, GK_SSE41_NR);
        return;
    }
    if (e->part_mode != GK_QPART_NONE) {
        (void)gk_qepi_xmm_part(e, m0, n0, &c00);
        (void)gk_qepi_xmm_part(e, m0, n0 + 4, &c01);
        (void)gk_qepi_xmm_part(e, m0 + 1, n0, &c10);
        (void)gk_qepi_xmm_part(e, m0 + 1, n0 + 4, &c11);
        (void)gk_qepi_xmm_part(e, m0 + 2, n0, &c20);
        (void)gk_qepi_xmm_part(e, m0 + 2, n0 + 4, &c21);
        (void)gk_qepi_xmm_part(e, m0 + 3, n0, &c30);
        (void)gk_qepi_xmm_part(e, m0 + 3, n0 + 4, &c31);
        if (!finishes)
            return;
    }
    if (e->kind != GK_QOUT_I32 && e->mult_rs == 0 && e->yzp_rs == 0) {
        const __m128i acc[GK_SSE41_MR * 2] = {c00, c01, c10, c11, c20, c21, c30, c31};
        gk_qepi_xmm_tile_requant(e, m0, n0, GK_SSE41_MR, 2, acc);
        return;
    }
    __m128i z0 = _mm_loadu_si128((const __m128i *)(e->b_zp + n0));
    __m128i z1 = _mm_loadu_si128((const __m128i *)(e->b_zp + n0 + 4));
    __m128i k0 = _mm_loadu_si128((const __m128i *)(e->b_colcorr + n0));
    __m128i k1 = _mm_loadu_si128((const __m128i *)(e->b_colcorr + n0 + 4));
    gk_qepi_xmm_dot(e, m0, n0, c00, z0, k0);
    gk_qepi_xmm_dot(e, m0, n0 + 4, c01, z1, k1);
    gk_qepi_xmm_dot(e, m0 + 1, n0, c10, z0, k0);
    gk_qepi_xmm_dot(e, m0 + 1, n0 + 4, c11, z1, k1);
    gk_qepi_xmm_dot(e, m0 + 2, n0, c20, z0, k0);
    gk_qepi_xmm_dot(e, m0 + 2, n0 + 4, c21, z1, k1);
    gk_qepi_xmm_dot(e, m0 + 3, n0, c30, z0, k0);
    gk_qepi_xmm_dot(e, m0 + 3, n0 + 4, c31, z1, k1);
}

/* ---------------------------------------------------------------- small M */

#define GK_SMP_W 8
#define GK_SMP_NAME gk_qgemm_u8s8_sse41_smallm
#include "gk_qsmallm_pair.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_sse41 = {
    "sse41", GK_SSE41_MR, GK_SSE41_NR, 2, 2, 2,
    gk_qgemm_u8s8_sse41_pack_a, gk_qgemm_u8s8_sse41_pack_b, gk_qgemm_u8s8_sse41_4x8_ukernel,
    GK_X86_SMALLM_MAX, gk_qgemm_u8s8_sse41_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
    0,          /* packed_min_m: the default */
    0,          /* smallm_wide_max: none */
    GK_SSE41_B_PANEL_PAD, /* b_panel_pad: see its definition */
};
