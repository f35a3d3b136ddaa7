/* gemmkit's thread pool (contract and policy in gemmkit/gk_parallel.h).  No OpenMP: no
 * runtime to vendor into wheels, no clash with another libomp, no hang after fork.
 *
 * Workers: each has its own slot (a state, a job sequence number, a mutex and a condition
 * variable), created on demand by the first run that wants more workers than exist.
 * Slot states: IDLE -> CLAIMED (a run took it: compare-exchange, so one run at a time)
 * -> POSTED (its job and index written, then the sequence number bumped under the mutex
 * and the worker signalled) -> RUNNING (the worker took the job: compare-exchange) ->
 * IDLE (done: the worker then decrements the job's count of running workers and never
 * touches the job again, which lives on the caller's stack).  A run hands out task
 * indices with an atomic counter; the caller runs tasks too, and once none is left it
 * takes back every job still POSTED (compare-exchange POSTED -> IDLE on the ticket of its
 * own claim: that worker has not woken yet and never will see this job), so it waits
 * only for workers that are really working, never for one still waking up (measured
 * under KVM: a sleeping worker takes 100-200 us to wake).  The caller spins briefly for
 * the running ones, then sleeps on the job's condition variable.
 *
 * Idle: a worker spins (with a pause) for about GK_POOL_SPIN_NS after its last job, so a
 * loop of calls does not pay a wake-up per call, then sleeps on its condition variable:
 * no CPU is used while gemmkit is idle.  The spin yields the CPU every few microseconds
 * and lasts 0.1 ms, not more: with 8 Python threads calling at once on 2 CPUs, a 1 ms
 * spin starved the threads that had work (the suite's concurrency test went from 4 s to
 * minutes).  The price: a call made after the workers fell asleep pays their wake-up
 * (measured on Zen 4 under KVM, 3 ms after the last call: 0.85-1.2x the serial time at
 * 256^3-512^3, 1.8-2.0x at 1024^3).
 *
 * Floating-point modes: a worker runs each job under the caller's floating-point
 * environment (rounding mode, and on x86 MXCSR's FTZ/DAZ, on ARM FPCR: fegetenv/fesetenv)
 * and goes back to its own after it, so a float result does not depend on which thread
 * computed which tile (the caller may have left the default mode: fesetround, a library
 * built with -ffast-math setting FTZ/DAZ).
 *
 * Fork (POSIX): a child inherits the pool's memory but none of its threads, and a mutex
 * may be held by a thread that is gone; the atfork child handler forgets every slot
 * (leaking them: they may be locked) so the child's first run builds a fresh pool. */
#include <fenv.h>
#include <stdint.h>
#include <stdlib.h>

#include "gemmkit/gk_parallel.h"
#include "core/gk_alloc.h"

#define GK_POOL_SPIN_NS 100000 /* 0.1 ms */
#define GK_POOL_STACK ((size_t)1 << 20) /* explicit: musl's default is 128 KiB */
#define GK_WAIT_SPINS 2000                /* a caller's spin (pauses) before it sleeps */

