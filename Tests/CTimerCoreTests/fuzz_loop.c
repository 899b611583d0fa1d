/*
 * libFuzzer target: the input bytes are read as a sequence of operations on
 * a manual loop (schedule, with the timer's record in the table or in memory
 * of the caller's, cancel, by handle or by record, with the context handed
 * back or not, reschedule,
 * info, fire, set_manual_time, advance, run with a deadline, stop, the
 * clock-change handler, reserve, stats, re-creating the loop),
 * including actions taken from inside callbacks, bad arguments and stale or
 * forged handles. Every operation runs on the real loop and on the reference
 * scheduler (reference_scheduler.h); any difference in return values, the
 * callbacks run (timer, clocks, missed), timer info, clocks or counters
 * aborts, so the fuzzer reports the input.
 *
 * Callback actions are decided (reading more input) while the reference runs
 * an operation and recorded as a script, which the real loop's callbacks
 * then replay.
 *
 * Build:
 *   /opt/swift/usr/bin/clang -std=c11 -g -O1 -D_GNU_SOURCE \
 *     -fsanitize=fuzzer,address,undefined -fuse-ld=lld -Iinclude -ISources/CTimerCore \
 *     Sources/CTimerCore/[a-z]*.c Tests/CTimerCoreTests/fuzz_loop.c -lpthread
 * Run:  ./a.out Tests/CTimerCoreTests/fuzz-corpus/      (add -max_total_time=N)
 * Set TK_FUZZ_TRACE=1 to print what an input does (e.g. with a crash file).
 */
#include "CTimerCore.h"
#include "reference_scheduler.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Input
 * ------------------------------------------------------------------------ */

static const uint8_t *in_data;
static size_t in_size, in_pos;

static int in_left(void) { return in_pos < in_size; }
static uint8_t in_u8(void) { return in_pos < in_size ? in_data[in_pos++] : 0; }
static uint64_t in_raw(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)in_u8() << (8 * i);
    return v;
}

static int64_t sat_add(int64_t a, int64_t b) { return ref_add(a, b); }

/* An interesting signed 64-bit value. */
static int64_t in_value(void) {
    uint8_t k = in_u8();
    switch (k & 15) {
    case 0: return 0;
    case 1: return 1;
    case 2: return (int64_t)(k >> 4);
    case 3: return (int64_t)(k >> 4) * 1000;
    case 4: return (int64_t)in_raw(1) * 100;
    case 5: return (int64_t)in_raw(2);
    case 6: return (int64_t)in_raw(3) * 10;
    case 7: return -(int64_t)(k >> 4) - 1;
    case 8: return -(int64_t)in_raw(2);
    case 9: return INT64_MAX - (int64_t)(k >> 4);
    case 10: return INT64_MIN + (int64_t)(k >> 4);
    case 11: return (int64_t)in_raw(8);
    case 12: return (int64_t)in_raw(4) << 16;
    case 13: return ((int64_t)1 << 62) + (int64_t)in_raw(1);
    case 14: return -((int64_t)1 << 62) - (int64_t)in_raw(1);
    default: return (int64_t)(k >> 4) * 7;
    }
}

/* A non-negative value, mostly small. */
static int64_t in_nonneg(void) {
    int64_t v = in_value();
    if (v < 0) v = v == INT64_MIN ? INT64_MAX : -v;
    return v;
}

/* ------------------------------------------------------------------------
 * Failure
 * ------------------------------------------------------------------------ */

static int g_trace;

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "MISMATCH at input byte %zu: ", in_pos);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

static void trace(const char *fmt, ...) {
    if (!g_trace) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------
 * Worlds
 * ------------------------------------------------------------------------ */

typedef struct log_entry {
    int kind; /* 1 timer, 2 clock change */
    uint32_t rec;
    uint64_t missed;
    int64_t now[TK_CLOCK_COUNT];
    int args_ok;
} log_entry;

typedef struct world {
    const char *name;
    int is_ref;
    int live;
    tk_loop *loop;
    ref_sched ref;
    uint64_t *handles;
    uint32_t nrec, caprec;
    log_entry *log;
    size_t nlog, caplog;
    int depth;
    uint32_t cb_count;
    uint64_t max_handle; /* the reference's largest id; the loop's issued ones below */
    uint64_t *issued;    /* the loop: every handle issued (for forging unknown ones) */
    size_t nissued, capissued;
    /* The loop: the records of timers scheduled with tk_loop_schedule_record,
     * each allocated on its own, freed once tk_loop_destroy has returned (the
     * loop's release handler takes only its hold). */
    tk_timer_record **records;
    size_t nrecords, caprecords;
    /* The loop: by timer, its record, or NULL for one in the table. */
    tk_timer_record **record_of;
    size_t caprecord_of;
} world;

static world W_REF = {.name = "reference", .is_ref = 1};
static world W_IMPL = {.name = "loop"};

static void grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) abort();
    *p = q;
    *cap = c;
}

