/*
 * SNTP client (RFC 4330; era and error rules of RFC 5905): timestamp
 * conversion, packets, the offset/delay/error arithmetic, and a blocking UDP
 * query on a non-blocking socket with ppoll. See CTimerSNTP.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerSNTP.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define NS_PER_S 1000000000LL
#define ERA_SECONDS (1LL << 32)
#define HALF_ERA_SECONDS (1LL << 31)

_Static_assert(TK_SNTP_PACKET_SIZE == 48, "an NTP header is 48 bytes");

/* ------------------------------------------------------------------------
 * Small arithmetic helpers
 * ------------------------------------------------------------------------ */

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b) != 0 && a < 0) q -= 1;
    return q;
}

/* a + b, saturating at INT64_MAX; both non-negative. */
static int64_t add_sat_nonneg(int64_t a, int64_t b) {
    int64_t sum;
    if (__builtin_add_overflow(a, b, &sum)) return INT64_MAX;
    return sum;
}

/* ceil(a / 2) for a >= 0. */
static int64_t half_up(int64_t a) { return a / 2 + (a % 2); }

/* Reads CLOCK_BOOTTIME or CLOCK_REALTIME in nanoseconds. clock_gettime cannot
 * fail for these ids on Linux. */
static int64_t read_clock(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* A non-negative duration as a timespec. */
static struct timespec to_timespec(int64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S)};
    return ts;
}

/* ------------------------------------------------------------------------
 * Timestamps
 * ------------------------------------------------------------------------ */

int tk_ntp_from_unix_ns(int64_t unix_ns, uint64_t *ntp) {
    if (ntp == NULL) return -EINVAL;
    int64_t seconds = unix_ns / NS_PER_S;
    int64_t nanoseconds = unix_ns % NS_PER_S;
    if (nanoseconds < 0) { /* floor, without overflowing at INT64_MIN */
        nanoseconds += NS_PER_S;
        seconds -= 1;
    }
    /* Modulo 2^32: the era number is not part of a timestamp. Unsigned
     * arithmetic wraps, which is exactly that. */
    uint32_t ntp_seconds = (uint32_t)((uint64_t)seconds + (uint64_t)TK_NTP_UNIX_EPOCH_OFFSET);
    /* Nearest 2^-32 s; at most 4294967292 for 999999999 ns, so no carry. */
    uint64_t fraction =
        (((uint64_t)nanoseconds << 32) + (uint64_t)(NS_PER_S / 2)) / (uint64_t)NS_PER_S;
    *ntp = ((uint64_t)ntp_seconds << 32) | fraction;
    return 0;
}

int tk_ntp_to_unix_ns(uint64_t ntp, int64_t pivot_ns, int64_t *unix_ns) {
    if (unix_ns == NULL) return -EINVAL;
    int64_t era0_seconds = (int64_t)(ntp >> 32) - TK_NTP_UNIX_EPOCH_OFFSET;
    uint64_t fraction = ntp & 0xFFFFFFFFu;
    /* Nearest nanosecond; may be 1e9 for a fraction within half a
     * nanosecond of the next second, which the sum below carries. */
    int64_t nanoseconds = (int64_t)((fraction * (uint64_t)NS_PER_S + (1ULL << 31)) >> 32);
    int64_t pivot_seconds = floor_div(pivot_ns, NS_PER_S);
    /* The era e with pivot_s - 2^31 <= era0 + e * 2^32 < pivot_s + 2^31. */
    int64_t era = floor_div(pivot_seconds - era0_seconds + HALF_ERA_SECONDS - 1, ERA_SECONDS);
    int64_t seconds = era0_seconds + era * ERA_SECONDS;
    if (seconds < 0) { /* so that seconds * 1e9 stays in range near INT64_MIN */
        seconds += 1;
        nanoseconds -= NS_PER_S;
    }
    int64_t scaled, total;
    if (__builtin_mul_overflow(seconds, NS_PER_S, &scaled) ||
        __builtin_add_overflow(scaled, nanoseconds, &total)) {
        return -ERANGE;
    }
    *unix_ns = total;
    return 0;
}

