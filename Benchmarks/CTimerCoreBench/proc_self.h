/*
 * What /proc says of this process, read without stdio so that nothing is
 * allocated: the resident set and the open descriptors. Header-only; shared
 * by core_bench.c and soak.c. Needs _GNU_SOURCE (getdents64).
 */
#ifndef TK_PROC_SELF_H
#define TK_PROC_SELF_H

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Resident bytes, from /proc/self/statm; -1 if it cannot be read. */
static inline int64_t proc_rss_bytes(void) {
    char buf[256];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) return -1;
    buf[got] = 0;
    char *p = buf;
    while (*p && *p != ' ') p++; /* skip the size */
    return (int64_t)strtoll(p, NULL, 10) * (int64_t)sysconf(_SC_PAGESIZE);
}

/* Open descriptors, from /proc/self/fd, not counting the one that lists
 * them; -1 if it cannot be read. Not thread-safe (one static buffer). */
static inline int proc_fd_count(void) {
    static _Alignas(struct dirent64) char buf[8192];
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    int count = 0;
    for (;;) {
        ssize_t got = getdents64(dir, buf, sizeof buf);
        if (got <= 0) break;
        for (ssize_t at = 0; at < got;) {
            const struct dirent64 *entry = (const struct dirent64 *)(void *)(buf + at);
            if (entry->d_name[0] != '.') count++;
            at += entry->d_reclen;
        }
    }
    close(dir);
    return count - 1;
}

#endif /* TK_PROC_SELF_H */
