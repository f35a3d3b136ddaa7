/* gk_parallel (contract in gemmkit/gk_parallel.h), single-threaded for now: every task
 * runs on the calling thread, in order, as worker 0. */
#include "gemmkit/gk_parallel.h"

int gk_parallel_workers(void) { return 1; }

void gk_parallel_for(ptrdiff_t ntasks, gk_task_fn fn, void *ctx)
{
    for (ptrdiff_t t = 0; t < ntasks; t++)
        fn(ctx, t, 0);
}
