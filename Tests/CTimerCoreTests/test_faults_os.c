/*
 * The real loop under the operating system's faults:
 *   - signal_storm: signals at about 10 kHz, from a handler installed
 *     without SA_RESTART, at the thread running the loop and at a thread
 *     scheduling into it. No fire is lost, early or doubled, every byte of a
 *     watched pipe is delivered, and no call returns -EINTR.
 *   - descriptors_run_out: the process runs out of descriptors while a loop
 *     runs. Calls that need a new one fail with -EMFILE; the timers already
 *     scheduled keep firing, once each, never early; once descriptors are
 *     free again the same calls succeed, and nothing leaks.
 *   - wall_step_met_while_arming: timerfd_settime is wrapped (the link flags
 *     below) to answer, once, as the kernel does when the wall clock stepped
 *     since the timerfd was read: -ECANCELED, with the step forgotten. The
 *     loop reports the step all the same. (The machine's clock is never
 *     changed.)
 *   - stop_at_wall_step_read: read is wrapped to answer, once, what a read of
 *     the wall-clock timerfd answers after a step (ECANCELED), with a pipe
 *     made readable behind it in the same batch of events. The clock-change
 *     function stops the loop: the run returns without the pipe's callback,
 *     which the next run calls.
 *   - nowait_needs_no_descriptor: a TK_RUN_NOWAIT run with a deadline fires
 *     what is due with no descriptor left to open.
 *   - wall_clock_past_2262: clock_gettime is wrapped to read the wall clock
 *     three centuries ahead, past what int64_t nanoseconds hold. It reads
 *     INT64_MAX (it wrapped round to a negative reading, so that a wall-clock
 *     timer already due never fired), a wall-clock timer due fires, and one
 *     scheduled with a delay is due at INT64_MAX, never.
 *   - stop_through_a_failing_wait: epoll_wait is wrapped so that, once, a
 *     stop comes from another thread while a nested run waits and the wait
 *     fails (ENOMEM). The nested run returns the error without taking the
 *     stop, and the run around it takes it: it returns TK_RUN_STOPPED after
 *     the callback, and is not left to run to its deadline.
 * Times are only checked for order and "never early": the machine is shared.
 */
/* test link flags: -Wl,--wrap=timerfd_settime -Wl,--wrap=clock_gettime -Wl,--wrap=read -Wl,--wrap=epoll_wait */
#include "CTimerCore.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "test_harness.h"

#define MS 1000000LL

static int64_t now_on(tk_clock clock) {
    int64_t now = 0;
    CHECK_EQ(tk_clock_now(clock, &now), 0);
    return now;
}

/* ------------------------------------------------------------------------
 * Signal storm
 * ------------------------------------------------------------------------ */

enum { ONE_SHOTS = 40, REPEATING = 3, PIPE_BYTES = 20000 };

static atomic_long g_signals;

static void on_signal(int signo) {
    (void)signo;
    atomic_fetch_add(&g_signals, 1);
}

typedef struct shot {
    tk_clock clock;
    int64_t deadline;
    atomic_int fires;
    atomic_int early;
} shot;

typedef struct repeating {
    tk_clock clock;
    int64_t first;
    int64_t interval;
    uint64_t next_index; /* the grid index the next fire must be at or after */
    int fires;
    int early;
    int went_back;
} repeating;

typedef struct storm {
    tk_loop *loop;
    shot shots[ONE_SHOTS];
    repeating reps[REPEATING];
    int pipe_fds[2];
    atomic_long pipe_read;
    atomic_int stop; /* ends the signaller and the scheduler */
    atomic_int eintr; /* calls that returned -EINTR */
    pthread_t loop_thread, scheduler_thread;
    atomic_int scheduler_ready;
    long scheduled, cancelled;
} storm;

static void shot_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    shot *s = context;
    if (now_on(s->clock) < s->deadline) atomic_fetch_add(&s->early, 1);
    atomic_fetch_add(&s->fires, 1);
}

