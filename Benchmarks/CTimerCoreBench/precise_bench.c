/*
 * precise_bench: lateness of a 1 ms repeating timer, plain against precise
 * (TK_TIMER_PRECISE), in one run.
 *
 * Two loops run on this thread, one after the other, in alternating rounds:
 * the plain loop's timer, then the precise loop's, each for `--fires` /
 * `--rounds` fires, so that both sides see the same machine over the same
 * minutes. Each fire's lateness is the monotonic clock read in the callback
 * less the deadline it fired for (the timer's grid: first deadline plus whole
 * periods, the skipped ones reported in `missed`). The first fires of each
 * round are dropped (`--discard`), since the loop's first wait starts cold.
 *
 * Printed: p50, p90, p99, p999 and max of each side, the ratios, the spin's
 * CPU time per precise fire (tk_loop_stats.spin_ns), and whether the targets
 * hold: precise p50 <= 1 us, and precise p99 <= half the plain p99. A figure
 * is printed as measured: virtual machines get preempted, and the p999 and
 * max show it.
 *
 * Build (release), from the package root:
 *   clang -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -Iinclude \
 *     Sources/CTimerCore/[all .c files] Benchmarks/CTimerCoreBench/precise_bench.c \
 *     -lpthread -o /tmp/precise_bench
 * Run: /tmp/precise_bench [--quick] [--fires N] [--rounds N] [--margin-us N]
 *                         [--priority N] [--json]
 *
 * Exit status: 0 with the figures (targets met or not), 2 if a core call
 * fails, 3 if --priority was asked for and refused (-EPERM), 64 for bad usage.
 */
#include "CTimerCore.h"
#include "decimal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define US INT64_C(1000)
#define MS INT64_C(1000000)

