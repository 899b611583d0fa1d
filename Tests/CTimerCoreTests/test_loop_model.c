/*
 * Model test of the manual loop: a random, seeded sequence of operations is
 * applied both to a real manual loop (tk_loop_create_manual) and to the
 * reference scheduler (reference_scheduler.h), and everything observable is
 * compared after every operation: return values and error codes, the log of
 * callbacks (which timer, the loop's time on each clock, `missed`), timer
 * info, the clocks and the loop's counters. Time moves by tk_loop_advance
 * and by tk_loop_run with a deadline (which moves it the same way).
 *
 * Callbacks act too (cancel themselves or others, schedule, reschedule, fire,
 * run the loop nested, stop it, try to advance or destroy it). The actions
 * are chosen while the reference runs an operation and recorded as a script;
 * the real loop then replays the script callback by callback, comparing each
 * action's result.
 *
 * A handful of hand-written scenarios with exact expected values run first,
 * against both the reference and the real loop.
 *
 * Usage: test_loop_model [seed] [--only=NAME]     (or env TK_SEED)
 *        TK_MODEL_OPS=N sets how many random operations the random test
 *        makes; TK_TRACE=1 prints every operation and callback.
 */
#include "CTimerCore.h"
#include "reference_scheduler.h"
#include "test_harness.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* The time unit the random operations think in. */
#define U 1000

/* ------------------------------------------------------------------------
 * Random numbers: the harness's rng_next / rng_below on a state of our own
 * ------------------------------------------------------------------------ */

static int64_t rng_range(uint64_t *r, int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)rng_below(r, (uint64_t)(hi - lo) + 1);
}
static int rng_pct(uint64_t *r, unsigned pct) { return rng_below(r, 100) < pct; }

static int64_t sat_add(int64_t a, int64_t b) { return ref_add(a, b); }

/* ------------------------------------------------------------------------
 * A set of uint64 (open addressing), for the handles a loop has issued
 * ------------------------------------------------------------------------ */

typedef struct u64set { uint64_t *v; size_t cap, n; } u64set;

static size_t u64set_slot(const u64set *s, uint64_t x) {
    uint64_t h = x * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (s->cap - 1);
    while (s->v[i] && s->v[i] != x) i = (i + 1) & (s->cap - 1);
    return i;
}

static int u64set_has(const u64set *s, uint64_t x) {
    if (x == 0 || s->cap == 0) return 0;
    return s->v[u64set_slot(s, x)] == x;
}

static void u64set_add(u64set *s, uint64_t x) {
    if (x == 0) return;
    if (2 * (s->n + 1) > s->cap) {
        u64set old = *s;
        s->cap = old.cap ? old.cap * 2 : 1024;
        s->v = calloc(s->cap, sizeof *s->v);
        if (!s->v) abort();
        s->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.v[i]) u64set_add(s, old.v[i]);
        free(old.v);
    }
    size_t i = u64set_slot(s, x);
    if (!s->v[i]) {
        s->v[i] = x;
        s->n++;
    }
}