static void repeating_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id;
    repeating *r = context;
    /* This fire stands for grid index next_index + missed. */
    uint64_t index = r->next_index + missed;
    int64_t deadline = r->first + (int64_t)index * r->interval;
    if (now_on(r->clock) < deadline) r->early++;
    r->fires++;
    r->next_index = index + 1;
}

static void pipe_fn(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)loop, (void)events;
    storm *s = context;
    char buffer[4096];
    for (;;) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got > 0) {
            atomic_fetch_add(&s->pipe_read, got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        break; /* EAGAIN: drained */
    }
}

static void *loop_main(void *arg) {
    storm *s = arg;
    int result = tk_loop_run(s->loop, 0, TK_FOREVER, 0);
    if (result == -EINTR) atomic_fetch_add(&s->eintr, 1);
    return (void *)(intptr_t)result;
}

static void noop_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed, (void)context;
}

/* Schedules, wakes and cancels into the running loop while being signalled,
 * until told to stop; also writes PIPE_BYTES into the pipe. */
static void *scheduler_main(void *arg) {
    storm *s = arg;
    atomic_store(&s->scheduler_ready, 1);
    long written = 0;
    char bytes[100];
    memset(bytes, 'x', sizeof bytes);
    while (!atomic_load(&s->stop)) {
        tk_timer_spec far = {.delay_ns = 3600 * 1000 * MS, .leeway_ns = MS};
        tk_timer_id id;
        int result = tk_loop_schedule(s->loop, &far, noop_fn, NULL, &id);
        if (result == -EINTR) atomic_fetch_add(&s->eintr, 1);
        if (result == 0) {
            s->scheduled++;
            result = tk_loop_cancel(s->loop, id);
            if (result == -EINTR) atomic_fetch_add(&s->eintr, 1);
            if (result == 0) s->cancelled++;
        }
        result = tk_loop_wakeup(s->loop);
        if (result == -EINTR) atomic_fetch_add(&s->eintr, 1);
        if (written < PIPE_BYTES) {
            ssize_t put = write(s->pipe_fds[1], bytes, sizeof bytes);
            if (put > 0) written += put;
        }
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL); /* interrupted by the signals: that is fine */
    }
    return NULL;
}

/* About 10 kHz, alternating between the two threads, until told to stop. */
static void *signaller_main(void *arg) {
    storm *s = arg;
    while (!atomic_load(&s->scheduler_ready)) sched_yield();
    long sent = 0;
    while (!atomic_load(&s->stop)) {
        pthread_kill(sent % 2 ? s->scheduler_thread : s->loop_thread, SIGUSR1);
        sent++;
        struct timespec pause = {0, 100000};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
    }
    return NULL;
}

