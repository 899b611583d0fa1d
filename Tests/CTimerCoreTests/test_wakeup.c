/*
 * The wake-up handler: how work is posted to a loop's thread (what the Swift
 * executor is built on). Work queued by other threads, each followed by
 * tk_loop_wakeup, is all done on the loop's thread, none twice, none left
 * behind; wake-ups merge; one asked for inside the handler makes another
 * pass; tk_loop_runs_on_this_thread tells the loop's thread from others.
 */
#include "CTimerCore.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_harness.h"

/* A queue of posted numbers, guarded by a mutex; the handler drains it. */
enum { POSTERS = 4, PER_POSTER = 20000 };

typedef struct posted {
    pthread_mutex_t lock;
    uint32_t *items;
    size_t count, capacity;
    /* Filled by the handler, on the loop's thread. */
    uint8_t *done; /* how many times each number was done */
    atomic_long handler_calls;
    atomic_int wrong_thread;
    tk_loop *loop;
} posted;

static void drain(tk_loop *loop, void *context) {
    posted *p = context;
    atomic_fetch_add(&p->handler_calls, 1);
    if (tk_loop_runs_on_this_thread(loop) != 1) atomic_fetch_add(&p->wrong_thread, 1);
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->count; i++) p->done[p->items[i]]++;
    p->count = 0;
    pthread_mutex_unlock(&p->lock);
}

static void post(posted *p, uint32_t item) {
    pthread_mutex_lock(&p->lock);
    if (p->count == p->capacity) {
        p->capacity = p->capacity ? p->capacity * 2 : 256;
        p->items = realloc(p->items, p->capacity * sizeof *p->items);
        if (p->items == NULL) abort();
    }
    p->items[p->count++] = item;
    pthread_mutex_unlock(&p->lock);
    CHECK_EQ(tk_loop_wakeup(p->loop), 0);
}

typedef struct poster {
    posted *p;
    uint32_t first;
} poster;

static void *poster_main(void *arg) {
    poster *me = arg;
    for (uint32_t i = 0; i < PER_POSTER; i++) {
        post(me->p, me->first + i);
        if (i % 1000 == 0) usleep(100); /* let the loop fall asleep now and then */
    }
    return NULL;
}

static void *run_main(void *arg) {
    tk_loop *loop = arg;
    intptr_t result = tk_loop_run(loop, 0, TK_FOREVER, 0);
    return (void *)result;
}

static void stop_when_done(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    posted *p = context;
    pthread_mutex_lock(&p->lock);
    int empty = p->count == 0;
    pthread_mutex_unlock(&p->lock);
    if (empty) tk_loop_stop(loop);
}

static void test_posted_work_from_threads(void) {
    posted p;
    memset(&p, 0, sizeof p);
    pthread_mutex_init(&p.lock, NULL);
    p.done = calloc(POSTERS * PER_POSTER, 1);
    CHECK_EQ(tk_loop_create(&p.loop), 0);
    CHECK_EQ(tk_loop_set_wakeup_handler(p.loop, drain, &p), 0);
    CHECK_EQ(tk_loop_runs_on_this_thread(p.loop), 0);
    pthread_t runner;
    CHECK_EQ(pthread_create(&runner, NULL, run_main, p.loop), 0);
    pthread_t threads[POSTERS];
    poster posters[POSTERS];
    for (int i = 0; i < POSTERS; i++) {
        posters[i] = (poster){&p, (uint32_t)(i * PER_POSTER)};
        CHECK_EQ(pthread_create(&threads[i], NULL, poster_main, &posters[i]), 0);
    }
    for (int i = 0; i < POSTERS; i++) pthread_join(threads[i], NULL);
    CHECK_EQ(tk_loop_runs_on_this_thread(p.loop), 0); /* the loop runs elsewhere */
    /* Every post was followed by a wake-up: the loop drains it all. A
     * repeating timer stops the loop once the queue is empty. */
    tk_timer_spec every = {.delay_ns = 1000000, .interval_ns = 1000000};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(p.loop, &every, stop_when_done, &p, &id), 0);
    void *result;
    pthread_join(runner, &result);
    CHECK_EQ((intptr_t)result, TK_RUN_STOPPED);
    long wrong = 0, missing = 0;
    for (size_t i = 0; i < POSTERS * PER_POSTER; i++) {
        wrong += p.done[i] > 1;
        missing += p.done[i] == 0;
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(missing, 0);
    CHECK_EQ(atomic_load(&p.wrong_thread), 0);
    long calls = atomic_load(&p.handler_calls);
    CHECK_GE(calls, 1);
    CHECK_LE(calls, POSTERS * PER_POSTER); /* merged, never more than asked */
    printf("posted %d items, handler called %ld times\n", POSTERS * PER_POSTER, calls);
    CHECK_EQ(tk_loop_destroy(p.loop), 0);
    free(p.items);
    free(p.done);
    pthread_mutex_destroy(&p.lock);
}

