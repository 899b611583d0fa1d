/*
 * The loop's internal state, shared by the four files that work on it:
 *   timers.c     the timer table: schedule, cancel, fire, the wake-up target;
 *   loop.c       the real loop: epoll, the timerfds, the eventfd, watched fds;
 *   precision.c  precise timers: the spin, and the running thread's settings;
 *   manual.c     manual time: tk_loop_advance, and the steps a run with a
 *                deadline takes on a manual loop.
 *
 * Locking: every field below is guarded by `lock`, which is never held while
 * a user callback runs.
 */
#ifndef TK_LOOP_INTERNAL_H
#define TK_LOOP_INTERNAL_H

#include "CTimerCore.h"
#include "heap.h"
#include "internal.h"
#include "watch_table.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The step between successive loops' handle keys: 2^32 / the golden ratio,
 * odd (see make_id in timers.c). */
#define TK__HANDLE_KEY_STEP UINT32_C(0x9E3779B9)

/* Marks the end of the free-slot list. */
#define TK__NO_SLOT UINT32_MAX

/* Where a timer slot stands. */
enum tk__timer_state {
    TK__TIMER_FREE = 0,      /* on the free list */
    TK__TIMER_SCHEDULED = 1, /* in heaps[clock] */
    TK__TIMER_PARKED = 2,    /* due, in `parked`, waiting for one of its modes */
    TK__TIMER_FIRING = 3,    /* a one-shot whose callback is running */
    TK__TIMER_CANCELLED = 4, /* cancelled while a callback of it runs; freed when the last returns */
    TK__TIMER_DEFERRED = 5,  /* came due in a nested run while a callback of it runs: in
                              * `parked`, back in its heap when that callback returns */
    TK__TIMER_HELD = 6,      /* due, but got its deadline during the pass going on (or a
                              * nested run's since): held in its heap (out of heap order)
                              * so that the pass reaches the due timers behind it, and
                              * back in order when that pass ends, to fire in a later one */
};

/*
 * One timer's record: in the table (timers[slot]), or in the caller's memory
 * (a tk_timer_record, which slots[slot].record then points at). The deadline
 * is not here: it lives in the timer's heap (or parked) entry, next to the
 * key the heap compares; positions[slot] says where that entry is (and, for
 * a free slot, which slot is free next).
 */
typedef struct __attribute__((__may_alias__)) tk__timer {
    tk_timer_fn fn;
    void *context;
    int64_t interval;
    int64_t leeway; /* TK__PRECISE for a precise timer (whose leeway is 0) */
    union {
        /* A table record's: its slot's generation, in a loop with no slots
         * array (see tk_loop). */
        uint32_t generation;
        /* A record in the caller's memory: the slot the loop that holds it
         * gave it (see tk__caller_record). */
        uint32_t slot;
    };
    tk_mode_set modes;
    uint32_t placed_pass; /* the pass during which it got its deadline */
    uint8_t clock;
    uint8_t state;
    uint16_t callbacks;   /* callbacks of it running now (nested runs can stack them) */
} tk__timer;

_Static_assert(sizeof(tk__timer) <= 48, "a timer record fits in 48 bytes");

/* In a timer record's modes, the bit that no mode has (TK_MODES_INVALID):
 * the timer was scheduled with TK_TIMER_COMMON, and a mode the loop makes
 * common is added to its modes. Masked off (TK_MODES_ALL) wherever the
 * modes are counted or reported. */
#define TK__COMMON_MARK TK_MODES_INVALID
/* A record in the caller's memory (tk_timer_record) is one of the caller's
 * objects, read and written here as a tk__timer: hence may_alias above. A
 * zeroed one is free. */
_Static_assert(TK__TIMER_FREE == 0, "a zeroed record is free");

/*
 * A record in the caller's memory: the timer's record, and the loop that
 * holds it, which with the record's slot names the timer without the table.
 * That is how tk_loop_cancel_record finds the timer from the record alone,
 * reading neither the slot's generation nor where its record is. `loop` is
 * written when a loop schedules the record and read only while the record
 * is in use (its state is not FREE); a zeroed record has none.
 */