static void test_signal_storm(void) {
    struct sigaction action, old_action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; /* no SA_RESTART: blocking calls are interrupted */
    CHECK_EQ(sigaction(SIGUSR1, &action, &old_action), 0);

    static storm s;
    memset(&s, 0, sizeof s);
    CHECK_EQ(tk_loop_create(&s.loop), 0);
    CHECK_EQ(pipe(s.pipe_fds), 0);
    CHECK_EQ(fcntl(s.pipe_fds[0], F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(tk_loop_watch_fd(s.loop, s.pipe_fds[0], TK_IO_READABLE, pipe_fn, &s), 0);

    /* One-shots over the first 1.2 s, on two clocks, some with leeway. */
    for (int i = 0; i < ONE_SHOTS; i++) {
        shot *t = &s.shots[i];
        t->clock = i % 2 ? TK_CLOCK_BOOTTIME : TK_CLOCK_MONOTONIC;
        int64_t delay = (int64_t)(1 + rng_below(&g_rng, 1200)) * MS;
        tk_timer_spec spec = {.clock = t->clock, .delay_ns = delay,
                              .leeway_ns = i % 3 ? 0 : (int64_t)rng_below(&g_rng, 5) * MS};
        t->deadline = now_on(t->clock) + delay; /* before scheduling: never later than the loop's */
        tk_timer_id id;
        CHECK_EQ(tk_loop_schedule(s.loop, &spec, shot_fn, t, &id), 0);
    }
    static const int64_t intervals[REPEATING] = {3 * MS, 7 * MS, 11 * MS};
    for (int i = 0; i < REPEATING; i++) {
        repeating *r = &s.reps[i];
        r->clock = i == 1 ? TK_CLOCK_BOOTTIME : TK_CLOCK_MONOTONIC;
        r->interval = intervals[i];
        r->first = now_on(r->clock) + 10 * MS;
        tk_timer_spec spec = {.clock = r->clock, .deadline_ns = r->first,
                              .interval_ns = r->interval, .leeway_ns = i == 2 ? MS : 0,
                              .flags = TK_TIMER_ABSOLUTE};
        tk_timer_id id;
        CHECK_EQ(tk_loop_schedule(s.loop, &spec, repeating_fn, r, &id), 0);
    }

    CHECK_EQ(pthread_create(&s.loop_thread, NULL, loop_main, &s), 0);
    CHECK_EQ(pthread_create(&s.scheduler_thread, NULL, scheduler_main, &s), 0);
    pthread_t signaller;
    CHECK_EQ(pthread_create(&signaller, NULL, signaller_main, &s), 0);

    /* Until every one-shot fired, 1.5 s passed and the handler ran for 2,000
     * signals (bounded, at 30,000 pauses of 1 ms or more: a slow machine
     * takes longer, not fewer; signals sent to a thread that has one pending
     * merge, so fewer run than are sent). */
    for (int waited = 0; waited < 30000; waited++) {
        int done = 1;
        for (int i = 0; i < ONE_SHOTS; i++) done &= atomic_load(&s.shots[i].fires) > 0;
        if (done && waited >= 1500 && atomic_load(&g_signals) >= 2000) break;
        struct timespec pause = {0, MS};
        nanosleep(&pause, NULL);
    }
    /* The signaller first: it signals the scheduler, which is joined after. */
    atomic_store(&s.stop, 1);
    pthread_join(signaller, NULL);
    pthread_join(s.scheduler_thread, NULL);
    /* The last bytes the scheduler wrote are read before the loop stops. */
    for (int waited = 0; waited < 10000 && atomic_load(&s.pipe_read) < PIPE_BYTES; waited++) {
        struct timespec pause = {0, MS};
        nanosleep(&pause, NULL);
    }
    CHECK_EQ(tk_loop_stop(s.loop), 0);
    void *result;
    pthread_join(s.loop_thread, &result);
    CHECK_EQ((intptr_t)result, TK_RUN_STOPPED);

    long signals = atomic_load(&g_signals);
    printf("signal storm: %ld signals, %ld schedule+cancel pairs, %ld bytes through the pipe\n",
           signals, s.scheduled, atomic_load(&s.pipe_read));
    CHECK_GE(signals, 2000); /* the storm did happen */
    CHECK_EQ(atomic_load(&s.eintr), 0);
    CHECK_EQ(s.scheduled, s.cancelled);
    for (int i = 0; i < ONE_SHOTS; i++) {
        CHECK_EQ(atomic_load(&s.shots[i].fires), 1);
        CHECK_EQ(atomic_load(&s.shots[i].early), 0);
    }
    for (int i = 0; i < REPEATING; i++) {
        CHECK_GE(s.reps[i].fires, 10);
        CHECK_EQ(s.reps[i].early, 0);
        /* Every period is accounted for: fires plus skipped ones. */
        CHECK_GE(s.reps[i].next_index, (uint64_t)s.reps[i].fires);
    }
    CHECK_EQ(atomic_load(&s.pipe_read), PIPE_BYTES);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(s.loop, &stats), 0);
    CHECK_EQ(stats.pending, REPEATING);
    CHECK_EQ(tk_loop_unwatch_fd(s.loop, s.pipe_fds[0]), 0);
    CHECK_EQ(tk_loop_destroy(s.loop), 0);
    close(s.pipe_fds[0]);
    close(s.pipe_fds[1]);
    CHECK_EQ(sigaction(SIGUSR1, &old_action, NULL), 0);
}

/* ------------------------------------------------------------------------
 * Descriptors running out during a run
 * ------------------------------------------------------------------------ */

static int open_fds(void) {
    int count = 0;
    for (int fd = 0; fd < 4096; fd++) count += fcntl(fd, F_GETFD) != -1;
    return count;
}

typedef struct exhausted {
    tk_loop *loop;
    shot shots[20];
    repeating rep;
} exhausted;

static void *exhausted_loop_main(void *arg) {
    exhausted *e = arg;
    return (void *)(intptr_t)tk_loop_run(e->loop, 0, TK_FOREVER, 0);
}

static void change_fn(tk_loop *loop, void *context) { (void)loop, (void)context; }

static void test_descriptors_run_out(void) {
    int before = open_fds();
    static exhausted e;
    memset(&e, 0, sizeof e);
    CHECK_EQ(tk_loop_create(&e.loop), 0);
    for (int i = 0; i < 20; i++) {
        shot *t = &e.shots[i];
        t->clock = TK_CLOCK_MONOTONIC;
        int64_t delay = (int64_t)(50 + 20 * i) * MS;
        t->deadline = now_on(t->clock) + delay;
        tk_timer_spec spec = {.delay_ns = delay};
        tk_timer_id id;
        CHECK_EQ(tk_loop_schedule(e.loop, &spec, shot_fn, t, &id), 0);
    }
    e.rep.clock = TK_CLOCK_MONOTONIC;
    e.rep.interval = 5 * MS;
    e.rep.first = now_on(TK_CLOCK_MONOTONIC) + 5 * MS;
    tk_timer_spec every = {.deadline_ns = e.rep.first, .interval_ns = e.rep.interval,
                           .flags = TK_TIMER_ABSOLUTE};
    tk_timer_id rep_id;
    CHECK_EQ(tk_loop_schedule(e.loop, &every, repeating_fn, &e.rep, &rep_id), 0);
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, exhausted_loop_main, &e), 0);

    /* Now the process runs out: a limit just above what is open, filled. */
    struct rlimit old;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    int highest = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) != -1) highest = fd;
    struct rlimit tight = old;
    tight.rlim_cur = (rlim_t)highest + 8;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
    /* Every free number up to the limit taken (gaps below included). */
    int capacity = highest + 8;
    int *fillers = calloc((size_t)capacity, sizeof *fillers);
    int filled = 0, fd;
    while (filled < capacity && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
        fillers[filled++] = fd;
    }
    CHECK(filled < capacity);
    CHECK_EQ(errno, EMFILE);

    /* What needs a descriptor fails, and says why; nothing else changes. */
    tk_loop *other = NULL;
    CHECK_EQ(tk_loop_create(&other), -EMFILE);
    CHECK(other == NULL);
    shot boot_shot = {.clock = TK_CLOCK_BOOTTIME};
    tk_timer_spec boot = {.clock = TK_CLOCK_BOOTTIME, .delay_ns = MS}; /* a clock not in use yet */
    tk_timer_id boot_id = TK_TIMER_NONE;
    CHECK_EQ(tk_loop_schedule(e.loop, &boot, shot_fn, &boot_shot, &boot_id), -EMFILE);
    CHECK_EQ(tk_loop_set_clock_change_handler(e.loop, change_fn, NULL), -EMFILE);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(e.loop, &stats), 0);
    CHECK_EQ(stats.pending, 21);
    /* A timer on a clock in use needs no descriptor. */
    shot mono_shot = {.clock = TK_CLOCK_MONOTONIC};
    mono_shot.deadline = now_on(TK_CLOCK_MONOTONIC) + 2 * MS;
    tk_timer_spec mono = {.delay_ns = 2 * MS};
    tk_timer_id mono_id;
    CHECK_EQ(tk_loop_schedule(e.loop, &mono, shot_fn, &mono_shot, &mono_id), 0);

    /* The run goes on: every timer fires, once, never early. */
    for (int waited = 0; waited < 20000; waited++) {
        int done = atomic_load(&mono_shot.fires) > 0;
        for (int i = 0; i < 20; i++) done &= atomic_load(&e.shots[i].fires) > 0;
        if (done) break;
        struct timespec pause = {0, MS};
        nanosleep(&pause, NULL);
    }
    CHECK_EQ(atomic_load(&mono_shot.fires), 1);
    CHECK_EQ(atomic_load(&mono_shot.early), 0);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(atomic_load(&e.shots[i].fires), 1);
        CHECK_EQ(atomic_load(&e.shots[i].early), 0);
    }

    /* Descriptors free again: the same calls succeed. */
    for (int i = 0; i < filled; i++) close(fillers[i]);
    free(fillers);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    CHECK_EQ(tk_loop_schedule(e.loop, &boot, shot_fn, &boot_shot, &boot_id), 0);
    boot_shot.deadline = now_on(TK_CLOCK_BOOTTIME); /* scheduled after this read: never early */
    CHECK_EQ(tk_loop_set_clock_change_handler(e.loop, change_fn, NULL), 0);
    CHECK_EQ(tk_loop_create(&other), 0);
    CHECK_EQ(tk_loop_destroy(other), 0);
    for (int waited = 0; waited < 20000 && atomic_load(&boot_shot.fires) == 0; waited++) {
        struct timespec pause = {0, MS};
        nanosleep(&pause, NULL);
    }
    CHECK_EQ(atomic_load(&boot_shot.fires), 1);

    CHECK_EQ(tk_loop_stop(e.loop), 0);
    void *result;
    pthread_join(thread, &result);
    CHECK_EQ((intptr_t)result, TK_RUN_STOPPED);
    CHECK_GE(e.rep.fires, 1);
    CHECK_EQ(e.rep.early, 0);
    CHECK_EQ(tk_loop_destroy(e.loop), 0);
    CHECK_EQ(open_fds(), before); /* every descriptor the loops made is closed */
}

