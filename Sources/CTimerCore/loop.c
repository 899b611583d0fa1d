/*
 * The loop: one thread at a time runs it; any thread may schedule, cancel,
 * stop or wake it.
 *
 * A pass fires what is due (timers.c), then the loop arms one timerfd per
 * clock in use for the earliest (deadline + leeway) of the current mode and
 * blocks in epoll_wait(-1): a timerfd wakes the thread without the timer slack
 * that an epoll timeout would add. The wall-clock timerfd is armed with
 * TFD_TIMER_CANCEL_ON_SET, so a step of the wall clock ends the wait at once.
 * An eventfd carries stop and wake-up requests from other threads; a thread
 * that schedules an earlier timer while the loop sleeps re-arms the timerfd
 * itself.
 *
 * A manual loop has no timerfds. Run without a deadline, it waits only for
 * descriptors, wake-ups and stops; run with one, it does not wait at all: it
 * polls the descriptors and moves its manual clocks to the next wake-up
 * (tk__manual_step, manual.c) after each pass.
 *
 * Reading order: create and destroy, clocks and arming, waiting and events,
 * run, then watched descriptors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "clock.h"
#include "loop_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

_Static_assert(TK_IO_READABLE == EPOLLIN, "TK_IO_READABLE mirrors EPOLLIN");
_Static_assert(TK_IO_WRITABLE == EPOLLOUT, "TK_IO_WRITABLE mirrors EPOLLOUT");
_Static_assert(TK_IO_ERROR == EPOLLERR, "TK_IO_ERROR mirrors EPOLLERR");
_Static_assert(TK_IO_HANGUP == EPOLLHUP, "TK_IO_HANGUP mirrors EPOLLHUP");

/* epoll user data: the loop's own descriptors have the top bit set; a watched
 * fd is (generation << 32 | fd). */
#define INTERNAL_TAG (UINT64_C(1) << 63)
#define WAKE_INDEX TK_CLOCK_COUNT

/* The epoll user data of a watch of `fd` (generations stay below 2^31). */
static uint64_t watch_data(uint32_t generation, int fd) {
    return ((uint64_t)generation << 32) | (uint32_t)fd;
}

/* How far in the future a timerfd kept only to see wall-clock steps is armed. */
#define FAR_FUTURE (INT64_MAX - 1)

/* ---- Create and destroy ---------------------------------------------------- */

static int loop_alloc(tk_loop **out, int manual, int64_t start_ns) {
    if (out == NULL) return -EINVAL;
    tk_loop *loop = calloc(1, sizeof *loop);
    if (loop == NULL) return -ENOMEM;
    loop->manual = manual;
    loop->handle_key = tk__next_handle_key();
    loop->epoll_fd = -1;
    loop->wake_fd = -1;
    tk__watch_table_init(&loop->watches);
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        loop->timer_fds[clock] = -1;
        loop->armed[clock] = TK__DISARMED;
        loop->manual_now[clock] = start_ns;
    }
    tk__timers_init(loop);
    loop->precision_margin = TK_PRECISION_DEFAULT_MARGIN_NS;
    int result = pthread_mutex_init(&loop->lock, NULL);
    if (result != 0) {
        free(loop);
        return -result;
    }
    loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->epoll_fd < 0) goto fail;
    loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->wake_fd < 0) goto fail;
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = INTERNAL_TAG | WAKE_INDEX};
    if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->wake_fd, &event) < 0) goto fail;
    *out = loop;
    return 0;
fail:
    result = -errno;
    if (loop->wake_fd >= 0) close(loop->wake_fd);
    if (loop->epoll_fd >= 0) close(loop->epoll_fd);
    pthread_mutex_destroy(&loop->lock);
    free(loop);
    return result;
}

int tk_loop_create(tk_loop **loop) { return loop_alloc(loop, 0, 0); }

int tk_loop_create_manual(tk_loop **loop, int64_t start_ns) {
    return loop_alloc(loop, 1, start_ns);
}

int tk_loop_destroy(tk_loop *loop) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    int busy = loop->depth > 0 || loop->fire_calls > 0 || loop->releasing > 0;
    pthread_mutex_unlock(&loop->lock);
    if (busy) return -EBUSY;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        if (loop->timer_fds[clock] >= 0) close(loop->timer_fds[clock]);
    }
    close(loop->wake_fd);
    close(loop->epoll_fd);
    tk__timers_free(loop);
    tk__watch_table_free(&loop->watches);
    pthread_mutex_destroy(&loop->lock);
    free(loop);
    return 0;
}

