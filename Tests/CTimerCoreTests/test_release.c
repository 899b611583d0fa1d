/*
 * The release handler: every timer's context is handed back exactly once,
 * and never while a callback may still be given it.
 *
 * Usage: test_release [seed] [--only=NAME]     (or env TK_SEED)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_harness.h"

/* A context that counts how often it was called back and released, and
 * whether a callback ever came after its release. */
typedef struct tracked {
    atomic_int callbacks;
    atomic_int releases;
    atomic_int running;             /* callbacks in progress */
    atomic_int callback_after_release;
    atomic_int release_while_running;
    int action;                     /* what the callback does, see below */
    atomic_int gate;                /* SLOW: the callback waits until this is 1 */
    tk_timer_id self;
    int take_result;                /* TAKE_SELF: what tk_loop_cancel_take returned */
    void *taken;                    /* ... and the context it handed back */
    tk_timer_record *record;        /* its record, if it has one in memory of the test's */
} tracked;

/* TAKE_RECORD_SELF: as TAKE_SELF, with tk_loop_cancel_record. */
enum { DO_NOTHING, CANCEL_SELF, RESCHEDULE_SELF, SLOW, TAKE_SELF, TAKE_RECORD_SELF };

static void on_release(tk_loop *loop, void *context) {
    (void)loop;
    tracked *t = context;
    if (atomic_load(&t->running) > 0) atomic_fetch_add(&t->release_while_running, 1);
    atomic_fetch_add(&t->releases, 1);
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void on_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)missed;
    tracked *t = context;
    atomic_fetch_add(&t->running, 1);
    if (atomic_load(&t->releases) > 0) atomic_fetch_add(&t->callback_after_release, 1);
    atomic_fetch_add(&t->callbacks, 1);
    switch (t->action) {
    case CANCEL_SELF:
        tk_loop_cancel(loop, id);
        break;
    case RESCHEDULE_SELF: {
        t->action = DO_NOTHING;
        tk_timer_spec again = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 10,
                               .modes = TK_MODES(0)};
        tk_loop_reschedule(loop, id, &again);
        break;
    }
    case TAKE_SELF:
        t->take_result = tk_loop_cancel_take(loop, id, &t->taken);
        break;
    case TAKE_RECORD_SELF:
        t->take_result = tk_loop_cancel_record(loop, t->record, &t->taken);
        break;
    case SLOW:
        /* Held until the test has cancelled it (10 s at most). */
        for (int waited = 0; atomic_load(&t->gate) == 0 && waited < 10000; waited++) sleep_ms(1);
        break;
    }
    atomic_fetch_sub(&t->running, 1);
}

static tk_timer_spec one_shot(int64_t in) {
    return (tk_timer_spec){.clock = TK_CLOCK_MONOTONIC, .delay_ns = in, .modes = TK_MODES(0)};
}

static tk_loop *manual_loop(void) {
    tk_loop *loop = NULL;
    if (tk_loop_create_manual(&loop, 0) != 0) abort();
    if (tk_loop_set_release_handler(loop, on_release) != 0) abort();
    return loop;
}

/* Each way a timer ends releases its context once, after its last callback. */
static void test_each_way_to_end(void) {
    tk_loop *loop = manual_loop();
    tracked cancelled = {0}, fired = {0}, self_cancelled = {.action = CANCEL_SELF},
            revived = {.action = RESCHEDULE_SELF}, pending = {0}, by_hand = {0},
            repeating = {0};
    tk_timer_spec spec = one_shot(100);
    tk_loop_schedule(loop, &spec, on_fire, &cancelled, &cancelled.self);
    tk_loop_schedule(loop, &spec, on_fire, &fired, &fired.self);
    tk_loop_schedule(loop, &spec, on_fire, &self_cancelled, &self_cancelled.self);
    tk_loop_schedule(loop, &spec, on_fire, &revived, &revived.self);
    tk_loop_schedule(loop, &spec, on_fire, &by_hand, &by_hand.self);
    tk_timer_spec later = one_shot(1000000);
    tk_loop_schedule(loop, &later, on_fire, &pending, &pending.self);
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 50, .interval_ns = 50,
                           .modes = TK_MODES(0)};
    tk_loop_schedule(loop, &every, on_fire, &repeating, &repeating.self);

    CHECK(tk_loop_cancel(loop, cancelled.self) == 0);
    CHECK(atomic_load(&cancelled.releases) == 1);
    CHECK(tk_loop_cancel(loop, cancelled.self) == -ENOENT);
    CHECK(atomic_load(&cancelled.releases) == 1);

    CHECK(tk_loop_fire(loop, by_hand.self) == 0);
    CHECK(atomic_load(&by_hand.callbacks) == 1 && atomic_load(&by_hand.releases) == 1);

    tk_loop_advance(loop, 0, 100);
    CHECK(atomic_load(&fired.callbacks) == 1 && atomic_load(&fired.releases) == 1);
    CHECK(atomic_load(&self_cancelled.callbacks) == 1);
    CHECK(atomic_load(&self_cancelled.releases) == 1);
    CHECK(atomic_load(&revived.callbacks) == 1 && atomic_load(&revived.releases) == 0);
    CHECK(atomic_load(&repeating.releases) == 0);

    tk_loop_advance(loop, 0, 100);
    CHECK(atomic_load(&revived.callbacks) == 2 && atomic_load(&revived.releases) == 1);
    CHECK(atomic_load(&repeating.callbacks) >= 2 && atomic_load(&repeating.releases) == 0);

    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&pending.releases) == 1 && atomic_load(&pending.callbacks) == 0);
    CHECK(atomic_load(&repeating.releases) == 1);

    tracked *all[] = {&cancelled, &fired, &self_cancelled, &revived, &pending, &by_hand,
                      &repeating};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(atomic_load(&all[i]->releases) == 1);
        CHECK(atomic_load(&all[i]->callback_after_release) == 0);
        CHECK(atomic_load(&all[i]->release_while_running) == 0);
    }
}

