/*
 * A stop that its run returns without taking. tk_loop_stop asks the
 * innermost run; if that run ends for another reason before it looks (a
 * stop from another thread landing as a nested run returns), the stop is the
 * run's around it, as a stop asked with no run going is the next run's:
 * every stop ends one run. A white-box test: it claims the loop as runs do
 * (tk__loop_enter, tk__loop_leave), which puts the stop in that window
 * without a race.
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

/* Claims the loop as a run nested `depth` deep does. */
static void enter_runs(tk_loop *loop, int depth) {
    pthread_mutex_lock(&loop->lock);
    for (int i = 0; i < depth; i++) CHECK_EQ(tk__loop_enter(loop, 0), 0);
    pthread_mutex_unlock(&loop->lock);
}

/* Returns from the innermost run, without taking a stop; then says whether
 * a stop is due for the run that is innermost now (the next run, if none). */
static int leave_run(tk_loop *loop) {
    pthread_mutex_lock(&loop->lock);
    tk__loop_leave(loop);
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
    enter_runs(loop, 2);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(leave_run(loop), 1);   /* the outer run's now */
    CHECK_EQ(take_stop(loop), 1);
    CHECK_EQ(leave_run(loop), 0);   /* taken: nothing for the next run */
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Not taken by the outermost run either: the next run's, as a stop asked
 * with no run going is, and tk_loop_take_stop can take it. */
static void test_passed_to_the_next_run(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    enter_runs(loop, 3);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(leave_run(loop), 1);
    CHECK_EQ(leave_run(loop), 1);
    CHECK_EQ(leave_run(loop), 1);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_STOPPED);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    enter_runs(loop, 2);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(leave_run(loop), 1);
    CHECK_EQ(leave_run(loop), 1);
    CHECK_EQ(tk_loop_take_stop(loop), 1);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Taken by the run it was asked of: the runs around it see none. A stop
 * asked of the outer run before a nested one began stays the outer's. */
static void test_taken_where_asked(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    enter_runs(loop, 1);
    CHECK_EQ(tk_loop_stop(loop), 0);   /* the outer run's */
    enter_runs(loop, 1);
    pthread_mutex_lock(&loop->lock);
    CHECK_EQ(tk__stop_due(loop), 0);   /* not the nested run's */
    pthread_mutex_unlock(&loop->lock);
    CHECK_EQ(tk_loop_stop(loop), 0);   /* the nested run's */
    CHECK_EQ(take_stop(loop), 1);
    CHECK_EQ(take_stop(loop), 0);
    CHECK_EQ(leave_run(loop), 1);      /* the outer run's stop is still there */
    CHECK_EQ(take_stop(loop), 1);
    CHECK_EQ(leave_run(loop), 0);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Runs nested deeper than 64 share one bit: a stop asked 70 deep is due to
 * each of them as they return, and then passes down one run at a time. */
static void test_deeper_than_64(void) {
    tk_loop *loop = make_loop();
    if (loop == NULL) return;
    enter_runs(loop, 70);
    CHECK_EQ(tk_loop_stop(loop), 0);
    int due = 1;
    for (int depth = 70; depth > 0; depth--) due &= leave_run(loop);
    CHECK_EQ(due, 1);
    CHECK_EQ(tk_loop_take_stop(loop), 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static const test_case tests[] = {
    {"passed_to_the_run_around", test_passed_to_the_run_around, 60},
    {"passed_to_the_next_run", test_passed_to_the_next_run, 60},
    {"taken_where_asked", test_taken_where_asked, 60},
    {"deeper_than_64", test_deeper_than_64, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_stop_passing", tests, sizeof tests / sizeof tests[0]);
}
