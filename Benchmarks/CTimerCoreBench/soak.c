/*
 * soak: a long run of the CTimerCore loop under load, with every timer
 * accounted for and the process's memory and descriptors sampled over time.
 *
 * One thread runs a real loop (tk_loop_run). Worker threads (4 by default)
 * schedule, cancel and reschedule into it continuously (--rate steps a
 * second each, 50,000 by default; a step makes one core call, or two when it
 * schedules a long one-shot and cancels it at once, and one step in 8,192
 * also wakes the loop: about 1.17 calls on average),
 * keeping about --timers pending (100,000 by default):
 *   - long one-shots (deadlines 2 to 26 hours out, on all three clocks),
 *     cancelled, rescheduled and replaced: the bulk of the pending timers;
 *   - short one-shots (1 ms to 1 s, with leeway) that fire, some cancelled or
 *     rescheduled while they may be firing;
 *   - repeating timers (periods 20 ms to 1 s, with leeway) on an absolute
 *     grid, cancelled by the workers or by their own callback, and re-gridded
 *     by their own callback now and then;
 *   - pipes and eventfds that the workers write to and the loop reads, each
 *     watched and unwatched over time by the worker that owns it;
 *   - tk_loop_wakeup now and then;
 *   - every 2 s a callback that sleeps 50 ms, so that repeating timers with
 *     shorter periods skip some (their `missed` counts).
 *
 * Accounting (any mismatch is an error: the run exits 1):
 *   - the release handler sees every context exactly once; a release of a
 *     record that is not in use, or a second one, is an error; at the end
 *     every record scheduled has been released;
 *   - a one-shot fires exactly once, or was cancelled successfully and never
 *     fired, or was still pending at the end (then cancelled, or released by
 *     tk_loop_destroy) and never fired; a cancel or reschedule that finds it
 *     gone (-ENOENT) means it fired;
 *   - no callback is early: each reads the timer's clock (clock_gettime, not
 *     the library) and compares with the deadline it was given;
 *   - a repeating timer's fires plus its `missed` counts are the periods
 *     elapsed on its grid: each fire is for the grid point
 *     first + (periods counted so far + missed) * interval, which must have
 *     passed, and the loop's next deadline for it (tk_loop_timer_info) must be
 *     the grid point right after;
 *   - the loop's own counters agree: its `fired` is the sum of the
 *     callbacks, its `pending` at the end the records not yet released;
 *   - every byte (eventfd: every count) written to a channel is read, by the
 *     loop's callbacks or by the final drain;
 *   - a timer still pending more than 60 s after its deadline when it was
 *     cancelled or the run ended was lost by the loop. This is the only
 *     bound on lateness, and it only catches a loop that stopped firing.
 *
 * Every --sample-seconds (5) the main thread samples the resident set
 * (/proc/self/statm), the open descriptors (/proc/self/fd), the heap in use
 * (mallinfo2) and the loop's counters, and prints a line. At the end it
 * prints the curve as a table (and with --csv PATH writes it as CSV) and a
 * verdict: after the warm-up (--warmup, default a tenth of the run), the
 * resident set is flat when its spread (max - min) is at most 2 % of its
 * minimum or 256 KiB, whichever is larger, and the descriptor count must
 * not move at all. Not flat exits 3.
 *
 * The program allocates its bookkeeping before the run; the workers, the
 * callbacks and the sampler allocate nothing (the files under /proc are read
 * with open/read/getdents64), so what the curve shows is the core's.
 *
 * Build (release), from the package root; scripts/soak.sh does this and runs it:
 *   cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -Iinclude \
 *     -ITests/CTimerCoreTests \
 *     Sources/CTimerCore/[all .c files] Benchmarks/CTimerCoreBench/soak.c \
 *     -lpthread -o build/release/soak
 * Run: build/release/soak [--seconds N] [--sample-seconds N] [--warmup N]
 *      [--timers N] [--workers N] [--rate N] [--seed N] [--csv PATH]
 *
 * Exit status: 0 clean and flat, 1 an accounting error, 2 a setup failure,
 * 3 clean but not flat, 64 a bad option.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"
#include "decimal.h"
#include "proc_self.h"
#include "splitmix64.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)

/* A timer due this long before it was cancelled, or before the run ended,
 * was lost: the loop stopped firing. */
#define LOST_AFTER (60 * SEC)

enum {
    MAX_WORKERS = 16,
    CHANNELS_PER_WORKER = 2,
    MAX_CHANNELS = MAX_WORKERS * CHANNELS_PER_WORKER,
    SHORTS_PER_WORKER = 250,  /* short one-shots in flight per worker */
    REPEATS_PER_WORKER = 100, /* repeating timers per worker */
    POOL_SLACK = 2048,        /* records released but not yet taken back */
    TICK_MS = 5,              /* a worker paces itself every 5 ms */
    MAX_ERRORS_SHOWN = 20,
    LATENESS_BUCKETS = 40,    /* log2 buckets of microseconds */
};

#define STALL_EVERY (2 * SEC)
#define STALL_FOR (50 * MS)

/* ------------------------------------------------------------------------
 * Errors: counted from any thread; the first few are printed as they come.
 * ------------------------------------------------------------------------ */

static atomic_ulong g_errors;

__attribute__((format(printf, 1, 2))) static void soak_error(const char *fmt, ...) {
    unsigned long n = atomic_fetch_add(&g_errors, 1) + 1;
    if (n > MAX_ERRORS_SHOWN) return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "soak: ERROR: %s\n", line);
}

