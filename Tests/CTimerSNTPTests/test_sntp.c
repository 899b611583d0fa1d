/*
 * The SNTP client of CTimerSNTP.h, without any network but loopback and
 * without any NTP daemon:
 *
 *   - NTP timestamp <-> Unix nanoseconds: known values, exact round trip for
 *     random times and pivots up to 68 years apart, the era boundary of
 *     2036-02-07 06:28:16 UTC, the edges of the era window, -ERANGE;
 *   - packet encode/decode round trips, the client request;
 *   - every rejection of tk_sntp_parse_reply, one errno each;
 *   - tk_sntp_compute on exact synthetic exchanges (symmetric, asymmetric,
 *     random) with the true server time always within the error bound, a
 *     wall-clock step during the exchange, a server across the 2036 boundary,
 *     a local wall clock stuck in 1970;
 *   - tk_sntp_query against an in-process fake server on 127.0.0.1 (a UDP
 *     socket served by a thread that answers crafted replies, each after a
 *     chosen delay): a good server, every rejection, a spoofed datagram
 *     before the genuine reply, the best of several samples, late replies,
 *     silence (-ETIMEDOUT, never early), signals during the wait, nothing
 *     listening (-ECONNREFUSED), argument errors, IPv6 loopback if present;
 *   - host names: "localhost" through the real getaddrinfo (the server on
 *     127.0.0.1 only, so whatever order localhost's addresses come in);
 *     "nonexistent.invalid" (-ENXIO, or -EAGAIN/-ETIMEDOUT without DNS,
 *     never past the timeout); port 0 as 123; and, through a stand-in
 *     resolver (tk__sntp_set_resolver, sntp_internal.h), names with several
 *     addresses (refused, silent, answering badly, kissing, ::1 first,
 *     duplicates, more than TK_SNTP_MAX_ADDRESSES), each resolver error, a
 *     lookup slower than the timeout (and its list freed when it ends),
 *     signals during a lookup, and literals never reaching the resolver;
 *   - a local wall clock past April 2262 (clock_gettime is wrapped, on the
 *     querying thread only): read as INT64_MAX, never a wrapped reading;
 *   - datagrams to reject still coming when the timeout passes (recv is
 *     wrapped too): the query stops reading them.
 *
 * Usage: test_sntp [seed] [--only=NAME]     (or env TK_SEED)
 */
/* test link flags: -Wl,--wrap=clock_gettime -Wl,--wrap=recv */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerSNTP.h"
/* The resolver stand-in hook (not in the public header). */
#include "../../Sources/CTimerSNTP/sntp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define US 1000LL
#define MS 1000000LL
#define SEC 1000000000LL

/* 2036-02-07 06:28:16 UTC: NTP era 1 starts, in Unix seconds. */
#define ERA1_UNIX_SECONDS 2085978496LL
/* The end of the span tk_sntp_compute reads server times in: 2161. */
#define SPAN_END_NS (TK_SNTP_PIVOT_FLOOR_NS + 4294967296LL * SEC)

/* ------------------------------------------------------------------------
 * Bookkeeping
 * ------------------------------------------------------------------------ */

#include "test_harness.h"

/* A uniform value in [lo, hi]. */
static int64_t rng_range(int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    uint64_t r = span == 0 ? rng_next(&g_rng) : rng_next(&g_rng) % span;
    return (int64_t)((uint64_t)lo + r);
}

static int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static uint64_t ntp_of(int64_t unix_ns) {
    uint64_t ntp = 0;
    tk_ntp_from_unix_ns(unix_ns, &ntp);
    return ntp;
}

/* ------------------------------------------------------------------------
 * Timestamps
 * ------------------------------------------------------------------------ */

static void test_timestamp_known_values(void) {
    uint64_t ntp = 1;
    CHECK_EQ(tk_ntp_from_unix_ns(0, &ntp), 0);
    CHECK_EQ(ntp, (uint64_t)TK_NTP_UNIX_EPOCH_OFFSET << 32);
    CHECK_EQ(tk_ntp_from_unix_ns(0, NULL), -EINVAL);

    /* Fractions round to the nearest 2^-32 s: 999999999 ns is
     * 4294967291.7 units. */
    tk_ntp_from_unix_ns(999999999, &ntp);
    CHECK_EQ(ntp & 0xFFFFFFFFu, 4294967292u);
    tk_ntp_from_unix_ns(1, &ntp);
    CHECK_EQ(ntp & 0xFFFFFFFFu, 4u);
    /* Half a second is exactly 2^31 in the fraction. */
    tk_ntp_from_unix_ns(SEC / 2, &ntp);
    CHECK_EQ(ntp, ((uint64_t)TK_NTP_UNIX_EPOCH_OFFSET << 32) | 0x80000000u);

    /* The start of era 1 has seconds 0 again; one ns earlier is the last
     * second of era 0. */
    tk_ntp_from_unix_ns(ERA1_UNIX_SECONDS * SEC, &ntp);
    CHECK_EQ(ntp, 0);
    tk_ntp_from_unix_ns(ERA1_UNIX_SECONDS * SEC - 1, &ntp);
    CHECK_EQ(ntp >> 32, 0xFFFFFFFFu);
    CHECK_GE(ntp & 0xFFFFFFFFu, 0xFFFFFFFBu);

    /* 1900-01-01, the NTP prime epoch: seconds 0 of era 0. */
    tk_ntp_from_unix_ns(-TK_NTP_UNIX_EPOCH_OFFSET * SEC, &ntp);
    CHECK_EQ(ntp, 0);

    int64_t unix_ns = 0;
    int64_t pivot_2025 = TK_SNTP_PIVOT_FLOOR_NS;
    /* Seconds 0 read near 2025 is 2036 (era 1), near 1950 is 1900 (era 0). */
    CHECK_EQ(tk_ntp_to_unix_ns(0, pivot_2025, &unix_ns), 0);
    CHECK_EQ(unix_ns, ERA1_UNIX_SECONDS * SEC);
    CHECK_EQ(tk_ntp_to_unix_ns(0, -20LL * 365 * 86400 * SEC, &unix_ns), 0);
    CHECK_EQ(unix_ns, -TK_NTP_UNIX_EPOCH_OFFSET * SEC);
    /* The Unix epoch read near 2025 is still 1970 (55 years back). */
    CHECK_EQ(tk_ntp_to_unix_ns((uint64_t)TK_NTP_UNIX_EPOCH_OFFSET << 32, pivot_2025, &unix_ns), 0);
    CHECK_EQ(unix_ns, 0);
    CHECK_EQ(tk_ntp_to_unix_ns(0, 0, NULL), -EINVAL);

    /* The largest fraction rounds up into the next second. */
    CHECK_EQ(tk_ntp_to_unix_ns(((uint64_t)TK_NTP_UNIX_EPOCH_OFFSET << 32) | 0xFFFFFFFFu, 0,
                               &unix_ns),
             0);
    CHECK_EQ(unix_ns, SEC);

    CHECK_EQ(tk_ntp_short_to_ns(0), 0);
    CHECK_EQ(tk_ntp_short_to_ns(0x00010000u), SEC);
    CHECK_EQ(tk_ntp_short_to_ns(0x00008000u), SEC / 2);
    CHECK_EQ(tk_ntp_short_to_ns(1), 15259); /* 15258.789... rounded up */
    CHECK_EQ(tk_ntp_short_to_ns(0xFFFFFFFFu), 65535LL * SEC + 999984742LL);
}

/* unix -> NTP -> unix is exact for any time within 68 years of the pivot. */
static void test_timestamp_round_trip(void) {
    const int64_t max_distance = ((1LL << 31) - 2) * SEC;
    int ok = 1;
    for (int i = 0; i < 200000 && ok; i++) {
        int64_t unix_ns, pivot;
        switch (i % 4) {
        case 0: /* anywhere from 1800 to 2250 */
            unix_ns = rng_range(-5364662400LL * SEC, 8835984000LL * SEC);
            break;
        case 1: /* within a few seconds of the 2036 boundary */
            unix_ns = ERA1_UNIX_SECONDS * SEC + rng_range(-3 * SEC, 3 * SEC);
            break;
        case 2: /* within a few seconds of 1900 and of the Unix epoch */
            unix_ns = (rng_next(&g_rng) & 1 ? -TK_NTP_UNIX_EPOCH_OFFSET * SEC : 0) +
                      rng_range(-3 * SEC, 3 * SEC);
            break;
        default: /* whole seconds and fractions at the ends of a second */
            unix_ns = rng_range(-2000000000LL, 4000000000LL) * SEC +
                      (rng_next(&g_rng) & 1 ? rng_range(0, 3) : SEC - 1 - rng_range(0, 3));
            break;
        }
        int64_t distance = rng_range(-max_distance, max_distance);
        if (rng_next(&g_rng) % 8 == 0) distance = rng_range(-5 * SEC, 5 * SEC);
        if (__builtin_add_overflow(unix_ns, distance, &pivot)) pivot = unix_ns - distance;
        uint64_t ntp;
        int64_t back = 0;
        int rc1 = tk_ntp_from_unix_ns(unix_ns, &ntp);
        int rc2 = tk_ntp_to_unix_ns(ntp, pivot, &back);
        if (rc1 != 0 || rc2 != 0 || back != unix_ns) {
            PROPERTY_FAIL("round trip of %" PRId64 " with pivot %" PRId64 ": rc %d/%d, got %" PRId64,
                          unix_ns, pivot, rc1, rc2, back);
            ok = 0;
        }
        /* NTP -> unix -> NTP moves the fraction by at most 3 units (< 1 ns). */
        uint64_t again;
        tk_ntp_from_unix_ns(back, &again);
        if ((int64_t)(again - ntp) > 3 || (int64_t)(again - ntp) < -3) {
            PROPERTY_FAIL("NTP round trip of %016" PRIx64 ": %016" PRIx64, ntp, again);
            ok = 0;
        }
    }
    CHECK(ok);

    /* Random NTP timestamps (any era position): unix -> NTP -> unix of the
     * converted value is exact, and the result lies in the pivot's window. */
    ok = 1;
    for (int i = 0; i < 100000 && ok; i++) {
        uint64_t ntp = rng_next(&g_rng);
        int64_t pivot = rng_range(-7000000000LL * SEC, 7000000000LL * SEC);
        int64_t unix_ns;
        if (tk_ntp_to_unix_ns(ntp, pivot, &unix_ns) != 0) {
            PROPERTY_FAIL("tk_ntp_to_unix_ns(%016" PRIx64 ", %" PRId64 ") failed", ntp, pivot);
            ok = 0;
            break;
        }
        int64_t pivot_s = pivot / SEC - (pivot % SEC < 0 ? 1 : 0);
        int64_t s = unix_ns / SEC - (unix_ns % SEC < 0 ? 1 : 0);
        /* A fraction that rounds up to the next second may push s one past
         * the window's end. */
        if (s < pivot_s - (1LL << 31) || s > pivot_s + (1LL << 31)) {
            PROPERTY_FAIL("%016" PRIx64 " with pivot %" PRId64 " landed at %" PRId64, ntp, pivot,
                          unix_ns);
            ok = 0;
        }
        if ((uint32_t)((uint64_t)s + TK_NTP_UNIX_EPOCH_OFFSET) != (uint32_t)(ntp >> 32) &&
            (uint32_t)((uint64_t)s + TK_NTP_UNIX_EPOCH_OFFSET - 1) != (uint32_t)(ntp >> 32)) {
            PROPERTY_FAIL("%016" PRIx64 ": seconds of %" PRId64 " do not match", ntp, unix_ns);
            ok = 0;
        }
    }
    CHECK(ok);
}

