/* 64-byte aligned allocation for packed panels (one cache line; the widest vector). */
#ifndef GEMMKIT_GK_ALLOC_H
#define GEMMKIT_GK_ALLOC_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
static inline void *gk_aligned_alloc(size_t n) { return _aligned_malloc(n ? n : 1, 64); }
static inline void gk_aligned_free(void *p) { _aligned_free(p); }
#else
/* malloc, aligned by hand (the block's start kept just below the aligned pointer), not
 * posix_memalign: glibc's memalign of a multi-megabyte block (the int8 driver's packed
 * blocks and partial sums, one per call) did not reuse the block freed by the previous
 * call but grew the heap, so every call paid a page fault per 4 KB of fresh memory. */
static inline void *gk_aligned_alloc(size_t n)
{
    if (n > SIZE_MAX - 64 - sizeof(void *))
        return 0;
    unsigned char *raw = (unsigned char *)malloc(n + 64 + sizeof(void *));
    if (!raw)
        return 0;
    unsigned char *p = raw + sizeof(void *);
    p += (64 - (uintptr_t)p % 64) % 64; /* p - raw in [sizeof(void *), 64 + sizeof(void *)) */
    ((void **)p)[-1] = raw;
    return p;
}
static inline void gk_aligned_free(void *p)
{
    if (p)
        free(((void **)p)[-1]);
}
#endif
/* Scratch for one call (src/csrc/core/gk_scratch.c): 64-byte aligned like
 * gk_aligned_alloc, but freed blocks (up to a few MB) are kept and handed out again, so
 * repeated calls do not fault their buffers in again.  Thread-safe.  NULL on failure. */
void *gk_scratch_alloc(size_t n);
void gk_scratch_free(void *p);
/* Round x up to a multiple of 64 bytes, so sub-buffers carved from one block stay aligned. */
static inline size_t gk_round64(size_t x) { return (x + 63) & ~(size_t)63; }
#endif