int tk_loop_get_stats(tk_loop *loop, tk_loop_stats *stats) {
    if (loop == NULL || stats == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    *stats = loop->stats;
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

/* ---- Clocks and arming ----------------------------------------------------- */

int tk_loop_now(tk_loop *loop, tk_clock clock, int64_t *now_ns) {
    if (loop == NULL || now_ns == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (!loop->manual) {
        *now_ns = tk__clock_read(clock);
        return 0;
    }
    pthread_mutex_lock(&loop->lock);
    *now_ns = loop->manual_now[clock];
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

int tk__loop_open_clock(tk_loop *loop, tk_clock clock) {
    if (loop->manual || loop->timer_fds[clock] >= 0) return 0;
    int fd = timerfd_create(tk__clock_ids[clock], TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd < 0) return -errno;
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = INTERNAL_TAG | (uint64_t)clock};
    if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &event) < 0) {
        int result = -errno;
        close(fd);
        return result;
    }
    loop->timer_fds[clock] = fd;
    loop->armed[clock] = TK__DISARMED;
    return 0;
}

/* timerfd_settime for a boot or monotonic timerfd, straight to the kernel
 * where the system call takes a 64-bit timespec. A time faker preloaded into
 * the process (libfaketime, run as FAKETIME_DONT_FAKE_MONOTONIC=1 faketime
 * ...) interposes timerfd_settime and rewrites every absolute deadline as if
 * it were on the wall clock: boot and monotonic timers would then fail with
 * EINVAL or never fire, although it leaves those clocks' readings alone. The
 * wall clock's timerfd keeps the libc call, so a faker sees its deadlines. */
static int settime_unfaked(int fd, int flags, const struct itimerspec *when) {
#if defined(SYS_timerfd_settime) && defined(__LP64__)
    return (int)syscall(SYS_timerfd_settime, fd, flags, when, NULL);
#else
    return timerfd_settime(fd, flags, when, NULL);
#endif
}

/* Arms `clock`'s timerfd for `target` (INT64_MAX: never) unless it already
 * is. Returns 0 or -errno. Lock held. */
static int arm(tk_loop *loop, tk_clock clock, int64_t target) {
    int fd = loop->timer_fds[clock];
    if (fd < 0) return 0;
    int wall = clock == TK_CLOCK_REALTIME;
    if (target == INT64_MAX && wall && loop->clock_change_fn != NULL) target = FAR_FUTURE;
    if (target == INT64_MAX) {
        if (loop->armed[clock] == TK__DISARMED) return 0;
        struct itimerspec off = {0};
        if (timerfd_settime(fd, 0, &off, NULL) < 0) return -errno;
        loop->armed[clock] = TK__DISARMED;
        loop->stats.arms++;
        return 0;
    }
    /* INT64_MIN marks the timerfd disarmed: a target there (a deadline
     * saturated into the far past) is armed as the instant after it, which
     * has passed just as well. */
    if (target == TK__DISARMED) target = TK__DISARMED + 1;
    if (loop->armed[clock] == target) return 0;
    /* An absolute time of 0 would disarm the timerfd: 1 ns is as good. */
    struct itimerspec when = {.it_value = tk__ns_to_timespec(target > 0 ? target : 1)};
    int flags = TFD_TIMER_ABSTIME | (wall ? TFD_TIMER_CANCEL_ON_SET : 0);
    int armed = wall ? timerfd_settime(fd, flags, &when, NULL) : settime_unfaked(fd, flags, &when);
    if (armed < 0) {
        /* ECANCELED: the wall clock stepped since the timerfd was last read.
         * The kernel armed it all the same and forgot the step, which no
         * read will report now: the loop reports it at its next pass, which
         * comes at once (a sleeping loop is woken, a planning one does not
         * sleep). */
        if (errno == ECANCELED) {
            loop->armed[clock] = target;
            loop->stats.arms++;
            loop->wall_step_pending = 1;
            (void)tk__loop_kick(loop);
            return 0;
        }
        return -errno;
    }
    loop->armed[clock] = target;
    loop->stats.arms++;
    return 0;
}

void tk__loop_note_target(tk_loop *loop, tk_clock clock, tk_mode_set modes, int64_t target,
                          int64_t due_by) {
    if (!(modes & TK_MODES(loop->mode))) return;
    if (loop->spinning) {
        /* Due before the spin ends: end the spin, so the run plans again.
         * Across clocks, what is compared is how far off each is now. */
        int64_t before = clock == loop->spin_clock
                             ? tk__sub_sat(loop->spin_deadline, due_by)
                             : tk__sub_sat(tk__sub_sat(loop->spin_deadline,
                                                       tk__clock_read(loop->spin_clock)),
                                           tk__sub_sat(due_by, tk__clock_read(clock)));
        if (before > 0) (void)tk__loop_kick(loop);
        return;
    }
    if (!loop->sleeping) return;
    if (loop->manual) {
        /* No timerfd: the run sleeping on fds plans again after a wake-up. */
        (void)tk__loop_kick(loop);
        return;
    }
    if (loop->armed[clock] != TK__DISARMED && loop->armed[clock] <= target) return;
    /* If arming fails, wake the run instead: it plans again, and the same
     * failure then ends tk_loop_run with its error rather than leaving the
     * timer to a wake-up that may never come. (A failed kick means the
     * eventfd itself is gone, which only a destroyed loop would do.) */
    if (arm(loop, clock, target) < 0) (void)tk__loop_kick(loop);
}

void tk__loop_report_clock_change(tk_loop *loop) {
    loop->stats.clock_changes++;
    tk_clock_change_fn fn = loop->clock_change_fn;
    void *context = loop->clock_change_context;
    if (fn == NULL) return;
    pthread_mutex_unlock(&loop->lock);
    fn(loop, context);
    pthread_mutex_lock(&loop->lock);
}

int tk_loop_set_clock_change_handler(tk_loop *loop, tk_clock_change_fn fn, void *context) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    tk_clock_change_fn old_fn = loop->clock_change_fn;
    void *old_context = loop->clock_change_context;
    loop->clock_change_fn = fn;
    loop->clock_change_context = context;
    int result = 0;
    /* Clearing needs no timerfd, so it cannot fail. Setting opens and arms
     * the wall clock's at once, so that a step is seen even before the next
     * pass (arm() keeps it armed for "never" while a function is set); on
     * failure the function in place before stays. */
    if (fn != NULL) {
        result = tk__loop_open_clock(loop, TK_CLOCK_REALTIME);
        if (result == 0 && loop->armed[TK_CLOCK_REALTIME] == TK__DISARMED) {
            result = arm(loop, TK_CLOCK_REALTIME, INT64_MAX);
        }
        if (result < 0) {
            loop->clock_change_fn = old_fn;
            loop->clock_change_context = old_context;
        }
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

/* ---- Claiming the loop ----------------------------------------------------- */

int tk__loop_enter(tk_loop *loop, int advancing) {
    pthread_t self = pthread_self();
    /* Advancing from a callback run by tk_loop_fire would nest time. */
    if (advancing && loop->fire_calls > 0) return -EBUSY;
    if (loop->depth > 0) {
        if (!pthread_equal(loop->owner, self) || loop->advancing || advancing) return -EBUSY;
    }
    loop->owner = self;
    loop->depth++;
    loop->advancing = advancing;
    return 0;
}

void tk__loop_leave(tk_loop *loop) {
    loop->depth--;
    loop->advancing = 0;
}

void tk__run_begin(tk_loop *loop, tk__run *run) {
    run->outer = loop->run;
    run->stop = 0;
    if (run->outer == NULL) {
        run->stop = loop->stop_next;
        loop->stop_next = 0;
    }
    loop->run = run;
}

void tk__run_end(tk_loop *loop, tk__run *run) {
    loop->run = run->outer;
    if (!run->stop) return;
    if (run->outer != NULL) {
        run->outer->stop = 1;
    } else {
        loop->stop_next = 1;
    }
}

/* ---- Waiting and events ------------------------------------------------------ */

/* Drains a non-blocking counter descriptor (timerfd or eventfd). Returns 1 if
 * the wall clock was stepped (the timerfd read fails with ECANCELED). */
static int drain(int fd) {
    uint64_t count;
    for (;;) {
        ssize_t got = read(fd, &count, sizeof count);
        if (got >= 0) return 0;
        if (errno == EINTR) continue;
        return errno == ECANCELED;
    }
}

/* A watch whose callback runs: a frame of handle_events, on the loop's
 * io_calls list while the callback runs. It holds the fd's number: until the
 * callback returns, no callback is given an event of that number (whatever
 * watch it is by then, the same, a replacing one, or one of a new
 * descriptor that took the number). */
struct tk__io_call {
    int fd;
    int held; /* the fd's watch is out of epoll's interest until the return */
    struct tk__io_call *outer;
};

static int is_loop_fd(const tk_loop *loop, int fd);
static int rebuild_epoll(tk_loop *loop);

/* The epoll registration of `watch` with `events`. */
static int register_watch(tk_loop *loop, const tk__watch *watch, uint32_t events) {
    struct epoll_event event = {.events = events,
                                .data.u64 = watch_data(watch->generation, watch->fd)};
    return epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, watch->fd, &event);
}

/* The frame of the callback running for `fd`, or NULL. */
static struct tk__io_call *io_call_of(const tk_loop *loop, int fd) {
    for (struct tk__io_call *call = loop->io_calls; call != NULL; call = call->outer) {
        if (call->fd == fd) return call;
    }
    return NULL;
}

/* What a watch of `fd` is registered with while a callback runs for the
 * number: no events, and one-shot, so that a hang-up or an error, which
 * epoll reports whatever the events, comes once (and is not given to any
 * callback, see handle_events), not at every wait. */
#define TK__HELD_EVENTS ((uint32_t)EPOLLONESHOT)

/* Takes `call`'s fd out of epoll's interest until its callback returns, if
 * a watch of the number is there. Not the loop's own descriptors: a watched
 * fd closed in its callback may have left its number to one. A failure (the
 * fd was closed, and the number is free) leaves nothing to hold. Lock held. */
static void hold_io_call(tk_loop *loop, struct tk__io_call *call) {
    if (call->held || is_loop_fd(loop, call->fd)) return;
    const tk__watch *watch = tk__watch_table_find(&loop->watches, call->fd);
    if (watch != NULL) call->held = register_watch(loop, watch, TK__HELD_EVENTS) == 0;
}

/* A run is starting inside watch callbacks (a nested run): their fds, which
 * may still be ready, are not reported to it, so that no callback runs again
 * while it runs. Lock held. */
static void hold_io_calls(tk_loop *loop) {
    for (struct tk__io_call *call = loop->io_calls; call != NULL; call = call->outer) {
        hold_io_call(loop, call);
    }
}

/* The callback of `call` returned: the watch of its fd, if there is one
 * (whichever it is by now) and it was held, gets its events back. Lock held. */
static void release_io_call(tk_loop *loop, struct tk__io_call *call) {
    loop->io_calls = call->outer;
    if (!call->held || is_loop_fd(loop, call->fd)) return;
    const tk__watch *watch = tk__watch_table_find(&loop->watches, call->fd);
    if (watch != NULL) (void)register_watch(loop, watch, watch->events);
}

/* Handles what epoll_wait reported. Returns how many events were handled
 * (a timerfd expiring counts only through the timers it fires). Lock held;
 * dropped around watch callbacks, which never run again while they run.
 * Once a callback has run a nested run that polled, the rest of the batch
 * may be stale (that run may have served, and drained, a descriptor it
 * reports): it is dropped, and what is still ready comes at the next poll
 * (watches are level-triggered). */
static int handle_events(tk_loop *loop, const struct epoll_event *events, int count) {
    int handled = 0;
    uint32_t polls = loop->polls;
    for (int i = 0; i < count && loop->polls == polls; i++) {
        uint64_t data = events[i].data.u64;
        if (data & INTERNAL_TAG) {
            uint32_t index = (uint32_t)(data & ~INTERNAL_TAG);
            if (index == WAKE_INDEX) {
                drain(loop->wake_fd); /* the request itself is a flag */
                continue;
            }
            if (drain(loop->timer_fds[index])) {
                loop->armed[index] = TK__DISARMED;
                tk__loop_report_clock_change(loop);
                handled++;
                if (tk__stop_due(loop)) break;
            } else {
                loop->armed[index] = TK__DISARMED; /* expired: nothing is armed */
            }
            continue;
        }
        int fd = (int)(uint32_t)data;
        uint32_t generation = (uint32_t)(data >> 32);
        const tk__watch *watch = tk__watch_table_find(&loop->watches, fd);
        if (watch == NULL || watch->generation != generation) {
            /* Of no watch now. If a registration outlived its descriptor's
             * unwatch, this may be it, which would be reported at every
             * wait: the instance is rebuilt without it (if that fails, out
             * of descriptors say, the next such event tries again). */
            if (loop->stale_registrations && rebuild_epoll(loop) == 0) {
                loop->stale_registrations = 0;
            }
            continue;
        }
        if (loop->io_calls != NULL && io_call_of(loop, fd) != NULL) continue;
        tk_io_fn fn = watch->fn;
        void *context = watch->context;
        struct tk__io_call call = {.fd = fd, .outer = loop->io_calls};
        loop->io_calls = &call;
        pthread_mutex_unlock(&loop->lock);
        fn(loop, fd, events[i].events, context);
        pthread_mutex_lock(&loop->lock);
        release_io_call(loop, &call);
        handled++;
        if (tk__stop_due(loop)) break;
    }
    return handled;
}

/* Arms every clock for the mode's next wake-up and says how long epoll_wait
 * may block: -1 (until an event) or 0 (something is due already). */
static int plan_wait(tk_loop *loop, const int64_t now[TK_CLOCK_COUNT], int64_t until_ns,
                     int *timeout_ms) {
    /* Timers of this mode parked by a nested run in another mode are due. */
    *timeout_ms = (loop->parked_modes & TK_MODES(loop->mode)) ? 0 : -1;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        int64_t target = tk__timers_wake_target(loop, (tk_clock)clock, loop->mode,
                                                loop->manual ? 0 : TK__WAKE_SEARCH_LIMIT, NULL);
        if (clock == TK_CLOCK_MONOTONIC && until_ns < target) target = until_ns;
        if (target != INT64_MAX && target <= now[clock]) {
            *timeout_ms = 0;
            continue;
        }
        if (loop->manual) continue;
        if (target != INT64_MAX && loop->timer_fds[clock] < 0) {
            int result = tk__loop_open_clock(loop, (tk_clock)clock); /* for until_ns */
            if (result < 0) return result;
        }
        int result = arm(loop, (tk_clock)clock, target);
        if (result < 0) return result;
    }
    return 0;
}

