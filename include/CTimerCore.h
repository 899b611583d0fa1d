/*
 * CTimerCore: the C timing core of TimerKit.
 *
 * Clocks, a deadline heap with O(log n) cancel, and an event loop that sleeps
 * on one timerfd per clock and watches file descriptors with epoll. Linux only.
 *
 * Conventions
 *   - Public names start with `tk_`; internal ones with `tk__`.
 *   - Every function that can fail returns 0 (or a non-negative count) on
 *     success and a negative errno value on failure. Results come back through
 *     pointer arguments. No function aborts on bad input, and a failed call
 *     leaves everything already scheduled untouched.
 *   - Times are signed 64-bit nanoseconds. Deadlines are absolute readings of
 *     the timer's clock. Arithmetic that would overflow saturates at INT64_MAX
 *     (a deadline of INT64_MAX never comes).
 *
 * Only <stdint.h>, <stddef.h> and <time.h> are included: everything here is
 * also what Swift sees through the module map.
 *
 * Compatibility
 *   - TK_API_VERSION grows by one with every change to this header that
 *     changes what existing code means; test it with #if to support several.
 *   - Struct fields are only ever added at the end, and a zero field means
 *     what the version before did, so a zero-initialised struct (`= {0}`, or
 *     designated initializers) keeps its meaning.
 *   - A change that would make existing code silently do something else is
 *     made so that the code fails loudly instead: it stops compiling, or the
 *     call returns -EINVAL. The changes, newest first:
 *      19  A fix to what the header always said: tk_loop_take_stop
 *          takes a stop asked during tk_loop_advance, in which no run goes
 *          on (it returned 0 until the advance returned).
 *      18  Added: a loop's common modes (tk_loop_add_common_modes,
 *          TK_TIMER_COMMON, TK_FRAME_COMMON,
 *          tk_frame_ticker_join_common_modes); tk_timer_info's flags
 *          report TK_TIMER_COMMON.
 *      17  Added: tk_loop_set_hold, and tk_loop_cancel_record's result 2,
 *          which only a loop with a hold gives.
 *      16  Added: tk_clock_now_kernel.
 *      15  A stop is the run's that was innermost when it was asked for,
 *          as the header always said: a run that a callback starts after
 *          asking it (a nested run that pumps the loop) no longer takes it,
 *          and the run it was asked of returns after that callback. A stop
 *          whose run returns an error before taking it is the run's
 *          around it. tk_frame_ticker_set_rate before the first frame
 *          anchors the new grid where the old one was anchored, not at
 *          now (calls more often than once a period put the first frame
 *          off for as long as they came).
 *      14  A manual advance, or run with a deadline, makes at most 65
 *          passes at one time (the first and 64 more), counting those for
 *          timers due at once and for wake-ups asked for, then moves to the
 *          next wake-up later than that time (a timer that its callback
 *          reschedules due at once made the call pass at one time without
 *          end). A fix to
 *          what the header always said: a stop asked for by a
 *          descriptor's callback or by the clock-change function ends the
 *          run after that callback (the wake-up handler still ran after a
 *          descriptor's, and the pass's timers after the clock-change
 *          function's).
 *      13  A manual run with a deadline serves a pending wake-up before it
 *          moves time, up to 64 passes more at one time (it moved time past a
 *          wake-up asked for during a pass, so work posted by the wake-up
 *          handler waited for a later timer, or for the next run). Fixes to what
 *          the header always said, at the ends of int64 time: a frame
 *          ticker whose next grid point lies 2^64 - 1 ns after its anchor
 *          no longer re-fires without end (the point wrapped to the
 *          anchor), and one whose next point lies past INT64_MAX delivers
 *          no frame through tk_loop_fire.
 *      12  A precise run leaves a SCHED_DEADLINE thread's policy alone (it
 *          gave the thread SCHED_FIFO, and left it there after the run, as
 *          the kernel refuses SCHED_DEADLINE through the call that puts a
 *          policy back). tk_loop_reschedule refuses a frame ticker's
 *          timer, named by a guessed handle, with -EPERM, and leaves it
 *          as it was (it took the new spec, which the ticker did not know
 *          of: a later deadline held its frames back, a leeway made them
 *          late, and the ticker went on reporting its own grid).
 *      11  Fixes to what the header always said, which no code could be
 *          made to fail loudly for: a precise loop's run puts back the
 *          thread's scheduling policy and priority as the kernel had them
 *          (it put back what pthread_getschedparam said, which misses a
 *          change made with sched_setscheduler since its first answer, and
 *          dropped SCHED_RESET_ON_FORK); a frame ticker whose timer is
 *          cancelled or fired through a guessed handle is stopped, with
 *          the error -ECANCELED (it looked running, and delivered nothing);
 *          tk_loop_unwatch_fd of a fd closed while its file stays open
 *          elsewhere ends the loop's wake-ups for it (they went on, and the
 *          loop spun, until the file was closed everywhere); tk_strerror(0)
 *          is "Success" with every C library.
 *      10  Fixes to what the header always said, which no code could be
 *          made to fail loudly for: tk_frame_ticker_set_rate anchors the
 *          new grid at the latest frame's timestamp also after a resume or
 *          an earlier change of rate (it anchored at the restarted grid's
 *          point before its next frame); a manual loop's advance or run
 *          reaches a wake-up exactly INT64_MAX ns ahead (it took that
 *          distance for "no wake-up"), and a manual run with a deadline
 *          more than INT64_MAX ns ahead moves time all the way to it (it
 *          stopped INT64_MAX ns on). Documented: tk_loop_run and
 *          tk_loop_advance return -ENOMEM when a pass cannot grow its list
 *          of timers set aside.
 *       9  Added: tk_loop_cancel_record. tk_timer_record is 8 bytes larger
 *          (it also names the loop that holds it): code that allocates
 *          one must be compiled against this header.
 *       8  Added: TK_TIMER_KEEP_DEADLINE (tk_loop_reschedule only). A
 *          fix to what the leeway has always promised: a precise timer's
 *          spin ends when another timer of the mode must fire (it ran to
 *          the precise deadline, holding those timers up by up to the
 *          margin).
 *       7  A fix to what tk_loop_run always said, which no code could be
 *          made to fail loudly for: a run that returns right after a pass
 *          that fired timers (with TK_RUN_ONCE, or at its deadline) first
 *          handles the descriptors ready then and a wake-up asked for,
 *          without waiting, as every pass does (it returned before them, so
 *          a timer due at every pass kept them waiting through any number of
 *          TK_RUN_ONCE runs, and a run whose deadline had passed skipped
 *          them); TK_RUN_ONCE with a passed deadline returns TK_RUN_PASSED
 *          if that handled something; a nested run that polls ends the
 *          handing out of the outer pass's events.
 *       6  Added: tk_timer_record, TK_TIMER_RECORD_INIT,
 *          tk_loop_schedule_record, tk_loop_cancel_take.
 *       5  A manual loop's tk_loop_run with a deadline ends with a pass at
 *          its deadline, as a real run woken by its deadline does (it ended
 *          as tk_loop_advance does, without that pass, so a timer whose
 *          leeway reached past the deadline waited, and a due timer of
 *          another mode was not parked). Tests that relied on that can
 *          call tk_loop_advance over the same span instead.
 *       4  Added: tk_loop_take_stop.
 *       3  Added: precise timers (TK_TIMER_PRECISE, tk_precision,
 *          tk_loop_set_precision, tk_loop_get_precision), the spin counters
 *          at the end of tk_loop_stats and `flags` at the end of
 *          tk_timer_info. Code that allocates these two structs must be
 *          compiled against this header: the library fills the new fields.
 *       2  tk_timer_spec: the relative first fire is `delay_ns`;
 *          `deadline_ns` is absolute only and needs TK_TIMER_ABSOLUTE (without
 *          it, a non-zero `deadline_ns` is -EINVAL, so version-1 code that
 *          put a relative time there fails instead of firing at once). An
 *          empty mode set means the default mode. tk_loop_run and
 *          tk_loop_advance take their mode as a one-mode set, TK_MODES(i),
 *          like everything else (0, and so TK_MODE_DEFAULT, still means the
 *          default mode); a set of several modes is -EINVAL. A timer never
 *          fires while a callback of it runs (see tk_loop_run). Added:
 *          tk_loop_set_wakeup_handler, tk_loop_runs_on_this_thread.
 *       1  the first version.
 */
#ifndef CTIMERCORE_H
#define CTIMERCORE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** This header's API version; see "Compatibility" above. */
#define TK_API_VERSION 19

/* ------------------------------------------------------------------------
 * Types
 * ------------------------------------------------------------------------ */