static void u64set_clear(u64set *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------------
 * Test bookkeeping
 * ------------------------------------------------------------------------ */

static int g_trace;

/* The first mismatch of the current test, as text. */
static char g_mismatch[4096];
static int g_has_mismatch;

static void mismatch(const char *fmt, ...) {
    if (g_has_mismatch) return;
    g_has_mismatch = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_mismatch, sizeof g_mismatch, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------
 * Worlds: the real loop and the reference, behind one interface
 * ------------------------------------------------------------------------ */

enum { LOG_TIMER = 1, LOG_CLOCK_CHANGE = 2 };

typedef struct log_entry {
    int kind;
    uint32_t rec;         /* which timer (record index) */
    uint64_t missed;
    int64_t now[TK_CLOCK_COUNT];
    int args_ok;          /* the handle / loop / context passed were right */
} log_entry;

typedef struct world world;
typedef void (*hook_fn)(world *w, int kind, uint32_t rec, uint64_t missed);

struct world {
    const char *name;
    int is_ref;
    tk_loop *loop;
    ref_sched ref;
    int live;                 /* a loop exists */
    uint64_t *handles;        /* record index -> this world's handle */
    uint32_t nrec, caprec;
    log_entry *log;
    size_t nlog, caplog;
    int depth;                /* callbacks running */
    uint32_t cb_count;        /* callbacks in the current operation */
    hook_fn hook;             /* scenarios: what callbacks do */
    void *hook_data;
    u64set issued;            /* every handle this loop has issued */
};

static world W_REF = {.name = "reference", .is_ref = 1};
static world W_IMPL = {.name = "loop", .is_ref = 0};

static void world_log(world *w, log_entry e) {
    if (w->nlog == w->caplog) {
        w->caplog = w->caplog ? w->caplog * 2 : 256;
        w->log = realloc(w->log, w->caplog * sizeof *w->log);
        if (!w->log) abort();
    }
    w->log[w->nlog++] = e;
}

static uint32_t world_add_record(world *w, uint64_t handle) {
    if (w->nrec == w->caprec) {
        w->caprec = w->caprec ? w->caprec * 2 : 256;
        w->handles = realloc(w->handles, w->caprec * sizeof *w->handles);
        if (!w->handles) abort();
    }
    w->handles[w->nrec] = handle;
    return w->nrec++;
}

static int64_t w_now(world *w, tk_clock clock) {
    int64_t v = 0;
    if (w->is_ref) {
        ref_now(&w->ref, clock, &v);
    } else if (tk_loop_now(w->loop, clock, &v) != 0) {
        mismatch("tk_loop_now(%d) failed", (int)clock);
    }
    return v;
}

static void on_callback(world *w, int kind, uint32_t rec, uint64_t id, uint64_t missed,
                        int args_ok);

static void impl_timer_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    uint32_t rec = (uint32_t)((uintptr_t)context - 1);
    int ok = loop == W_IMPL.loop && rec < W_IMPL.nrec && W_IMPL.handles[rec] == id;
    on_callback(&W_IMPL, LOG_TIMER, rec, id, missed, ok);
}

static void ref_world_timer_fn(ref_sched *ref, uint64_t id, uint64_t missed, void *context) {
    uint32_t rec = (uint32_t)((uintptr_t)context - 1);
    int ok = ref == &W_REF.ref && rec < W_REF.nrec && W_REF.handles[rec] == id;
    on_callback(&W_REF, LOG_TIMER, rec, id, missed, ok);
}

static void impl_clock_change_fn(tk_loop *loop, void *context) {
    on_callback(&W_IMPL, LOG_CLOCK_CHANGE, 0, 0, 0,
                loop == W_IMPL.loop && context == &W_IMPL);
}

static void ref_world_clock_change_fn(ref_sched *ref, void *context) {
    on_callback(&W_REF, LOG_CLOCK_CHANGE, 0, 0, 0, ref == &W_REF.ref && context == &W_REF);
}

static int w_create(world *w, int64_t start) {
    w->nrec = 0;
    w->nlog = 0;
    w->depth = 0;
    u64set_clear(&w->issued);
    w->live = 1;
    if (w->is_ref) {
        ref_init(&w->ref, start);
        return 0;
    }
    int rc = tk_loop_create_manual(&w->loop, start);
    if (rc) w->live = 0;
    return rc;
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
    w->loop = NULL;
    return rc;
}

/* Flags for w_schedule's NULL-argument variants. */
enum { NULL_SPEC = 1, NULL_FN = 2, NULL_ID = 4 };

static int w_schedule(world *w, const tk_timer_spec *spec, int nulls, uint32_t *rec_out) {
    uint32_t rec = w->nrec;
    void *context = (void *)(uintptr_t)(rec + 1);
    const tk_timer_spec *s = (nulls & NULL_SPEC) ? NULL : spec;
    uint64_t id = 0;
    int rc;
    if (w->is_ref) {
        rc = ref_schedule(&w->ref, s, (nulls & NULL_FN) ? NULL : ref_world_timer_fn, context,
                          (nulls & NULL_ID) ? NULL : &id);
    } else {
        tk_timer_id tid = 0;
        rc = tk_loop_schedule(w->loop, s, (nulls & NULL_FN) ? NULL : impl_timer_fn, context,
                              (nulls & NULL_ID) ? NULL : &tid);
        id = tid;
        if (rc == 0) {
            if (id == TK_TIMER_NONE) mismatch("tk_loop_schedule returned handle 0");
            if (u64set_has(&w->issued, id))
                mismatch("tk_loop_schedule returned handle %#" PRIx64
                         " which it had issued before", id);
            u64set_add(&w->issued, id);
        }
    }
    if (rc == 0) *rec_out = world_add_record(w, id);
    return rc;
}

static int w_cancel(world *w, uint64_t id) {
    return w->is_ref ? ref_cancel(&w->ref, id) : tk_loop_cancel(w->loop, id);
}

static int w_reschedule(world *w, uint64_t id, const tk_timer_spec *spec) {
    return w->is_ref ? ref_reschedule(&w->ref, id, spec) : tk_loop_reschedule(w->loop, id, spec);
}

static int w_info(world *w, uint64_t id, tk_timer_info *info) {
    if (info) memset(info, 0, sizeof *info);
    return w->is_ref ? ref_timer_info(&w->ref, id, info) : tk_loop_timer_info(w->loop, id, info);
}

static int w_fire(world *w, uint64_t id) {
    return w->is_ref ? ref_fire(&w->ref, id) : tk_loop_fire(w->loop, id);
}

static int w_set_time(world *w, tk_clock clock, int64_t v) {
    return w->is_ref ? ref_set_manual_time(&w->ref, clock, v)
                     : tk_loop_set_manual_time(w->loop, clock, v);
}

static int64_t w_advance(world *w, unsigned mode, int64_t delta) {
    return w->is_ref ? ref_advance(&w->ref, mode, delta)
                     : tk_loop_advance(w->loop, TK_MODES(mode), delta);
}

static int w_stats(world *w, tk_loop_stats *stats) {
    memset(stats, 0, sizeof *stats);
    int rc = w->is_ref ? ref_get_stats(&w->ref, stats) : tk_loop_get_stats(w->loop, stats);
    stats->arms = 0; /* timerfd arming is not part of the model */
    return rc;
}

static int w_set_clock_change(world *w, int on) {
    if (w->is_ref) {
        ref_set_clock_change_handler(&w->ref, on ? ref_world_clock_change_fn : NULL, &W_REF);
        return 0;
    }
    return tk_loop_set_clock_change_handler(w->loop, on ? impl_clock_change_fn : NULL, &W_IMPL);
}

static int w_reserve(world *w, tk_clock clock, uint32_t n) {
    return w->is_ref ? ref_reserve(&w->ref, clock, n) : tk_loop_reserve(w->loop, clock, n);
}

static int w_run(world *w, unsigned mode, int64_t until, uint32_t flags) {
    return w->is_ref ? ref_run(&w->ref, mode, until, flags)
                     : tk_loop_run(w->loop, TK_MODES(mode), until, flags);
}

static int w_stop(world *w) { return w->is_ref ? ref_stop(&w->ref) : tk_loop_stop(w->loop); }

static int w_add_common_modes(world *w, tk_mode_set modes) {
    return w->is_ref ? ref_add_common_modes(&w->ref, modes)
                     : tk_loop_add_common_modes(w->loop, modes);
}

/* Modes to make common: mostly one of the few that runs use most, now and
 * then a set of several, or one with the invalid bit. */
static int64_t pick_common_modes(uint64_t *r) {
    uint64_t k = rng_below(r, 100);
    if (k < 80) return (int64_t)TK_MODES(rng_below(r, 5));
    if (k < 97) return (int64_t)(tk_mode_set)rng_range(r, 1, 0x7FFF);
    return (int64_t)(TK_MODES_INVALID | (tk_mode_set)rng_below(r, 4));
}

/* The reference's state of record `rec` (reference world only). */
static int ref_state(uint32_t rec) {
    return W_REF.ref.timers[W_REF.handles[rec] - 1].state;
}
static const ref_timer *ref_rec(uint32_t rec) {
    return &W_REF.ref.timers[W_REF.handles[rec] - 1];
}

/* ------------------------------------------------------------------------
 * Targets: how an operation names a timer, resolved per world
 * ------------------------------------------------------------------------ */

enum { TGT_REC = 0, TGT_ZERO = 1, TGT_FORGED = 2 };

typedef struct target {
    int kind;
    uint32_t rec;     /* TGT_REC, and the base of TGT_FORGED (if any records) */
    uint64_t salt;    /* TGT_FORGED */
} target;

/* A handle that this world never issued (so it names no timer). */
static uint64_t forge_handle(world *w, const target *t) {
    if (w->is_ref) return UINT64_MAX - (t->salt % 4096); /* ids are small */
    uint64_t base = t->rec < w->nrec ? w->handles[t->rec] : t->salt;
    uint64_t v;
    switch (t->salt % 8) {
    case 0: v = base ^ (1ull << 32); break;
    case 1: v = base + 1; break;
    case 2: v = base - 1; break;
    case 3: v = base ^ (1ull << 63); break;
    case 4: v = base & 0xffffffffull; break;
    case 5: v = base ^ 0xffffffffull; break;
    case 6: v = base + (1ull << 32); break;
    default: v = t->salt; break;
    }
    while (v == 0 || u64set_has(&w->issued, v)) v = v * 6364136223846793005ull + 1442695040888963407ull;
    return v;
}

static uint64_t resolve(world *w, const target *t) {
    switch (t->kind) {
    case TGT_REC: return t->rec < w->nrec ? w->handles[t->rec] : 0;
    case TGT_ZERO: return 0;
    default: return forge_handle(w, t);
    }
}

static void describe_target(char *buf, size_t n, const target *t) {
    switch (t->kind) {
    case TGT_REC: snprintf(buf, n, "T%u", t->rec); break;
    case TGT_ZERO: snprintf(buf, n, "handle 0"); break;
    default: snprintf(buf, n, "forged(%" PRIu64 ")", t->salt % 8); break;
    }
}

/* ------------------------------------------------------------------------
 * Actions: what an operation or a callback does
 * ------------------------------------------------------------------------ */

enum act_kind {
    A_SCHEDULE, A_CANCEL, A_RESCHEDULE, A_INFO, A_FIRE, A_ADVANCE, A_DESTROY, A_STATS,
    A_SET_TIME, A_CLOCK_CHANGE, A_RESERVE, A_RUN, A_STOP, A_ADD_COMMON, A_KIND_COUNT
};

static const char *const act_names[] = {
    "schedule", "cancel", "reschedule", "info", "fire", "advance", "destroy", "stats",
    "set_time", "clock_change_handler", "reserve", "run", "stop", "add_common_modes",
};

typedef struct action {
    uint32_t cb;          /* callback ordinal within the operation (scripts) */
    int kind;
    target tgt;
    tk_timer_spec spec;
    int nulls;            /* NULL_* for schedule; NULL_SPEC for reschedule; 1 for info */
    unsigned mode;        /* advance, run */
    int64_t value;        /* advance delta, set_time value, reserve count, handler on,
                             run deadline (absolute) */
    uint32_t flags;       /* run */
    tk_clock clock;       /* set_time */
} action;

typedef struct result {
    int64_t rc;
    tk_timer_info info;
    tk_loop_stats stats;
    uint32_t new_rec;
} result;

static void describe_spec(char *buf, size_t n, const tk_timer_spec *s) {
    snprintf(buf, n, "{clock %d, %s %" PRId64 ", interval %" PRId64 ", leeway %" PRId64
             ", modes %#x, flags %#x}",
             (int)s->clock, (s->flags & TK_TIMER_ABSOLUTE) ? "at" : "in",
             (s->flags & TK_TIMER_ABSOLUTE) ? s->deadline_ns : s->delay_ns,
             s->interval_ns, s->leeway_ns, s->modes, s->flags);
}

static void describe_action(char *buf, size_t n, const action *a) {
    char t[64], s[256];
    describe_target(t, sizeof t, &a->tgt);
    describe_spec(s, sizeof s, &a->spec);
    switch (a->kind) {
    case A_SCHEDULE:
        snprintf(buf, n, "schedule %s%s%s%s", s, (a->nulls & NULL_SPEC) ? " NULL spec" : "",
                 (a->nulls & NULL_FN) ? " NULL fn" : "", (a->nulls & NULL_ID) ? " NULL id" : "");
        break;
    case A_RESCHEDULE:
        snprintf(buf, n, "reschedule %s %s", t, a->nulls ? "NULL spec" : s);
        break;
    case A_CANCEL: snprintf(buf, n, "cancel %s", t); break;
    case A_INFO: snprintf(buf, n, "info %s%s", t, a->nulls ? " NULL info" : ""); break;
    case A_FIRE: snprintf(buf, n, "fire %s", t); break;
    case A_ADVANCE:
        snprintf(buf, n, "advance mode %u by %" PRId64, a->mode, a->value);
        break;
    case A_SET_TIME:
        snprintf(buf, n, "set_manual_time clock %d to %" PRId64, (int)a->clock, a->value);
        break;
    case A_CLOCK_CHANGE:
        snprintf(buf, n, "clock change handler %s", a->value ? "on" : "off");
        break;
    case A_RESERVE:
        snprintf(buf, n, "reserve %" PRId64 " on clock %d", a->value, (int)a->clock);
        break;
    case A_ADD_COMMON:
        snprintf(buf, n, "add common modes %#" PRIx64, (uint64_t)a->value);
        break;
    case A_RUN:
        if (a->value == TK_FOREVER) {
            snprintf(buf, n, "run mode %u forever, flags %#x", a->mode, a->flags);
        } else {
            snprintf(buf, n, "run mode %u until %" PRId64 ", flags %#x", a->mode, a->value,
                     a->flags);
        }
        break;
    default: snprintf(buf, n, "%s", act_names[a->kind]); break;
    }
}

/* Runs `a` on world `w`. */
static void run_action(world *w, const action *a, result *out) {
    memset(out, 0, sizeof *out);
    switch (a->kind) {
    case A_SCHEDULE:
        out->new_rec = UINT32_MAX;
        out->rc = w_schedule(w, &a->spec, a->nulls, &out->new_rec);
        break;
    case A_CANCEL: out->rc = w_cancel(w, resolve(w, &a->tgt)); break;
    case A_RESCHEDULE:
        out->rc = w_reschedule(w, resolve(w, &a->tgt), a->nulls ? NULL : &a->spec);
        break;
    case A_INFO:
        out->rc = w_info(w, resolve(w, &a->tgt), a->nulls ? NULL : &out->info);
        break;
    case A_FIRE: out->rc = w_fire(w, resolve(w, &a->tgt)); break;
    case A_ADVANCE: out->rc = w_advance(w, a->mode, a->value); break;
    case A_DESTROY:
        if (w->is_ref) {
            out->rc = ref_destroy_result(&w->ref);
        } else {
            out->rc = tk_loop_destroy(w->loop);
            if (out->rc == 0) {
                /* The loop is gone under a running callback: nothing sane can
                 * follow. */
                fprintf(stderr, "FATAL seed=%" PRIu64 ": tk_loop_destroy from a callback "
                        "returned 0 (expected -EBUSY)\n", g_seed);
                printf("0 passed, 1 failed\n");
                _exit(1);
            }
        }
        break;
    case A_STATS: out->rc = w_stats(w, &out->stats); break;
    case A_SET_TIME: out->rc = w_set_time(w, a->clock, a->value); break;
    case A_CLOCK_CHANGE: out->rc = w_set_clock_change(w, (int)a->value); break;
    case A_RESERVE: out->rc = w_reserve(w, a->clock, (uint32_t)a->value); break;
    case A_RUN: out->rc = w_run(w, a->mode, a->value, a->flags); break;
    case A_STOP: out->rc = w_stop(w); break;
    case A_ADD_COMMON: out->rc = w_add_common_modes(w, (tk_mode_set)a->value); break;
    default: abort();
    }
}

static int info_equal(const tk_timer_info *a, const tk_timer_info *b) {
    return a->clock == b->clock && a->deadline_ns == b->deadline_ns &&
           a->interval_ns == b->interval_ns && a->leeway_ns == b->leeway_ns &&
           a->modes == b->modes && a->waiting_for_mode == b->waiting_for_mode &&
           a->flags == b->flags;
}

static int stats_equal(const tk_loop_stats *a, const tk_loop_stats *b) {
    return a->pending == b->pending && a->wakeups == b->wakeups && a->fired == b->fired &&
           a->clock_changes == b->clock_changes;
}

static void describe_info(char *buf, size_t n, const tk_timer_info *i) {
    snprintf(buf, n, "{clock %d, deadline %" PRId64 ", interval %" PRId64 ", leeway %" PRId64
             ", modes %#x, waiting %d, flags %#x}",
             (int)i->clock, i->deadline_ns, i->interval_ns, i->leeway_ns, i->modes,
             i->waiting_for_mode, i->flags);
}

static void describe_stats(char *buf, size_t n, const tk_loop_stats *s) {
    snprintf(buf, n, "{pending %" PRIu64 ", wakeups %" PRIu64 ", fired %" PRIu64
             ", clock_changes %" PRIu64 "}",
             s->pending, s->wakeups, s->fired, s->clock_changes);
}

/* Compares the loop's result of `a` with the reference's. */
static void compare_results(const action *a, const result *want, const result *got,
                            const char *where) {
    char d[512];
    describe_action(d, sizeof d, a);
    if (want->rc != got->rc) {
        mismatch("%s: %s returned %" PRId64 ", reference %" PRId64, where, d, got->rc, want->rc);
        return;
    }
    if (a->kind == A_SCHEDULE && want->rc == 0 && want->new_rec != got->new_rec) {
        mismatch("%s: %s made record %u, reference %u", where, d, got->new_rec, want->new_rec);
    }
    if (a->kind == A_INFO && want->rc == 0 && !info_equal(&want->info, &got->info)) {
        char x[256], y[256];
        describe_info(x, sizeof x, &got->info);
        describe_info(y, sizeof y, &want->info);
        mismatch("%s: %s gave %s, reference %s", where, d, x, y);
    }
    if (a->kind == A_STATS && !stats_equal(&want->stats, &got->stats)) {
        char x[256], y[256];
        describe_stats(x, sizeof x, &got->stats);
        describe_stats(y, sizeof y, &want->stats);
        mismatch("%s: %s gave %s, reference %s", where, d, x, y);
    }
}

/* ------------------------------------------------------------------------
 * The random driver
 * ------------------------------------------------------------------------ */

typedef struct scripted { action a; result want; } scripted;

static struct driver {
    uint64_t ops;       /* random state: top-level operations */
    uint64_t cb;        /* random state: callback decisions (taken in the reference only) */
    scripted *script;
    size_t nscript, capscript, cursor;
    uint32_t *cb_recs;  /* per callback ordinal: the reference's record (or UINT32_MAX) */
    size_t ncb, capcb;
    int replay_broken;
    uint64_t op_index;
    int random_mode;    /* callbacks follow the random driver */
    uint64_t runs[2][4]; /* runs [top-level, nested] by result: stopped, timed out,
                            passed, error */
} D;

#define CALLBACK_BUDGET 2000 /* callbacks per operation before they stop adding work */
#define MAX_LIVE 96

static void script_push(const action *a, const result *want) {
    if (D.nscript == D.capscript) {
        D.capscript = D.capscript ? D.capscript * 2 : 256;
        D.script = realloc(D.script, D.capscript * sizeof *D.script);
        if (!D.script) abort();
    }
    D.script[D.nscript].a = *a;
    D.script[D.nscript].want = *want;
    D.nscript++;
}

/* Counts a run the reference made, by its result. */
static void count_run(const action *a, const result *r, int nested) {
    if (a->kind != A_RUN) return;
    D.runs[nested][r->rc >= 0 && r->rc <= TK_RUN_PASSED ? r->rc : 3]++;
}

static void cbrec_push(uint32_t rec) {
    if (D.ncb == D.capcb) {
        D.capcb = D.capcb ? D.capcb * 2 : 256;
        D.cb_recs = realloc(D.cb_recs, D.capcb * sizeof *D.cb_recs);
        if (!D.cb_recs) abort();
    }
    D.cb_recs[D.ncb++] = rec;
}

static int64_t pick_delay(uint64_t *r) {
    static const int64_t ties[] = {0, U, 2 * U, 5 * U, 10 * U};
    uint64_t k = rng_below(r, 100);
    if (k < 12) return 0;
    if (k < 15) return -(int64_t)rng_below(r, 10 * U) - 1;
    if (k < 55) return ties[rng_below(r, 5)];
    if (k < 80) return rng_range(r, 1, 20 * U);
    if (k < 95) return rng_range(r, 1, 300 * U);
    if (k < 98) return rng_range(r, 1, 100000 * U);
    return INT64_MAX - (int64_t)rng_below(r, 3);
}

static tk_mode_set pick_modes(uint64_t *r) {
    uint64_t k = rng_below(r, 100);
    if (k < 60) return (tk_mode_set)rng_range(r, 1, 15);
    if (k < 80) return TK_MODES(0);
    if (k < 90) return TK_MODES_ALL;
    return (tk_mode_set)(1u << 30) | (tk_mode_set)rng_below(r, 16);
}

/* A valid spec. `top` allows tiny intervals (callbacks never make them, so
 * an advance cannot be swamped by fires it did not plan for). */
static tk_timer_spec pick_spec(uint64_t *r, int top) {
    tk_timer_spec s;
    memset(&s, 0, sizeof s);
    s.clock = (tk_clock)rng_below(r, TK_CLOCK_COUNT);
    s.modes = pick_modes(r);
    if (rng_pct(r, 12)) {
        s.flags = TK_TIMER_ABSOLUTE;
        uint64_t k = rng_below(r, 100);
        int64_t now = W_REF.ref.now[s.clock];
        if (k < 3) s.deadline_ns = INT64_MIN + (int64_t)rng_below(r, 3);
        else if (k < 6) s.deadline_ns = INT64_MAX - (int64_t)rng_below(r, 3);
        else if (k < 30) s.deadline_ns = now;
        else s.deadline_ns = sat_add(now, rng_range(r, -50 * U, 100 * U));
    } else {
        s.delay_ns = pick_delay(r);
    }
    if (rng_pct(r, 25)) s.flags |= TK_TIMER_COMMON;
    if (rng_pct(r, 40)) {
        static const int64_t grid[] = {U, 2 * U, 5 * U, 10 * U, 37 * U, 100 * U};
        uint64_t k = rng_below(r, 100);
        if (top && k < 3) s.interval_ns = rng_range(r, 1, 10);
        else if (k < 60) s.interval_ns = grid[rng_below(r, 6)];
        else s.interval_ns = rng_range(r, U, 200 * U);
    }
    uint64_t k = rng_below(r, 100);
    if (k < 40) {
        s.leeway_ns = 0;
        if (rng_pct(r, 30)) s.flags |= TK_TIMER_PRECISE; /* on a manual loop: no leeway */
    } else if (k < 65) s.leeway_ns = rng_range(r, 1, U);
    else if (k < 88) s.leeway_ns = rng_range(r, 1, 20 * U);
    else if (k < 97) s.leeway_ns = 1000 * U;
    else s.leeway_ns = INT64_MAX;
    return s;
}

static tk_timer_spec pick_bad_spec(uint64_t *r) {
    tk_timer_spec s = pick_spec(r, 0);
    switch (rng_below(r, 9)) {
    case 0: s.clock = (tk_clock)(TK_CLOCK_COUNT + rng_below(r, 3)); break;
    case 1: s.interval_ns = -(int64_t)rng_range(r, 1, 1000); break;
    case 2: s.leeway_ns = rng_pct(r, 50) ? -1 : INT64_MIN; break;
    case 3: s.modes |= TK_MODES_INVALID; break;
    case 4: {
        /* TK_TIMER_KEEP_DEADLINE, which no new timer takes, or a flag no
         * version has (TK_TIMER_COMMON, 0x8, is valid). */
        unsigned k = (unsigned)rng_below(r, 29);
        s.flags |= k == 0 ? TK_TIMER_KEEP_DEADLINE : 16u << (k - 1);
        break;
    }
    case 7: /* precise, with a leeway */
        s.flags |= TK_TIMER_PRECISE;
        s.leeway_ns = rng_range(r, 1, 20 * U);
        break;
    /* The first fire in the field the flags do not name. */
    case 5:
        if (s.flags & TK_TIMER_ABSOLUTE) {
            s.delay_ns = rng_range(r, 1, 100 * U);
        } else {
            s.deadline_ns = rng_pct(r, 50) ? -1 : rng_range(r, 1, 100 * U);
        }
        break;
    case 6: s.modes = TK_MODES(TK_MODE_COUNT + rng_below(r, 40)); break;
    default: s.interval_ns = INT64_MIN; break;
    }
    return s;
}

/* A random record the reference has scheduled, other than `not_rec`, or -1. */
static int64_t pick_live(uint64_t *r, uint32_t not_rec) {
    const ref_sched *ref = &W_REF.ref;
    if (ref->live_count == 0) return -1;
    for (int tries = 0; tries < 4; tries++) {
        uint32_t rec = (uint32_t)ref->live[rng_below(r, ref->live_count)];
        if (rec != not_rec) return rec;
    }
    return -1;
}

/* A random record that is dead in the reference, other than `not_rec`, or -1. */
static int64_t pick_stale(uint64_t *r, uint32_t not_rec) {
    if (W_REF.nrec == 0) return -1;
    for (int tries = 0; tries < 8; tries++) {
        uint32_t rec = (uint32_t)rng_below(r, W_REF.nrec);
        if (rec != not_rec && ref_state(rec) == REF_DEAD) return rec;
    }
    return -1;
}

static target pick_bogus(uint64_t *r) {
    target t = {TGT_FORGED, 0, rng_next(r)};
    if (rng_pct(r, 15)) t.kind = TGT_ZERO;
    if (W_REF.nrec) t.rec = (uint32_t)rng_below(r, W_REF.nrec);
    else t.rec = UINT32_MAX;
    return t;
}

/* A target for an operation on someone else: live 60%, stale 25%, bogus 15%. */
static target pick_other(uint64_t *r, uint32_t not_rec) {
    uint64_t k = rng_below(r, 100);
    int64_t rec = -1;
    if (k < 60) rec = pick_live(r, not_rec);
    else if (k < 85) rec = pick_stale(r, not_rec);
    if (rec >= 0) return (target){TGT_REC, (uint32_t)rec, 0};
    return pick_bogus(r);
}

/* The least interval of any scheduled repeating timer (INT64_MAX if none). */
static int64_t min_live_interval(void) {
    int64_t m = INT64_MAX;
    const ref_sched *ref = &W_REF.ref;
    for (size_t k = 0; k < ref->live_count; k++) {
        const ref_timer *t = &ref->timers[ref->live[k]];
        if (t->interval > 0 && t->interval < m) m = t->interval;
    }
    return m;
}

/* Makes `a` a run in its mode over an advance-like span `delta`: mostly up to
 * `delta` past the reference's monotonic clock, now and then up to now, to a
 * time already past, or TK_FOREVER with TK_RUN_NOWAIT (which does not move
 * time); now and then with TK_RUN_ONCE or TK_RUN_NOWAIT. */
static void pick_run(uint64_t *r, action *a, int64_t delta) {
    a->kind = A_RUN;
    int64_t now = W_REF.ref.now[TK_CLOCK_MONOTONIC];
    uint64_t f = rng_below(r, 100);
    a->flags = f < 76 ? 0 : f < 88 ? TK_RUN_ONCE : TK_RUN_NOWAIT;
    uint64_t k = rng_below(r, 100);
    if (k < 4) {
        a->value = now;
    } else if (k < 7) {
        a->value = sat_add(now, -rng_range(r, 1, 10 * U));
    } else if (k < 10) {
        a->value = TK_FOREVER;
        a->flags |= TK_RUN_NOWAIT;
    } else {
        a->value = sat_add(now, delta);
    }
    /* Up to TK_FOREVER without TK_RUN_NOWAIT, a run would wait for ever. */
    if (a->value == TK_FOREVER && !(a->flags & TK_RUN_NOWAIT)) a->value = TK_FOREVER - 1;
}

/* Decides what a callback does (reference world, outermost callback only),
 * runs it on the reference and records it in the script. */
static void decide_callback_actions(world *w, int kind, uint32_t rec, uint32_t ordinal) {
    uint64_t *r = &D.cb;
    unsigned n;
    uint64_t k = rng_below(r, 100);
    if (k < 55) n = 0;
    else if (k < 85) n = 1;
    else n = 2 + (unsigned)rng_below(r, 2);
    int budget_left = w->cb_count < CALLBACK_BUDGET;
    int self_ok = kind == LOG_TIMER;
    if (!budget_left && self_ok && ref_state(rec) == REF_SCHEDULED &&
        ref_rec(rec)->interval > 0) {
        /* Past the budget, repeating timers stop themselves, so that no
         * operation runs away. */
        action a;
        memset(&a, 0, sizeof a);
        a.cb = ordinal;
        a.kind = A_CANCEL;
        a.tgt = (target){TGT_REC, rec, 0};
        result want;
        run_action(w, &a, &want);
        script_push(&a, &want);
    }
    for (unsigned i = 0; i < n; i++) {
        action a;
        memset(&a, 0, sizeof a);
        a.cb = ordinal;
        int self_state = self_ok ? ref_state(rec) : REF_DEAD;
        uint64_t c = rng_below(r, 100);
        if (c < 20) {
            a.kind = A_CANCEL;
            if (self_ok && rng_pct(r, 50)) a.tgt = (target){TGT_REC, rec, 0};
            else a.tgt = pick_other(r, self_ok ? rec : UINT32_MAX);
        } else if (c < 40) {
            if (!budget_left) continue;
            a.kind = A_RESCHEDULE;
            a.spec = pick_spec(r, 0);
            if (self_ok && rng_pct(r, self_state == REF_DEAD ? 10 : 50)) {
                a.tgt = (target){TGT_REC, rec, 0}; /* dead: -ENOENT */
            } else {
                a.tgt = pick_other(r, self_ok ? rec : UINT32_MAX);
            }
            /* Bad specs only for scheduled timers (the order of -ENOENT and
             * -EINVAL checks is not part of the contract). */
            int scheduled = a.tgt.kind == TGT_REC && ref_state(a.tgt.rec) != REF_DEAD;
            if (scheduled && rng_pct(r, 10)) {
                if (rng_pct(r, 30)) a.nulls = 1;
                else a.spec = pick_bad_spec(r);
            }
        } else if (c < 60) {
            if (!budget_left || W_REF.ref.live_count >= MAX_LIVE) continue;
            a.kind = A_SCHEDULE;
            a.spec = rng_pct(r, 8) ? pick_bad_spec(r) : pick_spec(r, 0);
        } else if (c < 70) {
            a.kind = A_INFO;
            if (self_ok && rng_pct(r, 50)) a.tgt = (target){TGT_REC, rec, 0};
            else a.tgt = pick_other(r, self_ok ? rec : UINT32_MAX);
        } else if (c < 78) {
            a.kind = A_FIRE;
            /* Self: nested (scheduled), or -ENOENT (a one-shot in its own
             * callback, or cancelled). */
            if (self_ok && rng_pct(r, 30)) {
                a.tgt = (target){TGT_REC, rec, 0};
            } else {
                a.tgt = pick_other(r, self_ok ? rec : UINT32_MAX);
            }
        } else if (c < 81) {
            a.kind = A_ADVANCE;
            a.mode = (unsigned)rng_below(r, 4);
            a.value = rng_below(r, 3) * U;
        } else if (c < 84) {
            /* A nested run (-EBUSY from a callback of advance). */
            if (!budget_left) continue;
            a.mode = (unsigned)rng_below(r, 4);
            int64_t span = (int64_t)rng_below(r, 4) * U;
            int64_t mi = min_live_interval();
            if (mi != INT64_MAX && span / 300 > mi) span = mi * 300;
            pick_run(r, &a, span);
        } else if (c < 88) {
            a.kind = A_DESTROY;
        } else if (c < 94) {
            a.kind = A_STATS;
        } else if (c < 96) {
            a.kind = A_STOP; /* ends the innermost run after this callback */
        } else if (c < 98) {
            a.kind = A_ADD_COMMON;
            a.value = pick_common_modes(r);
        } else {
            continue;
        }
        result want;
        run_action(w, &a, &want);
        script_push(&a, &want);
        count_run(&a, &want, 1);
        if (g_trace) {
            char d[512];
            describe_action(d, sizeof d, &a);
            fprintf(stderr, "      cb#%u %s -> %" PRId64 "\n", ordinal, d, want.rc);
        }
    }
}

/* Replays the script entries of callback `ordinal` on the real loop. */
static void replay_callback_actions(world *w, int kind, uint32_t rec, uint32_t ordinal) {
    if (D.replay_broken) return;
    uint32_t want_rec = ordinal < D.ncb ? D.cb_recs[ordinal] : UINT32_MAX - 1;
    uint32_t got_rec = kind == LOG_CLOCK_CHANGE ? UINT32_MAX : rec;
    if (want_rec != got_rec) {
        D.replay_broken = 1; /* the callback logs will show the difference */
        return;
    }
    while (D.cursor < D.nscript && D.script[D.cursor].a.cb == ordinal) {
        scripted *s = &D.script[D.cursor++];
        result got;
        run_action(w, &s->a, &got);
        char where[64];
        snprintf(where, sizeof where, "in callback #%u (T%u)", ordinal, rec);
        compare_results(&s->a, &s->want, &got, where);
        if (s->a.kind == A_SCHEDULE && s->want.rc == 0 && got.rc != 0) {
            world_add_record(w, 0); /* keep record numbers aligned */
        }
    }
}

static void on_callback(world *w, int kind, uint32_t rec, uint64_t id, uint64_t missed,
                        int args_ok) {
    (void)id;
    log_entry e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.rec = kind == LOG_TIMER ? rec : 0;
    e.missed = missed;
    e.args_ok = args_ok;
    for (int c = 0; c < TK_CLOCK_COUNT; c++) e.now[c] = w_now(w, (tk_clock)c);
    world_log(w, e);
    if (g_trace) {
        fprintf(stderr, "    %s %s T%u missed %" PRIu64 " at %" PRId64 "/%" PRId64 "/%" PRId64
                "%s\n", w->name, kind == LOG_TIMER ? "timer" : "clock-change", rec, missed,
                e.now[0], e.now[1], e.now[2], args_ok ? "" : " BAD ARGS");
    }
    uint32_t ordinal = w->cb_count++;
    w->depth++;
    if (w->hook) {
        w->hook(w, kind, rec, missed);
    } else if (D.random_mode) {
        if (w->is_ref) cbrec_push(kind == LOG_CLOCK_CHANGE ? UINT32_MAX : rec);
        if (w->depth == 1) {
            if (w->is_ref) decide_callback_actions(w, kind, rec, ordinal);
            else replay_callback_actions(w, kind, rec, ordinal);
        }
    }
    w->depth--;
}

static void describe_log(char *buf, size_t n, const log_entry *e) {
    if (e->kind == LOG_CLOCK_CHANGE) {
        snprintf(buf, n, "clock-change at %" PRId64 "/%" PRId64 "/%" PRId64 "%s", e->now[0],
                 e->now[1], e->now[2], e->args_ok ? "" : " (bad args)");
    } else {
        snprintf(buf, n, "T%u missed %" PRIu64 " at %" PRId64 "/%" PRId64 "/%" PRId64 "%s",
                 e->rec, e->missed, e->now[0], e->now[1], e->now[2],
                 e->args_ok ? "" : " (bad handle/loop/context)");
    }
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
        const log_entry *a = &W_REF.log[i], *b = &W_IMPL.log[i];
        if (!log_equal(a, b)) {
            char x[256], y[256];
            describe_log(x, sizeof x, b);
            describe_log(y, sizeof y, a);
            mismatch("%s: callback #%zu: loop ran %s, reference %s", where, i, x, y);
            return;
        }
    }
    if (W_REF.nlog != W_IMPL.nlog) {
        char x[256] = "nothing";
        const log_entry *extra = W_REF.nlog > n ? &W_REF.log[n] : &W_IMPL.log[n];
        describe_log(x, sizeof x, extra);
        mismatch("%s: loop ran %zu callbacks, reference %zu (first extra in %s: %s)", where,
                 W_IMPL.nlog, W_REF.nlog, W_REF.nlog > n ? "reference" : "loop", x);
    }
}

