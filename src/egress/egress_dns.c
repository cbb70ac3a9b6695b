#include "egress/egress_dns.h"

#include <errno.h>
#include <string.h>

static uint16_t rd16(const uint8_t *p)
{
        return (uint16_t)(p[0] << 8 | p[1]);
}

static void wr16(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)(v >> 8);
        p[1] = (uint8_t)v;
}

static bool label_char_ok(uint8_t c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* An uncompressed name at *off into ret (dotted). */
static int read_plain_name(const uint8_t *msg, size_t len, size_t *off, char *ret, size_t size)
{
        size_t o = *off, out = 0;
        for (;;) {
                if (o >= len)
                        return -EBADMSG;
                uint8_t l = msg[o++];
                if (l == 0)
                        break;
                if (l > 63 || o + l > len || out + l + 2 > size)
                        return -EBADMSG;
                if (out)
                        ret[out++] = '.';
                for (uint8_t i = 0; i < l; i++) {
                        if (!label_char_ok(msg[o + i]))
                                return -EBADMSG;
                        ret[out++] = (char)msg[o + i];
                }
                o += l;
        }
        if (out == 0)
                return -EBADMSG;
        ret[out] = '\0';
        *off = o;
        return 0;
}

/* Skips a possibly compressed name. */
static int skip_name(const uint8_t *msg, size_t len, size_t *off)
{
        size_t o = *off;
        for (int guard = 0; guard < 128; guard++) {
                if (o >= len)
                        return -EBADMSG;
                uint8_t l = msg[o];
                if ((l & 0xc0) == 0xc0) {
                        if (o + 2 > len)
                                return -EBADMSG;
                        *off = o + 2;
                        return 0;
                }
                if (l & 0xc0)
                        return -EBADMSG;
                o += 1 + (size_t)l;
                if (l == 0) {
                        *off = o;
                        return 0;
                }
        }
        return -EBADMSG;
}

int egress_dns_parse_query(const uint8_t *msg, size_t len, struct egress_dns_question *ret)
{
        struct egress_dns_question q = { 0 };
        if (len < 12 || len > EGRESS_DNS_MAX * 8)
                return -EBADMSG;
        uint16_t flags = rd16(msg + 2);
        if ((flags & 0x8000) || ((flags >> 11) & 0xf) != 0 || rd16(msg + 4) != 1 || rd16(msg + 6) || rd16(msg + 8))
                return -EBADMSG; /* a response, another opcode, not one question, or answers in a query */
        q.id = rd16(msg);
        q.rd = flags & 0x0100;
        size_t off = 12;
        if (read_plain_name(msg, len, &off, q.name, sizeof(q.name)) < 0 || off + 4 > len)
                return -EBADMSG;
        q.qtype = rd16(msg + off);
        q.qclass = rd16(msg + off + 2);
        *ret = q;
        return 0;
}

static size_t put_name(const char *name, uint8_t *buf, size_t size)
{
        size_t len = strlen(name), out = 0;
        if (len == 0 || len > 253 || len + 2 > size)
                return 0;
        const char *p = name;
        while (*p) {
                const char *dot = strchr(p, '.');
                size_t l = dot ? (size_t)(dot - p) : strlen(p);
                if (l == 0 || l > 63)
                        return 0;
                buf[out++] = (uint8_t)l;
                for (size_t i = 0; i < l; i++) {
                        if (!label_char_ok((uint8_t)p[i]))
                                return 0;
                        buf[out++] = (uint8_t)p[i];
                }
                p += l;
                if (*p == '.')
                        p++;
        }
        buf[out++] = 0;
        return out;
}

size_t egress_dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *buf, size_t size)
{
        if (size < 12 + 4)
                return 0;
        memset(buf, 0, 12);
        wr16(buf, id);
        wr16(buf + 2, 0x0100); /* RD */
        wr16(buf + 4, 1);
        size_t n = put_name(name, buf + 12, size - 12 - 4);
        if (!n)
                return 0;
        wr16(buf + 12 + n, qtype);
        wr16(buf + 14 + n, 1);
        return 16 + n;
}

size_t egress_dns_build_reply(const struct egress_dns_question *q, int rcode, const uint32_t *addrs, size_t n, uint32_t ttl,
                              uint8_t *buf, size_t size)
{
        if (size < 16)
                return 0;
        memset(buf, 0, 12);
        wr16(buf, q->id);
        wr16(buf + 2, (uint16_t)(0x8000 | 0x0080 | (q->rd ? 0x0100 : 0) | (rcode & 0xf))); /* QR, RA */
        wr16(buf + 4, 1);
        size_t off = 12, nl = put_name(q->name, buf + 12, size - 12 - 4);
        if (!nl)
                return 0;
        off += nl;
        wr16(buf + off, q->qtype);
        wr16(buf + off + 2, q->qclass);
        off += 4;
        size_t count = 0;
        for (size_t i = 0; i < n && off + 16 <= size; i++, count++) {
                wr16(buf + off, 0xc00c); /* the question's name */
                wr16(buf + off + 2, EGRESS_DNS_A);
                wr16(buf + off + 4, 1);
                wr16(buf + off + 6, (uint16_t)(ttl >> 16));
                wr16(buf + off + 8, (uint16_t)ttl);
                wr16(buf + off + 10, 4);
                wr16(buf + off + 12, (uint16_t)(addrs[i] >> 16));
                wr16(buf + off + 14, (uint16_t)addrs[i]);
                off += 16;
        }
        wr16(buf + 6, (uint16_t)count);
        return off;
}

int egress_dns_parse_answer(const uint8_t *msg, size_t len, uint16_t id, uint32_t *addrs, size_t max, size_t *ret_n,
                            int *ret_rcode, uint32_t *ret_ttl)
{
        if (len < 12 || rd16(msg) != id || !(rd16(msg + 2) & 0x8000))
                return -EBADMSG;
        size_t qd = rd16(msg + 4), an = rd16(msg + 6), off = 12, n = 0;
        uint32_t ttl = 3600;
        for (size_t i = 0; i < qd; i++) {
                if (skip_name(msg, len, &off) < 0 || off + 4 > len)
                        return -EBADMSG;
                off += 4;
        }
        for (size_t i = 0; i < an; i++) {
                if (skip_name(msg, len, &off) < 0 || off + 10 > len)
                        return -EBADMSG;
                uint16_t type = rd16(msg + off), cls = rd16(msg + off + 2), rdlen = rd16(msg + off + 8);
                uint32_t t = (uint32_t)rd16(msg + off + 4) << 16 | rd16(msg + off + 6);
                off += 10;
                if (off + rdlen > len)
                        return -EBADMSG;
                if (type == EGRESS_DNS_A && cls == 1 && rdlen == 4 && n < max) {
                        addrs[n++] = (uint32_t)rd16(msg + off) << 16 | rd16(msg + off + 2);
                        if (t < ttl)
                                ttl = t;
                }
                off += rdlen;
        }
        *ret_n = n;
        *ret_rcode = rd16(msg + 2) & 0xf;
        *ret_ttl = ttl;
        return 0;
}
