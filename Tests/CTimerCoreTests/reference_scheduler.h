/*
 * A reference model of a manual TimerKit loop, for tests: the same timer
 * semantics as tk_loop_create_manual + tk_loop_advance / tk_loop_run, written
 * as plainly as possible (linear scans, no heap) so that it is easy to check
 * by reading. Header-only; every function is static inline.
 *
 * The rules, in one place:
 *   - Three clocks, all starting at `start_ns`. A global sequence counter
 *     gives every new deadline (schedule, reschedule, a repeating timer's
 *     re-arm) a fresh number; equal deadlines fire in sequence order.
 *     Times that would overflow saturate (INT64_MIN / INT64_MAX).
 *   - schedule: relative (delay_ns) deadline = now[clock] + max(0, delay_ns);
 *     absolute ones (deadline_ns, with TK_TIMER_ABSOLUTE) are taken as given;
 *     the field not named by the flags must be 0. Empty modes are the
 *     default mode; a set with TK_MODES_INVALID is -EINVAL. A repeating timer's leeway is
 *     clamped to interval / 2. A deadline of INT64_MAX never comes. A
 *     precise timer (TK_TIMER_PRECISE) must have leeway 0, and is then, on a
 *     manual loop, just that: a timer with no leeway.
 *   - advance(mode, delta): the clocks may move `delta` in all (left =
 *     delta), less what callbacks (the clock-change function's too) move
 *     the monotonic clock meanwhile (taken from `left` before each step),
 *     so that a monotonic clock at INT64_MAX does not hold the others
 *     back. A pending wall-clock step is reported first. Then passes, each
 *     followed by a step within `left`, until a step moves the clocks by
 *     all that is left.
 *   - A pass, at the clock readings `now` it starts with, first puts the
 *     parked timers of `mode` back among the pending ones (deadline and seq
 *     unchanged), and does so again after each callback (a nested run in
 *     another mode may have parked some). Then, repeatedly: each clock
 *     offers, among its pending timers that got their seq before the pass
 *     began, the earliest by (deadline, seq), if that timer is due
 *     (deadline <= now[clock]). Timers new in this pass are passed over, and
 *     offer nothing until a later pass. The most overdue offer (now -
 *     deadline, largest first; then smaller seq) is taken: if a callback of
 *     it is running (a nested run, or fire), it is deferred; else it fires
 *     if `mode` is one of its modes and is parked otherwise. A deferred
 *     timer is neither offered nor a wake-up target;
 *     when its last running callback returns it is pending again, with a
 *     new seq (so not in the pass that is going on).
 *     A pass of a run ends early, after the callback, once a stop is
 *     requested of that run.
 *   - stop(): asks the innermost run to return (the next run, with none
 *     going). A run started after it, nested in a callback of the run it
 *     asks, does not take it; a run that returns without taking its stop
 *     (it ended for another reason first) passes it to the run around it,
 *     or, the outermost, to the next run.
 *   - A step: the wake-up target is the least (deadline + leeway -
 *     now[clock]) among the unparked, undeferred timers of `mode` (a target that
 *     saturates at INT64_MAX never comes), or 0 if a timer of `mode` is
 *     parked (a nested run in another mode parked it); if there is none or
 *     it is further away than end - now[MONOTONIC] (how far the clocks may
 *     still move), the clocks move to `end` (not back) and the step ends the
 *     advance or run; else the clocks move to the target (stats.wakeups++).
 *     An advance or run counts the steps in a row that move the clocks by
 *     nothing, from 0 again whenever the monotonic or boot clock reads
 *     otherwise than at the last count (a callback moved them: the step
 *     then counts none, its pass being the first at that time); from the
 *     65th, a step looks only at targets later than the clocks' readings (a
 *     parked timer offers none): at most 65 passes at one time, so that a
 *     timer due again at every pass still lets time move. (Passes held for
 *     a wake-up, which count too, are not modelled.)
 *   - run(mode, until, flags): returns STOPPED at once if a stop is pending
 *     for it (the outermost run takes one asked for the next run).
 *     Then, repeatedly: a pending wall-clock step is reported (a stop the
 *     clock-change function asks for ends the run there), a pass runs
 *     at the clocks' readings (callbacks may run nested runs, which move the
 *     clocks under it); a stop requested meanwhile ends the run (STOPPED),
 *     with ONCE a pass that handled something (a fire or the step report)
 *     ends it (PASSED); with until TK_FOREVER or NOWAIT, a pass at
 *     now[MONOTONIC] >= until ends it (TIMED_OUT); NOWAIT ends after the
 *     first pass (PASSED; a non-moving run counts one wake-up); otherwise,
 *     with a finite `until`, a step to `until` follows; a step that finds no
 *     wake-up left before `until` moves the clocks there (a wake-up) for a
 *     last pass, after which the run ends (TIMED_OUT), or ends the run at
 *     once if the pass just made was at or past `until`. A run with until
 *     TK_FOREVER and no NOWAIT would wait for descriptors: not modelled. A
 *     run from a callback
 *     of advance returns -EBUSY; advance from any callback does too.
 *   - A one-shot timer is taken out before its callback runs; inside that
 *     callback, cancel returns 0 (once) and reschedule revives it, while
 *     timer_info and fire see no timer. Once a firing's callback returns
 *     without a revival, the timer is dead, also to callbacks of it still
 *     running (one revived it, and a nested run fired it again). A repeating timer is re-armed before
 *     its callback runs: missed = (now - deadline) / interval and
 *     next = deadline + (missed + 1) * interval, with `now` the clock's
 *     reading at that moment (a nested run may have moved it past the
 *     pass's), both computed exactly (only
 *     `next` is saturated), with a new seq.
 *   - Common modes: the loop's start as the default mode alone. A spec with
 *     TK_TIMER_COMMON puts the timer in them as well as in its `modes` (and
 *     info reports the flag); add_common_modes(m) adds m to them and to
 *     the modes of every scheduled timer whose latest spec had the flag,
 *     changing nothing else (deadline, seq, parked stay), so that a parked
 *     one is put back at the next pass in a mode it now has. A one-shot
 *     inside its callback is not scheduled: a reschedule gives it the
 *     common modes of that moment.
 *   - fire(id): a one-shot is cancelled (its handle goes stale at once, so
 *     inside the callback every call with it returns -ENOENT), then its
 *     callback runs (missed 0); a repeating timer keeps its schedule. The
 *     callback counts as running inside the loop (advance and destroy
 *     return -EBUSY).
 *
 * Handles are never reused (id = index + 1 into an array of every timer ever
 * made), so a stale handle can never alias a new timer. The scheduled ones are
 * also listed in `live` (in no particular order) so that scans stay short.
 */