/** The clocks a timer can be measured against. */
typedef enum tk_clock {
    /** Counts from boot, stops while the system is suspended. Cannot be set. */
    TK_CLOCK_MONOTONIC = 0,
    /** Counts from boot including time spent suspended. Cannot be set. */
    TK_CLOCK_BOOTTIME = 1,
    /** Wall-clock time since the Unix epoch. The user or NTP may step it. */
    TK_CLOCK_REALTIME = 2,
} tk_clock;

/** How many clocks there are; valid `tk_clock` values are below this. */
#define TK_CLOCK_COUNT 3

/**
 * A timer handle: a slot number with the slot's generation, both offset by a
 * key of the loop's. 0 is never a valid handle.
 *
 * A handle outlives its timer harmlessly: once the timer is cancelled or a
 * one-shot timer has fired, every call with the old handle returns -ENOENT,
 * even after the slot holds another timer, until the slot has been used
 * 2^32 - 1 times more (its generation has then come round).
 *
 * A handle belongs to the loop that gave it: another loop refuses it
 * (-ENOENT). Among the first 4,096 loops a process creates, a handle of one
 * can name a timer of another only once one of the two has room for more
 * than 744,616 timers (its table grows, doubling, to hold the most timers
 * pending at once, or to what tk_loop_reserve asked for) and has used one
 * of the slots past the 744,616th more than 744,616 times (each timer
 * scheduled in a slot is one use, however it ended). Among the first 65,536
 * loops, the same holds with 52,777.
 */
typedef uint64_t tk_timer_id;

/** The handle value that never names a timer. */
#define TK_TIMER_NONE ((tk_timer_id)0)

/**
 * A set of run-loop modes, one bit per mode: bit i is mode i, for 0 <= i < 32.
 * Every function takes modes this way, built with TK_MODES: a timer's modes
 * (it fires only while the loop runs one of them) and the one mode a run is
 * in alike. The empty set, 0, means the default mode, so a zero-initialised
 * spec fires in the default mode. What a mode means (default, tracking, ...)
 * is up to the caller. A loop also keeps a set of common modes, which a timer
 * scheduled with TK_TIMER_COMMON is in, including those added later (see
 * tk_loop_add_common_modes).
 */
typedef uint32_t tk_mode_set;

/** How many modes a loop distinguishes: modes 0 to 30 (bit 31 is not a mode). */
#define TK_MODE_COUNT 31

/** The set of every mode: a timer in it fires whatever mode the loop runs. */
#define TK_MODES_ALL ((tk_mode_set)0x7FFFFFFFu)

/** Bit 31, which no mode has: a set holding it is invalid everywhere (-EINVAL). */
#define TK_MODES_INVALID ((tk_mode_set)0x80000000u)

/**
 * The index of mode 0, the mode a loop runs in unless told otherwise:
 * TK_MODES(TK_MODE_DEFAULT) is its set. (As a set, TK_MODE_DEFAULT is empty,
 * which also means the default mode.)
 */
#define TK_MODE_DEFAULT 0u

/**
 * The set holding only mode `mode` (an index in [0, TK_MODE_COUNT)). Never an
 * out-of-range shift: an index outside that range gives TK_MODES_INVALID,
 * which every function rejects with -EINVAL (it would not do to make it the
 * empty set, which means the default mode). Sets combine with `|`. A constant
 * expression when `mode` is one; `mode` is evaluated twice.
 */
#define TK_MODES(mode)                                                         \
    ((unsigned long long)(mode) < TK_MODE_COUNT                                \
         ? (tk_mode_set)1u << ((unsigned)(mode) & 31u)                         \
         : TK_MODES_INVALID)

/** Readiness events for watched file descriptors (same values as epoll's). */
#define TK_IO_READABLE 0x001u
#define TK_IO_WRITABLE 0x004u
/** Reported only: an error condition, or the peer hung up. */
#define TK_IO_ERROR 0x008u
#define TK_IO_HANGUP 0x010u

/** Opaque event loop. */
typedef struct tk_loop tk_loop;

/**
 * Called when a timer fires, on the thread running the loop, with no loop
 * lock held: the callback may schedule, reschedule or cancel any timer,
 * including `timer` itself, and may stop the loop.
 *
 * `missed` is 0 for a timer that fired on time. For a repeating timer that
 * fired so late that whole periods passed, it is the number of fires skipped
 * (the timer fires once, not once per missed period), judged when the
 * callback is called: a slow callback before it in the same pass counts. A one-shot timer is no
 * longer scheduled when its callback runs, unless the callback reschedules it.
 */
typedef void (*tk_timer_fn)(tk_loop *loop, tk_timer_id timer, uint64_t missed,
                            void *context);

/** Called when a watched descriptor is ready; `events` is a TK_IO_* mask. */
typedef void (*tk_io_fn)(tk_loop *loop, int fd, uint32_t events, void *context);

/**
 * Called when the loop lets go of a timer's context for good, or of its
 * hold's (tk_loop_set_hold); see tk_loop_set_release_handler.
 */
typedef void (*tk_release_fn)(tk_loop *loop, void *context);

/**
 * Called when the loop's hold begins; see tk_loop_set_hold.
 */
typedef void (*tk_hold_fn)(tk_loop *loop, void *context);

/**
 * Called when the wall clock (CLOCK_REALTIME) was stepped: set by a user, an
 * NTP daemon, or (on a manual loop) tk_loop_set_manual_time.
 */
typedef void (*tk_clock_change_fn)(tk_loop *loop, void *context);

/**
 * What a timer should do: when, how often, how precisely, in which modes.
 * The first fire is given one of two ways, each in a field of its own:
 *
 *     tk_timer_spec in_5ms = {.delay_ns = 5000000};               // relative
 *     tk_timer_spec at_t = {.deadline_ns = t, .flags = TK_TIMER_ABSOLUTE};
 *
 * A zero-initialised spec is a one-shot on the monotonic clock, due now, in
 * the default mode.
 */
typedef struct tk_timer_spec {
    /** The clock the first fire is measured on. */
    tk_clock clock;
    /**
     * Relative: fire this many nanoseconds from now on `clock` (a value below
     * 0 counts as 0). Read unless TK_TIMER_ABSOLUTE is in `flags`; must be 0
     * when it is.
     */
    int64_t delay_ns;
    /**
     * Absolute: fire when `clock` reads this. Read only with
     * TK_TIMER_ABSOLUTE in `flags`; must be 0 otherwise (-EINVAL), so that a
     * time put in the wrong field fails instead of firing at the wrong time.
     */
    int64_t deadline_ns;
    /** 0 for a one-shot timer; the period of a repeating timer (> 0). */
    int64_t interval_ns;
    /**
     * How late the timer may fire so that its wake-up can be shared with
     * other timers (>= 0). Never early: the timer fires in
     * [deadline, deadline + leeway] unless the thread is busy. A repeating
     * timer's leeway is clamped to interval / 2. The loop wakes for the
     * timer at deadline + leeway at the latest; where that sum reaches
     * INT64_MAX, which never comes, the timer fires only at a wake-up that
     * something else brings.
     */
    int64_t leeway_ns;
    /** The modes the timer fires in; 0 (the empty set) means the default mode. */
    tk_mode_set modes;
    /** 0, or TK_TIMER_ABSOLUTE, TK_TIMER_PRECISE and/or TK_TIMER_COMMON;
     * for tk_loop_reschedule, TK_TIMER_KEEP_DEADLINE instead of
     * TK_TIMER_ABSOLUTE. */
    uint32_t flags;
} tk_timer_spec;

/** The first fire is `deadline_ns`, an absolute reading of the timer's clock. */
#define TK_TIMER_ABSOLUTE 0x1u

/**
 * A precise timer: the loop wakes a margin before its deadline and spins on
 * the clock until the deadline, so the wake-up's own latency (tens to
 * hundreds of microseconds on a loaded machine) is not added to the fire.
 * The cost is the CPU time spent spinning, counted in tk_loop_stats. The
 * margin, and the real-time priority the loop's thread may ask for, are the
 * loop's: see tk_loop_set_precision. A precise timer has no leeway (a
 * non-zero `leeway_ns` is -EINVAL). On a manual loop it is a timer with no
 * leeway: manual time never needs a spin. The loop's search for its next
 * wake-up looks at up to 1,024 timers; with more than that on the clock
 * coming due earlier outside the running mode, a precise timer behind them
 * may be woken for late, and fire late by up to the margin (never early).
 */
#define TK_TIMER_PRECISE 0x2u

