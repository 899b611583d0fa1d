/*
 * Precise timers (TK_TIMER_PRECISE) and a loop's precision settings.
 *
 *   - Bad specs and bad settings are -EINVAL, and change nothing.
 *   - On a manual loop a precise timer is a timer with no leeway: exact fire
 *     times, wake-ups at the deadlines, no spin.
 *   - On a real loop: every fire is on time or late, never early; the loop
 *     spins for them and counts the spin's CPU time; a run of precise timers
 *     within the margin does not starve a watched descriptor, nor a stop;
 *     a spin does not hold up another timer of the mode due before it ends.
 *   - The thread settings: timer slack 1 ns and SCHED_FIFO while the loop
 *     runs, put back afterwards; a SCHED_FIFO priority the process may not
 *     have is -EPERM, from tk_loop_set_precision and, if the permission goes
 *     away later, from tk_loop_run before its first pass. These run in child
 *     processes, which drop CAP_SYS_NICE and lower RLIMIT_RTPRIO.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"

#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_harness.h"

#define MS INT64_C(1000000)
#define US INT64_C(1000)

static int64_t now_on(tk_clock clock) {
    int64_t now = 0;
    CHECK_EQ(tk_clock_now(clock, &now), 0);
    return now;
}

static void noop(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed, (void)context;
}

/* ---- Bad input --------------------------------------------------------------- */

static void test_bad_input(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    tk_timer_id kept;
    tk_timer_spec later = {.delay_ns = 60000 * MS, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &later, noop, NULL, &kept), 0);

    /* A precise timer has no leeway; unknown flags stay unknown. */
    tk_timer_id id;
    tk_timer_spec bad = {.delay_ns = MS, .leeway_ns = 1, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &bad, noop, NULL, &id), -EINVAL);
    CHECK_EQ(tk_loop_reschedule(loop, kept, &bad), -EINVAL);
    bad = (tk_timer_spec){.delay_ns = MS, .flags = 0x4u};
    CHECK_EQ(tk_loop_schedule(loop, &bad, noop, NULL, &id), -EINVAL);

    /* Settings out of range, and their effect: none. */
    tk_precision wanted = {.margin_ns = 300 * US};
    CHECK_EQ(tk_loop_set_precision(loop, &wanted), 0);
    tk_precision bad_settings[] = {
        {.margin_ns = -1},
        {.margin_ns = TK_PRECISION_MAX_MARGIN_NS + 1},
        {.margin_ns = INT64_MIN},
        {.realtime_priority = -1},
        {.realtime_priority = 100},
        {.flags = 1},
    };
    for (size_t i = 0; i < sizeof bad_settings / sizeof bad_settings[0]; i++) {
        CHECK_EQ(tk_loop_set_precision(loop, &bad_settings[i]), -EINVAL);
    }
    CHECK_EQ(tk_loop_set_precision(NULL, &wanted), -EINVAL);
    CHECK_EQ(tk_loop_get_precision(NULL, &wanted), -EINVAL);
    CHECK_EQ(tk_loop_get_precision(loop, NULL), -EINVAL);
    tk_precision got;
    CHECK_EQ(tk_loop_get_precision(loop, &got), 1); /* set */
    CHECK_EQ(got.margin_ns, 300 * US);
    CHECK_EQ(got.realtime_priority, 0);

    /* Zero and NULL mean the default margin; NULL, no settings at all. */
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){0}), 0);
    CHECK_EQ(tk_loop_get_precision(loop, &got), 1);
    CHECK_EQ(got.margin_ns, TK_PRECISION_DEFAULT_MARGIN_NS);
    CHECK_EQ(tk_loop_set_precision(loop, NULL), 0);
    CHECK_EQ(tk_loop_get_precision(loop, &got), 0);
    CHECK_EQ(got.margin_ns, TK_PRECISION_DEFAULT_MARGIN_NS);

    /* The timer scheduled first is untouched. */
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, kept, &info), 0);
    CHECK_EQ(info.flags, TK_TIMER_PRECISE);
    CHECK_EQ(info.leeway_ns, 0);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- Manual time: exact --------------------------------------------------------- */

typedef struct fire_log {
    int count;
    int64_t at[64];
    int which[64];
    uint64_t missed[64];
} fire_log;

static fire_log g_log;

static void log_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id;
    int64_t now;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    if (g_log.count < 64) {
        g_log.at[g_log.count] = now;
        g_log.which[g_log.count] = (int)(intptr_t)context;
        g_log.missed[g_log.count] = missed;
        g_log.count++;
    }
}