/* On a manual loop: merged wake-ups, a wake-up from inside the handler, the
 * handler in any mode, clearing it, and bad arguments. */
static int g_calls, g_again;

static void count_and_maybe_again(tk_loop *loop, void *context) {
    (void)context;
    g_calls++;
    CHECK_EQ(tk_loop_runs_on_this_thread(loop), 1);
    if (g_again > 0) {
        g_again--;
        CHECK_EQ(tk_loop_wakeup(loop), 0);
    }
}

static void test_manual_passes(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    CHECK_EQ(tk_loop_set_wakeup_handler(NULL, count_and_maybe_again, NULL), -EINVAL);
    CHECK_EQ(tk_loop_runs_on_this_thread(NULL), -EINVAL);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, count_and_maybe_again, NULL), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_calls, 0); /* no wake-up asked for */
    for (int i = 0; i < 5; i++) CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(3), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_calls, 1); /* five merged into one, in another mode too */
    g_again = 2;
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_calls, 2);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_calls, 4); /* each wake-up asked for inside made one more pass */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_calls, 4);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, NULL, NULL), 0);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_calls, 4);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A manual run with a deadline moves time only once no wake-up is pending,
 * as a real run sleeps only then: a chain of wake-ups, each asked for by the
 * handler before (a job queued by a job), is served at the time the first
 * was asked for, before a later timer fires. */
typedef struct chain {
    int64_t handled_at[8];
    int handled;
    int links;       /* wake-ups the handler still asks for */
    int64_t later_at; /* when the later timer fired */
} chain;

static void follow_chain(tk_loop *loop, void *context) {
    chain *c = context;
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    if (c->handled < 8) c->handled_at[c->handled] = now;
    c->handled++;
    if (c->links > 0) {
        c->links--;
        CHECK_EQ(tk_loop_wakeup(loop), 0);
    }
}

static void start_chain(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer;
    (void)missed;
    chain *c = context;
    c->links = 3;
    CHECK_EQ(tk_loop_wakeup(loop), 0);
}

static void note_later(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer;
    (void)missed;
    chain *c = context;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &c->later_at), 0);
}

static void test_manual_run_serves_wakeups_before_moving_time(void) {
    static chain c;
    memset(&c, 0, sizeof c);
    tk_loop *loop;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, follow_chain, &c), 0);
    tk_timer_spec at1 = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000, .modes = TK_MODES(0)};
    tk_timer_spec at3 = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 3000, .modes = TK_MODES(0)};
    tk_timer_id first, later;
    CHECK_EQ(tk_loop_schedule(loop, &at1, start_chain, &c, &first), 0);
    CHECK_EQ(tk_loop_schedule(loop, &at3, note_later, &c, &later), 0);
    CHECK_EQ(tk_loop_run(loop, 0, 10000, 0), TK_RUN_TIMED_OUT);
    CHECK_EQ(c.handled, 4); /* the wake-up the timer asked for, and three more */
    for (int i = 0; i < 4 && i < c.handled; i++) CHECK_EQ(c.handled_at[i], 1000);
    CHECK_EQ(c.later_at, 3000);
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(now, 10000);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A handler that asks for a wake-up at every call: the run serves it in 64
 * more passes at one time, then moves time all the same, and returns
 * at its deadline (also one already passed). */
typedef struct storm {
    int at_first; /* calls at the time the first wake-up was asked for */
    int calls;
} storm;

static void ask_again(tk_loop *loop, void *context) {
    storm *st = context;
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    if (now == 1000) st->at_first++;
    st->calls++;
    CHECK_EQ(tk_loop_wakeup(loop), 0);
}

static void ask_once(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer;
    (void)missed;
    (void)context;
    CHECK_EQ(tk_loop_wakeup(loop), 0);
}

/* A manual loop at 0 with the wake-up handler `handler`, run to 10000 with
 * a timer due at 1000 that calls `fn`; the clock must be at 10000 after. */
static tk_loop *run_to_10000(tk_wakeup_fn handler, void *context, tk_timer_fn fn,
                             void *timer_context) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, handler, context), 0);
    tk_timer_spec at1 = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000, .modes = TK_MODES(0)};
    tk_timer_id timer;
    CHECK_EQ(tk_loop_schedule(loop, &at1, fn, timer_context, &timer), 0);
    CHECK_EQ(tk_loop_run(loop, 0, 10000, 0), TK_RUN_TIMED_OUT);
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(now, 10000);
    return loop;
}

