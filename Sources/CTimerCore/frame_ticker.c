/*
 * Frame tickers: one callback per frame on a fixed grid of the monotonic
 * clock (see "Frame tickers" in CTimerCore.h).
 *
 * A ticker owns one one-shot timer of its loop, absolute and without leeway,
 * which it re-arms after every frame for the first grid point still ahead.
 * Re-arming after the callback, rather than letting a repeating timer run,
 * is what makes a late or long frame wait for the grid instead of firing
 * at once, and what keeps a callback from being re-entered by a nested run.
 *
 * The timer's context is the ticker itself, not the caller's context, so
 * the loop routes its release here (timers.c): the ticker is freed, and the
 * caller's context handed to the release handler, once the loop lets go of
 * the timer after tk_frame_ticker_destroy.
 *
 * State lives under the ticker's own lock, taken before the loop's (never
 * the other way round), and never held while the caller's callback runs or
 * while the loop may release the timer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "clock.h"
#include "frame_ticker.h"
#include "loop_internal.h"

#include <errno.h>
#include <float.h>
#include <pthread.h>
#include <stdlib.h>

/* How much grid time the adaptation looks at before it decides. */
#define WINDOW_NS INT64_C(1000000000)
/* The slowest rate a range may name, in frames per second. */
#define TK__MIN_RATE 1e-6

/* What a change of rate, pause or resume rewrites, kept apart so that a
 * change the loop refuses can be undone as a whole. */
typedef struct frame_grid {
    /* The rate: period = step * base, with step in [1, slowest_step]. */
    double maximum;
    int64_t base;
    int64_t step;
    int64_t preferred_step;
    int64_t slowest_step;
    uint32_t changes; /* counts restarts of the grid */

    /* The grid: anchor + k * period. */
    int64_t anchor;
    int64_t next; /* the next frame's grid time */
    int64_t last; /* the previous frame's grid time (next - period after a restart) */

    /* The adaptation window. */
    int64_t window_start;
    uint32_t window_frames;
    uint32_t window_dropped;
    int64_t window_longest;

    uint8_t paused;
} frame_grid;

struct tk_frame_ticker {
    pthread_mutex_t lock;
    tk_loop *loop;
    tk_frame_fn fn;
    void *context;
    tk_timer_id timer; /* TK_TIMER_NONE once the loop let go of it */
    tk_mode_set modes;
    uint8_t common; /* in the loop's common modes too (TK_FRAME_COMMON) */
    frame_grid grid;
    uint64_t frames;
    int64_t latest_timestamp; /* the latest frame's timestamp (once frames > 0) */
    uint64_t dropped;
    int error;
    uint8_t destroyed;
    uint8_t in_callback;
    /* On the loop's stopped_tickers list (under the loop's lock) once an
     * error made the loop let go of the timer. */
    struct tk_frame_ticker *next_stopped;
    struct tk_frame_ticker **prev_stopped;
};

/* ---- Rates and the grid --------------------------------------------------- */

/* A rate the grid can hold: from one frame in 11.6 days to one a
 * nanosecond. (NaN fails both comparisons.) */
static int valid_rate(double rate) {
    return rate >= TK__MIN_RATE && rate <= 1e9;
}

/* Checks `range` and sets `grid`'s rate from it, at the preferred rate.
 * 0, or -EINVAL with `grid` untouched. The bounds keep every conversion
 * below in range: max / min <= 1e15, and base * step <= 1e9 / min. */
static int set_ladder(frame_grid *grid, tk_frame_rate_range range) {
    if (!valid_rate(range.minimum) || !valid_rate(range.maximum) ||
        range.minimum > range.maximum) {
        return -EINVAL;
    }
    double preferred = range.preferred == 0 ? range.maximum : range.preferred;
    if (!valid_rate(preferred) || preferred < range.minimum || preferred > range.maximum) {
        return -EINVAL;
    }
    /* Rates maximum / k >= minimum (k <= 1e15 by the bounds). The slack, a
     * few units in the last place, absorbs the rounding of a ratio that is a
     * whole number (0.3 / 0.1 is 2.9999999999999996): a minimum within that
     * of a rung counts as that rung, which is less than one rung even at
     * k = 1e15. (A slack of 1e-12 relative to k was whole rungs below the
     * minimum once k passed 1e12.) */
    int64_t slowest_step = (int64_t)(range.maximum / range.minimum * (1 + 4 * DBL_EPSILON));
    if (slowest_step < 1) slowest_step = 1;
    /* The rung nearest the preferred rate, by rate: k or k + 1 around
     * maximum / preferred. */
    int64_t below = (int64_t)(range.maximum / preferred);
    if (below < 1) below = 1;
    int64_t step = below;
    if (below + 1 <= slowest_step) {
        double slower = range.maximum / (double)(below + 1);
        double faster = range.maximum / (double)below;
        if (preferred - slower < faster - preferred) step = below + 1;
    }
    grid->maximum = range.maximum;
    grid->base = (int64_t)(1e9 / range.maximum + 0.5);
    if (grid->base < 1) grid->base = 1;
    grid->slowest_step = slowest_step;
    grid->preferred_step = step > slowest_step ? slowest_step : step;
    grid->step = grid->preferred_step;
    return 0;
}