int64_t tk_ntp_short_to_ns(uint32_t value) {
    /* value < 2^32, so value * 1e9 < 4.3e18 fits; round up. */
    uint64_t scaled = (uint64_t)value * (uint64_t)NS_PER_S;
    return (int64_t)((scaled + 0xFFFFu) >> 16);
}

/* 2^precision seconds in nanoseconds, rounded up, saturating. */
static int64_t precision_to_ns(int8_t precision) {
    if (precision >= 0) {
        if (precision > 33) return INT64_MAX; /* 1e9 * 2^34 overflows */
        return NS_PER_S << precision;
    }
    int shift = -precision;
    if (shift >= 63) return 1;
    int64_t whole = NS_PER_S >> shift;
    int64_t rest = NS_PER_S & ((1LL << shift) - 1);
    return whole + (rest != 0 ? 1 : 0);
}

/* ------------------------------------------------------------------------
 * Packets
 * ------------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v) {
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t get64(const uint8_t *p) {
    return ((uint64_t)get32(p) << 32) | get32(p + 4);
}

int tk_sntp_encode(const tk_sntp_packet *packet, void *buffer, size_t size) {
    if (packet == NULL || buffer == NULL) return -EINVAL;
    if (packet->leap > 3 || packet->version > 7 || packet->mode > 7) return -EINVAL;
    if (size < TK_SNTP_PACKET_SIZE) return -EMSGSIZE;
    uint8_t *p = buffer;
    p[0] = (uint8_t)((packet->leap << 6) | (packet->version << 3) | packet->mode);
    p[1] = packet->stratum;
    p[2] = (uint8_t)packet->poll;
    p[3] = (uint8_t)packet->precision;
    put32(p + 4, packet->root_delay);
    put32(p + 8, packet->root_dispersion);
    put32(p + 12, packet->reference_id);
    put64(p + 16, packet->reference_time);
    put64(p + 24, packet->origin_time);
    put64(p + 32, packet->receive_time);
    put64(p + 40, packet->transmit_time);
    return 0;
}

int tk_sntp_decode(const void *data, size_t size, tk_sntp_packet *packet) {
    if (data == NULL || packet == NULL) return -EINVAL;
    if (size < TK_SNTP_PACKET_SIZE) return -EMSGSIZE;
    const uint8_t *p = data;
    packet->leap = (uint8_t)(p[0] >> 6);
    packet->version = (uint8_t)((p[0] >> 3) & 7);
    packet->mode = (uint8_t)(p[0] & 7);
    packet->stratum = p[1];
    packet->poll = (int8_t)p[2];
    packet->precision = (int8_t)p[3];
    packet->root_delay = get32(p + 4);
    packet->root_dispersion = get32(p + 8);
    packet->reference_id = get32(p + 12);
    packet->reference_time = get64(p + 16);
    packet->origin_time = get64(p + 24);
    packet->receive_time = get64(p + 32);
    packet->transmit_time = get64(p + 40);
    return 0;
}

/* A random 64-bit value: getrandom without blocking, else a SplitMix64 mix
 * of the clocks, the stack address and a counter. */