/* The same with every timer's record in memory of the test's: each record
 * is poisoned (under AddressSanitizer; scribbled over otherwise) as soon as
 * the release handler has its context, so a loop that read or wrote a
 * record it is done with would be caught. A record the loop is done with
 * can be scheduled again. */
#if defined(__SANITIZE_ADDRESS__)
#define TK_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TK_TEST_ASAN 1
#endif
#endif
#ifdef TK_TEST_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) memset(p, 0xA5, n)
#define UNPOISON(p, n) memset(p, 0, n)
#endif

typedef struct recorded {
    tracked t; /* first: the context is the recorded, read as a tracked */
    tk_timer_record record;
} recorded;

static void on_release_record(tk_loop *loop, void *context) {
    on_release(loop, context);
    recorded *r = context;
    POISON(&r->record, sizeof r->record);
}

static void schedule_recorded(tk_loop *loop, tk_timer_spec spec, recorded *r) {
    UNPOISON(&r->record, sizeof r->record);
    memset(&r->record, 0, sizeof r->record);
    r->t.record = &r->record;
    if (tk_loop_schedule_record(loop, &r->record, &spec, on_fire, r, &r->t.self) != 0) abort();
}

static void test_records_each_way_to_end(void) {
    tk_loop *loop = NULL;
    if (tk_loop_create_manual(&loop, 0) != 0) abort();
    if (tk_loop_set_release_handler(loop, on_release_record) != 0) abort();
    recorded cancelled = {0}, fired = {0}, self_cancelled = {.t.action = CANCEL_SELF},
             revived = {.t.action = RESCHEDULE_SELF}, pending = {0}, by_hand = {0},
             repeating = {0}, taken = {0};
    tk_timer_spec spec = one_shot(100);
    schedule_recorded(loop, spec, &cancelled);
    schedule_recorded(loop, spec, &fired);
    schedule_recorded(loop, spec, &self_cancelled);
    schedule_recorded(loop, spec, &revived);
    schedule_recorded(loop, spec, &by_hand);
    schedule_recorded(loop, spec, &taken);
    schedule_recorded(loop, one_shot(1000000), &pending);
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 50, .interval_ns = 50,
                           .modes = TK_MODES(0)};
    schedule_recorded(loop, every, &repeating);

    CHECK(tk_loop_cancel(loop, cancelled.t.self) == 0);
    CHECK(atomic_load(&cancelled.t.releases) == 1);
    CHECK(tk_loop_cancel(loop, cancelled.t.self) == -ENOENT);

    /* Handed back rather than released: the record is free at once. */
    void *context = NULL;
    CHECK(tk_loop_cancel_take(loop, taken.t.self, &context) == 1);
    CHECK(context == &taken);
    CHECK(atomic_load(&taken.t.releases) == 0);
    CHECK(tk_loop_cancel(loop, taken.t.self) == -ENOENT);
    tk_timer_id stale = taken.t.self;
    schedule_recorded(loop, one_shot(10), &taken);
    CHECK(taken.t.self != stale);

    CHECK(tk_loop_fire(loop, by_hand.t.self) == 0);
    CHECK(atomic_load(&by_hand.t.callbacks) == 1 && atomic_load(&by_hand.t.releases) == 1);

    tk_loop_advance(loop, 0, 100);
    CHECK(atomic_load(&fired.t.callbacks) == 1 && atomic_load(&fired.t.releases) == 1);
    CHECK(atomic_load(&self_cancelled.t.callbacks) == 1);
    CHECK(atomic_load(&self_cancelled.t.releases) == 1);
    CHECK(atomic_load(&revived.t.callbacks) == 1 && atomic_load(&revived.t.releases) == 0);
    CHECK(atomic_load(&taken.t.callbacks) == 1 && atomic_load(&taken.t.releases) == 1);
    CHECK(atomic_load(&repeating.t.releases) == 0);

    /* A released record, scheduled again, fires as new. */
    schedule_recorded(loop, one_shot(10), &fired);
    tk_loop_advance(loop, 0, 100);
    CHECK(atomic_load(&revived.t.callbacks) == 2 && atomic_load(&revived.t.releases) == 1);
    CHECK(atomic_load(&fired.t.callbacks) == 2 && atomic_load(&fired.t.releases) == 2);
    CHECK(atomic_load(&repeating.t.callbacks) >= 2 && atomic_load(&repeating.t.releases) == 0);

    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&pending.t.releases) == 1 && atomic_load(&pending.t.callbacks) == 0);
    CHECK(atomic_load(&repeating.t.releases) == 1);

    recorded *all[] = {&cancelled, &self_cancelled, &revived, &pending, &by_hand, &repeating,
                       &taken};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(atomic_load(&all[i]->t.releases) == 1);
        CHECK(atomic_load(&all[i]->t.callback_after_release) == 0);
        CHECK(atomic_load(&all[i]->t.release_while_running) == 0);
    }
    recorded *used[] = {&cancelled, &fired, &self_cancelled, &revived, &pending, &by_hand,
                        &repeating, &taken};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
        UNPOISON(&used[i]->record, sizeof used[i]->record);
    }
}