static void compare_state(const char *where) {
    tk_loop_stats a, b;
    int ra = w_stats(&W_REF, &a), rb = w_stats(&W_IMPL, &b);
    if (ra != rb || !stats_equal(&a, &b)) {
        char x[256], y[256];
        describe_stats(x, sizeof x, &b);
        describe_stats(y, sizeof y, &a);
        mismatch("%s: stats %s, reference %s", where, x, y);
    }
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        int64_t x = w_now(&W_IMPL, (tk_clock)c), y = w_now(&W_REF, (tk_clock)c);
        if (x != y)
            mismatch("%s: clock %d reads %" PRId64 ", reference %" PRId64, where, c, x, y);
    }
}

/* Every scheduled timer's info, and a few dead ones. */
static void compare_all_info(uint64_t *r, const char *where) {
    const ref_sched *ref = &W_REF.ref;
    for (size_t k = 0; k < ref->live_count && !g_has_mismatch; k++) {
        action a;
        memset(&a, 0, sizeof a);
        a.kind = A_INFO;
        a.tgt = (target){TGT_REC, (uint32_t)ref->live[k], 0};
        result want, got;
        run_action(&W_REF, &a, &want);
        run_action(&W_IMPL, &a, &got);
        compare_results(&a, &want, &got, where);
    }
    for (int i = 0; i < 8 && !g_has_mismatch; i++) {
        int64_t rec = pick_stale(r, UINT32_MAX);
        if (rec < 0) break;
        action a;
        memset(&a, 0, sizeof a);
        a.kind = A_INFO;
        a.tgt = (target){TGT_REC, (uint32_t)rec, 0};
        result want, got;
        run_action(&W_REF, &a, &want);
        run_action(&W_IMPL, &a, &got);
        compare_results(&a, &want, &got, where);
    }
}

/* Picks the next top-level operation. */
static action pick_op(uint64_t *r) {
    action a;
    memset(&a, 0, sizeof a);
    a.cb = UINT32_MAX;
    const ref_sched *ref = &W_REF.ref;
    int crowded = ref->live_count >= MAX_LIVE;
    uint64_t k = rng_below(r, 1000);
    if (k < 330) {
        /* An advance, or a run over the same kind of span. */
        a.kind = A_ADVANCE;
        uint64_t m = rng_below(r, 100);
        a.mode = m < 45 ? 0 : m < 90 ? (unsigned)rng_range(r, 1, 3)
                             : m < 97 ? (unsigned)rng_range(r, 4, 31) : 31;
        uint64_t d = rng_below(r, 100);
        if (d < 15) a.value = 0;
        else if (d < 50) a.value = rng_range(r, 1, 5 * U);
        else if (d < 75) a.value = rng_range(r, 1, 30 * U);
        else if (d < 93) a.value = rng_range(r, 1, 300 * U);
        else if (d < 99) a.value = rng_range(r, 1, 3000 * U);
        else a.value = rng_range(r, 1, 1000000 * U);
        /* Keep the number of fires per advance bounded. */
        int64_t mi = min_live_interval();
        if (mi != INT64_MAX && a.value / 300 > mi) a.value = mi * 300;
        if (rng_below(r, 2000) == 0) a.value = INT64_MAX; /* every clock saturates */
        if (k >= 230) pick_run(r, &a, a.value);
        if (rng_below(r, 200) == 0) {
            a.mode = rng_pct(r, 50) ? TK_MODE_COUNT + (unsigned)rng_below(r, 100) : UINT32_MAX;
        } else if (rng_below(r, 200) == 0) {
            if (a.kind == A_RUN) a.flags = rng_pct(r, 50) ? 4u : 0x80000000u;
            else a.value = rng_pct(r, 50) ? -1 : INT64_MIN;
        }
    } else if (k < (crowded ? 360u : 550u)) {
        a.kind = A_SCHEDULE;
        uint64_t v = rng_below(r, 100);
        if (v < 5) a.spec = pick_bad_spec(r);
        else a.spec = pick_spec(r, 1);
        if (v >= 5 && v < 7) a.nulls = 1 << rng_below(r, 3);
    } else if (k < 700) {
        a.kind = A_CANCEL;
        a.tgt = pick_other(r, UINT32_MAX);
    } else if (k < 800) {
        a.kind = A_RESCHEDULE;
        a.tgt = pick_other(r, UINT32_MAX);
        a.spec = pick_spec(r, 1);
        if (a.tgt.kind == TGT_REC && ref_state(a.tgt.rec) != REF_DEAD && rng_pct(r, 10)) {
            if (rng_pct(r, 30)) a.nulls = 1;
            else a.spec = pick_bad_spec(r);
        }
    } else if (k < 850) {
        a.kind = A_INFO;
        a.tgt = pick_other(r, UINT32_MAX);
        if (rng_pct(r, 3)) a.nulls = 1;
    } else if (k < 890) {
        a.kind = A_FIRE;
        a.tgt = pick_other(r, UINT32_MAX);
    } else if (k < 960) {
        a.kind = A_SET_TIME;
        uint64_t c = rng_below(r, 100);
        if (c < 40) {
            a.clock = TK_CLOCK_REALTIME;
            int64_t now = ref->now[TK_CLOCK_REALTIME];
            uint64_t j = rng_below(r, 100);
            if (j < 15) a.value = now;
            else if (j < 85) a.value = sat_add(now, rng_range(r, -300 * U, 300 * U));
            else a.value = sat_add(now, rng_range(r, -1000000 * U, 1000000 * U));
        } else if (c < 70) {
            a.clock = TK_CLOCK_BOOTTIME; /* a suspend */
            a.value = sat_add(ref->now[TK_CLOCK_BOOTTIME], rng_range(r, 0, 500 * U));
        } else if (c < 85) {
            a.clock = TK_CLOCK_MONOTONIC;
            a.value = sat_add(ref->now[TK_CLOCK_MONOTONIC], rng_range(r, 0, 100 * U));
        } else if (c < 95) {
            a.clock = (tk_clock)rng_below(r, 2);
            a.value = sat_add(ref->now[a.clock], -rng_range(r, 1, 10 * U));
        } else {
            a.clock = (tk_clock)(TK_CLOCK_COUNT + rng_below(r, 5));
            a.value = 0;
        }
    } else if (k < 975) {
        a.kind = A_CLOCK_CHANGE;
        a.value = rng_pct(r, 70);
    } else if (k < 985) {
        a.kind = A_RESERVE;
        a.value = (int64_t)rng_below(r, 300);
        a.clock = (tk_clock)rng_below(r, rng_pct(r, 90) ? TK_CLOCK_COUNT : 40);
    } else if (k < 990) {
        a.kind = A_STOP; /* no run is going: the next one returns at once */
    } else if (k < 994) {
        a.kind = A_ADD_COMMON;
        a.value = pick_common_modes(r);
    } else {
        a.kind = A_STATS;
    }
    return a;
}

/* Ring of recent operations for failure reports. */
#define HISTORY 24
static char g_history[HISTORY][600];
static uint64_t g_nhistory;

static void history(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_history[g_nhistory++ % HISTORY], sizeof g_history[0], fmt, ap);
    va_end(ap);
}

static void begin_op(void) {
    D.nscript = D.cursor = 0;
    D.ncb = 0;
    D.replay_broken = 0;
    W_REF.nlog = W_IMPL.nlog = 0;
    W_REF.cb_count = W_IMPL.cb_count = 0;
}

/* `ops` random operations from the random state `seed`; 0, or -1 after
 * reporting the first mismatch. */
static int random_run(uint64_t seed, uint64_t ops) {
    memset(&D, 0, sizeof D);
    D.ops = seed;
    D.cb = seed ^ 0x5851f42d4c957f2dull;
    D.random_mode = 1;
    g_has_mismatch = 0;
    uint64_t *r = &D.ops;
    uint64_t episode_left = 0;
    uint64_t stats_fires = 0, stats_wakeups = 0, stats_parked = 0, episodes = 0;
    for (D.op_index = 0; D.op_index < ops && !g_has_mismatch; D.op_index++) {
        if (episode_left == 0) {
            if (W_REF.live) {
                tk_loop_stats s;
                w_stats(&W_REF, &s);
                stats_fires += s.fired;
                stats_wakeups += s.wakeups;
                begin_op();
                int ra = w_destroy(&W_REF), rb = w_destroy(&W_IMPL);
                if (ra != rb) mismatch("destroy returned %d, reference %d", rb, ra);
                compare_logs("destroy");
                if (g_has_mismatch) break;
            }
            int64_t start;
            uint64_t s = rng_below(r, 100);
            if (s < 40) start = 0;
            else if (s < 80) start = (int64_t)rng_below(r, 1ull << 50);
            else if (s < 92) start = -(int64_t)rng_below(r, 1ull << 50);
            else if (s < 96) start = INT64_MAX - (int64_t)rng_below(r, 1000000 * U);
            else start = INT64_MIN + (int64_t)rng_below(r, 1000000 * U);
            int rc = w_create(&W_IMPL, start);
            if (rc) {
                mismatch("tk_loop_create_manual failed: %d", rc);
                break;
            }
            w_create(&W_REF, start);
            if (rng_pct(r, 50)) {
                w_set_clock_change(&W_REF, 1);
                w_set_clock_change(&W_IMPL, 1);
            }
            episode_left = 500 + rng_below(r, 8000);
            episodes++;
            history("new manual loop at %" PRId64 "%s", start,
                    W_REF.ref.clock_change_fn ? " with a clock-change handler" : "");
        }
        episode_left--;
        action a = pick_op(r);
        char d[512];
        describe_action(d, sizeof d, &a);
        if (g_trace) fprintf(stderr, "op %" PRIu64 ": %s\n", D.op_index, d);
        begin_op();
        result want, got;
        run_action(&W_REF, &a, &want);
        count_run(&a, &want, 0);
        run_action(&W_IMPL, &a, &got);
        history("op %" PRIu64 ": %s -> %" PRId64 " (%zu callbacks)", D.op_index, d, want.rc,
                W_REF.nlog);
        char where[64];
        snprintf(where, sizeof where, "op %" PRIu64, D.op_index);
        compare_results(&a, &want, &got, where);
        if (a.kind == A_SCHEDULE && want.rc == 0 && got.rc != 0) world_add_record(&W_IMPL, 0);
        compare_logs(where);
        if (D.cursor != D.nscript && !g_has_mismatch)
            mismatch("%s: the loop's callbacks ran %zu of the %zu scripted actions", where,
                     D.cursor, D.nscript);
        compare_state(where);
        if (W_REF.nrec != W_IMPL.nrec)
            mismatch("%s: %u timers made, reference %u", where, W_IMPL.nrec, W_REF.nrec);
        if ((D.op_index & 63) == 0) compare_all_info(r, where);
        for (size_t k = 0; k < W_REF.ref.live_count; k++)
            if (W_REF.ref.timers[W_REF.ref.live[k]].parked) stats_parked++;
    }
    if (g_has_mismatch) {
        fprintf(stderr, "MISMATCH (seed=%" PRIu64 ", op %" PRIu64 "): %s\nrecent operations:\n",
                g_seed, D.op_index - 1, g_mismatch);
        for (uint64_t i = g_nhistory > HISTORY ? g_nhistory - HISTORY : 0; i < g_nhistory; i++)
            fprintf(stderr, "  %s\n", g_history[i % HISTORY]);
        fprintf(stderr, "reproduce: TK_MODEL_OPS=%" PRIu64 " test_loop_model %" PRIu64
                " --only=random (TK_TRACE=1 for a full trace)\n", D.op_index, g_seed);
    }
    begin_op();
    w_destroy(&W_REF);
    w_destroy(&W_IMPL);
    u64set_clear(&W_IMPL.issued);
    printf("random: %" PRIu64 " ops, %" PRIu64 " loops, %" PRIu64 " callbacks, %" PRIu64
           " wakeups, %" PRIu64 " parked-timer observations\n",
           D.op_index, episodes, stats_fires, stats_wakeups, stats_parked);
    for (int nested = 0; nested < 2; nested++) {
        const uint64_t *n = D.runs[nested];
        printf("random: %s runs: %" PRIu64 " stopped, %" PRIu64 " timed out, %" PRIu64
               " passed, %" PRIu64 " errors\n",
               nested ? "nested" : "top-level", n[0], n[1], n[2], n[3]);
    }
    free(D.script);
    free(D.cb_recs);
    return g_has_mismatch ? -1 : 0;
}

