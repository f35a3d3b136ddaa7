/* What the AMX families share (int8: qgemm/x86/gk_qgemm_u8s8_amx.c, bfloat16:
 * gemm/x86/gk_gemm_bf16_amxbf16.c): the one tile configuration they run with and tile
 * load/store spellings that assemble on every target.  Include only from files built with
 * the AMX groups' flags. */
#ifndef GK_AMX_TILES_H
#define GK_AMX_TILES_H

#include <immintrin.h>
#include <stdint.h>

#include "core/gk_compiler.h"

/* Palette 1, tiles 0..7 all 16 rows x 64 bytes: 16 x 16 int32 / float32 accumulators,
 * 16 rows x 64 int8 / 32 bfloat16 A tiles, 16 k-groups x 16 columns B tiles.  A static
 * object, not a stack one: gcc 12's _tile_loadconfig declares only 8 bytes of its
 * 64-byte operand as read, so the stores of a local configuration can be eliminated as
 * dead.  Loading a configuration zeroes every tile: a family loads it once per thread and
 * call (its begin()), never between depth blocks. */
GK_ALIGNED(64) static const struct {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} gk_amx_cfg_16x64 = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

/* gcc's _tile_loadd / _tile_stream_loadd / _tile_stored (gcc 12) pass the stride as a
 * `long`, which is 32 bits on Windows (LLP64): mingw-w64 then emits an invalid
 * (%base, %e.., 1) address.  There, the same instructions with a 64-bit stride operand;
 * everywhere else the intrinsics themselves. */
#if GK_GCC && defined(_WIN32)
#define GK_TILE_LOADD(t, p, s)                                                             \
    __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm" #t "|tileloadd\t%%tmm" #t ", [%0+%1*1]}" \
                     ::"r"((const void *)(p)), "r"((long long)(s)))
#define GK_TILE_STREAM_LOADD(t, p, s)                                                      \
    __asm__ volatile("{tileloaddt1\t(%0,%1,1), %%tmm" #t "|tileloaddt1\t%%tmm" #t ", [%0+%1*1]}" \
                     ::"r"((const void *)(p)), "r"((long long)(s)))
#define GK_TILE_STORED(t, p, s)                                                            \
    __asm__ volatile("{tilestored\t%%tmm" #t ", (%0,%1,1)|tilestored\t[%0+%1*1], %%tmm" #t "}" \
                     ::"r"((void *)(p)), "r"((long long)(s))                               \
                     : "memory")
#else
#define GK_TILE_LOADD(t, p, s) _tile_loadd(t, p, s)
#define GK_TILE_STREAM_LOADD(t, p, s) _tile_stream_loadd(t, p, s)
#define GK_TILE_STORED(t, p, s) _tile_stored(t, p, s)
#endif

#endif
