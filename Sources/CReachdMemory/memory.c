#include <malloc.h>
#include "reachd_memory.h"

int reachd_release_memory(void) { return malloc_trim(0); }

int reachd_limit_arenas(int count) { return mallopt(M_ARENA_MAX, count); }