/* ---- wall_step_met_while_arming ---------------------------------------- */

int __real_timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
                           struct itimerspec *old_value);
int __wrap_timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
                           struct itimerspec *old_value);

/* Set: the next arming of a wall-clock timerfd answers -ECANCELED. */
static atomic_int g_step_at_next_wall_arm;
/* The wall-clock timerfd last armed, and a descriptor to write a byte to
 * once, right after the next arming of it (-1: none). */
static atomic_int g_wall_timerfd = -1;
static atomic_int g_write_after_wall_arm = -1;

int __wrap_timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
                           struct itimerspec *old_value) {
    int result = __real_timerfd_settime(fd, flags, new_value, old_value);
    if (result == 0 && (flags & TFD_TIMER_CANCEL_ON_SET)) {
        atomic_store(&g_wall_timerfd, fd);
        int after = atomic_exchange(&g_write_after_wall_arm, -1);
        if (after >= 0) CHECK_EQ(write(after, "x", 1), 1);
    }
    if (result == 0 && (flags & TFD_TIMER_CANCEL_ON_SET) &&
        (new_value->it_value.tv_sec != 0 || new_value->it_value.tv_nsec != 0) &&
        atomic_exchange(&g_step_at_next_wall_arm, 0)) {
        /* Armed, and the step is gone: what the kernel does. */
        errno = ECANCELED;
        return -1;
    }
    return result;
}

