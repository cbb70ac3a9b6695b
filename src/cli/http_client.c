/* http_client: the libcurl wrapper. One easy handle per client, so consecutive requests reuse
 * the connection. The Authorization header lives in the header list and is wiped on free. */
#include "cli/http_client.h"
#include "cli/json_number.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "cleanup.h"

#define HTTP_CLIENT_CONNECT_TIMEOUT_S 10L

struct http_client {
        CURL *curl;
        char *base_url;
        struct curl_slist *headers;
        char curl_error[CURL_ERROR_SIZE];
        char error[CURL_ERROR_SIZE + 256];
};

struct http_client_answer {
        char *data;
        size_t len;
        size_t cap;
        bool too_large;
};

/* Answers may carry secrets (a new API key): wipe them. */
static void http_client_answer_release(struct http_client_answer *a)
{
        if (a->data)
                explicit_bzero(a->data, a->len);
        free(a->data);
}

static size_t http_client_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct http_client_answer *a = userdata;
        size_t n = size * nmemb;

        if (n > HTTP_CLIENT_MAX_BODY - a->len) {
                a->too_large = true;
                return 0;
        }
        if (a->len + n + 1 > a->cap) {
                size_t cap = a->cap ? a->cap : 16384;
                while (cap < a->len + n + 1)
                        cap *= 2;
                char *data = realloc(a->data, cap);
                if (!data)
                        return 0;
                a->data = data;
                a->cap = cap;
        }
        memcpy(a->data + a->len, ptr, n);
        a->len += n;
        a->data[a->len] = '\0';
        return n;
}

/* Header lists hold the Authorization header: wipe them. */
static void http_client_headers_free(struct curl_slist *list)
{
        for (struct curl_slist *l = list; l; l = l->next)
                explicit_bzero(l->data, strlen(l->data));
        curl_slist_free_all(list);
}

static int http_client_add_header(struct http_client *c, const char *header)
{
        struct curl_slist *l = curl_slist_append(c->headers, header);
        if (!l)
                return -ENOMEM;
        c->headers = l;
        return 0;
}

static int http_client_add_auth(struct http_client *c, const char *key)
{
        _cleanup_erase_ char *header = NULL;

        if (asprintf(&header, "Authorization: Bearer %s", key) < 0)
                return -ENOMEM;
        return http_client_add_header(c, header);
}

int http_client_new(const char *base_url, const char *key, struct http_client **ret_client)
{
        struct http_client *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;

        int r = -ENOMEM;
        /* unix:/PATH (or unix:///PATH): spaced's --unix-socket; the URL's host is a placeholder. */
        const char *socket_path = strncmp(base_url, "unix:", 5) == 0 ? base_url + 5 : NULL;
        while (socket_path && socket_path[0] == '/' && socket_path[1] == '/')
                socket_path++;
        c->base_url = strdup(socket_path ? "http://localhost" : base_url);
        c->curl = curl_easy_init();
        if (!c->base_url || !c->curl)
                goto fail;
        if (socket_path && curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, socket_path) != CURLE_OK) {
                r = -EINVAL;
                goto fail;
        }

        if ((r = http_client_add_header(c, "Accept: application/json")) < 0 ||
            (r = http_client_add_header(c, "Content-Type: application/json")) < 0 ||
            (r = http_client_add_header(c, "Expect:")) < 0)
                goto fail;
        if (key && (r = http_client_add_auth(c, key)) < 0)
                goto fail;

        CURL *h = c->curl;
        if (curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_error) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK || curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, HTTP_CLIENT_CONNECT_TIMEOUT_S) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_USERAGENT, "space/" SPACE_VERSION) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_client_write) != CURLE_OK) {
                r = -EINVAL;
                goto fail;
        }
        /* A spaced whose certificate comes from the operator's own CA (docs/operating.md). */
        const char *ca = getenv("SPACE_CA_CERT");
        if (ca && *ca && curl_easy_setopt(h, CURLOPT_CAINFO, ca) != CURLE_OK) {
                r = -EINVAL;
                goto fail;
        }

        *ret_client = c;
        return 0;
fail:
        http_client_free(c);
        return r;
}

struct http_client *http_client_free(struct http_client *c)
{
        if (!c)
                return NULL;
        if (c->curl)
                curl_easy_cleanup(c->curl);
        http_client_headers_free(c->headers);
        free(c->base_url);
        free(c);
        return NULL;
}

const char *http_client_error(const struct http_client *c)
{
        return c->error;
}

