#pragma once

/// Hands memory that glibc's malloc holds free back to the kernel (malloc_trim over every arena).
/// Returns 1 if some was released.
int reachd_release_memory(void);
