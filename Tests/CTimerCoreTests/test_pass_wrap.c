/*
 * Pass numbers, which wrap at 2^32: a timer placed more than 2^31 passes
 * ago looks new in the pass that meets it, so that pass holds it; it must
 * fire in the next one, not wait for the counter to come round again. A
 * white-box test: it moves the loop's pass counter directly, which no
 * public call can do in a test's time.
 *
 * Usage: test_pass_wrap [seed] [--only=NAME]     (or env TK_SEED)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"
#include "loop_internal.h"

#include <stdint.h>
#include <stdio.h>

#include "test_harness.h"

#define MSEC INT64_C(1000000)

static int g_fired;

static void count_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop;
    (void)id;
    (void)missed;
    (void)context;
    g_fired++;
}

/* Jumps the pass counter by `jump` after scheduling one timer, then lets it
 * come due; returns how many passes the advance made until it fired. */
static uint32_t passes_to_fire_after(uint32_t jump) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return UINT32_MAX;
    g_fired = 0;
    tk_timer_spec spec = {.delay_ns = 10 * MSEC};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &spec, count_fire, NULL, &id), 0);
    loop->pass += jump; /* as if that many passes had run since */
    uint32_t before = loop->pass;
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MSEC), 1);
    CHECK_EQ(g_fired, 1);
    uint32_t passes = loop->pass - before;
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    return passes;
}

/* Placed "2^31 to 2^32 - 1 passes ago": new to the pass that meets it by the
 * signed distance, which holds it; the next pass fires it, so it takes at
 * most one pass more than with no jump (and not some 2^31 passes, as it did
 * when a held timer kept its old pass number). */
static void test_wrap(void) {
    uint32_t plain = passes_to_fire_after(0);
    CHECK_CMP(plain, <=, 2);
    static const uint32_t jumps[] = {UINT32_C(0x7FFFFFFF), UINT32_C(0x80000000),
                                     UINT32_C(0x80000001), UINT32_C(3000000000),
                                     UINT32_C(0xFFFFFFFF)};
    for (size_t i = 0; i < sizeof jumps / sizeof jumps[0]; i++) {
        CHECK_CMP(passes_to_fire_after(jumps[i]), <=, plain + 1);
    }
}

static const test_case tests[] = {
    {"wrap", test_wrap, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_pass_wrap", tests, sizeof tests / sizeof tests[0]);
}
