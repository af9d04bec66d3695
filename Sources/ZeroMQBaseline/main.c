// nbus-baseline: the raw-libzmq baseline `nbus bench throughput` measures the bus against.
//
// libzmq alone, no bus: the same bytes the bus sends for one notification (an NBP/1 frame: name,
// NUL, 32-byte fixed header, payload; ONE ZeroMQ frame), over the same transport with the same
// high-water marks. Four roles, each printing JSON lines on stdout:
//
//   nbus-baseline pub --endpoint E --count N [--size B] [--hwm H] [--name bench.data]
//       XPUB, ZMQ_XPUB_NODROP=1, SNDHWM=RCVHWM=H, binds E (tcp://127.0.0.1:* allowed) and prints
//       {"event":"bound","endpoint":"<resolved>"}; waits until it RECEIVES the subscription
//       message on the XPUB (real readiness, no sleep), then sends N frames (blocking send: with
//       NODROP a full pipe makes libzmq wait for room; EAGAIN, if ever returned, is retried after
//       a zmq_poll), and prints {"event":"done",...}.
//       With --rate R the sends are paced (R per second, monotonic deadlines) and each frame
//       carries its send time (wall clock) in the NBP/1 timestamp field.
//   nbus-baseline sub --endpoint E --count N [--size B] [--hwm H] [--name bench.data] [--latency]
//       SUB, RCVHWM=SNDHWM=H, connects, subscribes to "<name>\0", counts N frames and prints
//       {"event":"result","count":..,"elapsed_ns":..,"rate":..,"gaps":..,"bad_size":..}, where
//       elapsed is first-to-last message and rate = (count-1)/elapsed, plus the process's own
//       CPU time (getrusage: cpu_user_ns, cpu_system_ns) and peak RSS (VmHWM: max_rss_kib). With --latency it adds latency_p50_ns,
//       latency_p99_ns, latency_p999_ns, latency_max_ns, latency_mean_ns: send stamp to receipt.
//       With --connect it connects to E (a proxy's frontend) instead of binding, and prints E.
//   nbus-baseline proxy --endpoint FRONTEND --backend BACKEND [--hwm H]
//       Bare libzmq in the brokered shape: XSUB binds FRONTEND, XPUB binds BACKEND (both marks H),
//       prints {"event":"bound","endpoint":"<frontend>","backend":"<backend>"} and runs
//       zmq_proxy until its timeout or stdin's end. A publisher with NODROP waits for it, and it
//       drops for a subscriber over its mark (libzmq's proxy cannot wait for one).
//   nbus-baseline rep --endpoint E --count K [--warmup W]
//       REP binds E, prints the bound line, echoes K+W requests.
//   nbus-baseline req --endpoint E --count K [--size B] [--warmup W]
//       REQ connects, W unmeasured round trips, then K measured ones of the same frame; prints
//       {"event":"rtt","count":K,"p50_ns":..,"p99_ns":..,"min_ns":..,"max_ns":..,"mean_ns":..}.
//
// Common: --timeout S (default 120): the process kills itself (SIGALRM) after S seconds; with
// --exit-on-stdin-eof it also exits as soon as its stdin reaches end of file (the benchmark holds
// the write end of a pipe, so the child dies with it), so a benchmark never leaves it behind.
// Exit status: 0 on success, 1 on a failure (message on stderr), 2 on a usage error.

#define _GNU_SOURCE
#include <zmq.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NBP1_FIXED_HEADER 32

typedef struct {
    const char *role;
    const char *endpoint;
    const char *backend;
    const char *name;
    long long count;
    long long size;
    long long warmup;
    int hwm;
    int timeout;
    int exit_on_stdin_eof;
    long long rate;
    int latency;
    int connect;
} options_t;

static uint64_t now_ns(clockid_t clock) {
    struct timespec spec;
    clock_gettime(clock, &spec);
    return (uint64_t)spec.tv_sec * 1000000000ull + (uint64_t)spec.tv_nsec;
}

