#pragma once
#include <stddef.h>
#include <stdint.h>

/// Hands memory that glibc's malloc holds free back to the kernel (malloc_trim over every arena).
/// Returns 1 if some was released.
int reachd_release_memory(void);

/// Lets glibc's malloc make at most `count` arenas (M_ARENA_MAX); before threads allocate. Returns 1 on success.
int reachd_limit_arenas(int count);

/// The whole pages inside [start, start + size): 1 with [*first, *end), or 0 when there is none (or the range
/// passes the end of the address space). Never a page that the range only shares with what lies next to it.
int reachd_whole_pages(uintptr_t start, size_t size, size_t page_size, uintptr_t *first, uintptr_t *end);

/// Unmaps the whole pages of every read-only segment of the program and its libraries (code, constants:
/// madvise(MADV_DONTNEED) on their file mappings), never a writable segment's, nor an object's whose code was
/// relocated in place, nor the vDSO's. They stay in the page cache and come back at their next touch. Returns the
/// bytes unmapped.
size_t reachd_unmap_read_only_pages(void);
