/*
 * The watch table (see watch_table.h).
 */
#include "watch_table.h"

#include <errno.h>
#include <stdlib.h>

/* Below this the table does not shrink: it is cheap and avoids churn. */
#define MIN_CAPACITY 16u

static uint32_t home_of(uint32_t capacity, int fd) {
    /* Fibonacci hashing: neighbouring fds land far apart. */
    return (uint32_t)(((uint64_t)(uint32_t)fd * UINT64_C(0x9E3779B97F4A7C15)) >> 32) &
           (capacity - 1);
}

void tk__watch_table_init(tk__watch_table *table) {
    table->entries = NULL;
    table->capacity = 0;
    table->count = 0;
}

void tk__watch_table_free(tk__watch_table *table) {
    free(table->entries);
    tk__watch_table_init(table);
}

tk__watch *tk__watch_table_find(const tk__watch_table *table, int fd) {
    if (table->count == 0) return NULL;
    uint32_t mask = table->capacity - 1;
    for (uint32_t i = home_of(table->capacity, fd);; i = (i + 1) & mask) {
        tk__watch *entry = &table->entries[i];
        if (entry->fd == fd) return entry;
        if (entry->fd < 0) return NULL; /* never full: an empty entry ends every probe */
    }
}

/* Moves every watch into a new array of `capacity` entries. */
static int rehash(tk__watch_table *table, uint32_t capacity) {
    tk__watch *entries = malloc((size_t)capacity * sizeof *entries);
    if (entries == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < capacity; i++) entries[i].fd = -1;
    for (uint32_t old = 0; old < table->capacity; old++) {
        const tk__watch *watch = &table->entries[old];
        if (watch->fd < 0) continue;
        uint32_t i = home_of(capacity, watch->fd);
        while (entries[i].fd >= 0) i = (i + 1) & (capacity - 1);
        entries[i] = *watch;
    }
    free(table->entries);
    table->entries = entries;
    table->capacity = capacity;
    return 0;
}

int tk__watch_table_reserve(tk__watch_table *table) {
    if ((uint64_t)(table->count + 1) * 2 <= table->capacity) return 0;
    if (table->capacity >= UINT32_C(1) << 30) return -ENOMEM;
    return rehash(table, table->capacity ? table->capacity * 2 : MIN_CAPACITY);
}

tk__watch *tk__watch_table_insert(tk__watch_table *table, int fd) {
    uint32_t mask = table->capacity - 1;
    uint32_t i = home_of(table->capacity, fd);
    while (table->entries[i].fd >= 0) i = (i + 1) & mask;
    tk__watch *watch = &table->entries[i];
    watch->fd = fd;
    table->count++;
    return watch;
}

void tk__watch_table_remove(tk__watch_table *table, tk__watch *watch) {
    uint32_t mask = table->capacity - 1;
    uint32_t hole = (uint32_t)(watch - table->entries);
    table->entries[hole].fd = -1;
    table->count--;
    /* Backward shift: pull later entries of the probe run into the hole when
     * their home does not lie cyclically in (hole, here]. */
    for (uint32_t here = (hole + 1) & mask; table->entries[here].fd >= 0; here = (here + 1) & mask) {
        uint32_t home = home_of(table->capacity, table->entries[here].fd);
        if (((here - home) & mask) >= ((here - hole) & mask)) {
            table->entries[hole] = table->entries[here];
            table->entries[here].fd = -1;
            hole = here;
        }
    }
    /* Give memory back once mostly empty; if that cannot allocate, the
     * larger table simply stays. */
    if (table->capacity > MIN_CAPACITY && (uint64_t)table->count * 8 < table->capacity) {
        (void)rehash(table, table->capacity / 2);
    }
}
