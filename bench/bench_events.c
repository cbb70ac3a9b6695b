#include "bench_events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* Stops the transfer (by taking fewer bytes than given) once the callback says so. */
static size_t events_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct bench_events *e = userdata;
        size_t n = size * nmemb;
        e->bytes += n;
        int r = bench_sse_feed(&e->sse, ptr, n);
        if (r == -ENOMEM) {
                e->failed = r;
                return 0;
        }
        if (r < 0) {
                e->stop = 1;
                return 0;
        }
        return n;
}

void bench_events_free(struct bench_events *e)
{
        if (!e)
                return;
        if (e->curl)
                curl_easy_cleanup(e->curl);
        curl_slist_free_all(e->headers);
        bench_sse_release(&e->sse);
        erase_and_free(e->token);
        free(e->base_url);
        free(e);
}

int bench_events_new(const char *base_url, bench_sse_fn fn, void *userdata, struct bench_events **ret)
{
        struct bench_events *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        size_t len = strlen(base_url);
        while (len > 0 && base_url[len - 1] == '/')
                len--;
        e->base_url = strndup(base_url, len);
        e->curl = curl_easy_init();
        if (!e->base_url || !e->curl) {
                bench_events_free(e);
                return -ENOMEM;
        }
        bench_sse_init(&e->sse, fn, userdata);
        curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, events_write);
        curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
        curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, e->curl_error);
        curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e->curl, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(e->curl, CURLOPT_TIMEOUT, 600L);
        curl_easy_setopt(e->curl, CURLOPT_BUFFERSIZE, 256L * 1024);
        *ret = e;
        return 0;
}

int bench_events_prepare(struct bench_events *e, const char *token, const char *sandbox_id, const char *command_id,
                         uint64_t last_event_id, int keepalive_s)
{
        char url[1024], line[256];
        int n = keepalive_s > 0 ? snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/commands/%s/events?keepalive_s=%d",
                                           e->base_url, sandbox_id, command_id, keepalive_s)
                                : snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/commands/%s/events", e->base_url,
                                           sandbox_id, command_id);
        if (n < 0 || (size_t)n >= sizeof(url))
                return -ENAMETOOLONG;
        if (!e->token || strcmp(e->token, token) != 0) {
                erase_and_free(e->token);
                e->token = strdup(token);
                if (!e->token)
                        return -ENOMEM;
        }
        curl_slist_free_all(e->headers);
        e->headers = NULL;
        snprintf(line, sizeof(line), "Authorization: Bearer %s", e->token);
        struct curl_slist *l = curl_slist_append(NULL, line);
        explicit_bzero(line, sizeof(line));
        if (l && last_event_id) {
                snprintf(line, sizeof(line), "Last-Event-ID: %" PRIu64, last_event_id);
                struct curl_slist *more = curl_slist_append(l, line);
                if (!more)
                        curl_slist_free_all(l);
                l = more;
        }
        if (!l)
                return -ENOMEM;
        e->headers = l;
        curl_easy_setopt(e->curl, CURLOPT_URL, url);
        curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->headers);
        bench_sse_reset(&e->sse);
        e->bytes = 0;
        e->stop = e->failed = 0;
        e->curl_error[0] = '\0';
        return 0;
}

int bench_events_result(struct bench_events *e, CURLcode rc)
{
        if (e->failed)
                return e->failed;
        if (rc == CURLE_WRITE_ERROR && e->stop)
                return 0;
        if (rc != CURLE_OK)
                return -EIO;
        long status = 0;
        curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
        return status == 200 ? 0 : -EPROTO;
}

int bench_events_run(struct bench_events *e)
{
        return bench_events_result(e, curl_easy_perform(e->curl));
}
