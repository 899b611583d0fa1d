/*
 * Clock reads: the three clocks a timer can use, their resolution, the boot
 * id, and the thread's timer slack.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(TK_CLOCK_COUNT == 3, "tk__clock_ids lists every tk_clock");

const clockid_t tk__clock_ids[TK_CLOCK_COUNT] = {
    [TK_CLOCK_MONOTONIC] = CLOCK_MONOTONIC,
    [TK_CLOCK_BOOTTIME] = CLOCK_BOOTTIME,
    [TK_CLOCK_REALTIME] = CLOCK_REALTIME,
};

int tk_clock_now(tk_clock clock, int64_t *now_ns) {
    if (now_ns == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    *now_ns = tk__clock_read(clock);
    return 0;
}

int tk_clock_now_kernel(tk_clock clock, int64_t *now_ns) {
    if (now_ns == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
#if defined(SYS_clock_gettime) && defined(__LP64__)
    /* 64-bit only, as the loop's raw timerfd_settime: elsewhere the kernel's
     * timespec may not be the one <time.h> declares. */
    struct timespec ts;
    if (syscall(SYS_clock_gettime, tk__clock_ids[clock], &ts) != 0) return -errno;
    *now_ns = tk__timespec_to_ns(ts);
    return 0;
#else
    return -ENOSYS;
#endif
}

int tk_clock_resolution(tk_clock clock, int64_t *resolution_ns) {
    if (resolution_ns == NULL || (unsigned)clock >= TK_CLOCK_COUNT) return -EINVAL;
    struct timespec ts;
    if (clock_getres(tk__clock_ids[clock], &ts) != 0) return -errno;
    *resolution_ns = tk__timespec_to_ns(ts);
    return 0;
}

int tk_boot_id(char *buffer, size_t size) {
    enum { UUID_LENGTH = 36 };
    if (buffer == NULL) return -EINVAL;
    if (size < UUID_LENGTH + 1) return -ERANGE;
    int fd;
    do {
        fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return -errno;
    char text[UUID_LENGTH + 1];
    size_t have = 0;
    while (have < UUID_LENGTH) {
        ssize_t got = read(fd, text + have, UUID_LENGTH - have);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            int error = got < 0 ? errno : EIO;
            close(fd);
            return -error;
        }
        have += (size_t)got;
    }
    close(fd);
    memcpy(buffer, text, UUID_LENGTH);
    buffer[UUID_LENGTH] = '\0';
    return 0;
}

int tk_timer_slack(int64_t *slack_ns) {
    if (slack_ns == NULL) return -EINVAL;
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack < 0) return -errno;
    *slack_ns = slack;
    return 0;
}