#ifndef TK_REFERENCE_SCHEDULER_H
#define TK_REFERENCE_SCHEDULER_H

#include "CTimerCore.h"
#include "wide_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The model is the oracle, not the code under test: under libFuzzer its
 * comparisons would only crowd the coverage feedback (and cost most of the
 * time of an execution), so clang leaves it uninstrumented. */
#if defined(__clang__)
#define REF_FN static inline __attribute__((no_sanitize("coverage")))
#else
#define REF_FN static inline
#endif

typedef struct ref_sched ref_sched;

/* Runs nested deeper than this are not modelled: ref_run aborts. */
#define REF_MAX_RUN_DEPTH 64

typedef void (*ref_timer_fn)(ref_sched *ref, uint64_t id, uint64_t missed, void *context);
typedef void (*ref_clock_change_fn)(ref_sched *ref, void *context);

enum ref_state {
    REF_DEAD = 0,      /* cancelled, or a one-shot that fired */
    REF_SCHEDULED = 1, /* pending (possibly parked) */
    REF_FIRING = 2,    /* a one-shot inside its own callback (from a pass) */
};

typedef struct ref_timer {
    int state;
    int parked;
    int deferred;   /* came due while a callback of it ran; waits for it */
    int running;    /* callbacks of it running now */
    tk_clock clock;
    int64_t deadline;
    int64_t interval;
    int64_t leeway;
    int precise;
    int common;     /* its spec had TK_TIMER_COMMON */
    tk_mode_set modes;
    uint64_t seq;
    ref_timer_fn fn;
    void *context;
} ref_timer;

