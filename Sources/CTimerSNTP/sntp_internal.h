/*
 * CTimerSNTP's internal names: not part of CTimerSNTP.h, hidden from other
 * modules (a shared build does not export them), for the module's tests.
 *
 * tk_sntp_query resolves a host name on a helper thread with getaddrinfo(3)
 * and frees the list with freeaddrinfo(3). The tests replace that pair with
 * a stand-in to get what DNS cannot be made to give on demand: a name with
 * several addresses in a chosen order, a lookup slower than the timeout,
 * each getaddrinfo error.
 */
#ifndef CTIMERSNTP_INTERNAL_H
#define CTIMERSNTP_INTERNAL_H

#include <netdb.h>

#define TK__SNTP_INTERNAL __attribute__((visibility("hidden")))

/* getaddrinfo's and freeaddrinfo's shapes. */
typedef int (*tk__sntp_resolve_fn)(const char *name, const char *service,
                                   const struct addrinfo *hints, struct addrinfo **list);
typedef void (*tk__sntp_free_fn)(struct addrinfo *list);

/*
 * Makes the name lookups that start from now on call `resolve` (on the helper
 * thread, with the name, the port in decimal, and hints AF_UNSPEC,
 * SOCK_DGRAM, IPPROTO_UDP, AI_NUMERICSERV) and free its list with `release`.
 * NULL for either restores getaddrinfo and freeaddrinfo. A lookup already
 * under way keeps the pair it started with. Thread-safe.
 */
TK__SNTP_INTERNAL void tk__sntp_set_resolver(tk__sntp_resolve_fn resolve,
                                             tk__sntp_free_fn release);

#endif /* CTIMERSNTP_INTERNAL_H */
