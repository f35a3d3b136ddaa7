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

/* The 32 x 32 register tile both AMX families run: 2 x 2 accumulator tiles of 16 x 16
 * 4-byte sums, tmm4 rows 0..15 x columns 0..15, tmm5 columns 16..31, tmm6 / tmm7 rows
 * 16..31; c an int32_t* / float* to its element (0, 0), ld its row stride in elements. */
#define GK_AMX_ACC_ZERO()                                                                   \
    do {                                                                                    \
        _tile_zero(4);                                                                      \
        _tile_zero(5);                                                                      \
        _tile_zero(6);                                                                      \
        _tile_zero(7);                                                                      \
    } while (0)
/* OP(tile, address, stride in bytes) on each accumulator tile */
#define GK_AMX_ACC_EACH(OP, c, ld)                                                          \
    do {                                                                                    \
        OP(4, (c), (ld) * 4);                                                               \
        OP(5, (c) + 16, (ld) * 4);                                                          \
        OP(6, (c) + 16 * (ld), (ld) * 4);                                                   \
        OP(7, (c) + 16 * (ld) + 16, (ld) * 4);                                              \
    } while (0)
#define GK_AMX_ACC_LOAD(c, ld) GK_AMX_ACC_EACH(GK_TILE_LOADD, c, ld)
#define GK_AMX_ACC_STORE(c, ld) GK_AMX_ACC_EACH(GK_TILE_STORED, c, ld)

/* Their k-loop: nb >= 1 blocks of 2 KB of a 32-row A panel (tiles tmm0..1: rows 0..15 at
 * +0, rows 16..31 at +1024, row stride 64) and of a 32-column B panel (tmm2..3: columns
 * 0..15 at +0, 16..31 at +64, row stride 128), pa / pb (const char *) advancing; DP(c, a,
 * b) is the tile dot product (_tile_dpbusd, _tile_dpbf16ps).  A panels are streamed (each
 * is read by one call per B panel, from L2): tileloaddt1 keeps them from evicting the B
 * micro-panel the driver's consecutive calls reuse from L1 (int8, 1024^3: +20% over
 * tileloadd).  Tile registers are not renamed -- a tileloadd into a tile waits until every
 * earlier dot product reading it is done -- so the loop is software-pipelined: the next
 * block's A0 / B0 load as soon as their last reader of this block has issued, A1 / B1
 * after the last dot product. */
#define GK_AMX_2X2_KLOOP(DP, pa, pb, nb) GK_AMX_2X2_KLOOP_HOOK(DP, pa, pb, nb, (void)0)
/* The same with HOOK (a statement, no tile instructions) run once per block after its
 * loads have issued, nb - 1 times in all: vector work the core does while the tile unit
 * computes (the int8 family finishes the previous tile's epilogue there). */
#define GK_AMX_2X2_KLOOP_HOOK(DP, pa, pb, nb, HOOK)                                         \
    do {                                                                                    \
        GK_TILE_STREAM_LOADD(0, (pa), 64);                                                  \
        GK_TILE_LOADD(2, (pb), 128);                                                        \
        GK_TILE_LOADD(3, (pb) + 64, 128);                                                   \
        GK_TILE_STREAM_LOADD(1, (pa) + 1024, 64);                                           \
        for (int b_ = 1; b_ < (nb); b_++) {                                                 \
            (pa) += 2048;                                                                   \
            (pb) += 2048;                                                                   \
            DP(4, 0, 2);                                                                    \
            DP(5, 0, 3);                                                                    \
            GK_TILE_STREAM_LOADD(0, (pa), 64);                                              \
            DP(6, 1, 2);                                                                    \
            GK_TILE_LOADD(2, (pb), 128);                                                    \
            DP(7, 1, 3);                                                                    \
            GK_TILE_STREAM_LOADD(1, (pa) + 1024, 64);                                       \
            GK_TILE_LOADD(3, (pb) + 64, 128);                                               \
            HOOK;                                                                           \
        }                                                                                   \
        DP(4, 0, 2);                                                                        \
        DP(5, 0, 3);                                                                        \
        DP(6, 1, 2);                                                                        \
        DP(7, 1, 3);                                                                        \
    } while (0)

#endif