/* tk_loop_cancel_record is tk_loop_cancel_take with the timer named by its
 * record: the context back when the loop lets go at once, and the record
 * free again; 0 from the timer's own callback, with the context going to
 * the release handler when the callback returns; -ENOENT, the context left
 * alone and nothing changed, for a record that holds no live timer of the
 * loop: one never scheduled, one the loop is done with, one another loop
 * holds, and a one-shot fired by hand. */
static void test_cancel_record(void) {
    tk_loop *loop = NULL, *other = NULL;
    if (tk_loop_create_manual(&loop, 0) != 0 || tk_loop_create_manual(&other, 0) != 0) abort();
    if (tk_loop_set_release_handler(loop, on_release_record) != 0) abort();
    if (tk_loop_set_release_handler(other, on_release_record) != 0) abort();
    recorded pending = {0}, repeating = {.t.action = TAKE_RECORD_SELF},
             one = {.t.action = TAKE_RECORD_SELF}, by_hand = {.t.action = TAKE_RECORD_SELF},
             elsewhere = {0}, never = {0}, kept = {0};
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 50, .interval_ns = 50,
                           .modes = TK_MODES(0)};
    schedule_recorded(loop, one_shot(100), &pending);
    schedule_recorded(loop, every, &repeating);
    schedule_recorded(loop, one_shot(100), &one);
    schedule_recorded(loop, one_shot(100), &by_hand);
    schedule_recorded(loop, one_shot(1000), &kept);
    schedule_recorded(other, one_shot(100), &elsewhere);

    void *context = NULL;
    CHECK(tk_loop_cancel_record(loop, &pending.record, &context) == 1);
    CHECK(context == &pending);
    CHECK(atomic_load(&pending.t.releases) == 0);
    CHECK(tk_loop_cancel(loop, pending.t.self) == -ENOENT);
    context = NULL;
    CHECK(tk_loop_cancel_record(loop, &pending.record, &context) == -ENOENT);
    CHECK(context == NULL);
    /* Free again: it can be scheduled at once, and cancelled by record again. */
    tk_timer_id stale = pending.t.self;
    schedule_recorded(loop, one_shot(100), &pending);
    CHECK(pending.t.self != stale);
    CHECK(tk_loop_cancel_record(loop, &pending.record, &context) == 1 && context == &pending);

    /* Records that hold no timer of this loop: nothing changes. */
    memset(&never.record, 0, sizeof never.record);
    CHECK(tk_loop_cancel_record(loop, &never.record, &context) == -ENOENT);
    context = NULL;
    CHECK(tk_loop_cancel_record(loop, &elsewhere.record, &context) == -ENOENT);
    CHECK(context == NULL);
    tk_loop_stats stats;
    CHECK(tk_loop_get_stats(other, &stats) == 0 && stats.pending == 1);
    CHECK(tk_loop_get_stats(loop, &stats) == 0 && stats.pending == 4);

    /* Fired by hand, a one-shot is done before its callback runs. */
    CHECK(tk_loop_fire(loop, by_hand.t.self) == 0);
    CHECK(by_hand.t.take_result == -ENOENT && by_hand.t.taken == NULL);
    CHECK(atomic_load(&by_hand.t.releases) == 1);

    /* From their own callbacks, in the loop's pass. */
    CHECK(tk_loop_advance(loop, 0, 100) == 2);
    CHECK(repeating.t.take_result == 0 && repeating.t.taken == NULL);
    CHECK(atomic_load(&repeating.t.callbacks) == 1 && atomic_load(&repeating.t.releases) == 1);
    CHECK(one.t.take_result == 0 && one.t.taken == NULL);
    CHECK(atomic_load(&one.t.callbacks) == 1 && atomic_load(&one.t.releases) == 1);
    CHECK(tk_loop_get_stats(loop, &stats) == 0 && stats.pending == 1);

    /* The other loop's timer fires, untouched. */
    CHECK(tk_loop_advance(other, 0, 100) == 1);
    CHECK(atomic_load(&elsewhere.t.callbacks) == 1 && atomic_load(&elsewhere.t.releases) == 1);

    /* A loop's destruction frees the records it held: a loop made after it
     * finds no timer in them. */
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&kept.t.releases) == 1 && atomic_load(&kept.t.callbacks) == 0);
    UNPOISON(&kept.record, sizeof kept.record);
    if (tk_loop_create_manual(&loop, 0) != 0) abort();
    context = NULL;
    CHECK(tk_loop_cancel_record(loop, &kept.record, &context) == -ENOENT && context == NULL);
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(tk_loop_destroy(other) == 0);

    recorded *all[] = {&repeating, &one, &by_hand, &elsewhere, &kept};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(atomic_load(&all[i]->t.releases) == 1);
        CHECK(atomic_load(&all[i]->t.callback_after_release) == 0);
        CHECK(atomic_load(&all[i]->t.release_while_running) == 0);
    }
    CHECK(atomic_load(&pending.t.releases) == 0);
    recorded *used[] = {&repeating, &one, &by_hand, &elsewhere};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
        UNPOISON(&used[i]->record, sizeof used[i]->record);
    }
}