static atomic_int g_steps_reported, g_wall_fires;

static void on_step(tk_loop *loop, void *context) {
    (void)loop, (void)context;
    atomic_fetch_add(&g_steps_reported, 1);
}

static void wall_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed, (void)context;
    if (atomic_fetch_add(&g_wall_fires, 1) == 0) {
        /* The clock steps while this callback runs; the loop meets the
         * step when it arms for the timer scheduled here. */
        tk_timer_spec next = {.clock = TK_CLOCK_REALTIME, .delay_ns = 20 * MS};
        tk_timer_id later;
        CHECK_EQ(tk_loop_schedule(loop, &next, wall_fire, NULL, &later), 0);
        atomic_store(&g_step_at_next_wall_arm, 1);
    }
}

static void test_wall_step_met_while_arming(void) {
    atomic_store(&g_steps_reported, 0);
    atomic_store(&g_wall_fires, 0);
    atomic_store(&g_step_at_next_wall_arm, 0);
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_clock_change_handler(loop, on_step, NULL), 0);
    tk_timer_spec first = {.clock = TK_CLOCK_REALTIME, .delay_ns = 10 * MS};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &first, wall_fire, NULL, &id), 0);
    /* Runs until both wall timers fired. */
    int64_t end;
    CHECK_EQ(tk_clock_now(TK_CLOCK_MONOTONIC, &end), 0);
    end += 20 * 1000 * MS;
    while (atomic_load(&g_wall_fires) < 2) {
        int64_t now;
        CHECK_EQ(tk_clock_now(TK_CLOCK_MONOTONIC, &now), 0);
        if (now >= end) break;
        CHECK(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE) >= 0);
    }
    CHECK_EQ(atomic_load(&g_wall_fires), 2);
    int injected = !atomic_load(&g_step_at_next_wall_arm);
    CHECK(injected);
    CHECK_EQ(atomic_load(&g_steps_reported), 1);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.clock_changes, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- stop_at_wall_step_read ---------------------------------------------- */