/* The clocks read directly, not through the library under test. */
static int64_t sys_now(tk_clock clock) {
    static const clockid_t ids[TK_CLOCK_COUNT] = {CLOCK_MONOTONIC, CLOCK_BOOTTIME,
                                                  CLOCK_REALTIME};
    struct timespec ts;
    clock_gettime(ids[clock], &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void sleep_until(int64_t monotonic_ns) {
    struct timespec ts = {(time_t)(monotonic_ns / SEC), (long)(monotonic_ns % SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* ------------------------------------------------------------------------
 * Timer records
 *
 * One record per scheduled timer, taken from its worker's pool and given
 * back only by that worker, once the release handler has handed it over
 * (through the worker's `returned` stack). Fields are written by the worker
 * before the timer is scheduled; after that the callback's fields belong to
 * the loop's thread, and the worker reads them once the record is back.
 * ------------------------------------------------------------------------ */

enum kind { KIND_FREE, KIND_LONG, KIND_SHORT, KIND_REPEAT, KIND_COUNT };

static const char *const kind_names[KIND_COUNT] = {"free", "long one-shot", "short one-shot",
                                                   "repeating"};

/* What the worker (or the end of the run) did to a record's timer. */
enum outcome {
    OUT_NONE,
    OUT_CANCELLED,     /* tk_loop_cancel returned 0 */
    OUT_FOUND_GONE,    /* a cancel or reschedule returned -ENOENT: it fired */
};

typedef struct soak_timer {
    struct soak_timer *_Atomic next; /* the returned stack, or the free list */
    _Atomic uint64_t id;             /* 0 until tk_loop_schedule returned */
    /* One-shot: the earliest time it may fire. Repeating: its grid's first
     * point. On the record's clock. */
    _Atomic int64_t first;
    int64_t interval;   /* repeating: the grid's period */
    uint64_t covered;   /* repeating: fires + missed on the current grid */
    uint32_t fires;     /* callbacks (loop thread) */
    _Atomic uint32_t releases;
    uint32_t live_index; /* in its worker's live array of its kind */
    uint8_t kind;
    uint8_t owner;
    uint8_t clock;
    uint8_t outcome;        /* worker */
    uint8_t self_cancelled; /* loop thread: its callback cancelled it */
    uint8_t at_destroy;     /* released by tk_loop_destroy */
} soak_timer;

/* Counts a worker keeps (plain: read by the main thread after the join). */
typedef struct ledger {
    uint64_t scheduled[KIND_COUNT];
    uint64_t fired[KIND_COUNT];         /* one-shots that fired (once) */
    uint64_t cancelled[KIND_COUNT];     /* cancelled by a worker or at the end */
    uint64_t self_cancelled;            /* repeating, by its own callback */
    uint64_t destroyed[KIND_COUNT];     /* released by tk_loop_destroy */
    uint64_t found_gone;                /* cancels and reschedules that found it fired */
    uint64_t rescheduled;
    uint64_t writes, write_full, toggles, wakeups, pool_dry;
} ledger;

typedef struct channel {
    int is_pipe;
    int read_fd, write_fd;
    int watched; /* owner worker only, then the main thread */
    _Atomic uint64_t written;  /* bytes, or eventfd counts */
    _Atomic uint64_t read;     /* by the loop's callbacks */
    _Atomic uint64_t events;   /* callbacks */
} channel;

typedef struct worker {
    _Alignas(64) soak_timer *_Atomic returned; /* released records, pushed by any thread */
    _Alignas(64) _Atomic uint64_t ops;         /* core calls made, sampled live */
    _Alignas(64) int index;
    pthread_t thread;
    uint64_t rng;
    soak_timer *pool;
    uint32_t pool_size;
    soak_timer *free_list;
    soak_timer **live[KIND_COUNT];
    uint32_t live_count[KIND_COUNT];
    uint32_t target[KIND_COUNT];
    ledger book;
    int64_t max_overdue; /* ns, of a timer let go unfired */
} worker;

/* ------------------------------------------------------------------------
 * Globals
 * ------------------------------------------------------------------------ */

typedef struct options {
    int seconds;
    int interval;
    int warmup; /* -1: a tenth of the run */
    uint32_t timers;
    int workers;
    long rate; /* core calls per second per worker; 0: as fast as possible */
    uint64_t seed;
    const char *csv;
} options;

static tk_loop *g_loop;
static worker g_workers[MAX_WORKERS];
static int g_worker_count;
static channel g_channels[MAX_CHANNELS];
static int g_channel_count;
static atomic_int g_stop_workers;
static atomic_int g_ready_workers;
static atomic_int g_destroying;
static _Atomic uint64_t g_wakeup_calls;
static _Atomic uint64_t g_releases;

/* The stall timer (see on_stall): its callbacks, and its one release. */
static struct {
    uint64_t fires;
    atomic_int releases;
} g_stall;

/* Loop thread only. */
static uint64_t g_lateness[LATENESS_BUCKETS]; /* one-shot fires, by log2 of µs late */
static uint64_t g_loop_fires;
static uint64_t g_repeat_fires, g_repeat_missed;
static char g_read_buffer[4096];

/* ------------------------------------------------------------------------
 * Records: pool, free list, live arrays, the returned stack
 * ------------------------------------------------------------------------ */

static void push_returned(worker *w, soak_timer *t) {
    soak_timer *head = atomic_load_explicit(&w->returned, memory_order_relaxed);
    do {
        atomic_store_explicit(&t->next, head, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&w->returned, &head, t, memory_order_release,
                                                    memory_order_relaxed));
}

static void live_add(worker *w, soak_timer *t) {
    t->live_index = w->live_count[t->kind];
    w->live[t->kind][w->live_count[t->kind]++] = t;
}

static void live_remove(worker *w, soak_timer *t) {
    soak_timer **live = w->live[t->kind];
    uint32_t last = --w->live_count[t->kind];
    if (t->live_index != last) {
        live[t->live_index] = live[last];
        live[t->live_index]->live_index = t->live_index;
    }
}

static soak_timer *random_live(worker *w, enum kind kind) {
    uint32_t count = w->live_count[kind];
    return count ? w->live[kind][rng_next(&w->rng) % count] : NULL;
}

static void free_record(worker *w, soak_timer *t) {
    atomic_store_explicit(&t->id, 0, memory_order_relaxed);
    atomic_store_explicit(&t->releases, 0, memory_order_relaxed);
    t->kind = KIND_FREE;
    t->fires = 0;
    t->covered = 0;
    t->outcome = OUT_NONE;
    t->self_cancelled = 0;
    t->at_destroy = 0;
    atomic_store_explicit(&t->next, w->free_list, memory_order_relaxed);
    w->free_list = t;
}

static void note_overdue(worker *w, int64_t overdue) {
    if (overdue > w->max_overdue) w->max_overdue = overdue;
    if (overdue > LOST_AFTER) {
        soak_error("a timer was let go %.1f s after its deadline without firing",
                   (double)overdue / SEC);
    }
}

/* Checks a released record against what happened to it, books it and frees
 * it. Worker thread (or the main thread once the workers have ended). */
static void retire(worker *w, soak_timer *t) {
    ledger *book = &w->book;
    enum kind kind = (enum kind)t->kind;
    int64_t now = sys_now((tk_clock)t->clock);
    if (kind == KIND_REPEAT) {
        int ways = (t->outcome == OUT_CANCELLED) + t->self_cancelled + t->at_destroy;
        if (ways != 1) {
            soak_error("repeating timer released %s (worker cancel %d, own cancel %d, "
                       "destroy %d)",
                       ways ? "for two reasons" : "though nothing cancelled it",
                       t->outcome == OUT_CANCELLED, t->self_cancelled, t->at_destroy);
        }
        if (t->self_cancelled) {
            book->self_cancelled++;
        } else if (t->at_destroy) {
            book->destroyed[kind]++;
        } else {
            book->cancelled[kind]++;
        }
        if (!t->self_cancelled) {
            int64_t next = atomic_load_explicit(&t->first, memory_order_relaxed) +
                           (int64_t)t->covered * t->interval;
            note_overdue(w, now - next);
        }
    } else if (t->outcome == OUT_CANCELLED) {
        if (t->fires != 0) {
            soak_error("%s cancelled successfully but fired %u times", kind_names[kind],
                       t->fires);
        }
        book->cancelled[kind]++;
        note_overdue(w, now - atomic_load_explicit(&t->first, memory_order_relaxed));
    } else if (t->fires == 1) {
        book->fired[kind]++;
    } else if (t->fires == 0 && t->at_destroy && t->outcome == OUT_NONE) {
        book->destroyed[kind]++;
        note_overdue(w, now - atomic_load_explicit(&t->first, memory_order_relaxed));
    } else {
        soak_error("%s released after %u fires (%s)", kind_names[kind], t->fires,
                   t->outcome == OUT_FOUND_GONE ? "a cancel had found it gone"
                   : t->at_destroy              ? "at destroy"
                                                : "not cancelled");
    }
    if (t->kind == KIND_FREE) soak_error("a free record came back");
    live_remove(w, t);
    free_record(w, t);
}

/* Takes back every record released since the last call. */
static void drain_returned(worker *w) {
    soak_timer *t = atomic_exchange_explicit(&w->returned, NULL, memory_order_acquire);
    while (t != NULL) {
        soak_timer *next = atomic_load_explicit(&t->next, memory_order_relaxed);
        retire(w, t);
        t = next;
    }
}

static soak_timer *take_record(worker *w, enum kind kind, tk_clock clock) {
    if (w->free_list == NULL) drain_returned(w);
    soak_timer *t = w->free_list;
    if (t == NULL) {
        w->book.pool_dry++;
        return NULL;
    }
    w->free_list = atomic_load_explicit(&t->next, memory_order_relaxed);
    t->kind = (uint8_t)kind;
    t->clock = (uint8_t)clock;
    /* Live before it is scheduled: it may fire and come back at once. */
    live_add(w, t);
    return t;
}

/* ------------------------------------------------------------------------
 * Callbacks (the loop's thread, or for releases any thread)
 * ------------------------------------------------------------------------ */

static void on_release(tk_loop *loop, void *context) {
    (void)loop;
    if (context == &g_stall) {
        if (atomic_fetch_add(&g_stall.releases, 1) != 0) {
            soak_error("the stall timer was released twice");
        }
        return;
    }
    soak_timer *t = context;
    atomic_fetch_add_explicit(&g_releases, 1, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&t->releases, 1, memory_order_relaxed) != 0) {
        soak_error("a context was released twice (%s)", kind_names[t->kind]);
        return; /* it is on a stack already */
    }
    if (t->kind == KIND_FREE || t->owner >= g_worker_count) {
        soak_error("a released context is not a record in use");
        return;
    }
    if (atomic_load_explicit(&g_destroying, memory_order_relaxed)) t->at_destroy = 1;
    push_returned(&g_workers[t->owner], t);
}

static void check_id(const soak_timer *t, tk_timer_id id) {
    uint64_t stored = atomic_load_explicit(&t->id, memory_order_relaxed);
    if (stored != 0 && stored != id) soak_error("a callback came with another timer's handle");
}

static void note_lateness(int64_t late_ns) {
    uint64_t us = late_ns > 0 ? (uint64_t)late_ns / 1000 : 0;
    int bucket = us == 0 ? 0 : 64 - __builtin_clzll(us);
    if (bucket >= LATENESS_BUCKETS) bucket = LATENESS_BUCKETS - 1;
    g_lateness[bucket]++;
}

static void on_one_shot(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop;
    soak_timer *t = context;
    g_loop_fires++;
    if (t->kind != KIND_LONG && t->kind != KIND_SHORT) {
        soak_error("a one-shot callback for a %s record", kind_names[t->kind]);
        return;
    }
    check_id(t, id);
    if (missed != 0) soak_error("a one-shot fired with missed %" PRIu64, missed);
    int64_t late = sys_now((tk_clock)t->clock) - atomic_load_explicit(&t->first,
                                                                      memory_order_relaxed);
    if (late < 0) soak_error("a one-shot fired %" PRId64 " ns early", -late);
    note_lateness(late);
    if (++t->fires > 1) soak_error("a one-shot fired %u times", t->fires);
}

static uint64_t g_repeat_rng = 0x5eed; /* loop thread */

static void on_repeat(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    soak_timer *t = context;
    g_loop_fires++;
    if (t->kind != KIND_REPEAT) {
        soak_error("a repeating callback for a %s record", kind_names[t->kind]);
        return;
    }
    check_id(t, id);
    tk_clock clock = (tk_clock)t->clock;
    int64_t now = sys_now(clock);
    int64_t first = atomic_load_explicit(&t->first, memory_order_relaxed);
    /* This fire is for the grid point after the `missed` ones it skipped. */
    int64_t point = first + (int64_t)(t->covered + missed) * t->interval;
    if (point > now) soak_error("a repeating timer fired %" PRId64 " ns early", point - now);
    t->covered += 1 + missed;
    t->fires++;
    g_repeat_fires++;
    g_repeat_missed += missed;
    tk_timer_info info;
    int rc = tk_loop_timer_info(loop, id, &info);
    if (rc == 0) {
        int64_t next = first + (int64_t)t->covered * t->interval;
        if (info.deadline_ns != next) {
            soak_error("a repeating timer's next deadline is %" PRId64 " ns off its grid "
                       "(%" PRIu64 " periods counted, missed %" PRIu64 ")",
                       info.deadline_ns - next, t->covered, missed);
        }
    } else if (rc != -ENOENT) { /* -ENOENT: a worker cancelled it meanwhile */
        soak_error("tk_loop_timer_info from a callback: %s", tk_strerror(rc));
    }
    uint64_t roll = rng_next(&g_repeat_rng) % 1000;
    if (roll < 2) {
        t->self_cancelled = 1;
        rc = tk_loop_cancel(loop, id);
        if (rc == -ENOENT) t->self_cancelled = 0; /* a worker's cancel came first */
        else if (rc != 0) soak_error("cancel from its own callback: %s", tk_strerror(rc));
    } else if (roll < 12) {
        /* A new grid: another period and phase, from its own callback. */
        int64_t interval = 20 * MS + (int64_t)(rng_next(&g_repeat_rng) % (980 * MS));
        tk_timer_spec spec = {.clock = clock,
                              .deadline_ns = now + (int64_t)(rng_next(&g_repeat_rng) %
                                                             (uint64_t)interval),
                              .interval_ns = interval,
                              .leeway_ns = interval / 8,
                              .flags = TK_TIMER_ABSOLUTE};
        rc = tk_loop_reschedule(loop, id, &spec);
        if (rc == 0) {
            atomic_store_explicit(&t->first, spec.deadline_ns, memory_order_relaxed);
            t->interval = interval;
            t->covered = 0;
        } else if (rc != -ENOENT) {
            soak_error("reschedule from its own callback: %s", tk_strerror(rc));
        }
    }
}

/* Reads everything waiting in a channel; returns the bytes (eventfd: the count). */
static uint64_t drain_channel(channel *c) {
    uint64_t total = 0;
    for (;;) {
        ssize_t got = read(c->read_fd, g_read_buffer,
                           c->is_pipe ? sizeof g_read_buffer : sizeof(uint64_t));
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) soak_error("reading a channel: %s", strerror(errno));
            return total;
        }
        if (got == 0) return total;
        if (c->is_pipe) {
            total += (uint64_t)got;
        } else {
            uint64_t count;
            memcpy(&count, g_read_buffer, sizeof count);
            return total + count;
        }
    }
}

static void on_channel(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)loop;
    (void)events;
    channel *c = context;
    if (fd != c->read_fd) soak_error("a watch callback for another descriptor");
    atomic_fetch_add_explicit(&c->events, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->read, drain_channel(c), memory_order_relaxed);
}

/* Every STALL_EVERY the loop's thread sleeps in a callback for STALL_FOR,
 * so that the repeating timers with shorter periods skip some (missed). */
static void on_stall(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop;
    (void)id;
    (void)missed;
    (void)context;
    g_loop_fires++;
    g_stall.fires++;
    struct timespec pause = {0, (long)STALL_FOR};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
}

static void on_wakeup(tk_loop *loop, void *context) {
    (void)loop;
    (void)context;
    atomic_fetch_add_explicit(&g_wakeup_calls, 1, memory_order_relaxed);
}

static void *loop_main(void *arg) {
    (void)arg;
    int rc = tk_loop_run(g_loop, TK_MODES(TK_MODE_DEFAULT), TK_FOREVER, 0);
    if (rc != TK_RUN_STOPPED) soak_error("tk_loop_run returned %d (%s)", rc, tk_strerror(rc));
    return NULL;
}

/* ------------------------------------------------------------------------
 * Workers
 * ------------------------------------------------------------------------ */

static uint64_t below(worker *w, uint64_t n) { return rng_next(&w->rng) % n; }

static tk_mode_set random_modes(worker *w) {
    static const tk_mode_set sets[] = {0, TK_MODES(TK_MODE_DEFAULT), TK_MODES_ALL,
                                       TK_MODES(TK_MODE_DEFAULT) | TK_MODES(3)};
    return sets[below(w, sizeof sets / sizeof sets[0])];
}

/* A spec for a new first fire of a timer of `kind` on `clock`; `*first` is
 * the earliest it may come, and for a repeating timer `*interval` its
 * period. Relative or absolute, at random (a repeating timer is always on an
 * absolute grid). */
static tk_timer_spec make_spec(worker *w, enum kind kind, tk_clock clock, int64_t *first,
                               int64_t *interval) {
    tk_timer_spec spec = {.clock = clock, .modes = random_modes(w)};
    int64_t delay;
    switch (kind) {
    case KIND_LONG:
        delay = 2 * HOUR + (int64_t)below(w, 24 * (uint64_t)HOUR);
        spec.leeway_ns = (int64_t)below(w, (uint64_t)SEC);
        break;
    case KIND_SHORT:
        delay = MS + (int64_t)below(w, 999 * (uint64_t)MS);
        spec.leeway_ns = below(w, 3) == 0 ? 0 : delay / 10;
        break;
    default: /* KIND_REPEAT */
        *interval = 20 * MS + (int64_t)below(w, 980 * (uint64_t)MS);
        spec.interval_ns = *interval;
        spec.leeway_ns = below(w, 2) ? 0 : *interval / 4;
        delay = (int64_t)below(w, (uint64_t)*interval);
        break;
    }
    int64_t now = sys_now(clock);
    if (kind == KIND_REPEAT || below(w, 2)) {
        spec.flags = TK_TIMER_ABSOLUTE;
        spec.deadline_ns = now + delay;
    } else {
        spec.delay_ns = delay;
    }
    *first = now + delay;
    return spec;
}

static tk_clock random_clock(worker *w, enum kind kind) {
    uint64_t roll = below(w, 10);
    if (kind == KIND_LONG) {
        return roll < 8 ? TK_CLOCK_MONOTONIC : roll < 9 ? TK_CLOCK_BOOTTIME : TK_CLOCK_REALTIME;
    }
    /* Firing timers stay off the wall clock, which may be stepped. */
    return roll < 7 ? TK_CLOCK_MONOTONIC : TK_CLOCK_BOOTTIME;
}

static void count_op(worker *w) {
    atomic_fetch_add_explicit(&w->ops, 1, memory_order_relaxed);
}

static soak_timer *schedule_new(worker *w, enum kind kind) {
    soak_timer *t = take_record(w, kind, random_clock(w, kind));
    if (t == NULL) return NULL;
    int64_t first;
    tk_timer_spec spec = make_spec(w, kind, (tk_clock)t->clock, &first, &t->interval);
    atomic_store_explicit(&t->first, first, memory_order_relaxed);
    tk_timer_id id = TK_TIMER_NONE;
    int rc = tk_loop_schedule(g_loop, &spec, kind == KIND_REPEAT ? on_repeat : on_one_shot, t,
                              &id);
    count_op(w);
    if (rc != 0) {
        soak_error("tk_loop_schedule: %s", tk_strerror(rc));
        live_remove(w, t);
        free_record(w, t);
        return NULL;
    }
    atomic_store_explicit(&t->id, id, memory_order_relaxed);
    w->book.scheduled[kind]++;
    return t;
}

/* Cancels `t` (not yet seen back). Returns the core's result. */
static int cancel_record(worker *w, soak_timer *t) {
    int rc = tk_loop_cancel(g_loop, atomic_load_explicit(&t->id, memory_order_relaxed));
    count_op(w);
    if (rc == 0) {
        t->outcome = OUT_CANCELLED;
    } else if (rc == -ENOENT) {
        /* Fired (a one-shot), or cancelled by its own callback (repeating). */
        if (t->kind != KIND_REPEAT) t->outcome = OUT_FOUND_GONE;
        w->book.found_gone++;
    } else {
        soak_error("tk_loop_cancel: %s", tk_strerror(rc));
    }
    return rc;
}

static void reschedule_record(worker *w, soak_timer *t) {
    int64_t old_first = atomic_load_explicit(&t->first, memory_order_relaxed);
    int64_t new_first, unused;
    tk_timer_spec spec = make_spec(w, (enum kind)t->kind, (tk_clock)t->clock, &new_first, &unused);
    /* Until the call returns it may fire at either time. */
    if (new_first < old_first) atomic_store_explicit(&t->first, new_first, memory_order_relaxed);
    int rc = tk_loop_reschedule(g_loop, atomic_load_explicit(&t->id, memory_order_relaxed),
                                &spec);
    count_op(w);
    if (rc == 0) {
        atomic_store_explicit(&t->first, new_first, memory_order_relaxed);
        w->book.rescheduled++;
    } else if (rc == -ENOENT) {
        t->outcome = OUT_FOUND_GONE;
        w->book.found_gone++;
    } else {
        soak_error("tk_loop_reschedule: %s", tk_strerror(rc));
    }
}

static void write_channel(worker *w) {
    channel *c = &g_channels[below(w, (uint64_t)g_channel_count)];
    static const char bytes[64] = {0};
    uint64_t amount = 1 + below(w, c->is_pipe ? sizeof bytes : 100);
    ssize_t put;
    do {
        put = c->is_pipe ? write(c->write_fd, bytes, (size_t)amount)
                         : write(c->write_fd, &amount, sizeof amount);
    } while (put < 0 && errno == EINTR);
    if (put < 0) {
        if (errno != EAGAIN) soak_error("writing a channel: %s", strerror(errno));
        w->book.write_full++;
        return;
    }
    atomic_fetch_add_explicit(&c->written, c->is_pipe ? (uint64_t)put : amount,
                              memory_order_relaxed);
    w->book.writes++;
}

static void toggle_channel(worker *w) {
    channel *c = &g_channels[w->index * CHANNELS_PER_WORKER + (int)below(w, CHANNELS_PER_WORKER)];
    int rc = c->watched ? tk_loop_unwatch_fd(g_loop, c->read_fd)
                        : tk_loop_watch_fd(g_loop, c->read_fd, TK_IO_READABLE, on_channel, c);
    count_op(w);
    if (rc != 0) {
        soak_error("%s: %s", c->watched ? "tk_loop_unwatch_fd" : "tk_loop_watch_fd",
                   tk_strerror(rc));
        return;
    }
    c->watched = !c->watched;
    w->book.toggles++;
}

/* One step: refill what fell short, else cancel or reschedule something. */
static void step(worker *w, uint64_t n) {
    if (n % 64 == 0) write_channel(w);
    if (n % 4096 == 0) toggle_channel(w);
    if (n % 8192 == 0) {
        int rc = tk_loop_wakeup(g_loop);
        count_op(w);
        if (rc != 0) soak_error("tk_loop_wakeup: %s", tk_strerror(rc));
        w->book.wakeups++;
    }
    if (w->live_count[KIND_SHORT] < w->target[KIND_SHORT]) {
        schedule_new(w, KIND_SHORT);
        return;
    }
    if (w->live_count[KIND_REPEAT] < w->target[KIND_REPEAT]) {
        schedule_new(w, KIND_REPEAT);
        return;
    }
    if (w->live_count[KIND_LONG] < w->target[KIND_LONG]) {
        schedule_new(w, KIND_LONG);
        return;
    }
    /* What else a step does, per 10,000 steps: the long timers churn (each
     * lives about a second at the default rate); some short one-shots are
     * cancelled or moved before they fire, some while they fire; a repeating
     * timer lives some seconds, a few to a few hundred periods; the rest
     * schedule a long one-shot and cancel it at once. */
    static const struct {
        uint16_t below;
        uint8_t kind;
        uint8_t cancel; /* else reschedule */
    } mix[] = {
        {4000, KIND_LONG, 1},  {7500, KIND_LONG, 0},   {7550, KIND_SHORT, 0},
        {7600, KIND_SHORT, 1}, {7605, KIND_REPEAT, 1},
    };
    uint64_t roll = below(w, 10000);
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) {
        if (roll >= mix[i].below) continue;
        soak_timer *t = random_live(w, (enum kind)mix[i].kind);
        if (t == NULL || t->outcome != OUT_NONE) return;
        if (mix[i].cancel) {
            cancel_record(w, t);
        } else {
            reschedule_record(w, t);
        }
        return;
    }
    soak_timer *t = schedule_new(w, KIND_LONG);
    if (t != NULL) cancel_record(w, t);
}

static options g_options;

static void *worker_main(void *arg) {
    worker *w = arg;
    uint64_t n = 1;
    /* Fill to the targets at full speed, then report ready. */
    while (w->live_count[KIND_LONG] < w->target[KIND_LONG] ||
           w->live_count[KIND_SHORT] < w->target[KIND_SHORT] ||
           w->live_count[KIND_REPEAT] < w->target[KIND_REPEAT]) {
        if (w->free_list == NULL && atomic_load(&w->returned) == NULL) break;
        step(w, n++);
    }
    atomic_fetch_add(&g_ready_workers, 1);
    uint64_t per_tick = g_options.rate > 0 ? (uint64_t)g_options.rate * TICK_MS / 1000 : 256;
    if (per_tick == 0) per_tick = 1;
    int64_t tick = sys_now(TK_CLOCK_MONOTONIC);
    while (!atomic_load_explicit(&g_stop_workers, memory_order_relaxed)) {
        for (uint64_t i = 0; i < per_tick; i++) step(w, n++);
        drain_returned(w);
        if (g_options.rate > 0) {
            tick += TICK_MS * MS;
            int64_t now = sys_now(TK_CLOCK_MONOTONIC);
            if (tick < now - 10 * TICK_MS * MS) tick = now; /* fell behind: no burst */
            sleep_until(tick);
        }
    }
    drain_returned(w);
    return NULL;
}

/* ------------------------------------------------------------------------
 * Sampling
 * ------------------------------------------------------------------------ */

typedef struct sample {
    double seconds;
    int64_t rss;   /* bytes */
    int64_t heap;  /* bytes in use, mallinfo2 (0 where the allocator keeps none) */
    int fds;
    uint64_t pending, fired, wakeups, ops;
} sample;

static sample take_sample(int64_t start) {
    sample s;
    memset(&s, 0, sizeof s);
    s.seconds = (double)(sys_now(TK_CLOCK_MONOTONIC) - start) / SEC;
    s.rss = proc_rss_bytes();
    s.fds = proc_fd_count();
    struct mallinfo2 info = mallinfo2();
    s.heap = (int64_t)(info.uordblks + info.hblkhd);
    tk_loop_stats stats;
    if (tk_loop_get_stats(g_loop, &stats) == 0) {
        s.pending = stats.pending;
        s.fired = stats.fired;
        s.wakeups = stats.wakeups;
    }
    for (int i = 0; i < g_worker_count; i++) {
        s.ops += atomic_load_explicit(&g_workers[i].ops, memory_order_relaxed);
    }
    return s;
}

static void print_sample_line(const sample *s) {
    printf("soak: %6.0f s  rss %8.0f KiB  fds %3d  heap %8.0f KiB  pending %7" PRIu64
           "  fired %10" PRIu64 "  ops %11" PRIu64 "  wake-ups %9" PRIu64 "\n",
           s->seconds, (double)s->rss / 1024, s->fds, (double)s->heap / 1024, s->pending,
           s->fired, s->ops, s->wakeups);
    fflush(stdout);
}

/* ------------------------------------------------------------------------
 * Setup, the end, the report
 * ------------------------------------------------------------------------ */

static int setup_workers(const options *o) {
    uint32_t per_worker = o->timers / (uint32_t)o->workers;
    uint32_t fixed = SHORTS_PER_WORKER + REPEATS_PER_WORKER;
    if (per_worker < fixed + 16) {
        fprintf(stderr, "soak: --timers %u is too few for %d workers (at least %u)\n",
                o->timers, o->workers, (fixed + 16) * (uint32_t)o->workers);
        return -1;
    }
    uint64_t seed = o->seed;
    for (int i = 0; i < o->workers; i++) {
        worker *w = &g_workers[i];
        w->index = i;
        w->rng = rng_next(&seed);
        w->target[KIND_SHORT] = SHORTS_PER_WORKER;
        w->target[KIND_REPEAT] = REPEATS_PER_WORKER;
        w->target[KIND_LONG] = per_worker - fixed;
        w->pool_size = per_worker + POOL_SLACK;
        /* Touched now, so that the bookkeeping is resident before the first sample. */
        w->pool = calloc(w->pool_size, sizeof *w->pool);
        if (w->pool == NULL) return -1;
        memset(w->pool, 0, (size_t)w->pool_size * sizeof *w->pool);
        for (int k = 0; k < KIND_COUNT; k++) {
            w->live[k] = calloc(w->pool_size, sizeof *w->live[k]);
            if (w->live[k] == NULL) return -1;
            memset(w->live[k], 0, (size_t)w->pool_size * sizeof *w->live[k]);
        }
        for (uint32_t r = w->pool_size; r-- > 0;) {
            w->pool[r].owner = (uint8_t)i;
            free_record(w, &w->pool[r]);
        }
    }
    return 0;
}

static int setup_channels(int count) {
    for (int i = 0; i < count; i++) {
        channel *c = &g_channels[i];
        c->is_pipe = i % 2 == 0;
        if (c->is_pipe) {
            int fds[2];
            if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
            c->read_fd = fds[0];
            c->write_fd = fds[1];
        } else {
            c->read_fd = c->write_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (c->read_fd < 0) return -1;
        }
        int rc = tk_loop_watch_fd(g_loop, c->read_fd, TK_IO_READABLE, on_channel, c);
        if (rc != 0) return -1;
        c->watched = 1;
    }
    g_channel_count = count;
    return 0;
}

/* After the loop stopped: unwatch, read what is left, compare, close. */
static void finish_channels(uint64_t *moved, uint64_t *events) {
    for (int i = 0; i < g_channel_count; i++) {
        channel *c = &g_channels[i];
        if (c->watched) {
            int rc = tk_loop_unwatch_fd(g_loop, c->read_fd);
            if (rc != 0) soak_error("tk_loop_unwatch_fd at the end: %s", tk_strerror(rc));
            c->watched = 0;
        }
        uint64_t written = atomic_load(&c->written);
        uint64_t read = atomic_load(&c->read) + drain_channel(c);
        if (written != read) {
            soak_error("channel %d (%s): %" PRIu64 " written, %" PRIu64 " read", i,
                       c->is_pipe ? "pipe" : "eventfd", written, read);
        }
        *moved += written;
        *events += atomic_load(&c->events);
        close(c->read_fd);
        if (c->is_pipe) close(c->write_fd);
    }
}

/* The end: the workers stop, then the loop; its counters are checked against
 * the records; every other pending timer is cancelled and the rest are left
 * to tk_loop_destroy; every record must then be back. */
static void finish_run(pthread_t loop_thread, ledger *total, int64_t *max_overdue,
                       uint64_t *moved, uint64_t *events) {
    atomic_store(&g_stop_workers, 1);
    for (int i = 0; i < g_worker_count; i++) pthread_join(g_workers[i].thread, NULL);
    int rc = tk_loop_stop(g_loop);
    if (rc != 0) soak_error("tk_loop_stop: %s", tk_strerror(rc));
    pthread_join(loop_thread, NULL);

    tk_loop_stats stats;
    memset(&stats, 0, sizeof stats);
    tk_loop_get_stats(g_loop, &stats);
    /* With the loop stopped, a timer that fired or was cancelled has been
     * released; what is left is pending. */
    uint64_t unreleased = 1; /* the stall timer */
    for (int i = 0; i < g_worker_count; i++) {
        worker *w = &g_workers[i];
        drain_returned(w);
        for (int k = KIND_LONG; k < KIND_COUNT; k++) {
            unreleased += w->live_count[k];
            for (uint32_t j = 0; j < w->live_count[k]; j++) {
                const soak_timer *t = w->live[k][j];
                int fired_one_shot = k != KIND_REPEAT && t->fires > 0;
                if (t->outcome != OUT_NONE || fired_one_shot) {
                    soak_error("a %s that %s was never released", kind_names[k],
                               t->outcome == OUT_CANCELLED ? "was cancelled" : "fired");
                }
            }
        }
    }
    if (stats.pending != unreleased) {
        soak_error("the loop has %" PRIu64 " pending, the records say %" PRIu64, stats.pending,
                   unreleased);
    }
    if (stats.fired != g_loop_fires) {
        soak_error("the loop counted %" PRIu64 " fires, the callbacks %" PRIu64, stats.fired,
                   g_loop_fires);
    }
    for (int i = 0; i < g_worker_count; i++) {
        worker *w = &g_workers[i];
        for (int k = KIND_LONG; k < KIND_COUNT; k++) {
            for (uint32_t j = 0; j < w->live_count[k]; j += 2) {
                soak_timer *t = w->live[k][j];
                if (t->outcome != OUT_NONE) continue; /* reported above */
                if (cancel_record(w, t) != 0) soak_error("a pending timer could not be cancelled");
            }
        }
        drain_returned(w);
    }
    finish_channels(moved, events);

    atomic_store(&g_destroying, 1);
    rc = tk_loop_destroy(g_loop);
    if (rc != 0) soak_error("tk_loop_destroy: %s", tk_strerror(rc));
    g_loop = NULL;
    if (atomic_load(&g_stall.releases) != 1) soak_error("the stall timer was not released once");
    memset(total, 0, sizeof *total);
    for (int i = 0; i < g_worker_count; i++) {
        worker *w = &g_workers[i];
        drain_returned(w);
        for (int k = KIND_LONG; k < KIND_COUNT; k++) {
            if (w->live_count[k] != 0) {
                soak_error("%u %s records were never released", w->live_count[k], kind_names[k]);
            }
        }
        const ledger *b = &w->book;
        for (int k = 0; k < KIND_COUNT; k++) {
            total->scheduled[k] += b->scheduled[k];
            total->fired[k] += b->fired[k];
            total->cancelled[k] += b->cancelled[k];
            total->destroyed[k] += b->destroyed[k];
        }
        total->self_cancelled += b->self_cancelled;
        total->found_gone += b->found_gone;
        total->rescheduled += b->rescheduled;
        total->writes += b->writes;
        total->write_full += b->write_full;
        total->toggles += b->toggles;
        total->wakeups += b->wakeups;
        total->pool_dry += b->pool_dry;
        if (w->max_overdue > *max_overdue) *max_overdue = w->max_overdue;
        free(w->pool);
        for (int k = 0; k < KIND_COUNT; k++) free(w->live[k]);
    }
    uint64_t scheduled = 0, accounted = total->self_cancelled;
    for (int k = KIND_LONG; k < KIND_COUNT; k++) {
        scheduled += total->scheduled[k];
        accounted += total->fired[k] + total->cancelled[k] + total->destroyed[k];
    }
    if (scheduled != accounted || atomic_load(&g_releases) != scheduled) {
        soak_error("%" PRIu64 " timers scheduled, %" PRIu64 " accounted for, %" PRIu64
                   " releases",
                   scheduled, accounted, atomic_load(&g_releases));
    }
}

/* The lateness below which `share` of the one-shot fires came, in µs (the
 * upper end of its log2 bucket). */
static uint64_t lateness_at(double share) {
    uint64_t total = 0;
    for (int b = 0; b < LATENESS_BUCKETS; b++) total += g_lateness[b];
    if (total == 0) return 0;
    uint64_t seen = 0;
    for (int b = 0; b < LATENESS_BUCKETS; b++) {
        seen += g_lateness[b];
        if ((double)seen >= share * (double)total) return b == 0 ? 1 : UINT64_C(1) << b;
    }
    return UINT64_C(1) << (LATENESS_BUCKETS - 1);
}

static void print_accounting(const ledger *b, int64_t max_overdue, uint64_t moved,
                             uint64_t events, double seconds) {
    uint64_t ops = 0;
    for (int i = 0; i < g_worker_count; i++) ops += atomic_load(&g_workers[i].ops);
    printf("\nsoak: timers\n");
    printf("  %-15s %12s %12s %12s %12s %12s\n", "", "scheduled", "fired once", "cancelled",
           "own cancel", "at destroy");
    for (int k = KIND_LONG; k < KIND_COUNT; k++) {
        char fired[24] = "-", own[24] = "-";
        if (k == KIND_REPEAT) {
            snprintf(own, sizeof own, "%" PRIu64, b->self_cancelled);
        } else {
            snprintf(fired, sizeof fired, "%" PRIu64, b->fired[k]);
        }
        printf("  %-15s %12" PRIu64 " %12s %12" PRIu64 " %12s %12" PRIu64 "\n", kind_names[k],
               b->scheduled[k], fired, b->cancelled[k], own, b->destroyed[k]);
    }
    printf("  core calls by the workers: %" PRIu64 " (%.0f a second); reschedules %" PRIu64
           "; cancels and reschedules that found the timer fired: %" PRIu64 "\n",
           ops, (double)ops / seconds, b->rescheduled, b->found_gone);
    printf("  repeating fires: %" PRIu64 ", periods skipped (missed): %" PRIu64
           ", every fire on its grid; the loop stalled %" PRIu64 " times for %.0f ms\n",
           g_repeat_fires, g_repeat_missed, g_stall.fires, (double)STALL_FOR / MS);
    printf("  one-shot lateness (deadline to callback, leeway up to a tenth of the delay "
           "included): p50 <= %" PRIu64 " us, p99 <= %" PRIu64 " us, max <= %" PRIu64 " us\n",
           lateness_at(0.5), lateness_at(0.99), lateness_at(1.0));
    printf("  most overdue timer let go unfired: %.3f s (lost beyond %.0f s)\n",
           (double)max_overdue / SEC, (double)LOST_AFTER / SEC);
    printf("  channels: %" PRIu64 " writes (%" PRIu64 " found the pipe full), %" PRIu64
           " bytes and counts all read, %" PRIu64 " watch callbacks, %" PRIu64
           " watch/unwatch toggles\n",
           b->writes, b->write_full, moved, events, b->toggles);
    printf("  tk_loop_wakeup: %" PRIu64 " calls, %" PRIu64 " handler calls\n", b->wakeups,
           atomic_load(&g_wakeup_calls));
    if (b->pool_dry) {
        printf("  schedules skipped for want of a free record: %" PRIu64 "\n", b->pool_dry);
    }
}

static void print_curve(const sample *samples, size_t count) {
    printf("\nsoak: the curve\n");
    printf("  %8s %12s %5s %12s %9s %12s %13s %11s\n", "seconds", "RSS KiB", "fds", "heap KiB",
           "pending", "fired", "core calls", "wake-ups");
    for (size_t i = 0; i < count; i++) {
        const sample *s = &samples[i];
        printf("  %8.0f %12.0f %5d %12.0f %9" PRIu64 " %12" PRIu64 " %13" PRIu64 " %11" PRIu64
               "\n",
               s->seconds, (double)s->rss / 1024, s->fds, (double)s->heap / 1024, s->pending,
               s->fired, s->ops, s->wakeups);
    }
}

static int write_csv(const char *path, const sample *samples, size_t count) {
    FILE *file = fopen(path, "w");
    if (file == NULL) return -1;
    fprintf(file, "seconds,rss_kib,fds,heap_kib,pending,fired,core_calls,wakeups\n");
    for (size_t i = 0; i < count; i++) {
        const sample *s = &samples[i];
        fprintf(file, "%.0f,%.0f,%d,%.0f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                s->seconds, (double)s->rss / 1024, s->fds, (double)s->heap / 1024, s->pending,
                s->fired, s->ops, s->wakeups);
    }
    return fclose(file) == 0 ? 0 : -1;
}

/* The verdict on the samples after the warm-up. Returns 1 if flat. */
static int print_verdict(const sample *samples, size_t count, int warmup) {
    size_t first = 0;
    while (first < count && samples[first].seconds < (double)warmup - 0.5) first++;
    size_t n = count - first;
    if (n < 2) {
        printf("\nsoak: verdict: NOT JUDGED, %zu samples after the warm-up\n", n);
        return 0;
    }
    int64_t rss_min = INT64_MAX, rss_max = INT64_MIN, heap_min = INT64_MAX, heap_max = INT64_MIN;
    int fd_min = INT32_MAX, fd_max = INT32_MIN;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = first; i < count; i++) {
        const sample *s = &samples[i];
        if (s->rss < rss_min) rss_min = s->rss;
        if (s->rss > rss_max) rss_max = s->rss;
        if (s->heap < heap_min) heap_min = s->heap;
        if (s->heap > heap_max) heap_max = s->heap;
        if (s->fds < fd_min) fd_min = s->fds;
        if (s->fds > fd_max) fd_max = s->fds;
        double x = s->seconds / 60, y = (double)s->rss / 1024;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    double denominator = (double)n * sxx - sx * sx;
    double slope = denominator > 0 ? ((double)n * sxy - sx * sy) / denominator : 0;
    int64_t tolerance = rss_min / 50;
    if (tolerance < 256 * 1024) tolerance = 256 * 1024;
    int rss_flat = rss_max - rss_min <= tolerance;
    int fds_flat = fd_min == fd_max;
    printf("\nsoak: after the %d s warm-up (%zu samples, %.0f to %.0f s):\n", warmup, n,
           samples[first].seconds, samples[count - 1].seconds);
    printf("  RSS   %.0f to %.0f KiB: spread %.0f KiB, tolerance %.0f KiB (2 %% of the "
           "minimum, at least 256 KiB): %s\n",
           (double)rss_min / 1024, (double)rss_max / 1024, (double)(rss_max - rss_min) / 1024,
           (double)tolerance / 1024, rss_flat ? "flat" : "NOT FLAT");
    /* A least-squares line means little over a few seconds of 4 KiB pages. */
    if (samples[count - 1].seconds - samples[first].seconds >= 60) {
        printf("        least-squares trend %+.1f KiB a minute (not judged)\n", slope);
    }
    printf("  fds   %d to %d: %s\n", fd_min, fd_max,
           fds_flat ? "flat" : "NOT FLAT (must not move)");
    if (heap_max > 0) {
        printf("  heap  %.0f to %.0f KiB in use: spread %.0f KiB (not judged)\n",
               (double)heap_min / 1024, (double)heap_max / 1024,
               (double)(heap_max - heap_min) / 1024);
    } else {
        printf("  heap  not seen: mallinfo2 reports nothing (a sanitizer's allocator)\n");
    }
    printf("  from the first sample (%.0f s) to the last: RSS %+.0f KiB, fds %+d\n",
           samples[0].seconds, (double)(samples[count - 1].rss - samples[0].rss) / 1024,
           samples[count - 1].fds - samples[0].fds);
    printf("soak: verdict: %s\n", rss_flat && fds_flat ? "FLAT" : "NOT FLAT");
    return rss_flat && fds_flat;
}

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--seconds N] [--sample-seconds N] [--warmup N] [--timers N]\n"
            "          [--workers N] [--rate N] [--seed N] [--csv PATH]\n"
            "  --seconds N         how long to run (default 600)\n"
            "  --sample-seconds N  seconds between samples (default 5; 1 or 2 in runs\n"
            "                      under 50 s)\n"
            "  --warmup N          seconds left out of the verdict (default a tenth of\n"
            "                      the run, at least one sample's seconds)\n"
            "  --timers N          pending timers to keep (default 100000)\n"
            "  --workers N         scheduling threads (default 4, at most %d)\n"
            "  --rate N            steps a second per worker, each one core call or\n"
            "                      two (default 50000, about 58,000 calls; 0: no pause)\n"
            "  --seed N            seed of the random choices (default 1)\n"
            "  --csv PATH          also write the curve as CSV\n"
            "Exit status: 0 clean and flat, 1 an accounting error, 2 a setup failure,\n"
            "3 clean but not flat, 64 a bad option.\n",
            argv0, MAX_WORKERS);
}