static uint64_t random_u64(void) {
    uint64_t value;
    ssize_t got;
    do {
        got = getrandom(&value, sizeof value, GRND_NONBLOCK);
    } while (got < 0 && errno == EINTR);
    if (got == (ssize_t)sizeof value) return value;
    static _Atomic uint64_t counter;
    uint64_t z = (uint64_t)read_clock(CLOCK_BOOTTIME) ^
                 ((uint64_t)read_clock(CLOCK_REALTIME) << 1) ^
                 (uint64_t)(uintptr_t)&value ^
                 (atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int tk_sntp_build_request(void *buffer, size_t size, uint64_t *nonce) {
    if (buffer == NULL || nonce == NULL) return -EINVAL;
    if (size < TK_SNTP_PACKET_SIZE) return -EMSGSIZE;
    uint64_t value;
    do {
        value = random_u64();
    } while (value == 0);
    tk_sntp_packet request;
    memset(&request, 0, sizeof request);
    request.version = 4;
    request.mode = TK_SNTP_MODE_CLIENT;
    request.transmit_time = value;
    int rc = tk_sntp_encode(&request, buffer, size);
    if (rc != 0) return rc;
    *nonce = value;
    return 0;
}

int tk_sntp_parse_reply(const void *data, size_t size, uint64_t nonce,
                        tk_sntp_packet *packet) {
    if (data == NULL || packet == NULL || nonce == 0) return -EINVAL;
    int rc = tk_sntp_decode(data, size, packet);
    if (rc != 0) return rc;
    if (packet->origin_time != nonce) return -ENOMSG;
    if (packet->mode != TK_SNTP_MODE_SERVER) return -EPROTO;
    if (packet->version != 3 && packet->version != 4) return -EPROTONOSUPPORT;
    if (packet->stratum == 0) return -EACCES;
    if (packet->leap == TK_SNTP_LEAP_UNSYNCHRONISED) return -ENODATA;
    if (packet->stratum > 15) return -ERANGE;
    if (packet->transmit_time == 0) return -EBADMSG;
    /* Transmit before receive: compare in the era of the transmit time. The
     * difference of two timestamps modulo 2^64, read as signed, is right for
     * any two instants less than 68 years apart. */
    if ((int64_t)(packet->transmit_time - packet->receive_time) < 0) return -EBADMSG;
    return 0;
}

int tk_sntp_kiss_code(const tk_sntp_packet *packet, char code[5]) {
    if (packet == NULL || code == NULL || packet->stratum != 0) return -EINVAL;
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(packet->reference_id >> (24 - 8 * i));
        code[i] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
    }
    code[4] = '\0';
    return 0;
}

/* ------------------------------------------------------------------------
 * Computing
 * ------------------------------------------------------------------------ */

int tk_sntp_compute(const tk_sntp_packet *reply, int64_t send_boot_ns,
                    int64_t send_wall_ns, int64_t receive_boot_ns,
                    int64_t receive_wall_ns, tk_sntp_result *result) {
    if (reply == NULL || result == NULL) return -EINVAL;
    if (send_boot_ns < 0 || receive_boot_ns < send_boot_ns) return -EINVAL;
    int64_t pivot = receive_wall_ns < TK_SNTP_PIVOT_FLOOR_NS ? TK_SNTP_PIVOT_FLOOR_NS
                                                            : receive_wall_ns;
    int64_t t2, t3;
    int rc = tk_ntp_to_unix_ns(reply->receive_time, pivot, &t2);
    if (rc != 0) return rc;
    rc = tk_ntp_to_unix_ns(reply->transmit_time, pivot, &t3);
    if (rc != 0) return rc;
    /* Both lie within 2^31 s of the pivot: the difference fits. */
    int64_t processing = t3 - t2;
    int64_t round_trip = receive_boot_ns - send_boot_ns;
    if (processing < 0 || processing > round_trip) return -EBADMSG;
    int64_t delay = round_trip - processing;
    int64_t server_time, offset;
    if (__builtin_add_overflow(t3, delay / 2, &server_time) ||
        __builtin_sub_overflow(server_time, receive_wall_ns, &offset)) {
        return -ERANGE;
    }
    int64_t root_delay = tk_ntp_short_to_ns(reply->root_delay);
    int64_t root_dispersion = tk_ntp_short_to_ns(reply->root_dispersion);
    int64_t precision = precision_to_ns(reply->precision);
    /* PHI * round trip, rounded up, without overflowing. */
    int64_t wander = (round_trip / 1000000) * TK_SNTP_PHI_PPM +
                     ((round_trip % 1000000) * TK_SNTP_PHI_PPM + 999999) / 1000000;
    int64_t error = half_up(delay);
    error = add_sat_nonneg(error, half_up(root_delay));
    error = add_sat_nonneg(error, root_dispersion);
    error = add_sat_nonneg(error, precision);
    error = add_sat_nonneg(error, wander);

    memset(result, 0, sizeof *result);
    result->send_boot_ns = send_boot_ns;
    result->receive_boot_ns = receive_boot_ns;
    result->send_wall_ns = send_wall_ns;
    result->receive_wall_ns = receive_wall_ns;
    result->server_receive_ns = t2;
    result->server_transmit_ns = t3;
    result->delay_ns = delay;
    result->server_time_ns = server_time;
    result->offset_ns = offset;
    result->error_ns = error;
    result->root_delay_ns = root_delay;
    result->root_dispersion_ns = root_dispersion;
    result->precision_ns = precision;
    result->reference_id = reply->reference_id;
    result->leap = reply->leap;
    result->version = reply->version;
    result->stratum = reply->stratum;
    result->poll = reply->poll;
    return 0;
}

/* ------------------------------------------------------------------------
 * Querying
 * ------------------------------------------------------------------------ */

/* Parses an IPv4 or IPv6 literal into `address`. */
static int parse_address(const char *text, uint16_t port, struct sockaddr_storage *address,
                         socklen_t *length) {
    memset(address, 0, sizeof *address);
    struct sockaddr_in *v4 = (struct sockaddr_in *)address;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *length = sizeof *v4;
        return 0;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)address;
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *length = sizeof *v6;
        return 0;
    }
    return -EINVAL;
}

