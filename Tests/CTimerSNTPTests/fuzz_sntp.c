/*
 * libFuzzer target for the SNTP reply parser and the arithmetic behind it
 * (CTimerSNTP.h). No sockets and no name lookups: only tk_sntp_decode,
 * tk_sntp_encode, tk_sntp_parse_reply, tk_sntp_kiss_code, tk_sntp_compute
 * and the timestamp conversions. Any broken invariant aborts, so the fuzzer reports the input.
 *
 * Input layout (missing bytes read as 0):
 *   [0, 48)    the datagram (an input shorter than 48 bytes is the whole,
 *              short datagram)
 *   48         flags: bit 0 set: the nonce is the packet's own origin (so
 *              most inputs get past the origin check); bit 1: the datagram
 *              is the whole input, trailing bytes included
 *   [49, 57)   the nonce otherwise
 *   [57, 89)   T1 on the boot clock, T1 on the wall clock, the round trip,
 *              a wall-clock step during the exchange (4 x int64, little end)
 *
 * Invariants checked:
 *   - decode then encode gives back the first 48 bytes;
 *   - parse_reply returns 0 or one of its documented errors; on 0 the
 *     packet is a server reply (mode 4, version 3/4, stratum 1..15, leap not
 *     3, transmit non-zero and not before receive, origin == nonce); on
 *     -EACCES the kiss code is four printable characters;
 *   - compute returns 0, -EINVAL, -EBADMSG or -EOVERFLOW; on 0: the
 *     server's timestamps are from 2025 to 2161, whatever the wall clock,
 *     the delay is the round trip minus the server's hold, the server time
 *     is T3 plus half the delay, offset = server time - T4 wall (held at
 *     the ends of int64_t), error >= delay / 2;
 *   - Unix -> NTP -> Unix is exact for a pivot within 68 years.
 *
 * Build:
 *   /opt/swift/usr/bin/clang -std=c11 -g -O1 -D_GNU_SOURCE \
 *     -fsanitize=fuzzer,address,undefined -fuse-ld=lld -ISources/CTimerSNTP/include \
 *     Sources/CTimerSNTP/sntp.c Tests/CTimerSNTPTests/fuzz_sntp.c
 * Run:  ./a.out Tests/CTimerSNTPTests/fuzz-corpus/     (add -max_total_time=N)
 */
#include "CTimerSNTP.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC 1000000000LL

#define REQUIRE(c)                                                              \
    do {                                                                        \
        if (!(c)) {                                                             \
            fprintf(stderr, "fuzz_sntp: invariant failed: %s (line %d)\n", #c,  \
                    __LINE__);                                                  \
            abort();                                                            \
        }                                                                       \
    } while (0)

static uint64_t read_u64(const uint8_t *data, size_t size, size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++) {
        if (at + i < size) v |= (uint64_t)data[at + i] << (8 * i);
    }
    return v;
}

