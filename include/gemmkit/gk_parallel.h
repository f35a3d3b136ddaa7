/* The threads seam: the only code that knows threads.  Drivers express their work as
 * independent tasks (output tiles, batches, codec chunks; never a split of K, so results
 * never depend on the number of threads) and hand them to gk_parallel_run.
 *
 * Contract: fn(ctx, task, worker) is called exactly once for every task in [0, ntasks),
 * in any order and possibly concurrently, on at most max_threads threads (the caller is
 * one of them); `worker` in [0, max_threads) is unique among the threads of one run, so a
 * caller may index per-worker scratch with it.  gk_parallel_run returns when every task
 * is done.  A run started from inside a task runs on its own thread alone.
 *
 * Policy (src/csrc/core/gk_parallel.c): one process-wide pool of workers, created on
 * first use (never at import), grown to the largest setting asked for.  A run takes the
 * workers that are idle at that moment, up to max_threads - 1, and never waits for a
 * busy one: Python threads calling at once share the pool without queuing behind each
 * other, and together never run more gemmkit threads than the largest setting plus the
 * callers themselves.  Idle workers spin briefly, then sleep.  A child forked after a
 * parallel call starts with an empty pool. */
#ifndef GEMMKIT_GK_PARALLEL_H
#define GEMMKIT_GK_PARALLEL_H

#include <stddef.h>

#if defined(_WIN32)
#define GK_EXPORT __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define GK_EXPORT __attribute__((visibility("default")))
#else
#define GK_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*gk_task_fn)(void *ctx, ptrdiff_t task, int worker);

/* The most threads any setting may ask for (the pool never grows past GK_MAX_THREADS - 1
 * workers). */
#define GK_MAX_THREADS 256

/* Threads a call on this OS thread may use: this thread's override (set_local), else the
 * process setting.  Always in [1, GK_MAX_THREADS]. */
int gk_parallel_threads(void);
/* The process setting (gemmkit.set_num_threads, threadpoolctl); n is clamped to
 * [1, GK_MAX_THREADS].  Exported so threadpoolctl's controller can call them by name. */
GK_EXPORT void gk_parallel_set_threads(int n);
GK_EXPORT int gk_parallel_get_threads(void);
/* This OS thread's override (gemmkit.threads(n)); 0 removes it. */
void gk_parallel_set_local(int n);
int gk_parallel_get_local(void);
/* Worker threads alive in this process (tests: none before the first parallel call). */
int gk_parallel_pool_size(void);

void gk_parallel_run(ptrdiff_t ntasks, int max_threads, gk_task_fn fn, void *ctx);
/* gk_parallel_run with max_threads = gk_parallel_threads(). */
void gk_parallel_for(ptrdiff_t ntasks, gk_task_fn fn, void *ctx);

/* The factor on every "least work per thread" threshold (1 by default).  Tests set 0 so
 * that even tiny products split over every thread they are given. */
void gk_parallel_set_work_scale(double scale);
double gk_parallel_work_scale(void);

/* How a driver splits an m x n output of depth k (k multiply-adds per output; 0 counts
 * as 1) into at most `parts` parts: a grid of tm x tn parts whose edges fall on whole
 * mr x nr tiles.  flags: GK_GRID_ROWS lets parts split rows (else columns only, tm = 1);
 * GK_GRID_B_SHARED says B' is packed once for every part (gk_parallel_share_b), so a
 * part packs only its rows of A and reads its columns of B'.  Each part gets at least
 * min_work multiply-adds, else fewer parts are made; of the grids with tm * tn <= that
 * many, the one whose largest part costs least (its multiply-adds, plus the packing of
 * its rows of A and of its columns of B, the latter counted as half a packing when they
 * are read from a shared B') wins, ties to more column parts.  Returns tm * tn (1: run
 * on the caller). */
#define GK_GRID_ROWS 1
#define GK_GRID_B_SHARED 2
int gk_parallel_grid(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, int mr, int nr, double min_work,
                     int parts, int flags, int *tm, int *tn);
/* Parallel drivers' policy (gemmkit._core._parallel_tuning, for benchmarks and tests; the
 * defaults are what ships).  share_b: a product split over threads whose row parts would
 * each pack their own columns of B packs B' once, all threads together, and every part
 * reads it (1, the default; 0: each part packs its own).  parts_per_thread: parts made
 * per thread when B' is shared (threads take parts as they finish, so a slow thread
 * delays the call by a fraction of its share).  Default 1: on the 16-core Sapphire
 * Rapids machine 2 parts per thread ran bfloat16 2048^3 1.1x faster but 1024^3 0.9x
 * (float32 and int8 0.93-1.0x).  Neither changes a result, only which thread computes
 * which tile. */
void gk_parallel_set_tuning(int share_b, int parts_per_thread);
int gk_parallel_share_b(void);
int gk_parallel_parts_per_thread(void);
/* Part t (row-major in the tm x tn grid) of that split: rows [*m0, *m1), columns
 * [*n0, *n1), nearly equal numbers of whole tiles each (the last tile may be partial). */
void gk_parallel_grid_part(ptrdiff_t m, ptrdiff_t n, int mr, int nr, int tm, int tn,
                           ptrdiff_t t, ptrdiff_t *m0, ptrdiff_t *m1, ptrdiff_t *n0,
                           ptrdiff_t *n1);

#ifdef __cplusplus
}
#endif
#endif