/* Waits until `fd` has `events` or the boot clock reaches `deadline`.
 * Returns 1 when ready, 0 at the deadline, or -errno. EINTR-safe. */
static int wait_for(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t now = read_clock(CLOCK_BOOTTIME);
        if (now >= deadline) return 0;
        struct timespec remaining = to_timespec(deadline - now);
        struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
        int ready = ppoll(&pfd, 1, &remaining, NULL);
        if (ready > 0) return 1;
        if (ready < 0 && errno != EINTR) return -errno;
        /* 0 (the kernel's timeout ended, perhaps a hair early against the
         * boot clock) or EINTR: check the deadline again. */
    }
}

/* Sends one datagram before `deadline`. 0 or -errno (-ETIMEDOUT). */
static int send_request(int fd, const uint8_t *request, int64_t deadline) {
    for (;;) {
        ssize_t sent = send(fd, request, TK_SNTP_PACKET_SIZE, MSG_NOSIGNAL);
        if (sent == TK_SNTP_PACKET_SIZE) return 0;
        if (sent >= 0) return -EIO;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
        int ready = wait_for(fd, POLLOUT, deadline);
        if (ready < 0) return ready;
        if (ready == 0) return -ETIMEDOUT;
    }
}

/* Whether an error of tk_sntp_parse_reply means "cannot be ours", so the
 * wait for our reply goes on. */
static int is_unauthenticated(int error) { return error == -EMSGSIZE || error == -ENOMSG; }