/* ---- atomics, thread-local storage, pause --------------------------------------------- */
#if defined(_MSC_VER) && !defined(__clang__)
#include <windows.h>
#include <intrin.h>
typedef volatile long gk_aint;
typedef volatile LONG64 gk_aptr;
static long gk_load(gk_aint *p) { return InterlockedCompareExchange(p, 0, 0); }
static void gk_store(gk_aint *p, long v) { InterlockedExchange(p, v); }
static int gk_cas(gk_aint *p, long expect, long v) { return InterlockedCompareExchange(p, v, expect) == expect; }
static long gk_dec(gk_aint *p) { return InterlockedDecrement(p); }
static LONG64 gk_fetch_inc(gk_aptr *p) { return InterlockedIncrement64(p) - 1; }
#define GK_TLS __declspec(thread)
#if defined(_M_ARM64)
#define gk_pause() __yield()
#else
#define gk_pause() _mm_pause()
#endif
#else
typedef volatile int gk_aint;
typedef volatile ptrdiff_t gk_aptr;
static int gk_load(gk_aint *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void gk_store(gk_aint *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static int gk_cas(gk_aint *p, int expect, int v)
{
    return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static int gk_dec(gk_aint *p) { return __atomic_sub_fetch(p, 1, __ATOMIC_ACQ_REL); }
static ptrdiff_t gk_fetch_inc(gk_aptr *p) { return __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }
#define GK_TLS __thread
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define gk_pause() _mm_pause()
#elif defined(__aarch64__)
#define gk_pause() __asm__ __volatile__("yield")
#else
#define gk_pause() ((void)0)
#endif
#endif

#if defined(_WIN32)
#include <windows.h>
typedef SRWLOCK gk_mutex;
typedef CONDITION_VARIABLE gk_cond;
#define gk_mutex_init(m) InitializeSRWLock(m)
#define gk_lock(m) AcquireSRWLockExclusive(m)
#define gk_unlock(m) ReleaseSRWLockExclusive(m)
#define gk_cond_init(c) InitializeConditionVariable(c)
#define gk_cond_wait(c, m) SleepConditionVariableSRW((c), (m), INFINITE, 0)
#define gk_cond_signal(c) WakeConditionVariable(c)
#define gk_mutex_destroy(m) ((void)(m))
#define gk_cond_destroy(c) ((void)(c))
#define gk_yield() SwitchToThread()
static uint64_t gk_now_ns(void)
{
    LARGE_INTEGER f, t;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t);
    return (uint64_t)((double)t.QuadPart * 1e9 / (double)f.QuadPart);
}
#else
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
typedef pthread_mutex_t gk_mutex;
typedef pthread_cond_t gk_cond;
#define gk_mutex_init(m) pthread_mutex_init((m), NULL)
#define gk_lock(m) pthread_mutex_lock(m)
#define gk_unlock(m) pthread_mutex_unlock(m)
#define gk_cond_init(c) pthread_cond_init((c), NULL)
#define gk_cond_wait(c, m) pthread_cond_wait((c), (m))
#define gk_cond_signal(c) pthread_cond_signal(c)
#define gk_mutex_destroy(m) pthread_mutex_destroy(m)
#define gk_cond_destroy(c) pthread_cond_destroy(c)
#define gk_yield() sched_yield()
static uint64_t gk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* ---- settings ------------------------------------------------------------------------- */

static gk_aint gk_threads_setting = 1;
static GK_TLS int gk_local_threads;  /* 0: none */
static GK_TLS int gk_in_run;         /* this thread is running tasks of a run */

static int clamp_threads(int n) { return n < 1 ? 1 : n > GK_MAX_THREADS ? GK_MAX_THREADS : n; }

void gk_parallel_set_threads(int n) { gk_store(&gk_threads_setting, clamp_threads(n)); }
int gk_parallel_get_threads(void) { return (int)gk_load(&gk_threads_setting); }
void gk_parallel_set_local(int n) { gk_local_threads = n <= 0 ? 0 : clamp_threads(n); }
int gk_parallel_get_local(void) { return gk_local_threads; }
int gk_parallel_threads(void)
{
    return gk_local_threads > 0 ? gk_local_threads : (int)gk_load(&gk_threads_setting);
}

/* ---- the pool ------------------------------------------------------------------------- */

typedef struct gk_job {
    gk_task_fn fn;
    void *ctx;
    ptrdiff_t ntasks;
    gk_aptr next;   /* next task index to hand out */
    gk_aint active; /* claimed workers that have not finished */
    fenv_t fenv;    /* the caller's floating-point environment, which the tasks run in */
    gk_mutex mu;    /* a worker decrements active under it and signals cv at 0, so the */
    gk_cond cv;     /* caller, which waits under it, returns only after that unlock */
} gk_job;

/* A slot's state word: (claim ticket << 2) | W_*.  Each claim takes a new ticket, so a
 * run can take back only the job it posted: a worker that already ran that job, went
 * idle and was claimed and posted by another run carries a newer ticket (without it the
 * first run's take-back would steal the second run's job: both would then wait
 * forever). */
enum { W_IDLE = 0, W_CLAIMED, W_POSTED, W_RUNNING };
#define W_STATE(x) ((x) & 3)
#define W_TICKET(x) ((x) & ~3)
#define W_NEXT_TICKET(x) ((int)((((unsigned)(x) >> 2) + 1u) & 0x1FFFFFFFu) << 2)

typedef struct gk_worker {
    gk_aint state;   /* ticket << 2 | W_* */
    gk_aint seq;     /* jobs posted to this worker (written under mu) */
    gk_job *job;     /* written while CLAIMED; read by the worker once RUNNING */
    int index;
    gk_mutex mu;
    gk_cond cv;
} gk_worker;

static gk_worker *gk_pool[GK_MAX_THREADS];
static gk_aint gk_pool_n;       /* slots in gk_pool that hold a running worker */
static gk_aint gk_pool_growing; /* 1 while one thread creates workers */

int gk_parallel_pool_size(void) { return (int)gk_load(&gk_pool_n); }

static void run_tasks(gk_job *job, int worker)
{
    ptrdiff_t t;
    gk_in_run = 1;
    while ((t = gk_fetch_inc(&job->next)) < job->ntasks)
        job->fn(job->ctx, t, worker);
    gk_in_run = 0;
}

static void worker_loop(gk_worker *w)
{
    int seen = 0;
    for (;;) {
        if (gk_load(&w->seq) == seen) {
            const uint64_t t0 = gk_now_ns();
            for (int i = 1; gk_load(&w->seq) == seen; i++) {
                gk_pause();
                if (i % 64 == 0) {
                    if (gk_now_ns() - t0 > GK_POOL_SPIN_NS)
                        break;
                    gk_yield(); /* threads with work come first (oversubscribed CPUs) */
                }
            }
            gk_lock(&w->mu);
            while (gk_load(&w->seq) == seen)
                gk_cond_wait(&w->cv, &w->mu);
            gk_unlock(&w->mu);
        }
        seen = (int)gk_load(&w->seq);
        /* the job may have been taken back (its run finished without us): then the
         * state is no longer POSTED and the job is not ours to touch */
        const int st = (int)gk_load(&w->state);
        if (W_STATE(st) == W_POSTED && gk_cas(&w->state, st, W_TICKET(st) | W_RUNNING)) {
            gk_job *job = w->job;
            fenv_t own;
            fegetenv(&own);
            fesetenv(&job->fenv);
            run_tasks(job, w->index);
            fesetenv(&own);
            gk_store(&w->state, W_TICKET(st) | W_IDLE);
            gk_lock(&job->mu);
            if (gk_dec(&job->active) == 0)
                gk_cond_signal(&job->cv);
            gk_unlock(&job->mu); /* last touch of job */
        }
    }
}

#if defined(_WIN32)
static DWORD WINAPI worker_main(LPVOID arg)
{
    worker_loop((gk_worker *)arg);
    return 0;
}
static int start_thread(gk_worker *w)
{
    HANDLE h = CreateThread(NULL, GK_POOL_STACK, worker_main, w,
                            STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (h == NULL)
        return -1;
    CloseHandle(h);
    return 0;
}
#else
static void *worker_main(void *arg)
{
    worker_loop((gk_worker *)arg);
    return NULL;
}
static void forget_pool(void)
{
    /* child after fork: only the forking thread exists; slots may be locked, so they are
     * leaked, not reused */
    gk_store(&gk_pool_n, 0);
    gk_store(&gk_pool_growing, 0);
}
static int start_thread(gk_worker *w)
{
    static int atfork_done;
    pthread_attr_t attr;
    pthread_t th;
    sigset_t all, old;
    int rc;
    if (!atfork_done) { /* under gk_pool_growing */
        if (pthread_atfork(NULL, NULL, forget_pool) != 0)
            return -1;
        atfork_done = 1;
    }
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setstacksize(&attr, GK_POOL_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* workers take no signals: Python handles them on its main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&th, &attr, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}
#endif

/* At least `want` workers (fewer if threads cannot be created; one thread grows the
 * pool at a time, the others use what exists). */
static void grow_pool(int want)
{
    int n;
    if (want > GK_MAX_THREADS - 1)
        want = GK_MAX_THREADS - 1;
    if (gk_load(&gk_pool_n) >= want || !gk_cas(&gk_pool_growing, 0, 1))
        return;
    for (n = (int)gk_load(&gk_pool_n); n < want; n++) {
        gk_worker *w = (gk_worker *)gk_aligned_alloc(sizeof(gk_worker));
        if (w == NULL)
            break;
        w->state = W_IDLE; /* ticket 0 */
        w->seq = 0;
        w->job = NULL;
        w->index = 0;
        gk_mutex_init(&w->mu);
        gk_cond_init(&w->cv);
        if (start_thread(w) != 0) {
            gk_aligned_free(w);
            break;
        }
        gk_pool[n] = w;
        gk_store(&gk_pool_n, n + 1); /* publishes the slot */
    }
    gk_store(&gk_pool_growing, 0);
}

void gk_parallel_run(ptrdiff_t ntasks, int max_threads, gk_task_fn fn, void *ctx)
{
    gk_worker *taken[GK_MAX_THREADS];
    int ticket[GK_MAX_THREADS];
    gk_job job;
    int want, got = 0, n;
    if (ntasks <= 0)
        return;
    want = (int)(ntasks < (ptrdiff_t)max_threads ? ntasks : (ptrdiff_t)max_threads) - 1;
    if (want > GK_MAX_THREADS - 1)
        want = GK_MAX_THREADS - 1;
    if (want > 0 && !gk_in_run) {
        grow_pool(want);
        n = (int)gk_load(&gk_pool_n);
        for (int i = 0; i < n && got < want; i++) {
            const int st = (int)gk_load(&gk_pool[i]->state);
            if (W_STATE(st) == W_IDLE &&
                gk_cas(&gk_pool[i]->state, st, W_NEXT_TICKET(st) | W_CLAIMED)) {
                ticket[got] = W_NEXT_TICKET(st);
                taken[got++] = gk_pool[i];
            }
        }
    }
    if (got == 0) { /* one thread: inside a run, a 1-thread setting, or no idle worker */
        for (ptrdiff_t t = 0; t < ntasks; t++)
            fn(ctx, t, 0);
        return;
    }
    job.fn = fn;
    job.ctx = ctx;
    job.ntasks = ntasks;
    job.next = 0;
    job.active = got;
    fegetenv(&job.fenv);
    gk_mutex_init(&job.mu);
    gk_cond_init(&job.cv);
    for (int i = 0; i < got; i++) {
        gk_worker *w = taken[i];
        w->job = &job;
        w->index = i + 1;
        gk_store(&w->state, ticket[i] | W_POSTED); /* publishes job and index */
        gk_lock(&w->mu);
        gk_store(&w->seq, (int)gk_load(&w->seq) + 1);
        gk_cond_signal(&w->cv);
        gk_unlock(&w->mu);
    }
    run_tasks(&job, 0);
    /* no task left: take back the jobs of workers that have not started (no worker
     * will touch the job for them; the count is read under the mutex below) */
    for (int i = 0; i < got; i++)
        if (gk_cas(&taken[i]->state, ticket[i] | W_POSTED, ticket[i] | W_IDLE))
            gk_dec(&job.active);
    /* the running workers finish their last task: spin briefly, then sleep (a worker
     * descheduled on a busy machine must not be waited for by spinning) */
    for (int i = 0; i < GK_WAIT_SPINS && gk_load(&job.active) != 0; i++)
        gk_pause();
    gk_lock(&job.mu);
    while (gk_load(&job.active) != 0)
        gk_cond_wait(&job.cv, &job.mu);
    gk_unlock(&job.mu);
    gk_mutex_destroy(&job.mu);
    gk_cond_destroy(&job.cv);
}

void gk_parallel_for(ptrdiff_t ntasks, gk_task_fn fn, void *ctx)
{
    gk_parallel_run(ntasks, gk_parallel_threads(), fn, ctx);
}

/* ---- output grids ---------------------------------------------------------------------- */

/* Packing one element (read, reorder, write) against one multiply-add, in time: the
 * packers move a few elements per cycle where the kernels do tens of multiply-adds. */
#define GK_GRID_PACK_COST 8.0

static ptrdiff_t ceil_div(ptrdiff_t a, ptrdiff_t b) { return (a + b - 1) / b; }

static volatile double gk_work_scale = 1.0;
void gk_parallel_set_work_scale(double scale) { gk_work_scale = scale < 0 ? 0 : scale; }
double gk_parallel_work_scale(void) { return gk_work_scale; }

static volatile int gk_share_b = 1, gk_parts_per_thread = 1;

void gk_parallel_set_tuning(int share_b, int parts_per_thread)
{
    gk_share_b = share_b != 0;
    gk_parts_per_thread = parts_per_thread < 1 ? 1 : parts_per_thread > 16 ? 16 : parts_per_thread;
}
int gk_parallel_share_b(void) { return gk_share_b; }
int gk_parallel_parts_per_thread(void) { return gk_parts_per_thread; }

int gk_parallel_grid(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, int mr, int nr, double min_work,
                     int parts, int flags, int *tm, int *tn)
{
    const double kk = k > 0 ? (double)k : 1.0;
    const double work = (double)m * (double)n * kk;
    const ptrdiff_t mt = (flags & GK_GRID_ROWS) ? ceil_div(m, mr) : 1, nt = ceil_div(n, nr);
    /* a part reads its columns of a shared B' from cache instead of packing them (read,
     * reorder, write): about half the cost.  Not nothing: on Sapphire Rapids' AMX a
     * bfloat16 part of 64 rows x 1024 columns, reading all its B' from L3, ran 1.4x
     * slower than the square 256 x 256 parts that read a quarter of it */
    const double b_pack = (flags & GK_GRID_B_SHARED) ? 0.5 : 1.0;
    double best = -1.0;
    int T = parts;
    min_work *= gk_work_scale;
    *tm = *tn = 1;
    if (m <= 0 || n <= 0 || T <= 1)
        return 1;
    if (min_work > 0 && work < min_work * T)
        T = (int)(work / min_work);
    if ((double)T > (double)mt * (double)nt)
        T = (int)(mt * nt);
    if (T <= 1)
        return 1;
    for (int a = 1; a <= T; a++) {
        const int b = T / a;
        double rows, cols, cost;
        if (a > mt || b > nt || b < 1)
            continue;
        rows = (double)(ceil_div(mt, a) * mr);
        cols = (double)(ceil_div(nt, b) * nr);
        rows = rows < (double)m ? rows : (double)m;
        cols = cols < (double)n ? cols : (double)n;
        cost = rows * cols * kk + GK_GRID_PACK_COST * (rows + b_pack * cols) * kk;
        if (best < 0 || cost < best || (cost == best && b > *tn)) {
            best = cost;
            *tm = a;
            *tn = b;
        }
    }
    return *tm * *tn;
}

void gk_parallel_grid_part(ptrdiff_t m, ptrdiff_t n, int mr, int nr, int tm, int tn,
                           ptrdiff_t t, ptrdiff_t *m0, ptrdiff_t *m1, ptrdiff_t *n0,
                           ptrdiff_t *n1)
{
    const ptrdiff_t mt = ceil_div(m, mr), nt = ceil_div(n, nr);
    const ptrdiff_t i = t / tn, j = t % tn;
    *m0 = i * mt / tm * mr;
    *m1 = (i + 1) * mt / tm * mr;
    *n0 = j * nt / tn * nr;
    *n1 = (j + 1) * nt / tn * nr;
    if (*m1 > m)
        *m1 = m;
    if (*n1 > n)
        *n1 = n;
}
