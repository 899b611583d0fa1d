/*
 * The deadline heap: an array-backed 4-ary min-heap of (deadline, seq, slot)
 * entries. The deadline is cached in the entry, so sifting never touches the
 * timer records; `seq` breaks ties so that equal deadlines come out in the
 * order they went in. Every move writes the entry's index into
 * `positions[slot]`, which is how a timer finds itself for an O(log n) cancel.
 *
 * The heap never allocates on push: callers make room with tk__heap_reserve
 * first, so a failed allocation leaves the heap as it was.
 *
 * Entries can be held: taken out of heap order and kept in the same array,
 * right after the heap's own entries, until they are released back into
 * it. A pass holds the due timers it must not fire yet, so that it reaches
 * the ones behind them; holding needs no room beyond the entry's own.
 */
#ifndef TK_HEAP_H
#define TK_HEAP_H

#include "internal.h"

#include <stdint.h>

typedef struct tk__heap_entry {
    int64_t deadline;
    uint32_t seq;
    uint32_t slot;
} tk__heap_entry;

typedef struct tk__heap {
    tk__heap_entry *entries;
    uint32_t count;    /* entries in heap order: entries[0, count) */
    uint32_t held;     /* held entries, in no order: entries[count, count + held) */
    uint32_t capacity; /* count + held <= capacity */
} tk__heap;

/* The arity of the heap: children of i are 4i+1 .. 4i+4. */
#define TK__HEAP_ARITY 4

/* entries[0] sits this many entries into a 64-byte aligned block, so that the
 * four 16-byte children of any node share one cache line. */
#define TK__HEAP_OFFSET 3

/* True if `a` comes out before `b`: earlier deadline, then earlier seq. The
 * sequence numbers wrap, so they are compared as a signed 32-bit distance:
 * ties are ordered correctly between timers scheduled fewer than 2^31
 * schedules apart. */
static inline int tk__heap_entry_before(const tk__heap_entry *a,
                                        const tk__heap_entry *b) {
    if (a->deadline != b->deadline) return a->deadline < b->deadline;
    return (int32_t)(a->seq - b->seq) < 0;
}

TK__INTERNAL void tk__heap_init(tk__heap *heap);
TK__INTERNAL void tk__heap_free(tk__heap *heap);

/* Makes room for at least `capacity` entries, held ones included (grows by
 * doubling). 0 or -ENOMEM. */
TK__INTERNAL int tk__heap_reserve(tk__heap *heap, uint32_t capacity);

/* Adds `entry`; requires count + held < capacity. */
TK__INTERNAL void tk__heap_push(tk__heap *heap, uint32_t *positions, tk__heap_entry entry);

/* Removes the entry at `index`: one in heap order (< count) or a held one. */
TK__INTERNAL void tk__heap_remove(tk__heap *heap, uint32_t *positions, uint32_t index);

/* Holds the earliest entry; requires count > 0. */
TK__INTERNAL void tk__heap_hold_top(tk__heap *heap, uint32_t *positions);

/* Puts every held entry back in heap order. */
TK__INTERNAL void tk__heap_release_held(tk__heap *heap, uint32_t *positions);

/* Replaces the entry at `index` (same slot) with a new deadline and seq. */
TK__INTERNAL void tk__heap_update(tk__heap *heap, uint32_t *positions, uint32_t index,
                                  int64_t deadline, uint32_t seq);

/* Restores heap order over the entries in it (after bulk edits), in O(n). */
TK__INTERNAL void tk__heap_heapify(tk__heap *heap, uint32_t *positions);

/* The earliest entry, or NULL when empty. */
static inline const tk__heap_entry *tk__heap_top(const tk__heap *heap) {
    return heap->count ? &heap->entries[0] : 0;
}

#endif /* TK_HEAP_H */