static uint32_t add_record(world *w, uint64_t handle) {
    size_t cap = w->caprec;
    grow((void **)&w->handles, &cap, (size_t)w->nrec + 1, sizeof *w->handles);
    w->caprec = (uint32_t)cap;
    w->handles[w->nrec] = handle;
    grow((void **)&w->record_of, &w->caprecord_of, (size_t)w->nrec + 1, sizeof *w->record_of);
    w->record_of[w->nrec] = NULL;
    return w->nrec++;
}

static int64_t w_now(world *w, tk_clock c) {
    int64_t v = 0;
    if (w->is_ref) ref_now(&w->ref, c, &v);
    else if (tk_loop_now(w->loop, c, &v) != 0) fail("tk_loop_now(%d) failed", (int)c);
    return v;
}

static void on_callback(world *w, int kind, uint32_t rec, uint64_t missed, int args_ok);

static void impl_timer_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    uint32_t rec = (uint32_t)((uintptr_t)context - 1);
    on_callback(&W_IMPL, 1, rec, missed,
                loop == W_IMPL.loop && rec < W_IMPL.nrec && W_IMPL.handles[rec] == id);
}

static void ref_world_timer_fn(ref_sched *ref, uint64_t id, uint64_t missed, void *context) {
    uint32_t rec = (uint32_t)((uintptr_t)context - 1);
    on_callback(&W_REF, 1, rec, missed,
                ref == &W_REF.ref && rec < W_REF.nrec && W_REF.handles[rec] == id);
}

/* The loop's hold (tk_loop_set_hold): begun when the first timer with a
 * record of the caller's is scheduled while none is live, ended once when
 * the last one ends, by the release handler or by tk_loop_cancel_record's
 * 2. The release handler takes nothing else: the timers' contexts are small
 * numbers, and the records are freed once the loop is destroyed. */
static char hold_token;
static int hold_begins, hold_ends;

static void impl_hold_fn(tk_loop *loop, void *context) {
    if (loop != W_IMPL.loop || context != &hold_token) fail("the hold began with another context");
    if (++hold_begins - hold_ends != 1) fail("the hold began while held");
}

static void hold_ended(const char *by) {
    if (++hold_ends > hold_begins) fail("%s ended the hold, which had not begun", by);
}

static void impl_release_fn(tk_loop *loop, void *context) {
    (void)loop;
    if (context == &hold_token) hold_ended("the release handler");
}

static void impl_clock_change_fn(tk_loop *loop, void *context) {
    on_callback(&W_IMPL, 2, 0, 0, loop == W_IMPL.loop && context == &W_IMPL);
}

static void ref_world_clock_change_fn(ref_sched *ref, void *context) {
    on_callback(&W_REF, 2, 0, 0, ref == &W_REF.ref && context == &W_REF);
}

static void w_create(world *w, int64_t start) {
    w->nrec = 0;
    w->nlog = 0;
    w->depth = 0;
    w->nissued = 0;
    w->live = 1;
    if (w->is_ref) {
        ref_init(&w->ref, start);
    } else {
        int rc = tk_loop_create_manual(&w->loop, start);
        if (rc != 0) fail("tk_loop_create_manual: %d", rc);
        hold_begins = hold_ends = 0;
        if (tk_loop_set_release_handler(w->loop, impl_release_fn) != 0 ||
            tk_loop_set_hold(w->loop, impl_hold_fn, &hold_token) != 0) {
            fail("the loop refused its release handler or hold");
        }
    }
}

static int w_destroy(world *w) {
    if (!w->live) return 0;
    w->live = 0;
    if (w->is_ref) {
        int rc = ref_destroy_result(&w->ref);
        ref_free(&w->ref);
        return rc;
    }
    int rc = tk_loop_destroy(w->loop);
    if (rc != 0) fail("tk_loop_destroy: %d", rc);
    if (hold_begins != hold_ends) fail("destroyed, the loop's hold began %d times and ended %d",
                                       hold_begins, hold_ends);
    w->loop = NULL;
    for (size_t i = 0; i < w->nrecords; i++) free(w->records[i]);
    w->nrecords = 0;
    return rc;
}

/* ------------------------------------------------------------------------
 * Actions
 * ------------------------------------------------------------------------ */

enum {
    A_SCHEDULE, A_CANCEL, A_RESCHEDULE, A_INFO, A_FIRE, A_SET_TIME, A_ADVANCE,
    A_CLOCK_CHANGE, A_RESERVE, A_STATS, A_DESTROY, A_RUN, A_STOP, A_ADD_COMMON, A_COUNT
};

enum { T_REC, T_ZERO, T_FORGED };