static int parse_long(const char *text, long low, long high, long *out) {
    uint64_t value;
    if (bench_decimal(text, (uint64_t)low, (uint64_t)high, &value) != 0) return -1;
    *out = (long)value;
    return 0;
}

/* Reads the options into `*o`; returns NULL, or what is wrong. */
static const char *parse_options(int argc, char **argv, options *o) {
    *o = (options){.seconds = 600, .interval = -1, .warmup = -1, .timers = 100000,
                   .workers = 4, .rate = 50000, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (i + 1 >= argc) return "an option without its value";
        const char *value = argv[++i];
        long number = 0;
        if (strcmp(name, "--csv") == 0) {
            o->csv = value;
        } else if (strcmp(name, "--seed") == 0) {
            uint64_t seed;
            if (bench_decimal(value, 0, UINT64_MAX, &seed) != 0) return "--seed takes a number";
            o->seed = seed;
        } else if (strcmp(name, "--seconds") == 0) {
            if (parse_long(value, 1, 604800, &number) != 0) return "--seconds: 1 to 604800";
            o->seconds = (int)number;
        } else if (strcmp(name, "--sample-seconds") == 0) {
            if (parse_long(value, 1, 3600, &number) != 0) return "--sample-seconds: 1 to 3600";
            o->interval = (int)number;
        } else if (strcmp(name, "--warmup") == 0) {
            if (parse_long(value, 0, 604800, &number) != 0) return "--warmup: 0 to 604800";
            o->warmup = (int)number;
        } else if (strcmp(name, "--timers") == 0) {
            if (parse_long(value, 1, 10000000, &number) != 0) return "--timers: 1 to 10000000";
            o->timers = (uint32_t)number;
        } else if (strcmp(name, "--workers") == 0) {
            if (parse_long(value, 1, MAX_WORKERS, &number) != 0) return "--workers: 1 to 16";
            o->workers = (int)number;
        } else if (strcmp(name, "--rate") == 0) {
            if (parse_long(value, 0, 100000000, &number) != 0) return "--rate: 0 to 100000000";
            o->rate = number;
        } else {
            return "an unknown option";
        }
    }
    /* By default a sample every 5 s, or ten in a shorter run; the warm-up
     * is a tenth of the run, at least one sample's seconds. */
    if (o->interval < 0) o->interval = o->seconds >= 50 ? 5 : o->seconds >= 20 ? 2 : 1;
    if (o->warmup < 0) o->warmup = o->seconds / 10 > o->interval ? o->seconds / 10 : o->interval;
    if (o->warmup + o->interval > o->seconds) {
        return "--warmup and one --sample-seconds after it must fit in --seconds";
    }
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(argv[0]);
            return 0;
        }
    }
    options *o = &g_options;
    const char *wrong = parse_options(argc, argv, o);
    if (wrong != NULL) {
        fprintf(stderr, "soak: %s\n", wrong);
        usage(argv[0]);
        return 64;
    }
    g_worker_count = o->workers;
    printf("soak: %d s, a sample every %d s, warm-up %d s; %u pending timers, %d workers at "
           "%ld steps (of one or two core calls) a second each, seed %" PRIu64 "\n",
           o->seconds, o->interval, o->warmup, o->timers, o->workers, o->rate, o->seed);

    int rc = tk_loop_create(&g_loop);
    if (rc != 0) {
        fprintf(stderr, "soak: tk_loop_create: %s\n", tk_strerror(rc));
        return 2;
    }
    tk_loop_set_release_handler(g_loop, on_release);
    tk_loop_set_wakeup_handler(g_loop, on_wakeup, NULL);
    tk_timer_spec stall = {.delay_ns = STALL_EVERY, .interval_ns = STALL_EVERY};
    tk_timer_id stall_id;
    rc = tk_loop_schedule(g_loop, &stall, on_stall, &g_stall, &stall_id);
    if (rc != 0) {
        fprintf(stderr, "soak: tk_loop_schedule: %s\n", tk_strerror(rc));
        return 2;
    }
    size_t max_samples = (size_t)(o->seconds / o->interval) + 1;
    sample *samples = calloc(max_samples, sizeof *samples);
    if (samples == NULL || setup_workers(o) != 0 ||
        setup_channels(o->workers * CHANNELS_PER_WORKER) != 0) {
        fprintf(stderr, "soak: setup failed: %s\n", strerror(errno));
        return 2;
    }
    pthread_t loop_thread;
    if (pthread_create(&loop_thread, NULL, loop_main, NULL) != 0) return 2;
    for (int i = 0; i < o->workers; i++) {
        if (pthread_create(&g_workers[i].thread, NULL, worker_main, &g_workers[i]) != 0) return 2;
    }
    while (atomic_load(&g_ready_workers) < o->workers) {
        sleep_until(sys_now(TK_CLOCK_MONOTONIC) + MS);
    }

    /* The run: a sample once the timers are in, then one every interval. */
    int64_t start = sys_now(TK_CLOCK_MONOTONIC);
    size_t count = 0;
    while (count < max_samples) {
        sleep_until(start + (int64_t)count * o->interval * SEC);
        samples[count] = take_sample(start);
        print_sample_line(&samples[count]);
        count++;
    }
    double seconds = (double)(sys_now(TK_CLOCK_MONOTONIC) - start) / SEC;

    ledger total;
    int64_t max_overdue = 0;
    uint64_t moved = 0, events = 0;
    finish_run(loop_thread, &total, &max_overdue, &moved, &events);
    print_accounting(&total, max_overdue, moved, events, seconds);
    print_curve(samples, count);
    if (o->csv != NULL) {
        if (write_csv(o->csv, samples, count) == 0) {
            printf("soak: the curve as CSV: %s\n", o->csv);
        } else {
            soak_error("could not write %s: %s", o->csv, strerror(errno));
        }
    }
    int flat = print_verdict(samples, count, o->warmup);
    free(samples);
    unsigned long errors = atomic_load(&g_errors);
    printf("soak: %lu accounting errors\n", errors);
    return errors ? 1 : flat ? 0 : 3;
}