static void test_manual_run_moves_time_through_a_wakeup_storm(void) {
    static storm st;
    memset(&st, 0, sizeof st);
    tk_loop *loop = run_to_10000(ask_again, &st, ask_once, NULL);
    CHECK_EQ(st.at_first, 65); /* the first call, and 64 passes more */
    /* A deadline already passed: one pass, as before. */
    int before = st.calls;
    CHECK_EQ(tk_loop_run(loop, 0, 5000, 0), TK_RUN_TIMED_OUT);
    CHECK_LE(st.calls - before, 2);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, NULL, NULL), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A timer that its callback makes due at once again (a busy timer), and
 * that asks for a wake-up each time, whose handler asks for one more at
 * every other call: the passes at one time alternate between one that a
 * wake-up asked for during the last pass holds there and one that a step
 * finds the busy timer due for. The two share one count, so the run makes
 * 65 passes at the timer's time in all (not 64 more of each), then moves
 * on to its deadline, where it makes its last pass. */
typedef struct busy_waking {
    int64_t fires_at[2]; /* fires at 1000, and at the deadline */
    int64_t other;       /* fires at other times */
    int wakeups;
} busy_waking;

static void busy_and_waking(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)missed;
    busy_waking *b = context;
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    if (now == 1000) {
        b->fires_at[0]++;
    } else if (now == 10000) {
        b->fires_at[1]++;
    } else {
        b->other++;
    }
    tk_timer_spec again = {.clock = TK_CLOCK_MONOTONIC, .modes = TK_MODES(0)};
    CHECK_EQ(tk_loop_reschedule(loop, timer, &again), 0);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
}

static void wake_every_other(tk_loop *loop, void *context) {
    busy_waking *b = context;
    if (b->wakeups++ % 2 == 0) CHECK_EQ(tk_loop_wakeup(loop), 0);
}

static void test_wakeups_and_a_busy_timer_share_the_count(void) {
    static busy_waking b;
    memset(&b, 0, sizeof b);
    tk_loop *loop = run_to_10000(wake_every_other, &b, busy_and_waking, &b);
    CHECK_EQ(b.fires_at[0], 65);
    CHECK_EQ(b.fires_at[1], 1);
    CHECK_EQ(b.other, 0);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, NULL, NULL), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A pass after which the run returns (TK_RUN_ONCE once something was
 * handled, or a deadline reached) still ends with the ready descriptors and
 * the wake-up asked for: a timer due at every pass does not starve them. */
typedef struct ready_counts {
    int fires, reads, wakeups;
    int stop_on_read; /* the descriptor's callback stops the run */
} ready_counts;

static ready_counts g_ready;

static void read_one(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)events;
    (void)context;
    char byte;
    CHECK_EQ(read(fd, &byte, 1), 1);
    g_ready.reads++;
    if (g_ready.stop_on_read) CHECK_EQ(tk_loop_stop(loop), 0);
}

static void count_wakeup(tk_loop *loop, void *context) {
    (void)loop;
    (void)context;
    g_ready.wakeups++;
}

/* Due again at once: fires at every pass. */
static void always_due(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)missed;
    (void)context;
    g_ready.fires++;
    tk_timer_spec now = {0};
    CHECK_EQ(tk_loop_reschedule(loop, timer, &now), 0);
}

/* A new loop (manual or real) that watches a new pipe's read end with
 * read_one and counts its wake-ups with count_wakeup; g_ready cleared. */
static tk_loop *watching_loop(int manual, int fds[2]) {
    memset(&g_ready, 0, sizeof g_ready);
    tk_loop *loop = NULL;
    CHECK_EQ(manual ? tk_loop_create_manual(&loop, 0) : tk_loop_create(&loop), 0);
    CHECK_EQ(pipe(fds), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, fds[0], TK_IO_READABLE, read_one, NULL), 0);
    CHECK_EQ(tk_loop_set_wakeup_handler(loop, count_wakeup, NULL), 0);
    return loop;
}

/* A stop asked for by a descriptor's callback, or by the clock-change
 * function, ends the run after that callback: the wake-up asked for, and
 * the timer due, wait for the next run (the wake-up handler ran after a
 * descriptor's stop, and a timer fired after the clock-change function's). */
static void stop_in_clock_change(tk_loop *loop, void *context) {
    (void)context;
    g_ready.wakeups += 100; /* told apart from the wake-up handler's calls */
    CHECK_EQ(tk_loop_stop(loop), 0);
}