typedef struct __attribute__((__may_alias__)) tk__caller_record {
    tk__timer timer;
    const struct tk_loop *loop;
} tk__caller_record;

_Static_assert(sizeof(tk__caller_record) <= sizeof(tk_timer_record) &&
                   _Alignof(tk__caller_record) <= _Alignof(tk_timer_record),
               "a tk_timer_record holds a timer record and its loop");
_Static_assert(offsetof(tk__caller_record, timer) == 0,
               "a caller's record is read as a timer record");

/*
 * What a slot holds besides its record and position, once the loop has
 * scheduled a timer with a record of the caller's: the generation its
 * handles carry, and where its record is: in the caller's memory
 * (tk_loop_schedule_record), NULL for the table's own, or, for a free slot,
 * a record that says it is free (see timer_at in timers.c). A cancel through
 * a record in the caller's memory reads neither this nor the table's record
 * to find the timer: it reads the position, and writes this once the timer
 * is done (a free slot's generation moves on when a timer takes it).
 */
typedef struct tk__slot {
    tk__timer *record;
    uint32_t generation;
} tk__slot;

/* The leeway recorded for a precise timer: its wake-up comes the loop's
 * margin before its deadline instead of up to a leeway after it. */
#define TK__PRECISE INT64_C(-1)

struct tk_loop {
    pthread_mutex_t lock;

    /* The timer table: records, positions and slots, indexed by slot. The
     * slots array is made for the loop's first timer with a record of the
     * caller's (tk_loop_schedule_record); until then it is NULL, each slot's
     * generation is in its table record, and a free slot's table record says
     * it is free, so a loop that never schedules one pays nothing for them.
     * With slots, a slot whose timer's record is in the caller's memory
     * leaves timers[slot] as it was: a table record is only written by the
     * timers that use it. */
    tk__timer *timers;
    uint32_t *positions;
    tk__slot *slots;
    uint32_t timer_capacity;
    uint32_t free_slot;
    uint32_t next_seq;
    uint32_t pass; /* counts passes; a timer placed during the current pass waits */
    uint32_t slots_used; /* slots off the free list: live timers, pending or not */
    /* Live timers whose records are the caller's, and the hold the loop
     * keeps while there are any (tk_loop_set_hold). */
    uint32_t records_held;
    tk_hold_fn hold_fn;
    void *hold_context;
    /* Offsets both halves of every handle the loop gives out, so that a
     * handle from another loop names no timer here (see make_id). */
    uint32_t handle_key;

    /* Pending timers: per clock a heap; due ones outside the mode are parked. */
    tk__heap heaps[TK_CLOCK_COUNT];
    tk__heap parked; /* unordered, parked and deferred; the heap type is used as a plain array */
    tk_mode_set parked_modes; /* a superset of the modes of parked (not deferred) timers */
    /* The loop's common modes (tk_loop_add_common_modes): a timer scheduled
     * with TK_TIMER_COMMON is in each of them, and carries TK__COMMON_MARK. */
    tk_mode_set common_modes;
    uint32_t clock_timers[TK_CLOCK_COUNT]; /* scheduled + parked, per clock */
    uint32_t mode_timers[TK_MODE_COUNT];   /* scheduled + parked, per mode */

    /* Running. */
    int manual;
    int depth;         /* nested tk_loop_run / tk_loop_advance calls */
    int advancing;     /* inside tk_loop_advance */
    int fire_calls;    /* callbacks running under tk_loop_fire */
    int releasing;     /* release handlers running */
    pthread_t owner;   /* the thread running the loop while depth > 0 */
    unsigned mode;     /* the mode of the innermost run */
    /* The innermost tk_loop_run going on (NULL: none), which tk_loop_stop
     * asks to return; with none going, `stop_next` holds a stop for the
     * next run. */
    struct tk__run *run;
    int stop_next;
    int wakeup_requested;
    int sleeping;      /* the running thread is in epoll_wait */
    int spinning;      /* ... or spinning for a precise timer (precision.c) */
    tk_clock spin_clock;   /* while spinning: until `spin_clock` reads */
    int64_t spin_deadline; /* `spin_deadline` */
    int spin_interrupt;    /* set (atomically) to end a spin early */

