/*
 * The bare timerfd + epoll_wait loop: see CBenchSupport.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CBenchSupport.h"

#include <errno.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns)
{
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000) };
    return ts;
}

int tkb_floor_run(int64_t first_ns, int64_t period_ns, int fires, int64_t limit_ns,
                  int64_t *fire_ns, uint64_t *expirations)
{
    if (period_ns <= 0 || fires <= 0 || first_ns <= 0 || fire_ns == NULL || expirations == NULL)
        return -EINVAL;

    int result = 0;
    int epoll_fd = -1;
    int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (timer_fd < 0)
        return -errno;
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0) {
        result = -errno;
        goto out;
    }
    struct epoll_event event = { .events = EPOLLIN, .data = { .fd = timer_fd } };
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, timer_fd, &event) != 0) {
        result = -errno;
        goto out;
    }
    struct itimerspec spec = { .it_interval = to_timespec(period_ns), .it_value = to_timespec(first_ns) };
    if (timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, NULL) != 0) {
        result = -errno;
        goto out;
    }

    int recorded = 0;
    while (recorded < fires) {
        int64_t now = monotonic_ns();
        if (now >= limit_ns)
            break;
        /* Rounded up, so the wait never ends before the limit; at most 60 s
           a wait (the loop checks the limit again). */
        int64_t left = limit_ns - now;
        int wait_ms = left >= 60000LL * 1000000 ? 60000 : (int)((left + 999999) / 1000000);
        int ready = epoll_wait(epoll_fd, &event, 1, wait_ms);
        if (ready < 0) {
            int error = errno;
            if (error == EINTR)
                continue;
            result = -error;
            goto out;
        }
        if (ready == 0)
            continue;
        uint64_t count = 0;
        ssize_t got = read(timer_fd, &count, sizeof count);
        if (got < 0) {
            int error = errno;
            if (error == EAGAIN || error == EINTR)
                continue;
            result = -error;
            goto out;
        }
        if (got != (ssize_t)sizeof count) {
            result = -EIO;
            goto out;
        }
        /* Read after the expiration count, so the count never includes an
           expiration later than the time recorded. */
        fire_ns[recorded] = monotonic_ns();
        expirations[recorded] = count;
        recorded++;
    }
    result = recorded;
out:
    if (epoll_fd >= 0)
        close(epoll_fd);
    close(timer_fd);
    return result;
}
