#pragma once
#include <stddef.h>
#include <sys/types.h>

// glibc functions declared only under _GNU_SOURCE, which Swift's Glibc module does not define.

/// Starts writing back the given range of a file without waiting for it (sync_file_range
/// SYNC_FILE_RANGE_WRITE), so that the fsync before the final rename has little left to do.
int reachd_start_writeback(int fd, off_t offset, off_t length);

/// glibc's memmem: the first occurrence of `needle` in `haystack`, or NULL.
const void *reachd_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length);
