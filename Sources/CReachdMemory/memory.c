#include <malloc.h>
#include "reachd_memory.h"

int reachd_release_memory(void) { return malloc_trim(0); }