/* ------------------------------------------------------------------------
 * Hand-written scenarios: exact expectations, run on both worlds
 * ------------------------------------------------------------------------ */

static world *S; /* the world a scenario runs on */
static int S_failed;

#define EXPECT(cond, ...)                                                           \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "FAIL [%s on %s] %s:%d: ", g_scenario, S->name, __FILE__, \
                    __LINE__);                                                      \
            fprintf(stderr, __VA_ARGS__);                                           \
            fprintf(stderr, "\n");                                                  \
            S_failed = 1;                                                           \
        }                                                                           \
    } while (0)

static const char *g_scenario;

static tk_timer_spec spec_in(tk_clock clock, int64_t in, int64_t interval, int64_t leeway,
                             tk_mode_set modes) {
    tk_timer_spec s = {.clock = clock, .delay_ns = in, .interval_ns = interval,
                       .leeway_ns = leeway, .modes = modes};
    return s;
}

static tk_timer_spec spec_at(tk_clock clock, int64_t at, int64_t interval, int64_t leeway,
                             tk_mode_set modes) {
    tk_timer_spec s = {.clock = clock, .deadline_ns = at, .interval_ns = interval,
                       .leeway_ns = leeway, .modes = modes, .flags = TK_TIMER_ABSOLUTE};
    return s;
}

static uint32_t sched(tk_timer_spec s) {
    uint32_t rec = UINT32_MAX;
    int rc = w_schedule(S, &s, 0, &rec);
    EXPECT(rc == 0, "schedule failed: %d", rc);
    return rec;
}

static tk_loop_stats stats(void) {
    tk_loop_stats s;
    w_stats(S, &s);
    return s;
}

static void scenario_begin(const char *name, int64_t start) {
    g_scenario = name;
    S_failed = 0;
    S->hook = NULL;
    S->hook_data = NULL;
    S->cb_count = 0;
    D.random_mode = 0;
    if (w_create(S, start) != 0) {
        fprintf(stderr, "FAIL [%s on %s]: cannot create a manual loop\n", name, S->name);
        S_failed = 1;
    }
}

static void scenario_end(void) {
    S->hook = NULL;
    int rc = w_destroy(S);
    EXPECT(rc == 0, "destroy returned %d", rc);
    if (S_failed) g_failed++;
    else g_passed++;
}

/* Ten timers within one leeway window share one wake-up. */
static void scenario_coalescing(void) {
    scenario_begin("coalescing", 1000);
    if (S_failed) { scenario_end(); return; }
    for (int i = 0; i < 10; i++) sched(spec_in(TK_CLOCK_MONOTONIC, 100 + i, 0, 20, TK_MODES(0)));
    int64_t n = w_advance(S, 0, 1000);
    EXPECT(n == 10, "advance ran %" PRId64 " callbacks, want 10", n);
    tk_loop_stats st = stats();
    EXPECT(st.wakeups == 1, "wakeups %" PRIu64 ", want 1", st.wakeups);
    EXPECT(st.fired == 10 && st.pending == 0, "fired %" PRIu64 " pending %" PRIu64, st.fired,
           st.pending);
    EXPECT(S->nlog == 10, "%zu callbacks logged", S->nlog);
    for (size_t i = 0; i < S->nlog && i < 10; i++) {
        EXPECT(S->log[i].rec == i, "callback %zu was T%u (deadline order broken)", i,
               S->log[i].rec);
        /* The shared wake-up is the first timer's deadline + leeway. */
        EXPECT(S->log[i].now[0] == 1120, "callback %zu at %" PRId64 ", want 1120", i,
               S->log[i].now[0]);
        EXPECT(S->log[i].missed == 0 && S->log[i].args_ok, "callback %zu args", i);
    }
    EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == 2000, "clock at %" PRId64,
           w_now(S, TK_CLOCK_MONOTONIC));
    /* Spread out beyond the leeway: one wake-up each. */
    for (int i = 0; i < 5; i++) sched(spec_in(TK_CLOCK_BOOTTIME, 100 * (i + 1), 0, 20, 1));
    n = w_advance(S, 0, 1000);
    EXPECT(n == 5, "second batch ran %" PRId64, n);
    EXPECT(stats().wakeups == 6, "wakeups %" PRIu64 ", want 6", stats().wakeups);
    for (size_t i = 10; i < S->nlog; i++)
        EXPECT(S->log[i].now[1] == 2000 + 100 * (int64_t)(i - 9) + 20,
               "callback %zu at boot %" PRId64, i, S->log[i].now[1]);
    scenario_end();
}

/* Leeway delays, never advances, a fire. */
static void scenario_leeway_never_early(void) {
    scenario_begin("leeway-never-early", 0);
    if (S_failed) { scenario_end(); return; }
    uint32_t a = sched(spec_in(TK_CLOCK_MONOTONIC, 1000, 0, 500, 1));
    int64_t n = w_advance(S, 0, 999);
    EXPECT(n == 0 && S->nlog == 0, "fired before its deadline");
    /* Up to its deadline but not to deadline + leeway: the loop has not
     * woken yet, so nothing runs. */
    n = w_advance(S, 0, 1);
    EXPECT(n == 0, "fired at the deadline without a wake-up (%" PRId64 ")", n);
    n = w_advance(S, 0, 10000);
    EXPECT(n == 1 && S->nlog == 1, "ran %" PRId64 " callbacks", n);
    if (S->nlog == 1) {
        /* A pass at the start of the advance finds it due at 1000. */
        EXPECT(S->log[0].rec == a && S->log[0].now[0] == 1000, "fired at %" PRId64,
               S->log[0].now[0]);
    }
    /* Advancing through: fires exactly at deadline + leeway. */
    uint32_t b = sched(spec_in(TK_CLOCK_MONOTONIC, 1000, 0, 500, 1)); /* due 12000 */
    n = w_advance(S, 0, 10000);
    EXPECT(n == 1 && S->nlog == 2 && S->log[1].rec == b && S->log[1].now[0] == 12500,
           "leeway fire at %" PRId64, S->nlog == 2 ? S->log[1].now[0] : -1);
    /* Another timer's earlier wake-up takes it along, still not early. */
    sched(spec_in(TK_CLOCK_MONOTONIC, 1000, 0, 500, 1));  /* due 22000, by 22500 */
    sched(spec_in(TK_CLOCK_MONOTONIC, 1200, 0, 0, 1));    /* due 22200 */
    sched(spec_in(TK_CLOCK_MONOTONIC, 1300, 0, 5000, 1)); /* due 22300, not yet */
    n = w_advance(S, 0, 250);
    EXPECT(n == 0, "fired early");
    n = w_advance(S, 0, 10000);
    EXPECT(n == 3 && S->nlog == 5, "ran %" PRId64, n);
    if (S->nlog == 5) {
        EXPECT(S->log[2].now[0] == 22200 && S->log[3].now[0] == 22200,
               "first two at %" PRId64 " and %" PRId64, S->log[2].now[0], S->log[3].now[0]);
        EXPECT(S->log[4].now[0] == 27300, "the third at %" PRId64, S->log[4].now[0]);
        for (int i = 0; i < 5; i++) {
            /* Never early on any of them. */
            EXPECT(S->log[i].now[0] >= 1000, "early");
        }
    }
    EXPECT(stats().pending == 0, "pending %" PRIu64, stats().pending);
    scenario_end();
}

/* A repeating timer keeps to its grid and reports the fires it missed. */
static void scenario_repeating_missed(void) {
    scenario_begin("repeating-missed", 0);
    if (S_failed) { scenario_end(); return; }
    uint32_t t = sched(spec_in(TK_CLOCK_BOOTTIME, 100, 100, 0, 1));
    int64_t n = w_advance(S, 0, 350);
    EXPECT(n == 3, "ran %" PRId64 ", want 3 (100, 200, 300)", n);
    for (size_t i = 0; i < S->nlog && i < 3; i++)
        EXPECT(S->log[i].now[1] == 100 * (int64_t)(i + 1) && S->log[i].missed == 0,
               "fire %zu at %" PRId64 " missed %" PRIu64, i, S->log[i].now[1],
               S->log[i].missed);
    /* A suspend of 1000 (boot clock only): fires once, 10 missed. */
    EXPECT(w_set_time(S, TK_CLOCK_BOOTTIME, 1350) == 0, "suspend rejected");
    n = w_advance(S, 0, 0);
    EXPECT(n == 1 && S->nlog == 4, "after suspend ran %" PRId64, n);
    if (S->nlog == 4) {
        EXPECT(S->log[3].rec == t && S->log[3].missed == 9 && S->log[3].now[1] == 1350 &&
                   S->log[3].now[0] == 350,
               "after suspend: missed %" PRIu64 " at boot %" PRId64 " mono %" PRId64,
               S->log[3].missed, S->log[3].now[1], S->log[3].now[0]);
    }
    tk_timer_info info;
    EXPECT(w_info(S, S->handles[t], &info) == 0 && info.deadline_ns == 1400,
           "next deadline %" PRId64 ", want 1400 (on the grid)", info.deadline_ns);
    n = w_advance(S, 0, 100);
    EXPECT(n == 1 && S->nlog == 5 && S->log[4].now[1] == 1400 && S->log[4].missed == 0,
           "back on the grid");
    /* Late by exactly whole periods. */
    EXPECT(w_set_time(S, TK_CLOCK_BOOTTIME, 1800) == 0, "suspend rejected");
    n = w_advance(S, 0, 0);
    EXPECT(n == 1 && S->nlog == 6 && S->log[5].missed == 3, "missed %" PRIu64,
           S->nlog == 6 ? S->log[5].missed : 0);
    EXPECT(w_info(S, S->handles[t], &info) == 0 && info.deadline_ns == 1900,
           "deadline %" PRId64, info.deadline_ns);
    EXPECT(stats().pending == 1, "pending %" PRIu64, stats().pending);
    /* The leeway of a repeating timer is clamped to interval / 2. */
    uint32_t u = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 101, 1000, 1));
    EXPECT(w_info(S, S->handles[u], &info) == 0 && info.leeway_ns == 50, "leeway %" PRId64,
           info.leeway_ns);
    scenario_end();
}

/* A default-mode timer parked while the loop runs mode 1. */
static void scenario_parked(void) {
    scenario_begin("parked-mode", 0);
    if (S_failed) { scenario_end(); return; }
    uint32_t d = sched(spec_in(TK_CLOCK_MONOTONIC, 100, 0, 0, TK_MODES(0)));
    uint32_t m = sched(spec_in(TK_CLOCK_MONOTONIC, 150, 0, 0, TK_MODES(1)));
    int64_t n = w_advance(S, 1, 200);
    EXPECT(n == 1 && S->nlog == 1 && S->log[0].rec == m && S->log[0].now[0] == 150,
           "mode 1 ran %" PRId64, n);
    tk_timer_info info;
    EXPECT(w_info(S, S->handles[d], &info) == 0 && info.waiting_for_mode == 1,
           "waiting_for_mode %d", info.waiting_for_mode);
    EXPECT(stats().pending == 1, "pending %" PRIu64, stats().pending);
    n = w_advance(S, 1, 1000);
    EXPECT(n == 0, "parked timer fired in mode 1");
    n = w_advance(S, 2, 1000);
    EXPECT(n == 0, "parked timer fired in mode 2");
    n = w_advance(S, 0, 0);
    EXPECT(n == 1 && S->nlog == 2 && S->log[1].rec == d && S->log[1].now[0] == 2200 &&
               S->log[1].missed == 0,
           "default mode: ran %" PRId64, n);
    EXPECT(stats().pending == 0 && stats().wakeups == 1, "pending %" PRIu64 " wakeups %" PRIu64,
           stats().pending, stats().wakeups);
    /* Due while running another mode, with nothing to wake the loop: not
     * parked, and it does not cause wake-ups. */
    uint32_t e = sched(spec_in(TK_CLOCK_MONOTONIC, 100, 0, 0, TK_MODES(0)));
    n = w_advance(S, 1, 500);
    EXPECT(n == 0 && stats().wakeups == 1, "woke for a timer of another mode");
    EXPECT(w_info(S, S->handles[e], &info) == 0 && info.waiting_for_mode == 0,
           "parked without a pass");
    /* A pass at the start of the next advance (in mode 1) parks it ... */
    n = w_advance(S, 1, 0);
    EXPECT(n == 0 && w_info(S, S->handles[e], &info) == 0 && info.waiting_for_mode == 1,
           "not parked by a pass in mode 1");
    /* ... a repeating one parks too, and cancel works on parked timers. */
    uint32_t rp = sched(spec_in(TK_CLOCK_MONOTONIC, 0, 50, 0, TK_MODES(0)));
    n = w_advance(S, 3, 0);
    EXPECT(n == 0 && w_info(S, S->handles[rp], &info) == 0 && info.waiting_for_mode == 1,
           "repeating timer not parked");
    EXPECT(w_cancel(S, S->handles[rp]) == 0, "cancel of a parked timer failed");
    EXPECT(w_info(S, S->handles[rp], &info) == -ENOENT, "cancelled timer still there");
    /* A timer in both modes fires in either. */
    uint32_t both = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 0, 0, TK_MODES(0) | TK_MODES(1)));
    n = w_advance(S, 1, 10);
    EXPECT(n == 1 && S->nlog == 3 && S->log[2].rec == both, "common-mode timer");
    n = w_advance(S, 0, 0);
    EXPECT(n == 1 && S->nlog == 4 && S->log[3].rec == e, "parked one-shot did not fire");
    scenario_end();
}

/* Cancel and reschedule from inside a timer's own callback. */
static void self_cancel_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    int *results = w->hook_data;
    int i = (int)w->cb_count - 1;
    if (i >= 8) return;
    tk_timer_info info;
    if (rec == 0) { /* one-shot: cancel twice */
        results[0] = w_cancel(w, w->handles[rec]);
        results[1] = w_cancel(w, w->handles[rec]);
        results[2] = w_info(w, w->handles[rec], &info);
    } else if (rec == 1) { /* repeating: cancel on its second fire */
        if (results[3]++ == 1) results[4] = w_cancel(w, w->handles[rec]);
    } else if (rec == 2) { /* one-shot: revive once */
        if (results[5]++ == 0) {
            tk_timer_spec s = spec_in(TK_CLOCK_MONOTONIC, 30, 0, 0, 1);
            results[6] = w_reschedule(w, w->handles[rec], &s);
        }
    } else if (rec == 3) { /* try to advance / destroy from a callback */
        results[7] = (int)w_advance(w, 0, 0);
        int64_t rc = w->is_ref ? ref_destroy_result(&w->ref) : tk_loop_destroy(w->loop);
        if (rc == 0 && !w->is_ref) {
            fprintf(stderr, "FATAL: tk_loop_destroy from a callback returned 0\n");
            printf("0 passed, 1 failed\n");
            _exit(1);
        }
        results[8] = (int)rc;
    }
}

static void scenario_cancel_in_callback(void) {
    scenario_begin("cancel-in-callback", 500);
    if (S_failed) { scenario_end(); return; }
    int results[9] = {99, 99, 99, 0, 99, 0, 99, 99, 99};
    S->hook = self_cancel_hook;
    S->hook_data = results;
    uint32_t t0 = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 0, 0, 1));
    uint32_t t1 = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 10, 0, 1));
    uint32_t t2 = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 0, 0, 1));
    uint32_t t3 = sched(spec_in(TK_CLOCK_MONOTONIC, 15, 0, 0, 1));
    int64_t n = w_advance(S, 0, 100);
    EXPECT(results[0] == 0, "cancel of a one-shot in its callback: %d, want 0", results[0]);
    EXPECT(results[1] == -ENOENT, "second cancel: %d, want -ENOENT", results[1]);
    EXPECT(results[2] == -ENOENT, "info of a fired one-shot in its callback: %d", results[2]);
    EXPECT(results[3] == 2 && results[4] == 0, "repeating: fired %d times, cancel %d",
           results[3], results[4]);
    EXPECT(results[5] == 2 && results[6] == 0, "revived one-shot fired %d times, rc %d",
           results[5], results[6]);
    EXPECT(results[7] == -EBUSY && results[8] == -EBUSY, "advance %d / destroy %d from callback",
           results[7], results[8]);
    /* T0 @510, T1 @510, T2 @510, T3 @515, T1 @520 (cancels), T2 @540. */
    EXPECT(n == 6, "ran %" PRId64 ", want 6", n);
    static const uint32_t order[6] = {0, 1, 2, 3, 1, 2};
    static const int64_t at[6] = {510, 510, 510, 515, 520, 540};
    EXPECT(S->nlog == 6, "%zu callbacks", S->nlog);
    for (size_t i = 0; i < S->nlog && i < 6; i++)
        EXPECT(S->log[i].rec == order[i] && S->log[i].now[0] == at[i],
               "callback %zu: T%u at %" PRId64 ", want T%u at %" PRId64, i, S->log[i].rec,
               S->log[i].now[0], order[i], at[i]);
    EXPECT(w_cancel(S, S->handles[t0]) == -ENOENT, "t0 still cancellable");
    EXPECT(w_cancel(S, S->handles[t1]) == -ENOENT, "t1 still cancellable");
    EXPECT(w_cancel(S, S->handles[t2]) == -ENOENT, "t2 still cancellable");
    EXPECT(w_cancel(S, S->handles[t3]) == -ENOENT, "t3 still cancellable");
    EXPECT(stats().pending == 0 && stats().fired == 6, "pending %" PRIu64 " fired %" PRIu64,
           stats().pending, stats().fired);
    scenario_end();
}

