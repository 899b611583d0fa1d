/*
 * Error text: what the negative errno values returned by every tk_ function
 * mean, in words and by name, for C programs' messages and for TimerKit's
 * Swift errors. Thread-safe: both return constant strings (glibc's
 * strerrordesc_np and strerrorname_np), unlike strerror.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"

#include <limits.h>
#include <string.h>

/* |error|; INT_MIN, which no errno is, stays out of range (and negating it
 * would overflow). */
static int magnitude(int error) {
    if (error == INT_MIN) return INT_MAX;
    return error < 0 ? -error : error;
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))

const char *tk_strerror(int error) {
    if (error == 0) return "Success";
    const char *text = strerrordesc_np(magnitude(error));
    return text != NULL ? text : "Unknown error";
}

const char *tk_errno_name(int error) {
    /* glibc names 0 "0": no errno, so no name. */
    if (error == 0) return NULL;
    return strerrorname_np(magnitude(error));
}

#else

/* Without glibc's constant tables: strerror's text (constant for known
 * values on the C libraries TimerKit builds with), and no names. */
const char *tk_strerror(int error) {
    /* C libraries word 0 differently ("No error information"): one text. */
    if (error == 0) return "Success";
    const char *text = strerror(magnitude(error));
    return text != NULL ? text : "Unknown error";
}

const char *tk_errno_name(int error) {
    (void)error;
    return NULL;
}

#endif