static void test_manual_exact(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create_manual(&loop, 1000 * MS), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = 50 * MS}), 0);
    memset(&g_log, 0, sizeof g_log);
    /* 1: precise, every 10 ms from +10 ms. 2: due at +25 ms with 20 ms of
     * leeway, so it may wait for 1's fire at +30 ms. 3: precise at +31 ms. */
    tk_timer_id a, b, c;
    tk_timer_spec every = {.delay_ns = 10 * MS, .interval_ns = 10 * MS, .flags = TK_TIMER_PRECISE};
    tk_timer_spec lenient = {.delay_ns = 25 * MS, .leeway_ns = 20 * MS};
    tk_timer_spec single = {.deadline_ns = 1031 * MS, .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &every, log_fire, (void *)1, &a), 0);
    CHECK_EQ(tk_loop_schedule(loop, &lenient, log_fire, (void *)2, &b), 0);
    CHECK_EQ(tk_loop_schedule(loop, &single, log_fire, (void *)3, &c), 0);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, a, &info), 0);
    CHECK_EQ(info.flags, TK_TIMER_PRECISE);
    CHECK_EQ(info.deadline_ns, 1010 * MS);
    CHECK_EQ(tk_loop_timer_info(loop, b, &info), 0);
    CHECK_EQ(info.flags, 0);

    /* The margin plays no part: manual time moves to each deadline. */
    CHECK_EQ(tk_loop_run(loop, 0, 1040 * MS, 0), TK_RUN_TIMED_OUT);
    static const int64_t want_at[] = {1010, 1020, 1030, 1030, 1031, 1040};
    /* At 1030, 2 (due at 1025) is the more overdue, and fires first. */
    static const int want_which[] = {1, 1, 2, 1, 3, 1};
    CHECK_EQ(g_log.count, 6);
    for (int i = 0; i < g_log.count && i < 6; i++) {
        CHECK_EQ(g_log.at[i], want_at[i] * MS);
        CHECK_EQ(g_log.which[i], want_which[i]);
        CHECK_EQ(g_log.missed[i], 0);
    }
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.wakeups, 5); /* 1010, 1020, 1030, 1031, 1040 */
    CHECK_EQ(stats.spins, 0);
    CHECK_EQ(stats.spin_ns, 0);

    /* Rescheduling a precise timer with a leeway makes it an ordinary one. */
    tk_timer_spec relaxed = {.delay_ns = 5 * MS, .leeway_ns = MS};
    CHECK_EQ(tk_loop_reschedule(loop, a, &relaxed), 0);
    CHECK_EQ(tk_loop_timer_info(loop, a, &info), 0);
    CHECK_EQ(info.flags, 0);
    CHECK_EQ(info.leeway_ns, MS);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- Real time: never early, and fired ----------------------------------------- */

enum { REPEATS = 40, SINGLES = 20 };

typedef struct real_log {
    tk_clock clock;
    int64_t first;
    int64_t interval;
    int64_t next;     /* the deadline the next fire is for */
    int fires;
    int early;
    int want;
} real_log;

static void real_repeat(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id;
    real_log *log = context;
    int64_t now = now_on(log->clock);
    log->next += (int64_t)missed * log->interval; /* periods skipped */
    if (now < log->next) log->early++;
    log->next += log->interval;
    if (++log->fires == log->want) CHECK_EQ(tk_loop_stop(loop), 0);
}

typedef struct single_log {
    int64_t deadline;
    int *fired;
    int early;
} single_log;

static void real_single(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    single_log *s = context;
    if (now_on(TK_CLOCK_MONOTONIC) < s->deadline) s->early++;
    (*s->fired)++;
}

static void test_real_never_early(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = 3 * MS}), 0);
    /* A repeating precise timer on the monotonic clock, and one on the boot
     * clock, with ordinary ones in between that must not disturb them. */
    real_log mono = {.clock = TK_CLOCK_MONOTONIC, .interval = 5 * MS, .want = REPEATS};
    real_log boot = {.clock = TK_CLOCK_BOOTTIME, .interval = 7 * MS, .want = -1};
    mono.first = now_on(TK_CLOCK_MONOTONIC) + 5 * MS;
    mono.next = mono.first;
    boot.first = now_on(TK_CLOCK_BOOTTIME) + 7 * MS;
    boot.next = boot.first;
    tk_timer_id id;
    tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = mono.first,
                          .interval_ns = mono.interval,
                          .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &spec, real_repeat, &mono, &id), 0);
    spec = (tk_timer_spec){.clock = TK_CLOCK_BOOTTIME, .deadline_ns = boot.first,
                           .interval_ns = boot.interval,
                           .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &spec, real_repeat, &boot, &id), 0);
    tk_timer_spec ordinary = {.delay_ns = 3 * MS, .interval_ns = 3 * MS, .leeway_ns = MS};
    CHECK_EQ(tk_loop_schedule(loop, &ordinary, noop, NULL, &id), 0);
    /* One-shots at scattered deadlines: each fires once, none early. */
    int fired = 0;
    single_log singles[SINGLES];
    int64_t base = now_on(TK_CLOCK_MONOTONIC);
    for (int i = 0; i < SINGLES; i++) {
        singles[i] = (single_log){.deadline = base + (int64_t)(rng_next(&g_rng) % (150 * MS)),
                                  .fired = &fired};
        tk_timer_spec one = {.deadline_ns = singles[i].deadline,
                             .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
        CHECK_EQ(tk_loop_schedule(loop, &one, real_single, &singles[i], &id), 0);
    }
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(mono.fires, REPEATS);
    CHECK_EQ(mono.early, 0);
    CHECK_GE(boot.fires, 1);
    CHECK_EQ(boot.early, 0);
    CHECK_EQ(fired, SINGLES); /* 150 ms < 40 * 5 ms */
    for (int i = 0; i < SINGLES; i++) CHECK_EQ(singles[i].early, 0);
    /* The loop spun, and counted what it cost. (Each of 60-odd wake-ups
     * would have to come over 3 ms late for there to be no spin at all.) */
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_GE(stats.spins, 1);
    CHECK_LE(stats.spins, stats.fired);
    CHECK(stats.spin_ns > 0);
    printf("%" PRIu64 " fires, %" PRIu64 " spins, %.3f ms of CPU spinning\n", stats.fired,
           stats.spins, (double)stats.spin_ns / 1e6);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- Spinning does not starve the rest of the loop ------------------------------- */

typedef struct starve {
    int pipe_reads;
    int ticks;
    int fd;
} starve;

static void on_readable(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)loop, (void)events;
    starve *s = context;
    char byte;
    if (read(fd, &byte, 1) == 1) s->pipe_reads++;
}

