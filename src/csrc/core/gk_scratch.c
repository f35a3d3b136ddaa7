/* Scratch buffers reused across calls (declared in gk_alloc.h).
 *
 * Why: a per-call malloc of a few tens of KB is often returned to the OS on free (heap
 * trimming, or mmap above the threshold) and faulted in again on the next call; under a
 * hypervisor those page faults cost more than a whole small-M product (measured: a 20 KB
 * accumulator buffer added 10 us to a 6 us call).  So freed scratch blocks are parked in
 * a few slots and handed out again.
 *
 * Invariants: a block carries its usable size in a 64-byte header; a slot holds NULL or a
 * block nobody uses; slots are taken and filled with atomic exchange / compare-exchange
 * only, so any number of threads may call at once (a block is owned by exactly one
 * caller or one slot).  Blocks above GK_SCRATCH_KEEP_MAX are never parked, so at most
 * GK_SCRATCH_SLOTS * GK_SCRATCH_KEEP_MAX bytes stay allocated while gemmkit is idle. */
#include <stdint.h>

#include "core/gk_alloc.h"

#define GK_SCRATCH_SLOTS 4
#define GK_SCRATCH_KEEP_MAX ((size_t)4 << 20)
#define GK_SCRATCH_HDR 64

static void *volatile gk_scratch_slot[GK_SCRATCH_SLOTS];

#if defined(_MSC_VER) && !defined(__clang__)
#include <windows.h>
static void *gk_xchg(void *volatile *p, void *v) { return InterlockedExchangePointer((PVOID volatile *)p, v); }
static int gk_cas_null(void *volatile *p, void *v)
{
    return InterlockedCompareExchangePointer((PVOID volatile *)p, v, NULL) == NULL;
}
#else
static void *gk_xchg(void *volatile *p, void *v) { return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL); }
static int gk_cas_null(void *volatile *p, void *v)
{
    void *expect = NULL;
    return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
#endif

static size_t gk_scratch_size(void *block) { return *(size_t *)block; }

void *gk_scratch_alloc(size_t n)
{
    for (int i = 0; i < GK_SCRATCH_SLOTS; i++) {
        if (!gk_scratch_slot[i])
            continue;
        void *blk = gk_xchg(&gk_scratch_slot[i], NULL);
        if (!blk)
            continue;
        if (gk_scratch_size(blk) >= n)
            return (char *)blk + GK_SCRATCH_HDR;
        if (!gk_cas_null(&gk_scratch_slot[i], blk)) /* too small: park it again */
            gk_aligned_free(blk);
    }
    void *blk = gk_aligned_alloc(n + GK_SCRATCH_HDR);
    if (!blk)
        return NULL;
    *(size_t *)blk = n;
    return (char *)blk + GK_SCRATCH_HDR;
}

void gk_scratch_free(void *p)
{
    if (!p)
        return;
    void *blk = (char *)p - GK_SCRATCH_HDR;
    if (gk_scratch_size(blk) <= GK_SCRATCH_KEEP_MAX)
        for (int i = 0; i < GK_SCRATCH_SLOTS; i++)
            if (gk_cas_null(&gk_scratch_slot[i], blk))
                return;
    gk_aligned_free(blk);
}
