#define _GNU_SOURCE
#include "cshim.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/timex.h>

int osh_open(const char *path, int flags, mode_t mode) { return open(path, flags | O_CLOEXEC, mode); }

int osh_ioctl_ptr(int fd, unsigned long request, void *arg) { return ioctl(fd, request, arg); }

int osh_ioctl_long(int fd, unsigned long request, unsigned long arg) { return ioctl(fd, request, arg); }

int osh_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int osh_set_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

int osh_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int osh_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int osh_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int max, int timeout_ms) {
    enum { CHUNK = 64 };
    struct epoll_event evs[CHUNK];
    if (max > CHUNK) max = CHUNK;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        events[i] = evs[i].events;
        data[i] = evs[i].data.u64;
    }
    return n;
}

int osh_timerfd_create_monotonic(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

static struct timespec ns_to_ts(uint64_t ns) {
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull) };
    return ts;
}

int osh_timerfd_set_abs(int fd, uint64_t first_ns, uint64_t interval_ns) {
    struct itimerspec its = { .it_interval = ns_to_ts(interval_ns), .it_value = ns_to_ts(first_ns) };
    // An all-zero it_value would disarm the timer; an absolute time of 0 has already passed, so fire now.
    if (first_ns == 0) its.it_value.tv_nsec = 1;
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

int osh_timerfd_disarm(int fd) {
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    return timerfd_settime(fd, 0, &its, NULL);
}

int64_t osh_timerfd_read(int fd) {
    uint64_t count = 0;
    ssize_t n = read(fd, &count, sizeof count);
    if (n != (ssize_t)sizeof count) return -1;
    return (int64_t)count;
}

int osh_signalfd_create(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    // The signals must be blocked, or their default action runs instead of the fd becoming readable.
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int osh_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n != (ssize_t)sizeof info) return -1;
    return (int)info.ssi_signo;
}

int osh_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int osh_eventfd_write(int fd, uint64_t value) {
    return write(fd, &value, sizeof value) == (ssize_t)sizeof value ? 0 : -1;
}

int64_t osh_eventfd_read(int fd) {
    uint64_t value = 0;
    if (read(fd, &value, sizeof value) != (ssize_t)sizeof value) return -1;
    return (int64_t)value;
}

uint64_t osh_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t osh_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + (int64_t)ts.tv_nsec;
}

int osh_adjtimex_state(int *unsync) {
    struct timex tx;
    memset(&tx, 0, sizeof tx); // modes = 0: read only
    int rc = adjtimex(&tx);
    if (unsync) *unsync = (tx.status & STA_UNSYNC) != 0;
    return rc;
}
