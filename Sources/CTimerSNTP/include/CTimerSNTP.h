/*
 * CTimerSNTP: a Simple Network Time Protocol client (RFC 4330, with the
 * era and error rules of RFC 5905), part of TimerKit, in a module of its own.
 *
 * What it gives: the server's time at a local instant read on the boot clock
 * (CLOCK_BOOTTIME, which the user cannot set and which counts time spent
 * suspended), with an error bound. That is what a clock that a changed wall
 * clock cannot cheat is built on (TimerKit's TrustedClock).
 *
 * The pieces can be used alone: NTP timestamp conversion, building a request,
 * decoding and validating a reply, computing delay, offset and error from the
 * four timestamps of an exchange, and a blocking UDP query that does it all,
 * to an address literal or to a host name.
 *
 * Conventions as in CTimerCore.h (it does not need that header): 0 or a
 * negative errno value; times are signed 64-bit nanoseconds (Unix time for
 * wall-clock values); no function aborts on bad input.
 *
 * Memory: one call allocates, and only in one case: tk_sntp_query given a
 * host name (anything inet_pton(3) does not read as an IPv4 or IPv6 address)
 * allocates a lookup record (with a copy of the name), opens an eventfd,
 * starts a detached helper thread, and getaddrinfo(3) allocates its results.
 * All of it is freed or closed before tk_sntp_query returns, except after a
 * lookup that missed the timeout: getaddrinfo cannot be interrupted, so the
 * helper thread runs on and frees it all when getaddrinfo returns (at the
 * latest when the resolver's own timeouts run out, see resolv.conf(5)).
 * Every other function, and tk_sntp_query given an address literal, never
 * allocates.
 *
 * Errors of a reply (tk_sntp_parse_reply, tk_sntp_query), one errno each, in
 * the order they are checked:
 *   -EMSGSIZE         the reply is shorter than 48 bytes;
 *   -ENOMSG           its origin timestamp is not the transmit timestamp of
 *                     our request: a reply to someone else, or spoofed;
 *   -EPROTO           its mode is not 4 (server);
 *   -EPROTONOSUPPORT  its version is not 3 or 4;
 *   -EACCES           stratum 0, a kiss-of-death: the server refuses to serve
 *                     us; the four-letter kiss code (RATE, DENY, RSTR, ...)
 *                     is in the result's `kiss_code`;
 *   -ENODATA          leap indicator 3: the server's clock is not
 *                     synchronised;
 *   -ERANGE           stratum above 15;
 *   -EBADMSG          transmit timestamp zero, or earlier than the receive
 *                     timestamp.
 * A reply that passes them is then refused by tk_sntp_query if
 * tk_sntp_compute refuses it: -EBADMSG for a server that held it longer than
 * the round trip, -EOVERFLOW for a server time past int64_t.
 *
 * Errors of a host name (tk_sntp_query), besides -ETIMEDOUT (see there):
 *   -EINVAL           not a name: empty, longer than 253 characters (254
 *                     with a final dot), an empty label ("a..b", ".a") or
 *                     one longer than 63, or a character other than a
 *                     letter, digit, '-', '_' or '.' (so "[::1]",
 *                     "host:123", spaces and non-ASCII; use the IDNA "xn--"
 *                     form); checked before any lookup;
 *   -ENXIO            the name does not resolve: no such name, no address
 *                     for it, no IPv4 or IPv6 address (EAI_NONAME,
 *                     EAI_NODATA, EAI_FAMILY, EAI_ADDRFAMILY);
 *   -EAGAIN           temporary failure: the name server did not answer or
 *                     said to try again (EAI_AGAIN), or no helper thread
 *                     could be started now (pthread_create's EAGAIN);
 *   -EREMOTEIO        the name server failed for good (EAI_FAIL: refused,
 *                     malformed answer);
 *   -ENOMEM           out of memory (EAI_MEMORY, or the lookup itself);
 *   -errno            a system error during the lookup (EAI_SYSTEM, e.g.
 *                     -EMFILE), or of eventfd(2).
 */
#ifndef CTIMERSNTP_H
#define CTIMERSNTP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The size of an NTP packet without extension fields or MAC. */
#define TK_SNTP_PACKET_SIZE 48

/** The standard NTP port. */
#define TK_SNTP_PORT 123

/** Seconds from the NTP prime epoch (1900-01-01 00:00 UTC) to the Unix epoch. */
#define TK_NTP_UNIX_EPOCH_OFFSET 2208988800LL