static int64_t period_of(const frame_grid *grid) {
    /* <= 1e9 / minimum rate = 1e15 (see set_ladder). */
    return grid->base * grid->step;
}

/*
 * The grid arithmetic is done on unsigned differences: anchors and times may
 * be negative (a manual loop may start there) and far apart, and every
 * result that is returned lies between two int64_t values.
 */

/* The first grid point after `time`; INT64_MAX if it lies beyond. */
static int64_t grid_after(const frame_grid *grid, int64_t time) {
    if (time < grid->anchor) return grid->anchor;
    uint64_t period = (uint64_t)period_of(grid);
    uint64_t since = (uint64_t)time - (uint64_t)grid->anchor;
    /* Points from the anchor to `time`; the one after is at most `room`
     * periods on. (With a 1 ns period, `since / period + 1` wraps to 0.) */
    uint64_t steps = since / period;
    uint64_t room = ((uint64_t)INT64_MAX - (uint64_t)grid->anchor) / period;
    if (steps >= room) return INT64_MAX;
    return (int64_t)((uint64_t)grid->anchor + (steps + 1) * period);
}

/* The latest grid point at or before `time` (the anchor, if none). */
static int64_t grid_at_or_before(const frame_grid *grid, int64_t time) {
    if (time <= grid->anchor) return grid->anchor;
    uint64_t period = (uint64_t)period_of(grid);
    uint64_t since = (uint64_t)time - (uint64_t)grid->anchor;
    return (int64_t)((uint64_t)grid->anchor + since / period * period);
}

/* Starts the grid at `anchor`, with its first frame the first point after
 * `now`; nothing of the time before counts as dropped. */
static void restart_grid(frame_grid *grid, int64_t anchor, int64_t now) {
    grid->changes++;
    grid->anchor = anchor;
    grid->next = grid_after(grid, now);
    grid->last = tk__sub_sat(grid->next, period_of(grid));
    grid->window_start = grid->last;
    grid->window_frames = 0;
    grid->window_dropped = 0;
    grid->window_longest = 0;
}

/* After a window of frames, steps the rate if the window asks for it. A new
 * rate starts its grid at `timestamp`, the frame just delivered. */
static void adapt(frame_grid *grid, int64_t timestamp) {
    if (tk__sub_sat(timestamp, grid->window_start) < WINDOW_NS) return;
    uint64_t points = (uint64_t)grid->window_frames + grid->window_dropped;
    int64_t step = grid->step;
    if ((uint64_t)grid->window_dropped * 10 > points && step < grid->slowest_step) {
        step++;
    } else if (grid->window_dropped == 0 && step > grid->preferred_step &&
               grid->window_longest <= grid->base * (step - 1) / 2) {
        step--;
    }
    grid->window_start = timestamp;
    grid->window_frames = 0;
    grid->window_dropped = 0;
    grid->window_longest = 0;
    if (step != grid->step) {
        grid->step = step;
        grid->anchor = timestamp;
    }
}

static int64_t now_of(tk_loop *loop) {
    int64_t now = 0;
    (void)tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now); /* cannot fail: arguments checked */
    return now;
}

/* ---- Arming ------------------------------------------------------------- */

static tk_timer_spec spec_for(int64_t deadline, tk_mode_set modes, int common) {
    tk_timer_spec spec = {
        .clock = TK_CLOCK_MONOTONIC,
        .deadline_ns = deadline,
        .interval_ns = 0,
        .leeway_ns = 0,
        .modes = modes,
        .flags = TK_TIMER_ABSOLUTE | (common ? TK_TIMER_COMMON : 0),
    };
    return spec;
}

/*
 * Re-arms the timer for the next frame (for "never" while paused), in
 * `modes`. While a callback of the ticker runs, or while the loop is about
 * to start one (the timer then looks fired to other threads: -ENOENT), the
 * trampoline re-arms it from the state it finds, so nothing is done now.
 * Lock held.
 */
