/* bench_sse: lines are split on '\n' (the data plane sends no '\r'); "data:" lines gather
 * into the event's data, a blank line dispatches it. A line cut by the end of a chunk waits
 * in p->line; one that is whole is parsed where it lies. */
#include "bench_sse.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void bench_sse_init(struct bench_sse *p, bench_sse_fn fn, void *userdata)
{
        memset(p, 0, sizeof(*p));
        p->fn = fn;
        p->userdata = userdata;
}

void bench_sse_reset(struct bench_sse *p)
{
        p->line_len = p->data_len = 0;
        p->event[0] = '\0';
        p->id = 0;
        p->has_data = false;
}

void bench_sse_release(struct bench_sse *p)
{
        free(p->line);
        free(p->data);
        p->line = p->data = NULL;
        p->line_cap = p->data_cap = 0;
        bench_sse_reset(p);
}

static int grow(char **buf, size_t *cap, size_t need)
{
        if (need <= *cap)
                return 0;
        size_t c = *cap ? *cap : 4096;
        while (c < need)
                c *= 2;
        char *g = realloc(*buf, c);
        if (!g)
                return -ENOMEM;
        *buf = g;
        *cap = c;
        return 0;
}

static int dispatch(struct bench_sse *p)
{
        int r = 0;
        if (p->has_data) {
                struct bench_sse_event ev = {
                        .id = p->id,
                        .event = p->event[0] ? p->event : "message",
                        .data = p->data,
                        .data_len = p->data_len,
                };
                p->events++;
                r = p->fn(p->userdata, &ev);
        }
        p->data_len = 0;
        p->event[0] = '\0';
        p->id = 0;
        p->has_data = false;
        return r;
}

/* One line, without its '\n'. */
static int parse_line(struct bench_sse *p, const char *s, size_t n)
{
        if (n == 0)
                return dispatch(p);
        if (s[0] == ':') {
                p->comments++;
                return 0;
        }
        const char *colon = memchr(s, ':', n);
        size_t name = colon ? (size_t)(colon - s) : n;
        const char *v = colon ? colon + 1 : s + n;
        size_t vlen = (size_t)(s + n - v);
        if (vlen && *v == ' ')
                v++, vlen--;
        if (name == 4 && memcmp(s, "data", 4) == 0) {
                size_t sep = p->has_data ? 1 : 0;
                if (grow(&p->data, &p->data_cap, p->data_len + sep + vlen + 1) < 0)
                        return -ENOMEM;
                if (sep)
                        p->data[p->data_len++] = '\n';
                memcpy(p->data + p->data_len, v, vlen);
                p->data_len += vlen;
                p->data[p->data_len] = '\0';
                p->has_data = true;
        } else if (name == 5 && memcmp(s, "event", 5) == 0) {
                size_t k = vlen < sizeof(p->event) - 1 ? vlen : sizeof(p->event) - 1;
                memcpy(p->event, v, k);
                p->event[k] = '\0';
        } else if (name == 2 && memcmp(s, "id", 2) == 0) {
                uint64_t id = 0;
                for (size_t i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++)
                        id = id * 10 + (uint64_t)(v[i] - '0');
                p->id = id;
        }
        return 0;
}

int bench_sse_feed(struct bench_sse *p, const char *buf, size_t n)
{
        const char *end = buf + n;
        while (buf < end) {
                const char *nl = memchr(buf, '\n', (size_t)(end - buf));
                if (!nl) {
                        if (grow(&p->line, &p->line_cap, p->line_len + (size_t)(end - buf)) < 0)
                                return -ENOMEM;
                        memcpy(p->line + p->line_len, buf, (size_t)(end - buf));
                        p->line_len += (size_t)(end - buf);
                        return 0;
                }
                int r;
                if (p->line_len) {
                        if (grow(&p->line, &p->line_cap, p->line_len + (size_t)(nl - buf)) < 0)
                                return -ENOMEM;
                        memcpy(p->line + p->line_len, buf, (size_t)(nl - buf));
                        size_t len = p->line_len + (size_t)(nl - buf);
                        p->line_len = 0;
                        r = parse_line(p, p->line, len);
                } else {
                        r = parse_line(p, buf, (size_t)(nl - buf));
                }
                if (r < 0)
                        return r;
                buf = nl + 1;
        }
        return 0;
}

int bench_sse_payload(const struct bench_sse_event *ev, const char **ret_b64, size_t *ret_len)
{
        static const char prefix[] = "{\"data\":\"";
        size_t plen = sizeof(prefix) - 1;
        if (ev->data_len < plen + 2 || memcmp(ev->data, prefix, plen) != 0 ||
            memcmp(ev->data + ev->data_len - 2, "\"}", 2) != 0)
                return -EBADMSG;
        *ret_b64 = ev->data + plen;
        *ret_len = ev->data_len - plen - 2;
        return 0;
}

/* 0..63 for the alphabet, 64 for '=', 255 for anything else. */
static unsigned char b64_table[256];

static void b64_table_init(void)
{
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        memset(b64_table, 255, sizeof(b64_table));
        for (unsigned i = 0; i < 64; i++)
                b64_table[(unsigned char)alphabet[i]] = (unsigned char)i;
        b64_table['='] = 64;
}

long bench_base64_decode(const char *in, size_t n, unsigned char *out)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, b64_table_init);
        if (n % 4)
                return -EBADMSG;
        const unsigned char *s = (const unsigned char *)in;
        unsigned char *o = out;
        for (size_t i = 0; i < n; i += 4) {
                unsigned a = b64_table[s[i]], b = b64_table[s[i + 1]], c = b64_table[s[i + 2]], d = b64_table[s[i + 3]];
                if ((a | b | c | d) < 64) {
                        uint32_t v = a << 18 | b << 12 | c << 6 | d;
                        o[0] = (unsigned char)(v >> 16);
                        o[1] = (unsigned char)(v >> 8);
                        o[2] = (unsigned char)v;
                        o += 3;
                        continue;
                }
                /* Padding: only in the last group, as "xx==" or "xxx=". */
                if (i + 4 != n || a > 63 || b > 63 || c == 255 || d != 64 || (c == 64 && d != 64))
                        return -EBADMSG;
                uint32_t v = a << 18 | b << 12 | (c < 64 ? c << 6 : 0);
                *o++ = (unsigned char)(v >> 16);
                if (c < 64)
                        *o++ = (unsigned char)(v >> 8);
        }
        return (long)(o - out);
}
