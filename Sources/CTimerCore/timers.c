/*
 * The timer table: where timers live between schedule and fire.
 *
 * Slots come from a free list over three parallel arrays (the records, their
 * positions, and the slots: generation and where the record is; see
 * loop_internal.h), grown by doubling, so scheduling allocates only when the
 * table is full. A timer scheduled with a record of the caller's
 * (tk_loop_schedule_record) takes a slot all the same, and leaves its place
 * in the records untouched. A handle is the slot and its generation, each
 * offset by the loop's key (see make_id). A timer that ends leaves a record
 * that says so, and a slot's generation moves on each time a timer takes
 * it: that is what makes a stale handle harmless, and the key is what makes
 * another loop's handle name nothing here.
 *
 * A pending timer sits in the heap of its clock. A timer that comes due while
 * the loop runs a mode outside its set moves to `parked` and goes back into
 * its heap, deadline and order intact, at the first pass run in one of its
 * modes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "clock.h"
#include "frame_ticker.h"
#include "loop_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- Handles and slots ------------------------------------------------- */

/*
 * Both halves of a handle are offset by the loop's key, modulo 2^32:
 * (generation + key) << 32 | (slot + 1 + key). Another loop, whose key is
 * k' = key - delta, reads such a handle as slot + delta and generation +
 * delta. The keys are the loops' counts times TK__HANDLE_KEY_STEP, the
 * golden ratio scaled to 2^32, which spreads any number of them about as
 * evenly as it can be done around the circle: among the first 4,096 loops
 * no two keys are closer than 744,616 (either way round), among the first
 * 65,536 none are closer than 52,777 (test_errors computes both). So a
 * foreign handle lands on a slot of the loop only if one of the two has
 * room for more timers than that distance, and on a live timer of it only
 * if the slot so far along has been used that many times as well: its
 * generation moves on by one each time a timer takes it (take_slot).
 */
static tk_timer_id make_id(const tk_loop *loop, uint32_t slot, uint32_t generation) {
    uint32_t key = loop->handle_key;
    return ((uint64_t)(uint32_t)(generation + key) << 32) | (uint32_t)(slot + 1 + key);
}

/* The slot a handle names on this loop, which may be past its table. */
static uint32_t slot_of(const tk_loop *loop, tk_timer_id id) {
    return (uint32_t)id - 1 - loop->handle_key;
}

static uint32_t generation_of(const tk_loop *loop, tk_timer_id id) {
    return (uint32_t)(id >> 32) - loop->handle_key;
}

uint32_t tk__next_handle_key(void) {
    static _Atomic uint32_t loops;
    return atomic_fetch_add(&loops, 1) * TK__HANDLE_KEY_STEP;
}

/* The one slot whose handles' low half the key offsets to 0: never used, so
 * that no handle is 0 (TK_TIMER_NONE). It is past the table unless the table
 * holds more than 2^32 - 1 - key slots. */
static uint32_t unused_slot(const tk_loop *loop) {
    return 0u - 1u - loop->handle_key;
}

/* What the slot of a free slot points at: a record that says so. Never
 * written (a free slot's record is read, by lookup and tk__timers_free, and
 * nothing else), so the table's own records are written only by the timers
 * that use them, and a loop whose timers all keep their records in the
 * caller's memory never touches the table's. */
static tk__timer free_record = {.state = TK__TIMER_FREE};

/* The record of the timer in `slot`: the table's own, one in the caller's
 * memory (tk_loop_schedule_record), or, for a free slot of a loop with
 * slots, free_record. */
static inline tk__timer *timer_at(const tk_loop *loop, uint32_t slot) {
    if (loop->slots == NULL) return &loop->timers[slot];
    tk__timer *record = loop->slots[slot].record;
    return record != NULL ? record : &loop->timers[slot];
}

/* Where the generation of `slot` is kept: in its slot, or, in a loop with no
 * slots array, in its table record. */
static inline uint32_t *generation_at(const tk_loop *loop, uint32_t slot) {
    return loop->slots != NULL ? &loop->slots[slot].generation : &loop->timers[slot].generation;
}

/* Whether a timer is live: neither free nor cancelled. A one-shot whose
 * callback is running is live only to its own callback, that is, to the
 * thread running the loop; to any other thread it has fired. */
static int is_live(const tk_loop *loop, const tk__timer *timer) {
    if (timer->state == TK__TIMER_FREE || timer->state == TK__TIMER_CANCELLED) return 0;
    return timer->state != TK__TIMER_FIRING ||
           (loop->depth > 0 && pthread_equal(loop->owner, pthread_self()));
}

/* The live timer `id` names, or NULL. */
static tk__timer *lookup(const tk_loop *loop, tk_timer_id id, uint32_t *slot_out) {
    if (id == TK_TIMER_NONE) return NULL;
    uint32_t slot = slot_of(loop, id);
    if (slot >= loop->timer_capacity) return NULL;
    if (*generation_at(loop, slot) != generation_of(loop, id)) return NULL;
    tk__timer *timer = timer_at(loop, slot);
    if (!is_live(loop, timer)) return NULL;
    *slot_out = slot;
    return timer;
}

/* The live timer whose record in the caller's memory is `record`, or NULL:
 * as lookup, read from the record alone. A record in use names the loop
 * that holds it and its slot there; a free one (zeroed, or one its loop is
 * done with) names no timer, whatever loop it last named. The loop is read
 * first: it stays put while a loop holds the record, whereas the state is
 * that loop's to write, under its own lock, and is read only under this
 * loop's, once the record is known to be this loop's. */
static tk__timer *lookup_record(const tk_loop *loop, tk__caller_record *record,
                                uint32_t *slot_out) {
    tk__timer *timer = &record->timer;
    if (record->loop != loop || timer->state == TK__TIMER_FREE) return NULL;
    if (!is_live(loop, timer)) return NULL;
    *slot_out = timer->slot;
    return timer;
}

/* Grows the table so that one slot is free, and so that it has at least
 * `wanted` slots besides the unused one. 0 or -ENOMEM. */
