/*
 * SNTP client (RFC 4330; era and error rules of RFC 5905): timestamp
 * conversion, packets, the offset/delay/error arithmetic, and a blocking UDP
 * query on a non-blocking socket with ppoll, to an address literal or to the
 * addresses of a host name resolved on a helper thread. See CTimerSNTP.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerSNTP.h"

#include "sntp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
 * fail for these ids on Linux. Saturating, as the core's clock readings: a
 * wall clock set past April 2262 reads INT64_MAX (before 1677, INT64_MIN). */
static int64_t read_clock(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    int64_t ns;
    if (__builtin_mul_overflow((int64_t)ts.tv_sec, (int64_t)NS_PER_S, &ns) ||
        __builtin_add_overflow(ns, (int64_t)ts.tv_nsec, &ns)) {
        return ts.tv_sec < 0 ? INT64_MIN : INT64_MAX;
    }
    return ns;
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
    /* Around a fixed pivot, never the local wall clock, which a user can
     * set decades off: both come out from 2025 to 2161, which int64_t
     * holds, so neither call fails and their difference fits. */
    int64_t t2, t3;
    int rc = tk_ntp_to_unix_ns(reply->receive_time, TK_SNTP_PIVOT_NS, &t2);
    if (rc != 0) return rc;
    rc = tk_ntp_to_unix_ns(reply->transmit_time, TK_SNTP_PIVOT_NS, &t3);
    if (rc != 0) return rc;
    int64_t processing = t3 - t2;
    int64_t round_trip = receive_boot_ns - send_boot_ns;
    if (processing < 0 || processing > round_trip) return -EBADMSG;
    int64_t delay = round_trip - processing;
    int64_t server_time, offset;
    if (__builtin_add_overflow(t3, delay / 2, &server_time)) return -EOVERFLOW;
    /* The server time is from 2025 on, so only a wall clock read before
     * 1868 takes the difference past int64_t, upward. */
    if (__builtin_sub_overflow(server_time, receive_wall_ns, &offset)) offset = INT64_MAX;
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

/* Parses an IPv4 or IPv6 literal into `address`; 0 or -EINVAL. */
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

/* ------------------------------------------------------------------------
 * Host names
 *
 * getaddrinfo blocks for as long as the resolver likes (resolv.conf's
 * timeout times attempts times servers), so it runs on a detached helper
 * thread, and the query waits for it with ppoll on an eventfd against the
 * boot-clock deadline, like every other wait here. A lookup that misses the
 * deadline is abandoned, not cancelled (getaddrinfo cannot be interrupted):
 * the query and the thread each hold a reference to it, and whichever lets
 * go last frees the list, the eventfd and the lookup.
 *
 * Not getaddrinfo_a: gai_cancel cannot stop a lookup that is running, so its
 * gaicb would have to outlive the query all the same, and the only
 * completion notice that is not a signal, SIGEV_THREAD, starts its thread
 * inside glibc and drops the notice if that fails; gai_cancel of a lookup
 * still queued leaks glibc's own wait list (__gai_remove_request unlinks the
 * request and forgets its `waiting`); gai_suspend's timeout runs on the wall
 * clock (a pthread_cond_timedwait on CLOCK_REALTIME), which this module is
 * built not to trust; and musl has none of it.
 * ------------------------------------------------------------------------ */

/* The longest host name, without a final root dot (255 octets on the wire),
 * and the longest label. */
#define MAX_NAME_LENGTH 253
#define MAX_LABEL_LENGTH 63

/* 0 if `text` can be a host name: labels of 1..63 letters, digits, '-' or
 * '_', separated by dots, 253 characters at most (254 with a final dot);
 * else -EINVAL. Everything else ("", "a..b", "[::1]", "host:123", spaces,
 * non-ASCII: use the IDNA "xn--" form) never reaches the resolver. */
static int check_name(const char *text) {
    size_t length = strnlen(text, MAX_NAME_LENGTH + 2);
    if (length > 0 && text[length - 1] == '.') length--;
    if (length == 0 || length > MAX_NAME_LENGTH) return -EINVAL;
    size_t label = 0;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (c == '.') {
            if (label == 0) return -EINVAL;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_') {
            if (++label > MAX_LABEL_LENGTH) return -EINVAL;
        } else {
            return -EINVAL;
        }
    }
    return label == 0 ? -EINVAL : 0;
}

