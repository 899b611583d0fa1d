/*
 * A reference model of a manual TimerKit loop, for tests: the same timer
 * semantics as tk_loop_create_manual + tk_loop_advance, written as plainly as
 * possible (linear scans, no heap) so that it is easy to check by reading.
 * Header-only; every function is static inline.
 *
 * The rules, in one place:
 *   - Three clocks, all starting at `start_ns`. A global sequence counter
 *     gives every new deadline (schedule, reschedule, a repeating timer's
 *     re-arm) a fresh number; equal deadlines fire in sequence order.
 *     Times that would overflow saturate (INT64_MIN / INT64_MAX).
 *   - schedule: relative deadline = now[clock] + max(0, deadline_ns);
 *     absolute deadlines are taken as given. A repeating timer's leeway is
 *     clamped to interval / 2. A deadline of INT64_MAX never comes.
 *   - advance(mode, delta): end = now[MONOTONIC] + delta. A pending
 *     wall-clock step is reported first. Then passes. A pass first puts the
 *     parked timers of `mode` back among the pending ones (deadline and seq
 *     unchanged). Then, repeatedly: each clock offers its earliest pending
 *     timer by (deadline, seq), if that timer is due (deadline <= now[clock])
 *     and got its seq before the pass began; a clock whose earliest timer is
 *     not due, or is new in this pass, offers nothing more in this pass. The
 *     most overdue offer (now - deadline, largest first; then smaller seq) is
 *     taken: it fires if `mode` is one of its modes and is parked otherwise.
 *     After the pass, the wake-up target is the least
 *     (deadline + leeway - now[clock]) among the unparked timers of `mode`
 *     (a target that saturates at INT64_MAX never comes); if there is none
 *     or it is further away than end - now[MONOTONIC] (how far the clocks
 *     may still move), the clocks jump to `end` and advance returns;
 *     else the clocks move to the target (stats.wakeups++), another pass runs.
 *   - A one-shot timer is taken out before its callback runs; inside that
 *     callback, cancel returns 0 (once) and reschedule revives it, while
 *     timer_info and fire see no timer. A repeating timer is re-armed before
 *     its callback runs: missed = (now - deadline) / interval and
 *     next = deadline + (missed + 1) * interval, both computed exactly (only
 *     `next` is saturated), with a new seq.
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

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_sched ref_sched;

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
    tk_clock clock;
    int64_t deadline;
    int64_t interval;
    int64_t leeway;
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
    int in_callback;   /* callbacks currently running (any depth) */
    ref_clock_change_fn clock_change_fn;
    void *clock_change_context;
    tk_loop_stats stats;
};

/* ------------------------------------------------------------------------
 * Saturating arithmetic: exact in 128 bits, then clamped to int64.
 * ------------------------------------------------------------------------ */

static inline int64_t ref_clamp(__int128 v) {
    if (v > INT64_MAX) return INT64_MAX;
    if (v < INT64_MIN) return INT64_MIN;
    return (int64_t)v;
}

static inline int64_t ref_add(int64_t a, int64_t b) { return ref_clamp((__int128)a + b); }
static inline int64_t ref_sub(int64_t a, int64_t b) { return ref_clamp((__int128)a - b); }

/* ------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------ */

static inline void ref_init(ref_sched *ref, int64_t start_ns) {
    memset(ref, 0, sizeof *ref);
    for (int c = 0; c < TK_CLOCK_COUNT; c++) ref->now[c] = start_ns;
}

static inline void ref_free(ref_sched *ref) {
    free(ref->timers);
    free(ref->live);
    memset(ref, 0, sizeof *ref);
}

/* What tk_loop_destroy must return: -EBUSY from a callback, else 0. */
static inline int ref_destroy_result(const ref_sched *ref) {
    return ref->in_callback ? -EBUSY : 0;
}

static inline ref_timer *ref_lookup(ref_sched *ref, uint64_t id) {
    if (id == 0 || id > ref->count) return NULL;
    return &ref->timers[id - 1];
}

