#define _GNU_SOURCE
#include "reachd_files.h"
#include <fcntl.h>

int reachd_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}
