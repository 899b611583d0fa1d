/*
 * core_bench: micro-benchmark of the CTimerCore timing core.
 *
 * Measures, and prints as a table (or JSON with --json):
 *   - ns per schedule, cancel (random order), schedule+cancel of the same
 *     timer, churn (schedule a new timer + cancel a random pending one) at
 *     several numbers of pending timers, on a manual loop and on a real loop
 *     (the real loop is never run for these), and ns per callback for
 *     repeating timers firing and re-arming on a manual loop;
 *   - bytes per pending timer (heap growth from mallinfo2 and RSS growth from
 *     /proc/self/statm) with and without tk_loop_reserve;
 *   - allocation calls per schedule, counted by interposing the allocator;
 *   - wake-up lateness of a 1 ms periodic timer on the TimerKit loop against
 *     a bare timerfd + epoll loop, run in alternating rounds.
 *
 * Build (release), from the package root (the generator is the tests' own,
 * Tests/CTimerCoreTests/splitmix64.h):
 *   clang -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -Iinclude \
 *     -ITests/CTimerCoreTests \
 *     Sources/CTimerCore/[all .c files] Benchmarks/CTimerCoreBench/core_bench.c \
 *     -lpthread -ldl -o /tmp/core_bench
 * Run: /tmp/core_bench [--quick] [--json] [--seed N] [--reps N] [--fires N]
 *
 * Every core call is checked; a failing call ends the run with exit status 2
 * rather than producing a figure.
 */
#include "CTimerCore.h"
#include "decimal.h"
#include "proc_self.h"
#include "splitmix64.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Allocation counting
 *
 * malloc, calloc, realloc, reallocarray and the aligned allocators are
 * defined here and forwarded to glibc's __libc_* entry points, counting every
 * call. The core is linked into this executable, so its calls land here.
 * Sanitizer builds bring their own allocator, so counting is off there.
 * ------------------------------------------------------------------------ */

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) ||    \
    __has_feature(thread_sanitizer)
#define BENCH_NO_ALLOC_COUNT 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_NO_ALLOC_COUNT 1
#endif

static _Atomic uint64_t g_alloc_calls;

#ifndef BENCH_NO_ALLOC_COUNT
#define BENCH_ALLOC_COUNTING 1
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static inline void count_alloc(void) {
    atomic_fetch_add_explicit(&g_alloc_calls, 1, memory_order_relaxed);
}

void *malloc(size_t size) {
    count_alloc();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_alloc();
    return __libc_calloc(count, size);
}

void *realloc(void *ptr, size_t size) {
    count_alloc();
    return __libc_realloc(ptr, size);
}

