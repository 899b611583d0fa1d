/*
 * Exact 128-bit integers for the tests' references, in ISO C: two 64-bit
 * limbs in two's complement, since __int128 is not C11 (-Wpedantic).
 *
 * Deliberately plain rather than fast: products by 32-bit halves, division
 * one bit at a time, so that a reference built on them computes differently
 * from the core's 64-bit overflow-checked arithmetic. Header-only.
 */
#ifndef TK_WIDE_INT_H
#define TK_WIDE_INT_H

#include <stdint.h>

/* Test arithmetic, not code under test: left out of libFuzzer's coverage. */
#if defined(__clang__)
#define WIDE_FN static inline __attribute__((no_sanitize("coverage")))
#else
#define WIDE_FN static inline
#endif

/* A signed 128-bit value: hi * 2^64 + lo, two's complement. */
typedef struct wide {
    uint64_t hi;
    uint64_t lo;
} wide;

WIDE_FN wide wide_from_u64(uint64_t v) {
    wide w = {0, v};
    return w;
}

WIDE_FN wide wide_from_i64(int64_t v) {
    wide w = {v < 0 ? UINT64_MAX : 0, (uint64_t)v};
    return w;
}

WIDE_FN int wide_is_negative(wide a) { return (int)(a.hi >> 63); }

WIDE_FN wide wide_add(wide a, wide b) {
    wide r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo);
    return r;
}

WIDE_FN wide wide_neg(wide a) {
    wide r = {~a.hi, ~a.lo};
    return wide_add(r, wide_from_u64(1));
}

WIDE_FN wide wide_sub(wide a, wide b) { return wide_add(a, wide_neg(b)); }

/* -1, 0 or 1 as a is below, equal to or above b (signed). */
WIDE_FN int wide_cmp(wide a, wide b) {
    int a_negative = wide_is_negative(a), b_negative = wide_is_negative(b);
    if (a_negative != b_negative) return a_negative ? -1 : 1;
    /* The same sign: two's complement values order as unsigned ones. */
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return 0;
}

/* The full product of two 64-bit values, from four 32-bit partial products. */
WIDE_FN wide wide_mul_64(uint64_t a, uint64_t b) {
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    wide r;
    r.lo = (middle << 32) | (p00 & 0xffffffffu);
    r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
    return r;
}

/* a * b for a non-negative `a`; exact while the product is below 2^127. */
WIDE_FN wide wide_mul_u64(wide a, uint64_t b) {
    wide r = wide_mul_64(a.lo, b);
    r.hi += a.hi * b;
    return r;
}

/* a / b, and a % b in *rem, for a non-negative `a` and b > 0: long division,
 * one bit at a time. */
WIDE_FN wide wide_div_u64(wide a, uint64_t b, uint64_t *rem) {
    wide q = {0, 0};
    uint64_t r = 0;
    for (int bit = 127; bit >= 0; bit--) {
        uint64_t next = bit >= 64 ? (a.hi >> (bit - 64)) & 1 : (a.lo >> bit) & 1;
        /* r < b <= 2^64 - 1, so 2r + next fits in 65 bits: track the carry. */
        int carry = (int)(r >> 63);
        r = (r << 1) | next;
        if (carry || r >= b) {
            r -= b;
            if (bit >= 64) q.hi |= UINT64_C(1) << (bit - 64);
            else q.lo |= UINT64_C(1) << bit;
        }
    }
    if (rem) *rem = r;
    return q;
}

/* The value clamped to [INT64_MIN, INT64_MAX]. */
WIDE_FN int64_t wide_clamp(wide a) {
    if (wide_cmp(a, wide_from_i64(INT64_MAX)) > 0) return INT64_MAX;
    if (wide_cmp(a, wide_from_i64(INT64_MIN)) < 0) return INT64_MIN;
    /* In range: lo holds the value in two's complement. */
    return a.lo <= (uint64_t)INT64_MAX ? (int64_t)a.lo : -(int64_t)~a.lo - 1;
}

/* The value as uint64; requires 0 <= a < 2^64. */
WIDE_FN uint64_t wide_to_u64(wide a) { return a.lo; }

#endif /* TK_WIDE_INT_H */