/* ---- Running ------------------------------------------------------------------ */

enum { EVENT_BATCH = 64 };

/* Reads the monotonic clock (run deadlines use it) and every other clock that
 * has timers; the others cannot matter to this pass. */
static void read_clocks_in_use(const tk_loop *loop, int64_t now[TK_CLOCK_COUNT]) {
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        if (loop->manual) {
            now[clock] = loop->manual_now[clock];
        } else if (clock == TK_CLOCK_MONOTONIC || loop->clock_timers[clock] > 0) {
            now[clock] = tk__clock_read((tk_clock)clock);
        } else {
            now[clock] = INT64_MIN; /* no timers: nothing compares against it */
        }
    }
}

/* Calls the wake-up handler if a wake-up was asked for: returns 1 if one
 * was (taken even with no handler), else 0. A stop asked for by a callback
 * of the pass comes first: the wake-up waits for the next run. Lock held;
 * dropped around the call. */
static int take_wakeup(tk_loop *loop) {
    if (!loop->wakeup_requested || tk__stop_due(loop)) return 0;
    /* Cleared first: a wake-up asked for while the handler runs makes
     * another pass call it again. */
    loop->wakeup_requested = 0;
    tk_wakeup_fn fn = loop->wakeup_fn;
    if (fn != NULL) {
        void *context = loop->wakeup_context;
        pthread_mutex_unlock(&loop->lock);
        fn(loop, context);
        pthread_mutex_lock(&loop->lock);
    }
    return 1;
}