/* tk_loop_cancel_take hands the context back when the loop lets go of the
 * timer at once, and only then: from the timer's own callback (the loop's
 * pass, or tk_loop_fire), the context goes to the release handler when the
 * callback returns, as after tk_loop_cancel. */
static void test_cancel_take(void) {
    tk_loop *loop = manual_loop();
    tracked pending = {0}, repeating = {.action = TAKE_SELF}, one = {.action = TAKE_SELF},
            by_hand = {.action = TAKE_SELF};
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 50, .interval_ns = 50,
                           .modes = TK_MODES(0)};
    tk_timer_spec spec = one_shot(100);
    CHECK(tk_loop_schedule(loop, &spec, on_fire, &pending, &pending.self) == 0);
    CHECK(tk_loop_schedule(loop, &every, on_fire, &repeating, &repeating.self) == 0);
    CHECK(tk_loop_schedule(loop, &spec, on_fire, &one, &one.self) == 0);
    CHECK(tk_loop_schedule(loop, &every, on_fire, &by_hand, &by_hand.self) == 0);

    void *context = NULL;
    CHECK(tk_loop_cancel_take(loop, pending.self, &context) == 1);
    CHECK(context == &pending);
    CHECK(atomic_load(&pending.releases) == 0);
    context = NULL;
    CHECK(tk_loop_cancel_take(loop, pending.self, &context) == -ENOENT);
    CHECK(context == NULL);

    CHECK(tk_loop_fire(loop, by_hand.self) == 0);
    CHECK(by_hand.take_result == 0 && by_hand.taken == NULL);
    CHECK(atomic_load(&by_hand.releases) == 1);

    CHECK(tk_loop_advance(loop, 0, 100) >= 2);
    CHECK(repeating.take_result == 0 && repeating.taken == NULL);
    CHECK(atomic_load(&repeating.callbacks) == 1 && atomic_load(&repeating.releases) == 1);
    CHECK(one.take_result == 0 && one.taken == NULL);
    CHECK(atomic_load(&one.callbacks) == 1 && atomic_load(&one.releases) == 1);
    CHECK(tk_loop_destroy(loop) == 0);
    tracked *all[] = {&repeating, &one, &by_hand};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(atomic_load(&all[i]->releases) == 1);
        CHECK(atomic_load(&all[i]->release_while_running) == 0);
    }
    CHECK(atomic_load(&pending.releases) == 0);
}

struct runner {
    tk_loop *loop;
};

static void *run_loop(void *argument) {
    struct runner *runner = argument;
    tk_loop_run(runner->loop, 0, TK_FOREVER, 0);
    return NULL;
}

/* Cancelling from another thread while the timer's callback runs: the
 * release waits for the callback to return. */
static void test_cancel_during_callback(void) {
    tk_loop *loop = NULL;
    CHECK(tk_loop_create(&loop) == 0);
    tk_loop_set_release_handler(loop, on_release);
    tracked slow = {.action = SLOW};
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000000,
                           .interval_ns = 1000000, .modes = TK_MODES(0)};
    CHECK(tk_loop_schedule(loop, &every, on_fire, &slow, &slow.self) == 0);
    struct runner runner = {loop};
    pthread_t thread;
    pthread_create(&thread, NULL, run_loop, &runner);
    while (atomic_load(&slow.running) == 0) sleep_ms(1);
    CHECK(tk_loop_cancel(loop, slow.self) == 0);   /* repeating: still scheduled */
    CHECK(atomic_load(&slow.releases) == 0);        /* its callback still runs */
    atomic_store(&slow.gate, 1);
    while (atomic_load(&slow.releases) == 0) sleep_ms(1);
    CHECK(atomic_load(&slow.release_while_running) == 0);
    int callbacks = atomic_load(&slow.callbacks);
    sleep_ms(20);
    CHECK(atomic_load(&slow.callbacks) == callbacks); /* no callback after the cancel */
    tk_loop_stop(loop);
    pthread_join(thread, NULL);
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&slow.releases) == 1);
    CHECK(atomic_load(&slow.callback_after_release) == 0);
}

/* Many threads cancel random timers of a running loop: each context is
 * released exactly once, never while a callback of it runs, and no callback
 * comes after its release. */
enum { STRESS_TIMERS = 4000, STRESS_THREADS = 3 };
static tracked stress[STRESS_TIMERS];

struct canceller {
    tk_loop *loop;
    uint64_t rng; /* this thread's own random state */
};

static void *cancel_randomly(void *argument) {
    struct canceller *c = argument;
    for (int i = 0; i < STRESS_TIMERS; i++) {
        tracked *t = &stress[rng_below(&c->rng, STRESS_TIMERS)];
        tk_loop_cancel(c->loop, t->self);
        if (i % 64 == 0) sleep_ms(1);
    }
    return NULL;
}

