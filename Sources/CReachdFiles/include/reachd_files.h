#pragma once
#include <stddef.h>
#include <sys/types.h>

/// Records the process's supplementary groups, to restore them after a switch. Call once at start,
/// before any thread switches.
int reachd_files_init(void);

/// Switches the calling thread's file-system identity (fsuid, fsgid, supplementary groups) with raw
/// system calls, which unlike the glibc wrappers act on this thread only. While switched, the kernel
/// checks file access as that user (root's capabilities over files are dropped). 0, or -1 with errno.
int reachd_thread_assume(uid_t uid, gid_t gid, const gid_t *groups, size_t count);

/// Restores the calling thread's file-system identity to the process's. 0, or -1 with errno.
int reachd_thread_restore(void);

/// Starts writing back the given range of a file without waiting for it (sync_file_range
/// SYNC_FILE_RANGE_WRITE), so that the fsync before the final rename has little left to do.
int reachd_start_writeback(int fd, off_t offset, off_t length);