static int rearm(tk_frame_ticker *ticker, tk_mode_set modes) {
    if (ticker->in_callback) return 0;
    tk_timer_spec spec =
        spec_for(ticker->grid.paused ? INT64_MAX : ticker->grid.next, modes, ticker->common);
    int result = tk__timers_rearm_ticker(ticker->loop, ticker->timer, &spec);
    return result == -ENOENT ? 0 : result;
}

/* ---- The frame ------------------------------------------------------------ */

void tk__frame_ticker_fire(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer;
    (void)missed; /* a one-shot timer: always 0 */
    tk_frame_ticker *ticker = context;
    frame_grid *grid = &ticker->grid;
    pthread_mutex_lock(&ticker->lock);
    if (ticker->destroyed) {
        /* Not re-armed: the one-shot ends and the loop releases the ticker. */
        pthread_mutex_unlock(&ticker->lock);
        return;
    }
    int64_t now = now_of(loop);
    /* INT64_MAX never comes: it stands for a grid point past the end of
     * time (a tk_loop_fire through the timer's handle gets here with the
     * clock at INT64_MAX). */
    if (grid->paused || grid->next == INT64_MAX || now < grid->next) {
        /* Armed before a change that came while the loop picked the timer. */
        int result = rearm(ticker, ticker->modes);
        if (result < 0) ticker->error = result;
        pthread_mutex_unlock(&ticker->lock);
        return;
    }
    int64_t timestamp = grid_at_or_before(grid, now);
    /* `last` is a period or more before `timestamp`, which is at or past
     * `next`; a guard all the same, so that a slip can never wrap. */
    uint64_t periods = timestamp > grid->last ? ((uint64_t)timestamp - (uint64_t)grid->last) /
                                                    (uint64_t)period_of(grid)
                                              : 0;
    uint64_t dropped = periods > 0 ? periods - 1 : 0;
    /* The adaptation decides before the frame, on the frames before it, so
     * that the frame's target is on the grid the next frame will use. */
    grid->window_frames++;
    grid->window_dropped += dropped > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)dropped;
    if (grid->slowest_step > 1) adapt(grid, timestamp);
    int64_t period = period_of(grid);
    tk_frame frame = {
        .index = ticker->frames,
        .timestamp_ns = timestamp,
        .target_timestamp_ns = tk__add_sat(timestamp, period),
        .duration_ns = period,
        .dropped_frames = dropped,
        .now_ns = now,
    };
    ticker->frames++;
    ticker->dropped += dropped;
    ticker->latest_timestamp = timestamp;
    /* What the callback sees of the grid: this frame done, the next one
     * due at the target; a new rate set by the callback starts here. */
    grid->last = timestamp;
    grid->next = frame.target_timestamp_ns;
    ticker->in_callback = 1;
    uint32_t changes = grid->changes;
    tk_frame_fn fn = ticker->fn;
    void *user = ticker->context;
    pthread_mutex_unlock(&ticker->lock);

    fn(loop, ticker, &frame, user);

    int64_t after = now_of(loop);
    pthread_mutex_lock(&ticker->lock);
    ticker->in_callback = 0;
    if (ticker->destroyed) {
        pthread_mutex_unlock(&ticker->lock);
        return;
    }
    /* The first grid point not yet passed: at or after `after`, and past
     * this frame. */
    int64_t floor_time = tk__sub_sat(after, 1) < timestamp ? timestamp : tk__sub_sat(after, 1);
    if (grid->changes == changes) {
        /* The callback's time: a callback may move manual time by more than
         * INT64_MAX. */
        int64_t took = tk__sub_sat(after, now);
        if (took > grid->window_longest) grid->window_longest = took;
        grid->next = grid_after(grid, floor_time);
    } else if (!grid->paused && grid->next <= after) {
        /* The callback restarted the grid (a resume or a new rate): its grid
         * stands, from the first point the callback did not cover. */
        grid->next = grid_after(grid, floor_time);
        grid->last = tk__sub_sat(grid->next, period_of(grid));
    }
    int result = rearm(ticker, ticker->modes);
    if (result < 0) ticker->error = result; /* the one-shot ends: see tk__frame_ticker_released */
    pthread_mutex_unlock(&ticker->lock);
}

/* ---- Freeing ---------------------------------------------------------------- */

static void free_ticker(tk_frame_ticker *ticker, tk_release_fn release) {
    tk_loop *loop = ticker->loop;
    void *context = ticker->context;
    pthread_mutex_destroy(&ticker->lock);
    free(ticker);
    if (release != NULL) release(loop, context);
}

