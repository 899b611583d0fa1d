/*
 * soak: a real loop under steady load for a long time, to see that memory
 * and descriptors stay flat and that every fire is accounted for.
 *
 * One thread runs a loop holding about 100,000 pending timers (far
 * deadlines) and watching a few pipes; four worker threads schedule, cancel
 * and reschedule into it without pause, schedule short one-shots that do
 * fire, write to the pipes and watch and unwatch them. Every few seconds
 * the program samples its resident memory (/proc/self/statm) and its open
 * descriptors (/proc/self/fd).
 *
 * Accounting: each timer's context is a slot of a preallocated table; the
 * release handler sees every context exactly once, a one-shot that fires
 * fires once, and a slot's timer is either fired, cancelled or still
 * pending at the end (the loop's destroy releases those). Repeating timers'
 * fires plus their reported `missed` must cover the periods that passed.
 * Any mismatch exits with status 1. After the warm-up (the first tenth of
 * the samples, at least two), RSS must stay within 2 % of its warm
 * level (plus 256 KB) and the descriptor count must not change, or the
 * program exits with status 1.
 *
 * Build (release), from the package root:
 *   cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -Iinclude \
 *     Sources/CTimerCore/[all .c files] Benchmarks/CTimerCoreBench/soak.c \
 *     -lpthread -o /tmp/soak
 * Run: /tmp/soak [--seconds N] [--sample-seconds N] [--csv PATH]
 *   (default 600 seconds, a sample every 5 seconds)
 */
#include "CTimerCore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#define MS 1000000LL
#define SEC 1000000000LL

enum {
    WORKERS = 4,
    BACKGROUND = 100000,          /* far timers kept pending */
    SLOTS_PER_WORKER = 1 << 16,   /* short timers a worker keeps track of, reused */
    PIPES = 8,
    REPEATING = 4,
    MAX_SAMPLES = 4096,
};

static int64_t now_ns(void) {
    int64_t now = 0;
    tk_clock_now(TK_CLOCK_MONOTONIC, &now);
    return now;
}

static void die(const char *what, int result) {
    fprintf(stderr, "soak: %s failed: %s (%d)\n", what, tk_strerror(result), result);
    exit(2);
}

#define MUST(call)                                                             \
    do {                                                                       \
        int result_ = (call);                                                  \
        if (result_ < 0) die(#call, result_);                                  \
    } while (0)

/* ------------------------------------------------------------------------
 * Accounting
 * ------------------------------------------------------------------------ */

/* One timer's context. States: 0 free, 1 scheduled, 2 fired, 3 cancelled. */
typedef struct slot {
    atomic_int state;
    atomic_int fires;
    atomic_int releases;
    tk_timer_id id;
} slot;

static slot g_background[BACKGROUND];
static slot g_slots[WORKERS][SLOTS_PER_WORKER];
static atomic_long g_errors;
static atomic_long g_fired, g_cancelled, g_scheduled, g_rescheduled, g_bytes_read, g_bytes_written;
static atomic_long g_watch_changes;

typedef struct repeating {
    int64_t first, interval;
    uint64_t next_index; /* loop thread only */
    long fires;
    int early;
} repeating;

static repeating g_repeating[REPEATING];

static void error(const char *what) {
    if (atomic_fetch_add(&g_errors, 1) < 10) fprintf(stderr, "soak: accounting: %s\n", what);
}

static void on_release(tk_loop *loop, void *context) {
    (void)loop;
    /* The repeating timers' contexts are released at destroy, not counted. */
    if ((repeating *)context >= g_repeating && (repeating *)context < g_repeating + REPEATING) return;
    slot *s = context;
    if (atomic_fetch_add(&s->releases, 1) != 0) error("a context released twice");
}

static void one_shot_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed;
    slot *s = context;
    if (atomic_fetch_add(&s->fires, 1) != 0) error("a one-shot fired twice");
    int expected = 1;
    if (!atomic_compare_exchange_strong(&s->state, &expected, 2)) error("a one-shot fired after it was cancelled");
    atomic_fetch_add(&g_fired, 1);
}

static void repeating_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id;
    repeating *r = context;
    uint64_t index = r->next_index + missed;
    if (now_ns() < r->first + (int64_t)index * r->interval) r->early++;
    r->next_index = index + 1;
    r->fires++;
}

static int g_pipes[PIPES][2];
static atomic_int g_watched[PIPES];

