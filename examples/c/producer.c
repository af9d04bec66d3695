/*
 * nbp-producer: publish NBP/1 notifications with libzmq alone (no Swift, no NBP library).
 *
 * Every frame is built by hand from protocol/NBP-1.md, section 2:
 *
 *   name | 0x00 | fixed header (32 bytes, big-endian) | header map | payload
 *
 * and sent as exactly one ZeroMQ frame. The socket is an XPUB so the producer can wait until a
 * subscription covering NAME has reached it (no sleeping past ZeroMQ's slow joiner).
 *
 *   make examples-c
 *   .build/examples/nbp-producer orders.created '{"id":{n}}' --count 10 --header tenant=acme \
 *       --content-type json                                # to `nbus broker`'s frontend
 *   .build/examples/nbp-producer orders.created hi --bind ipc:///tmp/orders.sock
 *
 * Exit status: 0 sent, 1 send failed, 2 no subscriber in time or bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <zmq.h>

#define NBP_VERSION 1
#define FIXED_HEADER_SIZE 32
#define MAX_NAME 255
#define MAX_HEADERS 32
#define MAX_HEADERS_LENGTH 4096
#define MAX_KEY 64
#define MAX_VALUE 1024
#define MAX_PAYLOAD (1024 * 1024) /* the default receiver limit (NBP-1 section 6) */
#define MAX_ENDPOINTS 16

static const char *DEFAULT_FRONTEND = "tcp://127.0.0.1:5550"; /* `nbus broker`'s frontend */

struct header {
    const char *key;
    const char *value;
};

/* ---- big-endian writers ------------------------------------------------------------------ */

static uint8_t *put_u8(uint8_t *p, uint8_t v) {
    *p++ = v;
    return p;
}

static uint8_t *put_u16(uint8_t *p, uint16_t v) {
    *p++ = (uint8_t)(v >> 8);
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) *p++ = (uint8_t)(v >> shift);
    return p;
}

static uint8_t *put_bytes(uint8_t *p, const void *src, size_t n) {
    if (n) memcpy(p, src, n);
    return p + n;
}

/* ---- validation (NBP-1 sections 4, 6 and 7.2) ------------------------------------------- */

/* Strict UTF-8 (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF. */
static int valid_utf8(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        else if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
        else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
        else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

/* A concrete name: 1..255 bytes of UTF-8, dot-separated non-empty tokens, no 0x00-0x20, no
 * 0x7f, no '*' or '>'. Returns NULL if fine, else why not. */
static const char *name_problem(const char *name) {
    size_t n = strlen(name);
    if (n == 0) return "empty name";
    if (n > MAX_NAME) return "longer than 255 bytes";
    if (!valid_utf8((const uint8_t *)name, n)) return "not valid UTF-8";
    size_t token = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)name[i];
        if (c <= 0x20 || c == 0x7f) return "space or control character";
        if (c == '*' || c == '>') return "'*' and '>' are wildcards, not allowed in a name";
        if (c == '.') {
            if (token == 0) return "empty token (leading, trailing or doubled '.')";
            token = 0;
        } else {
            token++;
        }
    }
    if (token == 0) return "empty token (leading, trailing or doubled '.')";
    if (strncmp(name, "_nbus.", 6) == 0 || strcmp(name, "_nbus") == 0) return "_nbus names are reserved";
    return NULL;
}

/* Header map (section 2.2): entries keyLength u8, key, valueLength u16 BE, value. Returns its
 * size, or -1 with a message. */
static long header_map_size(const struct header *h, int count) {
    if (count > MAX_HEADERS) { fprintf(stderr, "nbp-producer: more than %d headers\n", MAX_HEADERS); return -1; }
    long total = 0;
    for (int i = 0; i < count; i++) {
        size_t k = strlen(h[i].key), v = strlen(h[i].value);
        if (k < 1 || k > MAX_KEY || v > MAX_VALUE || !valid_utf8((const uint8_t *)h[i].key, k) ||
            !valid_utf8((const uint8_t *)h[i].value, v)) {
            fprintf(stderr, "nbp-producer: header '%s': key 1..64 bytes, value 0..1024 bytes, UTF-8\n", h[i].key);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(h[i].key, h[j].key) == 0) {
                fprintf(stderr, "nbp-producer: duplicate header key '%s'\n", h[i].key);
                return -1;
            }
        total += 1 + (long)k + 2 + (long)v;
    }
    if (total > MAX_HEADERS_LENGTH) { fprintf(stderr, "nbp-producer: header map over 4096 bytes\n"); return -1; }
    return total;
}

