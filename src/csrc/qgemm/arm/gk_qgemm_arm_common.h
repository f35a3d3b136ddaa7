/* Conventions shared by the ARM64 int8 kernel families (gk_qgemm_u8s8_{neon,neondot,i8mm}.c)
 * and their helpers: gk_qpack_arm.h (packing), gk_qepi_neon.h (the fused epilogue),
 * gk_qsmallm_arm.inc (the small-M path, a template).
 *
 * Every helper is static inline and uses only baseline AdvSIMD (the small-M template's
 * UDOT variant excepted), so each family's translation unit instantiates its own copy
 * under its own -march flags.
 *
 * Conventions (see include/gemmkit/gk_qgemm.h for the canonical problem):
 *  - a' = A ^ a_xor (uint8), b' = B ^ b_xor (int8).
 *  - "Biased B" families (neon, neondot) store b'' = b' ^ 0x80 = b' + 128 as uint8 so that
 *    unsigned u8 x u8 products can be used.  Then sum_k a' b'' = sum_k a' b' + 128 rowsum(a')
 *    and the bias is removed in the epilogue by using zb + 128 in place of zb:
 *        dot - rowsum*(zb + 128) == sum a'b' - rowsum*zb      (mod 2^32).
 *  - All int32 sums wrap modulo 2^32 (AdvSIMD integer adds/multiplies are modular, and the
 *    C side uses uint32_t), which is exactly ONNX's int32 overflow.
 */
#ifndef GEMMKIT_GK_QGEMM_ARM_COMMON_H
#define GEMMKIT_GK_QGEMM_ARM_COMMON_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/gk_compiler.h"
#include "gemmkit/gk_qgemm.h"

#define GK_ARM_MIN(x, y) ((x) < (y) ? (x) : (y))

/* Rows of the small-M path (gk_qsmallm_arm.inc), every family's smallm_max. */
#define GK_ARM_SMALLM_MAX 4

#endif