/**
 * For tk_loop_reschedule only: the timer keeps its next deadline, the one
 * tk_loop_timer_info reports, and the rest of the spec (interval, leeway,
 * precision, modes) replaces what it had. The deadline is read and kept in
 * one step under the loop's lock, so no fire on the loop's thread can come
 * between the two: reading the deadline with tk_loop_timer_info and passing
 * it back with TK_TIMER_ABSOLUTE can put a repeating timer back on a
 * deadline it has just fired for, which then fires again. `delay_ns` and
 * `deadline_ns` must be 0, TK_TIMER_ABSOLUTE must not be set, and `clock`
 * must be the timer's (-EINVAL otherwise). A timer with no next deadline,
 * a one-shot whose callback is running, gives -ENOENT. tk_loop_schedule
 * and tk_loop_schedule_record refuse the flag (-EINVAL). (API version 8.)
 */
#define TK_TIMER_KEEP_DEADLINE 0x4u

/**
 * The timer is in the loop's common modes as well as in `modes`: in those
 * the loop has when the spec is applied, and in each that
 * tk_loop_add_common_modes adds while the timer lives, as a run loop's
 * "common modes" item is. The flag holds for as long as the timer's spec
 * says so: a tk_loop_reschedule without it leaves the timer in `modes`
 * alone. (API version 18.)
 */
#define TK_TIMER_COMMON 0x8u

/** What tk_loop_timer_info reports of a scheduled timer. */
typedef struct tk_timer_info {
    tk_clock clock;
    /** The absolute deadline of the next fire. */
    int64_t deadline_ns;
    int64_t interval_ns;
    /** The leeway in force (after clamping). */
    int64_t leeway_ns;
    /** The modes in force (never empty: an empty spec set reads as the default mode's). */
    tk_mode_set modes;
    /** 1 if a pass of a mode outside the timer's set found it due (it
     * waits to fire in a mode of its set). A tk_loop_advance in another
     * mode that carries time past its deadline makes no pass at the end of
     * its span: the timer is marked by the next pass that finds it due. */
    int waiting_for_mode;
    /** TK_TIMER_PRECISE for a precise timer, and TK_TIMER_COMMON for one
     * in the loop's common modes (`modes` then holds them). (API versions
     * 3 and 18.) */
    uint32_t flags;
} tk_timer_info;

/** Counters a loop keeps about itself. */
typedef struct tk_loop_stats {
    /**
     * Timers scheduled and not yet fired or cancelled. A frame ticker that
     * runs (paused or not) has one timer of its own here, except while its
     * callback runs (the timer is a one-shot, scheduled again after it).
     */
    uint64_t pending;
    /**
     * Times the loop returned from waiting in epoll_wait (a TK_RUN_NOWAIT
     * run's epoll_wait, which does not wait, among them), or, manual, moved
     * time to a target or to a run's deadline. The poll without waiting
     * that ends a pass after which a run returns is not one, nor are a
     * manual run's polls between moves of time.
     */
    uint64_t wakeups;
    /**
     * Timer callbacks run, a frame ticker's timer's among them (one each
     * time it fires, whether a frame was delivered or not).
     */
    uint64_t fired;
    /** timerfd_settime calls made to arm the clocks. */
    uint64_t arms;
    /** Times the wall clock was seen to step. */
    uint64_t clock_changes;
    /** Spins made to meet precise timers' deadlines (API version 3). */
    uint64_t spins;
    /**
     * Nanoseconds spent in those spins, on the monotonic clock: what precise
     * timers cost, in CPU time, since a spinning thread holds its CPU
     * throughout unless the kernel preempts it (API version 3).
     */
    uint64_t spin_ns;
} tk_loop_stats;

/** Why tk_loop_run returned (non-negative results of tk_loop_run). */
typedef enum tk_run_result {
    /** tk_loop_stop was called. */
    TK_RUN_STOPPED = 0,
    /** The run's `deadline_ns` passed. */
    TK_RUN_TIMED_OUT = 1,
    /** With TK_RUN_ONCE or TK_RUN_NOWAIT: one pass was made. */
    TK_RUN_PASSED = 2,
} tk_run_result;

/** tk_loop_run flag: make one pass, waiting until something happens. */
#define TK_RUN_ONCE 0x1u
/** tk_loop_run flag: make one pass without waiting (with TK_RUN_ONCE too:
 * the pass does not wait either way). */
#define TK_RUN_NOWAIT 0x2u
/** tk_loop_run's `deadline_ns` for "no time limit". */
#define TK_FOREVER INT64_MAX

/* ------------------------------------------------------------------------
 * Clocks
 * ------------------------------------------------------------------------ */

/**
 * Reads `clock` into `*now_ns` (nanoseconds). Returns 0, or -EINVAL for an
 * unknown clock or a NULL pointer. Does not allocate; served by the vDSO.
 * A wall clock set past what the nanoseconds can hold (April 2262) reads
 * INT64_MAX, as everywhere the loop reads it (where every deadline but
 * INT64_MAX has passed); one set before September 1677 reads INT64_MIN.
 */
int tk_clock_now(tk_clock clock, int64_t *now_ns);

/**
 * Reads `clock` as tk_clock_now does, but through the system call rather
 * than the vDSO: the kernel's own reading, which a library preloaded to
 * change what clock_gettime returns (libfaketime) does not reach. A loop
 * arms its timers with the kernel, so where the two readings of the
 * monotonic or boot clock differ, its timers fire when the kernel's clock,
 * not the one read, reaches their deadlines: a program can compare the two
 * first and refuse to run. Returns 0, -EINVAL for an unknown clock or a
 * NULL pointer, -ENOSYS in a 32-bit build (where the system call's timespec
 * may not be <time.h>'s), or the system call's negative errno. Slower than
 * tk_clock_now (a system call each time). (API version 16.)
 */
int tk_clock_now_kernel(tk_clock clock, int64_t *now_ns);

/** Stores the resolution of `clock` in nanoseconds. 0 or -EINVAL. */
int tk_clock_resolution(tk_clock clock, int64_t *resolution_ns);

/**
 * Copies this boot's id (the 36-character UUID from
 * /proc/sys/kernel/random/boot_id) and a terminating NUL into `buffer`.
 * Returns 0, -EINVAL for NULL, -ERANGE if `size` < 37, or the negative errno
 * of opening or reading the file.
 */
int tk_boot_id(char *buffer, size_t size);

/**
 * Stores the calling thread's timer slack (how late the kernel may end its
 * sleeps, e.g. an epoll timeout; timerfds are not subject to it).
 */
int tk_timer_slack(int64_t *slack_ns);

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

/**
 * What an errno value means, in words: "Cannot allocate memory" for ENOMEM
 * or -ENOMEM (every tk_ function returns errors negated). Never NULL:
 * "Success" for 0, and for a value with no meaning "Unknown error" (the C
 * library's own words without glibc 2.32). Thread-safe; the string is
 * constant.
 */
const char *tk_strerror(int error);

/**
 * The symbolic name of an errno value, "ENOMEM" for ENOMEM or -ENOMEM, or
 * NULL for 0 and for a value with no name (and, on a C library other than
 * glibc 2.32 or later, for every value). Thread-safe; the string is constant.
 */
const char *tk_errno_name(int error);

/* ------------------------------------------------------------------------
 * Loops
 * ------------------------------------------------------------------------ */

/**
 * Creates a loop on the real clocks and stores it in `*loop`. It owns an
 * epoll instance, an eventfd and, once a timer uses a clock, that clock's
 * timerfd. Returns 0, -EINVAL, -ENOMEM, or the errno of epoll_create1 or
 * eventfd (e.g. -EMFILE); nothing is left allocated on failure.
 *
 * The kernel fires the loop's monotonic and boot timers on its own clocks.
 * In a process whose readings of those clocks a preloaded library fakes
 * (libfaketime without FAKETIME_DONT_FAKE_MONOTONIC=1), they fire at the
 * wrong times; a program can compare tk_clock_now with tk_clock_now_kernel
 * first, as TimerKit's TimerLoop does.
 */
int tk_loop_create(tk_loop **loop);

/**
 * Creates a loop on a manual clock: its three clocks start at `start_ns` and
 * move only through tk_loop_advance, tk_loop_run with a deadline (see
 * "Manual time" below) and tk_loop_set_manual_time. Timers fire when time is
 * moved past them, without sleeping; file descriptors can be watched as on a
 * real loop. For deterministic tests.
 */
int tk_loop_create_manual(tk_loop **loop, int64_t start_ns);

/**
 * Destroys the loop: every pending timer and watch is dropped without its
 * callback (the release handler sees each pending timer's context), and all
 * memory and descriptors are released. Returns 0, -EINVAL
 * for NULL, or -EBUSY while the loop is running, one of its callbacks runs
 * (also one run by tk_loop_fire) or its release handler runs, in which case
 * nothing is destroyed. No other call on the loop may overlap this one or
 * follow it, from any thread: the loop is gone when it returns 0.
 */
int tk_loop_destroy(tk_loop *loop);