static int reserve_slot(tk_loop *loop, uint32_t wanted) {
    if (wanted > unused_slot(loop)) {
        if (wanted == TK__NO_SLOT - 1) return -ENOMEM;
        wanted++;
    }
    if (loop->free_slot != TK__NO_SLOT && wanted <= loop->timer_capacity) return 0;
    uint64_t capacity = loop->timer_capacity ? (uint64_t)loop->timer_capacity * 2 : 64;
    if (capacity < wanted) capacity = wanted;
    if (capacity > TK__NO_SLOT - 1) capacity = TK__NO_SLOT - 1;
    if (capacity <= loop->timer_capacity) return -ENOMEM;
    tk__timer *timers = realloc(loop->timers, (size_t)capacity * sizeof *timers);
    if (timers == NULL) return -ENOMEM;
    loop->timers = timers;
    /* Each array that grew is kept, larger, if a later one cannot. */
    uint32_t *positions = realloc(loop->positions, (size_t)capacity * sizeof *positions);
    if (positions == NULL) return -ENOMEM;
    loop->positions = positions;
    uint32_t old = loop->timer_capacity;
    tk__slot *slots = loop->slots;
    if (slots != NULL) {
        slots = realloc(slots, (size_t)capacity * sizeof *slots);
        if (slots == NULL) return -ENOMEM;
        loop->slots = slots;
    } else {
        /* A free slot's table record says so (TK__TIMER_FREE is 0). */
        memset(&timers[old], 0, (size_t)(capacity - old) * sizeof *timers);
    }
    /* New slots go on the free list lowest first, ahead of what was there
     * (all but the unused one, which stays free and off the list), at
     * generation 0: the first timer to take one moves it to 1. */
    uint32_t unused = unused_slot(loop);
    for (uint32_t slot = (uint32_t)capacity; slot-- > old;) {
        if (slots != NULL) {
            slots[slot].record = &free_record;
            slots[slot].generation = 0;
        } else {
            timers[slot].generation = 0;
        }
        positions[slot] = TK__NO_SLOT;
        if (slot == unused) continue;
        positions[slot] = loop->free_slot;
        loop->free_slot = slot;
    }
    loop->timer_capacity = (uint32_t)capacity;
    /* Capped growth may have added only the unused slot. */
    return loop->free_slot == TK__NO_SLOT ? -ENOMEM : 0;
}

/* Moves a slot's generation on, skipping 0: a new use of the slot, whose
 * handles the earlier uses' do not name. */
static void bump_generation(uint32_t *generation) {
    if (++*generation == 0) *generation = 1;
}

/* Takes a free slot for a new timer, moving its generation on: once for
 * each use of the slot. (A timer that ends leaves its slot's generation
 * alone: its record's state says it is no longer live, which is what makes
 * its handles name nothing until the slot is used again, and a cancel by
 * record then writes the slot without reading it.) */
static uint32_t take_slot(tk_loop *loop) {
    uint32_t slot = loop->free_slot;
    loop->free_slot = loop->positions[slot];
    loop->slots_used++;
    bump_generation(generation_at(loop, slot));
    return slot;
}

/* Makes the loop's slots array, for its first timer with a record of the
 * caller's: each slot's generation moves there from its table record, and
 * a free slot points at free_record. Once, in O(capacity). 0 or -ENOMEM. */
static int make_slots(tk_loop *loop) {
    if (loop->slots != NULL) return 0;
    tk__slot *slots = malloc((size_t)loop->timer_capacity * sizeof *slots);
    if (slots == NULL) return -ENOMEM;
    for (uint32_t slot = 0; slot < loop->timer_capacity; slot++) {
        const tk__timer *timer = &loop->timers[slot];
        slots[slot].generation = timer->generation;
        slots[slot].record = timer->state == TK__TIMER_FREE ? &free_record : NULL;
    }
    loop->slots = slots;
    return 0;
}

/* Frees `slot`, whose record is `timer`. Its generation moves on when the
 * slot is taken again (take_slot). Returns 1 if that ends the loop's hold
 * (tk_loop_set_hold): the caller hands the hold on once the lock is
 * dropped. */
static int release_slot(tk_loop *loop, uint32_t slot, tk__timer *timer) {
    /* A live slot's record is the table's (NULL) or the caller's. */
    int caller_record = loop->slots != NULL && loop->slots[slot].record != NULL;
    timer->state = TK__TIMER_FREE;
    timer->fn = NULL;
    timer->context = NULL;
    if (loop->slots != NULL) loop->slots[slot].record = &free_record;
    loop->positions[slot] = loop->free_slot;
    loop->free_slot = slot;
    loop->slots_used--;
    /* The hold cannot be set while records are held, so a hold function
     * here was there when the first of them was scheduled. */
    return caller_record && --loop->records_held == 0 && loop->hold_fn != NULL;
}

/* Ends a timer that was taken out of the pending ones. If no callback of it
 * is running, frees the slot and returns 1, or 2 if that ends the loop's
 * hold: the caller hands `*context` (and the hold) to the release handler
 * once the lock is dropped. Otherwise the handle goes stale at once and the
 * last callback to return frees the slot (see finish_callback); returns 0. */
static int let_go(tk_loop *loop, uint32_t slot, tk__timer *timer, void **context) {
    if (timer->callbacks > 0) {
        timer->state = TK__TIMER_CANCELLED;
        return 0;
    }
    *context = timer->context;
    return release_slot(loop, slot, timer) ? 2 : 1;
}

/* Calls the release handler, with the lock dropped, for the context of a
 * timer whose callback was `fn`. A frame ticker's timer has the ticker as
 * its context: the ticker takes it back, and releases its own context. */
static void release_context(tk_loop *loop, tk_timer_fn fn, void *context) {
    tk_release_fn release = loop->release_fn;
    int ticker = fn == tk__frame_ticker_fire;
    if (release == NULL && !ticker) return;
    loop->releasing++;
    pthread_mutex_unlock(&loop->lock);
    if (ticker) {
        tk__frame_ticker_released(loop, release, context, 0);
    } else {
        release(loop, context);
    }
    pthread_mutex_lock(&loop->lock);
    loop->releasing--;
}

/* Hands the context of the loop's hold, which just ended, to the release
 * handler, with the lock dropped (see tk_loop_set_hold). The context is read
 * as the hold ends, before the lock is dropped: once no record is held, the
 * hold may be set anew. */
static void release_hold(tk_loop *loop, void *hold) {
    release_context(loop, NULL, hold);
}

/* ---- Counting pending timers by clock and mode -------------------------- */