/* Polls the descriptors without waiting: the count of events, or -errno.
 * Not a wake-up in the statistics: nothing was waited for. Lock held. */
static int poll_ready(tk_loop *loop, struct epoll_event *events) {
    int count;
    do {
        count = epoll_wait(loop->epoll_fd, events, EVENT_BATCH, 0);
    } while (count < 0 && errno == EINTR);
    loop->polls++;
    return count < 0 ? -errno : count;
}

/* The end of a pass after which the run returns: handles the ready
 * descriptors and takes a wake-up asked for. Returns how many it handled,
 * or -errno. Lock held. */
static int serve_ready(tk_loop *loop, struct epoll_event *events) {
    int count = poll_ready(loop, events);
    if (count < 0) return count;
    int handled = handle_events(loop, events, count);
    return handled + take_wakeup(loop);
}

static int run_passes(tk_loop *loop, unsigned mode, int64_t until_ns, uint32_t flags) {
    struct epoll_event events[EVENT_BATCH];
    /* A manual loop's run with a deadline does not wait for time: it moves
     * it, as tk_loop_advance does, and only polls the descriptors. */
    int moves_time = loop->manual && until_ns != TK_FOREVER;
    int at_deadline = 0; /* moved time to until_ns for a last pass there */
    int waited = 0;
    int spun = 0; /* the last pass spun for a precise timer */
    int last_poll_handled = 0; /* what the last poll's events and wake-up were */
    /* The passes a manual run made at this time after the first. */
    tk__same_time same_time = tk__same_time_start(loop);
    int64_t handled = 0;
    if (loop->io_calls != NULL) hold_io_calls(loop);
    for (;;) {
        int64_t now[TK_CLOCK_COUNT];
        if (tk__stop_take(loop)) return TK_RUN_STOPPED;
        if ((flags & TK_RUN_NOWAIT) && waited) return TK_RUN_PASSED;
        if (loop->wall_step_pending) {
            loop->wall_step_pending = 0;
            tk__loop_report_clock_change(loop);
            handled++;
            if (tk__stop_take(loop)) return TK_RUN_STOPPED;
        }
        int tuned = tk__precision_retune(loop);
        if (tuned < 0) return tuned;
        read_clocks_in_use(loop, now);
        int64_t fired = tk__timers_fire_due(loop, mode, now, 1);
        if (fired < 0) return (int)fired;
        handled += fired;
        if (tk__stop_take(loop)) return TK_RUN_STOPPED;
        /* `now` may be a little stale after the callbacks: a target that
         * passed meanwhile arms a timerfd in the past, which fires at once.
         * A run that moves time ends after the pass it makes at until_ns
         * (see below). */
        int ending = 0;
        if ((flags & TK_RUN_ONCE) && handled > 0) {
            ending = TK_RUN_PASSED;
        } else if (at_deadline || (now[TK_CLOCK_MONOTONIC] >= until_ns &&
                                   (!moves_time || (flags & TK_RUN_NOWAIT)))) {
            ending = TK_RUN_TIMED_OUT;
        }
        if (ending) {
            /* The run returns after this pass. Like every pass, it ends with
             * the ready descriptors and a wake-up asked for, only without
             * waiting (else a timer due at every pass would starve them in a
             * series of TK_RUN_ONCE runs). It needs no poll of its own when
             * the poll that ended the pass before stands for it: no spin
             * came between, and this pass fired nothing, or that poll
             * handled something (so a TK_RUN_ONCE run serves it once). */
            if (!waited || spun || (fired > 0 && last_poll_handled == 0)) {
                int served = serve_ready(loop, events);
                if (served < 0) return served;
                handled += served;
                if (tk__stop_take(loop)) return TK_RUN_STOPPED;
                /* In the documented order: something handled comes before
                 * the deadline. */
                if ((flags & TK_RUN_ONCE) && handled > 0) ending = TK_RUN_PASSED;
            }
            return ending;
        }
        /* A precise timer due within the margin: spin to it, and fire it in
         * the next pass. A spin is never followed by another before the
         * descriptors have been polled. */
        if (!spun && !(flags & TK_RUN_NOWAIT) && tk__precision_spin(loop, mode, until_ns)) {
            spun = 1;
            continue;
        }
        spun = 0;

        int count, wait_error;
        if (moves_time) {
            /* Descriptors are only polled: time moves below instead. */
            count = poll_ready(loop, events);
            wait_error = count < 0 ? -count : 0;
        } else {
            /* A run that will not wait arms nothing: it needs no descriptor,
             * and the next run that waits plans for itself. */
            int timeout_ms = 0;
            if (!(flags & TK_RUN_NOWAIT)) {
                int result = plan_wait(loop, now, until_ns, &timeout_ms);
                if (result < 0) return result;
            }
            if (loop->wakeup_requested || loop->wall_step_pending) timeout_ms = 0;
            loop->sleeping = 1;
            pthread_mutex_unlock(&loop->lock);
            count = epoll_wait(loop->epoll_fd, events, EVENT_BATCH, timeout_ms);
            wait_error = count < 0 ? errno : 0;
            pthread_mutex_lock(&loop->lock);
            loop->sleeping = 0;
            loop->polls++;
            loop->stats.wakeups++;
        }
        waited = 1;
        if (count < 0) {
            if (wait_error == EINTR) continue;
            return -wait_error;
        }
        last_poll_handled = handle_events(loop, events, count);
        last_poll_handled += take_wakeup(loop);
        handled += last_poll_handled;
        /* Time moves unless the run is about to return anyway: to the next
         * wake-up, or, with none left before until_ns, to until_ns, where a
         * real run wakes for its deadline and makes a last pass. That pass
         * fires what is due there, such as a timer whose leeway reaches past
         * until_ns, and parks the due timers of other modes. */
        /* As a real run does not sleep while a wake-up is pending, a wake-up
         * asked for during the pass (a job queued by a job) is served by
         * another pass at the same time before the clocks move: up to
         * TK__SAME_TIME_PASSES more passes at one time (counted with the
         * steps that find a timer due at once), and only before the
         * deadline, so that work asking for a wake-up at every pass still
         * lets time move and the run end. */
        /* (A callback that moved time makes the next pass the first at the
         * new time.) */
        int moved = moves_time && tk__same_time_moved(loop, &same_time);
        int hold = moves_time && (loop->wakeup_requested || loop->wall_step_pending) &&
                   (moved || same_time.passes < TK__SAME_TIME_PASSES) &&
                   now[TK_CLOCK_MONOTONIC] < until_ns;
        if (hold && !tk__same_time_sync(loop, &same_time)) same_time.passes++;
        if (moves_time && !(flags & TK_RUN_NOWAIT) && !tk__stop_due(loop) &&
            !((flags & TK_RUN_ONCE) && handled > 0) && !hold) {
            if (!tk__manual_step(loop, mode, until_ns, &same_time)) {
                /* The last pass was at or past the deadline already. (One
                 * before it may have left the clock there: a callback ran a
                 * nested run or set the clock. The pass at the deadline is
                 * still to come, as it is for a real run, which sleeps on a
                 * target that has passed and wakes at once.) */
                if (now[TK_CLOCK_MONOTONIC] >= until_ns) return TK_RUN_TIMED_OUT;
                loop->stats.wakeups++;
                at_deadline = 1;
            }
        }
    }
}