typedef struct action {
    uint32_t cb;
    int kind;
    int tkind;
    uint32_t rec;
    uint64_t salt;
    tk_timer_spec spec;
    int nulls; /* schedule: 1 spec, 2 fn, 4 id; reschedule/info: 1 */
    int variant; /* schedule: 1 with a record of its own; cancel: 1 tk_loop_cancel_take,
                  * 2 tk_loop_cancel_record (for a timer that has a record) */
    tk_clock clock;
    unsigned mode;
    int64_t value;  /* run: the deadline, absolute */
    uint32_t flags; /* run */
} action;

typedef struct result {
    int64_t rc;
    tk_timer_info info;
    tk_loop_stats stats;
    uint32_t new_rec;
} result;

static int issued_has(const world *w, uint64_t v) {
    for (size_t i = 0; i < w->nissued; i++)
        if (w->issued[i] == v) return 1;
    return 0;
}

static uint64_t resolve(world *w, const action *a) {
    if (a->tkind == T_ZERO) return 0;
    if (a->tkind == T_REC) return a->rec < w->nrec ? w->handles[a->rec] : 0;
    if (w->is_ref) return UINT64_MAX - (a->salt & 0xffff); /* never an id */
    uint64_t base = a->rec < w->nrec ? w->handles[a->rec] : a->salt;
    uint64_t v;
    switch (a->salt & 7) {
    case 0: v = base ^ (1ull << 32); break;
    case 1: v = base + 1; break;
    case 2: v = base - 1; break;
    case 3: v = base & 0xffffffffull; break;
    case 4: v = base ^ (1ull << 63); break;
    case 5: v = base + (1ull << 32); break;
    case 6: v = base | 0xffffffffull; break;
    default: v = a->salt; break;
    }
    while (v == 0 || issued_has(w, v)) v = v * 6364136223846793005ull + 1442695040888963407ull;
    return v;
}