static void fail(const char *what) {
    fprintf(stderr, "nbus-baseline: %s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(1);
}

static void usage(const char *message) {
    fprintf(stderr,
            "nbus-baseline: %s\n"
            "usage: nbus-baseline pub|sub|rep|req|proxy --endpoint E [--count N] [--size B] [--hwm H]\n"
            "                     [--name NAME] [--warmup W] [--timeout S] [--exit-on-stdin-eof]\n"
            "                     [--rate R (pub)] [--connect (pub)] [--latency (sub)] [--backend E (proxy)]\n",
            message);
    exit(2);
}

static long long parse_number(const char *flag, const char *text) {
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0) {
        fprintf(stderr, "nbus-baseline: %s wants a non-negative integer, got \"%s\"\n", flag, text);
        exit(2);
    }
    return value;
}

static options_t parse(int argc, char **argv) {
    options_t options = {NULL, NULL, NULL, "bench.data", 1000000, 256, 1000, 10000, 120, 0, 0, 0, 0};
    if (argc < 2) usage("missing role");
    options.role = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--exit-on-stdin-eof") == 0) {
            options.exit_on_stdin_eof = 1;
            continue;
        }
        if (strcmp(flag, "--connect") == 0) {
            options.connect = 1;
            continue;
        }
        if (strcmp(flag, "--latency") == 0) {
            options.latency = 1;
            continue;
        }
        if (i + 1 >= argc) usage("an option is missing its value");
        const char *value = argv[++i];
        if (strcmp(flag, "--endpoint") == 0) options.endpoint = value;
        else if (strcmp(flag, "--backend") == 0) options.backend = value;
        else if (strcmp(flag, "--name") == 0) options.name = value;
        else if (strcmp(flag, "--count") == 0) options.count = parse_number(flag, value);
        else if (strcmp(flag, "--size") == 0) options.size = parse_number(flag, value);
        else if (strcmp(flag, "--warmup") == 0) options.warmup = parse_number(flag, value);
        else if (strcmp(flag, "--hwm") == 0) options.hwm = (int)parse_number(flag, value);
        else if (strcmp(flag, "--timeout") == 0) options.timeout = (int)parse_number(flag, value);
        else if (strcmp(flag, "--rate") == 0) options.rate = parse_number(flag, value);
        else usage("unknown option");
    }
    if (options.endpoint == NULL) usage("--endpoint is required");
    size_t name_length = strlen(options.name);
    if (name_length == 0 || name_length > 255) usage("--name must be 1-255 bytes");
    if (options.count < 1 && strcmp(options.role, "proxy") != 0) usage("--count must be at least 1");
    return options;
}

static void put_u64_be(unsigned char *out, uint64_t value) {
    for (int i = 7; i >= 0; i--) {
        out[i] = (unsigned char)(value & 0xff);
        value >>= 8;
    }
}

static uint64_t get_u64_be(const unsigned char *in) {
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) value = (value << 8) | in[i];
    return value;
}

// The NBP/1 frame the bus would send for `size` payload bytes and no headers:
// name NUL | version flags type namelen | headers-len(2) count reserved | seq(8) pub(8) time(8) | payload.
// Returns the frame; *sequence_at is where the big-endian sequence number sits.
static unsigned char *make_frame(const options_t *options, size_t *length, size_t *sequence_at) {
    size_t name_length = strlen(options->name);
    *length = name_length + 1 + NBP1_FIXED_HEADER + (size_t)options->size;
    unsigned char *frame = calloc(1, *length);
    if (frame == NULL) {
        fprintf(stderr, "nbus-baseline: out of memory\n");
        exit(1);
    }
    memcpy(frame, options->name, name_length);
    unsigned char *header = frame + name_length + 1;
    header[0] = 1;                            // version
    header[1] = 0;                            // flags
    header[2] = 0;                            // content type: unspecified
    header[3] = (unsigned char)name_length;   // name length
    // [4..5] headers length 0, [6] header count 0, [7] reserved 0.
    put_u64_be(header + 8, 0);                                  // sequence, stamped per message
    put_u64_be(header + 16, 0x6e627573626173ull);               // publisher id ("nbusbas")
    put_u64_be(header + 24, now_ns(CLOCK_REALTIME));            // timestamp (once: raw cost only)
    memset(header + NBP1_FIXED_HEADER, 0xab, (size_t)options->size);
    *sequence_at = name_length + 1 + 8;
    return frame;
}