static void count_in(tk_loop *loop, const tk__timer *timer) {
    loop->stats.pending++;
    loop->clock_timers[timer->clock]++;
    if (timer->leeway == TK__PRECISE) loop->precise_timers[timer->clock]++;
    for (tk_mode_set modes = timer->modes & TK_MODES_ALL; modes; modes &= modes - 1) {
        loop->mode_timers[__builtin_ctz(modes)]++;
    }
}

static void count_out(tk_loop *loop, const tk__timer *timer) {
    loop->stats.pending--;
    loop->clock_timers[timer->clock]--;
    if (timer->leeway == TK__PRECISE) loop->precise_timers[timer->clock]--;
    for (tk_mode_set modes = timer->modes & TK_MODES_ALL; modes; modes &= modes - 1) {
        loop->mode_timers[__builtin_ctz(modes)]--;
    }
}

/* ---- Placing a timer ----------------------------------------------------- */

/* Whether a live timer's entry is in `parked` (parked or deferred) rather
 * than in its clock's heap (in heap order, or held). */
static int in_parked(const tk__timer *timer) {
    return timer->state == TK__TIMER_PARKED || timer->state == TK__TIMER_DEFERRED;
}

/* Takes a scheduled, parked, deferred or held timer out of its heap or the
 * parked list. */
static void unplace(tk_loop *loop, uint32_t slot, const tk__timer *timer) {
    uint32_t index = loop->positions[slot];
    if (timer->state == TK__TIMER_SCHEDULED || timer->state == TK__TIMER_HELD) {
        tk__heap_remove(&loop->heaps[timer->clock], loop->positions, index);
    } else if (in_parked(timer)) {
        tk__heap *parked = &loop->parked;
        tk__heap_entry last = parked->entries[--parked->count];
        if (index != parked->count) {
            parked->entries[index] = last;
            loop->positions[last.slot] = index;
        }
    }
}

/* Puts a timer into its clock's heap with a fresh sequence number. The heap
 * has room: reserved when the timer was counted in. */
static void place(tk_loop *loop, uint32_t slot, int64_t deadline) {
    tk__timer *timer = timer_at(loop, slot);
    tk__heap_entry entry = {.deadline = deadline, .seq = loop->next_seq++, .slot = slot};
    tk__heap_push(&loop->heaps[timer->clock], loop->positions, entry);
    timer->state = TK__TIMER_SCHEDULED;
    timer->placed_pass = loop->pass;
}

/* The deadline of a scheduled, parked or deferred timer. */
static int64_t deadline_of(const tk_loop *loop, uint32_t slot) {
    const tk__timer *timer = timer_at(loop, slot);
    const tk__heap *heap = in_parked(timer) ? &loop->parked : &loop->heaps[timer->clock];
    return heap->entries[loop->positions[slot]].deadline;
}

/* ---- Specs ---------------------------------------------------------------- */

int tk__mode_index(tk_mode_set modes) {
    if (modes == 0) return TK_MODE_DEFAULT;
    if ((modes & (modes - 1)) != 0 || (modes & TK_MODES_INVALID)) return -EINVAL;
    return __builtin_ctz(modes);
}

/* A spec's first fire is named by the field that says which kind it is:
 * `delay_ns` (relative) unless TK_TIMER_ABSOLUTE, then `deadline_ns`. The
 * other field must be 0, so that a relative time put in `deadline_ns` (what
 * it meant before API version 2) fails instead of firing at once. */
static int check_spec(const tk_timer_spec *spec) {
    if (spec == NULL) return -EINVAL;
    if ((unsigned)spec->clock >= TK_CLOCK_COUNT) return -EINVAL;
    if (spec->interval_ns < 0 || spec->leeway_ns < 0) return -EINVAL;
    if (spec->modes & TK_MODES_INVALID) return -EINVAL;
    if (spec->flags &
        ~(TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE | TK_TIMER_KEEP_DEADLINE | TK_TIMER_COMMON)) {
        return -EINVAL;
    }
    if ((spec->flags & TK_TIMER_PRECISE) && spec->leeway_ns != 0) return -EINVAL;
    if (spec->flags & TK_TIMER_KEEP_DEADLINE) {
        /* Neither kind of first fire: the timer's own deadline is kept. */
        if ((spec->flags & TK_TIMER_ABSOLUTE) || spec->delay_ns != 0 || spec->deadline_ns != 0) {
            return -EINVAL;
        }
    } else if (spec->flags & TK_TIMER_ABSOLUTE ? spec->delay_ns != 0 : spec->deadline_ns != 0) {
        return -EINVAL;
    }
    return 0;
}

static int64_t spec_deadline(const tk_loop *loop, const tk_timer_spec *spec) {
    if (spec->flags & TK_TIMER_ABSOLUTE) return spec->deadline_ns;
    int64_t now = loop->manual ? loop->manual_now[spec->clock] : tk__clock_read(spec->clock);
    return tk__add_sat(now, spec->delay_ns > 0 ? spec->delay_ns : 0);
}

static void apply_spec(const tk_loop *loop, tk__timer *timer, const tk_timer_spec *spec) {
    timer->clock = (uint8_t)spec->clock;
    timer->interval = spec->interval_ns;
    timer->modes = spec->modes ? spec->modes : TK_MODES(TK_MODE_DEFAULT);
    if (spec->flags & TK_TIMER_COMMON) timer->modes |= loop->common_modes | TK__COMMON_MARK;
    int64_t leeway = spec->leeway_ns;
    if (spec->interval_ns > 0 && leeway > spec->interval_ns / 2) leeway = spec->interval_ns / 2;
    timer->leeway = spec->flags & TK_TIMER_PRECISE ? TK__PRECISE : leeway;
}

/* When the loop must wake for a timer due at `deadline`: up to its leeway
 * later, or, precise, the loop's margin earlier (a manual loop needs no
 * margin: its time moves to the deadline exactly). */
static int64_t wake_time(const tk_loop *loop, int64_t deadline, int64_t leeway) {
    if (leeway != TK__PRECISE) return tk__add_sat(deadline, leeway);
    if (loop->manual || deadline == INT64_MAX) return deadline;
    return tk__sub_sat(deadline, loop->precision_margin);
}

