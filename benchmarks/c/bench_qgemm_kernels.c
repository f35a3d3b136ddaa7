/* Kernel-only throughput of every usable int8 family, and the instruction peaks to quote
 * it against.  Reports medians of several runs (the machine is shared).
 *   kernel: a block of packed A (MB x K) and packed B (NB x K) in cache, one ukernel call
 *           per tile (B micro-panel outer, so it stays in L1 while A panels stream from
 *           L2), with the fused epilogue to int32 and to uint8.
 *   pack:   pack_b / pack_a of row-major sources, bytes of source per second.
 *   smallm: M = 1 and M = 8, K = N = 4096 (B = 16 MB, streamed once).
 * Usage: bench_qgemm_kernels [K] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_kernels.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#define REPS 9
static double best(const double *t, int n)
{
    double b = t[0];
    for (int i = 1; i < n; i++)
        b = t[i] < b ? t[i] : b;
    return b;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
int64_t gk_peak_dpbusd_zmm(long), gk_peak_dpbusd_ymm_evex(long), gk_peak_dpbusd_ymm_vex(long);
int64_t gk_peak_maddwd_zmm(long), gk_peak_maddwd_ymm(long), gk_peak_maddwd_xmm(long);
int64_t gk_peak_tdpbusd(long);
static void peak(const char *name, int64_t (*f)(long))
{
    double t[REPS];
    int64_t macs = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        macs = f(2000000);
        t[r] = now() - t0;
    }
    printf("  peak %-22s %7.1f GOP/s\n", name, 2.0 * (double)macs / best(t, REPS) * 1e-9);
}
static void peaks(void)
{
    unsigned f = gk_cpu_features();
    printf("instruction peaks (1 core, independent accumulators):\n");
    /* the amx family's usable() asks Linux for the tile permission: without it the first
     * tile instruction is a SIGILL, whatever CPUID says */
    for (int i = 0; i < gk_qgemm_kernel_count(); i++)
        if (strcmp(gk_qgemm_kernel_at(i)->isa, "amx") == 0 && gk_qgemm_kernel_usable(i))
            peak("tdpbusd (AMX)", gk_peak_tdpbusd);
    if ((f & GK_CPU_AVX512VNNI) && (f & GK_CPU_AVX512VL)) {
        peak("vpdpbusd zmm", gk_peak_dpbusd_zmm);
        peak("vpdpbusd ymm (evex)", gk_peak_dpbusd_ymm_evex);
    }
    if (f & GK_CPU_AVXVNNI)
        peak("vpdpbusd ymm (vex)", gk_peak_dpbusd_ymm_vex);
    if ((f & GK_CPU_AVX512BW))
        peak("vpmaddwd+vpaddd zmm", gk_peak_maddwd_zmm);
    if (f & GK_CPU_AVX2)
        peak("vpmaddwd+vpaddd ymm", gk_peak_maddwd_ymm);
    if (f & GK_CPU_SSE41)
        peak("pmaddwd+paddd xmm", gk_peak_maddwd_xmm);
}
#else
static void peaks(void) {}
#endif

