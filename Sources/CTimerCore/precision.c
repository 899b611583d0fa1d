/*
 * Precise timers: the spin that meets their deadlines, and what a precise
 * loop asks of the thread that runs it.
 *
 * A precise timer's wake-up target is its deadline less the loop's margin
 * (timers.c, wake_time), so the timerfd ends the wait early by about the
 * margin. After the pass that follows, run_passes (loop.c) calls
 * tk__precision_spin, which, if a precise timer of the mode is due within the
 * margin, reads the clock in a tight loop, with the loop's lock dropped, until
 * the deadline; the next pass fires it. Both ask tk__timers_wake_target the
 * same question, so they agree on which precise timer is within its margin.
 * A spin never holds up another timer of the mode: where one must fire
 * before the precise deadline (tk__timers_due_by), the spin ends then, the
 * next pass fires that timer, and a later one spins on to the deadline.
 * A kick (tk__loop_kick: a stop, a wake-up, an earlier timer) ends a spin
 * early through an atomic flag. The time spent spinning, on the
 * monotonic clock, is counted in the loop's statistics, since that is what
 * the precision costs: the thread holds a CPU throughout (unless the kernel
 * preempts it). The CPU-time clock would say the same at the price of a
 * system call after each spin, which would land on the fire it serves.
 *
 * With tk_loop_set_precision, the outermost run also sets its thread's timer
 * slack to 1 ns and, if asked, SCHED_FIFO, and puts both back on return; a
 * change made while the loop runs is applied by its thread at the next pass.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "clock.h"
#include "loop_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

/* SCHED_FIFO priorities Linux accepts. */
#define MIN_FIFO_PRIORITY 1
#define MAX_FIFO_PRIORITY 99

/* The kernel's number for the policy, for C libraries that do not name it. */
#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* ---- Settings ---------------------------------------------------------------- */

static void *probe_thread(void *argument) { return argument; }

/* Whether this process may run a thread at SCHED_FIFO `priority`: asks the
 * kernel by starting one with that policy, which is refused with EPERM just
 * as the loop's thread would be. 0 or -errno. */
static int may_run_fifo(int priority) {
    pthread_attr_t attributes;
    int result = pthread_attr_init(&attributes);
    if (result != 0) return -result;
    struct sched_param param = {.sched_priority = priority};
    result = pthread_attr_setinheritsched(&attributes, PTHREAD_EXPLICIT_SCHED);
    if (result == 0) result = pthread_attr_setschedpolicy(&attributes, SCHED_FIFO);
    if (result == 0) result = pthread_attr_setschedparam(&attributes, &param);
    pthread_t probe;
    if (result == 0) result = pthread_create(&probe, &attributes, probe_thread, NULL);
    if (result == 0) pthread_join(probe, NULL);
    pthread_attr_destroy(&attributes);
    return -result;
}

