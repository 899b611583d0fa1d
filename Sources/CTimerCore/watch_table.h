/*
 * The watch table: the loop's watched file descriptors, found by fd.
 *
 * An open-addressing hash table with linear probing and backward-shift
 * deletion (no tombstones), at most half full. Its size follows the number of
 * watches, not the descriptors' numbers: watching fd 2^30 costs one entry,
 * like fd 3. It doubles when it would pass half full and halves, when it can
 * allocate, once an unwatch leaves it less than an eighth full, so memory
 * comes back.
 *
 * Growing happens only in tk__watch_table_reserve, which callers make before
 * an insert: a failed allocation leaves the table as it was.
 */
#ifndef TK_WATCH_TABLE_H
#define TK_WATCH_TABLE_H

#include "CTimerCore.h"
#include "internal.h"

#include <stdint.h>

/* A watched file descriptor (fd -1: an empty entry). */
typedef struct tk__watch {
    int fd;
    uint32_t events;
    uint32_t generation; /* tells this watch from earlier ones of the same fd */
    tk_io_fn fn;
    void *context;
} tk__watch;

typedef struct tk__watch_table {
    tk__watch *entries;
    uint32_t capacity; /* 0 or a power of two */
    uint32_t count;
} tk__watch_table;

TK__INTERNAL void tk__watch_table_init(tk__watch_table *table);
TK__INTERNAL void tk__watch_table_free(tk__watch_table *table);

/* The watch of `fd`, or NULL. */
TK__INTERNAL tk__watch *tk__watch_table_find(const tk__watch_table *table, int fd);

/* Makes room for one more watch. 0 or -ENOMEM (the table is unchanged). */
TK__INTERNAL int tk__watch_table_reserve(tk__watch_table *table);

/* Adds a watch of `fd`, which has none; room was reserved. Returns it, with
 * only `fd` set. */
TK__INTERNAL tk__watch *tk__watch_table_insert(tk__watch_table *table, int fd);

/* Removes `watch`, an entry of the table, and shrinks the table if it can. */
TK__INTERNAL void tk__watch_table_remove(tk__watch_table *table, tk__watch *watch);

#endif /* TK_WATCH_TABLE_H */