/* ---- encoding ----------------------------------------------------------------------------- */

/* Writes one frame into `out` (which has room: see frame_capacity) and returns its length. */
static size_t encode_frame(uint8_t *out, const char *name, uint8_t content_type, const struct header *h,
                           int header_count, size_t map_size, uint64_t sequence, uint64_t publisher_id,
                           uint64_t timestamp_ns, const uint8_t *payload, size_t payload_size) {
    size_t name_size = strlen(name);
    uint8_t *p = out;
    p = put_bytes(p, name, name_size);
    p = put_u8(p, 0x00);                    /* terminator */
    p = put_u8(p, NBP_VERSION);             /* +0  version */
    p = put_u8(p, 0);                       /* +1  flags: senders write 0 */
    p = put_u8(p, content_type);            /* +2  contentType */
    p = put_u8(p, (uint8_t)name_size);      /* +3  nameLength */
    p = put_u16(p, (uint16_t)map_size);     /* +4  headersLength */
    p = put_u8(p, (uint8_t)header_count);   /* +6  headerCount */
    p = put_u8(p, 0);                       /* +7  reserved */
    p = put_u64(p, sequence);               /* +8  sequence */
    p = put_u64(p, publisher_id);           /* +16 publisherId */
    p = put_u64(p, timestamp_ns);           /* +24 timestamp */
    for (int i = 0; i < header_count; i++) {
        size_t k = strlen(h[i].key), v = strlen(h[i].value);
        p = put_u8(p, (uint8_t)k);
        p = put_bytes(p, h[i].key, k);
        p = put_u16(p, (uint16_t)v);
        p = put_bytes(p, h[i].value, v);
    }
    p = put_bytes(p, payload, payload_size);
    return (size_t)(p - out);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A random, nonzero u64, new at every start (section 8). */
static int random_publisher_id(uint64_t *out) {
    do {
        if (getrandom(out, sizeof *out, 0) != (ssize_t)sizeof *out) return -1;
    } while (*out == 0);
    return 0;
}

/* ---- payload ------------------------------------------------------------------------------ */

static int parse_hex(const char *hex, uint8_t **out, size_t *size) {
    size_t n = strlen(hex);
    if (n % 2) return -1;
    *out = malloc(n / 2 + 1);
    if (!*out) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned value;
        if (sscanf(hex + 2 * i, "%2x", &value) != 1) return -1;
        (*out)[i] = (uint8_t)value;
    }
    *size = n / 2;
    return 0;
}

/* The payload text with every "{n}" replaced by `number`. */
static char *payload_text(const char *text, long number) {
    char digits[32];
    snprintf(digits, sizeof digits, "%ld", number);
    size_t count = 0;
    for (const char *s = strstr(text, "{n}"); s; s = strstr(s + 3, "{n}")) count++;
    char *out = malloc(strlen(text) + count * strlen(digits) + 1), *o = out;
    if (!out) return NULL;
    for (const char *s = text; *s;) {
        if (strncmp(s, "{n}", 3) == 0) { o = stpcpy(o, digits); s += 3; }
        else *o++ = *s++;
    }
    *o = 0;
    return out;
}

/* ---- waiting for a subscriber ------------------------------------------------------------- */

/* Reads subscription messages (0x01 + topic = subscribe) until a topic is a prefix of
 * name + 0x00, i.e. a subscription that selects NAME (section 5.1). */
static int wait_for_subscriber(void *sock, const char *name, long timeout_ms) {
    size_t name_size = strlen(name);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed >= timeout_ms) return 0;
        zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(&item, 1, timeout_ms - elapsed);
        if (rc < 0 && zmq_errno() == EINTR) continue;
        if (rc <= 0) return 0;
        uint8_t buf[MAX_NAME + 2];
        int size = zmq_recv(sock, buf, sizeof buf, ZMQ_DONTWAIT);
        if (size < 1) continue;
        if (size > (int)sizeof buf) continue; /* truncated: longer than any name + 0x00 */
        size_t topic = (size_t)size - 1;
        if (buf[0] == 1 && topic <= name_size + 1 && memcmp(buf + 1, name, topic < name_size ? topic : name_size) == 0 &&
            (topic <= name_size || buf[1 + name_size] == 0))
            return 1;
    }
}