void tk__frame_ticker_released(tk_loop *loop, tk_release_fn release, void *context,
                               int loop_destroyed) {
    tk_frame_ticker *ticker = context;
    pthread_mutex_lock(&ticker->lock);
    ticker->timer = TK_TIMER_NONE;
    int done = ticker->destroyed || loop_destroyed;
    if (!done) {
        /* The loop could not re-arm the timer (ticker->error is set), or
         * the timer was cancelled or fired through its handle (tk_loop_cancel,
         * tk_loop_cancel_take, tk_loop_fire), which ends the one-shot without
         * a re-arm: the ticker is stopped as by an error, so that its info
         * and its calls say so. It stays the caller's to destroy; until then
         * the loop keeps it on a list, to free it if the loop goes first. */
        if (ticker->error == 0) ticker->error = -ECANCELED;
        pthread_mutex_lock(&loop->lock);
        ticker->next_stopped = loop->stopped_tickers;
        if (ticker->next_stopped != NULL) ticker->next_stopped->prev_stopped = &ticker->next_stopped;
        ticker->prev_stopped = &loop->stopped_tickers;
        loop->stopped_tickers = ticker;
        pthread_mutex_unlock(&loop->lock);
    }
    pthread_mutex_unlock(&ticker->lock);
    if (done) free_ticker(ticker, release);
}

void tk__frame_tickers_free_stopped(tk_loop *loop, tk_release_fn release) {
    while (loop->stopped_tickers != NULL) {
        tk_frame_ticker *ticker = loop->stopped_tickers;
        loop->stopped_tickers = ticker->next_stopped;
        free_ticker(ticker, release);
    }
}

/* ---- Public calls --------------------------------------------------------------- */

int tk_frame_ticker_create(tk_loop *loop, const tk_frame_ticker_spec *spec, tk_frame_fn fn,
                           void *context, tk_frame_ticker **ticker_out) {
    if (loop == NULL || spec == NULL || fn == NULL || ticker_out == NULL) return -EINVAL;
    if (spec->flags & ~(TK_FRAME_PAUSED | TK_FRAME_COMMON)) return -EINVAL;
    frame_grid grid = {0};
    int result = set_ladder(&grid, spec->rate);
    if (result < 0) return result;
    grid.paused = (spec->flags & TK_FRAME_PAUSED) != 0;
    int64_t now = now_of(loop);
    restart_grid(&grid, now, now);

    tk_frame_ticker *ticker = calloc(1, sizeof *ticker);
    if (ticker == NULL) return -ENOMEM;
    result = pthread_mutex_init(&ticker->lock, NULL);
    if (result != 0) {
        free(ticker);
        return -result;
    }
    ticker->loop = loop;
    ticker->fn = fn;
    ticker->context = context;
    ticker->modes = spec->modes ? spec->modes : TK_MODES(TK_MODE_DEFAULT);
    ticker->common = (spec->flags & TK_FRAME_COMMON) != 0;
    ticker->grid = grid;

    tk_timer_spec timer_spec =
        spec_for(grid.paused ? INT64_MAX : grid.next, ticker->modes, ticker->common);
    result = tk_loop_schedule(loop, &timer_spec, tk__frame_ticker_fire, ticker, &ticker->timer);
    if (result < 0) {
        pthread_mutex_destroy(&ticker->lock);
        free(ticker);
        return result;
    }
    *ticker_out = ticker;
    return 0;
}

int tk_frame_ticker_destroy(tk_frame_ticker *ticker) {
    if (ticker == NULL) return -EINVAL;
    pthread_mutex_lock(&ticker->lock);
    ticker->destroyed = 1;
    tk_loop *loop = ticker->loop;
    tk_timer_id timer = ticker->timer;
    pthread_mutex_unlock(&ticker->lock);
    if (timer == TK_TIMER_NONE) {
        /* Stopped by an error: the loop let go of its timer already and
         * keeps the ticker on its list of stopped ones. */
        pthread_mutex_lock(&loop->lock);
        *ticker->prev_stopped = ticker->next_stopped;
        if (ticker->next_stopped != NULL) ticker->next_stopped->prev_stopped = ticker->prev_stopped;
        tk_release_fn release = loop->release_fn;
        /* While its release handler runs, the loop cannot be destroyed, as
         * for every other release (release_context in timers.c). */
        loop->releasing++;
        pthread_mutex_unlock(&loop->lock);
        free_ticker(ticker, release);
        pthread_mutex_lock(&loop->lock);
        loop->releasing--;
        pthread_mutex_unlock(&loop->lock);
        return 0;
    }
    /* The loop releases the ticker (tk__frame_ticker_released) now, or, from
     * the ticker's own callback, when that returns. -ENOENT: a callback of
     * it is starting or running on another thread; it sees `destroyed` and
     * does not re-arm, so the one-shot ends and is released there. The
     * ticker may be freed by now: it is not touched again. */
    int result = tk_loop_cancel(loop, timer);
    return result == -ENOENT ? 0 : result;
}