static void set_int(void *socket, int option, int value, const char *what) {
    if (zmq_setsockopt(socket, option, &value, sizeof value) != 0) fail(what);
}

static void print_bound(void *socket) {
    char endpoint[1024];
    size_t size = sizeof endpoint;
    if (zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, endpoint, &size) != 0) fail("ZMQ_LAST_ENDPOINT");
    printf("{\"event\":\"bound\",\"endpoint\":\"%s\"}\n", endpoint);
    fflush(stdout);
}

// Sends one frame; with NODROP and a full pipe libzmq blocks until there is room. Should it ever
// answer EAGAIN (or EINTR) instead, wait for POLLOUT briefly and retry: nothing is dropped.
static void send_frame(void *socket, const unsigned char *frame, size_t length) {
    while (zmq_send(socket, frame, length, 0) < 0) {
        int error = zmq_errno();
        if (error != EAGAIN && error != EINTR) fail("zmq_send");
        zmq_pollitem_t item = {socket, 0, ZMQ_POLLOUT, 0};
        zmq_poll(&item, 1, 1);
    }
}

static int run_pub(void *context, const options_t *options) {
    void *socket = zmq_socket(context, ZMQ_XPUB);
    if (socket == NULL) fail("zmq_socket(XPUB)");
    set_int(socket, ZMQ_SNDHWM, options->hwm, "ZMQ_SNDHWM");
    set_int(socket, ZMQ_RCVHWM, options->hwm, "ZMQ_RCVHWM");
    set_int(socket, ZMQ_XPUB_NODROP, 1, "ZMQ_XPUB_NODROP");
    set_int(socket, ZMQ_LINGER, options->timeout * 1000, "ZMQ_LINGER");
    if (options->connect) {
        if (zmq_connect(socket, options->endpoint) != 0) fail("zmq_connect");
        printf("{\"event\":\"bound\",\"endpoint\":\"%s\"}\n", options->endpoint);
        fflush(stdout);
    } else {
        if (zmq_bind(socket, options->endpoint) != 0) fail("zmq_bind");
        print_bound(socket);
    }

    // Readiness: the subscription message [1, prefix...] arrives once the subscriber is live.
    size_t name_length = strlen(options->name);
    for (;;) {
        unsigned char message[512];
        int received = zmq_recv(socket, message, sizeof message, 0);
        if (received < 0) {
            if (zmq_errno() == EINTR) continue;
            fail("zmq_recv(subscription)");
        }
        // A subscription whose topic is a prefix of "<name>\0" (the C string's own NUL included).
        size_t topic_length = received >= 1 ? (size_t)received - 1 : 0;
        if (received >= 1 && message[0] == 1 && topic_length <= name_length + 1 &&
            memcmp(message + 1, options->name, topic_length) == 0)
            break;
    }

    size_t length = 0, sequence_at = 0;
    unsigned char *frame = make_frame(options, &length, &sequence_at);
    uint64_t start = now_ns(CLOCK_MONOTONIC);
    for (long long i = 1; i <= options->count; i++) {
        put_u64_be(frame + sequence_at, (uint64_t)i);
        if (options->rate > 0) {
            // Paced: message i is due at start + (i-1)/rate (monotonic); stamped when sent.
            uint64_t due = start + (uint64_t)((double)(i - 1) * 1e9 / (double)options->rate);
            struct timespec until = {(time_t)(due / 1000000000ull), (long)(due % 1000000000ull)};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {}
            put_u64_be(frame + sequence_at + 16, now_ns(CLOCK_REALTIME));
        }
        send_frame(socket, frame, length);
    }
    uint64_t sent = now_ns(CLOCK_MONOTONIC);
    zmq_close(socket);  // lingers until the subscriber has everything (bounded by --timeout)
    uint64_t closed = now_ns(CLOCK_MONOTONIC);
    printf("{\"event\":\"done\",\"count\":%lld,\"frame_bytes\":%zu,\"send_ns\":%llu,\"close_ns\":%llu}\n",
           options->count, length, (unsigned long long)(sent - start), (unsigned long long)(closed - sent));
    fflush(stdout);
    free(frame);
    return 0;
}

