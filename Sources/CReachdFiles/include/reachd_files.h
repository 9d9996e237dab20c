#pragma once
#include <sys/types.h>

// glibc functions declared only under _GNU_SOURCE, which Swift's Glibc module does not define.

/// Starts writing back the given range of a file without waiting for it (sync_file_range
/// SYNC_FILE_RANGE_WRITE), so that the fsync before the final rename has little left to do.
int reachd_start_writeback(int fd, off_t offset, off_t length);

/// Sets (`on` nonzero) or clears O_DIRECT on an open file (fcntl F_SETFL): 0, or -1 with errno (EINVAL where the
/// file system takes no direct I/O).
int reachd_set_direct(int fd, int on);

/// Accepts a connection of a listening socket, its descriptor close-on-exec and non-blocking from the start
/// (accept4 SOCK_CLOEXEC | SOCK_NONBLOCK): the descriptor, or -1 with errno.
int reachd_accept(int fd);