/**
 * Makes room for `timers` pending timers on `clock`, beside the other timers
 * the loop holds (the clocks share one timer table: pending on the other
 * clocks, or out of their heap while a callback of theirs runs), so that
 * scheduling on `clock` until it has that many pending never allocates
 * (but for the loop's first tk_loop_schedule_record, which makes its array
 * of slots, once). Returns 0, -EINVAL, or -ENOMEM (also for more timers than
 * the table can index: `timers` and the others together must stay below
 * about 2^32).
 */
int tk_loop_reserve(tk_loop *loop, tk_clock clock, uint32_t timers);

/**
 * Reads `clock` as this loop sees it (the manual time on a manual loop).
 */
int tk_loop_now(tk_loop *loop, tk_clock clock, int64_t *now_ns);

/**
 * Runs the loop on the calling thread in `mode`, a set of one mode
 * (TK_MODES(i); 0 means the default mode), until tk_loop_stop is called,
 * or the monotonic clock reaches `deadline_ns`, an absolute reading
 * (TK_FOREVER for no limit), or,
 * with TK_RUN_ONCE, after one pass that waited for and handled something, or,
 * with TK_RUN_NOWAIT, after one pass without waiting. A loop with nothing to
 * do keeps waiting: another thread may schedule a timer or stop it.
 *
 * Each pass fires, in deadline order, every timer of the mode whose deadline
 * had passed when the pass began and that is still scheduled when its turn
 * comes (unless a stop ends the pass first). A timer a callback schedules or
 * reschedules fires in a later pass, even with a deadline long past, without
 * holding up the due timers behind it; a due timer of the mode that a nested
 * run in another mode sets aside is the pass's again once that run returns.
 * Then the pass handles ready descriptors (at most 64 a poll; the others
 * stay ready for the next, and epoll hands them out in turn) and a wake-up
 * asked for (see tk_loop_set_wakeup_handler), then the loop sleeps until the earliest
 * (deadline + leeway) among the mode's timers, so timers close together share
 * one wake-up. A pass after which the run returns (see the checks below)
 * does not sleep, but still polls, without waiting, and handles what is
 * ready, unless the poll that ended the pass before already handled
 * something or this pass fired nothing since it (and no spin came between):
 * so a timer due at every pass does not keep descriptors or wake-ups
 * waiting, and a TK_RUN_ONCE run hands a ready descriptor out once. When a
 * callback runs a nested run that polls, the rest of the events the outer
 * pass polled are dropped (they may be stale); what is still ready comes
 * at the outer run's next poll. A timer that came due while the loop ran a mode outside its
 * set fires once when the loop next runs a mode of its set.
 *
 * May be called from a callback of the same loop on the same thread (a
 * nested run, e.g. in another mode); tk_loop_stop ends the innermost run.
 * A timer never fires while a callback of it runs, as with CFRunLoop: a
 * nested run, in any mode, sets aside a timer whose callback called it (or
 * is running under tk_loop_fire), and the timer fires at the first pass after
 * that callback returns, once, a repeating timer with the periods skipped
 * meanwhile in `missed`. So a repeating timer whose callback runs the loop
 * does not recurse into itself.
 *
 * A precise timer (TK_TIMER_PRECISE) wakes the loop its margin early (see
 * tk_loop_set_precision); the pass fires what is due, and then, if a precise
 * timer of the mode is due within the margin, spins on the clock with no
 * lock held until its deadline and fires it in the next pass. No spin holds
 * up another timer of the mode: where one must fire earlier (by its
 * deadline + leeway, on any clock), the spin ends then, the next pass fires
 * it, and a later pass spins on to the precise deadline. A stop, a
 * wake-up, or a timer due earlier scheduled by another thread ends a spin
 * early; ready descriptors wait for it to end (at most the margin). The pass
 * after a spin polls the descriptors before any further spin, so a run of
 * precise timers does not starve them. TK_RUN_NOWAIT never spins, and no
 * spin goes past the run's `deadline_ns`: a run that ends within the margin
 * spins to its end.
 *
 * Returns a tk_run_result, -EINVAL for a NULL loop, a `mode` that is not
 * one mode (several, or TK_MODES_INVALID) or `flags` other than
 * TK_RUN_NOWAIT and TK_RUN_ONCE,
 * -EBUSY if another thread is running the loop or this is called from a
 * callback of tk_loop_advance, -EPERM if the loop's precision settings ask
 * for a SCHED_FIFO priority the thread may no longer have (see
 * tk_loop_set_precision), -ENOMEM if a pass could not make room to set
 * aside the due timers outside the mode (see "A pass that runs out of
 * memory" below), or
 * the negative errno of a failed epoll_wait / timerfd call.
 *
 * A pass that runs out of memory: a pass sets due timers outside its mode
 * (and timers whose callback is running) aside, in a list. When it starts,
 * it makes room there for every pending timer outside the mode, due or not,
 * which allocates only when the loop has more of them than it has made room
 * for before; a timer whose callback is running may need more room later.
 * If an allocation fails, the pass ends there, and no timer is lost: each that has
 * not fired is still scheduled, and fires at a later pass. If the pass had
 * fired something, the call goes on as after any pass (the next pass tries
 * again); if not, it returns -ENOMEM. Callbacks that earlier passes of the
 * call ran have run, and on a manual loop the clocks stay where the failing
 * pass was made.
 *
 * On a manual loop, a run with `deadline_ns` TK_FOREVER does not move time: it
 * fires what is due, handles descriptors and waits for them, a wake-up or a
 * stop. A run with any other `deadline_ns` never waits: it moves the manual
 * clocks itself, as tk_loop_advance does (see "Manual time" below),
 * polling the descriptors without blocking after each pass, until no
 * wake-up is left before `deadline_ns`. A wake-up asked for
 * (tk_loop_wakeup) is served by a pass before time moves, as a real run
 * does not sleep while one is pending: one that the wake-up handler asks
 * for again makes another pass at the same time, within the limit of 64
 * more passes at one time that "Manual time" below describes (then time
 * moves all the same, so that a handler that asks at every call cannot
 * hold the run), and none once the clock has reached `deadline_ns` (as a
 * real run returns after its pass at the deadline). Then, as a real run wakes for its
 * deadline, it moves the clocks to `deadline_ns` (a wake-up in the
 * statistics) and makes a last pass there, which fires every timer of the
 * mode whose deadline has passed, its leeway notwithstanding, and parks the
 * due timers of other modes; it returns TK_RUN_TIMED_OUT after that pass
 * (with none if the pass before it was made at or past `deadline_ns`; if
 * a callback of an earlier pass took the clock there, by a nested run or
 * tk_loop_set_manual_time, the last pass still follows), or TK_RUN_STOPPED
 * if stopped first. TK_RUN_NOWAIT makes one pass
 * at the current time; TK_RUN_ONCE moves time from wake-up to wake-up until
 * a pass has handled something.
 *
 * After each pass the checks come in this order: a stop (TK_RUN_STOPPED);
 * with TK_RUN_ONCE, something handled (TK_RUN_PASSED); a deadline reached
 * (TK_RUN_TIMED_OUT, with TK_RUN_NOWAIT too); then TK_RUN_NOWAIT
 * (TK_RUN_PASSED).
 */
int tk_loop_run(tk_loop *loop, tk_mode_set mode, int64_t deadline_ns, uint32_t flags);

/**
 * Asks the innermost tk_loop_run to return TK_RUN_STOPPED after its current
 * callback (a timer's, a descriptor's, the wake-up handler or the
 * clock-change function): nothing more of that pass runs, and what is left
 * (a wake-up asked for, ready descriptors, due timers) waits for the next
 * run. Safe from any thread and from callbacks. If the loop is not
 * running, the next run returns at once.
 *
 * The stop is the run's that is innermost as it is asked for, as with
 * CFRunLoopStop: a run that the callback starts after asking it (a nested
 * run that pumps the loop) runs as usual and does not take it, and the run
 * it was asked of returns once the callback does. A stop asked of a nested
 * run ends that run only, at any depth. If the run asked returns an error
 * before taking it (a stop from another thread that comes while its wait
 * fails), the stop is the run's around it, or, for the outermost, the next
 * run's (or tk_loop_take_stop's): no stop is lost. Stops asked of one run
 * before it takes them end it once. 0 or -EINVAL.
 */
int tk_loop_stop(tk_loop *loop);

/**
 * Takes a stop that no run has taken and none will: if tk_loop_stop was
 * called, no run has returned TK_RUN_STOPPED for it, and no run is running
 * (one on any thread takes its stops itself; none can begin during
 * tk_loop_advance, so a stop asked there is there to take), forgets it and
 * returns 1;
 * else 0 (-EINVAL for a NULL loop). For a thread whose run failed and that
 * goes on serving the loop some other way: a stop that came as the run
 * failed is then still there to take. (API version 4.)
 */
int tk_loop_take_stop(tk_loop *loop);

