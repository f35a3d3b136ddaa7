/* Helpers shared by the C kernel harnesses (test_qgemm_kernels.c, test_gemm_kernels.c,
 * test_codecs_kernels.c): a xorshift64 step for their deterministic inputs and a malloc
 * that exits on failure. */
#ifndef GK_TEST_UTIL_H
#define GK_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The next state of a xorshift64 generator at *s (nonzero), returned. */
static inline uint64_t gk_test_xorshift64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

#endif
