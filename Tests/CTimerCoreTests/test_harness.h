/*
 * The runner shared by the C test programs: seeded checks, a per-test
 * time limit, and the closing `N passed, N failed` line.
 *
 * A test program defines its tests as a table of test_case and calls
 * test_main from main. `prog [seed] [--only=NAME]`, or env TK_SEED, picks the
 * seed; each test gets its own random state, g_rng, derived from the seed
 * and its name, so one test reproduces alone with --only.
 */
#ifndef TK_TEST_HARNESS_H
#define TK_TEST_HARNESS_H

#include "splitmix64.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TK_TEST_UNUSED __attribute__((unused))

static atomic_int g_passed, g_failed;
static uint64_t g_seed;
static const char *g_only;
static const char *g_test = "";
static char g_alarm_msg[256];

static inline void check_at(int ok, const char *what, const char *file, int line) {
    if (ok) {
        atomic_fetch_add(&g_passed, 1);
        return;
    }
    atomic_fetch_add(&g_failed, 1);
    fprintf(stderr, "FAIL %s:%d [%s] %s (seed %" PRIu64 ")\n", file, line, g_test, what, g_seed);
}

static inline void check_cmp_at(int ok, long long a, long long b, const char *expr,
                                const char *file, int line) {
    if (ok) {
        atomic_fetch_add(&g_passed, 1);
        return;
    }
    atomic_fetch_add(&g_failed, 1);
    fprintf(stderr, "FAIL %s:%d [%s] %s: left %lld, right %lld (seed %" PRIu64 ")\n", file, line,
            g_test, expr, a, b, g_seed);
}

#define CHECK(c) check_at(!!(c), #c, __FILE__, __LINE__)
#define CHECK_CMP(a, op, b)                                                    \
    do {                                                                       \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
        check_cmp_at(check_a_ op check_b_, check_a_, check_b_,                 \
                     #a " " #op " " #b, __FILE__, __LINE__);                   \
    } while (0)
#define CHECK_EQ(a, b) CHECK_CMP(a, ==, b)
#define CHECK_GE(a, b) CHECK_CMP(a, >=, b)
#define CHECK_LE(a, b) CHECK_CMP(a, <=, b)
#define CHECK_LT(a, b) CHECK_CMP(a, <, b)

/* For loops of many random cases: count one pass for the whole loop, and
 * report only the first failure with its inputs. */
#define PROPERTY_FAIL(...)                                                      \
    do {                                                                        \
        atomic_fetch_add(&g_failed, 1);                                         \
        fprintf(stderr, "FAIL %s:%d [%s] ", __FILE__, __LINE__, g_test);        \
        fprintf(stderr, __VA_ARGS__);                                           \
        fprintf(stderr, " (seed %" PRIu64 ")\n", g_seed);                       \
    } while (0)

/* Writes "N passed, N failed" from a signal handler (no stdio there). */
static inline void write_summary_unsafe(int extra_failed) {
    char buf[64];
    int pos = 0;
    long long vals[2] = {atomic_load(&g_passed), atomic_load(&g_failed) + extra_failed};
    const char *words[2] = {" passed, ", " failed\n"};
    for (int k = 0; k < 2; k++) {
        char digits[24];
        int nd = 0;
        long long v = vals[k];
        do {
            digits[nd++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && nd < 20);
        while (nd) buf[pos++] = digits[--nd];
        for (const char *w = words[k]; *w; w++) buf[pos++] = *w;
    }
    ssize_t ignored = write(1, buf, (size_t)pos);
    (void)ignored;
}

static inline void on_alarm(int sig) {
    (void)sig;
    ssize_t ignored = write(2, g_alarm_msg, strlen(g_alarm_msg));
    (void)ignored;
    write_summary_unsafe(1);
    _exit(1);
}

/* Random numbers: rng_next (splitmix64.h); one state per test, one per
 * worker thread. rng_below is uniform in [0, n), n > 0 (modulo bias aside). */
static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return rng_next(s) % n; }

static TK_TEST_UNUSED uint64_t g_rng;

typedef struct test_case {
    const char *name;
    void (*fn)(void);
    unsigned timeout_s; /* how long it may run before it counts as hung */
} test_case;

static inline uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Runs the tests of `tests` (those matching --only=), prints the summary and
 * returns main's exit status. */
/* A seed written as the scripts write it: decimal digits alone, no leading
 * zero (strtoull's base 0 would read one as octal), within uint64_t. */
static inline int parse_seed(const char *text, uint64_t *seed) {
    if (text[0] == 0 || (text[0] == '0' && text[1] != 0)) return 0;
    uint64_t value = 0;
    for (const char *c = text; *c != 0; c++) {
        if (*c < '0' || *c > '9') return 0;
        unsigned digit = (unsigned)(*c - '0');
        if (value > (UINT64_MAX - digit) / 10) return 0;
        value = value * 10 + digit;
    }
    *seed = value;
    return 1;
}

static inline int test_main(int argc, char **argv, const char *program, const test_case *tests,
                            size_t count) {
    int have_seed = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--only=", 7) == 0) {
            g_only = argv[i] + 7;
        } else {
            if (!parse_seed(argv[i], &g_seed)) {
                fprintf(stderr, "usage: %s [seed] [--only=NAME]  (seed: decimal digits)\n",
                        argv[0]);
                return 2;
            }
            have_seed = 1;
        }
    }
    if (!have_seed && getenv("TK_SEED")) {
        if (!parse_seed(getenv("TK_SEED"), &g_seed)) {
            fprintf(stderr, "%s: TK_SEED must be decimal digits with no leading zero\n", program);
            return 2;
        }
        have_seed = 1;
    }
    if (!have_seed) g_seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    printf("%s: seed %" PRIu64 "\n", program, g_seed);
    fflush(stdout);
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);

    int ran = 0;
    for (size_t i = 0; i < count; i++) {
        const test_case *t = &tests[i];
        if (g_only && !strstr(t->name, g_only)) continue;
        unsigned limit = t->timeout_s;
        g_test = t->name;
        g_rng = g_seed ^ hash_name(t->name);
        snprintf(g_alarm_msg, sizeof g_alarm_msg,
                 "FAIL [%s] timed out after %u s (seed %" PRIu64 ")\n", t->name, limit, g_seed);
        int failed_before = atomic_load(&g_failed);
        alarm(limit);
        t->fn();
        alarm(0);
        ran++;
        if (atomic_load(&g_failed) != failed_before)
            fprintf(stderr, "test %s failed (seed %" PRIu64 ")\n", t->name, g_seed);
    }
    if (ran == 0) {
        fprintf(stderr, "no test matches --only=%s\n", g_only ? g_only : "");
        atomic_fetch_add(&g_failed, 1);
    }
    int failed = atomic_load(&g_failed);
    if (failed) fprintf(stderr, "seed %" PRIu64 "\n", g_seed);
    printf("%d passed, %d failed\n", atomic_load(&g_passed), failed);
    return failed ? 1 : 0;
}

#endif /* TK_TEST_HARNESS_H */