static void pipe_fn(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)loop, (void)events, (void)context;
    char buffer[512];
    for (;;) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got > 0) {
            atomic_fetch_add(&g_bytes_read, got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        break;
    }
}

/* ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------ */

static tk_loop *g_loop;
static atomic_int g_stop;

static void *loop_main(void *arg) {
    (void)arg;
    int result = tk_loop_run(g_loop, 0, TK_FOREVER, 0);
    if (result != TK_RUN_STOPPED) die("tk_loop_run", result);
    return NULL;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

typedef struct worker {
    int index;
    uint64_t rng;
} worker;

/* Schedules short one-shots into free slots (they fire within 1 to 50 ms),
 * cancels and reschedules some, churns the background timers, writes the
 * pipes and toggles their watches. */
static void *worker_main(void *arg) {
    worker *w = arg;
    slot *slots = g_slots[w->index];
    uint32_t cursor = 0;
    while (!atomic_load(&g_stop)) {
        uint64_t r = splitmix(&w->rng);
        slot *s = &slots[cursor++ % SLOTS_PER_WORKER];
        int state = atomic_load(&s->state);
        if (state == 1) {
            /* Still pending: cancel it (it may fire first, then -ENOENT). */
            int result = tk_loop_cancel(g_loop, s->id);
            if (result == 0) {
                int expected = 1;
                if (atomic_compare_exchange_strong(&s->state, &expected, 3)) {
                    atomic_fetch_add(&g_cancelled, 1);
                } else {
                    error("cancelled a timer that had fired");
                }
            } else if (result != -ENOENT) {
                die("tk_loop_cancel", result);
            }
            continue;
        }
        /* Free, fired or cancelled, and released: reuse the slot. */
        if (state != 0 && atomic_load(&s->releases) != 1) continue; /* release not seen yet */
        atomic_store(&s->state, 1);
        atomic_store(&s->fires, 0);
        atomic_store(&s->releases, 0);
        tk_timer_spec spec = {.delay_ns = (int64_t)(1 + r % 50) * MS,
                              .leeway_ns = (r >> 8) % 4 == 0 ? MS : 0};
        MUST(tk_loop_schedule(g_loop, &spec, one_shot_fn, s, &s->id));
        atomic_fetch_add(&g_scheduled, 1);
        if ((r >> 16) % 8 == 0) {
            tk_timer_spec later = {.delay_ns = (int64_t)(20 + (r >> 24) % 30) * MS};
            int result = tk_loop_reschedule(g_loop, s->id, &later);
            if (result == 0) atomic_fetch_add(&g_rescheduled, 1);
            else if (result != -ENOENT) die("tk_loop_reschedule", result);
        }
        /* A background timer moved: the pending count stays put. */
        if ((r >> 32) % 4 == 0) {
            slot *b = &g_background[(r >> 34) % BACKGROUND];
            tk_timer_spec far = {.delay_ns = 3600 * SEC + (int64_t)((r >> 40) % 1000) * SEC};
            MUST(tk_loop_reschedule(g_loop, b->id, &far));
        }
        if ((r >> 48) % 64 == 0) {
            int p = (int)((r >> 54) % PIPES);
            if (write(g_pipes[p][1], "x", 1) == 1) atomic_fetch_add(&g_bytes_written, 1);
        }
        if ((r >> 50) % 4096 == 0) {
            int p = (int)((r >> 56) % PIPES);
            /* Only worker p % WORKERS toggles pipe p: no two race on it. */
            if (p % WORKERS == w->index) {
                if (atomic_load(&g_watched[p])) {
                    MUST(tk_loop_unwatch_fd(g_loop, g_pipes[p][0]));
                    atomic_store(&g_watched[p], 0);
                } else {
                    MUST(tk_loop_watch_fd(g_loop, g_pipes[p][0], TK_IO_READABLE, pipe_fn, NULL));
                    atomic_store(&g_watched[p], 1);
                }
                atomic_fetch_add(&g_watch_changes, 1);
            }
        }
        if (cursor % 1024 == 0) {
            struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL); /* leave the loop's thread some of the machine */
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 * Sampling
 * ------------------------------------------------------------------------ */

static long resident_bytes(void) {
    FILE *file = fopen("/proc/self/statm", "r");
    if (file == NULL) return -1;
    long size = 0, resident = 0;
    int got = fscanf(file, "%ld %ld", &size, &resident);
    fclose(file);
    return got == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

static int open_descriptors(void) {
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) count += entry->d_name[0] != '.';
    closedir(dir);
    return count - 1; /* the directory's own descriptor */
}

typedef struct sample {
    double seconds;
    long rss;
    int fds;
    uint64_t pending;
    long fired, scheduled;
} sample;

static sample g_samples[MAX_SAMPLES];

int main(int argc, char **argv) {
    int seconds = 600, every = 5;
    const char *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--sample-seconds") == 0 && i + 1 < argc) {
            every = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = argv[++i];
        } else {
            fprintf(stderr, "usage: soak [--seconds N] [--sample-seconds N] [--csv PATH]\n");
            return 64;
        }
    }
    if (seconds < 2 || every < 1 || every > seconds) {
        fprintf(stderr, "soak: --seconds must be at least 2 and --sample-seconds in [1, seconds]\n");
        return 64;
    }

    MUST(tk_loop_create(&g_loop));
    MUST(tk_loop_set_release_handler(g_loop, on_release));
    MUST(tk_loop_reserve(g_loop, TK_CLOCK_MONOTONIC, BACKGROUND + WORKERS * SLOTS_PER_WORKER / 8));
    for (int i = 0; i < BACKGROUND; i++) {
        tk_timer_spec far = {.delay_ns = 3600 * SEC + (int64_t)(i % 1000) * SEC,
                             .leeway_ns = i % 2 ? SEC : 0};
        atomic_store(&g_background[i].state, 1);
        MUST(tk_loop_schedule(g_loop, &far, one_shot_fn, &g_background[i], &g_background[i].id));
    }
    for (int i = 0; i < REPEATING; i++) {
        repeating *r = &g_repeating[i];
        r->interval = (int64_t)(2 + 3 * i) * MS;
        r->first = now_ns() + 10 * MS;
        tk_timer_spec spec = {.deadline_ns = r->first, .interval_ns = r->interval,
                              .leeway_ns = i % 2 ? MS : 0, .flags = TK_TIMER_ABSOLUTE};
        tk_timer_id id;
        MUST(tk_loop_schedule(g_loop, &spec, repeating_fn, r, &id));
    }
    for (int p = 0; p < PIPES; p++) {
        if (pipe(g_pipes[p]) != 0) die("pipe", -errno);
        fcntl(g_pipes[p][0], F_SETFL, O_NONBLOCK);
        fcntl(g_pipes[p][1], F_SETFL, O_NONBLOCK);
        MUST(tk_loop_watch_fd(g_loop, g_pipes[p][0], TK_IO_READABLE, pipe_fn, NULL));
        atomic_store(&g_watched[p], 1);
    }

    pthread_t loop_thread, workers[WORKERS];
    worker state[WORKERS];
    if (pthread_create(&loop_thread, NULL, loop_main, NULL) != 0) die("pthread_create", -errno);
    for (int i = 0; i < WORKERS; i++) {
        state[i] = (worker){i, 0x1234ULL + (uint64_t)i * 0x9E37ULL};
        if (pthread_create(&workers[i], NULL, worker_main, &state[i]) != 0) die("pthread_create", -errno);
    }

    int64_t start = now_ns();
    int count = 0;
    printf("%8s %12s %6s %9s %12s %12s\n", "seconds", "rss KB", "fds", "pending", "fired", "scheduled");
    for (;;) {
        struct timespec pause = {every, 0};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
        double elapsed = (double)(now_ns() - start) / 1e9;
        tk_loop_stats stats;
        MUST(tk_loop_get_stats(g_loop, &stats));
        if (count < MAX_SAMPLES) {
            g_samples[count] = (sample){elapsed, resident_bytes(), open_descriptors(), stats.pending,
                                        atomic_load(&g_fired), atomic_load(&g_scheduled)};
            sample *s = &g_samples[count++];
            printf("%8.1f %12ld %6d %9" PRIu64 " %12ld %12ld\n", s->seconds, s->rss / 1024, s->fds,
                   s->pending, s->fired, s->scheduled);
            fflush(stdout);
        }
        if (elapsed >= seconds) break;
    }

    atomic_store(&g_stop, 1);
    for (int i = 0; i < WORKERS; i++) pthread_join(workers[i], NULL);
    /* Let the short timers still pending fire (they are due within 50 ms). */
    struct timespec settle = {0, 200 * MS};
    nanosleep(&settle, NULL);
    MUST(tk_loop_stop(g_loop));
    pthread_join(loop_thread, NULL);
    tk_loop_stats stats;
    MUST(tk_loop_get_stats(g_loop, &stats));
    MUST(tk_loop_destroy(g_loop)); /* releases the background timers */

    /* Every context released once; a slot fired at most once; nothing left
     * scheduled but the background and repeating timers. */
    long unreleased = 0, still_scheduled = 0;
    for (int w = 0; w < WORKERS; w++) {
        for (int i = 0; i < SLOTS_PER_WORKER; i++) {
            slot *s = &g_slots[w][i];
            int state = atomic_load(&s->state);
            if (state == 0) continue;
            if (state == 1) still_scheduled++;
            if (atomic_load(&s->releases) != 1) unreleased++;
        }
    }
    for (int i = 0; i < BACKGROUND; i++) {
        if (atomic_load(&g_background[i].fires) != 0) error("a background timer fired");
        if (atomic_load(&g_background[i].releases) != 1) unreleased++;
    }
    if (unreleased) error("contexts not released exactly once");
    if (still_scheduled) error("short one-shots still pending after they were due");
    if (stats.pending != BACKGROUND + REPEATING) error("the pending count is off");
    for (int i = 0; i < REPEATING; i++) {
        if (g_repeating[i].early) error("a repeating timer fired early");
        if (g_repeating[i].fires < 1) error("a repeating timer never fired");
    }
    long scheduled = atomic_load(&g_scheduled), fired = atomic_load(&g_fired);
    long cancelled = atomic_load(&g_cancelled);
    if (scheduled != fired + cancelled) error("scheduled != fired + cancelled");
    for (int p = 0; p < PIPES; p++) pipe_fn(NULL, g_pipes[p][0], 0, NULL); /* what was left */
    if (atomic_load(&g_bytes_read) != atomic_load(&g_bytes_written)) error("pipe bytes lost");

    /* Flat after the warm-up. */
    int warm = count / 10 > 2 ? count / 10 : 2;
    long rss_low = 0, rss_high = 0;
    int fds_low = 0, fds_high = 0;
    for (int i = warm; i < count; i++) {
        if (i == warm || g_samples[i].rss < rss_low) rss_low = g_samples[i].rss;
        if (i == warm || g_samples[i].rss > rss_high) rss_high = g_samples[i].rss;
        if (i == warm || g_samples[i].fds < fds_low) fds_low = g_samples[i].fds;
        if (i == warm || g_samples[i].fds > fds_high) fds_high = g_samples[i].fds;
    }
    long allowed = rss_low / 50 + 256 * 1024;
    int flat = count > warm && rss_high - rss_low <= allowed && fds_high == fds_low;
    printf("\nafter the warm-up (%d of %d samples): RSS %ld..%ld KB (spread %ld KB, allowed %ld KB), "
           "descriptors %d..%d: %s\n",
           count - warm, count, rss_low / 1024, rss_high / 1024, (rss_high - rss_low) / 1024,
           allowed / 1024, fds_low, fds_high, flat ? "flat" : "NOT FLAT");
    printf("scheduled %ld short timers: %ld fired, %ld cancelled, %ld rescheduled; "
           "%d repeating timers fired %ld, %ld, %ld, %ld times, none early; "
           "%ld pipe bytes read of %ld written; %ld watch changes; accounting errors %ld\n",
           scheduled, fired, cancelled, atomic_load(&g_rescheduled), REPEATING,
           g_repeating[0].fires, g_repeating[1].fires, g_repeating[2].fires, g_repeating[3].fires,
           atomic_load(&g_bytes_read), atomic_load(&g_bytes_written), atomic_load(&g_watch_changes),
           atomic_load(&g_errors));
    if (csv != NULL) {
        FILE *file = fopen(csv, "w");
        if (file == NULL) die("fopen --csv", -errno);
        fprintf(file, "seconds,rss_bytes,fds,pending,fired,scheduled\n");
        for (int i = 0; i < count; i++) {
            fprintf(file, "%.1f,%ld,%d,%" PRIu64 ",%ld,%ld\n", g_samples[i].seconds, g_samples[i].rss,
                    g_samples[i].fds, g_samples[i].pending, g_samples[i].fired, g_samples[i].scheduled);
        }
        fclose(file);
    }
    for (int p = 0; p < PIPES; p++) {
        close(g_pipes[p][0]);
        close(g_pipes[p][1]);
    }
    return atomic_load(&g_errors) == 0 && flat ? 0 : 1;
}