/* Gives a slot the spec's settings and deadline and puts it in its heap,
 * waking a sleeping loop if it must fire earlier than planned. The heap has
 * room (make_room). */
/* A timer of the loop's was put in its heap with `deadline`: wakes a
 * sleeping loop if it must fire earlier than planned. */
static void note_deadline(tk_loop *loop, const tk__timer *timer, int64_t deadline) {
    int64_t target = wake_time(loop, deadline, timer->leeway);
    /* It must fire by its deadline + leeway, which is its target, or, precise, by its deadline. */
    int64_t due_by = timer->leeway == TK__PRECISE ? deadline : target;
    tk__loop_note_target(loop, (tk_clock)timer->clock, timer->modes, target, due_by);
}

static void schedule_slot(tk_loop *loop, uint32_t slot, const tk_timer_spec *spec) {
    tk__timer *timer = timer_at(loop, slot);
    apply_spec(loop, timer, spec);
    count_in(loop, timer);
    int64_t deadline = spec_deadline(loop, spec);
    place(loop, slot, deadline);
    note_deadline(loop, timer, deadline);
}

/* Takes a live timer out of the pending ones (a firing one-shot is out already). */
static void withdraw(tk_loop *loop, uint32_t slot, const tk__timer *timer) {
    if (timer->state == TK__TIMER_FIRING) return;
    unplace(loop, slot, timer);
    count_out(loop, timer);
}

/* Makes sure `clock` can take one more timer without allocating. */
static int make_room(tk_loop *loop, tk_clock clock) {
    int result = tk__loop_open_clock(loop, clock);
    if (result < 0) return result;
    return tk__heap_reserve(&loop->heaps[clock], loop->clock_timers[clock] + 1);
}

/* ---- Public timer calls --------------------------------------------------- */

void tk__timers_init(tk_loop *loop) {
    loop->timers = NULL;
    loop->positions = NULL;
    loop->slots = NULL;
    loop->timer_capacity = 0;
    loop->slots_used = 0;
    loop->records_held = 0;
    loop->free_slot = TK__NO_SLOT;
    loop->next_seq = 0;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) tk__heap_init(&loop->heaps[clock]);
    tk__heap_init(&loop->parked);
    loop->parked_modes = 0;
    loop->common_modes = TK_MODES(TK_MODE_DEFAULT);
    memset(loop->clock_timers, 0, sizeof loop->clock_timers);
    memset(loop->mode_timers, 0, sizeof loop->mode_timers);
}

void tk__timers_free(tk_loop *loop) {
    /* The hold goes after the contexts of the timers that kept it. */
    int held = loop->records_held > 0 && loop->hold_fn != NULL;
    void *hold = loop->hold_context;
    for (uint32_t slot = 0; slot < loop->timer_capacity; slot++) {
        tk__timer *timer = timer_at(loop, slot);
        if (timer->state == TK__TIMER_FREE) continue;
        tk_timer_fn fn = timer->fn;
        void *context = timer->context;
        /* A record in the caller's memory is free for another schedule
         * once the loop is gone, or once the handler has its context. */
        timer->state = TK__TIMER_FREE;
        if (fn == tk__frame_ticker_fire) {
            tk__frame_ticker_released(loop, loop->release_fn, context, 1);
        } else if (loop->release_fn != NULL) {
            loop->release_fn(loop, context);
        }
    }
    if (held && loop->release_fn != NULL) loop->release_fn(loop, hold);
    tk__frame_tickers_free_stopped(loop, loop->release_fn);
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) tk__heap_free(&loop->heaps[clock]);
    tk__heap_free(&loop->parked);
    free(loop->timers);
    free(loop->positions);
    free(loop->slots);
    tk__timers_init(loop);
}

