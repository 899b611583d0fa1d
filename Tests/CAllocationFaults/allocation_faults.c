/* The failing allocator (see CAllocationFaults.h). */
#include "include/CAllocationFaults.h"

#include <errno.h>
#include <stddef.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *pointer, size_t size);
int __real_posix_memalign(void **memory, size_t alignment, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t count, size_t size);
void *__wrap_realloc(void *pointer, size_t size);
int __wrap_posix_memalign(void **memory, size_t alignment, size_t size);

/* Per thread: only the arming thread's allocations are counted and may
 * fail, so tests running at the same time on other threads are untouched
 * (a scenario runs a manual loop, whose callbacks run on the thread that
 * advances it). */
static _Thread_local int armed;
static _Thread_local long counted;
static _Thread_local long fail_at;
static _Thread_local long refused;

void allocation_faults_arm(long k) {
    counted = 0;
    refused = 0;
    fail_at = k;
    armed = 1;
}

void allocation_faults_disarm(void) { armed = 0; }

long allocation_faults_count(void) { return counted; }

long allocation_faults_refused(void) { return refused; }

static int refuse(void) {
    if (!armed) return 0;
    if (++counted != fail_at) return 0;
    refused++;
    return 1;
}

void *__wrap_malloc(size_t size) {
    if (refuse()) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_malloc(size);
}

void *__wrap_calloc(size_t count, size_t size) {
    if (refuse()) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_calloc(count, size);
}

void *__wrap_realloc(void *pointer, size_t size) {
    if (refuse()) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_realloc(pointer, size);
}

int __wrap_posix_memalign(void **memory, size_t alignment, size_t size) {
    if (refuse()) return ENOMEM;
    return __real_posix_memalign(memory, alignment, size);
}
