/*
 * Manual time: a loop whose clocks move only when the caller says so.
 *
 * tk_loop_advance replays what the real loop would do over a span of time,
 * without sleeping: it jumps to each wake-up target in turn and runs a pass
 * there. A run with a deadline on a manual loop (tk_loop_run in loop.c)
 * moves time the same way, one tk__manual_step after each of its passes.
 * Deterministic tests of timers (and of code built on them) use this.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "clock.h"
#include "loop_internal.h"

#include <errno.h>

/* Whether `to` lies further ahead of `from` than INT64_MAX ns, the longest
 * span an advance or a step can move the clocks by. */
static int beyond_longest_span(int64_t from, int64_t to) {
    return to > from && (uint64_t)to - (uint64_t)from > (uint64_t)INT64_MAX;
}

/* How far the loop's time may move before the next wake-up: the earliest
 * target, relative to each clock's own reading (the clocks move together;
 * negative for one already passed), in `*in`; with `later`, the earliest
 * one after the clocks' readings. 0 if there is none within INT64_MAX ns,
 * the longest span: a target exactly that far is one (a span of INT64_MAX
 * reaches it), one further is not. */
static int next_wakeup_in(tk_loop *loop, unsigned mode, int later, int64_t *in) {
    /* Timers of the mode that a nested run in another mode parked are due:
     * their wake-up is now. */
    int found = !later && tk__timers_parked_in(loop, mode);
    *in = 0;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        int64_t target = later ? tk__timers_wake_target_after(loop, (tk_clock)clock, mode,
                                                              loop->manual_now[clock])
                               : tk__timers_wake_target(loop, (tk_clock)clock, mode, 0, NULL);
        if (target == INT64_MAX) continue;
        int64_t now = loop->manual_now[clock];
        if (beyond_longest_span(now, target)) continue;
        int64_t distance = tk__sub_sat(target, now);
        if (!found || distance < *in) *in = distance;
        found = 1;
    }
    return found;
}

static void move_clocks(tk_loop *loop, int64_t by) {
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        loop->manual_now[clock] = tk__add_sat(loop->manual_now[clock], by);
    }
}

tk__same_time tk__same_time_start(const tk_loop *loop) {
    tk__same_time same_time = {0, loop->manual_now[TK_CLOCK_MONOTONIC],
                               loop->manual_now[TK_CLOCK_BOOTTIME]};
    return same_time;
}

int tk__same_time_moved(const tk_loop *loop, const tk__same_time *same_time) {
    return same_time->monotonic != loop->manual_now[TK_CLOCK_MONOTONIC] ||
           same_time->boot != loop->manual_now[TK_CLOCK_BOOTTIME];
}

int tk__same_time_sync(const tk_loop *loop, tk__same_time *same_time) {
    if (!tk__same_time_moved(loop, same_time)) return 0;
    *same_time = tk__same_time_start(loop);
    return 1;
}

/* Moves the clocks to the next wake-up if it is at most `left` away (1),
 * else by `left` (0; nothing if `left` <= 0). `*moved` is how far. After
 * TK__SAME_TIME_PASSES passes more at one time (`*same_time`), only a
 * wake-up after that time counts. */
static int step_within(tk_loop *loop, unsigned mode, int64_t left, tk__same_time *same_time,
                       int64_t *moved) {
    int64_t in;
    /* A callback may have moved time: the pass after this step is then the
     * first at the new time. */
    int moved_by_callback = tk__same_time_sync(loop, same_time);
    int later = same_time->passes >= TK__SAME_TIME_PASSES;
    int woke = next_wakeup_in(loop, mode, later, &in) && in <= left;
    if (woke) {
        *moved = in > 0 ? in : 0;
        loop->stats.wakeups++;
    } else {
        *moved = left > 0 ? left : 0;
    }
    move_clocks(loop, *moved);
    if (*moved > 0) {
        same_time->passes = 0;
    } else if (!moved_by_callback) {
        same_time->passes++;
    }
    tk__same_time_sync(loop, same_time);
    return woke;
}

int tk__manual_step(tk_loop *loop, unsigned mode, int64_t end, tk__same_time *same_time) {
    for (;;) {
        /* A callback may have set the monotonic clock past `end` already.
         * A span longer than INT64_MAX ns is stepped in two: the first part
         * ends short of `end`, with no wake-up in it. */
        int64_t now = loop->manual_now[TK_CLOCK_MONOTONIC];
        int longer = beyond_longest_span(now, end);
        int64_t moved;
        int woke = step_within(loop, mode, tk__sub_sat(end, now), same_time, &moved);
        if (woke || !longer) return woke;
    }
}

/*
 * The span is what the clocks move in all, counted apart from the monotonic
 * clock's reading: that clock stops at INT64_MAX, and the others move the
 * whole span all the same (each saturating on its own). A callback (the
 * clock-change function's too) that sets the monotonic clock forward uses
 * up that much of the span, so that the span ends where the monotonic
 * clock reads its start + delta_ns.
 */
static int64_t advance_locked(tk_loop *loop, unsigned mode, int64_t delta_ns) {
    int64_t left = delta_ns;
    int64_t fired = 0;
    int64_t before = loop->manual_now[TK_CLOCK_MONOTONIC];
    tk__same_time same_time = tk__same_time_start(loop);
    if (loop->wall_step_pending) {
        loop->wall_step_pending = 0;
        tk__loop_report_clock_change(loop);
    }
    int more;
    do {
        int64_t count = tk__timers_fire_due(loop, mode, loop->manual_now, 0);
        if (count < 0) return count;
        fired += count;
        left = tk__sub_sat(left, tk__sub_sat(loop->manual_now[TK_CLOCK_MONOTONIC], before));
        int64_t moved;
        more = step_within(loop, mode, left, &same_time, &moved);
        left -= moved;
        before = loop->manual_now[TK_CLOCK_MONOTONIC];
    } while (more);
    return fired;
}

int64_t tk_loop_advance(tk_loop *loop, tk_mode_set modes, int64_t delta_ns) {
    int mode = tk__mode_index(modes);
    if (loop == NULL || mode < 0 || delta_ns < 0) return -EINVAL;
    if (!loop->manual) return -ENOTSUP;
    pthread_mutex_lock(&loop->lock);
    int64_t result = tk__loop_enter(loop, 1);
    if (result == 0) {
        unsigned outer_mode = loop->mode;
        loop->mode = (unsigned)mode;
        result = advance_locked(loop, (unsigned)mode, delta_ns);
        loop->mode = outer_mode;
        tk__loop_leave(loop);
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_set_manual_time(tk_loop *loop, tk_clock clock, int64_t now_ns) {
    if (loop == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (!loop->manual) return -ENOTSUP;
    pthread_mutex_lock(&loop->lock);
    int result = 0;
    int64_t *now = &loop->manual_now[clock];
    if (clock == TK_CLOCK_REALTIME) {
        if (now_ns != *now) loop->wall_step_pending = 1;
        *now = now_ns;
    } else if (now_ns < *now) {
        result = -EINVAL;
    } else {
        *now = now_ns;
    }
    /* A run sleeping on fds looks at the new time. */
    if (result == 0) result = tk__loop_kick(loop);
    pthread_mutex_unlock(&loop->lock);
    return result;
}
