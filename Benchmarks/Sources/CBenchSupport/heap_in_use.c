/*
 * The allocator's bytes in use: see CBenchSupport.h.
 */
#include "CBenchSupport.h"

#include <malloc.h>

int64_t tkb_heap_bytes_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 info = mallinfo2();
    return (int64_t)(info.uordblks + info.hblkhd);
#else
    return -1;
#endif
}