struct ref_sched {
    int64_t now[TK_CLOCK_COUNT];
    uint64_t seq;
    ref_timer *timers; /* every timer ever scheduled; id = index + 1 */
    size_t count, capacity;
    size_t *live;      /* indexes of the timers in REF_SCHEDULED */
    size_t live_count, live_capacity;
    int wall_step_pending;
    /* Stops, held per run as CFRunLoop holds them: stops[d] asks the run at
     * depth d (1 the outermost) to return, stops[0] the next run while none
     * is going. A stop asks the innermost run; a run that returns without
     * taking its own passes it to the run around it (or to the next run). */
    int run_depth;
    unsigned char stops[REF_MAX_RUN_DEPTH + 1];
    int in_callback;   /* callbacks currently running (any depth) */
    int advancing;     /* inside ref_advance */
    ref_clock_change_fn clock_change_fn;
    void *clock_change_context;
    tk_loop_stats stats;
    tk_mode_set common_modes;
};

/* ------------------------------------------------------------------------
 * Saturating arithmetic: exact in 128 bits (wide_int.h), then clamped to
 * int64.
 * ------------------------------------------------------------------------ */

REF_FN int64_t ref_add(int64_t a, int64_t b) {
    return wide_clamp(wide_add(wide_from_i64(a), wide_from_i64(b)));
}

REF_FN int64_t ref_sub(int64_t a, int64_t b) {
    return wide_clamp(wide_sub(wide_from_i64(a), wide_from_i64(b)));
}

/* A repeating timer's re-arm: the grid points it missed, (now - deadline) /
 * interval, and the next one, deadline + (missed + 1) * interval, clamped.
 * Both exact: the lateness is below 2^64, and (missed + 1) * interval, at
 * most lateness + interval, below 2^64 + 2^63, well inside 128 bits.
 * Requires deadline <= now and interval > 0. */
REF_FN int64_t ref_next_on_grid(int64_t deadline, int64_t interval, int64_t now,
                                       uint64_t *missed) {
    wide late = wide_sub(wide_from_i64(now), wide_from_i64(deadline));
    wide skipped = wide_div_u64(late, (uint64_t)interval, NULL);
    *missed = wide_to_u64(skipped);
    wide span = wide_mul_u64(wide_add(skipped, wide_from_u64(1)), (uint64_t)interval);
    return wide_clamp(wide_add(wide_from_i64(deadline), span));
}

/* ------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------ */

REF_FN void ref_init(ref_sched *ref, int64_t start_ns) {
    memset(ref, 0, sizeof *ref);
    for (int c = 0; c < TK_CLOCK_COUNT; c++) ref->now[c] = start_ns;
    ref->common_modes = TK_MODES(TK_MODE_DEFAULT);
}

REF_FN void ref_free(ref_sched *ref) {
    free(ref->timers);
    free(ref->live);
    memset(ref, 0, sizeof *ref);
}

/* What tk_loop_destroy must return: -EBUSY from a callback, else 0. */
REF_FN int ref_destroy_result(const ref_sched *ref) {
    return ref->in_callback ? -EBUSY : 0;
}

REF_FN ref_timer *ref_lookup(ref_sched *ref, uint64_t id) {
    if (id == 0 || id > ref->count) return NULL;
    return &ref->timers[id - 1];
}

