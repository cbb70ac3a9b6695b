/* space-inject-bench: what putting a credential on plain-HTTP requests costs the egress
 * gateway (egress/egress_http_inject.h), against passing the same bytes through (a copy,
 * what a spliced connection does with them), alternated in one run: per request (a head of
 * about 300 bytes and a small Content-Length body) and per MiB of one large body. See
 * docs/benchmarks.md.
 *
 * Usage: space-inject-bench [ROUNDS] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "egress/egress_http_inject.h"

static int64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static uint8_t out[1 << 16];
static struct egress_inject ij;

/* One pass of text through the rewriter (inject) or a copy: the bytes written. */
static size_t run(const struct egress_credentials *c, const char *text, size_t len, bool inject)
{
        if (!inject) {
                memcpy(out, text, len);
                return len;
        }
        memset(&ij, 0, offsetof(struct egress_inject, in));
        memcpy(ij.in, text, len);
        ij.in_len = len;
        size_t w = 0;
        if (egress_inject_run(&ij, c, "api.example.com", 80, false, out, sizeof(out), &w, NULL, NULL) < 0 || ij.in_len)
                return 0;
        return w;
}

static void report(const char *what, int64_t *with, int64_t *without, int n)
{
        qsort(with, (size_t)n, sizeof(*with), cmp);
        qsort(without, (size_t)n, sizeof(*without), cmp);
        printf("%s: injected p50=%.2f p99=%.2f us; passed through p50=%.2f p99=%.2f us (n=%d each)\n", what,
               (double)with[n / 2] / 1000.0, (double)with[n * 99 / 100] / 1000.0, (double)without[n / 2] / 1000.0,
               (double)without[n * 99 / 100] / 1000.0, n);
}

int main(int argc, char **argv)
{
        int rounds = argc > 1 ? atoi(argv[1]) : 200000;
        json_t *list = json_loads(
                "[{\"binding\":\"bnd-1\",\"secret\":\"GH\",\"match\":\"api.example.com\","
                "\"header\":\"Authorization\",\"value\":\"Bearer ghp_0123456789abcdef0123456789abcdef0123\"}]",
                0, NULL);
        struct egress_credentials c = { 0 };
        char why[200];
        if (egress_credentials_from_json(list, &c, why, sizeof(why)) < 0)
                return 1;
        json_decref(list);
        const char *rq =
                "POST /repos/o/r/issues HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: curl/7.88.1\r\n"
                "Accept: application/vnd.github+json\r\nAuthorization: Bearer space-placeholder-gh\r\n"
                "X-GitHub-Api-Version: 2022-11-28\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"
                "{\"title\":\"found a bug\",\"body\":\"details\"}";
        size_t len = strlen(rq);
        int64_t *with = calloc((size_t)rounds, sizeof(*with)), *without = calloc((size_t)rounds, sizeof(*without));
        for (int i = 0; i < rounds; i++) {
                int64_t t0 = now_ns();
                size_t a = run(&c, rq, len, true);
                int64_t t1 = now_ns();
                size_t b = run(&c, rq, len, false);
                int64_t t2 = now_ns();
                if (!a || !b)
                        return 1;
                with[i] = t1 - t0;
                without[i] = t2 - t1;
        }
        report("one request", with, without, rounds);
        /* a 32 KiB body behind its head, per MiB moved */
        static char big[EGRESS_INJECT_IN_MAX];
        int head = snprintf(big, sizeof(big), "PUT /blob HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: %d\r\n\r\n", 0);
        size_t body = sizeof(big) - (size_t)head - 64;
        head = snprintf(big, sizeof(big), "PUT /blob HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: %zu\r\n\r\n", body);
        memset(big + head, 'x', body);
        size_t total = (size_t)head + body;
        int n = rounds / 20 > 100 ? rounds / 20 : 100;
        for (int i = 0; i < n; i++) {
                int64_t t0 = now_ns();
                size_t a = run(&c, big, total, true);
                int64_t t1 = now_ns();
                size_t b = run(&c, big, total, false);
                int64_t t2 = now_ns();
                if (!a || !b)
                        return 1;
                with[i] = (t1 - t0) * (int64_t)(1 << 20) / (int64_t)total;
                without[i] = (t2 - t1) * (int64_t)(1 << 20) / (int64_t)total;
        }
        report("per MiB of body (32 KiB requests)", with, without, n);
        egress_credentials_release(&c);
        free(with);
        free(without);
        return 0;
}
