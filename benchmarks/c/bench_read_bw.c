/* One thread's read bandwidth: a plain streaming read of a buffer, for benchmarks/bench_int8.py
 * to quote the small-M rows (which must read B once) as a fraction of it.  Built at run time
 * with the C compiler and no -march flags; the wide variants carry their own target
 * attribute and the caller runs one only where gemmkit's detection reports the ISA.
 *
 * Each function reads n bytes (a multiple of 512) `reps` times and folds every loaded word
 * into 8 independent accumulators (XOR, one cycle, so the loop is bound by the loads), and
 * returns the fold so the compiler cannot drop the loads. */
#include <stddef.h>
#include <stdint.h>

uint64_t gk_read_generic(const void *p, size_t n, long reps)
{
    const uint64_t *q = (const uint64_t *)p;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t w = n / 8;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < w; i += 8) {
            a0 ^= q[i]; a1 ^= q[i + 1]; a2 ^= q[i + 2]; a3 ^= q[i + 3];
            a4 ^= q[i + 4]; a5 ^= q[i + 5]; a6 ^= q[i + 6]; a7 ^= q[i + 7];
        }
    return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define GK_READ_FN(NAME, TARGET, T, LOAD, XOR, W, FOLD)                                    \
    __attribute__((target(TARGET))) uint64_t NAME(const void *p, size_t n, long reps)      \
    {                                                                                      \
        const char *c = (const char *)p;                                                   \
        T a0 = XOR(LOAD(c), LOAD(c)), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,         \
          a6 = a0, a7 = a0;                                                                \
        for (long r = 0; r < reps; r++)                                                    \
            for (size_t i = 0; i < n; i += 8 * (W)) {                                      \
                a0 = XOR(a0, LOAD(c + i));                                                 \
                a1 = XOR(a1, LOAD(c + i + (W)));                                           \
                a2 = XOR(a2, LOAD(c + i + 2 * (W)));                                       \
                a3 = XOR(a3, LOAD(c + i + 3 * (W)));                                       \
                a4 = XOR(a4, LOAD(c + i + 4 * (W)));                                       \
                a5 = XOR(a5, LOAD(c + i + 5 * (W)));                                       \
                a6 = XOR(a6, LOAD(c + i + 6 * (W)));                                       \
                a7 = XOR(a7, LOAD(c + i + 7 * (W)));                                       \
            }                                                                              \
        a0 = XOR(XOR(XOR(a0, a1), XOR(a2, a3)), XOR(XOR(a4, a5), XOR(a6, a7)));            \
        return FOLD(a0);                                                                   \
    }

#define LD128(x) _mm_loadu_si128((const __m128i *)(x))
#define LD256(x) _mm256_loadu_si256((const __m256i *)(x))
#define LD512(x) _mm512_loadu_si512((const void *)(x))
#define FOLD128(v) ((uint64_t)_mm_cvtsi128_si64(v))
#define FOLD256(v) ((uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(v)))
#define FOLD512(v) ((uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(v)))

GK_READ_FN(gk_read_xmm, "sse2", __m128i, LD128, _mm_xor_si128, 16, FOLD128)
GK_READ_FN(gk_read_ymm, "avx2", __m256i, LD256, _mm256_xor_si256, 32, FOLD256)
GK_READ_FN(gk_read_zmm, "avx512f", __m512i, LD512, _mm512_xor_si512, 64, FOLD512)
#endif
