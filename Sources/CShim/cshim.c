#define _GNU_SOURCE
#include "cshim.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/timex.h>

int osh_open(const char *path, int flags, mode_t mode) { return open(path, flags | O_CLOEXEC, mode); }

int osh_ioctl_ptr(int fd, unsigned long request, void *arg) { return ioctl(fd, request, arg); }

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

int osh_block_signals(const int *signals, int count, int *was_blocked) {
    sigset_t set, old;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0) return -1;
    if (was_blocked) for (int i = 0; i < count; i++) was_blocked[i] = sigismember(&old, signals[i]) == 1;
    return 0;
}

int osh_unblock_signals(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    return pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0 ? 0 : -1;
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

// ---- Serial ports and pseudo-terminals (GPS receivers) ----
#include <stdlib.h>
#include <termios.h>
#include <sys/file.h>

static speed_t osh_speed(int baud) {
    switch (baud) {
    case 1200: return B1200;
    case 2400: return B2400;
    case 4800: return B4800;
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    default: return (speed_t)0;
    }
}

int osh_serial_baud_supported(int baud) { return osh_speed(baud) != (speed_t)0; }

int osh_serial_configure(int fd, int baud) {
    speed_t speed = osh_speed(baud);
    if (speed == (speed_t)0) { errno = EINVAL; return -1; }
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    cfmakeraw(&t);                                   // no echo, no canonical mode, no CR/NL mapping, 8 bits
    t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB | CRTSCTS | HUPCL);
    t.c_cflag |= CS8 | CLOCAL | CREAD;
    t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0) return -1;
    if (tcsetattr(fd, TCSANOW, &t) != 0) return -1;
    return tcflush(fd, TCIFLUSH);
}

int osh_serial_set_baud(int fd, int baud) {
    speed_t speed = osh_speed(baud);
    if (speed == (speed_t)0) { errno = EINVAL; return -1; }
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    if (cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0) return -1;
    if (tcsetattr(fd, TCSANOW, &t) != 0) return -1;
    return tcflush(fd, TCIFLUSH);
}


int osh_flock_nb(int fd, int kind) {
    int op = kind == 2 ? LOCK_EX : kind == 1 ? LOCK_SH : LOCK_UN;
    return flock(fd, op | LOCK_NB);
}

int osh_pty_open(char *name, size_t name_len) {
    int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct termios t;
    if (grantpt(fd) != 0 || unlockpt(fd) != 0 || ptsname_r(fd, name, name_len) != 0 ||
        tcgetattr(fd, &t) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    cfmakeraw(&t);
    if (tcsetattr(fd, TCSANOW, &t) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

// ---- TCP clients (gpsd) ----
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int osh_tcp_connect_numeric(const char *host, uint16_t port, int *in_progress) {
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        len = sizeof *v6;
    } else {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (in_progress) *in_progress = 0;
    if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
        if (errno == EINPROGRESS) {
            if (in_progress) *in_progress = 1;
            return fd;
        }
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int osh_socket_error(int fd) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return -1;
    return err;
}

ssize_t osh_send_nosignal(int fd, const void *buf, size_t len) { return send(fd, buf, len, MSG_NOSIGNAL); }