    /* The kernel side (real loops; manual loops use epoll for fds only). */
    int epoll_fd;
    int wake_fd;
    int timer_fds[TK_CLOCK_COUNT];
    int64_t armed[TK_CLOCK_COUNT]; /* what each timerfd is armed for */

    /* Manual clocks. */
    int64_t manual_now[TK_CLOCK_COUNT];
    /* A wall-clock step to report at the next pass: set by
     * tk_loop_set_manual_time, or, on a real loop, by arming the wall
     * timerfd when the kernel answers that the clock stepped (see arm). */
    int wall_step_pending;

    /* Frame tickers whose timer the loop let go of after an error: still
     * the caller's to destroy, and freed with the loop otherwise (see
     * frame_ticker.c). */
    struct tk_frame_ticker *stopped_tickers;

    tk_clock_change_fn clock_change_fn;
    void *clock_change_context;
    tk_wakeup_fn wakeup_fn;
    void *wakeup_context;
    tk_release_fn release_fn;

    tk__watch_table watches;
    uint32_t watch_generation;
    /* An unwatch could not remove its fd's epoll registration (the fd was
     * closed first): one may live on, for a file open elsewhere, until the
     * loop's thread rebuilds the epoll instance (see handle_events). */
    int stale_registrations;
    /* Counts the loop's epoll_wait calls: a batch of events being handed
     * out stops once a nested run has polled (see handle_events). */
    uint32_t polls;
    /* The watches whose callbacks run now, innermost first: frames on the
     * stack of handle_events (loop.c), so that a nested run leaves their fds
     * alone until the callbacks return. */
    struct tk__io_call *io_calls;

    /* Precise timers: how many are scheduled or parked, and how they are
     * served (see tk_loop_set_precision). */
    uint32_t precise_timers[TK_CLOCK_COUNT];
    int64_t precision_margin;
    int precision_priority;
    int precision_thread;  /* tune the running thread (tk_loop_set_precision) */
    uint32_t precision_generation; /* counts tk_loop_set_precision calls */
    /* The running thread: the settings generation it was tuned for, and
     * what the outermost run changed on it, to put back on return. */
    uint32_t tuned_generation;
    int tuned_slack;
    int tuned_policy;
    unsigned long saved_slack;
    int saved_policy;
    int saved_priority;

    tk_loop_stats stats;
};

/* How many heap nodes a real loop's wake-up search may visit (see
 * tk__timers_wake_target); manual loops search exactly. */
#define TK__WAKE_SEARCH_LIMIT 1024

/* timerfd state: not armed. (A target of INT64_MIN is armed as the instant
 * after it; "never" on a wall clock watched for steps is FAR_FUTURE.) */
#define TK__DISARMED INT64_MIN

/* timers.c */
TK__INTERNAL void tk__timers_init(tk_loop *loop);
/* The index of the one mode in `modes` (0, the empty set, is the default
 * mode), or -EINVAL for a set of several modes or an invalid one. */
TK__INTERNAL int tk__mode_index(tk_mode_set modes);
/* A handle key no other loop created by this process has (for 2^32 loops). */
TK__INTERNAL uint32_t tk__next_handle_key(void);
/* tk_loop_reschedule for a frame ticker's own timer, which the public call
 * refuses (-EPERM); this refuses any other timer the same way. */
TK__INTERNAL int tk__timers_rearm_ticker(tk_loop *loop, tk_timer_id timer,
                                         const tk_timer_spec *spec);
/* Frees the table, handing each live timer's context to the release handler. */
TK__INTERNAL void tk__timers_free(tk_loop *loop);

/*
 * One pass: fires, in deadline order, every due timer of `mode` that was
 * scheduled before the pass began, parking due timers of other modes.
 * `now` holds the pass time on each clock. Returns the number of callbacks
 * run, or -ENOMEM. Called and returns with the lock held; drops it around
 * each callback. With `stoppable`, returns early once a stop is requested.
 */