void *reallocarray(void *ptr, size_t count, size_t size) {
    count_alloc();
    if (size != 0 && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(ptr, count * size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_alloc();
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    count_alloc();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    count_alloc();
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
#else
#define BENCH_ALLOC_COUNTING 0
#endif

static inline uint64_t alloc_calls(void) {
    return atomic_load_explicit(&g_alloc_calls, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define MANUAL_START_NS (1000 * NS_PER_S)

/* Deadlines of the operation benchmarks: relative, uniform in
 * [DEADLINE_MIN, DEADLINE_MIN + DEADLINE_SPAN). Nothing ever comes due:
 * manual time does not move and the real loop is never run. */
#define DEADLINE_MIN NS_PER_MS
#define DEADLINE_SPAN (1000 * NS_PER_S)

static _Noreturn void die_rc(const char *what, int64_t rc, int line) {
    fprintf(stderr, "core_bench: line %d: %s failed: %" PRId64 " (%s)\n", line,
            what, rc, rc < 0 ? strerror((int)-rc) : "unexpected value");
    exit(2);
}

static _Noreturn void die_msg(const char *msg, int line) {
    fprintf(stderr, "core_bench: line %d: %s\n", line, msg);
    exit(2);
}

#define CHECK(expr)                                                            \
    do {                                                                       \
        int64_t rc_ = (int64_t)(expr);                                         \
        if (rc_ < 0) die_rc(#expr, rc_, __LINE__);                             \
    } while (0)

#define REQUIRE(cond, msg)                                                     \
    do {                                                                       \
        if (!(cond)) die_msg(msg, __LINE__);                                   \
    } while (0)

static void *xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    REQUIRE(p, "out of memory");
    return p;
}

static inline int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* The tests' generator (splitmix64.h): small, fast and good enough for
 * picking deadlines and victims. */
static uint64_t g_rng;

/* Uniform in [0, n): the high 64 bits of the 128-bit product of a random
 * number and n, from 32-bit halves. */
static inline uint64_t rng_below(uint64_t n) {
    uint64_t x = rng_next(&g_rng);
    uint64_t x0 = x & 0xffffffffu, x1 = x >> 32, n0 = n & 0xffffffffu, n1 = n >> 32;
    uint64_t middle = ((x0 * n0) >> 32) + (x1 * n0 & 0xffffffffu) + (x0 * n1 & 0xffffffffu);
    return x1 * n1 + (x1 * n0 >> 32) + (x0 * n1 >> 32) + (middle >> 32);
}

static inline int64_t rand_deadline(void) {
    return DEADLINE_MIN + (int64_t)rng_below((uint64_t)DEADLINE_SPAN);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nearest-rank percentile of a sorted array. */
static int64_t percentile(const int64_t *sorted, size_t n, double q) {
    if (n == 0) return 0;
    size_t rank = (size_t)(q * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

static tk_timer_spec oneshot_spec(void) {
    tk_timer_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.clock = TK_CLOCK_MONOTONIC;
    spec.delay_ns = 0;
    spec.interval_ns = 0;
    spec.leeway_ns = 0;
    spec.modes = TK_MODES(TK_MODE_DEFAULT);
    spec.flags = 0;
    return spec;
}

static tk_loop_stats loop_stats(tk_loop *loop) {
    tk_loop_stats s;
    CHECK(tk_loop_get_stats(loop, &s));
    return s;
}

static void expect_pending(tk_loop *loop, uint64_t n) {
    tk_loop_stats s = loop_stats(loop);
    if (s.pending != n) {
        fprintf(stderr, "core_bench: pending is %" PRIu64 ", expected %" PRIu64 "\n",
                s.pending, n);
        exit(2);
    }
}

static tk_loop *new_loop(int real) {
    tk_loop *loop = NULL;
    if (real)
        CHECK(tk_loop_create(&loop));
    else
        CHECK(tk_loop_create_manual(&loop, MANUAL_START_NS));
    return loop;
}

static void never_called_cb(tk_loop *loop, tk_timer_id timer, uint64_t missed,
                            void *context) {
    (void)loop;
    (void)timer;
    (void)missed;
    (void)context;
    fprintf(stderr, "core_bench: a timer fired during an operation benchmark\n");
    exit(2);
}

/* ------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------ */

typedef struct config {
    int quick;
    int json;
    uint64_t seed;
    int reps;
    size_t sizes[3];
    int nsizes;
    size_t mem_n;         /* pending timers of the memory and allocation runs */
    uint64_t ops_target;  /* operations per timed repetition */
    int lat_rounds;       /* alternating lateness rounds */
    int lat_per_round;    /* fires per side per round */
    int lat_discard;      /* first fires of each round per side left out */
    int64_t lat_period;   /* period of the lateness timer */
} config;

/* ------------------------------------------------------------------------
 * Operation costs
 * ------------------------------------------------------------------------ */

enum {
    OP_SCHEDULE,
    OP_CANCEL,
    OP_SCHED_CANCEL,
    OP_CHURN,
    OP_FIRE,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "schedule", "cancel", "schedule_cancel", "churn", "fire_rearm"};

typedef struct ops_row {
    int real;
    size_t pending;
    size_t batch;
    int have[OP_COUNT];
    double ns[OP_COUNT];          /* median ns per op */
    double ns_min[OP_COUNT];      /* fastest repetition */
    double ns_max[OP_COUNT];      /* slowest repetition */
    uint64_t ops[OP_COUNT];       /* ops timed over all repetitions */
    uint64_t allocs[OP_COUNT];    /* allocation calls inside timed regions */
    uint64_t arms[OP_COUNT];      /* timerfd arms inside timed regions */
    uint64_t missed;              /* fire_rearm: missed periods reported */
} ops_row;

typedef struct rep_acc {
    int64_t ns;
    uint64_t ops;
} rep_acc;

static void finish_op(ops_row *row, int op, double *per_rep, int reps) {
    double lo = per_rep[0], hi = per_rep[0];
    for (int i = 1; i < reps; i++) {
        if (per_rep[i] < lo) lo = per_rep[i];
        if (per_rep[i] > hi) hi = per_rep[i];
    }
    row->ns_min[op] = lo;
    row->ns_max[op] = hi;
    row->ns[op] = median(per_rep, reps);
    row->have[op] = 1;
}

static uint64_t arms_of(tk_loop *loop, int real) {
    return real ? loop_stats(loop).arms : 0;
}

/*
 * schedule, cancel, schedule+cancel and churn at `n` pending timers.
 *
 * schedule/cancel: each batch schedules `b` new timers (pending n -> n+b),
 * then cancels `b` timers picked at random among all pending ones, in random
 * order (pending n+b -> n). The two halves are timed separately.
 * schedule+cancel: schedules a timer and cancels it at once (pending stays n).
 * churn: schedules a new timer and cancels a random pending one.
 * Deadlines and victims are drawn before each timed batch.
 */
static void bench_ops(const config *cfg, int real, size_t n, ops_row *row) {
    tk_loop *loop = new_loop(real);
    size_t b = n / 8;
    if (b < 128) b = 128;
    row->real = real;
    row->pending = n;
    row->batch = b;

    tk_timer_id *pool = xmalloc((n + b) * sizeof *pool);
    int64_t *dbuf = xmalloc(b * sizeof *dbuf);
    size_t *ibuf = xmalloc(b * sizeof *ibuf);
    double *per_rep_a = xmalloc((size_t)cfg->reps * sizeof(double));
    double *per_rep_b = xmalloc((size_t)cfg->reps * sizeof(double));
    size_t pool_n = 0;
    tk_timer_spec spec = oneshot_spec();

    for (size_t i = 0; i < n; i++) {
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &pool[pool_n++]));
    }
    expect_pending(loop, n);

    /* schedule, then cancel (random victims, random order) */
    for (int rep = -1; rep < cfg->reps; rep++) {
        rep_acc s = {0, 0}, c = {0, 0};
        uint64_t al_s = 0, al_c = 0, ar_s = 0, ar_c = 0;
        while (s.ops < cfg->ops_target) {
            for (size_t i = 0; i < b; i++) dbuf[i] = rand_deadline();
            int rc = 0;
            uint64_t arms0 = arms_of(loop, real);
            uint64_t a0 = alloc_calls();
            int64_t t0 = mono_ns();
            for (size_t i = 0; i < b; i++) {
                spec.delay_ns = dbuf[i];
                rc |= tk_loop_schedule(loop, &spec, never_called_cb, NULL,
                                       &pool[pool_n + i]);
            }
            int64_t t1 = mono_ns();
            uint64_t a1 = alloc_calls();
            uint64_t arms1 = arms_of(loop, real);
            CHECK(rc);
            pool_n += b;
            s.ns += t1 - t0;
            s.ops += b;
            al_s += a1 - a0;
            ar_s += arms1 - arms0;

            /* Move b random victims to the tail, in random order. */
            for (size_t i = 0; i < b; i++) {
                size_t j = (size_t)rng_below(pool_n - i);
                tk_timer_id tmp = pool[j];
                pool[j] = pool[pool_n - 1 - i];
                pool[pool_n - 1 - i] = tmp;
            }
            tk_timer_id *victims = &pool[pool_n - b];
            rc = 0;
            arms0 = arms_of(loop, real);
            a0 = alloc_calls();
            t0 = mono_ns();
            for (size_t i = 0; i < b; i++) rc |= tk_loop_cancel(loop, victims[i]);
            t1 = mono_ns();
            a1 = alloc_calls();
            arms1 = arms_of(loop, real);
            CHECK(rc);
            pool_n -= b;
            c.ns += t1 - t0;
            c.ops += b;
            al_c += a1 - a0;
            ar_c += arms1 - arms0;
        }
        if (rep < 0) continue; /* warm-up */
        per_rep_a[rep] = (double)s.ns / (double)s.ops;
        per_rep_b[rep] = (double)c.ns / (double)c.ops;
        row->ops[OP_SCHEDULE] += s.ops;
        row->ops[OP_CANCEL] += c.ops;
        row->allocs[OP_SCHEDULE] += al_s;
        row->allocs[OP_CANCEL] += al_c;
        row->arms[OP_SCHEDULE] += ar_s;
        row->arms[OP_CANCEL] += ar_c;
    }
    finish_op(row, OP_SCHEDULE, per_rep_a, cfg->reps);
    finish_op(row, OP_CANCEL, per_rep_b, cfg->reps);
    expect_pending(loop, n);

    /* schedule + cancel of the same timer */
    for (int rep = -1; rep < cfg->reps; rep++) {
        rep_acc s = {0, 0};
        uint64_t al = 0, ar = 0;
        while (s.ops < cfg->ops_target) {
            for (size_t i = 0; i < b; i++) dbuf[i] = rand_deadline();
            int rc = 0;
            uint64_t arms0 = arms_of(loop, real);
            uint64_t a0 = alloc_calls();
            int64_t t0 = mono_ns();
            for (size_t i = 0; i < b; i++) {
                tk_timer_id id = TK_TIMER_NONE;
                spec.delay_ns = dbuf[i];
                rc |= tk_loop_schedule(loop, &spec, never_called_cb, NULL, &id);
                rc |= tk_loop_cancel(loop, id);
            }
            int64_t t1 = mono_ns();
            uint64_t a1 = alloc_calls();
            uint64_t arms1 = arms_of(loop, real);
            CHECK(rc);
            s.ns += t1 - t0;
            s.ops += b;
            al += a1 - a0;
            ar += arms1 - arms0;
        }
        if (rep < 0) continue;
        per_rep_a[rep] = (double)s.ns / (double)s.ops;
        row->ops[OP_SCHED_CANCEL] += s.ops;
        row->allocs[OP_SCHED_CANCEL] += al;
        row->arms[OP_SCHED_CANCEL] += ar;
    }
    finish_op(row, OP_SCHED_CANCEL, per_rep_a, cfg->reps);
    expect_pending(loop, n);

    /* churn: schedule a new timer + cancel a random pending one */
    for (int rep = -1; rep < cfg->reps; rep++) {
        rep_acc s = {0, 0};
        uint64_t al = 0, ar = 0;
        while (s.ops < cfg->ops_target) {
            for (size_t i = 0; i < b; i++) {
                dbuf[i] = rand_deadline();
                ibuf[i] = (size_t)rng_below(n);
            }
            int rc = 0;
            uint64_t arms0 = arms_of(loop, real);
            uint64_t a0 = alloc_calls();
            int64_t t0 = mono_ns();
            for (size_t i = 0; i < b; i++) {
                tk_timer_id id = TK_TIMER_NONE;
                spec.delay_ns = dbuf[i];
                rc |= tk_loop_schedule(loop, &spec, never_called_cb, NULL, &id);
                rc |= tk_loop_cancel(loop, pool[ibuf[i]]);
                pool[ibuf[i]] = id;
            }
            int64_t t1 = mono_ns();
            uint64_t a1 = alloc_calls();
            uint64_t arms1 = arms_of(loop, real);
            CHECK(rc);
            s.ns += t1 - t0;
            s.ops += b;
            al += a1 - a0;
            ar += arms1 - arms0;
        }
        if (rep < 0) continue;
        per_rep_a[rep] = (double)s.ns / (double)s.ops;
        row->ops[OP_CHURN] += s.ops;
        row->allocs[OP_CHURN] += al;
        row->arms[OP_CHURN] += ar;
    }
    finish_op(row, OP_CHURN, per_rep_a, cfg->reps);
    expect_pending(loop, n);

    CHECK(tk_loop_destroy(loop));
    free(pool);
    free(dbuf);
    free(ibuf);
    free(per_rep_a);
    free(per_rep_b);
}

typedef struct fire_ctx {
    uint64_t callbacks;
    uint64_t missed;
} fire_ctx;

static void fire_cb(tk_loop *loop, tk_timer_id timer, uint64_t missed,
                    void *context) {
    (void)loop;
    (void)timer;
    fire_ctx *ctx = context;
    ctx->callbacks++;
    ctx->missed += missed;
}

/*
 * fire+re-arm on a manual loop: `n` repeating timers with intervals uniform
 * in [P, 2P) and first deadlines uniform in [0, P), P = 1 s of manual time.
 * tk_loop_advance moves time in steps that fire about one batch each; the
 * figure is wall time per callback (each callback re-arms its timer).
 */
static void bench_fire(const config *cfg, size_t n, ops_row *row) {
    const int64_t period = NS_PER_S;
    tk_loop *loop = new_loop(0);
    fire_ctx ctx = {0, 0};
    tk_timer_spec spec = oneshot_spec();
    size_t b = row->batch;
    double *per_rep = xmalloc((size_t)cfg->reps * sizeof(double));

    for (size_t i = 0; i < n; i++) {
        tk_timer_id id;
        spec.interval_ns = period + (int64_t)rng_below((uint64_t)period);
        spec.delay_ns = (int64_t)rng_below((uint64_t)period);
        CHECK(tk_loop_schedule(loop, &spec, fire_cb, &ctx, &id));
    }
    expect_pending(loop, n);

    /* About n / (1.5 P) timers come due per ns of manual time. */
    int64_t step = (int64_t)(1.5 * (double)period * (double)b / (double)n);
    if (step < 1) step = 1;

    /* Warm-up: fire about min(n, ops_target) callbacks. */
    uint64_t warm = cfg->ops_target < n ? cfg->ops_target : n;
    while (ctx.callbacks < warm) CHECK(tk_loop_advance(loop, TK_MODES(TK_MODE_DEFAULT), step));

    for (int rep = 0; rep < cfg->reps; rep++) {
        rep_acc s = {0, 0};
        uint64_t al = 0;
        while (s.ops < cfg->ops_target) {
            uint64_t before = ctx.callbacks;
            uint64_t a0 = alloc_calls();
            int64_t t0 = mono_ns();
            int64_t ran = tk_loop_advance(loop, TK_MODES(TK_MODE_DEFAULT), step);
            int64_t t1 = mono_ns();
            uint64_t a1 = alloc_calls();
            CHECK(ran);
            REQUIRE((uint64_t)ran == ctx.callbacks - before,
                    "tk_loop_advance returned a count different from the "
                    "callbacks run");
            s.ns += t1 - t0;
            s.ops += (uint64_t)ran;
            al += a1 - a0;
        }
        per_rep[rep] = (double)s.ns / (double)s.ops;
        row->ops[OP_FIRE] += s.ops;
        row->allocs[OP_FIRE] += al;
    }
    finish_op(row, OP_FIRE, per_rep, cfg->reps);
    row->missed = ctx.missed;
    expect_pending(loop, n);
    CHECK(tk_loop_destroy(loop));
    free(per_rep);
}

/* ------------------------------------------------------------------------
 * Memory per pending timer
 * ------------------------------------------------------------------------ */

typedef struct mem_snap {
    int64_t uord;  /* mallinfo2 uordblks: bytes in use in the arenas */
    int64_t hblkhd; /* mallinfo2 hblkhd: bytes in mmap-ed chunks */
    int64_t rss;   /* resident bytes, /proc/self/statm */
} mem_snap;

typedef struct mem_result {
    int ok;
    int reserved;
    size_t n;
    mem_snap created;  /* delta: empty loop */
    mem_snap reserve;  /* delta: tk_loop_reserve(n) alone */
    mem_snap total;    /* delta: empty loop -> n pending (incl. reserve) */
    uint64_t allocs;   /* allocation calls while scheduling the n timers */
} mem_result;

static mem_snap snap(void) {
    struct mallinfo2 mi = mallinfo2();
    mem_snap s;
    s.uord = (int64_t)mi.uordblks;
    s.hblkhd = (int64_t)mi.hblkhd;
    s.rss = proc_rss_bytes();
    return s;
}

static mem_snap snap_delta(mem_snap a, mem_snap b) {
    mem_snap d = {b.uord - a.uord, b.hblkhd - a.hblkhd, b.rss - a.rss};
    return d;
}

static void mem_child(size_t n, int reserved, mem_result *r) {
    tk_timer_spec spec = oneshot_spec();
    tk_loop *loop = NULL;
    mem_snap s0 = snap();
    CHECK(tk_loop_create_manual(&loop, MANUAL_START_NS));
    mem_snap s1 = snap();
    if (reserved) CHECK(tk_loop_reserve(loop, TK_CLOCK_MONOTONIC, (uint32_t)n));
    mem_snap s2 = snap();
    uint64_t a0 = alloc_calls();
    for (size_t i = 0; i < n; i++) {
        tk_timer_id id;
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &id));
    }
    uint64_t a1 = alloc_calls();
    mem_snap s3 = snap();
    expect_pending(loop, n);
    r->ok = 1;
    r->reserved = reserved;
    r->n = n;
    r->created = snap_delta(s0, s1);
    r->reserve = snap_delta(s1, s2);
    r->total = snap_delta(s1, s3);
    r->allocs = a1 - a0;
    CHECK(tk_loop_destroy(loop));
}

/* Each measurement runs in a fresh child so that memory freed by an earlier
 * run cannot be reused and hide growth. */
static mem_result bench_memory(size_t n, int reserved) {
    mem_result r;
    memset(&r, 0, sizeof r);
    int fds[2];
    REQUIRE(pipe(fds) == 0, "pipe failed");
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork failed");
    if (pid == 0) {
        close(fds[0]);
        mem_child(n, reserved, &r);
        ssize_t w = write(fds[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)sizeof r || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "core_bench: memory measurement child failed (status %d)\n",
                status);
        exit(2);
    }
    return r;
}

/* ------------------------------------------------------------------------
 * Allocation calls per schedule
 * ------------------------------------------------------------------------ */

typedef struct alloc_result {
    size_t n;
    uint64_t growth_calls;      /* fresh loop, no reserve, 0 -> n */
    uint64_t growth_schedules;
    uint64_t reserved_calls;    /* fresh loop, reserve(n), 0 -> n */
    uint64_t reserved_schedules;
    uint64_t steady_calls;      /* after warm-up, n pending */
    uint64_t steady_schedules;
} alloc_result;

static void bench_allocs(const config *cfg, alloc_result *r) {
    size_t n = cfg->mem_n;
    tk_timer_spec spec = oneshot_spec();
    tk_timer_id *pool = xmalloc(n * sizeof *pool);
    memset(r, 0, sizeof *r);
    r->n = n;

    /* Growth: fresh loop, no reserve. */
    tk_loop *loop = new_loop(0);
    uint64_t a0 = alloc_calls();
    for (size_t i = 0; i < n; i++) {
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &pool[i]));
    }
    r->growth_calls = alloc_calls() - a0;
    r->growth_schedules = n;

    /* Warm-up churn, then steady state: churn, schedule+cancel, and a full
     * drain and refill, all at or below the size already reached. */
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)rng_below(n);
        tk_timer_id id;
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &id));
        CHECK(tk_loop_cancel(loop, pool[k]));
        pool[k] = id;
    }
    uint64_t schedules = 0;
    a0 = alloc_calls();
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)rng_below(n);
        tk_timer_id id;
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &id));
        CHECK(tk_loop_cancel(loop, pool[k]));
        pool[k] = id;
        schedules++;
    }
    for (size_t i = 0; i < n; i++) {
        tk_timer_id id;
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &id));
        CHECK(tk_loop_cancel(loop, id));
        schedules++;
    }
    for (size_t i = 0; i < n; i++) CHECK(tk_loop_cancel(loop, pool[i]));
    for (size_t i = 0; i < n; i++) {
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &pool[i]));
        schedules++;
    }
    r->steady_calls = alloc_calls() - a0;
    r->steady_schedules = schedules;
    expect_pending(loop, n);
    CHECK(tk_loop_destroy(loop));

    /* Reserved: "scheduling up to that many never allocates". */
    loop = new_loop(0);
    CHECK(tk_loop_reserve(loop, TK_CLOCK_MONOTONIC, (uint32_t)n));
    a0 = alloc_calls();
    for (size_t i = 0; i < n; i++) {
        spec.delay_ns = rand_deadline();
        CHECK(tk_loop_schedule(loop, &spec, never_called_cb, NULL, &pool[i]));
    }
    r->reserved_calls = alloc_calls() - a0;
    r->reserved_schedules = n;
    CHECK(tk_loop_destroy(loop));
    free(pool);
}

