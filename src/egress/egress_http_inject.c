#include "egress/egress_http_inject.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const uint8_t *find(const uint8_t *hay, size_t n, const char *needle)
{
        return memmem(hay, n, needle, strlen(needle));
}

/* The header line's value (trimmed) if its name is name; NULL else. */
static bool header_is(const char *line, size_t len, const char *name, const char **ret_value, size_t *ret_len)
{
        size_t n = strlen(name);
        if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
                return false;
        const char *v = line + n + 1, *end = line + len;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        *ret_value = v;
        *ret_len = (size_t)(end - v);
        return true;
}

static bool value_has_token(const char *v, size_t len, const char *token)
{
        size_t t = strlen(token);
        for (size_t i = 0; i + t <= len; i++)
                if (strncasecmp(v + i, token, t) == 0)
                        return true;
        return false;
}

struct head_out {
        uint8_t *out;
        size_t room, len;
        bool full;
};

static void put(struct head_out *o, const void *p, size_t n)
{
        if (o->len + n > o->room) {
                o->full = true;
                return;
        }
        memcpy(o->out + o->len, p, n);
        o->len += n;
}

/* One head of h bytes (its blank line included): rewritten into out, the body's framing
 * into ij. 1: done; 0: no room in out yet; -EPROTO. */
static bool safe_method(const char *m)
{
        return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0;
}

static int rewrite_head(struct egress_inject *ij, size_t h, const struct egress_credentials *creds, const char *name,
                        uint16_t port, bool read_only, uint8_t *out, size_t room, size_t *ret_written, egress_inject_used used,
                        void *arg)
{
        const char *head = (const char *)ij->in;
        if (memchr(head, '\0', h))
                return -EPROTO;
        const char *eol = (const char *)find(ij->in, h, "\r\n");
        const char *sp = memchr(head, ' ', (size_t)(eol - head));
        char method[17];
        if (!sp || sp == head || (size_t)(sp - head) >= sizeof(method))
                return -EPROTO;
        memcpy(method, head, (size_t)(sp - head));
        method[sp - head] = '\0';
        if (read_only && !safe_method(method))
                return -EACCES;
        struct head_out o = { .out = out, .room = room };
        put(&o, head, (size_t)(eol - head) + 2);
        bool host_ok = false, chunked = false, has_length = false, raw = strcmp(method, "CONNECT") == 0;
        unsigned long long length = 0;
        const char *line = eol + 2, *end = head + h - 2; /* the blank line's CRLF */
        while (line < end) {
                const char *next = (const char *)find((const uint8_t *)line, (size_t)(end - line) + 2, "\r\n");
                size_t len = (size_t)(next - line);
                const char *v;
                size_t vlen;
                if (len == 0 || line[0] == ' ' || line[0] == '\t' || memchr(line, '\r', len) || memchr(line, '\n', len))
                        return -EPROTO; /* obs-fold, bare CR / LF */
                bool strip = false;
                for (size_t i = 0; i < creds->n && !strip; i++)
                        strip = egress_rule_matches_name(&creds->items[i].match, name, port) &&
                                header_is(line, len, creds->items[i].header, &v, &vlen);
                if (header_is(line, len, "Host", &v, &vlen)) {
                        char host[256], norm[256];
                        const char *colon = memchr(v, ':', vlen);
                        size_t hl = colon ? (size_t)(colon - v) : vlen;
                        if (host_ok || hl == 0 || hl >= sizeof(host))
                                return -EPROTO; /* two Hosts, or none usable */
                        memcpy(host, v, hl);
                        host[hl] = '\0';
                        if (!egress_name_normalize(host, norm, sizeof(norm)) || strcmp(norm, name) != 0)
                                return -EPROTO;
                        host_ok = true;
                } else if (header_is(line, len, "Transfer-Encoding", &v, &vlen)) {
                        chunked = chunked || value_has_token(v, vlen, "chunked");
                        if (!value_has_token(v, vlen, "chunked"))
                                return -EPROTO; /* a coding whose end we cannot find */
                } else if (header_is(line, len, "Content-Length", &v, &vlen)) {
                        char num[24], *stop;
                        if (vlen == 0 || vlen >= sizeof(num))
                                return -EPROTO;
                        memcpy(num, v, vlen);
                        num[vlen] = '\0';
                        unsigned long long n = strtoull(num, &stop, 10);
                        if (*stop || num[0] == '-' || (has_length && n != length))
                                return -EPROTO;
                        length = n;
                        has_length = true;
                } else if (header_is(line, len, "Upgrade", &v, &vlen)) {
                        raw = true;
                }
                if (!strip)
                        put(&o, line, len + 2);
                line = next + 2;
        }
        if (!host_ok || (chunked && has_length))
                return -EPROTO;
        if (read_only && raw)
                return -EACCES; /* an upgraded stream could carry anything */
        for (size_t i = 0; i < creds->n; i++) {
                const struct egress_credential *cr = &creds->items[i];
                if (!egress_rule_matches_name(&cr->match, name, port) || !egress_credential_for_method(cr, method))
                        continue;
                put(&o, cr->header, strlen(cr->header));
                put(&o, ": ", 2);
                put(&o, cr->value, cr->value_len);
                put(&o, "\r\n", 2);
        }
        put(&o, "\r\n", 2);
        if (o.full) {
                explicit_bzero(out, o.len < room ? o.len : room);
                return 0;
        }
        for (size_t i = 0; used && i < creds->n; i++)
                if (egress_rule_matches_name(&creds->items[i].match, name, port) &&
                    egress_credential_for_method(&creds->items[i], method))
                        used(arg, &creds->items[i], method);
        ij->state = raw   ? EGRESS_INJECT_RAW
                : chunked ? EGRESS_INJECT_CHUNK_SIZE
                : length  ? EGRESS_INJECT_BODY
                          : EGRESS_INJECT_HEAD;
        ij->left = length;
        *ret_written = o.len;
        return 1;
}