static void tick(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    starve *s = context;
    s->ticks++;
    /* Every 20th tick, a byte for the watch. */
    if (s->ticks % 20 == 0) CHECK_EQ(write(s->fd, "x", 1), 1);
}

static void *stop_later(void *arg) {
    usleep(80000);
    CHECK_EQ(tk_loop_stop(arg), 0);
    return NULL;
}

static void test_no_starving(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    /* Every 100 us, with a 1 ms margin: a precise timer is always within the
     * margin, so the loop would spin forever if a spin could follow a spin. */
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = MS}), 0);
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    starve s = {.fd = fds[1]};
    CHECK_EQ(tk_loop_watch_fd(loop, fds[0], TK_IO_READABLE, on_readable, &s), 0);
    tk_timer_id id;
    tk_timer_spec fast = {.delay_ns = 100 * US, .interval_ns = 100 * US, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &fast, tick, &s, &id), 0);
    pthread_t stopper;
    CHECK_EQ(pthread_create(&stopper, NULL, stop_later, loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    pthread_join(stopper, NULL);
    CHECK_GE(s.ticks, 20);
    CHECK_GE(s.pipe_reads, 1);
    /* Each byte written before the last pass was read. */
    CHECK_GE(s.pipe_reads, s.ticks / 20 - 1);
    /* A run with a deadline ends at it, spinning or not. */
    int64_t until = now_on(TK_CLOCK_MONOTONIC) + 20 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, until, 0), TK_RUN_TIMED_OUT);
    CHECK_GE(now_on(TK_CLOCK_MONOTONIC), until);
    /* TK_RUN_NOWAIT never spins. */
    tk_loop_stats before, after;
    CHECK_EQ(tk_loop_get_stats(loop, &before), 0);
    for (int i = 0; i < 50; i++) {
        int result = tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT);
        CHECK(result == TK_RUN_PASSED);
    }
    CHECK_EQ(tk_loop_get_stats(loop, &after), 0);
    CHECK_EQ(after.spins, before.spins);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    close(fds[0]);
    close(fds[1]);
}

/* ---- No polling: the wake-up plan and the spin agree ---------------------------- */

static int g_fired;

static void count_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed, (void)context;
    g_fired++;
}

/* A run that ends inside a precise timer's margin, before its deadline,
 * spins to its end rather than polling epoll until then, and does not fire
 * the timer. */
static void test_run_ends_within_margin(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = 50 * MS}), 0);
    for (int flags = 0; flags <= (int)TK_RUN_ONCE; flags += (int)TK_RUN_ONCE) {
        g_fired = 0;
        tk_timer_id id;
        int64_t now = now_on(TK_CLOCK_MONOTONIC);
        tk_timer_spec later = {.deadline_ns = now + 100 * MS,
                               .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
        CHECK_EQ(tk_loop_schedule(loop, &later, count_fire, NULL, &id), 0);
        tk_loop_stats before, after;
        CHECK_EQ(tk_loop_get_stats(loop, &before), 0);
        CHECK_EQ(tk_loop_run(loop, 0, now + 80 * MS, (uint32_t)flags), TK_RUN_TIMED_OUT);
        CHECK_EQ(tk_loop_get_stats(loop, &after), 0);
        CHECK_GE(now_on(TK_CLOCK_MONOTONIC), now + 80 * MS);
        CHECK_EQ(g_fired, 0);
        /* One wake-up at the margin, a spin to the run's end; polling would
         * make tens of thousands. */
        CHECK_LE(after.wakeups - before.wakeups, 20);
        CHECK_EQ(tk_loop_cancel(loop, id), 0);
    }
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A wake-up search that gives up (over 1,024 timers outside the mode due
 * first) wakes at a deadline, not a margin before it, where nothing would
 * be due and the same search would plan the same wake-up again. */
static void test_search_limit(void) {
    for (int clock = 0; clock < 2; clock++) {
        tk_loop *loop;
        CHECK_EQ(tk_loop_create(&loop), 0);
        CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = 20 * MS}), 0);
        tk_timer_id id;
        int64_t now = now_on(TK_CLOCK_MONOTONIC);
        for (int i = 0; i < 2000; i++) {
            tk_timer_spec other_mode = {.deadline_ns = now + 100 * MS + i, .flags = TK_TIMER_ABSOLUTE};
            CHECK_EQ(tk_loop_schedule(loop, &other_mode, count_fire, NULL, &id), 0);
        }
        /* A precise timer an hour away, in the run's mode, on the same clock
         * or another. */
        tk_timer_spec far = {.clock = clock == 0 ? TK_CLOCK_MONOTONIC : TK_CLOCK_BOOTTIME,
                             .delay_ns = 3600 * INT64_C(1000000000), .modes = TK_MODES(1),
                             .flags = TK_TIMER_PRECISE};
        CHECK_EQ(tk_loop_schedule(loop, &far, count_fire, NULL, &id), 0);
        g_fired = 0;
        CHECK_EQ(tk_loop_run(loop, TK_MODES(1), now + 200 * MS, 0), TK_RUN_TIMED_OUT);
        tk_loop_stats stats;
        CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
        CHECK_EQ(g_fired, 0);
        CHECK_LE(stats.wakeups, 20);
        CHECK_EQ(stats.spins, 0);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
}

