/* redisbench: the peers workload on Redis pub/sub with hiredis (Debian libhiredis-dev).
 * Modes: sub | pub | ping | pong. The publisher pipelines PUBLISH commands (batches of --batch,
 * at most --window unacknowledged), as a fast Redis client would. Flags are --name=value. */
#include "../common.h"
#include <getopt.h>
#include <poll.h>
#include <hiredis/hiredis.h>

static const char *host = "127.0.0.1", *mode = "", *subject = "bench.a", *end_subject = NULL,
                  *ready = NULL, *dump = NULL;
static int port = 16379, n = 1000000, warmup = 1000, size = 256, window = 1000, batch = 100;

static redisContext *conn(void) {
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) { fprintf(stderr, "error: connect: %s\n", c ? c->errstr : "out of memory"); exit(1); }
    return c;
}
static void die_ctx(redisContext *c, const char *what) {
    fprintf(stderr, "error: %s: %s\n", what, c->errstr[0] ? c->errstr : "timed out");
    exit(1);
}
/* The next reply, waiting at most timeout_ms; NULL on timeout (or on a read error: *err set). */
static redisReply *next_reply(redisContext *c, int timeout_ms, int *err) {
    void *r = NULL;
    for (;;) {
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK) die_ctx(c, "protocol");
        if (r) return r;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) == 0) return NULL;
        if (redisBufferRead(c) != REDIS_OK) { *err = 1; return NULL; }
    }
}
static redisReply *must_reply(redisContext *c) {
    int err = 0;
    redisReply *r = next_reply(c, WAIT_LIMIT_MS, &err);
    if (!r) die_ctx(c, "read");
    return r;
}
/* Returns once the server has confirmed the subscription. */
static void subscribe(redisContext *c, const char *ch) {
    redisReply *r = redisCommand(c, "SUBSCRIBE %s", ch);
    if (!r) die_ctx(c, "subscribe");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || strcmp(r->element[0]->str, "subscribe"))
        die("unexpected reply to SUBSCRIBE");
    freeReplyObject(r);
}
static void append_publish(redisContext *c, const char *ch, const char *payload, size_t len) {
    const char *argv[3] = {"PUBLISH", ch, payload};
    size_t lens[3] = {7, strlen(ch), len};
    redisAppendCommandArgv(c, 3, argv, lens);
}
static void write_all(redisContext *c) {
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) die_ctx(c, "write");
}

static void run_sub(void) {
    redisContext *c = conn();
    subscribe(c, subject);
    mark_ready(ready);
    long long count = 0;
    int64_t first = 0, last = 0;
    int end = 0, err = 0;
    for (;;) {
        redisReply *r = next_reply(c, count ? IDLE_STOP_MS : FIRST_MESSAGE_LIMIT_MS, &err);
        if (!r) break;
        int64_t t = now_ns();
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING) {
            if (r->element[2]->len > 0 && r->element[2]->str[0] == 'E') { end = 1; freeReplyObject(r); break; }
            if (++count == 1) first = t;
            last = t;
        }
        freeReplyObject(r);
    }
    print_sub(count, first, last, end, err ? c->errstr : NULL);
}

static void run_pub(void) {
    char *subs[64];
    char *list = strdup(subject);
    int ns = split_list(list, subs, 64);
    const char *es = end_subject ? end_subject : subs[0];
    redisContext *c = conn();
    char *payload = malloc(size);
    memset(payload, 'D', size);
    long long outstanding = 0, delivered = 0;
    int64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        memcpy(payload + 1, &i, 4);
        append_publish(c, subs[i % ns], payload, size);
        outstanding++;
        if ((i + 1) % batch == 0) {
            write_all(c);
            while (outstanding > window) {
                redisReply *r = must_reply(c);
                delivered += r->integer;
                freeReplyObject(r);
                outstanding--;
            }
        }
    }
    int64_t t1 = now_ns();
    write_all(c);
    while (outstanding > 0) {
        redisReply *r = must_reply(c);
        delivered += r->integer;
        freeReplyObject(r);
        outstanding--;
    }
    int64_t t2 = now_ns();
    memset(payload, 0, size);
    payload[0] = 'E';
    redisReply *r = redisCommand(c, "PUBLISH %s %b", es, payload, (size_t)size);
    if (!r) die_ctx(c, "publish END");
    freeReplyObject(r);
    printf("{\"role\":\"pub\",\"n\":%d,\"start_ns\":%lld,\"publish_done_ns\":%lld,\"flush_done_ns\":%lld,"
           "\"rate\":%.1f,\"server_reported_receivers\":%lld}\n",
           n, (long long)t0, (long long)t1, (long long)t2, n / ((t2 - t0) / 1e9), delivered);
}

