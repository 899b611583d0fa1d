/*
 * The deadline heap (see heap.h): a 4-ary min-heap stored in one array.
 *
 * A 4-ary heap is shallower than a binary one (log4 n levels) and the four
 * children of a node sit next to each other, usually in one or two cache
 * lines, which is what makes sift-down cheap at a million entries. The layout
 * follows libev's 4-heap; the position write-back is how libuv and libev let a
 * timer be removed from the middle of the heap.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "heap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(tk__heap_entry) == 16, "four heap entries fill a 64-byte line");

enum { CACHE_LINE = 64 };

void tk__heap_init(tk__heap *heap) {
    heap->entries = NULL;
    heap->count = 0;
    heap->held = 0;
    heap->capacity = 0;
}

void tk__heap_free(tk__heap *heap) {
    if (heap->entries != NULL) free(heap->entries - TK__HEAP_OFFSET);
    tk__heap_init(heap);
}

int tk__heap_reserve(tk__heap *heap, uint32_t capacity) {
    if (capacity <= heap->capacity) return 0;
    uint64_t grown = heap->capacity ? (uint64_t)heap->capacity * 2 : 64;
    if (grown < capacity) grown = capacity;
    if (grown > UINT32_MAX - TK__HEAP_OFFSET) grown = UINT32_MAX - TK__HEAP_OFFSET;
    /* realloc keeps no alignment, so grow by copying into a new aligned block. */
    void *block;
    size_t bytes = (size_t)(grown + TK__HEAP_OFFSET) * sizeof(tk__heap_entry);
    if (posix_memalign(&block, CACHE_LINE, bytes) != 0) return -ENOMEM;
    tk__heap_entry *entries = (tk__heap_entry *)block + TK__HEAP_OFFSET;
    if (heap->entries != NULL) {
        memcpy(entries, heap->entries, (size_t)(heap->count + heap->held) * sizeof *entries);
        free(heap->entries - TK__HEAP_OFFSET);
    }
    heap->entries = entries;
    heap->capacity = (uint32_t)grown;
    return 0;
}

/* Moves `entry` up from the hole at `index` and stores it where it belongs. */
static void sift_up(tk__heap *heap, uint32_t *positions, uint32_t index,
                    tk__heap_entry entry) {
    tk__heap_entry *entries = heap->entries;
    while (index > 0) {
        uint32_t parent = (index - 1) / TK__HEAP_ARITY;
        if (!tk__heap_entry_before(&entry, &entries[parent])) break;
        entries[index] = entries[parent];
        positions[entries[index].slot] = index;
        index = parent;
    }
    entries[index] = entry;
    positions[entry.slot] = index;
}

/* Moves `entry` down from the hole at `index` and stores it where it belongs. */
static void sift_down(tk__heap *heap, uint32_t *positions, uint32_t index,
                      tk__heap_entry entry) {
    tk__heap_entry *entries = heap->entries;
    uint32_t count = heap->count;
    for (;;) {
        uint64_t first = (uint64_t)index * TK__HEAP_ARITY + 1;
        if (first >= count) break;
        uint32_t best = (uint32_t)first;
        uint32_t end = first + TK__HEAP_ARITY < count ? (uint32_t)first + TK__HEAP_ARITY : count;
        for (uint32_t child = best + 1; child < end; child++) {
            if (tk__heap_entry_before(&entries[child], &entries[best])) best = child;
        }
        if (!tk__heap_entry_before(&entries[best], &entry)) break;
        entries[index] = entries[best];
        positions[entries[index].slot] = index;
        index = best;
    }
    entries[index] = entry;
    positions[entry.slot] = index;
}

/* Puts `entry` at `index`, moving it up or down as its key requires. */
static void place(tk__heap *heap, uint32_t *positions, uint32_t index,
                  tk__heap_entry entry) {
    if (index > 0 &&
        tk__heap_entry_before(&entry, &heap->entries[(index - 1) / TK__HEAP_ARITY])) {
        sift_up(heap, positions, index, entry);
    } else {
        sift_down(heap, positions, index, entry);
    }
}

/* Moves the entry at `from` to `to`, writing its new index back. */
static void move_entry(tk__heap *heap, uint32_t *positions, uint32_t from, uint32_t to) {
    heap->entries[to] = heap->entries[from];
    positions[heap->entries[to].slot] = to;
}

void tk__heap_push(tk__heap *heap, uint32_t *positions, tk__heap_entry entry) {
    uint32_t index = heap->count++;
    /* The first held entry makes way, to the end of the held ones. */
    if (heap->held > 0) move_entry(heap, positions, index, index + heap->held);
    sift_up(heap, positions, index, entry);
}

void tk__heap_remove(tk__heap *heap, uint32_t *positions, uint32_t index) {
    if (index >= heap->count) {
        /* A held entry: the last held one takes its place. */
        uint32_t last_held = heap->count + --heap->held;
        if (index != last_held) move_entry(heap, positions, last_held, index);
        return;
    }
    uint32_t last = --heap->count;
    if (index != last) place(heap, positions, index, heap->entries[last]);
    /* The last held entry fills the gap the heap left before the held ones. */
    if (heap->held > 0) move_entry(heap, positions, last + heap->held, last);
}

void tk__heap_hold_top(tk__heap *heap, uint32_t *positions) {
    tk__heap_entry top = heap->entries[0];
    uint32_t last = --heap->count;
    if (last > 0) place(heap, positions, 0, heap->entries[last]);
    /* entries[last] is free: the held ones start there now. */
    heap->entries[last] = top;
    positions[top.slot] = last;
    heap->held++;
}

void tk__heap_release_held(tk__heap *heap, uint32_t *positions) {
    /* Each push takes the first held entry, where the heap grows into. */
    for (; heap->held > 0; heap->held--) {
        uint32_t index = heap->count++;
        sift_up(heap, positions, index, heap->entries[index]);
    }
}

void tk__heap_update(tk__heap *heap, uint32_t *positions, uint32_t index,
                     int64_t deadline, uint32_t seq) {
    tk__heap_entry entry = heap->entries[index];
    entry.deadline = deadline;
    entry.seq = seq;
    place(heap, positions, index, entry);
}

void tk__heap_heapify(tk__heap *heap, uint32_t *positions) {
    uint32_t count = heap->count;
    for (uint32_t i = 0; i < count; i++) positions[heap->entries[i].slot] = i;
    if (count < 2) return;
    for (uint32_t i = (count - 2) / TK__HEAP_ARITY + 1; i-- > 0;) {
        sift_down(heap, positions, i, heap->entries[i]);
    }
}