/**
 * Wakes a waiting tk_loop_run for one pass, from any thread, and has that
 * pass call the wake-up handler (see tk_loop_set_wakeup_handler). Wake-ups
 * asked for before the pass calls it are merged into one call. 0 or -errno.
 */
int tk_loop_wakeup(tk_loop *loop);

/**
 * Called on the thread running the loop, with no loop lock held, by the
 * pass that follows one or more tk_loop_wakeup calls; see
 * tk_loop_set_wakeup_handler.
 */
typedef void (*tk_wakeup_fn)(tk_loop *loop, void *context);

/**
 * Sets (or with NULL, clears) the wake-up handler: how a program has work
 * done on the loop's thread. Put the work in a queue of your own, then call
 * tk_loop_wakeup (from any thread); the next pass of tk_loop_run, in
 * whatever mode, calls `fn` once, which takes the work from the queue and
 * does it. A wake-up asked for while `fn` runs makes a further pass call it
 * again, so no work is left waiting. (tk_loop_advance makes no such pass.)
 * TimerKit's Swift executor runs its jobs this way. Returns 0 or -EINVAL.
 */
int tk_loop_set_wakeup_handler(tk_loop *loop, tk_wakeup_fn fn, void *context);

/**
 * 1 if the calling thread is running the loop (inside tk_loop_run or
 * tk_loop_advance, or a callback of it), 0 if not, -EINVAL for NULL.
 */
int tk_loop_runs_on_this_thread(tk_loop *loop);

/**
 * Sets (or with `fn` NULL, clears) the function called when the wall clock
 * is stepped. While set, the loop keeps a CLOCK_REALTIME timerfd armed with
 * TFD_TIMER_CANCEL_ON_SET, so a step is seen at once, even with no wall-clock
 * timer scheduled. Wall-clock timers are re-evaluated after a step whether or
 * not a function is set. Returns 0, -EINVAL for a NULL loop, or, when setting
 * a function, the negative errno of creating or arming that timerfd (e.g.
 * -EMFILE), in which case the function set before stays. Clearing cannot
 * otherwise fail.
 */
int tk_loop_set_clock_change_handler(tk_loop *loop, tk_clock_change_fn fn,
                                     void *context);

/**
 * Sets (or with NULL, clears) the function the loop calls, exactly once per
 * timer, when it will never again pass that timer's context to a callback:
 * when the timer is cancelled (or, if one of its callbacks is running at that
 * moment on another thread, when that callback returns), unless
 * tk_loop_cancel_take handed the context back instead, when a one-shot
 * timer's callback returns without rescheduling it, and for every pending
 * timer when the loop is destroyed. It runs with no loop lock held, on the
 * thread that caused it; it may call the loop (tk_loop_destroy from it
 * returns -EBUSY), except when called from tk_loop_destroy. It also gets the
 * context of the loop's hold when that ends (tk_loop_set_hold).
 * This is how a context that owns a reference (e.g. a retained object) is
 * released safely while other threads cancel. Set it before scheduling.
 */
int tk_loop_set_release_handler(tk_loop *loop, tk_release_fn fn);

/**
 * Gives the loop a hold on `context` for as long as it holds timers with
 * records of the caller's (tk_loop_schedule_record): one hold for all of
 * them, for a caller whose records keep the loop alive. That is how
 * TimerKit's TimerLoop stays alive while LoopTimers are scheduled on it,
 * where a reference to the loop per timer would cost two atomic operations
 * per schedule and cancel. (API version 17.)
 *
 *   - The hold begins when tk_loop_schedule_record schedules a timer while
 *     the loop holds no other timer with a record: that call calls
 *     `fn(loop, context)` under the loop's lock, before it returns (to
 *     retain an object, for example). `fn` must not call the loop or block.
 *   - It ends when the loop is done with the last such timer (see
 *     tk_loop_schedule_record). The call that ends it hands `context` to
 *     the release handler (tk_loop_set_release_handler), with no loop lock
 *     held, after it has handed on the timer's own context. That call is
 *     tk_loop_cancel, tk_loop_cancel_take, tk_loop_fire, tk_loop_run or
 *     tk_loop_advance (a one-shot's last callback returned), or
 *     tk_loop_destroy, after the contexts of the timers it frees. With no
 *     release handler, the hold just ends. tk_loop_cancel_record is the
 *     exception: it returns 2, and `context` is its caller's to release.
 *   - A hold can begin again after it ended, any number of times.
 *
 * A release handler that gets the hold runs inside one of those calls,
 * which goes on using the loop after it returns (tk_loop_destroy from it
 * returns -EBUSY): a caller whose hold keeps the loop alive keeps a
 * reference of its own across each of them, as TimerKit's run and fire do.
 *
 * The loop keeps `fn` and `context` until they are set again. A NULL `fn`
 * (with a NULL `context`) sets no hold, as before the first call. Set the
 * hold when no other thread can end it: whoever gets a hold that ended
 * (the release handler, or the caller of tk_loop_cancel_record) gets the
 * context set when it began, and a caller handed it back by 2 must know
 * which that was. Returns 0, -EINVAL for a NULL loop or a `context`
 * without `fn`, and -EBUSY while the loop holds a timer with a record (the
 * hold in force could not end as it began); the hold is then left as it
 * was.
 */
int tk_loop_set_hold(tk_loop *loop, tk_hold_fn fn, void *context);

/** Copies the loop's counters into `*stats`. 0 or -EINVAL. */
int tk_loop_get_stats(tk_loop *loop, tk_loop_stats *stats);

/* ------------------------------------------------------------------------
 * Precise timers
 * ------------------------------------------------------------------------ */

/** The margin a loop uses when none was set: 200 microseconds. */
#define TK_PRECISION_DEFAULT_MARGIN_NS 200000
/** The largest margin tk_loop_set_precision accepts: 100 milliseconds. */
#define TK_PRECISION_MAX_MARGIN_NS 100000000

/**
 * How a loop serves its precise timers (TK_TIMER_PRECISE), and what it asks
 * of the thread that runs it. A zero-initialised value is the default.
 *
 * Precision is chosen per timer, and tuned per loop: only the timers that
 * ask for it cost a spin, while the margin and the thread's settings belong
 * to the thread that runs the loop, which serves them all.
 */
typedef struct tk_precision {
    /**
     * How long before a precise timer's deadline the loop wakes and starts
     * spinning; 0 means TK_PRECISION_DEFAULT_MARGIN_NS. Up to
     * TK_PRECISION_MAX_MARGIN_NS. A wake-up later than the margin is not
     * made up for, so a larger margin absorbs worse wake-ups at the price of
     * a longer spin on every fire.
     */
    int64_t margin_ns;
    /**
     * 0: the thread's scheduling policy is left alone. 1 to 99: the thread
     * running the loop asks for SCHED_FIFO at this priority for as long as
     * it runs the loop (see tk_loop_set_precision). Callbacks then run at
     * that priority too, and a callback that never blocks can starve other
     * work on its CPU (the kernel's real-time throttling leaves others 5 %).
     * A thread running under SCHED_DEADLINE keeps that policy, which runs
     * ahead of every SCHED_FIFO thread already.
     */
    int realtime_priority;
    /** Must be 0. */
    uint32_t flags;
} tk_precision;

/**
 * Sets how `loop` serves precise timers (NULL: back to the default), and
 * turns on the thread settings of a precise loop:
 *   - While a thread runs the loop (from its outermost tk_loop_run until that
 *     returns), its timer slack (PR_SET_TIMERSLACK) is 1 ns, and, with a
 *     `realtime_priority`, its policy is SCHED_FIFO at that priority. Both are
 *     put back as they were when the run returns: the policy and priority
 *     the kernel gave the thread, however they were set (sched_setscheduler
 *     too), with SCHED_RESET_ON_FORK, which also stays on while the run
 *     has SCHED_FIFO. The slack tightens any
 *     sleep the callbacks make; the loop's own waits end on timerfds, which
 *     have no slack. (While the thread has SCHED_FIFO, a recent kernel
 *     reads its slack as 0, in PR_GET_TIMERSLACK and tk_timer_slack: a
 *     real-time thread's sleeps get no slack.)
 *   - The margin takes effect at once. The thread settings take effect when
 *     a run begins, or, if a thread is running the loop, at its next pass
 *     (the call wakes it). A manual loop's runs leave their thread alone
 *     and never spin; the call checks its arguments, and the permission
 *     for a priority, all the same.
 *
 * Precise timers spin whether or not this was called (with the default
 * margin and no thread settings); NULL turns the thread settings off again.
 *
 * Returns 0, -EINVAL for a NULL loop, a margin below 0 or above
 * TK_PRECISION_MAX_MARGIN_NS, a priority outside 0 to 99, or non-zero
 * flags, and -EPERM if the process may not run a thread at that SCHED_FIFO
 * priority (no CAP_SYS_NICE, and RLIMIT_RTPRIO below it): this is checked
 * here, by starting a thread with that policy, and the loop's settings stay
 * as they were (a thread that may not start threads, one running under
 * SCHED_DEADLINE, gets the error of starting one, -EAGAIN). If the
 * permission is gone by the time the loop's thread applies it, tk_loop_run
 * returns -EPERM (before its first pass, or at the pass that applies a
 * change). Never ignored silently.
 */