static void test_stress(void) {
    tk_loop *loop = NULL;
    CHECK(tk_loop_create(&loop) == 0);
    tk_loop_set_release_handler(loop, on_release);
    for (int i = 0; i < STRESS_TIMERS; i++) {
        int64_t in = (int64_t)rng_below(&g_rng, 20000000);
        tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = in,
                              .interval_ns = (i % 3 == 0) ? 1000000 : 0, .modes = TK_MODES(0)};
        stress[i].action = (i % 7 == 0) ? CANCEL_SELF : DO_NOTHING;
        if (tk_loop_schedule(loop, &spec, on_fire, &stress[i], &stress[i].self) != 0) abort();
    }
    struct runner runner = {loop};
    pthread_t thread;
    pthread_create(&thread, NULL, run_loop, &runner);
    pthread_t threads[STRESS_THREADS];
    struct canceller cancellers[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        cancellers[i] = (struct canceller){loop, rng_next(&g_rng)};
        pthread_create(&threads[i], NULL, cancel_randomly, &cancellers[i]);
    }
    for (int i = 0; i < STRESS_THREADS; i++) pthread_join(threads[i], NULL);
    sleep_ms(40); /* let the one-shots that were not cancelled fire */
    tk_loop_stop(loop);
    pthread_join(thread, NULL);
    CHECK(tk_loop_destroy(loop) == 0);
    int bad = 0;
    for (int i = 0; i < STRESS_TIMERS; i++) {
        if (atomic_load(&stress[i].releases) != 1 ||
            atomic_load(&stress[i].callback_after_release) != 0 ||
            atomic_load(&stress[i].release_while_running) != 0) {
            if (bad++ < 5) {
                fprintf(stderr, "timer %d: %d releases, %d callbacks after, %d while running\n", i,
                        atomic_load(&stress[i].releases),
                        atomic_load(&stress[i].callback_after_release),
                        atomic_load(&stress[i].release_while_running));
            }
        }
    }
    CHECK(bad == 0);
}

/* A release handler may call the loop, but not destroy it. */
static int destroy_result = 1;

static void destroy_from_release(tk_loop *loop, void *context) {
    (void)context;
    destroy_result = tk_loop_destroy(loop);
}

static void test_destroy_from_release_handler(void) {
    tk_loop *loop = NULL;
    CHECK(tk_loop_create_manual(&loop, 0) == 0);
    tk_loop_set_release_handler(loop, destroy_from_release);
    tracked t = {0};
    tk_timer_spec spec = one_shot(100);
    CHECK(tk_loop_schedule(loop, &spec, on_fire, &t, &t.self) == 0);
    CHECK(tk_loop_cancel(loop, t.self) == 0);
    CHECK(destroy_result == -EBUSY);
    destroy_result = 1;
    tracked *fired = &t;
    memset(fired, 0, sizeof *fired);
    CHECK(tk_loop_schedule(loop, &spec, on_fire, fired, &fired->self) == 0);
    CHECK(tk_loop_fire(loop, fired->self) == 0);   /* one-shot: released after its callback */
    CHECK(destroy_result == -EBUSY);
    tk_loop_set_release_handler(loop, on_release);
    CHECK(tk_loop_destroy(loop) == 0);
}

/* A callback that schedules due timers of another mode and runs that mode
 * nested: back in the outer pass, the timers its callbacks added are new to
 * it (they wait for a later pass), and parking them needs no room made
 * beforehand. */
static tracked nested_a, nested_c, nested_d;

static void stop_loop(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    atomic_fetch_add(&((tracked *)context)->callbacks, 1);
    tk_loop_stop(loop);
}

static void run_nested(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed, (void)context;
    atomic_fetch_add(&nested_a.callbacks, 1);
    tk_timer_spec due_in_two = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = 0,
                                .modes = TK_MODES(2), .flags = TK_TIMER_ABSOLUTE};
    tk_loop_schedule(loop, &due_in_two, stop_loop, &nested_d, &nested_d.self);
    for (int i = 0; i < 100; i++) {  /* more than any room made for mode 0's pass */
        tk_timer_spec later = due_in_two;
        later.deadline_ns = 1;
        tk_timer_id ignored;
        tk_loop_schedule(loop, &later, on_fire, &nested_c, &ignored);
    }
    CHECK(tk_loop_run(loop, TK_MODES(2), TK_FOREVER, TK_RUN_NOWAIT) == TK_RUN_STOPPED);
}

static void test_nested_run_parks_safely(void) {
    tk_loop *loop = NULL;
    CHECK(tk_loop_create_manual(&loop, 10) == 0);
    tk_loop_set_release_handler(loop, on_release);
    tk_timer_spec due = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = 0, .modes = TK_MODES(0),
                         .flags = TK_TIMER_ABSOLUTE};
    CHECK(tk_loop_schedule(loop, &due, run_nested, &nested_a, &nested_a.self) == 0);
    int result = tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT);
    CHECK(result == TK_RUN_PASSED);
    CHECK(atomic_load(&nested_a.callbacks) == 1);
    CHECK(atomic_load(&nested_d.callbacks) == 1);
    /* The mode-2 timers the stopped nested run left: parked by the outer run. */
    tk_loop_stats stats;
    tk_loop_get_stats(loop, &stats);
    CHECK(stats.pending == 100);
    CHECK(tk_loop_advance(loop, TK_MODES(2), 0) == 100);
    CHECK(atomic_load(&nested_c.callbacks) == 100);
    CHECK(tk_loop_destroy(loop) == 0);
}