/**
 * Where tk_sntp_compute and tk_sntp_query place the server's timestamps. An
 * NTP timestamp names a time only within an era of 2^32 seconds (136
 * years); they read it as the one time it can be from
 * TK_SNTP_PIVOT_FLOOR_NS (2025-01-01 00:00:00 UTC, in Unix nanoseconds) to
 * 2^32 s later (2161-02-07 06:28:16 UTC), by converting it with
 * tk_ntp_to_unix_ns around TK_SNTP_PIVOT_NS, the middle of that span.
 *
 * The local wall clock plays no part in it: a wall clock set decades ahead
 * or back, or a dead RTC that restarted in 1970, cannot move the server's
 * time to another era (a trusted clock is built on this). A program that
 * must read times outside that span converts the reply's timestamps itself.
 */
#define TK_SNTP_PIVOT_FLOOR_NS (1735689600LL * 1000000000LL)
#define TK_SNTP_PIVOT_NS (TK_SNTP_PIVOT_FLOOR_NS + 2147483648LL * 1000000000LL)

/** The NTP modes this client sends and accepts. */
#define TK_SNTP_MODE_CLIENT 3
#define TK_SNTP_MODE_SERVER 4

/** Leap indicator 3: the clock is not synchronised. */
#define TK_SNTP_LEAP_UNSYNCHRONISED 3

/** The most `samples` tk_sntp_query takes. */
#define TK_SNTP_MAX_SAMPLES 64

/** The most addresses of a host name tk_sntp_query tries (the first ones). */
#define TK_SNTP_MAX_ADDRESSES 8

/**
 * The frequency tolerance RFC 5905 assumes for the local clock (PHI, 15 parts
 * per million); the error bound grows by this fraction of the round trip.
 */
#define TK_SNTP_PHI_PPM 15

/** The fields of an NTP packet, decoded (all in host byte order). */
typedef struct tk_sntp_packet {
    /** Leap indicator, 0..3 (3: unsynchronised). */
    uint8_t leap;
    /** Version number, 0..7. */
    uint8_t version;
    /** Mode, 0..7 (3: client, 4: server). */
    uint8_t mode;
    /** Stratum: 0 kiss-of-death, 1 primary, 2..15 secondary, 16 unsynchronised. */
    uint8_t stratum;
    /** Poll interval, log2 seconds. */
    int8_t poll;
    /** The server clock's precision, log2 seconds (e.g. -20 is about 1 µs). */
    int8_t precision;
    /** Round trip to the primary reference, NTP short format (16.16 seconds). */
    uint32_t root_delay;
    /** Dispersion to the primary reference, NTP short format. */
    uint32_t root_dispersion;
    /** Reference id; for stratum 0, the kiss code as four ASCII letters. */
    uint32_t reference_id;
    /** NTP timestamps (32.32 seconds since the era's start). */
    uint64_t reference_time;
    uint64_t origin_time;
    uint64_t receive_time;
    uint64_t transmit_time;
} tk_sntp_packet;

/** The outcome of one exchange with a server (or of the best of several). */
typedef struct tk_sntp_result {
    /** T1: when the request was sent, on the boot clock (CLOCK_BOOTTIME). */
    int64_t send_boot_ns;
    /** T4: when the reply was received, on the boot clock. */
    int64_t receive_boot_ns;
    /** T1 on the wall clock (CLOCK_REALTIME), Unix nanoseconds. */
    int64_t send_wall_ns;
    /** T4 on the wall clock, Unix nanoseconds. */
    int64_t receive_wall_ns;
    /** T2: when the server received the request, Unix nanoseconds. */
    int64_t server_receive_ns;
    /** T3: when the server sent the reply, Unix nanoseconds. */
    int64_t server_transmit_ns;
    /**
     * Round-trip delay, (T4 - T1) - (T3 - T2), with T4 - T1 measured on the
     * boot clock (so a wall-clock step during the exchange does not matter).
     */
    int64_t delay_ns;
    /** The server's time at T4, T3 + delay / 2, Unix nanoseconds. */
    int64_t server_time_ns;
    /** server_time_ns - receive_wall_ns: how far the local wall clock is
     *  behind; held at INT64_MAX where the difference does not fit (a wall
     *  clock read before 1868; the server time is from 2025 on). */
    int64_t offset_ns;
    /**
     * How far server_time_ns may be from true time: delay / 2 (the most the
     * path's asymmetry can add) + root delay / 2 + root dispersion (the
     * server's own distance to its reference) + the server's precision + PHI
     * times the round trip. Rounded up, and held at INT64_MAX where the sum
     * would pass it: a bound that large never understates.
     */
    int64_t error_ns;
    /** The reply's root delay, root dispersion and precision, in nanoseconds
     *  (a precision of 2^34 s or more, beyond int64_t, reads INT64_MAX). */
    int64_t root_delay_ns;
    int64_t root_dispersion_ns;
    int64_t precision_ns;
    /** The reply's reference id (an IPv4 address, or a refclock's ASCII tag). */
    uint32_t reference_id;
    uint8_t leap;
    uint8_t version;
    uint8_t stratum;
    int8_t poll;
    /** For a kiss-of-death (-EACCES): the kiss code, NUL-terminated; else "". */
    char kiss_code[5];
    /** tk_sntp_query: requests sent (to every address tried) and valid
     *  replies received. */
    uint32_t requests_sent;
    uint32_t replies_accepted;
} tk_sntp_result;