static void check_timestamps(int64_t unix_ns, int64_t distance) {
    /* Within 68 years (2^31 - 1 s) of the pivot, and the pivot itself in
     * range. */
    const int64_t limit = ((1LL << 31) - 1) * SEC;
    distance %= limit;
    int64_t pivot;
    if (__builtin_add_overflow(unix_ns, distance, &pivot)) pivot = unix_ns - distance;
    uint64_t ntp;
    REQUIRE(tk_ntp_from_unix_ns(unix_ns, &ntp) == 0);
    int64_t back = 0;
    REQUIRE(tk_ntp_to_unix_ns(ntp, pivot, &back) == 0);
    REQUIRE(back == unix_ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t flags = size > 48 ? data[48] : 0;
    size_t datagram = size < TK_SNTP_PACKET_SIZE ? size
                      : (flags & 2)              ? size
                                                 : TK_SNTP_PACKET_SIZE;

    tk_sntp_packet raw;
    int decoded = tk_sntp_decode(data, datagram, &raw);
    if (datagram < TK_SNTP_PACKET_SIZE) {
        REQUIRE(decoded == -EMSGSIZE);
    } else {
        REQUIRE(decoded == 0);
        uint8_t again[TK_SNTP_PACKET_SIZE];
        REQUIRE(tk_sntp_encode(&raw, again, sizeof again) == 0);
        REQUIRE(memcmp(again, data, TK_SNTP_PACKET_SIZE) == 0);
    }

    uint64_t nonce = (flags & 1) && decoded == 0 ? raw.origin_time : read_u64(data, size, 49);
    tk_sntp_packet packet;
    int rc = tk_sntp_parse_reply(data, datagram, nonce, &packet);
    switch (rc) {
    case 0:
        REQUIRE(nonce != 0 && packet.origin_time == nonce);
        REQUIRE(packet.mode == TK_SNTP_MODE_SERVER);
        REQUIRE(packet.version == 3 || packet.version == 4);
        REQUIRE(packet.stratum >= 1 && packet.stratum <= 15);
        REQUIRE(packet.leap != TK_SNTP_LEAP_UNSYNCHRONISED);
        REQUIRE(packet.transmit_time != 0);
        break;
    case -EACCES: {
        REQUIRE(packet.stratum == 0 && packet.origin_time == nonce);
        char code[5];
        REQUIRE(tk_sntp_kiss_code(&packet, code) == 0);
        REQUIRE(strlen(code) == 4);
        for (int i = 0; i < 4; i++) REQUIRE(code[i] >= 0x20 && code[i] < 0x7F);
        break;
    }
    case -EINVAL:
        REQUIRE(nonce == 0);
        break;
    case -EMSGSIZE:
        REQUIRE(datagram < TK_SNTP_PACKET_SIZE);
        break;
    case -ENOMSG:
        REQUIRE(packet.origin_time != nonce);
        break;
    case -EPROTO:
    case -EPROTONOSUPPORT:
    case -ENODATA:
    case -ERANGE:
    case -EBADMSG:
        REQUIRE(packet.origin_time == nonce);
        break;
    default:
        REQUIRE(!"unexpected error from tk_sntp_parse_reply");
    }

    int64_t t1_boot = (int64_t)read_u64(data, size, 57);
    int64_t t1_wall = (int64_t)read_u64(data, size, 65);
    int64_t round_trip = (int64_t)read_u64(data, size, 73);
    int64_t step = (int64_t)read_u64(data, size, 81);
    if (decoded == 0) {
        /* Compute on any decodable packet, valid or not: it must not
         * overflow or misbehave. */
        int64_t t4_boot, t4_wall;
        if (__builtin_add_overflow(t1_boot, round_trip, &t4_boot)) t4_boot = t1_boot;
        if (__builtin_add_overflow(t1_wall, round_trip, &t4_wall) ||
            __builtin_add_overflow(t4_wall, step, &t4_wall)) {
            t4_wall = t1_wall;
        }
        tk_sntp_result r;
        int c = tk_sntp_compute(&raw, t1_boot, t1_wall, t4_boot, t4_wall, &r);
        REQUIRE(c == 0 || c == -EINVAL || c == -EBADMSG || c == -EOVERFLOW);
        if (c == 0) {
            /* From 2025 to 2161, whatever the wall clock reads. */
            const int64_t span_end = TK_SNTP_PIVOT_FLOOR_NS + 4294967296LL * 1000000000LL;
            REQUIRE(r.server_receive_ns >= TK_SNTP_PIVOT_FLOOR_NS && r.server_receive_ns < span_end);
            REQUIRE(r.server_transmit_ns >= TK_SNTP_PIVOT_FLOOR_NS && r.server_transmit_ns < span_end);
            REQUIRE(t1_boot >= 0 && t4_boot >= t1_boot);
            int64_t hold = r.server_transmit_ns - r.server_receive_ns;
            REQUIRE(hold >= 0);
            REQUIRE(r.delay_ns == (t4_boot - t1_boot) - hold);
            REQUIRE(r.delay_ns >= 0);
            REQUIRE(r.server_time_ns == r.server_transmit_ns + r.delay_ns / 2);
            int64_t offset;
            if (__builtin_sub_overflow(r.server_time_ns, t4_wall, &offset)) {
                offset = t4_wall < 0 ? INT64_MAX : INT64_MIN;
            }
            REQUIRE(r.offset_ns == offset);
            REQUIRE(r.error_ns >= r.delay_ns / 2);
            REQUIRE(r.error_ns >= r.root_dispersion_ns);
            REQUIRE(r.stratum == raw.stratum && r.reference_id == raw.reference_id);
        }
    }

    check_timestamps((int64_t)read_u64(data, size, 0), (int64_t)read_u64(data, size, 8));
    check_timestamps(t1_wall, round_trip);
    return 0;
}
