// cshim — the few Linux calls Glibc's Swift overlay hides or cannot express.
//
// Why a shim: epoll/timerfd/signalfd/eventfd headers are not all visible through
// the Glibc module, and variadic C functions (ioctl, open with a mode, fcntl)
// cannot be called from Swift. Each wrapper is one call; errno is left exactly
// as the kernel set it, so the Swift side reads it right after the call.
#ifndef OSH_CSHIM_H
#define OSH_CSHIM_H

#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/eventfd.h>

// open(2) with flags and a mode (variadic in C).
int osh_open(const char *path, int flags, mode_t mode);
// ioctl(2) with a pointer argument (variadic in C).
int osh_ioctl_ptr(int fd, unsigned long request, void *arg);
// fcntl(2) F_GETFL / F_SETFL helpers (variadic in C).
int osh_set_nonblocking(int fd);
int osh_set_cloexec(int fd);

int osh_epoll_create(void);
int osh_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
// Waits for events; returns the count (or -1 with errno). Fills parallel arrays
// so Swift does not depend on the packed layout of struct epoll_event on x86_64.
int osh_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int max, int timeout_ms);

int osh_timerfd_create_monotonic(void);
// Arms a CLOCK_MONOTONIC timer at an absolute time (ns) with an interval (ns, 0 = one-shot).
int osh_timerfd_set_abs(int fd, uint64_t first_ns, uint64_t interval_ns);
int osh_timerfd_disarm(int fd);
// Reads the expiration count (the number of ticks since the last read); -1 with errno.
int64_t osh_timerfd_read(int fd);

// Blocks the given signals for the thread and returns a signalfd for them.
int osh_signalfd_create(const int *signals, int count);
// Blocks the signals in the calling thread now. Call before anything starts threads (libx264,
// ALSA plugins): threads inherit the mask they are created with, and a thread that leaves
// SIGTERM unblocked receives it with its default action — the process dies instead of the
// signalfd becoming readable.
// was_blocked[i] (may be NULL) says whether signals[i] was already blocked, for restoring.
int osh_block_signals(const int *signals, int count, int *was_blocked);
// Unblocks the signals in the calling thread. A pending one is delivered at once, so callers
// drain their signalfd first.
int osh_unblock_signals(const int *signals, int count);
// Reads one signal from a signalfd; returns the signal number, or -1 with errno.
int osh_signalfd_read(int fd);

int osh_eventfd_create(void);
int osh_eventfd_write(int fd, uint64_t value);
int64_t osh_eventfd_read(int fd);

// CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds.
uint64_t osh_monotonic_ns(void);
int64_t osh_realtime_ns(void);

// The kernel's clock discipline state: adjtimex(2)'s return value (TIME_OK … TIME_ERROR = 5,
// or -1), and whether STA_UNSYNC is set in *unsync.
int osh_adjtimex_state(int *unsync);

// ---- Serial ports and pseudo-terminals (GPS receivers) ----
// termios raw 8N1: no parity, no flow control (neither RTS/CTS nor XON/XOFF), CLOCAL|CREAD,
// VMIN=0/VTIME=0, at `baud`; the input queue is flushed. -1 with errno EINVAL for a baud
// termios cannot express, ENOTTY when fd is not a terminal.
int osh_serial_configure(int fd, int baud);
// Changes only the speed (both directions) and flushes the input queue.
int osh_serial_set_baud(int fd, int baud);
// 1 when `baud` is one of the standard rates termios names (B1200 … B921600).
int osh_serial_baud_supported(int baud);
// flock without waiting: kind 2 LOCK_EX, 1 LOCK_SH, 0 LOCK_UN; -1 with EWOULDBLOCK when another
// open file description holds a lock that conflicts.
int osh_flock_nb(int fd, int kind);
// A new pseudo-terminal: posix_openpt(O_RDWR|O_NOCTTY|O_CLOEXEC), grantpt, unlockpt, the master
// made raw. Returns the master fd and writes the slave's path into name; -1 with errno.
int osh_pty_open(char *name, size_t name_len);

// ---- TCP clients (gpsd) ----
// A non-blocking, close-on-exec TCP socket connecting to a numeric IPv4/IPv6 address.
// Returns the fd; *in_progress = 1 when the connection completes later (wait for writable,
// then read osh_socket_error). -1 with errno (EINVAL: not a numeric address).
int osh_tcp_connect_numeric(const char *host, uint16_t port, int *in_progress);
// getsockopt(SO_ERROR): the pending error of a socket (0 = none), or -1 with errno.
int osh_socket_error(int fd);
// send(2) with MSG_NOSIGNAL, so a reset peer gives EPIPE instead of SIGPIPE.
ssize_t osh_send_nosignal(int fd, const void *buf, size_t len);

#endif
