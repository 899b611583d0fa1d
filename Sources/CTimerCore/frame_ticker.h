/*
 * What the timer table needs to know of frame tickers (frame_ticker.c): a
 * ticker's timer has the ticker as its context, so the loop hands it back
 * here, rather than to the release handler, when it lets go of the timer.
 */
#ifndef TK_FRAME_TICKER_H
#define TK_FRAME_TICKER_H

#include "CTimerCore.h"
#include "internal.h"

/* The callback of every frame ticker's timer. */
TK__INTERNAL void tk__frame_ticker_fire(tk_loop *loop, tk_timer_id timer, uint64_t missed,
                                        void *context);

/*
 * The loop let go of a frame ticker's timer (`context` is the ticker), with
 * no loop lock held. `release` is the loop's release handler, called with
 * the caller's context if the ticker is freed: when it was destroyed, or
 * (`loop_destroyed`) the loop is being destroyed.
 */
TK__INTERNAL void tk__frame_ticker_released(tk_loop *loop, tk_release_fn release, void *context,
                                            int loop_destroyed);

/*
 * Frees the tickers of a loop being destroyed that an error had stopped
 * (their timer already gone), handing each context to `release`. No lock.
 */
TK__INTERNAL void tk__frame_tickers_free_stopped(tk_loop *loop, tk_release_fn release);

#endif /* TK_FRAME_TICKER_H */
