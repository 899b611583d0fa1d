/*
 * Internal clock helpers shared by clock.c and the loop: the kernel clock ids
 * behind tk_clock, timespec conversion and saturating time arithmetic.
 */
#ifndef TK_CLOCK_H
#define TK_CLOCK_H

#include "CTimerCore.h"
#include "internal.h"

#include <stdint.h>
#include <time.h>

/* The kernel clock behind each tk_clock (clock.c). */
TK__INTERNAL extern const clockid_t tk__clock_ids[TK_CLOCK_COUNT];

/* A reading in nanoseconds, saturating: a wall clock set past April 2262
 * (or before 1677) reads INT64_MAX (INT64_MIN), not a wrapped value. */
static inline int64_t tk__timespec_to_ns(struct timespec ts) {
    int64_t ns;
    if (__builtin_mul_overflow((int64_t)ts.tv_sec, (int64_t)1000000000, &ns) ||
        __builtin_add_overflow(ns, (int64_t)ts.tv_nsec, &ns)) {
        return ts.tv_sec < 0 ? INT64_MIN : INT64_MAX;
    }
    return ns;
}

static inline struct timespec tk__ns_to_timespec(int64_t ns) {
    struct timespec ts;
    if (ns < 0) ns = 0;
    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

/* Reads a valid clock. clock_gettime cannot fail for these ids on Linux. */
static inline int64_t tk__clock_read(tk_clock clock) {
    struct timespec ts;
    clock_gettime(tk__clock_ids[clock], &ts);
    return tk__timespec_to_ns(ts);
}

/* a + b, saturating at INT64_MIN / INT64_MAX. */
static inline int64_t tk__add_sat(int64_t a, int64_t b) {
    int64_t sum;
    if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
    return sum;
}

/* a - b, saturating. */
static inline int64_t tk__sub_sat(int64_t a, int64_t b) {
    int64_t difference;
    if (__builtin_sub_overflow(a, b, &difference)) return b < 0 ? INT64_MAX : INT64_MIN;
    return difference;
}

#endif /* TK_CLOCK_H */