/* Timers a callback schedules wait for the next pass; equal deadlines fire
 * in scheduling order, across clocks. */
static void chain_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    int *left = w->hook_data;
    if (rec == 0 && (*left)-- > 0) {
        uint32_t r2;
        tk_timer_spec s = spec_in(TK_CLOCK_REALTIME, 0, 0, 0, 1);
        w_schedule(w, &s, 0, &r2);
        tk_timer_spec again = spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, 1);
        w_reschedule(w, w->handles[0], &again);
    }
}

static void scenario_ties_and_passes(void) {
    scenario_begin("ties-and-passes", 0);
    if (S_failed) { scenario_end(); return; }
    /* Same deadline on three clocks, scheduled in a scrambled order. */
    static const tk_clock clocks[6] = {2, 0, 1, 1, 2, 0};
    for (int i = 0; i < 6; i++) sched(spec_in(clocks[i], 100, 0, 0, 1));
    int64_t n = w_advance(S, 0, 100);
    EXPECT(n == 6 && S->nlog == 6, "ran %" PRId64, n);
    for (size_t i = 0; i < S->nlog && i < 6; i++)
        EXPECT(S->log[i].rec == i, "tie %zu fired T%u", i, S->log[i].rec);
    /* Earlier deadline first even when scheduled later. */
    sched(spec_in(TK_CLOCK_MONOTONIC, 50, 0, 0, 1));   /* T6 @150 */
    sched(spec_in(TK_CLOCK_BOOTTIME, 40, 0, 0, 1));    /* T7 @140 */
    n = w_advance(S, 0, 60);
    EXPECT(n == 2 && S->nlog == 8 && S->log[6].rec == 7 && S->log[7].rec == 6,
           "deadline order across clocks");
    scenario_end();

    scenario_begin("callback-chain", 0);
    if (S_failed) { scenario_end(); return; }
    int left = 3;
    S->hook = chain_hook;
    S->hook_data = &left;
    sched(spec_in(TK_CLOCK_MONOTONIC, 10, 0, 0, 1));
    n = w_advance(S, 0, 10);
    /* T0 fires at 10 and each time schedules T(k) and itself for "now":
     * both wait for the next pass (a wake-up at the same time each). */
    EXPECT(n == 7, "ran %" PRId64 ", want 7", n);
    EXPECT(stats().wakeups == 4, "wakeups %" PRIu64 ", want 4", stats().wakeups);
    static const uint32_t order[7] = {0, 1, 0, 2, 0, 3, 0};
    for (size_t i = 0; i < S->nlog && i < 7; i++)
        EXPECT(S->log[i].rec == order[i] && S->log[i].now[0] == 10,
               "callback %zu: T%u at %" PRId64, i, S->log[i].rec, S->log[i].now[0]);
    scenario_end();
}

/* Argument checks and stale handles. */
static void scenario_errors(void) {
    scenario_begin("errors", 0);
    if (S_failed) { scenario_end(); return; }
    tk_timer_spec good = spec_in(TK_CLOCK_MONOTONIC, 10, 0, 0, 1), bad = good;
    uint32_t rec;
    bad.clock = (tk_clock)3;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "clock 3");
    bad = good; bad.interval_ns = -1;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "interval -1");
    bad = good; bad.leeway_ns = -1;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "leeway -1");
    bad = good; bad.modes = TK_MODES(TK_MODE_COUNT);
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "TK_MODES(31)");
    bad = good; bad.modes = 1u << 31;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "bit 31");
    bad = good; bad.deadline_ns = 10;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "deadline_ns without TK_TIMER_ABSOLUTE");
    bad = good; bad.flags = TK_TIMER_ABSOLUTE;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "delay_ns with TK_TIMER_ABSOLUTE");
    bad = good; bad.flags = 4;
    EXPECT(w_schedule(S, &bad, 0, &rec) == -EINVAL, "flags 4");
    EXPECT(w_schedule(S, &good, NULL_SPEC, &rec) == -EINVAL, "NULL spec");
    EXPECT(w_schedule(S, &good, NULL_FN, &rec) == -EINVAL, "NULL fn");
    EXPECT(w_schedule(S, &good, NULL_ID, &rec) == -EINVAL, "NULL id");
    EXPECT(stats().pending == 0, "a failed schedule left a timer");
    uint32_t t = sched(good);
    bad = good; bad.modes = TK_MODES_INVALID;
    EXPECT(w_reschedule(S, S->handles[t], &bad) == -EINVAL, "reschedule invalid modes");
    EXPECT(w_reschedule(S, S->handles[t], NULL) == -EINVAL, "reschedule NULL");
    tk_timer_info info;
    EXPECT(w_info(S, S->handles[t], &info) == 0 && info.deadline_ns == 10 && info.modes == 1,
           "failed reschedule changed the timer");
    EXPECT(w_info(S, S->handles[t], NULL) == -EINVAL, "info NULL");
    EXPECT(w_cancel(S, 0) == -ENOENT, "cancel(0)");
    EXPECT(w_advance(S, TK_MODE_COUNT, 0) == -EINVAL, "mode 31");
    EXPECT(w_advance(S, 0, -1) == -EINVAL, "delta -1");
    EXPECT(w_set_time(S, TK_CLOCK_MONOTONIC, -1) == -EINVAL, "monotonic backwards");
    EXPECT(w_set_time(S, TK_CLOCK_BOOTTIME, -1) == -EINVAL, "boot backwards");
    EXPECT(w_set_time(S, (tk_clock)3, 0) == -EINVAL, "clock 3");
    EXPECT(w_set_time(S, TK_CLOCK_REALTIME, -1000) == 0, "wall backwards");
    EXPECT(w_cancel(S, S->handles[t]) == 0, "cancel");
    EXPECT(w_cancel(S, S->handles[t]) == -ENOENT, "cancel again");
    EXPECT(w_reschedule(S, S->handles[t], &good) == -ENOENT, "reschedule stale");
    EXPECT(w_fire(S, S->handles[t]) == -ENOENT, "fire stale");
    EXPECT(w_info(S, S->handles[t], &info) == -ENOENT, "info stale");
    /* The slot is reused; the old handle must still be stale. */
    uint32_t t2 = sched(good);
    EXPECT(S->handles[t2] != S->handles[t], "handle reused");
    EXPECT(w_cancel(S, S->handles[t]) == -ENOENT, "stale handle names the new timer");
    EXPECT(w_info(S, S->handles[t2], &info) == 0, "new timer missing");
    /* Fire: a one-shot is gone, a repeating one keeps its deadline. */
    EXPECT(w_fire(S, S->handles[t2]) == 0 && S->nlog == 1 && S->log[0].missed == 0, "fire");
    EXPECT(w_info(S, S->handles[t2], &info) == -ENOENT, "fired one-shot still there");
    uint32_t t3 = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 7, 0, 1));
    EXPECT(w_fire(S, S->handles[t3]) == 0 && S->nlog == 2, "fire repeating");
    EXPECT(w_info(S, S->handles[t3], &info) == 0 && info.deadline_ns == 10,
           "fire moved the deadline to %" PRId64, info.deadline_ns);
    /* The clock step is reported on the next advance, once. */
    EXPECT(w_set_clock_change(S, 1) == 0, "set handler");
    EXPECT(w_set_time(S, TK_CLOCK_REALTIME, 5000) == 0, "wall step");
    EXPECT(w_set_time(S, TK_CLOCK_REALTIME, 6000) == 0, "wall step");
    EXPECT(w_advance(S, 0, 0) == 0, "advance");
    EXPECT(S->nlog == 3 && S->log[2].kind == LOG_CLOCK_CHANGE && S->log[2].args_ok,
           "clock change not reported");
    EXPECT(stats().clock_changes == 1, "clock_changes %" PRIu64, stats().clock_changes);
    EXPECT(w_set_time(S, TK_CLOCK_REALTIME, 6000) == 0, "same wall time");
    EXPECT(w_advance(S, 0, 0) == 0 && stats().clock_changes == 1, "no step, yet reported");
    scenario_end();
}

/* Advancing and destroying from the callback of a top-level fire: the loop
 * is running one of its callbacks, so both must be refused with -EBUSY. */
static void busy_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)rec;
    (void)missed;
    int *results = w->hook_data;
    results[0] = (int)w_advance(w, 0, 10);
    int rc = w->is_ref ? ref_destroy_result(&w->ref) : tk_loop_destroy(w->loop);
    results[1] = rc;
    if (rc == 0 && !w->is_ref) {
        /* The loop is gone while its tk_loop_fire is still on the stack. */
        fprintf(stderr, "FAIL [busy-in-fire on loop]: tk_loop_destroy from the callback of "
                "tk_loop_fire returned 0 (expected -EBUSY); advance returned %d\n", results[0]);
        _exit(3);
    }
}

static void scenario_busy_in_fire(void) {
    scenario_begin("busy-in-fire", 0);
    if (S_failed) { scenario_end(); return; }
    int results[2] = {99, 99};
    S->hook = busy_hook;
    S->hook_data = results;
    uint32_t t = sched(spec_in(TK_CLOCK_MONOTONIC, 100, 0, 0, 1));
    uint32_t u = sched(spec_in(TK_CLOCK_MONOTONIC, 100, 50, 0, 1));
    EXPECT(w_fire(S, S->handles[t]) == 0, "fire one-shot");
    EXPECT(results[0] == -EBUSY, "advance from a fire callback returned %d, want -EBUSY",
           results[0]);
    EXPECT(results[1] == -EBUSY, "destroy from a fire callback returned %d", results[1]);
    EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == 0, "time moved to %" PRId64,
           w_now(S, TK_CLOCK_MONOTONIC));
    results[0] = results[1] = 99;
    EXPECT(w_fire(S, S->handles[u]) == 0, "fire repeating");
    EXPECT(results[0] == -EBUSY && results[1] == -EBUSY, "repeating: advance %d destroy %d",
           results[0], results[1]);
    scenario_end();
}

/* A deadline of INT64_MAX never comes, even when a clock reads INT64_MAX. */
static void scenario_never_comes(void) {
    scenario_begin("never-comes", INT64_MAX - 1000);
    if (S_failed) { scenario_end(); return; }
    sched(spec_in(TK_CLOCK_REALTIME, 5000, 0, 0, 1));                 /* saturates */
    tk_timer_spec at_max = spec_at(TK_CLOCK_MONOTONIC, INT64_MAX, 0, 0, 1);
    sched(at_max);
    sched(spec_in(TK_CLOCK_BOOTTIME, INT64_MAX, 7, 0, 1));            /* repeating */
    EXPECT(w_set_time(S, TK_CLOCK_REALTIME, INT64_MAX) == 0, "wall to INT64_MAX");
    int64_t n = w_advance(S, 0, 0);
    EXPECT(n == 0, "%" PRId64 " timers fired with the wall clock at INT64_MAX", n);
    n = w_advance(S, 0, INT64_MAX); /* every clock saturates */
    EXPECT(n == 0, "%" PRId64 " fired while saturating", n);
    EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == INT64_MAX, "monotonic %" PRId64,
           w_now(S, TK_CLOCK_MONOTONIC));
    n = w_advance(S, 0, 0);
    EXPECT(n == 0 && S->nlog == 0, "%" PRId64 " timers with deadline INT64_MAX fired", n);
    EXPECT(stats().pending == 3, "pending %" PRIu64, stats().pending);
    scenario_end();
}

/* The monotonic clock at the end of its range does not hold the other
 * clocks back: an advance moves the wall and boot clocks by all of its
 * span, and their timers fire on the way (they stopped where the monotonic
 * clock stopped, and never moved again). */
static void scenario_monotonic_at_end(void) {
    scenario_begin("monotonic-at-end", 0);
    if (S_failed) { scenario_end(); return; }
    EXPECT(w_set_time(S, TK_CLOCK_REALTIME, -1000) == 0, "wall to -1000");
    EXPECT(w_set_time(S, TK_CLOCK_MONOTONIC, INT64_MAX - 5) == 0, "monotonic to the end");
    EXPECT(w_set_time(S, TK_CLOCK_BOOTTIME, INT64_MAX - 100) == 0, "boot near the end");
    uint32_t a = sched(spec_at(TK_CLOCK_REALTIME, -995, 0, 0, 1));
    uint32_t b = sched(spec_at(TK_CLOCK_REALTIME, -500, 0, 0, 1));
    uint32_t c = sched(spec_at(TK_CLOCK_BOOTTIME, INT64_MAX - 50, 0, 0, 1));
    int64_t n = w_advance(S, 0, 10);
    EXPECT(n == 1 && S->nlog == 1, "first advance ran %" PRId64, n);
    if (S->nlog >= 1) {
        EXPECT(S->log[0].rec == a && S->log[0].now[TK_CLOCK_REALTIME] == -995 &&
                   S->log[0].now[TK_CLOCK_BOOTTIME] == INT64_MAX - 95,
               "first fire: timer %u at wall %" PRId64 ", boot %" PRId64, S->log[0].rec,
               S->log[0].now[TK_CLOCK_REALTIME], S->log[0].now[TK_CLOCK_BOOTTIME]);
    }
    EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == INT64_MAX, "monotonic %" PRId64,
           w_now(S, TK_CLOCK_MONOTONIC));
    EXPECT(w_now(S, TK_CLOCK_REALTIME) == -990, "wall %" PRId64 ", want -990",
           w_now(S, TK_CLOCK_REALTIME));
    EXPECT(w_now(S, TK_CLOCK_BOOTTIME) == INT64_MAX - 90, "boot %" PRId64 ", want INT64_MAX - 90",
           w_now(S, TK_CLOCK_BOOTTIME));
    n = w_advance(S, 0, 1000);
    EXPECT(n == 2 && S->nlog == 3, "second advance ran %" PRId64, n);
    if (S->nlog == 3) {
        EXPECT(S->log[1].rec == c && S->log[1].now[TK_CLOCK_BOOTTIME] == INT64_MAX - 50 &&
                   S->log[1].now[TK_CLOCK_REALTIME] == -950,
               "second fire: timer %u at boot %" PRId64 ", wall %" PRId64, S->log[1].rec,
               S->log[1].now[TK_CLOCK_BOOTTIME], S->log[1].now[TK_CLOCK_REALTIME]);
        EXPECT(S->log[2].rec == b && S->log[2].now[TK_CLOCK_REALTIME] == -500,
               "third fire: timer %u at wall %" PRId64, S->log[2].rec,
               S->log[2].now[TK_CLOCK_REALTIME]);
    }
    EXPECT(w_now(S, TK_CLOCK_REALTIME) == 10, "wall %" PRId64 ", want 10",
           w_now(S, TK_CLOCK_REALTIME));
    EXPECT(w_now(S, TK_CLOCK_BOOTTIME) == INT64_MAX, "boot %" PRId64,
           w_now(S, TK_CLOCK_BOOTTIME));
    EXPECT(stats().pending == 0, "pending %" PRIu64, stats().pending);
    scenario_end();
}

/* A repeating timer whose absolute deadline lies more than 2^63 ns in the
 * past: `missed` is exact and the next deadline is the next grid point. */
static void scenario_far_past_repeating(void) {
    scenario_begin("far-past-repeating", 0);
    if (S_failed) { scenario_end(); return; }
    tk_timer_spec s = spec_at(TK_CLOCK_MONOTONIC, INT64_MIN, 1, 0, 1);
    uint32_t a = sched(s);
    s.interval_ns = 3;
    uint32_t b = sched(s);
    int64_t n = w_advance(S, 0, 0);
    EXPECT(n == 2 && S->nlog == 2, "ran %" PRId64, n);
    if (S->nlog == 2) {
        /* Both are 2^63 late (the same lateness: scheduling order). */
        EXPECT(S->log[0].rec == a && S->log[0].missed == (uint64_t)1 << 63,
               "interval 1: missed %" PRIu64 ", want 2^63", S->log[0].missed);
        EXPECT(S->log[1].rec == b && S->log[1].missed == 3074457345618258602ull,
               "interval 3: missed %" PRIu64 ", want 3074457345618258602", S->log[1].missed);
    }
    tk_timer_info info;
    EXPECT(w_info(S, S->handles[a], &info) == 0 && info.deadline_ns == 1,
           "interval 1: next deadline %" PRId64 ", want 1", info.deadline_ns);
    EXPECT(w_info(S, S->handles[b], &info) == 0 && info.deadline_ns == 1,
           "interval 3: next deadline %" PRId64 ", want 1", info.deadline_ns);
    scenario_end();
}