/* A stop, a wake-up, or a timer due earlier (on the spin's clock or
 * another), from another thread, ends a spin early. Shown by order: what
 * the interruption lets run sees one spin ended, before the precise timer's
 * deadline (an uninterrupted spin holds the thread until then), and that
 * timer not yet fired; a stopped run returns before that deadline. The
 * interruption is sent 30 ms into a 100 ms margin; a machine that stalls
 * the sender past the deadline makes a round inconclusive, so up to five
 * rounds are tried and one must show it. */
enum interruption { BY_WAKEUP, BY_STOP, BY_TIMER_SAME_CLOCK, BY_TIMER_OTHER_CLOCK, INTERRUPTIONS };

typedef struct interrupted {
    tk_loop *loop;
    enum interruption by;
    int64_t deadline;  /* the precise timer's, monotonic */
    int fired;
    int shown;
} interrupted;

/* Runs on the loop's thread once the interruption got through. */
static void interruption_arrived(tk_loop *loop, interrupted *x) {
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    if (stats.spins >= 1 && !x->fired && now_on(TK_CLOCK_MONOTONIC) < x->deadline) x->shown = 1;
}

static void on_wakeup(tk_loop *loop, void *context) { interruption_arrived(loop, context); }

static void on_earlier_timer(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    interruption_arrived(loop, context);
}

static void fired_then_stop(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    ((interrupted *)context)->fired = 1;
    CHECK_EQ(tk_loop_stop(loop), 0);
}

static void *interrupt_later(void *context) {
    interrupted *x = context;
    usleep(130000);
    tk_timer_id id;
    tk_timer_spec now = {.clock = x->by == BY_TIMER_OTHER_CLOCK ? TK_CLOCK_BOOTTIME : TK_CLOCK_MONOTONIC};
    switch (x->by) {
    case BY_WAKEUP: CHECK_EQ(tk_loop_wakeup(x->loop), 0); break;
    case BY_STOP: CHECK_EQ(tk_loop_stop(x->loop), 0); break;
    default: CHECK_EQ(tk_loop_schedule(x->loop, &now, on_earlier_timer, x, &id), 0); break;
    }
    return NULL;
}