static void run_action(world *w, const action *a, result *out) {
    memset(out, 0, sizeof *out);
    out->new_rec = UINT32_MAX;
    switch (a->kind) {
    case A_SCHEDULE: {
        uint32_t rec = w->nrec;
        void *context = (void *)(uintptr_t)(rec + 1);
        const tk_timer_spec *spec = (a->nulls & 1) ? NULL : &a->spec;
        if (w->is_ref) {
            uint64_t id = 0;
            out->rc = ref_schedule(&w->ref, spec, (a->nulls & 2) ? NULL : ref_world_timer_fn,
                                   context, (a->nulls & 4) ? NULL : &id);
            if (out->rc == 0) out->new_rec = add_record(w, id);
        } else {
            tk_timer_id id = 0;
            tk_timer_fn fn = (a->nulls & 2) ? NULL : impl_timer_fn;
            tk_timer_id *id_out = (a->nulls & 4) ? NULL : &id;
            if (a->variant) {
                tk_timer_record *record = calloc(1, sizeof *record);
                if (record == NULL) abort();
                grow((void **)&w->records, &w->caprecords, w->nrecords + 1, sizeof *w->records);
                w->records[w->nrecords++] = record;
                out->rc = tk_loop_schedule_record(w->loop, record, spec, fn, context, id_out);
                static const tk_timer_record zero;
                if (out->rc != 0 && memcmp(record, &zero, sizeof zero) != 0)
                    fail("tk_loop_schedule_record failed with %" PRId64 " and wrote the record",
                         out->rc);
            } else {
                out->rc = tk_loop_schedule(w->loop, spec, fn, context, id_out);
            }
            if (out->rc == 0) {
                if (id == 0 || issued_has(w, id))
                    fail("tk_loop_schedule gave handle %#" PRIx64 " (0 or issued before)", id);
                grow((void **)&w->issued, &w->capissued, w->nissued + 1, sizeof *w->issued);
                w->issued[w->nissued++] = id;
                out->new_rec = add_record(w, id);
                if (a->variant) w->record_of[out->new_rec] = w->records[w->nrecords - 1];
            }
        }
        break;
    }
    case A_CANCEL: {
        uint64_t id = resolve(w, a);
        tk_timer_record *record =
            a->tkind == T_REC && a->rec < w->nrec && !w->is_ref ? w->record_of[a->rec] : NULL;
        if (w->is_ref) {
            out->rc = ref_cancel(&w->ref, id);
        } else if (a->variant == 2 && record != NULL) {
            /* As below: the record names the timer its handle names. */
            void *context = NULL;
            out->rc = tk_loop_cancel_record(w->loop, record, &context);
            if (out->rc == 2) {
                hold_ended("tk_loop_cancel_record");
                out->rc = 1;
            }
            if (out->rc == 1) {
                if (context != (void *)(uintptr_t)(a->rec + 1))
                    fail("tk_loop_cancel_record handed back context %p for T%u", context, a->rec);
                out->rc = 0;
            } else if (context != NULL) {
                fail("tk_loop_cancel_record returned %" PRId64 " and set the context", out->rc);
            }
        } else if (a->variant) {
            /* 1 (the context handed back: the release handler takes none,
             * so nothing else changes) and 0 (a callback of it runs) are
             * tk_loop_cancel's 0. */
            void *context = NULL;
            out->rc = tk_loop_cancel_take(w->loop, id, &context);
            if (out->rc == 1) {
                if (a->tkind != T_REC || context != (void *)(uintptr_t)(a->rec + 1))
                    fail("tk_loop_cancel_take handed back context %p for T%u", context, a->rec);
                out->rc = 0;
            } else if (context != NULL) {
                fail("tk_loop_cancel_take returned %" PRId64 " and set the context", out->rc);
            }
        } else {
            out->rc = tk_loop_cancel(w->loop, id);
        }
        break;
    }
    case A_RESCHEDULE: {
        uint64_t id = resolve(w, a);
        const tk_timer_spec *spec = a->nulls ? NULL : &a->spec;
        out->rc = w->is_ref ? ref_reschedule(&w->ref, id, spec)
                            : tk_loop_reschedule(w->loop, id, spec);
        break;
    }
    case A_INFO: {
        uint64_t id = resolve(w, a);
        tk_timer_info *info = a->nulls ? NULL : &out->info;
        out->rc = w->is_ref ? ref_timer_info(&w->ref, id, info)
                            : tk_loop_timer_info(w->loop, id, info);
        break;
    }
    case A_FIRE: {
        uint64_t id = resolve(w, a);
        out->rc = w->is_ref ? ref_fire(&w->ref, id) : tk_loop_fire(w->loop, id);
        break;
    }
    case A_SET_TIME:
        out->rc = w->is_ref ? ref_set_manual_time(&w->ref, a->clock, a->value)
                            : tk_loop_set_manual_time(w->loop, a->clock, a->value);
        break;
    case A_ADVANCE:
        out->rc = w->is_ref ? ref_advance(&w->ref, a->mode, a->value)
                            : tk_loop_advance(w->loop, TK_MODES(a->mode), a->value);
        break;
    case A_ADD_COMMON:
        out->rc = w->is_ref ? ref_add_common_modes(&w->ref, (tk_mode_set)a->value)
                            : tk_loop_add_common_modes(w->loop, (tk_mode_set)a->value);
        break;
    case A_CLOCK_CHANGE:
        if (w->is_ref) {
            ref_set_clock_change_handler(&w->ref, a->value ? ref_world_clock_change_fn : NULL,
                                         &W_REF);
            out->rc = 0;
        } else {
            out->rc = tk_loop_set_clock_change_handler(
                w->loop, a->value ? impl_clock_change_fn : NULL, &W_IMPL);
        }
        break;
    case A_RESERVE:
        out->rc = w->is_ref ? ref_reserve(&w->ref, a->clock, (uint32_t)a->value)
                            : tk_loop_reserve(w->loop, a->clock, (uint32_t)a->value);
        break;
    case A_STATS:
        out->rc = w->is_ref ? ref_get_stats(&w->ref, &out->stats)
                            : tk_loop_get_stats(w->loop, &out->stats);
        out->stats.arms = 0;
        break;
    case A_RUN:
        out->rc = w->is_ref ? ref_run(&w->ref, a->mode, a->value, a->flags)
                            : tk_loop_run(w->loop, TK_MODES(a->mode), a->value, a->flags);
        break;
    case A_STOP:
        out->rc = w->is_ref ? ref_stop(&w->ref) : tk_loop_stop(w->loop);
        break;
    case A_DESTROY: /* only from callbacks: must be refused */
        if (w->is_ref) {
            out->rc = ref_destroy_result(&w->ref);
        } else {
            out->rc = tk_loop_destroy(w->loop);
            if (out->rc == 0) fail("tk_loop_destroy from a callback returned 0");
        }
        break;
    default: abort();
    }
}