TK__INTERNAL int64_t tk__timers_fire_due(tk_loop *loop, unsigned mode,
                                         const int64_t now[TK_CLOCK_COUNT], int stoppable);

/*
 * The earliest wake-up target on `clock` among the timers of `mode`: a
 * timer's deadline + leeway, or, for a precise timer on a real loop, its
 * deadline less the margin; INT64_MAX if none. If the target is a precise
 * timer's, `*precise_deadline` (unless NULL) gets that timer's deadline, and
 * INT64_MAX otherwise. `visit_limit` (0: none) bounds the search; past it the
 * result may be earlier than the exact answer, which only costs a wake-up.
 */
TK__INTERNAL int64_t tk__timers_wake_target(const tk_loop *loop, tk_clock clock,
                                            unsigned mode, uint32_t visit_limit,
                                            int64_t *precise_deadline);

/*
 * The earliest wake-up target on `clock` among the timers of `mode` that lies
 * after `after` (for a manual loop: no margin, no visit limit); INT64_MAX if
 * none.
 */
TK__INTERNAL int64_t tk__timers_wake_target_after(const tk_loop *loop, tk_clock clock,
                                                  unsigned mode, int64_t after);

/*
 * The earliest moment on `clock` by which a timer of `mode` must fire: a
 * timer's deadline + leeway, or a precise timer's deadline; INT64_MAX if
 * none. `visit_limit` as above: past it the result may be earlier than the
 * exact answer (a deadline), never later.
 */
TK__INTERNAL int64_t tk__timers_due_by(const tk_loop *loop, tk_clock clock, unsigned mode,
                                       uint32_t visit_limit);

/* Whether a timer of `mode` is parked (due, waiting for a pass in one of its
 * modes). Makes parked_modes exact when it has to look. */
TK__INTERNAL int tk__timers_parked_in(tk_loop *loop, unsigned mode);

/* The loop's common modes (tk_loop_add_common_modes), read under its lock. */
TK__INTERNAL tk_mode_set tk__loop_common_modes(tk_loop *loop);

/* loop.c */

/* Creates the timerfd for `clock` if the loop has none yet. 0 or -errno. */
TK__INTERNAL int tk__loop_open_clock(tk_loop *loop, tk_clock clock);

/* A timer of `modes` was scheduled on `clock`: the loop must wake for it by
 * `target` and fire it by `due_by` (its deadline + leeway, or a precise
 * timer's deadline). If the loop is asleep in a run of one of those modes
 * and `target` is earlier than what `clock`'s timerfd is armed for, re-arms
 * it; if it is spinning and `due_by` comes before the spin ends, ends the
 * spin. Lock held. */
TK__INTERNAL void tk__loop_note_target(tk_loop *loop, tk_clock clock, tk_mode_set modes,
                                       int64_t target, int64_t due_by);

/* Calls the clock-change function with the lock dropped. */
TK__INTERNAL void tk__loop_report_clock_change(tk_loop *loop);

/* Wakes the loop if it sleeps in epoll_wait. 0 or -errno. Lock held. */
TK__INTERNAL int tk__loop_kick(tk_loop *loop);

/* Claims the loop for the calling thread (depth++), or -EBUSY. */
TK__INTERNAL int tk__loop_enter(tk_loop *loop, int advancing);
TK__INTERNAL void tk__loop_leave(tk_loop *loop);

/* A tk_loop_run going on, in its caller's frame, as CFRunLoop keeps its
 * per-run data: whether a stop was asked of it, and the run around it. A
 * stop is the run's that is innermost as it is asked, so a run nested after
 * it begins without one. */
typedef struct tk__run {
    struct tk__run *outer;
    int stop;
} tk__run;

/* Begins `run` as the innermost (after tk__loop_enter): the outermost takes
 * a stop asked for the next run. Lock held. */
TK__INTERNAL void tk__run_begin(tk_loop *loop, tk__run *run);
/* Ends the innermost run (before tk__loop_leave). A stop it did not take
 * (it returned an error first) is the run's around it, or the next run's,
 * so that none is lost. Lock held. */