/* A one-shot that revives itself and runs the loop nested: the nested run
 * does not fire it while its callback runs (it is set aside), the outer
 * pass does not either, and the next pass fires it once; its context is
 * released once, after that second callback. */
static tracked refired;
static int refire_depth, refire_most_running, refire_info_inside, refire_nested_fired;

static void refire_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)missed;
    tracked *t = context;
    int running = atomic_fetch_add(&t->running, 1) + 1;
    if (running > refire_most_running) refire_most_running = running;
    atomic_fetch_add(&t->callbacks, 1);
    if (refire_depth++ == 0) {
        tk_timer_spec now = one_shot(0);
        CHECK(tk_loop_reschedule(loop, id, &now) == 0);
        int before = atomic_load(&t->callbacks);
        CHECK(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT) == TK_RUN_PASSED);
        refire_nested_fired = atomic_load(&t->callbacks) - before;
        tk_timer_info info;
        refire_info_inside = tk_loop_timer_info(loop, id, &info);
    }
    atomic_fetch_sub(&t->running, 1);
}

static void test_refire_in_nested_run(void) {
    tk_loop *loop = manual_loop();
    tk_timer_spec now = one_shot(0);
    CHECK(tk_loop_schedule(loop, &now, refire_fn, &refired, &refired.self) == 0);
    CHECK(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT) == TK_RUN_PASSED);
    CHECK(refire_nested_fired == 0);   /* not while its callback ran */
    CHECK(refire_info_inside == 0);    /* still scheduled, set aside */
    CHECK(atomic_load(&refired.callbacks) == 1);
    CHECK(atomic_load(&refired.releases) == 0);
    CHECK(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT) == TK_RUN_PASSED);
    CHECK(atomic_load(&refired.callbacks) == 2);
    CHECK(refire_most_running == 1);
    CHECK(atomic_load(&refired.releases) == 1);
    CHECK(atomic_load(&refired.release_while_running) == 0);
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&refired.releases) == 1);
}

/* The loop's hold (tk_loop_set_hold): begun, under the loop's lock, by the
 * schedule of the first timer with a record while none is held, and ended
 * once by whatever ends the last one, after that timer's own context:
 * handed back by tk_loop_cancel_record (2), to the release handler by every
 * other way a timer ends, and by tk_loop_destroy. */
typedef struct hold_count {
    atomic_int begins;
    atomic_int ends;           /* handed to the release handler */
    atomic_int ended_early;    /* an end that came with no hold begun */
    atomic_int releases_seen;  /* timer contexts released before the latest end */
} hold_count;

static hold_count g_hold;
static atomic_int g_context_releases;

static void on_hold(tk_loop *loop, void *context) {
    (void)loop;
    hold_count *hold = context;
    atomic_fetch_add(&hold->begins, 1);
}

static void on_release_with_hold(tk_loop *loop, void *context) {
    if (context == &g_hold) {
        if (atomic_load(&g_hold.ends) >= atomic_load(&g_hold.begins)) {
            atomic_fetch_add(&g_hold.ended_early, 1);
        }
        atomic_store(&g_hold.releases_seen, atomic_load(&g_context_releases));
        atomic_fetch_add(&g_hold.ends, 1);
        return;
    }
    atomic_fetch_add(&g_context_releases, 1);
    /* A timer with a record of the test's has it poisoned. */
    if (((tracked *)context)->record != NULL) {
        on_release_record(loop, context);
    } else {
        on_release(loop, context);
    }
}

static int holds(void) { return atomic_load(&g_hold.begins) - atomic_load(&g_hold.ends); }

