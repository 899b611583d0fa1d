/*
 * Returning free heap memory to the system: see CBenchSupport.h.
 */
#include "CBenchSupport.h"

#include <malloc.h>

int tkb_release_free_memory(void)
{
    return malloc_trim(0);
}