static void count_fire(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)loop;
    (void)timer;
    (void)missed;
    (void)context;
    g_ready.fires++;
}

static void stop_ends_the_pass(int manual) {
    int fds[2];
    tk_loop *loop = watching_loop(manual, fds);
    g_ready.stop_on_read = 1;
    for (int flags = 0; flags <= (int)TK_RUN_ONCE; flags += (int)TK_RUN_ONCE) {
        int reads = g_ready.reads;
        CHECK_EQ(write(fds[1], "a", 1), 1);
        CHECK_EQ(tk_loop_wakeup(loop), 0);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, (uint32_t)flags), TK_RUN_STOPPED);
        CHECK_EQ(g_ready.reads, reads + 1);
        CHECK_EQ(g_ready.wakeups, 0);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
        CHECK_EQ(g_ready.wakeups, 1);
        g_ready.wakeups = 0;
    }
    /* The last part of a pass after which the run returns (a deadline
     * passed), too. */
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(write(fds[1], "b", 1), 1);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, now - 1, 0), TK_RUN_STOPPED);
    CHECK_EQ(g_ready.wakeups, 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(g_ready.wakeups, 1);
    CHECK_EQ(tk_loop_unwatch_fd(loop, fds[0]), 0);

    if (manual) {
        /* A wall-clock step is reported at the start of the next run. */
        CHECK_EQ(tk_loop_set_clock_change_handler(loop, stop_in_clock_change, NULL), 0);
        tk_timer_spec due = {0};
        tk_timer_id timer;
        CHECK_EQ(tk_loop_schedule(loop, &due, count_fire, NULL, &timer), 0);
        CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_REALTIME, 5), 0);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
        CHECK_EQ(g_ready.wakeups, 101);
        CHECK_EQ(g_ready.fires, 0);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
        CHECK_EQ(g_ready.fires, 1);
    }
    CHECK_EQ(tk_loop_destroy(loop), 0);
    close(fds[0]);
    close(fds[1]);
}

static void test_stop_ends_the_pass(void) {
    stop_ends_the_pass(0);
    stop_ends_the_pass(1);
}

static void ready_after_returning_passes(int manual) {
    int fds[2];
    tk_loop *loop = watching_loop(manual, fds);
    tk_timer_spec now_spec = {0};
    tk_timer_id timer;
    CHECK_EQ(tk_loop_schedule(loop, &now_spec, always_due, NULL, &timer), 0);

    /* TK_RUN_ONCE: each run fires the timer and returns, and the first
     * also serves the byte and the wake-up. */
    CHECK_EQ(write(fds[1], "a", 1), 1);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
    CHECK_EQ(g_ready.fires, 1);
    CHECK_EQ(g_ready.reads, 1);
    CHECK_EQ(g_ready.wakeups, 1);
    for (int i = 0; i < 20; i++) CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
    CHECK_EQ(g_ready.fires, 21);
    CHECK_EQ(g_ready.reads, 1);
    CHECK_EQ(g_ready.wakeups, 1);

    /* A deadline already reached, with and without TK_RUN_NOWAIT. */
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(write(fds[1], "b", 1), 1);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, now - 1, TK_RUN_NOWAIT), TK_RUN_TIMED_OUT);
    CHECK_EQ(g_ready.reads, 2);
    CHECK_EQ(g_ready.wakeups, 2);
    CHECK_EQ(write(fds[1], "c", 1), 1);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, now - 1, 0), TK_RUN_TIMED_OUT);
    CHECK_EQ(g_ready.reads, 3);
    CHECK_EQ(g_ready.wakeups, 3);

    /* A stop from that last part of the pass comes first. */
    g_ready.stop_on_read = 1;
    CHECK_EQ(write(fds[1], "d", 1), 1);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_STOPPED);
    CHECK_EQ(g_ready.reads, 4);
    CHECK_EQ(tk_loop_take_stop(loop), 0); /* the run took it */

    CHECK(g_ready.fires >= 24);
    CHECK_EQ(tk_loop_unwatch_fd(loop, fds[0]), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    close(fds[0]);
    close(fds[1]);
}

static void test_returning_passes_serve_what_is_ready(void) {
    ready_after_returning_passes(0);
    ready_after_returning_passes(1);
}

/* One TK_RUN_ONCE run hands a ready descriptor out once, also when its
 * callback schedules a timer due at once (the pass that fires it does not
 * poll again); TK_RUN_ONCE with a deadline already passed returns
 * TK_RUN_PASSED when the pass handled something. */
static int g_unread_calls;

static void noop_timer(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)loop, (void)timer, (void)missed, (void)context;
}