int tk_loop_reserve(tk_loop *loop, tk_clock clock, uint32_t timers) {
    if (loop == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    /* The table is shared by the clocks: room for `timers` on this clock is
     * room beside the slots held by everything else (the other clocks'
     * timers, and timers out of their heap while a callback of theirs runs). */
    uint64_t slots = (uint64_t)timers + loop->slots_used - loop->clock_timers[clock];
    int result = slots >= TK__NO_SLOT ? -ENOMEM : reserve_slot(loop, (uint32_t)slots);
    if (result == 0) result = tk__heap_reserve(&loop->heaps[clock], timers);
    pthread_mutex_unlock(&loop->lock);
    return result;
}

/* Schedules a new timer whose record is `record`, or, if NULL, the table's. */
static int schedule_new(tk_loop *loop, tk__timer *record, const tk_timer_spec *spec,
                        tk_timer_fn fn, void *context, tk_timer_id *id) {
    if (loop == NULL || fn == NULL || id == NULL) return -EINVAL;
    int result = check_spec(spec);
    if (result < 0) return result;
    if (spec->flags & TK_TIMER_KEEP_DEADLINE) return -EINVAL; /* a new timer has none */
    pthread_mutex_lock(&loop->lock);
    /* A record's state is written under the lock of the loop that holds it,
     * which may be another: the caller must not reuse a record before that
     * loop is done with it (and tells the caller so), which orders this
     * read after those writes. Without that order, the check may miss. */
    result = record != NULL && record->state != TK__TIMER_FREE ? -EBUSY : 0;
    if (result == 0) result = reserve_slot(loop, 0);
    if (result == 0) result = make_room(loop, spec->clock);
    if (result == 0 && record != NULL) result = make_slots(loop);
    if (result == 0) {
        uint32_t slot = take_slot(loop);
        /* NULL: the table's record, which holds whatever it last held. */
        if (loop->slots != NULL) loop->slots[slot].record = record;
        if (record != NULL) {
            ((tk__caller_record *)(void *)record)->loop = loop;
            record->slot = slot;
            if (loop->records_held++ == 0 && loop->hold_fn != NULL) {
                loop->hold_fn(loop, loop->hold_context);
            }
        }
        tk__timer *timer = timer_at(loop, slot);
        timer->callbacks = 0;
        timer->fn = fn;
        timer->context = context;
        schedule_slot(loop, slot, spec);
        *id = make_id(loop, slot, *generation_at(loop, slot));
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_schedule(tk_loop *loop, const tk_timer_spec *spec, tk_timer_fn fn,
                     void *context, tk_timer_id *id) {
    return schedule_new(loop, NULL, spec, fn, context, id);
}

int tk_loop_schedule_record(tk_loop *loop, tk_timer_record *record,
                            const tk_timer_spec *spec, tk_timer_fn fn, void *context,
                            tk_timer_id *id) {
    if (record == NULL || (uintptr_t)record % _Alignof(tk_timer_record) != 0) return -EINVAL;
    return schedule_new(loop, (tk__timer *)(void *)record, spec, fn, context, id);
}

/* Cancels the live timer in `slot`, whose record is `timer`; with `taken`,
 * hands its context back there when the loop lets go of it at once.
 * tk_loop_cancel's result, or 1 for a context handed back. With
 * `hold_taken`, also hands back the loop's hold if this ends it, and returns
 * 2 then; without, the release handler gets the hold. Lock held. */
static int cancel_live(tk_loop *loop, uint32_t slot, tk__timer *timer, void **taken,
                       int hold_taken) {
    withdraw(loop, slot, timer);
    tk_timer_fn fn = timer->fn;
    void *context;
    int freed = let_go(loop, slot, timer, &context);
    if (freed == 0) return 0;
    int hold_ends = freed == 2;
    void *hold = loop->hold_context;
    /* A frame ticker's timer is the ticker's to take back. */
    if (taken != NULL && fn != tk__frame_ticker_fire) {
        *taken = context;
        if (hold_ends && hold_taken) return 2;
        if (hold_ends) release_hold(loop, hold);
        return 1;
    }
    release_context(loop, fn, context);
    if (hold_ends) release_hold(loop, hold);
    return 0;
}

/* tk_loop_cancel, and with `taken`, tk_loop_cancel_take. */
static int cancel(tk_loop *loop, tk_timer_id id, void **taken) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    uint32_t slot;
    tk__timer *timer = lookup(loop, id, &slot);
    int result = timer != NULL ? cancel_live(loop, slot, timer, taken, 0) : -ENOENT;
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_cancel(tk_loop *loop, tk_timer_id id) {
    return cancel(loop, id, NULL);
}

int tk_loop_cancel_take(tk_loop *loop, tk_timer_id id, void **context) {
    if (context == NULL) return -EINVAL;
    return cancel(loop, id, context);
}

int tk_loop_cancel_record(tk_loop *loop, tk_timer_record *record, void **context) {
    if (loop == NULL || context == NULL) return -EINVAL;
    if (record == NULL || (uintptr_t)record % _Alignof(tk_timer_record) != 0) return -EINVAL;
    tk__caller_record *held = (tk__caller_record *)(void *)record;
    pthread_mutex_lock(&loop->lock);
    uint32_t slot;
    tk__timer *timer = lookup_record(loop, held, &slot);
    /* The cancel ends by writing the slot, and the unlock after it waits
     * for that write: with many timers pending, asking for the slot's cache
     * line now fetches it while the heap's entries are read. */
    if (timer != NULL) __builtin_prefetch(&loop->slots[slot], 1);
    int result = timer != NULL ? cancel_live(loop, slot, timer, context, 1) : -ENOENT;
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_set_hold(tk_loop *loop, tk_hold_fn fn, void *context) {
    if (loop == NULL || (fn == NULL && context != NULL)) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    /* A hold set or cleared while records are held would end without
     * having begun, or begin without ending. */
    int result = loop->records_held > 0 ? -EBUSY : 0;
    if (result == 0) {
        loop->hold_fn = fn;
        loop->hold_context = context;
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_set_release_handler(tk_loop *loop, tk_release_fn fn) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    loop->release_fn = fn;
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

/* tk_loop_reschedule; `ticker` for a frame ticker re-arming its own timer,
 * which is the only caller that may reschedule one. */
static int reschedule(tk_loop *loop, tk_timer_id id, const tk_timer_spec *spec, int ticker) {
    if (loop == NULL) return -EINVAL;
    int result = check_spec(spec);
    if (result < 0) return result;
    pthread_mutex_lock(&loop->lock);
    uint32_t slot;
    tk__timer *timer = lookup(loop, id, &slot);
    tk_timer_spec kept;
    if (timer == NULL) {
        result = -ENOENT;
    } else if ((timer->fn == tk__frame_ticker_fire) != ticker) {
        /* A frame ticker's timer, named by a guessed handle: its ticker
         * arms it, on its grid, and would not know of the change. */
        result = -EPERM;
    } else if (spec->flags & TK_TIMER_KEEP_DEADLINE) {
        /* The deadline it has now, as an absolute first fire: read under
         * the lock that firing takes, so that it is not one just spent. */
        if (timer->state == TK__TIMER_FIRING) {
            result = -ENOENT;
        } else if ((unsigned)spec->clock != timer->clock) {
            result = -EINVAL;
        } else {
            kept = *spec;
            kept.flags = (spec->flags & ~TK_TIMER_KEEP_DEADLINE) | TK_TIMER_ABSOLUTE;
            kept.deadline_ns = deadline_of(loop, slot);
            spec = &kept;
        }
    }
    if (result == 0 && timer != NULL) result = make_room(loop, spec->clock);
    if (result == 0) {
        withdraw(loop, slot, timer);
        schedule_slot(loop, slot, spec);
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_reschedule(tk_loop *loop, tk_timer_id id, const tk_timer_spec *spec) {
    return reschedule(loop, id, spec, 0);
}

int tk__timers_rearm_ticker(tk_loop *loop, tk_timer_id id, const tk_timer_spec *spec) {
    return reschedule(loop, id, spec, 1);
}

int tk_loop_timer_info(tk_loop *loop, tk_timer_id id, tk_timer_info *info) {
    if (loop == NULL || info == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    uint32_t slot;
    tk__timer *timer = lookup(loop, id, &slot);
    int result = -ENOENT;
    if (timer != NULL && timer->state != TK__TIMER_FIRING) {
        info->clock = (tk_clock)timer->clock;
        info->deadline_ns = deadline_of(loop, slot);
        info->interval_ns = timer->interval;
        int precise = timer->leeway == TK__PRECISE;
        info->leeway_ns = precise ? 0 : timer->leeway;
        info->flags = (precise ? TK_TIMER_PRECISE : 0) |
                      (timer->modes & TK__COMMON_MARK ? TK_TIMER_COMMON : 0);
        info->modes = timer->modes & TK_MODES_ALL;
        info->waiting_for_mode = timer->state == TK__TIMER_PARKED;
        result = 0;
    }
    pthread_mutex_unlock(&loop->lock);
    return result;
}

int tk_loop_add_common_modes(tk_loop *loop, tk_mode_set modes) {
    if (loop == NULL || (modes & TK_MODES_INVALID)) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    tk_mode_set added = modes & ~loop->common_modes;
    loop->common_modes |= modes;
    for (uint32_t slot = 0; added != 0 && slot < loop->timer_capacity; slot++) {
        tk__timer *timer = timer_at(loop, slot);
        /* Pending ones only: a one-shot whose callback runs
         * (TK__TIMER_FIRING) goes back only through a reschedule, whose
         * spec brings the common modes in force then, and a cancelled one
         * whose callback runs never does. */
        int pending = timer->state == TK__TIMER_SCHEDULED || timer->state == TK__TIMER_HELD ||
                      timer->state == TK__TIMER_PARKED || timer->state == TK__TIMER_DEFERRED;
        if (!pending || !(timer->modes & TK__COMMON_MARK) || (timer->modes & added) == added) {
            continue;
        }
        /* Its entry stays where it is, deadline and sequence number alike:
         * only the modes, their counts and the parked timers' modes
         * change, and a loop waiting in one of the new modes is told. */
        count_out(loop, timer);
        timer->modes |= added;
        count_in(loop, timer);
        if (timer->state == TK__TIMER_PARKED) loop->parked_modes |= added;
        if (timer->state != TK__TIMER_DEFERRED) note_deadline(loop, timer, deadline_of(loop, slot));
    }
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

tk_mode_set tk__loop_common_modes(tk_loop *loop) {
    pthread_mutex_lock(&loop->lock);
    tk_mode_set modes = loop->common_modes;
    pthread_mutex_unlock(&loop->lock);
    return modes;
}

/* Ends a callback of the timer in `slot`. The slot is not reused while a
 * callback runs, so it is still this timer's. When the last callback of a
 * one-shot that was not rescheduled, or of a timer cancelled meanwhile,
 * returns, the slot is freed and the context released. Lock held (dropped
 * around the release handler). */
static void finish_callback(tk_loop *loop, uint32_t slot) {
    tk__timer *timer = timer_at(loop, slot);
    if (--timer->callbacks > 0) {
        /* Still firing: a one-shot that an outer callback revived fired again
         * in a nested run, and this, its latest callback, did not revive it.
         * It has fired for good: to the outer callbacks, its handle is stale,
         * as after a cancel. */
        if (timer->state == TK__TIMER_FIRING) timer->state = TK__TIMER_CANCELLED;
        return;
    }
    if (timer->state == TK__TIMER_DEFERRED) {
        /* It came due in a nested run while this callback ran: back into
         * its heap (which has room: it was counted in), to fire at the next
         * pass, not the current one. */
        tk__heap_entry entry = loop->parked.entries[loop->positions[slot]];
        unplace(loop, slot, timer);
        entry.seq = loop->next_seq++;
        tk__heap_push(&loop->heaps[timer->clock], loop->positions, entry);
        timer->state = TK__TIMER_SCHEDULED;
        timer->placed_pass = loop->pass;
        /* The callback may have run under tk_loop_fire on another thread
         * while the loop, which set the timer aside, went to sleep without
         * it: it must wake for it (as for a timer scheduled from there). */
        note_deadline(loop, timer, entry.deadline);
        return;
    }
    if (timer->state != TK__TIMER_FIRING && timer->state != TK__TIMER_CANCELLED) return;
    tk_timer_fn fn = timer->fn;
    void *context = timer->context;
    int hold_ends = release_slot(loop, slot, timer);
    void *hold = loop->hold_context;
    release_context(loop, fn, context);
    if (hold_ends) release_hold(loop, hold);
}

int tk_loop_fire(tk_loop *loop, tk_timer_id id) {
    if (loop == NULL) return -EINVAL;
    pthread_mutex_lock(&loop->lock);
    uint32_t slot;
    tk__timer *timer = lookup(loop, id, &slot);
    if (timer == NULL || timer->state == TK__TIMER_FIRING) {
        pthread_mutex_unlock(&loop->lock);
        return -ENOENT;
    }
    tk_timer_fn fn = timer->fn;
    void *context = timer->context;
    timer->callbacks++;
    if (timer->interval == 0) {
        /* Done before its callback runs: the callback sees it gone. */
        withdraw(loop, slot, timer);
        void *unused;
        (void)let_go(loop, slot, timer, &unused); /* a callback is running: only goes stale */
    }
    loop->stats.fired++;
    loop->fire_calls++;
    pthread_mutex_unlock(&loop->lock);
    fn(loop, id, 0, context);
    pthread_mutex_lock(&loop->lock);
    finish_callback(loop, slot);
    loop->fire_calls--;
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

/* ---- Firing ------------------------------------------------------------- */

/* Puts back into their heaps the parked timers that `mode` runs. */
static void unpark(tk_loop *loop, unsigned mode) {
    tk_mode_set bit = TK_MODES(mode);
    if (!(loop->parked_modes & bit)) return;
    tk__heap *parked = &loop->parked;
    tk_mode_set remaining = 0;
    for (uint32_t index = 0; index < parked->count;) {
        tk__heap_entry entry = parked->entries[index];
        tk__timer *timer = timer_at(loop, entry.slot);
        if (timer->state != TK__TIMER_PARKED || !(timer->modes & bit)) {
            if (timer->state == TK__TIMER_PARKED) remaining |= timer->modes & TK_MODES_ALL;
            index++;
            continue;
        }
        parked->entries[index] = parked->entries[--parked->count];
        if (index < parked->count) loop->positions[parked->entries[index].slot] = index;
        tk__heap_push(&loop->heaps[timer->clock], loop->positions, entry);
        timer->state = TK__TIMER_SCHEDULED;
    }
    loop->parked_modes = remaining;
}

/* Puts every held timer back in heap order, with its deadline and seq: a
 * pass ends (they fire in a later one), or a nested pass begins (they were
 * placed before it, so it may fire them). Each counts as placed in the
 * latest pass, so that the next pass takes it even when the pass numbers
 * had wrapped around it. */
static void release_held(tk_loop *loop) {
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        tk__heap *heap = &loop->heaps[clock];
        for (uint32_t index = heap->count; index < heap->count + heap->held; index++) {
            tk__timer *timer = timer_at(loop, heap->entries[index].slot);
            timer->state = TK__TIMER_SCHEDULED;
            timer->placed_pass = loop->pass;
        }
        tk__heap_release_held(heap, loop->positions);
    }
}

int tk__timers_parked_in(tk_loop *loop, unsigned mode) {
    tk_mode_set bit = TK_MODES(mode);
    if (!(loop->parked_modes & bit)) return 0;
    /* A superset (cancelling a parked timer leaves its modes): recompute. */
    tk_mode_set modes = 0;
    for (uint32_t index = 0; index < loop->parked.count; index++) {
        const tk__timer *timer = timer_at(loop, loop->parked.entries[index].slot);
        if (timer->state == TK__TIMER_PARKED) modes |= timer->modes & TK_MODES_ALL;
    }
    loop->parked_modes = modes;
    return (modes & bit) != 0;
}

/* Moves a due timer from the top of its heap to `parked`, as TK__TIMER_PARKED
 * (waiting for one of its modes) or TK__TIMER_DEFERRED (waiting for its own
 * callback to return). -ENOMEM if `parked` cannot grow. */
static int park(tk_loop *loop, tk__heap *heap, uint8_t state) {
    tk__heap *parked = &loop->parked;
    /* Room for the mode's outsiders was made at the start of the pass, but a
     * nested run's callbacks may have added timers since, and deferred
     * timers need room of their own. */
    if (parked->count == parked->capacity && tk__heap_reserve(parked, parked->count + 1) < 0) {
        return -ENOMEM;
    }
    tk__heap_entry entry = heap->entries[0];
    tk__heap_remove(heap, loop->positions, 0);
    tk__timer *timer = timer_at(loop, entry.slot);
    uint32_t index = parked->count++;
    parked->entries[index] = entry;
    loop->positions[entry.slot] = index;
    if (state == TK__TIMER_PARKED) loop->parked_modes |= timer->modes & TK_MODES_ALL;
    timer->state = state;
    return 0;
}

/* The next deadline on a repeating timer's grid after `now`, and how many
 * grid points were skipped on the way. Exact over the whole int64 range (a
 * timer can be more than INT64_MAX late); a next deadline past INT64_MAX
 * saturates, which means never. In 64-bit arithmetic: the lateness, below
 * 2^64, is exact as unsigned; the last grid point passed, deadline +
 * skipped * interval, lies between `deadline` and `now`, so the product (at
 * most the lateness) and the sum cannot overflow; only adding the last
 * interval can. */
static int64_t next_on_grid(int64_t deadline, int64_t interval, int64_t now, uint64_t *missed) {
    uint64_t late = now > deadline ? (uint64_t)now - (uint64_t)deadline : 0;
    uint64_t skipped = late / (uint64_t)interval;
    *missed = skipped;
    int64_t next;
    if (__builtin_add_overflow(deadline, skipped * (uint64_t)interval, &next) ||
        __builtin_add_overflow(next, interval, &next)) {
        return INT64_MAX;
    }
    return next;
}

/* The clock whose due top entry comes next: the most overdue, then the
 * earliest scheduled. A timer that got its deadline during this pass
 * (`pass`: scheduled or put back by a callback, or re-armed by a nested
 * run's pass) fires in a later pass: a due top of that kind is held first,
 * out of the way of the due timers behind it, until the pass ends, so that
 * it neither fires nor hides them from the comparison. Pass numbers wrap: a
 * timer that waited 2^31 passes looks new for one (see release_held). */
static int next_due(tk_loop *loop, const int64_t now[TK_CLOCK_COUNT], uint32_t pass) {
    int best = -1;
    int64_t best_late = 0;
    uint32_t best_seq = 0;
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        tk__heap *heap = &loop->heaps[clock];
        const tk__heap_entry *top;
        /* INT64_MAX stands for a deadline beyond the clock's range: never. */
        while ((top = tk__heap_top(heap)) != NULL && top->deadline <= now[clock] &&
               top->deadline != INT64_MAX) {
            tk__timer *timer = timer_at(loop, top->slot);
            if ((int32_t)(timer->placed_pass - pass) < 0) break;
            tk__heap_hold_top(heap, loop->positions);
            timer->state = TK__TIMER_HELD;
        }
        if (top == NULL || top->deadline > now[clock] || top->deadline == INT64_MAX) continue;
        int64_t late = tk__sub_sat(now[clock], top->deadline);
        if (best < 0 || late > best_late ||
            (late == best_late && (int32_t)(top->seq - best_seq) < 0)) {
            best = clock;
            best_late = late;
            best_seq = top->seq;
        }
    }
    return best;
}

int64_t tk__timers_fire_due(tk_loop *loop, unsigned mode, const int64_t now[TK_CLOCK_COUNT],
                            int stoppable) {
    /* Parking never allocates: make room for every timer outside the mode. */
    uint32_t outside = (uint32_t)loop->stats.pending - loop->mode_timers[mode];
    if (outside > 0 && tk__heap_reserve(&loop->parked, outside) < 0) return -ENOMEM;

    /* Timers an outer pass set aside were placed before this one. */
    release_held(loop);
    unpark(loop, mode);
    uint32_t pass = ++loop->pass;
    tk_mode_set bit = TK_MODES(mode);
    int64_t fired = 0;
    int clock;
    while ((clock = next_due(loop, now, pass)) >= 0) {
        tk__heap *heap = &loop->heaps[clock];
        tk__heap_entry entry = heap->entries[0];
        uint32_t slot = entry.slot;
        tk__timer *timer = timer_at(loop, slot);
        /* A timer never fires while a callback of it runs (a nested run
         * called from it, or tk_loop_fire on another thread): it waits,
         * deferred, until that callback returns. Otherwise a due timer
         * outside the mode waits, parked, for a run in one of its modes. */
        uint8_t wait = timer->callbacks > 0     ? TK__TIMER_DEFERRED
                       : !(timer->modes & bit) ? TK__TIMER_PARKED
                                               : TK__TIMER_SCHEDULED;
        if (wait != TK__TIMER_SCHEDULED) {
            if (park(loop, heap, wait) < 0) {
                release_held(loop);
                return fired > 0 ? fired : -ENOMEM;
            }
            continue;
        }
        tk_timer_fn fn = timer->fn;
        void *context = timer->context;
        tk_timer_id id = make_id(loop, slot, *generation_at(loop, slot));
        uint64_t missed = 0;
        int one_shot = timer->interval == 0;
        if (one_shot) {
            tk__heap_remove(heap, loop->positions, 0);
            count_out(loop, timer);
            timer->state = TK__TIMER_FIRING;
        } else {
            /* Judged now, not at the start of the pass: a slow callback
             * earlier in the pass, or a nested run that moved a manual
             * loop's time, may have made this fire later by whole periods. */
            int64_t fired_at = now[clock];
            int64_t live = loop->manual ? loop->manual_now[clock] : tk__clock_read((tk_clock)clock);
            if (live > fired_at) fired_at = live;
            int64_t next = next_on_grid(entry.deadline, timer->interval, fired_at, &missed);
            tk__heap_update(heap, loop->positions, 0, next, loop->next_seq++);
            timer->placed_pass = loop->pass;
        }
        loop->stats.fired++;
        fired++;
        timer->callbacks++;
        pthread_mutex_unlock(&loop->lock);
        fn(loop, id, missed, context);
        pthread_mutex_lock(&loop->lock);
        finish_callback(loop, slot);
        /* A nested run in another mode parks the due timers of this one
         * that it meets: they are this pass's again. */
        if (loop->parked_modes & bit) unpark(loop, mode);
        if (stoppable && tk__stop_due(loop)) break;
    }
    release_held(loop);
    return fired;
}

/* ---- The wake-up target ------------------------------------------------- */

/* What the search below looks for: the earliest wake-up target, or the
 * earliest moment by which a timer must fire. */
enum tk__search { TK__SEARCH_WAKE, TK__SEARCH_DUE_BY };

static int64_t earliest(const tk_loop *loop, tk_clock clock, unsigned mode,
                        uint32_t visit_limit, enum tk__search search,
                        const int64_t *after, int64_t *precise_deadline) {
    const tk__heap *heap = &loop->heaps[clock];
    int64_t best = INT64_MAX;
    int64_t best_precise = INT64_MAX; /* the deadline of the precise timer giving `best` */
    if (precise_deadline != NULL) *precise_deadline = INT64_MAX;
    if (heap->count == 0) return INT64_MAX;
    const tk__heap_entry *entries = heap->entries;
    tk_mode_set bit = TK_MODES(mode);

    /* A precise timer's target is its deadline less the margin, so while one
     * is pending on this clock a subtree is pruned by its root deadline less
     * that. No timer must fire before its deadline. */
    int64_t reach = search == TK__SEARCH_WAKE && loop->precise_timers[clock] > 0 && !loop->manual
                        ? loop->precision_margin
                        : 0;

    /*
     * Depth-first over the heap, pruning every subtree whose root deadline
     * (less `reach`) is already no earlier than the best target: its timers'
     * targets (deadline + leeway, or deadline - margin; when they must fire
     * by, deadline + leeway or deadline) cannot be earlier. Unless `after`
     * is NULL, targets at or before `*after` do not count.
     * What is visited is, in the main, the timers that will fire at the
     * wake-up being chosen, so the search costs about as much as the firing
     * it plans. A 4-ary heap of at most 2^32 entries is 16 levels deep, and
     * the stack holds at most three siblings per level plus the children of
     * the node being expanded.
     */
    uint32_t stack[4 * 17];
    uint32_t depth = 0;
    uint32_t visits = 0;
    stack[depth++] = 0;
    while (depth > 0) {
        uint32_t index = stack[--depth];
        const tk__heap_entry *entry = &entries[index];
        if (tk__sub_sat(entry->deadline, reach) >= best) continue;
        if (visit_limit && ++visits > visit_limit) {
            /* Give up on exactness: wake at this deadline at the latest.
             * (Not its deadline less the margin: at that wake-up nothing
             * might be due, and the same search would plan it again. A
             * precise timer beyond the search may then start its spin late.) */
            if (entry->deadline < best && (after == NULL || entry->deadline > *after)) {
                best = entry->deadline;
                best_precise = INT64_MAX;
            }
            continue;
        }
        const tk__timer *timer = timer_at(loop, entry->slot);
        if (timer->modes & bit) {
            int64_t leeway = timer->leeway;
            /* A precise timer whose callback runs (this is a nested run)
             * will be set aside when due, not fired: no early wake-up. */
            if (leeway == TK__PRECISE && timer->callbacks > 0) leeway = 0;
            /* It must fire by its deadline + leeway, or, precise, by its
             * deadline. */
            int64_t target = search == TK__SEARCH_WAKE ? wake_time(loop, entry->deadline, leeway)
                             : leeway == TK__PRECISE  ? entry->deadline
                                                      : tk__add_sat(entry->deadline, leeway);
            if (target < best && (after == NULL || target > *after)) {
                best = target;
                best_precise = leeway == TK__PRECISE && !loop->manual ? entry->deadline : INT64_MAX;
            }
        }
        uint64_t first = (uint64_t)index * TK__HEAP_ARITY + 1;
        for (uint64_t child = first; child < first + TK__HEAP_ARITY && child < heap->count;
             child++) {
            if (tk__sub_sat(entries[child].deadline, reach) < best) stack[depth++] = (uint32_t)child;
        }
    }
    if (precise_deadline != NULL) *precise_deadline = best_precise;
    return best;
}

int64_t tk__timers_wake_target(const tk_loop *loop, tk_clock clock, unsigned mode,
                               uint32_t visit_limit, int64_t *precise_deadline) {
    return earliest(loop, clock, mode, visit_limit, TK__SEARCH_WAKE, NULL, precise_deadline);
}

int64_t tk__timers_wake_target_after(const tk_loop *loop, tk_clock clock, unsigned mode,
                                     int64_t after) {
    return earliest(loop, clock, mode, 0, TK__SEARCH_WAKE, &after, NULL);
}

int64_t tk__timers_due_by(const tk_loop *loop, tk_clock clock, unsigned mode,
                          uint32_t visit_limit) {
    return earliest(loop, clock, mode, visit_limit, TK__SEARCH_DUE_BY, NULL, NULL);
}
