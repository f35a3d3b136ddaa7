/* x86 feature detection: CPUID for what the CPU has, XGETBV for what the OS saves.
 * A 256-bit path needs XCR0 bits 1-2 (SSE, AVX state); a 512-bit path also bits 5-7
 * (opmask, ZMM_Hi256, Hi16_ZMM).  Runs no SIMD instruction. */
#include <string.h>

#include "gemmkit/gk_dispatch.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)

/* cpuid; xgetbv: ecx 0 reads XCR0 (what the OS saves), 1 XINUSE (what is in use now) */
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (unsigned)v[0]; r[1] = (unsigned)v[1]; r[2] = (unsigned)v[2]; r[3] = (unsigned)v[3];
}
static unsigned long long xgetbv(unsigned ecx) { return _xgetbv(ecx); }
#else
#include <cpuid.h>
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
static unsigned long long xgetbv(unsigned ecx)
{
    unsigned lo, hi;
    /* xgetbv: encoded by hand so the baseline build needs no -mxsave */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(ecx));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

/* Whether CPUID leaf 0's r names vendor v (12 chars: EBX, EDX, ECX in that order). */
static int vendor_is(const unsigned r[4], const char *v)
{
    const unsigned w[3] = {r[1], r[3], r[2]};
    return memcmp(w, v, 12) == 0;
}

/* XINUSE (XGETBV with ECX = 1) bits 2 and 6: the upper halves of ymm0-15 / zmm0-15 hold
 * something (VZEROUPPER clears both).  1 / 0, or -1 where the CPU cannot say (no AVX, or
 * no XGETBV ECX = 1: CPUID leaf 0xD sub-leaf 1, EAX bit 2).  For the tests: every kernel
 * must return with them clear, or each legacy-SSE instruction the caller's thread runs
 * next (CPython's and NumPy's baseline code) pays a transition or a false dependency. */
int gk_cpu_avx_upper_in_use(void)
{
    unsigned r[4];
    cpuid(0, 0, r);
    if (r[0] < 0xD)
        return -1;
    cpuid(1, 0, r);
    if (!(r[2] & (1u << 27)) || !(r[2] & (1u << 28))) /* OSXSAVE, AVX */
        return -1;
    cpuid(0xD, 1, r);
    if (!(r[0] & (1u << 2)))
        return -1;
    return (xgetbv(1) & ((1ull << 2) | (1ull << 6))) != 0;
}

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
/* Linux (>= 5.16) enables AMX tile data per process on request; without it the first
 * tile instruction faults.  A syscall, not a SIMD instruction; the dispatch asks only when
 * a selection reaches the amx level. */