static void compare(const action *a, const result *want, const result *got, const char *where) {
    if (want->rc != got->rc)
        fail("%s: action %d returned %" PRId64 ", reference %" PRId64, where, a->kind, got->rc,
             want->rc);
    if (want->new_rec != got->new_rec)
        fail("%s: schedule made record %u, reference %u", where, got->new_rec, want->new_rec);
    if (a->kind == A_INFO && want->rc == 0) {
        const tk_timer_info *x = &got->info, *y = &want->info;
        if (x->clock != y->clock || x->deadline_ns != y->deadline_ns ||
            x->interval_ns != y->interval_ns || x->leeway_ns != y->leeway_ns ||
            x->modes != y->modes || x->waiting_for_mode != y->waiting_for_mode ||
            x->flags != y->flags)
            fail("%s: info T%u: {%d %" PRId64 " %" PRId64 " %" PRId64 " %#x %d %#x}, reference "
                 "{%d %" PRId64 " %" PRId64 " %" PRId64 " %#x %d %#x}",
                 where, a->rec, (int)x->clock, x->deadline_ns, x->interval_ns, x->leeway_ns,
                 x->modes, x->waiting_for_mode, x->flags, (int)y->clock, y->deadline_ns,
                 y->interval_ns, y->leeway_ns, y->modes, y->waiting_for_mode, y->flags);
    }
    if (a->kind == A_STATS) {
        const tk_loop_stats *x = &got->stats, *y = &want->stats;
        if (x->pending != y->pending || x->wakeups != y->wakeups || x->fired != y->fired ||
            x->clock_changes != y->clock_changes)
            fail("%s: stats {%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "}, reference {%" PRIu64
                 " %" PRIu64 " %" PRIu64 " %" PRIu64 "}",
                 where, x->pending, x->wakeups, x->fired, x->clock_changes, y->pending,
                 y->wakeups, y->fired, y->clock_changes);
    }
}

/* ------------------------------------------------------------------------
 * Reading operations from the input
 * ------------------------------------------------------------------------ */

static tk_timer_spec read_spec(void) {
    tk_timer_spec s;
    memset(&s, 0, sizeof s);
    uint8_t b = in_u8();
    s.clock = (tk_clock)(b % 3);
    int absolute = (b >> 2) & 1;
    int repeating = (b >> 3) & 1;
    uint8_t leeway_kind = (b >> 4) & 3;
    uint8_t bad = b >> 6; /* 3: make it invalid */
    uint8_t m = in_u8();
    s.modes = (tk_mode_set)(m & 15); /* 0: the default mode */
    if (absolute) {
        s.flags = TK_TIMER_ABSOLUTE;
        int64_t v = in_value();
        /* Mostly near the clock's reading, sometimes the raw value. */
        s.deadline_ns = (v & 1) ? v : sat_add(W_REF.ref.now[s.clock], v / 2);
    } else {
        s.delay_ns = in_value();
    }
    if (repeating) {
        s.interval_ns = in_nonneg();
        if (s.interval_ns == 0) s.interval_ns = 1 + (int64_t)in_raw(1);
    }
    switch (leeway_kind) {
    case 0: s.leeway_ns = 0; break;
    case 1: s.leeway_ns = (int64_t)in_raw(1) * 10; break;
    case 2: s.leeway_ns = in_nonneg(); break;
    default: s.leeway_ns = INT64_MAX; break;
    }
    if ((m & 16) && leeway_kind == 0) s.flags |= TK_TIMER_PRECISE;
    if (m & 32) s.flags |= TK_TIMER_COMMON;
    if (bad == 3) {
        switch (in_u8() % 7) {
        case 0: s.clock = (tk_clock)(3 + in_u8() % 8); break;
        case 1: s.interval_ns = -1 - (int64_t)in_raw(1); break;
        case 2: s.leeway_ns = -1 - (int64_t)in_raw(1); break;
        case 3: s.modes |= TK_MODES_INVALID; break;
        case 4: {
            /* TK_TIMER_KEEP_DEADLINE, which no new timer takes, or a flag
             * no version has (TK_TIMER_COMMON, 0x8, is valid). */
            unsigned k = in_u8() % 29;
            s.flags |= k == 0 ? TK_TIMER_KEEP_DEADLINE : 16u << (k - 1);
            break;
        }
        case 5: /* the first fire in the field the flags do not name */
            if (absolute) s.delay_ns = 1 + (int64_t)in_raw(1);
            else s.deadline_ns = in_value() | 1;
            break;
        default: s.interval_ns = INT64_MIN; break;
        }
    }
    return s;
}

static int spec_valid(const tk_timer_spec *s) { return ref_check_spec(s) == 0; }

/* Fills a target: a live timer, any timer (often dead), 0, or a forged handle. */
static void read_target(action *a, uint32_t self) {
    uint8_t b = in_u8();
    const ref_sched *ref = &W_REF.ref;
    a->salt = b;
    switch (b & 7) {
    case 0: case 1: case 2:
        if (ref->live_count) {
            a->tkind = T_REC;
            a->rec = (uint32_t)ref->live[(b >> 3) % ref->live_count];
            return;
        }
        break;
    case 3: case 4:
        if (W_REF.nrec) {
            a->tkind = T_REC;
            a->rec = (uint32_t)((b >> 3) % W_REF.nrec);
            return;
        }
        break;
    case 5:
        if (self != UINT32_MAX) {
            a->tkind = T_REC;
            a->rec = self;
            return;
        }
        break;
    case 6:
        a->tkind = T_ZERO;
        return;
    default: break;
    }
    a->tkind = T_FORGED;
    a->salt = in_raw(2) | ((uint64_t)b << 16);
    a->rec = W_REF.nrec ? (uint32_t)(in_u8() % W_REF.nrec) : UINT32_MAX;
}