/* ---- main --------------------------------------------------------------------------------- */

/* A content type by the names nbus publish and producer.py take (NBP-1 section 9), or by its
 * code 0-255 in decimal; -1 for anything else. */
static int content_type_code(const char *text) {
    static const char *const names[] = {"unspecified", "text", "json", "cbor", "msgpack", "protobuf"};
    for (int code = 0; code < (int)(sizeof names / sizeof names[0]); code++)
        if (strcmp(text, names[code]) == 0) return code;
    char *end;
    errno = 0;
    long code = strtol(text, &end, 10);
    if (*text == 0 || *end || errno || code < 0 || code > 255) return -1;
    return (int)code;
}

static void usage(FILE *to) {
    fprintf(to,
            "usage: nbp-producer NAME [PAYLOAD] [--count N] [--header KEY=VALUE]... [--content-type TYPE]\n"
            "                    [--payload-hex HEX] [--connect ENDPOINT]... [--bind ENDPOINT]...\n"
            "                    [--no-wait] [--timeout SECONDS] [--print-frames]\n"
            "PAYLOAD may contain {n} (the notification number, 1-based). Default endpoint: connect %s\n"
            "(nbus broker's frontend). Waits for a subscription covering NAME unless --no-wait.\n",
            DEFAULT_FRONTEND);
}