static void run_pong(void) {
    redisContext *s = conn(), *p = conn();
    subscribe(s, "ping");
    mark_ready(ready);
    int err = 0;
    for (;;) {
        redisReply *r = next_reply(s, FIRST_MESSAGE_LIMIT_MS, &err);
        if (!r) die_ctx(s, "no ping");
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3) {
            redisReply *m = r->element[2];
            if (m->len > 0 && m->str[0] == 'Q') { freeReplyObject(r); break; }
            append_publish(p, "pong", m->str, m->len);
            write_all(p);
            freeReplyObject(must_reply(p)); /* PUBLISH's acknowledgement */
        }
        freeReplyObject(r);
    }
}

static void run_ping(void) {
    redisContext *s = conn(), *p = conn();
    subscribe(s, "pong");
    int psize = size < 64 ? size : 64;
    char *payload = malloc(psize);
    memset(payload, 'P', psize);
    int64_t *rtts = malloc(sizeof(int64_t) * n);
    for (int i = 0; i < warmup + n; i++) {
        memcpy(payload + 1, &i, 4);
        int64_t t = mono_ns();
        append_publish(p, "ping", payload, psize);
        write_all(p);
        redisReply *r = must_reply(s);
        int64_t d = mono_ns() - t;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[2]->len < 5 ||
            memcmp(r->element[2]->str + 1, &i, 4))
            die("a pong out of sequence");
        freeReplyObject(r);
        freeReplyObject(must_reply(p)); /* PUBLISH's acknowledgement, already there */
        if (i >= warmup) rtts[i - warmup] = d;
    }
    payload[0] = 'Q';
    redisReply *r = redisCommand(p, "PUBLISH ping %b", payload, (size_t)1);
    if (r) freeReplyObject(r);
    report_rtts(rtts, n, dump);
}

int main(int argc, char **argv) {
    static struct option o[] = {{"host", 1, 0, 'h'}, {"port", 1, 0, 'p'}, {"mode", 1, 0, 'm'},
                                {"subject", 1, 0, 's'}, {"end-subject", 1, 0, 'e'}, {"n", 1, 0, 'n'},
                                {"warmup", 1, 0, 'w'}, {"size", 1, 0, 'z'}, {"ready", 1, 0, 'r'},
                                {"dump", 1, 0, 'd'}, {"window", 1, 0, 'W'}, {"batch", 1, 0, 'B'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", o, NULL)) != -1) {
        switch (ch) {
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'm': mode = optarg; break;
        case 's': subject = optarg; break;
        case 'e': end_subject = optarg; break;
        case 'n': n = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'z': size = atoi(optarg); break;
        case 'r': ready = optarg; break;
        case 'd': dump = optarg; break;
        case 'W': window = atoi(optarg); break;
        case 'B': batch = atoi(optarg); break;
        default: return 64;
        }
    }
    if (n < 1 || size < 5 || batch < 1 || window < 0) { fprintf(stderr, "--n >= 1, --size >= 5, --batch >= 1\n"); return 64; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "sub")) run_sub();
    else if (!strcmp(mode, "pub")) run_pub();
    else if (!strcmp(mode, "ping")) run_ping();
    else if (!strcmp(mode, "pong")) run_pong();
    else { fprintf(stderr, "unknown --mode\n"); return 64; }
    return 0;
}