int tk_loop_run(tk_loop *loop, tk_mode_set modes, int64_t deadline_ns, uint32_t flags) {
    int mode = tk__mode_index(modes);
    if (loop == NULL || mode < 0) return -EINVAL;
    if (flags & ~(TK_RUN_ONCE | TK_RUN_NOWAIT)) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    int result = tk__loop_enter(loop, 0);
    if (result == 0) {
        unsigned outer_mode = loop->mode;
        loop->mode = (unsigned)mode;
        tk__run run;
        tk__run_begin(loop, &run);
        int outermost = loop->depth == 1;
        if (outermost) result = tk__precision_enter(loop);
        if (result == 0) result = run_passes(loop, (unsigned)mode, deadline_ns, flags);
        if (outermost) tk__precision_leave(loop);
        tk__run_end(loop, &run);
        loop->mode = outer_mode;
        tk__loop_leave(loop);
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk__loop_kick(tk_loop *loop) {
    if (loop->spinning) {
        /* The spinning thread looks at this flag between clock readings. */
        __atomic_store_n(&loop->spin_interrupt, 1, __ATOMIC_RELEASE);
        return 0;
    }
    if (!loop->sleeping) return 0;
    uint64_t one = 1;
    for (;;) {
        if (write(loop->wake_fd, &one, sizeof one) >= 0) return 0;
        if (errno == EINTR) continue;
        /* EAGAIN: the counter is full, so a wake-up is pending anyway. */
        return errno == EAGAIN ? 0 : -errno;
    }
}

int tk_loop_stop(tk_loop *loop) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    if (loop->run != NULL) {
        loop->run->stop = 1;
    } else {
        loop->stop_next = 1;
    }
    int result = tk__loop_kick(loop);
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_take_stop(tk_loop *loop) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    /* A stop waits in stop_next only while no run goes on; an advance,
     * in which no run can begin, leaves it there for the next run. */
    int taken = loop->stop_next && loop->run == NULL;
    if (taken) loop->stop_next = 0;
    pthread_mutex_unlock(&loop->lock);
    return taken;
}

int tk_loop_wakeup(tk_loop *loop) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    loop->wakeup_requested = 1;
    int result = tk__loop_kick(loop);
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_set_wakeup_handler(tk_loop *loop, tk_wakeup_fn fn, void *context) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    loop->wakeup_fn = fn;
    loop->wakeup_context = context;
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

int tk_loop_runs_on_this_thread(tk_loop *loop) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    int result = loop->depth > 0 && pthread_equal(loop->owner, pthread_self());
    pthread_mutex_unlock(&loop->lock);
    return result;
}

