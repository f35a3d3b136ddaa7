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
 * Partial tiles go through a stack tile and the scalar epilogue.
 *
 * Read top to bottom: the packers and micro-kernel (gk_qpack_pair.h, gk_qukernel_ymm.inc
 * with this family's k-loop, epilogue gk_qepi_x86.inc at 8 lanes), the small-M path
 * (gk_qsmallm_pair.inc), the tall route (gk_qtall_pair.inc: many rows against a small
 * B, A read in place), the family's table entry. */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"
#include "gk_qpack_pair.h"

/* ---------------------------------------------------------------- packing, micro-kernel */

#define GK_UK_MR 4
#define GK_UK_NV 2
#define GK_UK_KSTEP 2
/* Packed B panels 128 bytes apart beyond their 16 kp int16 pairs (gk_qgemm_kernel.
 * b_panel_pad): with kp a multiple of 128 (kc = 512) a panel is a multiple of 4 KiB, so the
 * row-major packer's stores into nc / 16 panels per k-pair all fall into one L1 set.
 * Whole calls with the row-major packer of gk_qpack_pair.h (Zen 4, this path forced, one
 * thread, alternating processes): 64 / 128 x 4096^2 1.18x / 1.08x, 128 x 768^2 1.08x,
 * QLinearMatMul 128 x 768^2 1.07x, 512 x 768 x 3072 1.02x, 1024^3 1.02x. */
#define GK_AVX2_B_PANEL_PAD 128
#define GK_UK_B_PANEL_PAD GK_AVX2_B_PANEL_PAD
#define GK_UK_PACK gk_x86_pack_pair
#define GK_UK_MAC(acc, a, b) ((acc) = _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b))))
#define GK_UK_PACK_A gk_qgemm_u8s8_avx2_pack_a
#define GK_UK_PACK_B gk_qgemm_u8s8_avx2_pack_b
#define GK_UK_UKERNEL gk_qgemm_u8s8_avx2_4x16_ukernel
/* Accumulator (row i, vector v) in ymm(8 + 2i + v); B in ymm0-1; A pair broadcast in
 * ymm2; products in ymm3-4 (vpmaddwd: two exact int16 products per int32 lane). */
#define GK_VZ(r) "vpxor %%ymm" #r ", %%ymm" #r ", %%ymm" #r "\n\t"
#define GK_VROW(i, c0, c1)                                                                  \
    "vpbroadcastd " #i "*4(%[pa]), %%ymm2\n\t"                                              \
    "vpmaddwd %%ymm0, %%ymm2, %%ymm3\n\t"                                                   \
    "vpmaddwd %%ymm1, %%ymm2, %%ymm4\n\t"                                                   \
    "vpaddd %%ymm3, %%ymm" #c0 ", %%ymm" #c0 "\n\t"                                         \
    "vpaddd %%ymm4, %%ymm" #c1 ", %%ymm" #c1 "\n\t"
/* After the loop: rows (c0, c1) += the part sums at addp (when given), then stored to
 * outp (when given) or to t (fixed offsets: a chain of pointer adds there made the
 * epilogue's reloads of t late, -10% at 64^3). */
#define GK_VT(r) "vmovdqu %%ymm" #r ", (" #r "-8)*32(%[t])\n\t"
#define GK_VADD(c0, c1)                                                                     \
    "vpaddd (%[addp]), %%ymm" #c0 ", %%ymm" #c0 "\n\t"                                      \
    "vpaddd 32(%[addp]), %%ymm" #c1 ", %%ymm" #c1 "\n\t"                                    \
    "add %[ld_add], %[addp]\n\t"
#define GK_VST(c0, c1)                                                                      \
    "vmovdqu %%ymm" #c0 ", (%[outp])\n\t"                                                   \
    "vmovdqu %%ymm" #c1 ", 32(%[outp])\n\t"                                                 \
    "add %[ld_out], %[outp]\n\t"
#define GK_UK_ASM_LOOP(pa, pb, pe, addp, ld_add, outp, ld_out, t)                           \
    __asm__ volatile(GK_VZ(8) GK_VZ(9) GK_VZ(10) GK_VZ(11) GK_VZ(12) GK_VZ(13) GK_VZ(14)    \
                     GK_VZ(15)                                                              \
                     "cmp %[pa], %[pe]\n\t"                                                 \
                     "je 2f\n\t"                                                            \
                     ".p2align 6\n\t"                                                        \
                     "1:\n\t"                                                               \
                     "vmovdqu (%[pb]), %%ymm0\n\t"                                          \
                     "vmovdqu 32(%[pb]), %%ymm1\n\t"                                        \
                     GK_VROW(0, 8, 9) GK_VROW(1, 10, 11) GK_VROW(2, 12, 13)                 \
                     GK_VROW(3, 14, 15)                                                     \
                     "add $16, %[pa]\n\t"                                                   \
                     "add $64, %[pb]\n\t"                                                   \
                     "cmp %[pa], %[pe]\n\t"                                                 \
                     "jne 1b\n\t"                                                           \
                     "2:\n\t"                                                               \
                     "test %[addp], %[addp]\n\t"                                            \
                     "jz 3f\n\t"                                                            \
                     GK_VADD(8, 9) GK_VADD(10, 11) GK_VADD(12, 13) GK_VADD(14, 15)          \
                     "3:\n\t"                                                               \
                     "test %[outp], %[outp]\n\t"                                            \
                     "jz 4f\n\t"                                                            \
                     GK_VST(8, 9) GK_VST(10, 11) GK_VST(12, 13) GK_VST(14, 15)              \
                     "jmp 5f\n\t"                                                           \
                     "4:\n\t"                                                               \
                     GK_VT(8) GK_VT(9) GK_VT(10) GK_VT(11) GK_VT(12) GK_VT(13) GK_VT(14)    \
                     GK_VT(15)                                                              \
                     "5:\n\t"                                                               \
                     : [pa] "+r"(pa), [pb] "+r"(pb), [addp] "+r"(addp), [outp] "+r"(outp)   \
                     : [pe] "r"(pe), [ld_add] "r"(ld_add), [ld_out] "r"(ld_out), [t] "r"(t) \
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm8", "xmm9", "xmm10",     \
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory")
#include "gk_qukernel_ymm.inc"
#undef GK_VZ
#undef GK_VROW
#undef GK_VADD
#undef GK_VST
#undef GK_VT

/* ---------------------------------------------------------------- small M */

#define GK_SMP_W 16
#define GK_SMP_NAME gk_qgemm_u8s8_avx2_smallm
#include "gk_qsmallm_pair.inc"

/* ---------------------------------------------------------------- tall */

#define GK_Q2_NAME gk_qgemm_u8s8_avx2_tall
#include "gk_qtall_pair.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_avx2 = {
    "avx2", 4, 16, 2, 2, 2,
    gk_qgemm_u8s8_avx2_pack_a, gk_qgemm_u8s8_avx2_pack_b, gk_qgemm_u8s8_avx2_4x16_ukernel,
    GK_X86_SMALLM_MAX, gk_qgemm_u8s8_avx2_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
    0,          /* packed_min_m: the default */
    0,          /* smallm_wide_max: none */
    GK_AVX2_B_PANEL_PAD, /* b_panel_pad: see its definition */
    0,    /* kc_deep: none */
    NULL, /* ucolumn: none */
    gk_qgemm_u8s8_avx2_tall, gk_x86_tall_takes_avx2,
};
