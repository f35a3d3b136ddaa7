/* int8 GEMM, AVX-VNNI (VEX-encoded vpdpbusd on ymm, 16 registers): u8 x s8, four
 * products summed exactly in int32, then a wrapping int32 add (never vpdpbusds).
 *
 * Tile MR x NR = 4 x 24: 12 ymm accumulators (> 5-cycle latency x 2 issues/cycle),
 * 3 B registers, 1 broadcast.  kstep 4, one byte per element, the panel layout of
 * gk_qgemm_x86_common.h (same packers as the AVX-512 VNNI family).  Partial tiles go
 * through a stack tile and the scalar epilogue (no byte masks before AVX-512).
 *
 * Read top to bottom: the packers (gk_qpack_quad.inc in VEX encoding), the micro-kernel
 * (gk_qukernel_ymm.inc with this family's k-loop, epilogue gk_qepi_x86.inc at 8 lanes),
 * the small-M path (gk_qsmallm_quad.inc on ymm), the family's table entry. */
#include <immintrin.h>

#include "gk_qgemm_x86_common.h"

/* ---------------------------------------------------------------- packing, micro-kernel */

#define GK_QPACK_DPBUSD128(acc, u8, s8) _mm_dpbusd_avx_epi32(acc, u8, s8)
#define GK_QPACK_ZMM 0
#include "gk_qpack_quad.inc" /* gk_x86_pack_quad */

#define GK_UK_MR 4
#define GK_UK_NV 3
#define GK_UK_KSTEP 4
/* B panels unpadded: not measured on an AVX-VNNI machine (gk_x86_pack_quad has no pad) */
#define GK_UK_B_PANEL_PAD 0
#define GK_UK_PACK(s, sl, sd, x, sgn, R, n, k, dst, sums, pad) \
    gk_x86_pack_quad(s, sl, sd, x, sgn, R, n, k, dst, sums)
