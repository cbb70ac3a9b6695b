#include "api/http_response.h"

#include "api/http_listener.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A stream and the trail that counts its bytes (or NULL). */
struct counted_stream {
        struct api_stream inner;
        struct request_trail *trail;
};

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct counted_stream *cs = cls;
        struct api_stream *st = &cs->inner;
        ssize_t n = st->read(st->cls, buf, max);
        if (n > 0 && cs->trail)
                atomic_fetch_add(&cs->trail->bytes, (uint_fast64_t)n);
        if (n > 0)
                return n;
        return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls)
{
        struct counted_stream *cs = cls;
        if (cs->inner.free)
                cs->inner.free(cs->inner.cls);
        free(cs);
}

static void add_headers(struct MHD_Response *r, const json_t *headers)
{
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)headers, k, v)
        {
                if (json_is_string(v))
                        MHD_add_response_header(r, k, json_string_value(v));
                size_t i;
                json_t *one;
                json_array_foreach(v, i, one) if (json_is_string(one)) MHD_add_response_header(r, k, json_string_value(one));
        }
}

static struct MHD_Response *stream_response(struct api_response *resp, size_t block, struct request_trail *trail)
{
        struct counted_stream *st = malloc(sizeof(*st));
        if (!st) {
                if (resp->stream.free)
                        resp->stream.free(resp->stream.cls);
                memset(&resp->stream, 0, sizeof(resp->stream));
                return NULL;
        }
        st->inner = resp->stream;
        st->trail = trail;
        memset(&resp->stream, 0, sizeof(resp->stream));
        struct MHD_Response *r = MHD_create_response_from_callback(st->inner.sized ? st->inner.size : MHD_SIZE_UNKNOWN, block,
                                                                   stream_reader, st, stream_free);
        if (!r)
                stream_free(st);
        return r;
}

/* An upgraded connection: its own thread runs the new protocol, then closes it. */
struct upgraded {
        struct api_upgrade u;
        int sock;
        char *extra;
        size_t extra_len;
        struct MHD_UpgradeResponseHandle *urh;
};

static void *upgraded_thread(void *arg)
{
        struct upgraded *g = arg;
        g->u.run(g->u.cls, g->sock, g->extra, g->extra_len);
        MHD_upgrade_action(g->urh, MHD_UPGRADE_ACTION_CLOSE);
        if (g->u.free)
                g->u.free(g->u.cls);
        free(g->extra);
        free(g);
        return NULL;
}

/* Called once the 101 is sent. A thread of its own, because over TLS libmicrohttpd relays
 * the socket's bytes only once this returns. */
static void on_upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in, size_t extra_in_size,
                        MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        (void)con_cls;
        struct upgraded *g = cls;
        http_listener_upgrade_taken(conn);
        g->sock = sock;
        g->urh = urh;
        g->extra = extra_in_size ? malloc(extra_in_size) : NULL;
        if (g->extra) {
                memcpy(g->extra, extra_in, extra_in_size);
                g->extra_len = extra_in_size;
        }
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256u << 10);
        if ((extra_in_size && !g->extra) || pthread_create(&t, &attr, upgraded_thread, g) != 0) {
                MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                if (g->u.free)
                        g->u.free(g->u.cls);
                free(g->extra);
                free(g);
        }
        pthread_attr_destroy(&attr);
}

static void upgraded_free(void *cls)
{
        struct upgraded *g = cls;
        if (g->u.free)
                g->u.free(g->u.cls);
        free(g);
}

static struct MHD_Response *upgrade_response(struct api_response *resp, struct upgraded **ret)
{
        struct upgraded *g = calloc(1, sizeof(*g));
        struct MHD_Response *r = g ? MHD_create_response_for_upgrade(on_upgraded, g) : NULL;
        if (!r) {
                if (resp->upgrade.free)
                        resp->upgrade.free(resp->upgrade.cls);
                free(g);
                g = NULL;
        } else {
                g->u = resp->upgrade;
        }
        memset(&resp->upgrade, 0, sizeof(resp->upgrade));
        *ret = g;
        return r;
}

static struct MHD_Response *json_response(const struct api_response *resp, bool newline, struct request_trail *trail)
{
        char *text = NULL;
        size_t len = 0;
        if (resp->body) {
                text = json_dumps(resp->body, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(12));
                if (text) {
                        len = strlen(text);
                        char *grown = newline ? realloc(text, len + 2) : NULL;
                        if (grown) {
                                text = grown;
                                text[len++] = '\n';
                                text[len] = '\0';
                        }
                }
        }
        /* Not MHD_create_response_from_buffer: that one is the library's own error pages'
         * (api/http_error_page.h). */
        struct MHD_Response *r =
                MHD_create_response_from_buffer_with_free_callback(len, text ? text : (void *)"", text ? free : NULL);
        if (!r) {
                free(text);
                return NULL;
        }
        if (trail)
                atomic_store(&trail->bytes, len);
        if (text)
                MHD_add_response_header(r, "Content-Type", "application/json");
        MHD_add_response_header(r, "Cache-Control", "no-store");
        return r;
}

enum MHD_Result http_response_send(struct MHD_Connection *conn, struct api_response *resp, bool json_newline, size_t stream_block,
                                   struct request_trail *trail)
{
        struct MHD_Response *r;
        bool raw = resp->stream.read;
        if (trail)
                request_trail_answer(trail, resp);
        struct upgraded *upgrade = NULL;
        if (resp->upgrade.run)
                r = upgrade_response(resp, &upgrade);
        else if (resp->stream.read)
                r = stream_response(resp, stream_block, trail);
        else
                r = json_response(resp, json_newline, trail);
        if (!r)
                return MHD_NO;
        if (raw)
                MHD_add_response_header(r, "Content-Type", resp->content_type ? resp->content_type : "application/octet-stream");
        add_headers(r, resp->headers);
        if (trail)
                MHD_add_response_header(r, "X-Request-Id", trail->id);
        enum MHD_Result ret = MHD_queue_response(conn, resp->status, r);
        MHD_destroy_response(r);
        /* Until its handler runs, the upgrade is the connection's to free (if it closes
         * first); refused outright, it is freed here. (A connection of no listener cannot
         * hold it: it is left to its handler, which may never run.) */
        if (upgrade && ret != MHD_YES)
                upgraded_free(upgrade);
        else if (upgrade)
                (void)http_listener_upgrade_pending(conn, upgraded_free, upgrade);
        return ret;
}

int http_body_append(struct http_body *b, const char *data, size_t n, size_t limit)
{
        if (b->too_large || b->len + n > limit) {
                b->too_large = true;
                return 0;
        }
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *grown = realloc(b->data, cap);
                if (!grown)
                        return -ENOMEM;
                b->data = grown;
                b->cap = cap;
        }
        memcpy(b->data + b->len, data, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}