/* The 2036 boundary, seen from pivots on both sides of it. */
static void test_timestamp_era_boundary(void) {
    const int64_t boundary = ERA1_UNIX_SECONDS * SEC;
    int ok = 1;
    for (int64_t delta = -2 * SEC; delta <= 2 * SEC && ok; delta += 250 * MS + 7) {
        int64_t t = boundary + delta;
        uint64_t ntp = ntp_of(t);
        uint32_t seconds = (uint32_t)(ntp >> 32);
        if ((delta < 0 && seconds < 0xFFFFFFFDu) || (delta >= 0 && seconds > 2)) {
            PROPERTY_FAIL("seconds field %u for boundary%+" PRId64, seconds, delta);
            ok = 0;
        }
        const int64_t pivots[] = {
            TK_SNTP_PIVOT_FLOOR_NS,                       /* 2025 */
            boundary - 1,                                 /* just before */
            boundary,                                     /* at */
            boundary + 40LL * 365 * 86400 * SEC,          /* 2076 */
            boundary - 60LL * 365 * 86400 * SEC,          /* 1976 */
        };
        for (size_t i = 0; i < sizeof pivots / sizeof pivots[0]; i++) {
            int64_t back;
            if (tk_ntp_to_unix_ns(ntp, pivots[i], &back) != 0 || back != t) {
                PROPERTY_FAIL("boundary%+" PRId64 " with pivot %zu", delta, i);
                ok = 0;
            }
        }
    }
    CHECK(ok);
}

/* The era window is [pivot_s - 2^31, pivot_s + 2^31). */
static void test_timestamp_window_edges(void) {
    int64_t pivot_s = 1800000000LL; /* 2027 */
    int64_t pivot = pivot_s * SEC + 123456789;
    int64_t out;
    int64_t last_inside = (pivot_s + (1LL << 31) - 1) * SEC;
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(last_inside), pivot, &out), 0);
    CHECK_EQ(out, last_inside);
    int64_t first_outside = (pivot_s + (1LL << 31)) * SEC;
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(first_outside), pivot, &out), 0);
    CHECK_EQ(out, first_outside - (1LL << 32) * SEC);
    int64_t first_inside = (pivot_s - (1LL << 31)) * SEC;
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(first_inside), pivot, &out), 0);
    CHECK_EQ(out, first_inside);
    int64_t just_before = first_inside - 1;
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(just_before), pivot, &out), 0);
    CHECK_EQ(out, just_before + (1LL << 32) * SEC);

    /* Near the ends of int64_t nanoseconds (1677 and 2262). */
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(INT64_MAX), INT64_MAX, &out), 0);
    CHECK_EQ(out, INT64_MAX);
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(INT64_MAX) + (1ULL << 32), INT64_MAX, &out), -ERANGE);
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(INT64_MIN), INT64_MIN, &out), 0);
    CHECK_EQ(out, INT64_MIN);
    CHECK_EQ(tk_ntp_to_unix_ns(ntp_of(INT64_MIN) - (1ULL << 32), INT64_MIN, &out), -ERANGE);
}

/* ------------------------------------------------------------------------
 * Packets
 * ------------------------------------------------------------------------ */

static int packets_equal(const tk_sntp_packet *a, const tk_sntp_packet *b) {
    return a->leap == b->leap && a->version == b->version && a->mode == b->mode &&
           a->stratum == b->stratum && a->poll == b->poll && a->precision == b->precision &&
           a->root_delay == b->root_delay && a->root_dispersion == b->root_dispersion &&
           a->reference_id == b->reference_id && a->reference_time == b->reference_time &&
           a->origin_time == b->origin_time && a->receive_time == b->receive_time &&
           a->transmit_time == b->transmit_time;
}

static void test_packet_round_trip(void) {
    int ok = 1;
    for (int i = 0; i < 20000 && ok; i++) {
        uint8_t bytes[TK_SNTP_PACKET_SIZE], again[TK_SNTP_PACKET_SIZE];
        for (size_t j = 0; j < sizeof bytes; j++) bytes[j] = (uint8_t)rng_next(&g_rng);
        tk_sntp_packet packet, packet2;
        if (tk_sntp_decode(bytes, sizeof bytes, &packet) != 0 ||
            tk_sntp_encode(&packet, again, sizeof again) != 0 ||
            memcmp(bytes, again, sizeof bytes) != 0 ||
            tk_sntp_decode(again, sizeof again, &packet2) != 0 || !packets_equal(&packet, &packet2)) {
            PROPERTY_FAIL("packet round trip, case %d", i);
            ok = 0;
        }
    }
    CHECK(ok);

    /* Network byte order, field by field. */
    tk_sntp_packet p;
    memset(&p, 0, sizeof p);
    p.leap = 1;
    p.version = 4;
    p.mode = 4;
    p.stratum = 2;
    p.poll = -6;
    p.precision = -20;
    p.root_delay = 0x01020304u;
    p.root_dispersion = 0x05060708u;
    p.reference_id = 0x7F000001u;
    p.transmit_time = 0x1122334455667788ull;
    uint8_t out[64];
    CHECK_EQ(tk_sntp_encode(&p, out, sizeof out), 0);
    CHECK_EQ(out[0], (1 << 6) | (4 << 3) | 4);
    CHECK_EQ(out[1], 2);
    CHECK_EQ((int8_t)out[2], -6);
    CHECK_EQ((int8_t)out[3], -20);
    CHECK_EQ(out[4], 0x01);
    CHECK_EQ(out[7], 0x04);
    CHECK_EQ(out[12], 0x7F);
    CHECK_EQ(out[40], 0x11);
    CHECK_EQ(out[47], 0x88);

    CHECK_EQ(tk_sntp_encode(&p, out, 47), -EMSGSIZE);
    CHECK_EQ(tk_sntp_encode(NULL, out, 48), -EINVAL);
    CHECK_EQ(tk_sntp_encode(&p, NULL, 48), -EINVAL);
    p.leap = 4;
    CHECK_EQ(tk_sntp_encode(&p, out, 48), -EINVAL);
    p.leap = 0;
    p.mode = 8;
    CHECK_EQ(tk_sntp_encode(&p, out, 48), -EINVAL);
    CHECK_EQ(tk_sntp_decode(out, 47, &p), -EMSGSIZE);
    CHECK_EQ(tk_sntp_decode(NULL, 48, &p), -EINVAL);
    CHECK_EQ(tk_sntp_decode(out, 48, NULL), -EINVAL);
}

static void test_request(void) {
    uint8_t buffer[TK_SNTP_PACKET_SIZE];
    uint64_t nonce = 0;
    CHECK_EQ(tk_sntp_build_request(buffer, sizeof buffer, &nonce), 0);
    tk_sntp_packet request;
    CHECK_EQ(tk_sntp_decode(buffer, sizeof buffer, &request), 0);
    CHECK_EQ(request.mode, TK_SNTP_MODE_CLIENT);
    CHECK_EQ(request.version, 4);
    CHECK_EQ(request.leap, 0);
    CHECK_EQ(request.stratum, 0);
    CHECK_EQ(request.root_delay | request.root_dispersion | request.reference_id, 0);
    CHECK_EQ(request.reference_time | request.origin_time | request.receive_time, 0);
    CHECK(request.transmit_time != 0);
    CHECK_EQ(request.transmit_time, nonce);

    /* Nonces do not repeat (a collision among 4096 random 64-bit values has
     * probability below 1e-12). */
    enum { N = 4096 };
    static uint64_t seen[N];
    int unique = 1;
    for (int i = 0; i < N; i++) {
        tk_sntp_build_request(buffer, sizeof buffer, &seen[i]);
        if (seen[i] == 0) unique = 0;
        for (int j = 0; j < i && unique; j++) {
            if (seen[j] == seen[i]) unique = 0;
        }
    }
    CHECK(unique);
    CHECK_EQ(tk_sntp_build_request(buffer, 47, &nonce), -EMSGSIZE);
    CHECK_EQ(tk_sntp_build_request(NULL, 48, &nonce), -EINVAL);
    CHECK_EQ(tk_sntp_build_request(buffer, 48, NULL), -EINVAL);
}

/* A valid reply to `nonce`, server time `server_ns`. */
static tk_sntp_packet good_packet(uint64_t nonce, int64_t server_ns) {
    tk_sntp_packet p;
    memset(&p, 0, sizeof p);
    p.leap = 0;
    p.version = 4;
    p.mode = TK_SNTP_MODE_SERVER;
    p.stratum = 2;
    p.poll = 4;
    p.precision = -20;
    p.root_delay = 0x00000100u;
    p.root_dispersion = 0x00000200u;
    p.reference_id = 0x7F7F0001u;
    p.reference_time = ntp_of(server_ns - 16 * SEC);
    p.origin_time = nonce;
    p.receive_time = ntp_of(server_ns);
    p.transmit_time = ntp_of(server_ns + 20 * US);
    return p;
}

static uint32_t code_of(const char *text) {
    return ((uint32_t)(uint8_t)text[0] << 24) | ((uint32_t)(uint8_t)text[1] << 16) |
           ((uint32_t)(uint8_t)text[2] << 8) | (uint8_t)text[3];
}

static int parse(const tk_sntp_packet *p, uint64_t nonce, size_t size, tk_sntp_packet *out) {
    uint8_t bytes[128];
    memset(bytes, 0xA5, sizeof bytes);
    tk_sntp_encode(p, bytes, sizeof bytes);
    return tk_sntp_parse_reply(bytes, size, nonce, out);
}