int gk_amx_request_permission(void)
{
    const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#elif defined(_WIN32)
int gk_amx_request_permission(void) { return 1; } /* XCR0 is the whole story on Windows */
#else
int gk_amx_request_permission(void) { return 0; } /* no known way to ask: not used */
#endif

unsigned gk_cpu_features_x86(void)
{
    unsigned r[4], f = 0, max_leaf;
    cpuid(0, 0, r);
    max_leaf = r[0];
    const int amd = vendor_is(r, "AuthenticAMD");
    if (max_leaf < 1)
        return 0;
    cpuid(1, 0, r);
    unsigned ecx1 = r[2];
    if (ecx1 & (1u << 19))
        f |= GK_CPU_SSE41;
    int osxsave = (ecx1 >> 27) & 1, avx = (ecx1 >> 28) & 1;
    unsigned long long xcr0 = osxsave ? xgetbv(0) : 0;
    int ymm_os = (xcr0 & 0x6) == 0x6;
    int zmm_os = ymm_os && (xcr0 & 0xe0) == 0xe0;
    if (!(avx && ymm_os))
        return f;
    if (ecx1 & (1u << 12))
        f |= GK_CPU_FMA;
    if (ecx1 & (1u << 29))
        f |= GK_CPU_F16C;
    if (max_leaf < 7)
        return f;
    cpuid(7, 0, r);
    unsigned ebx7 = r[1], ecx7 = r[2], edx7 = r[3], max_sub7 = r[0];
    if (ebx7 & (1u << 5))
        f |= GK_CPU_AVX2;
    if (max_sub7 >= 1) {
        cpuid(7, 1, r);
        if ((r[0] & (1u << 4)) && (f & GK_CPU_AVX2))
            f |= GK_CPU_AVXVNNI;
        if (zmm_os && (r[0] & (1u << 5)) && (ebx7 & (1u << 16)))
            f |= GK_CPU_AVX512BF16 | (amd ? GK_CPU_BF16DOT_FAST : 0u);
    }
    /* AMX: CPUID AMX-TILE (edx bit 24) + AMX-INT8 (bit 25), XCR0 XTILECFG + XTILEDATA
     * (bits 17-18); the Linux per-process permission is gk_amx_request_permission's.
     * AMX-BF16 (bit 22) only beside them: its family's dispatch level is amx. */
    if ((edx7 & (3u << 24)) == (3u << 24) && (xcr0 & (3ull << 17)) == (3ull << 17) &&
        zmm_os) {
        f |= GK_CPU_AMXINT8;
        if (edx7 & (1u << 22)) /* AMX-BF16 */
            f |= GK_CPU_AMXBF16;
    }
    if (zmm_os && (ebx7 & (1u << 16))) {
        f |= GK_CPU_AVX512F;
        if (ebx7 & (1u << 30))
            f |= GK_CPU_AVX512BW;
        if (ebx7 & (1u << 31))
            f |= GK_CPU_AVX512VL;
        if (ebx7 & (1u << 17))
            f |= GK_CPU_AVX512DQ;
        if (ecx7 & (1u << 11))
            f |= GK_CPU_AVX512VNNI;
    }
    return f;
}

/* Cache sizes (bytes; 0 where not reported) from the deterministic cache parameters:
 * CPUID leaf 4 (Intel) or 0x8000001D (AMD with TOPOEXT), one subleaf per cache, size =
 * ways * partitions * line size * sets; failing those, AMD's legacy 0x80000005 /
 * 0x80000006 (L1D in KB, L2 in KB, L3 in 512 KB units).  CPUID only.  l3_slow: the
 * vendor is Intel (gk_cpu_cache_sizes). */
void gk_cpu_caches_x86(size_t *l1d, size_t *l2, size_t *l3, int *l3_slow)
{
    unsigned r[4], leaf = 0;
    *l1d = *l2 = *l3 = 0;
    cpuid(0, 0, r);
    const unsigned max_leaf = r[0];
    const int amd = vendor_is(r, "AuthenticAMD");
    *l3_slow = vendor_is(r, "GenuineIntel");
    cpuid(0x80000000u, 0, r);
    const unsigned max_ext = r[0];
    if (!amd && max_leaf >= 4) {
        leaf = 4;
    } else if (amd && max_ext >= 0x8000001Du) {
        cpuid(0x80000001u, 0, r);
        if (r[2] & (1u << 22)) /* TOPOEXT */
            leaf = 0x8000001Du;
    }
    if (leaf) {
        for (unsigned sub = 0; sub < 16; sub++) {
            cpuid(leaf, sub, r);
            const unsigned type = r[0] & 31, level = (r[0] >> 5) & 7;
            if (type == 0)
                break;
            if (type == 2) /* instruction cache */
                continue;
            const size_t size = (size_t)((r[1] >> 22) + 1) * (((r[1] >> 12) & 0x3FF) + 1) *
                                ((r[1] & 0xFFF) + 1) * ((size_t)r[2] + 1);
            if (level == 1)
                *l1d = size;
            else if (level == 2)
                *l2 = size;
            else if (level == 3)
                *l3 = size;
        }
    }
    if (amd && *l1d == 0 && max_ext >= 0x80000006u) {
        cpuid(0x80000005u, 0, r);
        *l1d = (size_t)(r[2] >> 24) << 10;
        cpuid(0x80000006u, 0, r);
        *l2 = (size_t)(r[2] >> 16) << 10;
        *l3 = (size_t)(r[3] >> 18) << 19;
    }
}

#else
int gk_amx_request_permission(void) { return 0; }
int gk_cpu_avx_upper_in_use(void) { return -1; }
#endif
