#define _GNU_SOURCE
#include "reachd_files.h"
#include <fcntl.h>
#include <stddef.h>
#include <sys/socket.h>

int reachd_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int reachd_set_direct(int fd, int on) {
    int flags = fcntl(fd, F_GETFL);
    if (flags == -1) return -1;
    int wanted = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
    return wanted == flags ? 0 : fcntl(fd, F_SETFL, wanted);
}

int reachd_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }
