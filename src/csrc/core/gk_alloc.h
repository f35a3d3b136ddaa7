/* 64-byte aligned allocation for packed panels (one cache line; the widest vector). */
#ifndef GEMMKIT_GK_ALLOC_H
#define GEMMKIT_GK_ALLOC_H
#include <stddef.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
static inline void *gk_aligned_alloc(size_t n) { return _aligned_malloc(n ? n : 1, 64); }
static inline void gk_aligned_free(void *p) { _aligned_free(p); }
#else
static inline void *gk_aligned_alloc(size_t n)
{
    void *p = 0;
    return posix_memalign(&p, 64, n ? n : 1) == 0 ? p : 0;
}
static inline void gk_aligned_free(void *p) { free(p); }
#endif
/* Scratch for one call (src/csrc/core/gk_scratch.c): 64-byte aligned like
 * gk_aligned_alloc, but freed blocks (up to a few MB) are kept and handed out again, so
 * repeated calls do not fault their buffers in again.  Thread-safe.  NULL on failure. */
void *gk_scratch_alloc(size_t n);
void gk_scratch_free(void *p);
/* Round x up to a multiple of 64 bytes, so sub-buffers carved from one block stay aligned. */
static inline size_t gk_round64(size_t x) { return (x + 63) & ~(size_t)63; }
#endif