ssize_t __real_read(int fd, void *buffer, size_t size);
ssize_t __wrap_read(int fd, void *buffer, size_t size);

/* Set: the next read of the wall-clock timerfd answers ECANCELED, as after
 * a step of the wall clock. */
static atomic_int g_step_at_next_wall_read;

ssize_t __wrap_read(int fd, void *buffer, size_t size) {
    if (fd == atomic_load(&g_wall_timerfd) && atomic_exchange(&g_step_at_next_wall_read, 0)) {
        errno = ECANCELED;
        return -1;
    }
    return __real_read(fd, buffer, size);
}

static atomic_int g_stop_steps, g_stop_pipe_calls, g_stop_wall_fires;
/* Seconds added to every wall-clock reading (clock_gettime's wrapper, below). */
static _Atomic int64_t g_wall_offset_s;

static void stop_at_step(tk_loop *loop, void *context) {
    (void)context;
    atomic_fetch_add(&g_stop_steps, 1);
    CHECK_EQ(tk_loop_stop(loop), 0);
}

static void count_pipe(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)loop, (void)events, (void)context;
    char byte;
    CHECK_EQ(read(fd, &byte, 1), 1);
    atomic_fetch_add(&g_stop_pipe_calls, 1);
}

static void stop_wall_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed, (void)context;
    atomic_fetch_add(&g_stop_wall_fires, 1);
}

/* The wall clock reads 10 s behind the kernel's, so that a wall-clock timer
 * 5 s ahead by the loop's reading is armed at a time the timerfd has
 * passed: the timerfd is readable at once, with no timer due. The pipe is
 * written right after that arming, so that epoll hands out the timerfd
 * first, then the pipe. */
static void test_stop_at_wall_step_read(void) {
    atomic_store(&g_stop_steps, 0);
    atomic_store(&g_stop_pipe_calls, 0);
    atomic_store(&g_stop_wall_fires, 0);
    atomic_store(&g_wall_offset_s, -10);
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    CHECK_EQ(tk_loop_set_clock_change_handler(loop, stop_at_step, NULL), 0);
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, fds[0], TK_IO_READABLE, count_pipe, NULL), 0);
    tk_timer_spec wall = {.clock = TK_CLOCK_REALTIME,
                          .deadline_ns = now_on(TK_CLOCK_REALTIME) + 5000 * MS,
                          .flags = TK_TIMER_ABSOLUTE};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &wall, stop_wall_fire, NULL, &id), 0);
    atomic_store(&g_write_after_wall_arm, fds[1]);
    atomic_store(&g_step_at_next_wall_read, 1);
    /* A deadline, so that a loop that did not stop comes back. */
    CHECK_EQ(tk_loop_run(loop, 0, now_on(TK_CLOCK_MONOTONIC) + 1000 * MS, 0), TK_RUN_STOPPED);
    int read_the_step = !atomic_load(&g_step_at_next_wall_read);
    CHECK(read_the_step);
    CHECK_EQ(atomic_load(&g_stop_steps), 1);
    CHECK_EQ(atomic_load(&g_stop_pipe_calls), 0); /* after the stop, in the same batch */
    CHECK_EQ(atomic_load(&g_stop_wall_fires), 0);
    /* The next run calls it. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(atomic_load(&g_stop_pipe_calls), 1);
    CHECK_EQ(atomic_load(&g_stop_steps), 1);
    CHECK_EQ(atomic_load(&g_stop_wall_fires), 0);
    atomic_store(&g_wall_offset_s, 0);
    atomic_store(&g_wall_timerfd, -1);
    CHECK_EQ(tk_loop_unwatch_fd(loop, fds[0]), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    close(fds[0]);
    close(fds[1]);
}

/* ---- nowait_needs_no_descriptor ----------------------------------------- */