// The peak RSS of this process's own address space, KiB: VmHWM from /proc/self/status. Not
// ru_maxrss, which Linux carries across execve: a child spawned with posix_spawn (vfork-style)
// would report its parent's peak. Falls back to ru_maxrss where /proc is missing.
static long peak_rss_kib(long fallback) {
    FILE *status = fopen("/proc/self/status", "r");
    if (status == NULL) return fallback;
    char line[256];
    long peak = fallback;
    while (fgets(line, sizeof line, status) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            peak = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(status);
    return peak;
}

static int run_proxy(void *context, const options_t *options) {
    if (options->backend == NULL) usage("proxy needs --backend");
    void *frontend = zmq_socket(context, ZMQ_XSUB);
    void *backend = zmq_socket(context, ZMQ_XPUB);
    if (frontend == NULL || backend == NULL) fail("zmq_socket(XSUB/XPUB)");
    set_int(frontend, ZMQ_RCVHWM, options->hwm, "ZMQ_RCVHWM");
    set_int(frontend, ZMQ_SNDHWM, options->hwm, "ZMQ_SNDHWM");
    set_int(backend, ZMQ_RCVHWM, options->hwm, "ZMQ_RCVHWM");
    set_int(backend, ZMQ_SNDHWM, options->hwm, "ZMQ_SNDHWM");
    set_int(frontend, ZMQ_LINGER, 0, "ZMQ_LINGER");
    set_int(backend, ZMQ_LINGER, 0, "ZMQ_LINGER");
    if (zmq_bind(frontend, options->endpoint) != 0) fail("zmq_bind(frontend)");
    if (zmq_bind(backend, options->backend) != 0) fail("zmq_bind(backend)");
    char front[1024], back[1024];
    size_t front_size = sizeof front, back_size = sizeof back;
    if (zmq_getsockopt(frontend, ZMQ_LAST_ENDPOINT, front, &front_size) != 0) fail("ZMQ_LAST_ENDPOINT");
    if (zmq_getsockopt(backend, ZMQ_LAST_ENDPOINT, back, &back_size) != 0) fail("ZMQ_LAST_ENDPOINT");
    printf("{\"event\":\"bound\",\"endpoint\":\"%s\",\"backend\":\"%s\"}\n", front, back);
    fflush(stdout);
    zmq_proxy(frontend, backend, NULL);  // until the process is stopped
    return 0;
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int run_sub(void *context, const options_t *options) {
    void *socket = zmq_socket(context, ZMQ_SUB);
    if (socket == NULL) fail("zmq_socket(SUB)");
    set_int(socket, ZMQ_RCVHWM, options->hwm, "ZMQ_RCVHWM");
    set_int(socket, ZMQ_SNDHWM, options->hwm, "ZMQ_SNDHWM");
    set_int(socket, ZMQ_LINGER, 0, "ZMQ_LINGER");
    size_t name_length = strlen(options->name);
    if (zmq_setsockopt(socket, ZMQ_SUBSCRIBE, options->name, name_length + 1) != 0) fail("ZMQ_SUBSCRIBE");
    if (zmq_connect(socket, options->endpoint) != 0) fail("zmq_connect");

    size_t expected = name_length + 1 + NBP1_FIXED_HEADER + (size_t)options->size;
    size_t sequence_at = name_length + 1 + 8;
    zmq_msg_t message;
    zmq_msg_init(&message);
    long long count = 0, bad_size = 0;
    uint64_t gaps = 0, last_sequence = 0, first = 0, last = 0;
    // --latency: publish timestamp (header, wall clock) to receipt, per message.
    uint64_t *latencies = options->latency ? malloc(sizeof(uint64_t) * (size_t)options->count) : NULL;
    if (options->latency && latencies == NULL) {
        fprintf(stderr, "nbus-baseline: out of memory\n");
        return 1;
    }
    while (count < options->count) {
        if (zmq_msg_recv(&message, socket, 0) < 0) {
            if (zmq_errno() == EINTR) continue;
            fail("zmq_msg_recv");
        }
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (count == 0) first = now;
        last = now;
        count++;
        size_t size = zmq_msg_size(&message);
        if (size != expected) {
            bad_size++;
            continue;
        }
        const unsigned char *data = (const unsigned char *)zmq_msg_data(&message);
        uint64_t sequence = get_u64_be(data + sequence_at);
        if (sequence > last_sequence + 1) gaps += sequence - last_sequence - 1;
        last_sequence = sequence;
        if (latencies != NULL) {
            uint64_t stamp = get_u64_be(data + sequence_at + 16), wall = now_ns(CLOCK_REALTIME);
            latencies[count - 1] = wall > stamp ? wall - stamp : 0;
        }
    }
    zmq_msg_close(&message);
    zmq_close(socket);
    uint64_t elapsed = last - first;
    double rate = elapsed > 0 ? (double)(count - 1) * 1e9 / (double)elapsed : 0;
    struct rusage self_usage;
    memset(&self_usage, 0, sizeof self_usage);
    getrusage(RUSAGE_SELF, &self_usage);
    uint64_t user_ns = (uint64_t)self_usage.ru_utime.tv_sec * 1000000000ull + (uint64_t)self_usage.ru_utime.tv_usec * 1000ull;
    uint64_t system_ns = (uint64_t)self_usage.ru_stime.tv_sec * 1000000000ull + (uint64_t)self_usage.ru_stime.tv_usec * 1000ull;
    printf("{\"event\":\"result\",\"count\":%lld,\"elapsed_ns\":%llu,\"rate\":%.1f,\"gaps\":%llu,"
           "\"bad_size\":%lld,\"frame_bytes\":%zu,\"cpu_user_ns\":%llu,\"cpu_system_ns\":%llu,\"max_rss_kib\":%ld",
           count, (unsigned long long)elapsed, rate, (unsigned long long)gaps, bad_size, expected,
           (unsigned long long)user_ns, (unsigned long long)system_ns, peak_rss_kib(self_usage.ru_maxrss));
    if (latencies != NULL && count > 0) {
        size_t n = (size_t)count;
        qsort(latencies, n, sizeof(uint64_t), compare_u64);
        double sum = 0;
        for (size_t i = 0; i < n; i++) sum += (double)latencies[i];
        printf(",\"latency_p50_ns\":%llu,\"latency_p99_ns\":%llu,\"latency_p999_ns\":%llu,\"latency_max_ns\":%llu,"
               "\"latency_mean_ns\":%.1f",
               (unsigned long long)latencies[(size_t)((double)(n - 1) * 0.50)],
               (unsigned long long)latencies[(size_t)((double)(n - 1) * 0.99)],
               (unsigned long long)latencies[(size_t)((double)(n - 1) * 0.999)], (unsigned long long)latencies[n - 1],
               sum / (double)n);
        free(latencies);
    }
    printf("}\n");
    fflush(stdout);
    return bad_size == 0 && gaps == 0 ? 0 : 1;
}

static int run_rep(void *context, const options_t *options) {
    void *socket = zmq_socket(context, ZMQ_REP);
    if (socket == NULL) fail("zmq_socket(REP)");
    set_int(socket, ZMQ_LINGER, 1000, "ZMQ_LINGER");
    if (zmq_bind(socket, options->endpoint) != 0) fail("zmq_bind");
    print_bound(socket);
    zmq_msg_t message;
    zmq_msg_init(&message);
    long long total = options->count + options->warmup;
    for (long long i = 0; i < total; i++) {
        if (zmq_msg_recv(&message, socket, 0) < 0) {
            if (zmq_errno() == EINTR) { i--; continue; }
            fail("zmq_msg_recv");
        }
        while (zmq_msg_send(&message, socket, 0) < 0) {
            if (zmq_errno() != EINTR) fail("zmq_msg_send");
        }
    }
    zmq_msg_close(&message);
    zmq_close(socket);
    printf("{\"event\":\"done\",\"count\":%lld}\n", total);
    fflush(stdout);
    return 0;
}

static int run_req(void *context, const options_t *options) {
    void *socket = zmq_socket(context, ZMQ_REQ);
    if (socket == NULL) fail("zmq_socket(REQ)");
    set_int(socket, ZMQ_LINGER, 0, "ZMQ_LINGER");
    if (zmq_connect(socket, options->endpoint) != 0) fail("zmq_connect");
    size_t length = 0, sequence_at = 0;
    unsigned char *frame = make_frame(options, &length, &sequence_at);
    unsigned char *reply = malloc(length + 1);
    uint64_t *samples = malloc(sizeof(uint64_t) * (size_t)options->count);
    if (reply == NULL || samples == NULL) {
        fprintf(stderr, "nbus-baseline: out of memory\n");
        return 1;
    }
    long long total = options->count + options->warmup;
    for (long long i = 0; i < total; i++) {
        put_u64_be(frame + sequence_at, (uint64_t)(i + 1));
        uint64_t start = now_ns(CLOCK_MONOTONIC);
        while (zmq_send(socket, frame, length, 0) < 0) {
            if (zmq_errno() != EINTR) fail("zmq_send");
        }
        int received;
        while ((received = zmq_recv(socket, reply, length + 1, 0)) < 0) {
            if (zmq_errno() != EINTR) fail("zmq_recv");
        }
        uint64_t elapsed = now_ns(CLOCK_MONOTONIC) - start;
        if ((size_t)received != length) {
            fprintf(stderr, "nbus-baseline: reply of %d bytes, expected %zu\n", received, length);
            return 1;
        }
        if (i >= options->warmup) samples[i - options->warmup] = elapsed;
    }
    size_t n = (size_t)options->count;
    qsort(samples, n, sizeof(uint64_t), compare_u64);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)samples[i];
    size_t p50 = (size_t)((double)(n - 1) * 0.50), p99 = (size_t)((double)(n - 1) * 0.99);
    printf("{\"event\":\"rtt\",\"count\":%zu,\"frame_bytes\":%zu,\"p50_ns\":%llu,\"p99_ns\":%llu,"
           "\"min_ns\":%llu,\"max_ns\":%llu,\"mean_ns\":%.1f}\n",
           n, length, (unsigned long long)samples[p50], (unsigned long long)samples[p99],
           (unsigned long long)samples[0], (unsigned long long)samples[n - 1], sum / (double)n);
    fflush(stdout);
    free(samples);
    free(reply);
    free(frame);
    zmq_close(socket);
    return 0;
}

// Blocks on stdin; at end of file (the parent closed its end or died) ends the process.
static void *watch_stdin(void *unused) {
    (void)unused;
    char buffer[64];
    for (;;) {
        ssize_t got = read(STDIN_FILENO, buffer, sizeof buffer);
        if (got == 0 || (got < 0 && errno != EINTR)) {
            fprintf(stderr, "nbus-baseline: stdin closed, exiting\n");
            _exit(3);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    options_t options = parse(argc, argv);
    // A parent's worker thread may have spawned us with signals blocked (libdispatch threads block
    // them, and the mask is inherited across exec): unblock them, or SIGALRM/SIGINT would not act.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    // Never outlive the benchmark: after --timeout seconds regardless, and with the parent's pipe.
    if (options.timeout > 0) alarm((unsigned)options.timeout);
    if (options.exit_on_stdin_eof) {
        pthread_t watcher;
        if (pthread_create(&watcher, NULL, watch_stdin, NULL) != 0) {
            fprintf(stderr, "nbus-baseline: cannot start the stdin watcher\n");
            return 1;
        }
        pthread_detach(watcher);
    }

    void *context = zmq_ctx_new();
    if (context == NULL) fail("zmq_ctx_new");
    int status;
    if (strcmp(options.role, "pub") == 0) status = run_pub(context, &options);
    else if (strcmp(options.role, "sub") == 0) status = run_sub(context, &options);
    else if (strcmp(options.role, "rep") == 0) status = run_rep(context, &options);
    else if (strcmp(options.role, "req") == 0) status = run_req(context, &options);
    else if (strcmp(options.role, "proxy") == 0) status = run_proxy(context, &options);
    else usage("the role must be pub, sub, rep, req or proxy");
    zmq_ctx_term(context);
    return status;
}