/* A repeating timer's `missed` and next deadline at the ends of the int64
 * range, against ref_next_on_grid (128-bit long division, wide_int.h):
 * deadlines near INT64_MIN, clocks near INT64_MAX, intervals from 1 to
 * INT64_MAX, lateness of exact multiples of the interval and one off, and
 * next deadlines that saturate to INT64_MAX (never). Each case is a fresh
 * loop whose clocks start at `now`, with one absolute repeating timer. */
static void scenario_grid_extremes(void) {
    static const int64_t deadlines[] = {
        INT64_MIN, INT64_MIN + 1, INT64_MIN + 2, -3, -1, 0, 1, INT64_MAX / 2, INT64_MAX - 3,
        INT64_MAX - 1,
    };
    static const int64_t intervals[] = {
        1, 2, 3, 7, 1000000007, INT64_MAX / 3, (int64_t)1 << 62, INT64_MAX / 2 + 1,
        INT64_MAX - 1, INT64_MAX,
    };
    static const int64_t multiples[] = {1, 2, 3, 5};
    scenario_begin("grid-extremes", 0);
    int cases = 0;
    for (size_t di = 0; di < sizeof deadlines / sizeof deadlines[0] && !S_failed; di++) {
        for (size_t ii = 0; ii < sizeof intervals / sizeof intervals[0] && !S_failed; ii++) {
            int64_t deadline = deadlines[di], interval = intervals[ii];
            /* Clocks at the top of the range, on the deadline, just past
             * it, and on or next to the k-th grid point when that fits. */
            int64_t nows[4 + 3 * 4];
            size_t count = 0;
            nows[count++] = INT64_MAX;
            nows[count++] = INT64_MAX - 1;
            nows[count++] = deadline;
            nows[count++] = deadline + 1;
            for (size_t k = 0; k < sizeof multiples / sizeof multiples[0]; k++) {
                wide point = wide_add(wide_from_i64(deadline),
                                      wide_mul_u64(wide_from_u64((uint64_t)multiples[k]),
                                                   (uint64_t)interval));
                for (int off = -1; off <= 1; off++) {
                    wide now = wide_add(point, wide_from_i64(off));
                    int64_t clamped = wide_clamp(now);
                    if (wide_cmp(now, wide_from_i64(clamped)) == 0) nows[count++] = clamped;
                }
            }
            for (size_t ni = 0; ni < count && !S_failed; ni++) {
                int64_t now = nows[ni];
                if (now < deadline) continue;
                uint64_t want_missed;
                int64_t want_next = ref_next_on_grid(deadline, interval, now, &want_missed);
                tk_clock clock = (tk_clock)(cases++ % TK_CLOCK_COUNT);
                EXPECT(w_destroy(S) == 0 && w_create(S, now) == 0, "cannot make a loop at %" PRId64,
                       now);
                tk_timer_spec spec = spec_at(clock, deadline, interval, 0, 1);
                uint32_t t = sched(spec);
                int64_t n = w_advance(S, 0, 0);
                tk_timer_info info;
                memset(&info, 0, sizeof info);
                int rc = S_failed ? -1 : w_info(S, S->handles[t], &info);
                EXPECT(n == 1 && S->nlog == 1 && S->log[0].missed == want_missed &&
                           S->log[0].now[clock] == now && rc == 0 &&
                           info.deadline_ns == want_next,
                       "deadline %" PRId64 ", interval %" PRId64 ", now %" PRId64 " (clock %d): "
                       "%" PRId64 " fired, missed %" PRIu64 ", next %" PRId64 " (info %d); "
                       "want missed %" PRIu64 ", next %" PRId64,
                       deadline, interval, now, (int)clock, n,
                       S->nlog ? S->log[0].missed : 0, info.deadline_ns, rc, want_missed,
                       want_next);
            }
        }
    }
    EXPECT(cases > 500, "only %d cases", cases);
    scenario_end();
}

/* ------------------------------------------------------------------------
 * Runs with a deadline on a manual loop: time moves as in an advance
 * ------------------------------------------------------------------------ */

#define MSEC INT64_C(1000000) /* one millisecond */

/* A callback of timer 0 runs mode 1 ("tracking") nested for 1 s. */
typedef struct nested_run { int result; int64_t until; int64_t after; } nested_run;

static void nested_run_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    nested_run *n = w->hook_data;
    if (rec != 0) return;
    n->until = w_now(w, TK_CLOCK_MONOTONIC) + 1000 * MSEC;
    n->result = w_run(w, 1, n->until, 0);
    n->after = w_now(w, TK_CLOCK_MONOTONIC);
}

/* A default-mode timer and a common-modes one; a callback runs a nested
 * tracking-mode run for 1 s of manual time: the common timer fires during
 * it, the default one comes due, waits, and fires once after, when the
 * outer run goes on from where the nested one left the clocks. */
static void scenario_run_nested_modes(void) {
    scenario_begin("run-nested-modes", 0);
    if (S_failed) { scenario_end(); return; }
    nested_run n = {99, 0, 0};
    S->hook = nested_run_hook;
    S->hook_data = &n;
    uint32_t t = sched(spec_in(TK_CLOCK_MONOTONIC, 100 * MSEC, 0, 0, TK_MODES(0)));
    uint32_t c = sched(spec_in(TK_CLOCK_MONOTONIC, 200 * MSEC, 300 * MSEC, 0,
                               TK_MODES(0) | TK_MODES(1)));
    uint32_t d = sched(spec_in(TK_CLOCK_BOOTTIME, 400 * MSEC, 0, 0, TK_MODES(0)));
    int rc = w_run(S, 0, 2000 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT, "outer run returned %d", rc);
    EXPECT(n.result == TK_RUN_TIMED_OUT && n.until == 1100 * MSEC && n.after == 1100 * MSEC,
           "nested run returned %d at %" PRId64 " (until %" PRId64 ")", n.result, n.after,
           n.until);
    /* T at 100 runs the nested run; C fires in it at 200, 500, 800 and 1100
     * (D, due at 400, is parked at 500); back outside, D fires at 1100,
     * then C at 1400, 1700 and 2000. */
    static const int64_t at[] = {100, 200, 500, 800, 1100, 1100, 1400, 1700, 2000};
    uint32_t order[] = {t, c, c, c, c, d, c, c, c};
    EXPECT(S->nlog == 9, "%zu callbacks, want 9", S->nlog);
    for (size_t i = 0; i < S->nlog && i < 9; i++) {
        EXPECT(S->log[i].rec == order[i] && S->log[i].missed == 0 && S->log[i].args_ok,
               "callback %zu: T%u missed %" PRIu64 ", want T%u", i, S->log[i].rec,
               S->log[i].missed, order[i]);
        for (int k = 0; k < TK_CLOCK_COUNT; k++)
            EXPECT(S->log[i].now[k] == at[i] * MSEC, "callback %zu: clock %d at %" PRId64
                   ", want %" PRId64, i, k, S->log[i].now[k], at[i] * MSEC);
    }
    for (int k = 0; k < TK_CLOCK_COUNT; k++)
        EXPECT(w_now(S, (tk_clock)k) == 2000 * MSEC, "clock %d at %" PRId64, k,
               w_now(S, (tk_clock)k));
    tk_loop_stats st = stats();
    EXPECT(st.fired == 9 && st.pending == 1 && st.wakeups == 9,
           "fired %" PRIu64 " pending %" PRIu64 " wakeups %" PRIu64, st.fired, st.pending,
           st.wakeups);
    scenario_end();
}

/* What a callback does to the timers due behind it in the same pass. */
typedef struct behind { int what; int64_t nested_until; int nested_result; } behind;
enum { BEHIND_NESTED_RUN, BEHIND_OVERDUE, BEHIND_RESCHEDULE, BEHIND_KINDS };

static void behind_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    behind *b = w->hook_data;
    if (rec != 0) return;
    if (b->what == BEHIND_NESTED_RUN) {
        /* A nested run in a mode none of the timers has: it meets T1 and T2
         * due, and parks them. */
        b->nested_until = w_now(w, TK_CLOCK_MONOTONIC) + 100 * MSEC;
        b->nested_result = w_run(w, 5, b->nested_until, 0);
    } else if (b->what == BEHIND_OVERDUE) {
        /* T3, due long ago: the earliest timer on the clock. */
        uint32_t r;
        tk_timer_spec past = spec_at(TK_CLOCK_MONOTONIC, 1, 0, 0, TK_MODES(0));
        w_schedule(w, &past, 0, &r);
    } else {
        /* T2, due, given an earlier deadline still: the earliest on the
         * clock, and new in this pass. */
        tk_timer_spec earlier = spec_at(TK_CLOCK_MONOTONIC, 2, 0, 0, TK_MODES(0));
        w_reschedule(w, w->handles[2], &earlier);
    }
}

/* A pass fires every timer of its mode that was due when it began, in
 * deadline order, whatever a callback before them does: a nested run in
 * another mode parks them (they are the pass's again when it returns), and
 * a timer the callback schedules or reschedules overdue, which sorts first
 * on its clock, waits for a later pass without holding up those behind it.
 * Three timers due together, T0's callback disturbing T1 and T2; by
 * tk_loop_advance, a run with a deadline, and a TK_RUN_NOWAIT run's one pass
 * (which does not move time: the timers are due at once). */
static void scenario_due_behind(void) {
    static const char *names[BEHIND_KINDS] = {"due-behind-nested-run", "due-behind-overdue",
                                              "due-behind-reschedule"};
    /* The callbacks, in order, for each disturbance and way; -1 ends. */
    static const int want[BEHIND_KINDS][3][5] = {
        {{0, 1, 2, -1}, {0, 1, 2, -1}, {0, 1, 2, -1}},
        {{0, 1, 2, 3, -1}, {0, 1, 2, 3, -1}, {0, 1, 2, -1}},
        {{0, 1, 2, -1}, {0, 1, 2, -1}, {0, 1, -1}},
    };
    for (int what = 0; what < BEHIND_KINDS; what++) {
        for (int way = 0; way < 3; way++) {
            scenario_begin(names[what], 0);
            if (S_failed) { scenario_end(); return; }
            behind b = {what, 0, 99};
            S->hook = behind_hook;
            S->hook_data = &b;
            int64_t due = way == 2 ? 0 : 10 * MSEC;
            for (int i = 0; i < 3; i++) sched(spec_in(TK_CLOCK_MONOTONIC, due, 0, 0, TK_MODES(0)));
            int64_t result;
            if (way == 0) result = w_advance(S, 0, 10 * MSEC);
            else if (way == 1) result = w_run(S, 0, 10 * MSEC, 0);
            else result = w_run(S, 0, TK_FOREVER, TK_RUN_NOWAIT);
            size_t count = 0;
            while (want[what][way][count] >= 0) count++;
            EXPECT(S->nlog == count, "way %d: %zu callbacks, want %zu", way, S->nlog, count);
            for (size_t i = 0; i < S->nlog && i < count; i++)
                EXPECT(S->log[i].rec == (uint32_t)want[what][way][i],
                       "way %d: callback %zu is T%u, want T%d", way, i, S->log[i].rec,
                       want[what][way][i]);
            /* After a nested run, T1 and T2 see the clocks where it left them
             * (tk_loop_advance allows no nested run: -EBUSY, nothing moves). */
            int nested = what == BEHIND_NESTED_RUN && way != 0;
            int64_t behind_at = nested ? due + 100 * MSEC : due;
            for (size_t i = 1; i < S->nlog && i < 3; i++)
                EXPECT(S->log[i].now[TK_CLOCK_MONOTONIC] == behind_at,
                       "way %d: callback %zu at %" PRId64 ", want %" PRId64, way, i,
                       S->log[i].now[TK_CLOCK_MONOTONIC], behind_at);
            if (what == BEHIND_NESTED_RUN)
                EXPECT(b.nested_result == (nested ? TK_RUN_TIMED_OUT : -EBUSY),
                       "way %d: nested run returned %d", way, b.nested_result);
            int64_t want_result = way == 0   ? (int64_t)count
                                  : way == 1 ? TK_RUN_TIMED_OUT
                                             : TK_RUN_PASSED;
            EXPECT(result == want_result, "way %d returned %" PRId64 ", want %" PRId64, way, result,
                   want_result);
            EXPECT(stats().pending == 0 || (way == 2 && what != BEHIND_NESTED_RUN &&
                                           stats().pending == 1),
                   "way %d: %" PRIu64 " still pending", way, stats().pending);
            scenario_end();
        }
    }
}

static void held_in_tie_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    if (rec != 0) return;
    /* T3, overdue, sorts first on the boot clock: new in this pass. */
    uint32_t r;
    tk_timer_spec past = spec_at(TK_CLOCK_BOOTTIME, INT64_MIN + 6, 0, 0, TK_MODES(0));
    w_schedule(w, &past, 0, &r);
}

/* A timer new in the pass must not take part in choosing the next timer
 * either. Four timers so far overdue that their lateness saturates, so that
 * ties go by seq: T0 and T1 on the boot clock, T2 on the monotonic clock;
 * T0's callback schedules T3 on the boot clock, earlier than T1. T1 comes
 * before T2 (it was scheduled first), then T3 in a later pass; T3, on top of
 * the boot clock, had hidden T1 from the comparison, and T2 fired first. */
static void scenario_held_in_tie(void) {
    scenario_begin("held-in-tie", INT64_C(1) << 62);
    if (S_failed) { scenario_end(); return; }
    S->hook = held_in_tie_hook;
    sched(spec_at(TK_CLOCK_BOOTTIME, INT64_MIN + 5, 0, 0, TK_MODES(0)));
    sched(spec_at(TK_CLOCK_BOOTTIME, -(INT64_C(1) << 62) - 1, 0, 0, TK_MODES(0)));
    sched(spec_at(TK_CLOCK_MONOTONIC, INT64_MIN + 10, 0, 0, TK_MODES(0)));
    int64_t result = w_advance(S, 0, 0);
    static const uint32_t want[] = {0, 1, 2, 3};
    EXPECT(result == 4, "advance returned %" PRId64 ", want 4", result);
    for (size_t i = 0; i < S->nlog && i < 4; i++)
        EXPECT(S->log[i].rec == want[i], "callback %zu is T%u, want T%u", i, S->log[i].rec, want[i]);
    scenario_end();
}

/* A repeating timer due behind a callback whose nested run in another mode
 * moved the clocks 100 ms on: it fires once, in the same pass, on its grid
 * at the time the nested run left (missed 10), as on a real loop. */
static void scenario_repeating_behind_nested_run(void) {
    for (int way = 0; way < 2; way++) { /* a run with a deadline, NOWAIT */
        scenario_begin("repeating-behind-nested-run", 0);
        if (S_failed) { scenario_end(); return; }
        behind b = {BEHIND_NESTED_RUN, 0, 99};
        S->hook = behind_hook;
        S->hook_data = &b;
        int64_t due = way == 0 ? 10 * MSEC : 0;
        uint32_t t0 = sched(spec_in(TK_CLOCK_MONOTONIC, due, 0, 0, TK_MODES(0)));
        uint32_t t1 = sched(spec_in(TK_CLOCK_MONOTONIC, due, 10 * MSEC, 0, TK_MODES(0)));
        int rc = way == 0 ? w_run(S, 0, 10 * MSEC, 0) : w_run(S, 0, TK_FOREVER, TK_RUN_NOWAIT);
        EXPECT(rc == (way == 0 ? TK_RUN_TIMED_OUT : TK_RUN_PASSED), "way %d returned %d", way, rc);
        EXPECT(b.nested_result == TK_RUN_TIMED_OUT, "way %d: nested run returned %d", way,
               b.nested_result);
        EXPECT(S->nlog == 2, "way %d: %zu callbacks, want 2", way, S->nlog);
        if (S->nlog >= 2) {
            EXPECT(S->log[0].rec == t0 && S->log[1].rec == t1, "way %d: T%u, T%u", way,
                   S->log[0].rec, S->log[1].rec);
            EXPECT(S->log[1].missed == 10 && S->log[1].now[TK_CLOCK_MONOTONIC] == due + 100 * MSEC,
                   "way %d: T1 missed %" PRIu64 " at %" PRId64, way, S->log[1].missed,
                   S->log[1].now[TK_CLOCK_MONOTONIC]);
        }
        tk_timer_info info;
        EXPECT(w_info(S, S->handles[t1], &info) == 0 && info.deadline_ns == due + 110 * MSEC,
               "way %d: T1's next deadline %" PRId64, way, info.deadline_ns);
        scenario_end();
    }
}

/* With nothing scheduled, a run with a deadline moves the clocks to it (one
 * wake-up, for its last pass) and times out; a deadline already past leaves
 * them; TK_RUN_NOWAIT and TK_FOREVER do not move time. */