/* ------------------------------------------------------------------------
 * Wake-up lateness
 * ------------------------------------------------------------------------ */

typedef struct lat_side {
    int64_t *samples; /* lateness of each kept fire, ns */
    size_t count;
    uint64_t missed;  /* whole periods skipped */
    uint64_t early;   /* fires before their deadline (never expected) */
} lat_side;

typedef struct lat_ctx {
    int64_t first;
    int64_t period;
    uint64_t fires;
    uint64_t skipped;
    uint64_t target;
    int discard;
    lat_side *side;
} lat_ctx;

static void record_lateness(lat_side *side, int64_t late, uint64_t index,
                            int discard) {
    if (late < 0) side->early++;
    if (index >= (uint64_t)discard) side->samples[side->count++] = late;
}

static void lat_cb(tk_loop *loop, tk_timer_id timer, uint64_t missed,
                   void *context) {
    (void)timer;
    int64_t now = mono_ns();
    lat_ctx *c = context;
    if (c->fires >= c->target) return;
    /* Measured against the deadline this fire was waiting for; `missed`
     * whole periods after it are skipped. */
    int64_t deadline = c->first + (int64_t)(c->fires + c->skipped) * c->period;
    record_lateness(c->side, now - deadline, c->fires, c->discard);
    c->skipped += missed;
    c->side->missed += missed;
    c->fires++;
    if (c->fires == c->target) tk_loop_stop(loop);
}

