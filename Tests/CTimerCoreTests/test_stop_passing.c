/*
 * Which run a stop belongs to. tk_loop_stop asks the run that is innermost
 * as it is asked; a run nested after it begins without it, at any depth. If
 * the run asked returns an error before it takes its stop, the stop is the
 * run's around it, as a stop asked with no run going is the next run's: no
 * stop is lost. A white-box test: it begins and ends runs as tk_loop_run
 * does (tk__loop_enter and tk__run_begin, tk__run_end and tk__loop_leave),
 * which puts a stop where only a failing wait could otherwise leave it.
 * (test_faults_os has that failing wait, through the public API.)
 *
 * Usage: test_stop_passing [seed] [--only=NAME]     (or env TK_SEED)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"
#include "loop_internal.h"

#include <pthread.h>
#include <stdint.h>

#include "test_harness.h"

#define DEEPEST 100

/* The runs begun, outermost first. */
static tk__run g_runs[DEEPEST + 1];

/* Begins a run nested in the innermost (the outermost, if none goes on),
 * as tk_loop_run does. */
static void begin_run(tk_loop *loop) {
    pthread_mutex_lock(&loop->lock);
    if (loop->depth < DEEPEST && tk__loop_enter(loop, 0) == 0) {
        tk__run_begin(loop, &g_runs[loop->depth]);
    } else {
        CHECK(0);
    }
    pthread_mutex_unlock(&loop->lock);
}

/* Ends the innermost run without taking its stop (as a run that returns an
 * error); then says whether a stop is due for the run that is innermost
 * now (the next run's, if none). */
static int end_run(tk_loop *loop) {
    pthread_mutex_lock(&loop->lock);
    tk__run_end(loop, &g_runs[loop->depth]);
    tk__loop_leave(loop);
    int due = tk__stop_due(loop);
    pthread_mutex_unlock(&loop->lock);
    return due;
}

static int stop_due(tk_loop *loop) {
    pthread_mutex_lock(&loop->lock);
    int due = tk__stop_due(loop);
    pthread_mutex_unlock(&loop->lock);
    return due;
}

static int take_stop(tk_loop *loop) {
    pthread_mutex_lock(&loop->lock);
    int taken = tk__stop_take(loop);
    pthread_mutex_unlock(&loop->lock);
    return taken;
}

static tk_loop *make_loop(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    return loop;
}

/* Asked of a nested run that returns without it: the run around it takes
 * it, and only it. */
static void test_passed_to_the_run_around(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    begin_run(loop);
    begin_run(loop);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(end_run(loop), 1);   /* the outer run's now */
    CHECK_EQ(take_stop(loop), 1);
    CHECK_EQ(end_run(loop), 0);   /* taken: nothing for the next run */
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Not taken by the outermost run either: the next run's, as a stop asked
 * with no run going is, and tk_loop_take_stop can take it. */
static void test_passed_to_the_next_run(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    for (int i = 0; i < 3; i++) begin_run(loop);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(end_run(loop), 1);
    CHECK_EQ(end_run(loop), 1);
    CHECK_EQ(end_run(loop), 1);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_STOPPED);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    begin_run(loop);
    begin_run(loop);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(end_run(loop), 1);
    CHECK_EQ(end_run(loop), 1);
    CHECK_EQ(tk_loop_take_stop(loop), 1);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Taken by the run it was asked of: the runs around it see none. A stop
 * asked of the outer run before a nested one began stays the outer's. */
static void test_taken_where_asked(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    begin_run(loop);
    CHECK_EQ(tk_loop_stop(loop), 0);   /* the outer run's */
    begin_run(loop);
    CHECK_EQ(stop_due(loop), 0);       /* not the nested run's */
    CHECK_EQ(tk_loop_stop(loop), 0);   /* the nested run's */
    CHECK_EQ(take_stop(loop), 1);
    CHECK_EQ(take_stop(loop), 0);
    CHECK_EQ(end_run(loop), 1);        /* the outer run's stop is still there */
    CHECK_EQ(take_stop(loop), 1);
    CHECK_EQ(end_run(loop), 0);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* At every depth alike: a stop asked of a run 70 deep is not the run its
 * callback then nests, and passes down one run at a time from there. */
static void test_deep_runs(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    for (int i = 0; i < 70; i++) begin_run(loop);
    CHECK_EQ(tk_loop_stop(loop), 0);
    begin_run(loop);
    CHECK_EQ(stop_due(loop), 0);
    CHECK_EQ(end_run(loop), 1);        /* back at 70: its stop */
    int due = 1;
    for (int depth = 70; depth > 0; depth--) due &= end_run(loop);
    CHECK_EQ(due, 1);
    CHECK_EQ(tk_loop_take_stop(loop), 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* What the callbacks of an advance saw. */
static int g_taken_in_advance = -1;
static int g_taken_in_run = -1;

static void stop_and_take(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer;
    (void)missed;
    CHECK_EQ(tk_loop_stop(loop), 0);
    *(int *)context = tk_loop_take_stop(loop);
}

static void stop_only(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)timer;
    (void)missed;
    (void)context;
    CHECK_EQ(tk_loop_stop(loop), 0);
}

/* Asked during an advance, where no run goes on (none can begin inside
 * one), a stop is the next run's, and tk_loop_take_stop takes it there and
 * then, as with no call going on. Asked in a run's callback, it is that
 * run's own. */
static void test_taken_during_an_advance(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    tk_timer_spec spec = {.delay_ns = 10};
    tk_timer_id timer;
    CHECK_EQ(tk_loop_schedule(loop, &spec, stop_and_take, &g_taken_in_advance, &timer), 0);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(0), 20), 1);
    CHECK_EQ(g_taken_in_advance, 1);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    /* Not taken there, it ends the next run. */
    CHECK_EQ(tk_loop_schedule(loop, &spec, stop_only, NULL, &timer), 0);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(0), 20), 1);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_STOPPED);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    /* In a run's callback, the run takes it. */
    int64_t now = 0;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(tk_loop_schedule(loop, &spec, stop_and_take, &g_taken_in_run, &timer), 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), now + 20, 0), TK_RUN_STOPPED);
    CHECK_EQ(g_taken_in_run, 0);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static const test_case tests[] = {
    {"passed_to_the_run_around", test_passed_to_the_run_around, 60},
    {"passed_to_the_next_run", test_passed_to_the_next_run, 60},
    {"taken_where_asked", test_taken_where_asked, 60},
    {"deep_runs", test_deep_runs, 60},
    {"taken_during_an_advance", test_taken_during_an_advance, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_stop_passing", tests, sizeof tests / sizeof tests[0]);
}
