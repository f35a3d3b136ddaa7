/* The threads seam: the only code that will know threads.  Drivers express their work as
 * independent tasks (output tiles, batches; never a split of K, so results never depend
 * on the number of threads) and hand them to gk_parallel_for.
 *
 * Contract: fn(ctx, task, worker) is called exactly once for every task in [0, ntasks),
 * in any order and possibly concurrently; `worker` in [0, gk_parallel_workers()) is
 * unique among the calls running at the same time, so a caller may index per-worker
 * scratch (packing buffers) with it.  gk_parallel_for returns when every task is done.
 * Today one worker runs the tasks in order on the calling thread; the threads issue
 * replaces src/csrc/core/gk_parallel.c behind this same interface. */
#ifndef GEMMKIT_GK_PARALLEL_H
#define GEMMKIT_GK_PARALLEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*gk_task_fn)(void *ctx, ptrdiff_t task, int worker);

/* Workers a parallel region may use (scratch arrays are sized by this). */
int gk_parallel_workers(void);
void gk_parallel_for(ptrdiff_t ntasks, gk_task_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
