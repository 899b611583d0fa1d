/*
 * A timer's record and its slot: what the loop keeps of each timer besides
 * its heap entry (loop_internal.h keeps them in the loop's table; heap.h
 * writes the copy of an entry's index that a record in the caller's memory
 * holds).
 */
#ifndef TK_TIMER_RECORD_H
#define TK_TIMER_RECORD_H

#include "CTimerCore.h"

#include <stddef.h>
#include <stdint.h>

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
/* A record in the caller's memory (tk_timer_record) is one of the caller's
 * objects, read and written here as a tk__timer: hence may_alias above. A
 * zeroed one is free. */
_Static_assert(TK__TIMER_FREE == 0, "a zeroed record is free");

/*
 * A record in the caller's memory: the timer's record, the loop that holds
 * it, and where its entry is. The loop (by its handle key, which no other
 * loop of the process has) and the record's slot name the timer without the
 * table, and `position` is a copy of positions[slot], which the heap writes
 * with it (see heap.h). That is how tk_loop_cancel_record finds the timer's
 * entry from the record alone, reading neither the slot's generation, nor
 * where its record is, nor its position: the record is in the object the
 * caller has just read, so that at a million pending timers the entry is
 * the one cache miss the cancel adds to the object's. `loop_key` is written when a loop schedules the
 * record and read only while the record is in use (its state is not FREE);
 * a zeroed record has none.
 */
typedef struct __attribute__((__may_alias__)) tk__caller_record {
    tk__timer timer;
    uint32_t loop_key;
    uint32_t position;
} tk__caller_record;

_Static_assert(sizeof(tk__caller_record) <= sizeof(tk_timer_record) &&
                   _Alignof(tk__caller_record) <= _Alignof(tk_timer_record),
               "a tk_timer_record holds a timer record, its loop and its position");
_Static_assert(offsetof(tk__caller_record, timer) == 0,
               "a caller's record is read as a timer record");

/*
 * What a slot holds besides its record and position, once the loop has
 * scheduled a timer with a record of the caller's: the generation its
 * handles carry, and where its record is: in the caller's memory
 * (tk_loop_schedule_record), NULL for the table's own, or, for a free slot,
 * a record that says it is free (see timer_at in timers.c). The heap reads
 * it to keep a record's copy of its position (see heap.h).
 */
typedef struct tk__slot {
    tk__timer *record;
    uint32_t generation;
} tk__slot;

#endif /* TK_TIMER_RECORD_H */
