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

#include <string.h>

const char *tk_strerror(int error) {
    if (error < 0) error = -error;
    const char *text = strerrordesc_np(error);
    return text != NULL ? text : "Unknown error";
}

const char *tk_errno_name(int error) {
    if (error < 0) error = -error;
    return strerrorname_np(error);
}
