// Umbrella header for the CZeroMQ system-library module: the whole of libzmq's C API.
#ifndef C_ZEROMQ_H
#define C_ZEROMQ_H

#include <zmq.h>
#include <errno.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <malloc.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

// errno values that Swift cannot import as macros on every libc.
static inline int czmq_eagain(void) { return EAGAIN; }
static inline int czmq_eintr(void) { return EINTR; }
static inline int czmq_eterm(void) { return ETERM; }
static inline int czmq_eaddrinuse(void) { return EADDRINUSE; }
static inline int czmq_einval(void) { return EINVAL; }
static inline int czmq_eprotonosupport(void) { return EPROTONOSUPPORT; }
static inline int czmq_enoent(void) { return ENOENT; }
static inline int czmq_efsm(void) { return EFSM; }
static inline int czmq_enotsup(void) { return ENOTSUP; }
static inline int czmq_enotsock(void) { return ENOTSOCK; }


// A non-blocking, close-on-exec eventfd (a Poller wake-up line); -1 and errno on failure.
static inline int czmq_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline int czmq_errno(void) { return errno; }
/* glibc: give free heap memory back to the system (1 if some was released). */
static inline int czmq_malloc_trim(void) { return malloc_trim(0); }
/* glibc: keep up to `bytes` of free heap before giving its top back (M_TRIM_THRESHOLD). */
static inline int czmq_keep_free_heap(int bytes) { return mallopt(M_TRIM_THRESHOLD, bytes); }

// Asks the CPU to bring `count` bytes from `start` into its cache, one prefetch per 64-byte line,
// none waiting for another. A received frame was written by libzmq's I/O thread on another core:
// a walk that hops from record to record (each hop's address read from the record before) waits
// for each line in turn, and a prefetch first lets those waits overlap. Only a hint: no effect
// on what is read.
static inline void czmq_prefetch(const void *start, size_t count) {
    const char *bytes = (const char *)start;
    for (size_t offset = 0; offset < count; offset += 64) __builtin_prefetch(bytes + offset, 0, 3);
    // The last byte's line too, when the range ends in the next one.
    if (count > 0) __builtin_prefetch(bytes + count - 1, 0, 3);
}

// Names the calling thread (Linux keeps the first 15 bytes); `prctl` is variadic, so Swift needs this.
static inline int czmq_set_current_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}


// Bytes a stream socket holds that its peer has not taken yet (SIOCOUTQ: TCP's unsent and
// unacknowledged bytes, a unix socket's unread ones); -1 and errno on failure. `ioctl` is
// variadic, so Swift needs this.
static inline int czmq_unsent_bytes(int fd) {
    int bytes = 0;
    if (ioctl(fd, SIOCOUTQ, &bytes) != 0) return -1;
    return bytes;
}

// Bytes the peer of a TCP socket has acknowledged since the connection began (tcp_info's
// tcpi_bytes_acked, Linux 4.1 and later: a counter that only grows, unlike the queue above); 0 and
// *bytes set on success, -1 when the descriptor is not TCP or the kernel is older. Read through a
// raw buffer at the field's fixed offset, because <linux/tcp.h>'s struct clashes with glibc's
// <netinet/tcp.h> that Swift's Glibc module already brings.
static inline int czmq_tcp_bytes_acked(int fd, unsigned long long *bytes) {
    unsigned char info[256];
    socklen_t length = sizeof info;
    if (getsockopt(fd, 6 /* IPPROTO_TCP */, 11 /* TCP_INFO */, info, &length) != 0) return -1;
    if (length < 128) return -1;
    __builtin_memcpy(bytes, info + 120, sizeof *bytes);
    return 0;
}

// Whether the peer of a stream socket has closed its end (POLLRDHUP: it sent FIN; or the socket
// failed, or the descriptor is not open): a look at its state that reads nothing. 1 yes, 0 no.
// POLLRDHUP needs _GNU_SOURCE, which Swift's Glibc module does not define.
#include <poll.h>
#ifndef POLLRDHUP
#define POLLRDHUP 0x2000
#endif
static inline int czmq_peer_hung_up(int fd) {
    struct pollfd entry = { .fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0 };
    if (poll(&entry, 1, 0) != 1) return 0;
    return (entry.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

#endif
