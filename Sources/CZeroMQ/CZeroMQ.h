// Umbrella header for the CZeroMQ system-library module: the whole of libzmq's C API.
#ifndef C_ZEROMQ_H
#define C_ZEROMQ_H

#include <zmq.h>
#include <errno.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <malloc.h>

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

// Names the calling thread (Linux keeps the first 15 bytes); `prctl` is variadic, so Swift needs this.
static inline int czmq_set_current_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

#endif