/* The resolver lookups use: NULL for getaddrinfo/freeaddrinfo, else the
 * tests' stand-ins (sntp_internal.h). */
static pthread_mutex_t resolver_lock = PTHREAD_MUTEX_INITIALIZER;
static tk__sntp_resolve_fn resolver_resolve;
static tk__sntp_free_fn resolver_free;

void tk__sntp_set_resolver(tk__sntp_resolve_fn resolve, tk__sntp_free_fn release) {
    pthread_mutex_lock(&resolver_lock);
    resolver_resolve = resolve != NULL && release != NULL ? resolve : NULL;
    resolver_free = resolve != NULL && release != NULL ? release : NULL;
    pthread_mutex_unlock(&resolver_lock);
}

static int real_getaddrinfo(const char *name, const char *service, const struct addrinfo *hints,
                            struct addrinfo **list) {
    return getaddrinfo(name, service, hints, list);
}

static void real_freeaddrinfo(struct addrinfo *list) { freeaddrinfo(list); }

/* One name lookup, shared by the query and the helper thread. */
typedef struct lookup {
    atomic_int references; /* the query's and the helper thread's */
    atomic_int done;       /* set (release) once status, error and list are */
    int event_fd;          /* written once done */
    int status;            /* what the resolver returned */
    int error;             /* errno after it (for EAI_SYSTEM) */
    struct addrinfo *list; /* its list, if status is 0 */
    tk__sntp_resolve_fn resolve;
    tk__sntp_free_fn release;
    struct addrinfo hints;
    char service[8];
    char name[]; /* a copy: the caller's string may be gone when the lookup ends */
} lookup;

/* Drops a reference; the last one frees the lookup and what it holds. */
static void lookup_unref(lookup *l) {
    if (atomic_fetch_sub_explicit(&l->references, 1, memory_order_acq_rel) != 1) return;
    if (l->status == 0 && l->list != NULL) l->release(l->list);
    close(l->event_fd);
    free(l);
}

/* The helper thread: resolves, publishes, signals, lets go. Every signal is
 * blocked here (see lookup_start), so no handler of the program runs on it
 * and nothing interrupts the write. */
static void *lookup_main(void *arg) {
    lookup *l = arg;
    struct addrinfo *list = NULL;
    errno = 0;
    int status = l->resolve(l->name, l->service, &l->hints, &list);
    int error = errno;
    l->status = status;
    l->error = error;
    l->list = status == 0 ? list : NULL;
    atomic_store_explicit(&l->done, 1, memory_order_release);
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(l->event_fd, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
    lookup_unref(l);
    return NULL;
}

/* A resolver's error as a negative errno (see CTimerSNTP.h). */
static int lookup_error(int status, int error) {
    switch (status) {
    case EAI_AGAIN:
        return -EAGAIN;
    case EAI_MEMORY:
        return -ENOMEM;
    case EAI_SYSTEM:
        return error > 0 ? -error : -EIO;
    case EAI_FAIL:
        return -EREMOTEIO;
    default:
        /* EAI_NONAME, EAI_NODATA, EAI_FAMILY, EAI_ADDRFAMILY; and the ones
         * these hints cannot cause (EAI_SERVICE, EAI_SOCKTYPE, ...). */
        return -ENXIO;
    }
}

/* Resolves `name` (checked by check_name) for `port` before the boot clock
 * reaches `deadline`. 0 with the finished lookup in `*out` (its status 0, its
 * list to read, then lookup_unref), or a negative errno: the resolver's
 * error, -ETIMEDOUT, or that of calloc (-ENOMEM), eventfd, pthread_create
 * (-EAGAIN) or ppoll. */
static int lookup_run(const char *name, uint16_t port, int64_t deadline, lookup **out) {
    size_t length = strlen(name);
    lookup *l = calloc(1, sizeof *l + length + 1);
    if (l == NULL) return -ENOMEM;
    memcpy(l->name, name, length + 1);
    snprintf(l->service, sizeof l->service, "%u", (unsigned)port);
    l->hints.ai_family = AF_UNSPEC;
    l->hints.ai_socktype = SOCK_DGRAM;
    l->hints.ai_protocol = IPPROTO_UDP;
    l->hints.ai_flags = AI_NUMERICSERV;
    pthread_mutex_lock(&resolver_lock);
    l->resolve = resolver_resolve != NULL ? resolver_resolve : real_getaddrinfo;
    l->release = resolver_free != NULL ? resolver_free : real_freeaddrinfo;
    pthread_mutex_unlock(&resolver_lock);
    atomic_init(&l->references, 2);
    atomic_init(&l->done, 0);
    l->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->event_fd < 0) {
        int rc = -errno;
        free(l);
        return rc;
    }

    /* Detached, with every signal blocked: the thread inherits the mask it
     * is created under, so block them around pthread_create. */
    pthread_attr_t attributes;
    int rc = pthread_attr_init(&attributes);
    if (rc == 0) {
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        sigset_t all, saved;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pthread_t thread;
        rc = pthread_create(&thread, &attributes, lookup_main, l);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        pthread_attr_destroy(&attributes);
    }
    if (rc != 0) {
        close(l->event_fd);
        free(l);
        return -rc;
    }

    for (;;) {
        if (atomic_load_explicit(&l->done, memory_order_acquire)) break;
        int ready = wait_for(l->event_fd, POLLIN, deadline);
        if (ready <= 0 && !atomic_load_explicit(&l->done, memory_order_acquire)) {
            /* Abandoned: the helper thread frees it all when the resolver
             * returns. */
            lookup_unref(l);
            return ready < 0 ? ready : -ETIMEDOUT;
        }
    }
    if (l->status != 0) {
        rc = lookup_error(l->status, l->error);
        lookup_unref(l);
        return rc;
    }
    *out = l;
    return 0;
}

