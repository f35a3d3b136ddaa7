/* LD_PRELOAD shim for benchmarks on AMX machines (Linux): refuses the process's request
 * for the AMX tile-data permission (arch_prctl ARCH_REQ_XCOMP_PERM through syscall()), so
 * every library in the process -- onnxruntime's MLAS and gemmkit alike -- falls back to
 * its AVX-512 VNNI path.  This reproduces the VNNI-vs-VNNI comparison of a CPU without
 * AMX (Zen 4, Ice Lake) on a Sapphire Rapids machine.  Used by bench_int8.py --no-amx. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

#define GK_ARCH_REQ_XCOMP_PERM 0x1023

long syscall(long number, ...)
{
    static long (*real)(long, ...);
    va_list ap;
    long a[6];
    va_start(ap, number);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long); /* syscall() takes at most six arguments */
    va_end(ap);
    if (number == SYS_arch_prctl && a[0] == GK_ARCH_REQ_XCOMP_PERM) {
        errno = EPERM;
        return -1;
    }
    if (!real)
        real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
