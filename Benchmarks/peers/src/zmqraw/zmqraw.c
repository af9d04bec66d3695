/* zmqraw: the peers workload on bare libzmq through a bare zmq_proxy (XSUB/XPUB): what ZeroMQ
 * itself costs in the brokered shape, the floor NotificationBus builds on.
 * Modes: proxy | sub | pub | ping | pong. A message is two frames, [name][payload], as a bus
 * notification carries its name apart from its body. Flags are --name=value (README.md). */
#include "../common.h"
#include <errno.h>
#include <getopt.h>
#include <zmq.h>

static const char *mode = "", *subject = "bench.a", *end_subject = NULL, *ready = NULL, *dump = NULL;
static const char *fe = "tcp://127.0.0.1:15560", *be = "tcp://127.0.0.1:15561";
static int n = 1000000, warmup = 1000, size = 256, hwm = 10000, nodrop = 0;

static void *sock(void *ctx, int type) {
    void *s = zmq_socket(ctx, type);
    if (!s) die("zmq_socket");
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    return s;
}
static void timeout(void *s, int ms) { zmq_setsockopt(s, ZMQ_RCVTIMEO, &ms, sizeof ms); }
/* 0, or -1 on timeout or error. */
static int recv_msg(void *s, char *topic, size_t tcap, char *buf, size_t cap, int *len) {
    int t = zmq_recv(s, topic, tcap - 1, 0);
    if (t < 0) return -1;
    topic[t < (int)tcap - 1 ? t : (int)tcap - 1] = 0;
    *len = zmq_recv(s, buf, cap, 0);
    return *len < 0 ? -1 : 0;
}
static void send_msg(void *s, const char *topic, const void *buf, int len) {
    if (zmq_send(s, topic, strlen(topic), ZMQ_SNDMORE) < 0 || zmq_send(s, buf, len, 0) < 0) die("zmq_send");
}
/* With ZMQ_XPUB_NODROP a full pipe makes zmq_send fail with EAGAIN instead of dropping: wait
 * until the socket can take more (POLLOUT) rather than spin, so the publisher's CPU is its work. */
static void send_nodrop(void *s, const void *buf, size_t len, int flags) {
    while (zmq_send(s, buf, len, flags) < 0) {
        if (zmq_errno() != EAGAIN) die("zmq_send");
        zmq_pollitem_t item = {s, 0, ZMQ_POLLOUT, 0};
        if (zmq_poll(&item, 1, WAIT_LIMIT_MS) == 0) die("the proxy took nothing for 30 s");
    }
}

