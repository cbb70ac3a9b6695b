#include "api/upstream_response.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CHUNK_LINE_MAX 1024

/* More bytes into the read-ahead buffer (compacted first). > 0, 0 at EOF, -errno. */
static ssize_t fill(struct upstream_response *u)
{
        if (u->pos == u->len)
                u->pos = u->len = 0;
        if (u->len == sizeof(u->buf)) {
                if (!u->pos)
                        return -ENOBUFS;
                memmove(u->buf, u->buf + u->pos, u->len - u->pos);
                u->len -= u->pos;
                u->pos = 0;
        }
        for (;;) {
                ssize_t n = read(u->fd, u->buf + u->len, sizeof(u->buf) - u->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                u->len += (size_t)n;
                return n;
        }
}

static bool token_char(unsigned char c)
{
        return c > 32 && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c);
}

/* Splits the head text (len bytes, ending in the blank line) into the status and headers. */
static int parse_head(struct upstream_response *u, size_t len, struct space_error *err)
{
        memcpy(u->head, u->buf + u->pos, len);
        u->head[len - 1] = '\0';
        u->nheaders = 0;
        char *save = NULL, *line = strtok_r(u->head, "\n", &save);
        if (!line)
                return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server sent an empty answer");
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
                line[--l] = '\0';
        if (l < 12 || strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' || line[9] < '1' ||
            line[9] > '5' || line[10] < '0' || line[10] > '9' || line[11] < '0' || line[11] > '9' ||
            (line[12] != ' ' && line[12] != '\0'))
                return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server sent no HTTP/1.x status line");
        u->status = (unsigned)((line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0'));
        while ((line = strtok_r(NULL, "\n", &save))) {
                l = strlen(line);
                if (l && line[l - 1] == '\r')
                        line[--l] = '\0';
                if (!l)
                        break;
                char *colon = strchr(line, ':');
                if (!colon || colon == line)
                        return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server sent a malformed header line");
                for (char *c = line; c < colon; c++)
                        if (!token_char((unsigned char)*c))
                                return space_error_set(err, SPACE_E_BAD_GATEWAY,
                                                       "the sandbox's server sent a malformed header name");
                *colon = '\0';
                char *v = colon + 1;
                v += strspn(v, " \t");
                for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t');)
                        *--e = '\0';
                for (char *c = v; *c; c++)
                        if ((unsigned char)*c < 32 && *c != '\t')
                                return space_error_set(err, SPACE_E_BAD_GATEWAY,
                                                       "the sandbox's server sent a control byte in a header");
                if (u->nheaders == UPSTREAM_HEADERS_MAX)
                        return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server sent more than %u headers",
                                               UPSTREAM_HEADERS_MAX);
                u->headers[u->nheaders++] = (struct upstream_header){ line, v };
        }
        return 0;
}

/* The framing of the body, from the headers (RFC 9112 6.3). */
static int frame_body(struct upstream_response *u, bool has_body, struct space_error *err)
{
        u->chunked = u->has_length = u->body_done = u->in_chunk = false;
        if (!has_body || u->status == 204 || u->status == 304 || u->status == 101) {
                u->body_done = true;
                return 0;
        }
        const char *te = upstream_response_header(u, "Transfer-Encoding");
        const char *cl = upstream_response_header(u, "Content-Length");
        if (te) {
                if (strcasecmp(te, "chunked") != 0)
                        return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server sent Transfer-Encoding %.64s", te);
                u->chunked = true;
                return 0;
        }
        if (cl) {
                char *end;
                errno = 0;
                unsigned long long n = strtoull(cl, &end, 10);
                if (errno || end == cl || *end || *cl < '0' || *cl > '9')
                        return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server sent a malformed Content-Length");
                for (unsigned i = 0; i < u->nheaders; i++)
                        if (strcasecmp(u->headers[i].name, "Content-Length") == 0 && strcmp(u->headers[i].value, cl) != 0)
                                return space_error_set(err, SPACE_E_BAD_GATEWAY,
                                                       "the sandbox's server sent two different Content-Length headers");
                u->has_length = true;
                u->length = n;
                u->body_done = n == 0;
        }
        return 0;
}

int upstream_response_read_head(struct upstream_response *u, int fd, bool has_body, struct space_error *err)
{
        u->fd = fd;
        for (;;) {
                size_t len = 0; /* the head's length, with its blank line, once found */
                size_t scanned = 0;
                while (!len) {
                        char *start = u->buf + u->pos;
                        size_t have = u->len - u->pos;
                        for (size_t i = scanned; i + 1 < have && !len; i++)
                                if (start[i] == '\n' &&
                                    (start[i + 1] == '\n' || (start[i + 1] == '\r' && i + 2 < have && start[i + 2] == '\n')))
                                        len = i + (start[i + 1] == '\n' ? 2 : 3);
                        if (len)
                                break;
                        scanned = have >= 2 ? have - 2 : 0; /* a "\n\r\n" may straddle two reads */
                        if (have >= UPSTREAM_HEAD_MAX - 1)
                                return space_error_set(err, SPACE_E_BAD_GATEWAY,
                                                       "the sandbox's server sent more than %u bytes of headers",
                                                       UPSTREAM_HEAD_MAX);
                        ssize_t n = fill(u);
                        if (n == -ETIMEDOUT)
                                return space_error_set(err, SPACE_E_TIMEOUT, "the sandbox's server did not answer in time");
                        if (n == -ENOBUFS)
                                return space_error_set(err, SPACE_E_BAD_GATEWAY,
                                                       "the sandbox's server sent more than %u bytes of headers",
                                                       UPSTREAM_HEAD_MAX);
                        if (n < 0)
                                return space_error_errno(err, (int)-n, "read the answer of the sandbox's server");
                        if (n == 0)
                                return space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server closed without an answer");
                }
                if (parse_head(u, len, err) < 0)
                        return -1;
                u->pos += len;
                if (u->status >= 200 || u->status == 101)
                        return frame_body(u, has_body, err);
                /* 100 Continue and other interim answers: the final one follows */
        }
}

const char *upstream_response_header(const struct upstream_response *u, const char *name)
{
        for (unsigned i = 0; i < u->nheaders; i++)
                if (strcasecmp(u->headers[i].name, name) == 0)
                        return u->headers[i].value;
        return NULL;
}

const char *upstream_response_pending(const struct upstream_response *u, size_t *ret_n)
{
        *ret_n = u->len - u->pos;
        return u->buf + u->pos;
}

/* Up to max bytes that are already here or come in one read. 0 at EOF, -1 on error. */
static ssize_t take(struct upstream_response *u, char *buf, size_t max)
{
        if (u->pos == u->len) {
                ssize_t n = fill(u);
                if (n <= 0)
                        return n < 0 ? -1 : 0;
        }
        size_t n = u->len - u->pos < max ? u->len - u->pos : max;
        memcpy(buf, u->buf + u->pos, n);
        u->pos += n;
        return (ssize_t)n;
}

/* One line (without its CRLF) into line; -1 when it is longer or the stream ends first. */
static int take_line(struct upstream_response *u, char *line, size_t size)
{
        size_t n = 0;
        for (;;) {
                while (u->pos < u->len) {
                        char c = u->buf[u->pos++];
                        if (c == '\n') {
                                if (n && line[n - 1] == '\r')
                                        n--;
                                line[n] = '\0';
                                return 0;
                        }
                        if (n + 1 >= size)
                                return -1;
                        line[n++] = c;
                }
                if (fill(u) <= 0)
                        return -1;
        }
}

static ssize_t read_chunked(struct upstream_response *u, char *buf, size_t max)
{
        char line[CHUNK_LINE_MAX];
        while (!u->in_chunk) {
                if (take_line(u, line, sizeof(line)) < 0)
                        return -1;
                char *end;
                errno = 0;
                unsigned long long n = strtoull(line, &end, 16);
                if (errno || end == line || (*end && *end != ';' && *end != ' ' && *end != '\t'))
                        return -1;
                if (n == 0) { /* the trailers, dropped, up to the blank line */
                        for (unsigned i = 0;; i++) {
                                if (i > UPSTREAM_HEADERS_MAX || take_line(u, line, sizeof(line)) < 0)
                                        return -1;
                                if (!line[0])
                                        break;
                        }
                        u->body_done = true;
                        return 0;
                }
                u->chunk_left = n;
                u->in_chunk = true;
        }
        ssize_t got = take(u, buf, u->chunk_left < max ? (size_t)u->chunk_left : max);
        if (got <= 0)
                return -1;
        u->chunk_left -= (uint64_t)got;
        if (!u->chunk_left) {
                if (take_line(u, line, sizeof(line)) < 0 || line[0])
                        return -1;
                u->in_chunk = false;
        }
        return got;
}

ssize_t upstream_response_read_body(struct upstream_response *u, char *buf, size_t max)
{
        if (u->body_done)
                return 0;
        if (u->chunked) {
                ssize_t n;
                do /* a chunk header alone gives no bytes: read on to some, or the end */
                        n = read_chunked(u, buf, max);
                while (n == 0 && !u->body_done);
                return n;
        }
        if (u->has_length) {
                ssize_t n = take(u, buf, u->length < max ? (size_t)u->length : max);
                if (n <= 0)
                        return -1; /* closed before its length */
                u->length -= (uint64_t)n;
                u->body_done = !u->length;
                return n;
        }
        ssize_t n = take(u, buf, max);
        if (n == 0)
                u->body_done = true;
        return n;
}