static void scenario_run_until_idle(void) {
    scenario_begin("run-until-idle", 5000 * MSEC);
    if (S_failed) { scenario_end(); return; }
    int rc = w_run(S, 0, 8000 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT, "run returned %d", rc);
    for (int k = 0; k < TK_CLOCK_COUNT; k++)
        EXPECT(w_now(S, (tk_clock)k) == 8000 * MSEC, "clock %d at %" PRId64, k,
               w_now(S, (tk_clock)k));
    EXPECT(stats().wakeups == 1, "wakeups %" PRIu64, stats().wakeups);
    rc = w_run(S, 3, 7000 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT && w_now(S, TK_CLOCK_MONOTONIC) == 8000 * MSEC,
           "past deadline: %d, clock %" PRId64, rc, w_now(S, TK_CLOCK_MONOTONIC));
    rc = w_run(S, 0, 8000 * MSEC, TK_RUN_ONCE);
    EXPECT(rc == TK_RUN_TIMED_OUT, "ONCE at the deadline returned %d", rc);
    uint32_t a = sched(spec_in(TK_CLOCK_MONOTONIC, 10 * MSEC, 0, 0, TK_MODES(0)));
    rc = w_run(S, 0, 9000 * MSEC, TK_RUN_NOWAIT);
    EXPECT(rc == TK_RUN_PASSED && S->nlog == 0 && w_now(S, TK_CLOCK_MONOTONIC) == 8000 * MSEC,
           "NOWAIT: %d, %zu callbacks, clock %" PRId64, rc, S->nlog,
           w_now(S, TK_CLOCK_MONOTONIC));
    rc = w_run(S, 0, TK_FOREVER, TK_RUN_NOWAIT);
    EXPECT(rc == TK_RUN_PASSED && S->nlog == 0 && w_now(S, TK_CLOCK_MONOTONIC) == 8000 * MSEC,
           "FOREVER, NOWAIT: %d, %zu callbacks", rc, S->nlog);
    /* ONCE moves to the next wake-up, fires, and returns there. */
    rc = w_run(S, 0, 9000 * MSEC, TK_RUN_ONCE);
    EXPECT(rc == TK_RUN_PASSED && S->nlog == 1 && S->log[0].rec == a &&
               w_now(S, TK_CLOCK_MONOTONIC) == 8010 * MSEC,
           "ONCE: %d, %zu callbacks, clock %" PRId64, rc, S->nlog,
           w_now(S, TK_CLOCK_MONOTONIC));
    scenario_end();
}

/* A run with a deadline ends with a pass at it, as a real run that wakes
 * for its deadline does: a timer due by then fires there though its leeway
 * reaches further, and a due timer of another mode is parked. An advance
 * over the same span wakes only for targets (deadline + leeway), so both
 * still wait. The pass counts one wake-up; a run whose deadline the clock
 * has reached already makes no other. */
static void scenario_run_deadline_pass(void) {
    for (int by_run = 0; by_run < 2; by_run++) {
        scenario_begin(by_run ? "deadline-pass run" : "deadline-pass advance", 0);
        if (S_failed) { scenario_end(); return; }
        uint32_t slack = sched(spec_in(TK_CLOCK_MONOTONIC, 10 * MSEC, 0, 100 * MSEC, TK_MODES(0)));
        uint32_t other = sched(spec_in(TK_CLOCK_MONOTONIC, 10 * MSEC, 0, 0, TK_MODES(3)));
        if (by_run) {
            int rc = w_run(S, 0, 30 * MSEC, 0);
            EXPECT(rc == TK_RUN_TIMED_OUT, "run returned %d", rc);
        } else {
            EXPECT(w_advance(S, 0, 30 * MSEC) == 0, "the advance fired something");
        }
        EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == 30 * MSEC, "clock at %" PRId64,
               w_now(S, TK_CLOCK_MONOTONIC));
        EXPECT(S->nlog == (size_t)by_run, "%zu callbacks", S->nlog);
        if (by_run && S->nlog == 1) {
            EXPECT(S->log[0].rec == slack && S->log[0].now[TK_CLOCK_MONOTONIC] == 30 * MSEC,
                   "T%u at %" PRId64, S->log[0].rec, S->log[0].now[TK_CLOCK_MONOTONIC]);
        }
        tk_timer_info info;
        EXPECT(w_info(S, S->handles[other], &info) == 0 && info.waiting_for_mode == by_run,
               "waiting_for_mode %d", info.waiting_for_mode);
        EXPECT(stats().wakeups == (uint64_t)by_run, "wakeups %" PRIu64, stats().wakeups);
        if (by_run) {
            /* At its deadline already: no move, no other pass. */
            int rc = w_run(S, 3, 30 * MSEC, 0);
            EXPECT(rc == TK_RUN_TIMED_OUT && S->nlog == 2 && stats().wakeups == 1,
                   "at the deadline: %d, %zu callbacks, %" PRIu64 " wakeups", rc, S->nlog,
                   stats().wakeups);
        }
        scenario_end();
    }
}

/* Timer 0's callback runs mode 1 nested up to 100 ms, the outer run's
 * deadline. */
static void nested_to_deadline_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    if (rec == 0) *(int *)w->hook_data = w_run(w, 1, 100 * MSEC, 0);
}

/* A callback's nested run takes the clock to the outer run's deadline: the
 * outer run still ends with a pass there, which fires a timer that came due
 * meanwhile (its leeway reaching past the deadline), as a real run does. */
static void scenario_run_deadline_pass_nested(void) {
    scenario_begin("deadline-pass nested", 0);
    if (S_failed) { scenario_end(); return; }
    int nested = 99;
    S->hook = nested_to_deadline_hook;
    S->hook_data = &nested;
    uint32_t first = sched(spec_in(TK_CLOCK_MONOTONIC, 10 * MSEC, 0, 0, TK_MODES(0)));
    uint32_t late = sched(spec_in(TK_CLOCK_MONOTONIC, 50 * MSEC, 0, 100 * MSEC, TK_MODES(0)));
    int rc = w_run(S, 0, 100 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT && nested == TK_RUN_TIMED_OUT, "runs returned %d, nested %d",
           rc, nested);
    EXPECT(S->nlog == 2, "%zu callbacks, want 2", S->nlog);
    if (S->nlog == 2) {
        EXPECT(S->log[0].rec == first && S->log[1].rec == late &&
                   S->log[1].now[TK_CLOCK_MONOTONIC] == 100 * MSEC,
               "T%u, then T%u at %" PRId64, S->log[0].rec, S->log[1].rec,
               S->log[1].now[TK_CLOCK_MONOTONIC]);
    }
    scenario_end();
}

/* A callback stops the run: it returns with the clocks where that callback
 * saw them, and what comes later waits for the next run. */
static void stop_on_third_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    int *fires = w->hook_data;
    if (rec == 0 && ++*fires == 3) w_stop(w);
}

static void scenario_run_stop(void) {
    scenario_begin("run-stop", 0);
    if (S_failed) { scenario_end(); return; }
    /* A stop asked for while no run is going: the next run returns at once. */
    EXPECT(w_stop(S) == 0, "stop");
    int rc = w_run(S, 0, 1000 * MSEC, 0);
    EXPECT(rc == TK_RUN_STOPPED && w_now(S, TK_CLOCK_MONOTONIC) == 0,
           "pending stop: %d, clock %" PRId64, rc, w_now(S, TK_CLOCK_MONOTONIC));
    int fires = 0;
    S->hook = stop_on_third_hook;
    S->hook_data = &fires;
    uint32_t r = sched(spec_in(TK_CLOCK_MONOTONIC, 100 * MSEC, 100 * MSEC, 0, TK_MODES(0)));
    uint32_t later = sched(spec_in(TK_CLOCK_MONOTONIC, 350 * MSEC, 0, 0, TK_MODES(0)));
    rc = w_run(S, 0, 10000 * MSEC, 0);
    EXPECT(rc == TK_RUN_STOPPED, "run returned %d", rc);
    EXPECT(fires == 3 && S->nlog == 3 && w_now(S, TK_CLOCK_MONOTONIC) == 300 * MSEC,
           "stopped after %d fires, at %" PRId64, fires, w_now(S, TK_CLOCK_MONOTONIC));
    rc = w_run(S, 0, 400 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT && S->nlog == 5 && S->log[3].rec == later &&
               S->log[3].now[0] == 350 * MSEC && S->log[4].rec == r &&
               S->log[4].now[0] == 400 * MSEC,
           "after the stop: %d, %zu callbacks", rc, S->nlog);
    scenario_end();
}

/* What the callbacks of the stop-and-nest scenarios saw: the first timer's
 * nested runs' results, -1 for a run not made. */
typedef struct stop_nest {
    int nowait, until;
} stop_nest;

/* Timer 0 stops the run it is in, then runs mode 1 nested twice, as a
 * callback that pumps the loop would: at once (NOWAIT), and to 60 ms. */
static void stop_then_nest_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    stop_nest *seen = w->hook_data;
    if (rec != 0) return;
    w_stop(w);
    seen->nowait = w_run(w, 1, TK_FOREVER, TK_RUN_NOWAIT);
    seen->until = w_run(w, 1, 60 * MSEC, 0);
}

/* A stop asks the run that is innermost when it is asked: a run that a
 * callback starts after it, nested in the run the stop is for, does not
 * take it, and the run it was asked of returns after that callback. */
static void scenario_stop_then_nest(void) {
    scenario_begin("stop-then-nest", 0);
    if (S_failed) { scenario_end(); return; }
    stop_nest seen = {-1, -1};
    S->hook = stop_then_nest_hook;
    S->hook_data = &seen;
    sched(spec_in(TK_CLOCK_MONOTONIC, 10 * MSEC, 0, 0, TK_MODES(0)));
    uint32_t nested = sched(spec_in(TK_CLOCK_MONOTONIC, 30 * MSEC, 0, 0, TK_MODES(1)));
    uint32_t later = sched(spec_in(TK_CLOCK_MONOTONIC, 40 * MSEC, 0, 0, TK_MODES(0)));
    int rc = w_run(S, 0, 1000 * MSEC, 0);
    EXPECT(seen.nowait == TK_RUN_PASSED && seen.until == TK_RUN_TIMED_OUT,
           "nested runs returned %d and %d, want %d and %d", seen.nowait, seen.until,
           TK_RUN_PASSED, TK_RUN_TIMED_OUT);
    EXPECT(rc == TK_RUN_STOPPED && w_now(S, TK_CLOCK_MONOTONIC) == 60 * MSEC,
           "the run returned %d at %" PRId64 ", want %d at 60 ms", rc,
           w_now(S, TK_CLOCK_MONOTONIC), TK_RUN_STOPPED);
    EXPECT(S->nlog == 2 && S->log[1].rec == nested, "%zu callbacks before the stop, want 2",
           S->nlog);
    /* The mode-0 timer that came due in the nested run waits for the next. */
    rc = w_run(S, 0, 100 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT && S->nlog == 3 && S->log[2].rec == later,
           "the next run returned %d after %zu callbacks", rc, S->nlog);
    scenario_end();
}

/* Timer 0 stops the run it is in and runs mode 1 nested to 100 ms; the
 * mode-1 timer stops that nested run. */
static void stop_at_two_depths_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    stop_nest *seen = w->hook_data;
    if (rec == 0) {
        w_stop(w);
        seen->until = w_run(w, 1, 100 * MSEC, 0);
    } else if (rec == 1) {
        w_stop(w);
    }
}

/* Two stops, each asked of the run innermost at the time: each ends its
 * own run, the nested one at the callback that asked for it. */
static void scenario_stop_at_two_depths(void) {
    scenario_begin("stop-at-two-depths", 0);
    if (S_failed) { scenario_end(); return; }
    stop_nest seen = {-1, -1};
    S->hook = stop_at_two_depths_hook;
    S->hook_data = &seen;
    sched(spec_in(TK_CLOCK_MONOTONIC, 10 * MSEC, 0, 0, TK_MODES(0)));
    sched(spec_in(TK_CLOCK_MONOTONIC, 30 * MSEC, 0, 0, TK_MODES(1)));
    sched(spec_in(TK_CLOCK_MONOTONIC, 50 * MSEC, 0, 0, TK_MODES(1)));
    sched(spec_in(TK_CLOCK_MONOTONIC, 50 * MSEC, 0, 0, TK_MODES(0)));
    int rc = w_run(S, 0, 1000 * MSEC, 0);
    EXPECT(seen.until == TK_RUN_STOPPED && rc == TK_RUN_STOPPED,
           "nested run returned %d, the run %d, want both %d", seen.until, rc, TK_RUN_STOPPED);
    EXPECT(S->nlog == 2 && w_now(S, TK_CLOCK_MONOTONIC) == 30 * MSEC,
           "%zu callbacks, clock at %" PRId64 ", want 2 at 30 ms", S->nlog,
           w_now(S, TK_CLOCK_MONOTONIC));
    /* Neither stop is left over. */
    rc = w_run(S, 0, 100 * MSEC, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT && S->nlog == 3, "the next run returned %d after %zu callbacks",
           rc, S->nlog);
    scenario_end();
}

/* A repeating timer in a long run fires exactly once per period, and its
 * callback sees all three clocks at each wake-up: its deadline + leeway. */
static void scenario_run_repeating(void) {
    static const int64_t leeways[] = {0, 2 * MSEC};
    for (size_t l = 0; l < 2; l++) {
        scenario_begin(l ? "run-repeating-leeway" : "run-repeating", 1000 * MSEC);
        if (S_failed) { scenario_end(); return; }
        int64_t period = 7 * MSEC, leeway = leeways[l];
        uint32_t t = sched(spec_in(TK_CLOCK_REALTIME, period, period, leeway, TK_MODES(2)));
        int rc = w_run(S, 2, 11000 * MSEC, 0);
        EXPECT(rc == TK_RUN_TIMED_OUT, "run returned %d", rc);
        /* Wake-ups at 1000 + 7k + leeway ms up to 11000: k = 1 .. 1428. */
        size_t want = 1428;
        EXPECT(S->nlog == want, "%zu fires, want %zu", S->nlog, want);
        size_t bad = 0;
        for (size_t i = 0; i < S->nlog; i++) {
            int64_t wake = 1000 * MSEC + (int64_t)(i + 1) * period + leeway;
            int ok = S->log[i].rec == t && S->log[i].missed == 0;
            for (int k = 0; k < TK_CLOCK_COUNT; k++) ok = ok && S->log[i].now[k] == wake;
            if (!ok && bad++ == 0)
                EXPECT(ok, "fire %zu: T%u missed %" PRIu64 " at %" PRId64 "/%" PRId64 "/%" PRId64
                       ", want %" PRId64, i, S->log[i].rec, S->log[i].missed, S->log[i].now[0],
                       S->log[i].now[1], S->log[i].now[2], wake);
        }
        /* A wake-up for each fire, and one at the run's deadline for its last
         * pass (the next deadline, 11003 ms, is not due there). */
        tk_loop_stats st = stats();
        EXPECT(st.fired == want && st.wakeups == want + 1, "fired %" PRIu64 " wakeups %" PRIu64,
               st.fired, st.wakeups);
        EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == 11000 * MSEC &&
                   w_now(S, TK_CLOCK_REALTIME) == 11000 * MSEC,
               "clocks at %" PRId64 "/%" PRId64, w_now(S, TK_CLOCK_MONOTONIC),
               w_now(S, TK_CLOCK_REALTIME));
        scenario_end();
    }
}

/* A one-shot that its callback reschedules due at once, at every fire (a
 * busy timer): a real loop fires it at every pass while its clocks move on
 * their own. A manual advance or run makes at most 65 passes at one time (the
 * first and 64 more), then moves to the next wake-up later than that time,
 * so time still moves, the other timers fire on time, and the call returns
 * (it used to make passes at one time without end). */
enum { BUSY_PASSES = 65 };

static void rearm_at_once_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    if (rec != 0) return;
    tk_timer_spec now = spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0));
    EXPECT(w_reschedule(w, w->handles[0], &now) == 0, "due again at once");
}

/* How many of the log's fires from `from` on are of `rec` at monotonic `at`. */
static size_t fires_at(size_t from, uint32_t rec, int64_t at) {
    size_t count = 0;
    for (size_t i = from; i < S->nlog; i++)
        count += S->log[i].rec == rec && S->log[i].now[TK_CLOCK_MONOTONIC] == at;
    return count;
}