static int http_client_transport_error(struct http_client *c, CURLcode code, const struct http_client_answer *a)
{
        const char *why = c->curl_error[0] ? c->curl_error : curl_easy_strerror(code);
        curl_off_t connect_us = 0;

        snprintf(c->error, sizeof(c->error), "%s", why);
        switch (code) {
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
                return -EHOSTUNREACH;
        case CURLE_OPERATION_TIMEDOUT:
                curl_easy_getinfo(c->curl, CURLINFO_CONNECT_TIME_T, &connect_us);
                return connect_us > 0 ? -ETIMEDOUT : -EHOSTUNREACH;
        case CURLE_WRITE_ERROR:
                if (a->too_large) {
                        snprintf(c->error, sizeof(c->error), "answer larger than %u MiB", HTTP_CLIENT_MAX_BODY >> 20);
                        return -EFBIG;
                }
                return -ENOMEM;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_PARTIAL_FILE:
                return -ECONNRESET;
        default:
                return -EIO;
        }
}

static int http_client_set_method(struct http_client *c, const char *method, const char *payload)
{
        CURL *h = c->curl;
        bool get = strcmp(method, "GET") == 0;
        bool post = strcmp(method, "POST") == 0;

        if (payload || post) {
                const char *data = payload ? payload : "";
                if (curl_easy_setopt(h, CURLOPT_POSTFIELDS, data) != CURLE_OK ||
                    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(data)) != CURLE_OK)
                        return -EINVAL;
        } else if (curl_easy_setopt(h, CURLOPT_HTTPGET, 1L) != CURLE_OK)
                return -EINVAL;

        if (curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, get || post ? NULL : method) != CURLE_OK)
                return -EINVAL;
        return 0;
}

/* Clears the last error and points the handle at path. */
static int http_client_begin(struct http_client *c, const char *path, long timeout_s)
{
        _cleanup_free_ char *url = NULL;

        c->error[0] = '\0';
        c->curl_error[0] = '\0';
        if (asprintf(&url, "%s%s", c->base_url, path) < 0)
                return -ENOMEM;
        /* libcurl copies the URL. */
        if (curl_easy_setopt(c->curl, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, timeout_s) != CURLE_OK)
                return -EINVAL;
        return 0;
}

static int http_client_parse(struct http_client *c, const struct http_client_answer *a, json_t **ret_body)
{
        long status = 0;
        json_error_t jerr;

        *ret_body = NULL;
        if (a->len == 0)
                return 0;
        *ret_body = json_loadb(a->data, a->len, JSON_ALLOW_NUL, &jerr);
        if (!*ret_body) {
                curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
                snprintf(c->error, sizeof(c->error), "HTTP %ld answer is not JSON (%s)", status, jerr.text);
                return -EBADMSG;
        }
        return 0;
}

int http_client_request(struct http_client *c, const char *method, const char *path, const json_t *body, long timeout_s,
                        long *ret_status, json_t **ret_body)
{
        _cleanup_free_ char *payload = NULL;
        _cleanup_(http_client_answer_release) struct http_client_answer answer = {};
        long status = 0;
        json_t *parsed;
        int r;

        if ((r = http_client_begin(c, path, timeout_s)) < 0)
                return r;
        if (body) {
                payload = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(json_number_precision(body)));
                if (!payload)
                        return -ENOMEM;
        }

        if ((r = http_client_set_method(c, method, payload)) < 0)
                return r;
        if (curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &answer) != CURLE_OK)
                return -EINVAL;

        CURLcode code = curl_easy_perform(c->curl);
        /* The handle must not keep pointers to our buffers past this call. */
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, NULL);
        if (code != CURLE_OK)
                return http_client_transport_error(c, code, &answer);

        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        if ((r = http_client_parse(c, &answer, &parsed)) < 0)
                return r;
        *ret_status = status;
        *ret_body = parsed;
        return 0;
}

/* ---- streamed transfers ---- */

struct http_client_transfer {
        CURL *curl;
        struct http_client_stream *stream;
        struct http_client_answer answer; /* an answer that is not streamed */
};

static void http_client_transfer_release(struct http_client_transfer *t)
{
        http_client_answer_release(&t->answer);
}

static size_t http_client_transfer_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct http_client_transfer *t = userdata;
        long status = 0;

        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status < 200 || status > 299 || !t->stream->write)
                return http_client_write(ptr, size, nmemb, &t->answer);

        int r = t->stream->write(t->stream->userdata, ptr, size * nmemb);
        if (r < 0) {
                t->stream->error = r;
                return 0; /* CURLE_WRITE_ERROR */
        }
        return size * nmemb;
}