static void test_hold(void) {
    memset(&g_hold, 0, sizeof g_hold);
    atomic_store(&g_context_releases, 0);
    tk_loop *loop = NULL;
    if (tk_loop_create_manual(&loop, 0) != 0) abort();
    CHECK(tk_loop_set_hold(NULL, on_hold, &g_hold) == -EINVAL);
    CHECK(tk_loop_set_hold(loop, NULL, &g_hold) == -EINVAL);
    if (tk_loop_set_release_handler(loop, on_release_with_hold) != 0) abort();
    CHECK(tk_loop_set_hold(loop, on_hold, &g_hold) == 0);

    /* A timer with no record of the caller's takes no hold. */
    tracked plain = {0};
    tk_timer_spec later = one_shot(1000000);
    CHECK(tk_loop_schedule(loop, &later, on_fire, &plain, &plain.self) == 0);
    CHECK(atomic_load(&g_hold.begins) == 0);

    /* Begun by the first record, once for any number. */
    recorded a = {0}, b = {0};
    schedule_recorded(loop, one_shot(100), &a);
    CHECK(atomic_load(&g_hold.begins) == 1);
    schedule_recorded(loop, one_shot(100), &b);
    CHECK(atomic_load(&g_hold.begins) == 1);
    /* Nor does such a timer's end end it. */
    tracked table = {0};
    CHECK(tk_loop_schedule(loop, &later, on_fire, &table, &table.self) == 0);
    CHECK(tk_loop_cancel(loop, table.self) == 0 && atomic_load(&table.releases) == 1);
    CHECK(holds() == 1);
    /* Not changed while held. */
    int other = 0;
    CHECK(tk_loop_set_hold(loop, on_hold, &other) == -EBUSY);
    CHECK(tk_loop_set_hold(loop, NULL, NULL) == -EBUSY);

    /* Ended by the last record's cancel, handed back with its context. */
    void *context = NULL;
    CHECK(tk_loop_cancel_record(loop, &a.record, &context) == 1 && context == &a);
    context = NULL;
    CHECK(tk_loop_cancel_record(loop, &b.record, &context) == 2 && context == &b);
    CHECK(atomic_load(&g_hold.ends) == 0 && holds() == 1);
    atomic_fetch_add(&g_hold.ends, 1); /* released here, as the caller would */

    /* Ended, to the release handler, after the timer's context: by a
     * one-shot's fire in a pass, by tk_loop_fire, by tk_loop_cancel and
     * tk_loop_cancel_take, and by a cancel from the timer's own callback,
     * once the callback returns. */
    recorded fired = {0}, by_hand = {0}, cancelled = {0}, taken = {0},
             self_taken = {.t.action = TAKE_RECORD_SELF}, repeating = {0};
    int ends = 1;
    schedule_recorded(loop, one_shot(100), &fired);
    CHECK(holds() == 1);
    CHECK(tk_loop_advance(loop, 0, 100) == 1);
    CHECK(holds() == 0 && atomic_load(&g_hold.ends) == ++ends);
    CHECK(atomic_load(&g_hold.releases_seen) == atomic_load(&g_context_releases));
    CHECK(atomic_load(&fired.t.releases) == 1);

    schedule_recorded(loop, one_shot(100), &by_hand);
    CHECK(tk_loop_fire(loop, by_hand.t.self) == 0);
    CHECK(holds() == 0 && atomic_load(&g_hold.ends) == ++ends);
    CHECK(atomic_load(&g_hold.releases_seen) == atomic_load(&g_context_releases));

    schedule_recorded(loop, one_shot(100), &cancelled);
    CHECK(tk_loop_cancel(loop, cancelled.t.self) == 0);
    CHECK(holds() == 0 && atomic_load(&g_hold.ends) == ++ends);

    schedule_recorded(loop, one_shot(100), &taken);
    context = NULL;
    CHECK(tk_loop_cancel_take(loop, taken.t.self, &context) == 1 && context == &taken);
    CHECK(holds() == 0 && atomic_load(&g_hold.ends) == ++ends);

    schedule_recorded(loop, one_shot(100), &self_taken);
    CHECK(tk_loop_advance(loop, 0, 100) == 1);
    CHECK(self_taken.t.take_result == 0 && atomic_load(&self_taken.t.releases) == 1);
    CHECK(holds() == 0 && atomic_load(&g_hold.ends) == ++ends);

    /* A repeating timer keeps it through its fires. */
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 50, .interval_ns = 50,
                           .modes = TK_MODES(0)};
    schedule_recorded(loop, every, &repeating);
    CHECK(tk_loop_advance(loop, 0, 200) >= 1);
    CHECK(holds() == 1 && atomic_load(&repeating.t.callbacks) >= 2);

    /* Destroyed with a record held: the hold goes last. */
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(holds() == 0 && atomic_load(&g_hold.ends) == ++ends);
    CHECK(atomic_load(&g_hold.releases_seen) == atomic_load(&g_context_releases));
    CHECK(atomic_load(&repeating.t.releases) == 1 && atomic_load(&plain.releases) == 1);
    CHECK(atomic_load(&g_hold.ended_early) == 0);

    /* Cleared, there is none; nor on a loop that never set one. */
    if (tk_loop_create_manual(&loop, 0) != 0) abort();
    if (tk_loop_set_release_handler(loop, on_release_with_hold) != 0) abort();
    CHECK(tk_loop_set_hold(loop, on_hold, &g_hold) == 0);
    CHECK(tk_loop_set_hold(loop, NULL, NULL) == 0);
    int begins = atomic_load(&g_hold.begins);
    recorded unheld = {0};
    schedule_recorded(loop, one_shot(100), &unheld);
    context = NULL;
    CHECK(tk_loop_cancel_record(loop, &unheld.record, &context) == 1);
    CHECK(atomic_load(&g_hold.begins) == begins && atomic_load(&g_hold.ends) == ends);
    CHECK(tk_loop_destroy(loop) == 0);

    /* With no release handler, a hold that ends just ends, and begins again. */
    if (tk_loop_create_manual(&loop, 0) != 0) abort();
    CHECK(tk_loop_set_hold(loop, on_hold, &g_hold) == 0);
    recorded quiet = {0};
    CHECK(tk_loop_schedule_record(loop, &quiet.record, &later, on_fire, &quiet, &quiet.t.self) == 0);
    CHECK(atomic_load(&g_hold.begins) == begins + 1);
    CHECK(tk_loop_cancel(loop, quiet.t.self) == 0);
    CHECK(tk_loop_schedule_record(loop, &quiet.record, &later, on_fire, &quiet, &quiet.t.self) == 0);
    CHECK(atomic_load(&g_hold.begins) == begins + 2);
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&g_hold.ends) == ends && atomic_load(&quiet.t.releases) == 0);

    recorded *used[] = {&fired, &by_hand, &cancelled, &self_taken, &repeating};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
        UNPOISON(&used[i]->record, sizeof used[i]->record);
    }
}