/* Sets the state of timer `index`, keeping `live` and stats.pending in step. */
REF_FN void ref_set_state(ref_sched *ref, size_t index, int state) {
    ref_timer *t = &ref->timers[index];
    if (t->state == state) return;
    if (state == REF_SCHEDULED) {
        if (ref->live_count == ref->live_capacity) {
            size_t capacity = ref->live_capacity ? ref->live_capacity * 2 : 64;
            size_t *live = realloc(ref->live, capacity * sizeof *live);
            if (live == NULL) abort();
            ref->live = live;
            ref->live_capacity = capacity;
        }
        ref->live[ref->live_count++] = index;
        ref->stats.pending++;
    } else if (t->state == REF_SCHEDULED) {
        size_t k = 0;
        while (ref->live[k] != index) k++;
        ref->live[k] = ref->live[--ref->live_count];
        ref->stats.pending--;
    }
    t->state = state;
}

/* Validates a spec: 0 or -EINVAL. */
REF_FN int ref_check_spec(const tk_timer_spec *spec) {
    if (spec == NULL) return -EINVAL;
    if ((unsigned)spec->clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (spec->interval_ns < 0 || spec->leeway_ns < 0) return -EINVAL;
    if (spec->modes & TK_MODES_INVALID) return -EINVAL;
    if (spec->flags &
        ~(TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE | TK_TIMER_KEEP_DEADLINE | TK_TIMER_COMMON))
        return -EINVAL;
    if ((spec->flags & TK_TIMER_PRECISE) && spec->leeway_ns != 0) return -EINVAL;
    if (spec->flags & TK_TIMER_KEEP_DEADLINE)
        return (spec->flags & TK_TIMER_ABSOLUTE) || spec->delay_ns != 0 || spec->deadline_ns != 0
                   ? -EINVAL
                   : 0;
    if ((spec->flags & TK_TIMER_ABSOLUTE) ? spec->delay_ns != 0 : spec->deadline_ns != 0)
        return -EINVAL;
    return 0;
}

/* Gives `t` the schedule in `spec` and a fresh sequence number. */
REF_FN void ref_apply_spec(ref_sched *ref, ref_timer *t, const tk_timer_spec *spec) {
    t->clock = spec->clock;
    if (spec->flags & TK_TIMER_ABSOLUTE) {
        t->deadline = spec->deadline_ns;
    } else {
        int64_t delay = spec->delay_ns < 0 ? 0 : spec->delay_ns;
        t->deadline = ref_add(ref->now[spec->clock], delay);
    }
    t->interval = spec->interval_ns;
    t->leeway = spec->leeway_ns;
    if (t->interval > 0 && t->leeway > t->interval / 2) t->leeway = t->interval / 2;
    t->precise = (spec->flags & TK_TIMER_PRECISE) != 0;
    t->modes = spec->modes ? spec->modes : TK_MODES(TK_MODE_DEFAULT);
    t->common = (spec->flags & TK_TIMER_COMMON) != 0;
    if (t->common) t->modes |= ref->common_modes;
    t->seq = ref->seq++;
    t->parked = 0;
    t->deferred = 0;
}

/* ------------------------------------------------------------------------
 * The API, mirroring tk_loop_*
 * ------------------------------------------------------------------------ */

REF_FN int ref_schedule(ref_sched *ref, const tk_timer_spec *spec, ref_timer_fn fn,
                               void *context, uint64_t *id) {
    if (fn == NULL || id == NULL) return -EINVAL;
    int rc = ref_check_spec(spec);
    if (rc) return rc;
    if (spec->flags & TK_TIMER_KEEP_DEADLINE) return -EINVAL; /* no deadline to keep */
    if (ref->count == ref->capacity) {
        size_t capacity = ref->capacity ? ref->capacity * 2 : 64;
        ref_timer *timers = realloc(ref->timers, capacity * sizeof *timers);
        if (timers == NULL) return -ENOMEM;
        ref->timers = timers;
        ref->capacity = capacity;
    }
    ref_timer *t = &ref->timers[ref->count++];
    memset(t, 0, sizeof *t);
    t->state = REF_DEAD;
    t->fn = fn;
    t->context = context;
    ref_apply_spec(ref, t, spec);
    ref_set_state(ref, ref->count - 1, REF_SCHEDULED);
    *id = ref->count;
    return 0;
}

REF_FN int ref_cancel(ref_sched *ref, uint64_t id) {
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state == REF_DEAD) return -ENOENT;
    ref_set_state(ref, id - 1, REF_DEAD);
    return 0;
}