/* Applies `change` to the grid and re-arms; undoes it if the loop refuses. */
static int change_grid(tk_frame_ticker *ticker, frame_grid changed) {
    frame_grid saved = ticker->grid;
    ticker->grid = changed;
    int result = rearm(ticker, ticker->modes);
    if (result < 0) ticker->grid = saved;
    return result;
}

int tk_frame_ticker_set_paused(tk_frame_ticker *ticker, int paused) {
    if (ticker == NULL) return -EINVAL;
    pthread_mutex_lock(&ticker->lock);
    int result = ticker->error;
    uint8_t wanted = paused != 0;
    if (result == 0 && wanted != ticker->grid.paused) {
        frame_grid changed = ticker->grid;
        changed.paused = wanted;
        /* Resuming keeps the anchor and period: the grid's phase. */
        if (!wanted) restart_grid(&changed, changed.anchor, now_of(ticker->loop));
        result = change_grid(ticker, changed);
    }
    pthread_mutex_unlock(&ticker->lock);
    return result;
}

int tk_frame_ticker_set_rate(tk_frame_ticker *ticker, tk_frame_rate_range rate) {
    if (ticker == NULL) return -EINVAL;
    pthread_mutex_lock(&ticker->lock);
    int result = ticker->error;
    frame_grid changed = ticker->grid;
    if (result == 0) result = set_ladder(&changed, rate);
    if (result == 0) {
        int64_t now = now_of(ticker->loop);
        /* The latest frame's timestamp. (Not the grid's `last`: a resume
         * or an earlier change of rate moves that to a grid point the
         * ticker has not delivered.) Before the first frame, the grid's
         * own anchor, as a resume keeps it: anchored at now, a change made
         * more often than once a period, the same rate again included,
         * would put the first frame off for as long as the changes came.
         * While paused, now: a resume keeps that anchor. */
        int64_t anchor = changed.anchor;
        if (changed.paused) {
            anchor = now;
        } else if (ticker->frames > 0) {
            anchor = ticker->latest_timestamp;
        }
        restart_grid(&changed, anchor > now ? now : anchor, now);
        result = change_grid(ticker, changed);
    }
    pthread_mutex_unlock(&ticker->lock);
    return result;
}

int tk_frame_ticker_set_modes(tk_frame_ticker *ticker, tk_mode_set modes) {
    /* Checked here: from the ticker's own callback, rearm defers to the
     * loop's re-arm after it, whose failure would stop the ticker. */
    if (ticker == NULL || (modes & TK_MODES_INVALID)) return -EINVAL;
    if (modes == 0) modes = TK_MODES(TK_MODE_DEFAULT);
    pthread_mutex_lock(&ticker->lock);
    int result = ticker->error;
    if (result == 0) result = rearm(ticker, modes);
    if (result == 0) ticker->modes = modes;
    pthread_mutex_unlock(&ticker->lock);
    return result;
}

int tk_frame_ticker_join_common_modes(tk_frame_ticker *ticker) {
    if (ticker == NULL) return -EINVAL;
    pthread_mutex_lock(&ticker->lock);
    int result = ticker->error;
    if (result == 0 && !ticker->common) {
        ticker->common = 1;
        result = rearm(ticker, ticker->modes);
        if (result < 0) ticker->common = 0;
    }
    pthread_mutex_unlock(&ticker->lock);
    return result;
}

int tk_frame_ticker_get_info(tk_frame_ticker *ticker, tk_frame_ticker_info *info) {
    if (ticker == NULL || info == NULL) return -EINVAL;
    pthread_mutex_lock(&ticker->lock);
    const frame_grid *grid = &ticker->grid;
    info->rate = grid->maximum / grid->step;
    info->period_ns = period_of(grid);
    info->next_timestamp_ns = grid->paused || ticker->error ? INT64_MAX : grid->next;
    info->frames = ticker->frames;
    info->dropped_frames = ticker->dropped;
    info->modes = ticker->modes | (ticker->common ? tk__loop_common_modes(ticker->loop) : 0);
    info->paused = grid->paused;
    info->error = ticker->error;
    pthread_mutex_unlock(&ticker->lock);
    return 0;
}