static void lat_round_timerkit(const config *cfg, tk_loop *loop, lat_side *side,
                               tk_loop_stats *delta) {
    lat_ctx c;
    memset(&c, 0, sizeof c);
    c.period = cfg->lat_period;
    c.target = (uint64_t)cfg->lat_per_round;
    c.discard = cfg->lat_discard;
    c.side = side;
    c.first = mono_ns() + 2 * cfg->lat_period;

    tk_timer_spec spec = oneshot_spec();
    spec.deadline_ns = c.first;
    spec.interval_ns = cfg->lat_period;
    spec.leeway_ns = 0;
    spec.flags = TK_TIMER_ABSOLUTE;
    tk_loop_stats s0 = loop_stats(loop);
    tk_timer_id id;
    CHECK(tk_loop_schedule(loop, &spec, lat_cb, &c, &id));
    /* A generous time limit, so that a loop that never fires cannot hang
     * the benchmark. */
    int64_t until = c.first + (int64_t)c.target * c.period * 20 + 5 * NS_PER_S;
    int rc = tk_loop_run(loop, TK_MODES(TK_MODE_DEFAULT), until, 0);
    CHECK(rc);
    REQUIRE(rc == TK_RUN_STOPPED && c.fires == c.target,
            "the TimerKit lateness round did not complete (timer did not fire "
            "often enough before the time limit)");
    CHECK(tk_loop_cancel(loop, id));
    tk_loop_stats s1 = loop_stats(loop);
    delta->wakeups += s1.wakeups - s0.wakeups;
    delta->arms += s1.arms - s0.arms;
    delta->fired += s1.fired - s0.fired;
}