int egress_inject_run(struct egress_inject *ij, const struct egress_credentials *creds, const char *name, uint16_t port,
                      bool read_only, uint8_t *out, size_t room, size_t *ret_written, egress_inject_used used, void *arg)
{
        size_t pos = 0, written = 0;
        int r = 0;
        while (pos < ij->in_len && written < room) {
                const uint8_t *at = ij->in + pos;
                size_t avail = ij->in_len - pos, free_out = room - written;
                if (ij->state == EGRESS_INJECT_HEAD) {
                        const uint8_t *blank =
                                find(at, avail < EGRESS_INJECT_HEAD_MAX ? avail : EGRESS_INJECT_HEAD_MAX, "\r\n\r\n");
                        if (!blank) {
                                if (avail >= EGRESS_INJECT_HEAD_MAX)
                                        r = -EPROTO;
                                break;
                        }
                        size_t h = (size_t)(blank - at) + 4, n = 0;
                        if (pos) { /* the head first in the buffer: rewrite_head reads from in[0] */
                                memmove(ij->in, at, avail);
                                ij->in_len = avail;
                                pos = 0;
                        }
                        int k = rewrite_head(ij, h, creds, name, port, read_only, out + written, free_out, &n, used, arg);
                        if (k <= 0) {
                                r = k;
                                break;
                        }
                        explicit_bzero(ij->in, h);
                        written += n;
                        pos = h;
                        continue;
                }
                if (ij->state == EGRESS_INJECT_CHUNK_SIZE || ij->state == EGRESS_INJECT_TRAILER ||
                    ij->state == EGRESS_INJECT_CHUNK_END) {
                        const uint8_t *eol = find(at, avail < 1024 ? avail : 1024, "\r\n");
                        if (!eol) {
                                if (avail >= 1024 || (ij->state == EGRESS_INJECT_CHUNK_END && avail >= 2))
                                        r = -EPROTO;
                                break;
                        }
                        size_t len = (size_t)(eol - at) + 2;
                        if (len > free_out)
                                break;
                        if (ij->state == EGRESS_INJECT_CHUNK_END) {
                                if (len != 2) {
                                        r = -EPROTO;
                                        break;
                                }
                                ij->state = EGRESS_INJECT_CHUNK_SIZE;
                        } else if (ij->state == EGRESS_INJECT_TRAILER) {
                                ij->state = len == 2 ? EGRESS_INJECT_HEAD : EGRESS_INJECT_TRAILER;
                        } else {
                                char *stop;
                                unsigned long long n = strtoull((const char *)at, &stop, 16);
                                if ((const uint8_t *)stop == at || (*stop != ';' && *stop != '\r')) {
                                        r = -EPROTO;
                                        break;
                                }
                                ij->left = n;
                                ij->state = n ? EGRESS_INJECT_CHUNK_DATA : EGRESS_INJECT_TRAILER;
                        }
                        memcpy(out + written, at, len);
                        written += len;
                        pos += len;
                        continue;
                }
                size_t n = avail < free_out ? avail : free_out;
                if (ij->state != EGRESS_INJECT_RAW && n > ij->left)
                        n = (size_t)ij->left;
                memcpy(out + written, at, n);
                written += n;
                pos += n;
                if (ij->state == EGRESS_INJECT_RAW)
                        continue;
                ij->left -= n;
                if (ij->left == 0)
                        ij->state = ij->state == EGRESS_INJECT_CHUNK_DATA ? EGRESS_INJECT_CHUNK_END : EGRESS_INJECT_HEAD;
        }
        memmove(ij->in, ij->in + pos, ij->in_len - pos);
        explicit_bzero(ij->in + (ij->in_len - pos), pos);
        ij->in_len -= pos;
        *ret_written = written;
        return r;
}