/* ------------------------------------------------------------------------
 * Timestamps
 * ------------------------------------------------------------------------ */

/**
 * Converts Unix time in nanoseconds to a 64-bit NTP timestamp (32 bits of
 * seconds, 32 of fraction), rounding to the nearest 2^-32 s. The era number
 * is not part of a timestamp: 2036-02-07 06:28:16 UTC (the start of era 1)
 * becomes seconds 0 again. Returns 0, or -EINVAL for NULL.
 */
int tk_ntp_from_unix_ns(int64_t unix_ns, uint64_t *ntp);

/**
 * Converts an NTP timestamp to Unix nanoseconds (rounding to the nearest
 * nanosecond), choosing the era that puts the result nearest `pivot_ns` (RFC
 * 5905): the result's whole second s satisfies
 * pivot_s - 2^31 <= s < pivot_s + 2^31, where pivot_s = floor(pivot_ns / 1e9).
 * So for every `unix_ns` within 68 years of the pivot,
 * tk_ntp_from_unix_ns then tk_ntp_to_unix_ns gives back `unix_ns` exactly.
 * Returns 0, -EINVAL for NULL, or -ERANGE if the result does not fit in an
 * int64_t.
 */
int tk_ntp_to_unix_ns(uint64_t ntp, int64_t pivot_ns, int64_t *unix_ns);

/** Converts an NTP short value (16.16 seconds) to nanoseconds, rounded up. */
int64_t tk_ntp_short_to_ns(uint32_t value);

/* ------------------------------------------------------------------------
 * Packets
 * ------------------------------------------------------------------------ */

/**
 * Writes `packet` into `buffer` in network format (48 bytes). Returns 0, or
 * -EINVAL for NULL or a field out of range (leap > 3, version or mode > 7), or
 * -EMSGSIZE if `size` < TK_SNTP_PACKET_SIZE.
 */
int tk_sntp_encode(const tk_sntp_packet *packet, void *buffer, size_t size);

/**
 * Reads the first 48 bytes of `data` into `*packet`, without judging them.
 * Returns 0, -EINVAL for NULL, or -EMSGSIZE if `size` < TK_SNTP_PACKET_SIZE.
 */
int tk_sntp_decode(const void *data, size_t size, tk_sntp_packet *packet);

/**
 * Builds a client request (mode 3, version 4, everything else zero but the
 * transmit timestamp) into `buffer` (at least 48 bytes). The transmit
 * timestamp is a random non-zero nonce, not the local time (so the request
 * tells nothing about the local clock); it is stored in `*nonce`, and a
 * genuine reply carries it back as its origin timestamp. Returns 0, -EINVAL
 * or -EMSGSIZE. Uses getrandom(2) without blocking; if the kernel has no
 * entropy yet, a mix of clock readings and a counter.
 */
int tk_sntp_build_request(void *buffer, size_t size, uint64_t *nonce);

/**
 * Decodes and validates a reply to the request whose transmit timestamp was
 * `nonce`. The checks, in order, each with its own error (see the top of this
 * header): length, origin == nonce (only a reply that passes it is known to
 * answer our request), mode, version, stratum 0 (kiss-of-death), leap
 * indicator 3, stratum > 15, transmit timestamp zero or before the receive
 * timestamp. `*packet` is filled whenever the packet could be decoded (also on
 * error), so a caller can read a kiss code from `reference_id`. Returns 0 or
 * one of those errors; -EINVAL for NULL or a zero nonce.
 */
int tk_sntp_parse_reply(const void *data, size_t size, uint64_t nonce,
                        tk_sntp_packet *packet);

/**
 * Copies the kiss code of a stratum-0 packet (its reference id as four ASCII
 * characters, any non-printable one replaced by '?') and a NUL into `code`.
 * Returns 0, or -EINVAL for NULL or a packet whose stratum is not 0.
 */
int tk_sntp_kiss_code(const tk_sntp_packet *packet, char code[5]);

/* ------------------------------------------------------------------------
 * Computing
 * ------------------------------------------------------------------------ */

