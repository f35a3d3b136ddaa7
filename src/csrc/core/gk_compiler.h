/* Compiler-specific spellings, defined once.  Kernel code uses only these GK_* macros, never
 * a bare __attribute__, __declspec or #pragma GCC, so every file compiles with gcc, clang
 * and MSVC (which rejects GNU attributes and warns on unknown pragmas).
 *
 *   GK_ALWAYS_INLINE   static inline function that must be inlined (the kernels rely on
 *                      it to specialise on compile-time constant arguments)
 *   GK_NOINLINE        never inline this function (written after static)
 *   GK_ALIGNED(n)      alignment of a variable, written before its type:
 *                          GK_ALIGNED(64) int32_t buf[N];
 *   GK_UNROLL(n)       unroll the following loop n times (a hint; ignored where unknown)
 *   GK_GNU_ASM         1 where GNU extended asm with AT&T syntax is available (gcc, clang
 *                      on x86-64); kernels keep an intrinsic loop for the other case
 *   GK_PREFETCH_W(p)   hint that the cache line at p will be written soon (no-op where
 *                      unknown; never faults, p need not be a valid address)
 *   GK_PREFETCH_R(p)   the same for a line that will be read
 *   GK_GCC             1 for gcc itself (not clang, which also defines __GNUC__): the
 *                      asm k-loops work around gcc's register allocation only */
#ifndef GEMMKIT_GK_COMPILER_H
#define GEMMKIT_GK_COMPILER_H

#if defined(_MSC_VER) && !defined(__clang__)
#define GK_ALWAYS_INLINE static __forceinline
#define GK_NOINLINE __declspec(noinline)
#define GK_ALIGNED(n) __declspec(align(n))
#define GK_PRAGMA(x) __pragma(x)
#define GK_UNROLL(n)
#define GK_PREFETCH_W(p) ((void)(p))
#define GK_PREFETCH_R(p) ((void)(p))
#elif defined(__GNUC__) || defined(__clang__)
#define GK_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
#define GK_PREFETCH_R(p) __builtin_prefetch((p), 0, 3)
#define GK_ALWAYS_INLINE static inline __attribute__((always_inline))
#define GK_NOINLINE __attribute__((noinline))
#define GK_ALIGNED(n) __attribute__((aligned(n)))
#define GK_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define GK_UNROLL(n) GK_PRAGMA(unroll n)
#else
#define GK_UNROLL(n) GK_PRAGMA(GCC unroll n)
#endif
#else
#define GK_ALWAYS_INLINE static inline
#define GK_NOINLINE
#define GK_ALIGNED(n)
#define GK_PRAGMA(x)
#define GK_UNROLL(n)
#define GK_PREFETCH_W(p) ((void)(p))
#define GK_PREFETCH_R(p) ((void)(p))
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define GK_GCC 1
#else
#define GK_GCC 0
#endif

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define GK_GNU_ASM 1
#else
#define GK_GNU_ASM 0
#endif

/* x86 vector v stays in a register: the compiler may not fold its load into each
 * instruction that uses it.  gcc does so with 512-bit operands, and a value used three
 * times is then loaded three times; bulk loops over data larger than the caches measured
 * 1.25-1.6x slower that way (Zen 5).  A no-op where GNU asm is unavailable. */
#if GK_GNU_ASM
#define GK_KEEP_IN_REG(v) __asm__("" : "+v"(v))
#else
#define GK_KEEP_IN_REG(v) ((void)0)
#endif

#endif