static void lat_round_bare(const config *cfg, int tfd, int ep, lat_side *side) {
    const int64_t period = cfg->lat_period;
    const int64_t first = mono_ns() + 2 * period;
    uint64_t k = 0; /* grid index of the next deadline */
    for (uint64_t fires = 0; fires < (uint64_t)cfg->lat_per_round; fires++) {
        int64_t deadline = first + (int64_t)k * period;
        struct itimerspec its;
        memset(&its, 0, sizeof its);
        its.it_value.tv_sec = deadline / NS_PER_S;
        its.it_value.tv_nsec = deadline % NS_PER_S;
        REQUIRE(timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0,
                "timerfd_settime failed");
        struct epoll_event ev[4];
        int got;
        do {
            got = epoll_wait(ep, ev, 4, -1);
        } while (got < 0 && errno == EINTR);
        REQUIRE(got > 0, "epoll_wait failed");
        uint64_t expirations;
        REQUIRE(read(tfd, &expirations, sizeof expirations) == sizeof expirations,
                "timerfd read failed");
        int64_t now = mono_ns();
        record_lateness(side, now - deadline, fires, cfg->lat_discard);
        /* Next grid point; skip whole periods that already passed, as a
         * repeating TimerKit timer does. */
        k++;
        if (first + (int64_t)k * period <= now) {
            uint64_t next = (uint64_t)((now - first) / period) + 1;
            side->missed += next - k;
            k = next;
        }
    }
}

typedef struct lat_stats {
    int64_t p50, p90, p99, max, min;
    double mean;
} lat_stats;

static lat_stats summarize(lat_side *side) {
    lat_stats s;
    memset(&s, 0, sizeof s);
    if (!side->count) return s;
    qsort(side->samples, side->count, sizeof *side->samples, cmp_i64);
    s.p50 = percentile(side->samples, side->count, 0.50);
    s.p90 = percentile(side->samples, side->count, 0.90);
    s.p99 = percentile(side->samples, side->count, 0.99);
    s.max = side->samples[side->count - 1];
    s.min = side->samples[0];
    double sum = 0;
    for (size_t i = 0; i < side->count; i++) sum += (double)side->samples[i];
    s.mean = sum / (double)side->count;
    return s;
}

typedef struct lat_result {
    lat_side tk, bare;
    lat_stats tk_s, bare_s;
    tk_loop_stats tk_delta;
    int64_t slack_ns;
} lat_result;

static void bench_lateness(const config *cfg, lat_result *r) {
    size_t per_side = (size_t)cfg->lat_rounds * (size_t)cfg->lat_per_round;
    memset(r, 0, sizeof *r);
    r->tk.samples = xmalloc(per_side * sizeof(int64_t));
    r->bare.samples = xmalloc(per_side * sizeof(int64_t));
    CHECK(tk_timer_slack(&r->slack_ns));

    tk_loop *loop = new_loop(1);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    REQUIRE(tfd >= 0, "timerfd_create failed");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    REQUIRE(ep >= 0, "epoll_create1 failed");
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.fd = tfd;
    REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) == 0, "epoll_ctl failed");

    for (int round = 0; round < cfg->lat_rounds; round++) {
        if (round % 2 == 0) {
            lat_round_timerkit(cfg, loop, &r->tk, &r->tk_delta);
            lat_round_bare(cfg, tfd, ep, &r->bare);
        } else {
            lat_round_bare(cfg, tfd, ep, &r->bare);
            lat_round_timerkit(cfg, loop, &r->tk, &r->tk_delta);
        }
    }
    close(ep);
    close(tfd);
    CHECK(tk_loop_destroy(loop));
    r->tk_s = summarize(&r->tk);
    r->bare_s = summarize(&r->bare);
}

/* ------------------------------------------------------------------------
 * Machine description
 * ------------------------------------------------------------------------ */

typedef struct machine {
    long nproc;
    char cpu[128];
    char kernel[128];
    double clock_read_ns;
} machine;

static void describe_machine(machine *m) {
    memset(m, 0, sizeof *m);
    m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(m->cpu, sizeof m->cpu, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *p = strchr(line, ':');
                if (p) {
                    p++;
                    while (*p == ' ' || *p == '\t') p++;
                    p[strcspn(p, "\n")] = 0;
                    snprintf(m->cpu, sizeof m->cpu, "%s", p);
                }
                break;
            }
        }
        fclose(f);
    }
    struct utsname u;
    if (uname(&u) == 0) snprintf(m->kernel, sizeof m->kernel, "%s", u.release);

    /* Cost of one clock_gettime(CLOCK_MONOTONIC): median of a few runs. */
    double runs[5];
    for (int r = 0; r < 5; r++) {
        const int reads = 100000;
        volatile int64_t sink = 0;
        int64_t t0 = mono_ns();
        for (int i = 0; i < reads; i++) sink = mono_ns();
        int64_t t1 = mono_ns();
        (void)sink;
        runs[r] = (double)(t1 - t0) / reads;
    }
    m->clock_read_ns = median(runs, 5);
}

/* ------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------ */

#define TARGET_SCHED_CANCEL_NS 60.0
#define TARGET_BYTES 48.0
#define TARGET_LATENESS_RATIO 1.1

typedef struct results {
    machine mach;
    ops_row *rows;
    int nrows;
    mem_result mem_reserved, mem_unreserved;
    alloc_result allocs;
    lat_result lat;
} results;

static double per_timer(int64_t bytes, size_t n) {
    return (double)bytes / (double)n;
}

static double ratio(int64_t a, int64_t b) {
    return b > 0 ? (double)a / (double)b : 0.0;
}

static const ops_row *largest_row(const results *res, int real) {
    const ops_row *best = NULL;
    for (int i = 0; i < res->nrows; i++)
        if (res->rows[i].real == real && (!best || res->rows[i].pending > best->pending))
            best = &res->rows[i];
    return best;
}

static int fire_rearm_allocs(const results *res) {
    uint64_t total = 0;
    for (int i = 0; i < res->nrows; i++) total += res->rows[i].allocs[OP_FIRE];
    return total != 0;
}

