/*
 * frames: a frame ticker from C.
 *
 *   - a 60 Hz ticker whose callback does 5 ms of work, and 40 ms on every
 *     tenth frame, so that frames are dropped;
 *   - each callback prints its frame's grid time, how late it was called
 *     and the grid points dropped before it;
 *   - after 30 frames it pauses the ticker, waits 100 ms, resumes (same
 *     grid, no drops counted for the pause), and stops after 10 more.
 *
 * Build and run from the package root with the command below.
 */
// cc -std=c11 -Wall -Wextra -Werror -Iinclude Sources/CTimerCore/*.c Examples/C/frames.c -lpthread -o frames
// ./frames
#include "CTimerCore.h"

#include <stdio.h>

#define MS 1000000LL

typedef struct state {
    int64_t start;
    int frames;
    int resumed_at;
} state;

static void spin(tk_loop *loop, int64_t ns) {
    int64_t begin, now;
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &begin);
    do {
        tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now);
    } while (now - begin < ns);
}

static void resume(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)loop;
    (void)timer;
    (void)missed;
    tk_frame_ticker_set_paused(context, 0);
}

static void frame(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *f, void *context) {
    state *s = context;
    s->frames++;
    printf("frame %3llu  at %7.2f ms  called %5.3f ms late  dropped %llu\n",
           (unsigned long long)f->index, (double)(f->timestamp_ns - s->start) / MS,
           (double)(f->now_ns - f->timestamp_ns) / MS, (unsigned long long)f->dropped_frames);
    spin(loop, f->index % 10 == 9 ? 40 * MS : 5 * MS);
    if (s->frames == 30) {
        /* Pause, and resume 100 ms later from a one-shot timer. */
        tk_frame_ticker_set_paused(ticker, 1);
        tk_timer_spec later = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 100 * MS,
                               .modes = TK_MODES(TK_MODE_DEFAULT)};
        tk_timer_id timer;
        tk_loop_schedule(loop, &later, resume, ticker, &timer);
        printf("paused\n");
    }
    if (s->frames == 40) tk_loop_stop(loop);
}

int main(void) {
    tk_loop *loop;
    if (tk_loop_create(&loop) != 0) return 1;
    state s = {0};
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &s.start);
    tk_frame_ticker_spec spec = {.rate = {.minimum = 60, .maximum = 60, .preferred = 60}};
    tk_frame_ticker *ticker;
    int result = tk_frame_ticker_create(loop, &spec, frame, &s, &ticker);
    if (result != 0) {
        fprintf(stderr, "tk_frame_ticker_create: %s\n", tk_strerror(result));
        return 1;
    }
    tk_loop_run(loop, TK_MODES(TK_MODE_DEFAULT), TK_FOREVER, 0);
    tk_frame_ticker_info info;
    tk_frame_ticker_get_info(ticker, &info);
    printf("%llu frames, %llu dropped, at %.1f Hz\n", (unsigned long long)info.frames,
           (unsigned long long)info.dropped_frames, info.rate);
    tk_frame_ticker_destroy(ticker);
    return tk_loop_destroy(loop) != 0 || info.frames != 40;
}