static void test_parse_rejections(void) {
    const uint64_t nonce = 0x0123456789ABCDEFull;
    const int64_t server = TK_SNTP_PIVOT_FLOOR_NS + 1000 * SEC;
    tk_sntp_packet p = good_packet(nonce, server), out;

    CHECK_EQ(parse(&p, nonce, 48, &out), 0);
    CHECK(packets_equal(&p, &out));
    CHECK_EQ(parse(&p, nonce, 128, &out), 0); /* extension fields are ignored */
    p.version = 3;
    CHECK_EQ(parse(&p, nonce, 48, &out), 0);
    p.stratum = 15;
    CHECK_EQ(parse(&p, nonce, 48, &out), 0);
    p.stratum = 1;
    p.leap = 1; /* a leap second announced is fine */
    CHECK_EQ(parse(&p, nonce, 48, &out), 0);
    p.transmit_time = p.receive_time; /* zero processing time is fine */
    CHECK_EQ(parse(&p, nonce, 48, &out), 0);

    /* Short. */
    p = good_packet(nonce, server);
    CHECK_EQ(parse(&p, nonce, 47, &out), -EMSGSIZE);
    CHECK_EQ(parse(&p, nonce, 0, &out), -EMSGSIZE);
    /* Spoofed (origin is not our nonce), also a spoofed kiss-of-death. */
    CHECK_EQ(parse(&p, nonce + 1, 48, &out), -ENOMSG);
    p.origin_time = 0;
    CHECK_EQ(parse(&p, nonce, 48, &out), -ENOMSG);
    p = good_packet(nonce ^ 0x8000, server);
    p.stratum = 0;
    p.reference_id = code_of("DENY");
    CHECK_EQ(parse(&p, nonce, 48, &out), -ENOMSG);
    /* Wrong mode. */
    const uint8_t bad_modes[] = {0, 1, 2, 3, 5, 6, 7};
    for (size_t i = 0; i < sizeof bad_modes; i++) {
        p = good_packet(nonce, server);
        p.mode = bad_modes[i];
        CHECK_EQ(parse(&p, nonce, 48, &out), -EPROTO);
    }
    /* Unsupported version. */
    const uint8_t bad_versions[] = {0, 1, 2, 5, 6, 7};
    for (size_t i = 0; i < sizeof bad_versions; i++) {
        p = good_packet(nonce, server);
        p.version = bad_versions[i];
        CHECK_EQ(parse(&p, nonce, 48, &out), -EPROTONOSUPPORT);
    }
    /* Kiss-of-death, with and without the unsynchronised leap indicator
     * that RFC 5905 puts on it. */
    const char *codes[] = {"RATE", "DENY", "RSTR", "INIT"};
    for (size_t i = 0; i < 4; i++) {
        p = good_packet(nonce, server);
        p.stratum = 0;
        p.leap = (uint8_t)(i % 2 ? 3 : 0);
        p.reference_id = code_of(codes[i]);
        CHECK_EQ(parse(&p, nonce, 48, &out), -EACCES);
        char code[5] = "xxxx";
        CHECK_EQ(tk_sntp_kiss_code(&out, code), 0);
        CHECK(strcmp(code, codes[i]) == 0);
    }
    p.reference_id = 0x52000A7Fu; /* 'R', NUL, LF, DEL */
    char code[5];
    CHECK_EQ(tk_sntp_kiss_code(&p, code), 0);
    CHECK(strcmp(code, "R???") == 0);
    p.stratum = 1;
    CHECK_EQ(tk_sntp_kiss_code(&p, code), -EINVAL);
    CHECK_EQ(tk_sntp_kiss_code(NULL, code), -EINVAL);
    /* Unsynchronised server. */
    p = good_packet(nonce, server);
    p.leap = 3;
    CHECK_EQ(parse(&p, nonce, 48, &out), -ENODATA);
    /* Stratum out of range. */
    const uint8_t bad_strata[] = {16, 17, 200, 255};
    for (size_t i = 0; i < sizeof bad_strata; i++) {
        p = good_packet(nonce, server);
        p.stratum = bad_strata[i];
        CHECK_EQ(parse(&p, nonce, 48, &out), -ERANGE);
    }
    /* Zero transmit time; transmit before receive. */
    p = good_packet(nonce, server);
    p.transmit_time = 0;
    CHECK_EQ(parse(&p, nonce, 48, &out), -EBADMSG);
    p = good_packet(nonce, server);
    p.transmit_time = p.receive_time - 1;
    CHECK_EQ(parse(&p, nonce, 48, &out), -EBADMSG);
    /* Transmit after receive across the 2036 wrap is fine. */
    p = good_packet(nonce, ERA1_UNIX_SECONDS * SEC - 10 * US);
    CHECK(p.transmit_time < p.receive_time);
    CHECK_EQ(parse(&p, nonce, 48, &out), 0);
    /* Arguments. */
    uint8_t bytes[48] = {0};
    CHECK_EQ(tk_sntp_parse_reply(NULL, 48, nonce, &out), -EINVAL);
    CHECK_EQ(tk_sntp_parse_reply(bytes, 48, nonce, NULL), -EINVAL);
    CHECK_EQ(tk_sntp_parse_reply(bytes, 48, 0, &out), -EINVAL);
}

/* ------------------------------------------------------------------------
 * Computing
 * ------------------------------------------------------------------------ */

/* A synthetic exchange: local boot and wall clocks, a server at `offset` from
 * the local wall clock, the request taking `out` to arrive, the server
 * holding it `hold`, the reply taking `back`. */
typedef struct exchange {
    int64_t t1_boot, t1_wall;
    int64_t offset, out, hold, back;
    int64_t wall_step; /* the local wall clock stepped by this during the exchange */
} exchange;

static int run_exchange(const exchange *x, const tk_sntp_packet *header, tk_sntp_result *r,
                        int64_t *true_server_at_t4) {
    int64_t t2 = x->t1_wall + x->out + x->offset;
    int64_t t3 = t2 + x->hold;
    int64_t t4_boot = x->t1_boot + x->out + x->hold + x->back;
    int64_t t4_wall = x->t1_wall + x->out + x->hold + x->back + x->wall_step;
    tk_sntp_packet p = *header;
    p.receive_time = ntp_of(t2);
    p.transmit_time = ntp_of(t3);
    *true_server_at_t4 = t3 + x->back;
    return tk_sntp_compute(&p, x->t1_boot, x->t1_wall, t4_boot, t4_wall, r);
}

static void test_compute_exact(void) {
    tk_sntp_packet header = good_packet(1, 0);
    header.root_delay = 0x00000CCDu;      /* 50 ms */
    header.root_dispersion = 0x0000051Fu; /* 20 ms */
    header.precision = -20;
    exchange x = {.t1_boot = 1000 * SEC,
                  .t1_wall = TK_SNTP_PIVOT_FLOOR_NS + 5LL * 365 * 86400 * SEC,
                  .offset = 3600 * SEC + 123456789,
                  .out = 5 * MS,
                  .hold = 1 * MS,
                  .back = 5 * MS};
    tk_sntp_result r;
    int64_t truth;
    CHECK_EQ(run_exchange(&x, &header, &r, &truth), 0);
    CHECK_EQ(r.delay_ns, 10 * MS);
    CHECK_EQ(r.server_time_ns, truth);
    CHECK_EQ(r.offset_ns, x.offset);
    CHECK_EQ(r.server_time_ns - r.receive_wall_ns, r.offset_ns);
    CHECK_EQ(r.server_receive_ns, x.t1_wall + x.out + x.offset);
    CHECK_EQ(r.server_transmit_ns - r.server_receive_ns, x.hold);
    CHECK_EQ(r.send_boot_ns, x.t1_boot);
    CHECK_EQ(r.receive_boot_ns, x.t1_boot + 11 * MS);
    CHECK_EQ(r.root_delay_ns, tk_ntp_short_to_ns(0x00000CCDu));
    CHECK_EQ(r.root_dispersion_ns, tk_ntp_short_to_ns(0x0000051Fu));
    CHECK_EQ(r.precision_ns, 954); /* 2^-20 s = 953.67 ns, rounded up */
    /* delay/2 + root delay/2 + root dispersion + precision + 15 ppm of 11 ms */
    int64_t expected_error = 5 * MS + (r.root_delay_ns + 1) / 2 + r.root_dispersion_ns + 954 + 165;
    CHECK_EQ(r.error_ns, expected_error);
    CHECK_EQ(r.stratum, 2);
    CHECK_EQ(r.reference_id, header.reference_id);

    /* Asymmetric path: off by half the asymmetry, still within the bound. */
    x.out = 9 * MS;
    x.back = 1 * MS;
    CHECK_EQ(run_exchange(&x, &header, &r, &truth), 0);
    CHECK_EQ(r.delay_ns, 10 * MS);
    CHECK_EQ(r.server_time_ns - truth, 4 * MS);
    CHECK_LE(llabs(r.server_time_ns - truth), r.error_ns);

    /* The wall clock stepped back an hour between T1 and T4: delay and
     * server time do not move; the offset is against the new wall time. */
    x.out = 5 * MS;
    x.back = 5 * MS;
    x.wall_step = -3600 * SEC;
    CHECK_EQ(run_exchange(&x, &header, &r, &truth), 0);
    CHECK_EQ(r.delay_ns, 10 * MS);
    CHECK_EQ(r.server_time_ns, truth);
    CHECK_EQ(r.offset_ns, x.offset + 3600 * SEC);

    /* A local wall clock stuck in 1970 (pivot floor): the server's 2030 is
     * still read in the right era. */
    x.wall_step = 0;
    x.t1_wall = 12 * SEC;
    x.offset = TK_SNTP_PIVOT_FLOOR_NS + 5LL * 365 * 86400 * SEC;
    CHECK_EQ(run_exchange(&x, &header, &r, &truth), 0);
    CHECK_EQ(r.server_time_ns, truth);

    /* A wall clock set decades or centuries off, either way, up to the ends
     * of int64_t: the server's time is read the same, from 2025 to 2161
     * (the wall clock used to choose the era: 70 years ahead read the
     * server 136 years late, and the ends failed with -ERANGE). The offset
     * is held at the ends of int64_t where it does not fit. */
    const int64_t year = 365LL * 86400 * SEC;
    const int64_t servers[] = {TK_SNTP_PIVOT_FLOOR_NS + SEC, TK_SNTP_PIVOT_FLOOR_NS + year,
                               ERA1_UNIX_SECONDS * SEC + year, SPAN_END_NS - 10 * SEC};
    const int64_t walls[] = {INT64_MIN, -290 * year, 0, TK_SNTP_PIVOT_FLOOR_NS + 70 * year,
                             TK_SNTP_PIVOT_FLOOR_NS + 140 * year, INT64_MAX - 10 * SEC};
    for (size_t s = 0; s < sizeof servers / sizeof servers[0]; s++) {
        for (size_t w = 0; w < sizeof walls / sizeof walls[0]; w++) {
            tk_sntp_packet q = header;
            q.receive_time = ntp_of(servers[s]);
            q.transmit_time = ntp_of(servers[s] + MS);
            CHECK_EQ(tk_sntp_compute(&q, 0, walls[w], 4 * MS, walls[w] + 4 * MS, &r), 0);
            CHECK_EQ(r.server_receive_ns, servers[s]);
            CHECK_EQ(r.server_time_ns, servers[s] + MS + 3 * MS / 2);
            int64_t offset;
            if (__builtin_sub_overflow(r.server_time_ns, walls[w] + 4 * MS, &offset)) {
                offset = walls[w] < 0 ? INT64_MAX : INT64_MIN;
            }
            CHECK_EQ(r.offset_ns, offset);
        }
    }

    /* A server across the 2036 boundary: T2 in era 0, T3 in era 1. */
    x.t1_wall = TK_SNTP_PIVOT_FLOOR_NS;
    x.offset = ERA1_UNIX_SECONDS * SEC - x.t1_wall - x.out - 300 * US;
    x.hold = 1 * MS;
    CHECK_EQ(run_exchange(&x, &header, &r, &truth), 0);
    CHECK_LT(r.server_receive_ns, ERA1_UNIX_SECONDS * SEC);
    CHECK_GE(r.server_transmit_ns, ERA1_UNIX_SECONDS * SEC);
    CHECK_EQ(r.delay_ns, 10 * MS);
    CHECK_EQ(r.server_time_ns, truth);

    /* Errors. */
    x = (exchange){.t1_boot = 1000 * SEC, .t1_wall = TK_SNTP_PIVOT_FLOOR_NS, .out = MS,
                   .hold = MS, .back = MS};
    tk_sntp_packet p = header;
    p.receive_time = ntp_of(x.t1_wall);
    p.transmit_time = ntp_of(x.t1_wall + 10 * MS); /* held longer than the round trip */
    CHECK_EQ(tk_sntp_compute(&p, x.t1_boot, x.t1_wall, x.t1_boot + 3 * MS, x.t1_wall, &r),
             -EBADMSG);
    p.transmit_time = ntp_of(x.t1_wall - 1); /* transmit before receive */
    CHECK_EQ(tk_sntp_compute(&p, x.t1_boot, x.t1_wall, x.t1_boot + 3 * MS, x.t1_wall, &r),
             -EBADMSG);
    p.transmit_time = p.receive_time;
    CHECK_EQ(tk_sntp_compute(&p, x.t1_boot, x.t1_wall, x.t1_boot - 1, x.t1_wall, &r), -EINVAL);
    CHECK_EQ(tk_sntp_compute(&p, -1, x.t1_wall, 5, x.t1_wall, &r), -EINVAL);
    CHECK_EQ(tk_sntp_compute(NULL, 0, 0, 0, 0, &r), -EINVAL);
    CHECK_EQ(tk_sntp_compute(&p, 0, 0, 0, 0, NULL), -EINVAL);
    /* A server time past int64_t: a server at the end of the span (2161)
     * and a round trip of 292 years on the boot clock. An error leaves the
     * result as it was. */
    p.receive_time = ntp_of(SPAN_END_NS - SEC);
    p.transmit_time = p.receive_time;
    tk_sntp_result before;
    memset(&before, 0xA5, sizeof before);
    r = before;
    CHECK_EQ(tk_sntp_compute(&p, 0, TK_SNTP_PIVOT_FLOOR_NS, INT64_MAX, TK_SNTP_PIVOT_FLOOR_NS, &r),
             -EOVERFLOW);
    CHECK(memcmp(&r, &before, sizeof r) == 0);

    /* A precision of 2^34 s or more (up to 2^127 s) holds the precision and
     * the error bound at INT64_MAX: a bound that never understates, not an
     * overflow. */
    p = header;
    p.receive_time = ntp_of(TK_SNTP_PIVOT_FLOOR_NS);
    p.transmit_time = p.receive_time;
    int8_t precisions[] = {33, 34, 62, 127};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        p.precision = precisions[i];
        CHECK_EQ(tk_sntp_compute(&p, 0, TK_SNTP_PIVOT_FLOOR_NS, 1000, TK_SNTP_PIVOT_FLOOR_NS, &r), 0);
        int64_t expected = precisions[i] == 33 ? (INT64_C(1000000000) << 33) : INT64_MAX;
        CHECK_EQ(r.precision_ns, expected);
        CHECK(r.error_ns >= expected);
        CHECK_EQ(r.server_time_ns, TK_SNTP_PIVOT_FLOOR_NS + 500);
    }
}