TK__INTERNAL void tk__run_end(tk_loop *loop, tk__run *run);

/* Whether a stop asks the innermost run to return. Lock held. */
static inline int tk__stop_due(const tk_loop *loop) {
    return loop->run != NULL ? loop->run->stop : loop->stop_next;
}

/* Takes the innermost run's stop: 1 if there was one, else 0. Lock held. */
static inline int tk__stop_take(tk_loop *loop) {
    if (loop->run == NULL || !loop->run->stop) return 0;
    loop->run->stop = 0;
    return 1;
}

/* precision.c */

/* Applies the loop's thread settings (timer slack, SCHED_FIFO) to the
 * calling thread as its outermost run begins, if tk_loop_set_precision asked
 * for them. 0 or -errno, with the thread left as it was. Lock held. */
TK__INTERNAL int tk__precision_enter(tk_loop *loop);
/* At the start of a pass: applies settings changed since the thread was
 * tuned (tk_loop_set_precision called while the loop runs). 0 or -errno.
 * Lock held. */
TK__INTERNAL int tk__precision_retune(tk_loop *loop);
/* Puts back what the run changed on its thread. Lock held. */
TK__INTERNAL void tk__precision_leave(tk_loop *loop);

/*
 * If a precise timer of `mode` is due within the loop's margin, and before
 * `until_ns` on the monotonic clock, spins with the lock dropped until its
 * deadline, counts the spin, and returns 1; otherwise returns 0 at once.
 * The spin ends earlier where another timer of `mode` (on any clock) must
 * fire earlier (tk__timers_due_by), or at `until_ns`; none is due already
 * when it starts. Lock held.
 */
TK__INTERNAL int tk__precision_spin(tk_loop *loop, unsigned mode, int64_t until_ns);

/* manual.c */

/*
 * How many passes more a manual advance or run makes at one time, after its
 * first there, for wake-ups due at once (a timer rescheduled due at once, a
 * wake-up asked for during a pass); then it moves on, so that work due again
 * at every pass cannot hold its time, as a real loop's time moves on its own.
 */
#define TK__SAME_TIME_PASSES 64

/* The passes an advance or run made at one time after the first, and the
 * monotonic and boot readings of that time: a callback that moves them (a
 * nested run, tk_loop_set_manual_time) starts a new count. (The wall clock
 * may step back and forth: it starts none.) */
typedef struct tk__same_time {
    int passes;
    int64_t monotonic, boot;
} tk__same_time;

/* A count of no passes yet, at the loop's current monotonic and boot
 * readings (a real loop, whose time moves on its own, makes no count). */
TK__INTERNAL tk__same_time tk__same_time_start(const tk_loop *loop);

/* Whether the monotonic or boot clock has moved since `*same_time`'s
 * readings (a callback moved it). */
TK__INTERNAL int tk__same_time_moved(const tk_loop *loop, const tk__same_time *same_time);

/* Starts a new count if the clocks have moved since `*same_time`'s: 1 if
 * they had, else 0. */
TK__INTERNAL int tk__same_time_sync(const tk_loop *loop, tk__same_time *same_time);

/*
 * Moves a manual loop's three clocks together to the next wake-up of `mode`
 * (the earliest deadline + leeway among its timers, or at once if a timer of
 * the mode is parked) and returns 1, or, if that lies beyond `end` on the
 * monotonic clock or there is none, moves them to `end` (never back) and
 * returns 0. Counts a wake-up for each 1. `*same_time` counts the passes
 * made at this time after the first (the caller's own passes at one time
 * count too): once it reaches TK__SAME_TIME_PASSES, only a wake-up after
 * the clocks' readings counts. The step starts a new count if the clocks
 * moved, and adds one if not. Lock held.
 */
TK__INTERNAL int tk__manual_step(tk_loop *loop, unsigned mode, int64_t end,
                                 tk__same_time *same_time);

#endif /* TK_LOOP_INTERNAL_H */