static atomic_int g_nowait_fires;

static void nowait_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed, (void)context;
    atomic_fetch_add(&g_nowait_fires, 1);
}

static void test_nowait_needs_no_descriptor(void) {
    atomic_store(&g_nowait_fires, 0);
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    /* A wall-clock timer due now: its clock's timerfd exists; the monotonic
     * one, which a run with a deadline would arm, does not yet. */
    tk_timer_spec now_spec = {.clock = TK_CLOCK_REALTIME};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &now_spec, nowait_fire, NULL, &id), 0);
    struct rlimit saved;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
    int lowest = open("/dev/null", O_RDONLY); /* the lowest free descriptor */
    CHECK(lowest >= 0);
    close(lowest);
    struct rlimit tight = {(rlim_t)lowest, saved.rlim_max};
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
    int64_t now;
    CHECK_EQ(tk_clock_now(TK_CLOCK_MONOTONIC, &now), 0);
    int result = tk_loop_run(loop, 0, now + 1000 * MS, TK_RUN_NOWAIT);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
    CHECK_EQ(result, TK_RUN_PASSED);
    CHECK_EQ(atomic_load(&g_nowait_fires), 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- wall_clock_past_2262 ------------------------------------------------ */

int __real_clock_gettime(clockid_t clock, struct timespec *ts);
int __wrap_clock_gettime(clockid_t clock, struct timespec *ts);

/* Seconds added to every wall-clock reading while set. */
static _Atomic int64_t g_wall_offset_s;

int __wrap_clock_gettime(clockid_t clock, struct timespec *ts) {
    int result = __real_clock_gettime(clock, ts);
    if (result == 0 && clock == CLOCK_REALTIME) ts->tv_sec += (time_t)atomic_load(&g_wall_offset_s);
    return result;
}

static atomic_int g_far_fires;

static void far_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed, (void)context;
    atomic_fetch_add(&g_far_fires, 1);
    tk_loop_stop(loop);
}

static void test_wall_clock_past_2262(void) {
    atomic_store(&g_far_fires, 0);
    int64_t real_now = now_on(TK_CLOCK_REALTIME);
    /* 300 years on: the year 2326 or so, past INT64_MAX ns (April 2262). */
    atomic_store(&g_wall_offset_s, (int64_t)300 * 365 * 86400);
    CHECK_EQ(now_on(TK_CLOCK_REALTIME), INT64_MAX);
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    int64_t loop_now = 0;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_REALTIME, &loop_now), 0);
    CHECK_EQ(loop_now, INT64_MAX);
    /* Due at what the wall clock read before: long past. */
    tk_timer_spec due = {.clock = TK_CLOCK_REALTIME, .deadline_ns = real_now,
                         .flags = TK_TIMER_ABSOLUTE};
    tk_timer_id due_id, later_id;
    CHECK_EQ(tk_loop_schedule(loop, &due, far_fire, NULL, &due_id), 0);
    /* A delay from a reading at the end of the range: never. */
    tk_timer_spec later = {.clock = TK_CLOCK_REALTIME, .delay_ns = MS};
    CHECK_EQ(tk_loop_schedule(loop, &later, far_fire, NULL, &later_id), 0);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, later_id, &info), 0);
    CHECK_EQ(info.deadline_ns, INT64_MAX);
    int64_t end = now_on(TK_CLOCK_MONOTONIC) + 2000 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, end, 0), TK_RUN_STOPPED);
    CHECK_EQ(atomic_load(&g_far_fires), 1);
    CHECK_EQ(tk_loop_timer_info(loop, due_id, &info), -ENOENT);
    CHECK_EQ(tk_loop_run(loop, 0, now_on(TK_CLOCK_MONOTONIC) + 50 * MS, 0), TK_RUN_TIMED_OUT);
    CHECK_EQ(atomic_load(&g_far_fires), 1);
    atomic_store(&g_wall_offset_s, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- stop_through_a_failing_wait ----------------------------------------- */

int __real_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);
int __wrap_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);