/* Random exchanges: the true server time at T4 is always within the bound,
 * and the delay is exactly the time spent on the wire. */
static void test_compute_random(void) {
    int ok = 1;
    for (int i = 0; i < 100000 && ok; i++) {
        tk_sntp_packet header = good_packet(1, 0);
        header.root_delay = (uint32_t)rng_range(0, 0x00020000);
        header.root_dispersion = (uint32_t)rng_range(0, 0x00020000);
        header.precision = (int8_t)rng_range(-32, 0);
        /* A server anywhere in the span that replies are read in (from
         * 2025 to 2161), and a wall clock near it or anywhere from 1875 to
         * 2065: the wall clock has no say in the server's time. */
        int64_t server = rng_range(TK_SNTP_PIVOT_FLOOR_NS + 100 * SEC, SPAN_END_NS - 100 * SEC);
        int64_t wall = rng_next(&g_rng) % 2 == 0
                           ? server + rng_range(-10LL * 365 * 86400 * SEC, 10LL * 365 * 86400 * SEC)
                           : rng_range(-3000000000LL * SEC, 3000000000LL * SEC);
        exchange x = {
            .t1_boot = rng_range(0, 400LL * 86400 * SEC),
            .t1_wall = wall,
            .offset = server - wall,
            .out = rng_range(0, 2 * SEC),
            .hold = rng_range(0, SEC),
            .back = rng_range(0, 2 * SEC),
            .wall_step = rng_next(&g_rng) % 4 == 0 ? rng_range(-86400 * SEC, 86400 * SEC) : 0,
        };
        if (rng_next(&g_rng) % 3 == 0) { /* tiny, realistic delays */
            x.out = rng_range(0, 200 * US);
            x.back = rng_range(0, 200 * US);
            x.hold = rng_range(0, 50 * US);
        }
        tk_sntp_result r;
        int64_t truth;
        int rc = run_exchange(&x, &header, &r, &truth);
        if (rc != 0) {
            PROPERTY_FAIL("case %d: compute returned %d", i, rc);
            ok = 0;
            break;
        }
        int64_t error = r.server_time_ns - truth;
        if (r.delay_ns != x.out + x.back || llabs(error) > r.error_ns ||
            llabs(error) > (x.out > x.back ? x.out - x.back : x.back - x.out) / 2 + 1 ||
            r.offset_ns != r.server_time_ns - r.receive_wall_ns || r.error_ns < r.delay_ns / 2) {
            PROPERTY_FAIL("case %d: delay %" PRId64 " (want %" PRId64 "), error %" PRId64
                          " > bound %" PRId64,
                          i, r.delay_ns, x.out + x.back, error, r.error_ns);
            ok = 0;
        }
    }
    CHECK(ok);
}

/* ------------------------------------------------------------------------
 * A fake SNTP server on loopback
 * ------------------------------------------------------------------------ */

typedef struct fake_server fake_server;

/* Decides what to send for request number `index` (0-based), which the
 * server received at `receive_ns` on its own clock; enqueues replies with
 * fake_reply. */
typedef void (*scenario_fn)(fake_server *server, unsigned index, const tk_sntp_packet *request,
                            int64_t receive_ns);

typedef struct queued_datagram {
    int64_t due_boot;
    size_t length;
    uint8_t data[64];
} queued_datagram;

struct fake_server {
    int fd;
    uint16_t port;
    pthread_t thread;
    atomic_int stop;
    atomic_uint requests;
    scenario_fn scenario;
    int64_t offset_ns; /* the server's clock: local wall + offset */
    const char *kiss;  /* for kiss-of-death scenarios */
    struct sockaddr_storage peer;
    socklen_t peer_length;
    queued_datagram queue[32];
    int queued;
};

static int64_t server_clock(const fake_server *s) { return now_ns(CLOCK_REALTIME) + s->offset_ns; }

/* A valid reply to `request`, received at `receive_ns`, sent now. */
static tk_sntp_packet fake_good(const fake_server *s, unsigned index,
                                const tk_sntp_packet *request, int64_t receive_ns) {
    tk_sntp_packet p = good_packet(request->transmit_time, receive_ns);
    p.root_delay = 0;
    p.root_dispersion = 0;
    p.reference_id = index;
    p.receive_time = ntp_of(receive_ns);
    p.transmit_time = ntp_of(server_clock(s));
    return p;
}

/* Sends `packet` (its first `length` bytes) after `delay_ns`. */
static void fake_reply(fake_server *s, const tk_sntp_packet *packet, size_t length,
                       int64_t delay_ns) {
    if (s->queued == (int)(sizeof s->queue / sizeof s->queue[0])) return;
    queued_datagram *d = &s->queue[s->queued++];
    memset(d->data, 0, sizeof d->data);
    tk_sntp_encode(packet, d->data, sizeof d->data);
    d->length = length;
    d->due_boot = now_ns(CLOCK_BOOTTIME) + delay_ns;
}

static void *fake_server_main(void *arg) {
    fake_server *s = arg;
    while (!atomic_load(&s->stop)) {
        int64_t now = now_ns(CLOCK_BOOTTIME);
        int64_t wait = 10 * MS;
        for (int i = 0; i < s->queued; i++) {
            int64_t until = s->queue[i].due_boot - now;
            if (until < wait) wait = until < 0 ? 0 : until;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)wait};
        struct pollfd pfd = {.fd = s->fd, .events = POLLIN, .revents = 0};
        int ready = ppoll(&pfd, 1, &ts, NULL);
        if (ready > 0) {
            uint8_t buffer[512];
            s->peer_length = sizeof s->peer;
            ssize_t got = recvfrom(s->fd, buffer, sizeof buffer, 0, (struct sockaddr *)&s->peer,
                                   &s->peer_length);
            int64_t receive_ns = server_clock(s);
            tk_sntp_packet request;
            if (got >= 0 && tk_sntp_decode(buffer, (size_t)got, &request) == 0) {
                unsigned index = atomic_fetch_add(&s->requests, 1);
                if (s->scenario) s->scenario(s, index, &request, receive_ns);
            }
        }
        now = now_ns(CLOCK_BOOTTIME);
        for (int i = 0; i < s->queued;) {
            if (s->queue[i].due_boot <= now) {
                ssize_t sent = sendto(s->fd, s->queue[i].data, s->queue[i].length, 0,
                                      (struct sockaddr *)&s->peer, s->peer_length);
                (void)sent;
                /* Keep the rest in order: datagrams due together go out in
                 * the order they were queued. */
                s->queued--;
                memmove(&s->queue[i], &s->queue[i + 1],
                        (size_t)(s->queued - i) * sizeof s->queue[0]);
            } else {
                i++;
            }
        }
    }
    return NULL;
}

/* Starts a server on `ip` (an IPv4 or IPv6 literal) and `port` (0: an
 * ephemeral one). 0 or -1. */
static int fake_start_at(fake_server *s, const char *ip, uint16_t port, scenario_fn scenario,
                         int64_t offset_ns, const char *kiss) {
    memset(s, 0, sizeof *s);
    s->scenario = scenario;
    s->offset_ns = offset_ns;
    s->kiss = kiss;
    struct sockaddr_storage address;
    memset(&address, 0, sizeof address);
    socklen_t length;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof *v4;
    } else if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof *v6;
    } else {
        return -1;
    }
    s->fd = socket(address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0) return -1;
    if (bind(s->fd, (struct sockaddr *)&address, length) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&address, &length) != 0) {
        close(s->fd);
        return -1;
    }
    s->port = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
    if (pthread_create(&s->thread, NULL, fake_server_main, s) != 0) {
        close(s->fd);
        return -1;
    }
    return 0;
}

/* Starts a server on `family`'s loopback with an ephemeral port. 0 or -1. */
static int fake_start_kiss(fake_server *s, int family, scenario_fn scenario, int64_t offset_ns,
                           const char *kiss) {
    return fake_start_at(s, family == AF_INET ? "127.0.0.1" : "::1", 0, scenario, offset_ns,
                         kiss);
}

static int fake_start(fake_server *s, int family, scenario_fn scenario, int64_t offset_ns) {
    return fake_start_kiss(s, family, scenario, offset_ns, NULL);
}

static void fake_stop(fake_server *s) {
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->fd);
}

/* Scenarios. */

static void scenario_good(fake_server *s, unsigned index, const tk_sntp_packet *request,
                          int64_t receive_ns) {
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 0);
}

static void scenario_silent(fake_server *s, unsigned index, const tk_sntp_packet *request,
                            int64_t receive_ns) {
    (void)s, (void)index, (void)request, (void)receive_ns;
}

#define MUTATING_SCENARIO(name, mutation)                                                 \
    static void name(fake_server *s, unsigned index, const tk_sntp_packet *request,       \
                     int64_t receive_ns) {                                                \
        tk_sntp_packet p = fake_good(s, index, request, receive_ns);                      \
        size_t length = TK_SNTP_PACKET_SIZE;                                              \
        mutation;                                                                         \
        fake_reply(s, &p, length, 0);                                                     \
    }

