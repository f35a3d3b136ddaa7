/* Every int8 kernel family that may be compiled in.  Each is defined in its own ISA file
 * (src/csrc/qgemm/x86/gk_qgemm_u8s8_<isa>.c, src/csrc/qgemm/arm/...) and listed by the dispatcher
 * only when the build defined GK_HAVE_<ISA>.
 *
 * Symbol names carry op, types, ISA and tile, so a profile tells the paths apart:
 *     gk_qgemm_u8s8_<isa>                     the family (this table entry)
 *     gk_qgemm_u8s8_<isa>_pack_a, _pack_b     its packers (static)
 *     gk_qgemm_u8s8_<isa>_<MR>x<NR>_ukernel   its micro-kernel (static)
 *     gk_qgemm_u8s8_<isa>_smallm              its small-M path (static)
 *     gk_qgemm_u8s8_amx_begin, _end           AMX tile configuration (static)
 * Code stamped out per ISA or width lives in .inc templates next to the family files
 * (GK_-prefixed parameters, #error when one is missing, #undef'd at the end). */
#ifndef GEMMKIT_GK_KERNELS_H
#define GEMMKIT_GK_KERNELS_H

#include "gk_qgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const gk_qgemm_kernel gk_qgemm_u8s8_scalar;
extern const gk_qgemm_kernel gk_qgemm_u8s8_sse41;
extern const gk_qgemm_kernel gk_qgemm_u8s8_avx2;
extern const gk_qgemm_kernel gk_qgemm_u8s8_avxvnni;
extern const gk_qgemm_kernel gk_qgemm_u8s8_avx512vnni;
extern const gk_qgemm_kernel gk_qgemm_u8s8_amx;
extern const gk_qgemm_kernel gk_qgemm_u8s8_neon;
extern const gk_qgemm_kernel gk_qgemm_u8s8_neondot;
extern const gk_qgemm_kernel gk_qgemm_u8s8_i8mm;

#ifdef __cplusplus
}
#endif
#endif