/* ------------------------------------------------------------------------
 * Asking one address
 * ------------------------------------------------------------------------ */

/* A query across the addresses it tries. */
typedef struct query {
    int64_t timeout_ns;
    unsigned samples;
    tk_sntp_result *result; /* the caller's, for a kiss-of-death */
    tk_sntp_result best;
    int have_best;
    uint32_t sent, accepted; /* over every address */
} query;

/* query_address's "this address never answered: try the next one". */
#define MOVE_ON 1

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

/*
 * Asks one address up to q->samples times. An address has answered once a
 * datagram from it passed the origin check (valid or rejected). If
 * `may_move_on` (it is not the last address), an address that has not
 * answered its first request (silence until the timeout, port unreachable,
 * any socket error) is left at once: MOVE_ON. Otherwise returns 0 when
 * q->best holds a valid reply, -EACCES for a kiss-of-death (details in
 * *q->result), or the address's error (see tk_sntp_query).
 */
static int query_address(query *q, const struct sockaddr *server, socklen_t server_length,
                         int may_move_on) {
    int fd = socket(server->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return may_move_on ? MOVE_ON : -errno;
    int rc;
    do {
        rc = connect(fd, server, server_length);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        rc = -errno;
        close(fd);
        return may_move_on ? MOVE_ON : rc;
    }

    uint64_t nonces[TK_SNTP_MAX_SAMPLES];
    int answered = 0;
    int last_error = 0;
    int outcome = 0; /* set for an error that ends the query at this address */

    for (unsigned sample = 0; sample < q->samples && outcome == 0; sample++) {
        uint8_t request[TK_SNTP_PACKET_SIZE];
        rc = tk_sntp_build_request(request, sizeof request, &nonces[sample]);
        if (rc != 0) {
            outcome = rc;
            break;
        }
        int64_t send_wall = read_clock(CLOCK_REALTIME);
        int64_t send_boot = read_clock(CLOCK_BOOTTIME);
        int64_t deadline = add_sat_nonneg(send_boot, q->timeout_ns);
        rc = send_request(fd, request, deadline);
        if (rc == 0) {
            q->sent++;
        } else if (rc == -ECONNREFUSED) {
            /* A port-unreachable from an earlier request, reported now. */
            last_error = rc;
        } else if (rc != -ETIMEDOUT) {
            outcome = rc;
        }

        int done = rc != 0;
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
                /* Read at or past the deadline: the sample has timed out, as
                 * the wait would have said. Otherwise a stream of datagrams
                 * to reject (a flood of forged ones) could hold the query
                 * here past its timeout for as long as it lasts. */
                if (receive_boot >= deadline) {
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
                answered = 1;
                done = 1;
                if (rc == -EACCES) {
                    tk_sntp_result *result = q->result;
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
                q->accepted++;
                if (!q->have_best || current.delay_ns < q->best.delay_ns) {
                    q->best = current;
                    q->have_best = 1;
                }
                break;
            }
        }
        /* Silence, port unreachable or an error, and never an answer. */
        if (may_move_on && !answered) outcome = MOVE_ON;
    }
    close(fd);

    if (outcome == MOVE_ON || outcome == -EACCES) return outcome;
    if (q->have_best) return 0;
    if (outcome != 0) return outcome;
    return last_error != 0 ? last_error : -ETIMEDOUT;
}

/* ------------------------------------------------------------------------
 * The query
 * ------------------------------------------------------------------------ */

/* Whether `entry` is an IPv4 or IPv6 address that none of the first `count`
 * of `chosen` already is. */
static int is_new_address(const struct addrinfo *entry, const struct addrinfo *const *chosen,
                          size_t count) {
    if (entry->ai_addr == NULL) return 0;
    if (!(entry->ai_family == AF_INET && entry->ai_addrlen == sizeof(struct sockaddr_in)) &&
        !(entry->ai_family == AF_INET6 && entry->ai_addrlen == sizeof(struct sockaddr_in6))) {
        return 0;
    }
    if (entry->ai_addr->sa_family != entry->ai_family) return 0;
    for (size_t i = 0; i < count; i++) {
        if (chosen[i]->ai_addrlen == entry->ai_addrlen &&
            memcmp(chosen[i]->ai_addr, entry->ai_addr, entry->ai_addrlen) == 0) {
            return 0;
        }
    }
    return 1;
}

int tk_sntp_check_server(const char *server) {
    if (server == NULL) return -EINVAL;
    struct sockaddr_storage literal;
    socklen_t length;
    if (parse_address(server, TK_SNTP_PORT, &literal, &length) == 0) return 0;
    return check_name(server);
}

int tk_sntp_query(const char *address, uint16_t port, int64_t timeout_ns,
                  unsigned samples, tk_sntp_result *result) {
    if (address == NULL || result == NULL || timeout_ns <= 0 || samples == 0 ||
        samples > TK_SNTP_MAX_SAMPLES) {
        return -EINVAL;
    }
    if (port == 0) port = TK_SNTP_PORT;
    memset(result, 0, sizeof *result);
    query q;
    memset(&q, 0, sizeof q);
    q.timeout_ns = timeout_ns;
    q.samples = samples;
    q.result = result;

    int rc;
    struct sockaddr_storage literal;
    socklen_t literal_length;
    if (parse_address(address, port, &literal, &literal_length) == 0) {
        /* An address literal: no resolver, no allocation. */
        rc = query_address(&q, (const struct sockaddr *)&literal, literal_length, 0);
    } else {
        rc = check_name(address);
        if (rc != 0) return rc;
        lookup *l = NULL;
        int64_t deadline = add_sat_nonneg(read_clock(CLOCK_BOOTTIME), timeout_ns);
        rc = lookup_run(address, port, deadline, &l);
        if (rc != 0) return rc;
        const struct addrinfo *chosen[TK_SNTP_MAX_ADDRESSES];
        size_t count = 0;
        for (const struct addrinfo *entry = l->list; entry != NULL && count < TK_SNTP_MAX_ADDRESSES;
             entry = entry->ai_next) {
            if (is_new_address(entry, chosen, count)) chosen[count++] = entry;
        }
        rc = -ENXIO; /* a list without any IPv4 or IPv6 address */
        for (size_t i = 0; i < count; i++) {
            rc = query_address(&q, chosen[i]->ai_addr, chosen[i]->ai_addrlen, i + 1 < count);
            if (rc != MOVE_ON) break;
        }
        lookup_unref(l);
    }

    if (rc == 0) {
        *result = q.best;
        result->replies_accepted = q.accepted;
    } else if (rc == -EACCES) {
        result->replies_accepted = q.accepted;
    }
    result->requests_sent = q.sent;
    return rc;
}