REF_FN int ref_reschedule(ref_sched *ref, uint64_t id, const tk_timer_spec *spec) {
    int rc = ref_check_spec(spec);
    if (rc) return rc;
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state == REF_DEAD) return -ENOENT;
    tk_timer_spec kept;
    if (spec->flags & TK_TIMER_KEEP_DEADLINE) {
        /* The deadline it has, if it has one (not a one-shot in its callback). */
        if (t->state != REF_SCHEDULED) return -ENOENT;
        if (spec->clock != t->clock) return -EINVAL;
        kept = *spec;
        kept.flags = (spec->flags & ~TK_TIMER_KEEP_DEADLINE) | TK_TIMER_ABSOLUTE;
        kept.deadline_ns = t->deadline;
        spec = &kept;
    }
    ref_apply_spec(ref, t, spec);
    ref_set_state(ref, id - 1, REF_SCHEDULED);
    return 0;
}

REF_FN int ref_timer_info(ref_sched *ref, uint64_t id, tk_timer_info *info) {
    if (info == NULL) return -EINVAL;
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state != REF_SCHEDULED) return -ENOENT;
    memset(info, 0, sizeof *info);
    info->clock = t->clock;
    info->deadline_ns = t->deadline;
    info->interval_ns = t->interval;
    info->leeway_ns = t->leeway;
    info->modes = t->modes;
    info->waiting_for_mode = t->parked;
    info->flags = (t->precise ? TK_TIMER_PRECISE : 0) | (t->common ? TK_TIMER_COMMON : 0);
    return 0;
}

REF_FN int ref_add_common_modes(ref_sched *ref, tk_mode_set modes) {
    if (modes & TK_MODES_INVALID) return -EINVAL;
    ref->common_modes |= modes;
    for (size_t i = 0; i < ref->live_count; i++) {
        ref_timer *t = &ref->timers[ref->live[i]];
        if (t->common) t->modes |= modes;
    }
    return 0;
}

REF_FN void ref_run_callback(ref_sched *ref, uint64_t id, uint64_t missed) {
    ref_timer *t = &ref->timers[id - 1];
    ref_timer_fn fn = t->fn;
    void *context = t->context;
    ref->stats.fired++;
    ref->in_callback++;
    t->running++;
    fn(ref, id, missed, context); /* may move ref->timers */
    t = &ref->timers[id - 1];
    ref->in_callback--;
    if (--t->running == 0 && t->deferred && t->state == REF_SCHEDULED) {
        t->deferred = 0;
        t->seq = ref->seq++;
    }
}

REF_FN int ref_fire(ref_sched *ref, uint64_t id) {
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state != REF_SCHEDULED) return -ENOENT;
    if (t->interval == 0) ref_set_state(ref, id - 1, REF_DEAD); /* cancelled first */
    ref_run_callback(ref, id, 0);
    return 0;
}

/* tk_loop_reserve: only the arguments can be wrong. */
REF_FN int ref_reserve(const ref_sched *ref, tk_clock clock, uint32_t timers) {
    (void)ref;
    (void)timers;
    return (unsigned)clock >= TK_CLOCK_COUNT ? -EINVAL : 0;
}

