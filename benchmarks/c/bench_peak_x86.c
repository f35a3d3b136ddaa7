/* Issue-throughput peaks of the x86 int8 dot instructions, so that kernels can be quoted
 * as a % of what the core can do.  Written in inline asm so the compiler can neither
 * hoist nor spill: every loop keeps >= 8 independent accumulators (more than latency x
 * throughput).  Returns the number of int8 multiply-adds ("MACs") done; the caller runs a
 * function only where the CPU reports the ISA (these are never called elsewhere). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <stdint.h>

#define R8(s) s(0) s(1) s(2) s(3) s(4) s(5) s(6) s(7) s(8) s(9) s(10) s(11)

/* 12 vpdpbusd chains: 12 x (lanes x 4) MACs per iteration. */
#define DPB_Z(i) "vpdpbusd %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define DPB_Y(i) "vpdpbusd %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define DPB_V(i) "%{vex%} vpdpbusd %%ymm12, %%ymm13, %%ymm" #i "\n\t"
/* vpmaddwd into a temporary, vpaddd into one of 12 accumulators: lanes x 2 MACs each. */
#define MWD_Z(i) "vpmaddwd %%zmm12, %%zmm13, %%zmm14\n\tvpaddd %%zmm14, %%zmm" #i ", %%zmm" #i "\n\t"
#define MWD_Y(i) "vpmaddwd %%ymm12, %%ymm13, %%ymm14\n\tvpaddd %%ymm14, %%ymm" #i ", %%ymm" #i "\n\t"
#define MWD_X(i) "pmaddwd %%xmm13, %%xmm14\n\tpaddd %%xmm14, %%xmm" #i "\n\tmovdqa %%xmm12, %%xmm14\n\t"

/* Every loop on ymm/zmm ends in vzeroupper (the asm's clobbers do not tell the compiler
 * to): left dirty, the upper halves slow every legacy-SSE instruction after it in this
 * thread, the sse41 peak loop and gemmkit's forced sse41 path included (measured on Zen 5:
 * the xmm loop at 13 against 117 GOP/s after the ymm loop).  PEAK_ASM runs HEAD once,
 * then the loop of 12 BODYs, then TAIL: "" for the xmm loop, which must also run on CPUs
 * without AVX. */
#define VZU "\n\tvzeroupper"
#define PEAK_ASM(HEAD, BODY, TAIL)                                                          \
    long n = iters;                                                                         \
    __asm__ volatile(HEAD "1:\n\t" R8(BODY) "dec %0\n\tjnz 1b" TAIL : "+r"(n) : : ZCLOB, "cc");
#define PEAK_LOOP(BODY) PEAK_ASM("", BODY, VZU)

#define ZCLOB "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
              "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14"

int64_t gk_peak_dpbusd_zmm(long iters) { PEAK_LOOP(DPB_Z) return iters * 12 * 64; }
int64_t gk_peak_dpbusd_ymm_evex(long iters) { PEAK_LOOP(DPB_Y) return iters * 12 * 32; }
int64_t gk_peak_dpbusd_ymm_vex(long iters) { PEAK_LOOP(DPB_V) return iters * 12 * 32; }
int64_t gk_peak_maddwd_zmm(long iters) { PEAK_LOOP(MWD_Z) return iters * 12 * 32; }
int64_t gk_peak_maddwd_ymm(long iters) { PEAK_LOOP(MWD_Y) return iters * 12 * 16; }
int64_t gk_peak_maddwd_xmm(long iters) { PEAK_ASM("", MWD_X, "") return iters * 12 * 8; }

/* Float FMA peaks (Gemm's float32/float64 paths): 12 vfmadd231 chains, lanes MACs each
 * (a MAC = one multiply-add = 2 flops).  Zeroed first so no denormal/NaN slows them. */
#define FMA_ZERO_Z "vpxord %%zmm12, %%zmm12, %%zmm12\n\tvpxord %%zmm13, %%zmm13, %%zmm13\n\t"
#define FMA_ZERO_Y "vpxor %%ymm12, %%ymm12, %%ymm12\n\tvpxor %%ymm13, %%ymm13, %%ymm13\n\t"
#define FMAPS_Z(i) "vfmadd231ps %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define FMAPD_Z(i) "vfmadd231pd %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define FMAPS_Y(i) "vfmadd231ps %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define FMAPD_Y(i) "vfmadd231pd %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define FMA_PEAK_LOOP(ZERO, BODY) PEAK_ASM(ZERO, BODY, VZU)
int64_t gk_peak_fma_ps_zmm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Z, FMAPS_Z) return iters * 12 * 16; }
int64_t gk_peak_fma_pd_zmm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Z, FMAPD_Z) return iters * 12 * 8; }
int64_t gk_peak_fma_ps_ymm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Y, FMAPS_Y) return iters * 12 * 8; }
int64_t gk_peak_fma_pd_ymm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Y, FMAPD_Y) return iters * 12 * 4; }