MUTATING_SCENARIO(scenario_short, length = 40)
MUTATING_SCENARIO(scenario_spoofed, p.origin_time ^= 0x5A5A5A5A00000000ull)
MUTATING_SCENARIO(scenario_mode, p.mode = TK_SNTP_MODE_CLIENT)
MUTATING_SCENARIO(scenario_version, p.version = 2)
MUTATING_SCENARIO(scenario_kiss, (p.stratum = 0, p.leap = 3, p.reference_id = code_of(s->kiss)))
MUTATING_SCENARIO(scenario_unsynchronised, p.leap = 3)
MUTATING_SCENARIO(scenario_stratum16, p.stratum = 16)
MUTATING_SCENARIO(scenario_zero_transmit, p.transmit_time = 0)
MUTATING_SCENARIO(scenario_transmit_before_receive, p.transmit_time = p.receive_time - 4096)

/* A forged reply first (wrong origin, a kiss-of-death even), then, 20 ms
 * later, the genuine one. */
static void scenario_spoof_then_good(fake_server *s, unsigned index,
                                     const tk_sntp_packet *request, int64_t receive_ns) {
    tk_sntp_packet forged = fake_good(s, index, request, receive_ns);
    forged.origin_time += 1;
    forged.stratum = 0;
    forged.reference_id = code_of("DENY");
    fake_reply(s, &forged, TK_SNTP_PACKET_SIZE, 0);
    tk_sntp_packet shorty = fake_good(s, index, request, receive_ns);
    fake_reply(s, &shorty, 20, 5 * MS);
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 20 * MS);
}

/* Every reply but the third held back 300 ms on the "wire". */
static void scenario_third_fastest(fake_server *s, unsigned index, const tk_sntp_packet *request,
                                   int64_t receive_ns) {
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    fake_reply(s, &p, TK_SNTP_PACKET_SIZE, index == 2 ? 0 : 300 * MS);
}

/* Request 0 answered after 400 ms (its sample has given up at 300 ms, so the
 * reply lands in the wait of request 1), request 1 after 150 ms. */
static void scenario_late_then_good(fake_server *s, unsigned index, const tk_sntp_packet *request,
                                    int64_t receive_ns) {
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    if (index == 0) fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 400 * MS);
    if (index == 1) fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 150 * MS);
}

/* Request 0 answered late, request 1 never. */
static void scenario_late_only(fake_server *s, unsigned index, const tk_sntp_packet *request,
                               int64_t receive_ns) {
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    if (index == 0) fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 400 * MS);
}

/* A kiss-of-death for the second request. */
static void scenario_kiss_second(fake_server *s, unsigned index, const tk_sntp_packet *request,
                                 int64_t receive_ns) {
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    if (index == 1) {
        p.stratum = 0;
        p.reference_id = code_of("RATE");
    }
    fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 0);
}

/* ------------------------------------------------------------------------
 * A stand-in resolver
 * ------------------------------------------------------------------------ */

/* A stand-in for getaddrinfo (tk__sntp_set_resolver), for what DNS cannot
 * be made to give on demand: every name resolves, after `delay_ns`, to the
 * literals in `addresses` (in that order), or fails with `status` (and errno
 * `error`). It runs on tk_sntp_query's helper thread. */
typedef struct fake_node {
    struct addrinfo info; /* first: the node is freed through it */
    struct sockaddr_storage address;
} fake_node;

static struct {
    pthread_mutex_t lock;
    /* set by the test before a query */
    int status;
    int error;
    int64_t delay_ns;
    const char *addresses[12];
    size_t count;
    int unix_only; /* one AF_UNIX entry, nothing else */
    /* seen by the resolver */
    char name[300];
    char service[16];
    atomic_int calls, lists, freed;
} g_dns = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int fake_getaddrinfo(const char *name, const char *service, const struct addrinfo *hints,
                            struct addrinfo **list) {
    atomic_fetch_add(&g_dns.calls, 1);
    pthread_mutex_lock(&g_dns.lock);
    snprintf(g_dns.name, sizeof g_dns.name, "%s", name);
    snprintf(g_dns.service, sizeof g_dns.service, "%s", service);
    int status = g_dns.status, error = g_dns.error, unix_only = g_dns.unix_only;
    int64_t delay = g_dns.delay_ns;
    const char *addresses[12];
    size_t count = g_dns.count;
    memcpy(addresses, g_dns.addresses, sizeof addresses);
    pthread_mutex_unlock(&g_dns.lock);
    if (delay > 0) {
        struct timespec ts = {.tv_sec = (time_t)(delay / SEC), .tv_nsec = (long)(delay % SEC)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    if (status != 0) {
        errno = error;
        return status;
    }
    /* The hints tk_sntp_query documents. */
    if (hints == NULL || hints->ai_family != AF_UNSPEC || hints->ai_socktype != SOCK_DGRAM ||
        hints->ai_protocol != IPPROTO_UDP || hints->ai_flags != AI_NUMERICSERV) {
        return EAI_BADFLAGS;
    }
    uint16_t port = (uint16_t)strtoul(service, NULL, 10);
    struct addrinfo *head = NULL, **tail = &head;
    for (size_t i = 0; i < (unix_only ? 1 : count); i++) {
        fake_node *node = calloc(1, sizeof *node);
        if (node == NULL) abort();
        struct sockaddr_in *v4 = (struct sockaddr_in *)&node->address;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&node->address;
        if (unix_only) {
            node->address.ss_family = AF_UNIX;
            node->info.ai_family = AF_UNIX;
            node->info.ai_addrlen = sizeof(sa_family_t) + 2;
        } else if (inet_pton(AF_INET, addresses[i], &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons(port);
            node->info.ai_family = AF_INET;
            node->info.ai_addrlen = sizeof *v4;
        } else if (inet_pton(AF_INET6, addresses[i], &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons(port);
            node->info.ai_family = AF_INET6;
            node->info.ai_addrlen = sizeof *v6;
        } else {
            abort();
        }
        node->info.ai_socktype = SOCK_DGRAM;
        node->info.ai_protocol = IPPROTO_UDP;
        node->info.ai_addr = (struct sockaddr *)&node->address;
        *tail = &node->info;
        tail = &node->info.ai_next;
    }
    *list = head;
    if (head != NULL) atomic_fetch_add(&g_dns.lists, 1); /* NULL is not freed */
    return 0;
}

static void fake_freeaddrinfo(struct addrinfo *list) {
    while (list != NULL) {
        struct addrinfo *next = list->ai_next;
        free(list); /* the fake_node it starts */
        list = next;
    }
    atomic_fetch_add(&g_dns.freed, 1);
}

/* Answers every name with `count` literals (none: an empty list). */
static void dns_answer(const char *const *addresses, size_t count) {
    pthread_mutex_lock(&g_dns.lock);
    g_dns.status = 0;
    g_dns.error = 0;
    g_dns.delay_ns = 0;
    g_dns.unix_only = 0;
    g_dns.count = count;
    for (size_t i = 0; i < count; i++) g_dns.addresses[i] = addresses[i];
    pthread_mutex_unlock(&g_dns.lock);
    tk__sntp_set_resolver(fake_getaddrinfo, fake_freeaddrinfo);
}

static void dns_fail(int status, int error) {
    dns_answer(NULL, 0);
    pthread_mutex_lock(&g_dns.lock);
    g_dns.status = status;
    g_dns.error = error;
    pthread_mutex_unlock(&g_dns.lock);
}

static void dns_delay(int64_t delay_ns) {
    pthread_mutex_lock(&g_dns.lock);
    g_dns.delay_ns = delay_ns;
    pthread_mutex_unlock(&g_dns.lock);
}

static void dns_seen(char *name, size_t name_size, char *service, size_t service_size) {
    pthread_mutex_lock(&g_dns.lock);
    snprintf(name, name_size, "%s", g_dns.name);
    snprintf(service, service_size, "%s", g_dns.service);
    pthread_mutex_unlock(&g_dns.lock);
}

/* Back to getaddrinfo. */
static void dns_real(void) { tk__sntp_set_resolver(NULL, NULL); }

/* Waits (up to 5 s) until every list the stand-in handed out is freed. */
static int dns_all_freed(void) {
    for (int i = 0; i < 500; i++) {
        if (atomic_load(&g_dns.freed) == atomic_load(&g_dns.lists)) return 1;
        usleep(10 * 1000);
    }
    return atomic_load(&g_dns.freed) == atomic_load(&g_dns.lists);
}

/* What getaddrinfo makes of `name` here, for the log. */
static void print_resolution(const char *name) {
    struct addrinfo hints, *list = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_DGRAM;
    int rc = getaddrinfo(name, "123", &hints, &list);
    printf("test_sntp: %s resolves to", name);
    if (rc != 0) printf(" nothing (%s)", gai_strerror(rc));
    for (struct addrinfo *p = list; p != NULL; p = p->ai_next) {
        char text[INET6_ADDRSTRLEN] = "?";
        const void *in = p->ai_family == AF_INET
                             ? (const void *)&((struct sockaddr_in *)p->ai_addr)->sin_addr
                             : (const void *)&((struct sockaddr_in6 *)p->ai_addr)->sin6_addr;
        inet_ntop(p->ai_family, in, text, sizeof text);
        printf(" %s", text);
    }
    printf("\n");
    if (list != NULL) freeaddrinfo(list);
}

/* ------------------------------------------------------------------------
 * Query tests
 * ------------------------------------------------------------------------ */

static void check_good_result(const tk_sntp_result *r, int64_t offset, unsigned samples) {
    CHECK_LE(llabs(r->offset_ns - offset), r->error_ns);
    CHECK_EQ(r->server_time_ns - r->receive_wall_ns, r->offset_ns);
    CHECK_GE(r->delay_ns, 0);
    CHECK_LE(r->delay_ns, r->receive_boot_ns - r->send_boot_ns);
    CHECK_GE(r->error_ns, r->delay_ns / 2 + r->precision_ns);
    CHECK_LT(r->error_ns, 1 * SEC);
    CHECK_EQ(r->stratum, 2);
    CHECK_EQ(r->version, 4);
    CHECK_EQ(r->requests_sent, samples);
    CHECK_EQ(r->replies_accepted, samples);
    CHECK_EQ(r->kiss_code[0], '\0');
}

static void test_query_good(void) {
    fake_server s;
    int64_t offset = 3600 * SEC + 250 * MS;
    if (fake_start(&s, AF_INET, scenario_good, offset) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    int64_t before = now_ns(CLOCK_BOOTTIME);
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 1, &r), 0);
    int64_t after = now_ns(CLOCK_BOOTTIME);
    check_good_result(&r, offset, 1);
    CHECK_LE(before, r.send_boot_ns);
    CHECK_LE(r.receive_boot_ns, after);

    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 5, &r), 0);
    check_good_result(&r, offset, 5);
    CHECK_EQ(atomic_load(&s.requests), 6);
    fake_stop(&s);

    /* A server behind the local clock, and one just past the 2036 era
     * boundary (its NTP seconds field is near 0). */
    const int64_t offsets[] = {-86400 * SEC - 1,
                               ERA1_UNIX_SECONDS * SEC - now_ns(CLOCK_REALTIME)};
    for (size_t i = 0; i < 2; i++) {
        if (fake_start(&s, AF_INET, scenario_good, offsets[i]) != 0) {
            CHECK(!"cannot start a UDP server on 127.0.0.1");
            return;
        }
        CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 3, &r), 0);
        check_good_result(&r, offsets[i], 3);
        fake_stop(&s);
    }
    CHECK_GE(r.server_time_ns, ERA1_UNIX_SECONDS * SEC);
    CHECK_LT(r.server_time_ns, (ERA1_UNIX_SECONDS + 600) * SEC);
}