static void print_table(const config *cfg, const results *res) {
    const machine *m = &res->mach;
    printf("CTimerCore micro-benchmark%s\n", cfg->quick ? " (--quick: small sizes, not the full run)" : "");
    printf("machine: %ld CPUs, %s, kernel %s; clock_gettime(MONOTONIC) %.1f ns\n",
           m->nproc, m->cpu, m->kernel, m->clock_read_ns);
    printf("seed %" PRIu64 ", %d repetitions per figure (median shown), "
           "allocation counting %s\n\n",
           cfg->seed, cfg->reps, BENCH_ALLOC_COUNTING ? "on" : "OFF (sanitizer build)");

    printf("Operation cost, ns per op (median; one-shot MONOTONIC timers, random "
           "relative deadlines, leeway 0, mode 0)\n");
    printf("%-7s %9s %9s %9s %13s %9s %12s %7s\n", "loop", "pending", "schedule",
           "cancel", "sched+cancel", "churn", "fire+re-arm", "allocs");
    for (int i = 0; i < res->nrows; i++) {
        const ops_row *r = &res->rows[i];
        uint64_t allocs = 0;
        for (int op = 0; op < OP_COUNT; op++) allocs += r->allocs[op];
        char fire[32];
        if (r->have[OP_FIRE])
            snprintf(fire, sizeof fire, "%.1f", r->ns[OP_FIRE]);
        else
            snprintf(fire, sizeof fire, "-");
        printf("%-7s %9zu %9.1f %9.1f %13.1f %9.1f %12s %7" PRIu64 "\n",
               r->real ? "real" : "manual", r->pending, r->ns[OP_SCHEDULE],
               r->ns[OP_CANCEL], r->ns[OP_SCHED_CANCEL], r->ns[OP_CHURN], fire,
               allocs);
    }
    printf("  sched+cancel and churn are ns per pair (one schedule + one cancel);\n"
           "  fire+re-arm is ns per callback of repeating timers on tk_loop_advance "
           "(manual loop only);\n"
           "  allocs = allocation calls inside all timed batches of the row "
           "(after one warm-up repetition).\n");
    printf("  spread (min..max over repetitions):\n");
    for (int i = 0; i < res->nrows; i++) {
        const ops_row *r = &res->rows[i];
        printf("    %-6s %8zu:", r->real ? "real" : "manual", r->pending);
        for (int op = 0; op < OP_COUNT; op++) {
            if (!r->have[op]) continue;
            printf(" %s %.1f..%.1f", op_names[op], r->ns_min[op], r->ns_max[op]);
        }
        printf("\n");
    }
    printf("  real loop, timerfd arms per op:");
    for (int i = 0; i < res->nrows; i++) {
        const ops_row *r = &res->rows[i];
        if (!r->real) continue;
        printf(" [%zu: sched %.4f cancel %.4f s+c %.4f churn %.4f]", r->pending,
               ratio((int64_t)r->arms[OP_SCHEDULE], (int64_t)r->ops[OP_SCHEDULE]),
               ratio((int64_t)r->arms[OP_CANCEL], (int64_t)r->ops[OP_CANCEL]),
               ratio((int64_t)r->arms[OP_SCHED_CANCEL], (int64_t)r->ops[OP_SCHED_CANCEL]),
               ratio((int64_t)r->arms[OP_CHURN], (int64_t)r->ops[OP_CHURN]));
    }
    printf("\n\n");

    printf("Memory per pending timer at %zu pending (manual loop, each in a fresh "
           "process; growth from the empty loop)\n", res->mem_reserved.n);
    printf("%-12s %16s %16s %16s %14s\n", "", "heap B/timer", "uordblks B/timer",
           "RSS B/timer", "reserve alone");
    const mem_result *mems[2] = {&res->mem_reserved, &res->mem_unreserved};
    for (int i = 0; i < 2; i++) {
        const mem_result *mr = mems[i];
        char reserve[48];
        if (mr->reserved)
            snprintf(reserve, sizeof reserve, "%.1f/%.1f",
                     per_timer(mr->reserve.uord + mr->reserve.hblkhd, mr->n),
                     per_timer(mr->reserve.rss, mr->n));
        else
            snprintf(reserve, sizeof reserve, "-");
        printf("%-12s %16.1f %16.1f %16.1f %14s\n",
               mr->reserved ? "reserved" : "not reserved",
               per_timer(mr->total.uord + mr->total.hblkhd, mr->n),
               per_timer(mr->total.uord, mr->n), per_timer(mr->total.rss, mr->n),
               reserve);
    }
    printf("  heap = mallinfo2 uordblks + hblkhd (large blocks are mmap-ed and "
           "only show in hblkhd);\n"
           "  reserve alone = heap/RSS B per timer right after tk_loop_reserve, "
           "before scheduling;\n"
           "  empty loop: %" PRId64 " heap bytes, %" PRId64 " RSS bytes.\n\n",
           res->mem_reserved.created.uord + res->mem_reserved.created.hblkhd,
           res->mem_reserved.created.rss);

    const alloc_result *a = &res->allocs;
    printf("Allocation calls (malloc/calloc/realloc/aligned) per schedule, %zu timers\n",
           a->n);
    printf("  growth, no reserve, 0 -> %zu pending:   %.6f per schedule (%" PRIu64
           " calls)\n", a->n, ratio((int64_t)a->growth_calls, (int64_t)a->growth_schedules),
           a->growth_calls);
    printf("  after tk_loop_reserve(%zu), 0 -> %zu:    %.6f per schedule (%" PRIu64
           " calls)\n", a->n, a->n,
           ratio((int64_t)a->reserved_calls, (int64_t)a->reserved_schedules),
           a->reserved_calls);
    printf("  steady state after warm-up (%" PRIu64 " schedules): %.6f per schedule (%" PRIu64
           " calls)\n\n", a->steady_schedules,
           ratio((int64_t)a->steady_calls, (int64_t)a->steady_schedules), a->steady_calls);

    const lat_result *l = &res->lat;
    printf("Wake-up lateness of a %.3f ms periodic timer, us (fire time - deadline, "
           "CLOCK_MONOTONIC)\n", (double)cfg->lat_period / NS_PER_MS);
    printf("  %d alternating rounds x %d fires per side, first %d fires of each "
           "round left out; timer slack %" PRId64 " ns\n",
           cfg->lat_rounds, cfg->lat_per_round, cfg->lat_discard, l->slack_ns);
    printf("  %-22s %8s %8s %8s %8s %8s %8s %7s %6s\n", "", "min", "p50", "p90",
           "p99", "max", "mean", "missed", "early");
    const lat_stats *ss[2] = {&l->tk_s, &l->bare_s};
    const lat_side *sd[2] = {&l->tk, &l->bare};
    const char *names[2] = {"TimerKit tk_loop_run", "bare timerfd+epoll"};
    for (int i = 0; i < 2; i++)
        printf("  %-22s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %7" PRIu64 " %6" PRIu64 "\n",
               names[i], ss[i]->min / 1e3, ss[i]->p50 / 1e3, ss[i]->p90 / 1e3,
               ss[i]->p99 / 1e3, ss[i]->max / 1e3, ss[i]->mean / 1e3, sd[i]->missed,
               sd[i]->early);
    printf("  ratio TimerKit/bare: p50 %.2f, p99 %.2f\n",
           ratio(l->tk_s.p50, l->bare_s.p50), ratio(l->tk_s.p99, l->bare_s.p99));
    uint64_t tk_fires = l->tk_delta.fired ? l->tk_delta.fired : 1;
    printf("  TimerKit loop per fire: %.2f wakeups, %.2f timerfd arms\n\n",
           (double)l->tk_delta.wakeups / (double)tk_fires,
           (double)l->tk_delta.arms / (double)tk_fires);

    printf("Targets%s\n", cfg->quick ? " (evaluated at the largest size of this quick run)" : "");
    const ops_row *mr = largest_row(res, 0), *rr = largest_row(res, 1);
    printf("  schedule+cancel <= %.0f ns/op at %zu pending: manual %.1f ns/pair (%.1f "
           "per call) %s; real %.1f ns/pair (%.1f per call) %s\n",
           TARGET_SCHED_CANCEL_NS, mr->pending, mr->ns[OP_SCHED_CANCEL],
           mr->ns[OP_SCHED_CANCEL] / 2,
           mr->ns[OP_SCHED_CANCEL] <= TARGET_SCHED_CANCEL_NS ? "MET" : "NOT MET",
           rr->ns[OP_SCHED_CANCEL], rr->ns[OP_SCHED_CANCEL] / 2,
           rr->ns[OP_SCHED_CANCEL] <= TARGET_SCHED_CANCEL_NS ? "MET" : "NOT MET");
    double b_res = per_timer(res->mem_reserved.total.uord + res->mem_reserved.total.hblkhd,
                             res->mem_reserved.n);
    double b_unres = per_timer(res->mem_unreserved.total.uord + res->mem_unreserved.total.hblkhd,
                               res->mem_unreserved.n);
    printf("  <= %.0f bytes per pending timer (heap): reserved %.1f %s; not reserved "
           "%.1f %s\n", TARGET_BYTES, b_res, b_res <= TARGET_BYTES ? "MET" : "NOT MET",
           b_unres, b_unres <= TARGET_BYTES ? "MET" : "NOT MET");
    if (BENCH_ALLOC_COUNTING)
        printf("  0 mallocs per schedule in steady state: %" PRIu64 " calls in %" PRIu64
               " schedules %s; after reserve %s; fire+re-arm %s\n",
               a->steady_calls, a->steady_schedules, a->steady_calls == 0 ? "MET" : "NOT MET",
               a->reserved_calls == 0 ? "0 (MET)" : "NOT MET",
               fire_rearm_allocs(res) ? "allocates" : "0");
    else
        printf("  0 mallocs per schedule in steady state: not measured (sanitizer build)\n");
    double r50 = ratio(l->tk_s.p50, l->bare_s.p50), r99 = ratio(l->tk_s.p99, l->bare_s.p99);
    printf("  lateness within %.1fx of bare timerfd+epoll: p50 %.2f %s, p99 %.2f %s\n",
           TARGET_LATENESS_RATIO, r50, r50 <= TARGET_LATENESS_RATIO ? "MET" : "NOT MET", r99,
           r99 <= TARGET_LATENESS_RATIO ? "MET" : "NOT MET");
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_mem(const char *name, const mem_result *m, int last) {
    printf("    \"%s\": {\"pending\": %zu, \"heap_bytes_per_timer\": %.3f, "
           "\"uordblks_bytes_per_timer\": %.3f, \"hblkhd_bytes_per_timer\": %.3f, "
           "\"rss_bytes_per_timer\": %.3f, \"reserve_heap_bytes_per_timer\": %.3f, "
           "\"reserve_rss_bytes_per_timer\": %.3f, \"empty_loop_heap_bytes\": %" PRId64
           ", \"empty_loop_rss_bytes\": %" PRId64 ", \"alloc_calls\": %" PRIu64 "}%s\n",
           name, m->n, per_timer(m->total.uord + m->total.hblkhd, m->n),
           per_timer(m->total.uord, m->n), per_timer(m->total.hblkhd, m->n),
           per_timer(m->total.rss, m->n),
           per_timer(m->reserve.uord + m->reserve.hblkhd, m->n),
           per_timer(m->reserve.rss, m->n), m->created.uord + m->created.hblkhd,
           m->created.rss, m->allocs, last ? "" : ",");
}

static void json_lat(const char *name, const lat_side *sd, const lat_stats *s,
                     int last) {
    printf("    \"%s\": {\"samples\": %zu, \"min_ns\": %" PRId64 ", \"p50_ns\": %" PRId64
           ", \"p90_ns\": %" PRId64 ", \"p99_ns\": %" PRId64 ", \"max_ns\": %" PRId64
           ", \"mean_ns\": %.1f, \"missed_periods\": %" PRIu64 ", \"early\": %" PRIu64 "}%s\n",
           name, sd->count, s->min, s->p50, s->p90, s->p99, s->max, s->mean, sd->missed,
           sd->early, last ? "" : ",");
}

static void print_json(const config *cfg, const results *res) {
    const machine *m = &res->mach;
    printf("{\n  \"quick\": %s,\n  \"seed\": %" PRIu64 ",\n  \"repetitions\": %d,\n",
           cfg->quick ? "true" : "false", cfg->seed, cfg->reps);
    printf("  \"alloc_counting\": %s,\n", BENCH_ALLOC_COUNTING ? "true" : "false");
    printf("  \"machine\": {\"nproc\": %ld, \"cpu\": ", m->nproc);
    json_string(m->cpu);
    printf(", \"kernel\": ");
    json_string(m->kernel);
    printf(", \"clock_read_ns\": %.2f},\n", m->clock_read_ns);

    printf("  \"ops\": [\n");
    for (int i = 0; i < res->nrows; i++) {
        const ops_row *r = &res->rows[i];
        printf("    {\"loop\": \"%s\", \"pending\": %zu, \"batch\": %zu",
               r->real ? "real" : "manual", r->pending, r->batch);
        for (int op = 0; op < OP_COUNT; op++) {
            if (!r->have[op]) {
                printf(", \"%s\": null", op_names[op]);
                continue;
            }
            printf(", \"%s\": {\"ns_median\": %.3f, \"ns_min\": %.3f, \"ns_max\": %.3f, "
                   "\"ops\": %" PRIu64 ", \"alloc_calls\": %" PRIu64 ", \"arms\": %" PRIu64 "}",
                   op_names[op], r->ns[op], r->ns_min[op], r->ns_max[op], r->ops[op],
                   r->allocs[op], r->arms[op]);
        }
        if (r->have[OP_FIRE]) printf(", \"fire_missed\": %" PRIu64, r->missed);
        printf("}%s\n", i + 1 < res->nrows ? "," : "");
    }
    printf("  ],\n");

    printf("  \"memory\": {\n");
    json_mem("reserved", &res->mem_reserved, 0);
    json_mem("not_reserved", &res->mem_unreserved, 1);
    printf("  },\n");

    const alloc_result *a = &res->allocs;
    printf("  \"allocs_per_schedule\": {\"timers\": %zu, \"growth\": %.6f, "
           "\"growth_calls\": %" PRIu64 ", \"reserved\": %.6f, \"reserved_calls\": %" PRIu64
           ", \"steady\": %.6f, \"steady_calls\": %" PRIu64 ", \"steady_schedules\": %" PRIu64
           "},\n",
           a->n, ratio((int64_t)a->growth_calls, (int64_t)a->growth_schedules),
           a->growth_calls, ratio((int64_t)a->reserved_calls, (int64_t)a->reserved_schedules),
           a->reserved_calls, ratio((int64_t)a->steady_calls, (int64_t)a->steady_schedules),
           a->steady_calls, a->steady_schedules);

    const lat_result *l = &res->lat;
    printf("  \"lateness\": {\n    \"period_ns\": %" PRId64 ", \"rounds\": %d, "
           "\"fires_per_round\": %d, \"discarded_per_round\": %d, \"timer_slack_ns\": %" PRId64
           ",\n", cfg->lat_period, cfg->lat_rounds, cfg->lat_per_round, cfg->lat_discard,
           l->slack_ns);
    json_lat("timerkit", &l->tk, &l->tk_s, 0);
    json_lat("bare", &l->bare, &l->bare_s, 0);
    printf("    \"timerkit_wakeups\": %" PRIu64 ", \"timerkit_arms\": %" PRIu64
           ", \"timerkit_fired\": %" PRIu64 ",\n",
           l->tk_delta.wakeups, l->tk_delta.arms, l->tk_delta.fired);
    printf("    \"ratio_p50\": %.4f, \"ratio_p99\": %.4f\n  },\n",
           ratio(l->tk_s.p50, l->bare_s.p50), ratio(l->tk_s.p99, l->bare_s.p99));

    const ops_row *mr = largest_row(res, 0), *rr = largest_row(res, 1);
    double b_res = per_timer(res->mem_reserved.total.uord + res->mem_reserved.total.hblkhd,
                             res->mem_reserved.n);
    double b_unres = per_timer(res->mem_unreserved.total.uord + res->mem_unreserved.total.hblkhd,
                               res->mem_unreserved.n);
    double r50 = ratio(l->tk_s.p50, l->bare_s.p50), r99 = ratio(l->tk_s.p99, l->bare_s.p99);
    printf("  \"targets\": {\n");
    printf("    \"schedule_cancel_ns_at_largest\": {\"pending\": %zu, \"manual\": %.3f, "
           "\"real\": %.3f, \"limit\": %.0f, \"met_manual\": %s, \"met_real\": %s},\n",
           mr->pending, mr->ns[OP_SCHED_CANCEL], rr->ns[OP_SCHED_CANCEL],
           TARGET_SCHED_CANCEL_NS,
           mr->ns[OP_SCHED_CANCEL] <= TARGET_SCHED_CANCEL_NS ? "true" : "false",
           rr->ns[OP_SCHED_CANCEL] <= TARGET_SCHED_CANCEL_NS ? "true" : "false");
    printf("    \"bytes_per_timer\": {\"reserved\": %.3f, \"not_reserved\": %.3f, "
           "\"limit\": %.0f, \"met_reserved\": %s, \"met_not_reserved\": %s},\n",
           b_res, b_unres, TARGET_BYTES, b_res <= TARGET_BYTES ? "true" : "false",
           b_unres <= TARGET_BYTES ? "true" : "false");
    if (BENCH_ALLOC_COUNTING)
        printf("    \"zero_allocs_steady\": {\"met\": %s, \"reserved_met\": %s, "
               "\"fire_rearm_allocates\": %s},\n",
               a->steady_calls == 0 ? "true" : "false",
               a->reserved_calls == 0 ? "true" : "false",
               fire_rearm_allocs(res) ? "true" : "false");
    else
        printf("    \"zero_allocs_steady\": null,\n");
    printf("    \"lateness_ratio\": {\"p50\": %.4f, \"p99\": %.4f, \"limit\": %.1f, "
           "\"met_p50\": %s, \"met_p99\": %s}\n",
           r50, r99, TARGET_LATENESS_RATIO, r50 <= TARGET_LATENESS_RATIO ? "true" : "false",
           r99 <= TARGET_LATENESS_RATIO ? "true" : "false");
    printf("  }\n}\n");
}

/* ------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------ */

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--quick] [--json] [--seed N] [--reps N] [--fires N]\n"
            "  --quick   small sizes and few fires (a smoke run of a few seconds)\n"
            "  --json    print the figures as JSON instead of a table\n"
            "  --seed N  seed of the random deadlines and victims (default 1)\n"
            "  --reps N  timed repetitions per figure, median reported "
            "(default 5, quick 3)\n"
            "  --fires N lateness fires kept per side, in alternating rounds of 50\n"
            "            (default 2000, quick 100)\n"
            "Progress goes to stderr; results to stdout.\n",
            argv0);
}