REF_FN int ref_now(const ref_sched *ref, tk_clock clock, int64_t *now_ns) {
    if (now_ns == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    *now_ns = ref->now[clock];
    return 0;
}

REF_FN int ref_set_manual_time(ref_sched *ref, tk_clock clock, int64_t now_ns) {
    if ((unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (clock == TK_CLOCK_REALTIME) {
        if (now_ns != ref->now[clock]) ref->wall_step_pending = 1;
    } else if (now_ns < ref->now[clock]) {
        return -EINVAL;
    }
    ref->now[clock] = now_ns;
    return 0;
}

REF_FN void ref_set_clock_change_handler(ref_sched *ref, ref_clock_change_fn fn,
                                                void *context) {
    ref->clock_change_fn = fn;
    ref->clock_change_context = fn ? context : NULL;
}

REF_FN int ref_get_stats(const ref_sched *ref, tk_loop_stats *stats) {
    if (stats == NULL) return -EINVAL;
    *stats = ref->stats;
    return 0;
}

/* Moves all three clocks forward by `delta` (>= 0), saturating. */
REF_FN void ref_move_clocks(ref_sched *ref, int64_t delta) {
    for (int c = 0; c < TK_CLOCK_COUNT; c++) ref->now[c] = ref_add(ref->now[c], delta);
}

/* Does `a` come before `b` in its clock's order (deadline, then seq)? */
REF_FN int ref_before(const ref_timer *a, const ref_timer *b) {
    if (a->deadline != b->deadline) return a->deadline < b->deadline;
    return a->seq < b->seq;
}

/* Puts the parked timers of the modes in `bit` back among the pending ones. */
REF_FN void ref_unpark(ref_sched *ref, tk_mode_set bit) {
    for (size_t k = 0; k < ref->live_count; k++) {
        ref_timer *t = &ref->timers[ref->live[k]];
        if (t->parked && (t->modes & bit)) t->parked = 0;
    }
}

/* One pass at the clock readings `now`; returns the number of callbacks run.
 * With `stoppable`, ends after the callback during which a stop is requested. */
REF_FN int64_t ref_pass(ref_sched *ref, unsigned mode, const int64_t now[TK_CLOCK_COUNT],
                               int stoppable) {
    tk_mode_set bit = TK_MODES(mode);
    ref_unpark(ref, bit);
    uint64_t pass_seq = ref->seq;
    int64_t fired = 0;
    for (;;) {
        /* Each clock's earliest pending (unparked, undeferred) timer older
         * than the pass. */
        size_t first[TK_CLOCK_COUNT] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
        for (size_t k = 0; k < ref->live_count; k++) {
            size_t i = ref->live[k];
            ref_timer *t = &ref->timers[i];
            if (t->parked || t->deferred || t->seq >= pass_seq) continue;
            if (first[t->clock] == SIZE_MAX || ref_before(t, &ref->timers[first[t->clock]]))
                first[t->clock] = i;
        }
        /* The most overdue of those that are due. */
        size_t best = SIZE_MAX;
        int64_t best_late = 0;
        for (int c = 0; c < TK_CLOCK_COUNT; c++) {
            if (first[c] == SIZE_MAX) continue;
            ref_timer *t = &ref->timers[first[c]];
            if (t->deadline == INT64_MAX || t->deadline > now[c]) continue;
            int64_t late = ref_sub(now[c], t->deadline);
            if (best == SIZE_MAX || late > best_late ||
                (late == best_late && t->seq < ref->timers[best].seq)) {
                best = first[c];
                best_late = late;
            }
        }
        if (best == SIZE_MAX) break;
        ref_timer *t = &ref->timers[best];
        if (t->running > 0) {
            t->deferred = 1;
            continue;
        }
        if (!(t->modes & bit)) {
            t->parked = 1;
            continue;
        }
        uint64_t missed = 0;
        if (t->interval == 0) {
            ref_set_state(ref, best, REF_FIRING);
        } else {
            /* On the grid at the clock's reading now: a nested run from an
             * earlier callback may have moved it past the pass's `now`. */
            int64_t at = ref->now[t->clock] > now[t->clock] ? ref->now[t->clock] : now[t->clock];
            t->deadline = ref_next_on_grid(t->deadline, t->interval, at, &missed);
            t->seq = ref->seq++;
        }
        fired++;
        ref_run_callback(ref, best + 1, missed);
        if (ref->timers[best].state == REF_FIRING) ref_set_state(ref, best, REF_DEAD);
        /* A nested run in another mode may have parked some. */
        ref_unpark(ref, bit);
        if (stoppable && ref->stops[ref->run_depth]) break;
    }
    return fired;
}

/* A step after a pass (see the rules above), the clocks moving at most
 * `left`: 1 if they moved to a wake-up target, 0 if they moved by `left`
 * (nothing if `left` <= 0). `*moved` is how far they moved. */
/* The steps in a row that moved the clocks by nothing, and the monotonic
 * and boot readings they were made at. */
typedef struct ref_same_time {
    int passes;
    int64_t monotonic, boot;
} ref_same_time;

REF_FN ref_same_time ref_same_time_at(const ref_sched *ref) {
    ref_same_time same_time = {0, ref->now[TK_CLOCK_MONOTONIC], ref->now[TK_CLOCK_BOOTTIME]};
    return same_time;
}

REF_FN int ref_step_within(ref_sched *ref, unsigned mode, int64_t left, ref_same_time *same_time,
                           int64_t *moved) {
    tk_mode_set bit = TK_MODES(mode);
    ref_same_time now_at = ref_same_time_at(ref);
    int moved_by_callback = now_at.monotonic != same_time->monotonic || now_at.boot != same_time->boot;
    if (moved_by_callback) *same_time = now_at;
    int later = same_time->passes >= 64;
    int have_target = 0;
    int64_t target = 0;
    for (size_t k = 0; k < ref->live_count; k++) {
        ref_timer *t = &ref->timers[ref->live[k]];
        if (!(t->modes & bit) || t->deferred) continue;
        int64_t v = 0; /* parked: due at once */
        if (t->parked && later) continue;
        if (!t->parked) {
            int64_t at = ref_add(t->deadline, t->leeway);
            if (at == INT64_MAX) continue;
            int64_t now = ref->now[t->clock];
            /* Further than INT64_MAX ns, the longest span: none. Exactly
             * that far is a target (a span of INT64_MAX reaches it). */
            if (at > now && (uint64_t)at - (uint64_t)now > (uint64_t)INT64_MAX) continue;
            v = ref_sub(at, now);
            if (later && v <= 0) continue;
        }
        if (!have_target || v < target) target = v;
        have_target = 1;
    }
    int woke = have_target && target <= left;
    if (woke) {
        *moved = target > 0 ? target : 0;
        ref->stats.wakeups++;
    } else {
        *moved = left > 0 ? left : 0;
    }
    ref_move_clocks(ref, *moved);
    if (*moved > 0) {
        *same_time = ref_same_time_at(ref);
    } else if (!moved_by_callback) {
        same_time->passes++; /* else the next pass is the first at this time */
    }
    return woke;
}

/* A step of a run: the clocks may move until the monotonic one reads `end`. */
REF_FN int ref_step(ref_sched *ref, unsigned mode, int64_t end, ref_same_time *same_time) {
    for (;;) {
        /* A span longer than INT64_MAX ns is stepped in two. */
        int64_t now = ref->now[TK_CLOCK_MONOTONIC];
        int longer = end > now && (uint64_t)end - (uint64_t)now > (uint64_t)INT64_MAX;
        int64_t moved;
        int woke = ref_step_within(ref, mode, ref_sub(end, now), same_time, &moved);
        if (woke || !longer) return woke;
    }
}

/* Reports a pending wall-clock step. */
REF_FN void ref_report_wall_step(ref_sched *ref) {
    ref->wall_step_pending = 0;
    ref->stats.clock_changes++;
    if (ref->clock_change_fn) {
        ref->in_callback++;
        ref->clock_change_fn(ref, ref->clock_change_context);
        ref->in_callback--;
    }
}

REF_FN int64_t ref_advance(ref_sched *ref, unsigned mode, int64_t delta_ns) {
    if (ref->in_callback) return -EBUSY;
    if (mode >= TK_MODE_COUNT || delta_ns < 0) return -EINVAL;
    int64_t left = delta_ns;
    int64_t before = ref->now[TK_CLOCK_MONOTONIC];
    ref->advancing++;
    if (ref->wall_step_pending) ref_report_wall_step(ref);
    int64_t fired = 0;
    ref_same_time same_time = ref_same_time_at(ref);
    int more;
    do {
        fired += ref_pass(ref, mode, ref->now, 0);
        left = ref_sub(left, ref_sub(ref->now[TK_CLOCK_MONOTONIC], before));
        int64_t moved;
        more = ref_step_within(ref, mode, left, &same_time, &moved);
        left -= moved;
        before = ref->now[TK_CLOCK_MONOTONIC];
    } while (more);
    ref->advancing--;
    return fired;
}

/* tk_loop_stop: the innermost run returns after its current callback, or
 * the next run at once. */
REF_FN int ref_stop(ref_sched *ref) {
    ref->stops[ref->run_depth] = 1;
    return 0;
}

/* Whether the innermost run has a stop to take, and takes it. */
REF_FN int ref_take_stop(ref_sched *ref) {
    if (!ref->stops[ref->run_depth]) return 0;
    ref->stops[ref->run_depth] = 0;
    return 1;
}

/* tk_loop_run on a manual loop with no descriptors watched; see the rules
 * above. Returns -EDEADLK for a run that would wait forever (until
 * TK_FOREVER without TK_RUN_NOWAIT), which the model does not cover. */
REF_FN int ref_run_passes(ref_sched *ref, unsigned mode, int64_t until_ns, uint32_t flags);

REF_FN int ref_run(ref_sched *ref, unsigned mode, int64_t until_ns, uint32_t flags) {
    if (mode >= TK_MODE_COUNT || (flags & ~(TK_RUN_ONCE | TK_RUN_NOWAIT))) return -EINVAL;
    if (ref->advancing) return -EBUSY;
    if (until_ns == TK_FOREVER && !(flags & TK_RUN_NOWAIT)) return -EDEADLK;
    if (ref->run_depth == REF_MAX_RUN_DEPTH) abort();
    /* The run begins with a stop of its own only if it is the outermost
     * and one was asked for the next run. */
    int depth = ++ref->run_depth;
    ref->stops[depth] = depth == 1 && ref->stops[0];
    if (depth == 1) ref->stops[0] = 0;
    int result = ref_run_passes(ref, mode, until_ns, flags);
    if (ref->stops[depth]) ref->stops[depth - 1] = 1; /* not taken: passed on */
    ref->stops[depth] = 0;
    ref->run_depth--;
    return result;
}

REF_FN int ref_run_passes(ref_sched *ref, unsigned mode, int64_t until_ns, uint32_t flags) {
    int moves_time = until_ns != TK_FOREVER;
    int at_deadline = 0;
    int waited = 0;
    ref_same_time same_time = ref_same_time_at(ref);
    int64_t handled = 0;
    for (;;) {
        if (ref_take_stop(ref)) return TK_RUN_STOPPED;
        if ((flags & TK_RUN_NOWAIT) && waited) return TK_RUN_PASSED;
        if (ref->wall_step_pending) {
            ref_report_wall_step(ref);
            handled++;
            if (ref_take_stop(ref)) return TK_RUN_STOPPED;
        }
        int64_t now[TK_CLOCK_COUNT];
        memcpy(now, ref->now, sizeof now);
        handled += ref_pass(ref, mode, now, 1);
        if (ref_take_stop(ref)) return TK_RUN_STOPPED;
        if ((flags & TK_RUN_ONCE) && handled > 0) return TK_RUN_PASSED;
        if (at_deadline ||
            (now[TK_CLOCK_MONOTONIC] >= until_ns && (!moves_time || (flags & TK_RUN_NOWAIT))))
            return TK_RUN_TIMED_OUT;
        waited = 1;
        if (!moves_time) {
            ref->stats.wakeups++; /* the wait that did not wait */
        } else if (!(flags & TK_RUN_NOWAIT)) {
            if (!ref_step(ref, mode, until_ns, &same_time)) {
                if (now[TK_CLOCK_MONOTONIC] >= until_ns) return TK_RUN_TIMED_OUT;
                ref->stats.wakeups++; /* woken by the deadline, for a last pass */
                at_deadline = 1;
            }
        }
    }
}

#endif /* TK_REFERENCE_SCHEDULER_H */