/* ---- Watched descriptors -------------------------------------------------------- */

/* Whether `fd` is one of the loop's own descriptors. A watched fd closed
 * without unwatching leaves its number free, and the loop may open one of its
 * own under it: epoll_ctl on that number would then reach the loop's own
 * registration, which no watch call may change. */
static int is_loop_fd(const tk_loop *loop, int fd) {
    if (fd == loop->epoll_fd || fd == loop->wake_fd) return 1;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        if (fd == loop->timer_fds[clock]) return 1;
    }
    return 0;
}

int tk_loop_watch_fd(tk_loop *loop, int fd, uint32_t events, tk_io_fn fn, void *context) {
    if (loop == NULL || fn == NULL || fd < 0) return -EINVAL;
    if (events == 0 || (events & ~(TK_IO_READABLE | TK_IO_WRITABLE))) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    int result = 0;
    tk__watch *watch = tk__watch_table_find(&loop->watches, fd);
    int watched = watch != NULL;
    if (is_loop_fd(loop, fd)) {
        /* Watched: the descriptor watched was closed, and the number is the
         * loop's now (-ENOENT, as for any number re-used after a close).
         * Not watched: epoll already holds it, as the loop's. */
        pthread_mutex_unlock(&loop->lock);
        return watched ? -ENOENT : -EEXIST;
    }
    /* A fresh generation per watch, a replacing one too, so that events
     * queued for an earlier watch of the same fd (in the batch being
     * handled, say) are not delivered to this one, with events it did not
     * ask for. epoll is level-triggered: an fd ready for the new events is
     * reported again. */
    uint32_t generation = ++loop->watch_generation & 0x7fffffffu;
    if (generation == 0) generation = loop->watch_generation = 1;
    /* While a callback runs for this number, the new watch waits for its
     * return (release_io_call gives it its events). */
    struct tk__io_call *running = loop->io_calls != NULL ? io_call_of(loop, fd) : NULL;
    struct epoll_event event = {.events = running != NULL ? TK__HELD_EVENTS : events,
                                .data.u64 = watch_data(generation, fd)};
    /* Room first, so that a failure leaves epoll as it was; the table's size
     * follows the number of watches, never the fd's number. The kernel then
     * checks the descriptor. */
    if (!watched) result = tk__watch_table_reserve(&loop->watches);
    if (result == 0 &&
        epoll_ctl(loop->epoll_fd, watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event) < 0) {
        result = -errno;
    }
    if (result == 0) {
        if (!watched) watch = tk__watch_table_insert(&loop->watches, fd);
        watch->fn = fn;
        watch->context = context;
        watch->events = events;
        watch->generation = generation;
        if (running != NULL) running->held = 1;
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

/* The events `watch` is registered with now: none while a callback for its
 * number holds it (see hold_io_call). Lock held. */
static uint32_t registered_events(const tk_loop *loop, const tk__watch *watch) {
    const struct tk__io_call *call = loop->io_calls != NULL ? io_call_of(loop, watch->fd) : NULL;
    return call != NULL && call->held ? TK__HELD_EVENTS : watch->events;
}

/*
 * Replaces the loop's epoll instance by a new one under the same number,
 * which holds the loop's own descriptors and every watch whose number still
 * names the descriptor it was registered with, with the events and data it
 * has now. Dropped: the registrations of descriptors closed while watched,
 * which epoll keeps for as long as their file is open elsewhere (a dup, a
 * child) and which no epoll_ctl can reach once the number is free or
 * another file's. 0, or -errno with the loop as it was. Called by the thread
 * running the loop (from handle_events), with the lock held: no epoll_wait
 * on the instance is in progress, and every other use of it goes through
 * the number under the lock.
 */
static int rebuild_epoll(tk_loop *loop) {
    int fresh = epoll_create1(EPOLL_CLOEXEC);
    if (fresh < 0) return -errno;
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = INTERNAL_TAG | WAKE_INDEX};
    if (epoll_ctl(fresh, EPOLL_CTL_ADD, loop->wake_fd, &event) < 0) goto fail;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        if (loop->timer_fds[clock] < 0) continue;
        event = (struct epoll_event){.events = EPOLLIN, .data.u64 = INTERNAL_TAG | (uint64_t)clock};
        if (epoll_ctl(fresh, EPOLL_CTL_ADD, loop->timer_fds[clock], &event) < 0) goto fail;
    }
    for (uint32_t i = 0; i < loop->watches.capacity; i++) {
        const tk__watch *watch = &loop->watches.entries[i];
        if (watch->fd < 0 || is_loop_fd(loop, watch->fd)) continue;
        /* Whether the number names the descriptor registered under it:
         * then adding it again is -EEXIST, which changes nothing. If the
         * add succeeds, the number is another file's now (the watched one
         * was closed): that registration is undone, and the watch not
         * carried over. Any other error: the number is free. */
        event = (struct epoll_event){.events = 0};
        if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, watch->fd, &event) == 0) {
            (void)epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, watch->fd, NULL);
            continue;
        }
        if (errno != EEXIST) continue;
        event = (struct epoll_event){.events = registered_events(loop, watch),
                                     .data.u64 = watch_data(watch->generation, watch->fd)};
        if (epoll_ctl(fresh, EPOLL_CTL_ADD, watch->fd, &event) < 0) goto fail;
    }
    if (dup3(fresh, loop->epoll_fd, O_CLOEXEC) < 0) goto fail;
    close(fresh);
    return 0;
fail:;
    int result = -errno;
    close(fresh);
    return result;
}

int tk_loop_unwatch_fd(tk_loop *loop, int fd) {
    if (loop == NULL || fd < 0) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    int result = -ENOENT;
    tk__watch *watch = tk__watch_table_find(&loop->watches, fd);
    if (watch != NULL) {
        /* If the fd was closed already, epoll_ctl cannot reach its
         * registration (the number is free, another file's, or the loop's
         * own, which stays). epoll dropped it if the file was closed
         * everywhere; if not, it goes on reporting, and the first event of
         * it that reaches the loop has the epoll instance rebuilt without
         * it (see handle_events). */
        if (is_loop_fd(loop, fd) || epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, NULL) < 0) {
            loop->stale_registrations = 1;
        }
        tk__watch_table_remove(&loop->watches, watch);
        result = 0;
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}