int main(int argc, char **argv) {
    static struct option o[] = {{"mode", 1, 0, 'm'}, {"subject", 1, 0, 's'}, {"end-subject", 1, 0, 'e'},
                                {"ready", 1, 0, 'r'}, {"dump", 1, 0, 'd'}, {"n", 1, 0, 'n'}, {"warmup", 1, 0, 'w'},
                                {"size", 1, 0, 'z'}, {"hwm", 1, 0, 'h'}, {"nodrop", 1, 0, 'x'},
                                {"frontend", 1, 0, 'F'}, {"backend", 1, 0, 'B'}, {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", o, NULL)) != -1;) switch (c) {
        case 'm': mode = optarg; break; case 's': subject = optarg; break; case 'e': end_subject = optarg; break;
        case 'r': ready = optarg; break; case 'd': dump = optarg; break; case 'n': n = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break; case 'z': size = atoi(optarg); break; case 'h': hwm = atoi(optarg); break;
        case 'x': nodrop = atoi(optarg); break; case 'F': fe = optarg; break; case 'B': be = optarg; break;
        default: return 64; }
    if (n < 1 || size < 5 || size > (1 << 20)) { fprintf(stderr, "--n must be >= 1, --size 5..1048576\n"); return 64; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *ctx = zmq_ctx_new();
    char topic[256], *buf = malloc(1 << 20);
    int len;
    if (!strcmp(mode, "proxy")) {
        void *x = sock(ctx, ZMQ_XSUB), *p = sock(ctx, ZMQ_XPUB);
        if (zmq_bind(x, fe) || zmq_bind(p, be)) { fprintf(stderr, "bind: %s\n", zmq_strerror(zmq_errno())); return 2; }
        printf("proxy: frontend %s backend %s ready\n", fe, be); /* the driver waits for this line */
        zmq_proxy(x, p, NULL);
        return 0;
    }
    if (!strcmp(mode, "sub")) {
        void *s = sock(ctx, ZMQ_SUB);
        if (zmq_connect(s, be)) die("connect");
        zmq_setsockopt(s, ZMQ_SUBSCRIBE, subject, strlen(subject));
        /* SUB has no confirmation: the publisher waits until its XPUB sees this subscription. */
        mark_ready(ready);
        long long count = 0; int64_t first = 0, last = 0; int end = 0;
        timeout(s, FIRST_MESSAGE_LIMIT_MS);
        for (;;) {
            if (recv_msg(s, topic, sizeof topic, buf, 1 << 20, &len)) break;
            int64_t t = now_ns();
            if (len > 0 && buf[0] == 'E') { end = 1; break; }
            if (++count == 1) { first = t; timeout(s, IDLE_STOP_MS); }
            last = t;
        }
        print_sub(count, first, last, end, NULL);
        return 0;
    }
    if (!strcmp(mode, "pub")) {
        char *subs[64], *list = strdup(subject);
        int ns = split_list(list, subs, 64);
        const char *es = end_subject ? end_subject : subs[0];
        void *s = sock(ctx, ZMQ_XPUB);
        zmq_setsockopt(s, ZMQ_XPUB_NODROP, &nodrop, sizeof nodrop);
        if (zmq_connect(s, fe)) die("connect");
        /* Readiness: the subscription of the END name, forwarded by the proxy's XSUB. */
        timeout(s, WAIT_LIMIT_MS);
        for (;;) {
            int k = zmq_recv(s, buf, 1 << 20, 0);
            if (k < 0) die("no subscriber within 30 s");
            if (k > 0 && buf[0] == 1 && (size_t)(k - 1) == strlen(es) && !memcmp(buf + 1, es, k - 1)) break;
        }
        char *payload = malloc(size); memset(payload, 'D', size);
        int64_t t0 = now_ns();
        for (int i = 0; i < n; i++) {
            memcpy(payload + 1, &i, 4);
            const char *sj = subs[i % ns];
            send_nodrop(s, sj, strlen(sj), ZMQ_SNDMORE);
            send_nodrop(s, payload, size, 0);
        }
        int64_t t1 = now_ns();
        char e = 'E';
        send_nodrop(s, es, strlen(es), ZMQ_SNDMORE);
        send_nodrop(s, &e, 1, 0);
        int linger = 10000; zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(s); zmq_ctx_term(ctx);
        int64_t t2 = now_ns();
        printf("{\"role\":\"pub\",\"n\":%d,\"start_ns\":%lld,\"publish_done_ns\":%lld,\"flush_done_ns\":%lld,\"rate\":%.1f}\n",
               n, (long long)t0, (long long)t1, (long long)t2, n / ((t2 - t0) / 1e9));
        return 0;
    }
    if (strcmp(mode, "ping") && strcmp(mode, "pong")) { fprintf(stderr, "unknown --mode\n"); return 64; }
    /* ping / pong: a SUB on its own name, a PUB to the other's. */
    int is_ping = !strcmp(mode, "ping");
    void *in = sock(ctx, ZMQ_SUB), *out = sock(ctx, ZMQ_PUB);
    if (zmq_connect(in, be) || zmq_connect(out, fe)) die("connect");
    const char *mine = is_ping ? "pong" : "ping", *theirs = is_ping ? "ping" : "pong";
    zmq_setsockopt(in, ZMQ_SUBSCRIBE, mine, strlen(mine));
    int64_t limit = mono_ns() + (int64_t)WAIT_LIMIT_MS * 1000000;
    if (!is_ping) {
        /* Ready once a probe sent to itself through the proxy comes back: both paths are live. */
        zmq_setsockopt(in, ZMQ_SUBSCRIBE, "pongself", 8);
        char r = 'R';
        timeout(in, 1);
        for (;;) {
            send_msg(out, "pongself", &r, 1);
            if (!recv_msg(in, topic, sizeof topic, buf, 1 << 20, &len)) break;
            if (mono_ns() > limit) die("the proxy did not answer within 30 s");
        }
        timeout(in, -1);
        mark_ready(ready);
        for (;;) {
            if (recv_msg(in, topic, sizeof topic, buf, 1 << 20, &len)) break;
            if (!strcmp(topic, "pongself")) continue;
            if (len > 0 && buf[0] == 'Q') break;
            send_msg(out, theirs, buf, len);
        }
        return 0;
    }
    /* ping: probe until a pong comes back (the ponger's subscription is live), then measure; late
     * answers to probes carry no counter ('PPPP') and are skipped by the sequence check. */
    char pl[64]; memset(pl, 'P', sizeof pl);
    int psize = size < (int)sizeof pl ? size : (int)sizeof pl;
    timeout(in, 5);
    for (;;) {
        pl[0] = 'W';
        send_msg(out, theirs, pl, psize);
        if (!recv_msg(in, topic, sizeof topic, buf, 1 << 20, &len)) break;
        if (mono_ns() > limit) die("no pong within 30 s");
    }
    timeout(in, WAIT_LIMIT_MS);
    int64_t *rtts = malloc(sizeof(int64_t) * n);
    for (int i = 0; i < warmup + n; i++) {
        pl[0] = 'P'; memcpy(pl + 1, &i, 4);
        int64_t t = mono_ns();
        send_msg(out, theirs, pl, psize);
        do {
            if (recv_msg(in, topic, sizeof topic, buf, 1 << 20, &len)) die("no pong within 30 s");
        } while (len < 5 || memcmp(buf + 1, &i, 4));
        if (i >= warmup) rtts[i - warmup] = mono_ns() - t;
    }
    pl[0] = 'Q'; send_msg(out, theirs, pl, 1);
    int linger = 1000; zmq_setsockopt(out, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(out); zmq_close(in); zmq_ctx_term(ctx);
    report_rtts(rtts, n, dump);
    return 0;
}
