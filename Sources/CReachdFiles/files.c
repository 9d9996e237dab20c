#define _GNU_SOURCE
#include "reachd_files.h"
#include <fcntl.h>
#include <string.h>

int reachd_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

const void *reachd_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length) {
    return memmem(haystack, haystack_length, needle, needle_length);
}