int tk_sntp_query(const char *address, uint16_t port, int64_t timeout_ns,
                  unsigned samples, tk_sntp_result *result) {
    if (address == NULL || result == NULL || port == 0 || timeout_ns <= 0 || samples == 0 ||
        samples > TK_SNTP_MAX_SAMPLES) {
        return -EINVAL;
    }
    memset(result, 0, sizeof *result);
    struct sockaddr_storage server;
    socklen_t server_length;
    if (parse_address(address, port, &server, &server_length) != 0) return -EINVAL;

    int fd = socket(server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int rc;
    do {
        rc = connect(fd, (const struct sockaddr *)&server, server_length);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }

    uint64_t nonces[TK_SNTP_MAX_SAMPLES];
    tk_sntp_result best;
    int have_best = 0;
    int last_error = 0;
    uint32_t sent_count = 0, accepted = 0;
    int outcome = 0; /* set for an error that ends the query */

    for (unsigned sample = 0; sample < samples && outcome == 0; sample++) {
        uint8_t request[TK_SNTP_PACKET_SIZE];
        rc = tk_sntp_build_request(request, sizeof request, &nonces[sample]);
        if (rc != 0) {
            outcome = rc;
            break;
        }
        int64_t send_wall = read_clock(CLOCK_REALTIME);
        int64_t send_boot = read_clock(CLOCK_BOOTTIME);
        int64_t deadline = add_sat_nonneg(send_boot, timeout_ns);
        rc = send_request(fd, request, deadline);
        if (rc == -ECONNREFUSED) {
            /* A port-unreachable from an earlier request, reported now. */
            last_error = rc;
            continue;
        }
        if (rc == -ETIMEDOUT) continue;
        if (rc != 0) {
            outcome = rc;
            break;
        }
        sent_count++;

        int done = 0;
        while (!done) {
            int ready = wait_for(fd, POLLIN, deadline);
            if (ready < 0) {
                outcome = ready;
                break;
            }
            if (ready == 0) break; /* this sample timed out */
            /* Read every datagram that is there. */
            for (;;) {
                uint8_t reply[1024];
                ssize_t got = recv(fd, reply, sizeof reply, 0);
                int64_t receive_boot = read_clock(CLOCK_BOOTTIME);
                int64_t receive_wall = read_clock(CLOCK_REALTIME);
                if (got < 0) {
                    if (errno == EINTR) continue;
                    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                    if (errno == ECONNREFUSED) {
                        last_error = -ECONNREFUSED;
                        done = 1;
                        break;
                    }
                    outcome = -errno;
                    done = 1;
                    break;
                }
                tk_sntp_packet packet;
                rc = tk_sntp_parse_reply(reply, (size_t)got, nonces[sample], &packet);
                if (rc == -ENOMSG) {
                    int late = 0;
                    for (unsigned earlier = 0; earlier < sample; earlier++) {
                        if (packet.origin_time == nonces[earlier]) late = 1;
                    }
                    if (!late) last_error = rc;
                    continue;
                }
                if (is_unauthenticated(rc)) {
                    last_error = rc;
                    continue;
                }
                done = 1;
                if (rc == -EACCES) {
                    memset(result, 0, sizeof *result);
                    result->reference_id = packet.reference_id;
                    result->leap = packet.leap;
                    result->version = packet.version;
                    result->stratum = packet.stratum;
                    result->poll = packet.poll;
                    result->send_boot_ns = send_boot;
                    result->send_wall_ns = send_wall;
                    result->receive_boot_ns = receive_boot;
                    result->receive_wall_ns = receive_wall;
                    tk_sntp_kiss_code(&packet, result->kiss_code);
                    outcome = -EACCES;
                    break;
                }
                if (rc != 0) {
                    last_error = rc;
                    break;
                }
                tk_sntp_result current;
                rc = tk_sntp_compute(&packet, send_boot, send_wall, receive_boot, receive_wall,
                                     &current);
                if (rc != 0) {
                    last_error = rc;
                    break;
                }
                accepted++;
                if (!have_best || current.delay_ns < best.delay_ns) {
                    best = current;
                    have_best = 1;
                }
                break;
            }
        }
    }
    close(fd);

    if (outcome == -EACCES) {
        result->requests_sent = sent_count;
        result->replies_accepted = accepted;
        return -EACCES;
    }
    if (outcome != 0 && !have_best) {
        result->requests_sent = sent_count;
        return outcome;
    }
    if (have_best) {
        *result = best;
        result->requests_sent = sent_count;
        result->replies_accepted = accepted;
        return 0;
    }
    result->requests_sent = sent_count;
    return last_error != 0 ? last_error : -ETIMEDOUT;
}
