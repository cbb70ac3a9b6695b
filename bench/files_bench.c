/* space-files-bench: the file routes of a running spaced — stat, small upload and download
 * latencies (percentiles), and the throughput of a large upload and download — in one
 * sandbox it creates and destroys. See docs/benchmarks.md ("Files").
 *
 *   space-files-bench --url URL --key-file FILE [-n N] [--size-mb M] [--rounds R]
 * Needs a sandbox memory limit above --size-mb for the /tmp rounds (busybox default: 512 MiB). */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"

struct bench_files {
        const char *url;
        char key[128];
        char token[128];
        char sandbox[64];
        CURL *curl;
};

struct body {
        char *data;
        size_t len;
};

struct source {
        size_t left;
        char block[65536];
};

static size_t collect(char *p, size_t size, size_t n, void *userdata)
{
        struct body *b = userdata;
        char *grown = realloc(b->data, b->len + size * n + 1);
        if (!grown)
                return 0;
        memcpy(grown + b->len, p, size * n);
        b->data = grown;
        b->len += size * n;
        b->data[b->len] = 0;
        return size * n;
}

static size_t discard(char *p, size_t size, size_t n, void *userdata)
{
        *(size_t *)userdata += size * n;
        return size * n;
}

static size_t produce(char *buf, size_t size, size_t n, void *userdata)
{
        struct source *s = userdata;
        size_t want = size * n < s->left ? size * n : s->left;
        if (want > sizeof(s->block))
                want = sizeof(s->block);
        memcpy(buf, s->block, want);
        s->left -= want;
        return want;
}

/* One request on the shared keep-alive handle. upload: bytes to PUT (or -1: none, json body
 * instead); download: count the answer's bytes into *ret_bytes instead of keeping them. */
static long call(struct bench_files *b, const char *method, const char *path, const char *json, long long upload,
                 const char *token, struct body *ret, size_t *ret_bytes)
{
        char url[2048], auth[256];
        struct curl_slist *h = NULL;
        struct source src = { .left = upload > 0 ? (size_t)upload : 0 };
        long status = 0;

        memset(src.block, 'x', sizeof(src.block));
        snprintf(url, sizeof(url), "%s%s", b->url, path);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
        curl_easy_reset(b->curl);
        curl_easy_setopt(b->curl, CURLOPT_URL, url);
        curl_easy_setopt(b->curl, CURLOPT_CUSTOMREQUEST, method);
        if (json) {
                h = curl_slist_append(h, "Content-Type: application/json");
                curl_easy_setopt(b->curl, CURLOPT_POSTFIELDS, json);
        } else if (upload >= 0) {
                h = curl_slist_append(h, "Expect:");
                curl_easy_setopt(b->curl, CURLOPT_UPLOAD, 1L);
                curl_easy_setopt(b->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)upload);
                curl_easy_setopt(b->curl, CURLOPT_READFUNCTION, produce);
                curl_easy_setopt(b->curl, CURLOPT_READDATA, &src);
        }
        curl_easy_setopt(b->curl, CURLOPT_HTTPHEADER, h);
        if (ret_bytes) {
                curl_easy_setopt(b->curl, CURLOPT_WRITEFUNCTION, discard);
                curl_easy_setopt(b->curl, CURLOPT_WRITEDATA, ret_bytes);
        } else {
                curl_easy_setopt(b->curl, CURLOPT_WRITEFUNCTION, collect);
                curl_easy_setopt(b->curl, CURLOPT_WRITEDATA, ret);
        }
        if (curl_easy_perform(b->curl) == CURLE_OK)
                curl_easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(h);
        return status;
}

static int setup(struct bench_files *b)
{
        struct body r = { 0 };
        long st = call(b, "POST", "/v1/sandboxes?wait=true", "{\"template\":\"busybox\"}", -1, b->key, &r, NULL);
        json_t *j = r.data ? json_loads(r.data, 0, NULL) : NULL;
        const char *id = json_string_value(json_object_get(json_object_get(j, "sandbox"), "id"));
        if (st != 200 || !id) {
                fprintf(stderr, "space-files-bench: create failed (%ld): %s\n", st, r.data ? r.data : "");
                json_decref(j);
                free(r.data);
                return -1;
        }
        snprintf(b->sandbox, sizeof(b->sandbox), "%s", id);
        json_decref(j);
        free(r.data);
        r = (struct body){ 0 };
        char path[256];
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/sessions", b->sandbox);
        st = call(b, "POST", path, "{}", -1, b->key, &r, NULL);
        j = r.data ? json_loads(r.data, 0, NULL) : NULL;
        const char *token = json_string_value(json_object_get(j, "attach_token"));
        if (st != 201 || !token) {
                fprintf(stderr, "space-files-bench: session failed (%ld)\n", st);
                json_decref(j);
                free(r.data);
                return -1;
        }
        snprintf(b->token, sizeof(b->token), "%s", token);
        json_decref(j);
        free(r.data);
        return 0;
}

static void teardown(struct bench_files *b)
{
        struct body r = { 0 };
        char path[256];
        snprintf(path, sizeof(path), "/v1/sandboxes/%s?wait=true", b->sandbox);
        call(b, "DELETE", path, NULL, -1, b->key, &r, NULL);
        free(r.data);
}