static void test_spin_interrupted(void) {
    static const char *names[] = {"a wake-up", "a stop", "a timer on the same clock",
                                  "a timer on another clock"};
    for (int by = 0; by < INTERRUPTIONS; by++) {
        int shown = 0;
        for (int round = 0; round < 5 && !shown; round++) {
            interrupted x = {.by = (enum interruption)by};
            CHECK_EQ(tk_loop_create(&x.loop), 0);
            CHECK_EQ(tk_loop_set_precision(x.loop, &(tk_precision){.margin_ns = 100 * MS}), 0);
            CHECK_EQ(tk_loop_set_wakeup_handler(x.loop, on_wakeup, &x), 0);
            tk_timer_id id;
            x.deadline = now_on(TK_CLOCK_MONOTONIC) + 200 * MS;
            tk_timer_spec at = {.deadline_ns = x.deadline,
                                .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
            CHECK_EQ(tk_loop_schedule(x.loop, &at, fired_then_stop, &x, &id), 0);
            pthread_t sender;
            CHECK_EQ(pthread_create(&sender, NULL, interrupt_later, &x), 0);
            CHECK_EQ(tk_loop_run(x.loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
            if (x.by == BY_STOP) {
                tk_loop_stats stats;
                CHECK_EQ(tk_loop_get_stats(x.loop, &stats), 0);
                x.shown = stats.spins >= 1 && !x.fired && now_on(TK_CLOCK_MONOTONIC) < x.deadline;
            } else {
                CHECK_EQ(x.fired, 1);
            }
            pthread_join(sender, NULL);
            shown = x.shown;
            CHECK_EQ(tk_loop_destroy(x.loop), 0);
        }
        if (!shown) fprintf(stderr, "a spin was not ended early by %s\n", names[by]);
        CHECK(shown);
    }
}

/* A spin does not hold up another timer of the mode: one that must fire
 * (by its deadline + leeway, on any clock) before the precise deadline ends
 * the spin then, fires, and the precise timer fires after it, each on time
 * or late, never early. The margin is the largest, so the precise timer is
 * within it from the start and the spin begins at once; held up, the other
 * timer would fire at the precise deadline or after it. What is checked is
 * order, never early, and the other timer's fire coming before the precise
 * deadline, with tens of milliseconds to spare; a machine that stalls the
 * loop's thread that long makes a round inconclusive, so up to five rounds
 * are tried and one must show it. The other timer is scheduled before the
 * run, or from another thread while the loop spins (the kick ends the spin,
 * and the next spin must end at that timer too). */
typedef struct held_up {
    tk_loop *loop;
    tk_timer_spec other;     /* the timer that must not be held up */
    int64_t other_deadline;  /* its deadline, on its clock */
    int64_t other_due_by;    /* when it must fire, on the monotonic clock */
    int64_t other_fired_on;  /* its clock's reading when it fired (0: not yet) */
    int64_t other_fired_at;  /* the monotonic reading then */
    int64_t precise_deadline; /* monotonic */
    int64_t precise_fired_at;
    int order;               /* 1: the other first; 2: the precise one first */
    int from_thread;
} held_up;

static void other_fired(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    held_up *h = context;
    h->other_fired_at = now_on(TK_CLOCK_MONOTONIC);
    h->other_fired_on = now_on(h->other.clock);
    if (h->order == 0) h->order = 1;
}

static void precise_fired(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    held_up *h = context;
    h->precise_fired_at = now_on(TK_CLOCK_MONOTONIC);
    if (h->order == 0) h->order = 2;
    CHECK_EQ(tk_loop_stop(loop), 0);
}

static void schedule_other(held_up *h) {
    h->other_deadline = now_on(h->other.clock) + h->other.delay_ns;
    h->other_due_by = now_on(TK_CLOCK_MONOTONIC) + h->other.delay_ns + h->other.leeway_ns;
    tk_timer_spec at = h->other;
    at.delay_ns = 0;
    at.deadline_ns = h->other_deadline;
    at.flags = TK_TIMER_ABSOLUTE;
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(h->loop, &at, other_fired, h, &id), 0);
}

static void *schedule_other_later(void *context) {
    held_up *h = context;
    usleep(10000); /* the loop spins by now */
    schedule_other(h);
    return NULL;
}

static void test_spin_yields(void) {
    static const struct {
        const char *what;
        tk_timer_spec other;
        int from_thread;
    } cases[] = {
        {"no leeway, same clock", {.delay_ns = 20 * MS}, 0},
        {"no leeway, another clock", {.clock = TK_CLOCK_BOOTTIME, .delay_ns = 20 * MS}, 0},
        {"a leeway", {.delay_ns = 10 * MS, .leeway_ns = 20 * MS}, 0},
        {"the wall clock", {.clock = TK_CLOCK_REALTIME, .delay_ns = 20 * MS}, 0},
        {"from another thread", {.delay_ns = 30 * MS}, 1},
        {"from another thread, another clock", {.clock = TK_CLOCK_BOOTTIME, .delay_ns = 30 * MS},
         1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int shown = 0;
        for (int round = 0; round < 5 && !shown; round++) {
            held_up h = {.other = cases[c].other, .from_thread = cases[c].from_thread};
            CHECK_EQ(tk_loop_create(&h.loop), 0);
            CHECK_EQ(tk_loop_set_precision(h.loop,
                                           &(tk_precision){.margin_ns = TK_PRECISION_MAX_MARGIN_NS}),
                     0);
            h.precise_deadline = now_on(TK_CLOCK_MONOTONIC) + 90 * MS;
            tk_timer_spec precise = {.deadline_ns = h.precise_deadline,
                                     .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
            tk_timer_id id;
            CHECK_EQ(tk_loop_schedule(h.loop, &precise, precise_fired, &h, &id), 0);
            pthread_t sender;
            if (h.from_thread) {
                CHECK_EQ(pthread_create(&sender, NULL, schedule_other_later, &h), 0);
            } else {
                schedule_other(&h);
            }
            CHECK_EQ(tk_loop_run(h.loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
            if (h.from_thread) pthread_join(sender, NULL);
            /* A stalled sender may schedule the other timer after the
             * precise one fired: then run the loop until it fires too. */
            if (h.other_fired_on == 0) {
                CHECK_EQ(tk_loop_run(h.loop, 0, now_on(TK_CLOCK_MONOTONIC) + 200 * MS,
                                     TK_RUN_ONCE),
                         TK_RUN_PASSED);
            }
            tk_loop_stats stats;
            CHECK_EQ(tk_loop_get_stats(h.loop, &stats), 0);
            CHECK_EQ(tk_loop_destroy(h.loop), 0);

            /* Every round: never early, both fired. */
            CHECK(h.other_fired_on != 0);
            CHECK_GE(h.other_fired_on, h.other_deadline);
            CHECK_GE(h.precise_fired_at, h.precise_deadline);
            CHECK_GE(stats.spins, 1);
            /* Conclusive only if the other timer had to fire well before
             * the precise deadline (a stalled sender makes it later). */
            if (h.other_due_by > h.precise_deadline - 20 * MS) continue;
            /* Before the precise one, and before its deadline: not held up. */
            shown = h.order == 1 && h.other_fired_at < h.precise_deadline;
            if (!shown) {
                fprintf(stderr,
                        "round %d, %s: the other timer fired %.3f ms after the precise deadline"
                        " (order %d)\n",
                        round, cases[c].what,
                        (double)(h.other_fired_at - h.precise_deadline) / 1e6, h.order);
            }
        }
        if (!shown) fprintf(stderr, "a spin held up a timer (%s)\n", cases[c].what);
        CHECK(shown);
    }
}

/* ---- A nested run inside a precise timer's callback --------------------------- */

typedef struct nesting {
    int calls;
    int depth;
    int max_depth;
    uint64_t missed_after;
    uint64_t wakeups_inside;
} nesting;

static void nest(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id;
    nesting *n = context;
    n->calls++;
    if (++n->depth > n->max_depth) n->max_depth = n->depth;
    if (n->calls == 1) {
        /* 20 ms in the same mode: this timer comes due 10 times meanwhile
         * and must be set aside, not fired, and not woken early for. */
        tk_loop_stats before, after;
        CHECK_EQ(tk_loop_get_stats(loop, &before), 0);
        CHECK_EQ(tk_loop_run(loop, 0, now_on(TK_CLOCK_MONOTONIC) + 20 * MS, 0), TK_RUN_TIMED_OUT);
        CHECK_EQ(tk_loop_get_stats(loop, &after), 0);
        n->wakeups_inside = after.wakeups - before.wakeups;
    } else {
        n->missed_after = missed;
        CHECK_EQ(tk_loop_stop(loop), 0);
    }
    n->depth--;
}

static void test_nested_run(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = MS}), 0);
    nesting n = {0};
    tk_timer_id id;
    tk_timer_spec every = {.delay_ns = 2 * MS, .interval_ns = 2 * MS, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &every, nest, &n, &id), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(n.calls, 2);
    CHECK_EQ(n.max_depth, 1);
    CHECK_GE(n.missed_after, 8); /* the periods skipped during the nested run */
    /* Set aside, the timer wakes the nested run at most once per period or
     * so; polling for it through each 1 ms margin would take thousands. */
    CHECK_LE(n.wakeups_inside, 200);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- The thread's settings (child processes) ---------------------------------- */

typedef struct thread_seen {
    int slack;
    int policy;
    int priority;
} thread_seen;

/* Drops CAP_SYS_NICE from the calling thread's capability sets (threads it
 * starts from now on inherit that; others keep theirs). */
static int drop_sys_nice(void) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &header, data) != 0) return -errno;
    data[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
    data[CAP_SYS_NICE / 32].permitted &= ~(1u << (CAP_SYS_NICE % 32));
    data[CAP_SYS_NICE / 32].inheritable &= ~(1u << (CAP_SYS_NICE % 32));
    if (syscall(SYS_capset, &header, data) != 0) return -errno;
    return 0;
}

/* Drops CAP_SYS_NICE from this thread and lowers the process's
 * RLIMIT_RTPRIO to `limit`, so SCHED_FIFO above it is refused here. */
static int lose_realtime(rlim_t limit) {
    int result = drop_sys_nice();
    if (result < 0) return result;
    struct rlimit rt = {.rlim_cur = limit, .rlim_max = limit};
    if (setrlimit(RLIMIT_RTPRIO, &rt) != 0) return -errno;
    return 0;
}

/* A loop run by a thread of its own, and what its callbacks saw of it. */
typedef struct running {
    tk_loop *loop;
    pthread_t thread;
    int result;          /* what tk_loop_run returned */
    int slack_after;     /* the thread's slack after the run */
    int policy_after;
} running;

static void *run_thread(void *context) {
    running *r = context;
    r->result = tk_loop_run(r->loop, 0, TK_FOREVER, 0);
    r->slack_after = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    struct sched_param param;
    pthread_getschedparam(pthread_self(), &r->policy_after, &param);
    return NULL;
}

/* Asks the loop's thread what it looks like now, from a callback. */
static void look_now(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context);

static thread_seen ask_running(tk_loop *loop) {
    static thread_seen seen;
    seen = (thread_seen){.slack = -1, .policy = -1};
    tk_timer_id id;
    tk_timer_spec now = {0};
    CHECK_EQ(tk_loop_schedule(loop, &now, look_now, &seen, &id), 0);
    for (int i = 0; i < 5000 && __atomic_load_n(&seen.slack, __ATOMIC_ACQUIRE) == -1; i++) {
        usleep(1000);
    }
    return seen;
}

/* Whether this process may take SCHED_FIFO `priority`, asked of the kernel
 * directly in a child that then exits. */
static int fifo_allowed(int priority) {
    pid_t pid = fork();
    if (pid == 0) {
        struct sched_param param = {.sched_priority = priority};
        _exit(sched_setscheduler(0, SCHED_FIFO, &param) == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Whether the process has CAP_SYS_NICE (bit 23 of CapEff), which leaving
 * SCHED_IDLE and clearing SCHED_RESET_ON_FORK need beyond an RLIMIT_RTPRIO
 * that lets SCHED_FIFO in. */
static int has_cap_sys_nice(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (status == NULL) return 0;
    char line[256];
    unsigned long long effective = 0;
    while (fgets(line, sizeof line, status) != NULL) {
        if (sscanf(line, "CapEff: %llx", &effective) == 1) break;
    }
    fclose(status);
    return (effective >> 23) & 1;
}

static void look_at_thread(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    thread_seen *seen = context;
    seen->slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    struct sched_param param;
    pthread_getschedparam(pthread_self(), &seen->policy, &param);
    seen->priority = param.sched_priority;
    tk_loop_stop(loop);
}

static void look_now(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    thread_seen *seen = context;
    struct sched_param param;
    int policy;
    pthread_getschedparam(pthread_self(), &policy, &param);
    seen->policy = policy;
    seen->priority = param.sched_priority;
    __atomic_store_n(&seen->slack, prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), __ATOMIC_RELEASE);
}

/* Runs `body` in a child process; its checks count there, and its exit
 * status says whether any failed. */
static void in_child(void (*body)(void), const char *what) {
    fflush(stdout);
    int failed_before = atomic_load(&g_failed);
    pid_t pid = fork();
    if (pid == 0) {
        body();
        fflush(stdout);
        _exit(atomic_load(&g_failed) == failed_before ? 0 : 1);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child for %s failed\n", what);
    }
    CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static void slack_while_running(void) {
    CHECK_EQ(prctl(PR_SET_TIMERSLACK, 12345UL, 0, 0, 0), 0);
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    thread_seen seen = {0};
    tk_timer_id id;
    tk_timer_spec soon = {.delay_ns = MS};
    CHECK_EQ(tk_loop_schedule(loop, &soon, look_at_thread, &seen, &id), 0);
    /* Without settings, the thread keeps its slack. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.slack, 12345);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){0}), 0);
    CHECK_EQ(tk_loop_schedule(loop, &soon, look_at_thread, &seen, &id), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.slack, 1);
    CHECK_EQ(seen.policy, SCHED_OTHER); /* no priority asked for */
    CHECK_EQ(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 12345); /* put back */
    /* NULL turns the settings off again. */
    CHECK_EQ(tk_loop_set_precision(loop, NULL), 0);
    CHECK_EQ(tk_loop_schedule(loop, &soon, look_at_thread, &seen, &id), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.slack, 12345);

    /* A loop running on a thread of its own takes a change at its next
     * pass, and puts the thread back when its run returns. */
    running r = {.loop = loop};
    CHECK_EQ(pthread_create(&r.thread, NULL, run_thread, &r), 0);
    CHECK_EQ(ask_running(loop).slack, 12345); /* inherited from this thread */
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){0}), 0);
    CHECK_EQ(ask_running(loop).slack, 1);
    CHECK_EQ(tk_loop_set_precision(loop, NULL), 0);
    CHECK_EQ(ask_running(loop).slack, 12345);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){0}), 0);
    CHECK_EQ(ask_running(loop).slack, 1);
    CHECK_EQ(tk_loop_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.result, TK_RUN_STOPPED);
    CHECK_EQ(r.slack_after, 12345);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void realtime_refused(void) {
    CHECK_EQ(lose_realtime(0), 0);
    CHECK(!fifo_allowed(10));
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.margin_ns = 123 * US}), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 10}), -EPERM);
    tk_precision got;
    CHECK_EQ(tk_loop_get_precision(loop, &got), 1);
    CHECK_EQ(got.margin_ns, 123 * US); /* unchanged */
    CHECK_EQ(got.realtime_priority, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void realtime_granted_then_lost(void) {
    struct rlimit rt = {.rlim_cur = 10, .rlim_max = 10};
    (void)setrlimit(RLIMIT_RTPRIO, &rt); /* may be refused: then the kernel decides below */
    int allowed = fifo_allowed(10);
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    int result = tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 10});
    CHECK_EQ(result, allowed ? 0 : -EPERM);
    if (!allowed) {
        printf("SCHED_FIFO is not permitted here: only the refusal was checked\n");
        CHECK_EQ(tk_loop_destroy(loop), 0);
        return;
    }
    thread_seen seen = {0};
    tk_timer_id id;
    tk_timer_spec soon = {.delay_ns = MS, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(prctl(PR_SET_TIMERSLACK, 777UL, 0, 0, 0), 0); /* not the default */
    CHECK_EQ(tk_loop_schedule(loop, &soon, look_at_thread, &seen, &id), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.policy, SCHED_FIFO);
    CHECK_EQ(seen.priority, 10);
    CHECK_LE(seen.slack, 1); /* a real-time thread has none at all */
    int policy;
    struct sched_param param;
    CHECK_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
    CHECK_EQ(policy, SCHED_OTHER); /* put back */
    CHECK_EQ(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 777); /* and the slack too */
    /* The permission goes; the next run fails before its first pass, and
     * leaves the thread and the timers as they were. */
    CHECK_EQ(lose_realtime(0), 0);
    CHECK_EQ(prctl(PR_SET_TIMERSLACK, 12345UL, 0, 0, 0), 0);
    CHECK_EQ(tk_loop_schedule(loop, &(tk_timer_spec){0}, look_at_thread, &seen, &id), 0);
    seen.slack = -1;
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), -EPERM);
    CHECK_EQ(seen.slack, -1); /* nothing fired */
    CHECK_EQ(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 12345);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 1);
    /* Without the priority, the same timer fires. */
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){0}), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.slack, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    printf("SCHED_FIFO granted, then refused after the permission was dropped\n");
}