typedef struct rejection_case {
    const char *name;
    scenario_fn scenario;
    const char *kiss;
    int expected;
} rejection_case;

static void test_query_rejections(void) {
    const rejection_case cases[] = {
        {"short", scenario_short, NULL, -EMSGSIZE},
        {"spoofed", scenario_spoofed, NULL, -ENOMSG},
        {"mode", scenario_mode, NULL, -EPROTO},
        {"version", scenario_version, NULL, -EPROTONOSUPPORT},
        {"kiss RATE", scenario_kiss, "RATE", -EACCES},
        {"kiss DENY", scenario_kiss, "DENY", -EACCES},
        {"kiss RSTR", scenario_kiss, "RSTR", -EACCES},
        {"unsynchronised", scenario_unsynchronised, NULL, -ENODATA},
        {"stratum 16", scenario_stratum16, NULL, -ERANGE},
        {"zero transmit", scenario_zero_transmit, NULL, -EBADMSG},
        {"transmit before receive", scenario_transmit_before_receive, NULL, -EBADMSG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const rejection_case *c = &cases[i];
        fake_server s;
        if (fake_start_kiss(&s, AF_INET, c->scenario, 0, c->kiss) != 0) {
            CHECK(!"cannot start a UDP server on 127.0.0.1");
            return;
        }
        tk_sntp_result r;
        memset(&r, 0x55, sizeof r);
        /* Unauthenticated datagrams (short, spoofed) do not end a wait: the
         * sample ends at its timeout; keep it short. */
        int64_t timeout = 300 * MS;
        int64_t start = now_ns(CLOCK_BOOTTIME);
        int rc = tk_sntp_query("127.0.0.1", s.port, timeout, 2, &r);
        int64_t elapsed = now_ns(CLOCK_BOOTTIME) - start;
        if (rc != c->expected) {
            fprintf(stderr, "  case %s: got %d (%s), expected %d\n", c->name, rc, strerror(-rc),
                    c->expected);
        }
        CHECK_EQ(rc, c->expected);
        if (c->kiss) {
            /* A kiss-of-death stops the query at once: one request. */
            CHECK(strcmp(r.kiss_code, c->kiss) == 0);
            CHECK_EQ(r.stratum, 0);
            CHECK_EQ(r.requests_sent, 1);
            CHECK_EQ(atomic_load(&s.requests), 1);
            CHECK_LT(elapsed, timeout);
        } else {
            CHECK_EQ(r.requests_sent, 2);
            CHECK_EQ(r.replies_accepted, 0);
            if (c->expected == -EMSGSIZE || c->expected == -ENOMSG) {
                CHECK_GE(elapsed, 2 * timeout); /* waited for the real reply */
            }
        }
        fake_stop(&s);
    }
}

static void test_query_spoof_then_good(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_spoof_then_good, 42 * SEC) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 2, &r), 0);
    check_good_result(&r, 42 * SEC, 2);
    CHECK_GE(r.receive_boot_ns - r.send_boot_ns, 20 * MS);
    fake_stop(&s);
}

static void test_query_best_sample(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_third_fastest, -7 * SEC) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 4, &r), 0);
    CHECK_EQ(r.reference_id, 2); /* the fake server numbers its replies */
    CHECK_LT(r.delay_ns, 300 * MS);
    check_good_result(&r, -7 * SEC, 4);
    fake_stop(&s);
}

static void test_query_late_replies(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_late_then_good, 5 * SEC) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 300 * MS, 2, &r), 0);
    CHECK_EQ(r.reference_id, 1);
    CHECK_EQ(r.requests_sent, 2);
    CHECK_EQ(r.replies_accepted, 1);
    CHECK_GE(r.delay_ns, 150 * MS);
    CHECK_LE(llabs(r.offset_ns - 5 * SEC), r.error_ns);
    fake_stop(&s);

    /* The late reply alone is no reply: -ETIMEDOUT, not a spoofing error. */
    if (fake_start(&s, AF_INET, scenario_late_only, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 300 * MS, 2, &r), -ETIMEDOUT);
    CHECK_EQ(r.requests_sent, 2);
    fake_stop(&s);
}

static void test_query_kiss_stops(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_kiss_second, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 1 * SEC, 5, &r), -EACCES);
    CHECK(strcmp(r.kiss_code, "RATE") == 0);
    CHECK_EQ(r.requests_sent, 2);
    CHECK_EQ(r.replies_accepted, 1);
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&s.requests), 2);
    fake_stop(&s);
}

static void test_query_timeout(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_silent, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    int64_t start = now_ns(CLOCK_BOOTTIME);
    CHECK_EQ(tk_sntp_query("127.0.0.1", s.port, 150 * MS, 3, &r), -ETIMEDOUT);
    int64_t elapsed = now_ns(CLOCK_BOOTTIME) - start;
    CHECK_GE(elapsed, 3 * 150 * MS); /* never early */
    CHECK_EQ(r.requests_sent, 3);
    CHECK_EQ(atomic_load(&s.requests), 3);
    fake_stop(&s);
}

/* Signals during the wait: the query resumes with the time left. */
static atomic_int g_signals;
static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&g_signals, 1);
}

typedef struct signaller {
    pthread_t target;
    atomic_int stop;
} signaller;

static void *signaller_main(void *arg) {
    signaller *g = arg;
    while (!atomic_load(&g->stop)) {
        pthread_kill(g->target, SIGUSR1);
        usleep(3000);
    }
    return NULL;
}

static void test_query_eintr(void) {
    struct sigaction action, old;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_usr1;
    action.sa_flags = 0; /* no SA_RESTART: ppoll and recv see EINTR */
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, &old);

    fake_server s;
    if (fake_start(&s, AF_INET, scenario_silent, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        sigaction(SIGUSR1, &old, NULL);
        return;
    }
    signaller g = {.target = pthread_self()};
    atomic_store(&g_signals, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, signaller_main, &g);
    tk_sntp_result r;
    int64_t start = now_ns(CLOCK_BOOTTIME);
    int rc = tk_sntp_query("127.0.0.1", s.port, 200 * MS, 2, &r);
    int64_t elapsed = now_ns(CLOCK_BOOTTIME) - start;
    atomic_store(&g.stop, 1);
    pthread_join(thread, NULL);
    fake_stop(&s);

    /* And a good server with the same storm of signals. */
    int rc_good = -1;
    if (fake_start(&s, AF_INET, scenario_spoof_then_good, 3 * SEC) == 0) {
        atomic_store(&g.stop, 0);
        pthread_create(&thread, NULL, signaller_main, &g);
        rc_good = tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 3, &r);
        atomic_store(&g.stop, 1);
        pthread_join(thread, NULL);
        fake_stop(&s);
    }
    sigaction(SIGUSR1, &old, NULL);
    CHECK_EQ(rc, -ETIMEDOUT);
    CHECK_GE(elapsed, 400 * MS);
    CHECK_GE(atomic_load(&g_signals), 10);
    CHECK_EQ(rc_good, 0);
    if (rc_good == 0) CHECK_LE(llabs(r.offset_ns - 3 * SEC), r.error_ns);
}

static void test_query_refused(void) {
    /* A port that was free a moment ago: nothing listens, loopback answers
     * with port unreachable. */
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in address = {.sin_family = AF_INET};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    CHECK_EQ(bind(fd, (struct sockaddr *)&address, length), 0);
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&address, &length), 0);
    uint16_t port = ntohs(address.sin_port);
    close(fd);
    tk_sntp_result r;
    int64_t start = now_ns(CLOCK_BOOTTIME);
    CHECK_EQ(tk_sntp_query("127.0.0.1", port, 2 * SEC, 1, &r), -ECONNREFUSED);
    CHECK_LT(now_ns(CLOCK_BOOTTIME) - start, 2 * SEC); /* not a timeout */
    CHECK_EQ(tk_sntp_query("127.0.0.1", port, 300 * MS, 3, &r), -ECONNREFUSED);
}

