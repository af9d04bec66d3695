/* tcprelay: the floor under a broker. A bare TCP relay that moves the bytes of one publisher
 * connection (--frontend) to one subscriber connection (--backend), and the subscriber's bytes
 * back, unread: read(2) into one buffer, write(2) it out, nothing else. Two ZeroMQ peers that
 * connect to it talk ZMTP to each other through it (a bus's XPUB publisher and SUB subscriber do:
 * the handshake is symmetric), so a relay carries exactly the frames a broker would forward, and
 * its CPU time is what moving those bytes through the kernel costs, in and out, with no queue,
 * no routing and no allocation: `nbus broker`'s CPU as a multiple of it says what the broker
 * adds (Benchmarks/peers/README.md, system `relay`).
 *
 * One pair at a time: it accepts a subscriber and a publisher (in either order), relays until the
 * subscriber leaves (a publisher that leaves first only stops being read: what it sent is still
 * written out), then closes both and accepts the next pair. Blocking sockets and poll(2), one
 * thread. Flags: --frontend=tcp://127.0.0.1:PORT --backend=tcp://127.0.0.1:PORT --buffer=BYTES. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "tcprelay: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A listening socket on "tcp://HOST:PORT". */
static int listen_on(const char *endpoint) {
    const char *rest = strncmp(endpoint, "tcp://", 6) == 0 ? endpoint + 6 : endpoint;
    const char *colon = strrchr(rest, ':');
    if (!colon) { fprintf(stderr, "tcprelay: no port in %s\n", endpoint); exit(64); }
    char host[64];
    size_t hlen = (size_t)(colon - rest);
    if (hlen >= sizeof host) { fprintf(stderr, "tcprelay: host too long in %s\n", endpoint); exit(64); }
    memcpy(host, rest, hlen);
    host[hlen] = 0;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) { fprintf(stderr, "tcprelay: not an IPv4 address: %s\n", host); exit(64); }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) die("bind");
    if (listen(fd, 16) != 0) die("listen");
    return fd;
}

static int accept_one(int listener) {
    int fd;
    while ((fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) < 0)
        if (errno != EINTR) die("accept");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  /* as libzmq sets it */
    return fd;
}

/* Writes all of buf (blocking); 0, or -1 when the peer is gone. */
static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

static volatile sig_atomic_t stopping = 0;
static void on_term(int sig) { (void)sig; stopping = 1; }

int main(int argc, char **argv) {
    const char *fe = "tcp://127.0.0.1:15570", *be = "tcp://127.0.0.1:15571";
    size_t size = 256 * 1024;
    static struct option o[] = {{"frontend", 1, 0, 'F'}, {"backend", 1, 0, 'B'}, {"buffer", 1, 0, 'b'}, {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", o, NULL)) != -1;) switch (c) {
        case 'F': fe = optarg; break; case 'B': be = optarg; break; case 'b': size = (size_t)atol(optarg); break;
        default: return 64; }
    if (size < 4096) { fprintf(stderr, "tcprelay: --buffer must be at least 4096\n"); return 64; }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction term = {.sa_handler = on_term};  /* no SA_RESTART: a SIGTERM ends the waits */
    sigaction(SIGTERM, &term, NULL);
    sigaction(SIGINT, &term, NULL);
    char *buf = malloc(size);
    if (!buf) die("malloc");
    int lf = listen_on(fe), lb = listen_on(be);
    printf("relay: frontend %s backend %s buffer %zu\n", fe, be, size);
    fflush(stdout);
    while (!stopping) {
        /* Both sides of a pair, in the order they come. */
        int pub = -1, sub = -1;
        while (!stopping && (pub < 0 || sub < 0)) {
            struct pollfd l[2] = {{lf, pub < 0 ? POLLIN : 0, 0}, {lb, sub < 0 ? POLLIN : 0, 0}};
            if (poll(l, 2, -1) < 0) {
                if (errno == EINTR) continue;
                die("poll");
            }
            if (l[0].revents & POLLIN) pub = accept_one(lf);
            if (l[1].revents & POLLIN) sub = accept_one(lb);
        }
        int pub_open = 1;
        unsigned long long to_sub = 0, to_pub = 0;
        while (!stopping) {
            struct pollfd p[2] = {{pub, pub_open ? POLLIN : 0, 0}, {sub, POLLIN, 0}};
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR) continue;
                die("poll");
            }
            if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t r = read(pub, buf, size);
                if (r > 0) {
                    if (write_all(sub, buf, (size_t)r) != 0) break;  /* the subscriber is gone */
                    to_sub += (unsigned long long)r;
                } else if (r == 0 || errno != EINTR) {
                    pub_open = 0;  /* the publisher left: keep the subscriber until it leaves */
                }
            }
            if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t r = read(sub, buf, size);
                if (r > 0) {
                    if (pub_open && write_all(pub, buf, (size_t)r) != 0) pub_open = 0;
                    to_pub += (unsigned long long)r;
                } else if (r == 0 || errno != EINTR) {
                    break;  /* the subscriber left: the pair is over */
                }
            }
        }
        fprintf(stderr, "relay: pair done, %llu bytes to the subscriber, %llu to the publisher\n", to_sub, to_pub);
        close(pub);
        close(sub);
    }
    close(lf);
    close(lb);
    free(buf);
    return 0;
}