/* Each callback that runs this drops CAP_SYS_NICE from the loop's thread. */
static void drop_on_loop_thread(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    CHECK_EQ(drop_sys_nice(), 0);
    __atomic_store_n((int *)context, 1, __ATOMIC_RELEASE);
}

/* Without the permission: a priority is refused, and nothing is left. */
static void check_priority_refused(void) {
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 10}), -EPERM);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void realtime_while_running(void) {
    struct rlimit rt = {.rlim_cur = 0, .rlim_max = 0};
    CHECK_EQ(setrlimit(RLIMIT_RTPRIO, &rt), 0); /* only CAP_SYS_NICE lets a thread in */
    if (!fifo_allowed(10)) {
        printf("SCHED_FIFO is not permitted here: the running loop's refusal was not checked\n");
        check_priority_refused();
        return;
    }
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(prctl(PR_SET_TIMERSLACK, 777UL, 0, 0, 0), 0); /* the loop's thread inherits it */
    running r = {.loop = loop};
    CHECK_EQ(pthread_create(&r.thread, NULL, run_thread, &r), 0);
    CHECK_EQ(ask_running(loop).policy, SCHED_OTHER);
    /* Granted while running: the thread takes it at its next pass. */
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 10}), 0);
    thread_seen seen = ask_running(loop);
    CHECK_EQ(seen.policy, SCHED_FIFO);
    CHECK_EQ(seen.priority, 10);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 20}), 0);
    CHECK_EQ(ask_running(loop).priority, 20);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){0}), 0);
    CHECK_EQ(ask_running(loop).policy, SCHED_OTHER);
    /* The loop's thread loses the permission; this thread keeps it, so the
     * check here passes, and the loop's thread is refused at its next pass:
     * the run ends with -EPERM, the thread put back as it was. */
    int dropped = 0;
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &(tk_timer_spec){0}, drop_on_loop_thread, &dropped, &id), 0);
    while (!__atomic_load_n(&dropped, __ATOMIC_ACQUIRE)) usleep(1000);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 10}), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.result, -EPERM);
    CHECK_EQ(r.policy_after, SCHED_OTHER);
    CHECK_EQ(r.slack_after, 777);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    printf("SCHED_FIFO taken and given back by a running loop, and refused at its next pass\n");
}