int tk_loop_set_precision(tk_loop *loop, const tk_precision *precision);

/**
 * Copies the loop's precision settings into `*precision` (the margin in
 * force, never 0). Returns 1 if tk_loop_set_precision set them (the thread
 * settings are on), 0 if they are the default, or -EINVAL.
 */
int tk_loop_get_precision(tk_loop *loop, tk_precision *precision);

/* ------------------------------------------------------------------------
 * Timers
 * ------------------------------------------------------------------------ */

/**
 * Schedules a timer and stores its handle in `*timer`. `fn` is called with
 * `context` each time it fires. Safe from any thread: if the loop is asleep
 * and this timer must wake it earlier, its timerfd is re-armed at once.
 *
 * Returns 0, or -EINVAL for a NULL argument, an unknown clock, a negative
 * leeway or interval, TK_MODES_INVALID in the modes, unknown flags, or a
 * first fire in the field its flags do not name (see tk_timer_spec), -ENOMEM when the timer
 * table cannot grow, or the negative errno of creating the clock's timerfd.
 * O(log n); no allocation once the table has room (see tk_loop_reserve).
 */
int tk_loop_schedule(tk_loop *loop, const tk_timer_spec *spec, tk_timer_fn fn,
                     void *context, tk_timer_id *timer);

/**
 * Room, in the caller's memory, for the loop's record of one timer (see
 * tk_loop_schedule_record), aligned as its type is. Its contents are the
 * loop's: zero it before its first use (TK_TIMER_RECORD_INIT, or memset),
 * and never write it after.
 */
typedef struct tk_timer_record {
    uint64_t opaque_[7];
} tk_timer_record;

/** A tk_timer_record ready for its first use. */
#define TK_TIMER_RECORD_INIT {{0}}

/**
 * As tk_loop_schedule, with the timer's record kept in `*record` instead of
 * the loop's table. The timer is the same in every other way: its handle
 * works with every call that takes one. The table still gives it a slot
 * (the heap position, the generation and a pointer to the record); the
 * table's own record for that slot goes unused and unwritten. A loop makes
 * its array of those slots, 16 bytes each, in O(n), for its first timer
 * with a record: a loop that never schedules one pays nothing for them.
 *
 * It is for a caller that keeps an object per timer anyway, such as a
 * language binding: with the record inside that object, cancelling reads
 * the object, which the caller has just read, instead of the table's record,
 * which at a million pending timers is one cache miss more (TimerKit's
 * LoopTimer does this).
 *
 * The record is the loop's from a successful call until the loop is done
 * with the timer, and must stay where it is, unread and unwritten, until
 * then. The loop is done with it:
 *   - when tk_loop_cancel_take or tk_loop_cancel_record hands `context`
 *     back (it returns 1, or tk_loop_cancel_record 2);
 *   - otherwise, when it hands `context` to its release handler (see
 *     tk_loop_set_release_handler);
 *   - if the loop has no release handler at that moment, once
 *     tk_loop_destroy returns.
 * The record may then be scheduled again, on any loop, or freed. A loop with
 * a hold (tk_loop_set_hold) keeps it while it holds any timer with a record.
 *
 * Returns what tk_loop_schedule returns, -EINVAL for a NULL or misaligned
 * record, and -EBUSY for a record the loop sees in use: one whose timer the
 * loop is not done with yet. That is a check for a mistake, not a way to
 * share a record: it is reliable only when this call comes after the calls
 * that last used the record (on the same thread, or ordered by the caller).
 * Two threads that schedule one record at once, or a record in use on a loop
 * another thread runs, are a data race the loop cannot see. The loop tells
 * a free record by one of its fields, so a record not zeroed before its
 * first use may be taken for one in use, or for a free one. On error the
 * record is unchanged.
 */
int tk_loop_schedule_record(tk_loop *loop, tk_timer_record *record,
                            const tk_timer_spec *spec, tk_timer_fn fn, void *context,
                            tk_timer_id *timer);

/**
 * Cancels a scheduled timer: no callback of it starts after this returns,
 * except one the loop's thread had already begun (its context stays valid
 * until that returns; see tk_loop_set_release_handler). Returns 0, or -ENOENT
 * for a handle that names no scheduled timer (never scheduled, already
 * cancelled, a one-shot timer that has fired, or, seen from another thread
 * than the loop's, a one-shot whose callback is running), -EINVAL for NULL.
 * Cancelling a timer from inside its own callback is allowed; for a one-shot
 * that the loop's pass fired, it returns 0 once (the loop was about to let go
 * of it anyway), and after tk_loop_fire, -ENOENT. O(log n).
 */
int tk_loop_cancel(tk_loop *loop, tk_timer_id timer);

/**
 * As tk_loop_cancel, but when the loop lets go of the timer at once (no
 * callback of it is running), it hands the timer's context back in
 * `*context` and returns 1, instead of calling the release handler with it:
 * the caller releases it, and a record the timer had (tk_loop_schedule_record)
 * is free again. Returns 0 when a callback of the timer is running (the
 * release handler gets the context when the last one returns, as after
 * tk_loop_cancel), and the errors of tk_loop_cancel, or -EINVAL for a NULL
 * `context`; `*context` is then left alone. A frame ticker's timer is never
 * handed back: its cancel returns 0, and stops the ticker, as tk_loop_cancel
 * does (see tk_frame_ticker_info's `error`).
 */
int tk_loop_cancel_take(tk_loop *loop, tk_timer_id timer, void **context);

/**
 * As tk_loop_cancel_take, naming the timer by the record it was scheduled
 * with (tk_loop_schedule_record) instead of by its handle. The record says
 * which loop holds it and in which slot, so the loop does not read the
 * slot's generation and where its record is (it only writes the slot, once
 * the timer is done): at a million pending timers, a cancel by handle waits
 * for the slot's cache line before it can find the record, where this one
 * starts from the record, which a caller that keeps it in an object of its
 * own has just read (TimerKit's LoopTimer does this).
 *
 * Returns 1 with the context handed back, 0 while a callback of the timer
 * runs, as tk_loop_cancel_take does; 2 as 1, when this ends the loop's hold
 * (tk_loop_set_hold), whose context is then the caller's, not the release
 * handler's; -ENOENT for a record that holds no
 * live timer of this loop: one never scheduled (zeroed), one the loop is
 * done with, one another loop holds, and for a timer that is cancelled, or
 * is a one-shot that fired (as its handle would); -EINVAL for a NULL loop,
 * record or context, or a misaligned record. Which loop holds a record is
 * read from the record, where it stays put while that loop holds it (the
 * rest is read only once the record is known to be this loop's), so the
 * call must come after the call that scheduled the record last (on the same
 * thread, or ordered by the caller), as for tk_loop_schedule_record's -EBUSY
 * check. The loop trusts the record: one copied, moved or written while in
 * use names a timer that is not its own. O(log n).
 */
int tk_loop_cancel_record(tk_loop *loop, tk_timer_record *record, void **context);

/**
 * Gives a scheduled timer a new deadline, interval, leeway, clock and modes,
 * keeping its handle, callback and context. Also revives a one-shot timer
 * from inside the callback the loop's pass called (after tk_loop_fire, a
 * one-shot is cancelled before its callback runs: -ENOENT). The same errors
 * as tk_loop_schedule and tk_loop_cancel, and -EPERM for a frame ticker's
 * timer (named by a handle the library never gives out), which only its
 * ticker arms; on error the timer is unchanged. O(log n).
 */
int tk_loop_reschedule(tk_loop *loop, tk_timer_id timer,
                       const tk_timer_spec *spec);

/** Describes a scheduled timer. 0, -ENOENT or -EINVAL. */
int tk_loop_timer_info(tk_loop *loop, tk_timer_id timer, tk_timer_info *info);

/**
 * Adds `modes` to the loop's common modes, which start as the default mode
 * alone, and to the modes of every timer the loop holds that was scheduled
 * with TK_TIMER_COMMON, and of every frame ticker in the common modes
 * (TK_FRAME_COMMON, tk_frame_ticker_join_common_modes):
 * a timer already in the common modes fires in a mode made common later, as
 * it would had it been scheduled after. A timer keeps its deadline and its
 * place among timers due at the same time; one that came due and waits for
 * a mode it now has fires at the next pass in that mode (or, made common
 * from a callback during a pass in that mode, later in that pass), and a
 * run sleeping in a new mode wakes for what is due in it. A one-shot whose
 * callback runs has them if its callback schedules it again with
 * TK_TIMER_COMMON. A common mode cannot be taken away. Returns 0, or -EINVAL for a NULL loop or
 * TK_MODES_INVALID in `modes`. Allocates nothing; O(n) in the loop's table
 * of timers when it adds a mode. (API version 18.)
 */
