#define _GNU_SOURCE
#include "reachd_files.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

static gid_t process_groups[1024];
static int process_group_count = -1;

int reachd_files_init(void) {
    process_group_count = getgroups(1024, process_groups);
    return process_group_count < 0 ? -1 : 0;
}

int reachd_thread_assume(uid_t uid, gid_t gid, const gid_t *groups, size_t count) {
    if (process_group_count < 0) { errno = EINVAL; return -1; }
    if (syscall(SYS_setgroups, count, groups) != 0) return -1;
    // setfsgid/setfsuid return the previous value: read back to check the new one took.
    syscall(SYS_setfsgid, gid);
    if ((gid_t)syscall(SYS_setfsgid, -1) != gid) { reachd_thread_restore(); errno = EPERM; return -1; }
    syscall(SYS_setfsuid, uid);
    if ((uid_t)syscall(SYS_setfsuid, -1) != uid) { reachd_thread_restore(); errno = EPERM; return -1; }
    return 0;
}

int reachd_thread_restore(void) {
    syscall(SYS_setfsuid, geteuid());
    syscall(SYS_setfsgid, getegid());
    if (process_group_count < 0) { errno = EINVAL; return -1; }
    return syscall(SYS_setgroups, (size_t)process_group_count, process_groups) == 0 ? 0 : -1;
}

int reachd_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}