/* What the kernel says of the calling thread: policy (with its flags) and
 * priority. */
static void kernel_policy(int *policy, int *priority) {
    struct sched_param param = {0};
    *policy = sched_getscheduler(0);
    CHECK_EQ(sched_getparam(0, &param), 0);
    *priority = param.sched_priority;
}

static void look_at_kernel(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed;
    thread_seen *seen = context;
    kernel_policy(&seen->policy, &seen->priority);
    tk_loop_stop(loop);
}

/* A precise run with the thread set to `policy` at `priority` (with
 * sched_setscheduler, which pthread_getschedparam does not see) runs at
 * SCHED_FIFO 10 and puts back exactly that. */
static void run_from_policy(tk_loop *loop, int policy, int priority) {
    struct sched_param param = {.sched_priority = priority};
    CHECK_EQ(sched_setscheduler(0, policy, &param), 0);
    thread_seen seen = {.policy = -1};
    tk_timer_id id;
    tk_timer_spec soon = {.delay_ns = MS, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &soon, look_at_kernel, &seen, &id), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.policy, SCHED_FIFO | (policy & SCHED_RESET_ON_FORK));
    CHECK_EQ(seen.priority, 10);
    int after, after_priority;
    kernel_policy(&after, &after_priority);
    CHECK_EQ(after, policy);
    CHECK_EQ(after_priority, priority);
    /* pthread_getschedparam agrees again. */
    int cached;
    CHECK_EQ(pthread_getschedparam(pthread_self(), &cached, &param), 0);
    CHECK_EQ(cached, policy);
    CHECK_EQ(param.sched_priority, priority);
}