static void bench_family(const gk_qgemm_kernel *kr, int K)
{
    const int MB = 192, NB = 192;
    int mp = (MB + kr->mr - 1) / kr->mr * kr->mr, np = (NB + kr->nr - 1) / kr->nr * kr->nr;
    int kp = (K + kr->kstep - 1) / kr->kstep * kr->kstep;
    uint8_t *a = malloc((size_t)MB * K), *b = malloc((size_t)K * NB);
    /* packed panels 64-byte aligned, as the driver allocates them (AMX tile rows are 64
     * bytes: misaligned, every row load splits two cache lines) */
    uint8_t *pa0 = malloc(64 + ((size_t)mp * kp * kr->a_elem_bytes + 63) / 64 * 64);
    const size_t ps = gk_qgemm_b_panel_stride(kr, (size_t)kp); /* panels may pad apart */
    uint8_t *pb0 = malloc(64 + ((size_t)(np / kr->nr) * ps + 63) / 64 * 64);
    uint8_t *pa = (uint8_t *)(((uintptr_t)pa0 + 63) & ~(uintptr_t)63);
    uint8_t *pb = (uint8_t *)(((uintptr_t)pb0 + 63) & ~(uintptr_t)63);
    int32_t *rs = calloc(MB, 4), *cs = calloc(NB, 4), *zero = calloc(NB + MB, 4);
    int32_t *y = malloc((size_t)MB * NB * 4);
    float mult = 1e-4f;
    for (size_t i = 0; i < (size_t)MB * K; i++)
        a[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < (size_t)K * NB; i++)
        b[i] = (uint8_t)(i * 13 + 1);
    kr->pack_a(MB, K, a, K, 1, 0, pa, rs);
    kr->pack_b(K, NB, b, NB, 1, 0, pb, cs);
    gk_qepi e = {GK_QOUT_I32, rs, zero, zero, cs, &mult, 0, 0, zero, 0, 0, y, NB, K};
    printf("  %-11s %2dx%-3d", kr->isa, kr->mr, kr->nr);
    for (int kind = 0; kind < 2; kind++) {
        double t[REPS];
        e.kind = kind ? GK_QOUT_U8 : GK_QOUT_I32;
        if (kr->begin)
            kr->begin();
        for (int r = 0; r < REPS; r++) {
            double t0 = now();
            int reps = 0;
            do {
                for (int n0 = 0; n0 < NB; n0 += kr->nr)
                    for (int m0 = 0; m0 < MB; m0 += kr->mr)
                        kr->ukernel(MB - m0 < kr->mr ? MB - m0 : kr->mr,
                                    NB - n0 < kr->nr ? NB - n0 : kr->nr, kp,
                                    pa + (size_t)m0 * kp * kr->a_elem_bytes,
                                    pb + (size_t)(n0 / kr->nr) * ps, &e, m0, n0);
                reps++;
            } while (now() - t0 < 0.02);
            t[r] = (now() - t0) / reps;
        }
        if (kr->end)
            kr->end();
        printf(" %8.1f", 2.0 * MB * NB * K / best(t, REPS) * 1e-9);
    }
    /* packing: source bytes per second */
    for (int w = 0; w < 2; w++) {
        double t[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = now();
            int reps = 0;
            do {
                if (w == 0)
                    kr->pack_b(K, NB, b, NB, 1, 0x80, pb, cs);
                else
                    kr->pack_a(MB, K, a, K, 1, 0x80, pa, rs);
                reps++;
            } while (now() - t0 < 0.01);
            t[r] = (now() - t0) / reps;
        }
        printf(" %8.1f", (double)K * (w ? MB : NB) / best(t, REPS) * 1e-9);
    }
    /* small M: B 4096 x 4096 streamed once */
    if (kr->smallm) {
        const int SK = 4096, SN = 4096;
        uint8_t *bb = malloc((size_t)SK * SN), *aa = malloc((size_t)8 * SK);
        int32_t *yy = malloc((size_t)8 * SN * 4), *zz = calloc(SN, 4), *r8 = calloc(8, 4);
        memset(bb, 3, (size_t)SK * SN);
        memset(aa, 5, (size_t)8 * SK);
        for (int mi = 0; mi < 2; mi++) {
            int m = mi ? (kr->smallm_max < 8 ? kr->smallm_max : 8) : 1;
            gk_qepi se = {GK_QOUT_I32, r8, zz, zz, NULL, &mult, 0, 0, zz, 0, 0, yy, SN, SK};
            double t[5];
            for (int r = 0; r < 5; r++) {
                double t0 = now();
                kr->smallm(m, SN, SK, aa, SK, 1, 0, bb, SN, 0x80, &se);
                t[r] = now() - t0;
            }
            printf(" %8.3f", best(t, 5) * 1e3);
        }
        free(bb); free(aa); free(yy); free(zz); free(r8);
    }
    printf("\n");
    free(a); free(b); free(pa0); free(pb0); free(rs); free(cs); free(zero); free(y);
}

int main(int argc, char **argv)
{
    int K = argc > 1 ? atoi(argv[1]) : 1024;
    peaks();
    printf("kernel only, K = %d, 192 x 192 block in cache (GOP/s); pack (GB/s of source);\n"
           "smallm K = N = 4096 (ms):\n", K);
    printf("  %-11s %-6s %8s %8s %8s %8s %8s %8s\n", "family", "tile", "i32", "u8", "pack_b",
           "pack_a", "sm M=1", "sm M=8");
    for (int i = 0; i < gk_qgemm_kernel_count(); i++)
        if (gk_qgemm_kernel_usable(i))
            bench_family(gk_qgemm_kernel_at(i), K);
    return 0;
}