int tk_loop_add_common_modes(tk_loop *loop, tk_mode_set modes);

/**
 * Runs the timer's callback now, on the calling thread, with `missed` 0. A
 * one-shot timer is then done (cancelled first, so the callback sees it
 * gone); a repeating timer keeps its schedule. It is the caller's call: it
 * runs the callback even while a callback of the same timer runs (its own,
 * or the loop's on another thread), so a repeating timer's callback that
 * fires its own timer recurses (a one-shot's gets -ENOENT: it is no longer
 * scheduled). The loop itself never fires a timer whose callback is running;
 * see tk_loop_run. 0, -ENOENT or -EINVAL.
 */
int tk_loop_fire(tk_loop *loop, tk_timer_id timer);

/* ------------------------------------------------------------------------
 * File descriptors
 * ------------------------------------------------------------------------ */

/**
 * Calls `fn` whenever `fd` is ready for any of `events` (TK_IO_READABLE,
 * TK_IO_WRITABLE; level-triggered), in every mode. Watching an fd that is
 * already watched replaces its events, function and context; what the
 * replaced watch had been reported but not yet given is dropped (the new
 * watch hears of the fd when it is ready for the new events). A watch's
 * callback never runs again while it runs: until it returns, a run nested in
 * it, in any mode, is told of nothing on that fd number, whichever watch has
 * it by then (the same, one that replaced it, or one of a new descriptor);
 * level-triggered, the fd is reported after the return if it is still
 * ready. The loop does
 * not own `fd`: unwatch it before closing it (after a close without, watching
 * the number again, for a new descriptor, fails with -ENOENT until
 * tk_loop_unwatch_fd is called on it; the number may even be one the loop
 * opened for itself meanwhile, which neither call disturbs). Returns 0,
 * -EINVAL (a NULL loop or fn, a negative fd, no events, or any but
 * TK_IO_READABLE and TK_IO_WRITABLE: TK_IO_ERROR and TK_IO_HANGUP are
 * reported, never asked for), -ENOMEM
 * or the errno of epoll_ctl (e.g. -EBADF, -EPERM for a
 * regular file, -EEXIST for a descriptor of the loop's own). A watched fd
 * closed while its file stays open elsewhere (a dup, a child) is still
 * reported by epoll, and the loop spins until it is unwatched (see
 * tk_loop_unwatch_fd), or until any watch is ended that way. The loop keeps
 * one small entry per watched fd, whatever its number, and gives the memory
 * back as watches end. O(1).
 */
int tk_loop_watch_fd(tk_loop *loop, int fd, uint32_t events, tk_io_fn fn,
                     void *context);

/**
 * Stops watching `fd`. 0, -ENOENT if it was not watched, or -EINVAL. Safe
 * from any thread. For an fd closed before this call, epoll's registration
 * of its file, which lives on while the file is open elsewhere, can no
 * longer be removed by number: when it next reports, the loop's thread
 * moves the loop to a new epoll instance under the same number, holding its
 * own descriptors and the watches whose descriptors are still open (any
 * other watched fd closed meanwhile is no longer reported either). That
 * takes a descriptor for a moment: while none is free, the loop wakes at
 * once from every wait, as before the unwatch, and tries again. Called
 * from another thread than the loop's, it may return while the watch's
 * callback is still running there, so what the callback uses is freed only
 * once the loop's thread is past it: from that thread, say from a timer or
 * the wake-up handler, but not from a run nested in that callback.
 */
int tk_loop_unwatch_fd(tk_loop *loop, int fd);

/* ------------------------------------------------------------------------
 * Manual time (loops made by tk_loop_create_manual)
 *
 * A manual loop's three clocks move together, and only when told: by
 * tk_loop_advance, by tk_loop_run with a deadline, or one clock at a time by
 * tk_loop_set_manual_time. Advancing and running with a deadline move time
 * the same way: to each wake-up target in turn (the earliest deadline +
 * leeway among the mode's timers), where every timer whose deadline has
 * passed fires, in deadline order, with the clocks reading the wake-up time;
 * then to the end of the span. There a run makes a last pass, as a real run
 * woken by its deadline does, while an advance ends (its pass comes when
 * the next advance or run begins). A timer scheduled or rescheduled during
 * a pass to be due at once fires at the next pass, at the same time. An
 * advance, or a run with a deadline, makes at most 65 passes at one time
 * (the first and 64 more; a callback that moves the clocks makes the next
 * pass the first at the new time); then it moves to the next wake-up later
 * than that time (or to the end), so that a timer that its callback
 * reschedules due at once, which a real loop fires at every pass while its
 * time moves on its own, lets time move and the call return: it fires
 * again at the next wake-up, with the other timers there (or, at the end of
 * an advance, at the next call's first pass). A run also handles ready descriptors
 * (without waiting) after each pass, can be stopped, and its callbacks may
 * run nested runs, in other modes and with deadlines of their own, which
 * move time too:
 * the outer run goes on from wherever time is when the inner one returns,
 * even past its own deadline (what it fires after that sees the time the
 * nested run left).
 * Timers of the outer run's mode that came due during a nested run in
 * another mode fire at the outer run's next pass, at that time.
 * ------------------------------------------------------------------------ */

/**
 * Moves all three manual clocks forward by `delta_ns` (each saturating at
 * INT64_MAX on its own: a monotonic clock at the end of its range does not
 * hold the others back; a callback that sets the monotonic clock forward
 * uses up that much of the span), firing on the calling
 * thread, in `mode` (a set of one mode, as for tk_loop_run), every timer that would have fired in that span, exactly
 * as the real loop would: time jumps to each wake-up target (the earliest
 * deadline + leeway among the mode's timers), then every timer whose deadline
 * has passed fires, in deadline order, with the clocks reading the wake-up
 * time. Callbacks may schedule timers that fall in the span; they fire too
 * (at most 65 passes at one time: see "Manual time" above). A pending
 * wall-clock step (see tk_loop_set_manual_time) is handled first.
 * `delta_ns` 0 fires what is already due.
 *
 * Returns the number of timer callbacks run (>= 0; a frame ticker's timer
 * counts as in tk_loop_stats.fired), -EINVAL for NULL, a negative
 * delta or a `mode` that is not one mode, -ENOTSUP on a real-clock loop, -EBUSY
 * if another thread is running the loop, or this is called from one of its
 * callbacks, or a callback run by tk_loop_fire is running, or -ENOMEM as
 * tk_loop_run returns it (see "A pass that runs out of memory" there): the
 * span then ends early, and callbacks may have run.
 */
int64_t tk_loop_advance(tk_loop *loop, tk_mode_set mode, int64_t delta_ns);

/**
 * Sets one manual clock. The monotonic and boot clocks only move forward
 * (moving the boot clock alone models a suspend); the wall clock may jump
 * either way, which is a clock step: the next tk_loop_advance or tk_loop_run
 * raises the clock-change function and re-evaluates wall-clock timers.
 * Returns 0, -EINVAL (NULL, unknown clock, a monotonic or boot clock moved
 * backwards), or -ENOTSUP on a real-clock loop.
 */
int tk_loop_set_manual_time(tk_loop *loop, tk_clock clock, int64_t now_ns);

