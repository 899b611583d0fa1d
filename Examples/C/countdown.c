/*
 * countdown: a small tour of the CTimerCore C API.
 *
 *   - a repeating 100 ms timer on the monotonic clock counts down from 10
 *     to 0, printing how late each tick came and how many it missed;
 *   - a one-shot timer on the wall clock fires half a second in;
 *   - a clock-change handler reports if the wall clock is stepped meanwhile;
 *   - the loop stops when the countdown reaches 0.
 *
 * Build and run from the package root with the command below.
 */
// cc -std=c11 -Wall -Wextra -Werror -Iinclude Sources/CTimerCore/*.c Examples/C/countdown.c -lpthread -o countdown
// ./countdown
#include "CTimerCore.h"

#include <stdio.h>
#include <string.h>

#define MS 1000000LL

struct countdown {
    int64_t first_tick; /* absolute monotonic deadline of tick 10 */
    int64_t interval;
    int64_t ticks;      /* grid points passed so far, missed ones included */
};

static void on_tick(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    struct countdown *c = context;
    int64_t now = 0;
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now);

    /* Skipped ticks are not replayed: the count jumps over them. */
    c->ticks += (int64_t)missed;
    int64_t due = c->first_tick + c->ticks * c->interval;
    int64_t remaining = 10 - c->ticks;
    c->ticks++;

    printf("tick %2lld  late %6lld us  missed %llu\n", (long long)remaining,
           (long long)((now - due) / 1000), (unsigned long long)missed);

    if (remaining <= 0) {
        tk_loop_cancel(loop, timer);
        tk_loop_stop(loop);
    }
}

static void on_wall_clock(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer, (void)missed, (void)context;
    int64_t now = 0;
    tk_loop_now(loop, TK_CLOCK_REALTIME, &now);
    time_t seconds = (time_t)(now / 1000000000);
    char text[32] = "?";
    struct tm *utc = gmtime(&seconds);
    if (utc) strftime(text, sizeof text, "%H:%M:%S", utc);
    printf("wall-clock timer: it is %s.%03lld UTC\n", text,
           (long long)(now % 1000000000 / 1000000));
}

static void on_clock_change(tk_loop *loop, void *context) {
    (void)loop, (void)context;
    printf("the wall clock was stepped\n");
}

int main(void) {
    tk_loop *loop = NULL;
    int rc = tk_loop_create(&loop);
    if (rc != 0) {
        fprintf(stderr, "tk_loop_create: %s\n", strerror(-rc));
        return 1;
    }
    tk_loop_set_clock_change_handler(loop, on_clock_change, NULL);

    /* The countdown: first tick 100 ms from now, then every 100 ms, on an
     * absolute grid so that lateness does not accumulate. */
    struct countdown c = {0, 100 * MS, 0};
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &c.first_tick);
    c.first_tick += c.interval;
    tk_timer_spec tick = {
        .clock = TK_CLOCK_MONOTONIC,
        .deadline_ns = c.first_tick,
        .interval_ns = c.interval,
        .leeway_ns = 0,
        .modes = TK_MODES(TK_MODE_DEFAULT),
        .flags = TK_TIMER_ABSOLUTE,
    };
    tk_timer_id tick_id;
    rc = tk_loop_schedule(loop, &tick, on_tick, &c, &tick_id);

    /* A wall-clock timer 550 ms from now, allowed to be 10 ms late. */
    tk_timer_spec wall = {
        .clock = TK_CLOCK_REALTIME,
        .delay_ns = 550 * MS,
        .leeway_ns = 10 * MS,
        .modes = TK_MODES(TK_MODE_DEFAULT),
    };
    tk_timer_id wall_id;
    if (rc == 0) rc = tk_loop_schedule(loop, &wall, on_wall_clock, NULL, &wall_id);
    if (rc != 0) {
        fprintf(stderr, "tk_loop_schedule: %s\n", strerror(-rc));
        tk_loop_destroy(loop);
        return 1;
    }

    rc = tk_loop_run(loop, TK_MODES(TK_MODE_DEFAULT), TK_FOREVER, 0);
    if (rc != TK_RUN_STOPPED) fprintf(stderr, "tk_loop_run: %d\n", rc);

    tk_loop_stats stats;
    tk_loop_get_stats(loop, &stats);
    printf("done: %llu callbacks, %llu wake-ups\n", (unsigned long long)stats.fired,
           (unsigned long long)stats.wakeups);
    tk_loop_destroy(loop);
    return rc == TK_RUN_STOPPED ? 0 : 1;
}