static size_t http_client_transfer_read(char *buf, size_t size, size_t nitems, void *userdata)
{
        struct http_client_transfer *t = userdata;

        ssize_t n = t->stream->read(t->stream->userdata, buf, size * nitems);
        if (n < 0) {
                t->stream->error = (int)n;
                return CURL_READFUNC_ABORT;
        }
        return (size_t)n;
}

/* The client's headers with Accept and Content-Type replaced by the stream's. */
static int http_client_transfer_headers(const struct http_client *c, const struct http_client_stream *s,
                                        struct curl_slist **ret_list)
{
        _cleanup_free_ char *accept = NULL;
        _cleanup_free_ char *content_type = NULL;
        _cleanup_free_ char *last_event_id = NULL;
        struct curl_slist *list = NULL, *l;

        if (asprintf(&accept, "Accept: %s", s->accept ? s->accept : "*/*") < 0 ||
            (s->content_type && asprintf(&content_type, "Content-Type: %s", s->content_type) < 0) ||
            (s->last_event_id && asprintf(&last_event_id, "Last-Event-ID: %s", s->last_event_id) < 0))
                return -ENOMEM;
        for (const struct curl_slist *h = c->headers; h; h = h->next) {
                if (strncasecmp(h->data, "Accept:", 7) == 0 || strncasecmp(h->data, "Content-Type:", 13) == 0)
                        continue;
                if (!(l = curl_slist_append(list, h->data)))
                        goto fail;
                list = l;
        }
        if (!(l = curl_slist_append(list, accept)))
                goto fail;
        list = l;
        if (content_type) {
                if (!(l = curl_slist_append(list, content_type)))
                        goto fail;
                list = l;
        }
        if (last_event_id) {
                if (!(l = curl_slist_append(list, last_event_id)))
                        goto fail;
                list = l;
        }
        *ret_list = list;
        return 0;
fail:
        http_client_headers_free(list);
        return -ENOMEM;
}

static int http_client_transfer_setup(struct http_client *c, const char *method, struct curl_slist *headers,
                                      struct http_client_transfer *t)
{
        CURL *h = c->curl;
        bool get = strcmp(method, "GET") == 0;
        bool post = strcmp(method, "POST") == 0;
        CURLcode e = CURLE_OK;

        if (t->stream->read) {
                curl_off_t size = t->stream->size >= 0 ? (curl_off_t)t->stream->size : -1;
                if ((e = curl_easy_setopt(h, CURLOPT_POST, 1L)) == CURLE_OK &&
                    (e = curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL)) == CURLE_OK &&
                    (e = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, size)) == CURLE_OK &&
                    (e = curl_easy_setopt(h, CURLOPT_READFUNCTION, http_client_transfer_read)) == CURLE_OK)
                        e = curl_easy_setopt(h, CURLOPT_READDATA, t);
        } else
                e = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);

        if (e != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, get || (post && t->stream->read) ? NULL : method) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, HTTP_CLIENT_STALL_S) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_client_transfer_write) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_WRITEDATA, t) != CURLE_OK)
                return -EINVAL;
        return 0;
}

/* Puts the handle back as http_client_request expects it. */
static void http_client_transfer_reset(struct http_client *c)
{
        CURL *h = c->curl;

        curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, NULL);
        curl_easy_setopt(h, CURLOPT_READDATA, NULL);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 0L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 0L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_client_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
}

int http_client_transfer(struct http_client *c, const char *method, const char *path, struct http_client_stream *stream,
                         long *ret_status, json_t **ret_body)
{
        _cleanup_(http_client_transfer_release) struct http_client_transfer t = { .curl = c->curl, .stream = stream };
        struct curl_slist *headers = NULL;
        long status = 0;
        json_t *parsed;
        int r;

        stream->error = 0;
        if ((r = http_client_begin(c, path, 0)) < 0 || (r = http_client_transfer_headers(c, stream, &headers)) < 0)
                return r;
        r = http_client_transfer_setup(c, method, headers, &t);
        CURLcode code = r < 0 ? CURLE_OK : curl_easy_perform(c->curl);
        http_client_transfer_reset(c);
        http_client_headers_free(headers);
        if (r < 0)
                return r;

        if (code != CURLE_OK && stream->error < 0) {
                snprintf(c->error, sizeof(c->error), "%s", strerror(-stream->error));
                return -ECANCELED;
        }
        if (code != CURLE_OK)
                return http_client_transport_error(c, code, &t.answer);

        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        if ((r = http_client_parse(c, &t.answer, &parsed)) < 0)
                return r;
        *ret_status = status;
        *ret_body = parsed;
        return 0;
}

const char *http_client_header(const struct http_client *c, const char *name)
{
        struct curl_header *h = NULL;

        if (curl_easy_header(c->curl, name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
                return NULL;
        return h->value;
}
