// Shifts the wall clock a process reads by the seconds written in the file REACHD_CLOCK_SHIFT_FILE names (a
// decimal number, read at each call; no file: no shift), its monotonic and boot clocks left as they are: the
// tests' stand-in for an NTP step of one process's clock (LD_PRELOAD). The kernel is told of the step apart.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_seconds(void) {
    const char *path = getenv("REACHD_CLOCK_SHIFT_FILE");
    if (path == NULL) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[32];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    return strtoll(text, NULL, 10);
}

int clock_gettime(clockid_t clock, struct timespec *time) {
    static int (*real)(clockid_t, struct timespec *);
    if (real == NULL) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int result = real(clock, time);
    if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) time->tv_sec += shift_seconds();
    return result;
}

int gettimeofday(struct timeval *restrict time, void *restrict zone) {
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return -1;
    time->tv_sec = now.tv_sec;
    time->tv_usec = now.tv_nsec / 1000;
    (void)zone;
    return 0;
}

time_t time(time_t *out) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (out != NULL) *out = now.tv_sec;
    return now.tv_sec;
}
