/*
 * The one pseudo-random generator of the C tests and the core benchmark:
 * SplitMix64 (Steele, Lea and Flood, 2014). A 64-bit state; any value,
 * 0 included, is a good seed. Header-only.
 */
#ifndef TK_SPLITMIX64_H
#define TK_SPLITMIX64_H

#include <stdint.h>

/* The next number of the stream whose state is `*state`. */
static inline uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif /* TK_SPLITMIX64_H */
