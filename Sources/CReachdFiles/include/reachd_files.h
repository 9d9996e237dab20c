#pragma once
#include <sys/types.h>

/// Starts writing back the given range of a file without waiting for it (sync_file_range
/// SYNC_FILE_RANGE_WRITE), so that the fsync before the final rename has little left to do.
/// (glibc declares sync_file_range only under _GNU_SOURCE, which Swift's Glibc module does not define.)
int reachd_start_writeback(int fd, off_t offset, off_t length);
