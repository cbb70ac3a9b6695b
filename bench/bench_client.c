/* bench_client: a libcurl easy handle reused for every request of one thread, so requests
 * travel on one keep-alive connection; the answer buffer is reused as well. */
#include "bench_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

struct bench_client {
        CURL *curl;
        char *base_url;
        struct curl_slist *headers;
        char *answer;
        size_t len, cap;
        char curl_error[CURL_ERROR_SIZE];
        char error[512];
};

static size_t bench_client_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct bench_client *c = userdata;
        size_t n = size * nmemb;
        if (c->len + n + 1 > c->cap) {
                size_t cap = c->cap ? c->cap : 8192;
                while (cap < c->len + n + 1)
                        cap *= 2;
                char *grown = realloc(c->answer, cap);
                if (!grown)
                        return 0;
                c->answer = grown;
                c->cap = cap;
        }
        memcpy(c->answer + c->len, ptr, n);
        c->len += n;
        c->answer[c->len] = '\0';
        return n;
}

void bench_client_free(struct bench_client *c)
{
        if (!c)
                return;
        if (c->curl)
                curl_easy_cleanup(c->curl);
        curl_slist_free_all(c->headers);
        free(c->base_url);
        free(c->answer);
        free(c);
}

int bench_client_new(const char *base_url, const char *key, struct bench_client **ret)
{
        struct bench_client *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        size_t len = strlen(base_url);
        while (len > 0 && base_url[len - 1] == '/')
                len--;
        c->base_url = strndup(base_url, len);
        c->curl = curl_easy_init();
        _cleanup_free_ char *auth = NULL;
        if (!c->base_url || !c->curl || asprintf(&auth, "Authorization: Bearer %s", key) < 0) {
                bench_client_free(c);
                return -ENOMEM;
        }
        static const char *const fixed[] = { "Content-Type: application/json", "Expect:" };
        c->headers = curl_slist_append(NULL, auth);
        for (size_t i = 0; c->headers && i < ARRAY_SIZE(fixed); i++) {
                struct curl_slist *l = curl_slist_append(c->headers, fixed[i]);
                if (!l) {
                        curl_slist_free_all(c->headers);
                        c->headers = NULL;
                }
                c->headers = l;
        }
        explicit_bzero(auth, strlen(auth));
        if (!c->headers) {
                bench_client_free(c);
                return -ENOMEM;
        }
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, bench_client_write);
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curl_error);
        curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 700L); /* longer than the longest ?wait=true */
        *ret = c;
        return 0;
}

int bench_client_call(struct bench_client *c, const char *method, const char *path, const char *body, long *ret_status,
                      json_t **ret_json)
{
        char url[1024];
        if (snprintf(url, sizeof(url), "%s%s", c->base_url, path) >= (int)sizeof(url))
                return -ENAMETOOLONG;
        curl_easy_setopt(c->curl, CURLOPT_URL, url);
        if (strcmp(method, "POST") == 0) {
                curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
                curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
                curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
        } else {
                curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
                curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") == 0 ? NULL : method);
        }
        c->len = 0;
        c->curl_error[0] = '\0';
        CURLcode rc = curl_easy_perform(c->curl);
        if (rc != CURLE_OK) {
                snprintf(c->error, sizeof(c->error), "%s %s: %s", method, path,
                         c->curl_error[0] ? c->curl_error : curl_easy_strerror(rc));
                return -EIO;
        }
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        *ret_status = status;
        *ret_json = c->len ? json_loadb(c->answer, c->len, 0, NULL) : NULL;
        return 0;
}

void bench_client_set_error(struct bench_client *c, long status, const json_t *answer)
{
        const char *code = json_string_value(json_object_get(json_object_get(answer, "error"), "code"));
        const char *msg = json_string_value(json_object_get(json_object_get(answer, "error"), "message"));
        snprintf(c->error, sizeof(c->error), "HTTP %ld %s: %s", status, code ? code : "?", msg ? msg : "(no message)");
}

const char *bench_client_error(const struct bench_client *c)
{
        return c->error;
}