#define REQUIRE(call)                                                                      \
    do {                                                                                   \
        int require_result_ = (call);                                                      \
        if (require_result_ < 0) {                                                         \
            fprintf(stderr, "precise_bench: %s failed: %s\n", #call,                     \
                    tk_strerror(-require_result_));                                        \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

typedef struct config {
    int fires;      /* kept per side */
    int rounds;     /* per side */
    int discard;    /* dropped at the start of each round */
    int64_t period;
    int64_t margin;
    int priority;
    int json;
} config;

/* One side: its loop, and the lateness of every kept fire. */
typedef struct side {
    const char *name;
    tk_loop *loop;
    uint32_t flags;
    int64_t *late;
    int count;
    /* The round in progress. */
    int64_t next;     /* the deadline of the next fire */
    int round_fires;  /* fires so far in this round */
    int round_goal;   /* fires this round makes, the dropped ones included */
    int discard;
    uint64_t missed;  /* periods skipped, over the whole run */
    int64_t period;
} side;

static int64_t monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    int64_t now = monotonic_now();
    side *s = context;
    s->next += (int64_t)missed * s->period;
    s->missed += missed;
    if (s->round_fires >= s->discard) s->late[s->count++] = now - s->next;
    s->next += s->period;
    if (++s->round_fires == s->round_goal) {
        REQUIRE(tk_loop_cancel(loop, id));
        REQUIRE(tk_loop_stop(loop));
    }
}

static void run_round(side *s, int kept) {
    s->round_fires = 0;
    s->round_goal = kept + s->discard;
    int64_t first = monotonic_now() + s->period;
    s->next = first;
    tk_timer_spec spec = {.deadline_ns = first, .interval_ns = s->period,
                          .flags = TK_TIMER_ABSOLUTE | s->flags};
    tk_timer_id id;
    REQUIRE(tk_loop_schedule(s->loop, &spec, on_fire, s, &id));
    int result = tk_loop_run(s->loop, 0, TK_FOREVER, 0);
    if (result == -EPERM) {
        fprintf(stderr, "precise_bench: SCHED_FIFO was refused when the run began\n");
        exit(3);
    }
    REQUIRE(result);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of `sorted` (nearest rank). */
static int64_t quantile(const int64_t *sorted, int n, double q) {
    if (n == 0) return 0;
    int rank = (int)(q * n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

typedef struct summary {
    int64_t p50, p90, p99, p999, max, min;
} summary;

static summary summarize(side *s) {
    qsort(s->late, (size_t)s->count, sizeof *s->late, cmp_i64);
    return (summary){
        .p50 = quantile(s->late, s->count, 0.50),
        .p90 = quantile(s->late, s->count, 0.90),
        .p99 = quantile(s->late, s->count, 0.99),
        .p999 = quantile(s->late, s->count, 0.999),
        .max = s->count ? s->late[s->count - 1] : 0,
        .min = s->count ? s->late[0] : 0,
    };
}

static double us(int64_t ns) { return (double)ns / 1000.0; }

static double ratio(int64_t plain, int64_t precise) {
    return (double)plain / (double)(precise > 0 ? precise : 1);
}

static void usage(const char *name) {
    fprintf(stderr,
            "usage: %s [--quick] [--fires N] [--rounds N] [--margin-us N] [--priority N] [--json]\n"
            "  --fires N      fires kept per side (default 4000; --quick 600)\n"
            "  --rounds N     alternating rounds per side (default 16; --quick 4)\n"
            "  --margin-us N  the precise loop's margin (default %d us)\n"
            "  --priority N   run the precise loop at SCHED_FIFO priority N (1 to 99)\n"
            "  --json         the figures as JSON on stdout\n",
            name, (int)(TK_PRECISION_DEFAULT_MARGIN_NS / 1000));
    exit(64);
}

static long parse(const char *text, long low, long high, const char *name) {
    uint64_t value;
    if (bench_decimal(text, (uint64_t)low, (uint64_t)high, &value) != 0) {
        fprintf(stderr, "precise_bench: %s must be a whole number in [%ld, %ld], not '%s'\n",
                name, low, high, text);
        exit(64);
    }
    return (long)value;
}

int main(int argc, char **argv) {
    config cfg = {.fires = 4000, .rounds = 16, .discard = 5, .period = MS,
                  .margin = TK_PRECISION_DEFAULT_MARGIN_NS};
    int fires_set = 0, rounds_set = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            if (!fires_set) cfg.fires = 600;
            if (!rounds_set) cfg.rounds = 4;
        } else if (strcmp(argv[i], "--json") == 0) {
            cfg.json = 1;
        } else if (strcmp(argv[i], "--fires") == 0 && i + 1 < argc) {
            cfg.fires = (int)parse(argv[++i], 1, 10000000, "--fires");
            fires_set = 1;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            cfg.rounds = (int)parse(argv[++i], 1, 10000, "--rounds");
            rounds_set = 1;
        } else if (strcmp(argv[i], "--margin-us") == 0 && i + 1 < argc) {
            cfg.margin = parse(argv[++i], 1, TK_PRECISION_MAX_MARGIN_NS / 1000, "--margin-us") * US;
        } else if (strcmp(argv[i], "--priority") == 0 && i + 1 < argc) {
            cfg.priority = (int)parse(argv[++i], 1, 99, "--priority");
        } else {
            usage(argv[0]);
        }
    }
    if (cfg.rounds > cfg.fires) cfg.rounds = cfg.fires;

    side sides[2] = {
        {.name = "plain", .flags = 0},
        {.name = "precise", .flags = TK_TIMER_PRECISE},
    };
    for (int i = 0; i < 2; i++) {
        sides[i].period = cfg.period;
        sides[i].discard = cfg.discard;
        sides[i].late = calloc((size_t)cfg.fires, sizeof *sides[i].late);
        if (sides[i].late == NULL) {
            fprintf(stderr, "precise_bench: out of memory\n");
            return 2;
        }
        REQUIRE(tk_loop_create(&sides[i].loop));
    }
    tk_precision precision = {.margin_ns = cfg.margin, .realtime_priority = cfg.priority};
    int set = tk_loop_set_precision(sides[1].loop, &precision);
    if (set == -EPERM) {
        fprintf(stderr, "precise_bench: SCHED_FIFO priority %d is not permitted here "
                        "(needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %d)\n",
                cfg.priority, cfg.priority);
        return 3;
    }
    REQUIRE(set);

    fprintf(stderr, "precise_bench: %d fires per side, %d alternating rounds, period %.3f ms, "
                    "margin %.0f us%s\n",
            cfg.fires, cfg.rounds, (double)cfg.period / 1e6, us(cfg.margin),
            cfg.priority ? ", SCHED_FIFO on the precise side" : "");
    for (int round = 0; round < cfg.rounds; round++) {
        int kept = cfg.fires / cfg.rounds + (round < cfg.fires % cfg.rounds);
        for (int i = 0; i < 2; i++) run_round(&sides[round % 2 == 0 ? i : 1 - i], kept);
    }

    tk_loop_stats stats[2];
    summary sum[2];
    for (int i = 0; i < 2; i++) {
        REQUIRE(tk_loop_get_stats(sides[i].loop, &stats[i]));
        sum[i] = summarize(&sides[i]);
        if (sum[i].min < 0) {
            fprintf(stderr, "precise_bench: the %s side fired %.3f us early\n", sides[i].name,
                    us(-sum[i].min));
            return 2;
        }
    }
    double spin_per_fire = (double)stats[1].spin_ns / (double)(stats[1].fired ? stats[1].fired : 1);
    int p50_met = sum[1].p50 <= 1 * US;
    int p99_met = 2 * sum[1].p99 <= sum[0].p99;

    if (cfg.json) {
        printf("{\n  \"period_ns\": %" PRId64 ", \"margin_ns\": %" PRId64
               ", \"fires_per_side\": %d, \"rounds\": %d, \"priority\": %d,\n",
               cfg.period, cfg.margin, cfg.fires, cfg.rounds, cfg.priority);
        for (int i = 0; i < 2; i++) {
            printf("  \"%s\": {\"p50_ns\": %" PRId64 ", \"p90_ns\": %" PRId64 ", \"p99_ns\": %" PRId64
                   ", \"p999_ns\": %" PRId64 ", \"max_ns\": %" PRId64 ", \"missed\": %" PRIu64
                   ", \"wakeups\": %" PRIu64 ", \"spins\": %" PRIu64 ", \"spin_ns\": %" PRIu64 "},\n",
                   sides[i].name, sum[i].p50, sum[i].p90, sum[i].p99, sum[i].p999, sum[i].max,
                   sides[i].missed, stats[i].wakeups, stats[i].spins, stats[i].spin_ns);
        }
        printf("  \"spin_ns_per_fire\": %.0f, \"p50_target_met\": %s, \"p99_target_met\": %s\n}\n",
               spin_per_fire, p50_met ? "true" : "false", p99_met ? "true" : "false");
    } else {
        printf("Lateness of a %.3f ms repeating timer, us (fire time - deadline), %d fires per "
               "side in %d alternating rounds; precise margin %.0f us%s\n",
               (double)cfg.period / 1e6, cfg.fires, cfg.rounds, us(cfg.margin),
               cfg.priority ? ", SCHED_FIFO" : "");
        printf("  %-26s %9s %9s %9s %9s %9s %7s\n", "", "p50", "p90", "p99", "p999", "max",
               "missed");
        for (int i = 0; i < 2; i++) {
            printf("  %-26s %9.2f %9.2f %9.2f %9.2f %9.2f %7" PRIu64 "\n",
                   i ? "precise (TK_TIMER_PRECISE)" : "plain", us(sum[i].p50), us(sum[i].p90),
                   us(sum[i].p99), us(sum[i].p999), us(sum[i].max), sides[i].missed);
        }
        printf("  %-26s %8.1fx %8.1fx %8.1fx %8.1fx %8.1fx\n", "plain / precise",
               ratio(sum[0].p50, sum[1].p50), ratio(sum[0].p90, sum[1].p90),
               ratio(sum[0].p99, sum[1].p99), ratio(sum[0].p999, sum[1].p999),
               ratio(sum[0].max, sum[1].max));
        printf("  spin: %" PRIu64 " spins, %.1f us of CPU per precise fire (%.1f %% of a core at "
               "this period)\n",
               stats[1].spins, spin_per_fire / 1000.0,
               100.0 * spin_per_fire / (double)cfg.period);
        printf("  targets: precise p50 <= 1 us: %s (%.2f us); precise p99 <= plain p99 / 2: %s "
               "(%.2f <= %.2f us)\n",
               p50_met ? "met" : "NOT met", us(sum[1].p50), p99_met ? "met" : "NOT met",
               us(sum[1].p99), us(sum[0].p99) / 2);
    }
    for (int i = 0; i < 2; i++) {
        REQUIRE(tk_loop_destroy(sides[i].loop));
        free(sides[i].late);
    }
    return 0;
}