int tk_loop_set_precision(tk_loop *loop, const tk_precision *precision) {
    if (loop == NULL) return -EINVAL;
    tk_precision wanted = {0};
    if (precision != NULL) wanted = *precision;
    if (wanted.margin_ns < 0 || wanted.margin_ns > TK_PRECISION_MAX_MARGIN_NS) return -EINVAL;
    if (wanted.realtime_priority < 0 || wanted.realtime_priority > MAX_FIFO_PRIORITY) {
        return -EINVAL;
    }
    if (wanted.flags != 0) return -EINVAL;
    if (wanted.realtime_priority >= MIN_FIFO_PRIORITY) {
        int result = may_run_fifo(wanted.realtime_priority);
        if (result < 0) return result;
    }
    pthread_mutex_lock(&loop->lock);
    loop->precision_margin = wanted.margin_ns ? wanted.margin_ns : TK_PRECISION_DEFAULT_MARGIN_NS;
    loop->precision_priority = wanted.realtime_priority;
    loop->precision_thread = precision != NULL;
    loop->precision_generation++;
    /* A sleeping run makes a pass: it applies the thread settings and plans
     * its wake-up again with the new margin. */
    int result = tk__loop_kick(loop);
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_get_precision(tk_loop *loop, tk_precision *precision) {
    if (loop == NULL || precision == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    *precision = (tk_precision){
        .margin_ns = loop->precision_margin,
        .realtime_priority = loop->precision_priority,
    };
    int set = loop->precision_thread;
    pthread_mutex_unlock(&loop->lock);
    return set;
}

/* ---- The running thread -------------------------------------------------------- */

/* Puts back the policy and priority the thread had before tune() first
 * changed them. Through pthread_setschedparam, so that its copy, which
 * pthread_getschedparam answers from, says what the kernel does again. */
static void put_back_policy(tk_loop *loop, pthread_t self) {
    struct sched_param saved = {.sched_priority = loop->saved_priority};
    (void)pthread_setschedparam(self, loop->saved_policy, &saved);
    loop->tuned_policy = 0;
}

/* Makes the calling thread match the loop's settings, saving what it had
 * before the first change. On failure the thread keeps the policy it had.
 * 0 or -errno. */
static int tune(tk_loop *loop) {
    int want_slack = loop->precision_thread;
    int want_fifo = loop->precision_thread && loop->precision_priority >= MIN_FIFO_PRIORITY;
    pthread_t self = pthread_self();
    /* The slack is saved before the policy changes: a real-time thread's
     * reads as 0. */
    if (want_slack && !loop->tuned_slack) {
        int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        if (slack < 0) return -errno;
        loop->saved_slack = (unsigned long)slack;
        loop->tuned_slack = 1;
    }
    if (want_fifo && !loop->tuned_policy) {
        /* What the thread has, asked of the kernel (for the calling thread
         * on Linux): pthread_getschedparam answers from a copy that only
         * pthread_setschedparam updates, so it misses a change made with
         * sched_setscheduler. The policy keeps its SCHED_RESET_ON_FORK
         * flag. */
        struct sched_param saved;
        int policy = sched_getscheduler(0);
        if (policy < 0 || sched_getparam(0, &saved) < 0) return -errno;
        loop->saved_policy = policy;
        loop->saved_priority = saved.sched_priority;
        /* A SCHED_DEADLINE thread keeps its policy: it runs ahead of every
         * SCHED_FIFO thread already, and only sched_setattr, with its
         * runtime, deadline and period, would give it back. */
        if ((policy & ~SCHED_RESET_ON_FORK) == SCHED_DEADLINE) want_fifo = 0;
    }
    if (want_fifo) {
        /* SCHED_RESET_ON_FORK stays on: clearing it takes CAP_SYS_NICE,
         * which RLIMIT_RTPRIO alone does not give. */
        struct sched_param param = {.sched_priority = loop->precision_priority};
        int result = pthread_setschedparam(
            self, SCHED_FIFO | (loop->saved_policy & SCHED_RESET_ON_FORK), &param);
        if (result != 0) return -result;
        loop->tuned_policy = 1;
    } else if (loop->tuned_policy) {
        put_back_policy(loop, self);
    }
    /* Set after the policy: leaving a real-time policy resets the slack. */
    if (loop->tuned_slack) {
        unsigned long slack = want_slack ? 1UL : loop->saved_slack;
        if (prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0) < 0) return -errno;
        loop->tuned_slack = want_slack;
    }
    loop->tuned_generation = loop->precision_generation;
    return 0;
}

int tk__precision_enter(tk_loop *loop) {
    loop->tuned_slack = 0;
    loop->tuned_policy = 0;
    if (loop->manual) return 0;
    int result = tune(loop);
    if (result < 0) tk__precision_leave(loop);
    return result;
}

int tk__precision_retune(tk_loop *loop) {
    if (loop->manual || loop->tuned_generation == loop->precision_generation) return 0;
    return tune(loop);
}

void tk__precision_leave(tk_loop *loop) {
    if (loop->tuned_policy) put_back_policy(loop, pthread_self());
    if (loop->tuned_slack) {
        (void)prctl(PR_SET_TIMERSLACK, loop->saved_slack, 0, 0, 0);
        loop->tuned_slack = 0;
    }
}

/* ---- The spin ---------------------------------------------------------------------- */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

int tk__precision_spin(tk_loop *loop, unsigned mode, int64_t until_ns) {
    if (loop->manual || tk__stop_due(loop) || loop->wakeup_requested) return 0;
    /* A timer of the mode that a nested run in another mode parked is due:
     * the next pass fires it. */
    if (tk__timers_parked_in(loop, mode)) return 0;
    /* The same search as the wake-up plan's (plan_wait, loop.c), so that the
     * two agree: a precise target that plan_wait would find passed is one
     * this spins for, and the run never polls its way to a deadline. */
    int chosen = -1;
    int64_t deadline = 0;
    int64_t wait = INT64_MAX;
    int64_t now[TK_CLOCK_COUNT];
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        now[clock] = INT64_MIN; /* not read */
        if (loop->precise_timers[clock] == 0) continue;
        int64_t precise;
        int64_t target = tk__timers_wake_target(loop, (tk_clock)clock, mode,
                                                TK__WAKE_SEARCH_LIMIT, &precise);
        if (precise == INT64_MAX) continue;
        now[clock] = tk__clock_read((tk_clock)clock);
        if (target > now[clock]) continue; /* not within the margin yet */
        if (precise <= now[clock]) return 0; /* due already: the next pass fires it */
        if (precise - now[clock] < wait) {
            chosen = clock;
            deadline = precise;
            wait = precise - now[clock];
        }
    }
    if (chosen < 0) return 0;
    /* No spin runs past the moment another timer of the mode must fire (its
     * deadline + leeway, on any clock): the spin ends there instead, the
     * next pass fires that timer, and a later pass spins on to the precise
     * deadline. Across clocks, what is compared is how far off each is now,
     * as in tk__loop_note_target. */
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        int64_t due_by = tk__timers_due_by(loop, (tk_clock)clock, mode, TK__WAKE_SEARCH_LIMIT);
        if (due_by == INT64_MAX) continue;
        if (now[clock] == INT64_MIN) now[clock] = tk__clock_read((tk_clock)clock);
        if (due_by <= now[clock]) return 0; /* due already: the next pass fires it */
        if (due_by - now[clock] < wait) {
            chosen = clock;
            deadline = due_by;
            wait = due_by - now[clock];
        }
    }
    tk_clock clock = (tk_clock)chosen;
    int64_t start = tk__clock_read(TK_CLOCK_MONOTONIC);
    if (tk__add_sat(start, wait) > until_ns) {
        /* The run ends first: spin to its end instead (it is within the
         * margin), after which it returns. */
        clock = TK_CLOCK_MONOTONIC;
        deadline = until_ns;
    }
    /* A wall clock stepped back mid-spin must not hold the thread: no spin
     * lasts longer than the margin on the monotonic clock. */
    int64_t give_up = tk__add_sat(start, loop->precision_margin);
    loop->spinning = 1;
    loop->spin_clock = clock;
    loop->spin_deadline = deadline;
    __atomic_store_n(&loop->spin_interrupt, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&loop->lock);
    /* tk__loop_kick (a stop, a wake-up, an earlier timer) ends it early. */
    int64_t end;
    if (clock == TK_CLOCK_MONOTONIC) {
        while ((end = tk__clock_read(clock)) < deadline &&
               !__atomic_load_n(&loop->spin_interrupt, __ATOMIC_ACQUIRE)) {
            cpu_relax();
        }
    } else {
        while (tk__clock_read(clock) < deadline &&
               (end = tk__clock_read(TK_CLOCK_MONOTONIC)) < give_up &&
               !__atomic_load_n(&loop->spin_interrupt, __ATOMIC_ACQUIRE)) {
            cpu_relax();
        }
        end = tk__clock_read(TK_CLOCK_MONOTONIC);
    }
    pthread_mutex_lock(&loop->lock);
    loop->spinning = 0;
    loop->stats.spins++;
    if (end > start) loop->stats.spin_ns += (uint64_t)(end - start);
    return 1;
}