int main(int argc, char **argv) {
    long count = 1;
    double timeout = 10.0;
    int content_type = 0, no_wait = 0, print_frames = 0;
    const char *payload_hex = NULL;
    struct header headers[MAX_HEADERS + 1];
    int header_count = 0;
    const char *binds[MAX_ENDPOINTS], *connects[MAX_ENDPOINTS];
    int bind_count = 0, connect_count = 0;

    static const struct option options[] = {
        {"count", required_argument, 0, 'c'},       {"header", required_argument, 0, 'H'},
        {"content-type", required_argument, 0, 't'}, {"payload-hex", required_argument, 0, 'x'},
        {"connect", required_argument, 0, 'C'},     {"bind", required_argument, 0, 'B'},
        {"no-wait", no_argument, 0, 'n'},           {"timeout", required_argument, 0, 'T'},
        {"print-frames", no_argument, 0, 'p'},      {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'c':
            count = strtol(optarg, &end, 10);
            if (*end || count < 1) { fprintf(stderr, "nbp-producer: --count must be at least 1\n"); return 2; }
            break;
        case 'H': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) { fprintf(stderr, "nbp-producer: --header takes KEY=VALUE\n"); return 2; }
            if (header_count > MAX_HEADERS) { fprintf(stderr, "nbp-producer: more than %d headers\n", MAX_HEADERS); return 2; }
            *eq = 0;
            headers[header_count].key = optarg;
            headers[header_count].value = eq + 1;
            header_count++;
            break;
        }
        case 't':
            content_type = content_type_code(optarg);
            if (content_type < 0) {
                fprintf(stderr,
                        "nbp-producer: unknown --content-type '%s' (unspecified, text, json, cbor, msgpack, protobuf, "
                        "or a code 0-255)\n",
                        optarg);
                return 2;
            }
            break;
        case 'x': payload_hex = optarg; break;
        case 'C':
        case 'B':
            if ((opt == 'C' ? connect_count : bind_count) >= MAX_ENDPOINTS) { fprintf(stderr, "nbp-producer: too many endpoints\n"); return 2; }
            if (opt == 'C') connects[connect_count++] = optarg; else binds[bind_count++] = optarg;
            break;
        case 'n': no_wait = 1; break;
        case 'T':
            timeout = strtod(optarg, &end);
            if (*end || timeout <= 0) { fprintf(stderr, "nbp-producer: --timeout must be positive\n"); return 2; }
            break;
        case 'p': print_frames = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc || argc - optind > 2) { usage(stderr); return 2; }
    const char *name = argv[optind];
    const char *text = optind + 1 < argc ? argv[optind + 1] : "";
    const char *problem = name_problem(name);
    if (problem) { fprintf(stderr, "nbp-producer: invalid name '%s': %s\n", name, problem); return 2; }
    long map_size = header_map_size(headers, header_count);
    if (map_size < 0) return 2;
    uint8_t *binary = NULL;
    size_t binary_size = 0;
    if (payload_hex && parse_hex(payload_hex, &binary, &binary_size) != 0) {
        fprintf(stderr, "nbp-producer: --payload-hex is not hex\n");
        return 2;
    }
    if (bind_count == 0 && connect_count == 0) connects[connect_count++] = DEFAULT_FRONTEND;

    uint64_t publisher_id;
    if (random_publisher_id(&publisher_id) != 0) { perror("nbp-producer: getrandom"); return 1; }

    void *ctx = zmq_ctx_new();
    void *sock = zmq_socket(ctx, ZMQ_XPUB);
    int one = 1, timeout_ms = (int)(timeout * 1000);
    zmq_setsockopt(sock, ZMQ_XPUB_NODROP, &one, sizeof one);          /* full queue: wait, do not drop */
    zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(sock, ZMQ_LINGER, &timeout_ms, sizeof timeout_ms);  /* deliver what is queued at close */
    for (int i = 0; i < bind_count; i++)
        if (zmq_bind(sock, binds[i]) != 0) {
            fprintf(stderr, "nbp-producer: bind %s: %s\n", binds[i], zmq_strerror(zmq_errno()));
            zmq_close(sock); zmq_ctx_term(ctx); return 2;
        }
    for (int i = 0; i < connect_count; i++)
        if (zmq_connect(sock, connects[i]) != 0) {
            fprintf(stderr, "nbp-producer: connect %s: %s\n", connects[i], zmq_strerror(zmq_errno()));
            zmq_close(sock); zmq_ctx_term(ctx); return 2;
        }

    if (!no_wait && !wait_for_subscriber(sock, name, timeout_ms)) {
        fprintf(stderr, "nbp-producer: no subscriber for %s reached this producer within %g s "
                        "(is the broker or subscriber running? --no-wait sends anyway)\n", name, timeout);
        zmq_close(sock); zmq_ctx_term(ctx);
        return 2;
    }

    int status = 0;
    long sent = 0;
    for (long number = 1; number <= count; number++) {
        char *textual = binary ? NULL : payload_text(text, number);
        const uint8_t *payload = binary ? binary : (const uint8_t *)textual;
        size_t payload_size = binary ? binary_size : strlen(textual);
        if (payload_size > MAX_PAYLOAD) {
            fprintf(stderr, "nbp-producer: payload over 1 MiB, receivers would drop it\n");
            free(textual); status = 2; break;
        }
        size_t capacity = strlen(name) + 1 + FIXED_HEADER_SIZE + (size_t)map_size + payload_size;
        uint8_t *frame = malloc(capacity);
        /* sequence: per name, first message 1; a single-name producer counts 1, 2, 3, ... */
        size_t size = encode_frame(frame, name, (uint8_t)content_type, headers, header_count, (size_t)map_size,
                                   (uint64_t)number, publisher_id, now_ns(), payload, payload_size);
        int rc;
        do rc = zmq_send(sock, frame, size, 0); /* one frame: no ZMQ_SNDMORE */
        while (rc < 0 && zmq_errno() == EINTR);
        if (rc < 0) {
            fprintf(stderr, "nbp-producer: send %ld: %s\n", number, zmq_strerror(zmq_errno()));
            free(frame); free(textual); status = 1; break;
        }
        sent++;
        if (print_frames) {
            for (size_t i = 0; i < size; i++) printf("%02x", frame[i]);
            printf("\n");
            fflush(stdout);
        }
        free(frame);
        free(textual);
    }
    zmq_close(sock);        /* lingers up to --timeout to deliver what is queued */
    zmq_ctx_term(ctx);
    free(binary);
    fprintf(stderr, "nbp-producer: sent %ld notification(s) named %s as publisher %016llx\n", sent, name,
            (unsigned long long)publisher_id);
    return status;
}
