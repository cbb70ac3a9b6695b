/* e2b_multipart: incremental multipart/form-data parsing (see e2b_multipart.h).
 *
 * The delimiter is CRLF "--" boundary. The body's first delimiter may lack the CRLF, so
 * the parser starts as if it had just read one. What is not handed on yet waits in hold:
 * in a part's data, the last delimiter-length - 1 bytes (they may begin a delimiter). */
#include "e2b/e2b_multipart.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum mp_state { MP_PREAMBLE, MP_AFTER_DELIM, MP_HEADERS, MP_DATA, MP_DONE, MP_FAILED };

struct e2b_multipart {
        const struct e2b_multipart_ops *ops;
        void *cls;
        enum mp_state state;
        char delim[80]; /* "\r\n--" boundary (RFC 2046: at most 70 characters) */
        size_t dlen;
        char *hold;
        size_t len, cap;
};

int e2b_multipart_new(const char *content_type, const struct e2b_multipart_ops *ops, void *cls, struct e2b_multipart **ret)
{
        const char *b = content_type ? strcasestr(content_type, "boundary=") : NULL;
        if (!b)
                return -EINVAL;
        b += 9;
        bool quoted = *b == '"';
        b += quoted;
        size_t n = strcspn(b, quoted ? "\"" : "; \t");
        if (n == 0 || n > 70)
                return -EINVAL;
        struct e2b_multipart *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->ops = ops;
        m->cls = cls;
        m->dlen = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%.*s", (int)n, b);
        m->state = MP_PREAMBLE;
        m->hold = malloc(2);
        if (!m->hold) {
                free(m);
                return -ENOMEM;
        }
        memcpy(m->hold, "\r\n", 2); /* so that a delimiter at the very start is found */
        m->len = m->cap = 2;
        *ret = m;
        return 0;
}

void e2b_multipart_free(struct e2b_multipart *m)
{
        if (!m)
                return;
        free(m->hold);
        free(m);
}

static void consume(struct e2b_multipart *m, size_t n)
{
        memmove(m->hold, m->hold + n, m->len - n);
        m->len -= n;
}

/* One step on what hold has: 1 progress, 0 needs more bytes, -errno. */
static int step(struct e2b_multipart *m)
{
        char *found;
        switch (m->state) {
        case MP_PREAMBLE:
                found = memmem(m->hold, m->len, m->delim, m->dlen);
                if (!found) {
                        if (m->len >= m->dlen)
                                consume(m, m->len - (m->dlen - 1));
                        return 0;
                }
                consume(m, (size_t)(found - m->hold) + m->dlen);
                m->state = MP_AFTER_DELIM;
                return 1;
        case MP_AFTER_DELIM: {
                size_t i = 0;
                while (i < m->len && (m->hold[i] == ' ' || m->hold[i] == '\t')) /* transport padding */
                        i++;
                if (m->len - i < 2)
                        return 0;
                if (memcmp(m->hold + i, "--", 2) == 0) {
                        m->state = MP_DONE;
                        m->len = 0;
                        return 1;
                }
                if (memcmp(m->hold + i, "\r\n", 2) != 0)
                        return -EBADMSG;
                consume(m, i + 2);
                m->state = MP_HEADERS;
                return 1;
        }
        case MP_HEADERS: {
                size_t hlen, skip;
                if (m->len >= 2 && memcmp(m->hold, "\r\n", 2) == 0) {
                        hlen = 0; /* a part without headers */
                        skip = 2;
                } else {
                        found = memmem(m->hold, m->len, "\r\n\r\n", 4);
                        if (!found)
                                return m->len > E2B_MULTIPART_HEADERS_MAX ? -E2BIG : 0;
                        hlen = (size_t)(found - m->hold);
                        skip = hlen + 4;
                }
                if (hlen > E2B_MULTIPART_HEADERS_MAX)
                        return -E2BIG;
                if (m->ops->part_begin(m->cls, m->hold, hlen) < 0)
                        return -ECANCELED;
                consume(m, skip);
                m->state = MP_DATA;
                return 1;
        }
        case MP_DATA:
                found = memmem(m->hold, m->len, m->delim, m->dlen);
                if (found) {
                        size_t n = (size_t)(found - m->hold);
                        if ((n && m->ops->part_data(m->cls, m->hold, n) < 0) || m->ops->part_end(m->cls) < 0)
                                return -ECANCELED;
                        consume(m, n + m->dlen);
                        m->state = MP_AFTER_DELIM;
                        return 1;
                }
                if (m->len >= m->dlen) {
                        size_t n = m->len - (m->dlen - 1);
                        if (m->ops->part_data(m->cls, m->hold, n) < 0)
                                return -ECANCELED;
                        consume(m, n);
                }
                return 0;
        case MP_DONE:
                m->len = 0; /* the epilogue */
                return 0;
        case MP_FAILED:
                return -EBADMSG;
        }
        return -EBADMSG;
}

int e2b_multipart_feed(struct e2b_multipart *m, const char *data, size_t len)
{
        if (m->state == MP_FAILED)
                return -EBADMSG;
        if (m->state == MP_DONE || len == 0)
                return 0;
        if (m->len + len > m->cap) {
                size_t cap = m->len + len;
                char *grown = realloc(m->hold, cap);
                if (!grown) {
                        m->state = MP_FAILED;
                        return -ENOMEM;
                }
                m->hold = grown;
                m->cap = cap;
        }
        memcpy(m->hold + m->len, data, len);
        m->len += len;
        int r;
        while ((r = step(m)) > 0)
                ;
        if (r < 0)
                m->state = MP_FAILED;
        return r < 0 ? r : 0;
}

int e2b_multipart_finish(const struct e2b_multipart *m)
{
        return m->state == MP_DONE ? 0 : -EBADMSG;
}

bool e2b_multipart_filename(const char *headers, size_t len, char *buf, size_t size)
{
        for (const char *p = headers, *end = headers + len; p + 10 <= end; p++) {
                if (strncasecmp(p, "filename=\"", 10) != 0 || (p > headers && p[-1] != ' ' && p[-1] != ';'))
                        continue;
                const char *v = p + 10, *q = memchr(v, '"', (size_t)(end - v));
                if (!q || (size_t)(q - v) >= size)
                        return false;
                memcpy(buf, v, (size_t)(q - v));
                buf[q - v] = '\0';
                return true;
        }
        return false;
}