#define GK_UK_MAC(acc, a, b) ((acc) = _mm256_dpbusd_avx_epi32((acc), (a), (b)))
#define GK_UK_PACK_A gk_qgemm_u8s8_avxvnni_pack_a
#define GK_UK_PACK_B gk_qgemm_u8s8_avxvnni_pack_b
#define GK_UK_UKERNEL gk_qgemm_u8s8_avxvnni_4x24_ukernel
/* Accumulator (row i, vector v) in ymm(4 + 3i + v); B in ymm0-2; A broadcast in ymm3. */
#define GK_VZ(r) "vpxor %%ymm" #r ", %%ymm" #r ", %%ymm" #r "\n\t"
#define GK_VROW(i, c)                                                                       \
    "vpbroadcastd " #i "*4(%[pa]), %%ymm3\n\t"                                              \
    "%{vex%} vpdpbusd %%ymm0, %%ymm3, %%ymm" #c "\n\t"                                        \
    "%{vex%} vpdpbusd %%ymm1, %%ymm3, %%ymm" GK_STR(GK_ADD1_##c) "\n\t"                       \
    "%{vex%} vpdpbusd %%ymm2, %%ymm3, %%ymm" GK_STR(GK_ADD2_##c) "\n\t"
#define GK_STR_(x) #x
#define GK_STR(x) GK_STR_(x)
#define GK_ADD1_4 5
#define GK_ADD2_4 6
#define GK_ADD1_7 8
#define GK_ADD2_7 9
#define GK_ADD1_10 11
#define GK_ADD2_10 12
#define GK_ADD1_13 14
#define GK_ADD2_13 15
/* After the loop: rows (c, c+1, c+2) += the part sums at addp (when given), then stored
 * to outp (when given) or to t at fixed offsets (see the avx2 family). */
#define GK_VT(r) "vmovdqu %%ymm" #r ", (" #r "-4)*32(%[t])\n\t"
#define GK_VADD(c)                                                                          \
    "vpaddd (%[addp]), %%ymm" #c ", %%ymm" #c "\n\t"                                        \
    "vpaddd 32(%[addp]), %%ymm" GK_STR(GK_ADD1_##c) ", %%ymm" GK_STR(GK_ADD1_##c) "\n\t"    \
    "vpaddd 64(%[addp]), %%ymm" GK_STR(GK_ADD2_##c) ", %%ymm" GK_STR(GK_ADD2_##c) "\n\t"    \
    "add %[ld_add], %[addp]\n\t"
#define GK_VST(c)                                                                           \
    "vmovdqu %%ymm" #c ", (%[outp])\n\t"                                                    \
    "vmovdqu %%ymm" GK_STR(GK_ADD1_##c) ", 32(%[outp])\n\t"                                 \
    "vmovdqu %%ymm" GK_STR(GK_ADD2_##c) ", 64(%[outp])\n\t"                                 \
    "add %[ld_out], %[outp]\n\t"
#define GK_UK_ASM_LOOP(pa, pb, pe, addp, ld_add, outp, ld_out, t)                           \
    __asm__ volatile(GK_VZ(4) GK_VZ(5) GK_VZ(6) GK_VZ(7) GK_VZ(8) GK_VZ(9) GK_VZ(10)        \
                     GK_VZ(11) GK_VZ(12) GK_VZ(13) GK_VZ(14) GK_VZ(15)                      \
                     "cmp %[pa], %[pe]\n\t"                                                 \
                     "je 2f\n\t"                                                            \
                     ".p2align 6\n\t"                                                        \
                     "1:\n\t"                                                               \
                     "vmovdqu (%[pb]), %%ymm0\n\t"                                          \
                     "vmovdqu 32(%[pb]), %%ymm1\n\t"                                        \
                     "vmovdqu 64(%[pb]), %%ymm2\n\t"                                        \
                     GK_VROW(0, 4) GK_VROW(1, 7) GK_VROW(2, 10) GK_VROW(3, 13)              \
                     "add $16, %[pa]\n\t"                                                   \
                     "add $96, %[pb]\n\t"                                                   \
                     "cmp %[pa], %[pe]\n\t"                                                 \
                     "jne 1b\n\t"                                                           \
                     "2:\n\t"                                                               \
                     "test %[addp], %[addp]\n\t"                                            \
                     "jz 3f\n\t"                                                            \
                     GK_VADD(4) GK_VADD(7) GK_VADD(10) GK_VADD(13)                          \
                     "3:\n\t"                                                               \
                     "test %[outp], %[outp]\n\t"                                            \
                     "jz 4f\n\t"                                                            \
                     GK_VST(4) GK_VST(7) GK_VST(10) GK_VST(13)                              \
                     "jmp 5f\n\t"                                                           \
                     "4:\n\t"                                                               \
                     GK_VT(4) GK_VT(5) GK_VT(6) GK_VT(7) GK_VT(8) GK_VT(9) GK_VT(10)        \
                     GK_VT(11) GK_VT(12) GK_VT(13) GK_VT(14) GK_VT(15)                      \
                     "5:\n\t"                                                               \
                     : [pa] "+r"(pa), [pb] "+r"(pb), [addp] "+r"(addp), [outp] "+r"(outp)   \
                     : [pe] "r"(pe), [ld_add] "r"(ld_add), [ld_out] "r"(ld_out), [t] "r"(t) \
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",      \
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",        \
                       "xmm15", "cc", "memory")

#include "gk_qukernel_ymm.inc"
#undef GK_VZ
#undef GK_VROW
#undef GK_STR_
#undef GK_STR
#undef GK_ADD1_4
#undef GK_ADD2_4
#undef GK_ADD1_7
#undef GK_ADD2_7
#undef GK_ADD1_10
#undef GK_ADD2_10
#undef GK_ADD1_13
#undef GK_ADD2_13
#undef GK_VADD
#undef GK_VST
#undef GK_VT

/* ---------------------------------------------------------------- small M */

#define GK_SMQ_W 32
#define GK_SMQ_DPBUSD(acc, u8, s8) _mm256_dpbusd_avx_epi32(acc, u8, s8)
#if GK_GCC && GK_GNU_ASM /* gcc 12 copies intrinsic accumulators (see the micro-kernel) */
#define GK_SMQ_DPBUSD_TO(acc, x, y) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(x), "x"(y))
#endif
#define GK_SMQ_NAME gk_qgemm_u8s8_avxvnni_smallm
#include "gk_qsmallm_quad.inc"

const gk_qgemm_kernel gk_qgemm_u8s8_avxvnni = {
    "avxvnni", 4, 24, 4, 1, 1,
    gk_qgemm_u8s8_avxvnni_pack_a, gk_qgemm_u8s8_avxvnni_pack_b, gk_qgemm_u8s8_avxvnni_4x24_ukernel,
    GK_X86_SMALLM_MAX, gk_qgemm_u8s8_avxvnni_smallm,
    NULL, NULL, /* begin, end: none */
    0,          /* kc: from the tile and L1 (gk_qgemm_kc) */
};