/* The kernel's struct sched_attr, as far as SCHED_DEADLINE needs it. */
typedef struct deadline_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
} deadline_attr;

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* A precise run on a SCHED_DEADLINE thread leaves its policy, runtime,
 * deadline and period as they are, during the run and after it. */
static void run_from_deadline(tk_loop *loop) {
    deadline_attr set = {.size = sizeof set, .policy = SCHED_DEADLINE,
                         .runtime = 10 * MS, .deadline = 30 * MS, .period = 30 * MS};
    CHECK_EQ(syscall(SYS_sched_setattr, 0, &set, 0), 0);
    thread_seen seen = {.policy = -1};
    tk_timer_id id;
    tk_timer_spec soon = {.delay_ns = MS, .flags = TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &soon, look_at_kernel, &seen, &id), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(seen.policy, SCHED_DEADLINE);
    deadline_attr after = {0};
    CHECK_EQ(syscall(SYS_sched_getattr, 0, &after, sizeof after, 0), 0);
    CHECK_EQ(after.policy, SCHED_DEADLINE);
    CHECK_EQ(after.runtime, set.runtime);
    CHECK_EQ(after.deadline, set.deadline);
    CHECK_EQ(after.period, set.period);
    struct sched_param other = {0};
    CHECK_EQ(sched_setscheduler(0, SCHED_OTHER, &other), 0);
}

static void realtime_puts_back_kernel_policy(void) {
    if (!fifo_allowed(10)) {
        /* CI runs as root; elsewhere only the refusal can be checked. */
        printf("SCHED_FIFO is not permitted here: only the refusal was checked, not what a "
               "run puts back\n");
        check_priority_refused();
        return;
    }
    tk_loop *loop;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_precision(loop, &(tk_precision){.realtime_priority = 10}), 0);
    /* The first run has pthread_getschedparam's copy filled; each policy
     * set after it with sched_setscheduler is put back as set. */
    run_from_policy(loop, SCHED_OTHER, 0);
    run_from_policy(loop, SCHED_BATCH, 0);
    run_from_policy(loop, SCHED_RR, 20);
    run_from_policy(loop, SCHED_FIFO, 30);
    if (has_cap_sys_nice()) {
        /* Leaving SCHED_IDLE, and clearing SCHED_RESET_ON_FORK, need it. */
        run_from_policy(loop, SCHED_IDLE, 0);
        run_from_policy(loop, SCHED_BATCH | SCHED_RESET_ON_FORK, 0);
        run_from_policy(loop, SCHED_OTHER, 0);
        /* SCHED_DEADLINE needs it too. */
        run_from_deadline(loop);
        run_from_policy(loop, SCHED_OTHER, 0);
    } else {
        printf("no CAP_SYS_NICE: SCHED_IDLE, SCHED_RESET_ON_FORK and SCHED_DEADLINE were not "
               "checked\n");
    }
    CHECK_EQ(tk_loop_destroy(loop), 0);
    printf("the policy set with sched_setscheduler between runs was put back after each\n");
}

static void test_thread_settings(void) {
    in_child(slack_while_running, "the timer slack");
    in_child(realtime_refused, "a refused priority");
    in_child(realtime_granted_then_lost, "a granted, then lost, priority");
    in_child(realtime_while_running, "a priority set while the loop runs");
    in_child(realtime_puts_back_kernel_policy, "the policy the kernel has, put back");
}

static const test_case tests[] = {
    {"bad_input", test_bad_input, 30},
    {"manual_exact", test_manual_exact, 30},
    {"real_never_early", test_real_never_early, 120},
    {"no_starving", test_no_starving, 120},
    {"nested_run", test_nested_run, 60},
    {"run_ends_within_margin", test_run_ends_within_margin, 60},
    {"search_limit", test_search_limit, 60},
    {"spin_interrupted", test_spin_interrupted, 60},
    {"spin_yields", test_spin_yields, 60},
    {"thread_settings", test_thread_settings, 120},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_precision", tests, sizeof tests / sizeof tests[0]);
}
