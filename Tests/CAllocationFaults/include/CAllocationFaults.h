/*
 * A failing allocator for the Swift facade's out-of-memory tests.
 *
 * FaultInjectionTests links with malloc, calloc, realloc and posix_memalign
 * wrapped (`-Xlinker --wrap=...`): the calls of the C core, which is linked
 * into the test program, come here; the Swift runtime and the other shared
 * libraries are not affected. While armed, the calling thread's allocations
 * are counted and its k-th one fails; other threads', and every one while
 * disarmed, go straight to the C library.
 */
#ifndef C_ALLOCATION_FAULTS_H
#define C_ALLOCATION_FAULTS_H

/* Counts this thread's allocations from now on, and fails the `fail_at`-th
 * (0: none). */
void allocation_faults_arm(long fail_at);

/* Stops counting; every allocation succeeds again. */
void allocation_faults_disarm(void);

/* Allocations counted since the last arm. */
long allocation_faults_count(void);

/* Allocations refused since the last arm (0 or 1). */
long allocation_faults_refused(void);

#endif