static void scenario_busy_timer(void) {
    for (int running = 0; running < 2; running++) {
        scenario_begin(running ? "busy-timer-run" : "busy-timer-advance", 0);
        if (S_failed) { scenario_end(); return; }
        S->hook = rearm_at_once_hook;
        uint32_t busy = sched(spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0)));
        uint32_t at1000 = sched(spec_in(TK_CLOCK_MONOTONIC, 1000, 0, 0, TK_MODES(0)));
        uint32_t at5000 = sched(spec_in(TK_CLOCK_BOOTTIME, 5000, 0, 0, TK_MODES(0)));
        int64_t fired = 0;
        if (running) {
            int rc = w_run(S, 0, 10000, 0);
            EXPECT(rc == TK_RUN_TIMED_OUT, "run returned %d", rc);
        } else {
            fired = w_advance(S, 0, 10000);
        }
        /* 65 passes at 0, at 1000 and at 5000; then nothing is left before
         * the end but the busy timer itself: the clocks move there, where a
         * run makes its last pass (one fire more) and an advance ends. */
        size_t busy_fires = 3 * BUSY_PASSES + (size_t)running;
        EXPECT(fires_at(0, busy, 0) == BUSY_PASSES && fires_at(0, busy, 1000) == BUSY_PASSES &&
                   fires_at(0, busy, 5000) == BUSY_PASSES &&
                   fires_at(0, busy, 10000) == (size_t)running,
               "busy fires at 0/1000/5000/10000: %zu/%zu/%zu/%zu", fires_at(0, busy, 0),
               fires_at(0, busy, 1000), fires_at(0, busy, 5000), fires_at(0, busy, 10000));
        EXPECT(fires_at(0, at1000, 1000) == 1 && fires_at(0, at5000, 5000) == 1,
               "the others on time: %zu at 1000, %zu at 5000", fires_at(0, at1000, 1000),
               fires_at(0, at5000, 5000));
        EXPECT(S->nlog == busy_fires + 2, "%zu fires in all", S->nlog);
        if (!running) EXPECT(fired == (int64_t)S->nlog, "advance returned %" PRId64, fired);
        EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == 10000 && w_now(S, TK_CLOCK_BOOTTIME) == 10000,
               "clocks at %" PRId64 "/%" PRId64, w_now(S, TK_CLOCK_MONOTONIC),
               w_now(S, TK_CLOCK_BOOTTIME));
        /* An advance by nothing fires what is due, 65 passes' worth, and ends. */
        size_t before = S->nlog;
        fired = w_advance(S, 0, 0);
        EXPECT(fired == BUSY_PASSES && fires_at(before, busy, 10000) == BUSY_PASSES,
               "advance by 0: %" PRId64 " fires", fired);
        /* A busy timer in another mode does not hold a run of this one. */
        tk_timer_spec other = spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(1));
        EXPECT(w_reschedule(S, S->handles[busy], &other) == 0, "to mode 1");
        before = S->nlog;
        int rc = w_run(S, 0, 20000, 0);
        EXPECT(rc == TK_RUN_TIMED_OUT && S->nlog == before, "run in mode 0: %d, %zu fires", rc,
               S->nlog - before);
        scenario_end();
    }
}

/* A busy timer whose count of passes a callback's move of time starts
 * again: the timer due at 50 fires at the next pass after the busy timer's
 * 65th callback moved the clocks to 100 (not at the run's end). */
static void move_at_65th_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    rearm_at_once_hook(w, kind, rec, missed);
    if (rec != 0) return;
    int *fires = w->hook_data;
    if (++*fires == BUSY_PASSES) EXPECT(w_set_time(w, TK_CLOCK_MONOTONIC, 100) == 0, "to 100");
}

static void scenario_busy_timer_moved(void) {
    scenario_begin("busy-timer-moved", 0);
    if (S_failed) { scenario_end(); return; }
    int fires = 0;
    S->hook = move_at_65th_hook;
    S->hook_data = &fires;
    uint32_t busy = sched(spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0)));
    uint32_t at50 = sched(spec_in(TK_CLOCK_MONOTONIC, 50, 0, 0, TK_MODES(0)));
    int rc = w_run(S, 0, 10000, 0);
    EXPECT(rc == TK_RUN_TIMED_OUT, "run returned %d", rc);
    EXPECT(fires_at(0, at50, 100) == 1, "the timer due at 50 fired at 100: %zu", fires_at(0, at50, 100));
    EXPECT(fires_at(0, busy, 100) == BUSY_PASSES && fires_at(0, busy, 10000) == 1,
           "busy at 100: %zu, at 10000: %zu", fires_at(0, busy, 100), fires_at(0, busy, 10000));
    scenario_end();
}

/* The same at the first instant of time, where the busy timer's deadline is
 * INT64_MIN: the step after the 65th pass finds no wake-up after it. */
static void scenario_busy_timer_at_int64_min(void) {
    scenario_begin("busy-timer-at-int64-min", INT64_MIN);
    if (S_failed) { scenario_end(); return; }
    S->hook = rearm_at_once_hook;
    uint32_t busy = sched(spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0)));
    int64_t fired = w_advance(S, 0, 100);
    EXPECT(fired == BUSY_PASSES && fires_at(0, busy, INT64_MIN) == BUSY_PASSES,
           "advance: %" PRId64 " fires, %zu at INT64_MIN", fired, fires_at(0, busy, INT64_MIN));
    EXPECT(w_now(S, TK_CLOCK_MONOTONIC) == INT64_MIN + 100, "clock at %" PRId64,
           w_now(S, TK_CLOCK_MONOTONIC));
    scenario_end();
}

/* A one-shot revived by its own callback, which then runs the loop nested:
 * the nested pass does not fire it while that callback runs (it is set
 * aside, still scheduled), nor does the rest of the outer pass; the next
 * pass fires it once. */
typedef struct refire { int depth; int64_t nested; int64_t info, reschedule; size_t nested_log; } refire;

static void refire_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    refire *r = w->hook_data;
    if (rec != 0 || r->depth++ > 0) return; /* the second firing does nothing */
    tk_timer_spec now = spec_in(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0));
    EXPECT(w_reschedule(w, w->handles[0], &now) == 0, "revive");
    size_t before = w->nlog;
    r->nested = w_run(w, 0, TK_FOREVER, TK_RUN_NOWAIT);
    r->nested_log = w->nlog - before;
    tk_timer_info info;
    r->info = w_info(w, w->handles[0], &info);
    r->reschedule = w_reschedule(w, w->handles[0], &now);
}

static void scenario_refire_in_nested_run(void) {
    scenario_begin("refire-in-nested-run", 0);
    if (S_failed) { scenario_end(); return; }
    refire r = {0, 99, 99, 99, 99};
    S->hook = refire_hook;
    S->hook_data = &r;
    sched(spec_in(TK_CLOCK_MONOTONIC, 10, 0, 0, TK_MODES(0)));
    int64_t n = w_advance(S, 1, 10); /* mode 1: parked, not fired */
    int rc = w_run(S, 0, TK_FOREVER, TK_RUN_NOWAIT);
    EXPECT(n == 0 && rc == TK_RUN_PASSED && r.nested == TK_RUN_PASSED,
           "advance %" PRId64 ", run %d, nested run %" PRId64, n, rc, r.nested);
    EXPECT(r.nested_log == 0 && S->nlog == 1 && r.depth == 1,
           "%zu callbacks in the nested run, %zu in all", r.nested_log, S->nlog);
    EXPECT(r.info == 0 && r.reschedule == 0,
           "set aside, it is still scheduled: info %" PRId64 ", reschedule %" PRId64, r.info,
           r.reschedule);
    EXPECT(stats().pending == 1 && stats().fired == 1, "pending %" PRIu64 " fired %" PRIu64,
           stats().pending, stats().fired);
    rc = w_run(S, 0, TK_FOREVER, TK_RUN_NOWAIT);
    EXPECT(rc == TK_RUN_PASSED && S->nlog == 2 && r.depth == 2, "then %zu callbacks", S->nlog);
    EXPECT(stats().pending == 0 && stats().fired == 2, "pending %" PRIu64 " fired %" PRIu64,
           stats().pending, stats().fired);
    scenario_end();
}

/* A repeating timer whose callback runs the loop nested in the same mode for
 * a while (as a modal loop does): the nested run fires the other timers but
 * never this one while its callback runs, so its callbacks never stack; it
 * fires once after that callback returns, with the periods it skipped as
 * `missed`. */
typedef struct modal { int depth, most; size_t nested_log; int64_t nested; } modal;

static void modal_hook(world *w, int kind, uint32_t rec, uint64_t missed) {
    (void)kind;
    (void)missed;
    modal *m = w->hook_data;
    if (rec != 0) return;
    if (++m->depth > m->most) m->most = m->depth;
    if (m->depth == 1 && w->nlog == 1) {
        size_t before = w->nlog;
        m->nested = w_run(w, 0, w_now(w, TK_CLOCK_MONOTONIC) + 55, 0);
        m->nested_log = w->nlog - before;
    }
    m->depth--;
}

static void scenario_repeating_in_modal_run(void) {
    scenario_begin("repeating-in-modal-run", 0);
    if (S_failed) { scenario_end(); return; }
    modal m = {0, 0, 0, 99};
    S->hook = modal_hook;
    S->hook_data = &m;
    uint32_t a = sched(spec_in(TK_CLOCK_MONOTONIC, 10, 10, 0, TK_MODES(0)));
    uint32_t b = sched(spec_in(TK_CLOCK_MONOTONIC, 15, 20, 0, TK_MODES(0)));
    int rc = w_run(S, 0, 10, 0); /* a at 10; its nested run to 65 */
    EXPECT(rc == TK_RUN_TIMED_OUT && m.nested == TK_RUN_TIMED_OUT && m.most == 1,
           "run %d, nested run %" PRId64 ", depth %d", rc, m.nested, m.most);
    /* In the nested run only b fired: at 15, 35 and 55. */
    EXPECT(m.nested_log == 3 && S->nlog == 4, "nested %zu, all %zu", m.nested_log, S->nlog);
    for (size_t i = 1; i < S->nlog && i < 4; i++) {
        EXPECT(S->log[i].rec == b && S->log[i].now[TK_CLOCK_MONOTONIC] == 15 + 20 * (int64_t)(i - 1),
               "nested fire %zu: timer %u at %" PRId64, i, S->log[i].rec,
               S->log[i].now[TK_CLOCK_MONOTONIC]);
    }
    /* Back at 65, a is due since 20: one fire, four periods skipped. */
    int64_t n = w_advance(S, 0, 0);
    EXPECT(n == 1 && S->nlog == 5 && S->log[4].rec == a && S->log[4].missed == 4 &&
               S->log[4].now[TK_CLOCK_MONOTONIC] == 65,
           "then %" PRId64 " fired; last: timer %u, missed %" PRIu64 " at %" PRId64, n,
           S->nlog ? S->log[S->nlog - 1].rec : 0, S->nlog ? S->log[S->nlog - 1].missed : 0,
           S->nlog ? S->log[S->nlog - 1].now[TK_CLOCK_MONOTONIC] : 0);
    tk_timer_info info;
    EXPECT(w_info(S, S->handles[a], &info) == 0 && info.deadline_ns == 70, "next at %" PRId64,
           info.deadline_ns);
    EXPECT(m.most == 1, "callbacks of a stacked %d deep", m.most);
    scenario_end();
}

/* How long an isolated scenario may run (the tests' own limits are longer). */
#define ISOLATED_LIMIT_S 20

/* Runs a scenario in a child process, so that a crash, a sanitizer abort or
 * a hang is reported as that scenario's failure. */
static void isolated(void (*scenario)(void), const char *name) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        g_failed++;
        return;
    }
    if (pid == 0) {
        /* A scenario that hangs is killed, and fails, on its own. */
        signal(SIGALRM, SIG_DFL);
        alarm(ISOLATED_LIMIT_S);
        g_passed = g_failed = 0;
        scenario();
        fflush(stdout);
        fflush(stderr);
        _exit(g_failed ? 1 : 0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        g_passed++;
    } else {
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            fprintf(stderr, "FAIL [%s on %s]: still running after %d s\n", name, S->name,
                    ISOLATED_LIMIT_S);
        else if (WIFSIGNALED(status))
            fprintf(stderr, "FAIL [%s on %s]: killed by signal %d\n", name, S->name,
                    WTERMSIG(status));
        else
            fprintf(stderr, "FAIL [%s on %s]: exited with %d\n", name, S->name,
                    WEXITSTATUS(status));
        g_failed++;
    }
}

/* Runs a scenario on the reference, then on the real loop. */
static void on_both_worlds(void (*scenario)(void)) {
    S = &W_REF;
    scenario();
    S = &W_IMPL;
    scenario();
    W_REF.hook = W_IMPL.hook = NULL;
}

/* The same, each world's run in a child process of its own. */
static void on_both_worlds_isolated(void (*scenario)(void), const char *name) {
    S = &W_REF;
    isolated(scenario, name);
    S = &W_IMPL;
    isolated(scenario, name);
    W_REF.hook = W_IMPL.hook = NULL;
}

static void test_coalescing(void) { on_both_worlds(scenario_coalescing); }
static void test_leeway_never_early(void) { on_both_worlds(scenario_leeway_never_early); }
static void test_repeating_missed(void) { on_both_worlds(scenario_repeating_missed); }
static void test_parked(void) { on_both_worlds(scenario_parked); }
static void test_cancel_in_callback(void) { on_both_worlds(scenario_cancel_in_callback); }
static void test_ties_and_passes(void) { on_both_worlds(scenario_ties_and_passes); }
static void test_errors(void) { on_both_worlds(scenario_errors); }
static void test_busy_in_fire(void) {
    on_both_worlds_isolated(scenario_busy_in_fire, "busy-in-fire");
}
static void test_never_comes(void) { on_both_worlds_isolated(scenario_never_comes, "never-comes"); }
static void test_monotonic_at_end(void) {
    on_both_worlds_isolated(scenario_monotonic_at_end, "monotonic-at-end");
}
static void test_far_past_repeating(void) {
    on_both_worlds_isolated(scenario_far_past_repeating, "far-past-repeating");
}
static void test_grid_extremes(void) { on_both_worlds(scenario_grid_extremes); }
static void test_run_nested_modes(void) {
    on_both_worlds_isolated(scenario_run_nested_modes, "run-nested-modes");
}
static void test_run_deadline_pass(void) {
    on_both_worlds_isolated(scenario_run_deadline_pass, "deadline-pass");
    on_both_worlds_isolated(scenario_run_deadline_pass_nested, "deadline-pass nested");
}

static void test_run_until_idle(void) {
    on_both_worlds_isolated(scenario_run_until_idle, "run-until-idle");
}
static void test_run_stop(void) {
    on_both_worlds_isolated(scenario_run_stop, "run-stop");
    on_both_worlds_isolated(scenario_stop_then_nest, "stop-then-nest");
    on_both_worlds_isolated(scenario_stop_at_two_depths, "stop-at-two-depths");
}
static void test_due_behind(void) {
    on_both_worlds_isolated(scenario_due_behind, "due-behind");
    on_both_worlds_isolated(scenario_repeating_behind_nested_run, "repeating-behind-nested-run");
    on_both_worlds_isolated(scenario_held_in_tie, "held-in-tie");
}
static void test_refire_in_nested_run(void) {
    on_both_worlds_isolated(scenario_refire_in_nested_run, "refire-in-nested-run");
    on_both_worlds_isolated(scenario_repeating_in_modal_run, "repeating-in-modal-run");
}
static void test_run_repeating(void) {
    on_both_worlds_isolated(scenario_run_repeating, "run-repeating");
}
static void test_busy_timer(void) {
    on_both_worlds_isolated(scenario_busy_timer, "busy-timer");
    on_both_worlds_isolated(scenario_busy_timer_at_int64_min, "busy-timer-at-int64-min");
    on_both_worlds_isolated(scenario_busy_timer_moved, "busy-timer-moved");
}

/* How many operations the random test makes (TK_MODEL_OPS). */
static uint64_t g_ops = 500000;

static void test_random(void) {
    if (random_run(g_rng, g_ops) == 0) {
        CHECK(1);
    } else {
        PROPERTY_FAIL("the loop and the reference differ (see MISMATCH above)");
    }
}

static const test_case tests[] = {
    {"coalescing", test_coalescing, 60},
    {"leeway-never-early", test_leeway_never_early, 60},
    {"repeating-missed", test_repeating_missed, 60},
    {"parked-mode", test_parked, 60},
    {"cancel-in-callback", test_cancel_in_callback, 60},
    {"ties-and-passes", test_ties_and_passes, 60},
    {"errors", test_errors, 60},
    {"busy-in-fire", test_busy_in_fire, 60},
    {"never-comes", test_never_comes, 60},
    {"monotonic-at-end", test_monotonic_at_end, 60},
    {"far-past-repeating", test_far_past_repeating, 60},
    {"grid-extremes", test_grid_extremes, 60},
    {"run-nested-modes", test_run_nested_modes, 60},
    {"run-until-idle", test_run_until_idle, 60},
    {"deadline-pass", test_run_deadline_pass, 60},
    {"run-stop", test_run_stop, 60},
    {"due-behind", test_due_behind, 60},
    {"run-repeating", test_run_repeating, 60},
    {"refire-in-nested-run", test_refire_in_nested_run, 60},
    {"busy-timer", test_busy_timer, 60},
    {"random", test_random, 1800},
};

int main(int argc, char **argv) {
    const char *ops = getenv("TK_MODEL_OPS");
    if (ops && *ops) {
        char *end;
        errno = 0;
        g_ops = strtoull(ops, &end, 0);
        if (errno || *end) {
            fprintf(stderr, "test_loop_model: bad TK_MODEL_OPS '%s'\n", ops);
            return 2;
        }
    }
    const char *trace = getenv("TK_TRACE");
    g_trace = trace && *trace && strcmp(trace, "0") != 0;
    printf("test_loop_model: %" PRIu64 " random operations\n", g_ops);
    int status = test_main(argc, argv, "test_loop_model", tests, sizeof tests / sizeof tests[0]);

    free(W_REF.handles);
    free(W_IMPL.handles);
    free(W_REF.log);
    free(W_IMPL.log);
    u64set_clear(&W_REF.issued);
    u64set_clear(&W_IMPL.issued);
    return status;
}
