#pragma once

/// Hands memory that glibc's malloc holds free back to the kernel (malloc_trim over every arena).
/// Returns 1 if some was released.
int reachd_release_memory(void);

/// Lets glibc's malloc make at most `count` arenas (M_ARENA_MAX); before threads allocate. Returns 1 on success.
int reachd_limit_arenas(int count);