/* Is the target a timer the reference has (scheduled or firing)? The order
 * of -EINVAL and -ENOENT is not part of the contract, so bad specs and NULL
 * arguments only go with such targets. */
static int target_exists(const action *a) {
    if (a->tkind != T_REC || a->rec >= W_REF.nrec) return 0;
    return W_REF.ref.timers[W_REF.handles[a->rec] - 1].state != REF_DEAD;
}

/* Reads one action; `in_callback` limits it to what callbacks may do. */
static int read_action(action *a, int in_callback, uint32_t self) {
    memset(a, 0, sizeof *a);
    uint8_t k = in_u8();
    a->kind = k % (in_callback ? 11 : 10);
    if (in_callback && a->kind == A_SET_TIME) a->kind = A_DESTROY;     /* not from callbacks */
    if (in_callback && a->kind == A_CLOCK_CHANGE) a->kind = A_STATS;
    switch (a->kind) {
    case A_SCHEDULE:
        a->spec = read_spec();
        if (!in_callback && (k >> 4) == 15) a->nulls = 1 << (in_u8() % 3);
        a->variant = (k >> 4) & 1;
        break;
    case A_CANCEL:
        read_target(a, self);
        a->variant = (k >> 4) % 3;
        break;
    case A_FIRE:
        read_target(a, self);
        break;
    case A_INFO:
        read_target(a, self);
        if ((k >> 4) == 15 && target_exists(a)) a->nulls = 1;
        break;
    case A_RESCHEDULE:
        read_target(a, self);
        a->spec = read_spec();
        if (!target_exists(a)) {
            if (!spec_valid(&a->spec)) {
                a->spec.clock = TK_CLOCK_MONOTONIC;
                a->spec.modes = 1;
                a->spec.flags &= TK_TIMER_ABSOLUTE;
                a->spec.interval_ns = 0;
                a->spec.leeway_ns = 0;
            }
        } else if ((k >> 4) == 15) {
            a->nulls = 1;
        } else if ((k >> 4) == 14) {
            /* Keep the timer's deadline: valid unless the clock is another. */
            a->spec.flags = (a->spec.flags & TK_TIMER_PRECISE) | TK_TIMER_KEEP_DEADLINE;
            a->spec.delay_ns = 0;
            a->spec.deadline_ns = 0;
        }
        break;
    case A_SET_TIME: {
        uint8_t c = in_u8();
        a->clock = (tk_clock)(c % 4 == 3 ? 3 + in_u8() % 4 : c % 4);
        int64_t v = in_value();
        if ((c >> 2) & 1 && a->clock < TK_CLOCK_COUNT) v = sat_add(W_REF.ref.now[a->clock], v);
        a->value = v;
        break;
    }
    case A_ADVANCE: {
        uint8_t m = in_u8();
        a->mode = m < 240 ? m % 4 : (m < 250 ? m % 32 : 32 + m);
        a->value = in_value();
        if ((k >> 4) >= 10) {
            /* A run with a deadline instead: mostly that far past the
             * monotonic clock (a callback's nested run only a little), now
             * and then the raw value; TK_FOREVER only with TK_RUN_NOWAIT. */
            a->kind = A_RUN;
            uint8_t f = in_u8();
            a->flags = f % 8 == 5 ? TK_RUN_ONCE : f % 8 == 6 ? TK_RUN_NOWAIT : 0;
            if (f % 8 == 7 && !in_callback) a->flags = 4u << (f >> 3);
            int64_t now = W_REF.ref.now[TK_CLOCK_MONOTONIC];
            if (in_callback) a->value = sat_add(now, (int64_t)in_u8() * 10);
            else if ((f >> 3) & 1) a->value = sat_add(now, a->value);
            if (a->value == TK_FOREVER && !(a->flags & TK_RUN_NOWAIT)) a->value = TK_FOREVER - 1;
            if (in_callback) a->mode %= 4;
            break;
        }
        if (in_callback && (a->mode >= TK_MODE_COUNT || a->value < 0)) {
            a->mode %= 4;
            a->value = 0; /* -EBUSY, not -EINVAL (the order is not specified) */
        }
        break;
    }
    case A_STATS:
        if ((k >> 4) == 15) a->kind = A_STOP;
        if ((k >> 4) == 14) {
            /* One of the modes advances and runs use most, a few of them,
             * or a set with the invalid bit. */
            a->kind = A_ADD_COMMON;
            uint8_t m = in_u8();
            a->value = m < 200   ? TK_MODES(m % 5)
                       : m < 250 ? (tk_mode_set)(m & 31)
                                 : TK_MODES_INVALID | (tk_mode_set)(m & 3);
        }
        break;
    case A_CLOCK_CHANGE: a->value = k >> 7; break;
    case A_RESERVE:
        a->clock = (tk_clock)((k >> 4) % 4);
        a->value = in_u8();
        break;
    default: break;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Callbacks: decided by the reference, replayed by the loop
 * ------------------------------------------------------------------------ */

typedef struct scripted { action a; result want; } scripted;

static scripted *g_script;
static size_t g_nscript, g_capscript, g_cursor;
static uint32_t *g_cbrec;
static size_t g_ncb, g_capcb;
static int g_replay_broken;

#define CALLBACK_BUDGET 300

static void on_callback(world *w, int kind, uint32_t rec, uint64_t missed, int args_ok) {
    log_entry e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.rec = kind == 1 ? rec : 0;
    e.missed = missed;
    e.args_ok = args_ok;
    for (int c = 0; c < TK_CLOCK_COUNT; c++) e.now[c] = w_now(w, (tk_clock)c);
    grow((void **)&w->log, &w->caplog, w->nlog + 1, sizeof *w->log);
    w->log[w->nlog++] = e;
    trace("    %s %s T%u missed %" PRIu64 " at %" PRId64 "/%" PRId64 "/%" PRId64 "\n", w->name,
          kind == 1 ? "timer" : "clock-change", rec, missed, e.now[0], e.now[1], e.now[2]);
    uint32_t ordinal = w->cb_count++;
    uint32_t self = kind == 1 ? rec : UINT32_MAX;
    w->depth++;
    if (w->is_ref) {
        grow((void **)&g_cbrec, &g_capcb, g_ncb + 1, sizeof *g_cbrec);
        g_cbrec[g_ncb++] = self;
    }
    if (w->depth == 1 && w->is_ref) {
        int over = w->cb_count > CALLBACK_BUDGET;
        int n = over ? 0 : in_u8() % 4;
        if (over && self != UINT32_MAX) {
            const ref_timer *t = &W_REF.ref.timers[W_REF.handles[self] - 1];
            if (t->state == REF_SCHEDULED && t->interval > 0) {
                /* Past the budget repeating timers stop themselves. */
                action a;
                memset(&a, 0, sizeof a);
                a.kind = A_CANCEL;
                a.tkind = T_REC;
                a.rec = self;
                n = -1;
                a.cb = ordinal;
                result want;
                run_action(w, &a, &want);
                grow((void **)&g_script, &g_capscript, g_nscript + 1, sizeof *g_script);
                g_script[g_nscript++] = (scripted){a, want};
            }
        }
        for (int i = 0; i < n && in_left(); i++) {
            action a;
            read_action(&a, 1, self);
            a.cb = ordinal;
            result want;
            run_action(w, &a, &want);
            trace("      cb#%u action %d -> %" PRId64 "\n", ordinal, a.kind, want.rc);
            grow((void **)&g_script, &g_capscript, g_nscript + 1, sizeof *g_script);
            g_script[g_nscript++] = (scripted){a, want};
        }
    } else if (w->depth == 1 && !g_replay_broken) {
        if (ordinal >= g_ncb || g_cbrec[ordinal] != self) {
            g_replay_broken = 1; /* the logs will differ */
        } else {
            while (g_cursor < g_nscript && g_script[g_cursor].a.cb == ordinal) {
                scripted *s = &g_script[g_cursor++];
                result got;
                run_action(w, &s->a, &got);
                char where[64];
                snprintf(where, sizeof where, "callback #%u (T%u)", ordinal, rec);
                compare(&s->a, &s->want, &got, where);
            }
        }
    }
    w->depth--;
}

/* Field by field: the padding of a copied struct is not part of its value,
 * so memcmp could tell equal entries apart. */
static int log_equal(const log_entry *a, const log_entry *b) {
    for (int c = 0; c < TK_CLOCK_COUNT; c++)
        if (a->now[c] != b->now[c]) return 0;
    return a->kind == b->kind && a->rec == b->rec && a->missed == b->missed &&
           a->args_ok == b->args_ok;
}

static void compare_logs(const char *where) {
    size_t n = W_REF.nlog < W_IMPL.nlog ? W_REF.nlog : W_IMPL.nlog;
    for (size_t i = 0; i < n; i++) {
        const log_entry *x = &W_IMPL.log[i], *y = &W_REF.log[i];
        if (!log_equal(x, y))
            fail("%s: callback #%zu: loop kind %d T%u missed %" PRIu64 " at %" PRId64 "/%" PRId64
                 "/%" PRId64 " ok %d; reference kind %d T%u missed %" PRIu64 " at %" PRId64
                 "/%" PRId64 "/%" PRId64 " ok %d",
                 where, i, x->kind, x->rec, x->missed, x->now[0], x->now[1], x->now[2],
                 x->args_ok, y->kind, y->rec, y->missed, y->now[0], y->now[1], y->now[2],
                 y->args_ok);
    }
    if (W_REF.nlog != W_IMPL.nlog)
        fail("%s: loop ran %zu callbacks, reference %zu", where, W_IMPL.nlog, W_REF.nlog);
}

static void compare_state(const char *where) {
    action a;
    memset(&a, 0, sizeof a);
    a.kind = A_STATS;
    result x, y;
    run_action(&W_REF, &a, &y);
    run_action(&W_IMPL, &a, &x);
    compare(&a, &y, &x, where);
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        int64_t p = w_now(&W_IMPL, (tk_clock)c), q = w_now(&W_REF, (tk_clock)c);
        if (p != q) fail("%s: clock %d reads %" PRId64 ", reference %" PRId64, where, c, p, q);
    }
    if (W_REF.nrec != W_IMPL.nrec)
        fail("%s: %u timers made, reference %u", where, W_IMPL.nrec, W_REF.nrec);
    /* Every scheduled timer's info, and the hold, held while any of them
     * has a record of the caller's. */
    const ref_sched *ref = &W_REF.ref;
    int recorded = 0;
    for (size_t k = 0; k < ref->live_count; k++) recorded |= W_IMPL.record_of[ref->live[k]] != NULL;
    if (hold_begins - hold_ends != recorded)
        fail("%s: the hold began %d times and ended %d, with %s live timer with a record", where,
             hold_begins, hold_ends, recorded ? "a" : "no");
    for (size_t k = 0; k < ref->live_count; k++) {
        action q;
        memset(&q, 0, sizeof q);
        q.kind = A_INFO;
        q.tkind = T_REC;
        q.rec = (uint32_t)ref->live[k];
        run_action(&W_REF, &q, &y);
        run_action(&W_IMPL, &q, &x);
        compare(&q, &y, &x, where);
    }
}

static void begin_op(void) {
    g_nscript = g_cursor = 0;
    g_ncb = 0;
    g_replay_broken = 0;
    W_REF.nlog = W_IMPL.nlog = 0;
    W_REF.cb_count = W_IMPL.cb_count = 0;
}

static int64_t start_time(uint8_t b) {
    switch (b % 6) {
    case 0: return 0;
    case 1: return 1000000;
    case 2: return -1000000000;
    case 3: return INT64_MAX - 1000000 * (int64_t)(b >> 3);
    case 4: return INT64_MIN + 1000 * (int64_t)(b >> 3);
    default: return (int64_t)1 << 50;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int inited;
    if (!inited) {
        const char *t = getenv("TK_FUZZ_TRACE");
        g_trace = t && *t && strcmp(t, "0") != 0;
        inited = 1;
    }
    in_data = data;
    in_size = size;
    in_pos = 0;
    int64_t start = start_time(in_u8());
    w_create(&W_REF, start);
    w_create(&W_IMPL, start);
    unsigned op = 0;
    while (in_left() && op < 400) {
        char where[48];
        snprintf(where, sizeof where, "op %u", op++);
        action a;
        read_action(&a, 0, UINT32_MAX);
        if (a.kind == A_RESERVE && (a.value & 1) && (in_u8() & 1)) {
            /* Re-create the loop with its timers pending: none may run. */
            begin_op();
            int x = w_destroy(&W_IMPL), y = w_destroy(&W_REF);
            if (x != y) fail("%s: destroy returned %d, reference %d", where, x, y);
            compare_logs(where);
            start = start_time(in_u8());
            w_create(&W_REF, start);
            w_create(&W_IMPL, start);
            trace("op %u: new loop at %" PRId64 "\n", op - 1, start);
            continue;
        }
        trace("op %u: kind %d target %d/%u value %" PRId64 " mode %u clock %d\n", op - 1,
              a.kind, a.tkind, a.rec, a.value, a.mode, (int)a.clock);
        begin_op();
        result want, got;
        run_action(&W_REF, &a, &want);
        run_action(&W_IMPL, &a, &got);
        compare(&a, &want, &got, where);
        compare_logs(where);
        if (g_cursor != g_nscript)
            fail("%s: the loop's callbacks ran %zu of %zu scripted actions", where, g_cursor,
                 g_nscript);
        compare_state(where);
    }
    begin_op();
    int x = w_destroy(&W_IMPL), y = w_destroy(&W_REF);
    if (x != 0 || y != 0) fail("final destroy returned %d, reference %d", x, y);
    compare_logs("final destroy");
    return 0;
}
