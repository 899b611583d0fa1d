/*
 * precise: a 1 ms precise timer from C.
 *
 *   - asks for SCHED_FIFO priority 10 for the loop's thread, and says so
 *     and goes on without it if the process may not have it (-EPERM);
 *   - schedules a repeating precise timer (TK_TIMER_PRECISE) every 1 ms and
 *     lets it fire 500 times, measuring how late each fire was;
 *   - prints the median and the worst lateness, and what the spins cost.
 *
 * Build and run from the package root with the command below.
 */
// cc -std=c11 -Wall -Wextra -Werror -Iinclude Sources/CTimerCore/*.c Examples/C/precise.c -lpthread -o precise
// ./precise
#include "CTimerCore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define MS 1000000LL
#define FIRES 500

typedef struct state {
    int64_t next;           /* the deadline of the next fire */
    int count;
    int64_t late[FIRES];
} state;

static void tick(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    state *s = context;
    int64_t now;
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now);
    s->next += (int64_t)missed * MS; /* periods skipped, if the machine stalled */
    s->late[s->count++] = now - s->next;
    s->next += MS;
    if (s->count == FIRES) {
        tk_loop_cancel(loop, timer);
        tk_loop_stop(loop);
    }
}

static int by_value(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(void) {
    tk_loop *loop;
    if (tk_loop_create(&loop) != 0) return 1;

    tk_precision precision = {.margin_ns = 200000, .realtime_priority = 10};
    int result = tk_loop_set_precision(loop, &precision);
    if (result == -EPERM) {
        printf("SCHED_FIFO priority 10 is not permitted here; precise without it\n");
        precision.realtime_priority = 0;
        result = tk_loop_set_precision(loop, &precision);
    }
    if (result != 0) {
        fprintf(stderr, "tk_loop_set_precision: %s\n", tk_strerror(-result));
        return 1;
    }

    static state s;
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &s.next);
    s.next += MS;
    tk_timer_spec every_ms = {.deadline_ns = s.next, .interval_ns = MS,
                              .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE};
    tk_timer_id timer;
    if (tk_loop_schedule(loop, &every_ms, tick, &s, &timer) != 0) return 1;
    result = tk_loop_run(loop, 0, TK_FOREVER, 0);
    if (result < 0) {
        fprintf(stderr, "tk_loop_run: %s\n", tk_strerror(-result));
        return 1;
    }

    qsort(s.late, FIRES, sizeof s.late[0], by_value);
    tk_loop_stats stats;
    tk_loop_get_stats(loop, &stats);
    printf("%d fires every 1 ms: lateness median %.2f us, worst %.2f us, none early: %s\n", FIRES,
           (double)s.late[FIRES / 2] / 1000, (double)s.late[FIRES - 1] / 1000,
           s.late[0] >= 0 ? "yes" : "NO");
    printf("%llu spins, %.1f us of CPU each\n", (unsigned long long)stats.spins,
           stats.spins ? (double)stats.spin_ns / (double)stats.spins / 1000 : 0.0);
    if (tk_loop_destroy(loop) != 0) return 1;
    return s.late[0] >= 0 ? 0 : 1;
}
