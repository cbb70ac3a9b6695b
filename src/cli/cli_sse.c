#include "cli/cli_sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CLI_SSE_LINE_MAX (64u << 20)

void cli_sse_init(struct cli_sse *p, cli_sse_event_fn fn, void *userdata)
{
        memset(p, 0, sizeof(*p));
        p->on_event = fn;
        p->userdata = userdata;
}

static int grow(char **buf, size_t *cap, size_t need)
{
        if (need <= *cap)
                return 0;
        if (need > CLI_SSE_LINE_MAX)
                return -E2BIG;
        size_t c = *cap ? *cap : 256;
        while (c < need)
                c *= 2;
        char *g = realloc(*buf, c);
        if (!g)
                return -ENOMEM;
        *buf = g;
        *cap = c;
        return 0;
}

static int dispatch(struct cli_sse *p)
{
        if (p->data_len == 0) {
                /* No data line: nothing to dispatch, and the event type does not carry over. */
                p->event[0] = '\0';
                return 0;
        }
        /* The data lines were joined with a '\n' after each: drop the last. */
        p->data_len--;
        if (grow(&p->data, &p->data_cap, p->data_len + 1) < 0)
                return -ENOMEM;
        p->data[p->data_len] = '\0';
        int r = p->on_event(p->userdata, p->id, p->event[0] ? p->event : "message", p->data, p->data_len);
        p->data_len = 0;
        p->event[0] = '\0';
        return r < 0 ? r : 0;
}

static void copy_field(char *dst, size_t size, const char *v, size_t len)
{
        if (len >= size)
                len = size - 1;
        memcpy(dst, v, len);
        dst[len] = '\0';
}

static int line_done(struct cli_sse *p)
{
        char *l = p->line;
        size_t len = p->line_len;
        p->line_len = 0;
        if (len > 0 && l[len - 1] == '\r')
                len--;
        if (len == 0)
                return dispatch(p);
        if (l[0] == ':') {
                p->comments++;
                return 0;
        }
        char *colon = memchr(l, ':', len);
        size_t name_len = colon ? (size_t)(colon - l) : len;
        const char *v = colon ? colon + 1 : l + len;
        size_t vlen = colon ? len - name_len - 1 : 0;
        if (vlen > 0 && *v == ' ')
                v++, vlen--;
        if (name_len == 4 && memcmp(l, "data", 4) == 0) {
                if (grow(&p->data, &p->data_cap, p->data_len + vlen + 2) < 0)
                        return -ENOMEM;
                memcpy(p->data + p->data_len, v, vlen);
                p->data_len += vlen;
                p->data[p->data_len++] = '\n';
        } else if (name_len == 2 && memcmp(l, "id", 2) == 0) {
                copy_field(p->id, sizeof(p->id), v, vlen);
        } else if (name_len == 5 && memcmp(l, "event", 5) == 0) {
                copy_field(p->event, sizeof(p->event), v, vlen);
        }
        return 0;
}

int cli_sse_feed(struct cli_sse *p, const char *buf, size_t len)
{
        while (len > 0) {
                const char *nl = memchr(buf, '\n', len);
                size_t take = nl ? (size_t)(nl - buf) : len;
                int r = grow(&p->line, &p->line_cap, p->line_len + take + 1);
                if (r < 0)
                        return r;
                memcpy(p->line + p->line_len, buf, take);
                p->line_len += take;
                if (!nl)
                        return 0;
                r = line_done(p);
                if (r < 0)
                        return r;
                buf += take + 1;
                len -= take + 1;
        }
        return 0;
}

void cli_sse_release(struct cli_sse *p)
{
        free(p->line);
        free(p->data);
        memset(p, 0, sizeof(*p));
}