/* Sets the state of timer `index`, keeping `live` and stats.pending in step. */
static inline void ref_set_state(ref_sched *ref, size_t index, int state) {
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
static inline int ref_check_spec(const tk_timer_spec *spec) {
    if (spec == NULL) return -EINVAL;
    if ((unsigned)spec->clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (spec->interval_ns < 0 || spec->leeway_ns < 0) return -EINVAL;
    if (spec->modes == 0) return -EINVAL;
    if (spec->flags & ~TK_TIMER_ABSOLUTE) return -EINVAL;
    return 0;
}

/* Gives `t` the schedule in `spec` and a fresh sequence number. */
static inline void ref_apply_spec(ref_sched *ref, ref_timer *t, const tk_timer_spec *spec) {
    t->clock = spec->clock;
    if (spec->flags & TK_TIMER_ABSOLUTE) {
        t->deadline = spec->deadline_ns;
    } else {
        int64_t delay = spec->deadline_ns < 0 ? 0 : spec->deadline_ns;
        t->deadline = ref_add(ref->now[spec->clock], delay);
    }
    t->interval = spec->interval_ns;
    t->leeway = spec->leeway_ns;
    if (t->interval > 0 && t->leeway > t->interval / 2) t->leeway = t->interval / 2;
    t->modes = spec->modes;
    t->seq = ref->seq++;
    t->parked = 0;
}

/* ------------------------------------------------------------------------
 * The API, mirroring tk_loop_*
 * ------------------------------------------------------------------------ */

static inline int ref_schedule(ref_sched *ref, const tk_timer_spec *spec, ref_timer_fn fn,
                               void *context, uint64_t *id) {
    if (fn == NULL || id == NULL) return -EINVAL;
    int rc = ref_check_spec(spec);
    if (rc) return rc;
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

static inline int ref_cancel(ref_sched *ref, uint64_t id) {
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state == REF_DEAD) return -ENOENT;
    ref_set_state(ref, id - 1, REF_DEAD);
    return 0;
}

static inline int ref_reschedule(ref_sched *ref, uint64_t id, const tk_timer_spec *spec) {
    int rc = ref_check_spec(spec);
    if (rc) return rc;
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state == REF_DEAD) return -ENOENT;
    ref_apply_spec(ref, t, spec);
    ref_set_state(ref, id - 1, REF_SCHEDULED);
    return 0;
}

static inline int ref_timer_info(ref_sched *ref, uint64_t id, tk_timer_info *info) {
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
    return 0;
}

static inline void ref_run_callback(ref_sched *ref, uint64_t id, uint64_t missed) {
    ref_timer *t = &ref->timers[id - 1];
    ref_timer_fn fn = t->fn;
    void *context = t->context;
    ref->stats.fired++;
    ref->in_callback++;
    fn(ref, id, missed, context); /* may move ref->timers */
    ref->in_callback--;
}

static inline int ref_fire(ref_sched *ref, uint64_t id) {
    ref_timer *t = ref_lookup(ref, id);
    if (t == NULL || t->state != REF_SCHEDULED) return -ENOENT;
    if (t->interval == 0) ref_set_state(ref, id - 1, REF_DEAD); /* cancelled first */
    ref_run_callback(ref, id, 0);
    return 0;
}

/* tk_loop_reserve: only the arguments can be wrong. */
static inline int ref_reserve(const ref_sched *ref, tk_clock clock, uint32_t timers) {
    (void)ref;
    (void)timers;
    return (unsigned)clock >= TK_CLOCK_COUNT ? -EINVAL : 0;
}

static inline int ref_now(const ref_sched *ref, tk_clock clock, int64_t *now_ns) {
    if (now_ns == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    *now_ns = ref->now[clock];
    return 0;
}

static inline int ref_set_manual_time(ref_sched *ref, tk_clock clock, int64_t now_ns) {
    if ((unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (clock == TK_CLOCK_REALTIME) {
        if (now_ns != ref->now[clock]) ref->wall_step_pending = 1;
    } else if (now_ns < ref->now[clock]) {
        return -EINVAL;
    }
    ref->now[clock] = now_ns;
    return 0;
}

static inline void ref_set_clock_change_handler(ref_sched *ref, ref_clock_change_fn fn,
                                                void *context) {
    ref->clock_change_fn = fn;
    ref->clock_change_context = fn ? context : NULL;
}

static inline int ref_get_stats(const ref_sched *ref, tk_loop_stats *stats) {
    if (stats == NULL) return -EINVAL;
    *stats = ref->stats;
    return 0;
}

/* Moves all three clocks forward by `delta` (>= 0), saturating. */
static inline void ref_move_clocks(ref_sched *ref, int64_t delta) {
    for (int c = 0; c < TK_CLOCK_COUNT; c++) ref->now[c] = ref_add(ref->now[c], delta);
}

/* Does `a` come before `b` in its clock's order (deadline, then seq)? */
static inline int ref_before(const ref_timer *a, const ref_timer *b) {
    if (a->deadline != b->deadline) return a->deadline < b->deadline;
    return a->seq < b->seq;
}

/* One pass; returns the number of callbacks run. */
static inline int64_t ref_pass(ref_sched *ref, unsigned mode) {
    tk_mode_set bit = TK_MODES(mode);
    for (size_t k = 0; k < ref->live_count; k++) {
        ref_timer *t = &ref->timers[ref->live[k]];
        if (t->parked && (t->modes & bit)) t->parked = 0;
    }
    uint64_t pass_seq = ref->seq;
    int64_t fired = 0;
    for (;;) {
        /* Each clock's earliest pending (unparked) timer. */
        size_t first[TK_CLOCK_COUNT] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
        for (size_t k = 0; k < ref->live_count; k++) {
            size_t i = ref->live[k];
            ref_timer *t = &ref->timers[i];
            if (t->parked) continue;
            if (first[t->clock] == SIZE_MAX || ref_before(t, &ref->timers[first[t->clock]]))
                first[t->clock] = i;
        }
        /* The most overdue of those that are due and older than the pass. */
        size_t best = SIZE_MAX;
        int64_t best_late = 0;
        for (int c = 0; c < TK_CLOCK_COUNT; c++) {
            if (first[c] == SIZE_MAX) continue;
            ref_timer *t = &ref->timers[first[c]];
            if (t->deadline == INT64_MAX || t->deadline > ref->now[c]) continue;
            if (t->seq >= pass_seq) continue;
            int64_t late = ref_sub(ref->now[c], t->deadline);
            if (best == SIZE_MAX || late > best_late ||
                (late == best_late && t->seq < ref->timers[best].seq)) {
                best = first[c];
                best_late = late;
            }
        }
        if (best == SIZE_MAX) break;
        ref_timer *t = &ref->timers[best];
        if (!(t->modes & bit)) {
            t->parked = 1;
            continue;
        }
        uint64_t missed = 0;
        if (t->interval == 0) {
            ref_set_state(ref, best, REF_FIRING);
        } else {
            /* Exact: `late` < 2^64, and (missed + 1) * interval < late +
             * interval < 2^65, so nothing here overflows 128 bits. */
            __int128 late = (__int128)ref->now[t->clock] - t->deadline; /* >= 0 */
            missed = (uint64_t)(late / t->interval);
            t->deadline = ref_clamp((__int128)t->deadline + ((__int128)missed + 1) * t->interval);
            t->seq = ref->seq++;
        }
        fired++;
        ref_run_callback(ref, best + 1, missed);
        if (ref->timers[best].state == REF_FIRING) ref_set_state(ref, best, REF_DEAD);
    }
    return fired;
}

static inline int64_t ref_advance(ref_sched *ref, unsigned mode, int64_t delta_ns) {
    if (ref->in_callback) return -EBUSY;
    if (mode >= TK_MODE_COUNT || delta_ns < 0) return -EINVAL;
    int64_t end = ref_add(ref->now[TK_CLOCK_MONOTONIC], delta_ns);
    if (ref->wall_step_pending) {
        ref->wall_step_pending = 0;
        ref->stats.clock_changes++;
        if (ref->clock_change_fn) {
            ref->in_callback++;
            ref->clock_change_fn(ref, ref->clock_change_context);
            ref->in_callback--;
        }
    }
    int64_t fired = 0;
    tk_mode_set bit = TK_MODES(mode);
    for (;;) {
        fired += ref_pass(ref, mode);
        int have_target = 0;
        int64_t target = 0;
        for (size_t k = 0; k < ref->live_count; k++) {
            ref_timer *t = &ref->timers[ref->live[k]];
            if (t->parked || !(t->modes & bit)) continue;
            int64_t at = ref_add(t->deadline, t->leeway);
            if (at == INT64_MAX) continue;
            int64_t v = ref_sub(at, ref->now[t->clock]);
            if (v == INT64_MAX) continue;
            if (!have_target || v < target) target = v;
            have_target = 1;
        }
        /* How far the clocks may still move together (end >= mono). */
        int64_t left = end - ref->now[TK_CLOCK_MONOTONIC];
        if (!have_target || target > left) {
            ref_move_clocks(ref, left);
            return fired;
        }
        ref_move_clocks(ref, target > 0 ? target : 0);
        ref->stats.wakeups++;
    }
}

#endif /* TK_REFERENCE_SCHEDULER_H */