/* Set to a loop: the next wait that would block stops that loop, as a stop
 * from another thread coming during the wait would, and fails with ENOMEM
 * (the loop is not locked while it waits). */
static tk_loop *_Atomic g_stop_and_fail_wait;

int __wrap_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (timeout != 0) {
        tk_loop *loop = atomic_exchange(&g_stop_and_fail_wait, NULL);
        if (loop != NULL) {
            CHECK_EQ(tk_loop_stop(loop), 0);
            errno = ENOMEM;
            return -1;
        }
    }
    return __real_epoll_wait(epfd, events, maxevents, timeout);
}

static int g_nested_result;

/* Runs mode 1, where nothing is scheduled, nested: its wait fails. */
static void run_nested_into_failing_wait(tk_loop *loop, tk_timer_id id, uint64_t missed,
                                         void *context) {
    (void)id;
    (void)missed;
    (void)context;
    int64_t now = now_on(TK_CLOCK_MONOTONIC);
    atomic_store(&g_stop_and_fail_wait, loop);
    g_nested_result = tk_loop_run(loop, TK_MODES(1), now + 10000 * MS, 0);
}

static int g_late_fires;

static void count_late_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop;
    (void)id;
    (void)missed;
    (void)context;
    g_late_fires++;
}

static void test_stop_through_a_failing_wait(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    if (loop == NULL) return;
    g_nested_result = 1;
    g_late_fires = 0;
    tk_timer_spec first = {.delay_ns = 1 * MS};
    tk_timer_spec later = {.delay_ns = 200 * MS};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &first, run_nested_into_failing_wait, NULL, &id), 0);
    CHECK_EQ(tk_loop_schedule(loop, &later, count_late_fire, NULL, &id), 0);
    int64_t start = now_on(TK_CLOCK_MONOTONIC);
    /* Were the stop lost, the run would go on to its deadline, 10 s away,
     * firing the later timer on the way. */
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), start + 10000 * MS, 0), TK_RUN_STOPPED);
    CHECK_EQ(g_nested_result, -ENOMEM);
    CHECK_EQ(g_late_fires, 0);
    CHECK(atomic_load(&g_stop_and_fail_wait) == NULL);
    /* Taken once: the next run goes on as usual, and fires the later timer. */
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), now_on(TK_CLOCK_MONOTONIC) + 400 * MS, TK_RUN_ONCE),
             TK_RUN_PASSED);
    CHECK_EQ(g_late_fires, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static const test_case tests[] = {
    {"signal_storm", test_signal_storm, 120},
    {"descriptors_run_out", test_descriptors_run_out, 120},
    {"wall_step_met_while_arming", test_wall_step_met_while_arming, 60},
    {"stop_at_wall_step_read", test_stop_at_wall_step_read, 60},
    {"nowait_needs_no_descriptor", test_nowait_needs_no_descriptor, 60},
    {"wall_clock_past_2262", test_wall_clock_past_2262, 60},
    {"stop_through_a_failing_wait", test_stop_through_a_failing_wait, 120},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_faults_os", tests, sizeof tests / sizeof tests[0]);
}