static void test_query_arguments(void) {
    tk_sntp_result r;
    /* Nothing here reaches the resolver; neither do literals. */
    dns_answer(NULL, 0);
    int calls = atomic_load(&g_dns.calls);
    CHECK_EQ(tk_sntp_query(NULL, 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("127.0.0.1", 123, SEC, 1, NULL), -EINVAL);
    CHECK_EQ(tk_sntp_query("127.0.0.1", 123, 0, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("127.0.0.1", 123, -SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("127.0.0.1", 123, SEC, 0, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("127.0.0.1", 123, SEC, TK_SNTP_MAX_SAMPLES + 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("localhost", 123, SEC, 0, &r), -EINVAL);
    /* Neither literals nor names. */
    CHECK_EQ(tk_sntp_query("127.0.0.1:123", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("[::1]", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query(".", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("a..b", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query(".a", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("a.b..", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("ntp server", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("ntp\tserver", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("b\xc3\xbc" "cher.example", 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(tk_sntp_query("fe80::1%lo", 123, SEC, 1, &r), -EINVAL);
    /* Lengths: labels of 63, names of 253 (254 with the root dot). */
    char name[300];
    memset(name, 'a', 64);
    name[64] = '\0';
    CHECK_EQ(tk_sntp_query(name, 123, SEC, 1, &r), -EINVAL);
    /* 4 labels: 63 + 63 + 63 + 61 characters and 3 dots = 253. */
    for (int i = 0; i < 253; i++) name[i] = (i % 64 == 63) ? '.' : 'a';
    name[253] = '\0';
    CHECK_EQ(tk_sntp_query(name, 123, SEC, 1, &r), -ENXIO); /* a name: looked up */
    name[253] = '.';
    name[254] = '\0';
    CHECK_EQ(tk_sntp_query(name, 123, SEC, 1, &r), -ENXIO);
    name[253] = 'a';
    CHECK_EQ(tk_sntp_query(name, 123, SEC, 1, &r), -EINVAL); /* 254 */
    name[254] = '.';
    name[255] = '\0';
    CHECK_EQ(tk_sntp_query(name, 123, SEC, 1, &r), -EINVAL);
    CHECK_EQ(atomic_load(&g_dns.calls), calls + 2);
    calls = atomic_load(&g_dns.calls);
    CHECK_EQ(tk_sntp_query("xn--bcher-kva.example", 123, SEC, 1, &r), -ENXIO);
    CHECK_EQ(tk_sntp_query("_ntp.Host-1.example.", 123, SEC, 1, &r), -ENXIO);
    CHECK_EQ(atomic_load(&g_dns.calls), calls + 2);

    /* Literals never call the resolver (the port is closed: refused). */
    calls = atomic_load(&g_dns.calls);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in address = {.sin_family = AF_INET};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    CHECK_EQ(bind(fd, (struct sockaddr *)&address, length), 0);
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&address, &length), 0);
    uint16_t port = ntohs(address.sin_port);
    close(fd);
    CHECK_EQ(tk_sntp_query("127.0.0.1", port, SEC, 1, &r), -ECONNREFUSED);
    int rc6 = tk_sntp_query("::1", port, 300 * MS, 1, &r);
    CHECK(rc6 == -ECONNREFUSED || rc6 == -EADDRNOTAVAIL || rc6 == -ENETUNREACH ||
          rc6 == -EAFNOSUPPORT);
    CHECK_EQ(atomic_load(&g_dns.calls), calls);
    dns_real();
    CHECK(dns_all_freed());
}

static void test_query_ipv6(void) {
    fake_server s;
    if (fake_start(&s, AF_INET6, scenario_good, 77 * SEC) != 0) {
        printf("test_sntp: no IPv6 loopback here; IPv6 query not exercised\n");
        return;
    }
    tk_sntp_result r;
    CHECK_EQ(tk_sntp_query("::1", s.port, 2 * SEC, 2, &r), 0);
    check_good_result(&r, 77 * SEC, 2);
    fake_stop(&s);
}

/* ------------------------------------------------------------------------
 * Host names
 * ------------------------------------------------------------------------ */

/* "localhost" through the real getaddrinfo, the server on 127.0.0.1 only:
 * whatever order localhost's addresses come in (here /etc/hosts may give
 * 127.0.0.1 alone, elsewhere ::1 first), the query ends at the server. */
static void test_query_name_localhost(void) {
    print_resolution("localhost");
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_good, 9 * SEC) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    tk_sntp_result r;
    int rc = tk_sntp_query("localhost", s.port, 2 * SEC, 3, &r);
    CHECK_EQ(rc, 0);
    if (rc == 0) CHECK_LE(llabs(r.offset_ns - 9 * SEC), r.error_ns);
    CHECK_EQ(r.replies_accepted, 3);
    CHECK_EQ(atomic_load(&s.requests), 3);
    /* 3, plus one per address before 127.0.0.1 that refused (::1). */
    CHECK_GE(r.requests_sent, 3);
    CHECK_LE(r.requests_sent, 3 + TK_SNTP_MAX_ADDRESSES - 1);
    /* /etc/hosts names are not case-sensitive either. */
    CHECK_EQ(tk_sntp_query("LocalHost", s.port, 2 * SEC, 1, &r), 0);
    fake_stop(&s);
}

/* A name with several addresses, the server on the last one. */
static void test_query_name_addresses(void) {
    char name[300], service[16];
    tk_sntp_result r;
    fake_server good;
    if (fake_start(&good, AF_INET, scenario_good, 11 * SEC) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%u", (unsigned)good.port);

    /* Nothing listens on 127.0.0.2: port unreachable, next address at once. */
    const char *refused_first[] = {"127.0.0.2", "127.0.0.1"};
    dns_answer(refused_first, 2);
    int64_t start = now_ns(CLOCK_BOOTTIME);
    CHECK_EQ(tk_sntp_query("two.test", good.port, 2 * SEC, 2, &r), 0);
    CHECK_LT(now_ns(CLOCK_BOOTTIME) - start, 2 * SEC); /* not a timeout */
    CHECK_LE(llabs(r.offset_ns - 11 * SEC), r.error_ns);
    CHECK_EQ(r.requests_sent, 3); /* one to 127.0.0.2, two to 127.0.0.1 */
    CHECK_EQ(r.replies_accepted, 2);
    CHECK_EQ(atomic_load(&good.requests), 2);
    dns_seen(name, sizeof name, service, sizeof service);
    CHECK(strcmp(name, "two.test") == 0);
    CHECK(strcmp(service, port_text) == 0);

    /* A silent server on 127.0.0.2 (listed twice: duplicates are dropped):
     * one request, the timeout, then 127.0.0.1. */
    fake_server silent;
    if (fake_start_at(&silent, "127.0.0.2", good.port, scenario_silent, 0, NULL) == 0) {
        const char *silent_first[] = {"127.0.0.2", "127.0.0.2", "127.0.0.1"};
        dns_answer(silent_first, 3);
        atomic_store(&good.requests, 0);
        start = now_ns(CLOCK_BOOTTIME);
        CHECK_EQ(tk_sntp_query("silent.test", good.port, 300 * MS, 2, &r), 0);
        CHECK_GE(now_ns(CLOCK_BOOTTIME) - start, 300 * MS);
        CHECK_EQ(atomic_load(&silent.requests), 1);
        CHECK_EQ(atomic_load(&good.requests), 2);
        CHECK_EQ(r.requests_sent, 3);
        CHECK_EQ(r.replies_accepted, 2);
        fake_stop(&silent);
    } else {
        CHECK(!"cannot start a UDP server on 127.0.0.2");
    }

    /* The first address answers, badly: it is the server, its error the
     * query's; the next address is never asked. */
    fake_server bad;
    if (fake_start_at(&bad, "127.0.0.2", good.port, scenario_unsynchronised, 0, NULL) == 0) {
        const char *bad_first[] = {"127.0.0.2", "127.0.0.1"};
        dns_answer(bad_first, 2);
        atomic_store(&good.requests, 0);
        CHECK_EQ(tk_sntp_query("bad.test", good.port, 2 * SEC, 2, &r), -ENODATA);
        CHECK_EQ(atomic_load(&bad.requests), 2);
        CHECK_EQ(atomic_load(&good.requests), 0);
        CHECK_EQ(r.requests_sent, 2);
        fake_stop(&bad);
    } else {
        CHECK(!"cannot start a UDP server on 127.0.0.2");
    }

    /* A kiss-of-death from the first address ends the query. */
    fake_server kiss;
    if (fake_start_at(&kiss, "127.0.0.2", good.port, scenario_kiss, 0, "DENY") == 0) {
        const char *kiss_first[] = {"127.0.0.2", "127.0.0.1"};
        dns_answer(kiss_first, 2);
        atomic_store(&good.requests, 0);
        CHECK_EQ(tk_sntp_query("kiss.test", good.port, 2 * SEC, 3, &r), -EACCES);
        CHECK(strcmp(r.kiss_code, "DENY") == 0);
        CHECK_EQ(r.requests_sent, 1);
        CHECK_EQ(atomic_load(&good.requests), 0);
        fake_stop(&kiss);
    } else {
        CHECK(!"cannot start a UDP server on 127.0.0.2");
    }

    /* IPv6 first, the server on IPv4 only (localhost on most machines). */
    int v6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int have_v6 = v6 >= 0 && bind(v6, (struct sockaddr *)&any6, sizeof any6) == 0;
    if (v6 >= 0) close(v6);
    if (have_v6) {
        const char *v6_first[] = {"::1", "127.0.0.1"};
        dns_answer(v6_first, 2);
        atomic_store(&good.requests, 0);
        CHECK_EQ(tk_sntp_query("dual.test", good.port, 2 * SEC, 1, &r), 0);
        CHECK_EQ(r.requests_sent, 2);
        CHECK_EQ(atomic_load(&good.requests), 1);
    } else {
        printf("test_sntp: no IPv6 loopback here; ::1-then-127.0.0.1 not exercised\n");
    }

    /* Every address refused: the last one's error. */
    const char *all_refused[] = {"127.0.0.2", "127.0.0.3"};
    dns_answer(all_refused, 2);
    CHECK_EQ(tk_sntp_query("none.test", good.port, 2 * SEC, 2, &r), -ECONNREFUSED);
    CHECK_GE(r.requests_sent, 2);

    /* Only the first TK_SNTP_MAX_ADDRESSES are tried: the server is 9th. */
    const char *many[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6",
                          "127.0.0.7", "127.0.0.8", "127.0.0.9", "127.0.0.1"};
    CHECK_EQ(sizeof many / sizeof many[0], TK_SNTP_MAX_ADDRESSES + 1);
    dns_answer(many, TK_SNTP_MAX_ADDRESSES + 1);
    atomic_store(&good.requests, 0);
    CHECK_EQ(tk_sntp_query("many.test", good.port, 2 * SEC, 1, &r), -ECONNREFUSED);
    CHECK_EQ(atomic_load(&good.requests), 0);
    CHECK_EQ(r.requests_sent, TK_SNTP_MAX_ADDRESSES);

    dns_real();
    fake_stop(&good);
    CHECK(dns_all_freed());
}

/* Port 0 is port 123. */
static void test_query_port_zero(void) {
    char name[300], service[16];
    tk_sntp_result r;
    /* A name: the resolver is asked for service "123". */
    const char *loopback[] = {"127.0.0.1"};
    dns_answer(loopback, 1);
    fake_server s;
    int have_123 = fake_start_at(&s, "127.0.0.1", TK_SNTP_PORT, scenario_good, 5 * SEC, NULL) == 0;
    int rc = tk_sntp_query("zero.test", 0, 300 * MS, 1, &r);
    dns_seen(name, sizeof name, service, sizeof service);
    CHECK(strcmp(service, "123") == 0);
    dns_real();
    CHECK(dns_all_freed());
    if (!have_123) {
        /* Not root, or an NTP server runs here: the literal's port 0 cannot
         * be watched; the name's was above. */
        printf("test_sntp: cannot bind 127.0.0.1:123; port 0 with a literal not exercised\n");
        CHECK(rc != -EINVAL);
        return;
    }
    CHECK_EQ(rc, 0);
    /* A literal: the socket goes to 127.0.0.1:123, where the server is. */
    CHECK_EQ(tk_sntp_query("127.0.0.1", 0, 2 * SEC, 2, &r), 0);
    CHECK_LE(llabs(r.offset_ns - 5 * SEC), r.error_ns);
    CHECK_EQ(atomic_load(&s.requests), 3);
    fake_stop(&s);
}

/* RFC 6761 reserves .invalid: it never resolves. The real resolver may still
 * ask the name servers of resolv.conf; where there are none reachable it
 * gives EAI_AGAIN after its own timeouts, or outlasts ours. So -ENXIO (the
 * answer here), -EAGAIN or -ETIMEDOUT, and never later than the timeout. */
static void test_query_name_unresolvable(void) {
    tk_sntp_result r;
    memset(&r, 0x55, sizeof r);
    int64_t start = now_ns(CLOCK_BOOTTIME);
    int rc = tk_sntp_query("nonexistent.invalid", 123, 3 * SEC, 1, &r);
    int64_t elapsed = now_ns(CLOCK_BOOTTIME) - start;
    printf("test_sntp: nonexistent.invalid: %d (%s) after %" PRId64 " ms\n", rc, strerror(-rc),
           (int64_t)(elapsed / MS));
    CHECK(rc == -ENXIO || rc == -EAGAIN || rc == -ETIMEDOUT);
    CHECK_LT(elapsed, 3 * SEC + 500 * MS);
    CHECK_EQ(r.requests_sent, 0);
}

/* Each resolver error, one errno each. */
/* tk_sntp_check_server: what tk_sntp_query refuses as a name before any
 * lookup, and nothing else. */
static void test_check_server(void) {
    const char *good[] = {"127.0.0.1", "::1", "fe80::1", "localhost", "time.example.org",
                          "time.example.org.", "a-b_c.d1", "xn--bcher-kva.example"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK_EQ(tk_sntp_check_server(good[i]), 0);
    const char *bad[] = {"", ".", "a..b", "[::1]", "host:123", "has space", "bad/char",
                         "caf\xc3\xa9.example", ".leading"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(tk_sntp_check_server(bad[i]), -EINVAL);
    CHECK_EQ(tk_sntp_check_server(NULL), -EINVAL);
    char longest[300];
    memset(longest, 'a', sizeof longest);
    for (int i = 63; i < 253; i += 64) longest[i] = '.';
    longest[253] = '\0';
    CHECK_EQ(tk_sntp_check_server(longest), 0);
    longest[253] = 'a';
    longest[254] = '\0';
    CHECK_EQ(tk_sntp_check_server(longest), -EINVAL);
    /* The query refuses exactly these names with -EINVAL, before sending. */
    tk_sntp_result r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(tk_sntp_query(bad[i], 123, 100 * MS, 1, &r), -EINVAL);
}

static void test_query_name_errors(void) {
    const struct {
        int status, error, expected;
    } cases[] = {
        {EAI_NONAME, 0, -ENXIO},     {EAI_NODATA, 0, -ENXIO},     {EAI_FAMILY, 0, -ENXIO},
        {EAI_ADDRFAMILY, 0, -ENXIO}, {EAI_SERVICE, 0, -ENXIO},    {EAI_AGAIN, 0, -EAGAIN},
        {EAI_MEMORY, 0, -ENOMEM},    {EAI_FAIL, 0, -EREMOTEIO},   {EAI_SYSTEM, EMFILE, -EMFILE},
        {EAI_SYSTEM, EIO, -EIO},
    };
    tk_sntp_result r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dns_fail(cases[i].status, cases[i].error);
        memset(&r, 0x55, sizeof r);
        int rc = tk_sntp_query("error.test", 123, SEC, 1, &r);
        if (rc != cases[i].expected) {
            fprintf(stderr, "  resolver status %d: got %d, expected %d\n", cases[i].status, rc,
                    cases[i].expected);
        }
        CHECK_EQ(rc, cases[i].expected);
        CHECK_EQ(r.requests_sent, 0);
    }
    /* Success without any IPv4 or IPv6 address. */
    dns_answer(NULL, 0);
    CHECK_EQ(tk_sntp_query("empty.test", 123, SEC, 1, &r), -ENXIO);
    pthread_mutex_lock(&g_dns.lock);
    g_dns.unix_only = 1;
    pthread_mutex_unlock(&g_dns.lock);
    CHECK_EQ(tk_sntp_query("unix.test", 123, SEC, 1, &r), -ENXIO);
    dns_real();
    CHECK(dns_all_freed());
}

/* A lookup slower than the timeout: -ETIMEDOUT on time, no request, and
 * the abandoned lookup frees its list when it ends. */
static void test_query_name_timeout(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_good, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    const char *loopback[] = {"127.0.0.1"};
    dns_answer(loopback, 1);
    dns_delay(1 * SEC);
    int lists_before = atomic_load(&g_dns.lists);
    tk_sntp_result r;
    memset(&r, 0x55, sizeof r);
    int64_t start = now_ns(CLOCK_BOOTTIME);
    CHECK_EQ(tk_sntp_query("slow.test", s.port, 200 * MS, 1, &r), -ETIMEDOUT);
    int64_t elapsed = now_ns(CLOCK_BOOTTIME) - start;
    CHECK_GE(elapsed, 200 * MS); /* never early */
    CHECK_LT(elapsed, 600 * MS); /* and not waiting for the lookup */
    CHECK_EQ(r.requests_sent, 0);
    CHECK_EQ(r.replies_accepted, 0);
    /* The lookup ends 1 s in, with nobody waiting: it frees its list. */
    for (int i = 0; i < 500 && atomic_load(&g_dns.lists) == lists_before; i++) usleep(10 * 1000);
    CHECK_EQ(atomic_load(&g_dns.lists), lists_before + 1);
    CHECK(dns_all_freed());
    CHECK_EQ(atomic_load(&s.requests), 0);

    /* The lookup has its own timeout: 250 ms of lookup, then a request
     * with 300 ms of its own. */
    dns_delay(250 * MS);
    CHECK_EQ(tk_sntp_query("slow.test", s.port, 300 * MS, 1, &r), 0);
    CHECK_EQ(atomic_load(&s.requests), 1);
    dns_real();
    CHECK(dns_all_freed());
    fake_stop(&s);
}

/* Signals while the lookup runs: the wait resumes. */
static void test_query_name_eintr(void) {
    struct sigaction action, old;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_usr1;
    action.sa_flags = 0; /* no SA_RESTART */
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, &old);
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_good, 2 * SEC) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        sigaction(SIGUSR1, &old, NULL);
        return;
    }
    const char *loopback[] = {"127.0.0.1"};
    dns_answer(loopback, 1);
    dns_delay(150 * MS);
    signaller g = {.target = pthread_self()};
    atomic_store(&g_signals, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, signaller_main, &g);
    tk_sntp_result r;
    int rc = tk_sntp_query("signals.test", s.port, 2 * SEC, 1, &r);
    atomic_store(&g.stop, 1);
    pthread_join(thread, NULL);
    sigaction(SIGUSR1, &old, NULL);
    CHECK_EQ(rc, 0);
    if (rc == 0) CHECK_LE(llabs(r.offset_ns - 2 * SEC), r.error_ns);
    CHECK_GE(atomic_load(&g_signals), 10);
    dns_real();
    CHECK(dns_all_freed());
    fake_stop(&s);
}

/* ------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------ */

/* ---- query_wall_past_2262 ------------------------------------------------ */

int __real_clock_gettime(clockid_t clock, struct timespec *ts);
int __wrap_clock_gettime(clockid_t clock, struct timespec *ts);

/* Seconds added to the wall-clock readings of this thread while set, and
 * to its boot-clock readings. */
static _Thread_local int64_t g_wall_shift_s;
static _Thread_local int64_t g_boot_shift_s;

int __wrap_clock_gettime(clockid_t clock, struct timespec *ts) {
    int result = __real_clock_gettime(clock, ts);
    if (result == 0 && clock == CLOCK_REALTIME) ts->tv_sec += (time_t)g_wall_shift_s;
    if (result == 0 && clock == CLOCK_BOOTTIME) ts->tv_sec += (time_t)g_boot_shift_s;
    return result;
}

/* ---- query_stops_reading_at_deadline --------------------------------------- */

ssize_t __real_recv(int fd, void *buffer, size_t size, int flags);
ssize_t __wrap_recv(int fd, void *buffer, size_t size, int flags);

/* While set on a thread: its first datagram received waits 50 ms first (so
 * that every datagram the server sent with it is queued), then the boot
 * clock of the thread moves this many seconds on. Counts its datagrams. */
static _Thread_local int64_t g_recv_then_jump_s;
static _Thread_local int g_datagrams_received;

ssize_t __wrap_recv(int fd, void *buffer, size_t size, int flags) {
    if (g_recv_then_jump_s != 0 && g_datagrams_received == 0) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    ssize_t got = __real_recv(fd, buffer, size, flags);
    if (got >= 0 && g_recv_then_jump_s != 0 && g_datagrams_received++ == 0) {
        g_boot_shift_s = g_recv_then_jump_s;
    }
    return got;
}

/* Twenty forged replies (wrong origin), then the genuine one, all at once. */
static void scenario_flood_then_good(fake_server *s, unsigned index,
                                     const tk_sntp_packet *request, int64_t receive_ns) {
    for (int i = 0; i < 20; i++) {
        tk_sntp_packet forged = fake_good(s, index, request, receive_ns);
        forged.origin_time += 1 + (uint64_t)i;
        fake_reply(s, &forged, TK_SNTP_PACKET_SIZE, 0);
    }
    tk_sntp_packet p = fake_good(s, index, request, receive_ns);
    fake_reply(s, &p, TK_SNTP_PACKET_SIZE, 0);
}

static void test_query_stops_reading_at_deadline(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_flood_then_good, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    /* The boot clock passes the timeout as the first forged reply is read:
     * the sample has timed out (that datagram, read too late, counts for
     * nothing), and the twenty datagrams queued behind it are left unread.
     * They used to be read to the end, nineteen more forged ones and then
     * the genuine one, which was taken, whatever the time. */
    tk_sntp_result r;
    g_datagrams_received = 0;
    g_recv_then_jump_s = 3;
    int rc = tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 1, &r);
    g_recv_then_jump_s = 0;
    g_boot_shift_s = 0;
    CHECK_EQ(rc, -ETIMEDOUT);
    CHECK_EQ(g_datagrams_received, 1);
    CHECK_EQ(atomic_load(&s.requests), 1);
    fake_stop(&s);
}

static void test_query_wall_past_2262(void) {
    fake_server s;
    if (fake_start(&s, AF_INET, scenario_good, 0) != 0) {
        CHECK(!"cannot start a UDP server on 127.0.0.1");
        return;
    }
    /* About 2326: past what int64 nanoseconds hold. The reading saturates
     * (a wrapped one is a signed overflow, which UBSan stops on). The
     * server's time is read as it is, whatever the local wall clock says
     * (the wall clock used to choose the era, and this failed with
     * -ERANGE): the fake server on its own thread answers with the
     * machine's time. */
    tk_sntp_result r;
    struct timespec before, after;
    __real_clock_gettime(CLOCK_REALTIME, &before);
    g_wall_shift_s = 300LL * 365 * 86400;
    int rc = tk_sntp_query("127.0.0.1", s.port, 2 * SEC, 1, &r);
    g_wall_shift_s = 0;
    __real_clock_gettime(CLOCK_REALTIME, &after);
    CHECK_EQ(rc, 0);
    CHECK_EQ(r.receive_wall_ns, INT64_MAX);
    CHECK_GE(r.server_time_ns, (int64_t)before.tv_sec * SEC + before.tv_nsec - SEC);
    CHECK_LE(r.server_time_ns, (int64_t)after.tv_sec * SEC + after.tv_nsec + SEC);
    CHECK_EQ(r.offset_ns, r.server_time_ns - INT64_MAX);
    CHECK_EQ(atomic_load(&s.requests), 1);
    fake_stop(&s);
}

static const test_case tests[] = {
    {"timestamp_known_values", test_timestamp_known_values, 120},
    {"timestamp_round_trip", test_timestamp_round_trip, 120},
    {"timestamp_era_boundary", test_timestamp_era_boundary, 120},
    {"timestamp_window_edges", test_timestamp_window_edges, 120},
    {"packet_round_trip", test_packet_round_trip, 120},
    {"request", test_request, 120},
    {"parse_rejections", test_parse_rejections, 120},
    {"compute_exact", test_compute_exact, 120},
    {"compute_random", test_compute_random, 120},
    {"query_good", test_query_good, 120},
    {"query_wall_past_2262", test_query_wall_past_2262, 120},
    {"query_stops_reading_at_deadline", test_query_stops_reading_at_deadline, 120},
    {"query_rejections", test_query_rejections, 120},
    {"query_spoof_then_good", test_query_spoof_then_good, 120},
    {"query_best_sample", test_query_best_sample, 120},
    {"query_late_replies", test_query_late_replies, 120},
    {"query_kiss_stops", test_query_kiss_stops, 120},
    {"query_timeout", test_query_timeout, 120},
    {"query_eintr", test_query_eintr, 120},
    {"query_refused", test_query_refused, 120},
    {"query_arguments", test_query_arguments, 120},
    {"query_ipv6", test_query_ipv6, 120},
    {"query_name_localhost", test_query_name_localhost, 120},
    {"query_name_addresses", test_query_name_addresses, 120},
    {"query_port_zero", test_query_port_zero, 120},
    {"query_name_unresolvable", test_query_name_unresolvable, 120},
    {"query_name_errors", test_query_name_errors, 120},
    {"check_server", test_check_server, 30},
    {"query_name_timeout", test_query_name_timeout, 120},
    {"query_name_eintr", test_query_name_eintr, 120},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_sntp", tests, sizeof tests / sizeof tests[0]);
}