/* Threads schedule and cancel records on a running loop, whose one-shots
 * fire meanwhile, so that the hold ends and begins again many times, by
 * every kind of call at once: it never ends more often than it began, and
 * ends as often as it began once nothing is left. */
#define HOLD_THREADS 3
#define HOLD_ROUNDS 4000

static atomic_int g_hold_handed_back;

struct hold_worker {
    tk_loop *loop;
    uint64_t rng;
};

static void *schedule_and_cancel_records(void *arg) {
    struct hold_worker *w = arg;
    recorded *r = calloc(HOLD_ROUNDS, sizeof *r);
    if (r == NULL) abort();
    for (int i = 0; i < HOLD_ROUNDS; i++) {
        tk_timer_spec spec = one_shot((int64_t)rng_below(&w->rng, 200000));
        if (tk_loop_schedule_record(w->loop, &r[i].record, &spec, on_fire, &r[i], &r[i].t.self) != 0) {
            abort();
        }
        if (rng_below(&w->rng, 2) == 0) {
            void *context = NULL;
            int result = tk_loop_cancel_record(w->loop, &r[i].record, &context);
            if (result == 2) atomic_fetch_add(&g_hold_handed_back, 1);
            if (result == 1 || result == 2) atomic_fetch_add(&r[i].t.releases, 1);
        }
        if (i % 256 == 0) sleep_ms(1);
    }
    /* Every record is done with once the loop has fired what is left. */
    for (int waited = 0; waited < 10000; waited++) {
        int left = 0;
        for (int i = 0; i < HOLD_ROUNDS; i++) left += atomic_load(&r[i].t.releases) == 0;
        if (left == 0) break;
        sleep_ms(1);
    }
    int bad = 0;
    for (int i = 0; i < HOLD_ROUNDS; i++) bad += atomic_load(&r[i].t.releases) != 1;
    CHECK(bad == 0);
    free(r);
    return NULL;
}

static void on_release_counting(tk_loop *loop, void *context) {
    (void)loop;
    if (context == &g_hold) {
        if (atomic_load(&g_hold.ends) + atomic_load(&g_hold_handed_back) >=
            atomic_load(&g_hold.begins)) {
            atomic_fetch_add(&g_hold.ended_early, 1);
        }
        atomic_fetch_add(&g_hold.ends, 1);
        return;
    }
    atomic_fetch_add(&((tracked *)context)->releases, 1);
}

static void test_hold_stress(void) {
    memset(&g_hold, 0, sizeof g_hold);
    atomic_store(&g_hold_handed_back, 0);
    tk_loop *loop = NULL;
    CHECK(tk_loop_create(&loop) == 0);
    CHECK(tk_loop_set_release_handler(loop, on_release_counting) == 0);
    CHECK(tk_loop_set_hold(loop, on_hold, &g_hold) == 0);
    struct runner runner = {loop};
    pthread_t thread;
    pthread_create(&thread, NULL, run_loop, &runner);
    pthread_t threads[HOLD_THREADS];
    struct hold_worker workers[HOLD_THREADS];
    for (int i = 0; i < HOLD_THREADS; i++) {
        workers[i] = (struct hold_worker){loop, rng_next(&g_rng)};
        pthread_create(&threads[i], NULL, schedule_and_cancel_records, &workers[i]);
    }
    for (int i = 0; i < HOLD_THREADS; i++) pthread_join(threads[i], NULL);
    tk_loop_stop(loop);
    pthread_join(thread, NULL);
    int begins = atomic_load(&g_hold.begins);
    int ends = atomic_load(&g_hold.ends) + atomic_load(&g_hold_handed_back);
    CHECK(begins >= 1);
    CHECK(ends == begins);
    /* A begin is counted before its schedule returns and a hand-back after
     * its cancel returns, so each end the release handler sees has fewer
     * ends counted before it than begins. */
    CHECK(atomic_load(&g_hold.ended_early) == 0);
    CHECK(tk_loop_destroy(loop) == 0);
    CHECK(atomic_load(&g_hold.ends) + atomic_load(&g_hold_handed_back) == begins);
}

static const test_case tests[] = {
    {"each_way_to_end", test_each_way_to_end, 60},
    {"records_each_way_to_end", test_records_each_way_to_end, 60},
    {"cancel_take", test_cancel_take, 60},
    {"cancel_record", test_cancel_record, 60},
    {"cancel_during_callback", test_cancel_during_callback, 60},
    {"destroy_from_release_handler", test_destroy_from_release_handler, 60},
    {"nested_run_parks_safely", test_nested_run_parks_safely, 60},
    {"refire_in_nested_run", test_refire_in_nested_run, 60},
    {"hold", test_hold, 60},
    {"hold_stress", test_hold_stress, 300},
    {"stress", test_stress, 300},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_release", tests, sizeof tests / sizeof tests[0]);
}
