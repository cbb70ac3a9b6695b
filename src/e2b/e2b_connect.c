/* e2b_connect: Connect protocol framing and errors with the JSON codec. */
#include "e2b/e2b_connect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_request.h"

int e2b_buf_reserve(struct e2b_buf *b, size_t more)
{
        if (b->len + more <= b->cap)
                return 0;
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + more)
                cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
                return -ENOMEM;
        b->data = grown;
        b->cap = cap;
        return 0;
}

int e2b_buf_append(struct e2b_buf *b, const void *data, size_t len)
{
        if (e2b_buf_reserve(b, len) < 0)
                return -ENOMEM;
        memcpy(b->data + b->len, data, len);
        b->len += len;
        return 0;
}

void e2b_buf_release(struct e2b_buf *b)
{
        free(b->data);
        *b = (struct e2b_buf){ 0 };
}

int e2b_connect_frame(struct e2b_buf *b, uint8_t flags, const json_t *msg)
{
        char *text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        uint8_t head[5] = { flags, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n };
        int r = e2b_buf_append(b, head, sizeof(head));
        if (r == 0)
                r = e2b_buf_append(b, text, n);
        free(text);
        return r;
}

int e2b_connect_end_frame(struct e2b_buf *b, const struct space_error *err)
{
        json_t *msg = err && err->code != SPACE_OK
                ? json_pack("{s:{s:s, s:s}}", "error", "code", e2b_connect_code_name(err->code), "message", err->message)
                : json_object();
        if (!msg)
                return -ENOMEM;
        int r = e2b_connect_frame(b, E2B_CONNECT_FLAG_END_STREAM, msg);
        json_decref(msg);
        return r;
}

static bool content_type_is(const char *ct, const char *want)
{
        size_t n = strlen(want);
        return ct && strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

int e2b_connect_request(const struct api_request *req, json_t **ret, struct space_error *err)
{
        const char *body = req->body;
        size_t len = req->body_len;
        if (content_type_is(req->content_type, E2B_CONNECT_STREAM_TYPE)) {
                if (len < 5)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "a streaming request needs one envelope");
                const uint8_t *p = (const uint8_t *)body;
                uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
                if (p[0] & E2B_CONNECT_FLAG_COMPRESSED)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "compressed envelopes are not supported");
                if (n > len - 5)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "the envelope is cut short");
                body += 5;
                len = n;
        } else if (req->content_type && !content_type_is(req->content_type, "application/json")) {
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "only the JSON codec is supported, not %.64s",
                                       req->content_type);
        }
        if (len == 0) {
                *ret = json_object();
                return 0;
        }
        json_error_t jerr;
        json_t *j = json_loadb(body, len, 0, &jerr);
        if (!j || !json_is_object(j)) {
                json_decref(j);
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "the message is not a JSON object");
        }
        *ret = j;
        return 0;
}

const char *e2b_connect_code_name(enum space_error_code code)
{
        switch (code) {
        case SPACE_E_INVALID_JSON:
        case SPACE_E_INVALID_REQUEST:
        case SPACE_E_UNSUPPORTED_MEDIA_TYPE:
                return "invalid_argument";
        case SPACE_E_PAYLOAD_TOO_LARGE:
                return "resource_exhausted";
        case SPACE_E_UNAUTHORIZED:
                return "unauthenticated";
        case SPACE_E_FORBIDDEN:
        case SPACE_E_PERMISSION_DENIED:
        case SPACE_E_POLICY_DENIED:
                return "permission_denied";
        case SPACE_E_CONFLICT:
                return "failed_precondition";
        case SPACE_E_RANGE_NOT_SATISFIABLE:
                return "out_of_range";
        case SPACE_E_NOT_FOUND:
                return "not_found";
        case SPACE_E_METHOD_NOT_ALLOWED:
        case SPACE_E_UNSUPPORTED:
                return "unimplemented";
        case SPACE_E_INVALID_STATE:
        case SPACE_E_TEMPLATE_NOT_READY:
                return "failed_precondition";
        case SPACE_E_ALREADY_EXISTS:
                return "already_exists";
        case SPACE_E_UNAVAILABLE:
        case SPACE_E_BAD_GATEWAY:
                return "unavailable";
        case SPACE_E_TIMEOUT:
                return "deadline_exceeded";
        default:
                return "internal";
        }
}

unsigned e2b_connect_http_status(enum space_error_code code)
{
        const char *name = e2b_connect_code_name(code);
        static const struct {
                const char *name;
                unsigned status;
        } map[] = { { "invalid_argument", 400 }, { "unauthenticated", 401 },   { "permission_denied", 403 },
                    { "not_found", 404 },        { "unimplemented", 501 },     { "failed_precondition", 400 },
                    { "already_exists", 409 },   { "unavailable", 503 },       { "deadline_exceeded", 504 },
                    { "out_of_range", 400 },     { "resource_exhausted", 429 } };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(map[i].name, name) == 0)
                        return map[i].status;
        return 500;
}

void e2b_connect_reply_error(struct api_response *resp, const struct space_error *err)
{
        resp->status = e2b_connect_http_status(err->code);
        resp->body = json_pack("{s:s, s:s}", "code", e2b_connect_code_name(err->code), "message", err->message);
}

void e2b_connect_reply(struct api_response *resp, json_t *msg)
{
        resp->status = 200;
        resp->body = msg;
}

struct whole_stream {
        struct e2b_buf buf;
        size_t off;
};

static ssize_t whole_read(void *cls, char *out, size_t max)
{
        struct whole_stream *w = cls;
        size_t n = w->buf.len - w->off;
        if (n > max)
                n = max;
        memcpy(out, w->buf.data + w->off, n);
        w->off += n;
        return (ssize_t)n;
}

static void whole_free(void *cls)
{
        struct whole_stream *w = cls;
        e2b_buf_release(&w->buf);
        free(w);
}

void e2b_connect_reply_stream_error(struct api_response *resp, const struct space_error *err)
{
        struct whole_stream *w = calloc(1, sizeof(*w));
        if (!w || e2b_connect_end_frame(&w->buf, err) < 0) {
                if (w)
                        whole_free(w);
                return e2b_connect_reply_error(resp, err);
        }
        resp->status = 200;
        resp->content_type = E2B_CONNECT_STREAM_TYPE;
        resp->stream = (struct api_stream){ .read = whole_read, .free = whole_free, .cls = w };
        snprintf(resp->error_code, sizeof(resp->error_code), "%s", space_error_code_name(err->code));
}
