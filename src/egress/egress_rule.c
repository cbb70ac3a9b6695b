#include "egress/egress_rule.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool egress_name_normalize(const char *name, char *buf, size_t size)
{
        size_t len = strlen(name);
        if (len && name[len - 1] == '.')
                len--;
        if (len == 0 || len > EGRESS_NAME_MAX || len >= size)
                return false;
        size_t label = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)name[i];
                if (c == '.') {
                        if (label == 0 || buf[i - 1] == '-')
                                return false;
                        label = 0;
                } else if (isalnum(c) || c == '-' || c == '_') {
                        if ((label == 0 && c == '-') || ++label > 63)
                                return false;
                } else {
                        return false;
                }
                buf[i] = (char)tolower(c);
        }
        if (buf[len - 1] == '-')
                return false;
        buf[len] = '\0';
        return true;
}

static int parse_port(const char *s, uint16_t *ret)
{
        char *end;
        if (!*s || *s < '0' || *s > '9')
                return -EINVAL;
        unsigned long v = strtoul(s, &end, 10);
        if (*end || v < 1 || v > 65535)
                return -EINVAL;
        *ret = (uint16_t)v;
        return 0;
}

static bool looks_numeric(const char *host)
{
        return host[0] && strspn(host, "0123456789./") == strlen(host);
}

static int parse_cidr(const char *host, struct egress_rule *r)
{
        char addr[32];
        const char *slash = strchr(host, '/');
        size_t len = slash ? (size_t)(slash - host) : strlen(host);
        unsigned long bits = 32;
        if (len >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, host, len);
        addr[len] = '\0';
        if (slash) {
                char *end;
                if (!slash[1] || slash[1] < '0' || slash[1] > '9')
                        return -EINVAL;
                bits = strtoul(slash + 1, &end, 10);
                if (*end || bits > 32)
                        return -EINVAL;
        }
        struct in_addr in;
        if (inet_pton(AF_INET, addr, &in) != 1)
                return -EINVAL;
        r->mask = bits == 0 ? 0 : ~0u << (32 - bits);
        r->net = ntohl(in.s_addr);
        if (r->net & ~r->mask)
                return -EINVAL; /* host bits set: say what is meant */
        r->kind = EGRESS_RULE_CIDR;
        return 0;
}

int egress_rule_parse(const char *text, enum egress_action action, struct egress_rule *ret, char *why, size_t why_size)
{
        struct egress_rule r = { .action = action };
        char host[EGRESS_NAME_MAX + 8];
        size_t len = strlen(text);
        if (len == 0 || len >= sizeof(host)) {
                snprintf(why, why_size, "rule \"%.80s\" is empty or too long", text);
                return -EINVAL;
        }
        memcpy(host, text, len + 1);
        char *colon = strrchr(host, ':');
        if (colon) {
                *colon = '\0';
                if (parse_port(colon + 1, &r.port) < 0) {
                        snprintf(why, why_size, "rule \"%.80s\": the port must be 1-65535", text);
                        return -EINVAL;
                }
        }
        if (looks_numeric(host)) {
                if (parse_cidr(host, &r) < 0) {
                        snprintf(why, why_size, "rule \"%.80s\" is not an IPv4 address or network (A.B.C.D[/N], no host bits)",
                                 text);
                        return -EINVAL;
                }
        } else {
                const char *name = host;
                r.kind = EGRESS_RULE_NAME;
                if (strncmp(host, "*.", 2) == 0) {
                        r.kind = EGRESS_RULE_WILDCARD;
                        name = host + 2;
                }
                if (!egress_name_normalize(name, r.name, sizeof(r.name)) || strchr(r.name, '.') == NULL) {
                        snprintf(why, why_size,
                                 "rule \"%.80s\" is not a domain (name.tld or *.name.tld), an IPv4 address or a network", text);
                        return -EINVAL;
                }
        }
        *ret = r;
        return 0;
}

static bool port_matches(const struct egress_rule *r, uint16_t port)
{
        return r->port == 0 || r->port == port || (port == 0 && r->action == EGRESS_ALLOW);
}

bool egress_rule_matches_name(const struct egress_rule *r, const char *name, uint16_t port)
{
        if (!name || !port_matches(r, port))
                return false;
        if (r->kind == EGRESS_RULE_NAME)
                return strcmp(name, r->name) == 0;
        if (r->kind != EGRESS_RULE_WILDCARD)
                return false;
        size_t n = strlen(name), s = strlen(r->name);
        return n > s + 1 && name[n - s - 1] == '.' && strcmp(name + n - s, r->name) == 0;
}

bool egress_rule_matches_addr(const struct egress_rule *r, uint32_t addr, uint16_t port)
{
        return r->kind == EGRESS_RULE_CIDR && port_matches(r, port) && (addr & r->mask) == r->net;
}

bool egress_addr_is_special(uint32_t a)
{
        static const struct {
                uint32_t net;
                int bits;
        } ranges[] = {
                { 0x00000000, 8 },  { 0x0a000000, 8 },  { 0x64400000, 10 }, { 0x7f000000, 8 },  { 0xa9fe0000, 16 },
                { 0xac100000, 12 }, { 0xc0000000, 24 }, { 0xc0000200, 24 }, { 0xc0a80000, 16 }, { 0xc6120000, 15 },
                { 0xc6336400, 24 }, { 0xcb007100, 24 }, { 0xe0000000, 4 },  { 0xf0000000, 4 },
        };
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
                if ((a & (~0u << (32 - ranges[i].bits))) == ranges[i].net)
                        return true;
        return false;
}
