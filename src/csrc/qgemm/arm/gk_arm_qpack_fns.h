/* pack_a / pack_b (gk_qpack_a_fn / gk_qpack_b_fn) of an ARM family, through
 * gk_arm_pack_panels.  Included once by each family file, which first defines MR, NR, KS
 * and GK_ARM_B_STORE_BIAS: 0x80 for the biased-B families (b'' = b' + 128 stored as
 * uint8, see gk_arm_qcommon.h), 0 for those that store b' itself.  Sums are of a' and b'
 * in either case. */
#ifndef GEMMKIT_GK_ARM_QPACK_FNS_H
#define GEMMKIT_GK_ARM_QPACK_FNS_H

#include "gk_arm_qcommon.h"

static void pack_a(int mc, int k, const uint8_t *a, ptrdiff_t rs, ptrdiff_t cs,
                   uint8_t a_xor, void *dst, int32_t *rowsum)
{
    gk_arm_pack_panels(mc, k, a, rs, cs, a_xor, a_xor, 0, MR, KS, (uint8_t *)dst, rowsum);
}

static void pack_b(int k, int nc, const uint8_t *b, ptrdiff_t rs, ptrdiff_t cs,
                   uint8_t b_xor, void *dst, int32_t *colsum)
{
    gk_arm_pack_panels(nc, k, b, cs, rs, (uint8_t)(b_xor ^ GK_ARM_B_STORE_BIAS), b_xor, 1, NR,
                       KS, (uint8_t *)dst, colsum);
}

#endif