/* ------------------------------------------------------------------------
 * Frame tickers
 *
 * A frame ticker calls a function once per frame on a fixed grid of the
 * loop's monotonic clock, as a display link does once per refresh: frame k
 * is due at anchor + k * period, where the anchor is the moment the ticker
 * started or, after a change of its rate, the latest frame's timestamp then
 * (see tk_frame_ticker_set_rate). One absolute deadline of the loop's
 * monotonic timerfd drives it, with no leeway, so frames never come early
 * and never drift.
 *
 * A frame is never delivered late on purpose. If the loop wakes late, the
 * callback gets the latest grid point that has passed as its timestamp, and
 * the grid points skipped since the previous frame as dropped frames. If a
 * callback runs past the next grid point, the grid points it covered are
 * skipped (they are dropped frames of the next callback) and the ticker
 * waits for the first one still ahead, as a display waits for its next
 * refresh. Grid points that pass while the loop runs none of the ticker's
 * modes (or runs nothing) are dropped frames too, of the frame that comes
 * when it runs one again, and count in the adaptation below as a late
 * wake-up's do: an adaptive ticker may step down a rate after such a time.
 *
 * Rates. A ticker runs at a preferred rate within a range. The grid's finest
 * period is 1 s / maximum; the rates the ticker can run at are maximum / k
 * for whole k, down to the minimum (120, 60, 40, 30 ... Hz for a maximum of
 * 120), so every rate's grid is part of the finest one (its periods are
 * whole nanoseconds: see period_ns in tk_frame_ticker_info). It starts at the
 * rung whose rate is nearest the preferred one (of two equally near, the
 * faster: 60 Hz for 50 in 30 ... 120). A ticker whose range
 * offers more than one rate adapts once per second of frames: it steps one
 * rate down when more than a tenth of the window's grid points were dropped,
 * and one rate up, never above the rung it started at, when none was dropped and
 * the longest callback took at most half of the faster rate's period. A
 * range whose minimum, maximum and preferred rates are equal is a fixed rate.
 *
 * Threads. The callback runs on the thread running the loop, with no lock
 * held; it may pause, resume, re-rate or destroy its own ticker. The other
 * calls are safe from any thread. A change made while a callback of the
 * ticker runs takes effect when it returns.
 * ------------------------------------------------------------------------ */

/** Opaque frame ticker. */
typedef struct tk_frame_ticker tk_frame_ticker;

/** Frames per second: the range a ticker may run in and the rate it prefers. */
typedef struct tk_frame_rate_range {
    /** The lowest rate the ticker may adapt down to (>= 1e-6, <= maximum). */
    double minimum;
    /** The highest rate, which sets the grid (<= 1e9, for a period >= 1 ns). */
    double maximum;
    /**
     * The rate to run at when the work allows, in [minimum, maximum]; 0 means
     * the maximum. The ticker runs at the rate of its ladder
     * (maximum / k) nearest to it.
     */
    double preferred;
} tk_frame_rate_range;

/** How to create a frame ticker. */
typedef struct tk_frame_ticker_spec {
    tk_frame_rate_range rate;
    /** The modes the ticker fires in; 0 (the empty set) means TK_MODE_DEFAULT. */
    tk_mode_set modes;
    /** 0, or TK_FRAME_PAUSED and/or TK_FRAME_COMMON. */
    uint32_t flags;
} tk_frame_ticker_spec;

/** tk_frame_ticker_spec flag: create the ticker paused. */
#define TK_FRAME_PAUSED 0x1u

/**
 * The ticker delivers frames in the loop's common modes too, including those
 * added later (tk_loop_add_common_modes), as a timer scheduled with
 * TK_TIMER_COMMON. (API version 18.)
 */
#define TK_FRAME_COMMON 0x2u

/** What a frame callback is told. Times are readings of the loop's monotonic clock. */
typedef struct tk_frame {
    /** This frame's number: frames delivered before it, from 0. */
    uint64_t index;
    /** This frame's grid time (<= now_ns: never early). */
    int64_t timestamp_ns;
    /**
     * The next frame's grid time: timestamp_ns + duration_ns (INT64_MAX if
     * that is past the end of time). A rate change or a resume may move it.
     */
    int64_t target_timestamp_ns;
    /** The period in force. */
    int64_t duration_ns;
    /** Grid points skipped since the previous frame (0 on time). */
    uint64_t dropped_frames;
    /** When the callback was called. */
    int64_t now_ns;
} tk_frame;

/**
 * Called once per frame on the loop's thread. `frame` is valid during the
 * call only.
 */
typedef void (*tk_frame_fn)(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame,
                            void *context);

/** What tk_frame_ticker_get_info reports. */
typedef struct tk_frame_ticker_info {
    /** The rate in force (frames per second): maximum / k. */
    double rate;
    /**
     * The period in force: the grid counts whole nanoseconds, so it is
     * 1e9 / maximum rounded to the nearest nanosecond (at least 1), times k.
     * Frames come every period_ns, at 1e9 / period_ns per second, which
     * differs from `rate` by that rounding: 16,666,667 ns at 60 per second
     * (20 ns a second slow), and 1 ns, a billion per second, for any
     * maximum above 2e9 / 3 (666,666,666.7).
     */
    int64_t period_ns;
    /** The next frame's grid time; INT64_MAX while paused or stopped. */
    int64_t next_timestamp_ns;
    /** Frames delivered. */
    uint64_t frames;
    /** Grid points dropped, over all frames. */
    uint64_t dropped_frames;
    /** The modes it delivers frames in, the loop's common modes included
     * for a ticker in them. */
    tk_mode_set modes;
    /** 1 while paused. */
    int paused;
    /**
     * 0, or the negative errno that stopped the ticker (the loop could not
     * take its next frame, e.g. -ENOMEM), or -ECANCELED if its timer was
     * ended through a handle of it, which the library never gives out
     * (tk_loop_cancel, tk_loop_cancel_take, or tk_loop_fire, which first
     * delivers the frame if one is due). A stopped ticker delivers no more
     * frames, its `next_timestamp_ns` is INT64_MAX, and its calls return
     * this error; destroy it (or the loop, which frees it too).
     */
    int error;
} tk_frame_ticker_info;

/**
 * Creates a frame ticker on `loop` and stores it in `*ticker`. Unless
 * created paused, its first frame is due one period from now. `fn` is
 * called with `context` for each frame.
 *
 * If the loop has a release handler (tk_loop_set_release_handler), it is
 * called once with `context` when the ticker is freed: after
 * tk_frame_ticker_destroy (once no callback of the ticker runs), or when
 * the loop is destroyed.
 *
 * Returns 0, -EINVAL (a NULL loop, spec, fn or ticker: `context` may be
 * NULL; a rate outside [1e-6, 1e9] or NaN,
 * a minimum above the maximum, a preferred rate outside the range; unknown
 * flags), -ENOMEM, or the errors of tk_loop_schedule.
 * Allocates once; frames never allocate.
 */
int tk_frame_ticker_create(tk_loop *loop, const tk_frame_ticker_spec *spec, tk_frame_fn fn,
                           void *context, tk_frame_ticker **ticker);

/**
 * Stops the ticker for good and frees it: no callback starts after this
 * returns (except one the loop's thread had already begun: the ticker and
 * its context stay valid until that returns). `ticker` must not be used
 * again. Callable from the ticker's own callback. Returns 0, or -EINVAL
 * for NULL. Destroying the loop destroys its tickers.
 */
int tk_frame_ticker_destroy(tk_frame_ticker *ticker);

/**
 * Pauses (`paused` != 0) or resumes the ticker. Resuming keeps the grid:
 * the next frame is the first grid point still ahead, and the time spent
 * paused is not counted as dropped frames. Pausing a paused ticker, or
 * resuming a running one, does nothing. Returns 0, -EINVAL, the ticker's
 * error (see tk_frame_ticker_get_info), or the errors of tk_loop_reschedule, in
 * which case nothing changed.
 */
int tk_frame_ticker_set_paused(tk_frame_ticker *ticker, int paused);

/**
 * Changes the rate range. The grid is re-aligned: it is anchored at the
 * latest frame's timestamp (now, if the ticker is paused; before the first
 * frame, where the grid was anchored, as a resume keeps it, so that calls
 * made more often than once a period do not put the first frame off), and
 * the next frame is the first point of the new grid still ahead; grid
 * points of the old grid passed since the latest frame are not counted as
 * dropped. From the ticker's callback, that frame is the latest,
 * and the new grid's points the callback runs past are not counted as
 * dropped either. Returns 0, -EINVAL for a bad range (as
 * tk_frame_ticker_create), the ticker's error, or the errors of
 * tk_loop_reschedule; on error nothing changed.
 */
int tk_frame_ticker_set_rate(tk_frame_ticker *ticker, tk_frame_rate_range rate);

/**
 * Changes the modes the ticker fires in (0 means TK_MODE_DEFAULT); its grid
 * and next frame stay, and a ticker in the loop's common modes stays in
 * them. Returns 0, -EINVAL, the ticker's error, or the errors
 * of tk_loop_reschedule; on error nothing changed.
 */
int tk_frame_ticker_set_modes(tk_frame_ticker *ticker, tk_mode_set modes);

/**
 * Puts the ticker in the loop's common modes too, those it has and those
 * added later, as TK_FRAME_COMMON at its creation does (a ticker already in
 * them is left as it is); its grid and next frame stay. Returns 0, -EINVAL,
 * the ticker's error, or the errors of tk_loop_reschedule; on error nothing
 * changed. (API version 18.)
 */
int tk_frame_ticker_join_common_modes(tk_frame_ticker *ticker);

/** Describes the ticker. 0 or -EINVAL. */
int tk_frame_ticker_get_info(tk_frame_ticker *ticker, tk_frame_ticker_info *info);

#ifdef __cplusplus
}
#endif

#endif /* CTIMERCORE_H */