/* n requests of one kind, timed one by one. */
static void measure(struct bench_files *b, struct bench_stats *s, size_t n, const char *method, const char *leaf,
                    long long upload, long want)
{
        char path[512];
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/files%s", b->sandbox, leaf);
        double start = bench_now_ms();
        for (size_t i = 0; i < n; i++) {
                struct body r = { 0 };
                size_t bytes = 0;
                double t0 = bench_now_ms();
                long st = call(b, method, path, NULL, upload, b->token, &r, upload < 0 ? &bytes : NULL);
                if (st == want)
                        bench_stats_add(s, bench_now_ms() - t0);
                else
                        bench_stats_error(s);
                free(r.data);
        }
        s->wall_ms = bench_now_ms() - start;
}

static void throughput(struct bench_files *b, const char *where, size_t size_mb, size_t rounds)
{
        char path[512];
        long long size = (long long)size_mb << 20;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=%s", b->sandbox, where);
        for (size_t i = 0; i < rounds; i++) {
                struct body r = { 0 };
                size_t bytes = 0;
                double t0 = bench_now_ms();
                long st = call(b, "PUT", path, NULL, size, b->token, &r, NULL);
                double up = bench_now_ms() - t0;
                free(r.data);
                t0 = bench_now_ms();
                long st2 = call(b, "GET", path, NULL, -1, b->token, NULL, &bytes);
                double down = bench_now_ms() - t0;
                /* Removed again: a file in /tmp holds the sandbox's memory until it goes. */
                char del[512];
                snprintf(del, sizeof(del), "/v1/sandboxes/%s/files?path=%s", b->sandbox, where);
                struct body dr = { 0 };
                call(b, "DELETE", del, NULL, -1, b->token, &dr, NULL);
                free(dr.data);
                if (st != 201 || st2 != 200 || bytes != (size_t)size) {
                        printf("round %zu failed: PUT %ld, GET %ld (%zu bytes)\n", i + 1, st, st2, bytes);
                        continue;
                }
                printf("whole file %-23s %8.0f MiB/s up %8.0f MiB/s down (%zu MiB; %.0f ms, %.0f ms)\n", where,
                       (double)size_mb / (up / 1000.0), (double)size_mb / (down / 1000.0), size_mb, up, down);
        }
}

int main(int argc, char **argv)
{
        static const struct option opts[] = { { "url", required_argument, NULL, 'u' },
                                               { "key-file", required_argument, NULL, 'k' },
                                               { "size-mb", required_argument, NULL, 's' },
                                               { "rounds", required_argument, NULL, 'r' },
                                               { "help", no_argument, NULL, 'h' },
                                               {} };
        struct bench_files b = { .url = "http://127.0.0.1:7070" };
        const char *key_file = "/var/lib/space/admin.key";
        size_t n = 500, size_mb = 256, rounds = 3;
        int c;
        while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
                switch (c) {
                case 'u': b.url = optarg; break;
                case 'k': key_file = optarg; break;
                case 'n': n = strtoul(optarg, NULL, 10); break;
                case 's': size_mb = strtoul(optarg, NULL, 10); break;
                case 'r': rounds = strtoul(optarg, NULL, 10); break;
                default:
                        fprintf(c == 'h' ? stdout : stderr,
                                "usage: space-files-bench [--url URL] [--key-file FILE] [-n N] [--size-mb M] [--rounds R]\n");
                        return c == 'h' ? 0 : 2;
                }
        }
        FILE *f = fopen(key_file, "re");
        if (!f || !fgets(b.key, sizeof(b.key), f)) {
                fprintf(stderr, "space-files-bench: cannot read %s\n", key_file);
                return 1;
        }
        fclose(f);
        b.key[strcspn(b.key, "\r\n")] = 0;
        curl_global_init(CURL_GLOBAL_DEFAULT);
        b.curl = curl_easy_init();
        if (!b.curl || setup(&b) < 0)
                return 1;

        struct bench_stats stat, put4k, get4k, list;
        bench_stats_init(&stat, "stat");
        bench_stats_init(&put4k, "upload 4 KiB");
        bench_stats_init(&get4k, "download 4 KiB");
        bench_stats_init(&list, "list /etc (depth 1)");
        measure(&b, &put4k, n, "PUT", "?path=/small.bin", 4096, 201);
        measure(&b, &get4k, n, "GET", "?path=/small.bin", -1, 200);
        measure(&b, &stat, n, "GET", "/stat?path=/small.bin", -1, 200);
        measure(&b, &list, n, "GET", "/list?path=/etc", -1, 200);
        bench_stats_print_header();
        bench_stats_print(&stat);
        bench_stats_print(&put4k);
        bench_stats_print(&get4k);
        bench_stats_print(&list);
        throughput(&b, "/big.bin", size_mb, rounds);  /* the btrfs rootfs (a loop file here) */
        throughput(&b, "/tmp/big.bin", size_mb, rounds); /* the sandbox's tmpfs: the HTTP path alone */
        teardown(&b);
        bench_stats_release(&stat);
        bench_stats_release(&put4k);
        bench_stats_release(&get4k);
        bench_stats_release(&list);
        curl_easy_cleanup(b.curl);
        curl_global_cleanup();
        return 0;
}
