// Makes the writes of a process to its job table fail while the file REACHD_TABLE_FAULT_FILE names exists: every
// write, flush or resize of a descriptor open on a file whose path contains "/jobs.sqlite" fails with the errno
// written in that file (5 for EIO, 28 for ENOSPC, 30 for EROFS); without the file, all goes through. The tests'
// stand-in for a disk that fails or a file system remounted read-only under a running daemon (LD_PRELOAD):
// a real remount is refused while the daemon holds the table open for writing.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static int fault_for(int fd) {
    const char *path = getenv("REACHD_TABLE_FAULT_FILE");
    if (path == NULL) return 0;
    int saved = errno;
    int control = open(path, O_RDONLY | O_CLOEXEC);
    if (control < 0) {
        errno = saved;
        return 0;
    }
    char text[16];
    ssize_t n = read(control, text, sizeof text - 1);
    close(control);
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, target, sizeof target - 1);
    errno = saved;
    if (n <= 0 || length <= 0) return 0;
    text[n] = 0;
    target[length] = 0;
    return strstr(target, "/jobs.sqlite") != NULL ? atoi(text) : 0;
}

#define REAL(name, type) static type real; if (real == NULL) real = (type)dlsym(RTLD_NEXT, name)

typedef ssize_t (*write_f)(int, const void *, size_t);
typedef ssize_t (*pwrite_f)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_f)(int, const void *, size_t, off64_t);
typedef ssize_t (*writev_f)(int, const struct iovec *, int);
typedef int (*sync_f)(int);
typedef int (*truncate_f)(int, off_t);
typedef int (*truncate64_f)(int, off64_t);
#define FAIL_IF_FAULT(fd) do { int code = fault_for(fd); if (code != 0) { errno = code; return -1; } } while (0)

ssize_t write(int fd, const void *buffer, size_t count) {
    REAL("write", write_f);
    FAIL_IF_FAULT(fd);
    return real(fd, buffer, count);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    REAL("pwrite", pwrite_f);
    FAIL_IF_FAULT(fd);
    return real(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off64_t offset) {
    REAL("pwrite64", pwrite64_f);
    FAIL_IF_FAULT(fd);
    return real(fd, buffer, count, offset);
}

ssize_t writev(int fd, const struct iovec *vector, int count) {
    REAL("writev", writev_f);
    FAIL_IF_FAULT(fd);
    return real(fd, vector, count);
}

int fsync(int fd) {
    REAL("fsync", sync_f);
    FAIL_IF_FAULT(fd);
    return real(fd);
}

int fdatasync(int fd) {
    REAL("fdatasync", sync_f);
    FAIL_IF_FAULT(fd);
    return real(fd);
}

int ftruncate(int fd, off_t length) {
    REAL("ftruncate", truncate_f);
    FAIL_IF_FAULT(fd);
    return real(fd, length);
}

int ftruncate64(int fd, off64_t length) {
    REAL("ftruncate64", truncate64_f);
    FAIL_IF_FAULT(fd);
    return real(fd, length);
}