/**
 * Computes delay, server time, offset and error bound from a validated reply
 * and the local readings of the exchange: T1 (send) and T4 (receive) on the
 * boot clock and the wall clock. Fills every field of `*result` except the
 * request counters. The server's timestamps are placed in the era that puts
 * them from 2025 to 2161, whatever the local wall clock reads (see
 * TK_SNTP_PIVOT_FLOOR_NS); the wall readings give only the offset.
 *
 * Returns 0; -EINVAL for NULL, a negative boot reading or T4 before T1 on the
 * boot clock; -EBADMSG if the server's processing time (T3 - T2) is longer
 * than the round trip (T4 - T1) or negative; -EOVERFLOW if the server time
 * does not fit in int64_t (a server late in the span and a round trip of two
 * centuries on the boot clock). The offset, the error bound and the
 * precision are held at INT64_MAX instead (see tk_sntp_result). On an error
 * `*result` is left as it was.
 */
int tk_sntp_compute(const tk_sntp_packet *reply, int64_t send_boot_ns,
                    int64_t send_wall_ns, int64_t receive_boot_ns,
                    int64_t receive_wall_ns, tk_sntp_result *result);

/* ------------------------------------------------------------------------
 * Querying
 * ------------------------------------------------------------------------ */

/**
 * Checks that `server` can name a server for tk_sntp_query: an IPv4 or IPv6
 * address literal, or a host name (labels of 1..63 letters, digits, '-' or
 * '_' separated by dots, at most 253 characters). Returns 0, or -EINVAL for
 * NULL or anything else, the -EINVAL tk_sntp_query returns for such a name
 * before any lookup. Lets a caller tell a malformed name from the query's
 * other -EINVAL (a connect refused for an address, for example). Does not
 * allocate or resolve.
 */
int tk_sntp_check_server(const char *server);

/**
 * Asks an SNTP server for the time: sends `samples` requests one after the
 * other over UDP, each waiting at most `timeout_ns` (on the boot clock) for
 * its reply, and keeps the valid reply with the smallest delay. A datagram
 * read once a request's time is up counts for nothing, so that datagrams
 * still coming (a flood of forged ones) cannot hold the query past it.
 *
 * `address` is an IPv4 or IPv6 address literal ("127.0.0.1", "::1"; no
 * brackets, no port, no scope "%eth0"), used as is, or a host name
 * ("localhost", "ntp.example.org"). A name is resolved first, with
 * getaddrinfo(3) on a helper thread (it allocates: see the top of this
 * header), within `timeout_ns`; then its addresses (IPv4 and IPv6, in
 * getaddrinfo's order, duplicates dropped, the first TK_SNTP_MAX_ADDRESSES)
 * are tried in turn: an address that does not answer its first request
 * (nothing within `timeout_ns`, a port-unreachable, or a socket error) is
 * left for the next one; the first address that answers (any datagram that
 * passes the origin check, valid or not) gets the `samples` requests, and
 * its outcome is the query's. The last address is asked like a literal.
 * `port` 0 means TK_SNTP_PORT (123).
 *
 * The socket is connected, so datagrams from other addresses are never read.
 * A datagram that is too short or whose origin does not match the request
 * cannot be told apart from a forgery: it is noted and the wait goes on (a
 * late reply to an earlier request of the same query is dropped silently), so
 * a spoofed datagram cannot end a wait. A reply that matches but is rejected
 * (wrong mode, unsynchronised, ...) ends its sample. Interrupted system calls
 * are resumed with the remaining time; no signal is used.
 *
 * A kiss-of-death ends the query at once (RFC 4330: stop sending), whichever
 * address sent it: -EACCES with the code in `result->kiss_code`. Samples are
 * sent back to back: use 1 sample with public servers, which rate-limit
 * clients.
 *
 * Time: with a literal, at most `samples` x `timeout_ns`; with a name, at
 * most `timeout_ns` for the lookup, plus `timeout_ns` for each address left,
 * plus `samples` x `timeout_ns`.
 *
 * Returns 0 with the best sample in `*result` (also when a later request
 * failed: a valid reply in hand is kept); -EINVAL for NULL, `timeout_ns` <= 0,
 * `samples` outside 1..TK_SNTP_MAX_SAMPLES, or an `address` that is neither
 * a literal nor a name; for a name, the lookup's errors (see the top of this
 * header: -ENXIO, -EAGAIN, -EREMOTEIO, -ENOMEM, -errno) and -ETIMEDOUT if it
 * did not finish within `timeout_ns` (then `result->requests_sent` is 0);
 * the errno of socket/connect/send/recv (e.g. -ECONNREFUSED when nothing
 * listens on the port), of the last address tried; if no valid reply came,
 * the error of the last reply rejected (see the top of this header), or
 * -ETIMEDOUT if no reply came at all. On error, `result->requests_sent` says
 * how many requests went out, to every address tried.
 */
int tk_sntp_query(const char *address, uint16_t port, int64_t timeout_ns,
                  unsigned samples, tk_sntp_result *result);

#ifdef __cplusplus
}
#endif

#endif /* CTIMERSNTP_H */