static void leave_unread(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)fd, (void)events, (void)context;
    g_unread_calls++;
    tk_timer_spec now = {0};
    tk_timer_id timer;
    CHECK_EQ(tk_loop_schedule(loop, &now, noop_timer, NULL, &timer), 0);
}

static void test_once_serves_a_descriptor_once(void) {
    for (int manual = 0; manual < 2; manual++) {
        tk_loop *loop;
        CHECK_EQ(manual ? tk_loop_create_manual(&loop, 0) : tk_loop_create(&loop), 0);
        int fds[2];
        CHECK_EQ(pipe(fds), 0);
        CHECK_EQ(write(fds[1], "x", 1), 1); /* readable until read, which no one does */
        CHECK_EQ(tk_loop_watch_fd(loop, fds[0], TK_IO_READABLE, leave_unread, NULL), 0);
        g_unread_calls = 0;
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
        CHECK_EQ(g_unread_calls, 1);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
        CHECK_EQ(g_unread_calls, 2);
        int64_t now;
        CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
        CHECK_EQ(tk_loop_run(loop, 0, now - 1, TK_RUN_ONCE), TK_RUN_PASSED);
        CHECK_EQ(g_unread_calls, 3);
        CHECK_EQ(tk_loop_unwatch_fd(loop, fds[0]), 0);
        /* A timer the last call scheduled may still be due: then one more
         * run fires it; after that, nothing is left to handle. */
        int result = tk_loop_run(loop, 0, now - 1, TK_RUN_ONCE);
        if (result == TK_RUN_PASSED) result = tk_loop_run(loop, 0, now - 1, TK_RUN_ONCE);
        CHECK_EQ(result, TK_RUN_TIMED_OUT);
        CHECK_EQ(g_unread_calls, 3);
        CHECK_EQ(tk_loop_destroy(loop), 0);
        close(fds[0]);
        close(fds[1]);
    }
}

/* A nested run that polls ends the handing out of the outer pass's events:
 * a descriptor it served and drained is not handed out again from the
 * outer batch. */
typedef struct drained_pair {
    int reads[2], fds[2], empty;
} drained_pair;

static void drain_or_nest(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)events;
    drained_pair *pair = context;
    int which = fd == pair->fds[0] ? 0 : 1;
    char byte;
    if (read(fd, &byte, 1) == 1) {
        pair->reads[which]++;
    } else {
        pair->empty++; /* handed out with nothing to read */
    }
    if (pair->reads[0] + pair->reads[1] == 1) {
        int64_t now;
        CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
        CHECK_EQ(tk_loop_run(loop, TK_MODES(1), now - 1, 0), TK_RUN_TIMED_OUT);
    }
}

static void test_nested_poll_ends_the_batch(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    int a[2], b[2];
    CHECK_EQ(pipe2(a, O_NONBLOCK), 0);
    CHECK_EQ(pipe2(b, O_NONBLOCK), 0);
    drained_pair pair = {.fds = {a[0], b[0]}};
    CHECK_EQ(write(a[1], "a", 1), 1);
    CHECK_EQ(write(b[1], "b", 1), 1);
    CHECK_EQ(tk_loop_watch_fd(loop, a[0], TK_IO_READABLE, drain_or_nest, &pair), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, b[0], TK_IO_READABLE, drain_or_nest, &pair), 0);
    /* Both ready in one poll; the first callback's nested run serves the
     * other, which must not then be handed out again, empty. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
    CHECK_EQ(pair.reads[0] + pair.reads[1], 2);
    CHECK_EQ(pair.empty, 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, a[0]), 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, b[0]), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    for (int i = 0; i < 2; i++) close(a[i]), close(b[i]);
}

static const test_case tests[] = {
    {"posted_work_from_threads", test_posted_work_from_threads, 300},
    {"manual_passes", test_manual_passes, 60},
    {"manual_run_serves_wakeups_before_moving_time", test_manual_run_serves_wakeups_before_moving_time, 60},
    {"manual_run_moves_time_through_a_wakeup_storm", test_manual_run_moves_time_through_a_wakeup_storm, 60},
    {"wakeups_and_a_busy_timer_share_the_count", test_wakeups_and_a_busy_timer_share_the_count, 60},
    {"returning_passes_serve_what_is_ready", test_returning_passes_serve_what_is_ready, 60},
    {"once_serves_a_descriptor_once", test_once_serves_a_descriptor_once, 60},
    {"nested_poll_ends_the_batch", test_nested_poll_ends_the_batch, 60},
    {"stop_ends_the_pass", test_stop_ends_the_pass, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_wakeup", tests, sizeof tests / sizeof tests[0]);
}
