/* Helpers shared by the C clients of the peers comparison (Benchmarks/peers/README.md). */
#ifndef PEERS_COMMON_H
#define PEERS_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a subscriber waits for its first message, and after its last one, before it stops
 * without END: every run ends, and a late publisher on a loaded machine still finds it there. */
#define FIRST_MESSAGE_LIMIT_MS 60000
#define IDLE_STOP_MS 3000
/* How long any other wait (a reply, a subscription to show up) may take before the client fails. */
#define WAIT_LIMIT_MS 30000

/* Wall clock: the *_ns fields are compared across processes. */
static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static inline int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* The driver starts the publisher once this file exists: call it only when the subscription is live. */
static __attribute__((unused)) void mark_ready(const char *path) {
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) { perror("ready file"); exit(1); }
    fclose(f);
}
static __attribute__((unused)) void die(const char *what) {
    fprintf(stderr, "error: %s\n", what);
    exit(1);
}
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
/* Nearest-rank percentile in microseconds; v sorted. */
static double pct_us(const int64_t *v, int n, double p) {
    int k = (int)(p * n + 0.999999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1] / 1000.0;
}
static __attribute__((unused)) void report_rtts(int64_t *rtts, int n, const char *dump) {
    if (dump) {
        FILE *f = fopen(dump, "w");
        if (f) { for (int i = 0; i < n; i++) fprintf(f, "%lld\n", (long long)rtts[i]); fclose(f); }
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += rtts[i];
    qsort(rtts, n, sizeof(int64_t), cmp_i64);
    printf("{\"role\":\"ping\",\"n\":%d,\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,"
           "\"max_us\":%.3f,\"mean_us\":%.3f}\n",
           n, pct_us(rtts, n, .5), pct_us(rtts, n, .9), pct_us(rtts, n, .99), pct_us(rtts, n, .999),
           rtts[n - 1] / 1000.0, sum / n / 1000.0);
}
static __attribute__((unused)) void print_sub(long long count, int64_t first, int64_t last, int end, const char *error) {
    printf("{\"role\":\"sub\",\"received\":%lld,\"first_ns\":%lld,\"last_ns\":%lld,\"end_marker\":%s,"
           "\"rate\":%.1f,\"last_error\":\"%s\"}\n",
           count, (long long)first, (long long)last, end ? "true" : "false",
           last > first ? (count - 1) / ((last - first) / 1e9) : 0.0, error ? error : "");
}
/* Splits a comma list in place; at most max names. */
static __attribute__((unused)) int split_list(char *s, char **out, int max) {
    int k = 0;
    for (char *tok = strtok(s, ","); tok && k < max; tok = strtok(NULL, ",")) out[k++] = tok;
    return k;
}
#endif
