/* The fan-out figure's reader and its floor (bench/run builds this with cc; reachd-bench runs it).
 *   fanout-floor floor CONNECTIONS ROUNDS   the floor: one process writes one 950-byte line to each of
 *       CONNECTIONS Unix stream connections, another (the reader below) reads them on epoll. Prints one line
 *       per round: milliseconds from the writer's first write to the reader's last line, then the reader's.
 *   fanout-floor floor CONNECTIONS ROUNDS watched   the same, with the writer's connections in an epoll set of its
 *       own (level-triggered, for input), as a server's are: the reader's every read then also runs the
 *       writer's wake-up callback (the space freed on the writer's socket is announced to its waiters).
 *   fanout-floor read ROUNDS FD...          the same reader on reachd's subscribers (descriptors inherited from
 *       reachd-bench): prints "ready" once it waits, then per round the CLOCK_MONOTONIC seconds at which every
 *       FD had received one complete line, then the reader's.
 * The reader's part of each line: the CPU milliseconds it spent on the round (its thread's clock, from the round's
 * first line on) and how many times it waited in epoll_wait. So reachd's figure and the floor differ only in the
 * writer, and the reader's share shows how the writer's pace made it work: a reader that outruns its writer
 * waits (and is woken) once per few lines instead of once per batch of 256.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { LINE = 950, BATCH = 256 };

/* One round as the reader saw it. */
struct round_end {
    double end;         /* CLOCK_MONOTONIC seconds when every connection had its line */
    double cpu_ms;      /* the reader's CPU time in the round */
    long waits;         /* epoll_wait calls in the round */
};

static double thread_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char *what) {
    perror(what);
    exit(2);
}

/* An epoll set (level-triggered) of `count` connections. */
static int watch(int *fds, int count) {
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) fail("epoll_create1");
    for (int i = 0; i < count; i++) {
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(epoll, EPOLL_CTL_ADD, fds[i], &event) < 0) fail("epoll_ctl");
    }
    return epoll;
}

/* Reads until every connection has received one complete line, `rounds` times; calls `done` with each
 * round's end. */
static void reader(int epoll, int *fds, int count, int rounds, void (*done)(struct round_end)) {
    struct epoll_event events[BATCH];
    char buffer[4096];
    for (int round = 0; round < rounds; round++) {
        int lines = 0;
        long waits = 0;
        double cpu_start = -1;
        while (lines < count) {
            int ready = epoll_wait(epoll, events, BATCH, 30000);
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0) fail("epoll_wait (no line within 30 s)");
            if (cpu_start < 0) cpu_start = thread_cpu_ms();
            waits++;
            for (int i = 0; i < ready; i++) {
                ssize_t n = recv(fds[events[i].data.u32], buffer, sizeof buffer, MSG_DONTWAIT);
                if (n == 0) fail("a connection closed");
                for (ssize_t j = 0; j < n; j++) lines += buffer[j] == '\n';
            }
        }
        double end = now();
        done((struct round_end){.end = end, .cpu_ms = thread_cpu_ms() - cpu_start, .waits = waits});
    }
}

static int result_pipe = -1;

static void send_end(struct round_end end) {
    if (write(result_pipe, &end, sizeof end) != sizeof end) fail("write");
}

static void print_end(struct round_end end) {
    printf("%.9f %.3f %ld\n", end.end, end.cpu_ms, end.waits);
    fflush(stdout);
}

/* fanout-floor read ROUNDS FD... */
static int read_subscribers(int argc, char **argv) {
    int rounds = atoi(argv[2]), count = argc - 3;
    if (rounds <= 0 || count <= 0) fail("read: ROUNDS and FDs");
    int *fds = calloc(count, sizeof *fds);
    if (!fds) fail("calloc");
    for (int i = 0; i < count; i++) fds[i] = atoi(argv[i + 3]);
    int epoll = watch(fds, count);
    printf("ready\n");
    fflush(stdout);
    reader(epoll, fds, count, rounds, print_end);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "read") == 0) return read_subscribers(argc, argv);
    int watched = argc == 5 && strcmp(argv[4], "watched") == 0;
    if ((argc != 4 && !watched) || strcmp(argv[1], "floor") != 0) {
        fprintf(stderr, "usage: fanout-floor floor CONNECTIONS ROUNDS [watched] | fanout-floor read ROUNDS FD...\n");
        return 2;
    }
    int count = atoi(argv[2]), rounds = atoi(argv[3]);
    if (count <= 0 || rounds <= 0) fail("CONNECTIONS and ROUNDS must be positive");
    /* Each process holds its own end of every connection, as reachd and its subscribers do; nothing inherited
     * (reachd-bench's subscribers) counts against the limit. */
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    for (rlim_t fd = 3; fd < limit.rlim_cur; fd++) close((int)fd);
    if (limit.rlim_cur < (rlim_t)count + 16) {
        fprintf(stderr, "fanout-floor: %d connections need %d open files, the limit is %llu\n", count, count + 16,
                (unsigned long long)limit.rlim_cur);
        return 2;
    }
    /* A listening socket in the abstract namespace (no file): the reader connects, the writer accepts. */
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path + 1, sizeof address.sun_path - 1, "reachd-fanout-floor-%d", (int)getpid());
    socklen_t length = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(address.sun_path + 1);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) < 0 || listen(listener, 4096) < 0) fail("listen");
    int ends[2];
    if (pipe(ends) < 0) fail("pipe");
    signal(SIGPIPE, SIG_IGN);
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        close(listener);
        close(ends[0]);
        int *readers = calloc(count, sizeof *readers);
        if (!readers) fail("calloc");
        for (int i = 0; i < count; i++) {
            readers[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (readers[i] < 0 || connect(readers[i], (struct sockaddr *)&address, length) < 0) fail("connect");
        }
        result_pipe = ends[1];
        reader(watch(readers, count), readers, count, rounds, send_end);
        _exit(0);
    }
    close(ends[1]);
    int *writers = calloc(count, sizeof *writers);
    if (!writers) fail("calloc");
    for (int i = 0; i < count; i++) {
        writers[i] = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (writers[i] < 0) fail("accept4");
    }
    close(listener);
    if (watched) watch(writers, count);
    char line[LINE];
    memset(line, 'x', sizeof line);
    line[LINE - 1] = '\n';
    for (int round = 0; round < rounds; round++) {
        usleep(200000); /* the reader is back in epoll_wait, as reachd's subscribers are between changes */
        double start = now();
        for (int i = 0; i < count; i++) {
            if (send(writers[i], line, sizeof line, MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof line) fail("send");
        }
        struct round_end end;
        if (read(ends[0], &end, sizeof end) != sizeof end) fail("read");
        printf("%.3f %.3f %ld\n", (end.end - start) * 1000, end.cpu_ms, end.waits);
        fflush(stdout);
    }
    waitpid(child, NULL, 0);
    return 0;
}
