/*
 * Numbers on the benchmarks' command lines, read as their usages write them:
 * decimal digits alone. strtol and strtoull also take a sign, leading white
 * space, and (in base 0) octal and hex, which no usage offers; atol and
 * atoi also ignore what follows the digits. Header-only; shared by
 * core_bench.c, precise_bench.c and soak.c.
 */
#ifndef TK_BENCH_DECIMAL_H
#define TK_BENCH_DECIMAL_H

#include <stdint.h>

/* `text` as a whole number in [low, high], written in decimal digits alone:
 * 0 and the number in `*out`, or -1 (`*out` unchanged). */
static inline int bench_decimal(const char *text, uint64_t low, uint64_t high, uint64_t *out) {
    if (text == NULL || text[0] == '\0') return -1;
    uint64_t value = 0;
    for (const char *c = text; *c != '\0'; c++) {
        if (*c < '0' || *c > '9') return -1;
        unsigned digit = (unsigned)(*c - '0');
        if (value > (UINT64_MAX - digit) / 10) return -1;
        value = value * 10 + digit;
    }
    if (value < low || value > high) return -1;
    *out = value;
    return 0;
}

#endif /* TK_BENCH_DECIMAL_H */