/* Integer multiply peaks (Gemm's int32 / int64 paths, whose k-loops are bound by the
 * multiplier): 12 independent vpmulld / vpmullq (the low 32 / 64 bits of each lane's
 * product; no chain between them, so latency 10 on Zen 4 does not limit), lanes "MACs"
 * each (the kernels' vpaddd / vpaddq go to other ports).  vpmuludq: the 32x32->64 multiply
 * the AVX2 int64 path emulates with (3 per 64-bit lane product). */
#define MULLD_Z(i) "vpmulld %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define MULLD_Y(i) "vpmulld %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define MULLQ_Z(i) "vpmullq %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define MULLQ_Y(i) "vpmullq %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define MULUDQ_Y(i) "vpmuludq %%ymm12, %%ymm13, %%ymm" #i "\n\t"
int64_t gk_peak_mulld_zmm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Z, MULLD_Z) return iters * 12 * 16; }
int64_t gk_peak_mulld_ymm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Y, MULLD_Y) return iters * 12 * 8; }
int64_t gk_peak_mullq_zmm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Z, MULLQ_Z) return iters * 12 * 8; }
int64_t gk_peak_mullq_ymm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Z, MULLQ_Y) return iters * 12 * 4; }
/* counts vpmuludq lanes; an emulated 64-bit product takes 3 */
int64_t gk_peak_muludq_ymm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Y, MULUDQ_Y) return iters * 12 * 4; }
/* bfloat16 dot peak (Gemm's bfloat16 path on AVX512_BF16): 12 vdpbf16ps chains, each
 * 16 lanes x 2 bfloat16 MACs.  Inputs zeroed (no denormal/NaN); the caller runs it only
 * where the CPU reports avx512bf16. */
#define DPBF16_Z(i) "vdpbf16ps %%zmm12, %%zmm13, %%zmm" #i "\n\t"
int64_t gk_peak_dpbf16_zmm(long iters) { FMA_PEAK_LOOP(FMA_ZERO_Z, DPBF16_Z) return iters * 12 * 32; }

/* AMX: 4 independent tdpbusd chains on 16 x 64-byte tiles (16*16*64 MACs each).  The
 * palette-1 configuration lives in static storage (ldtilecfg reads 64 bytes); the caller
 * runs this only where detection reported AMX-INT8, which also obtained the Linux
 * permission for the tile state. */
static const unsigned char gk_amx_peak_cfg[64] __attribute__((aligned(64))) = {
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, /* colsb, tiles 0-7 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0, /* rows, tiles 0-7 */
};
int64_t gk_peak_tdpbusd(long iters)
{
    long n = iters;
    __asm__ volatile("ldtilecfg %1\n\t"
                     "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3\n\t"
                     "tilezero %%tmm4\n\ttilezero %%tmm5\n\ttilezero %%tmm6\n\ttilezero %%tmm7\n\t"
                     "1:\n\t"
                     "tdpbusd %%tmm2, %%tmm0, %%tmm4\n\ttdpbusd %%tmm3, %%tmm0, %%tmm5\n\t"
                     "tdpbusd %%tmm2, %%tmm1, %%tmm6\n\ttdpbusd %%tmm3, %%tmm1, %%tmm7\n\t"
                     "dec %0\n\tjnz 1b\n\t"
                     "tilerelease"
                     : "+r"(n)
                     : "m"(gk_amx_peak_cfg)
                     : "cc", "memory");
    return iters * 4 * 16 * 16 * 64;
}
/* AMX-BF16: 4 independent tdpbf16ps chains on the same tiles (16*16*32 bfloat16 MACs
 * each); zero tiles (no denormal).  The caller runs it only where the CPU reports amx-bf16
 * (gemmkit's import obtained the tile permission). */
int64_t gk_peak_tdpbf16ps(long iters)
{
    long n = iters;
    __asm__ volatile("ldtilecfg %1\n\t"
                     "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3\n\t"
                     "tilezero %%tmm4\n\ttilezero %%tmm5\n\ttilezero %%tmm6\n\ttilezero %%tmm7\n\t"
                     "1:\n\t"
                     "tdpbf16ps %%tmm2, %%tmm0, %%tmm4\n\ttdpbf16ps %%tmm3, %%tmm0, %%tmm5\n\t"
                     "tdpbf16ps %%tmm2, %%tmm1, %%tmm6\n\ttdpbf16ps %%tmm3, %%tmm1, %%tmm7\n\t"
                     "dec %0\n\tjnz 1b\n\t"
                     "tilerelease"
                     : "+r"(n)
                     : "m"(gk_amx_peak_cfg)
                     : "cc", "memory");
    return iters * 4 * 16 * 16 * 32;
}
#else
typedef int gk_bench_peak_unused;
#endif
