#include "egress/egress_peek.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

struct cursor {
        const uint8_t *p;
        size_t left;
};

static int take(struct cursor *c, size_t n, const uint8_t **ret)
{
        if (c->left < n)
                return -1;
        if (ret)
                *ret = c->p;
        c->p += n;
        c->left -= n;
        return 0;
}

static int take_u8(struct cursor *c, size_t *ret)
{
        const uint8_t *b;
        if (take(c, 1, &b) < 0)
                return -1;
        *ret = b[0];
        return 0;
}

static int take_u16(struct cursor *c, size_t *ret)
{
        const uint8_t *b;
        if (take(c, 2, &b) < 0)
                return -1;
        *ret = (size_t)b[0] << 8 | b[1];
        return 0;
}

static int copy_name(const uint8_t *name, size_t n, char *ret, size_t size)
{
        if (n == 0 || n >= size || n > 253)
                return -1;
        for (size_t i = 0; i < n; i++)
                if (name[i] < 0x21 || name[i] > 0x7e)
                        return -1;
        memcpy(ret, name, n);
        ret[n] = '\0';
        return 0;
}

/* The ClientHello body (after the 4-byte handshake header). */
static enum egress_peek_result client_hello(struct cursor c, char *ret, size_t size)
{
        size_t n, ext_len;
        if (take(&c, 2 + 32, NULL) < 0 || take_u8(&c, &n) < 0 || take(&c, n, NULL) < 0 || take_u16(&c, &n) < 0 ||
            take(&c, n, NULL) < 0 || take_u8(&c, &n) < 0 || take(&c, n, NULL) < 0)
                return EGRESS_PEEK_MALFORMED;
        if (c.left == 0)
                return EGRESS_PEEK_NO_NAME; /* no extensions at all */
        if (take_u16(&c, &ext_len) < 0 || ext_len > c.left)
                return EGRESS_PEEK_MALFORMED;
        struct cursor ext = { c.p, ext_len };
        while (ext.left) {
                size_t type, len;
                const uint8_t *data;
                if (take_u16(&ext, &type) < 0 || take_u16(&ext, &len) < 0 || take(&ext, len, &data) < 0)
                        return EGRESS_PEEK_MALFORMED;
                if (type != 0)
                        continue;
                struct cursor sni = { data, len };
                size_t list_len, name_type, name_len;
                const uint8_t *name;
                if (take_u16(&sni, &list_len) < 0 || list_len != sni.left || take_u8(&sni, &name_type) < 0 ||
                    take_u16(&sni, &name_len) < 0 || take(&sni, name_len, &name) < 0 || name_type != 0)
                        return EGRESS_PEEK_MALFORMED;
                return copy_name(name, name_len, ret, size) < 0 ? EGRESS_PEEK_MALFORMED : EGRESS_PEEK_NAME;
        }
        return EGRESS_PEEK_NO_NAME;
}

/* TLS records carrying one handshake message, which may span several records. */
static enum egress_peek_result tls(const uint8_t *buf, size_t len, char *ret, size_t size)
{
        uint8_t hs[EGRESS_PEEK_MAX];
        size_t have = 0, off = 0;
        while (off + 5 <= len) {
                size_t rec = (size_t)buf[off + 3] << 8 | buf[off + 4];
                if (buf[off] != 0x16 || buf[off + 1] != 0x03 || rec == 0 || rec > 16384)
                        return EGRESS_PEEK_MALFORMED;
                if (off + 5 + rec > len)
                        break;
                if (have + rec > sizeof(hs))
                        return EGRESS_PEEK_MALFORMED;
                memcpy(hs + have, buf + off + 5, rec);
                have += rec;
                off += 5 + rec;
                if (have >= 4) {
                        size_t body = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
                        if (hs[0] != 1 || body + 4 > sizeof(hs))
                                return EGRESS_PEEK_MALFORMED;
                        if (have >= body + 4)
                                return client_hello((struct cursor){ hs + 4, body }, ret, size);
                }
        }
        if (off < len && len - off >= 3 && (buf[off] != 0x16 || buf[off + 1] != 0x03))
                return EGRESS_PEEK_MALFORMED;
        return len >= EGRESS_PEEK_MAX ? EGRESS_PEEK_MALFORMED : EGRESS_PEEK_MORE;
}

static bool is_token_char(uint8_t c)
{
        return c >= 'A' && c <= 'Z';
}

/* An HTTP/1 request: "METHOD SP", then headers up to an empty line; exactly one Host. */
static enum egress_peek_result http(const uint8_t *buf, size_t len, char *ret, size_t size)
{
        size_t end = 0;
        for (size_t i = 3; i < len; i++)
                if (buf[i - 3] == '\r' && buf[i - 2] == '\n' && buf[i - 1] == '\r' && buf[i] == '\n') {
                        end = i + 1;
                        break;
                }
        if (!end)
                return len >= 8192 ? EGRESS_PEEK_MALFORMED : EGRESS_PEEK_MORE;
        const char *host = NULL;
        size_t host_len = 0;
        size_t line = 0;
        for (size_t i = 0; i + 1 < end; i++) {
                if (buf[i] != '\r' || buf[i + 1] != '\n')
                        continue;
                const char *l = (const char *)buf + line;
                size_t n = i - line;
                if (line > 0 && n >= 5 && strncasecmp(l, "host:", 5) == 0) {
                        if (host)
                                return EGRESS_PEEK_MALFORMED; /* two Host headers: which one would the server take? */
                        host = l + 5;
                        host_len = n - 5;
                }
                line = i + 2;
        }
        if (!host)
                return EGRESS_PEEK_NO_NAME;
        while (host_len && (*host == ' ' || *host == '\t'))
                host++, host_len--;
        while (host_len && (host[host_len - 1] == ' ' || host[host_len - 1] == '\t'))
                host_len--;
        if (host_len && host[0] == '[')
                return EGRESS_PEEK_NO_NAME; /* an IPv6 literal */
        const char *colon = memchr(host, ':', host_len);
        if (colon)
                host_len = (size_t)(colon - host);
        return copy_name((const uint8_t *)host, host_len, ret, size) < 0 ? EGRESS_PEEK_MALFORMED : EGRESS_PEEK_NAME;
}

enum egress_peek_result egress_peek_name(const uint8_t *buf, size_t len, char *ret, size_t size)
{
        if (len > EGRESS_PEEK_MAX)
                len = EGRESS_PEEK_MAX;
        if (len == 0)
                return EGRESS_PEEK_MORE;
        if (buf[0] == 0x16)
                return tls(buf, len, ret, size);
        if (!is_token_char(buf[0]))
                return EGRESS_PEEK_NO_NAME;
        for (size_t i = 1; i < len && i < 20; i++) {
                if (buf[i] == ' ')
                        return http(buf, len, ret, size);
                if (!is_token_char(buf[i]))
                        return EGRESS_PEEK_NO_NAME;
        }
        return len < 20 ? EGRESS_PEEK_MORE : EGRESS_PEEK_NO_NAME;
}