__attribute__((format(printf, 1, 2))) static void progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("core_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int main(int argc, char **argv) {
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 1;
    int reps = 0;
    long fires = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            cfg.quick = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            cfg.json = 1;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            uint64_t seed;
            if (bench_decimal(argv[++i], 0, UINT64_MAX, &seed) != 0) {
                usage(argv[0]);
                return 64;
            }
            cfg.seed = seed;
        } else if (strcmp(argv[i], "--fires") == 0 && i + 1 < argc) {
            uint64_t number;
            if (bench_decimal(argv[++i], 1, 10000000, &number) != 0) {
                usage(argv[0]);
                return 64;
            }
            fires = (long)number;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            uint64_t number;
            if (bench_decimal(argv[++i], 1, 1000000, &number) != 0) {
                usage(argv[0]);
                return 64;
            }
            reps = (int)number;
        } else {
            usage(argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 64;
        }
    }
    if (cfg.quick) {
        cfg.reps = 3;
        cfg.sizes[0] = 1000;
        cfg.sizes[1] = 10000;
        cfg.nsizes = 2;
        cfg.mem_n = 100000;
        cfg.ops_target = 20000;
        cfg.lat_rounds = 2;
        cfg.lat_per_round = 52;
        cfg.lat_discard = 2;
    } else {
        cfg.reps = 5;
        cfg.sizes[0] = 1000;
        cfg.sizes[1] = 100000;
        cfg.sizes[2] = 1000000;
        cfg.nsizes = 3;
        cfg.mem_n = 1000000;
        cfg.ops_target = 500000;
        cfg.lat_rounds = 40;
        cfg.lat_per_round = 52;
        cfg.lat_discard = 2;
    }
    if (reps) cfg.reps = reps;
    if (fires) {
        /* Rounds of 50 kept fires per side, rounded up. */
        int kept = cfg.lat_per_round - cfg.lat_discard;
        cfg.lat_rounds = (int)((fires + kept - 1) / kept);
        if (cfg.lat_rounds < 2) cfg.lat_rounds = 2;
    }
    cfg.lat_period = NS_PER_MS;
    g_rng = cfg.seed;

    results res;
    memset(&res, 0, sizeof res);

    /* Memory first, in children forked from a still small heap. */
    progress("memory at %zu pending (reserved)", cfg.mem_n);
    res.mem_reserved = bench_memory(cfg.mem_n, 1);
    progress("memory at %zu pending (not reserved)", cfg.mem_n);
    res.mem_unreserved = bench_memory(cfg.mem_n, 0);

    describe_machine(&res.mach);

    res.rows = xmalloc((size_t)cfg.nsizes * 2 * sizeof *res.rows);
    memset(res.rows, 0, (size_t)cfg.nsizes * 2 * sizeof *res.rows);
    for (int real = 0; real < 2; real++) {
        for (int s = 0; s < cfg.nsizes; s++) {
            ops_row *row = &res.rows[res.nrows++];
            progress("operations, %s loop, %zu pending", real ? "real" : "manual",
                     cfg.sizes[s]);
            bench_ops(&cfg, real, cfg.sizes[s], row);
            if (!real) {
                progress("fire+re-arm, manual loop, %zu pending", cfg.sizes[s]);
                bench_fire(&cfg, cfg.sizes[s], row);
            }
        }
    }

    progress("allocation calls, %zu timers", cfg.mem_n);
    bench_allocs(&cfg, &res.allocs);

    progress("lateness, %d rounds x %d fires per side", cfg.lat_rounds,
             cfg.lat_per_round);
    bench_lateness(&cfg, &res.lat);

    if (cfg.json)
        print_json(&cfg, &res);
    else
        print_table(&cfg, &res);
    free(res.rows);
    free(res.lat.tk.samples);
    free(res.lat.bare.samples);
    return 0;
}
